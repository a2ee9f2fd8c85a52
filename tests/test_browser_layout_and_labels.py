"""The tab's layout and labels as people use it, in a real browser against a real ``tensorboard``.

In: the session logdirs of conftest.py (``bert``: the seed scenario, model.fit with dump +
profile + log; ``on``: the CNN loop with oneDNN on, whose graphs hold fused kernels),
linked under one logdir; an empty logdir. Out: assertions on what a person sees at
1000x700, 1400x900 and 1920x1080 (the op detail in view after a click, the op table
inside its box, labels that say what happened, colours by mode x oneDNN with fusion
marked, the "kernel differs" filter, the detail leading with the answer, loading and
empty states, TensorBoard's theme), and screenshots in tests/artifacts/ to look at.
"""
from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import OpModePage, get_json, link_tree, running_tensorboard

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SIZES = [(1000, 700), (1400, 900), (1920, 1080)]
TIME_TEXT = re.compile(r"\d(\.\d+)?\s?(ns|µs|ms|s)\b")
GRAPH_ONEDNN = "rgb(86, 180, 233)"


@pytest.fixture(scope="module")
def use_logdir(tmp_path_factory: pytest.TempPathFactory, bert_logdir: Path,
               cnn_logdir: Path) -> Path:
    parent = tmp_path_factory.mktemp("tab_use_logdir")
    link_tree(bert_logdir, parent / "bert")
    link_tree(cnn_logdir, parent / "on")
    return parent


def _plugin_installed() -> None:
    plugins = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="tensorboard_plugins")}
    assert plugins.get("opmode") == "tb_opmode.plugin:OpModeLoader", (
        "tb_opmode is not installed as a TensorBoard plugin: pip install -e . first")


