"""The timeline, accessibility and exports in a real browser against a real ``tensorboard``:
what the dump cannot count, the timeline (zoom, ticks, binned views), accessibility (text
scaling, keyboard, name breaking, axe-core) and exports, Compare with one run, the legend,
the default run.

In: the session logdirs of conftest.py (``bert``: the seed scenario, a FULL_HEALTH dump +
profile + log; ``on``: the CNN loop), linked under one logdir as test_browser_layout_and_labels.py
does; a one-run logdir. axe-core is the pinned one ``make axe`` installs under
.tools/ (or ``AXE_CORE_JS`` naming an axe.min.js); the tests never fetch it. Out: assertions
on what a person (or a screen reader) gets, and screenshots in tests/artifacts/.
"""
from __future__ import annotations

import csv
import io
import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, get_json, link_tree, running_tensorboard
from .test_browser_layout_and_labels import SIZES, Page, _plugin_installed

pytestmark = pytest.mark.browser

AXE_VERSION = "4.14.1"  # the Makefile's AXE_VERSION
AXE_DIR = ROOT / ".tools" / "node_modules" / "axe-core"
GUTTER = 112   # timeline.js: the lane labels' width, left of the plot


@pytest.fixture(scope="module")
def rest_logdir(tmp_path_factory: pytest.TempPathFactory, bert_logdir: Path,
                cnn_logdir: Path) -> Path:
    parent = tmp_path_factory.mktemp("tab_rest_logdir")
    # "a_cnn" sorts first but has fewer executions than the seed run: the default run is
    # the one with the most evidence, not the alphabetically first.
    link_tree(cnn_logdir, parent / "a_cnn")
    link_tree(bert_logdir, parent / "bert")
    return parent


@pytest.fixture(scope="module")
def tensorboard(rest_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _plugin_installed()
    log_path = tmp_path_factory.mktemp("tb_rest_log") / "tensorboard.log"
    with running_tensorboard(rest_logdir, log_path, runs=2, timeout=180) as base:
        yield base


@pytest.fixture(scope="session")
def axe_js() -> str:
    """The text of axe.min.js: from ``AXE_CORE_JS``, else the pinned axe-core that ``make axe``
    installed under .tools/. Nothing is fetched here, and a run that has no browser skips
    before anything is read (session fixtures are set up before the module's ``browser``)."""
    pytest.importorskip("playwright.sync_api")
    given = os.environ.get("AXE_CORE_JS")
    if given:
        return Path(given).read_text()
    package = AXE_DIR / "package.json"
    if not package.exists():
        pytest.fail(f"no axe-core under {AXE_DIR}: run `make axe` (installs axe-core "
                    f"{AXE_VERSION}), or set AXE_CORE_JS to an axe.min.js")
    version = json.loads(package.read_text()).get("version")
    if version != AXE_VERSION:
        pytest.fail(f"{package} is axe-core {version}, the tests pin {AXE_VERSION}: run `make axe`")
    return (AXE_DIR / "axe.min.js").read_text()


def fetch_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=20) as response:
        return response.read().decode("utf-8")


def frame_url(p: Page, href: str) -> str:
    """An href of the tab's iframe (relative to its base) as an absolute URL."""
    return p.frame.evaluate("(h) => new URL(h, document.baseURI).href", href)


# ---------------------------------------------------------------- 4: silent gaps

