"""Reshapes grappler cannot prove no-ops, because its static shapes leave two dimensions open.

In: one dump graph's ops (types, inputs) and a test of whether a tensor is a constant
(or computed from constants only). Out: op name -> note, for the Reshapes that ran
although their trace shows their input forwarded unchanged.

The mechanism (tensorflow/core/grappler/optimizers/arithmetic_optimizer.cc,
``ReshapeIsIdentity``, used by ``RemoveRedundantReshapeOrBroadcastTo``): a Reshape is
removed only where grappler's static shapes of its input and output are compatible
with at most one unknown dimension each, and, where both have one, it is the same
dimension. A target shape packed from a value computed at run time,
``tf.reshape(x, [-1, tf.shape(x)[-1]])`` (Keras 2's sparse categorical cross-entropy
flattening its logits), is unknown in that value's dimension and, if the first element
is -1, in the first too; with a batch dimension not fixed statically (a ``fit`` whose
dataset batches without ``drop_remainder``) the input's unknown dimension is the first,
so the two shapes never qualify: the Reshape runs. Its output's shape then has both
dimensions unknown, and so has what TF's gradient of
``SparseSoftmaxCrossEntropyWithLogits`` computes from it (``ExpandDims(grad, -1) *
backprop``, the backprop shaped like its logits input): the Reshape that restores the
logits' shape runs too. Measured on TF 2.13 and 2.21 with a ``[None, 10]`` input:
``tf.reshape(y, [-1, tf.shape(y)[-1]])`` and the Reshape back to ``tf.shape(y)`` run,
``tf.reshape(y, [-1, 10])`` and ``tf.reshape(y, tf.shape(x))`` are removed.

What the dump does not record is whether the batch dimension was static: with a fully
static input (``drop_remainder=True``, a fixed input signature) grappler folds
``tf.shape(x)`` into a constant and removes the Reshape. Each note says so.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Optional

from ..read.tfdbg import OpCreation
from .nodes import data_inputs, tensor_source

__all__ = ["BATCH_ASSUMPTION", "BATCH_SEEN", "SHAPE_NOT_FOLDED", "broadcast_gradient_axes",
           "unfolded_gradient_reductions", "unprovable_reshapes"]

# Element-wise ops whose output keeps an operand's unknown dimensions when the other
# operand is an ExpandDims (a dimension of 1 there broadcasts to the unknown one).
_BROADCASTING = frozenset(("Mul", "AddV2", "Add", "Sub", "RealDiv", "DivNoNan"))
# Ops whose output has the shape of their first input.
_SAME_SHAPE = frozenset(("Identity", "Relu", "Relu6", "Elu", "Selu", "Neg", "Exp", "Log",
                         "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Square", "Sqrt", "Rsqrt",
                         "Abs", "Cast", "StopGradient", "PreventGradient", "Snapshot"))
# What the rules assume where nothing shows the shapes were not static.
BATCH_ASSUMPTION = ("assuming the batch dimension is not fixed statically, as in a Keras fit "
                    "whose dataset batches without drop_remainder; with fully static shapes "
                    "grappler folds the shape and removes it")
# The same, where a profile's tf.data iterator shows it (``datasets.batch_dimension``);
# where it shows the batch static, the rules do not apply.
BATCH_SEEN = "the profile's tf.data iterator shows the batch dimension unknown ({shapes})"
# The same, where a profile shows the Pack of the shape ran.
SHAPE_NOT_FOLDED = ("the profile shows {pack} ran, so grappler did not fold that shape into a "
                    "constant: the shapes were not fully static")


_Tensor = tuple[str, int]  # (op name, output slot)
# Tensors whose static shape is open in two dimensions -> the Pack it goes back to.
_OpenShapes = dict[_Tensor, str]
# How far an open shape is followed: through the loss's gradient, a few ops on.
_SPREAD_PASSES = 6


def _packed_at_run_time(op: OpCreation, ops: dict[str, OpCreation],
                        is_constant: Callable[[str], bool]) -> str | None:
    """The Pack a Reshape's target shape comes from, where its first element is a constant
    and another is computed at run time (None: not such a Reshape)."""
    inputs = data_inputs(op.inputs)
    if op.op_type != "Reshape" or len(inputs) != 2:
        return None
    pack = ops.get(tensor_source(inputs[1])[0])
    if pack is None or pack.op_type != "Pack":
        return None
    elements = data_inputs(pack.inputs)
    if (len(elements) >= 2 and is_constant(elements[0])
            and any(not is_constant(t) for t in elements[1:])):
        return pack.op_name
    return None


_Spread = Callable[[OpCreation, list[_Tensor], dict[str, OpCreation], _OpenShapes],
                   Optional[tuple[_Tensor, str]]]


def _through_loss(op: OpCreation, sources: list[_Tensor], ops: dict[str, OpCreation],
                  open_shapes: _OpenShapes) -> tuple[_Tensor, str] | None:
    """The loss's backprop (output 1) is shaped like its logits input."""
    if sources and sources[0] in open_shapes:
        return (op.op_name, 1), open_shapes[sources[0]]
    return None


