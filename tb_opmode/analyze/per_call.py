"""Graph counts of a run without a dump nor per-node log lines: per call times calls.

In: a ``RunModel`` whose logs count eager dispatches and ``tf.function`` calls (TF's
``execute`` lines, exact) but no graph node executions (no ``executor`` lines: the
``kernels`` evidence level of ``tb-opmode record``), and whose profile covers a window of
calls. Out: the graph executions of each node the profile saw run inside a call,
``events in the window / calls of its function in the window x the function's calls in
the log``, booked to the row of its kernel's op type (``events.row_op``) with that kernel;
the kernel's evidence is ``log`` where the log instantiated that node with that kernel,
else ``profile``; and ``count_basis``, which counts are exact and which are per call x
calls, in words.

A graph event belongs to the call whose span holds its start (calls of one thread do not
overlap; an inner ``tf.function`` is inlined, no call of its own). Functions the window
did not see (called only before or after it) have no per-call nodes: their ops are not
counted, and a problem names them.
"""
from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..errors import Problem
from ..model import RunModel
from ..read.xtypes import Profile
from .events import is_user_op, row_op

__all__ = ["PerCall", "per_call", "count_per_call", "BASIS_EXACT_LOG", "BASIS_PER_CALL"]

BASIS_EXACT_LOG = "exact: one execute line per dispatch in the log"
BASIS_PER_CALL = ("per call x calls: the nodes each call runs (the profile of {calls} calls) "
                  "x the calls of its function (the log's execute lines, exact)")


@dataclass
class PerCall:
    """Per function: its calls in the profiled window, and (node, kernel) -> events there."""

    window_calls: Counter[str] = field(default_factory=Counter)
    nodes: dict[str, Counter[tuple[str, str]]] = field(default_factory=lambda: defaultdict(Counter))


def _add_profile(out: PerCall, prof: Profile) -> None:
    calls = sorted((start, start + dur, name) for name, is_func, start, dur in prof.eager_ops
                   if is_func)
    starts = [c[0] for c in calls]
    for name, _is_func, _start, _dur in prof.eager_ops:
        if _is_func:
            out.window_calls[name] += 1
    for node, kernel, start, _dur in prof.graph_ops:
        i = bisect.bisect_right(starts, start) - 1
        if i < 0 or start > calls[i][1] or not is_user_op(kernel):
            continue
        out.nodes[calls[i][2]][(node, kernel)] += 1


def per_call(model: RunModel) -> PerCall:
    """The nodes each profiled function ran in the window, and its calls there."""
    out = PerCall()
    for prof in model.profiles:
        _add_profile(out, prof)
    return out


def _logged(model: RunModel) -> set[tuple[str, str]]:
    """(node, kernel) pairs the logs' instantiation lines name."""
    return {(node, kernel) for log in model.logs for node, (kernel, _dt) in log.graph_kernels.items()}


def count_per_call(model: RunModel) -> list[tuple[str, str, int, str]]:
    """Adds the per call x calls graph executions to the model's rows and says how in
    ``model.count_basis``; returns (op type, kernel, executions, evidence) for the kernels
    to book. Nothing when the profile saw no call."""
    seen = per_call(model)
    if not seen.window_calls:
        return []
    logged = _logged(model)
    booked: Counter[tuple[str, str, str]] = Counter()
    for function, nodes in seen.nodes.items():
        calls = model.functions.get(function) or seen.window_calls[function]
        for (node, kernel), events in nodes.items():
            n = round(events * calls / seen.window_calls[function])
            evidence = "log" if (node, kernel) in logged else "profile"
            booked[(row_op(kernel), kernel, evidence)] += n
    for (op_type, _kernel, _evidence), n in booked.items():
        model.row(op_type).graph.executions += n
    model.count_basis["graph"] = BASIS_PER_CALL.format(calls=sum(seen.window_calls.values()))
    unseen = sorted(f for f in model.functions if f not in seen.window_calls)
    if unseen:
        model.problems.append(Problem(model.directory, 0, (
            f"graph counts are per call x calls for the functions the profile saw; "
            f"{len(unseen)} function(s) called outside its window are not counted: "
            f"{', '.join(unseen[:5])}{' ...' if len(unseen) > 5 else ''}")))
    return [(op, kernel, n, evidence) for (op, kernel, evidence), n in sorted(booked.items())]
