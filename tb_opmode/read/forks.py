"""One piece of reading in a forked child, its result sent back on a pipe.

In: a callable, run in the child, that returns the result as bytes (pickled by the
caller). Out: ``start`` gives the child's (pid, read end of its pipe) or raises the
``OSError`` of ``pipe``/``fork`` for the caller to report in its own words; ``collect``
gives (wait status, bytes sent), the child reaped; ``abandon`` ends and reaps a child
whose result is no longer wanted.

The callers (the text log's second half, a run's log beside its dump, a dump's traces
file in ranges) decide when forking is safe: one thread, more than one core.
"""
from __future__ import annotations

import os
import signal
from typing import Callable

__all__ = ["start", "collect", "abandon"]


def start(work: Callable[[], bytes]) -> tuple[int, int]:
    """Fork a child that writes ``work()`` to a pipe and exits (0 if it wrote all)."""
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
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    return pid, rfd


def collect(child: tuple[int, int]) -> tuple[int, bytes]:
    """All the child sent and its wait status (0: it wrote everything and exited)."""
    pid, rfd = child
    with os.fdopen(rfd, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    return status, data


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
