"""One piece of reading in a forked child, its result sent back on a pipe.

In: a callable, run in the child, that returns the result as bytes (pickled by the
caller), and perhaps one to run in the child after it sent them. Out: ``start`` gives
the child's (pid, read end of its pipe) or raises the ``OSError`` of ``pipe``/``fork``
for the caller to report in its own words; ``collect`` gives (wait status, bytes sent),
the child reaped, or, with ``reap=False``, as soon as it has sent them all (it is then
reaped by ``reap_deferred``); ``abandon`` ends and reaps a child whose result is no
longer wanted.

The result goes with its length first, so the parent knows it has all of it without
waiting for the child to exit: a child's work after sending (writing the cache) then
overlaps with the parent's.

The callers (the text log's second half, a run's log beside its dump, a dump's traces
file in ranges) decide when forking is safe: one thread, more than one core.
"""
from __future__ import annotations

import os
import signal
import struct
from typing import Callable, Optional

__all__ = ["start", "collect", "abandon", "reap_deferred"]

_LENGTH = struct.Struct("<Q")
# Children that sent their result and were left to finish (``collect(reap=False)``).
_deferred: list[int] = []


def start(work: Callable[[], bytes], after: Optional[Callable[[], None]] = None) -> tuple[int, int]:
    """Fork a child that writes ``work()`` to a pipe, closes it, runs ``after()`` if given,
    and exits (0 if it wrote all)."""
    rfd, wfd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(rfd)
        os.close(wfd)
        raise
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.close(rfd)
            data = work()
            with os.fdopen(wfd, "wb") as out:
                out.write(_LENGTH.pack(len(data)))
                out.write(data)
            code = 0
            if after is not None:
                after()
        finally:
            os._exit(code)
    os.close(wfd)
    return pid, rfd


def collect(child: tuple[int, int], reap: bool = True) -> tuple[int, bytes]:
    """All the child sent and its wait status (0: it wrote everything and exited; b"" with
    any other). ``reap=False``: a child that sent everything is left to finish what it does
    after (``start``'s ``after``), status 0, until ``reap_deferred``."""
    pid, rfd = child
    with os.fdopen(rfd, "rb") as inp:
        data = inp.read()
    whole = len(data) >= _LENGTH.size and _LENGTH.unpack_from(data)[0] == len(data) - _LENGTH.size
    if whole and not reap:
        _deferred.append(pid)
        return 0, data[_LENGTH.size:]
    _, status = os.waitpid(pid, 0)
    return (status, data[_LENGTH.size:]) if whole and status == 0 else (status or -1, b"")


def reap_deferred() -> None:
    """Wait for the children ``collect(reap=False)`` left to finish."""
    while _deferred:
        pid = _deferred.pop()
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # reaped elsewhere (a test's or a server's ``waitpid(-1)``)


def abandon(child: tuple[int, int]) -> None:
    """End a child whose result is no longer wanted, and reap it: its pipe closed (a
    write then fails) and, as it may still be reading, SIGTERM (our own child, by pid)."""
    pid, rfd = child
    os.close(rfd)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # it had ended
    os.waitpid(pid, 0)
