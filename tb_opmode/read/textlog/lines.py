"""One line read on its own: which handler takes it.

In: one line (bytes, without its newline) and its file offset: a line the block scan
found for a handler, a line it could not take whole, the head of an over-long line, a
last line without newline. Out: the line handed to its handler (``handlers``), or split
first when another line was written into it; the log's first and last prefixed lines.

Cheap tests come first: the ``file:line`` before the first ``"] "`` picks the handler
(kept per location), and the prefix regex runs only on lines whose location is read.
Only oneDNN lines and lines carrying a message we read are searched for a line written
into them: TF writes each line whole, so a TF line we do not read rarely carries another.
"""
from __future__ import annotations

from typing import Optional

from . import format as log_format
from .format import (
    CPU_FEATURES,
    CPU_GUARD,
    CPU_LINE_BLOCKS,
    Route,
)
from .handlers import LineHandlers

__all__ = ["LineReader", "UNREAD_LOCATION", "NOT_A_LOCATION"]


def _no_handler(line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
    """Never called: no message starts with an empty tuple of messages."""


# What ``LineReader.locations`` holds for a location whose lines are not read: a route
# matching no message, so that such a line is only noted as prefixed; and, a distinct
# object told apart by identity, what it holds for text that is no source location (a
# continuation line or garbage).
UNREAD_LOCATION: Route = ((), _no_handler)
NOT_A_LOCATION: Route = ((), _no_handler)
# Locations kept (a line's location is looked up in ``locations`` first).
_MAX_LOCATIONS = 4096


class LineReader(LineHandlers):
    """``LineHandlers`` and the routing of one line to its handler."""

    def _route_of(self, location: bytes) -> Route:
        """What a ``file:line`` before the first ``"] "`` of a line means: the route of its
        file, ``UNREAD_LOCATION`` or ``NOT_A_LOCATION``."""
        m = log_format.SOURCE_LOCATION.fullmatch(location)
        if m is None:
            return NOT_A_LOCATION
        route = self.routes.get(m.group(1), UNREAD_LOCATION)
        if len(self.locations) < _MAX_LOCATIONS:
            self.locations[location] = route
        return route

    def read_line(self, line: bytes, off: int) -> None:
        """Read one line (without its newline) as it is, at file offset ``off``."""
        if line.startswith(b"onednn_verbose,"):
            self.on_onednn_line(line, off, True)
            return
        j = line.find(b"] ")
        if j < 0:
            self._read_line_without_location(line, off)
            return
        location = line[line.rfind(b" ", 0, j) + 1:j]
        route = self.locations.get(location)
        if route is None:
            route = self._route_of(location)
        if not self.tf_format:
            self._take_format_of(line)  # (a line with no location before "] " has no prefix)
        if not line.startswith(route[0], j + 2):
            self._read_unrouted_line(line, off, route)
            return
        # A line carrying a message its file's handler reads (read on from here, not by
        # a function of its own: this runs for every such line).
        m = log_format.PREFIX.match(line)
        if m is None:  # a line written into the start of this one
            self.split_garbled(line, off)
            return
        self.last_prefixed = line
        self.last_matched = line
        if ((line.find(b"] ", j + 2) < 0 and log_format.ONEDNN_MARK not in line)
                or not self.split_garbled(line, off)):
            route[1](line, m.end(), m.group(6), off, False)

    def _take_format_of(self, line: bytes) -> None:
        m = log_format.PREFIX.match(line)
        if m is not None:
            self.take_format(m)

    def _read_unrouted_line(self, line: bytes, off: int, route: Route) -> None:
        """A line whose text before "] " is no source location (``NOT_A_LOCATION``), or of a
        location or message we do not read: then only its time counts, and it is not
        searched for lines written into it (TF writes whole lines, so a cut line starts
        with a oneDNN line, from stdout, or has a location we read)."""
        if route is NOT_A_LOCATION:
            self._read_unprefixed_line(line, off)
            return
        self.last_prefixed = line
        if CPU_GUARD in line:
            self.cpu_blocks = CPU_LINE_BLOCKS

    def _read_line_without_location(self, line: bytes, off: int) -> None:
        """A line holding no "] ": a oneDNN line (perhaps with another written into it),
        the CPU line, or one not read."""
        if log_format.ONEDNN_MARK in line:
            self._read_unprefixed_line(line, off)
        elif line.startswith(CPU_FEATURES):
            self.on_cpu_line(line)

    def _read_unprefixed_line(self, line: bytes, off: int) -> None:
        """A line with no TF prefix at its start: oneDNN v0 lines (dnnl_verbose, ...),
        continuations of multi-line messages, or garbage."""
        if log_format.ONEDNN_LINE_START.match(line):
            self.on_onednn_line(line, off, True)
        else:
            self.split_garbled(line, off)

    def sets_last_prefixed(self, line: bytes) -> bool:
        """Whether ``read_line`` takes ``line`` as the last line with a TF prefix (its time
        is the log's last), without reading it."""
        if line.startswith(b"onednn_verbose,"):
            return False
        j = line.find(b"] ")
        if j < 0:
            return False
        location = line[line.rfind(b" ", 0, j) + 1:j]
        route = self.locations.get(location)
        if route is None:
            route = self._route_of(location)
        if route is NOT_A_LOCATION:
            return False
        if not line.startswith(route[0], j + 2):
            return True
        return log_format.PREFIX.match(line) is not None

    def read_line_at(self, line: bytes, off: int, at: int) -> None:
        """``read_line``, noting ``at`` (the line's start in the block being read) when the
        line set ``last_matched``: the block's Process node lines after it may set it again."""
        before = self.last_matched
        self.read_line(line, off)
        if self.last_matched is not before:
            self.matched_at = at

    def read_lone_line(self, line: bytes, off: int) -> None:
        """A line read on its own (the head of an over-long line, a last line without
        newline, a line of ``parse_lines`` with a newline inside)."""
        self.lines += 1
        if not line.isascii() or b"\x00" in line:
            self.note_odd_bytes(line, off)
        self.read_line(line, off)
