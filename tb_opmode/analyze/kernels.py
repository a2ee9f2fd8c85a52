"""Which kernel ran each op in each mode, and how we know: the product's heart.

In: a ``RunModel`` whose counts are filled (``join``), with its dumps,
profiles and logs. Out: per dump graph op an ``OpKernel`` (kernel, evidence,
the executed node, fusion or rewrite), per eager (op type, dtype) an
``EagerKernel`` assignment, both folded into the model's ``KernelUse`` lists.

Evidence, strongest first:

- ``log``: the TF VLOG lines. For graph ops the link from the dump's op to the
  node that ran is exact: tfdbg's ``DebugIdentityV2`` node names the dump's
  (graph id, op name, slot) in its attributes, and reads (through
  ``DebugNumericSummaryV2``) the tensor that really carries the op's output.
  When that tensor comes from another node, grappler rewrote the op: constant
  folded it, removed it (an identity Transpose) or fused it.
- ``profile``: ``<node>:<kernel>`` events, matched to dump ops by the longest
  ``/``-suffix of the node name (executor names carry the prefixes of inlined
  calls, ``StatefulPartitionedCall/...``).
- ``inferred``: from this run's own evidence first (the same op type and dtype
  observed in a graph of the run), then from ``rules`` for the dump's TF
  version.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import partial
from typing import NamedTuple

from ..model import EagerAssignment, OpKernel, RunModel
from ..read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN, DumpSet, OpCreation, digest_rank
from ..read.tfdbg import FULL_TENSOR as _FULL_TENSOR
from ..read.tfdbg import NO_TENSOR as _NO_TENSOR
from ..vocab import DEBUG_PREFIX as _DEBUG_PREFIX
from ..vocab import REMOVED, UNKNOWN, is_function, is_onednn
from .cast_reorder import reordered_across_casts
from .cse import merged_duplicates
from .datasets import batch_dimension
from .no_tensor import bypassed_reshapes, pruned_dead_ops
from .nodes import canonical_op, data_inputs, origin_name, suffixes, tensor_source
from .rules import cpu_dependence, expected_kernel, matching_rules
from .static_shapes import (
    BATCH_ASSUMPTION,
    BATCH_SEEN,
    SHAPE_NOT_FOLDED,
    unfolded_gradient_reductions,
    unprovable_reshapes,
)

__all__ = ["LogLink", "assign_graph", "assign_eager", "detect_onednn",
           "is_fused", "run_cpu", "inferred_kernel", "FLOAT_DTYPES", "cpu_from_kernels"]

FLOAT_DTYPES = frozenset(("DT_FLOAT", "DT_DOUBLE", "DT_BFLOAT16", "DT_HALF"))
# Kernels the executor runs inline without a profiler event at the default host tracer
# level: their OpKernel says IsExpensive() false (TF's shape_ops, identity_op,
# constant_op), so the executor traces them at level 3 only (measured on TF 2.21: Reshape,
# ExpandDims, Const, Shape; on TF 2.13: ShapeN).
_NO_EVENT_OPS = frozenset(("Reshape", "ExpandDims", "Squeeze", "Const", "Identity", "Snapshot",
                           "Bitcast", "Shape", "ShapeN", "Size", "Rank", "IdentityN",
                           "StopGradient", "PreventGradient"))


def is_fused(kernel: str) -> bool:
    """A kernel that grappler's remapper made out of several ops."""
    base = canonical_op(kernel)
    if base.startswith("FusedBatchNorm"):
        return base.startswith("FusedBatchNormEx")  # the plain one is a single op
    return (base.startswith(("Fused", "_Fused", "PadWith")) or "WithBias" in base
            or base in ("Swish", "FusedMish"))


# Op types that appear in remapper fusion patterns (grappler's remapper.cc);
# an op of another type is never absorbed into a fused node.
_FUSABLE = frozenset((
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BiasAdd", "BiasAddGrad", "Conv2D", "Conv3D",
    "DepthwiseConv2dNative", "Conv2DBackpropFilter", "FusedBatchNorm", "FusedBatchNormV2",
    "FusedBatchNormV3", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "Softplus",
    "Add", "AddV2", "AddN", "Mul", "Erf", "Pad", "Mish", "Gelu", "Pow", "Sub", "Rsqrt",
    "Square", "SquaredDifference", "Mean", "Cast"))


def _strip_slot(tensor: str) -> str:
    name, _, slot = tensor.rpartition(":")
    return name if name and slot.isdigit() else tensor


def _lowest_slot_counts(model: RunModel) -> dict[tuple[int, str, str], tuple[int, int]]:
    """(dump index, graph id, op name) -> (lowest traced slot, executions)."""
    return {(i, graph_id, op_name): found for i, dump in enumerate(model.dumps)
            for (graph_id, op_name), found in dump.lowest_slots().items()}


def _resolve_traced_op(pattern: str, ident: str, names: dict[str, object]) -> str:
    """The dump op a debug identity node traces, from its ``op_name`` attribute.

    TF's log shortens string attributes over about 80 characters to
    ``head...tail``; the identity node's own name is never shortened and is
    ``<prefix><op name>/DebugIdentityV2_N`` or ``<prefix><scope>/DebugIdentityV2_N``,
    which picks among the ops the shortened name fits. "" if none or several fit."""
    if pattern in names or "..." not in pattern:
        return pattern
    head, _, tail = pattern.partition("...")
    hits = [n for n in names if n.startswith(head) and n.endswith(tail)]
    if len(hits) > 1:
        scope = ident.rpartition("/")[0]
        hits = [n for n in hits if scope == n or scope.endswith("/" + n)] or [
            n for n in hits if ("/" + n + "/") in ("/" + ident)]
    return hits[0] if len(hits) == 1 else ""


class LogLink(NamedTuple):
    """What the log says of one traced dump op output, through tfdbg's debug node."""

    expected: str                       # the op's own node name, had it run
    ran: tuple[str, str] | None         # (kernel, dtype) of that node in the op's graph, if it ran
    producer: str                       # the node whose tensor the debug node read ("": NO_TENSOR)
    producer_kernel: str
    dtype: str


def _log_links(model: RunModel) -> dict[tuple[str, str, int], LogLink]:
    """(graph id, op name, slot) -> the link from the debug node that traced it."""
    graph_ops: dict[str, dict[str, object]] = {}
    for dump in model.dumps:
        for graph_id, graph in dump.graphs.items():
            graph_ops.setdefault(graph_id, {}).update(graph.ops)
    links: dict[tuple[str, str, int], LogLink] = {}
    for log in model.logs:
        for ident, (ctx, pattern, slot) in log.debug_targets.items():
            op_name = _resolve_traced_op(pattern, ident, graph_ops.get(ctx, {}))
            if not op_name:
                continue
            # The nodes of the steps this graph ran in: names repeat across functions.
            ran = log.context_kernels.get(ctx, log.graph_kernels)
            if log.debug_modes.get(ident) == _NO_TENSOR:
                producer = ""
            else:
                # Debug node names repeat across functions too: this graph's own inputs first.
                own = log.context_debug_inputs.get(ctx, {})
                summary_node = _strip_slot(own.get(ident) or log.debug_inputs.get(ident, ""))
                summary_kernel = ran.get(summary_node, ("", ""))[0]
                if summary_kernel and not summary_kernel.startswith(_DEBUG_PREFIX):
                    # Grappler folded the summary itself into a constant: so was the op.
                    producer = summary_node
                else:
                    producer = _strip_slot(own.get(summary_node)
                                           or log.debug_inputs.get(summary_node, summary_node))
            # The identity node is "<prefix><op name>/DebugIdentityV2_N" or, for
            # some outputs, "<prefix><scope>/DebugIdentityV2_N"; the prefix is
            # whatever precedes the op name in it.
            at = ident.rfind(op_name + "/")
            expected = ident[:at] + op_name if at >= 0 else ""
            if not expected and producer and (producer == op_name or producer.endswith("/" + op_name)):
                expected = producer
            if not expected or expected not in ran:
                # The identity hangs under another scope ("<prefix>a/b/DebugIdentityV2_7"
                # for op "a/b/x"): the node, if it ran, is "<prefix>" + op name for
                # some leading part of the identity's name.
                cut = ident.find("/")
                candidates = [op_name]
                while cut != -1:
                    candidates.append(ident[:cut + 1] + op_name)
                    cut = ident.find("/", cut + 1)
                expected = next((c for c in reversed(candidates) if c in ran), expected)
            kernel, dtype = ran.get(producer, ("", "")) if producer else ("", "")
            links[(ctx, op_name, slot)] = LogLink(expected, ran.get(expected), producer, kernel, dtype)
    return links


