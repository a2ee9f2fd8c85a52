"""Identical ops grappler's common-subexpression elimination merged, on in-memory graphs.

In: hand-made ``OpCreation``s shaped like Keras 2's label chain, which the truth matrix
met on TF 2.13 and 2.21 (``ExpandDims(y, dim)`` and ``ExpandDims_1(y, dim_1)``; the
forward and the gradient ``Shape`` of one tensor), and trace digests. Out: what
``cse.merged_duplicates`` decides.
"""
from __future__ import annotations

from tb_opmode.analyze.cse import merged_duplicates
from tb_opmode.read.tfdbg import OpCreation
from tb_opmode.vocab import REMOVED, UNKNOWN

LABELS = [("y", "IteratorGetNext", ()), ("ExpandDims/dim", "Const", ()),
          ("ExpandDims", "ExpandDims", ("y:0", "ExpandDims/dim:0")),
          ("ExpandDims_1/dim", "Const", ()),
          ("ExpandDims_1", "ExpandDims", ("y:0", "ExpandDims_1/dim:0"))]


def graph(ops: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, OpCreation]:
    return {name: OpCreation(op_type, name, "g", "/cpu:0", 1, (), inputs)
            for name, op_type, inputs in ops}


def digests(**values: int) -> dict[tuple[str, int], int]:
    return {(name.replace("__", "/"), 0): v for name, v in values.items()}


def test_two_expand_dims_by_equal_constants_run_once() -> None:
    seen = digests(ExpandDims__dim=7, ExpandDims_1__dim=7, ExpandDims=9, ExpandDims_1=9)
    got = merged_duplicates(graph(LABELS), seen, True, {"ExpandDims", "ExpandDims_1"}, set())
    assert got["ExpandDims"][0] == REMOVED and "ExpandDims_1" in got["ExpandDims"][1]
    assert got["ExpandDims_1"][0] == "" and "does not record" in got["ExpandDims_1"][1]


def test_constants_of_other_values_or_unknown_values_do_not_merge() -> None:
    other = digests(ExpandDims__dim=7, ExpandDims_1__dim=8, ExpandDims=9, ExpandDims_1=9)
    assert merged_duplicates(graph(LABELS), other, True, {"ExpandDims", "ExpandDims_1"}, set()) == {}
    # Without whole tensors in the traces (SHAPE, NO_TENSOR) a constant's value is not known.
    assert merged_duplicates(graph(LABELS), {}, False, {"ExpandDims", "ExpandDims_1"}, set()) == {}


def test_the_same_op_on_the_same_tensor_merges_without_digests() -> None:
    ops = [("relu", "Relu", ()), ("to_seq/Shape", "Shape", ("relu:0",)),
           ("gradient_tape/to_seq/Shape", "Shape", ("relu:0",))]
    got = merged_duplicates(graph(ops), {}, False, {"to_seq/Shape", "gradient_tape/to_seq/Shape"},
                            set())
    assert got["to_seq/Shape"][0] == REMOVED and got["gradient_tape/to_seq/Shape"][0] == ""
    # Traces that differ show an attribute the dump does not record (out_type): no merge.
    apart = digests(to_seq__Shape=3, gradient_tape__to_seq__Shape=4)
    assert merged_duplicates(graph(ops), apart, False,
                             {"to_seq/Shape", "gradient_tape/to_seq/Shape"}, set()) == {}


def test_a_node_a_profile_saw_is_the_one_kept() -> None:
    ops = [("relu", "Relu", ()), ("a", "Shape", ("relu:0",)), ("b", "Shape", ("relu:0",))]
    got = merged_duplicates(graph(ops), {}, False, {"b"}, {"a"})
    assert got["b"][0] == REMOVED and "reads a" in got["b"][1] and got["a"][0] == ""
    # Both seen: grappler kept both, nothing to decide.
    assert merged_duplicates(graph(ops), {}, False, set(), {"a", "b"}) == {}


# Keras 3's fit casts its labels twice, for the loss and for a metric (TF 2.21's truth
# matrix: grappler ran Cast_2 and removed the loss's Cast, whose debug op read Cast_2).
CASTS = [("y", "IteratorGetNext", ()), ("loss/Cast", "Cast", ("y:1",)), ("Cast_2", "Cast", ("y:1",))]


def test_two_casts_of_one_tensor_merge_where_the_traces_record_the_dtype() -> None:
    ran = {"loss/Cast", "Cast_2"}
    got = merged_duplicates(graph(CASTS), digests(loss__Cast=5, Cast_2=5), False, ran, set())
    assert got["loss/Cast"][0] == REMOVED and got["Cast_2"][0] == ""
    # Other traces: another DstT (or values), so grappler could not merge them.
    assert merged_duplicates(graph(CASTS), digests(loss__Cast=5, Cast_2=6), False, ran, set()) == {}


def test_casts_do_not_merge_where_no_dtype_is_recorded() -> None:
    """CURT/CONCISE_HEALTH and NO_TENSOR record no dtype: a Cast to int32 and one to float32
    of one tensor look alike there, and grappler keeps both."""
    assert merged_duplicates(graph(CASTS), {}, False, {"loss/Cast", "Cast_2"}, set()) == {}


# The same line of Keras 2's compile_utils made both ExpandDims (one for the loss, one for
# the metric); TF 2.13's truth matrix ran ExpandDims and removed ExpandDims_1.
SAME_LINE = {"ExpandDims": "compile_utils.py:696", "ExpandDims_1": "compile_utils.py:696"}


