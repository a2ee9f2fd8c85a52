"""A log read in chunks, each block of whole lines in one regex pass.

In: a binary file (from an offset to an offset, for the halves of a split file) or
lines of bytes. Out: a ``LogParser`` that has read them (``result()`` gives the
``LogFacts``).

A file is read in chunks of ``CHUNK_BYTES`` with lines capped at ``MAX_LINE`` bytes (the
rest of a longer line is skipped, not held), so memory stays constant whatever the
size: one chunk and a table of distinct Process node texts, not the lines. A block's
lines are not split in Python: one regex over the block, in C, finds both the few lines
a handler reads one by one and every ``executor.cc`` Process node line, whose step id
and text it counts (``steps``). A block where one scan could read a line otherwise (a
text holding "] " or "_verbose,", a Process node line not laid out so, a oneDNN line
holding "] ", the chunks where the CPU line may be, the table of texts about to start
again) is read with two scans: the handlers' lines first, the Process node lines
between them. A line is read wherever it starts (a line written before it does not
hide it); one the regex cannot take whole, or with another line inside, is read as a
lone line (``lines``).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable
from operator import itemgetter
from typing import BinaryIO, Optional, cast

from . import format as log_format
from .facts import LogFacts, log_facts
from .format import (
    CPU_FEATURES,
    CPU_GUARD,
    CPU_LINE_BLOCKS,
    LONG_LINES,
    MAX_LINE,
    NO_LAST_NEWLINE,
    ONEDNN_MARK,
    PROCESS_NODE_MARK,
)
from .lines import LineReader
from .state import MAX_TEXTS, ProcessText

__all__ = ["LogParser", "CHUNK_BYTES", "read_file", "parse_lines"]

# Bytes read at a time (the fuzz tests shrink it); memory is about twice this.
CHUNK_BYTES = 1 << 22

# The fields of what the regexes find: (step id, Process node text, handled line).
_step_id_of = itemgetter(0)
_text_of = itemgetter(1)
_handled_of = itemgetter(2)
# A line's (start, end after its newline, index in the one scan's matches or -1).
_Span = tuple[int, int, int]


def _handled_spans(data: bytes, a: int, b: int, found: list[tuple[bytes, bytes, bytes]],
                   handled: list[bytes]) -> Optional[list[_Span]]:
    """Where the lines of the one scan's handled texts, and the oneDNN lines, are in
    ``data[a:b]``; None if one of them is to be read by the two scans.

    A handled line is found again by its text from the end of the one before (nothing
    between holds it: the scan would have matched it there); oneDNN lines only count
    primitives, so they are read in the order of the handlers' lines only."""
    spans: list[_Span] = []
    cur = a
    for i, text in zip(itertools.compress(range(len(found)), map(_handled_of, found)), handled):
        if text.startswith(CPU_GUARD):  # the CPU line's search starts here
            return None
        p = data.find(b"] " + text, cur, b)
        if p < 0:  # cannot be: the scan found it there
            return None
        ls = data.rfind(b"\n", a, p) + 1 or a
        cur = data.find(b"\n", p, b) + 1
        spans.append((ls, cur, i))
    p = data.find(ONEDNN_MARK, a, b)
    while p >= 0:
        ls = data.rfind(b"\n", a, p) + 1 or a
        le = data.find(b"\n", p, b) + 1
        if data.find(b"] ", ls, le) >= 0:  # perhaps a TF line: read in line order
            return None
        spans.append((ls, le, -1))
        p = data.find(ONEDNN_MARK, le, b)
    return spans


