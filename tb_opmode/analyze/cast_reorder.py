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
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

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


_Bounds = tuple[int, int]  # (low, high) size in bytes of a dtype


class _CastGraph:
    """One graph's ops with what the rules ask of them: which ops read which, the type
    of a tensor, and the moves the names of the nodes that ran record."""

    def __init__(self, ops: dict[str, OpCreation], dtypes: dict[tuple[str, int], str],
                 executed: Iterable[str], iterator_specs: Sequence[tuple[str, str]]) -> None:
        self.ops = ops
        self.dtypes = dtypes
        self.consumers: dict[str, list[str]] = defaultdict(list)
        self.readers: dict[str, set[str]] = defaultdict(set)  # data and control consumers alike
        for op in ops.values():
            for tensor in op.inputs:
                self.readers[_name(tensor)].add(op.op_name)
            for tensor in data_inputs(op.inputs):
                self.consumers[_name(tensor)].append(op.op_name)
        self.moves = _moves(executed)
        self.from_iterator = {(name, slot): dtype
                              for name, element in elements(ops, iterator_specs).items()
                              for slot, dtype in enumerate(element.dtypes)}

    def casts(self) -> list[OpCreation]:
        return [op for op in self.ops.values() if op.op_type == "Cast"]

    def reads_first_output(self, reader: str, name: str) -> bool:
        return _first_input(self.ops[reader]) == (name, 0)

    def vp_consumers(self, name: str) -> list[str]:
        """The value-preserving ops that read ``name``'s first output as their first input."""
        return [c for c in self.consumers.get(name, [])
                if self.ops[c].op_type in _ANY_VALUE_PRESERVING and self.reads_first_output(c, name)]

    def cast_consumers(self, name: str) -> list[str]:
        """The Casts that read ``name``'s first output."""
        return [c for c in self.consumers.get(name, [])
                if self.ops[c].op_type == "Cast" and self.reads_first_output(c, name)]

    def typed(self, name: str, slot: int = 0) -> tuple[str, str]:
        """The dtype of a tensor and, if a profile's tf.data iterator told it, the
        ``IteratorGetNext`` it was read from ("" and "" where nothing tells it)."""
        for _hop in range(len(self.ops) + 1):  # up a chain of value-preserving ops (no cycle)
            known = self._told_type(name, slot)
            if known is not None:
                return known
            source = self._value_source(name, slot)
            if source is None:
                return "", ""
            name, slot = source
        return "", ""

    def _told_type(self, name: str, slot: int) -> tuple[str, str] | None:
        """The type the dump's trace, a tf.data iterator or the op's type itself tells."""
        found = self.dtypes.get((name, slot), "")
        if found and found != DTYPE_UNKNOWN:
            return found, ""
        if (name, slot) in self.from_iterator:
            return self.from_iterator[(name, slot)], name
        op = self.ops.get(name)
        if op is not None and slot == 0 and op.op_type in _BOOL_OPS:
            return "DT_BOOL", ""
        return None

    def _value_source(self, name: str, slot: int) -> tuple[str, int] | None:
        """The input whose type a value-preserving op's output has (None: not such an op)."""
        op = self.ops.get(name)
        if op is None or slot != 0 or op.op_type not in _ANY_VALUE_PRESERVING:
            return None
        return _first_input(op)

    def dtype_of(self, name: str, slot: int = 0) -> str:
        return self.typed(name, slot)[0]

    def move(self, cast: str) -> tuple[int, frozenset[str]]:
        """How many ops the names of the nodes that ran show moved across ``cast``, and
        the types its new Casts are named with."""
        return _suffix_move(self.moves, cast)

    def chain(self, cast: OpCreation, depth: int | None) -> list[str]:
        """The value-preserving ops moved across ``cast``: ``depth`` of them if the
        evidence counted them, else all of a chain of sole consumers."""
        moved: list[str] = []
        current = cast.op_name
        while depth is None or len(moved) < depth:
            found = self.vp_consumers(current)
            if len(found) != 1 or self.ops[found[0]].op_type not in VALUE_PRESERVING \
                    or self.ops[found[0]].device != cast.device:
                break
            moved.append(found[0])
            current = found[0]
        return moved if depth is None or len(moved) == depth else []


