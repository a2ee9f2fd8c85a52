"""A run picked while a logdir of many runs loads is read next and shown, in a real browser.

In: the session's BERT-like ``fit`` run (dump + profile + VLOG log, written by real
TensorFlow), linked under one logdir as ``QUEUED`` runs of equal size, which the run store
reads in name order: unasked, the last name is read last. A real ``tensorboard`` with
an empty cache (a cold start), headless Chromium via Playwright. Out: assertions on
what a person sees (the loading run can be picked, the tab says it is read next, then
shows it while most runs still load, with no console error) and screenshots in
tests/artifacts/ to look at. Nothing is timed: "next" is checked against the runs still
loading when it shows.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import get_json, link_tree, running_tensorboard

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
# Enough runs that the page is up and the pick made long before the queue is read.
QUEUED = 120


@pytest.fixture(scope="module")
def queued_logdir(tmp_path_factory: pytest.TempPathFactory, bert_logdir: Path) -> Path:
    parent = tmp_path_factory.mktemp("queued_logdir")
    for i in range(QUEUED):
        link_tree(bert_logdir, parent / f"run_{i:03d}")
    return parent


def test_a_run_picked_while_loading_is_read_next_and_shown(
        browser: Any, queued_logdir: Path, tmp_path: Path) -> None:
    last = f"run_{QUEUED - 1:03d}"
    env = {"TB_OPMODE_CACHE": str(tmp_path / "cache")}  # empty: every run is read
    with running_tensorboard(queued_logdir, tmp_path / "tensorboard.log", runs=QUEUED,
                             timeout=300, env=env, settled=lambda run: True) as base:
        context = browser.new_context(viewport={"width": 1500, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        try:
            page.goto(f"{base}/#opmode")
            page.wait_for_selector("iframe", timeout=60000)
            frame = page.locator("iframe").element_handle().content_frame()
            frame.wait_for_function(
                f"() => document.querySelectorAll('#opm-run option').length === {QUEUED}",
                timeout=60000)
            option = frame.locator(f"#opm-run option[value='{last}']")
            assert option.inner_text().endswith("(loading…)")
            assert not option.is_disabled()
            runs = get_json(f"{base}/data/plugin/opmode/runs")["runs"]
            statuses = {r["run"]: r["status"] for r in runs}
            assert statuses[last] == "loading"
            loading_when_picked = sum(s == "loading" for s in statuses.values())

            frame.select_option("#opm-run", last)
            frame.wait_for_function(
                "(name) => document.body.dataset.state === 'waiting' && document.querySelector("
                "'.opm-message-loading')?.textContent.startsWith(`Loading run ${name}: it is read next`)",
                arg=last, timeout=30000)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "queued_01_picked_while_loading.png"))
            # No other run's answers under its name meanwhile: the cards are hidden; the run
            # list stays, to pick another.
            assert not frame.locator("#opm-overview").is_visible()
            assert frame.locator("#opm-run").is_visible()
            assert not frame.locator(".opm-exports").is_visible()  # another run's exports
            assert frame.eval_on_selector("#opm-run", "s => s.value") == last

            frame.wait_for_function(
                "(name) => document.body.dataset.state === 'ready' && "
                "document.querySelector('#opm-run').value === name && "
                "document.querySelectorAll('#opm-table tbody tr[data-op]').length > 0",
                arg=last, timeout=120000)
            runs = get_json(f"{base}/data/plugin/opmode/runs")["runs"]
            still = [r["run"] for r in runs if r["status"] == "loading"]
            page.screenshot(path=str(ARTIFACTS / "queued_02_shown_while_others_load.png"))
            assert not frame.locator(".opm-message-loading").count()
            # Read next: shown while most of the runs queued before it still load (unasked,
            # every other run would have been read first).
            assert len(still) >= loading_when_picked // 2, (loading_when_picked, len(still))
            assert last not in still
            assert errors == []
        finally:
            context.close()
