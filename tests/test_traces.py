"""The trace ledger and the eager hot spots (issue 25) against TensorFlow's own truth.

Each cell (``tests/traces/workloads.py``) is a real run of this venv's TensorFlow: a
custom loop with known retracing (``step`` traced on every call for its batch size or a
Python float, a lambda's ``tf.function`` made anew in the loop, an ``input_signature``,
``reduce_retracing=True``, float32 then float64), a helper of many small eager ops on one
line, a Keras ``fit`` and ``predict`` on three batch sizes; in one dump mode, with or
without a profile of four iterations and TF's log. Its ``truth.json`` holds what TF
itself counted; ``tests/traces/checker.py`` compares the product's JSON with it without
sharing any of the product's parsing.

Held now (the evidence the ledger is to be built on): the workload's counts are TF's, and
where a profile holds a call its ``tracing_count`` and graph-building event agree with the
dump. Held: traces and calls per Python function equal TF's in every mode; each trace's cause
is the constructed one where the run's evidence decides it (``checker.DECIDES``: with
TF's log, whatever the dump mode), else ``unknown`` with a reason; the
hot line ranks first among eager sites with DebugDataReader's count; tracing time is the
profile's graph building where it holds it, else at least the op creations' span; the
explanation says "Python ran only once" only of functions traced once.

    TB_OPMODE_TRACES_CELLS=full_health_profile_log,no_tensor_plain pytest tests/test_traces.py
"""
from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.conftest import needs_tensorflow
from tests.traces.checker import (
    Cell,
    check_eager_sites,
    check_functions,
    check_profile_against_dump,
    decided,
    dump_facts,
    load_cell,
    oracle_run,
    profile_facts,
)
from tests.traces.workloads import ITERATIONS, KERAS_BATCHES, KERAS_SAMPLES, CellFailed, make_cell

# Every dump mode of the issue with a profile and TF's log, and without either; FULL_HEALTH
# also with a profile alone (the "a FULL_HEALTH dump with a profile decides all").
TEST_CELLS = ("full_health_profile_log", "full_health_profile", "full_health_plain",
              "shape_profile_log", "shape_plain", "curt_health_profile_log", "curt_health_plain",
              "no_tensor_profile_log", "no_tensor_plain")
_ONLY = [c for c in os.environ.get("TB_OPMODE_TRACES_CELLS", "").split(",") if c]
SELECTED = [c for c in TEST_CELLS if not _ONLY or c in _ONLY]

