"""Runs of different evidence and a failed recorded job, in a real browser against a real
``tensorboard``: the comparison says when the runs' evidence differs and pairs a run with
evidence by default, a failed job's command and exit status are in its run facts, the
op table keeps names whole and its "not counted" tag with the graph kernels, and the
detail's why is shown whole.

In: the committed runs of ``tests/data`` (written by TensorFlow 2.21: ``record_kernels``,
``tb-opmode record --evidence kernels``, no dump; ``fit_full_health``, a FULL_HEALTH dump
with its profile and log) and two jobs recorded here without TensorFlow: ``false``-like
(exit status 3) and ``true``-like (status 0), which wrote no evidence. Out: assertions on
what a person sees at 1400x900 and 1920x1080, and screenshots in tests/artifacts/.
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import running_tensorboard
from .test_browser_layout_and_labels import ARTIFACTS, Page, _plugin_installed
from .unit.conftest import unpack

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
JOBS = str(ROOT / "tests" / "record_jobs.py")


def _record(logdir: Path, name: str, status: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "tb_opmode.cli", "record", str(logdir), "--name", name,
                           "--", sys.executable, JOBS, "streams", status],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == int(status), proc.stderr


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``a_kernels`` (recorded, no dump), ``b_empty`` (a job that wrote nothing, status 0),
    ``c_failed`` (status 3), ``d_full`` (a FULL_HEALTH dump made by hand)."""
    parent = tmp_path_factory.mktemp("evidence_logdir")
    unpack("record_kernels", parent).directory.rename(parent / "a_kernels")
    _record(parent, "b_empty", "0")
    _record(parent, "c_failed", "3")
    unpack("fit_full_health", parent).directory.rename(parent / "d_full")
    return parent


