"""Reshapes grappler bypasses where tfdbg's debug ops read no tensor (NO_TENSOR), on
in-memory graphs.

In: hand-made ``OpCreation``s of one graph (Keras 3's conv bias gradient
``BiasAddGrad -> Reshape -> Reshape_1``), in a NO_TENSOR dump or another mode. Out:
what ``reshape_bypass.bypassed_reshapes`` and ``kernels.assign_graph`` report. The
matrix (``tests/matrix``) holds the rule to TF's own log on TF 2.13, 2.17 and 2.21.
"""
from __future__ import annotations

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import REMOVED, UNKNOWN, assign_graph
from tb_opmode.analyze.reshape_bypass import bypassed_reshapes
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
    for name in ("grad", "Reshape", "Reshape_1"):
        dump.traces[(GRAPH, name, 0)] = 4
        dump.trace_dtypes[(GRAPH, name, 0)] = "?" if mode == 1 else "DT_FLOAT"
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
