"""Reshapes grappler bypasses where tfdbg's debug ops read no tensor (NO_TENSOR), on
in-memory graphs.

In: hand-made ``OpCreation``s of one graph (Keras 3's conv bias gradient
``BiasAddGrad -> Reshape -> Reshape_1``), in a NO_TENSOR dump or another mode. Out:
what ``no_tensor.bypassed_reshapes`` and ``kernels.assign_graph`` report. The
matrix (``tests/matrix``) holds the rule to TF's own log on TF 2.13, 2.17 and 2.21.
"""
from __future__ import annotations

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import REMOVED, UNKNOWN, assign_graph
from tb_opmode.analyze.no_tensor import bypassed_reshapes, pruned_dead_ops
from tb_opmode.read.tfdbg import DumpSet, GraphInfo, OpCreation

GRAPH = "g1"
BIAS_GRADIENT = [
    ("grad", "BiasAddGrad", ("relu_grad:0",)), ("Shape", "Const", ()), ("Shape_1", "Const", ()),
    ("Reshape", "Reshape", ("grad:0", "Shape:0")), ("Reshape_1", "Reshape", ("Reshape:0", "Shape_1:0")),
    ("IdentityN", "IdentityN", ("Reshape_1:0",))]


def graph(ops: list[tuple[str, str, tuple[str, ...]]]) -> dict[str, OpCreation]:
    return {name: OpCreation(op_type, name, GRAPH, "/cpu:0", 1, (), inputs)
            for name, op_type, inputs in ops}


def summary(ops: list[tuple[str, str, tuple[str, ...]]], mode: int) -> dict[str, str]:
    dump = DumpSet(directory="/run", prefix="tfdbg_events.1.host", host="host",
                   tensorflow_version="2.21.0")
    info = GraphInfo(GRAPH, name="one_step_on_data")
    info.ops = graph(ops)
    dump.graphs = {GRAPH: info}
    dump.tensor_debug_modes[mode] = 1
    for k, name in enumerate(("grad", "Reshape", "Reshape_1", "Shape_2")):
        dump.traces[(GRAPH, name, 0)] = 4
        dump.trace_dtypes[(GRAPH, name, 0)] = "?" if mode == 1 else "DT_FLOAT"
        if mode != 1:  # the digest of each first trace, as other modes record (all differ)
            dump.trace_digests[(GRAPH, name, 0)] = 0x1000 + k
    model = RunModel(run=".", directory="/run", tensorflow_version="2.21.0", onednn_enabled=True)
    model.dumps = [dump]
    return {op.op_name: op.kernel for op in assign_graph(model)}


def test_a_reshape_read_only_by_a_reshape_is_bypassed_and_the_outer_one_is_unknown() -> None:
    got = bypassed_reshapes(graph(BIAS_GRADIENT))
    assert got["Reshape"][0] == REMOVED
    assert got["Reshape_1"][0] == UNKNOWN and "FULL_HEALTH or SHAPE" in got["Reshape_1"][1]
    assert set(got) == {"Reshape", "Reshape_1"}


def test_a_reshape_with_a_second_consumer_stays() -> None:
    ops = BIAS_GRADIENT + [("Sum", "Sum", ("Reshape:0", "axes:0"))]
    assert bypassed_reshapes(graph(ops)) == {}


def test_a_chain_of_three_loses_the_first_two() -> None:
    ops = BIAS_GRADIENT[:-1] + [("Reshape_2", "Reshape", ("Reshape_1:0", "Shape:0")),
                                ("IdentityN", "IdentityN", ("Reshape_2:0",))]
    got = bypassed_reshapes(graph(ops))
    assert got["Reshape"][0] == got["Reshape_1"][0] == REMOVED and got["Reshape_2"][0] == UNKNOWN


def test_only_a_no_tensor_dump_is_decided_so() -> None:
    """In every other mode the debug op reads the inner Reshape: no bypass."""
    no_tensor = summary(BIAS_GRADIENT, 1)
    assert no_tensor["Reshape"] == REMOVED and no_tensor["Reshape_1"] == UNKNOWN
    full_health = summary(BIAS_GRADIENT, 4)
    assert full_health["Reshape"] == "Reshape" and full_health["Reshape_1"] == "Reshape"


# Keras 3's loss: the batch size read off a Shape that nothing keeps (its Cast_2 user and
# the function's output Identity).
DEAD = [("Cast_2", "Cast", ("y:0",)), ("Shape_2", "Shape", ("Cast_2:0",)),
        ("stack", "Const", ()), ("strided_slice_1", "StridedSlice", ("Shape_2:0", "stack:0")),
        ("loss", "Mean", ("Cast_2:0", "axes:0")), ("Identity", "Identity", ("loss:0",))]


def test_ops_nothing_kept_reads_are_pruned_with_their_only_inputs() -> None:
    got = pruned_dead_ops(graph(DEAD))
    assert set(got) == {"Shape_2", "stack", "strided_slice_1"}
    assert all(kernel == REMOVED for kernel, _note in got.values())


def test_an_op_read_by_a_kept_op_or_by_a_control_edge_stays() -> None:
    """The function's output Identity is kept, and so is what it reads; a control edge
    keeps its source as a data edge does."""
    ops = DEAD + [("print", "PrintV2", ("^strided_slice_1",))]
    assert set(pruned_dead_ops(graph(ops))) == set()
    assert "Identity" not in pruned_dead_ops(graph(DEAD)) and "loss" not in pruned_dead_ops(graph(DEAD))


def test_a_dead_op_of_a_full_health_dump_ran_for_its_debug_op() -> None:
    ops = DEAD[:4] + [("Reshape", "Reshape", ("Cast_2:0", "Shape_2:0")), ("Identity", "Identity", ("Reshape:0",))]
    dead = [("Cast_2", "Cast", ("y:0",)), ("Shape_2", "Shape", ("Cast_2:0",)),
            ("Identity", "Identity", ("Cast_2:0",))]
    assert summary(dead, 1)["Shape_2"] == REMOVED
    assert summary(dead, 4)["Shape_2"] == "Shape"
    assert summary(ops, 1)["Shape_2"] != REMOVED  # read by a Reshape that is kept


def test_a_shape_n_whose_live_reader_reads_a_variables_shape_is_pruned() -> None:
    # Keras' conv gradient: ShapeN of (input, kernel). The filter gradient reads the
    # kernel's shape, which grappler makes a constant (variables have static shapes);
    # the input gradient of a first layer is dead. So nothing keeps the ShapeN.
    ops = [("x", "IteratorGetNext", ()), ("w", "ReadVariableOp", ("v:0",)),
           ("dy", "ReluGrad", ("g:0", "x:0")),
           ("ShapeN", "ShapeN", ("x:0", "w:0")),
           ("Conv2DBackpropInput", "Conv2DBackpropInput", ("ShapeN:0", "w:0", "dy:0")),
           ("Conv2DBackpropFilter", "Conv2DBackpropFilter", ("x:0", "ShapeN:1", "dy:0")),
           ("Assign", "AssignSubVariableOp", ("v:0", "Conv2DBackpropFilter:0"))]
    dead = pruned_dead_ops(graph(ops))
    assert {"ShapeN", "Conv2DBackpropInput"} <= set(dead)
    # The input gradient read: ShapeN:0 (the activation's shape) keeps it alive.
    live = ops + [("Add", "AddV2", ("Conv2DBackpropInput:0", "x:0")),
                  ("Assign_2", "AssignSubVariableOp", ("u:0", "Add:0"))]
    assert "ShapeN" not in pruned_dead_ops(graph(live))