def test_ops_the_dump_cannot_count_are_said(browser: Any, tensorboard: str) -> None:
    """A FULL_HEALTH dump traces float tensors only: Pack, ConcatV2, SelectV2 and
    AssignVariableOp show 0 graph executions though the profile timed them in graphs. The
    row, the detail and the overview say so, with what the profile and the log saw."""
    o = get_json(f"{tensorboard}/data/plugin/opmode/overview?run=bert")
    assert o["dump"]["modes"] == ["FULL_HEALTH"]
    rows = {r["op_type"]: r for r in get_json(
        f"{tensorboard}/data/plugin/opmode/optypes?run=bert&page_size=200")["rows"]}
    for op in ("Pack", "ConcatV2", "SelectV2", "AssignVariableOp"):
        u = rows[op]["graph"]["uncounted"]
        assert rows[op]["graph"]["executions"] == 0 and u["profile_events"] > 0, op
        assert op in o["dump"]["uncounted_op_types"]
    p = Page(browser, tensorboard, 1400, 900)
    try:
        # Folded under the shares it qualifies; its summary says how many, opened it says which.
        assert "Not counted by the dump" in p.frame.inner_text("#opm-dump-coverage summary")
        p.frame.click("#opm-dump-coverage summary")
        coverage = p.frame.inner_text("#opm-dump-coverage")
        assert "FULL_HEALTH" in coverage and "float tensors only" in coverage
        assert "Pack" in coverage and "cover what the dump counts" in coverage
        title = p.frame.inner_text(".opm-share-block[data-field='executions'] h3")
        assert "the dump counts" in title and "FULL_HEALTH" in title
        p.frame.evaluate("document.querySelector('#opm-dump-coverage').scrollIntoView({block: 'center'})")
        p.frame.wait_for_timeout(200)
        p.shot("dump_coverage")
        p.search("Pack")
        row = p.frame.locator("#opm-table tr[data-op='Pack']")
        cells = row.locator("td")
        assert "not counted" in cells.nth(3).inner_text()
        kernels = cells.nth(4).inner_text()
        events = rows["Pack"]["graph"]["uncounted"]["profile_events"]
        assert "FULL_HEALTH" in kernels and "float tensors only" in kernels
        assert f"the profile saw {events:,} graph event" in kernels
        assert "Pack" in kernels and "PROFILE" in kernels.upper()
        row.scroll_into_view_if_needed()
        p.frame.evaluate("document.querySelector(\"#opm-table tr[data-op='Pack']\").scrollIntoView({block: 'center'})")
        p.frame.wait_for_timeout(200)
        p.shot("uncounted_row")
        row.locator("td.opm-op").click()
        p.frame.wait_for_selector("#opm-answer [data-mode='graph'][data-uncounted]", timeout=20000)
        graph = p.frame.inner_text("#opm-answer [data-mode='graph']")
        assert "not counted by the dump" in graph and "float tensors only" in graph
        assert "did not run in a graph" not in graph
        p.frame.wait_for_timeout(500)   # the drawer slides in
        p.shot("uncounted_detail")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- 8: the timeline

def _timeline_geometry(p: Page) -> dict[str, float]:
    p.frame.evaluate("document.querySelector('#opm-timeline-card').scrollIntoView()")
    p.frame.wait_for_timeout(300)
    box = p.frame.locator(".opm-timeline-canvas").bounding_box()
    return {"x": box["x"], "y": box["y"], "plot": box["width"] - GUTTER - 8,
            "lane_y": box["y"] + 24 + 22 + 6 + 44 + 6 + 22}   # the graph lane's middle


def _wheel_zoom_at(p: Page, x: float, y: float, times: int) -> None:
    p.page.mouse.move(x, y)
    for _ in range(times):
        p.page.mouse.wheel(0, -600)
        p.frame.wait_for_timeout(60)
    p.frame.wait_for_timeout(900)   # the window's fetch


def _largest_gap(events: list[list[Any]]) -> tuple[int, int]:
    spans = sorted((e[1], e[1] + e[2]) for e in events)
    best, end = (0, 0), spans[0][1]
    for s, e in spans[1:]:
        if s - end > best[1] - best[0]:
            best = (end, s)
        end = max(end, e)
    return best


