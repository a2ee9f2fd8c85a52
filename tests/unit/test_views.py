"""The tab's views (``present.tab``: overview, op table, detail, compare, CSV export) on the
committed runs.

In: ``tab.build_view`` of the FULL_HEALTH and NO_TENSOR runs (read without TF). Out: figures
that equal what TF's DebugDataReader counted (``reference.json``), filters and sorts that do
what their names say, and a comparison of the two runs that shows what NO_TENSOR cannot tell.
"""
from __future__ import annotations

import csv
import io
from collections import Counter

import pytest

from tb_opmode.analyze import assemble
from tb_opmode.analyze.assemble import RunModel, load
from tb_opmode.errors import UnknownOpType
from tb_opmode.present.tab import (
    FILTERS,
    SORT_KEYS,
    RunView,
    build_view,
    compare,
    export_csv,
    op_detail,
    op_page,
    op_rows,
    overview,
)

from .conftest import Fixture


@pytest.fixture(scope="module")
def view(full_model: RunModel, full_health: Fixture) -> RunView:
    return build_view(full_model, str(full_health.directory))


@pytest.fixture(scope="module")
def nt_view(no_tensor_model: RunModel, no_tensor: Fixture) -> RunView:
    return build_view(no_tensor_model, str(no_tensor.directory))


def test_overview_counts_are_tfs(view: RunView, full_health: Fixture) -> None:
    ref = full_health.reference
    ov = overview(view)
    assert ov["modes"]["eager"]["executions"] == sum(ref["eager"].values())
    assert ov["modes"]["graph"]["executions"] == sum(ref["graph"].values())
    assert {f["name"]: f["calls"] for f in ov["functions"]} == ref["functions"]
    assert ov["op_types_total"] == len(set(ref["eager"]) | set(ref["graph"]))
    assert ov["onednn_state"] == "on" and ov["tensorflow_version"] == ref["tensorflow_version"]
    shares = ov["modes"]["eager"]["share_of_executions"] + ov["modes"]["graph"]["share_of_executions"]
    assert shares == pytest.approx(1.0)
    for mode in ("eager", "graph"):
        cells = [c for c in ov["matrix"] if c["mode"] == mode]
        assert sum(c["executions"] for c in cells) == ov["modes"][mode]["executions"], mode


def test_overview_onednn_executions_are_the_tables(view: RunView) -> None:
    ov = overview(view)
    for mode in ("eager", "graph"):
        onednn = sum(k["executions"] for r in view.rows.values() for k in r[mode]["kernels"] if k["onednn"])
        assert ov["modes"][mode]["onednn_executions"] == onednn, mode
    assert ov["modes"]["eager"]["onednn_executions"] >= 3  # MatMul, float Transpose, Softmax


def test_one_row_per_op_type_sorted(view: RunView, full_health: Fixture) -> None:
    ref = full_health.reference
    rows = op_rows(view)
    assert [r["op_type"] for r in rows] and {r["op_type"] for r in rows} == set(ref["eager"]) | set(ref["graph"])
    totals = [r["total"] for r in rows]
    assert totals == sorted(totals, reverse=True)
    for r in rows:
        assert r["total"] == ref["eager"].get(r["op_type"], 0) + ref["graph"].get(r["op_type"], 0)
    names = [r["op_type"].lower() for r in op_rows(view, sort="op_type", descending=False)]
    assert names == sorted(names)


def test_filters(view: RunView, full_health: Fixture) -> None:
    ref = full_health.reference
    both = {r["op_type"] for r in op_rows(view, filters=("both",))}
    assert both == set(ref["eager"]) & set(ref["graph"])
    eager_only = {r["op_type"] for r in op_rows(view, filters=("eager_only",))}
    assert eager_only == set(ref["eager"]) - set(ref["graph"])
    differs = {r["op_type"] for r in op_rows(view, filters=("differs",))}
    assert "Transpose" in differs   # stock and _MklTranspose eagerly, removed and _MklTranspose in graphs
    assert "MatMul" not in {r["op_type"] for r in op_rows(view, filters=("no_onednn",))}
    onednn = {r["op_type"] for r in op_rows(view, filters=("onednn",))}
    assert {"MatMul", "Transpose", "Softmax"} <= onednn
    assert {r["op_type"] for r in op_rows(view, query="mkltrans")} == {"Transpose"}  # a kernel name matches
    assert set(FILTERS) >= {"both", "differs", "no_onednn"}


