"""What a recording will do, checked before anything runs: the level, the window of steps,
the run directory, the job's environment.

In: the user's parameters (``tb-opmode record``'s or ``tb_opmode.record``'s) and the
environment. Out: a ``Plan``, or a one-line error naming what is wrong: ``BadParameter``
for a level, a window or a run name, ``CannotRecord`` for a LOGDIR that cannot be written.
Making the run directory is the last check, the one that writes.
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, Union

from ..analyze.eager_sites import INNER_SCOPES, NOT_USER_CODE
from ..errors import BadParameter, CannotRecord
from . import boot
from .inprocess import DEFAULT_STEPS, ENV_VAR, LEVELS, Level, Settings, environment, parse_steps
from .tee import Hidden

__all__ = ["Plan", "BOOT_DIR", "check_level", "check_steps", "check_name", "make_plan"]

# The directory put first on the job's PYTHONPATH: it holds our sitecustomize only.
BOOT_DIR = os.path.dirname(os.path.abspath(boot.__file__))
_TIMESTAMP = "%Y%m%d-%H%M%S"
# What TF logs when our profile starts and stops: the job would not have printed it.
_PROFILER_FILES = ("profiler_session.cc", "save_profile.cc")
# Warnings TF prints only at a high VLOG level (a graph it would dump, had it a place).
_VLOG_WARNINGS = frozenset({"dump_graph.cc"})


@dataclass(frozen=True)
class Plan:
    """A recording, checked: where its run goes and what the job's environment gains."""

    logdir: str
    rundir: str
    settings: Settings
    variables: dict[str, str]  # the TF/oneDNN variables the level sets (name -> value)

    @property
    def level(self) -> Level:
        return self.settings.level

    @property
    def hidden(self) -> Hidden:
        """The lines the level adds to the job's output, kept off the terminal: the INFO
        lines of the modules it logs (every module's at VLOG level 2) and of the profiler
        it starts, oneDNN's lines."""
        everywhere = "TF_CPP_MAX_VLOG_LEVEL" in self.level.variables
        return Hidden(files=frozenset(_PROFILER_FILES + tuple(f"{name}.cc" for name in self.level.vmodule)),
                      all_info=everywhere, any_severity=_VLOG_WARNINGS if everywhere else frozenset(),
                      onednn="ONEDNN_VERBOSE" in self.level.variables)

    def job_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``environ`` with the level's variables, our sitecustomize first on
        ``PYTHONPATH`` and the settings the job's processes read."""
        env = dict(environ)
        env.update(self.variables)
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = BOOT_DIR + (os.pathsep + path if path else "")
        env[ENV_VAR] = self.settings.to_env()
        return env


def check_level(name: str) -> Level:
    if name not in LEVELS:
        raise BadParameter(f"--evidence: unknown level {name!r} (one of {', '.join(LEVELS)})")
    return LEVELS[name]


def check_steps(steps: Union[str, tuple[int, int], None]) -> tuple[int, int]:
    if steps is None:
        return DEFAULT_STEPS
    try:
        return parse_steps(steps if isinstance(steps, str) else f"{steps[0]}:{steps[1]}")
    except (ValueError, IndexError, TypeError) as err:
        raise BadParameter(f"--steps: {err}") from None


def check_name(name: Optional[str]) -> Optional[str]:
    """A run name is one directory name: no separator, not '.' or '..'."""
    if name is not None and (not name or name in (".", "..") or os.sep in name
                             or (os.altsep and os.altsep in name)):
        raise BadParameter(f"--name: a run name is one directory name; got {name!r}")
    return name


def _make_logdir(logdir: str) -> None:
    if "://" in logdir:
        raise CannotRecord(f"{logdir}: record writes a local directory; record locally, then copy it")
    # A file where LOGDIR should be makes makedirs fail with "File exists", which reads as
    # if a directory were in the way: say what is there.
    if os.path.exists(logdir) and not os.path.isdir(logdir):
        raise CannotRecord(f"{logdir}: LOGDIR is a file, not a directory")
    try:
        os.makedirs(logdir, exist_ok=True)
    except OSError as err:
        raise CannotRecord(f"{logdir}: cannot create LOGDIR: {err.strerror or err}") from None
    if not os.path.isdir(logdir):
        raise CannotRecord(f"{logdir}: LOGDIR is not a directory")


def _make_rundir(logdir: str, name: Optional[str]) -> str:
    """LOGDIR/NAME, or LOGDIR/<local time> (-2, -3 ... when that exists), created empty."""
    _make_logdir(logdir)
    base = name or time.strftime(_TIMESTAMP)
    candidates = [base] if name else [base] + [f"{base}-{n}" for n in range(2, 1000)]
    for candidate in candidates:
        rundir = os.path.join(logdir, candidate)
        try:
            os.mkdir(rundir)
            return os.path.abspath(rundir)
        except FileExistsError:
            continue
        except OSError as err:
            raise CannotRecord(f"{logdir}: cannot write a run into LOGDIR: {err.strerror or err}") from None
    raise CannotRecord(f"{os.path.join(logdir, base)}: already exists; choose another --name")


def make_plan(logdir: str, evidence: str, steps: Union[str, tuple[int, int], None],
              name: Optional[str], environ: Mapping[str, str]) -> Plan:
    """The parameters checked, then the run directory made (the one check that writes)."""
    level = check_level(evidence)
    window = check_steps(steps)
    check_name(name)
    rundir = _make_rundir(logdir, name)
    return Plan(logdir=logdir, rundir=rundir, settings=Settings(rundir, level.name, window,
                                                               NOT_USER_CODE, tuple(sorted(INNER_SCOPES))),
                variables=environment(level, environ))
