"""How a run's evidence was made, and whether its kernels are the job's.

In: a ``RunModel`` with its dumps read, and its directory's ``manifest.json`` (``read.
manifest``). Out: ``model.recorded`` (the evidence level ``tb-opmode record`` used, None
for a run made by hand; the TF version and the host from it where no dump or profile names
them), the trace lines of the recording's trace log with the time each trace took, a problem
where the job's count of eager lines left dispatches out (``DROPPED_LINES``), the lines it
counted where no dump has eager stacks (``counted_eager_lines``), and
``model.reads_tensors``: the ``tensor_debug_mode`` of a dump
whose debug ops read every traced tensor ("" where there is none, or it is NO_TENSOR).
Such a dump changes what runs: grappler's remapper fuses no op whose output a debug op
reads, so the run's graph kernels are the debug run's, not the job's (``FUSION_NOTE``).
"""
from __future__ import annotations

import dataclasses
import os

from ..errors import Problem
from ..model import RunModel
from ..read.manifest import TRACE_LOG, EagerLine, recorded_run
from ..read.sources import display
from ..read.tfdbg import DEBUG_MODE_NAMES
from ..read.trace_log import TraceLine

__all__ = ["note_recording", "reads_tensors", "counted_eager_lines", "FUSION_NOTE", "DROPPED_LINES"]

FUSION_NOTE = ("its {mode} dump reads every traced tensor, so grappler's remapper fused no op: "
               "its graph kernels are those of the debug run, not of the job as it runs "
               "(a NO_TENSOR dump, or none: `tb-opmode record --evidence kernels`, keeps them)")


# A job whose eager ops came from more stacks than the recording keeps (one that makes
# functions anew in a loop): the hot spots' lines leave these dispatches out.
DROPPED_LINES = ("the recording job counted {n:,} eager dispatch(es) from stacks past the "
                 "commonest ones it keeps: they are on no line of the eager hot spots")


def counted_eager_lines(model: RunModel) -> tuple[EagerLine, ...]:
    """The eager dispatches per stack that the recording job counted, for a run whose dumps
    recorded no eager stack (the job counts them only at the level with no dump); ()
    otherwise: the hot spots, the call sites and their words all take them from here."""
    if model.recorded is None or any(dump.execution_sites for dump in model.dumps):
        return ()
    return model.recorded.eager_lines or ()


def reads_tensors(model: RunModel) -> str:
    """The tensor-reading ``tensor_debug_mode`` of the run's dump, "" if none."""
    if model.recorded is not None and model.recorded.dump_mode:
        mode = model.recorded.dump_mode
        return "" if mode == "NO_TENSOR" else mode
    modes = {mode for dump in model.dumps for mode in dump.tensor_debug_modes if mode > 1}
    modes |= {mode for log in model.logs for mode in log.debug_modes.values() if mode > 1}
    return ", ".join(DEBUG_MODE_NAMES.get(m, str(m)) for m in sorted(modes))


def note_recording(model: RunModel) -> None:
    """``model.recorded`` and ``model.reads_tensors``; the TF version from the manifest
    where no dump gave it, the host where no dump or profile is named after one (a
    ``kernels`` run of a job that ran no step has neither)."""
    if model.recorded is None:
        model.recorded = recorded_run(model.directory)
    if model.recorded is not None and not model.tensorflow_version:
        model.tensorflow_version = model.recorded.tensorflow_version
    if model.recorded is not None and not model.hosts and model.recorded.host:
        model.hosts = [display(model.recorded.host)]
    if model.recorded is not None and model.recorded.trace_seconds:
        model.trace_lines = _timed_trace_lines(model, model.recorded.trace_seconds)
    if model.recorded is not None and model.recorded.eager_lines_dropped:
        model.problems.append(Problem(model.directory, 0, DROPPED_LINES.format(
            n=model.recorded.eager_lines_dropped)))
    model.reads_tensors = reads_tensors(model)


def _timed_trace_lines(model: RunModel, seconds: tuple[float | None, ...]) -> list[TraceLine]:
    """The run's trace lines, those of the recording's trace log with the time each took
    (its n-th line, the manifest's n-th time)."""
    out: list[TraceLine] = []
    for log in model.logs:
        if os.path.basename(log.path) == TRACE_LOG:
            out += [dataclasses.replace(line, seconds=seconds[n]) if n < len(seconds) else line
                    for n, line in enumerate(log.trace_lines)]
        else:
            out += log.trace_lines
    return out