# ---------------------------------------------------------------- a widening Cast


class _Widening(NamedTuple):
    """What tells whether ``cast`` widens its input, and so whether the value-preserving
    ops after it were moved before it."""

    cast: OpCreation
    source_type: str
    get_next: str  # the IteratorGetNext whose recorded element gave source_type, or ""
    src: _Bounds | None
    dst: _Bounds | None
    depth: int  # how many ops the names of the nodes that ran show moved across it
    told: str  # the destination type a new Cast's name tells, or ""
    ambiguous: bool  # its input is value-preserving: a narrowing move names a node so too

    @property
    def widening(self) -> bool:
        return self.src is not None and self.dst is not None and self.src[1] < self.dst[0]

    @property
    def contradicted(self) -> bool:
        return self.src is not None and self.dst is not None and not self.widening


def _destination(graph: _CastGraph, cast: OpCreation) -> _Bounds | None:
    """The size of what the Cast yields: its own trace's type, else its value-preserving
    consumers'."""
    names = [cast.op_name] + graph.vp_consumers(cast.op_name)
    return next((bounds for name in names
                 if (bounds := _size_bounds(graph.dtype_of(name))) is not None), None)


def _type_named(named: frozenset[str], depth: int, source_type: str) -> str:
    """The destination type of a widening move, where the new Cast is named with one type
    other than the (known) source type, which a narrowing move would name it with."""
    if depth and len(named) == 1 and source_type in _SIZES and source_type not in named:
        return next(iter(named))
    return ""


def _widening(graph: _CastGraph, cast: OpCreation) -> _Widening | None:
    source = _first_input(cast)
    if source is None:
        return None
    source_type, get_next = graph.typed(*source)
    dst = _destination(graph, cast)
    depth, named = graph.move(cast.op_name)
    told = _type_named(named, depth, source_type) if dst is None else ""
    if told:
        dst = _size_bounds(told)
    producer = graph.ops.get(source[0])
    ambiguous = producer is not None and producer.op_type in _ANY_VALUE_PRESERVING
    return _Widening(cast, source_type, get_next, _size_bounds(source_type), dst, depth, told,
                     ambiguous)


def _moved_by_name(graph: _CastGraph, w: _Widening) -> tuple[list[str], str] | None:
    """A node that ran is named after the move, and no dtype says the Cast narrows; a
    name alone tells the widening case only where the Cast's input is not
    value-preserving, or the dtypes show it widening."""
    if not w.depth or w.contradicted or not (w.widening or not w.ambiguous):
        return None
    how = (f"the profile or log shows the node grappler made for the move, a Cast "
           f"named after {w.cast.op_name} (ArithmeticOptimizer/"
           f"ReorderCastLikeAndValuePreserving_...)")
    if w.told:
        whence = (f", which the profile's tf.data iterator records for {w.get_next}"
                  if w.get_next else "")
        how += (f", named with {w.told}, not with its input's type {w.source_type}"
                f"{whence}: so the Cast widens to {w.told}")
    return graph.chain(w.cast, w.depth), how


def _moved_by_dtypes(graph: _CastGraph, w: _Widening) -> tuple[list[str], str] | None:
    """The dump's dtypes show the Cast widening: its chain of sole value-preserving
    consumers moved before it."""
    if not w.widening:
        return None
    return graph.chain(w.cast, None), (
        f"the dump's dtypes show {w.cast.op_name} widening its input "
        f"({w.source_type} to {graph.dtype_of(w.cast.op_name) or 'a wider type'})")


# What decides that ops were moved before a widening Cast, strongest first: the first
# that applies decides (None: it does not apply).
_WIDENING_EVIDENCE: tuple[Callable[[_CastGraph, _Widening], tuple[list[str], str] | None],
                          ...] = (_moved_by_name, _moved_by_dtypes)


