"""What a missing profiler event proves: whether a node with no event of its own ran.

In: a ``RunModel`` (its profiles' windows, its dumps' function calls and buffer cuts)
and the dump graph ops no event names. Out: whether a node would have been traced at
every run (so that no event means no node), and, where that proves nothing, the note
each such op and the run's profiles carry, saying how to get a profile that would tell.
"""
from __future__ import annotations

from ...model import OpKernel, RunModel
from ...read.tfdbg import DumpSet

__all__ = ["NO_EVENT_OPS", "TRACED_RUNS", "traced_at_every_run", "calls_before_window",
           "runs_before_window", "say_untraced"]

# Kernels the executor runs inline without a profiler event at the default host tracer
# level: their OpKernel says IsExpensive() false (TF's shape_ops, identity_op,
# constant_op), so the executor traces them at level 3 only (seen on TF 2.21: Reshape,
# ExpandDims, Const, Shape; on TF 2.13: ShapeN).
NO_EVENT_OPS = frozenset(("Reshape", "ExpandDims", "Squeeze", "Const", "Identity", "Snapshot",
                          "Bitcast", "Shape", "ShapeN", "Size", "Rank", "IdentityN",
                          "StopGradient", "PreventGradient"))

# TF's executor keeps a cost estimate per node, which starts at 100M cycles and becomes
# (9 * estimate + cycles) / 10 at every run; once it is under 8000 cycles the node counts as
# cheap and is traced at host_tracer_level 3 only (executor.cc's KernelStats,
# traceme.h's GetTFTraceMeLevel). From 100M that takes 90 runs even of a free kernel, so a
# node that ran at most this often was traced at every run at the default level 2.
TRACED_RUNS = 90

# How many callers up the search for a function called from Python goes.
_CALLER_HOPS = 16


def traced_at_every_run(executions: int, cut: bool, runs_before: int | None) -> bool:
    """Whether a missing profiler event can mean "no node": only while the node ran too
    few times for its cost estimate to fall under the tracing threshold, before the
    profiled window (``runs_before``, where known) or at all. A dump cut by its circular
    buffer kept only a tail, so its count bounds nothing."""
    if runs_before is not None:
        return runs_before < TRACED_RUNS
    return not cut and executions <= TRACED_RUNS


def calls_before_window(model: RunModel, dump: DumpSet, graph_id: str) -> tuple[int, int] | None:
    """(calls, calls before the last profiled window began) of the function a graph's ops
    run with, called from Python; None where not known (no profile start, no calls)."""
    # A function called from another (Keras 3's step inside its multi-step function)
    # runs with its caller: its calls are the outermost caller's, called from Python.
    hops = 0
    while graph_id not in dump.call_times and graph_id in dump.graphs and hops < _CALLER_HOPS:
        graph_id, hops = dump.graphs[graph_id].outer_id, hops + 1
    calls = dump.call_times.get(graph_id)
    starts = _window_starts(model, dump)
    if not calls or not starts:
        return None
    start = max(starts) / 1e9
    return len(calls), sum(1 for t in calls if t < start)


def _window_starts(model: RunModel, dump: DumpSet) -> list[int]:
    """When each profile of the dump's host began (ns), or the latest it can have."""
    # An estimated start (TF 2.13's, from the file's mtime) may be late or early: its end
    # is the file's mtime, after the window, and calls before it bound those before it.
    return [p.start_ns if p.time_source in ("profile_start_time", "line_timestamps")
            else p.end_ns for p in model.profiles
            if p.time_source and p.start_ns and (p.host == dump.host or not dump.host)]


def runs_before_window(calls: tuple[int, int] | None, op: OpKernel, cut: bool) -> int | None:
    """How often the op had run before the last profiled window began: its function's
    calls before it, where the op runs once per call (its executions equal the calls; not
    so in a loop's body or a branch). None where that is not known, or the eager records
    were cut."""
    if calls is None or cut or op.executions != calls[0]:
        return None
    return calls[1]


def say_untraced(model: RunModel, ops: list[OpKernel], cut: bool) -> None:
    """Ops the profile has no event of where that proves nothing: each says so, and the
    run's profile notes say how to get a profile that would tell."""
    why = ("the dump kept only its circular buffer's last records, so how often a node had "
           "run is not known" if cut else
           f"its nodes ran up to {max(op.executions for op in ops)} times")
    advice = (f"TF's executor stops tracing a node at the default host tracer level once its "
              f"running cost estimate falls under 8000 cycles, which takes {TRACED_RUNS} "
              f"runs; {why}, so a node with no event in the profile may still have run. To "
              f"know, profile one of the first steps, or with host_tracer_level=3, or keep "
              f"TF's log (TF_CPP_MAX_VLOG_LEVEL=2)")
    for op in ops:
        op.note = (op.note + "; " if op.note else "") + (
            "the profile has no event for it, which does not prove it removed: " + advice)
    for profile in model.profiles:
        note = f"{len(ops)} graph ops have no event of their own: {advice}"
        if note not in profile.notes:
            profile.notes.append(note)