def test_twins_by_constants_not_recorded_count_one_run_and_the_rest_unknown() -> None:
    ran = {"ExpandDims", "ExpandDims_1"}
    got = merged_duplicates(graph(LABELS), {}, False, ran, set(), SAME_LINE)
    assert got["ExpandDims"][0] == UNKNOWN and "ExpandDims_1" in got["ExpandDims"][1]
    assert "same line of code" in got["ExpandDims"][1]
    assert got["ExpandDims_1"][0] == "" and "ExpandDims" in got["ExpandDims_1"][1]
    # The one a log or profile saw is the one counted.
    seen = merged_duplicates(graph(LABELS), {}, False, {"ExpandDims_1"}, {"ExpandDims"}, SAME_LINE)
    assert seen["ExpandDims"][0] == "" and seen["ExpandDims_1"][0] == UNKNOWN


def test_twins_traced_alike_by_shape_are_still_unknown() -> None:
    """A SHAPE or FULL_HEALTH trace records shapes, not the constants' values: dims 1 and
    -1 give one shape (TF 2.13's fit_SHAPE cell, where the log shows ExpandDims removed)."""
    ran = {"ExpandDims", "ExpandDims_1"}
    traced = digests(ExpandDims__dim=5, ExpandDims_1__dim=5, ExpandDims=9, ExpandDims_1=9)
    got = merged_duplicates(graph(LABELS), traced, False, ran, set(), SAME_LINE)
    assert got["ExpandDims"][0] == UNKNOWN and got["ExpandDims_1"][0] == ""


def test_twins_of_other_lines_or_other_traces_are_left_alone() -> None:
    ran = {"ExpandDims", "ExpandDims_1"}
    apart = {"ExpandDims": "compile_utils.py:696", "ExpandDims_1": "train.py:12"}
    assert merged_duplicates(graph(LABELS), {}, False, ran, set(), apart) == {}
    # Traces of other shapes: other results, so not merged.
    traced = digests(ExpandDims=9, ExpandDims_1=10)
    assert merged_duplicates(graph(LABELS), traced, False, ran, set(), SAME_LINE) == {}
    # One traced, the other's trace lost: not known alike, left to the other rules.
    assert merged_duplicates(graph(LABELS), digests(ExpandDims=9), False, ran, set(),
                             SAME_LINE) == {}
    # Both seen run: not merged.
    assert merged_duplicates(graph(LABELS), {}, False, set(), ran, SAME_LINE) == {}


# HuggingFace BERT's query, key and value Dense layers on one input (TF 2.21's truth
# matrix, a FULL_HEALTH dump): each Tensordot transposes and reshapes the input by a
# shape computed from Shape(x) and constants; grappler merged the chains and ran the
# value's Reshape only.
def tensordot(layer: str) -> list[tuple[str, str, tuple[str, ...]]]:
    p = f"{layer}/Tensordot/"
    return [(p + "free", "Const", ()), (p + "axes", "Const", ()),
            (p + "Shape", "Shape", ("x:0",)),
            (p + "GatherV2", "GatherV2", (p + "Shape:0", p + "free:0", p + "axis:0")),
            (p + "axis", "Const", ()), (p + "Const", "Const", ()),
            (p + "Prod", "Prod", (p + "GatherV2:0", p + "Const:0")),
            (p + "stack", "Pack", (p + "Prod:0", p + "Prod:0")),
            (p + "concat", "ConcatV2", (p + "free:0", p + "axes:0", p + "axis:0")),
            (p + "transpose", "Transpose", ("x:0", p + "concat:0")),
            (p + "Reshape", "Reshape", (p + "transpose:0", p + "stack:0"))]


QKV = [("x", "SelectV2", ())] + tensordot("query") + tensordot("key") + tensordot("value")
QKV_RESHAPES = {"query/Tensordot/Reshape", "key/Tensordot/Reshape", "value/Tensordot/Reshape"}


def test_reshapes_by_one_computed_shape_of_one_input_may_be_merged() -> None:
    traced = {(name, 0): 11 for name in QKV_RESHAPES}
    got = merged_duplicates(graph(QKV), traced, False, QKV_RESHAPES, set())
    assert got["value/Tensordot/Reshape"][0] == ""  # the one created last, counted as run
    for name in ("query/Tensordot/Reshape", "key/Tensordot/Reshape"):
        assert got[name][0] == UNKNOWN and "shape arithmetic" in got[name][1]


def test_computed_alike_but_traced_apart_do_not_merge() -> None:
    """Other traces (another shape, other values): another constant somewhere above."""
    traced = {("query/Tensordot/Reshape", 0): 11, ("key/Tensordot/Reshape", 0): 12,
              ("value/Tensordot/Reshape", 0): 13}
    assert merged_duplicates(graph(QKV), traced, False, QKV_RESHAPES, set()) == {}


def test_reshapes_of_other_inputs_do_not_merge() -> None:
    other = [(n, t, tuple(i.replace("x:0", "y:0") for i in ins))
             for n, t, ins in tensordot("key")]
    ops = [("x", "SelectV2", ()), ("y", "SelectV2", ())] + tensordot("query") + other
    ran = {"query/Tensordot/Reshape", "key/Tensordot/Reshape"}
    assert merged_duplicates(graph(ops), {}, False, ran, set()) == {}
