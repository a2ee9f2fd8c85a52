"""What each event of a profile, and each kernel a TF log names, is booked to.

In: a ``RunModel``'s profiles (eager events ``(op type, is a function call, start,
duration)``, graph events ``(node, kernel, start, duration)``) and logs (eager dispatches
and graph kernel executions, counted per name). Out: the op type, mode and kernel each is
booked to: the counts of a run without a dump (``log_counts``, ``profile_counts``), the
graph kernels of such a run (``logged_graph_kernels``, ``profiled_graph_kernels``), and
the profiled time per op type, mode and kernel (``op_times``) that the summary, the tab's
table, matrix and timeline all read, so that they agree.

The one classification of a name: ``row_op`` (a kernel's op type), ``is_user_op`` (not
tfdbg's instrumentation nor executor plumbing), ``node_op_types`` (a profiled graph node's
op type) and ``eager_kernels`` (the kernel an eager event is put down to). They test
names with ``nodes.canonical_op`` and ``vocab.is_debug_kernel``, once per distinct key of
a profile's events (``tally``), not per event. The run's counts and
times from events are booked here only, so that how an event is booked changes in one
place (``kernels`` reads events too, for links to dump ops; ``present.timeline`` draws
them, booked by ``node_op_types`` and ``eager_kernels``).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from ..errors import Problem
from ..model import RunModel
from ..vocab import PLUMBING_KERNELS, REMOVED, is_debug_kernel, is_function
from .nodes import canonical_op, suffixes
from .tally import tally

__all__ = ["row_op", "is_user_op", "log_counts", "profile_counts", "logged_graph_kernels",
           "profiled_graph_kernels", "node_op_types", "eager_kernels", "op_times"]

# Fused kernels stand for the op their pattern starts with (the fused node keeps the
# name of the pattern's last op): a run without a dump names its rows after them.
_FUSED_HEADS = (("FusedConv2D", "Conv2D"), ("FusedMatMul", "MatMul"),
                ("FusedBatchMatMul", "BatchMatMulV2"), ("FusedDepthwiseConv2dNative",
                                                        "DepthwiseConv2dNative"),
                ("PadWithConv2D", "Conv2D"), ("PadWithFusedConv2D", "Conv2D"),
                ("FusedConv3D", "Conv3D"), ("FusedBatchNormEx", "FusedBatchNormV3"))


def row_op(kernel: str) -> str:
    """The op type a kernel ran for: ``_MklNativeConv2D`` -> Conv2D, and a fused kernel
    -> its pattern's first op (``_MklNativeFusedConv2D``, ``_FusedConv2D`` -> Conv2D)."""
    base = canonical_op(kernel).lstrip("_")
    for fused, head in _FUSED_HEADS:
        if base.startswith(fused):
            return head
    if base.endswith("WithBias"):  # _MklNativeConv2DBackpropFilterWithBias
        return base[:-len("WithBias")]
    return canonical_op(kernel)


def is_user_op(kernel: str) -> bool:
    """Whether a kernel the log or profile names ran an op of the user's program, not
    tfdbg's instrumentation or the executor's plumbing."""
    return bool(kernel) and kernel not in PLUMBING_KERNELS and not is_debug_kernel(kernel)


# ---------------------------------------------------------------- counts without a dump


def log_counts(model: RunModel) -> None:
    """Adds the executions the run's logs count to the model's rows and functions."""
    for log in model.logs:
        for dispatch, n in log.eager_dispatch.items():
            if is_function(dispatch):
                model.functions[dispatch] += n
            elif not is_debug_kernel(dispatch):  # an eager NoOp is the user's, as in a dump
                model.row(row_op(dispatch)).eager.executions += n
        for kernel, n in log.kernel_executions.items():
            if is_user_op(kernel):
                model.row(row_op(kernel)).graph.executions += n


def profile_counts(model: RunModel) -> None:
    """Adds the executions the run's profiles count to the model's rows and functions, and
    a problem per profile saying they cover its window only."""
    for prof in model.profiles:
        events = tally(prof)
        for (op_type, is_func), (n, _ns) in events.eager.items():
            if is_func or is_function(op_type):
                model.functions[op_type] += n
            elif not is_debug_kernel(op_type):
                model.row(op_type).eager.executions += n
        for kernel, (n, _ns) in events.kernels.items():
            if is_user_op(kernel):
                model.row(row_op(kernel)).graph.executions += n
        if prof.eager_ops or prof.graph_ops:
            model.problems.append(Problem(prof.path, 0, (
                "counts from this profile cover only the steps it profiled (the profiler's "
                "window), not the whole run; a tfdbg dump (enable_dump_debug_info) counts "
                "every execution")))


