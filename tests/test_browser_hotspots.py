"""The Eager hot spots and Functions sections in a real browser against a real ``tensorboard``.

In: two runs under one logdir: ``bert`` (conftest's seed scenario: model.fit with the
Keras TensorBoard callback's histograms, a few eager pre-processing ops, dump + profile +
log), ``traces`` (the trace ledger's workload, ``tests/traces/workloads.py``: a helper of
41 small eager ops on one line, FULL_HEALTH dump, a profile of four iterations) and
``recorded`` (``tb-opmode record`` of a custom loop at the level with no dump). Out:
assertions on what a person sees at 1000x700 and 1400x900 (the section in view once
scrolled to, inside the window's width, the hot line first with DebugDataReader's count,
its time and advice, the library code that issued the bert run's ops; each Python
function's traces, a trace's name filtering the op table and the timeline), no console
errors, and screenshots in tests/artifacts/ to look at.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import OpModePage, get_json, link_tree, needs_tensorflow, running_tensorboard
from .traces.workloads import CellFailed, make_cell

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SIZES = [(1000, 700), (1400, 900)]
CELL = "full_health_profile_log"
RECORD_JOBS = Path(__file__).resolve().parent / "record_jobs.py"


@pytest.fixture(scope="module")
def traces_cell(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_tensorflow()
    out = tmp_path_factory.mktemp("hotspots_cell")
    try:
        make_cell(CELL, out)
    except CellFailed as err:
        pytest.fail(str(err))
    return out


@pytest.fixture(scope="module")
def recorded_loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tb-opmode record`` (the default level: no dump) of the record tests' custom loop,
    whose own line issues two eager ops per step."""
    needs_tensorflow()
    logdir = tmp_path_factory.mktemp("hotspots_record")
    env = {**os.environ, "TB_OPMODE_CACHE": "off"}
    proc = subprocess.run([sys.executable, "-m", "tb_opmode.cli", "record", str(logdir), "--name", "loop",
                           "--", sys.executable, str(RECORD_JOBS), "loop"], env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return logdir / "loop"


@pytest.fixture(scope="module")
def tensorboard(tmp_path_factory: pytest.TempPathFactory, bert_logdir: Path,
                traces_cell: Path, recorded_loop: Path) -> Iterator[str]:
    plugins = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="tensorboard_plugins")}
    assert plugins.get("opmode") == "tb_opmode.plugin:OpModeLoader", (
        "tb_opmode is not installed as a TensorBoard plugin: pip install -e . first")
    parent = tmp_path_factory.mktemp("hotspots_logdir")
    link_tree(bert_logdir, parent / "bert")
    link_tree(traces_cell / "logdir", parent / "traces")
    link_tree(recorded_loop, parent / "recorded")
    log_path = tmp_path_factory.mktemp("tb_hotspots_log") / "tensorboard.log"
    with running_tensorboard(parent, log_path, runs=3, timeout=240) as base:
        yield base


class Page(OpModePage):
    """TensorBoard at one window size, on one run, the hot spots section loaded."""

    def __init__(self, browser: Any, base: str, width: int, height: int, run: str) -> None:
        super().__init__(browser, base, width, height)
        self.width, self.height = width, height
        if self.frame.eval_on_selector("#opm-run", "s => s.value") != run:
            self.frame.select_option("#opm-run", run)
        self.frame.wait_for_function(
            "(run) => { const b = document.querySelector('.opm-hotspots'); "
            "return b && b.dataset.run === run && b.querySelector('#opm-hotspots tbody tr'); }",
            arg=run, timeout=45000)

    def scroll_to_section(self) -> dict[str, float]:
        """The card scrolled into view until the layout above it stops moving (a panel
        above that filled in after one scroll moved the card 37 px out of view in a CI
        run), and where it then is."""
        return self.frame.eval_on_selector("#opm-hotspots-card", _SCROLL_UNTIL_STILL)

    def rows(self) -> list[dict[str, str]]:
        return self.frame.eval_on_selector_all(
            "#opm-hotspots tbody tr.opm-hot-row",
            "rows => rows.map(r => ({location: r.dataset.location, text: r.innerText, "
            "advice: r.nextElementSibling && r.nextElementSibling.classList.contains("
            "'opm-hot-advice') ? r.nextElementSibling.innerText : ''}))")

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"issue25_hotspots_{name}_{self.width}x{self.height}.png"
        self.page.screenshot(path=str(path))
        return path

    def close(self) -> None:
        self.context.close()


