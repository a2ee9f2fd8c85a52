"""Ops grappler's ReorderCastLikeAndValuePreserving stage moved across a Cast, on
in-memory graphs.

In: hand-made ``OpCreation``s of one graph, the dtypes their traces record, and the
node names a profile saw. Out: the ops ``cast_reorder.reordered_across_casts`` calls
removed, and what ``kernels.assign_graph`` then reports. The graphs are the ones TF
2.13/2.17/2.21 build (Keras 2's accuracy label chain, Keras 3's conv bias, mixed
precision casts); the matrix (``tests/matrix``) holds the rule to TF's own log.
"""
from __future__ import annotations

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.cast_reorder import reordered_across_casts
from tb_opmode.analyze.kernels import REMOVED, assign_graph
from tb_opmode.read.tfdbg import DumpSet, GraphInfo, OpCreation

GRAPH = "g1"


def graph(ops: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, OpCreation]:
    return {name: OpCreation(op_type, name, GRAPH, "/cpu:0", 1, (), inputs)
            for name, op_type, inputs in ops}


# Keras 2's sparse_categorical_matches: Cast(Equal) reshaped to the labels' [batch, 1]
# shape, then squeezed back by the metric's update.
LABEL_CHAIN = [
    ("Equal", "Equal", ("a:0", "b:0")), ("Cast_3", "Cast", ("Equal:0",)),
    ("Shape_1", "Shape", ("y:0",)), ("Reshape", "Reshape", ("Cast_3:0", "Shape_1:0")),
    ("Squeeze_1", "Squeeze", ("Reshape:0",)), ("Sum_2", "Sum", ("Squeeze_1:0", "c:0"))]
FLOATS = {("Cast_3", 0): "DT_FLOAT", ("Reshape", 0): "DT_FLOAT", ("Squeeze_1", 0): "DT_FLOAT"}


def test_a_widening_cast_loses_its_chain_of_value_preserving_consumers() -> None:
    got = reordered_across_casts(graph(LABEL_CHAIN), FLOATS, ())
    assert set(got) == {"Reshape", "Squeeze_1"}  # the Cast itself still runs for its debug op
    assert "Cast_3" in got["Reshape"]
    assert "DT_BOOL to DT_FLOAT" in got["Reshape"]


def test_some_float_is_wider_than_bool() -> None:
    """CURT/CONCISE_HEALTH record only that a tensor is of some float type."""
    floats = {key: "float" for key in FLOATS}
    assert set(reordered_across_casts(graph(LABEL_CHAIN), floats, ())) == {"Reshape", "Squeeze_1"}


def test_a_cast_between_types_of_one_size_moves_nothing() -> None:
    """Keras 2's Cast_1 (labels int32 -> float32) before a Squeeze: the Squeeze ran."""
    ops = graph([("ExpandDims_1", "ExpandDims", ("y:0", "d:0")),
                 ("Cast_1", "Cast", ("ExpandDims_1:0",)), ("Squeeze", "Squeeze", ("Cast_1:0",))])
    dtypes = {("ExpandDims_1", 0): "DT_INT32", ("Cast_1", 0): "DT_FLOAT",
              ("Squeeze", 0): "DT_FLOAT"}
    assert reordered_across_casts(ops, dtypes, ()) == {}


def test_value_preserving_ops_without_a_cast_stay() -> None:
    """Keras 3's conv bias: ReadVariableOp -> Reshape -> Squeeze runs."""
    ops = graph([("v", "ReadVariableOp", ("h:0",)), ("Reshape", "Reshape", ("v:0", "s:0")),
                 ("Squeeze", "Squeeze", ("Reshape:0",))])
    dtypes = {(n, 0): "DT_FLOAT" for n in ("v", "Reshape", "Squeeze")}
    assert reordered_across_casts(ops, dtypes, ()) == {}