def _through_same_shape(op: OpCreation, sources: list[_Tensor], ops: dict[str, OpCreation],
                        open_shapes: _OpenShapes) -> tuple[_Tensor, str] | None:
    if sources and sources[0] in open_shapes:
        return (op.op_name, 0), open_shapes[sources[0]]
    return None


def _through_broadcast(op: OpCreation, sources: list[_Tensor], ops: dict[str, OpCreation],
                       open_shapes: _OpenShapes) -> tuple[_Tensor, str] | None:
    """An open operand broadcast with an ExpandDims keeps its unknown dimensions."""
    if len(sources) != 2:
        return None
    roots = [open_shapes[s] for s, o in ((sources[0], sources[1]), (sources[1], sources[0]))
             if s in open_shapes and ops.get(o[0]) is not None
             and ops[o[0]].op_type == "ExpandDims"]
    return ((op.op_name, 0), roots[0]) if roots else None


# The ops an open shape passes through, by op type, and which of their outputs it opens.
_SPREADS: tuple[tuple[frozenset[str], _Spread], ...] = (
    (frozenset(("SparseSoftmaxCrossEntropyWithLogits",)), _through_loss),
    (_SAME_SHAPE, _through_same_shape),
    (_BROADCASTING, _through_broadcast),
)


def _opened_output(op: OpCreation, ops: dict[str, OpCreation],
                   open_shapes: _OpenShapes) -> tuple[_Tensor, str] | None:
    """The output of ``op`` an open input leaves open too, with its Pack (None: none)."""
    for types, spread in _SPREADS:
        if op.op_type in types:
            sources = [tensor_source(t) for t in data_inputs(op.inputs)]
            return spread(op, sources, ops, open_shapes)
    return None


def _spread_open_shapes(ops: dict[str, OpCreation], open_shapes: _OpenShapes) -> None:
    """Adds to ``open_shapes`` what the open shapes reach: through ops of their input's
    shape and the gradient of SparseSoftmaxCrossEntropyWithLogits."""
    for _ in range(_SPREAD_PASSES):
        grown = False
        for op in ops.values():
            found = _opened_output(op, ops, open_shapes)
            if found is not None and found[0] not in open_shapes:
                open_shapes[found[0]] = found[1]
                grown = True
        if not grown:
            break


def _open_reshape_input(op: OpCreation, open_shapes: _OpenShapes) -> _Tensor | None:
    """A Reshape's input, where its shape is open in two dimensions."""
    inputs = data_inputs(op.inputs)
    if op.op_type != "Reshape" or len(inputs) != 2:
        return None
    source = tensor_source(inputs[0])
    return source if source in open_shapes else None


def unprovable_reshapes(ops: dict[str, OpCreation],
                        is_constant: Callable[[str], bool]) -> dict[str, tuple[str, str]]:
    """Op name -> (note, the Pack the shape was packed by) for the Reshapes of one graph
    whose static shapes leave two dimensions unknown (module docstring): a profile that
    shows that Pack run shows the shape was not folded. ``is_constant(tensor)`` says
    whether a tensor is a Const or computed from constants only."""
    out: dict[str, tuple[str, str]] = {}
    open_shapes: _OpenShapes = {}
    for op in ops.values():
        pack = _packed_at_run_time(op, ops, is_constant)
        if pack is not None:
            open_shapes[(op.op_name, 0)] = pack
            out[op.op_name] = (
                f"ran (inferred): its target shape is packed ({pack}) from a value "
                f"computed at run time, so grappler's static shapes cannot prove it a no-op "
                f"(its trace equals its input's)", pack)
    if not open_shapes:
        return out
    _spread_open_shapes(ops, open_shapes)
    for op in ops.values():
        source = None if op.op_name in out else _open_reshape_input(op, open_shapes)
        if source is not None:
            out[op.op_name] = (
                f"ran (inferred): its input, {source[0]}, is computed from a Reshape to a "
                f"shape packed at run time, so grappler's static shapes leave two of its "
                f"dimensions unknown and cannot prove this Reshape a no-op (its trace equals "
                f"its input's)", open_shapes[source])
    return out


# Producers of tensors whose static shape is fully known: they cannot share a symbolic
# (run-time) batch dimension with another tensor.
_STATIC = frozenset(("Const", "ReadVariableOp", "VarHandleOp"))


_Side = tuple[Optional[int], str]  # (rank a trace records or None, the operand's op type)


