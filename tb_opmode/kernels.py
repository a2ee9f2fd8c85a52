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

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .nodes import canonical_op, suffixes
from .rules import expected_kernel, matching_rules

if TYPE_CHECKING:  # join imports this module; the type is only for annotations
    from .join import RunModel

__all__ = ["OpKernel", "EagerAssignment", "assign_graph", "assign_eager", "detect_onednn",
           "is_onednn", "is_fused", "REMOVED", "FLOAT_DTYPES"]

# Shown as the kernel of an op that grappler took out of the graph.
REMOVED = "(optimized away)"
FLOAT_DTYPES = frozenset(("DT_FLOAT", "DT_DOUBLE", "DT_BFLOAT16", "DT_HALF"))
_DEBUG_PREFIX = "Debug"  # DebugIdentityV2 / DebugNumericSummaryV2: tfdbg's own nodes
# Kernels the executor runs inline without a profiler event (measured on TF 2.21:
# Reshape, ExpandDims, Const; the others alias their input the same way).
_NO_EVENT_OPS = frozenset(("Reshape", "ExpandDims", "Squeeze", "Const", "Identity", "Snapshot",
                           "Bitcast"))


def is_onednn(kernel: str) -> bool:
    return kernel.startswith("_Mkl")


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


@dataclass
class OpKernel:
    """The kernel one dump graph op ran (all its executions: a graph is optimised once)."""

    graph_id: str
    op_name: str
    op_type: str
    executions: int
    kernel: str
    evidence: str
    node: str = ""
    dtype: str = ""
    note: str = ""
    fused_into: str = ""


@dataclass
class EagerAssignment:
    op_type: str
    dtype: str
    executions: int
    kernel: str
    evidence: str
    dispatch: str = ""
    note: str = ""


def _strip_slot(tensor: str) -> str:
    name, _, slot = tensor.rpartition(":")
    return name if name and slot.isdigit() else tensor


def _lowest_slot_counts(model: RunModel) -> dict[tuple[int, str, str], tuple[int, int]]:
    """(dump index, graph id, op name) -> (lowest traced slot, executions)."""
    out: dict[tuple[int, str, str], tuple[int, int]] = {}
    for i, dump in enumerate(model.dumps):
        for (graph_id, op_name, slot), n in dump.traces.items():
            key = (i, graph_id, op_name)
            have = out.get(key)
            if have is None or slot < have[0]:
                out[key] = (slot, n)
    return out


def _log_links(model: RunModel) -> dict[tuple[str, str, int], tuple[str, str, str, str]]:
    """(graph id, op name, slot) -> (expected node, producer node, producer kernel, dtype)."""
    links: dict[tuple[str, str, int], tuple[str, str, str, str]] = {}
    for log in model.logs:
        for ident, (ctx, op_name, slot) in log.debug_targets.items():
            summary_node = _strip_slot(log.debug_inputs.get(ident, ""))
            summary_kernel = log.graph_kernels.get(summary_node, ("", ""))[0]
            if summary_kernel and not summary_kernel.startswith(_DEBUG_PREFIX):
                # Grappler folded the summary itself into a constant: so was the op.
                producer = summary_node
            else:
                producer = _strip_slot(log.debug_inputs.get(summary_node, summary_node))
            # The identity node is "<prefix><op name>/DebugIdentityV2_N" or, for
            # some outputs, "<prefix><scope>/DebugIdentityV2_N"; the prefix is
            # whatever precedes the op name in it.
            at = ident.rfind(op_name + "/")
            expected = ident[:at] + op_name if at >= 0 else ""
            if not expected and (producer == op_name or producer.endswith("/" + op_name)):
                expected = producer
            if not expected:
                # The identity hangs under another scope ("<prefix>a/b/DebugIdentityV2_7"
                # for op "a/b/x"): the node, if it ran, is "<prefix>" + op name for
                # some leading part of the identity's name.
                cut = ident.find("/")
                candidates = [op_name]
                while cut != -1:
                    candidates.append(ident[:cut + 1] + op_name)
                    cut = ident.find("/", cut + 1)
                expected = next((c for c in candidates if c in log.graph_kernels), "")
            kernel, dtype = log.graph_kernels.get(producer, ("", ""))
            links[(ctx, op_name, slot)] = (expected, producer, kernel, dtype)
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
    index: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        for suffix in suffixes(node):
            if suffix in wanted:
                index[suffix].append(node)
                break
    return index


