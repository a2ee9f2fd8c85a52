"""What grappler removes in a NO_TENSOR dump's graphs, where tfdbg's debug ops read no tensor.

In: one dump graph's ops (types, inputs) of a NO_TENSOR dump. Out: op name -> (kernel,
note) for the Reshapes whose node a bypass removed, for the Reshapes it left reading
the bypassed one's input, whose fate the dump cannot tell, and for the ops no other op
reads, which function instantiation prunes.

A NO_TENSOR debug op reads a constant and follows the op by control edges between
debug ops only, so the graph is optimised as if undebugged; in every other mode the
debug op reads the op's output, one more consumer.

The mechanism (tensorflow/core/grappler/optimizers/arithmetic_optimizer.cc, stage
``RemoveRedundantReshapeOrBroadcastTo``): a Reshape whose input is another Reshape
with no other non-control consumer reads that Reshape's input instead, and the inner
Reshape becomes a NoOp. In every mode but NO_TENSOR tfdbg's debug op reads the inner
Reshape's output, a second consumer, and the bypass does not happen; a NO_TENSOR
debug op reads a constant (and follows its op by control edges only), so the graph is
optimised as if undebugged. The outer Reshape then reads the inner one's input and is
removed too where grappler proves that input already has its target shape
(``ShapesSymbolicallyEqual``), which needs static shapes a NO_TENSOR dump does not
record: for it the answer is unknown. (The stage also bypasses through a chain of
unary element-wise ops; only the direct pair is decided here.)
"""
from __future__ import annotations

from collections import defaultdict

from ..read.tfdbg import OpCreation
from ..vocab import REMOVED, UNKNOWN
from .nodes import data_inputs, tensor_source

__all__ = ["bypassed_reshapes", "pruned_dead_ops"]

# Ops that compute a value from their inputs and nothing else: with no consumer TF prunes
# them from a function's body (an op outside this list may be stateful, or a function's
# output, an Identity, which is kept). A function's argument (Placeholder, run as _Arg)
# too: the pruning keeps stateful nodes but _Arg (PruneFunctionBody), as Keras'
# ``permutation(_)`` of its NumPy inputs showed.
_PURE = frozenset((
    "Placeholder", "Const", "Shape", "ShapeN", "Size", "Rank", "Reshape", "Squeeze", "ExpandDims",
    "StridedSlice", "Slice", "Pack", "Unpack", "ConcatV2", "Fill", "Tile", "BroadcastTo",
    "Transpose", "Cast", "Mul", "AddV2", "Add", "Sub", "RealDiv", "DivNoNan", "Neg", "Square",
    "Sum", "Mean", "Prod", "Max", "Min", "ZerosLike", "OnesLike", "MatMul",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "BiasAddGrad", "BroadcastGradientArgs",
    "Range", "Equal", "NotEqual", "Greater", "Less", "Select", "SelectV2"))


def _data_consumers(ops: dict[str, OpCreation]) -> dict[str, list[str]]:
    """Op name -> the ops that read an output of it by a data edge."""
    consumers: dict[str, list[str]] = defaultdict(list)
    for op in ops.values():
        for tensor in data_inputs(op.inputs):
            consumers[tensor_source(tensor)[0]].append(op.op_name)
    return consumers


def _bypassed_inner(op: OpCreation, ops: dict[str, OpCreation],
                    consumers: dict[str, list[str]]) -> str | None:
    """The Reshape a Reshape reads, where nothing else reads it: grappler bypasses it
    (None: ``op`` is not such an outer Reshape)."""
    data = data_inputs(op.inputs)
    if op.op_type != "Reshape" or not data:
        return None
    name, slot = tensor_source(data[0])
    inner = ops.get(name)
    if inner is None or inner.op_type != "Reshape" or slot != 0:
        return None
    return name if consumers[name] == [op.op_name] else None


def _bypassed_note(outer: str) -> str:
    return (f"removed by grappler: its only consumer {outer} is a Reshape too, which "
            f"grappler's arithmetic optimizer makes read this Reshape's input directly "
            f"(RemoveRedundantReshapeOrBroadcastTo); a NO_TENSOR dump's debug op reads no "
            f"tensor, so it is no second consumer to stop that (inferred from the dump's "
            f"graph)")


def _outer_note(inner: str) -> str:
    return (f"unknown whether it ran: grappler bypassed its input {inner} (a Reshape "
            f"with no other consumer), so it reads that Reshape's input, and removes it "
            f"where static shapes prove that input already has its target shape; a "
            f"NO_TENSOR dump records no shapes. To know, dump with FULL_HEALTH or SHAPE, "
            f"or keep TF's log (TF_CPP_MAX_VLOG_LEVEL=2)")


def bypassed_reshapes(ops: dict[str, OpCreation]) -> dict[str, tuple[str, str]]:
    """Op name -> (kernel, note): REMOVED for a Reshape grappler bypassed, UNKNOWN for
    the Reshape that reads its input instead, unless bypassed in turn."""
    consumers = _data_consumers(ops)
    out: dict[str, tuple[str, str]] = {}
    outer: dict[str, str] = {}
    for op in ops.values():
        inner = _bypassed_inner(op, ops, consumers)
        if inner is not None:
            out[inner] = (REMOVED, _bypassed_note(op.op_name))
            outer[op.op_name] = inner
    for name, inner in outer.items():
        if name not in out:  # else bypassed in turn by its own consumer
            out[name] = (UNKNOWN, _outer_note(inner))
    return out


def _static_shape_of(op: OpCreation | None, slot: int, ops: dict[str, OpCreation]) -> bool:
    """Output ``slot`` of a Shape/ShapeN is the shape of a variable's value: variables
    have static shapes, so grappler's constant folding replaces that output with a
    constant (``ConstantFolding/<node>-matshapes-<slot>``) and its readers read that."""
    if op is None or op.op_type not in ("Shape", "ShapeN") or slot >= len(op.inputs):
        return False
    source = ops.get(tensor_source(op.inputs[slot])[0])
    return source is not None and source.op_type == "ReadVariableOp"


def _readers(ops: dict[str, OpCreation]) -> dict[str, set[str]]:
    """Op name -> the ops that read it, by data or control edge; an op that reads a
    variable's shape reads the constant grappler made of it instead."""
    readers: dict[str, set[str]] = defaultdict(set)
    for op in ops.values():
        for tensor in op.inputs:
            source, slot = tensor_source(tensor)
            if not tensor.startswith("^") and _static_shape_of(ops.get(source), slot, ops):
                continue
            readers[source].add(op.op_name)
    return readers


def _dead(ops: dict[str, OpCreation], readers: dict[str, set[str]]) -> set[str]:
    """The pure ops that only dead ops read, or none, grown until nothing changes."""
    dead: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, op in ops.items():
            if name not in dead and op.op_type in _PURE and readers[name] <= dead:
                dead.add(name)
                changed = True
    return dead


def pruned_dead_ops(ops: dict[str, OpCreation]) -> dict[str, tuple[str, str]]:
    """Pure ops whose every reader (by data or control edge) is such an op too, or that
    have none: TF prunes a function body to what its outputs and stateful ops need (only
    a debug op reading the op's tensor, in the other modes, keeps it)."""
    return {name: (REMOVED, (
        "not run: nothing its graph keeps reads it, and a NO_TENSOR debug op reads no "
        "tensor, so TF pruned it from the function as dead (inferred from the dump's graph)"))
        for name in _dead(ops, _readers(ops))}