def _node_kernels(model: RunModel) -> dict[str, tuple[str, str, str]]:
    """Executed node name -> (kernel, dtype, evidence), log outranking profile."""
    nodes: dict[str, tuple[str, str, str]] = {}
    for prof in model.profiles:
        for node, kernel, _start, _dur in prof.graph_ops:
            if not kernel.startswith(_DEBUG_PREFIX):
                nodes.setdefault(node, (kernel, "", "profile"))
    for log in model.logs:
        for node, (kernel, dtype) in log.graph_kernels.items():
            if not kernel.startswith(_DEBUG_PREFIX):
                nodes[node] = (kernel, dtype, "log")
    return nodes


def _profiled_debug_ops(model: RunModel, wanted: set[str]) -> tuple[set[str], set[str]]:
    """Dump op names whose tfdbg nodes ran in a profiled step: (summary ran, identity ran).

    tfdbg hangs ``<op>/DebugNumericSummaryV2`` and ``<op>/DebugIdentityV2_N`` on
    each traced output. When the identity ran but the summary left no event,
    grappler folded the summary into a constant, which it does only when the
    op's own value was constant.
    """
    summaries: set[str] = set()
    identities: set[str] = set()
    for prof in model.profiles:
        for node, kernel, _start, _dur in prof.graph_ops:
            if kernel.startswith("DebugNumericSummary"):
                target = summaries
            elif kernel.startswith("DebugIdentity"):
                target = identities
            else:
                continue
            for suffix in suffixes(node.rpartition("/")[0]):
                if suffix in wanted:
                    target.add(suffix)
                    break
    return summaries, identities


def _suffix_index(nodes: dict[str, tuple[str, str, str]], wanted: set[str]) -> dict[str, list[str]]:
    """Dump op name -> executed nodes that stand for it, by the longest suffix of the
    node's name, or of the name of the op grappler made it from (its own node wins,
    being shorter)."""
    index: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for suffix in suffixes(origin_name(node)):
            if suffix in wanted:
                index[suffix].append(node)
                break
    return index


def _classify_link(op: OpKernel, link: LogLink) -> None:
    """Fill ``op`` from the exact tfdbg link seen in the log."""
    producer, kernel = link.producer, link.producer_kernel
    if link.expected and link.ran is not None:
        # The op's own node ran (its output may be forwarded by another node, an Identity).
        op.kernel, dtype = link.ran
        op.dtype = op.dtype or dtype
        op.evidence, op.node = "log", link.expected
    elif kernel and is_fused(kernel) and op.op_type not in _FUSABLE:
        # An op the remapper cannot absorb (an identity, a Reshape forwarding the fused
        # node's bias gradient) does none of its work: grappler removed it and its
        # consumers read the fused node's output directly.
        op.kernel, op.evidence, op.node = REMOVED, "log", producer
        op.note = (f"removed by grappler: its consumers read the output of {producer} "
                   f"({kernel}) directly")
    elif kernel and is_fused(kernel):
        op.kernel, op.evidence, op.node, op.fused_into = kernel, "log", producer, producer
        op.note = f"fused by grappler's remapper into {kernel}"
    elif kernel and kernel != "Const" and _derived(producer, op.op_name):
        op.kernel, op.evidence, op.node = kernel, "log", producer
        op.note = (f"grappler rewrote it into the node {producer}, which ran {kernel} "
                   f"(e.g. its arithmetic optimizer folding a transpose into a MatMul)")
    elif kernel == "Const":
        op.kernel, op.evidence, op.node = "Const", "log", producer
        # Reached only when the op's own node did not run.
        op.note = ("constant-folded by grappler: its value was computed once, when the "
                   "graph was optimised, and is fed as a constant")
    elif kernel:
        op.kernel, op.evidence, op.node = REMOVED, "log", producer
        op.note = ("removed by grappler (it did nothing, e.g. an identity transpose or reshape): "
                   "no node ran for it; its consumers read its input directly")
    if op.kernel and op.kernel not in (REMOVED,) and not op.note:
        base = canonical_op(op.kernel)
        if base != op.op_type and not is_fused(op.kernel) and not op.op_type.startswith("_"):
            op.note = f"rewritten by grappler from {op.op_type} into {op.kernel}"

def _derived(node: str, op_name: str) -> bool:
    """Whether ``node`` is one grappler made from the op: its optimizers name such
    nodes ``[<scope>/]<Optimizer>/<Stage>_<op's name>`` (ArithmeticOptimizer/
    FoldTransposeIntoMatMul_MatMul)."""
    base = op_name.rpartition("/")[2]
    return node.rpartition("/")[2].endswith("_" + base) and "Optimizer/" in node


# Remapper patterns that fuse an op with a sibling reading the same input:
# Conv2DBackpropFilter + BiasAddGrad -> _MklNativeConv2DBackpropFilterWithBias.
_SIBLING_FUSIONS = {"BiasAddGrad": ("Conv2DBackpropFilter", "MatMul")}
# Dtypes the oneDNN fusions take ("" / unknown markers: not recorded, float assumed).
_FUSION_DTYPES = frozenset(("DT_FLOAT", "DT_BFLOAT16", DTYPE_SOME_FLOAT, DTYPE_UNKNOWN))


_FILTER_WITH_BIAS = "_MklNativeConv2DBackpropFilterWithBias"


def _infer_filter_bias_fusions(model: RunModel, unresolved: list[tuple[int, OpKernel]],
                               consumers_cache: dict[tuple[int, str], dict[str, list[str]]]) -> None:
    """With oneDNN on, grappler's remapper fuses a Conv2DBackpropFilter with the
    BiasAddGrad that reads the same gradient (remapper.cc, FuseConv2DBackpropFilterWithBias)
    even in a dumped graph: tfdbg's debug ops read outputs, which the fusion keeps. No
    observation needed: the pattern is in the dump's own graph."""
    by_name = {(op.graph_id, op.op_name): op for _i, op in unresolved}
    for i, op in unresolved:
        if op.op_type != "Conv2DBackpropFilter" or op.kernel or op.dtype not in _FUSION_DTYPES:
            continue
        graph_ops = model.dumps[i].graphs[op.graph_id].ops
        created = graph_ops[op.op_name]
        if len(created.inputs) < 3:
            continue
        key = (i, op.graph_id)
        if key not in consumers_cache:
            consumers_cache[key] = _consumers(model, i, op.graph_id)
        gradient = _strip_slot(created.inputs[2])
        for sibling in consumers_cache[key].get(gradient, []):
            other = by_name.get((op.graph_id, sibling))
            sibling_inputs = graph_ops[sibling].inputs if sibling in graph_ops else ()
            if (other is None or other.kernel or other.op_type != "BiasAddGrad"
                    or not sibling_inputs or _strip_slot(sibling_inputs[0]) != gradient):
                continue
            op.kernel, op.evidence = _FILTER_WITH_BIAS, "inferred"
            op.note = (f"fused with its sibling {sibling} (BiasAddGrad of the same gradient) "
                       f"into {_FILTER_WITH_BIAS} by grappler's remapper, as it does whenever "
                       f"oneDNN is on")
            other.kernel, other.evidence, other.fused_into = _FILTER_WITH_BIAS, "inferred", op.op_name
            other.note = f"fused by grappler's remapper into {_FILTER_WITH_BIAS} with {op.op_name}"
            break


def _consumers(model: RunModel, dump_index: int, graph_id: str) -> dict[str, list[str]]:
    graph = model.dumps[dump_index].graphs.get(graph_id)
    out: dict[str, list[str]] = defaultdict(list)
    if graph is None:
        return out
    for op in graph.ops.values():
        for tensor in op.inputs:
            out[_strip_slot(tensor.lstrip("^"))].append(op.op_name)
    return out


# TF's executor keeps a cost estimate per node, which starts at 100M cycles and becomes
# (9 * estimate + cycles) / 10 at every run; once it is under 8000 cycles the node counts as
# cheap and is traced at host_tracer_level 3 only (executor.cc's KernelStats,
# traceme.h's GetTFTraceMeLevel). From 100M that takes 90 runs even of a free kernel, so a
# node that ran at most this often was traced at every run at the default level 2.
_TRACED_RUNS = 90


