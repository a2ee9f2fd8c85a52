"""What a profile window and a dump's creation stacks tell, on in-memory runs.

In: hand-made dump graphs (``OpCreation``s, trace dtypes, stack frames) and profiles
(``Profile.graph_ops`` as the XPlane reader gives them: node name, kernel, start,
duration). Out: the run's oneDNN verdict (``detect_onednn``), what graph nodes say of
its CPU (``cpu_from_kernels``) and the kernels ``assign_graph``/``assign_eager`` give.
The shapes follow what the truth matrix (``tests/matrix``) met in real runs: the tf.data
map cell (a captured tensor, a MatMul grappler renamed) and the mixed_float16 cell (a
profile with float16 MatMuls only, on a CPU without AVX512_FP16).
"""
from __future__ import annotations

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import (
    REMOVED,
    UNKNOWN,
    assign_eager,
    assign_graph,
    cpu_from_kernels,
    detect_onednn,
)
from tb_opmode.analyze.nodes import origin_name
from tb_opmode.model import OpKernel
from tb_opmode.present.tab import cpu_facts
from tb_opmode.read.tfdbg import DumpSet, GraphInfo, OpCreation, health_digest
from tb_opmode.read.xtypes import Profile
from tests.unit.test_removed_forwarders import FULL_HEALTH, health

GRAPH = "g1"


def run(graph_name: str, ops: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]],
        dtypes: dict[str, str], profile: list[tuple[str, str]] | None = None,
        frames: dict[str, str] | None = None, eager: dict[tuple[str, str], int] | None = None,
        onednn: bool | None = True, shapes: dict[str, tuple[int, int]] | None = None) -> RunModel:
    """ops: (name, type, inputs, stack frame ids); dtypes: traced op -> dtype;
    profile: (node, kernel) events; frames: frame id -> function name; shapes: traced op
    -> (rank, size) of its FULL_HEALTH trace."""
    dump = DumpSet(directory="/run", prefix="tfdbg_events.1.host", host="host",
                   tensorflow_version="2.21.0")
    graph = GraphInfo(GRAPH, name=graph_name)
    for name, op_type, inputs, stack in ops:
        graph.ops[name] = OpCreation(op_type, name, GRAPH, "/cpu:0", 1, stack, inputs)
    dump.graphs = {GRAPH: graph}
    dump.stack_frames = {fid: (0, 1, func) for fid, func in (frames or {}).items()}
    for name, dtype in dtypes.items():
        dump.traces[(GRAPH, name, 0)] = 2
        dump.trace_dtypes[(GRAPH, name, 0)] = dtype
    for k, (name, (rank, size)) in enumerate((shapes or {}).items()):
        dump.trace_digests[(GRAPH, name, 0)] = health_digest(health(rank, size, tensor_id=k + 1),
                                                             FULL_HEALTH)
    dump.execution_dtypes.update(eager or {})
    model = RunModel(run=".", directory="/run", tensorflow_version="2.21.0", onednn_enabled=onednn)
    model.dumps = [dump]
    if profile is not None:
        model.profiles = [Profile(path="/run/p.xplane.pb", host="host", time_source="profile_start_time",
                                  graph_ops=[(node, kernel, 10 * k, 5) for k, (node, kernel)
                                             in enumerate(profile)])]
    return model


