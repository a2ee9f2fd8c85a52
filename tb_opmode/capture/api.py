"""``with tb_opmode.record(logdir, evidence="kernels"):``: a recording of a block of the
user's own code, for notebooks and custom harnesses.

In: the same parameters as ``tb-opmode record`` (LOGDIR, level, window of steps, run
name). Out: the run directory (the ``with`` target), made as ``record`` makes it: this
process's stdout and stderr (its descriptors, so TF's C++ log too) teed into the run for
the block, the level's evidence switched on (``inprocess.Recording``), the manifest, and
at the end the summary, unless ``summary=False``.

TensorFlow reads its C++ log settings once, when its library loads: if it is imported
before the block, they cannot take effect, and a ``RuntimeWarning`` says so (the dump,
the profile and the trace lines are still recorded; the manifest lists what was not).
Before TF's import, the block sets them and puts the environment back after.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Optional, Union

from ..cli import render_table
from . import manifest
from .inprocess import Recording, attach_when_imported
from .plan import Plan, make_plan
from .summary import print_summary
from .tee import redirect_fd

__all__ = ["record"]


@contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _teed(plan: Plan) -> Iterator[None]:
    """fd 1 and 2 into the run for the block (Python's buffers flushed at both ends)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with ExitStack() as stack:
        stack.enter_context(redirect_fd(1, os.path.join(plan.rundir, manifest.STDOUT), plan.hidden))
        stack.enter_context(redirect_fd(2, os.path.join(plan.rundir, manifest.STDERR), plan.hidden))
        try:
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()


def _too_late(plan: Plan) -> dict[str, str]:
    """The C++ settings TF already read: warned about, and listed in the manifest."""
    late = dict(plan.variables)
    if late:
        settings = " ".join(f"{k}={v}" for k, v in late.items())
        warnings.warn(f"tb_opmode.record: TensorFlow is already imported, so its C++ log settings "
                      f"({settings}) cannot take effect; recording the profile, the dump and the "
                      "trace lines only. Call record() before importing TensorFlow for the log.",
                      RuntimeWarning, stacklevel=4)
    return late


@contextmanager
def record(logdir: str, evidence: str = "kernels", steps: Union[str, tuple[int, int], None] = None,
           name: Optional[str] = None, summary: bool = True) -> Iterator[str]:
    """Record the block into a new run under ``logdir``; the run directory is the target.

    ``evidence``: ``kernels`` (no dump), ``calls`` (a NO_TENSOR dump) or ``full``;
    ``steps``: the calls of outermost tf.functions to profile, ``"A:B"`` or ``(A, B)``;
    ``name``: the run directory's name (default: the local time)."""
    plan = make_plan(logdir, evidence, steps, name, os.environ)
    loaded = "tensorflow" in sys.modules
    doc = manifest.begin(plan, [sys.executable, *sys.argv], os.environ)
    doc["in_process"] = True
    if loaded:
        doc["not_applied"] = _too_late(plan)
    failure: Optional[str] = None
    recording = Recording(plan.settings)
    started = time.monotonic()
    with _environment({} if loaded else plan.variables), _teed(plan):
        stop_waiting = attach_when_imported(recording)
        try:
            yield plan.rundir
        except BaseException as err:
            failure = f"the block raised {type(err).__name__}: {err}"
            raise
        finally:
            stop_waiting()
            recording.finish()
            manifest.end(plan.rundir, doc, 0 if failure is None else None, time.monotonic() - started,
                         problem=failure)
    if summary:
        print_summary(plan.rundir, plan.logdir, render_table, sys.stdout)
