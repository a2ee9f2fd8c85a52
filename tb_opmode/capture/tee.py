"""A job's output stream, copied whole to a file and, less the log lines we asked for, to
the terminal, as it is written.

In: the descriptor the copy is shown on (the terminal, or whatever our stdout/stderr is),
the file it is kept in, and which lines to keep off the terminal (``Hidden``: the TF log
lines and oneDNN lines a recording turned on, which the job would not have printed).
Out: ``Tee``: ``writer`` is the descriptor the job writes to (a pseudo-terminal when we
show it on a terminal, so that the job sees a terminal as it would without us: line
buffering, progress bars; a pipe otherwise); a thread copies what arrives until every
writer has closed it. ``redirect_fd`` points this process's own descriptor at a ``Tee``
(``tb_opmode.record`` in a notebook or harness) and back.

Every byte goes to the file; the terminal gets every byte but the hidden lines, so the
job's own output looks as it did without us. A terminal that goes away (a closed pipe)
stops only the terminal's copy.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

__all__ = ["Hidden", "Tee", "nap_after", "redirect_fd"]

_CHUNK = 1 << 16
# A TF C++ log line: TF >= 2.18 "I0000 00:00:1795978611.323846    2377 execute.cc:1775] ",
# older "2026-11-29 19:39:27.905005: I tensorflow/core/common_runtime/eager/execute.cc:1678] ".
_TF_LINE = re.compile(rb"^(?:(?P<new>[IWEF])\d{4} [\d:.]+\s+\d+ |[\d-]+ [\d:.]+: (?P<old>[IWEF]) )"
                      rb"(?:\S*/)?(?P<file>[\w.]+\.(?:cc|h)):\d+\] ")
_ONEDNN = b"onednn_verbose,"
# Long enough to tell whether a partial line is one of the hidden ones; a shorter one is
# held back only while it could still become one (a prefix of either form above).
_DECIDE = 160
_MAYBE_TF = re.compile(rb"I(?:\d{0,4}$|\d{4} )|\d{0,4}$|\d{4}-")


# The lines after a TF log line that continue its message: protos in their text form (a
# function's definition, after "goo.gle/debugproto"), indented lines (a stack trace and
# its "*** ... ***" bounds).
_CONTINUED = re.compile(rb"^(?:\s.*|\*\*\* .*|goo\.gle/debugproto.*|[\w.\[\]/]+ \{|[\w.\[\]/]+: .*|\}|)$")


@dataclass(frozen=True)
class Hidden:
    """Which lines stay off the terminal: TF's INFO lines from ``files`` (all of them with
    ``all_info``: VLOG at level 2 everywhere), any line from ``any_severity`` (warnings
    that only a high VLOG level causes), the lines that continue a hidden one's message,
    and oneDNN's verbose lines."""

    files: frozenset[str] = frozenset()
    all_info: bool = False
    any_severity: frozenset[str] = frozenset()
    onednn: bool = False

    def __bool__(self) -> bool:
        return bool(self.files or self.any_severity) or self.all_info or self.onednn

    @staticmethod
    def continues(line: bytes) -> bool:
        """Whether ``line``, right after a hidden one, is the rest of its message."""
        return _CONTINUED.match(line) is not None

    def hides(self, line: bytes) -> bool:
        if self.onednn and line.startswith(_ONEDNN):
            return True
        m = _TF_LINE.match(line)
        if m is None:
            return False
        source = m.group("file").decode()
        if source in self.any_severity:
            return True
        return (m.group("new") or m.group("old")) == b"I" and (self.all_info or source in self.files)


# Linux's F_SETPIPE_SZ: a pipe that holds more lets the job write a burst of log lines
# (its start-up, a function instantiated) without waiting for our thread to be scheduled,
# which on a busy machine can take a while.
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE_BYTES = 1 << 20


# After a read that did not fill the chunk, a pipe's reader waits this long before the
# next: a job that logs each eager op writes tens of thousands of short lines, and waking
# for each (our thread, and the job's write waking it) costs the job more than the lines
# do. The widened pipe holds the lines meanwhile. A pseudo-terminal holds only about 4 KB,
# so its reader never waits: the job would block on its next write.
_NAP_S = 0.01


def nap_after(read: int, terminal: bool) -> float:
    """Seconds to wait before the next read, after one that returned ``read`` bytes."""
    return 0.0 if terminal or read >= _CHUNK else _NAP_S


def _widen(pipe: int) -> None:
    try:
        fcntl.fcntl(pipe, _F_SETPIPE_SZ, _PIPE_BYTES)
    except OSError:  # another OS, or above /proc/sys/fs/pipe-max-size: the default will do
        pass