def test_a_narrowing_cast_before_a_value_preserving_op_moves_nothing() -> None:
    """mixed_bfloat16 on Keras 3: float32 bias cast to bfloat16, then reshaped: ran."""
    ops = graph([("v", "ReadVariableOp", ("h:0",)), ("Cast", "Cast", ("v:0",)),
                 ("Reshape", "Reshape", ("Cast:0", "s:0"))])
    dtypes = {("v", 0): "DT_FLOAT", ("Cast", 0): "DT_BFLOAT16", ("Reshape", 0): "DT_BFLOAT16"}
    assert reordered_across_casts(ops, dtypes, ()) == {}


def test_a_narrowing_cast_after_a_value_preserving_op_is_moved_before_it() -> None:
    """mixed precision on Keras 2: the float32 loss gradient, reshaped, cast to bfloat16."""
    ops = graph([("g", "Mul", ("a:0", "b:0")), ("Reshape", "Reshape", ("g:0", "s:0")),
                 ("Cast", "Cast", ("Reshape:0",)), ("BiasAddGrad", "BiasAddGrad", ("Cast:0",))])
    narrowing = {("Reshape", 0): "DT_FLOAT", ("Cast", 0): "DT_BFLOAT16"}
    assert set(reordered_across_casts(ops, narrowing, ())) == {"Cast"}
    widening = {("Reshape", 0): "DT_BFLOAT16", ("Cast", 0): "DT_FLOAT"}
    assert reordered_across_casts(ops, widening, ()) == {}


def test_a_cast_with_two_value_preserving_consumers_is_not_decided() -> None:
    """The stage names the new Cast after the old one: only the first consumer grappler
    visits is moved, and the dump does not say which."""
    ops = graph(LABEL_CHAIN + [("Reshape_9", "Reshape", ("Cast_3:0", "Shape_1:0"))])
    assert reordered_across_casts(ops, {**FLOATS, ("Reshape_9", 0): "DT_FLOAT"}, ()) == {}


def test_without_dtypes_the_profiled_cast_counts_the_moves() -> None:
    """NO_TENSOR records no dtype; the profile shows the Casts grappler made, nested once
    per op moved (the first one is gone when no debug op reads it)."""
    twice = ["ArithmeticOptimizer/ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_float_"
             "ReorderCastLikeAndValuePreserving_float_Cast_3"]
    assert set(reordered_across_casts(graph(LABEL_CHAIN), {}, twice)) == {"Reshape", "Squeeze_1"}
    once = ["ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_float_Cast_3"]
    assert set(reordered_across_casts(graph(LABEL_CHAIN), {}, once)) == {"Reshape"}
    assert reordered_across_casts(graph(LABEL_CHAIN), {}, ()) == {}


def test_a_profiled_cast_reading_a_value_preserving_op_is_ambiguous_without_dtypes() -> None:
    """A narrowing Cast moved before its input gets a node of that very name: with no
    dtype the name does not tell which way the Cast went."""
    ops = graph([("ExpandDims", "ExpandDims", ("y:0", "d:0")),
                 ("scce/Cast", "Cast", ("ExpandDims:0",)),
                 ("scce/Reshape", "Reshape", ("scce/Cast:0", "s:0"))])
    seen = ["scce/ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_int64_Cast"]
    assert reordered_across_casts(ops, {}, seen) == {}
    widening = {("ExpandDims", 0): "DT_INT32", ("scce/Cast", 0): "DT_INT64"}
    assert set(reordered_across_casts(ops, widening, seen)) == {"scce/Reshape"}


