"""Grappler's removals, read from a dump's own graph and traces: predicates on one op.

In: a ``DumpSet`` (graphs, stack frames, first-trace digests), one dump graph op
(``OpKernel``) and its graph's ops. Out: whether grappler folded, forwarded or removed
the op (a captured constant, a Cast to its own type, ``x * 1``, a Tile by ones, a
constant-fed op), or, for a Mul in a loop's body, the ``Verdict`` itself.

Each answers from what the dump recorded, following grappler's own conditions
(constant folding, the dependency optimizer, the model pruner); which rule asks which
predicate, and in what order, is ``graph_rules``'s.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from ...model import OpKernel
from ...read.tfdbg import FULL_TENSOR, NO_TENSOR, DumpSet, OpCreation, digest_all_zeros, digest_rank
from ...vocab import REMOVED, UNKNOWN
from ..nodes import data_inputs
from .tensors import input_digest, lowest_digest, strip_slot
from .verdict import FROM_GRAPH, Verdict

__all__ = ["FoldingMemo", "DATASET_GRAPHS", "FORWARDERS", "SHAPE_ONLY", "REDUCTIONS",
           "lifted_capture", "static_operand", "forwarded_rank", "same_tensor_as_input",
           "times_ones", "tiles_once", "identity_in_loop", "all_inputs_constant",
           "constant_input", "is_ones_constant", "times_a_constant_alike",
           "variable_times_zero", "plus_folded_zeros", "never_folded"]

# (id of a graph's ops dict, op name) -> whether constant folding computes the op.
FoldingMemo = dict[tuple[int, str], bool]

# tf.data runs its functions (graphs "Dataset_map_...", "reduce_..._body") with their own
# executors even when they are traced inside a tf.function.
DATASET_GRAPHS = ("Dataset_", "reduce_")

_CAPTURE_FRAMES = frozenset(("_capture_as_const", "capture_by_value"))

# Ops that can forward their input unchanged, which grappler then removes (or replaces
# by an Identity): an identity Reshape or Transpose, a reduction over no axes, a Cast to
# the same type, a Tile by ones, a one-input Concat or AddN.
FORWARDERS = frozenset((
    "Reshape", "Squeeze", "ExpandDims", "Identity", "StopGradient", "Snapshot",
    "PreventGradient", "Transpose", "ConjugateTranspose", "Sum", "Mean", "Prod", "Max", "Min",
    "Cast", "Tile", "BroadcastTo", "Pad", "Slice", "StridedSlice", "ConcatV2", "AddN"))

# Forwarders whose output shape is set by an operand (a Reshape's shape, a BroadcastTo's
# target): for rank <= 1 an equal size fixes an equal shape, which static shape inference
# sees where the operand is known; reductions of a scalar reduce over no axes.
SHAPE_ONLY = frozenset(("Reshape", "BroadcastTo", "Squeeze"))
REDUCTIONS = frozenset(("Sum", "Mean", "Prod", "Max", "Min"))

# What ``tf.ones`` and a gradient tape's seed name their constant.
_ONES = re.compile(r"(?:^|/)ones(?:_\d+)?$")

_SHAPE_READERS = frozenset(("Shape", "ShapeN", "Size", "Rank"))

# Ops grappler's constant folding never folds although their inputs may be constants:
# stateful ones, and those whose value is not a function of their inputs' values (besides
# the families ``_NOT_FOLDED_PARTS`` names: ReadVariableOp, RandomUniform, ...).
_NOT_FOLDED = frozenset((
    "Placeholder", "PlaceholderWithDefault", "VarHandleOp", "TruncatedNormal", "Identity",
    "IdentityN", "NoOp", "StopGradient", "PreventGradient", "Snapshot", "Enter", "Exit", "Merge",
    "Switch", "NextIteration", "LoopCond", "While", "StatelessWhile", "If", "StatelessIf",
    "PartitionedCall", "Print", "PrintV2", "Assert"))
# Families of stateful ops (random draws, iterators, queues, resources, I/O) named by a
# part of their type: constant folding skips every stateful op, and a random op whose
# inputs are constants (Keras shuffles ``range(n)``) still draws at every run.
_NOT_FOLDED_PARTS = ("Random", "Stateful", "Rng", "Multinomial", "Iterator", "Dataset", "Queue",
                     "TensorArray", "Variable", "Resource", "Assign", "Save", "Restore",
                     "Summary", "Collective", "Send", "Recv", "Debug")


def never_folded(op_type: str) -> bool:
    """Whether grappler's constant folding leaves an op of this type alone whatever its
    inputs: a stateful op, or one whose value is not a function of its inputs' values."""
    return op_type in _NOT_FOLDED or any(part in op_type for part in _NOT_FOLDED_PARTS)