def _terminal_pair(shown: int) -> tuple[int, int]:
    """(the job's end, ours) of a pseudo-terminal sized like ``shown``, output processing
    off so that bytes pass as the job wrote them (no newline made into CR LF)."""
    ours, job = os.openpty()
    attrs = termios.tcgetattr(job)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(job, termios.TCSANOW, attrs)
    try:
        size = fcntl.ioctl(shown, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(job, termios.TIOCSWINSZ, size)
    except OSError:
        pass
    return job, ours


class Tee:
    """One stream: the job writes to ``writer``; ``start()`` copies it to the file and the
    terminal until ``close_writer()`` has been called and every other writer is gone."""

    def __init__(self, shown: Optional[int], path: str, hidden: Hidden = Hidden()) -> None:
        self.shown = shown
        self.path = path
        self.hidden = hidden
        terminal = shown is not None and os.isatty(shown)
        if terminal:
            assert shown is not None
            self.writer, self._reader = _terminal_pair(shown)
        else:
            self._reader, self.writer = os.pipe()
            _widen(self.writer)
        self.terminal = terminal
        self._closed = False
        self._pending = b""      # a partial line not yet known to be shown or hidden
        self._showing = False    # the current partial line is shown, as it comes
        self._hiding = False     # the last whole line was hidden: a message may go on
        self._thread = threading.Thread(target=self._copy, name=f"tee {path}", daemon=True)

    def start(self) -> Tee:
        self._thread.start()
        return self

    def close_writer(self) -> None:
        """Our copy of the job's end: closed once the job has it, so that the copy ends
        when the job's last writer does."""
        if self.writer >= 0:
            os.close(self.writer)
            self.writer = -1

    def follow_size(self) -> None:
        """The job's terminal resized like the one we show it on (after SIGWINCH)."""
        if not self.terminal or self.shown is None or self._closed:
            return
        try:
            size = fcntl.ioctl(self.shown, termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(self._reader, termios.TIOCSWINSZ, size)
        except OSError:
            pass

    def join(self, timeout: Optional[float] = None) -> bool:
        """True once everything written has been copied (False: a writer is still open
        after ``timeout``, e.g. a process the job left running in the background)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _copy(self) -> None:
        with open(self.path, "ab", buffering=0) as kept:
            for data in self._chunks():
                kept.write(data)
                if self.shown is not None:
                    self._show(self._visible(data))
            if self.shown is not None and self._pending:
                self._show(b"" if self._hide(self._pending) else self._pending)
        self._closed = True
        os.close(self._reader)

    def _chunks(self) -> Iterator[bytes]:
        while True:
            try:
                data = os.read(self._reader, _CHUNK)
            except OSError as err:
                if err.errno == errno.EINTR:
                    continue
                if err.errno == errno.EIO:  # a pseudo-terminal whose last writer closed
                    return
                raise
            if not data:
                return
            yield data
            nap = nap_after(len(data), self.terminal)
            if nap:
                time.sleep(nap)

    def _visible(self, data: bytes) -> bytes:
        """What of ``data`` the terminal shows: whole lines unless hidden; a partial line
        (a progress bar) at once, unless its start could be a hidden line's."""
        if not self.hidden:
            return data
        out = []
        if self._showing:
            head, newline, data = data.partition(b"\n")
            out.append(head + newline)
            self._showing = not newline
        *lines, rest = (self._pending + data).split(b"\n")
        out.extend(line + b"\n" for line in lines if not self._hide(line))
        self._pending = b""
        if rest and not self._showing:
            if self._could_be_hidden(rest):
                self._pending = rest
            else:
                out.append(rest)
                self._showing, self._hiding = True, False
        return b"".join(out)

    def _hide(self, line: bytes) -> bool:
        self._hiding = self.hidden.hides(line) or (self._hiding and self.hidden.continues(line))
        return self._hiding

    def _could_be_hidden(self, partial: bytes) -> bool:
        if len(partial) >= _DECIDE:
            return self.hidden.hides(partial) or (self._hiding and self.hidden.continues(partial))
        if self._hiding:
            return True
        if self.hidden.onednn and (_ONEDNN.startswith(partial) or partial.startswith(_ONEDNN)):
            return True
        return _MAYBE_TF.match(partial) is not None

    def _show(self, data: bytes) -> None:
        while data and self.shown is not None:
            try:
                data = data[os.write(self.shown, data):]
            except InterruptedError:
                continue
            except OSError:  # the terminal's side went away: the file still gets everything
                self.shown = None


@contextmanager
def redirect_fd(fd: int, path: str, hidden: Hidden = Hidden()) -> Iterator[Tee]:
    """This process's own ``fd`` (1 or 2) teed for the block: kept in ``path``, shown on
    what ``fd`` was before, then put back. Flush Python's buffers before and after."""
    shown = os.dup(fd)
    tee = Tee(shown, path, hidden)
    os.dup2(tee.writer, fd)
    tee.close_writer()
    tee.start()
    try:
        yield tee
    finally:
        os.dup2(shown, fd)
        tee.join(timeout=5.0)
        os.close(shown)