@pytest.fixture(scope="module", params=SELECTED)
def cell(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Cell:
    needs_tensorflow()
    out = tmp_path_factory.mktemp(f"traces_{request.param}")
    try:
        make_cell(request.param, out)
    except CellFailed as err:
        pytest.fail(str(err))
    return load_cell(out)


@pytest.fixture(scope="module")
def run(cell: Cell) -> dict[str, Any]:
    from tb_opmode.analyze.assemble import load
    from tb_opmode.present.contract import summary
    runs = summary(load(str(cell.logdir)), str(cell.logdir), explanations=False)["runs"]
    assert len(runs) == 1, [r["run"] for r in runs]
    return runs[0]


def _by_key(cell: Cell) -> dict[str, dict[str, Any]]:
    return {f["key"]: f for f in cell.truth["functions"]}


def test_the_workload_retraces_as_constructed(cell: Cell) -> None:
    """TF's own counts are the scenario's: a change in TF's tracing rules shows here first."""
    fns = _by_key(cell)
    # the loop's calls, and one after it (STEP_RETURN)
    assert (fns["step"]["traces"], fns["step"]["calls"]) == (ITERATIONS + 1, ITERATIONS + 1)
    assert [t["cause"] for t in fns["step"]["trace_list"]][:3] == ["first", "python_value", "shape"]
    lambdas = [f for f in fns.values() if f["python_name"] == "<lambda>"]
    assert len(lambdas) == ITERATIONS and all(f["traces"] == 1 for f in lambdas)
    assert (fns["project"]["traces"], fns["project"]["calls"]) == (1, ITERATIONS)
    assert fns["normalize"]["traces"] == 2 and fns["scale"]["traces"] == 2
    assert fns["normalize"]["trace_list"][1]["args"][0]["shape"] == [None, 8]
    assert [a["dtype"] for t in fns["scale"]["trace_list"] for a in t["args"]] == ["float32", "float64"]
    train = [f for f in fns.values() if f["kind"] == "keras_train"]
    predict = [f for f in fns.values() if f["kind"] == "keras_predict"]
    assert sum(f["calls"] for f in train) == sum(KERAS_SAMPLES // b for b in KERAS_BATCHES)
    assert sum(f["calls"] for f in predict) == sum(KERAS_SAMPLES // b for b in KERAS_BATCHES)
    hot = cell.truth["eager"]
    assert cell.truth["ddr"]["eager_by_user_line"][hot["hot_line"]] == \
        hot["hot_calls"] * hot["hot_ops_per_call"]


def test_each_trace_is_told_first_of_its_object_by_its_stack(cell: Cell) -> None:
    """The evidence for ``new_function_object`` in every mode: a trace's first op was created
    under ``_initialize`` exactly when it is the first trace of its tf.function object."""
    facts = dump_facts(cell)
    for fn in cell.truth["functions"]:
        for n, trace in enumerate(fn["trace_list"]):
            if trace["graph"] in facts["first_of_object"]:
                assert facts["first_of_object"][trace["graph"]] == (n == 0), (fn["key"], trace["graph"])


def test_the_profile_agrees_with_the_dump(cell: Cell) -> None:
    if not cell.truth["params"]["profile"]:
        pytest.skip("this cell has no profile")
    assert check_profile_against_dump(cell) == []


def test_tfs_line_per_trace_is_read_once_per_trace(cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the run has TF's log, the product reads one "Creating new FuncGraph" line per
    trace TF counts (``experimental_get_tracing_count()``) of each user function, and the
    same lines however the file is cut into chunks (a message across two chunks)."""
    if "log" not in cell.evidence:
        pytest.skip("this cell has no TF log")
    from tb_opmode.read.textlog import read_log, scan
    logs = sorted(p for p in cell.logdir.rglob("*") if p.is_file() and p.suffix in (".txt", ".log"))
    whole = [line for p in logs for line in read_log(str(p)).trace_lines]
    monkeypatch.setattr(scan, "CHUNK_BYTES", 4093)
    assert [line for p in logs for line in read_log(str(p)).trace_lines] == whole
    want: dict[str, int] = {}
    for fn in cell.truth["functions"]:
        if fn["kind"] == "user":
            want[fn["python_name"]] = want.get(fn["python_name"], 0) + fn["traces"]
    got = {name: sum(1 for line in whole if line.name == name) for name in want}
    assert got == want


_TRACE_HEAD = re.compile(r"Creating new FuncGraph for Python function <function (\S+) at 0x[0-9a-f]+> \(key: (.*)")
_SCOPE = re.compile(r"scope_type=<ScopeType\.([A-Z_]+): \d+>")


def test_each_traces_scope_is_read_as_tf_printed_it(cell: Cell) -> None:
    """The scope of each trace's key (TF 2.21: ``VARIABLE_CREATION``, then
    ``NO_VARIABLE_CREATION`` for a call traced again because its first trace created
    variables; TF 2.13 prints none: "") as this test's own pattern reads TF's lines."""
    if "log" not in cell.evidence:
        pytest.skip("this cell has no TF log")
    from tb_opmode.read.textlog import read_log
    log = cell.logdir / "log.txt"
    want = [(m.group(1).rsplit(".", 1)[-1], s.group(1) if (s := _SCOPE.search(m.group(2))) else "")
            for m in map(_TRACE_HEAD.search, log.read_text(errors="replace").splitlines()) if m]
    got = [(line.name, line.scope) for line in read_log(str(log)).trace_lines]
    assert got == want and want


def test_traces_and_calls_per_python_function(cell: Cell, run: dict[str, Any]) -> None:
    problems = [p for p in check_functions(cell, run) if "cause" not in p and "changed" not in p
                and "argument" not in p and "dimension" not in p]
    assert problems == []


def test_causes_are_the_constructed_ones_or_unknown_with_why(cell: Cell, run: dict[str, Any]) -> None:
    assert check_functions(cell, run) == []


def test_the_eager_hot_line_ranks_first_with_ddr_counts(cell: Cell, run: dict[str, Any]) -> None:
    assert check_eager_sites(cell, run) == []


def test_tracing_time_is_the_graph_building_or_at_least_the_op_creations(
        cell: Cell, run: dict[str, Any]) -> None:
    facts = dump_facts(cell)
    building = {}
    names = {f["key"]: f["python_name"] for f in cell.truth["functions"]}
    profiled = [(names[f["key"]], t["graph"]) for f in cell.truth["functions"]
                for t in f["trace_list"] if t["profiled"]]
    traced_calls = [c for c in profile_facts(cell) if c.traced]
    for name, graph in profiled:
        mine = [c for c in traced_calls if c.name == name]
        if mine:
            building[graph] = traced_calls.pop(traced_calls.index(mine[0])).building_ns / 1e9
    traces = {t["graph"]: t for f in run.get("tf_functions", []) for t in f.get("trace_list", [])}
    assert traces, "no traces in tf_functions"
    # The traces of the workload's functions (TF's own, such as the initialize_variables
    # graph of a first call, are not a user's tf.function and not in the ledger).
    theirs = {t["graph"] for f in cell.truth["functions"] for t in f["trace_list"]}
    for graph, span in facts["spans"].items():
        if graph not in theirs:
            continue
        got = traces.get(graph, {}).get("tracing_s")
        assert got is not None, graph
        if graph in building:
            if abs(got - building[graph]) > 1e-3 and cell.truth["tensorflow_version"].startswith("2.13."):
                # TF 2.13's profile nests graph-building events and its clock is estimated
                # (no wall-clock offset): the ledger may take the enclosing event.
                pytest.xfail(f"TF 2.13: {graph} traced in {got} s by the ledger, "
                             f"{building[graph]} s by its call's own graph-building event")
            assert abs(got - building[graph]) <= 1e-3, (graph, got, building[graph])
        else:
            assert got >= span - 1e-6, (graph, got, span)


def test_python_ran_once_is_said_only_of_functions_traced_once(cell: Cell) -> None:
    if cell.truth["cell"] != "full_health_profile_log":
        pytest.skip("one cell is enough for the wording")
    from tb_opmode.analyze.assemble import load
    from tb_opmode.present.contract import summary
    run = summary(load(str(cell.logdir)), str(cell.logdir))["runs"][0]
    matmul = next(r for r in run["op_types"] if r["op_type"] == "MatMul")
    text = matmul["graph"]["explanation"]
    # MatMul runs in step (traced on each of its calls), in project (traced once) and in
    # Keras' train and predict steps (twice each): the blanket sentence is false here, and
    # the graphs it names say their own trace counts.
    assert "traced once" in text and "traced 2 times" in text, text
    assert "Python ran only once, to trace it." not in text, text


def test_each_graph_named_says_its_functions_traces_as_tf_counts(cell: Cell) -> None:
    """Every graph a graph-mode explanation names says the trace count TF's
    ``experimental_get_tracing_count()`` gave its Python function, also where a trace
    that ran is not the function's first (a first trace that is never called)."""
    import re

    from tb_opmode.analyze.assemble import load
    from tb_opmode.present.contract import summary
    run = summary(load(str(cell.logdir)), str(cell.logdir))["runs"][0]
    traces = {f["python_name"]: f["traces"] for f in cell.truth["functions"]}
    named = 0
    for row in run["op_types"]:
        text = row["graph"].get("explanation", "")
        for graph, function, count in re.findall(
                r"graph (\S+?)(?: of tf\.function (\S+))? \(traced (once|\d+ times)", text):
            name = function or graph
            if name in traces:
                named += 1
                said = 1 if count == "once" else int(count.split()[0])
                assert said == traces[name], (row["op_type"], name, said, traces[name])
    assert named, "no explanation names a function of the workload"



def test_the_checker_accepts_the_contract_and_rejects_wrong_answers(cell: Cell) -> None:
    """The checker itself: it passes the answer the contract asks for (made from the truth)
    and fails a wrong count, a cause the run cannot decide or a wrong one, a wrong ranking."""
    import copy
    good = oracle_run(cell)
    assert check_functions(cell, good) == []
    assert check_eager_sites(cell, good) == []

    bad = copy.deepcopy(good)
    step = next(f for f in bad["tf_functions"] if f["python_name"] == "step")
    step["traces"] += 1
    assert any("traces, TF counts" in p for p in check_functions(cell, bad))

    bad = copy.deepcopy(good)
    second = next(f for f in bad["tf_functions"] if f["python_name"] == "step")["trace_list"][1]
    wrong = "unknown" if second["changed"][0]["cause"] == "python_value" else "python_value"
    second["changed"] = [{"cause": wrong, "arg": "lr", "why": "a guess"}]
    assert any("trace " + second["graph"] in p for p in check_functions(cell, bad))

    if decided(cell, "variable_creation", top_level=False):  # Keras 3's one_step_on_data
        bad = copy.deepcopy(good)
        again = next(t for f in bad["tf_functions"] for t in f["trace_list"] if t["note"]
                     and f["python_name"] == "one_step_on_data")
        again["changed"], again["note"] = [{"cause": "unknown", "why": "a guess"}], ""
        assert any("trace " + again["graph"] in p for p in check_functions(cell, bad))

    bad = copy.deepcopy(good)
    bad["eager_sites"][0], bad["eager_sites"][1] = bad["eager_sites"][1], bad["eager_sites"][0]
    assert any("not the hot line" in p for p in check_eager_sites(cell, bad))


def test_a_traces_graph_filters_the_table_to_the_op_types_that_ran_in_it(
        cell: Cell, run: dict[str, Any]) -> None:
    """The Functions section's "its op types": the op table filtered to one trace holds the
    op types DebugDataReader's graph execution traces name in that graph and the graphs
    nested in it; an id that is no graph of the run is a bad parameter."""
    from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader

    from tb_opmode.analyze.assemble import load
    from tb_opmode.errors import BadParameter
    from tb_opmode.present.tab import build_view, op_page

    traces = {t["graph_id"]: t["graph"] for f in run["tf_functions"] if f["python_name"] in
              ("step", "project", "scale") for t in f["trace_list"] if t["calls"]}
    assert traces
    ran: dict[str, set[str]] = {g: set() for g in traces}
    with DebugDataReader(str(cell.logdir)) as reader:
        reader.update()
        for trace in reader.graph_execution_traces():
            op_type = reader.graph_by_id(trace.graph_id).get_op_creation_digest(trace.op_name).op_type
            graph_id = trace.graph_id
            while graph_id:
                if graph_id in ran:
                    ran[graph_id].add(op_type)
                graph_id = reader.graph_by_id(graph_id).outer_graph_id
    (model,) = load(str(cell.logdir))
    view = build_view(model, str(cell.logdir), timeline=False)
    for graph_id, name in traces.items():
        page = op_page(view, graph=graph_id, page_size=200)
        assert page["graph"] == graph_id
        assert {r["op_type"] for r in page["rows"]} == ran[graph_id], name
    with pytest.raises(BadParameter, match="graph"):
        op_page(view, graph="no such graph")


def test_summary_text_says_what_to_change_at_each_hot_line(cell: Cell, run: dict[str, Any]) -> None:
    """``tb-opmode summary``'s text gives, under each eager hot line it lists, the advice
    the JSON holds for it (the workload's helper of many small eager ops has some)."""
    from tb_opmode.cli import render_table
    from tb_opmode.present.eager_text import SUMMARY_SITES
    advised = [s for s in run["eager_sites"][:SUMMARY_SITES] if s["advice"]]
    assert advised, [s["user_location"] for s in run["eager_sites"]]
    text = " ".join(render_table({"runs": [run]}).split())
    for site in advised:
        for advice in site["advice"]:
            assert "fix: " + " ".join(advice.split()) in text, (site["user_location"], advice)