def test_timeline_deep_zoom_ticks_and_empty_window(browser: Any, tensorboard: str) -> None:
    """Deep zoom: tick labels and the window's bounds stay distinct; an empty window says
    "no ops here" (not the whole run's op count) and where the nearest ops are."""
    full = get_json(f"{tensorboard}/data/plugin/opmode/timeline?run=bert&max_events=10000")
    assert full["level"] == "events"
    p = Page(browser, tensorboard, 1400, 900)
    try:
        g = _timeline_geometry(p)
        # Deep into a busy part: the middle of the longest graph op.
        graph = [e for e in full["events"] if full["lanes"][e[0]] == "graph"]
        ev = max(graph, key=lambda e: e[2])
        x = g["x"] + GUTTER + (ev[1] + ev[2] / 2) / full["span_ns"] * g["plot"]
        _wheel_zoom_at(p, x, g["lane_y"], 9)
        info = p.frame.inner_text("#opm-timeline-info")
        window = info.split(" (")[0].removeprefix("window ").split(" – ")
        assert len(window) == 2 and window[0] != window[1], info
        ticks = p.frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.ticks")
        labels = ticks.split("|")
        assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
        assert "ops" in info and "no ops here" not in info
        p.shot("timeline_deep_zoom")
        # An empty window: zoom deep into the largest gap between ops.
        p.frame.click("text=Reset")
        p.frame.wait_for_timeout(600)
        a, b = _largest_gap(full["events"])
        assert b - a > full["span_ns"] / 200, (a, b)
        x = g["x"] + GUTTER + (a + b) / 2 / full["span_ns"] * g["plot"]
        _wheel_zoom_at(p, x, g["lane_y"], 8)
        p.frame.wait_for_function(
            "() => (document.querySelector('.opm-timeline-canvas').dataset.message || '')"
            ".startsWith('no ops here')", timeout=10000)
        said = p.frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.message")
        assert "earlier" in said or "later" in said, said
        info = p.frame.inner_text("#opm-timeline-info")
        assert "no ops here" in info and f"{full['total']:,} ops" not in info, info
        p.shot("timeline_empty_window")
        assert p.errors == []
    finally:
        p.close()


def test_timeline_zoom_buttons_strip_and_window_export(browser: Any, tensorboard: str) -> None:
    """The zoom buttons zoom on the ops, not on an empty centre; a strip shows where the
    ops are in the whole run; the trace export is the window shown."""
    full = get_json(f"{tensorboard}/data/plugin/opmode/timeline?run=bert&max_events=10000")
    a, b = _largest_gap(full["events"])
    p = Page(browser, tensorboard, 1400, 900)
    try:
        g = _timeline_geometry(p)
        strip = p.frame.locator(".opm-timeline-strip")
        assert strip.count() == 1
        assert int(strip.get_attribute("data-columns")) > 10
        # A window whose left tenth holds the last ops before the largest gap: its centre
        # is empty, the ops are at the side.
        x_a = g["x"] + GUTTER + a / full["span_ns"] * g["plot"]
        _wheel_zoom_at(p, x_a, g["lane_y"], 4)
        p.page.mouse.down()
        p.page.mouse.move(g["x"] + GUTTER + 0.1 * g["plot"], g["lane_y"], steps=8)
        p.page.mouse.up()
        p.page.mouse.move(5, 5)   # the pointer leaves the timeline
        p.frame.wait_for_timeout(600)
        presses = 10
        for _ in range(presses):
            p.frame.click("#opm-zoom-in")
            p.frame.wait_for_timeout(40)
        p.frame.wait_for_timeout(900)
        said = p.frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.message")
        info = p.frame.inner_text("#opm-timeline-info")
        assert not said and "no ops here" not in info, (said, info)
        p.shot("timeline_zoom_on_ops")
        # The export of the window shown.
        href = p.frame.get_attribute("#opm-window-export", "href")
        assert "start=" in href and "end=" in href
        assert p.frame.get_attribute(".opm-exports a[title*='trace']", "href") == href
        trace = get_json(frame_url(p, href))
        lo, hi = trace["otherData"]["window_ns"]
        assert hi - lo < full["span_ns"] / 1000
        slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        shown = int(info.split(" · ")[1].split(" ")[0].replace(",", ""))
        assert 0 < len(slices) == shown < full["total"]
        # Clicking the strip moves the window there.
        box = strip.bounding_box()
        p.page.mouse.click(box["x"] + GUTTER + 0.05 * (box["width"] - GUTTER - 8), box["y"] + 9)
        p.frame.wait_for_timeout(400)
        assert p.frame.inner_text("#opm-timeline-info") != info
        assert p.errors == []
    finally:
        p.close()