def logged_graph_kernels(model: RunModel) -> Counter[str]:
    """Kernel -> the graph executions the logs' Process node lines count."""
    counted: Counter[str] = Counter()
    for log in model.logs:
        for kernel, n in log.kernel_executions.items():
            if is_user_op(kernel):
                counted[kernel] += n
    return counted


def profiled_graph_kernels(model: RunModel) -> Counter[str]:
    """Kernel -> the graph events the profiles recorded of it."""
    counted: Counter[str] = Counter()
    for prof in model.profiles:
        for kernel, (n, _ns) in tally(prof).kernels.items():
            if is_user_op(kernel):
                counted[kernel] += n
    return counted


# ---------------------------------------------------------------- profiled time


def _own_nodes(model: RunModel) -> dict[str, str]:
    """Node -> op type, for the nodes ``kernels.assign_graph`` linked to a dump op as that
    op's own node (not one it was fused into, nor the producer read in its place)."""
    exact: dict[str, str] = {}
    for op in model.graph_ops:
        if op.node and not op.fused_into and op.kernel != REMOVED:
            exact.setdefault(op.node, op.op_type)
    return exact


def _dump_op_types(model: RunModel) -> dict[str, str]:
    """Op name -> op type, for every op the run's dumps define."""
    by_name: dict[str, str] = {}
    for dump in model.dumps:
        for graph in dump.graphs.values():
            for name, created in graph.ops.items():
                by_name.setdefault(name, created.op_type)
    return by_name


def node_op_types(model: RunModel) -> dict[str, str]:
    """Executed graph node (as the profile names it) -> the op type it ran for.

    The one mapping of profiled graph time to op types, in this order:

    1. the node ``kernels.assign_graph`` linked to a dump op (``OpKernel.node``),
       when it is that op's own node (not the node of another op it was fused
       into, nor the producer read in place of an op optimized away);
    2. the dump op named by the longest ``/``-suffix of the node name (inlined
       calls prefix names; this also finds ops tfdbg does not trace, e.g. ones
       without outputs such as ``AssignVariableOp``);
    3. the op type the node's kernel ran for (``row_op``: a fused kernel's first op),
       as the log's counts name their rows: nodes grappler made that stand for no dump
       op, and every node of a run without a dump.

    tfdbg's own nodes (``is_debug_kernel``) and executor plumbing
    (``PLUMBING_KERNELS``) are no user op: they are left out.
    """
    exact, by_name = _own_nodes(model), _dump_op_types(model)
    out: dict[str, str] = {}
    for prof in model.profiles:
        for node, kernel in tally(prof).graph:
            if node in out or is_debug_kernel(kernel) or kernel in PLUMBING_KERNELS:
                continue
            op_type = exact.get(node) or next((by_name[s] for s in suffixes(node) if s in by_name),
                                              None)
            out[node] = op_type or row_op(kernel)
    return out


def eager_kernels(model: RunModel) -> dict[str, str]:
    """Op type -> the kernel its eager events are put down to: the one it ran eagerly most
    often (a profiler event of an eager op does not name its kernel). Op types without a
    known eager kernel are absent (their time is of kernel class ``unknown``)."""
    return {op_type: max(row.eager.kernels, key=lambda k: k.executions).name
            for op_type, row in model.op_types.items() if row.eager.kernels}


def op_times(model: RunModel) -> dict[tuple[str, str, str], list[int]]:
    """(op type, mode, kernel) -> [events, total ns], from the run's profiles.

    Eager events are booked to ``eager_kernels`` ("" when no kernel is known),
    graph events to their own kernel and the op type ``node_op_types`` gives.
    tf.function calls, tfdbg's instrumentation and executor plumbing are left out.
    """
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    eager_kernel = eager_kernels(model)
    op_of = node_op_types(model)
    for prof in model.profiles:
        events = tally(prof)
        for (op_type, is_func), (n, ns) in events.eager.items():
            if is_func or is_function(op_type) or is_debug_kernel(op_type):
                continue
            cell = out[(op_type, "eager", eager_kernel.get(op_type, ""))]
            cell[0] += n
            cell[1] += ns
        for (node, kernel), (n, ns) in events.graph.items():
            graph_op = op_of.get(node)
            if graph_op is None:
                continue  # tfdbg's own nodes and executor plumbing
            cell = out[(graph_op, "graph", kernel)]
            cell[0] += n
            cell[1] += ns
    return dict(out)
