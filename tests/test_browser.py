"""The tab in a real browser: a real ``tensorboard`` process, headless Chromium via Playwright.

In: the session fixtures of conftest.py, linked under one logdir as three runs
(``bert``: model.fit with dump + profile + log; ``on`` / ``off``: the CNN loop
with oneDNN on and off). Out: assertions on what a person sees (the tab is
listed and loads, the op table, a filter, the op detail, the timeline's
pixels, the comparison), no console errors, and screenshots in
tests/artifacts/ to look at.
"""
from __future__ import annotations

import importlib.metadata
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import OpModePage, get_json, link_tree, running_tensorboard

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture(scope="module")
def browser_logdir(tmp_path_factory: pytest.TempPathFactory, bert_logdir: Path,
                   cnn_logdir: Path, cnn_off_logdir: Path) -> Path:
    parent = tmp_path_factory.mktemp("browser_logdir")
    link_tree(bert_logdir, parent / "bert")
    link_tree(cnn_logdir, parent / "on")
    link_tree(cnn_off_logdir, parent / "off")
    return parent


@pytest.fixture(scope="module")
def tensorboard(browser_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``tensorboard`` serving the logdir; yields its base URL; always stopped."""
    plugins = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="tensorboard_plugins")}
    assert plugins.get("opmode") == "tb_opmode.plugin:OpModeLoader", (
        "tb_opmode is not installed as a TensorBoard plugin: pip install -e . first")
    log_path = tmp_path_factory.mktemp("tb_log") / "tensorboard.log"
    with running_tensorboard(browser_logdir, log_path, runs=3, timeout=180) as base:
        yield base


class Tab(OpModePage):
    """The TensorBoard page, the tab's iframe, and the console errors seen so far."""

    def __init__(self, browser: Any, base: str, scheme: str = "light") -> None:
        super().__init__(browser, base, 1500, 1100, scheme)

    def shot(self, name: str, selector: str | None = None) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        if selector:
            self.frame.evaluate("(s) => document.querySelector(s).scrollIntoView()", selector)
            time.sleep(0.4)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def table_ops(self) -> list[str]:
        return self.frame.eval_on_selector_all("#opm-table tbody tr[data-op]",
                                               "rows => rows.map(r => r.dataset.op)")

    def wait_table(self, predicate: str) -> None:
        """Wait until ``predicate(ops)`` (JS, ops = op types in the table) holds."""
        self.frame.wait_for_function(
            "(p) => { const ops = [...document.querySelectorAll('#opm-table tbody tr[data-op]')]"
            ".map(r => r.dataset.op); return new Function('ops', 'return ' + p)(ops); }",
            arg=predicate, timeout=45000)

    def info(self) -> str:
        return self.frame.inner_text(".opm-table-info")

    def wait_info_change(self, before: str) -> str:
        """Wait until the table's "1–n of m" line changes (the new page is rendered)."""
        self.frame.wait_for_function(
            "(b) => document.querySelector('.opm-table-info').innerText !== b",
            arg=before, timeout=45000)
        return self.info()

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def tab(browser: Any, tensorboard: str) -> Iterator[Tab]:
    t = Tab(browser, tensorboard)
    yield t
    t.close()


def test_tab_is_listed_and_loads(tab: Tab, tensorboard: str) -> None:
    listing = get_json(f"{tensorboard}/data/plugins_listing")
    assert listing["opmode"]["enabled"] is True
    assert listing["opmode"]["tab_name"] == "Op Mode"
    assert listing["opmode"]["loading_mechanism"]["type"] == "IFRAME"
    assert "Op Mode" in tab.page.inner_text("body") or "OP MODE" in tab.page.inner_text("body")
    options = tab.frame.eval_on_selector_all("#opm-run option", "os => os.map(o => o.value)")
    assert sorted(options) == ["bert", "off", "on"]
    overview = tab.frame.inner_text("#opm-overview")
    assert "TensorFlow" in overview and "oneDNN" in overview and "on" in overview
    assert tab.frame.locator("#opm-matrix tbody tr").count() == 2
    legend = tab.frame.inner_text(".opm-legend")
    for label in ("eager · oneDNN", "eager · stock", "graph · oneDNN", "graph · stock"):
        assert label in legend
    tab.shot("01_overview")
    assert tab.errors == []


def test_scrolled_content_never_shows_between_toolbar_and_legend(tab: Tab) -> None:
    """Toolbar and legend stick as one opaque block: scrolled content passes under
    it, with no sliver between the two (each used to stick on its own)."""
    tab.frame.evaluate("window.scrollTo(0, 500)")
    time.sleep(0.3)
    hits = tab.frame.evaluate("""() => {
        const block = document.querySelector('.opm-sticky');
        const bar = document.querySelector('.opm-toolbar').getBoundingClientRect();
        const legend = document.querySelector('.opm-legend').getBoundingClientRect();
        const ys = [];
        for (let y = 1; y < block.getBoundingClientRect().bottom; y += 2) ys.push(y);
        return {top: block.getBoundingClientRect().top, gapTop: bar.bottom, gapBottom: legend.top,
                inside: ys.map(y => block.contains(document.elementFromPoint(40, y)))};
    }""")
    tab.frame.evaluate("window.scrollTo(0, 0)")
    assert hits["top"] == 0 and hits["gapTop"] <= hits["gapBottom"]
    assert all(hits["inside"]), hits


def test_table_shows_transpose_with_its_kernels_and_filters_work(tab: Tab, tensorboard: str) -> None:
    tab.frame.select_option("#opm-run", "bert")
    tab.frame.fill("#opm-search", "Transpose")
    tab.wait_table("ops.length === 1 && ops[0] === 'Transpose'")
    row = tab.frame.locator("#opm-table tr[data-op='Transpose']")
    cells = row.locator("td").all_inner_texts()
    api = get_json(f"{tensorboard}/data/plugin/opmode/optypes?run=bert&q=Transpose")["rows"][0]
    assert cells[1] == str(api["eager"]["executions"])
    assert "_MklTranspose" in cells[2] and "oneDNN" in cells[2] and "LOG" in cells[2].upper()
    assert cells[3] == str(api["graph"]["executions"]) and api["graph"]["executions"] > 0
    for k in api["graph"]["kernels"]:
        # Executions grappler removed ran no kernel: they say so instead of a name.
        assert (k["name"] if k["kind"] != "removed" else "no kernel (removed by grappler)") in cells[4]
    if not api["graph"]["kernels"]:
        assert "kernel ?" in cells[4]   # executed in graphs, no evidence names the kernel
    tab.shot("02_search_transpose", "#opm-ops")

    searched = tab.info()
    tab.frame.fill("#opm-search", "")
    unfiltered = tab.wait_info_change(searched)
    assert "filtered" not in unfiltered
    tab.frame.check("input[data-filter='no_onednn']")
    no_onednn = tab.wait_info_change(unfiltered)
    assert "filtered from" in no_onednn
    ops = tab.table_ops()
    assert ops and "Transpose" not in ops and "MatMul" not in ops
    kinds = tab.frame.eval_on_selector_all("#opm-table tbody .opm-kind", "ks => ks.map(k => k.textContent)")
    assert kinds and "oneDNN" not in kinds
    tab.frame.check("input[data-filter='both']")
    tab.wait_info_change(no_onednn)
    both = tab.frame.locator("#opm-table tbody tr[data-op]")
    assert both.count() > 0
    for i in range(both.count()):
        texts = both.nth(i).locator("td").all_inner_texts()
        assert texts[1] != "0" and texts[3] != "0"
    tab.shot("03_filtered", "#opm-ops")
    tab.frame.uncheck("input[data-filter='both']")
    tab.frame.uncheck("input[data-filter='no_onednn']")
    tab.frame.wait_for_function(
        "(u) => document.querySelector('.opm-table-info').innerText === u", arg=unfiltered,
        timeout=45000)
    # Sorting by op type puts the names in order.
    tab.frame.click("button[data-sort='op_type']")
    tab.frame.wait_for_selector("th.opm-sorted button[data-sort='op_type']", timeout=45000)
    ops = tab.table_ops()
    assert [o.lower() for o in ops] == sorted(o.lower() for o in ops)
    assert tab.errors == []


def test_clicking_a_row_shows_explanation_and_call_sites(tab: Tab) -> None:
    tab.frame.select_option("#opm-run", "bert")
    tab.frame.fill("#opm-search", "Transpose")
    tab.wait_table("ops.length === 1 && ops[0] === 'Transpose'")
    tab.frame.click("#opm-table tr[data-op='Transpose'] td.opm-op")
    tab.frame.wait_for_selector("#opm-answer", timeout=20000)
    # The detail leads with the answer; call sites and graphs are folded below it.
    tab.frame.click("#opm-sites-box > summary")
    tab.frame.click("#opm-graphs-box > summary")
    tab.frame.wait_for_selector("#opm-sites .opm-site", timeout=20000)
    explanation = tab.frame.inner_text("#opm-explanation")
    assert "_MklTranspose" in explanation
    sites = tab.frame.inner_text("#opm-sites")
    assert "make_logdir.py:" in sites and "tf.transpose(y)" in sites
    hit = tab.frame.inner_text("#opm-sites .opm-line-hit")
    assert hit.strip()
    assert tab.frame.locator(".opm-graphs tbody tr").count() >= 1
    assert tab.frame.locator("#opm-table tr.opm-selected").count() == 1
    tab.shot("04_op_detail", "#opm-ops")
    tab.frame.fill("#opm-search", "")
    assert tab.errors == []


def test_timeline_draws_and_zooms(tab: Tab, tensorboard: str) -> None:
    tab.frame.select_option("#opm-run", "on")
    tab.frame.wait_for_function(
        "() => document.querySelector('.opm-timeline-host').dataset.run === 'on' && "
        "/ ops/.test(document.querySelector('#opm-timeline-card .opm-filters').innerText)",
        timeout=20000)
    tab.frame.evaluate("document.querySelector('#opm-timeline-card').scrollIntoView()")
    time.sleep(1.0)
    coloured = tab.frame.evaluate("""() => {
        const c = document.querySelector('.opm-timeline-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const palette = [[0,114,178],[230,159,0],[86,180,233],[213,94,0],[0,158,115],[153,153,153]];
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
          for (const [r, g, b] of palette) {
            if (Math.abs(d[i]-r) < 6 && Math.abs(d[i+1]-g) < 6 && Math.abs(d[i+2]-b) < 6) { n++; break; }
          }
        }
        return n;
    }""")
    assert coloured > 2000, f"only {coloured} pixels in the legend's colours"
    before = tab.frame.inner_text("#opm-timeline-card .opm-filters .opm-muted")
    canvas = tab.frame.locator(".opm-timeline-canvas")
    # Hover the tf.function lane near the start: the call of the train step.
    canvas.hover(position={"x": 112 + 16, "y": 24 + 10})
    canvas.hover(position={"x": 112 + 20, "y": 24 + 11})
    tab.frame.wait_for_selector(".opm-tooltip:not([hidden])", timeout=20000)
    assert "tf.function call" in tab.frame.inner_text(".opm-tooltip")
    tab.shot("05_timeline_hover")
    # Zoom in around the first graph op (the first call of the train step).
    full = get_json(f"{tensorboard}/data/plugin/opmode/timeline?run=on")
    first_graph = min(e[1] for e in full["events"] if full["lanes"][e[0]] == "graph")
    box = canvas.bounding_box()
    plot = box["width"] - 112 - 8
    tab.page.mouse.move(box["x"] + 112 + plot * first_graph / full["span_ns"] + 2, box["y"] + 60)
    for _ in range(6):
        tab.page.mouse.wheel(0, -300)
        time.sleep(0.05)
    tab.frame.wait_for_function(
        "(b) => document.querySelector('#opm-timeline-card .opm-filters .opm-muted').innerText !== b",
        arg=before, timeout=30000)
    time.sleep(0.8)
    graph_pixels = tab.frame.evaluate("""() => {
        const c = document.querySelector('.opm-timeline-canvas');
        const dpr = window.devicePixelRatio || 1;
        // The graph lane: below the axis (24), the function lane (22+6) and the eager lane (44+6).
        const y0 = Math.round((24 + 28 + 50) * dpr), h = Math.round(44 * dpr);
        const d = c.getContext('2d').getImageData(0, y0, c.width, h).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
          if ((Math.abs(d[i]-86) < 6 && Math.abs(d[i+1]-180) < 6 && Math.abs(d[i+2]-233) < 6) ||
              (Math.abs(d[i]-213) < 6 && Math.abs(d[i+1]-94) < 6 && Math.abs(d[i+2]) < 6)) n++;
        }
        return n;
    }""")
    assert graph_pixels > 200, "zoomed in on the graph ops, but none are drawn"
    tab.shot("06_timeline_zoomed", "#opm-timeline-card")
    assert tab.errors == []


def test_compare_shows_onednn_on_off_differences(tab: Tab) -> None:
    tab.frame.select_option("#opm-compare-a", "on")
    tab.frame.select_option("#opm-compare-b", "off")
    tab.frame.wait_for_function(
        "() => { const t = document.querySelector('#opm-compare-card').innerText;"
        " return t.includes('A: on (') && t.includes('B: off (') &&"
        " document.querySelector(\"#opm-compare-table tr[data-compare-op='Transpose']\"); }",
        timeout=45000)
    text = tab.frame.inner_text("#opm-compare-card")
    assert "oneDNN on" in text and "oneDNN off" in text
    row = tab.frame.inner_text("#opm-compare-table tr[data-compare-op='Transpose']")
    assert "_MklTranspose" in row and "eager kernel" in row
    matmul = tab.frame.inner_text("#opm-compare-table tr[data-compare-op='MatMul']")
    assert "_MklMatMul" in matmul and "MatMul" in matmul
    tab.shot("07_compare", "#opm-compare-card")
    assert tab.errors == []


def test_dark_theme_renders(browser: Any, tensorboard: str) -> None:
    dark = Tab(browser, tensorboard, scheme="dark")
    try:
        bg = dark.frame.evaluate("getComputedStyle(document.body).backgroundColor")
        assert bg != "rgb(245, 245, 245)" and bg.startswith("rgb(")
        r, g, b = (int(x) for x in bg[4:-1].split(","))
        assert r + g + b < 3 * 80, bg
        dark.frame.click("#opm-table tbody tr[data-op] td.opm-op")
        dark.frame.wait_for_selector("#opm-explanation", timeout=20000)
        dark.shot("08_dark", "#opm-ops")
        assert dark.errors == []
    finally:
        dark.close()
