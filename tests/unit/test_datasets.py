"""A profile's tf.data element specs matched to a graph's get-next ops.

In: hand-made ``OpCreation``s and specs as TF 2.13 and 2.21 write them in the
``types``/``shapes`` stats of ``Iterator::Root`` events (read from real profiles by
``tests/test_dump_rules.py``). Out: ``datasets.elements`` and
``datasets.batch_dimension``.
"""
from __future__ import annotations

from tb_opmode.analyze.datasets import batch_dimension, elements
from tb_opmode.read.tfdbg import OpCreation


def ops(*arities: int) -> dict[str, OpCreation]:
    return {f"IteratorGetNext_{i}": OpCreation("IteratorGetNext", f"IteratorGetNext_{i}", "g",
                                               "/cpu:0", n, (), ("it:0",))
            for i, n in enumerate(arities)}


def test_an_element_gives_each_output_its_dtype_and_shape() -> None:
    got = elements(ops(2), [("float int32", "[?,8,8,3] [?]")])
    assert got["IteratorGetNext_0"].dtypes == ("DT_FLOAT", "DT_INT32")
    assert got["IteratorGetNext_0"].shapes == ("[?,8,8,3]", "[?]")


def test_specs_are_matched_by_arity_and_only_where_they_agree() -> None:
    specs = [("float int32", "[?,8] [?]"), ("float int64", "[?,8] [?]"), ("int32", "[?]")]
    got = elements(ops(2, 1), specs)
    assert set(got) == {"IteratorGetNext_1"}  # two specs of two components: either fed it
    assert got["IteratorGetNext_1"].dtypes == ("DT_INT32",)


def test_the_batch_dimension_is_dynamic_static_or_untold() -> None:
    assert batch_dimension(ops(2), [("float int32", "[?,8,8,3] [?]")]) == (
        "dynamic", "[?,8,8,3] [?]")
    assert batch_dimension(ops(2), [("float int32", "[4,8,8,3] [4]")])[0] == "static"
    # A ragged middle dimension with a static batch says neither.
    assert batch_dimension(ops(2), [("float int32", "[4,?,3] [4]")])[0] == ""
    assert batch_dimension(ops(2), [("float int32", "<unknown> [4]")])[0] == ""
    assert batch_dimension(ops(1), [("float int32", "[?,8] [?]")]) == ("", "")
    # Scalars only (an unbatched dataset of scalars): nothing to tell.
    assert batch_dimension(ops(2), [("float int32", "[] []")])[0] == ""