# Scroll the card into view until two looks 150 ms apart find it at the same place (at
# most 20 tries), then its box and whether it is wider than it shows.
_SCROLL_UNTIL_STILL = """async (e) => {
    const still = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 150)));
    let last = null;
    for (let i = 0; i < 20; i++) {
        e.scrollIntoView();
        await still();
        const y = e.getBoundingClientRect().y;
        if (y === last) break;
        last = y;
    }
    const r = e.getBoundingClientRect();
    return {x: r.x, y: r.y, width: r.width, height: r.height,
            scroll: e.scrollWidth, client: e.clientWidth};
}"""


def _in_window(box: dict[str, float], width: int, height: int) -> bool:
    return 0 <= box["x"] and box["x"] + box["width"] <= width and 0 <= box["y"] < height


def _section_rows(p: Page, width: int, height: int) -> list[dict[str, str]]:
    """The section scrolled to, in the window and no wider than its card: its rows."""
    box = p.scroll_to_section()
    assert _in_window(box, width, height), box
    assert box["scroll"] <= box["client"] + 1, "the section is wider than its card"
    return p.rows()


@pytest.mark.parametrize("width,height", SIZES)
def test_the_hot_line_leads_with_its_count_time_and_advice(browser: Any, tensorboard: str,
                                                           traces_cell: Path, width: int,
                                                           height: int) -> None:
    truth = json.loads((traces_cell / "truth.json").read_text())
    hot = truth["eager"]["hot_line"]
    p = Page(browser, tensorboard, width, height, "traces")
    try:
        rows = _section_rows(p, width, height)
        assert rows[0]["location"] == hot, rows[0]
        first = rows[0]["text"]
        count = truth["ddr"]["eager_by_user_line"][hot]
        assert f"{count:,}" in first and "eager_hot" in first and "Tanh" in first, first
        assert "µs" in first or "ms" in first, first  # its profiled time
        assert "tf.function" in rows[0]["advice"] and "in a graph" in rows[0]["advice"], rows[0]
        assert any("outside the profile" in r["text"] for r in rows[1:]), [r["text"] for r in rows]
        p.shot("traces")
        assert not p.errors, p.errors
    finally:
        p.close()


@pytest.mark.parametrize("width,height", SIZES)
def test_a_run_with_no_dump_ranks_the_lines_the_job_counted_by_their_time(
        browser: Any, tensorboard: str, width: int, height: int) -> None:
    """A ``kernels`` run of ``record`` (no dump): the job's own line first, its count as the
    contract has it, its time from the job's clock ("timed", not "profiled"), the note
    saying where lines and times come from."""
    doc = get_json(f"{tensorboard}/data/plugin/opmode/hotspots?run=recorded")
    assert doc["time_source"] == "dispatch" and doc["sites"], doc
    p = Page(browser, tensorboard, width, height, "recorded")
    try:
        rows = _section_rows(p, width, height)
        assert [r["location"] for r in rows] == [s["user_location"] for s in doc["sites"]]
        assert all(r["location"].rpartition(":")[0] == str(RECORD_JOBS) for r in rows), rows
        assert "inprocess.py" not in p.frame.inner_text("#opm-hotspots")  # the recording's wrapper
        first = doc["sites"][0]
        assert f"{first['executions']:,}" in rows[0]["text"] and "timed" in rows[0]["text"], rows[0]
        assert "profiled" not in p.frame.inner_text("#opm-hotspots-card")
        summary = p.frame.inner_text(".opm-hot-summary")
        assert "as the job timed their dispatches" in summary and "by that time" in summary, summary
        assert "dispatched its eager ops" in p.frame.inner_text("#opm-hotspots-card .opm-hint")
        p.shot("recorded")
        assert not p.errors, p.errors
    finally:
        p.close()


@pytest.mark.parametrize("width,height", SIZES)
def test_the_demo_names_the_callbacks_histograms_and_its_own_lines(browser: Any, tensorboard: str,
                                                                   width: int, height: int) -> None:
    p = Page(browser, tensorboard, width, height, "bert")
    try:
        rows = _section_rows(p, width, height)
        assert "model.fit" not in rows[0]["text"]  # source text is not shown, names are
        assert "when_multiple_values" in rows[0]["text"], rows[0]
        assert "summary_v2.py" in rows[0]["text"] and "histogram_freq" in rows[0]["advice"], rows[0]
        assert all(r["location"].rpartition(":")[0].endswith("make_logdir.py") for r in rows), rows
        p.shot("demo")
        assert not p.errors, p.errors
    finally:
        p.close()