def _traced_at_every_run(executions: int, cut: bool, runs_before: int | None) -> bool:
    """Whether a missing profiler event can mean "no node": only while the node ran too
    few times for its cost estimate to fall under the tracing threshold, before the
    profiled window (``runs_before``, where known) or at all. A dump cut by its circular
    buffer kept only a tail, so its count bounds nothing."""
    if runs_before is not None:
        return runs_before < _TRACED_RUNS
    return not cut and executions <= _TRACED_RUNS


def _calls_before_window(model: RunModel, dump: DumpSet, graph_id: str) -> tuple[int, int] | None:
    """(calls, calls before the last profiled window began) of the function a graph's ops
    run with, called from Python; None where not known (no profile start, no calls)."""
    # A function called from another (Keras 3's step inside its multi-step function)
    # runs with its caller: its calls are the outermost caller's, called from Python.
    hops = 0
    while graph_id not in dump.call_times and graph_id in dump.graphs and hops < 16:
        graph_id, hops = dump.graphs[graph_id].outer_id, hops + 1
    calls = dump.call_times.get(graph_id)
    # An estimated start (TF 2.13's, from the file's mtime) may be late or early: its end
    # is the file's mtime, after the window, and calls before it bound those before it.
    starts = [p.start_ns if p.time_source in ("profile_start_time", "line_timestamps")
              else p.end_ns for p in model.profiles
              if p.time_source and p.start_ns and (p.host == dump.host or not dump.host)]
    if not calls or not starts:
        return None
    start = max(starts) / 1e9
    return len(calls), sum(1 for t in calls if t < start)


def _runs_before_window(calls: tuple[int, int] | None, op: OpKernel, cut: bool) -> int | None:
    """How often the op had run before the last profiled window began: its function's
    calls before it, where the op runs once per call (its executions equal the calls; not
    so in a loop's body or a branch). None where that is not known, or the eager records
    were cut."""
    if calls is None or cut or op.executions != calls[0]:
        return None
    return calls[1]


def assign_graph(model: RunModel) -> list[OpKernel]:
    """The kernel of every dump graph op that executed."""
    counts = _lowest_slot_counts(model)
    links = _log_links(model)
    nodes = _node_kernels(model)
    wanted = {op_name for (_i, _g, op_name) in counts}
    by_suffix = _suffix_index(nodes, wanted)
    out: list[OpKernel] = []
    unresolved: list[tuple[int, OpKernel]] = []
    # Ops whose debug node ran (so their graph ran) while no node of their own did.
    no_node: set[tuple[str, str]] = set()
    for (i, graph_id, op_name), (slot, n) in counts.items():
        dump = model.dumps[i]
        graph = dump.graphs.get(graph_id)
        created = graph.ops.get(op_name) if graph is not None else None
        if created is None:
            continue  # counted as a problem by join
        op = OpKernel(graph_id, op_name, created.op_type, n, "", "",
                      dtype=dump.trace_dtypes.get((graph_id, op_name, slot), ""))
        link = links.get((graph_id, op_name, slot))
        if link is not None:
            _classify_link(op, link)
            if not op.kernel and not link.producer:
                no_node.add((graph_id, op_name))
        if not op.kernel:
            matched = by_suffix.get(op_name, [])
            fitting = [m for m in matched if canonical_op(nodes[m][0]) == op.op_type] or matched
            if fitting:
                node = sorted(fitting, key=len)[0]
                kernel, dtype, evidence = nodes[node]
                op.kernel, op.evidence, op.node = kernel, evidence, node
                op.dtype = op.dtype or dtype
        if op.kernel and is_fused(op.kernel) and not op.note:
            op.note = f"its node became the fused kernel {op.kernel} (grappler's remapper)"
        if op.kernel:
            out.append(op)
        else:
            unresolved.append((i, op))
    _fusions_and_inference(model, out, unresolved, by_suffix, nodes,
                           _profiled_debug_ops(model, wanted) if not model.logs else (set(), set()),
                           no_node)
    return out + [op for _i, op in unresolved]


