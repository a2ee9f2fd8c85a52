"""Graph counts of a run without a dump nor per-node log lines: per call times calls.

In: a ``RunModel`` whose logs count eager dispatches and ``tf.function`` calls (TF's
``execute`` lines, exact) and name the nodes each function's executor instantiated
(``op_kernel`` lines, ``LogFacts.function_nodes``), but hold no line per node execution
(no ``executor`` lines: the ``kernels`` evidence level of ``tb-opmode record``); and a
profile of a window of calls. Out: the graph executions of each node of each function,
``per call x the function's calls in the log``, booked to the row of its kernel's op type
(``events.row_op``), and, for a fused node, to the rows of the ops fused into it (its
``fused_ops``), with that kernel; the kernel's evidence is ``log`` where the log
instantiated that node with that kernel, else ``profile``. A node's per call count is its
events in the window over its function's calls there, and at least one where the log
shows it instantiated (the profile missed an event); a node the profile does not show
(cheap ones: Const, Identity) or of a function the window did not see runs once per call
(a node of an untaken branch is counted all the same). ``count_basis`` says so. A function
XLA compiled (``jit_compile=True``: the log's XLA launches) runs its nodes inside its XLA
cluster: the kernels the log shows instantiated for it are XLA's compilation of them, not
TF kernels that ran, so its nodes' kernel is ``(unknown)``, with a note saying why.

A graph event belongs to the call whose span holds its start (calls of one thread do not
overlap; an inner ``tf.function`` is inlined, no call of its own), unless tf.data ran it
on one of its threads: a dataset's functions are not called through ``execute`` and are
not counted here; ``count_basis`` names the ops of theirs the profile saw, so that a row
of an op that also ran in a dataset function is not taken for all its runs.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..errors import Problem
from ..model import RunModel
from ..read.xtypes import Profile
from ..vocab import UNKNOWN
from .events import is_user_op, row_op

__all__ = ["PerCall", "per_call", "count_per_call", "data_function_ops", "BASIS_EXACT_LOG",
           "BASIS_PER_CALL", "BASIS_PER_CALL_UNPROFILED", "BASIS_DATA_UNCOUNTED", "XLA_CLUSTER_NOTE"]

BASIS_EXACT_LOG = "exact: one execute line per dispatch in the log"
BASIS_PER_CALL = ("per call x calls: the nodes each call runs (the profile of {calls} calls; "
                  "nodes it does not show, and functions outside its window, once per call, "
                  "from the log's instantiation lines) x the calls of its function (the "
                  "log's execute lines, exact)")
# The same where the run holds no profile (a log kept without one).
BASIS_PER_CALL_UNPROFILED = ("per call x calls: the nodes each call runs (no profile: each "
                             "node once per call, from the log's instantiation lines) x the "
                             "calls of its function (the log's execute lines, exact)")
BASIS_DATA_UNCOUNTED = ("; not counted: the ops of tf.data functions (Dataset.map and the like), "
                        "which run once per element on tf.data's threads, not per call ({seen}); "
                        "`tb-opmode record --evidence calls` counts them")
# Dataset ops that run a function per element (Dataset.map, filter, interleave, from a
# generator...): a run that made one ran tf.data functions, whether the profile saw them or
# not (tf.data may have run them all before its window).
_DATASET_WITH_FUNCTION = re.compile(r"(Map|Filter|FlatMap|Interleave|Scan|Generator|GroupBy|TakeWhile)\w*Dataset")
# The note of a node of a function XLA compiled.
XLA_CLUSTER_NOTE = ("compiled by XLA (jit_compile=True): it ran inside its function's XLA cluster, "
                    "not as a TF kernel; the log's kernel for it is XLA's compilation of it")
# How many op types the basis names; the rest are "and N more".
_NAMED_DATA_OPS = 6


@dataclass
class PerCall:
    """Per function: its calls in the profiled window, and (node, kernel) -> events there."""

    window_calls: Counter[str] = field(default_factory=Counter)
    nodes: dict[str, Counter[tuple[str, str]]] = field(default_factory=lambda: defaultdict(Counter))


def _data_thread_indices(prof: Profile) -> set[int]:
    """Indices of the graph ops tf.data ran on its own threads: a dataset's function runs
    ahead of the steps (prefetch), so its ops fall in the spans of calls they are not part of."""
    return {i for first, end in prof.data_thread_ops for i in range(first, end)}


def _add_profile(out: PerCall, prof: Profile) -> None:
    calls = sorted((start, start + dur, name) for name, is_func, start, dur in prof.eager_ops
                   if is_func)
    starts = [c[0] for c in calls]
    for _start, _end, name in calls:
        out.window_calls[name] += 1
    data_thread = _data_thread_indices(prof)
    for at, (node, kernel, start, _dur) in enumerate(prof.graph_ops):
        if at in data_thread:
            continue
        i = bisect.bisect_right(starts, start) - 1
        if i < 0 or start > calls[i][1] or not is_user_op(kernel):
            continue
        out.nodes[calls[i][2]][(node, kernel)] += 1


def data_function_ops(model: RunModel) -> Counter[str]:
    """Op type -> the events of tf.data functions' ops in the profiles' windows: what a
    per call count leaves out."""
    out: Counter[str] = Counter()
    for prof in model.profiles:
        for first, end in prof.data_thread_ops:
            for _node, kernel, _start, _dur in prof.graph_ops[first:end]:
                if is_user_op(kernel):
                    out[row_op(kernel)] += 1
    return out


def _datasets_with_functions(model: RunModel) -> list[str]:
    """The op types of the run's datasets that run a function per element."""
    return sorted(op for op, row in model.op_types.items() if _DATASET_WITH_FUNCTION.search(op)
                  and (row.eager.executions or row.graph.executions))