@pytest.mark.parametrize("bad", [{"sort": "nope"}, {"filters": ("nope",)}])
def test_bad_table_parameters(view: RunView, bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        op_rows(view, **bad)  # type: ignore[arg-type]


def test_pages(view: RunView) -> None:
    rows = op_rows(view)
    pages = [op_page(view, page=p, page_size=7)["rows"] for p in range(len(rows) // 7 + 1)]
    assert [r for page in pages for r in page] == rows
    assert op_page(view, page=99, page_size=7)["rows"] == []
    with pytest.raises(ValueError):
        op_page(view, page=-1)
    assert set(SORT_KEYS) >= {"total", "op_type"}


def test_op_detail(view: RunView, full_health: Fixture) -> None:
    detail = op_detail(view, "Transpose")
    assert set(detail["explanation"]) == {"eager", "graph"}
    assert sum(s["count"] for s in detail["call_sites"]["eager"]) == full_health.reference["eager"]["Transpose"]
    assert any("_MklTranspose" in line and "the TensorFlow log" in line for line in detail["evidence"])
    assert detail["graphs_total"] >= 1
    with pytest.raises(UnknownOpType, match="NoSuchOp"):
        op_detail(view, "NoSuchOp")


def test_compare_with_itself_changes_nothing(view: RunView) -> None:
    assert compare(view, view)["rows"] == []


def test_compare_full_health_with_no_tensor(view: RunView, nt_view: RunView) -> None:
    """Same workload: eager counts agree; where NO_TENSOR cannot tell the dtype, eager
    Transpose's kernels are (unknown): a difference of evidence, not a kernel change."""
    doc = compare(view, nt_view)
    rows = {r["op_type"]: r for r in doc["rows"]}
    t = rows["Transpose"]["eager"]
    assert t["a"]["executions"] == t["b"]["executions"]
    assert set(t["a"]["kernels"]) == {"Transpose", "_MklTranspose"} and t["b"]["kernels"] == ["(unknown)"]
    assert t["b"]["seen"] == [False] and all(t["a"]["seen"])
    assert "eager kernel evidence" in rows["Transpose"]["changes"]
    assert "eager kernel" not in rows["Transpose"]["changes"]
    assert "a FULL_HEALTH dump, a profile, the log" in doc["evidence_note"]
    everything = compare(view, nt_view, changed_only=False)
    assert everything["total"] >= doc["total"] and len(everything["rows"]) >= len(doc["rows"])


def test_csv_export_adds_up(view: RunView, full_health: Fixture) -> None:
    lines = list(csv.DictReader(io.StringIO(export_csv(view))))
    per_mode: dict[tuple[str, str], int] = {}
    kernel_sum: Counter[tuple[str, str]] = Counter()
    for line in lines:
        key = (line["op_type"], line["mode"])
        per_mode[key] = int(line["executions"])
        kernel_sum[key] += int(line["kernel_executions"] or 0)
        assert line["onednn"] == str(line["kernel"].startswith("_Mkl")).lower(), line
    assert per_mode == kernel_sum
    ref = full_health.reference
    assert {op: n for (op, mode), n in per_mode.items() if mode == "eager"} == ref["eager"]
    assert {op: n for (op, mode), n in per_mode.items() if mode == "graph"} == ref["graph"]


def test_counts_of_a_full_circular_buffer_are_a_lower_bound(
        no_tensor: Fixture, no_tensor_model: RunModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dump whose graph trace records are exactly the circular buffer's size: assemble
    says so on the model (``buffer_cuts``) and in a problem, and the tab marks the graph
    counts, and only those, a lower bound."""
    [dump] = no_tensor_model.dumps
    traces = sum(dump.traces.values())
    assert traces != sum(dump.executions.values()) and not no_tensor_model.buffer_cuts
    monkeypatch.setattr(assemble, "DEFAULT_CIRCULAR_BUFFER", traces)
    (model,) = load(str(no_tensor.directory))
    [cut] = model.buffer_cuts
    assert (cut.mode, cut.kind, cut.records) == ("graph", "graph_execution_trace", traces)
    assert "default" in cut.how and "circular_buffer_size=-1" in cut.fix
    assert [p for p in model.problems if "lower bound" in p.message][0].path == cut.path
    view = build_view(model, str(no_tensor.directory))
    assert view.lower_bound == {"graph": {"records": traces, "how": cut.how, "fix": cut.fix,
                                          "kind": "graph_execution_trace"}}
    rows = view.rows.values()
    assert all(r["graph"].get("lower_bound", False) == bool(r["graph"]["executions"]) for r in rows)
    assert not any(r["eager"].get("lower_bound") for r in rows)


def test_compare_runs_of_different_evidence_says_so(view: RunView, record_kernels: Fixture) -> None:
    """A dump's run against a ``record --evidence kernels`` run (no dump) of a like fit:
    the comparison says first that the evidence differs, and a graph op whose only
    difference is the node grappler removed (which only a dump attributes) is an evidence
    difference, not a kernel change; runs of the same evidence have no such note."""
    (kernels_model,) = load(str(record_kernels.directory))
    other = build_view(kernels_model, str(record_kernels.directory), timeline=False)
    doc = compare(view, other)
    assert doc["a"]["evidence"] == "made by hand: a FULL_HEALTH dump, a profile, the log"
    assert doc["b"]["evidence"].startswith("tb-opmode record --evidence kernels: no dump")
    assert doc["b"]["command"] and doc["b"]["ended"] == "exited with status 0"
    assert "different evidence" in doc["evidence_note"] and "not a kernel change" in doc["evidence_note"]
    rows = {r["op_type"]: r for r in doc["rows"]}
    mul = rows["Mul"]
    assert "(optimized away)" in mul["graph"]["a"]["kernels"] and mul["graph"]["b"]["kernels"] == ["Mul"]
    assert "graph kernel evidence" in mul["changes"] and not mul["kernel_changed"]
    assert doc["evidence_changes"] >= 1
    assert doc["kernel_changes"] == sum(1 for r in doc["rows"] if r["kernel_changed"])
    assert compare(other, other)["evidence_note"] == ""


def test_overview_counts_tf_functions_as_the_functions_card(record_kernels: Fixture) -> None:
    """The overview's tf.functions are the Functions card's: its Python functions, their
    traces and calls; a graph TF made itself (``initialize_variables``), which the card
    leaves out, is listed apart, not among them."""
    from tb_opmode.present.tab import functions
    (model,) = load(str(record_kernels.directory))
    run = build_view(model, str(record_kernels.directory), timeline=False)
    fns, card = overview(run)["tf_functions"], functions(run)
    assert fns["python_functions"] == card["total"] == 3
    assert [f["name"] for f in fns["functions"]] == [f["name"] for f in card["functions"]]
    assert fns["traces"] == sum(f["traces"] for f in card["functions"]) == 6
    assert [g["name"].split("_")[3] for g in fns["other_graphs"]] == ["initialize"]
    traced = {t["graph"] for f in card["functions"] for t in f["trace_list"]}
    assert not traced & {g["name"] for g in fns["other_graphs"]}