# How deep the search for constant inputs goes before it calls an op not constant.
_FOLDING_DEPTH = 32


def lifted_capture(dump: DumpSet, op: OpKernel) -> bool:
    """Whether a Const of a tf.data function graph is a captured eager tensor: tf.data
    functions capture by value, and the dataset op passes such captures as arguments."""
    graph = dump.graphs.get(op.graph_id)
    created = graph.ops.get(op.op_name) if graph is not None else None
    if graph is None or created is None or not graph.name.startswith(DATASET_GRAPHS):
        return False
    return any(dump.stack_frames.get(f, (0, 0, ""))[2] in _CAPTURE_FRAMES for f in created.stack)


def static_operand(graph_ops: dict[str, OpCreation], name: str, memo: FoldingMemo) -> bool:
    """Whether a Reshape's (BroadcastTo's) target shape is a constant, which grappler's
    shape inference sees; a shape computed at run time (``tf.shape(x)``) it may not
    (TF 2.13 keeps such rank-1 Reshapes of HuggingFace BERT's LayerNorm gradients). A
    Squeeze has no shape operand: its dims are an attribute."""
    created = graph_ops.get(name)
    inputs = data_inputs(created.inputs) if created is not None else []
    return len(inputs) < 2 or constant_input(graph_ops, inputs[1], memo)


def forwarded_rank(dump: DumpSet, op: OpKernel) -> int | None:
    """The rank of the tensor the op's first trace records (None if not recorded)."""
    return digest_rank(lowest_digest(dump.trace_digests, op.graph_id, op.op_name))