class LogParser(LineReader):
    """Reads a log's blocks of whole lines into its tables; ``result()`` gives the facts."""

    def result(self) -> LogFacts:
        return log_facts(self)

    def read_block(self, data: bytes, start: int, end: int, off: int) -> None:
        """Read the lines ``data[start:end]``, each ending in a newline and none longer
        than MAX_LINE; ``off`` is the file offset of ``data[start]``. Lines of no interest
        are never looked at in Python."""
        if start >= end:
            return
        base = off - start  # file offset of data[0]
        self.lines += data.count(b"\n", start, end)
        self.traces.feed(data, start, end)
        if not data.isascii() or b"\x00" in data:
            self._note_odd_bytes_in_block(data, start, end, base)
        self.matched_at = -1
        pos = start
        # Until the first line with a TF prefix sets the format, every line that may
        # be one (it has a "] ") is read on its own, in order.
        while not self.tf_format and pos < end:
            j = data.find(b"] ", pos, end)
            if j < 0:
                break
            ls = data.rfind(b"\n", pos, j) + 1 or pos
            le = data.find(b"\n", j, end) + 1
            self._read_lines(data, pos, ls, base)
            self.read_line_at(data[ls:le - 1], base + ls, ls)
            pos = le
        self._read_lines(data, pos, end, base)
        self._note_last_lines(data, start, end)
        if self.cpu_blocks:
            self.cpu_blocks -= 1

    def _note_odd_bytes_in_block(self, data: bytes, start: int, end: int, base: int) -> None:
        """``note_odd_bytes`` for each line of the block holding a NUL or a non-ASCII byte."""
        pos = start
        while pos < end:
            m = log_format.ODD_BYTE.search(data, pos, end)
            if m is None:
                return
            p = m.start()
            ls = data.rfind(b"\n", pos, p) + 1 or pos
            le = data.find(b"\n", p, end)
            self.note_odd_bytes(data[ls:le], base + ls)
            pos = le + 1

    def _read_lines(self, data: bytes, a: int, b: int, base: int) -> None:
        """The lines ``data[a:b]``: those a handler reads one by one, in order, and the
        Process node lines between them counted at once."""
        if a >= b or (not self.cpu_blocks and self._read_lines_in_one_scan(data, a, b, base)):
            return
        cur = a
        for ls, le in sorted(self._handled_lines(data, a, b).items()):
            if ls > cur:
                self._read_process_lines(data, cur, ls, base)
            self.read_line_at(data[ls:le - 1], base + ls, ls)
            cur = le
        if cur < b:
            self._read_process_lines(data, cur, b, base)

    def _handled_lines(self, data: bytes, a: int, b: int) -> dict[int, int]:
        """Start -> end (after its newline) of each line in ``data[a:b]`` that a handler
        reads one by one: ``HANDLED_LINE``'s, oneDNN lines, and (in the blocks after
        cpu_feature_guard's line) the CPU line."""
        spans: dict[int, int] = {}
        for m in log_format.HANDLED_LINE.finditer(data, a, b):
            p = m.start()
            ls = data.rfind(b"\n", a, p) + 1 or a
            if ls not in spans:
                spans[ls] = data.find(b"\n", p, b) + 1
                if data.startswith(CPU_GUARD, p + 2):
                    self.cpu_blocks = CPU_LINE_BLOCKS
        for marker in (ONEDNN_MARK, CPU_FEATURES) if self.cpu_blocks else (ONEDNN_MARK,):
            p = data.find(marker, a, b)
            while p >= 0:
                ls = data.rfind(b"\n", a, p) + 1 or a
                le = data.find(b"\n", p, b) + 1
                spans.setdefault(ls, le)
                p = data.find(marker, le, b)
        return spans

    # -- both kinds of line in one scan ---------------------------------------------------
    def _read_lines_in_one_scan(self, data: bytes, a: int, b: int, base: int) -> bool:
        """``_read_lines`` with one scan for both kinds of lines (``HANDLED_OR_PROCESS_LINE``),
        when that reads them as the two scans would: every Process node line's text has a
        node (made here for a new one) without "] " or "_verbose," in it (no line hides in
        it), no other line is taken whole by the scan, and no oneDNN line holds "] ".
        False (nothing read but new texts' nodes) otherwise."""
        found = log_format.HANDLED_OR_PROCESS_LINE.findall(data, a, b)
        handled = list(filter(None, map(_handled_of, found)))
        nodes = list(map(self.texts.get, map(_text_of, found)))
        if nodes.count(None) != len(handled) and not self._nodes_of_new_texts(found, nodes):
            return False
        if self.odd_texts and not self.odd_texts.isdisjoint(nodes):
            return False
        spans = _handled_spans(data, a, b, found, handled)
        if spans is None:
            return False
        spans.sort()
        done = 0  # index in ``found`` of the next Process node line to count
        for ls, le, i in spans:
            if i > done:
                self._count_found(found[done:i], nodes[done:i])
            if i >= 0:
                done = i + 1
            self.read_line_at(data[ls:le - 1], base + ls, ls)
        if done < len(found):
            self._count_found(found[done:], nodes[done:])
        return True

    def _nodes_of_new_texts(self, found: list[tuple[bytes, bytes, bytes]],
                            nodes: list[Optional[ProcessText]]) -> bool:
        """The nodes of the one scan's Process node lines whose text is new, put in
        ``nodes``; False if a line is not laid out so, a text holds another line, or the
        table of texts would start again (the two scans then read the block). A node made
        before the block's earlier lines are read is the same: what it says comes from
        its text alone, and whether a debug node's input is still wanted is asked again
        when its line is counted."""
        new = [i for i, node in enumerate(nodes) if node is None and not found[i][2]]
        if max(len(self.texts), len(self.debug_texts_pending)) + len(new) >= MAX_TEXTS:
            return False
        for i in new:
            step_id, text = found[i][0], found[i][1]
            node = (self.texts.get(text) or self.node_of_text(text)) if step_id else None
            if node is None:
                return False
            nodes[i] = node
        return True

    def _count_found(self, found: list[tuple[bytes, bytes, bytes]],
                     nodes: list[Optional[ProcessText]]) -> None:
        """Process node lines of the one scan (all laid out, their nodes known), counted."""
        self.count_process_lines(found, dict.fromkeys(map(_step_id_of, found)),
                                 cast("list[ProcessText]", nodes))

    # -- Process node lines between the handled ones --------------------------------------
    def _read_process_lines(self, data: bytes, a: int, b: int, base: int) -> None:
        """Every ``executor.cc`` Process node line in ``data[a:b]`` (lines no handler reads
        one by one), by one regex in C; a line it cannot take whole is read as a lone line."""
        found = log_format.PROCESS_NODE_LINE.findall(data, a, b)
        if not found:
            return
        step_ids = dict.fromkeys(map(_step_id_of, found))
        # Each line's node, looked up in C: once the texts are known (after a step or two)
        # that is all a line costs here.
        nodes: list[Optional[ProcessText]] = list(map(self.texts.get, map(_text_of, found)))
        if None in nodes:
            texts = dict.fromkeys(map(_text_of, found))
            # this stretch's nodes (the table may start again on the way)
            text_nodes: dict[bytes, Optional[ProcessText]] = dict(zip(texts, map(self.texts.get, texts)))
            for text, node in text_nodes.items():
                if node is None:
                    node = text_nodes[text] = self.node_of_text(text)
                    if node is None:  # another line written into it
                        self._read_process_lines_until(data, a, b, base, found, text)
                        return
            nodes = list(map(text_nodes.__getitem__, map(_text_of, found)))
        if b"" in step_ids:  # a line not laid out as PROCESS_NODE_LINE expects
            self._read_process_lines_until(data, a, b, base, found, None)
            return
        self.count_process_lines(found, step_ids, cast("list[ProcessText]", nodes))  # no None left

    def _read_process_lines_until(self, data: bytes, a: int, b: int, base: int,
                                  found: list[tuple[bytes, bytes]], odd: Optional[bytes]) -> None:
        """The stretch's Process node lines before the first that cannot be taken as parsed
        (one whose text is ``odd``, or none laid out so) taken so, the rest one by one."""
        i = 0
        get = self.texts.get
        nodes: list[ProcessText] = []
        for step_id, text in found:
            node = get(text) if step_id and text != odd else None
            if node is None:
                node = self.node_of_text(text) if step_id and text != odd else None
                if node is None:
                    break
            nodes.append(node)
            i += 1
        self.take_process_lines(found[:i], nodes)
        self._read_process_lines_one_by_one(data, a, b, base, i)

    def _read_process_lines_one_by_one(self, data: bytes, a: int, b: int, base: int, skip: int) -> None:
        """The Process node lines of ``data[a:b]`` from the ``skip``-th on, one by one: those
        with a node as parsed, the others as lone lines."""
        for i, m in enumerate(log_format.PROCESS_NODE_LINE.finditer(data, a, b)):
            if i < skip:
                continue
            step_id, text = m.group(1), m.group(2)
            node = (self.texts.get(text) or self.node_of_text(text)) if step_id else None
            if node is not None:
                self.take_process_lines([(step_id, text)], [node])
            else:
                ls = data.rfind(b"\n", a, m.start()) + 1 or a
                self.read_line_at(data[ls:m.end()], base + ls, ls)

    # -- the time span --------------------------------------------------------------------
    def _note_last_lines(self, data: bytes, start: int, end: int) -> None:
        """The block's last line with a TF prefix, and its last line a handler read or a
        counted Process node line: their times end the log's time span."""
        e = end
        while e > start:
            j = data.rfind(b"] ", start, e)
            if j < 0:
                break
            ls = data.rfind(b"\n", start, j) + 1 or start
            line = data[ls:data.find(b"\n", j, end)]
            if self.sets_last_prefixed(line):
                self.last_prefixed = line
                break
            e = ls
        # A counted Process node line (lines read one by one set last_matched themselves,
        # at matched_at) sets it when its prefix can be read.
        e = end
        lo = max(start, self.matched_at + 1)
        while e > lo:
            p = data.rfind(PROCESS_NODE_MARK, lo, e)
            if p < 0:
                break
            ls = data.rfind(b"\n", start, p) + 1 or start
            line = data[ls:data.find(b"\n", p, end)]
            if self._is_counted_process_line(line) and log_format.PREFIX.match(line) is not None:
                self.last_matched = line
                break
            e = ls

    def _is_counted_process_line(self, line: bytes) -> bool:
        """Whether ``read_block`` counts ``line`` as a Process node line as parsed."""
        if log_format.HANDLED_LINE.search(line) or ONEDNN_MARK in line or (self.cpu_blocks and CPU_FEATURES in line):
            return False
        m = log_format.PROCESS_NODE_LINE.search(line)
        if m is None or not m.group(1):
            return False
        # The text's own node if it has one: a new object for a known text would make
        # the steps running it look different to the filing of their texts.
        return (self.texts.get(m.group(2)) or self.node_of_text(m.group(2))) is not None


