"""The remapper's fusions found in a dump's graph: which fused node absorbed an op.

In: an ``InferenceContext`` (each graph's readers, the executed nodes and the ops
already resolved) and ops no evidence of their own resolved. Out: the ``Verdict`` of an
op fused with a sibling or into a consumer whose node ran a fused kernel, and the
Conv2DBackpropFilter + BiasAddGrad pairs fused with oneDNN on, filled in place.
"""
from __future__ import annotations

from ...model import OpKernel, RunModel
from ...read.tfdbg import OpCreation
from ...vocab import UNKNOWN
from ..nodes import data_inputs
from .context import InferenceContext, OpSite
from .onednn_state import FIND_OUT, known_cpu
from .remapper import (
    CONTRACTION_FUSIONS,
    FILTER_WITH_BIAS,
    FUSABLE,
    FUSED_ACTIVATIONS,
    FUSION_DTYPES,
    SIBLING_FUSIONS,
    is_fused,
)
from .tensors import strip_slot
from .verdict import Verdict

__all__ = ["FILTER_BIAS_RULE", "infer_filter_bias_fusions", "fused_with_sibling",
           "fused_into_consumer", "fused_by_pattern"]

# The rule name the Conv2DBackpropFilter + BiasAddGrad pairs are decided by.
FILTER_BIAS_RULE = "filter_bias_fusion"

# How many fusable ops down from an op the search for the fused node that took it goes:
# the remapper's longest chains (MatMul -> BiasAdd -> Add -> Relu) are that long.
_FUSION_DEPTH = 3


def infer_filter_bias_fusions(ctx: InferenceContext, unresolved: list[tuple[int, OpKernel]]) -> None:
    """With oneDNN on (unknown: both ``(unknown)``, saying why), grappler's remapper fuses
    a Conv2DBackpropFilter with the BiasAddGrad that reads the same gradient (remapper.cc,
    FuseConv2DBackpropFilterWithBias)
    even in a dumped graph: tfdbg's debug ops read outputs, which the fusion keeps. No
    observation needed: the pattern is in the dump's own graph."""
    model = ctx.model
    by_name = {(op.graph_id, op.op_name): op for _i, op in unresolved}
    for i, op in unresolved:
        if op.op_type != "Conv2DBackpropFilter" or op.kernel:
            continue
        half = op.dtype == "DT_HALF"
        fuses = _half_fuses(ctx, model) if half else op.dtype in FUSION_DTYPES
        sibling = _bias_gradient_sibling(ctx, model, i, op, by_name) if fuses is not False else None
        if sibling is None:
            continue
        if model.onednn_enabled is None or fuses is None:
            why = _STATE_UNKNOWN if model.onednn_enabled is None else _FP16_UNKNOWN
            Verdict(UNKNOWN, why.format(f"its sibling {sibling.op_name} (BiasAddGrad)")).apply(
                op, FILTER_BIAS_RULE)
            Verdict(UNKNOWN, why.format(op.op_name)).apply(sibling, FILTER_BIAS_RULE)
            continue
        Verdict(FILTER_WITH_BIAS, f"fused with its sibling {sibling.op_name} (BiasAddGrad of the "
                                  f"same gradient) into {FILTER_WITH_BIAS} by grappler's remapper, "
                                  f"as it does whenever oneDNN is on").apply(op, FILTER_BIAS_RULE)
        Verdict(FILTER_WITH_BIAS, f"fused by grappler's remapper into {FILTER_WITH_BIAS} with "
                                  f"{op.op_name}", fused_into=op.op_name).apply(sibling, FILTER_BIAS_RULE)


_STATE_UNKNOWN = (f"unknown: with oneDNN's custom operations on, grappler's remapper fuses it with "
                  f"{{}} into {FILTER_WITH_BIAS}; with them off both run stock, and nothing this "
                  f"run left says which; {FIND_OUT}")
