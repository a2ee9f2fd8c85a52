"""Ops grappler's arithmetic optimizer moved across a Cast, leaving their own nodes idle.

In: one dump graph's ops (types, inputs, devices), the dtypes its traces record,
and the names of the nodes a profile or log saw run. Out: the ops whose own node
no longer ran, each with why.

The mechanism (tensorflow/core/grappler/optimizers/arithmetic_optimizer.cc, stage
``ReorderCastLikeAndValuePreserving``): for a value-preserving op (Reshape, Squeeze,
ExpandDims, Transpose, ...) reading a Cast that widens its type (``Cast(bool ->
float)`` then ``Reshape``), grappler runs the value-preserving op on the narrower
type first and casts after it: a new ``<op>`` node named
``ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_<src type>_<op>`` and a
new Cast named ``ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_<dst
type>_<cast>``; every consumer of the op, tfdbg's debug ops included, now reads
that new Cast, so the op's own node is idle and removed. It applies again to the
op's own value-preserving consumer (Keras 2's label chain ``Cast -> Reshape ->
Squeeze`` loses both). Symmetrically a Cast that narrows and reads a
value-preserving op is moved before it, and the Cast's own node is removed.
The stage checks no consumer counts, so debug ops do not stop it (unlike the
Reshape bypass of ``RemoveRedundantReshapeOrBroadcastTo``). It names the new
Cast after the Cast it moved, so a Cast with two value-preserving consumers is
reordered with only one of them (the second finds the name taken): which one
depends on grappler's visiting order, and then nothing is said.

Evidence that decides it, strongest first:

- a node that ran (profile or log) named ``[<scope>/]ArithmeticOptimizer/
  ReorderCastLikeAndValuePreserving_<type>_<cast's name>``, nested once per
  reordered op of the chain: the profile records Cast events;
- the dump's dtypes: the Cast's source type (its input's trace, or an op that
  always yields bool, ``Equal``) narrower than its destination (its own trace or
  its consumer's). CURT/CONCISE_HEALTH record "some float" (2 bytes or more).
- where the dump records no dtype (NO_TENSOR), a profile's tf.data iterator
  gives the types of ``IteratorGetNext``'s outputs (``datasets.elements``), and a
  value-preserving op has its input's type. The new Cast is named with the
  Cast's destination type when the Cast widens and with its source type when it
  narrows, so a name whose type is not the known source type tells the widening
  case and the destination (Keras 2's labels: ``int32`` ->
  ``ReorderCastLikeAndValuePreserving_int64_Cast``).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from ..read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN, OpCreation
from .datasets import dtype_enum, elements
from .nodes import data_inputs, tensor_source

__all__ = ["reordered_across_casts", "VALUE_PRESERVING"]

# op_types.cc IsValuePreserving, less what the stage skips (control flow, CheckNumerics),
# less Identity (a function's outputs are Identity ops grappler must keep: the stage
# leaves ops of its preserve set alone, which the dump does not record).
VALUE_PRESERVING = frozenset((
    "Reshape", "Squeeze", "ExpandDims", "Snapshot", "StopGradient", "PreventGradient",
    "Transpose", "Reverse", "ReverseV2", "Roll", "DepthToSpace", "SpaceToDepth",
    "BatchToSpace", "BatchToSpaceND", "SpaceToBatch", "SpaceToBatchND"))
# Everything the stage may reorder with a Cast (an earlier one takes the Cast's new name).
_ANY_VALUE_PRESERVING = VALUE_PRESERVING | {"Identity", "InvertPermutation", "CheckNumerics",
                                            "DebugGradientIdentity", "DeepCopy", "Print"}
_STAGE = "ReorderCastLikeAndValuePreserving_"
# DataTypeSize per dtype name; (low, high) bounds for "some float" (half .. double).
_SIZES = {"DT_BOOL": 1, "DT_INT8": 1, "DT_UINT8": 1, "DT_INT16": 2, "DT_UINT16": 2,
          "DT_HALF": 2, "DT_BFLOAT16": 2, "DT_INT32": 4, "DT_UINT32": 4, "DT_FLOAT": 4,
          "DT_INT64": 8, "DT_UINT64": 8, "DT_DOUBLE": 8, "DT_COMPLEX64": 8,
          "DT_COMPLEX128": 16}
# Ops whose first output is bool whatever their attributes.
_BOOL_OPS = frozenset(("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                       "LogicalAnd", "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite",
                       "ApproximateEqual", "InTopKV2"))


def _name(tensor: str) -> str:
    return tensor_source(tensor)[0]


def _first_input(op: OpCreation) -> tuple[str, int] | None:
    inputs = data_inputs(op.inputs)
    if not inputs:
        return None
    return tensor_source(inputs[0])


def _size_bounds(dtype: str) -> tuple[int, int] | None:
    if dtype == DTYPE_SOME_FLOAT:
        return 2, 8
    size = _SIZES.get(dtype)
    return (size, size) if size is not None else None


def _moves(names: Iterable[str]) -> dict[str, tuple[int, frozenset[str]]]:
    """Cast name (with its scope) -> how many times the stage moved an op across it, and
    the types its new Casts are named with, from the names of new Casts that ran:
    ``s/ArithmeticOptimizer/<stage><T>_c`` is one move across ``s/c``;
    ``ArithmeticOptimizer/ArithmeticOptimizer/<stage><T>_<stage><T>_c`` two (a chain)."""
    out: dict[str, tuple[int, frozenset[str]]] = {}
    marker = "ArithmeticOptimizer/" + _STAGE
    for node in names:
        if marker not in node:
            continue
        scope, _, base = node.rpartition("/")
        depth, types = 0, set()
        while scope.endswith("ArithmeticOptimizer") and base.startswith(_STAGE):
            dtype, _, base = base[len(_STAGE):].partition("_")
            types.add(dtype_enum(dtype))
            scope = scope[:-len("ArithmeticOptimizer")].rstrip("/")
            depth += 1
        if depth:
            cast = f"{scope}/{base}" if scope else base
            was_depth, was_types = out.get(cast, (0, frozenset()))
            out[cast] = (max(was_depth, depth), was_types | types)
    return out


def _suffix_move(moves: dict[str, tuple[int, frozenset[str]]],
                 op_name: str) -> tuple[int, frozenset[str]]:
    """The depth and types recorded for a dump op, matched as the tail of an executed name
    (inlined calls prefix node names: ``StatefulPartitionedCall/<op>``)."""
    best, types = 0, frozenset[str]()
    for cast, (depth, named) in moves.items():
        if cast == op_name or cast.endswith("/" + op_name):
            best, types = max(best, depth), types | named
    return best, types


def reordered_across_casts(ops: dict[str, OpCreation], dtypes: dict[tuple[str, int], str],
                           executed: Iterable[str],
                           iterator_specs: Sequence[tuple[str, str]] = (),
                           debug_reads: bool = True) -> dict[str, str]:
    """Op name -> note, for the ops of one graph whose own node the stage left idle.

    ``dtypes`` maps (op name, slot) to the dtype its trace records ("" or absent: none);
    ``executed`` are the node names a profile or log saw run; ``iterator_specs`` the
    tf.data element specs a profile recorded (``Profile.iterator_specs``);
    ``debug_reads``: whether tfdbg's debug ops read the ops' outputs (every mode but
    NO_TENSOR), a consumer that keeps a node running whatever grappler moves."""
    consumers: dict[str, list[str]] = defaultdict(list)
    readers: dict[str, set[str]] = defaultdict(set)  # data and control consumers alike
    for op in ops.values():
        for tensor in op.inputs:
            readers[_name(tensor)].add(op.op_name)
        for tensor in data_inputs(op.inputs):
            consumers[_name(tensor)].append(op.op_name)
    moves = _moves(executed)
    from_iterator = {(name, slot): dtype for name, element in elements(ops, iterator_specs).items()
                     for slot, dtype in enumerate(element.dtypes)}
    out: dict[str, str] = {}

    def vp_consumers(name: str) -> list[str]:
        return [c for c in consumers.get(name, [])
                if ops[c].op_type in _ANY_VALUE_PRESERVING and _first_input(ops[c]) == (name, 0)]

    def typed(name: str, slot: int = 0) -> tuple[str, str]:
        """The dtype of a tensor and, if a profile's tf.data iterator told it, the
        ``IteratorGetNext`` it was read from."""
        for _hop in range(len(ops) + 1):  # up a chain of value-preserving ops (no cycle)
            found = dtypes.get((name, slot), "")
            if found and found != DTYPE_UNKNOWN:
                return found, ""
            if (name, slot) in from_iterator:
                return from_iterator[(name, slot)], name
            op = ops.get(name)
            if op is None:
                return "", ""
            if slot == 0 and op.op_type in _BOOL_OPS:
                return "DT_BOOL", ""
            source = _first_input(op) if slot == 0 and op.op_type in _ANY_VALUE_PRESERVING \
                else None
            if source is None:
                return "", ""
            name, slot = source
        return "", ""

    def dtype_of(name: str, slot: int = 0) -> str:
        return typed(name, slot)[0]

    def chain(cast: OpCreation, depth: int | None) -> list[str]:
        """The value-preserving ops moved across ``cast``: ``depth`` of them if the
        evidence counted them, else all of a chain of sole consumers."""
        moved: list[str] = []
        current = cast.op_name
        while depth is None or len(moved) < depth:
            found = vp_consumers(current)
            if len(found) != 1 or ops[found[0]].op_type not in VALUE_PRESERVING \
                    or ops[found[0]].device != cast.device:
                break
            moved.append(found[0])
            current = found[0]
        return moved if depth is None or len(moved) == depth else []

    for cast in ops.values():
        if cast.op_type != "Cast":
            continue
        source = _first_input(cast)
        if source is None:
            continue
        source_type, get_next = typed(*source)
        src, dst = _size_bounds(source_type), None
        for name in [cast.op_name] + vp_consumers(cast.op_name):
            dst = dst or _size_bounds(dtype_of(name))
        depth, named = _suffix_move(moves, cast.op_name)
        told = ""
        if dst is None and depth and len(named) == 1 and source_type in _SIZES \
                and source_type not in named:
            # Named with a type other than the source's: the destination type of a
            # widening move (a narrowing one is named with the source type).
            told = next(iter(named))
            dst = _size_bounds(told)
        widening = src is not None and dst is not None and src[1] < dst[0]
        contradicted = src is not None and dst is not None and not widening
        producer = ops.get(source[0])
        # A narrowing Cast moved before its value-preserving input gets a new node named
        # after it too: such a name tells the widening case only where the Cast's input is
        # not value-preserving, or the dtypes show it widening.
        ambiguous = producer is not None and producer.op_type in _ANY_VALUE_PRESERVING
        # A widening Cast followed by value-preserving ops: those are moved before it.
        if depth and not contradicted and (widening or not ambiguous):
            moved = chain(cast, depth)
            how = (f"the profile or log shows the node grappler made for the move, a Cast "
                   f"named after {cast.op_name} (ArithmeticOptimizer/"
                   f"ReorderCastLikeAndValuePreserving_...)")
            if told:
                whence = (f", which the profile's tf.data iterator records for {get_next}"
                          if get_next else "")
                how += (f", named with {told}, not with its input's type {source_type}"
                        f"{whence}: so the Cast widens to {told}")
        elif widening:
            moved = chain(cast, None)
            how = (f"the dump's dtypes show {cast.op_name} widening its input "
                   f"({source_type} to {dtype_of(cast.op_name) or 'a wider type'})")
        else:
            moved = []
        for name in moved:
            out[name] = (f"removed by grappler: its arithmetic optimizer moved it before the "
                         f"widening Cast {cast.op_name} (stage ReorderCastLikeAndValuePreserving),"
                         f" so a copy of it ran on the narrower type under the name "
                         f"ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_..._"
                         f"{name.rpartition('/')[2]} and its consumers read a Cast made after "
                         f"it; {how} (inferred)")
    # A narrowing Cast reading a value-preserving op: the Cast is moved before that op.
    for cast in ops.values():
        if cast.op_type != "Cast" or cast.op_name in out:
            continue
        source = _first_input(cast)
        producer = ops.get(source[0]) if source is not None else None
        if (source is None or producer is None or source[1] != 0 or producer.op_name in out
                or producer.op_type not in VALUE_PRESERVING or producer.device != cast.device):
            continue
        source_type, get_next = typed(*source)
        src, dst = _size_bounds(source_type), _size_bounds(dtype_of(cast.op_name))
        narrowing = [c for c in consumers.get(producer.op_name, [])
                     if ops[c].op_type == "Cast" and _first_input(ops[c]) == (producer.op_name, 0)]
        depth, named = _suffix_move(moves, cast.op_name)
        # Named with its own source type: only a narrowing move names the new Cast so.
        by_name = dst is None and depth > 0 and source_type in _SIZES and named == {source_type}
        if src is None or len(narrowing) != 1 or not (by_name or (dst is not None and dst[1] < src[0])):
            continue
        if by_name:
            whence = (f" (which the profile's tf.data iterator records for {get_next})"
                      if get_next else "")
            how = (f"the profile or log shows the Cast grappler made for the move, named with "
                   f"{source_type}, the type of its input{whence}, as only a narrowing move names it")
        else:
            how = (f"the dump's dtypes show it narrowing {source_type} to "
                   f"{dtype_of(cast.op_name)}")
        out[cast.op_name] = (f"removed by grappler: its arithmetic optimizer moved this narrowing "
                             f"Cast before {producer.op_name} (stage "
                             f"ReorderCastLikeAndValuePreserving), and its consumers read the "
                             f"copy of {producer.op_name} made after it; {how} (inferred)")
        if not debug_reads and readers[producer.op_name] == {cast.op_name}:
            out[producer.op_name] = (
                f"removed by grappler: its arithmetic optimizer moved the narrowing Cast "
                f"{cast.op_name}, its only consumer, before it (stage "
                f"ReorderCastLikeAndValuePreserving) and made a copy of it after that Cast, which "
                f"ran instead; a NO_TENSOR debug op reads no tensor, so nothing else kept its own "
                f"node; {how} (inferred)")
    return out

