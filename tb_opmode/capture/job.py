"""The user's command, run as it would run without us: its streams teed, its signals passed on.

In: the command, its environment, the files its stdout and stderr are kept in, the lines
kept off the terminal. Out: ``run_job``, how the job ended (``JobEnd``: its return code as
``subprocess`` gives it, negative for the signal that ended it; the CPU time it and the
children it waited for used).

The job runs in the working directory it was started from, in a process group of its own,
so that a signal reaches it once: Ctrl-C (SIGINT), SIGTERM, SIGHUP and SIGQUIT sent to
``tb-opmode record`` are passed to the job's whole group (its children too), which then
ends as it chooses; Ctrl-Z stops the job, then us, and ``fg`` continues both; a resized
terminal resizes the job's. Its stdin is ours (a job in a group of its own that reads a
terminal is stopped by it, as a background job would be).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Optional

from ..errors import CannotRecord
from .tee import Hidden, Tee

__all__ = ["run_job", "JobEnd", "FORWARDED"]

# Signals a terminal or a scheduler sends to end a job: passed on to the job's group.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# How long the streams may stay open after the job ends (a process it left running).
_DRAIN_S = 5.0

_Handler = Callable[[int, Optional[FrameType]], Any]


@dataclass(frozen=True)
class JobEnd:
    returncode: int
    cpu_s: float  # user + system, the job's and its waited-for children's


def _wait(proc: subprocess.Popen[bytes]) -> JobEnd:
    """Wait for the job (signal handlers still run) and take its resource usage."""
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return JobEnd(proc.returncode, usage.ru_utime + usage.ru_stime)


def _own_group() -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover - Python 3.9 and 3.10


class _Group:
    """The job's process group, once it is started; the signals that came before it was,
    passed on then (a Ctrl-C in the instant between starting the job and knowing its
    group still reaches it)."""

    def __init__(self) -> None:
        self.pgid: Optional[int] = None
        self.pending: list[int] = []

    def signal(self, signum: int) -> None:
        if self.pgid is None:
            self.pending.append(signum)
            return
        try:
            os.killpg(self.pgid, signum)
        except ProcessLookupError:  # the job's group is gone already
            pass

    def started(self, pgid: int) -> None:
        self.pgid = pgid
        for signum in self.pending:
            self.signal(signum)
        self.pending.clear()


def _handlers(group: _Group, tees: Sequence[Tee]) -> dict[int, _Handler]:
    """What each signal does while the job runs."""

    def forward(signum: int, _frame: Optional[FrameType]) -> None:
        group.signal(signum)

    def suspend(_signum: int, _frame: Optional[FrameType]) -> None:
        group.signal(signal.SIGTSTP)
        os.kill(os.getpid(), signal.SIGSTOP)

    def resume(_signum: int, _frame: Optional[FrameType]) -> None:
        group.signal(signal.SIGCONT)

    def resize(_signum: int, _frame: Optional[FrameType]) -> None:
        for tee in tees:
            tee.follow_size()

    handlers: dict[int, _Handler] = {s: forward for s in FORWARDED}
    handlers.update({signal.SIGTSTP: suspend, signal.SIGCONT: resume, signal.SIGWINCH: resize})
    return handlers


@contextmanager
def _passing_signals(group: _Group, tees: Sequence[Tee]) -> Iterator[None]:
    previous = {signum: signal.signal(signum, handler)
                for signum, handler in _handlers(group, tees).items()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _start(command: Sequence[str], env: Mapping[str, str], tees: Sequence[Tee]) -> subprocess.Popen[bytes]:
    """The job started, its streams into the tees; ``CannotRecord`` if it cannot start."""
    try:
        proc = subprocess.Popen(list(command), env=dict(env), stdout=tees[0].writer,
                                stderr=tees[1].writer, **_own_group())
    except OSError as err:
        for tee in tees:
            tee.close_writer()
            tee.start().join()
        raise CannotRecord(f"{command[0]}: cannot run: {err.strerror or err}") from None
    for tee in tees:
        tee.close_writer()
        tee.start()
    return proc


def run_job(command: Sequence[str], env: Mapping[str, str], stdout_path: str, stderr_path: str,
            hidden: Hidden, shown: tuple[Optional[int], Optional[int]] = (1, 2)) -> JobEnd:
    """Run ``command`` to its end; its stdout and stderr kept whole in the two files and
    shown on ``shown`` (our stdout and stderr) less the ``hidden`` lines."""
    tees = [Tee(shown[0], stdout_path, hidden), Tee(shown[1], stderr_path, hidden)]
    group = _Group()
    # Our handlers before the job starts: a signal from then on is the job's.
    with _passing_signals(group, tees):
        proc = _start(command, env, tees)
        group.started(proc.pid)
        ended = _wait(proc)
    for tee in tees:
        if not tee.join(_DRAIN_S):
            sys.stderr.write(f"tb-opmode record: the job ended but a process it started still "
                             f"writes to {os.path.basename(tee.path)}; not waiting for it\n")
    return ended