_FP16_UNKNOWN = (f"unknown: in float16, grappler's remapper fuses it with {{}} into "
                 f"{FILTER_WITH_BIAS} only on a CPU with AVX512_FP16 (oneDNN takes float16 only "
                 f"there), and nothing this run left names its CPU; keep TF's log (its start-up "
                 f"line lists the CPU's instruction sets)")


def _half_fuses(ctx: InferenceContext, model: RunModel) -> bool | None:
    """Whether oneDNN takes float16 in this run (the fusion then holds for it too): the
    CPU has AVX512_FP16, by the log's CPU line, the CPU the run recorded or a float16
    kernel seen; None if unknown."""
    cpu = known_cpu(model)
    if cpu is not None:
        return "AVX512_FP16" in cpu
    seen = ctx.cpu_seen.get("AVX512_FP16")
    return seen[0] if seen is not None else None


def _bias_gradient_sibling(ctx: InferenceContext, model: RunModel, index: int, op: OpKernel,
                           by_name: dict[tuple[str, str], OpKernel]) -> OpKernel | None:
    """The unresolved BiasAddGrad that reads the gradient a Conv2DBackpropFilter reads."""
    graph_ops = model.dumps[index].graphs[op.graph_id].ops
    created = graph_ops[op.op_name]
    if len(created.inputs) < 3:
        return None
    gradient = strip_slot(created.inputs[2])
    for sibling in ctx.consumers((index, op.graph_id)).get(gradient, []):
        other = by_name.get((op.graph_id, sibling))
        sibling_inputs = graph_ops[sibling].inputs if sibling in graph_ops else ()
        if (other is not None and not other.kernel and other.op_type == "BiasAddGrad"
                and sibling_inputs and strip_slot(sibling_inputs[0]) == gradient):
            return other
    return None


def fused_with_sibling(ctx: InferenceContext, site: OpSite) -> Verdict | None:
    """An op the remapper fuses with a sibling reading the same input (BiasAddGrad with
    its MatMul or Conv2DBackpropFilter), where that sibling ran a fused kernel."""
    op, created = site.op, site.created
    partners = SIBLING_FUSIONS.get(op.op_type)
    if partners is None or created is None or not created.inputs:
        return None
    source = strip_slot(created.inputs[0])
    for sibling in ctx.consumers(site.key).get(source, []):
        other = site.graph_ops.get(sibling)
        done = ctx.resolved_by_name.get((op.graph_id, sibling))
        if (other is not None and other.op_type in partners
                and done is not None and is_fused(done.kernel)):
            return Verdict(done.kernel, f"fused by grappler's remapper into {done.kernel}",
                           done.evidence, node=done.node, fused_into=done.node)
    return None


def fused_into_consumer(ctx: InferenceContext, site: OpSite) -> Verdict | None:
    """A fusable op whose consumer, or a fusable consumer's consumer, ran a fused
    kernel (MatMul -> BiasAdd -> Relu = _MklNativeFusedMatMul)."""
    op = site.op
    frontier = [op.op_name] if op.op_type in FUSABLE else []
    consumers = ctx.consumers(site.key)
    for _hop in range(_FUSION_DEPTH):
        following = []
        for name in frontier:
            for consumer in consumers.get(name, []):
                node = _fused_node(ctx, op.graph_id, consumer)
                if node:
                    kernel = ctx.nodes[node][0]
                    return Verdict(kernel, f"fused by grappler's remapper into {kernel}",
                                   ctx.nodes[node][2], node=node, fused_into=node)
                created = site.graph_ops.get(consumer)
                if created is not None and created.op_type in FUSABLE:
                    following.append(consumer)
        frontier = following
    return None


def _fused_node(ctx: InferenceContext, graph_id: str, op_name: str) -> str:
    """The first executed node standing for the op that ran a fused kernel, or ""."""
    for node in ctx.executed(graph_id, op_name):
        if is_fused(ctx.nodes.get(node, ("", "", ""))[0]):
            return node
    return ""