def _moved_before_widening(graph: _CastGraph, cast: OpCreation) -> dict[str, str]:
    """Op name -> note, for the ops moved before ``cast`` (widening)."""
    facts = _widening(graph, cast)
    decided = None if facts is None else next(
        (found for rule in _WIDENING_EVIDENCE if (found := rule(graph, facts)) is not None), None)
    if decided is None:
        return {}
    moved, how = decided
    return {name: (f"removed by grappler: its arithmetic optimizer moved it before the "
                   f"widening Cast {cast.op_name} (stage ReorderCastLikeAndValuePreserving), "
                   f"so a copy of it ran on the narrower type under the name "
                   f"ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_..._"
                   f"{name.rpartition('/')[2]} and its consumers read a Cast made after "
                   f"it; {how} (inferred)")
            for name in moved}


# ---------------------------------------------------------------- a narrowing Cast


def _narrowed_producer(graph: _CastGraph, cast: OpCreation,
                       out: dict[str, str]) -> OpCreation | None:
    """The value-preserving op on the Cast's device whose first output the Cast reads,
    where neither is already explained."""
    source = _first_input(cast)
    producer = graph.ops.get(source[0]) if source is not None else None
    if source is None or producer is None or source[1] != 0:
        return None
    if cast.op_name in out or producer.op_name in out:
        return None
    if producer.op_type not in VALUE_PRESERVING or producer.device != cast.device:
        return None
    return producer


def _how_narrowing(graph: _CastGraph, cast: OpCreation, producer: OpCreation) -> str | None:
    """What shows the Cast narrowing its input (None: nothing does, or another Cast reads
    the same tensor)."""
    if len(graph.cast_consumers(producer.op_name)) != 1:
        return None
    source_type, get_next = graph.typed(producer.op_name)
    src = _size_bounds(source_type)
    if src is None:
        return None
    dst_type = graph.dtype_of(cast.op_name)
    dst = _size_bounds(dst_type)
    if dst is None:
        return _narrowing_by_name(graph, cast, source_type, get_next)
    if dst[1] < src[0]:
        return f"the dump's dtypes show it narrowing {source_type} to {dst_type}"
    return None


def _narrowing_by_name(graph: _CastGraph, cast: OpCreation, source_type: str,
                       get_next: str) -> str | None:
    """The new Cast that ran is named with the Cast's own source type, as only a
    narrowing move names it."""
    depth, named = graph.move(cast.op_name)
    if not depth or source_type not in _SIZES or named != {source_type}:
        return None
    whence = (f" (which the profile's tf.data iterator records for {get_next})"
              if get_next else "")
    return (f"the profile or log shows the Cast grappler made for the move, named with "
            f"{source_type}, the type of its input{whence}, as only a narrowing move names it")


def _moved_narrowing(graph: _CastGraph, cast: OpCreation, out: dict[str, str],
                     debug_reads: bool) -> dict[str, str]:
    """Op name -> note for a narrowing ``cast`` moved before the value-preserving op it
    reads and, where nothing else read that op's output, for that op too."""
    producer = _narrowed_producer(graph, cast, out)
    how = _how_narrowing(graph, cast, producer) if producer is not None else None
    if producer is None or how is None:
        return {}
    found = {cast.op_name: (
        f"removed by grappler: its arithmetic optimizer moved this narrowing Cast before "
        f"{producer.op_name} (stage ReorderCastLikeAndValuePreserving), and its consumers "
        f"read the copy of {producer.op_name} made after it; {how} (inferred)")}
    if not debug_reads and graph.readers[producer.op_name] == {cast.op_name}:
        found[producer.op_name] = (
            f"removed by grappler: its arithmetic optimizer moved the narrowing Cast "
            f"{cast.op_name}, its only consumer, before it (stage "
            f"ReorderCastLikeAndValuePreserving) and made a copy of it after that Cast, which "
            f"ran instead; a NO_TENSOR debug op reads no tensor, so nothing else kept its own "
            f"node; {how} (inferred)")
    return found


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
    graph = _CastGraph(ops, dtypes, executed, iterator_specs)
    out: dict[str, str] = {}
    for cast in graph.casts():
        out.update(_moved_before_widening(graph, cast))
    # Then the narrowing Casts, which a widening move does not leave to decide.
    for cast in graph.casts():
        out.update(_moved_narrowing(graph, cast, out, debug_reads))
    return out