@pytest.fixture(scope="module")
def tensorboard(use_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _plugin_installed()
    log_path = tmp_path_factory.mktemp("tb_use_log") / "tensorboard.log"
    with running_tensorboard(use_logdir, log_path, runs=2, timeout=180) as base:
        yield base


class Page(OpModePage):
    """TensorBoard at one window size, the Op Mode iframe on one run, console errors."""

    def __init__(self, browser: Any, base: str, width: int, height: int, run: str = "bert",
                 wait: bool = True, scheme: str = "light") -> None:
        super().__init__(browser, base, width, height, scheme, wait=False)
        self.width, self.height = width, height
        self.run = run
        if wait:
            self.open()

    def open(self) -> None:
        self.open_tab()
        if self.frame.eval_on_selector("#opm-run", "s => s.value") != self.run:
            self.frame.select_option("#opm-run", self.run)
        self.frame.wait_for_function(
            "(run) => document.querySelector('.opm-timeline-host').dataset.run === run && "
            "document.querySelector('#opm-glance')", arg=self.run, timeout=45000)
        self.frame.wait_for_timeout(300)

    def open_detail(self, nth: int) -> tuple[str, Any]:
        """Click the nth row's op type; (op type, its detail title's box) once it shows."""
        row = self.frame.locator("#opm-table tbody tr[data-op]").nth(nth)
        op = row.get_attribute("data-op")
        row.locator("td.opm-op").click()
        self.frame.wait_for_function(
            "(op) => { const t = document.querySelector('.opm-detail .opm-detail-title');"
            " return t && t.innerText.startsWith(op); }", arg=op, timeout=20000)
        self.frame.wait_for_timeout(400)   # the drawer slides in
        return op, self.frame.locator(".opm-detail .opm-detail-title").bounding_box()   # page coordinates

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"issue13_{name}_{self.width}x{self.height}.png"
        self.page.screenshot(path=str(path))
        return path

    def search(self, text: str) -> None:
        self.frame.fill("#opm-search", text)
        self.frame.wait_for_function(
            "(q) => { const ops = [...document.querySelectorAll('#opm-table tbody tr[data-op]')]"
            ".map(r => r.dataset.op.toLowerCase()); return ops.length && ops.every(o => o.includes(q)); }",
            arg=text.lower(), timeout=45000)

    def close(self) -> None:
        self.context.close()


def in_viewport(box: dict[str, float], width: int, height: int) -> bool:
    return (box["x"] < width and box["x"] + box["width"] > 0 and box["y"] < height
            and box["y"] + box["height"] > 0 and box["width"] > 0 and box["height"] > 0)


# ---------------------------------------------------------------- 1: the detail is in view

@pytest.mark.parametrize("width,height", SIZES)
def test_clicked_op_detail_is_in_view(browser: Any, tensorboard: str, width: int,
                                      height: int) -> None:
    """A click on a row far down the table shows the detail where the user looks: at
    1000x700 it used to be laid out under the 50-row table."""
    p = Page(browser, tensorboard, width, height)
    try:
        op, box = p.open_detail(20)
        assert box and in_viewport(box, width, height), (op, box)
        # What is at the detail's title is the detail, not something over it.
        centre = p.frame.evaluate("""() => { const b = document.querySelector(
            '.opm-detail .opm-detail-title').getBoundingClientRect(); const e =
            document.elementFromPoint(Math.max(0, Math.min(b.left + 20, innerWidth - 1)),
            Math.max(0, Math.min(b.top + 5, innerHeight - 1)));
            return !!(e && e.closest('.opm-detail')); }""")
        assert centre
        assert p.frame.locator("#opm-answer").count() == 1
        p.shot("detail_after_click")
        # Escape closes the detail below the table (hidden: no box, or one out of view);
        # another row then opens it again, in view.
        if width < 1200:
            p.frame.press("#opm-detail", "Escape")
            p.frame.wait_for_timeout(300)
            closed = p.frame.locator("#opm-detail").bounding_box()
            assert closed is None or not in_viewport(closed, width, height), closed
            again, box = p.open_detail(2)
            assert box and in_viewport(box, width, height), (again, box)
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- 2: the table fits its box

@pytest.mark.parametrize("width,height", [(1400, 900), (1920, 1080)])
def test_op_table_fits_its_box(browser: Any, tensorboard: str, width: int, height: int) -> None:
    """No cell sticks out of the table's box (the Time column was clipped at 1400x900);
    the two time lines say which is eager and which is graph."""
    for run in ("bert", "on"):
        p = Page(browser, tensorboard, width, height, run=run)
        try:
            over = p.frame.evaluate("""() => {
                const box = (document.querySelector('#opm-table').closest('.opm-table-scroll') ||
                             document.querySelector('.opm-table-wrap')).getBoundingClientRect();
                const cells = [...document.querySelectorAll('#opm-table th, #opm-table td')];
                return cells.filter(c => c.getBoundingClientRect().right > box.right + 0.5)
                    .map(c => c.innerText.slice(0, 40));
            }""")
            assert over == [], over
            scroll = p.frame.evaluate("""() => {
                const s = document.querySelector('#opm-table').closest('.opm-table-scroll') ||
                document.querySelector('.opm-table-wrap');
                return [s.scrollWidth, s.clientWidth]; }""")
            assert scroll[0] <= scroll[1] + 1, scroll
            times = p.frame.locator("#opm-table tbody tr[data-op] td.opm-time").first.inner_text()
            assert "eager" in times and "graph" in times
            if run == "bert":
                p.shot("table_fits")
        finally:
            p.close()


def test_op_type_column_sticks_when_scrolled_sideways(browser: Any, tensorboard: str) -> None:
    p = Page(browser, tensorboard, 1000, 700)
    try:
        sticky = p.frame.eval_on_selector("#opm-table tbody td.opm-op",
                                          "c => getComputedStyle(c).position")
        assert sticky == "sticky"
        # Make the table wider than its box (as a long kernel name would) and scroll.
        moved = p.frame.evaluate("""async () => {
            const s = document.querySelector('#opm-table').closest('.opm-table-scroll');
            document.querySelector('#opm-table').style.minWidth = (s.clientWidth + 600) + 'px';
            document.querySelector('#opm-table tbody tr[data-op]').scrollIntoView({block: 'center'});
            s.scrollLeft = 400;
            await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
            const cell = document.querySelector('#opm-table tbody td.opm-op').getBoundingClientRect();
            const box = s.getBoundingClientRect();
            const hit = document.elementFromPoint(cell.left + 8, cell.top + 8);
            return {left: cell.left - box.left, scrolled: s.scrollLeft,
                    shows: !!(hit && hit.closest('td.opm-op'))};
        }""")
        assert moved["scrolled"] > 0 and abs(moved["left"]) < 1 and moved["shows"], moved
        p.shot("sticky_op_column")
        p.frame.evaluate("document.querySelector('#opm-table').style.minWidth = ''")
    finally:
        p.close()


# ---------------------------------------------------------------- 3: labels say what happened

def test_labels_say_what_happened(browser: Any, tensorboard: str) -> None:
    """Grappler-removed executions have their own label, not "kernel unknown"; op time says
    it is EagerExecute time with dispatch; the overview's time totals are the table's; no
    matrix cell without executions shows a time."""
    p = Page(browser, tensorboard, 1400, 900)
    try:
        o = get_json(f"{tensorboard}/data/plugin/opmode/overview?run=bert")
        rows = get_json(f"{tensorboard}/data/plugin/opmode/optypes?run=bert&page_size=200")["rows"]
        removed = next(c for c in o["kinds"] if c["mode"] == "graph" and c["kind"] == "removed")
        assert removed["executions"] > 0
        cell = p.frame.locator("#opm-matrix tr[data-mode='graph'] td[data-kind='removed']")
        assert "no kernel (removed by grappler)" in cell.inner_text()
        assert f"{removed['executions']:,}" in cell.inner_text()
        unknown = p.frame.locator("#opm-matrix tr[data-mode='graph'] td[data-kind='unknown']")
        assert unknown.get_attribute("data-executions") == str(
            next(c for c in o["kinds"] if c["mode"] == "graph" and c["kind"] == "unknown")["executions"])
        for td in p.frame.locator("#opm-matrix tbody td").all():
            if td.get_attribute("data-executions") == "0":
                assert not TIME_TEXT.search(td.inner_text()), td.inner_text()
        # Time totals: overview == sum of the table's rows.
        for mode in ("eager", "graph"):
            shown = p.frame.get_attribute(
                f".opm-share-block[data-field='time_ns'] [data-mode='{mode}']", "data-value")
            assert int(shown) == sum(r[mode].get("time_ns", 0) for r in rows)
        # Op time says what it measures.
        head = p.frame.get_attribute("#opm-table th.opm-time-head", "title")
        assert "EagerExecute" in head and "dispatch" in head
        assert "EagerExecute" in p.frame.inner_text("#opm-time-note")
        assert "dispatch" in p.frame.inner_text("#opm-overview")
        # Transpose in graphs: partly removed, shown as such with its own swatch.
        p.search("Transpose")
        chips = p.frame.locator("#opm-table tr[data-op='Transpose'] td").nth(4)
        assert "no kernel (removed by grappler)" in chips.inner_text()
        assert chips.locator(".opm-chip[data-kind='removed'] .opm-swatch-removed").count() == 1
        assert "kernel ?" not in chips.inner_text()
        legend = p.frame.inner_text(".opm-legend")
        assert "no kernel (removed by grappler)" in legend and "unknown kernel" in legend
        p.frame.evaluate("document.querySelector('#opm-matrix').scrollIntoView({block: 'center'})")
        p.frame.wait_for_timeout(200)
        p.shot("matrix_labels")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- 5: fused kernels

def test_fused_kernels_keep_mode_onednn_colour_and_are_marked(browser: Any, tensorboard: str) -> None:
    p = Page(browser, tensorboard, 1920, 1080, run="on")
    try:
        rows = get_json(f"{tensorboard}/data/plugin/opmode/optypes?run=on&page_size=200")["rows"]
        fused = [(r["op_type"], k["name"]) for r in rows for k in r["graph"]["kernels"]
                 if k["fused"] and k["name"].startswith("_Mkl")]
        assert fused, "the CNN run has no fused oneDNN kernel"
        op, kernel = fused[0]
        p.search(op)
        chip = p.frame.locator(f"#opm-table tr[data-op='{op}'] td").nth(4).locator(
            ".opm-chip.opm-chip-fused").first
        assert kernel in chip.inner_text() and "oneDNN" in chip.inner_text()
        assert "fused" in chip.locator(".opm-tag-fused").inner_text()
        swatch = chip.locator(".opm-swatch")
        assert swatch.evaluate("s => getComputedStyle(s).backgroundColor") == GRAPH_ONEDNN
        assert "opm-fused-mark" in swatch.get_attribute("class")
        # The timeline: the same classes (a fused oneDNN kernel is graph · oneDNN) and marked.
        tl = get_json(f"{tensorboard}/data/plugin/opmode/timeline?run=on&max_events=10000")
        assert tl["level"] == "events" and tl["fused"]
        for ev in tl["events"]:
            if ev[4] in tl["fused"] and tl["names"][ev[4]].startswith("_Mkl"):
                assert tl["classes"][ev[5]] == "graph_onednn"
        # Every kernel of the table has the timeline's class for its mode.
        kinds = {(r["op_type"], k["name"]): k["kind"] for r in rows for k in r["graph"]["kernels"]}
        for ev in tl["events"]:
            if tl["lanes"][ev[0]] == "graph" and (op_key := next(
                    (key for key in kinds if key[1] == tl["names"][ev[4]]), None)):
                assert tl["classes"][ev[5]] == f"graph_{kinds[op_key]}"
        p.frame.evaluate("document.querySelector('#opm-timeline-card').scrollIntoView()")
        p.frame.wait_for_timeout(800)
        outline = p.frame.evaluate("""() => {
            const c = document.querySelector('.opm-timeline-canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
              if (Math.abs(d[i] - 204) < 8 && Math.abs(d[i+1] - 121) < 8 && Math.abs(d[i+2] - 167) < 8) n++;
            }
            return n;
        }""")
        assert outline > 0, "no fused outline drawn on the timeline"
        p.shot("fused_timeline")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- 6: kernel differs

def test_kernel_differs_filter_means_kernels_that_ran(browser: Any, tensorboard: str) -> None:
    """Constant folding and grappler removal do not make the modes differ; a different
    kernel that ran, or oneDNN in one mode only, does."""
    p = Page(browser, tensorboard, 1400, 900, run="on")
    try:
        before = p.frame.inner_text(".opm-table-info")
        p.frame.check("input[data-filter='differs']")
        p.frame.wait_for_function(
            "(b) => document.querySelector('.opm-table-info').innerText !== b", arg=before,
            timeout=45000)
        ops = set(p.frame.eval_on_selector_all("#opm-table tbody tr[data-op]",
                                               "rows => rows.map(r => r.dataset.op)"))
        rows = get_json(f"{tensorboard}/data/plugin/opmode/optypes?run=on&page_size=200")["rows"]
        by_op = {r["op_type"]: r for r in rows}

        def ran(r: dict[str, Any], mode: str) -> set[str]:
            return {k["name"] for k in r[mode]["kernels"]
                    if k["kind"] in ("onednn", "stock") and not k["folded"]}
        expected = set()
        for r in rows:
            if not (r["eager"]["executions"] and r["graph"]["executions"]):
                continue
            e, g = ran(r, "eager"), ran(r, "graph")
            if (e and g and e != g) or (any(n.startswith("_Mkl") for n in e)
                                        != any(n.startswith("_Mkl") for n in g)):
                expected.add(r["op_type"])
        assert ops == expected
        assert {"BiasAddGrad", "MaxPoolGrad"} <= ops
        # Only constant-folded or removed in graphs: not a different kernel.
        for op in ("Reshape", "Cast", "ExpandDims"):
            if op in by_op:
                assert op not in ops, (op, by_op[op]["graph"]["kernels"])
        tag = p.frame.locator("#opm-table tr[data-op='MaxPoolGrad'] .opm-tag-strong")
        assert "_MklNativeMaxPoolGrad" in tag.get_attribute("title")
        p.shot("differs_filter")
        p.frame.uncheck("input[data-filter='differs']")
    finally:
        p.close()


# ---------------------------------------------------------------- 7: the detail leads with the answer

def test_detail_leads_with_the_answer(browser: Any, tensorboard: str) -> None:
    p = Page(browser, tensorboard, 1400, 900)
    try:
        p.search("Transpose")
        p.frame.click("#opm-table tr[data-op='Transpose'] td.opm-op")
        p.frame.wait_for_selector("#opm-answer", timeout=20000)
        order = p.frame.eval_on_selector(
            ".opm-detail-body", "b => [...b.children].map(c => c.id || c.tagName.toLowerCase())")
        assert order[:4] == ["h3", "opm-lead", "opm-answer", "opm-explanation"], order
        eager = p.frame.inner_text("#opm-answer [data-mode='eager']")
        graph = p.frame.inner_text("#opm-answer [data-mode='graph']")
        api = get_json(f"{tensorboard}/data/plugin/opmode/optypes?run=bert&q=Transpose")["rows"][0]
        assert f"{api['eager']['executions']:,} executions" in eager
        assert "_MklTranspose" in eager and "oneDNN" in eager and "LOG" in eager.upper()
        assert f"{api['graph']['executions']:,} executions" in graph
        for k in api["graph"]["kernels"]:
            assert f"×{k['executions']:,}" in graph
        assert "no kernel (removed by grappler)" in graph and "_MklTranspose" in graph
        # The why: one short paragraph per mode; the rest folded away.
        whys = p.frame.locator("#opm-explanation p.opm-why")
        assert whys.count() == 2
        for i in range(2):
            assert len(whys.nth(i).inner_text()) < 600
        folds = p.frame.eval_on_selector_all(".opm-detail-body details.opm-fold",
                                             "ds => ds.map(d => [d.id, d.open])")
        assert ("opm-sites-box", False) in [tuple(f) for f in folds]
        assert all(not is_open for _id, is_open in folds)
        text = p.frame.inner_text("#opm-detail")
        assert not re.search(r"(?<![\d,.:/\w])\d{4,}(?![\d\w])", text), "a number without separators"
        p.shot("detail_answer_first")
        p.frame.click("#opm-sites-box > summary")
        p.frame.wait_for_selector("#opm-sites .opm-site", timeout=10000)
        assert "make_logdir.py:" in p.frame.inner_text("#opm-sites")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- seed scenario

def test_seed_answer_without_scrolling(browser: Any, tensorboard: str) -> None:
    """Opening the tab at 1400x900 shows, for Transpose and MatMul, the kernel per mode,
    oneDNN or not, and the evidence, without scrolling or reading prose."""
    p = Page(browser, tensorboard, 1400, 900)
    try:
        assert p.frame.evaluate("window.scrollY") == 0
        api = {r["op_type"]: r for r in get_json(
            f"{tensorboard}/data/plugin/opmode/optypes?run=bert&page_size=200")["rows"]}
        for op in ("Transpose", "MatMul"):
            row = p.frame.locator(f"#opm-glance tr[data-op='{op}']")
            box = row.bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= 900, (op, box)
            for mode in ("eager", "graph"):
                cell = row.locator(f"td[data-mode='{mode}']")
                text = cell.inner_text()
                kernels = api[op][mode]["kernels"]
                assert kernels, (op, mode)
                for k in kernels:
                    if k["kind"] in ("onednn", "stock"):
                        assert k["name"] in text
                    assert f"×{k['executions']:,}" in text
                assert "oneDNN" in text
                badges = cell.locator(".opm-badge").all_inner_texts()
                assert sorted(b.lower() for b in badges) == sorted(k["evidence"] for k in kernels)
                cbox = cell.bounding_box()
                assert cbox["x"] + cbox["width"] <= 1400
        p.shot("seed_glance")
        assert p.errors == []
    finally:
        p.close()


@pytest.mark.parametrize("width,height", SIZES)
def test_screens_at_each_width(browser: Any, tensorboard: str, width: int, height: int) -> None:
    """Screenshots to look at: the top of the tab, and the op table, at each width."""
    p = Page(browser, tensorboard, width, height)
    try:
        p.shot("top")
        p.frame.evaluate("document.querySelector('#opm-ops').scrollIntoView()")
        p.frame.wait_for_timeout(300)
        p.shot("table")
        p.frame.evaluate("document.querySelector('#opm-timeline-card').scrollIntoView()")
        p.frame.wait_for_timeout(600)
        p.shot("timeline")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- 9: loading and empty states

def test_while_loading_nothing_claims_no_profile_and_0_percent_draws_empty(
        browser: Any, tensorboard: str) -> None:
    """Held answers stand in for a slow logdir: while the run list is unanswered the bar is
    at 0% and draws empty, and no card is shown; while a run's overview is unanswered the
    timeline says it is loading, never "this run has no profile"."""
    p = Page(browser, tensorboard, 1400, 900, wait=False)
    held: list[Any] = []
    try:
        p.page.route("**/data/plugin/opmode/runs*", lambda route: held.append(route))
        p.page.goto(f"{tensorboard}/#opmode")
        p.page.wait_for_selector("iframe", timeout=60000)
        frame = p.page.locator("iframe").element_handle().content_frame()
        frame.wait_for_selector(".opm-progress", state="attached", timeout=30000)
        for _ in range(100):
            if held:
                break
            p.page.wait_for_timeout(100)
        assert held
        fill = frame.eval_on_selector(".opm-progress-fill", "f => f.getBoundingClientRect().width")
        assert fill == 0
        bar = frame.locator(".opm-progress")
        shot = ARTIFACTS / "issue13_progress_0_1400x900.png"
        ARTIFACTS.mkdir(exist_ok=True)
        bar.screenshot(path=str(shot))
        accent = frame.evaluate("""() => new Promise(resolve => {
            const bar = document.querySelector('.opm-progress');
            resolve(getComputedStyle(bar.querySelector('.opm-progress-fill')).width); })""")
        assert accent in ("0px", "0")
        visible_cards = frame.eval_on_selector_all(
            ".opm-card", "cs => cs.filter(c => c.offsetParent !== null).length")
        assert visible_cards == 0
        p.frame = frame
        p.shot("loading")
        # Now hold the overview: the run is listed, its overview is on its way.
        overviews: list[Any] = []
        p.page.route("**/data/plugin/opmode/overview*", lambda route: overviews.append(route))
        for route in held:
            route.continue_()
        p.page.unroute("**/data/plugin/opmode/runs*")
        for _ in range(100):
            if overviews:
                break
            p.page.wait_for_timeout(100)
        assert overviews
        frame.wait_for_timeout(300)
        said = frame.eval_on_selector(".opm-timeline-canvas", "c => c.dataset.message")
        assert said is not None and "no profile" not in said, said
        info = frame.inner_text("#opm-timeline-card .opm-filters")
        assert "no profile" not in info
        for route in overviews:
            route.continue_()
        p.page.unroute("**/data/plugin/opmode/overview*")
        frame.wait_for_function(
            "() => (document.querySelector('.opm-timeline-canvas').dataset.message || '') === ''",
            timeout=30000)
    finally:
        p.close()


def test_empty_logdir_shows_one_message(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    _plugin_installed()
    empty = tmp_path_factory.mktemp("empty_logdir")
    log_path = tmp_path_factory.mktemp("tb_empty_log") / "tensorboard.log"
    with running_tensorboard(empty, log_path, runs=0, timeout=120) as base:
        p = Page(browser, base, 1400, 900, wait=False)
        try:
            # An empty logdir makes the plugin inactive; TensorBoard still opens its tab.
            p.page.goto(f"{base}/#opmode")
            p.page.wait_for_selector("iframe", timeout=60000)
            p.frame = p.page.locator("iframe").element_handle().content_frame()
            p.frame.wait_for_function("() => document.body.dataset.state === 'empty'", timeout=30000)
            status = p.frame.inner_text("#opm-status")
            assert "Nothing to show yet" in status
            assert p.frame.locator(".opm-message").count() == 1
            visible = p.frame.eval_on_selector_all(
                ".opm-card, .opm-legend, #opm-run",
                "cs => cs.filter(c => c.offsetParent !== null).length")
            assert visible == 0
            p.shot("empty_logdir")
            assert p.errors == []
        finally:
            p.close()


# ---------------------------------------------------------------- 10: TensorBoard's theme

def test_follows_tensorboards_theme_menu(browser: Any, tensorboard: str) -> None:
    """The OS says light; TensorBoard's theme menu says dark: the tab turns dark, and back."""
    p = Page(browser, tensorboard, 1400, 900, scheme="light")

    def background() -> tuple[int, int, int]:
        bg = p.frame.evaluate("getComputedStyle(document.body).backgroundColor")
        r, g, b = (int(x) for x in re.findall(r"\d+", bg)[:3])
        return r, g, b

    def pick(title: str) -> None:
        p.page.click("button[aria-label='Menu for changing light or dark theme']")
        p.page.click(f"button[title='{title}']")
        p.page.wait_for_timeout(500)

    try:
        assert sum(background()) > 3 * 200
        pick("Force dark TensorBoard theme.")
        assert p.page.evaluate("document.body.classList.contains('dark-mode')")
        assert sum(background()) < 3 * 80, background()
        assert p.frame.evaluate("document.body.dataset.theme") == "dark"
        p.shot("theme_dark")
        pick("Force light TensorBoard theme.")
        assert sum(background()) > 3 * 200, background()
        pick("Set the theme to match the default mode in the browser.")
        assert sum(background()) > 3 * 200
        assert p.errors == []
    finally:
        p.close()