@pytest.fixture(scope="module")
def tensorboard(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _plugin_installed()
    log_path = tmp_path_factory.mktemp("tb_evidence_log") / "tensorboard.log"
    with running_tensorboard(logdir, log_path, runs=4, timeout=180) as base:
        yield base


class RunPage(Page):
    """A page on one run, waiting for its Functions card (a run without ops has no table)."""

    def open(self) -> None:
        self.page.goto(f"{self.base}/#opmode")
        self.page.wait_for_selector("iframe", timeout=60000)
        self.frame = self.page.locator("iframe").element_handle().content_frame()
        self.frame.wait_for_selector("#opm-run option", state="attached", timeout=60000)
        if self.frame.eval_on_selector("#opm-run", "s => s.value") != self.run:
            self.frame.select_option("#opm-run", self.run)
        self.frame.wait_for_function(
            "(run) => { const f = document.querySelector('.opm-functions-ledger');"
            " return f && f.dataset.run === run && document.querySelector('#opm-overview dl'); }",
            arg=self.run, timeout=45000)
        self.frame.wait_for_timeout(300)

    def card_shot(self, name: str, selector: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"evidence_{name}_{self.width}x{self.height}.png"
        self.frame.evaluate(f"document.querySelector('{selector}').scrollIntoView()")
        self.frame.wait_for_timeout(300)
        self.page.screenshot(path=str(path))
        return path


def test_compare_says_the_evidence_differs_and_pairs_a_run_with_evidence(browser: Any, tensorboard: str) -> None:
    """d_full against the default B: not b_empty or c_failed (no evidence) but a_kernels;
    their evidence differs (a dump against none), which is said above the diff, and an op
    whose only difference is the node grappler removed is "evidence differs", not a kernel
    change."""
    p = RunPage(browser, tensorboard, 1400, 900, run="d_full")
    try:
        p.frame.wait_for_selector("#opm-compare-table", timeout=30000)
        assert p.frame.eval_on_selector("#opm-compare-b", "s => s.value") == "a_kernels"
        note = p.frame.inner_text("#opm-compare-evidence")
        assert "different evidence" in note and "FULL_HEALTH dump" in note and "no dump" in note
        card = p.frame.inner_text("#opm-compare-card")
        assert card.index("different evidence") < card.index("Op type")   # above the diff
        assert "only the kernel evidence differs for" in card
        mul = p.frame.inner_text("#opm-compare-table tr[data-compare-op='Mul']")
        assert "graph: evidence differs" in mul and "graph kernel" not in mul
        assert p.frame.locator("#opm-compare-table tr[data-compare-op='Mul'].opm-kernel-changed").count() == 0
        p.card_shot("compare", "#opm-compare-card")
        assert p.errors == []
    finally:
        p.close()


def test_a_failed_job_says_its_command_and_status(browser: Any, tensorboard: str) -> None:
    p = RunPage(browser, tensorboard, 1400, 900, run="c_failed")
    try:
        command = p.frame.inner_text("#opm-command")
        assert "record_jobs.py streams 3" in command and "exited with status 3" in command
        failed = p.frame.inner_text("#opm-job-failed")
        assert "failed" in failed and "exited with status 3" in failed
        empty = p.frame.inner_text("#opm-functions-card .opm-message")
        assert "in the dump" not in empty and "exited with status 3" in empty
        # nothing executed: the executions bar is empty, no mode's segment drawn
        shown = p.frame.eval_on_selector_all(
            ".opm-share-block[data-field='executions'] .opm-share",
            "parts => parts.filter(e => e.getBoundingClientRect().width > 0).length")
        assert shown == 0
        p.card_shot("failed_overview", "#opm-overview")
        assert p.errors == []
    finally:
        p.close()


def test_table_names_stay_whole_and_the_uncounted_tag_is_with_the_graph(browser: Any, tensorboard: str) -> None:
    """At 1400x900 no op or kernel name in the table takes two lines (one too long ends
    in "…" and has its whole name in a title), the table stays in its box, and a graph
    op the dump did not count says so in its graph kernels cell, not beside the eager ones."""
    p = RunPage(browser, tensorboard, 1400, 900, run="d_full")
    try:
        p.frame.wait_for_selector("#opm-table tbody tr[data-op]", timeout=30000)
        lines = p.frame.evaluate("""() => [...document.querySelectorAll(
            '#opm-table .opm-kernel-name, #opm-table .opm-op-name')].map(e => {
              const r = document.createRange(); r.selectNodeContents(e);
              const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
              return [e.textContent, tops.size, e.scrollWidth > e.clientWidth + 1,
                      Boolean(e.closest('[title]') && e.closest('[title]').title.includes(e.textContent))]; })""")
        assert lines and all(n == 1 for _name, n, _cut, _t in lines), [x for x in lines if x[1] != 1]
        assert all(titled for _name, _n, cut, titled in lines if cut)
        box = p.frame.evaluate("() => { const t = document.querySelector('#opm-table');"
                               " return [t.parentElement.scrollWidth, t.parentElement.clientWidth]; }")
        assert box[0] <= box[1] + 1, box
        p.card_shot("table", "#opm-table")
        p.search("AssignVariableOp")   # its graph executions: the dump holds no trace of them
        cells = p.frame.locator("#opm-table tr[data-op='AssignVariableOp'] td")
        assert cells.nth(3).get_attribute("data-uncounted") == "1"
        assert cells.nth(3).locator(".opm-tag-uncounted").count() == 0
        assert "not counted" in cells.nth(3).inner_text()   # said to a screen reader, a dash shown
        assert "not counted" in cells.nth(4).locator(".opm-tag-uncounted").inner_text()
        assert p.errors == []
    finally:
        p.close()


def test_the_why_is_shown_whole(browser: Any, tensorboard: str) -> None:
    p = RunPage(browser, tensorboard, 1920, 1080, run="d_full")
    try:
        p.search("Transpose")
        p.frame.locator("#opm-table tbody tr[data-op='Transpose'] td.opm-op").click()
        p.frame.wait_for_selector("#opm-explanation p.opm-why", timeout=20000)
        cut = p.frame.eval_on_selector_all(
            "#opm-explanation p.opm-why", "ps => ps.map(e => e.scrollHeight > e.clientHeight + 1 ||"
            " getComputedStyle(e).webkitLineClamp !== 'none')")
        assert cut and not any(cut), cut
        p.card_shot("why", "#opm-explanation")
        assert p.errors == []
    finally:
        p.close()