def _reshapes_of_first_outputs(ops: dict[str, OpCreation]) -> dict[str, list[str]]:
    """Op name -> the Reshapes that read its first output."""
    reshapes_of: dict[str, list[str]] = {}
    for reader in ops.values():
        reader_inputs = data_inputs(reader.inputs)
        if reader.op_type == "Reshape" and reader_inputs:
            source = tensor_source(reader_inputs[0])
            if source[1] == 0:
                reshapes_of.setdefault(source[0], []).append(reader.op_name)
    return reshapes_of


def broadcast_gradient_axes(op: OpCreation, ops: dict[str, OpCreation]) -> OpCreation | None:
    """The BroadcastGradientArgs a Sum's reduction axes come from (None: not such a Sum)."""
    inputs = data_inputs(op.inputs)
    if op.op_type != "Sum" or len(inputs) != 2:
        return None
    bga = ops.get(tensor_source(inputs[1])[0])
    if bga is None or bga.op_type != "BroadcastGradientArgs" or len(bga.inputs) != 2:
        return None
    return bga


def _operand_sides(bga: OpCreation, ops: dict[str, OpCreation],
                   rank_of: Callable[[str], int | None]) -> list[_Side] | None:
    """The rank and producer of each operand whose ``Shape`` a BroadcastGradientArgs
    reads (None: an input is not such a Shape)."""
    sides: list[_Side] = []
    for tensor in bga.inputs:
        shape = ops.get(tensor_source(tensor)[0])
        if shape is None or shape.op_type != "Shape" or not shape.inputs:
            return None
        operand = ops.get(tensor_source(shape.inputs[0])[0])
        sides.append((rank_of(shape.inputs[0]), operand.op_type if operand else ""))
    return sides


def _axes_stay_computed(sides: list[_Side]) -> bool:
    """Whether grappler cannot fold the axes: one side carries the run-time batch
    dimension, and the other has another rank or a static shape, so no dimension of it
    is that same symbol."""
    (rank_a, kind_a), (rank_b, kind_b) = sides
    static_a, static_b = kind_a in _STATIC, kind_b in _STATIC
    if static_a and static_b:
        return False  # both fully known: the axes fold
    if (static_a and rank_b) or (static_b and rank_a):
        return True
    return (rank_a is not None and rank_b is not None and rank_a != rank_b
            and max(rank_a, rank_b) > 0)


def _why_axes_unfolded(bga: OpCreation, sides: list[_Side], assumption: str) -> str:
    (rank_a, _), (rank_b, _) = sides
    return (f"the reduction axes come from {bga.op_name}, which grappler cannot fold into a "
            f"constant: its operands' shapes do not line up dimension by dimension (one of "
            f"rank {rank_a if rank_a is not None else 'fixed'}, one of rank "
            f"{rank_b if rank_b is not None else 'fixed'}), and the run-time batch "
            f"dimension is not known to be 1 or equal to the other side's; {assumption}")


def unfolded_gradient_reductions(ops: dict[str, OpCreation],
                                 rank_of: Callable[[str], int | None],
                                 assumption: str = BATCH_ASSUMPTION) -> dict[str, str]:
    """Op name -> note for a gradient's ``Sum(grad, BroadcastGradientArgs(Shape(a),
    Shape(b))[k])`` and the Reshape of that Sum back to a shape, where grappler could
    not fold the reduction axes, so both run.

    The mechanism (constant_folding.cc, ``MaterializeBroadcastGradientArgs``): the axes
    become a constant only where every dimension of ``a`` and ``b`` aligned from the right
    is known on both sides or the same symbolic dimension, and every extra leading
    dimension is known. With a run-time batch dimension (first) on one side, tensors of
    two ranks, or one with a statically shaped operand (a constant, a variable), never
    qualify: the axes stay computed, so the Sum reduces over axes grappler does not
    know (no Identity), its output's shape is unknown, and the Reshape after it cannot
    be proven a no-op. ``rank_of(tensor)`` is the rank a trace records (None: none);
    ``assumption`` what the notes say of the batch dimension (``BATCH_SEEN`` where a
    profile showed it)."""
    out: dict[str, str] = {}
    reshapes_of = _reshapes_of_first_outputs(ops)
    for op in ops.values():
        bga = broadcast_gradient_axes(op, ops)
        sides = _operand_sides(bga, ops, rank_of) if bga is not None else None
        if bga is None or sides is None or not _axes_stay_computed(sides):
            continue
        why = _why_axes_unfolded(bga, sides, assumption)
        out[op.op_name] = f"ran (inferred): it reduces over axes computed at run time: {why}"
        for reader_name in reshapes_of.get(op.op_name, ()):
            out[reader_name] = (
                f"ran (inferred): it reshapes {op.op_name}, a Sum whose output shape "
                f"grappler does not know, so it cannot prove this Reshape a no-op: {why}")
    return out