@pytest.mark.parametrize("width,height", SIZES)
def test_the_functions_section_lists_each_python_function_with_tfs_trace_count(
        browser: Any, tensorboard: str, traces_cell: Path, width: int, height: int) -> None:
    """The Functions section: one block per Python function whose traces and calls are
    TF's own (``experimental_get_tracing_count()`` and the workload's call counts, in the
    cell's truth.json); ``step``, traced on each of its 12 calls, opens onto its 12 traces,
    each saying what changed; the section fits the window's width."""
    truth: dict[str, dict[str, int]] = {}
    for f in json.loads((traces_cell / "truth.json").read_text())["functions"]:
        if f["kind"] == "user":   # one entry per tf.function object: a lambda made in a loop, 12
            mine = truth.setdefault(f["python_name"], {"traces": 0, "calls": 0})
            mine["traces"] += f["traces"]
            mine["calls"] += f["calls"]
    p = Page(browser, tensorboard, width, height, "traces")
    try:
        p.frame.wait_for_function(
            "() => { const b = document.querySelector('.opm-functions-ledger'); "
            "return b && b.dataset.run === 'traces' && b.querySelector('details.opm-fn'); }",
            timeout=45000)
        shown = p.frame.eval_on_selector_all(
            "details.opm-fn", "ds => ds.map(d => [d.dataset.python, "
            "d.querySelector('summary').innerText])")
        heads = dict(shown)
        for name, fn in truth.items():
            assert name in heads, (name, sorted(heads))
            traces = f"{fn['traces']} trace{'' if fn['traces'] == 1 else 's'}"
            assert traces in heads[name] and str(fn["calls"]) in heads[name], (name, heads[name])
        p.frame.evaluate("() => { const d = document.querySelector('details.opm-fn[data-python=\"step\"]');"
                         " d.open = true; d.scrollIntoView(); }")
        p.frame.wait_for_timeout(300)
        rows = p.frame.eval_on_selector_all(
            "details.opm-fn[data-python='step'] .opm-traces tbody tr",
            "rs => rs.map(r => [...r.cells].map(c => c.innerText))")
        assert len(rows) == truth["step"]["traces"], rows
        assert all(r[-1] for r in rows[1:]), rows   # what changed, said for every retrace
        width_ok = p.frame.eval_on_selector(
            "#opm-functions-card", "e => e.getBoundingClientRect().right <= innerWidth + 1")
        assert width_ok
        p.shot("functions")
        # A trace's name filters the op table to its op types; the chip's x shows all again.
        total = p.frame.eval_on_selector(".opm-table-info", "e => e.innerText")
        p.frame.click("details.opm-fn[data-python='step'] .opm-trace-graph")
        p.frame.wait_for_function("() => { const c = document.querySelector('.opm-graph-filter');"
                                  " return c && !c.hidden && c.innerText.includes('__inference_step'); }",
                                  timeout=20000)
        p.frame.wait_for_function("(t) => document.querySelector('.opm-table-info').innerText !== t",
                                  arg=total, timeout=20000)
        shown = p.frame.eval_on_selector_all("#opm-table tbody tr[data-op]", "rs => rs.map(r => r.dataset.op)")
        assert "MatMul" in shown and "Tanh" not in shown, shown   # step's; eager_hot's Tanh is not
        assert "filtered from" in p.frame.eval_on_selector(".opm-table-info", "e => e.innerText")
        p.shot("functions_filtered")
        p.frame.click(".opm-graph-filter-clear")
        p.frame.wait_for_function("(t) => document.querySelector('.opm-table-info').innerText === t",
                                  arg=total, timeout=20000)
        assert not p.errors, p.errors
    finally:
        p.close()


def _ops_shown(p: Page) -> int:
    """The ops the timeline's window shows, as its info line says ("· 1,234 ops")."""
    info = p.frame.inner_text("#opm-timeline-info")
    found = re.search(r"· ([\d,]+) ops", info)
    assert found, info
    return int(found.group(1).replace(",", ""))


def _wait_timeline(p: Page, graph: str) -> None:
    """Until the canvas shows a window fetched for ``graph`` ('' for none) and says its ops."""
    p.frame.wait_for_function(
        "(g) => { const h = document.querySelector('.opm-timeline-host'); "
        "return h.dataset.graph === g && / ops/.test(document.querySelector('#opm-timeline-info').innerText); }",
        arg=graph, timeout=20000)