# ---------------------------------------------------------------- a file in chunks


def _read_whole_lines(parser: LogParser, data: bytes, start: int, end: int, off: int) -> None:
    """``parser.read_block`` on the lines ``data[start:end]`` (whole lines; ``off`` the file
    offset of ``data[start]``), a line longer than MAX_LINE read as its head alone.

    Such a line holds a window of ``width`` bytes without newline aligned on the ones
    searched, so only those few windows are searched for one."""
    cap = MAX_LINE
    width = (cap + 2) // 2
    base = off - start
    w = start
    while w + width <= end:
        if data.find(b"\n", w, w + width) >= 0:
            w += width
            continue
        ls = data.rfind(b"\n", start, w) + 1 or start
        le = data.find(b"\n", w + width, end)
        if le - ls > cap:
            parser.read_block(data, start, ls, base + start)
            parser.note_problem(LONG_LINES, base + ls)
            parser.read_lone_line(data[ls:ls + cap], base + ls)
            start = le + 1
        w = le + 1
    parser.read_block(data, start, end, base + start)


class _Chunks:
    """A file's chunks handed to a parser as blocks of whole lines: a line cut by a
    chunk's end is carried to the next, and the tail of a line longer than MAX_LINE is
    dropped (its head read alone), so memory stays bounded."""

    def __init__(self, parser: LogParser, base: int) -> None:
        self.parser = parser
        self.base = base          # file offset of the next chunk
        self.carry = b""          # the unfinished line before it
        self.carry_off = 0        # its file offset
        self.dropping = False     # inside the cut-off tail of a long line

    def feed(self, data: bytes) -> None:
        s = self._past_dropped(data)
        if s is not None:
            if self.carry:
                s = self._end_carried_line(data, s)
            last = data.rfind(b"\n", s) + 1
            if last > s:
                _read_whole_lines(self.parser, data, s, last, self.base + s)
                s = last
            if s < len(data):
                if not self.carry:
                    self.carry_off = self.base + s
                self.carry += data[s:]
        self.base += len(data)
        if len(self.carry) > MAX_LINE:
            self.parser.note_problem(LONG_LINES, self.carry_off)
            self.parser.read_lone_line(self.carry[:MAX_LINE], self.carry_off)
            self.carry = b""
            self.dropping = True

    def _past_dropped(self, data: bytes) -> Optional[int]:
        """Where ``data`` starts to be read: past the dropped tail of a long line; None
        if all of it is that tail."""
        if not self.dropping:
            return 0
        s = data.find(b"\n") + 1
        if s:
            self.dropping = False
            return s
        return None

    def _end_carried_line(self, data: bytes, s: int) -> int:
        """The carried line, ended by ``data``'s first newline (from ``s``) and read, or
        carried on; where ``data`` is to be read from."""
        i = data.find(b"\n", s)
        if i < 0:
            self.carry += data[s:]
            return len(data)
        line = self.carry + data[s:i]
        self.carry = b""
        if len(line) > MAX_LINE:
            self.parser.note_problem(LONG_LINES, self.carry_off)
            self.parser.read_lone_line(line[:MAX_LINE], self.carry_off)
        else:
            self.parser.read_block(line + b"\n", 0, len(line) + 1, self.carry_off)
        return i + 1

    def close(self) -> None:
        """The last line, which has no newline, read as a lone line (its last field may be
        cut short); the bytes read set."""
        if self.carry:
            self.parser.note_problem(NO_LAST_NEWLINE, self.carry_off)
            self.parser.tail_cut = True
            self.parser.read_lone_line(self.carry, self.carry_off)
        self.parser.bytes = self.base