def same_tensor_as_input(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether the op's first trace records the very tensor its first input's first trace
    does (FULL_HEALTH/SHAPE/FULL_TENSOR digests): what a debug node reads when grappler
    removed the op and fed its consumers (and its debug node) the input instead."""
    created = graph_ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    if not inputs:
        return False
    mine = lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    theirs = input_digest(dump, op.graph_id, inputs[0])
    return bool(mine and theirs and mine == theirs)


def is_ones_constant(op: OpCreation | None) -> bool:
    """Whether an op is a Const named as ``tf.ones`` and a gradient tape's seed name theirs."""
    return op is not None and op.op_type == "Const" and bool(_ONES.search(op.op_name))


def times_ones(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether a Mul multiplies by a Const named ``ones`` (what ``tf.ones`` and a gradient
    tape's seed create) and its first trace records the very tensor its other input's
    does: ``x * 1``, which grappler's constant folding replaces by ``x``."""
    return _times_factor_alike(dump, op, graph_ops, is_ones_constant)


def times_a_constant_alike(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether a Mul multiplies by a Const and its first trace equals its other input's:
    ``x * c`` where a health summary reads the same for both, as it does for every c > 0
    (counts of signs, zeros, infs) and for c = 1, which grappler removes."""
    return _times_factor_alike(dump, op, graph_ops,
                               lambda source: source is not None and source.op_type == "Const")


def _times_factor_alike(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation],
                        is_factor: Callable[[OpCreation | None], bool]) -> bool:
    """Whether a two-input op has an input ``is_factor`` makes and a first trace equal to
    its other input's."""
    created = graph_ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    if len(inputs) != 2:
        return False
    mine = lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    return bool(mine) and any(is_factor(graph_ops.get(strip_slot(factor)))
                              and mine == input_digest(dump, op.graph_id, other)
                              for factor, other in (inputs, inputs[::-1]))


def variable_times_zero(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether a Mul multiplies a variable's value by a constant of zeros, its own trace
    all zeros too (FULL_HEALTH): ``v * 0.0``, which grappler's constant folding replaces by
    a Const of zeros, a variable's shape being static (Keras 2's SGD without momentum)."""
    return _variable_times_zero(dump, op.graph_id, op.op_name, graph_ops)


def _variable_times_zero(dump: DumpSet, graph_id: str, name: str,
                         graph_ops: dict[str, OpCreation]) -> bool:
    created = graph_ops.get(name)
    inputs = data_inputs(created.inputs) if created is not None and created.op_type == "Mul" else []
    if len(inputs) != 2 or not digest_all_zeros(lowest_digest(dump.trace_digests, graph_id, name)):
        return False
    for const, other in (inputs, inputs[::-1]):
        source = graph_ops.get(strip_slot(const))
        variable = graph_ops.get(strip_slot(other))
        if source is not None and source.op_type == "Const" and variable is not None \
                and variable.op_type == "ReadVariableOp" \
                and digest_all_zeros(input_digest(dump, graph_id, const)):
            return True
    return False


def plus_folded_zeros(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> bool:
    """Whether an AddV2 adds a ``variable_times_zero`` Mul to x, its trace equal to x's:
    ``x + 0`` once the Mul is folded, which grappler removes."""
    created = graph_ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    if op.op_type not in ("AddV2", "Add") or len(inputs) != 2:
        return False
    mine = lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    return any(mine and mine == input_digest(dump, op.graph_id, other)
               and _variable_times_zero(dump, op.graph_id, strip_slot(zeros), graph_ops)
               for zeros, other in (inputs, inputs[::-1]))


def tiles_once(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation],
               memo: FoldingMemo) -> bool:
    """Whether a Tile whose first trace records its input's very tensor (size included,
    so the product of its multiples is 1) has constant multiples, outside a while loop's
    body: constant folding's ``SimplifyTile`` then makes it an Identity, bypassed like
    the Identity of ``x * 1`` outside loops (``times_ones``). Inside a loop the
    multiples enter the frame by a control input, which may keep that Identity."""
    graph = dump.graphs.get(op.graph_id)
    created = graph_ops.get(op.op_name)
    if graph is None or created is None or _in_loop_body(graph.name):
        return False
    inputs = data_inputs(created.inputs)
    return len(inputs) == 2 and constant_input(graph_ops, inputs[1], memo)


def identity_in_loop(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation],
                     no_event: bool) -> Verdict | None:
    """A Mul by a constant of one, or a Tile by constant multiples of one, in a lowered
    while loop's body (``x * 1``: Keras 2's sample weights of one under
    steps_per_execution; the Tile of the loss's gradient). Constant folding makes it
    ``Identity(x, ^const)``; the constant enters the loop's frame by a control input, so
    the dependency optimizer keeps that edge and removes the Identity only where
    bypassing it adds no edges (2 inputs x outputs <= 2 + outputs: at most 2 readers,
    its debug op counted). The Identity that runs leaves no profiler event, so the
    profile cannot tell which."""
    graph = dump.graphs.get(op.graph_id)
    created = graph_ops.get(op.op_name)
    if graph is None or created is None or not _in_loop_body(graph.name):
        return None
    inputs = data_inputs(created.inputs)
    if op.op_type == "Mul":
        found = _loop_product_by_one(dump, op, inputs, graph_ops, no_event)
    elif op.op_type == "Tile":
        found = _loop_tile_by_ones(dump, op, inputs, graph_ops)
    else:
        return None
    if found is None:
        return None
    fewest, outputs = _readers(dump, op, graph_ops)
    return _loop_identity_verdict(found, fewest, outputs)


def _loop_product_by_one(dump: DumpSet, op: OpKernel, inputs: list[str],
                         graph_ops: dict[str, OpCreation], no_event: bool,
                         ) -> tuple[str, str] | None:
    """(what it does, its constant) for a Mul by a constant proven one: a Mul that ran
    would have left a profiler event (``no_event``), the constant is named ones, or a
    FULL_TENSOR dump recorded the values."""
    const = _constant_leaving_other_unchanged(dump, op, inputs, graph_ops)
    if const is None:
        return None
    if not (no_event or _ONES.search(const) or set(dump.tensor_debug_modes) == {FULL_TENSOR}):
        # Equal health summaries (x * 2 has x's counts) do not make the constant one.
        return None
    return "it multiplies by ones", const


def _loop_tile_by_ones(dump: DumpSet, op: OpKernel, inputs: list[str],
                       graph_ops: dict[str, OpCreation]) -> tuple[str, str] | None:
    """(what it does, its constant) for a Tile by a Const whose first trace records its
    input's very tensor, size included: its multiples are all one."""
    source = graph_ops.get(strip_slot(inputs[1])) if len(inputs) == 2 else None
    if source is None or source.op_type != "Const" or not same_tensor_as_input(dump, op,
                                                                               graph_ops):
        return None
    return "it tiles by multiples of one", source.op_name


def _readers(dump: DumpSet, op: OpKernel, graph_ops: dict[str, OpCreation]) -> tuple[int, int]:
    """(the fewest readers its output may have, its readers), its debug op counted."""
    readers = [o.op_type for o in graph_ops.values() for t in o.inputs
               if not t.startswith("^") and strip_slot(t) == op.op_name]
    debug = 0 if set(dump.tensor_debug_modes) == {NO_TENSOR} else 1
    # Readers of its shape only (Shape, Size) become constants where grappler knows
    # the shape statically, which the dump does not record: they may not count.
    fewest = debug + sum(1 for t in readers if t not in _SHAPE_READERS)
    return fewest, debug + len(readers)


def _in_loop_body(graph_name: str) -> bool:
    """Whether a graph is a lowered while loop's body."""
    return graph_name.startswith("while_body")


def _constant_leaving_other_unchanged(dump: DumpSet, op: OpKernel, inputs: list[str],
                                      graph_ops: dict[str, OpCreation]) -> str | None:
    """The Const a two-input op multiplies by whose other input's first trace equals
    the op's own, the first such of its inputs; None if neither."""
    mine = lowest_digest(dump.trace_digests, op.graph_id, op.op_name)
    if len(inputs) != 2 or not mine:
        return None
    for const, other in (inputs, inputs[::-1]):
        source = graph_ops.get(strip_slot(const))
        if source is not None and source.op_type == "Const" and \
                mine == input_digest(dump, op.graph_id, other):
            return source.op_name
    return None


def _loop_identity_verdict(found: tuple[str, str], fewest: int, outputs: int) -> Verdict:
    """Whether the Identity a loop's ``x * ones`` (or Tile by ones) became stays, from how
    many read it."""
    what, const = found
    # Kept where bypassing adds edges: 2 inputs x n outputs > 2 + n, so n >= 3.
    if fewest < 3 <= outputs:
        return Verdict(UNKNOWN, f"unknown whether it ran: {what} in a while loop's body, which "
                                f"grappler turns into an Identity with a control input; it "
                                f"keeps that Identity only if it has 3 readers or more, and of "
                                f"its {outputs} readers (its debug op counted) some read only its "
                                f"shape, which grappler makes a constant where it knows the "
                                f"shape statically, which the dump does not record. To know, "
                                f"keep TF's log (TF_CPP_MAX_VLOG_LEVEL=2)")
    if fewest >= 3:
        return Verdict("Identity", f"ran as an Identity: {what} in a while loop's body; "
                                   f"grappler's constant folding makes it Identity(x, ^{const}), "
                                   f"whose control input (the loop's frame) stays, and with "
                                   f"{outputs} readers bypassing it would add edges, so grappler "
                                   f"keeps it", basis=FROM_GRAPH)
    return Verdict(REMOVED, f"removed by grappler: {what} in a while loop's body, and with "
                            f"{outputs} readers its Identity is bypassed", basis=FROM_GRAPH)


def all_inputs_constant(graph_ops: dict[str, OpCreation], name: str, memo: FoldingMemo,
                        depth: int = 0) -> bool:
    """Whether every data input of op ``name`` is a constant or computed from constants
    only: grappler's constant folding then replaces the op by a Const."""
    key = (id(graph_ops), name)  # one graph's ops dict lives as long as the memo
    found = memo.get(key)
    if found is not None:
        return found
    memo[key] = False  # a cycle (a while loop's back edge) is no constant
    created = graph_ops.get(name)
    inputs = data_inputs(created.inputs) if created is not None else []
    result = bool(inputs) and depth < _FOLDING_DEPTH and created is not None \
        and not never_folded(created.op_type) and all(
            graph_ops.get(strip_slot(t)) is not None and (
                graph_ops[strip_slot(t)].op_type == "Const"
                or all_inputs_constant(graph_ops, strip_slot(t), memo, depth + 1))
            for t in inputs)
    memo[key] = result
    return result


def constant_input(graph_ops: dict[str, OpCreation], tensor: str, memo: FoldingMemo) -> bool:
    """Whether the tensor is a Const's, or one constant folding computes."""
    source = graph_ops.get(strip_slot(tensor))
    return source is not None and (source.op_type == "Const" or all_inputs_constant(
        graph_ops, source.op_name, memo))