def _data_uncounted(model: RunModel) -> str:
    """The count basis's clause on tf.data functions' ops: the ones the profile saw, else
    the datasets that ran such functions; "" when the run shows none."""
    seen = data_function_ops(model)
    if seen:
        named = [f"{op} x{n:,}" for op, n in seen.most_common(_NAMED_DATA_OPS)]
        more = len(seen) - len(named)
        ops = ", ".join(named) + (f" and {more} more op type(s)" if more else "")
        return BASIS_DATA_UNCOUNTED.format(seen=f"the profile saw {ops} there in its window")
    datasets = _datasets_with_functions(model)
    if not datasets:
        return ""
    return BASIS_DATA_UNCOUNTED.format(
        seen=f"the run made {', '.join(datasets[:_NAMED_DATA_OPS])}; the profile's window saw none "
             f"of their ops")


def per_call(model: RunModel) -> PerCall:
    """The nodes each profiled function ran in the window, and its calls there."""
    out = PerCall()
    for prof in model.profiles:
        _add_profile(out, prof)
    return out


# Grappler's constant folding evaluates what it folds in a graph of its own while the
# function is instantiated; the _Send/_Recv nodes of that graph run then, not per call.
_FOLDING_NODES = ("_send_", "_recv_")


def _logged_nodes(model: RunModel, function: str) -> dict[str, str]:
    """Node -> kernel, as the logs' instantiation lines of ``function``'s executor say."""
    out: dict[str, str] = {}
    for log in model.logs:
        for node, (kernel, _dtype) in log.function_nodes.get(function, {}).items():
            if is_user_op(kernel) and not node.startswith(_FOLDING_NODES):
                out[node] = kernel
    return out


def _per_call_nodes(model: RunModel, seen: PerCall, function: str
                    ) -> list[tuple[str, str, float, str]]:
    """(node, kernel, executions per call, evidence) of one function."""
    logged = _logged_nodes(model, function)
    window = seen.window_calls.get(function, 0)
    out = []
    profiled = seen.nodes.get(function, Counter()) if window else Counter()
    for (node, kernel), events in profiled.items():
        instantiated = logged.get(node) == kernel
        # A node the function's executor instantiated runs each call, as one the profile
        # does not show is counted: fewer events than calls are events the profile missed
        # (a loaded machine's profile lost a step's IteratorGetNext).
        per = max(events / window, 1.0) if instantiated else events / window
        out.append((node, kernel, per, "log" if instantiated else "profile"))
    shown = {node for node, _kernel in profiled}
    out += [(node, kernel, 1.0, "log") for node, kernel in logged.items() if node not in shown]
    return out


def _fused_ops(model: RunModel) -> dict[str, tuple[str, ...]]:
    return {node: ops for log in model.logs for node, ops in log.fused_ops.items()}


def count_per_call(model: RunModel) -> list[tuple[str, str, int, str, str]]:
    """Adds the per call x calls graph executions to the model's rows and says how in
    ``model.count_basis``; returns (op type, kernel, executions, evidence, note) for the
    kernels to book. Nothing when neither the profile nor the log names a function's nodes."""
    seen = per_call(model)
    fused = _fused_ops(model)
    compiled = {name for log in model.logs for name in log.xla_launches}
    booked: Counter[tuple[str, str, str, str]] = Counter()
    unseen = []
    for function, calls in model.functions.items():
        nodes = _per_call_nodes(model, seen, function)
        if not nodes and not any(function in log.function_nodes for log in model.logs):
            unseen.append(function)  # a function instantiated with no op of ours ran none
        for node, kernel, per, evidence in nodes:
            n = round(per * calls)
            ran, note = (UNKNOWN, XLA_CLUSTER_NOTE) if function in compiled else (kernel, "")
            for op_type in (row_op(kernel), *fused.get(node, ())):
                booked[(op_type, ran, evidence, note)] += n
    if not booked:
        return []
    for (op_type, _kernel, _evidence, _note), n in booked.items():
        model.row(op_type).graph.executions += n
    basis = BASIS_PER_CALL.format(calls=sum(seen.window_calls.values())) if model.profiles \
        else BASIS_PER_CALL_UNPROFILED
    model.count_basis["graph"] = basis + _data_uncounted(model)
    if unseen:
        model.problems.append(Problem(model.directory, 0, (
            f"graph counts are per call x calls; {len(unseen)} function(s) neither the profile "
            f"nor the log's instantiation lines show the nodes of are not counted: "
            f"{', '.join(sorted(unseen)[:5])}{' ...' if len(unseen) > 5 else ''}")))
    return [(op, kernel, n, evidence, note) for (op, kernel, evidence, note), n in sorted(booked.items())]