def test_binned_view_counts_long_events_in_every_bin(browser: Any, tensorboard: str) -> None:
    """Zoomed out, a tf.function call longer than a bin is in every bin it spans (with its
    busy time there), not a 1-px tick in its first bin."""
    p = Page(browser, tensorboard, 1000, 700)
    try:
        got = p.frame.evaluate("""async () => {
            const get = (q) => fetch('./timeline?run=bert&' + q).then(r => r.json());
            return [await get('max_events=10000'), await get('max_events=30')]; }""")
        full, binned = got
        assert binned["level"] == "bins"
        lane = full["lanes"].index("function")
        width = binned["bin_ns"]
        long = [e for e in full["events"] if e[0] == lane and e[2] > 3 * width]
        assert long, "no tf.function call spans several bins"
        bins = {(b[0], b[1]): b for b in binned["bins"]}
        for e in long:
            first = e[1] // width * width
            for start in range(first + width, e[1] + e[2] - width, width):
                b = bins.get((lane, start))
                assert b is not None and b[4] >= width * 0.99, (e, start, b)
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- 11: accessibility

def test_text_scales_with_the_root_font_size(browser: Any, tensorboard: str) -> None:
    p = Page(browser, tensorboard, 1400, 900)
    try:
        selectors = ["body", ".opm-kernel-name", ".opm-tag", "#opm-table td.opm-num", ".opm-badge"]
        size = "(s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize)"
        before = [p.frame.evaluate(size, s) for s in selectors]
        p.frame.evaluate("document.documentElement.style.fontSize = '20px'")
        after = [p.frame.evaluate(size, s) for s in selectors]
        for s, a, b in zip(selectors, before, after):
            assert abs(b / a - 20 / 16) < 0.02, (s, a, b)
        p.frame.wait_for_timeout(300)
        p.shot("text_scaled_125")
        p.frame.evaluate("document.documentElement.style.fontSize = ''")
    finally:
        p.close()


def test_keyboard_one_tab_stop_for_the_table_and_timeline_inspection(
        browser: Any, tensorboard: str) -> None:
    p = Page(browser, tensorboard, 1400, 900)
    try:
        # Tab stops from the search box to the timeline: the table's rows are one.
        stops = p.frame.evaluate("""() => {
            const all = [...document.querySelectorAll(
                'a[href], button, input, select, [tabindex]')].filter(e =>
                e.tabIndex >= 0 && !e.disabled && e.offsetParent !== null);
            const a = all.indexOf(document.querySelector('#opm-search'));
            const b = all.indexOf(document.querySelector('.opm-timeline-canvas'));
            return all.slice(a, b).filter(e => e.matches('tr')).length; }""")
        assert stops == 1, stops
        first = p.frame.locator("#opm-table tbody tr[data-op]").first
        first.focus()
        p.frame.press("#opm-table tbody tr[data-op]:first-child", "ArrowDown")
        second = p.frame.evaluate("document.activeElement.dataset.op")
        assert second == p.frame.locator("#opm-table tbody tr[data-op]").nth(1).get_attribute("data-op")
        p.page.keyboard.press("Enter")
        p.frame.wait_for_function(
            "(op) => (document.querySelector('#opm-announce').textContent || '').startsWith(op + ':')",
            arg=second, timeout=20000)
        # The detail is not a live region; the announcement is short.
        assert p.frame.get_attribute("#opm-detail", "aria-live") is None
        assert len(p.frame.inner_text("#opm-announce")) < 200
        p.page.keyboard.press("Escape")
        # A skip link goes from the table to the timeline.
        assert p.frame.locator("#opm-skip-table").count() == 1
        p.frame.focus("#opm-skip-table")
        p.page.keyboard.press("Enter")
        assert p.frame.evaluate("document.activeElement.classList.contains('opm-timeline-canvas')")
        p.frame.wait_for_timeout(500)
        # Inspect boxes by keyboard.
        p.page.keyboard.press("Enter")
        p.frame.wait_for_timeout(200)
        one = p.frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.inspected")
        live = p.frame.eval_on_selector(".opm-timeline-live", "e => e.textContent")
        assert one and live.startswith(one)
        assert p.frame.is_visible(".opm-tooltip")
        p.page.keyboard.press("ArrowRight")
        p.frame.wait_for_timeout(200)
        two = p.frame.eval_on_selector(".opm-timeline-live", "e => e.textContent")
        assert two and two != live
        p.shot("timeline_keyboard_inspect")
        p.page.keyboard.press("Escape")
        assert p.errors == []
    finally:
        p.close()


