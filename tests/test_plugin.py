"""The plugin's routes through TensorBoard's own WSGI app, on logdirs real TensorFlow wrote.

In: the session fixtures of conftest.py (BERT-like model.fit; a CNN custom
loop with oneDNN on and off). Out: assertions on every route's answer, its
errors (404 for unknown runs and ops, 400 for bad parameters, 503 for a run still
loading, 500 with a logged traceback for a bug), the static
route's refusal of path traversal, the 1 MB cap, the exports, and the
background run store (reload on change, consistent answers while it reloads).
"""
from __future__ import annotations

import csv
import io
import json
import logging
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug import test as wtest
from werkzeug.wrappers import Response

from tb_opmode.analyze.assemble import load
from tb_opmode.plugin import routes, run_store
from tb_opmode.plugin.routes import MAX_RESPONSE_BYTES, STATIC_FILES, OpModePlugin
from tb_opmode.present import tab, timeline
from tb_opmode.present.contract import summary
from tb_opmode.present.csv import render_csv

from .conftest import link_tree

PREFIX = "/data/plugin/opmode"


class Api:
    """A client over TensorBoardWSGI([plugin]) that checks every answer's size."""

    def __init__(self, plugin: OpModePlugin) -> None:
        self.plugin = plugin
        self.client = wtest.Client(application.TensorBoardWSGI([plugin]), Response)

    def get(self, path: str, **params: Any) -> Response:
        response = self.client.get(PREFIX + path, query_string=params)
        assert len(response.get_data()) <= MAX_RESPONSE_BYTES, (path, params)
        return response

    def json(self, path: str, **params: Any) -> Any:
        response = self.get(path, **params)
        assert response.status_code == 200, (path, params, response.get_data(as_text=True))
        assert response.mimetype == "application/json"
        return json.loads(response.get_data(as_text=True))

    def status(self, path: str, **params: Any) -> int:
        return self.get(path, **params).status_code


def make_api(logdir: Path, **kwargs: Any) -> Api:
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(logdir)), **kwargs)
    assert plugin.wait_idle(120), "background load did not finish"
    return Api(plugin)


@pytest.fixture(scope="module")
def bert(bert_logdir: Path) -> Iterator[Api]:
    api = make_api(bert_logdir)
    yield api
    api.plugin.close()


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory: pytest.TempPathFactory, cnn_logdir: Path,
             cnn_off_logdir: Path) -> Path:
    """One logdir holding the CNN run with oneDNN on (``on``) and off (``off``)."""
    parent = tmp_path_factory.mktemp("two_runs")
    link_tree(cnn_logdir, parent / "on")
    link_tree(cnn_off_logdir, parent / "off")
    return parent


@pytest.fixture(scope="module")
def pair(two_runs: Path) -> Iterator[Api]:
    api = make_api(two_runs)
    yield api
    api.plugin.close()


# ---------------------------------------------------------------- metadata and runs

def test_metadata_and_active(bert: Api, tmp_path: Path) -> None:
    meta = bert.plugin.frontend_metadata()
    assert meta.es_module_path == "/index.js" and meta.tab_name == "Op Mode"
    assert bert.plugin.plugin_name == "opmode"
    assert bert.plugin.is_active()
    empty = OpModePlugin(base_plugin.TBContext(logdir=str(tmp_path)))
    try:
        assert empty.wait_idle(30)
        assert not empty.is_active()
        assert Api(empty).json("/runs")["runs"] == []
    finally:
        empty.close()


def test_runs_listed_with_progress(bert: Api, pair: Api) -> None:
    doc = bert.json("/runs")
    assert [r["run"] for r in doc["runs"]] == ["."]
    (run,) = doc["runs"]
    assert run["status"] == "ready" and run["onednn_enabled"] is True
    progress = doc["progress"]
    assert progress["runs_done"] == progress["runs_total"] == 1
    assert progress["files_done"] == progress["files_total"] >= 8
    assert progress["bytes_done"] == progress["bytes_total"] > 0
    assert bert.json("/progress") == progress
    runs = {r["run"]: r for r in pair.json("/runs")["runs"]}
    assert set(runs) == {"on", "off"}
    assert runs["on"]["onednn_state"] == "on" and runs["off"]["onednn_state"] == "off"