def _fusions_and_inference(model: RunModel, resolved: list[OpKernel],
                           unresolved: list[tuple[int, OpKernel]],
                           by_suffix: dict[str, list[str]],
                           nodes: dict[str, tuple[str, str, str]],
                           profiled_debug: tuple[set[str], set[str]],
                           no_node: set[tuple[str, str]]) -> None:
    # This run's own observations: (op type, dtype) -> kernel seen in its graphs.
    seen: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for op in resolved:
        if op.kernel != REMOVED and not op.fused_into and op.evidence in ("log", "profile"):
            seen[(op.op_type, op.dtype)][op.kernel] += 1
    cpu_seen = cpu_from_kernels(model, resolved)
    graph_cut = any(cut.kind == "graph_execution_trace" for cut in model.buffer_cuts)
    eager_cut = any(cut.kind == "execution" for cut in model.buffer_cuts)
    windows: dict[tuple[int, str], tuple[int, int] | None] = {}  # (dump, graph) -> calls
    untraced: list[OpKernel] = []  # no event, which says nothing after many runs
    consumers_cache: dict[tuple[int, str], dict[str, list[str]]] = {}
    resolved_by_name = {(op.graph_id, op.op_name): op for op in resolved}
    if model.onednn_enabled is not False:
        _infer_filter_bias_fusions(model, unresolved, consumers_cache)
    folding_memo: dict[tuple[int, str], bool] = {}
    reordered: dict[tuple[int, str], dict[str, str]] = {}
    bypassed: dict[tuple[int, str], dict[str, tuple[str, str]]] = {}
    # (dump, graph) -> (its dataset's batch dimension, what the notes say of it, the
    # gradient reductions and Reshapes static shapes cannot prove no-ops)
    unprovable: dict[tuple[int, str],
                     tuple[str, str, dict[str, str], dict[str, tuple[str, str]]]] = {}
    dtypes_by_graph: dict[int, dict[str, dict[tuple[str, int], str]]] = {}
    iterator_specs = [spec for prof in model.profiles for spec in prof.iterator_specs]
    for i, op in unresolved:
        if op.kernel:
            continue
        # Fused into a consumer's node? (MatMul -> BiasAdd -> Relu = _MklNativeFusedMatMul)
        key = (i, op.graph_id)
        graph_ops = model.dumps[i].graphs[op.graph_id].ops
        if key not in consumers_cache:
            consumers_cache[key] = _consumers(model, i, op.graph_id)
        frontier, hops = ([op.op_name] if op.op_type in _FUSABLE else []), 0
        created_op = graph_ops.get(op.op_name)
        if op.op_type in _SIBLING_FUSIONS and created_op is not None and created_op.inputs:
            source = _strip_slot(created_op.inputs[0])
            for sibling in consumers_cache[key].get(source, []):
                other = graph_ops.get(sibling)
                done = resolved_by_name.get((op.graph_id, sibling))
                if (other is not None and other.op_type in _SIBLING_FUSIONS[op.op_type]
                        and done is not None and is_fused(done.kernel)):
                    op.kernel, op.evidence, op.node = done.kernel, done.evidence, done.node
                    op.fused_into = done.node
                    op.note = f"fused by grappler's remapper into {done.kernel}"
                    break
        while frontier and hops < 3 and not op.kernel:
            nxt = []
            for name in frontier:
                for consumer in consumers_cache[key].get(name, []):
                    done = resolved_by_name.get((op.graph_id, consumer))
                    candidates = [done.node] if done is not None and done.node else by_suffix.get(consumer, [])
                    for node in candidates:
                        kernel = nodes.get(node, ("", "", ""))[0]
                        if is_fused(kernel):
                            op.kernel, op.evidence = kernel, nodes[node][2]
                            op.node = op.fused_into = node
                            op.note = f"fused by grappler's remapper into {kernel}"
                            break
                    if op.kernel:
                        break
                    created = graph_ops.get(consumer)
                    if created is not None and created.op_type in _FUSABLE:
                        nxt.append(consumer)
                if op.kernel:
                    break
            frontier, hops = nxt, hops + 1
        if op.kernel:
            continue
        if (op.graph_id, op.op_name) in no_node:
            op.kernel, op.evidence = REMOVED, "log"
            op.note = ("no node of its own ran although its graph did (the log shows its debug "
                       "node): grappler removed or constant-folded it; a NO_TENSOR dump does "
                       "not record which")
            continue
        if op.op_type == "Const" and _lifted_capture(model.dumps[i], op):
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("no Const kernel ran: it is an eager tensor the tf.data function "
                       "captured by value (its creation stack passes through TF's "
                       "capture_by_value), which tf.data feeds its function as an argument "
                       "(_Arg) instead (inferred; no log or profile shows it)")
            continue
        summaries, identities = profiled_debug
        window_key = (i, op.graph_id)
        if window_key not in windows:
            windows[window_key] = _calls_before_window(model, model.dumps[i], op.graph_id)
        traced_always = _traced_at_every_run(
            op.executions, graph_cut,
            _runs_before_window(windows[window_key], op, graph_cut or eager_cut))
        # A NO_TENSOR dump has no summary nodes at all: a missing summary says nothing.
        if (summaries and op.op_name in identities and op.op_name not in summaries
                and op.op_type != "Const"):
            op.kernel, op.evidence = "Const", "inferred"
            op.note = ("constant-folded by grappler: its debug summary was folded into a "
                       "constant too (the profile shows tfdbg's identity node but no summary)")
            continue
        # Folded before anything else is asked: a folded op leaves no event either.
        if op.op_type != "Const" and _all_inputs_constant(graph_ops, op.op_name, folding_memo):
            op.kernel, op.evidence = "Const", "inferred"
            op.note = ("constant-folded by grappler: every input is a constant, so grappler "
                       "computed it once when it optimised the graph and feeds the result as a "
                       "constant (inferred from the dump's graph; no log or profile shows it)")
            continue
        created = graph_ops.get(op.op_name)
        if op.op_type in ("StopGradient", "PreventGradient") and created is not None and len(
                created.inputs) == 1 and not created.inputs[0].startswith("^"):
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("removed by grappler: its model pruner drops every StopGradient once the "
                       "graph is built, when that adds no edges, as for one input (inferred "
                       "from the dump's graph; no log or profile shows it)")
            continue
        looped = _identity_in_loop(model.dumps[i], op, graph_ops, no_event=(
            op.op_name in (summaries or identities) and op.op_type not in _NO_EVENT_OPS
            and traced_always))
        if looped is not None:
            op.kernel, op.evidence, op.note = looped[0], "inferred", looped[1]
            continue
        if op.op_type == "Pack" and created is not None and len(
                data_inputs(created.inputs)) == 1:
            op.kernel, op.evidence = "ExpandDims", "inferred"
            op.note = ("rewritten by grappler into ExpandDims: it packs a single tensor, which "
                       "grappler's constant folding turns into an ExpandDims (inferred from the "
                       "dump's graph; no log or profile shows it)")
            continue
        key = (i, op.graph_id)
        if key not in reordered:
            if i not in dtypes_by_graph:
                # Grouped once per dump: a dictionary filtered per graph went over every
                # trace of the dump for each of its graphs.
                grouped: dict[str, dict[tuple[str, int], str]] = {}
                for (g, name, slot), dtype in model.dumps[i].trace_dtypes.items():
                    grouped.setdefault(g, {})[(name, slot)] = dtype
                dtypes_by_graph[i] = grouped
            reordered[key] = reordered_across_casts(
                graph_ops, dtypes_by_graph[i].get(op.graph_id, {}), nodes, iterator_specs,
                debug_reads=set(model.dumps[i].tensor_debug_modes) != {_NO_TENSOR})
        moved = reordered[key].get(op.op_name)
        if moved is not None:
            op.kernel, op.evidence, op.note = REMOVED, "inferred", moved
            continue
        if set(model.dumps[i].tensor_debug_modes) == {_NO_TENSOR}:
            if key not in bypassed:
                bypassed[key] = {**bypassed_reshapes(graph_ops), **pruned_dead_ops(graph_ops)}
            decided = bypassed[key].get(op.op_name)
            if decided is not None:
                op.kernel, op.note = decided
                op.evidence = "inferred"
                continue
        # Its debug node ran in a profiled step (the summary; in a NO_TENSOR dump, which
        # has none, the identity), so its graph ran there: no event of its own means no
        # node of its own, unless it is an op the profiler does not record, or one that
        # ran often enough for the executor to stop tracing it (_traced_at_every_run).
        if op.op_name in (summaries or identities) and op.op_type not in _NO_EVENT_OPS \
                and not traced_always:
            untraced.append(op)
        if (op.op_name in (summaries or identities) and op.op_type not in _NO_EVENT_OPS
                and traced_always):
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("no profiler event for it although its debug node ran in the same "
                       "step: grappler most likely removed or folded it")
            continue
        same = op.op_type in _FORWARDERS and _same_tensor_as_input(model.dumps[i], op, graph_ops)
        if same and op.op_type == "Cast":
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("removed by grappler: its debug summary equals its input's, dtype "
                       "included, so it casts to the type it has, and grappler removes such "
                       "casts (inferred; no log or profile shows it)")
            continue
        if op.op_type == "Mul" and _times_ones(model.dumps[i], op, graph_ops):
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("removed by grappler: it multiplies by a constant of ones (a gradient's "
                       "seed), and its debug summary equals its other input's, so grappler's "
                       "constant folding forwards that input instead (inferred; no log or "
                       "profile shows it)")
            continue
        if op.op_type == "Tile" and same and _tiles_once(model.dumps[i], op, graph_ops,
                                                          folding_memo):
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("removed by grappler: its multiples are a constant, and its debug "
                       "summary equals its input's, size included, so every multiple is 1; "
                       "grappler's constant folding makes such a Tile an Identity, which its "
                       "dependency optimizer removes (inferred; no log or profile shows it)")
            continue
        if op.op_type == "IdentityN":
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("removed by grappler, which forwards an IdentityN's inputs to its "
                       "consumers (inferred; no log or profile shows it)")
            continue
        if (op.op_type == "RealDiv" and len(graph_ops[op.op_name].inputs) > 1
                and _constant_input(graph_ops, graph_ops[op.op_name].inputs[1], folding_memo)):
            op.kernel, op.evidence = "Mul", "inferred"
            op.note = ("rewritten by grappler from RealDiv into Mul: it divides by a constant, "
                       "which grappler's constant folding turns into a multiplication by its "
                       "reciprocal (inferred; no log or profile shows it)")
            continue
        if same and op.op_type in ("Reshape", "Sum"):
            if key not in unprovable:
                # The rules' premise is a batch dimension only known at run time: where the
                # profile's dataset shows it, the notes say so; where it shows it static,
                # grappler may well have folded the shapes, and the rules say nothing.
                batch, shapes = batch_dimension(graph_ops, iterator_specs)
                assumed = BATCH_SEEN.format(shapes=shapes) if batch == "dynamic" \
                    else BATCH_ASSUMPTION
                unprovable[key] = (
                    batch, assumed,
                    unfolded_gradient_reductions(
                        graph_ops, partial(_trace_rank, model.dumps[i], op.graph_id), assumed),
                    unprovable_reshapes(
                        graph_ops, partial(_constant_input, graph_ops, memo=folding_memo)))
            batch, assumed, unfolded, packed = unprovable[key]
            ran = None if batch == "static" else unfolded.get(op.op_name)
            if op.op_name in packed:
                ran, pack = packed[op.op_name]
                pack_ran = any(n == pack or n.endswith("/" + pack) for n in nodes)
                # A profile that would have shown the Pack run and did not, or a dataset of
                # static shapes: it was folded (most likely, for the latter), so the shapes
                # were static and the Reshape may well have been removed.
                folded = not pack_ran and (
                    batch == "static" or (op.op_name in (summaries or identities) and traced_always))
                ran = None if folded else ran + "; " + (
                    SHAPE_NOT_FOLDED.format(pack=pack) if pack_ran else assumed)
            if ran is not None:
                kernel, why = inferred_kernel(model, op.op_type, "graph", op.dtype or "DT_FLOAT",
                                              cpu_seen)
                op.kernel, op.evidence, op.note = kernel, "inferred", f"{ran}; {why}"
                continue
        rank = _forwarded_rank(model.dumps[i], op) if same else None
        if rank is not None and (
                (op.op_type in _SHAPE_ONLY and rank <= 1
                 and _static_operand(graph_ops, op.op_name, folding_memo))
                or (op.op_type in _REDUCTIONS and rank == 0) or op.op_type == "ExpandDims"):
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = (f"removed by grappler: at its first run its debug summary equals its "
                       f"input's, a tensor of rank {rank}, so its output has its input's very "
                       f"shape" + (" (a rank-0 or rank-1 shape is fixed by its size)"
                                   if op.op_type in _SHAPE_ONLY else
                                   " (a reduction of a scalar over no axes)"
                                   if op.op_type in _REDUCTIONS else
                                   " (an ExpandDims that ran would add a dimension)")
                       + "; grappler removes such a no-op once static shapes show it "
                       "(inferred; no log or profile shows it)")
            continue
        if same and op.op_type in _NO_EVENT_OPS | {"Sum", "Mean", "BroadcastTo"}:
            op.kernel, op.evidence = UNKNOWN, "inferred"
            op.note = (f"unknown whether it ran: at its first run its debug summary equals its "
                       f"input's, so it forwarded its input unchanged; grappler removes such a "
                       f"{op.op_type} where it can prove that from static shapes, which the "
                       f"dump does not record, and the profiler records no event for it at the "
                       f"default host tracer level. To know, keep TF's log "
                       f"(TF_CPP_MAX_VLOG_LEVEL=2), or profile with host_tracer_level=3")
            continue
        if op.op_type == "Placeholder":
            graphs = model.dumps[i].graphs
            graph = graphs[op.graph_id]
            inlined = graph.outer_id in graphs and not graph.name.startswith(_DATASET_GRAPHS)
            _placeholder(op, inlined)
            continue
        observed = seen.get((op.op_type, op.dtype))
        if observed:
            kernel = observed.most_common(1)[0][0]
            op.kernel, op.evidence = kernel, "inferred"
            op.note = (f"no node of its own was observed; other {op.op_type} ops "
                       f"({op.dtype or 'same dtype'}) in this run's graphs ran {kernel}")
            continue
        op.kernel, op.note = inferred_kernel(model, op.op_type, "graph", op.dtype or "DT_FLOAT",
                                             cpu_seen)
        op.evidence = "inferred"
    _gradient_reshapes(model, resolved, unresolved)
    _merged_duplicates(model, resolved, unresolved)
    # An op another rule showed removed needs no word on what its missing event proves.
    untraced = [op for op in untraced if op.kernel != REMOVED]
    if untraced:
        _say_untraced(model, untraced, graph_cut)