def read_file(f: BinaryIO, parser: LogParser, start: int = 0, stop: Optional[int] = None) -> None:
    """Read a file (from ``start``, a line start, to ``stop``, one after a newline, or the
    end) in chunks of ``CHUNK_BYTES``, each block of whole lines at once. Sets
    ``parser.bytes`` and notes a last line without newline."""
    if start:
        f.seek(start)
    chunks = _Chunks(parser, start)
    while True:
        data = f.read(CHUNK_BYTES if stop is None else min(CHUNK_BYTES, stop - chunks.base))
        if not data:
            break
        chunks.feed(data)
    chunks.close()


def parse_lines(lines: Iterable[bytes], path: str = "<lines>") -> LogFacts:
    """Parse the given lines (each with or without its newline); offsets count
    one newline per line. Lines longer than MAX_LINE are cut as in ``read_log``."""
    parser = LogParser(path)
    pending = bytearray()  # whole lines, read as one block
    pending_off = 0
    pos = 0
    for line in lines:
        line = line[:-1] if line.endswith(b"\n") else line
        if len(line) > MAX_LINE or b"\n" in line:
            parser.read_block(bytes(pending), 0, len(pending), pending_off)
            pending.clear()
            if len(line) > MAX_LINE:
                parser.note_problem(LONG_LINES, pos)
            parser.read_lone_line(line[:MAX_LINE], pos)
            pos += len(line) + 1
            pending_off = pos
            continue
        pending += line
        pending += b"\n"
        pos += len(line) + 1
        if len(pending) >= CHUNK_BYTES:
            parser.read_block(bytes(pending), 0, len(pending), pending_off)
            pending.clear()
            pending_off = pos
    parser.read_block(bytes(pending), 0, len(pending), pending_off)
    parser.bytes = pos
    return parser.result()
