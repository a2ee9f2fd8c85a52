"""What a profile's tf.data iterators tell about a graph's dataset inputs.

In: one dump graph's ops and the element specs the run's profiles recorded
(``Profile.iterator_specs``: the ``types`` and ``shapes`` stats of tf.data's
``Iterator::Root`` events, e.g. ("float int32", "[?,8,8,3] [?]")). Out: for the
graph's get-next ops (``IteratorGetNext`` and its kin, whose outputs are a dataset
element's components) the dtype and static shape of each output, and whether the
dataset's batch dimension is known statically (``batch_dimension``).

A spec is matched to a get-next op by its number of components, and used only where
every spec of that many components is the same: two datasets of one arity but other
specs could feed either op, and the profile does not say which fed which.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..read.tfdbg import OpCreation

__all__ = ["Element", "elements", "batch_dimension", "dtype_enum"]

# Ops whose outputs are a dataset's next element, one per component.
_GET_NEXT = frozenset(("IteratorGetNext", "IteratorGetNextSync", "OptionalGetValue",
                       "MultiDeviceIteratorGetNextFromShard"))


class Element(NamedTuple):
    """The components a get-next op yields, as a profile's iterator recorded them."""

    dtypes: tuple[str, ...]
    """DataType enum names (``DT_FLOAT``), one per output"""
    shapes: tuple[str, ...]
    """Static shapes as TF writes them (``[?,8,8,3]``, ``[]``), one per output"""
    spec: str
    """The shapes as written, for notes"""


def dtype_enum(name: str) -> str:
    """DataTypeString ("float", "int64", "bfloat16") -> the DataType enum name (DT_FLOAT)."""
    return "DT_" + name.upper()


def elements(ops: dict[str, OpCreation], specs: Sequence[tuple[str, str]]) -> dict[str, Element]:
    """Get-next op name -> its ``Element``, for the ops of one graph a spec matches."""
    out: dict[str, Element] = {}
    for op in ops.values():
        if op.op_type not in _GET_NEXT or op.num_outputs <= 0:
            continue
        named = {spec for spec in specs
                 if len(spec[0].split()) == op.num_outputs == len(spec[1].split())}
        if len(named) != 1:
            continue
        types, shapes = named.pop()
        out[op.op_name] = Element(tuple(dtype_enum(t) for t in types.split()),
                                  tuple(shapes.split()), shapes)
    return out


def _batch_kind(shapes: list[str]) -> str:
    """The batch dimension the shapes of a dataset's elements tell: "dynamic", "static" or ""."""
    firsts = [shape.strip("[]").split(",")[0] for shape in shapes if shape not in ("[]", "")]
    if not firsts or any(not shape.startswith("[") for shape in shapes):
        return ""  # only scalars, or a shape of unknown rank
    if all(first == "?" for first in firsts):
        return "dynamic"
    if not any("?" in shape for shape in shapes):
        return "static"
    return ""


def batch_dimension(ops: dict[str, OpCreation],
                    specs: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """("dynamic" | "static" | "", the shapes that tell it) for one graph's dataset input:
    dynamic where every component of rank 1 or more of every matched element has an
    unknown first dimension (a batch without ``drop_remainder``), static where no
    dimension of any is unknown, "" where the graph reads no matched element or they
    say neither."""
    found = list(elements(ops, specs).values())
    if not found:
        return "", ""
    spec = "; ".join(sorted({element.spec for element in found}))
    return _batch_kind([shape for element in found for shape in element.shapes]), spec