def _say_untraced(model: RunModel, ops: list[OpKernel], cut: bool) -> None:
    """Ops the profile has no event of where that proves nothing: each says so, and the
    run's profile notes say how to get a profile that would tell."""
    why = ("the dump kept only its circular buffer's last records, so how often a node had "
           "run is not known" if cut else
           f"its nodes ran up to {max(op.executions for op in ops)} times")
    advice = (f"TF's executor stops tracing a node at the default host tracer level once its "
              f"running cost estimate falls under 8000 cycles, which takes {_TRACED_RUNS} "
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




def _merged_duplicates(model: RunModel, resolved: list[OpKernel],
                       unresolved: list[tuple[int, OpKernel]]) -> None:
    """Of identical ops that grappler merged (``cse``), one ran: the inferred ones of a
    group are counted once, and say so."""
    by_graph: dict[tuple[int, str], list[OpKernel]] = defaultdict(list)
    for i, op in unresolved:
        by_graph[(i, op.graph_id)].append(op)
    seen_by_graph: dict[str, set[str]] = defaultdict(set)
    for op in resolved:
        if op.kernel not in (REMOVED, UNKNOWN, "Const") and op.evidence in ("log", "profile"):
            seen_by_graph[op.graph_id].add(op.op_name)
    for (i, graph_id), ops in by_graph.items():
        dump = model.dumps[i]
        ran = {op.op_name for op in ops if op.kernel not in (REMOVED, UNKNOWN, "Const", "")}
        if len(ran) < 2 and not seen_by_graph[graph_id]:
            continue
        digests = {(name, slot): d for (g, name, slot), d in dump.trace_digests.items()
                   if g == graph_id}
        decided = merged_duplicates(dump.graphs[graph_id].ops, digests,
                                    set(dump.tensor_debug_modes) == {_FULL_TENSOR}, ran,
                                    seen_by_graph[graph_id])
        for op in ops:
            kernel, note = decided.get(op.op_name, (None, ""))
            if kernel is None or op.op_name not in ran:
                continue
            if kernel:
                op.kernel = kernel
            op.note = note


_PROFILED_REMOVAL = "no profiler event for it"


def _gradient_reshapes(model: RunModel, resolved: list[OpKernel],
                       unresolved: list[tuple[int, OpKernel]]) -> None:
    """A broadcasting op's gradient is ``Reshape(Sum(g, axes), Shape(x))``. Where the
    Reshape forwarded its input (rank >= 2, so the dump cannot say whether grappler
    could prove it a no-op), its Sum, whose event a profile records, tells what grappler
    knew of the shapes: a Sum it removed (it proved the axes empty) goes with its
    Reshape; a Sum that ran over no axes (its trace equals its input's) means the
    shapes were not known, so the Reshape ran too; a Sum that kept its rank and reduced
    has the very static shape the Reshape restores, and grappler removes that Reshape.
    Measured on HuggingFace BERT's fit: 69 of 73 such Reshapes so decided are right."""
    decided = {(op.graph_id, op.op_name): op for op in resolved}
    decided.update({(op.graph_id, op.op_name): op for _i, op in unresolved})
    for i, op in unresolved:
        if op.op_type != "Reshape":
            continue
        dump = model.dumps[i]
        # A dump that records too little to tell two tensors apart (CURT/CONCISE_HEALTH,
        # NO_TENSOR: no digests) left this Reshape to the default "ran"; only a removed
        # Sum below it can say more.
        blind = op.kernel == "Reshape" and op.evidence == "inferred" and not any(
            d for (g, name, _s), d in dump.trace_digests.items()
            if g == op.graph_id and name == op.op_name)
        if op.kernel != UNKNOWN and not blind:
            continue
        graph_ops = dump.graphs[op.graph_id].ops
        created = graph_ops.get(op.op_name)
        inputs = data_inputs(created.inputs) if created is not None else []
        source = graph_ops.get(_strip_slot(inputs[0])) if inputs else None
        summed = decided.get((op.graph_id, source.op_name)) if source is not None else None
        if source is None or summed is None or source.op_type != "Sum" or not source.inputs:
            continue
        by_profile = summed.evidence in ("profile", "log") or (
            summed.kernel == REMOVED and summed.note.startswith(_PROFILED_REMOVAL))
        if not by_profile:
            continue
        mine = _lowest_digest(dump.trace_digests, op.graph_id, source.op_name)
        theirs = _input_digest(dump, op.graph_id, source.inputs[0])
        if blind and summed.kernel != REMOVED:
            continue
        if not blind and (not mine or not theirs):
            continue
        if summed.kernel == REMOVED:
            op.kernel = REMOVED
            op.note = (f"removed by grappler with its input {source.op_name}: that Sum left no "
                       f"profiler event, so grappler proved its axes empty from static shapes, "
                       f"which make this Reshape back a no-op too (inferred from the profile)")
        elif canonical_op(summed.kernel) == "Sum" and mine == theirs:
            op.kernel = "Reshape"
            op.note = (f"ran: its input {source.op_name} ran although it summed over no axes "
                       f"(its trace equals its input's), so grappler did not know the shapes "
                       f"that would make this Reshape a no-op either (inferred from the profile)")
        elif (canonical_op(summed.kernel) == "Sum" and digest_rank(mine) is not None
              and digest_rank(mine) == digest_rank(theirs)):
            op.kernel = REMOVED
            op.note = (f"removed by grappler: its input {source.op_name} ran and kept its rank, "
                       f"so its static shape is the one this Reshape restores (inferred from "
                       f"the profile)")
        else:
            continue
        op.evidence = "inferred"


_CAPTURE_FRAMES = frozenset(("_capture_as_const", "capture_by_value"))


def _lifted_capture(dump: DumpSet, op: OpKernel) -> bool:
    """Whether a Const of a tf.data function graph is a captured eager tensor: tf.data
    functions capture by value, and the dataset op passes such captures as arguments."""
    graph = dump.graphs.get(op.graph_id)
    created = graph.ops.get(op.op_name) if graph is not None else None
    if graph is None or created is None or not graph.name.startswith(_DATASET_GRAPHS):
        return False
    return any(dump.stack_frames.get(f, (0, 0, ""))[2] in _CAPTURE_FRAMES for f in created.stack)


# tf.data runs its functions (graphs "Dataset_map_...", "reduce_..._body") with their own
# executors even when they are traced inside a tf.function.
_DATASET_GRAPHS = ("Dataset_", "reduce_")


# Ops that can forward their input unchanged, which grappler then removes (or replaces
# by an Identity): an identity Reshape or Transpose, a reduction over no axes, a Cast to
# the same type, a Tile by ones, a one-input Concat or AddN.
_FORWARDERS = frozenset((
    "Reshape", "Squeeze", "ExpandDims", "Identity", "StopGradient", "Snapshot",
    "PreventGradient", "Transpose", "ConjugateTranspose", "Sum", "Mean", "Prod", "Max", "Min",
    "Cast", "Tile", "BroadcastTo", "Pad", "Slice", "StridedSlice", "ConcatV2", "AddN"))


# Forwarders whose output shape is set by an operand (a Reshape's shape, a BroadcastTo's
# target): for rank <= 1 an equal size fixes an equal shape, which static shape inference
# sees where the operand is known; reductions of a scalar reduce over no axes.
_SHAPE_ONLY = frozenset(("Reshape", "BroadcastTo", "Squeeze"))
_REDUCTIONS = frozenset(("Sum", "Mean", "Prod", "Max", "Min"))


def _static_operand(graph_ops: dict[str, OpCreation], name: str,
                    memo: dict[tuple[int, str], bool]) -> bool:
    """Whether a Reshape's (BroadcastTo's) target shape is a constant, which grappler's
    shape inference sees; a shape computed at run time (``tf.shape(x)``) it may not
    (TF 2.13 keeps such rank-1 Reshapes of HuggingFace BERT's LayerNorm gradients,
    measured). A Squeeze has no shape operand: its dims are an attribute."""
    created = graph_ops.get(name)
    inputs = data_inputs(created.inputs) if created is not None else []
    return len(inputs) < 2 or _constant_input(graph_ops, inputs[1], memo)


def _forwarded_rank(dump: DumpSet, op: OpKernel) -> int | None:
    """The rank of the tensor the op's first trace records (None if not recorded)."""
    return digest_rank(_lowest_digest(dump.trace_digests, op.graph_id, op.op_name))


def _same_tensor_as_input(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether the op's first trace records the very tensor its first input's first trace
    does (FULL_HEALTH/SHAPE/FULL_TENSOR digests): what a debug node reads when grappler
    removed the op and fed its consumers (and its debug node) the input instead."""
    created = graph_ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    if not inputs:
        return False
    mine = _lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    theirs = _input_digest(dump, op.graph_id, inputs[0])
    return bool(mine and theirs and mine == theirs)


_ONES = re.compile(r"(?:^|/)ones(?:_\d+)?$")


def _times_ones(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether a Mul multiplies by a Const named ``ones`` (what ``tf.ones`` and a gradient
    tape's seed create) and its first trace records the very tensor its other input's
    does: ``x * 1``, which grappler's constant folding replaces by ``x``."""
    created = graph_ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    if len(inputs) != 2:
        return False
    mine = _lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    for ones, other in (inputs, inputs[::-1]):
        source = graph_ops.get(_strip_slot(ones))
        if source is None or source.op_type != "Const" or not _ONES.search(source.op_name):
            continue
        if mine and mine == _input_digest(dump, op.graph_id, other):
            return True
    return False


def _tiles_once(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation],
                memo: dict[tuple[int, str], bool]) -> bool:
    """Whether a Tile whose first trace records its input's very tensor (size included,
    so the product of its multiples is 1) has constant multiples, outside a while loop's
    body: constant folding's ``SimplifyTile`` then makes it an Identity, bypassed like
    the Identity of ``x * 1`` outside loops (``_times_ones``). Inside a loop the
    multiples enter the frame by a control input, which may keep that Identity."""
    graph = dump.graphs.get(op.graph_id)
    created = graph_ops.get(op.op_name)
    if graph is None or created is None or graph.name.startswith("while_body"):
        return False
    inputs = data_inputs(created.inputs)
    return len(inputs) == 2 and _constant_input(graph_ops, inputs[1], memo)


_SHAPE_READERS = frozenset(("Shape", "ShapeN", "Size", "Rank"))


def _identity_in_loop(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation],
                      no_event: bool) -> tuple[str, str] | None:
    """A Mul in a lowered while loop's body by a constant that left its other input's
    trace unchanged (``x * 1``: Keras 2's sample weights of one under
    steps_per_execution). Constant folding makes it ``Identity(x, ^const)``; the
    constant enters the loop's frame by a control input, so the dependency optimizer
    keeps that edge and removes the Identity only where bypassing it adds no edges
    (2 inputs x outputs <= 2 + outputs: at most 2 readers, its debug op counted). The
    Identity that runs leaves no profiler event, so the profile cannot tell which; but a
    Mul that ran would have left one (``no_event``), which shows the constant was one."""
    graph = dump.graphs.get(op.graph_id)
    created = graph_ops.get(op.op_name)
    if op.op_type != "Mul" or graph is None or created is None or \
            not graph.name.startswith("while_body"):
        return None
    inputs = data_inputs(created.inputs)
    mine = _lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    if len(inputs) != 2 or not mine:
        return None
    for const, other in (inputs, inputs[::-1]):
        source = graph_ops.get(_strip_slot(const))
        if source is None or source.op_type != "Const" or \
                mine != _input_digest(dump, op.graph_id, other):
            continue
        readers = [o.op_type for o in graph_ops.values() for t in o.inputs
                   if not t.startswith("^") and _strip_slot(t) == op.op_name]
        debug = 0 if set(dump.tensor_debug_modes) == {_NO_TENSOR} else 1
        # Readers of its shape only (Shape, Size) become constants where grappler knows
        # the shape statically, which the dump does not record: they may not count.
        fewest = debug + sum(1 for t in readers if t not in _SHAPE_READERS)
        outputs = debug + len(readers)
        proven = (no_event or _ONES.search(source.op_name)
                  or set(dump.tensor_debug_modes) == {_FULL_TENSOR})
        if not proven:
            # Equal health summaries (x * 2 has x's counts) do not make the constant one.
            return None
        # Kept where bypassing adds edges: 2 inputs x n outputs > 2 + n, so n >= 3.
        if fewest < 3 <= outputs:
            return (UNKNOWN, f"unknown whether it ran: it multiplies by ones in a while loop's "
                             f"body, which grappler turns into an Identity with a control input; "
                             f"it keeps that Identity only if it has 3 readers or more, and of "
                             f"its {outputs} readers (its debug op counted) some read only its "
                             f"shape, which grappler makes a constant where it knows the shape "
                             f"statically, which the dump does not record. To know, keep TF's "
                             f"log (TF_CPP_MAX_VLOG_LEVEL=2)")
        if fewest >= 3:
            return ("Identity", f"ran as an Identity: it multiplies by ones in a while loop's "
                                f"body; grappler's constant folding makes it Identity(x, "
                                f"^{source.op_name}), whose control input (the loop's frame) "
                                f"stays, and with {outputs} readers bypassing it would add "
                                f"edges, so grappler keeps it (inferred from the dump's graph)")
        return (REMOVED, f"removed by grappler: it multiplies by ones in a while loop's body, "
                         f"and with {outputs} readers its Identity is bypassed (inferred from "
                         f"the dump's graph)")
    return None