def _classify_link(op: OpKernel, link: tuple[str, str, str, str],
                   nodes: dict[str, tuple[str, str, str]]) -> None:
    """Fill ``op`` from the exact tfdbg link seen in the log."""
    expected, producer, kernel, _dtype = link
    if expected and expected in nodes and producer == expected:
        op.kernel, op.dtype, op.evidence = nodes[expected]
        op.node = expected
    elif expected and expected in nodes:
        # The op ran; its output tensor is forwarded from another node (e.g. an Identity).
        op.kernel, op.dtype, op.evidence = nodes[expected]
        op.node = expected
    elif kernel and is_fused(kernel):
        op.kernel, op.evidence, op.node, op.fused_into = kernel, "log", producer, producer
        op.note = f"fused by grappler's remapper into {kernel}"
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

# Remapper patterns that fuse an op with a sibling reading the same input:
# Conv2DBackpropFilter + BiasAddGrad -> _MklNativeConv2DBackpropFilterWithBias.
_SIBLING_FUSIONS = {"BiasAddGrad": ("Conv2DBackpropFilter", "MatMul")}


def _consumers(model: RunModel, dump_index: int, graph_id: str) -> dict[str, list[str]]:
    graph = model.dumps[dump_index].graphs.get(graph_id)
    out: dict[str, list[str]] = defaultdict(list)
    if graph is None:
        return out
    for op in graph.ops.values():
        for tensor in op.inputs:
            out[_strip_slot(tensor.lstrip("^"))].append(op.op_name)
    return out


def assign_graph(model: RunModel) -> list[OpKernel]:
    """The kernel of every dump graph op that executed."""
    counts = _lowest_slot_counts(model)
    links = _log_links(model)
    nodes = _node_kernels(model)
    wanted = {op_name for (_i, _g, op_name) in counts}
    by_suffix = _suffix_index(nodes, wanted)
    out: list[OpKernel] = []
    unresolved: list[tuple[int, OpKernel]] = []
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
            _classify_link(op, link, nodes)
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
                           _profiled_debug_ops(model, wanted) if not model.logs else (set(), set()))
    return out + [op for _i, op in unresolved]


def _fusions_and_inference(model: RunModel, resolved: list[OpKernel],
                           unresolved: list[tuple[int, OpKernel]],
                           by_suffix: dict[str, list[str]],
                           nodes: dict[str, tuple[str, str, str]],
                           profiled_debug: tuple[set[str], set[str]]) -> None:
    # This run's own observations: (op type, dtype) -> kernel seen in its graphs.
    seen: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for op in resolved:
        if op.kernel != REMOVED and not op.fused_into and op.evidence in ("log", "profile"):
            seen[(op.op_type, op.dtype)][op.kernel] += 1
    consumers_cache: dict[tuple[int, str], dict[str, list[str]]] = {}
    resolved_by_name = {(op.graph_id, op.op_name): op for op in resolved}
    for i, op in unresolved:
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
        summaries, identities = profiled_debug
        if (op.op_name in identities and op.op_name not in summaries
                and op.op_type != "Const"):
            op.kernel, op.evidence = "Const", "inferred"
            op.note = ("constant-folded by grappler: its debug summary was folded into a "
                       "constant too (the profile shows tfdbg's identity node but no summary)")
            continue
        if op.op_name in summaries and op.op_type not in _NO_EVENT_OPS:
            op.kernel, op.evidence = REMOVED, "inferred"
            op.note = ("no profiler event for it although its debug summary ran in the same "
                       "step: grappler most likely removed it")
            continue
        observed = seen.get((op.op_type, op.dtype))
        if observed:
            kernel = observed.most_common(1)[0][0]
            op.kernel, op.evidence = kernel, "inferred"
            op.note = (f"no node of its own was observed; other {op.op_type} ops "
                       f"({op.dtype or 'same dtype'}) in this run's graphs ran {kernel}")
            continue
        kernel, rule = expected_kernel(op.op_type, "graph", model.tensorflow_version,
                                       op.dtype or "DT_FLOAT", model.onednn_enabled is not False)
        op.kernel, op.evidence = kernel, "inferred"
        op.note = _rule_note(model, rule)


def _rule_note(model: RunModel, rule: object | None) -> str:
    version = model.tensorflow_version or "unknown TF version"
    assumed = "" if model.onednn_enabled is not None else (
        "; assuming oneDNN is on, TF's default on x86-64 Linux CPUs with AVX-512 VNNI/BF16 or AMX")
    if rule is None:
        return f"no oneDNN rewrite rule applies to it in TF {version}: stock kernel{assumed}"
    source = getattr(rule, "source", "")
    mechanism = getattr(rule, "mechanism", "")
    return f"by the {mechanism} rule for TF {version} ({source}){assumed}"