def test_loading_happens_in_the_background_not_in_requests(bert_logdir: Path) -> None:
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(bert_logdir)), start=False)
    api = Api(plugin)
    assert not plugin.is_active()
    assert api.json("/runs")["runs"] == []          # a request never loads anything
    assert api.status("/overview", run=".") == 404
    plugin.start()
    try:
        assert plugin.wait_idle(120)
        assert plugin.is_active()
        assert api.json("/overview", run=".")["run"] == "."
    finally:
        plugin.close()


# ---------------------------------------------------------------- overview

def test_overview_matches_the_model(bert: Api, bert_logdir: Path, tf_version: str) -> None:
    o = bert.json("/overview", run=".")
    (model,) = load(str(bert_logdir))
    doc = summary([model], str(bert_logdir))["runs"][0]
    assert o["tensorflow_version"] == tf_version
    assert o["onednn_enabled"] is True and o["onednn_state"] == "on" and o["onednn_reason"]
    assert o["counts_from"] == "debugger"
    assert o["sources"]["debugger"] and o["sources"]["profile"] and o["sources"]["logs"]
    for mode in ("eager", "graph"):
        expected = sum(r[mode]["executions"] for r in doc["op_types"])
        assert o["modes"][mode]["executions"] == expected > 0
        cells = [c for c in o["matrix"] if c["mode"] == mode]
        assert {c["class"] for c in cells} == {"onednn", "stock", "fused", "unknown"}
        assert sum(c["executions"] for c in cells) == expected
        assert 0 < o["modes"][mode]["onednn_executions"] <= o["modes"][mode]["kernel_known_executions"]
        assert o["modes"][mode]["time_ns"] is not None
    assert abs(o["modes"]["eager"]["share_of_executions"]
               + o["modes"]["graph"]["share_of_executions"] - 1) < 1e-9
    assert any(f["name"].startswith("__inference_") for f in o["functions"])
    assert o["profile"]["events"] > 0 and o["profile"]["span_ns"] > 0


def test_overview_says_onednn_off(pair: Api) -> None:
    off = pair.json("/overview", run="off")
    assert off["onednn_state"] == "off"
    assert "_Mkl" in off["onednn_reason"]
    assert off["modes"]["eager"]["onednn_executions"] == 0
    assert off["modes"]["graph"]["onednn_executions"] == 0


# ---------------------------------------------------------------- op table