def test_the_summary_reports_the_moved_reshape_removed() -> None:
    dump = DumpSet(directory="/run", prefix="tfdbg_events.1.host", host="host",
                   tensorflow_version="2.13.1")
    info = GraphInfo(GRAPH, name="train_function")
    info.ops = graph(LABEL_CHAIN)
    dump.graphs = {GRAPH: info}
    for k, name in enumerate(("Cast_3", "Reshape", "Squeeze_1")):
        dump.traces[(GRAPH, name, 0)] = 4
        dump.trace_dtypes[(GRAPH, name, 0)] = "DT_FLOAT"
        dump.trace_digests[(GRAPH, name, 0)] = 0x1000 + k  # recorded, as FULL_HEALTH does
    model = RunModel(run=".", directory="/run", tensorflow_version="2.13.1", onednn_enabled=True)
    model.dumps = [dump]
    got = {op.op_name: op for op in assign_graph(model)}
    assert got["Reshape"].kernel == REMOVED and got["Squeeze_1"].kernel == REMOVED
    assert "ReorderCastLikeAndValuePreserving" in got["Reshape"].note
    assert got["Cast_3"].kernel == "Cast"


def test_a_value_preserving_op_on_another_device_stays() -> None:
    """The stage moves an op only onto its Cast's device (MirroredStrategy replicas)."""
    ops = graph(LABEL_CHAIN)
    ops["Reshape"] = OpCreation("Reshape", "Reshape", GRAPH, "/cpu:1", 1, (), ops["Reshape"].inputs)
    assert reordered_across_casts(ops, FLOATS, ()) == {}


# Keras 2's sparse categorical cross-entropy on labels from a dataset: ExpandDims(labels)
# -> Cast(int64) -> Reshape([-1]), NO_TENSOR (every trace dtype "?").
LABELS = [("IteratorGetNext", "IteratorGetNext", ("iterator:0",)),
          ("ExpandDims", "ExpandDims", ("IteratorGetNext:1", "d:0")),
          ("scc/Cast", "Cast", ("ExpandDims:0",)), ("scc/Reshape", "Reshape", ("scc/Cast:0", "s:0")),
          ("ce", "SparseSoftmaxCrossEntropyWithLogits", ("logits:0", "scc/Reshape:0"))]
NEW_CAST = ["scc/ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_int64_Cast"]


def labels_graph() -> dict[str, OpCreation]:
    ops = graph(LABELS)
    ops["IteratorGetNext"] = ops["IteratorGetNext"]._replace(num_outputs=2)
    return ops


def test_the_datasets_types_tell_a_widening_cast_from_its_new_name() -> None:
    unknown = {(name, 0): "?" for name, _t, _i in LABELS}
    got = reordered_across_casts(labels_graph(), unknown, NEW_CAST,
                                 [("float int32", "[?,8] [?]")], debug_reads=False)
    assert set(got) == {"scc/Reshape"}
    assert "DT_INT64, not with its input's type DT_INT32" in got["scc/Reshape"]
    # The name alone fits a narrowing Cast moved before the ExpandDims as well.
    assert reordered_across_casts(labels_graph(), unknown, NEW_CAST, (), debug_reads=False) == {}


def test_a_name_with_the_source_type_is_a_narrowing_move() -> None:
    """int64 labels: the name's type is the source's, so the Cast moved before the
    ExpandDims; the ExpandDims' own node is idle only where no debug op reads it."""
    got = reordered_across_casts(labels_graph(), {}, NEW_CAST, [("float int64", "[?,8] [?]")],
                                 debug_reads=False)
    assert set(got) == {"scc/Cast", "ExpandDims"}
    kept = reordered_across_casts(labels_graph(), {}, NEW_CAST, [("float int64", "[?,8] [?]")])
    assert set(kept) == {"scc/Cast"}


def test_datasets_of_other_types_tell_nothing() -> None:
    """Two iterators with as many components but other types: either could feed it."""
    specs = [("float int32", "[?,8] [?]"), ("float int64", "[?,8] [?]")]
    assert reordered_across_casts(labels_graph(), {}, NEW_CAST, specs, debug_reads=False) == {}
    # One of another arity does not count.
    specs = [("float int32", "[?,8] [?]"), ("float int64 int64", "[?,8] [?] [?]")]
    assert set(reordered_across_casts(labels_graph(), {}, NEW_CAST, specs)) == {"scc/Reshape"}