def test_a_traces_name_filters_the_timeline_to_its_calls(browser: Any, tensorboard: str,
                                                        traces_cell: Path) -> None:
    """A trace's name in the Functions section filters the timeline as it does the op
    table: a chip over the timeline names the trace, the windows the canvas fetches ask for
    it (``graph=``) and hold its calls and the graph ops inside them, the eager lane is
    empty; either chip's x shows everything in both again. The trace is one of ``step``'s
    whose call ran inside the profiled window (TF's own record, the cell's truth.json); for
    one whose call ran outside it, the canvas says there is no call of it to show."""
    truth = json.loads((traces_cell / "truth.json").read_text())
    step = next(f for f in truth["functions"] if f["python_name"] == "step")
    name = next(t["graph"] for t in step["trace_list"] if t["profiled"])
    p = Page(browser, tensorboard, 1400, 900, "traces")
    asked: list[str] = []
    p.page.on("request", lambda r: asked.append(r.url) if "/timeline?" in r.url else None)
    try:
        _wait_timeline(p, "")
        every, table = _ops_shown(p), p.frame.inner_text(".opm-table-info")
        p.frame.evaluate("() => { document.querySelector('details.opm-fn[data-python=\"step\"]')"
                         ".open = true; }")
        p.frame.click(f"details.opm-fn[data-python='step'] .opm-trace-graph:has(code:text-is('{name}'))")
        p.frame.wait_for_function(
            "(g) => { const c = document.querySelector('#opm-timeline-graph-filter'); "
            "return !c.hidden && c.innerText.includes(g); }", arg=name, timeout=20000)
        _wait_timeline(p, name)
        # zoomed to the call: the window shown ("window a – b (width) of span") is narrower
        # than the run, and still holds every op the filter keeps (below)
        p.frame.wait_for_function(
            "() => { const m = /\\(([^)]*)\\) of ([^·]*) ·/.exec("
            "document.querySelector('#opm-timeline-info').innerText); "
            "return m !== null && m[1].trim() !== m[2].trim(); }", timeout=20000)
        assert any(f"graph={name}" in url for url in asked), asked
        window = get_json(f"{tensorboard}/data/plugin/opmode/timeline?run=traces&max_events=10000"
                          f"&graph={name}")
        calls = [e for e in window["events"] if window["lanes"][e[0]] == "function"]
        assert {window["names"][e[3]] for e in calls} == {name} and len(calls) == 1, calls
        assert _ops_shown(p) == window["total"] < every
        assert p.frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.emptyLanes") == "eager"
        assert not p.frame.eval_on_selector(".opm-graph-filter", "c => c.hidden")   # the table's
        p.frame.evaluate("() => document.querySelector('#opm-timeline-card').scrollIntoView()")
        p.frame.wait_for_timeout(300)
        p.shot("timeline_filtered")
        # The timeline's x clears both filters; so does the table's, the timeline's with it.
        p.frame.click("#opm-timeline-graph-clear")
        _wait_timeline(p, "")
        assert _ops_shown(p) == every and "graph=" not in asked[-1], asked[-1]
        p.frame.wait_for_function("(t) => document.querySelector('.opm-table-info').innerText === t",
                                  arg=table, timeout=20000)
        assert p.frame.eval_on_selector(".opm-graph-filter", "c => c.hidden")
        # A trace whose call ran outside the profiled window: the canvas says so.
        unprofiled = next(t["graph"] for t in step["trace_list"] if not t["profiled"])
        p.frame.click(f"details.opm-fn[data-python='step'] .opm-trace-graph:has(code:text-is('{unprofiled}'))")
        p.frame.wait_for_function(
            "(g) => document.querySelector('.opm-timeline-host').dataset.graph === g && "
            "(document.querySelector('.opm-timeline-canvas').dataset.message || '').includes(g)",
            arg=unprofiled, timeout=20000)
        said = p.frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.message")
        assert said == f"no call of {unprofiled} in the profiled window", said
        p.frame.click(".opm-graph-filter-clear")
        _wait_timeline(p, "")
        assert p.frame.eval_on_selector("#opm-timeline-graph-filter", "c => c.hidden")
        assert not p.errors, p.errors
    finally:
        p.close()