def test_a_node_grappler_renamed_is_its_ops() -> None:
    assert origin_name("a/ArithmeticOptimizer/FoldTransposeIntoMatMul_MatMul") == "a/MatMul"
    assert origin_name("ArithmeticOptimizer/FoldTransposeIntoMatMul_MatMul") == "MatMul"
    assert origin_name("a/MatMul") == "a/MatMul"
    model = run("Dataset_map_prep",
                [("x", "Placeholder", (), ()), ("transpose", "Transpose", ("x:0",), ()),
                 ("MatMul", "MatMul", ("transpose:0", "x:0"), ())],
                {"transpose": "DT_FLOAT", "MatMul": "DT_FLOAT"},
                profile=[("ArithmeticOptimizer/FoldTransposeIntoMatMul_MatMul", "_MklMatMul"),
                         ("MatMul/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
                         ("transpose/DebugNumericSummaryV2", "DebugNumericSummaryV2")])
    got = {op.op_name: (op.kernel, op.evidence) for op in assign_graph(model)}
    assert got["MatMul"] == ("_MklMatMul", "profile")
    assert got["transpose"][0] == REMOVED  # folded into the MatMul: no event of its own


def test_a_tensor_a_tfdata_function_captured_is_fed_as_an_argument() -> None:
    ops = [("MatMul/b", "Const", (), ("f1", "f2")), ("mul/y", "Const", (), ("f3",)),
           ("x", "Placeholder", (), ()), ("MatMul", "MatMul", ("x:0", "MatMul/b:0"), ()),
           ("mul", "Mul", ("MatMul:0", "mul/y:0"), ())]
    frames = {"f1": "user_fn", "f2": "_capture_as_const", "f3": "constant"}
    traced = {"MatMul/b": "DT_FLOAT", "mul/y": "DT_FLOAT"}
    got = {op.op_name: op for op in assign_graph(run("Dataset_map_prep", ops, traced, frames=frames))}
    assert got["MatMul/b"].kernel == REMOVED and "_Arg" in got["MatMul/b"].note
    assert got["mul/y"].kernel == "Const"
    # Outside tf.data a captured constant is the graph's own Const.
    got = {op.op_name: op for op in assign_graph(run("train_step", ops, traced, frames=frames))}
    assert got["MatMul/b"].kernel == "Const"


def test_stock_float16_kernels_in_a_profile_do_not_mean_onednn_off() -> None:
    ops = [("x", "Placeholder", (), ()), ("MatMul", "MatMul", ("x:0", "x:0"), ())]
    profile = [("MatMul", "MatMul")]
    half = run("train_step", ops, {"MatMul": "DT_HALF"}, profile=profile, onednn=None)
    assert detect_onednn(half) == (None, "")
    single = run("train_step", ops, {"MatMul": "DT_FLOAT"}, profile=profile, onednn=None)
    verdict, why = detect_onednn(single)
    assert verdict is False and "MatMul" in why
    # With no dump, a profile's kernel is taken as float32.
    single.dumps = []
    assert detect_onednn(single)[0] is False
    mkl = run("train_step", ops, {"MatMul": "DT_HALF"}, profile=[("MatMul", "_MklMatMul")], onednn=None)
    assert detect_onednn(mkl)[0] is True


def test_a_float16_graph_kernel_tells_the_cpu_and_so_the_eager_kernels() -> None:
    ops = [("x", "Placeholder", (), ()), ("MatMul", "MatMul", ("x:0", "x:0"), ())]
    eager = {("Softmax", "DT_HALF"): 3, ("MatMul", "DT_FLOAT"): 2}
    for kernel, has in (("MatMul", False), ("_MklMatMul", True)):
        model = run("train_step", ops, {"MatMul": "DT_HALF"}, profile=[("MatMul", kernel)], eager=eager)
        graph_ops = assign_graph(model)
        seen = cpu_from_kernels(model, graph_ops)
        assert seen["AVX512_FP16"][0] is has and "profile" in seen["AVX512_FP16"][1]
        got = {(e.op_type, e.dtype): e for e in assign_eager(model, graph_ops)}
        softmax = got[("Softmax", "DT_HALF")]
        assert softmax.kernel == ("_MklSoftmax" if has else "Softmax"), softmax.note
        assert "AVX512_FP16" in softmax.note
        assert got[("MatMul", "DT_FLOAT")].kernel == "_MklMatMul"
    # Nothing seen: the answer hangs on the CPU and says so.
    model = run("train_step", ops, {"MatMul": "DT_FLOAT"}, profile=[("MatMul", "_MklMatMul")], eager=eager)
    got = {(e.op_type, e.dtype): e for e in assign_eager(model, assign_graph(model))}
    assert got[("Softmax", "DT_HALF")].kernel == UNKNOWN
    # oneDNN off: stock kernels say nothing of the CPU.
    off = run("train_step", ops, {"MatMul": "DT_HALF"}, profile=[("MatMul", "MatMul")], onednn=False)
    assert cpu_from_kernels(off, assign_graph(off)) == {}


def _gradient(sum_event: bool, sum_shape: tuple[int, int]) -> dict[str, tuple[str, str]]:
    """``Reshape(Sum(g, BroadcastGradientArgs), Shape(x))`` with g of shape rank 3, size
    24; the Reshape forwards the Sum's tensor. The profile saw the step (g's summary)."""
    ops = [("g", "Mul", (), ()), ("x", "Placeholder", (), ()), ("args", "BroadcastGradientArgs", (), ()),
           ("Sum", "Sum", ("g:0", "args:0"), ()), ("Shape", "Shape", ("x:0",), ()),
           ("Reshape", "Reshape", ("Sum:0", "Shape:0"), ())]
    profile = [("g", "_MklMul"), ("g/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
               ("Sum/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
               ("Reshape/DebugNumericSummaryV2", "DebugNumericSummaryV2")]
    if sum_event:
        profile.append(("Sum", "Sum"))
    model = run("train_step", ops, {"g": "DT_FLOAT", "Sum": "DT_FLOAT", "Reshape": "DT_FLOAT"},
                profile=profile, shapes={"g": (3, 24), "Sum": sum_shape, "Reshape": sum_shape})
    return {op.op_name: (op.kernel, op.note) for op in assign_graph(model)}


def test_a_gradient_reshape_goes_the_way_of_its_sum() -> None:
    got = _gradient(sum_event=False, sum_shape=(3, 24))  # grappler proved the axes empty
    assert got["Sum"][0] == REMOVED and got["Reshape"][0] == REMOVED, got
    got = _gradient(sum_event=True, sum_shape=(3, 24))  # ran, summing over nothing
    assert got["Sum"][0] == "Sum" and got["Reshape"][0] == "Reshape", got
    got = _gradient(sum_event=True, sum_shape=(3, 8))  # reduced, keeping its rank
    assert got["Reshape"][0] == REMOVED and "kept its rank" in got["Reshape"][1], got
    got = _gradient(sum_event=True, sum_shape=(2, 8))  # reduced the rank: not decided here
    assert got["Reshape"][0] != REMOVED or "kept its rank" not in got["Reshape"][1], got


def test_the_tab_names_what_the_profile_showed_of_the_cpu() -> None:
    ops = [("x", "Placeholder", (), ()), ("MatMul", "MatMul", ("x:0", "x:0"), ())]
    for kernel, word in (("MatMul", "no AVX512_FP16"), ("_MklMatMul", "has AVX512_FP16")):
        model = run("train_step", ops, {"MatMul": "DT_HALF"}, profile=[("MatMul", kernel)])
        model.graph_ops = assign_graph(model)
        note = cpu_facts(model)["note"]
        assert note.startswith("unknown: ") and f"{word}: its graph MatMul (DT_HALF) ran" in note
        assert "cpu_feature_guard" in note  # still says how to know them all
    model = run("train_step", ops, {"MatMul": "DT_FLOAT"}, profile=[("MatMul", "_MklMatMul")])
    model.graph_ops = assign_graph(model)
    assert "AVX512" not in cpu_facts(model)["note"].split("; keep")[0]


def test_a_gradient_reshape_goes_with_its_removed_sum_where_the_dump_has_no_digests() -> None:
    # Keras 2's loss gradient in a CURT/CONCISE_HEALTH dump (no digest tells a Reshape
    # that forwarded its input): Reshape(Sum(g, BroadcastGradientArgs), Const) -> Tile.
    ops = [("g", "Mul", (), ()), ("s", "Const", (), ()), ("bga", "BroadcastGradientArgs", ("s:0", "s:0"), ()),
           ("value/Sum", "Sum", ("g:0", "bga:0"), ()), ("value/Shape", "Const", (), ()),
           ("value/Reshape", "Reshape", ("value/Sum:0", "value/Shape:0"), ()),
           ("Tile", "Tile", ("value/Reshape:0", "s:0"), ())]
    dtypes = {name: "DT_FLOAT" for name in ("g", "value/Sum", "value/Reshape", "Tile")}
    seen = [("value/Sum/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
            ("value/Reshape/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
            ("g", "Mul"), ("Tile", "Tile")]
    got = {op.op_name: op for op in assign_graph(run("train_function", ops, dtypes, profile=seen))}
    assert got["value/Sum"].kernel == REMOVED
    assert got["value/Reshape"].kernel == REMOVED and "value/Sum" in got["value/Reshape"].note
    # The Sum ran: nothing says the Reshape did not.
    ran = seen + [("value/Sum", "Sum")]
    got = {op.op_name: op for op in assign_graph(run("train_function", ops, dtypes, profile=ran))}
    assert got["value/Sum"].kernel == "Sum" and got["value/Reshape"].kernel == "Reshape"


def test_x_times_one_in_a_loop_body_runs_as_an_identity_where_it_has_three_readers() -> None:
    # Keras 2's weighted loss under steps_per_execution: Mul(losses, Const) in while_body.
    def body(readers: list[tuple[str, str]], profiled: bool = True) -> OpKernel:
        ops = [("x", "SparseSoftmaxCrossEntropyWithLogits", (), ()), ("c", "Const", (), ()),
               ("Mul", "Mul", ("x:0", "c:0"), ())]
        ops += [(name, op_type, ("Mul:0",), ()) for name, op_type in readers]
        model = run("while_body_12", ops, {"x": "DT_FLOAT", "Mul": "DT_FLOAT"},
                    profile=[("Mul/DebugNumericSummaryV2", "DebugNumericSummaryV2")]
                    if profiled else None, shapes={"x": (1, 4), "Mul": (1, 4)})
        return {op.op_name: op for op in assign_graph(model)}["Mul"]
    three = body([("Sum", "Sum"), ("Neg", "Neg"), ("Abs", "Abs")])
    assert three.kernel == "Identity" and "4 readers" in three.note
    assert body([("Sum", "Sum")]).kernel == REMOVED  # 2 with its debug op: bypassed
    # Readers of its shape only may have become constants: the count is not known.
    maybe = body([("Sum", "Sum"), ("Size", "Size"), ("Shape", "Shape")])
    assert maybe.kernel == UNKNOWN and "statically" in maybe.note
    # Without the profile's missing event, equal health summaries do not make the
    # constant one (x * 2 has x's counts), nor another: whether it ran is unknown.
    alone = body([("Sum", "Sum"), ("Neg", "Neg"), ("Abs", "Abs")], profiled=False)
    assert alone.kernel == UNKNOWN and "FULL_TENSOR" in alone.note