def all_rows(api: Api, run: str, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    page = 0
    while True:
        doc = api.json("/optypes", run=run, page=page, page_size=7, **params)
        rows.extend(doc["rows"])
        if (page + 1) * 7 >= doc["total"]:
            assert len(rows) == doc["total"]
            return rows
        page += 1


def test_op_table_shows_transpose_kernels(bert: Api) -> None:
    doc = bert.json("/optypes", run=".", q="transpose")
    (row,) = [r for r in doc["rows"] if r["op_type"] == "Transpose"]
    assert row["eager"]["executions"] >= 1 and row["graph"]["executions"] >= 1
    assert [k["name"] for k in row["eager"]["kernels"]] == ["_MklTranspose"]
    (k,) = row["eager"]["kernels"]
    assert k["onednn"] is True and k["evidence"] == "log" and k["class"] == "onednn"
    matmul = bert.json("/optypes", run=".", q="MatMul")["rows"]
    assert any(k["name"] == "_MklMatMul" for r in matmul for m in ("eager", "graph")
               for k in r[m]["kernels"])


def test_paging_covers_every_row_once(bert: Api) -> None:
    full = bert.json("/optypes", run=".", page_size=200)
    paged = all_rows(bert, ".")
    assert [r["op_type"] for r in paged] == [r["op_type"] for r in full["rows"]]
    assert len({r["op_type"] for r in paged}) == full["total"] == full["all_total"]
    beyond = bert.json("/optypes", run=".", page=10_000)
    assert beyond["rows"] == [] and beyond["total"] == full["total"]


def test_sorting(bert: Api) -> None:
    by_name = all_rows(bert, ".", sort="op_type", order="asc")
    names = [r["op_type"].lower() for r in by_name]
    assert names == sorted(names)
    by_total = all_rows(bert, ".", sort="total", order="desc")
    totals = [r["total"] for r in by_total]
    assert totals == sorted(totals, reverse=True)
    by_graph = all_rows(bert, ".", sort="graph", order="asc")
    graph = [r["graph"]["executions"] for r in by_graph]
    assert graph == sorted(graph)
    by_time = all_rows(bert, ".", sort="time")
    times = [r["eager"].get("time_ns", 0) + r["graph"].get("time_ns", 0) for r in by_time]
    assert times == sorted(times, reverse=True)


def test_filters_and_search(bert: Api) -> None:
    everything = all_rows(bert, ".")
    both = all_rows(bert, ".", filter="both")
    assert both and len(both) < len(everything)
    assert all(r["eager"]["executions"] and r["graph"]["executions"] for r in both)
    assert {r["op_type"] for r in both} == {r["op_type"] for r in everything
                                             if r["eager"]["executions"] and r["graph"]["executions"]}
    differs = all_rows(bert, ".", filter="differs")
    for r in differs:
        eager = {k["name"] for k in r["eager"]["kernels"] if k["class"] != "unknown"}
        graph = {k["name"] for k in r["graph"]["kernels"] if k["class"] != "unknown"}
        assert eager and graph and eager != graph
    no_onednn = all_rows(bert, ".", filter="no_onednn")
    assert no_onednn and "Transpose" not in {r["op_type"] for r in no_onednn}
    assert not any(k["onednn"] for r in no_onednn for m in ("eager", "graph") for k in r[m]["kernels"])
    combined = all_rows(bert, ".", filter="both,no_onednn")
    assert {r["op_type"] for r in combined} == ({r["op_type"] for r in both}
                                                & {r["op_type"] for r in no_onednn})
    found = all_rows(bert, ".", q="MKLTRANS")   # search matches kernels, any case
    assert [r["op_type"] for r in found] == ["Transpose"]
    assert all_rows(bert, ".", q="no-such-op-anywhere") == []


# ---------------------------------------------------------------- op detail

def test_op_detail_has_evidence_call_sites_and_graphs(bert: Api) -> None:
    d = bert.json("/op", run=".", op="Transpose")
    assert d["op_type"] == "Transpose"
    assert any("_MklTranspose" in line and "log" in line for line in d["evidence"])
    eager_sites = d["call_sites"]["eager"]
    assert eager_sites and all(s["count"] >= 1 for s in eager_sites)
    assert sum(s["count"] for s in eager_sites) <= d["eager"]["executions"]
    site = next(s for s in eager_sites if s["function"] == "_eager_preprocessing")
    assert site["file"].endswith("make_logdir.py") and site["line"] > 0
    snippet = site["snippet"]
    hit = snippet["lines"][snippet["line"] - snippet["first_line"]]
    assert "tf.transpose" in hit
    assert d["call_sites"]["graph"], "graph Transpose ops were traced somewhere"
    assert d["graphs"] and d["graphs_total"] >= 1
    assert sum(g["executions"] for g in d["graphs"]) == d["graph"]["executions"]
    assert all(g["ops"] >= 1 and g["name"] for g in d["graphs"])


def test_op_detail_sites_parameter_caps_the_list(bert: Api) -> None:
    d = bert.json("/op", run=".", op="AddV2", sites=1)
    assert len(d["call_sites"]["eager"]) <= 1 and len(d["call_sites"]["graph"]) <= 1
    assert d["call_sites_total"]["graph"] >= len(d["call_sites"]["graph"])


# ---------------------------------------------------------------- timeline

def test_timeline_full_window_and_zoom(bert: Api) -> None:
    full = bert.json("/timeline", run=".")
    assert full["lanes"] == ["function", "eager", "graph"]
    assert full["span_ns"] > 0 and full["total"] > 0
    assert full["level"] == "events"
    starts = [e[1] for e in full["events"]]
    names = full["names"]
    for lane, _start, dur, name, kernel, cls in full["events"]:
        assert 0 <= lane < 3 and dur >= 0 and 0 <= cls < len(full["classes"])
        assert names[name] and isinstance(names[kernel], str)
        if full["classes"][cls].startswith("graph_"):
            assert names[kernel] and (names[kernel].startswith("_Mkl")
                                      == (full["classes"][cls] == "graph_onednn"))
    assert any(full["classes"][e[5]] == "graph_onednn" for e in full["events"])
    assert not any(full["classes"][e[5]] == "debug" for e in full["events"])
    with_debug = bert.json("/timeline", run=".", debug=1, max_events=10000)
    assert with_debug["total"] > full["total"]
    # A window holds exactly the events that overlap it.
    lo = sorted(starts)[len(starts) // 3]
    hi = lo + full["span_ns"] // 50 + 1
    window = bert.json("/timeline", run=".", start=lo, end=hi)
    assert window["level"] == "events" and window["start"] == lo and window["end"] == hi
    assert window["events"]
    assert all(e[1] < hi and e[1] + e[2] >= lo for e in window["events"])
    expected = sum(1 for e in full["events"] if e[1] < hi and e[1] + e[2] >= lo)
    assert window["total"] == expected


def test_timeline_bins_when_zoomed_out(bert: Api) -> None:
    full = bert.json("/timeline", run=".")
    binned = bert.json("/timeline", run=".", max_events=30)
    assert binned["level"] == "bins" and binned["total"] == full["total"]
    # An event counts in every bin it spans (a long op is not a 1-px tick): at least once.
    assert sum(b[3] for b in binned["bins"]) >= full["total"]
    for _lane, start, end, count, busy, _cls, name, onednn in binned["bins"]:
        assert start < end and count >= 1 and 0 <= onednn <= count and busy >= 0
        assert binned["names"][name]


def test_timeline_of_one_trace(bert: Api) -> None:
    """``graph=``, a called trace of the Functions section, keeps its function's calls and
    the graph ops inside them (no eager op), in the window and in the trace export; a name
    the run did not call keeps nothing."""
    traces = [t for f in bert.json("/functions", run=".")["functions"] for t in f["trace_list"]
              if t["calls"]]
    assert traces
    full = bert.json("/timeline", run=".", max_events=10000)
    for trace in traces:
        got = bert.json("/timeline", run=".", max_events=10000, graph=trace["graph"])
        assert got["level"] == "events" and got["graph"] == trace["graph"]
        assert got["span_ns"] == full["span_ns"] and 0 < got["total"] < full["total"]
        by_lane: dict[str, list[list[int]]] = {}
        for e in got["events"]:
            by_lane.setdefault(got["lanes"][e[0]], []).append(e)
        assert sorted(by_lane) == ["function", "graph"], sorted(by_lane)
        assert {got["names"][e[3]] for e in by_lane["function"]} == {trace["graph"]}
        spans = [(e[1], e[1] + e[2]) for e in by_lane["function"]]
        assert all(any(a <= e[1] and e[1] + e[2] <= z for a, z in spans) for e in by_lane["graph"])
        export = bert.get("/export", run=".", format="trace", graph=trace["graph"])
        other = json.loads(export.get_data(as_text=True))["otherData"]
        assert other["graph"] == trace["graph"] and other["events"] == got["total"]
    unknown = bert.json("/timeline", run=".", graph="__inference_never_called_1")
    assert unknown["total"] == 0 and unknown["nearest"] == {"before": None, "after": None}


# ---------------------------------------------------------------- compare

def test_compare_onednn_on_and_off(pair: Api) -> None:
    c = pair.json("/compare", a="on", b="off")
    assert c["a"]["run"] == "on" and c["b"]["run"] == "off"
    assert c["a"]["onednn_state"] == "on" and c["b"]["onednn_state"] == "off"
    rows = {r["op_type"]: r for r in c["rows"]}
    t = rows["Transpose"]
    assert t["eager"]["a"]["kernels"] == ["_MklTranspose"]
    assert t["eager"]["b"]["kernels"] == ["Transpose"]
    assert t["eager"]["a"]["classes"] == ["onednn"] and t["eager"]["b"]["classes"] == ["stock"]
    assert "eager kernel" in t["changes"] and t["kernel_changed"]
    assert "MatMul" in rows and rows["MatMul"]["kernel_changed"]
    assert c["kernel_changes"] >= 2
    # Element-wise ops run stock either way: not listed as changed.
    assert "Relu" not in rows or not rows["Relu"]["kernel_changed"]
    everything = pair.json("/compare", a="on", b="off", changed_only=0, page_size=200)
    assert everything["total"] > c["total"]
    assert pair.json("/compare", a="on", b="on")["total"] == 0


# ---------------------------------------------------------------- exports

def test_exports_parse(bert: Api) -> None:
    response = bert.get("/export", run=".", format="csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    transpose = [r for r in rows if r["op_type"] == "Transpose" and r["mode"] == "eager"]
    assert [r["kernel"] for r in transpose] == ["_MklTranspose"]
    assert transpose[0]["onednn"] == "true" and transpose[0]["evidence"] == "log"

    # The CLI's contract (tb-opmode summary --format json), as the export's tooltip says.
    doc = bert.json("/export", run=".", format="json")
    assert set(doc) == {"version", "warnings", "runs"} and len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert run["run"] == "." and any(r["op_type"] == "Transpose" for r in run["op_types"])

    trace = bert.json("/export", run=".", format="trace")
    events = trace["traceEvents"]
    threads = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert {"eager ops", "graph ops (inside tf.function)"} <= threads
    slices = [e for e in events if e.get("ph") == "X"]
    assert slices and all(e["dur"] >= 0 and e["ts"] > 0 for e in slices)
    assert any("[graph · _Mkl" in e["name"] and "oneDNN]" in e["name"] for e in slices)
    assert any("[eager · " in e["name"] for e in slices)
    small = bert.json("/export", run=".", format="trace", max_events=5)
    assert len([e for e in small["traceEvents"] if e.get("ph") == "X"]) == 5
    assert small["otherData"]["truncated"] is True


def test_tab_and_summary_share_times_classes_and_csv(bert: Api, bert_logdir: Path) -> None:
    """One source of truth: the matrix's time is the summary's time_share, the table's time
    per (op type, mode) is the sum of the timeline's events of that op type in that mode,
    and the tab's CSV holds the CLI's CSV lines."""
    (model,) = load(str(bert_logdir))
    doc = summary([model], str(bert_logdir))
    share = {(c["mode"], c["class"]): c["ms"] for c in doc["runs"][0]["time_share"]["cells"]}
    o = bert.json("/overview", run=".")
    for cell in o["matrix"]:
        assert abs(cell["time_ns"] / 1e6 - share.get((cell["mode"], cell["class"]), 0.0)) < 1e-6
    trace = bert.json("/export", run=".", format="trace")
    assert trace["otherData"]["truncated"] is False
    from_timeline: dict[tuple[str, str], float] = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e["cat"] not in ("function", "debug"):
            key = (e["args"]["op_type"], e["cat"].split("_")[0])
            from_timeline[key] = from_timeline.get(key, 0.0) + e["dur"]
    rows = all_rows(bert, ".")
    timed = 0
    for row in rows:
        for mode in ("eager", "graph"):
            if "time_ns" in row[mode]:
                timed += 1
                summed_us = from_timeline[(row["op_type"], mode)]
                assert abs(row[mode]["time_ns"] / 1000 - summed_us) < 1e-3
            for k in row[mode]["kernels"]:
                assert k["class"] in ("onednn", "fused", "stock", "unknown")
    assert timed > 0
    tab_csv = bert.get("/export", run=".", format="csv").get_data(as_text=True).splitlines()
    cli_csv = render_csv(doc).splitlines()
    assert len(tab_csv) == len(cli_csv)
    assert {",".join(line.split(",")[:8]) for line in tab_csv} == set(cli_csv)


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("path,params", [
    ("/overview", {"run": "nope"}),
    ("/optypes", {"run": "nope"}),
    ("/op", {"run": "nope", "op": "Transpose"}),
    ("/op", {"run": ".", "op": "NoSuchOp"}),
    ("/timeline", {"run": "../.."}),
    ("/export", {"run": "nope", "format": "csv"}),
    ("/compare", {"a": ".", "b": "nope"}),
])
def test_unknown_run_or_op_is_404(bert: Api, path: str, params: dict[str, str]) -> None:
    response = bert.get(path, **params)
    assert response.status_code == 404
    assert "nope" in response.get_data(as_text=True) or "NoSuchOp" in response.get_data(
        as_text=True) or "../.." in response.get_data(as_text=True)


@pytest.mark.parametrize("path,params,needle", [
    ("/overview", {}, "run"),
    ("/optypes", {"run": ".", "sort": "bogus"}, "sort"),
    ("/optypes", {"run": ".", "filter": "both,bogus"}, "filter"),
    ("/optypes", {"run": ".", "order": "up"}, "order"),
    ("/optypes", {"run": ".", "page": "-1"}, "page"),
    ("/optypes", {"run": ".", "page": "abc"}, "page"),
    ("/optypes", {"run": ".", "page_size": "0"}, "page_size"),
    ("/optypes", {"run": ".", "page_size": "100000"}, "page_size"),
    ("/optypes", {"run": ".", "q": "x" * 1000}, "q"),
    ("/op", {"run": "."}, "op"),
    ("/op", {"run": ".", "op": "Transpose", "sites": "0"}, "sites"),
    ("/timeline", {"run": ".", "max_events": "0"}, "max_events"),
    ("/timeline", {"run": ".", "max_events": "1e9"}, "max_events"),
    ("/timeline", {"run": ".", "start": "100", "end": "50"}, "end"),
    ("/timeline", {"run": ".", "debug": "maybe"}, "debug"),
    ("/timeline", {"run": ".", "graph": "x" * 1000}, "graph"),
    ("/compare", {"a": "."}, "b"),
    ("/compare", {"a": ".", "b": ".", "changed_only": "perhaps"}, "changed_only"),
    ("/export", {"run": ".", "format": "xml"}, "format"),
    ("/export", {"run": ".", "format": "trace", "max_events": "999999999"}, "max_events"),
    ("/runs", {"want": "r" * 20000}, "want"),
])
def test_bad_parameter_is_400_with_message(bert: Api, path: str, params: dict[str, str],
                                           needle: str) -> None:
    response = bert.get(path, **params)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert needle in response.get_data(as_text=True)


def test_run_still_loading_is_503_then_200(bert_logdir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A run found but not built yet answers 503 (with Retry-After), not 404; once built, 200."""
    release = threading.Event()
    real_build = run_store.build_run

    def slow_build(sources: Any, logdir: str) -> Any:
        assert release.wait(300), "the test never released the build"
        return real_build(sources, logdir)

    monkeypatch.setattr(run_store, "build_run", slow_build)
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(bert_logdir)))
    api = Api(plugin)
    try:
        for _ in range(600):
            if [r["status"] for r in api.json("/runs")["runs"]] == ["loading"]:
                break
            time.sleep(0.05)
        response = api.get("/overview", run=".")
        text = response.get_data(as_text=True)
        assert response.status_code == 503, text
        assert "still loading" in text and response.headers["Retry-After"]
        assert api.status("/overview", run="nope") == 404     # unknown is still a 404
        release.set()
        assert plugin.wait_idle(120)
        assert api.json("/overview", run=".")["run"] == "."
    finally:
        release.set()
        plugin.close()


@pytest.mark.parametrize("error", [RuntimeError("injected bug"), KeyError("injected bug"),
                                   ValueError("injected bug")])
def test_a_bug_in_a_route_is_500_with_its_traceback_logged(
        bert: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        error: Exception) -> None:
    """Any exception that is not one of errors.py's is a bug: a 500, never a 404 (a KeyError
    inside the view is not "no such op type") nor a 400 (a ValueError is not a bad
    parameter), and its traceback is in the log."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(tab, "op_detail", broken)
    with caplog.at_level(logging.ERROR, logger=routes.__name__):
        response = bert.get("/op", run=".", op="Transpose")
    assert response.status_code == 500, response.get_data(as_text=True)
    assert "injected" not in response.get_data(as_text=True)     # details stay in the log
    (record,) = [r for r in caplog.records if r.name == routes.__name__]
    assert record.exc_info is not None and record.exc_info[1] is error
    assert "Traceback" in caplog.text and "broken" in caplog.text
    monkeypatch.undo()                       # the plugin goes on answering
    assert bert.json("/op", run=".", op="Transpose")["op_type"] == "Transpose"


# ---------------------------------------------------------------- static files

def test_static_files_served(bert: Api) -> None:
    for name, ctype in STATIC_FILES.items():
        response = bert.get("/" + name)
        assert response.status_code == 200, name
        assert response.mimetype == ctype
        assert response.get_data()
    assert b"export async function render" in bert.get("/index.js").get_data()
    assert bert.get("/static/index.js").status_code == 200


@pytest.mark.parametrize("path", [
    "/../../x",
    "/%2e%2e/%2e%2e/x",
    "/static/../plugin.py",
    "/static/%2e%2e/plugin.py",
    "/static/%2e%2e%2fplugin.py",
    "/static/..%2f..%2fsetup.py",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/..\\plugin.py",
    "/static/views.py",
    "/static/",
    "//etc/passwd",
    "/plugin.py",
    "/static/index.js/../../plugin.py",
])
def test_static_route_refuses_traversal(bert: Api, path: str) -> None:
    response = bert.client.get(PREFIX + path)
    assert response.status_code != 200, path
    body = response.get_data()
    assert b"import" not in body and b"root:" not in body


# ---------------------------------------------------------------- size cap

def test_largest_answers_stay_under_one_megabyte(bert: Api) -> None:
    # Api.get asserts the cap on every response; ask for the largest pages allowed.
    bert.json("/optypes", run=".", page_size=tab.MAX_PAGE_SIZE)
    bert.json("/timeline", run=".", max_events=timeline.MAX_EVENTS, debug=1)
    bert.json("/op", run=".", op="AddV2", sites=50)
    bert.json("/export", run=".", format="trace", max_events=timeline.MAX_TRACE_EVENTS, debug=1)
    bert.get("/export", run=".", format="csv")
    bert.json("/export", run=".", format="json")


# ---------------------------------------------------------------- reload

def test_changed_files_are_reloaded_while_the_old_model_is_served(
        tmp_path: Path, cnn_logdir: Path) -> None:
    logdir = tmp_path / "live"
    shutil.copytree(cnn_logdir, logdir)   # a real copy: we append to a file
    api = make_api(logdir, rescan_seconds=0.2)
    try:
        first = api.json("/runs")["runs"][0]
        before = api.json("/overview", run=".")
        errors: list[str] = []
        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                for path, params in (("/overview", {"run": "."}), ("/optypes", {"run": "."}),
                                     ("/runs", {})):
                    response = api.client.get(PREFIX + path, query_string=params)
                    if response.status_code != 200:
                        errors.append(f"{path}: {response.status_code}")
                    elif path == "/overview":
                        body = json.loads(response.get_data(as_text=True))
                        if body["modes"] != before["modes"]:
                            errors.append("overview changed mid-reload")

        threads = [threading.Thread(target=hammer) for _ in range(8)]
        for t in threads:
            t.start()
        with open(logdir / "tf_log.txt", "a", encoding="utf-8") as f:
            f.write("a line written while the run is still going\n")
        deadline = time.monotonic() + 60
        reloaded = None
        while time.monotonic() < deadline:
            run = api.json("/runs")["runs"][0]
            if run["status"] == "ready" and run["loaded_at"] > first["loaded_at"]:
                reloaded = run
                break
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join()
        assert reloaded is not None, "the changed run was not reloaded"
        assert errors == []
        assert api.json("/overview", run=".")["modes"] == before["modes"]
    finally:
        api.plugin.close()