def _trace_rank(dump: DumpSet, graph_id: str, tensor: str) -> int | None:
    """The rank the first trace of a tensor records (None: not recorded)."""
    return digest_rank(_input_digest(dump, graph_id, tensor))


def _input_digest(dump: DumpSet, graph_id: str, tensor: str) -> int:
    """The digest of the first trace of the tensor an op reads (0 if not recorded)."""
    name, slot = tensor_source(tensor)
    return dump.trace_digests.get((graph_id, name, slot), 0)


def _lowest_digest(digests: dict[tuple[str, str, int], int], graph_id: str, op_name: str) -> int:
    for slot in range(8):
        found = digests.get((graph_id, op_name, slot))
        if found is not None:
            return found
    return 0


# Ops grappler's constant folding never folds although their inputs may be constants:
# stateful ones, and those whose value is not a function of their inputs' values.
_NOT_FOLDED = frozenset((
    "Placeholder", "PlaceholderWithDefault", "VarHandleOp", "ReadVariableOp", "VariableV2",
    "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "RandomUniform",
    "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "StatelessRandomUniformV2",
    "StatelessRandomNormalV2", "StatelessRandomGetKeyCounter", "Identity", "IdentityN",
    "NoOp", "StopGradient", "PreventGradient", "Snapshot", "Enter", "Exit", "Merge", "Switch",
    "NextIteration", "LoopCond", "While", "StatelessWhile", "If", "StatelessIf",
    "PartitionedCall", "StatefulPartitionedCall", "Print", "PrintV2", "Assert"))