def assign_eager(model: RunModel, graph_ops: list[OpKernel]) -> list[EagerAssignment]:
    """The kernel of eager executions, per (op type, dtype of the first output)."""
    from .join import is_function  # join imports us: a late import avoids the cycle

    per_dtype: Counter = Counter()
    for dump in model.dumps:
        for (op_type, dtype), n in dump.execution_dtypes.items():
            if not is_function(op_type):
                per_dtype[(op_type, dtype)] += n
    if not model.dumps:
        for op_type, row in model.op_types.items():
            if row.eager.executions:
                per_dtype[(op_type, "")] += row.eager.executions
    log_kernels: dict[str, Counter] = defaultdict(Counter)  # op type -> (kernel, dtype, dispatch)
    for log in model.logs:
        for ek, n in log.eager_kernels.items():
            if not is_function(ek.dispatch):
                log_kernels[canonical_op(ek.dispatch)][(ek.kernel, ek.dtype, ek.dispatch)] += n
    # What the graph pass did to the same op type and dtype in this run's graphs.
    # Grappler does not run on an eager op's one-node function, so grappler's
    # rewrites and fusions (RealDiv -> Mul, ...WithBias) say nothing about eager.
    seen: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for op in graph_ops:
        if (op.evidence in ("log", "profile") and not op.fused_into
                and canonical_op(op.kernel) == op.op_type):
            seen[(op.op_type, op.dtype)][op.kernel] += op.executions
    out = []
    for (op_type, dtype), n in sorted(per_dtype.items()):
        entry = EagerAssignment(op_type, dtype, n, "", "")
        candidates = log_kernels.get(op_type)
        if candidates:
            # The health tensor's dtype is the output's; T= is the input's. They agree
            # for the ops that matter here; "" means a non-float output.
            same = [(k, c) for k, c in candidates.items() if k[1] == dtype] if dtype else [
                (k, c) for k, c in candidates.items() if k[1] not in FLOAT_DTYPES]
            pick = max(same or list(candidates.items()), key=lambda kc: kc[1])[0]
            kernel, _t, dispatch = pick
            entry.kernel, entry.evidence, entry.dispatch = kernel or dispatch, "log", dispatch
            if not kernel:
                entry.note = ("only the dispatch line ('Executing op') was seen; it hides the "
                              "graph rewrite of the eager op's one-node function")
            elif dispatch != kernel and canonical_op(dispatch) == op_type and dispatch == op_type:
                entry.note = (f"dispatched as {dispatch} ('Executing op'), but its one-node "
                              f"function __wrapped__{dispatch} was instantiated with {kernel}")
            elif dispatch != op_type:
                entry.note = f"renamed to {dispatch} before dispatch by TF's eager oneDNN rewrite"
        else:
            kernel, rule = expected_kernel(op_type, "eager", model.tensorflow_version,
                                           dtype or "", model.onednn_enabled is not False)
            observed = seen.get((op_type, dtype))
            # A graph rewrite that needs context (MaxPoolGrad needs its MaxPool)
            # does not carry over to a one-node function.
            contextual = any(r.condition for r in matching_rules(
                op_type, "graph", model.tensorflow_version, dtype or "DT_FLOAT",
                model.onednn_enabled is not False))
            if observed and not contextual:
                entry.kernel = observed.most_common(1)[0][0]
                entry.note = (f"eager ops run as one-node functions on which the same graph "
                              f"pass runs; {op_type} ({dtype}) ran {entry.kernel} in this "
                              f"run's graphs")
            else:
                entry.kernel = kernel
                entry.note = _rule_note(model, rule) if dtype else (
                    "non-float output (not instrumented by FULL_HEALTH); " + _rule_note(model, rule))
            entry.evidence = "inferred"
        out.append(entry)
    return out


def detect_onednn(model: RunModel) -> tuple[bool | None, str]:
    """Whether TF_ENABLE_ONEDNN_OPTS was on in this run, and how we know."""
    for log in model.logs:
        if log.onednn_opts is not None:
            return log.onednn_opts, "start-up banner in the log"
    kernels: list[tuple[str, str]] = []
    for log in model.logs:
        kernels += [(k, t) for k, t in log.graph_kernels.values()]
        kernels += [(ek.kernel, ek.dtype) for ek in log.eager_kernels if ek.kernel]
    kernels += [(k, "") for prof in model.profiles for _n, k, _s, _d in prof.graph_ops]
    if any(is_onednn(k) for k, _t in kernels):
        return True, "oneDNN kernels (_Mkl*) ran"
    stock = sorted({k for k, t in kernels if t in ("DT_FLOAT", "")
                    and expected_kernel(k, "graph", model.tensorflow_version, "DT_FLOAT", True)[0] != k})
    if stock:
        return False, (f"stock {', '.join(stock[:3])} ran where oneDNN would run its _Mkl kernel "
                       "(and no _Mkl kernel ran at all)")
    return None, ""