def test_names_break_only_after_slash_or_underscore(browser: Any, tensorboard: str) -> None:
    """Op and kernel names wrap at "/" and "_" (a <wbr> there), never inside a word."""
    p = Page(browser, tensorboard, 1000, 700, run="a_cnn")
    try:
        style = p.frame.eval_on_selector(".opm-kernel-name", "e => getComputedStyle(e).overflowWrap")
        assert style != "anywhere"
        assert p.frame.locator("#opm-table .opm-kernel-name wbr").count() > 0
        # Squeezed as narrow as the name lets itself be (min-content), every line break
        # falls at a text node's start (after "/" or "_"), not inside a word.
        bad = p.frame.evaluate("""() => {
            const out = [];
            for (const e of document.querySelectorAll('#opm-table .opm-kernel-name')) {
              e.style.display = 'inline-block'; e.style.width = 'min-content';
              let top = null;
              for (const t of e.childNodes) {
                if (t.nodeType !== 3) continue;
                for (let i = 0; i < t.length; i++) {
                  const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
                  const rect = r.getClientRects()[0];
                  if (!rect) continue;
                  if (top !== null && rect.top > top + 2 && i > 0) out.push(e.textContent);
                  top = rect.top;
                }
              }
            }
            return out; }""")
        assert bad == [], bad[:5]
        p.shot("names_squeezed")
    finally:
        p.close()


VIEWS = {
    "overview": ["#opm-glance-card", "#opm-overview", ".opm-sticky"],
    "table": ["#opm-ops"],
    "detail": ["#opm-detail"],
    "timeline": ["#opm-timeline-card"],
    "compare": ["#opm-compare-card"],
}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width,height", SIZES)
def test_axe_no_serious_or_critical_violation(browser: Any, tensorboard: str, axe_js: str,
                                              width: int, height: int, scheme: str) -> None:
    """Each view at 1000x700 (the detail a drawer), 1400x900 and 1920x1080 (the detail
    beside the table), light and dark."""
    p = Page(browser, tensorboard, width, height, scheme=scheme)
    try:
        # The tab's CSP refuses inline scripts but allows eval: load axe-core by eval.
        p.frame.evaluate("(src) => { (0, eval)(src); return typeof axe; }", axe_js)
        p.frame.click("#opm-table tbody tr[data-op] td.opm-op")
        p.frame.wait_for_selector("#opm-answer", timeout=20000)
        p.frame.wait_for_function("() => document.querySelector('#opm-compare-table') || "
                                  "document.querySelector('#opm-compare-card .opm-message')",
                                  timeout=20000)
        found = {}
        for view, include in VIEWS.items():
            p.frame.evaluate("(s) => document.querySelector(s).scrollIntoView()", include[0])
            p.frame.wait_for_timeout(200)
            result = p.frame.evaluate("""async (include) => {
                const r = await axe.run({include: include.map(s => [s])},
                                        {resultTypes: ['violations']});
                return r.violations.filter(v => ['serious', 'critical'].includes(v.impact))
                    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                                nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' +
                                                                   n.failureSummary)}));
            }""", include)
            found[view] = result
            if scheme == "light" or view in ("overview", "table"):
                p.shot(f"axe_{view}_{scheme}")
        assert all(not v for v in found.values()), found
    finally:
        p.close()