def _all_inputs_constant(graph_ops: dict[str, OpCreation], name: str,
                         memo: dict[tuple[int, str], bool], depth: int = 0) -> bool:
    """Whether every data input of op ``name`` is a constant or computed from constants
    only: grappler's constant folding then replaces the op by a Const."""
    key = (id(graph_ops), name)  # one graph's ops dict lives as long as the memo
    found = memo.get(key)
    if found is not None:
        return found
    memo[key] = False  # a cycle (a while loop's back edge) is no constant
    created = graph_ops.get(name)
    inputs = data_inputs(created.inputs) if created is not None else []
    result = bool(inputs) and depth < 32 and created is not None \
        and created.op_type not in _NOT_FOLDED and all(
            graph_ops.get(_strip_slot(t)) is not None and (
                graph_ops[_strip_slot(t)].op_type == "Const"
                or _all_inputs_constant(graph_ops, _strip_slot(t), memo, depth + 1))
            for t in inputs)
    memo[key] = result
    return result


def _constant_input(graph_ops: dict[str, OpCreation], tensor: str,
                    memo: dict[tuple[int, str], bool]) -> bool:
    source = graph_ops.get(_strip_slot(tensor))
    return source is not None and (source.op_type == "Const" or _all_inputs_constant(
        graph_ops, source.op_name, memo))


def _placeholder(op: OpKernel, inlined: bool) -> None:
    """A function's argument. A function run by its own executor (a tf.function called
    eagerly, a tf.data function) feeds it through an ``_Arg`` node; in a function
    traced inside another (inlined into its caller, or a cond/while branch lowered
    into it) it becomes an edge, and no node runs for it."""
    op.evidence = "inferred"
    if inlined:
        op.kernel = REMOVED
        op.note = ("an argument of a function traced inside another: TF inlines the function "
                   "(or lowers the cond/while branch) into its caller, so the argument is an "
                   "edge and no node runs for it")
    else:
        op.kernel = "_Arg"
        op.note = "a function's argument: the function's executor feeds it through an _Arg node"


def _rule_note(model: RunModel, rule: object | None) -> str:
    version = model.tensorflow_version or "unknown TF version"
    assumed = "" if model.onednn_enabled is not None else (
        "; assuming oneDNN is on, TF's default on x86-64 Linux CPUs with AVX-512 VNNI/BF16 or AMX")
    if rule is None:
        return f"no oneDNN rewrite rule applies to it in TF {version}: stock kernel{assumed}"
    source = getattr(rule, "source", "")
    mechanism = getattr(rule, "mechanism", "")
    return f"by the {mechanism} rule for TF {version} ({source}){assumed}"


def run_cpu(model: RunModel) -> frozenset[str] | None:
    """The instruction sets the run's CPU had, from TF's start-up line in its log;
    None where no log says."""
    found = [log.cpu_features for log in model.logs if log.cpu_features is not None]
    return frozenset().union(*found) if found else None


def cpu_from_kernels(model: RunModel, graph_ops: list[OpKernel]) -> dict[str, tuple[bool, str]]:
    """CPU feature -> (whether the run's CPU had it, how we know), from graph nodes a
    profile or log saw run a kernel that hangs on that feature (a float16 MatMul runs
    _MklMatMul only with AVX512_FP16). With oneDNN off or not known to be on, a stock
    kernel says nothing about the CPU, but the stock answer it implies is the same."""
    out: dict[str, tuple[bool, str]] = {}
    if model.onednn_enabled is False:
        return out
    version = model.tensorflow_version
    for op in graph_ops:
        if op.evidence not in ("log", "profile") or op.fused_into or op.dtype not in FLOAT_DTYPES:
            continue
        needs = cpu_dependence(op.op_type, "graph", version, op.dtype, True)
        if needs is None or not needs.cpu:
            continue
        if op.kernel == needs.kernel:
            out[needs.cpu] = (True, f"its graph {op.op_type} ({op.dtype}) ran {op.kernel} "
                                    f"({'TF log' if op.evidence == 'log' else 'profile'})")
        elif op.kernel == op.op_type and needs.cpu not in out:
            out[needs.cpu] = (False, f"its graph {op.op_type} ({op.dtype}) ran the stock "
                                     f"{op.kernel} ({'TF log' if op.evidence == 'log' else 'profile'})")
    return out


# Contractions, convolutions, pooling, softmax and batch norm: in a model they run in
# a float type, so an unrecorded dtype is taken as float32 (said in the note).
_FLOAT_MATH = frozenset((
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "Conv2D",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D", "Conv3DBackpropInputV2",
    "Conv3DBackpropFilterV2", "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter", "AvgPool", "AvgPoolGrad", "AvgPool3D", "MaxPool",
    "MaxPoolGrad", "MaxPool3D", "Softmax", "FusedBatchNorm", "FusedBatchNormV2",
    "FusedBatchNormV3", "FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"))

_RERUN = ("to know, keep TF's log (TF_CPP_MAX_VLOG_LEVEL=2, stderr) with the run, or dump "
          "with tensor_debug_mode='FULL_HEALTH'")


def inferred_kernel(model: RunModel, op_type: str, mode: str, dtype: str,
                    cpu_seen: dict[str, tuple[bool, str]] | None = None) -> tuple[str, str]:
    """(kernel, note) from the rule table for an op no evidence observed.

    ``dtype`` is a ``DT_*`` name, "" (a non-float output), ``DTYPE_SOME_FLOAT``
    (CURT/CONCISE_HEALTH: some float type) or ``DTYPE_UNKNOWN`` (NO_TENSOR). Where
    the answer hangs on what was not recorded (the dtype, the CPU), the kernel is
    ``UNKNOWN`` and the note says what it depends on. ``cpu_seen`` (from
    :func:`cpu_from_kernels`) answers a CPU question no log line did."""
    version = model.tensorflow_version
    onednn = model.onednn_enabled is not False
    cpu = run_cpu(model)
    assumed = ""
    if dtype == DTYPE_UNKNOWN and op_type in _FLOAT_MATH:
        dtype = "DT_FLOAT"
        assumed = ("; assuming float32: the dump (NO_TENSOR) records no dtype, and this op "
                   "runs in a float type in models")
    elif dtype == DTYPE_UNKNOWN:
        options = {t: expected_kernel(op_type, mode, version, t, onednn, cpu)
                   for t in ("DT_FLOAT", "DT_INT32")}
        if options["DT_FLOAT"][0] != options["DT_INT32"][0]:
            return UNKNOWN, (f"unknown: this dump (NO_TENSOR) records no dtype, and {op_type} runs "
                             f"{options['DT_FLOAT'][0]} for float32 but {options['DT_INT32'][0]} "
                             f"for int32; {_RERUN}")
        dtype = "DT_FLOAT"
        assumed = "; the dump (NO_TENSOR) records no dtype, and the kernel is the same for any"
    elif dtype == DTYPE_SOME_FLOAT:
        dtype = "DT_FLOAT"
        assumed = ("; assuming float32: this dump mode (CURT/CONCISE_HEALTH) records that the "
                   "output is a float type, not which")
    kernel, rule = expected_kernel(op_type, mode, version, dtype, onednn, cpu)
    if cpu is None:
        needs = cpu_dependence(op_type, mode, version, dtype, onednn)
        seen = (cpu_seen or {}).get(needs.cpu) if needs is not None else None
        if needs is not None and seen is not None:
            has, how = seen
            if has:
                return needs.kernel, (f"by the rule for a CPU with {needs.cpu} ({needs.source}): "
                                      f"the run's CPU has it, as {how}")
            return kernel, (f"{_rule_note(model, rule)}; {op_type} ({dtype}) runs {needs.kernel} "
                            f"only on a CPU with {needs.cpu}, which this run's had not, as {how}")
        if needs is not None:
            return UNKNOWN, (f"unknown: in TF {version or '(unknown version)'} {op_type} ({dtype}) "
                             f"runs {needs.kernel} on a CPU with {needs.cpu} and {kernel} "
                             f"without, and nothing the run left names its CPU; keep TF's "
                             f"log (its start-up line lists the CPU's instruction sets)")
    return kernel, _rule_note(model, rule) + assumed