def fused_by_pattern(ctx: InferenceContext, site: OpSite) -> Verdict | None:
    """An op of a contraction + BiasAdd [+ activation] pattern in a NO_TENSOR dump's graph,
    which grappler's remapper fused: NO_TENSOR's debug ops read a constant, not the
    pattern's tensors, so its intermediate tensors keep a single reader and the remapper
    fuses as in an undebugged graph. The fused kernel is the oneDNN state's: unknown
    (saying why) where nothing the run left decides that state."""
    if not site.no_tensor_dump or site.created is None or site.op.dtype not in FUSION_DTYPES:
        return None
    pattern = _pattern_of(site.op.op_name, site.graph_ops, ctx.consumers(site.key))
    if pattern is None:
        return None
    contraction = site.graph_ops[pattern[0]].op_type
    off, on = CONTRACTION_FUSIONS[contraction]
    last = pattern[-1]
    chain = " + ".join(f"{site.graph_ops[name].op_type} {name}" for name in pattern)
    why = (f"grappler's remapper fuses {chain} (a NO_TENSOR dump's debug ops read no tensor, "
           f"so the pattern's tensors have one reader each) into one node named {last}")
    state = ctx.model.onednn_enabled
    fused_into = None if last == site.op.op_name else last
    if state is None:
        return Verdict(UNKNOWN, f"unknown: {why}, which runs {off} with oneDNN's custom operations "
                                f"off and {on} with them on, and nothing this run left says "
                                f"which; {FIND_OUT}", fused_into=fused_into)
    kernel = on if state else off
    return Verdict(kernel, f"fused: {why}, which runs {kernel} with oneDNN "
                           f"{'on' if state else 'off'} in this run", fused_into=fused_into)


def _pattern_of(name: str, graph_ops: dict[str, OpCreation],
                consumers: dict[str, list[str]]) -> list[str] | None:
    """The ops of the contraction pattern ``name`` is in, the contraction first, or None."""
    for head in _contraction_candidates(name, graph_ops):
        pattern = _pattern_from(head, graph_ops, consumers)
        if pattern is not None and name in pattern:
            return pattern
    return None


def _contraction_candidates(name: str, graph_ops: dict[str, OpCreation]) -> list[str]:
    """The op itself and the first-input producers up to two ops up: where its pattern's
    contraction can be."""
    out = [name]
    for _hop in range(2):
        created = graph_ops.get(out[-1])
        inputs = data_inputs(created.inputs) if created is not None else []
        if not inputs:
            break
        out.append(strip_slot(inputs[0]))
    return [n for n in out if n in graph_ops and graph_ops[n].op_type in CONTRACTION_FUSIONS]


def _pattern_from(head: str, graph_ops: dict[str, OpCreation],
                  consumers: dict[str, list[str]]) -> list[str] | None:
    """[contraction, BiasAdd(, activation)] where each op is its predecessor's only reader
    and reads it as its first input; None where the contraction has no such BiasAdd."""
    bias = _sole_reader(head, "BiasAdd", graph_ops, consumers)
    if bias is None:
        return None
    pattern = [head, bias]
    readers = consumers.get(bias, [])
    if len(readers) == 1 and graph_ops.get(readers[0]) is not None \
            and graph_ops[readers[0]].op_type in FUSED_ACTIVATIONS:
        activation = _sole_reader(bias, graph_ops[readers[0]].op_type, graph_ops, consumers)
        if activation is not None:
            pattern.append(activation)
    return pattern


def _sole_reader(name: str, op_type: str, graph_ops: dict[str, OpCreation],
                 consumers: dict[str, list[str]]) -> str | None:
    """The one op reading ``name``, if it is of ``op_type`` and reads it as its first
    data input (output 0)."""
    readers = consumers.get(name, [])
    if len(readers) != 1:
        return None
    reader = graph_ops.get(readers[0])
    if reader is None or reader.op_type != op_type:
        return None
    inputs = data_inputs(reader.inputs)
    return reader.op_name if inputs and inputs[0] in (name, f"{name}:0") else None
