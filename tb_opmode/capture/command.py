"""``tb-opmode record LOGDIR [--evidence LEVEL] [--steps A:B] [--name NAME] -- COMMAND [ARGS...]``

In: the arguments after ``record``, the environment, and the CLI's table renderer. Out:
the user's command run unchanged (``python train.py --lr 3e-5``, ``python -m pkg.train``,
a shell script that runs Python) with the evidence of its level switched on, one run
directory under LOGDIR holding all of it (``manifest.json``, the job's stdout and stderr,
TF's trace lines, a profile, a dump at ``calls`` and ``full``), then the run's summary and
the ``tensorboard`` line; the exit status is the job's (killed by a signal: the same
signal, or 128 + its number).

Bad input is one ``BadParameter`` or ``CannotRecord`` line before anything runs (the CLI
prints it and exits 2): an unknown level, a bad window, no command after ``--``, a command
not found, a LOGDIR that cannot be written. A job that fails still leaves what it wrote.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, Optional, TextIO

from ..errors import BadParameter, CannotRecord
from . import manifest
from .inprocess import DEFAULT_STEPS, EAGER_WINDOW_S, LEVELS
from .job import JobEnd, run_job
from .plan import Plan, check_level, check_name, check_steps, make_plan
from .summary import Render, print_summary

__all__ = ["record_main", "USAGE"]

USAGE = "tb-opmode record LOGDIR [--evidence LEVEL] [--steps A:B] [--name NAME] -- COMMAND [ARGS...]"
# Signals a job may end by that we end by too, so that a shell or a loop around us sees
# what it would have seen (Ctrl-C stops a `for` loop of them); other ones become 128 + N.
_DIE_AS_THE_JOB = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        raise BadParameter(f"record: {message} (usage: {USAGE})")


def _parser() -> argparse.ArgumentParser:
    levels = "; ".join(f"{name}: {level.says}" for name, level in LEVELS.items())
    p = _Parser(prog="tb-opmode record", usage=USAGE,
                description="Run COMMAND unchanged with TensorFlow's evidence switched on, "
                            "into one run directory under LOGDIR; then summarise it.")
    p.add_argument("logdir", metavar="LOGDIR", help="the TensorBoard logdir the run goes into")
    p.add_argument("--evidence", default="kernels", metavar="LEVEL",
                   help=f"what to collect (default kernels). {levels}")
    p.add_argument("--steps", metavar="A:B", default=f"{DEFAULT_STEPS[0]}:{DEFAULT_STEPS[1]}",
                   help="the calls of the outermost tf.function to profile, from 1, both "
                        "included (default %(default)s)")
    p.add_argument("--name", help="the run directory's name (default: the local time)")
    return p


@dataclass(frozen=True)
class _Request:
    logdir: str
    evidence: str
    steps: str
    name: Optional[str]
    command: tuple[str, ...]


def _parse(argv: Sequence[str]) -> _Request:
    """Everything after the first ``--`` is the command, as given."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = _parser().parse_known_args(argv[:cut])
    if extra and not extra[0].startswith("-") and cut == len(argv):
        raise BadParameter(f"record: no command after '--' (did you mean: tb-opmode record "
                           f"{shlex.quote(args.logdir)} -- {shlex.join(extra)}?)")
    if extra:
        raise BadParameter(f"record: unrecognized arguments: {' '.join(extra)} (usage: {USAGE})")
    return _Request(args.logdir, args.evidence, args.steps, args.name, tuple(argv[cut + 1:]))


def _check_command(command: Sequence[str], environ: Mapping[str, str]) -> None:
    if not command:
        raise BadParameter(f"record: no command after '--' (usage: {USAGE})")
    if shutil.which(command[0], path=environ.get("PATH", os.defpath)) is None:
        raise CannotRecord(f"{command[0]}: command not found (or not executable)")


def _die_as(returncode: int) -> int:
    """The job's status as ours: its exit code, or its signal."""
    if returncode >= 0:
        return returncode
    signum = -returncode
    if signum in _DIE_AS_THE_JOB:
        try:
            sys.stdout.flush()
        except OSError:
            pass
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return 128 + signum


def _started(plan: Plan, stderr: TextIO) -> None:
    settings = plan.settings
    a, b = EAGER_WINDOW_S
    window = (f"; profiling steps {settings.steps[0]}:{settings.steps[1]} (a job with no tf.function "
              f"call yet: its eager work {a:g} to {b:g} s after TF's import)")
    stderr.write(f"tb-opmode record: evidence {settings.evidence} into {plan.rundir}{window}\n")
    stderr.flush()


def record_main(argv: Sequence[str], stdout: TextIO, stderr: TextIO, render: Render,
                environ: Optional[Mapping[str, str]] = None) -> int:
    """``tb-opmode record ...``: the job's status (or, once it has ended by a signal that
    should end us too, no return at all)."""
    environ = dict(os.environ if environ is None else environ)
    request = _parse(argv)
    check_level(request.evidence)
    check_steps(request.steps)
    check_name(request.name)
    _check_command(request.command, environ)
    plan = make_plan(request.logdir, request.evidence, request.steps, request.name, environ)
    doc = manifest.begin(plan, request.command, environ)
    _started(plan, stderr)
    ended: Optional[JobEnd] = None
    started = time.monotonic()
    try:
        ended = run_job(request.command, plan.job_environment(environ),
                        os.path.join(plan.rundir, manifest.STDOUT),
                        os.path.join(plan.rundir, manifest.STDERR), plan.hidden,
                        shown=(_fileno(stdout), _fileno(stderr)))
    finally:
        manifest.end(plan.rundir, doc, None if ended is None else ended.returncode,
                     time.monotonic() - started, cpu_s=None if ended is None else ended.cpu_s,
                     problem=None if ended else "the recording stopped before the job ended")
    returncode = ended.returncode
    _report_end(plan, request, returncode, render, stdout, stderr)
    return _die_as(returncode)


def _report_end(plan: Plan, request: _Request, returncode: int, render: Render,
                stdout: TextIO, stderr: TextIO) -> None:
    """The summary and the job's status; neither a second Ctrl-C nor a reader of our output
    gone away (``record ... | head``) may change the status we exit with."""
    try:
        stdout.flush()
        print_summary(plan.rundir, request.logdir, render, stdout)
    except KeyboardInterrupt:  # Ctrl-C again while reading: the run is there, the summary not
        stderr.write(f"\n(summary skipped: tb-opmode summary {shlex.quote(plan.rundir)})\n")
    except BrokenPipeError:
        pass
    try:
        stderr.write(f"tb-opmode record: {shlex.join(request.command)} exited with "
                     f"{_status_text(returncode)}\n")
        stderr.flush()
    except BrokenPipeError:
        pass


def _status_text(returncode: int) -> str:
    if returncode >= 0:
        return f"status {returncode}"
    return f"signal {signal.Signals(-returncode).name}"


def _fileno(stream: TextIO) -> Optional[int]:
    """Where a stream's bytes go, if it has a descriptor (a StringIO in tests has none)."""
    try:
        stream.flush()
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None
