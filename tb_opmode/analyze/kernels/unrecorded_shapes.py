"""Ops whose removal a dump that records no shapes cannot tell: NO_TENSOR, CURT/CONCISE_HEALTH.

In: one op no log or profile resolved (an ``OpSite``). Out: where its dump's traces
record no dtype, rank or shape (the mode records none, or a circular buffer dropped the
op's traces or its input's), and the op is one grappler removes or merges exactly
where static shapes or dtypes make it a no-op, an ``(unknown)`` verdict saying why and
how to find out; else None.

Keras builds its loss and the loss's gradient from such ops: a sum over ``range(rank)``
(over no axis when the loss is a scalar), a broadcast to the shape the tensor may already
have, ``x * ones`` (the gradient's seed), the labels cast once for the loss and once for
a metric. A FULL_HEALTH, SHAPE or FULL_TENSOR dump shows whether each forwarded its input
(its trace equals its input's), and the rules before this one decide them; a dump with no
shapes has nothing to decide by, and naming the op's own kernel would be a guess.

Where no profiled step ran the op's graph, the same holds for every op grappler removes
as a no-op by shapes or dtypes alone (a Cast to the type its input has, a Squeeze or
Reshape to the shape it has, a Tile by ones, a sum over no axis): in a profiled step the
rules before this one read its missing event, here nothing shows it.
"""
from __future__ import annotations

from typing import Callable, Optional

from ...read.tfdbg import CONCISE_HEALTH, CURT_HEALTH, NO_TENSOR
from ...vocab import UNKNOWN
from ..nodes import data_inputs
from .context import OpSite
from .grappler import REDUCTIONS, is_ones_constant
from .tensors import input_digest, lowest_digest, strip_slot
from .verdict import Verdict

__all__ = ["shapeless_no_op"]

# The modes whose traces record no dtype, rank or shape.
_SHAPELESS_MODES = frozenset((NO_TENSOR, CURT_HEALTH, CONCISE_HEALTH))

_NOTE = ("unknown whether it ran: {what}, which grappler removes{where}; this dump records "
         "no dtype, rank or shape of it or of its input, so it cannot show which. To know, "
         "keep TF's log (TF_CPP_VMODULE=executor=1), profile a step, or dump with FULL_HEALTH "
         "or SHAPE and no circular buffer")


def _source_type(site: OpSite, tensor: str) -> str:
    source = site.graph_ops.get(strip_slot(tensor))
    return source.op_type if source is not None else ""


def _reduction_over_a_range(site: OpSite, inputs: list[str]) -> Optional[tuple[str, str]]:
    if site.op.op_type not in REDUCTIONS or len(inputs) < 2 or _source_type(site, inputs[1]) != "Range":
        return None
    return (f"a {site.op.op_type} over range(rank) of its input",
            " where that input is a scalar (a reduction over no axis)")


def _broadcast(site: OpSite, inputs: list[str]) -> Optional[tuple[str, str]]:
    if site.op.op_type != "BroadcastTo":
        return None
    return ("a BroadcastTo", " where its input has the shape it broadcasts to")


def _times_a_constant(site: OpSite, inputs: list[str]) -> Optional[tuple[str, str]]:
    if site.op.op_type != "Mul":
        return None
    sources = [site.graph_ops.get(strip_slot(t)) for t in inputs]
    if any(is_ones_constant(source) for source in sources):
        return ("a product by a constant of ones (x * 1)", " where x has the product's shape")
    if any(source is not None and source.op_type == "Const" for source in sources):
        return ("a product by a constant (x * c)",
                " where c is 1, and folds to zeros where c is 0, x's shape being static")
    return None


def _plus_a_variable_times_a_constant(site: OpSite,
                                      inputs: list[str]) -> Optional[tuple[str, str]]:
    if site.op.op_type not in ("AddV2", "Add"):
        return None
    for tensor in inputs:
        source = site.graph_ops.get(strip_slot(tensor))
        factors = [site.graph_ops.get(strip_slot(t)) for t in data_inputs(source.inputs)] \
            if source is not None and source.op_type == "Mul" else []
        types = {f.op_type for f in factors if f is not None}
        if {"Const", "ReadVariableOp"} <= types:
            return ("a sum with a variable times a constant (x + v * c)",
                    " where c is 0 (as SGD without momentum adds v * 0.0)")
    return None


def _cast_of_a_cast_tensor(site: OpSite, inputs: list[str]) -> Optional[tuple[str, str]]:
    if site.op.op_type != "Cast" or not inputs:
        return None
    twins = [name for name, op in site.graph_ops.items()
             if op.op_type == "Cast" and name != site.op.op_name
             and data_inputs(op.inputs)[:1] == inputs[:1]]
    if not twins:
        return None
    return (f"one of two Casts of one tensor (with {twins[0]})",
            ", keeping one node for both, where they cast to the same type")


# Ops grappler removes where shapes or dtypes alone make them no-ops.
_SHAPE_NO_OPS = frozenset(("Cast", "Reshape", "Squeeze", "ExpandDims", "Tile",
                           "BroadcastTo")) | REDUCTIONS


def _no_op_by_shape_unobserved(site: OpSite, inputs: list[str]) -> Optional[tuple[str, str]]:
    # A profiled step that ran its graph decides it only where the executor traced its
    # node at every run; otherwise the missing event is no proof either way.
    if site.op.op_type not in _SHAPE_NO_OPS:
        return None
    if not site.debug_node_profiled:
        unobserved = "no profiled step ran its graph"
    elif not site.traced_always:
        unobserved = "the profile, having no event of it, cannot tell"
    else:
        return None
    op_type = site.op.op_type
    return (f"{'an' if op_type[0] in 'AEIOU' else 'a'} {op_type}",
            " where static shapes or dtypes make it a no-op or let it merge into a neighbour, "
            f"and {unobserved}")


_PATTERNS: tuple[Callable[[OpSite, list[str]], Optional[tuple[str, str]]], ...] = (
    _reduction_over_a_range, _broadcast, _times_a_constant, _plus_a_variable_times_a_constant,
    _cast_of_a_cast_tensor, _no_op_by_shape_unobserved)


def _no_shape_recorded(site: OpSite, inputs: list[str]) -> bool:
    """Whether the dump's mode records no shapes, or its traces of the op, or of the
    input it would forward, were lost (a circular buffer keeps the last records only)."""
    modes = set(site.dump.tensor_debug_modes)
    if modes and modes <= _SHAPELESS_MODES:
        return True
    if not lowest_digest(site.dump.trace_digests, site.op.graph_id, site.op.op_name):
        return True
    return site.ctx.graph_cut and bool(inputs) and not input_digest(site.dump, site.op.graph_id,
                                                                   inputs[0])


def shapeless_no_op(site: OpSite) -> Optional[Verdict]:
    """``(unknown)`` for an op grappler removes where shapes or dtypes make it a no-op, in a
    dump that records neither; None elsewhere."""
    if site.created is None:
        return None
    inputs = data_inputs(site.created.inputs)
    if not _no_shape_recorded(site, inputs):
        return None
    for pattern in _PATTERNS:
        found = pattern(site, inputs)
        if found is not None:
            what, where = found
            return Verdict(UNKNOWN, _NOTE.format(what=what, where=where))
    return None
