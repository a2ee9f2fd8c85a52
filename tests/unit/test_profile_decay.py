"""When a missing profiler event may mean "no node", on in-memory runs.

In: hand-made dump graphs and profiles built as in ``test_profile_and_capture_evidence``
(``run``). Out: the kernels ``assign_graph`` gives. TF's executor traces a node at the
default host tracer level only while its running cost estimate (100M cycles at first,
9/10 of it plus the last run's cycles at every run) stays over 8000 cycles, so a cheap
node stops leaving events after about 90 runs (the truth matrix's ``fit_late_profile``
cell: a profile of step 96 of 100 has no event of ReadVariableOp, RealDiv, AddV2);
kernels that say they are never expensive (ShapeN) leave none at all.
"""
from __future__ import annotations

from tb_opmode.analyze.kernels import REMOVED, assign_graph
from tb_opmode.model import BufferCut
from tb_opmode.read.tfdbg import GraphInfo
from tests.unit.test_profile_and_capture_evidence import run

OPS = [("x", "Placeholder", (), ()), ("y", "Placeholder", (), ()),
       ("add", "AddV2", ("x:0", "y:0"), ()), ("MatMul", "MatMul", ("add:0", "y:0"), ())]
PROFILE = [("MatMul", "_MklMatMul"), ("MatMul/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
           ("add/DebugNumericSummaryV2", "DebugNumericSummaryV2")]


def kernels(runs: int, cut: bool = False, notes: list[str] | None = None,
            ) -> dict[str, tuple[str, str]]:
    model = run("train_function", OPS, {"add": "DT_FLOAT", "MatMul": "DT_FLOAT"},
                profile=PROFILE)
    for key in list(model.dumps[0].traces):
        model.dumps[0].traces[key] = runs
    if cut:
        model.buffer_cuts = [BufferCut("/run/x.graph_execution_traces", "graph_execution_trace",
                                       1000, "1000 is tfdbg's default circular_buffer_size", "")]
    ops = assign_graph(model)
    if notes is not None:
        notes.extend(op.note for op in ops if op.op_name == "add")
        notes.extend(model.profiles[0].notes)
    return {op.op_name: (op.kernel, op.evidence) for op in ops}


def test_a_node_that_ran_few_times_and_left_no_event_was_removed() -> None:
    got = kernels(runs=90)
    assert got["MatMul"] == ("_MklMatMul", "profile")
    assert got["add"] == (REMOVED, "inferred")


def test_after_90_runs_a_missing_event_proves_nothing() -> None:
    notes: list[str] = []
    got = kernels(runs=91, notes=notes)
    assert got["MatMul"] == ("_MklMatMul", "profile")
    assert got["add"] == ("AddV2", "inferred")  # as from the dump alone: the op ran
    op_note, run_note = notes
    assert "does not prove it removed" in op_note and "host_tracer_level=3" in op_note
    assert run_note.startswith("1 graph ops have no event") and "ran up to 91 times" in run_note
    quiet: list[str] = []
    kernels(runs=90, notes=quiet)
    assert len(quiet) == 1 and "does not prove" not in quiet[0]  # the op's own note only


def test_a_dump_cut_by_its_buffer_bounds_no_run_count() -> None:
    assert kernels(runs=2, cut=True)["add"] == ("AddV2", "inferred")
    # A cut of the eager records says nothing of how often graph nodes ran.
    model = run("train_function", OPS, {"add": "DT_FLOAT", "MatMul": "DT_FLOAT"}, profile=PROFILE)
    model.buffer_cuts = [BufferCut("/run/x.execution", "execution", 1000, "", "")]
    got = {op.op_name: op.kernel for op in assign_graph(model)}
    assert got["add"] == REMOVED


def test_a_kernel_that_is_never_expensive_leaves_no_event_at_all() -> None:
    ops = [("x", "Placeholder", (), ()), ("ShapeN", "ShapeN", ("x:0", "x:0"), ()),
           ("add", "AddV2", ("x:0", "x:0"), ())]
    model = run("train_function", ops, {"ShapeN": "DT_INT32", "add": "DT_FLOAT"},
                profile=[("ShapeN/DebugNumericSummaryV2", "DebugNumericSummaryV2"),
                         ("add/DebugNumericSummaryV2", "DebugNumericSummaryV2")])
    got = {op.op_name: op.kernel for op in assign_graph(model)}
    assert got["ShapeN"] == "ShapeN"
    assert got["add"] == REMOVED


def test_grappler_prunes_a_stop_gradient_of_one_input() -> None:
    ops = [("x", "Placeholder", (), ()), ("c", "Const", (), ()),
           ("StopGradient", "StopGradient", ("x:0",), ()),
           ("StopGradient_1", "StopGradient", ("x:0", "^c"), ()),
           ("mul", "Mul", ("StopGradient:0", "StopGradient_1:0"), ())]
    model = run("train_function", ops, {n: "DT_FLOAT" for n in ("StopGradient", "StopGradient_1",
                                                                  "mul")})
    got = {op.op_name: (op.kernel, op.note) for op in assign_graph(model)}
    assert got["StopGradient"][0] == REMOVED and "model pruner" in got["StopGradient"][1]
    # With a control input its removal may add edges: not this rule's to decide.
    assert "model pruner" not in got["StopGradient_1"][1]


def test_the_window_of_a_long_run_is_placed_by_the_calls_before_it() -> None:
    # 200 steps, one call of the function each; the profile's window begins after the
    # call at second 2 (the TensorBoard callback's profile_batch=2) or after 150 calls.
    for before, removed in ((2, True), (150, False)):
        model = run("train_function", OPS, {"add": "DT_FLOAT", "MatMul": "DT_FLOAT"},
                    profile=PROFILE)
        dump = model.dumps[0]
        for key in list(dump.traces):
            dump.traces[key] = 200
        dump.call_times = {"g1": [float(t) for t in range(200)]}
        model.profiles[0].start_ns = int((before - 0.5) * 1e9)
        got = {op.op_name: op.kernel for op in assign_graph(model)}
        assert (got["add"] == REMOVED) is removed, before
    # A loop's body runs more often than its function is called: its window is not placed.
    model = run("train_function", OPS, {"add": "DT_FLOAT", "MatMul": "DT_FLOAT"}, profile=PROFILE)
    for key in list(model.dumps[0].traces):
        model.dumps[0].traces[key] = 400
    model.dumps[0].call_times = {"g1": [float(t) for t in range(200)]}
    model.profiles[0].start_ns = int(1.5e9)
    assert {op.op_name: op.kernel for op in assign_graph(model)}["add"] == "AddV2"


def test_a_nested_function_is_placed_by_its_callers_calls() -> None:
    model = run("one_step_on_data", OPS, {"add": "DT_FLOAT", "MatMul": "DT_FLOAT"},
                profile=PROFILE)
    dump = model.dumps[0]
    dump.graphs["g1"].outer_id = "outer"
    dump.graphs["outer"] = GraphInfo("outer", name="multi_step_on_iterator")
    for key in list(dump.traces):
        dump.traces[key] = 200
    dump.call_times = {"outer": [float(t) for t in range(200)]}
    model.profiles[0].start_ns = int(1.5e9)
    assert {op.op_name: op.kernel for op in assign_graph(model)}["add"] == REMOVED