# ---------------------------------------------------------------- 12: smaller

def test_exports_default_run_and_legend(browser: Any, tensorboard: str) -> None:
    runs = get_json(f"{tensorboard}/data/plugin/opmode/runs")["runs"]
    most = max(runs, key=lambda r: r["executions"])["run"]
    assert most == "bert" and min(r["run"] for r in runs) == "a_cnn"
    p = Page(browser, tensorboard, 1400, 900, run="bert", wait=False)
    try:
        p.page.goto(f"{tensorboard}/#opmode")
        p.page.wait_for_selector("iframe", timeout=60000)
        p.frame = p.page.locator("iframe").element_handle().content_frame()
        p.frame.wait_for_selector("#opm-table tbody tr[data-op]", timeout=60000)
        p.frame.wait_for_timeout(500)
        assert p.frame.eval_on_selector("#opm-run", "s => s.value") == "bert"
        # JSON: the CLI's contract.
        doc = get_json(frame_url(p, p.frame.get_attribute(".opm-exports a[title*='JSON']", "href")))
        assert set(doc) == {"version", "warnings", "runs"} and doc["runs"][0]["run"] == "bert"
        # CSV: the mode's time once (the column adds up), each kernel's own time.
        text = fetch_text(frame_url(p, p.frame.get_attribute(".opm-exports a[title*='CSV']", "href")))
        lines = list(csv.DictReader(io.StringIO(text)))
        assert "kernel_time_ns" in lines[0]
        rows = {r["op_type"]: r for r in get_json(
            f"{tensorboard}/data/plugin/opmode/optypes?run=bert&page_size=200")["rows"]}
        several = 0
        for (op, mode) in {(r["op_type"], r["mode"]) for r in lines}:
            mine = [r for r in lines if r["op_type"] == op and r["mode"] == mode]
            times = [r["time_ns"] for r in mine]
            if len(mine) > 1:
                several += 1
                assert all(t == "" for t in times[1:]), (op, mode, times)
            want = rows[op][mode].get("time_ns")
            assert times[0] == ("" if want is None else str(want)), (op, mode)
        assert several > 0
        # The legend: table and timeline classes apart from the timeline's own.
        both = p.frame.inner_text("#opm-legend-both")
        timeline_only = p.frame.inner_text("#opm-legend-timeline")
        assert "tf.function call" in timeline_only and "tfdbg instrumentation" in timeline_only
        assert "tf.function" not in both and "tfdbg" not in both and "graph · oneDNN" in both
        assert "removed by grappler" in p.frame.inner_text("#opm-legend-table")
        # Compare never offers B = A.
        a = p.frame.eval_on_selector("#opm-compare-a", "s => s.value")
        disabled = p.frame.eval_on_selector_all("#opm-compare-b option",
                                                "os => os.filter(o => o.disabled).map(o => o.value)")
        assert disabled == [a]
        p.shot("legend_split")
        assert p.errors == []
    finally:
        p.close()


def test_compare_with_one_run_is_disabled_and_says_why(
        browser: Any, bert_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    _plugin_installed()
    one = tmp_path_factory.mktemp("one_run_logdir")
    link_tree(bert_logdir, one / "bert")
    log_path = tmp_path_factory.mktemp("tb_one_log") / "tensorboard.log"
    with running_tensorboard(one, log_path, runs=1, timeout=180) as base:
        p = Page(browser, base, 1400, 900)
        try:
            for sel in ("#opm-compare-a", "#opm-compare-b"):
                assert p.frame.eval_on_selector(sel, "s => s.disabled"), sel
            assert "only one" in p.frame.inner_text("#opm-compare-help")
            p.frame.evaluate("document.querySelector('#opm-compare-card').scrollIntoView()")
            p.frame.wait_for_timeout(200)
            p.shot("compare_one_run")
            assert p.errors == []
        finally:
            p.close()