def assign_eager(model: RunModel, graph_ops: list[OpKernel]) -> list[EagerAssignment]:
    """The kernel of eager executions, per (op type, dtype of the first output)."""

    per_dtype: Counter[tuple[str, str]] = Counter()
    for dump in model.dumps:
        for (op_type, dtype), n in dump.execution_dtypes.items():
            if not is_function(op_type):
                per_dtype[(op_type, dtype)] += n
    if not model.dumps:
        for op_type, row in model.op_types.items():
            if row.eager.executions:
                per_dtype[(op_type, "")] += row.eager.executions
    # op type -> (kernel, dtype, dispatch)
    log_kernels: dict[str, Counter[tuple[str, str, str]]] = defaultdict(Counter)
    for log in model.logs:
        for ek, n in log.eager_kernels.items():
            if not is_function(ek.dispatch):
                log_kernels[canonical_op(ek.dispatch)][(ek.kernel, ek.dtype, ek.dispatch)] += n
    # What the graph pass did to the same op type and dtype in this run's graphs.
    # Grappler does not run on an eager op's one-node function, so grappler's
    # rewrites and fusions (RealDiv -> Mul, ...WithBias) say nothing about eager.
    seen: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for op in graph_ops:
        if (op.evidence in ("log", "profile") and not op.fused_into
                and canonical_op(op.kernel) == op.op_type):
            seen[(op.op_type, op.dtype)][op.kernel] += op.executions
    cpu_seen = cpu_from_kernels(model, graph_ops)
    out: list[EagerAssignment] = []
    for (op_type, dtype), n in sorted(per_dtype.items()):
        candidates = log_kernels.get(op_type)
        if candidates:
            out.extend(_eager_from_log(op_type, dtype, n, candidates))
            continue
        entry = EagerAssignment(op_type, dtype, n, "", "inferred")
        # The graphs' kernels stand for this dtype only where one is recorded: with none
        # (NO_TENSOR), an op whose kernel depends on the dtype stays for the rules to call.
        observed = seen.get((op_type, dtype)) if (
            dtype != DTYPE_UNKNOWN or op_type in _FLOAT_MATH) else None
        # A graph rewrite that needs context (MaxPoolGrad needs its MaxPool)
        # does not carry over to a one-node function.
        contextual = any(r.condition for r in matching_rules(
            op_type, "graph", model.tensorflow_version, dtype or "DT_FLOAT",
            model.onednn_enabled is not False))
        if observed and not contextual:
            entry.kernel = observed.most_common(1)[0][0]
            entry.note = (f"eager ops run as one-node functions on which the same graph "
                          f"pass runs; {op_type} ({_dtype_words(dtype)}) ran {entry.kernel} in "
                          f"this run's graphs")
        else:
            entry.kernel, entry.note = inferred_kernel(model, op_type, "eager", dtype, cpu_seen)
            if not dtype:
                entry.note = "non-float output (not instrumented by this dump mode); " + entry.note
        out.append(entry)
    return out


def _dtype_words(dtype: str) -> str:
    return {DTYPE_UNKNOWN: "dtype not recorded", DTYPE_SOME_FLOAT: "a float type",
            "": "non-float"}.get(dtype, dtype)


def _eager_from_log(op_type: str, dtype: str, n: int,
                    candidates: Counter[tuple[str, str, str]]) -> list[EagerAssignment]:
    """Eager executions of one (op type, dtype) labelled from the log's wrapper kernels.

    The health tensor's dtype is the output's; T= is the input's. They agree for
    the ops that matter here. Where the dump names no dtype (NO_TENSOR) or only
    "a float type", the log's own split of executions between kernels is kept."""
    if dtype == DTYPE_UNKNOWN:
        same = list(candidates.items())
    elif dtype == DTYPE_SOME_FLOAT:
        same = [(k, c) for k, c in candidates.items() if k[1] in FLOAT_DTYPES]
    elif dtype:
        same = [(k, c) for k, c in candidates.items() if k[1] == dtype]
    else:
        same = [(k, c) for k, c in candidates.items() if k[1] not in FLOAT_DTYPES]
    same = same or list(candidates.items())
    if dtype not in (DTYPE_UNKNOWN, DTYPE_SOME_FLOAT):
        same = [max(same, key=lambda kc: kc[1])]
    total = sum(c for _k, c in same)
    out = []
    left = n
    for i, ((kernel, _t, dispatch), c) in enumerate(sorted(same, key=lambda kc: -kc[1])):
        share = left if i == len(same) - 1 else min(left, round(n * c / total))
        left -= share
        if share <= 0:
            continue
        entry = EagerAssignment(op_type, dtype, share, kernel or dispatch, "log", dispatch)
        if not kernel:
            entry.note = ("only the dispatch line ('Executing op') was seen; it hides the "
                          "graph rewrite of the eager op's one-node function")
        elif dispatch != kernel and canonical_op(dispatch) == op_type and dispatch == op_type:
            entry.note = (f"dispatched as {dispatch} ('Executing op'), but its one-node "
                          f"function __wrapped__{dispatch} was instantiated with {kernel}")
        elif dispatch != op_type:
            entry.note = f"renamed to {dispatch} before dispatch by TF's eager oneDNN rewrite"
        out.append(entry)
    return out


def detect_onednn(model: RunModel) -> tuple[bool | None, str]:
    """Whether TF_ENABLE_ONEDNN_OPTS was on in this run, and how we know."""
    for log in model.logs:
        if log.onednn_opts is not None:
            return log.onednn_opts, "start-up banner in the log"
    # Distinct (kernel, dtype) pairs: a profile has millions of events but few kernels,
    # and the rule table is asked once per pair.
    kernels: set[tuple[str, str]] = set()
    for log in model.logs:
        kernels.update(log.graph_kernels.values())
        kernels.update((ek.kernel, ek.dtype) for ek in log.eager_kernels if ek.kernel)
    profiled: set[str] = set()
    for prof in model.profiles:
        profiled.update(k for _n, k, _s, _d in prof.graph_ops)
    if any(is_onednn(k) for k, _t in kernels) or any(is_onednn(k) for k in profiled):
        return True, "oneDNN kernels (_Mkl*) ran"
    # A profile's events carry no dtype: a stock kernel says "oneDNN off" only if every
    # op of its type in the dump has a dtype oneDNN would take (a float16 MatMul runs
    # stock on most CPUs with oneDNN on); without a dump, float32 is assumed.
    dump_dtypes = _dump_dtypes_by_type(model, profiled) if model.dumps else {}
    kernels.update((k, "DT_FLOAT") for k in profiled
                   if dump_dtypes.get(k, {"DT_FLOAT"}) == {"DT_FLOAT"})
    stock = sorted({k for k, t in kernels if t in ("DT_FLOAT", "")
                    and expected_kernel(k, "graph", model.tensorflow_version, "DT_FLOAT", True)[0] != k})
    if stock:
        return False, (f"stock {', '.join(stock[:3])} ran where oneDNN would run its _Mkl kernel "
                       "(and no _Mkl kernel ran at all)")
    return None, ""


def _dump_dtypes_by_type(model: RunModel, op_types: set[str]) -> dict[str, set[str]]:
    """Op type -> the dtypes its graph ops' traced outputs have in the dumps (the
    "some float"/"not recorded" markers read as float32, as the rules read them)."""
    out: dict[str, set[str]] = defaultdict(set)
    for dump in model.dumps:
        for (graph_id, op_name, _slot), dtype in dump.trace_dtypes.items():
            graph = dump.graphs.get(graph_id)
            created = graph.ops.get(op_name) if graph is not None else None
            if created is not None and created.op_type in op_types:
                out[created.op_type].add(
                    "DT_FLOAT" if dtype in (DTYPE_SOME_FLOAT, DTYPE_UNKNOWN) else dtype or "non-float")
    return out
