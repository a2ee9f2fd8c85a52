"""The Functions card and what the tab says of eager time, in a real browser against a
real ``tensorboard``: a trace's graph name stays in its column, an argument the dump did
not record is said "not recorded" once (as ``tb-opmode functions`` says it), a run with no
profile says so where it gives oneDNN's share by time and how its hot spots are ranked,
and the hot spots say how much of the profiled eager time no line issued.

In: the committed ``fit_no_tensor`` run of ``tests/data`` (a Keras ``fit``, NO_TENSOR
dump only: no profile) and ``retrace``, a custom loop recorded here with ``tb-opmode record
--evidence calls`` (TensorFlow 2.21): a ``tf.function`` called with changing shapes and
tensors made from Python shapes eagerly (``tf.ones``: TF's ``_EagerConst``, which the dump
records no execution of). Out: assertions at 1000x700 and 1400x900, screenshots in
tests/artifacts/.
"""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import get_json, needs_tensorflow, running_tensorboard
from .test_browser_evidence_and_failures import RunPage
from .test_browser_layout_and_labels import _plugin_installed
from .unit.conftest import unpack

pytestmark = pytest.mark.browser

RETRACE = """
import tensorflow as tf
w = tf.Variable(tf.ones((4, 1)))
@tf.function
def step(x):
    return tf.reduce_sum(tf.matmul(x, w))
for i in range(6):
    step(tf.ones((i % 3 + 1, 4)))
"""


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_tensorflow()
    parent = tmp_path_factory.mktemp("functions_times_logdir")
    unpack("fit_no_tensor", parent).directory.rename(parent / "a_no_profile")
    script = tmp_path_factory.mktemp("functions_times_job") / "retrace.py"
    script.write_text(RETRACE)
    proc = subprocess.run([sys.executable, "-m", "tb_opmode.cli", "record", str(parent), "--name",
                           "b_retrace", "--evidence", "calls", "--", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return parent


@pytest.fixture(scope="module")
def tensorboard(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _plugin_installed()
    log_path = tmp_path_factory.mktemp("tb_functions_times_log") / "tensorboard.log"
    with running_tensorboard(logdir, log_path, runs=2, timeout=180) as base:
        yield base


def _open_traces(p: RunPage) -> None:
    p.frame.evaluate("() => document.querySelectorAll('details.opm-fn').forEach(d => d.open = true)")
    p.frame.wait_for_timeout(300)


@pytest.mark.parametrize("width,height", [(1000, 700), (1400, 900)])
def test_a_trace_name_stays_in_its_column(browser: Any, tensorboard: str, width: int, height: int) -> None:
    """Keras's __inference_multi_step_on_iterator_<n> ran out of the trace column over the
    calls beside it: the op table's cap on its first column held the traces' too."""
    p = RunPage(browser, tensorboard, width, height, run="a_no_profile")
    try:
        _open_traces(p)
        spill = p.frame.eval_on_selector_all("#opm-functions-card button.opm-trace-graph code", """
            codes => codes.map(c => { const td = c.closest('td'); const r = document.createRange();
              r.selectNodeContents(c); const right = Math.max(...[...r.getClientRects()].map(x => x.right));
              return [c.textContent, right - td.getBoundingClientRect().right]; })""")
        assert any(name.startswith("__inference_multi_step_on_iterator") for name, _ in spill), spill
        assert all(over <= 0 for _name, over in spill), spill
        box = p.frame.eval_on_selector("#opm-functions-card", "e => [e.scrollWidth, e.clientWidth]")
        assert box[0] <= box[1] + 1, box
        p.card_shot("functions_traces", "#opm-functions-card")
        assert p.errors == []
    finally:
        p.close()


def test_an_argument_not_recorded_is_said_so_once(browser: Any, tensorboard: str) -> None:
    """The dump recorded neither dtype nor shape of Keras's iterator: "iterator: not
    recorded", as `tb-opmode functions` says, not "not recorded not recorded"."""
    p = RunPage(browser, tensorboard, 1400, 900, run="a_no_profile")
    try:
        _open_traces(p)
        card = p.frame.inner_text("#opm-functions-card")
        assert "iterator: not recorded" in card, card
        assert "not recorded not recorded" not in card, card
        assert p.errors == []
    finally:
        p.close()


def test_a_run_without_a_profile_says_so(browser: Any, tensorboard: str) -> None:
    """No profile: oneDNN's share by time is "no profile in this run", not "not in the
    profiled window" (there is no window), and the hot spots are ranked by executions."""
    p = RunPage(browser, tensorboard, 1000, 700, run="a_no_profile")
    try:
        p.frame.wait_for_selector(".opm-hot-summary", timeout=30000)
        coverage = p.frame.inner_text("#opm-overview .opm-coverage")
        assert coverage.count("by time: no profile in this run") == 2, coverage
        assert "profiled window" not in coverage, coverage
        summary = p.frame.inner_text(".opm-hot-summary")
        assert "ranked by executions" in summary and "profile" not in summary, summary
        p.card_shot("no_profile_overview", "#opm-overview")
        assert p.errors == []
    finally:
        p.close()


def test_hot_spots_say_the_eager_time_no_line_issued(browser: Any, tensorboard: str) -> None:
    """The shares of the lines' times are of all the profiled eager time, part of it in
    ops the dump records no execution of (_EagerConst): the summary says how much, so the
    shares need not add up to 100% unexplained, and the total matches the overview's."""
    data = get_json(f"{tensorboard}/data/plugin/opmode/hotspots?run=b_retrace")
    overview = get_json(f"{tensorboard}/data/plugin/opmode/overview?run=b_retrace")
    eager = overview["modes"]["eager"]
    assert data["time_ns"] is not None and data["joined_ns"] is not None
    unjoined = data["time_ns"] - data["joined_ns"]
    assert unjoined > 0 and unjoined == eager["time_outside_table_ns"], (data, eager)
    assert data["joined_ns"] == sum(s["time_ns"] or 0 for s in data["sites"])
    p = RunPage(browser, tensorboard, 1400, 900, run="b_retrace")
    try:
        p.frame.wait_for_selector(".opm-hot-summary", timeout=30000)
        summary = p.frame.inner_text(".opm-hot-summary")
        shown = p.frame.evaluate("(ns) => ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : "
                                 "`${(ns / 1e3).toFixed(1)} µs`", unjoined)
        assert f"{shown} of it" in summary and "joined to no line" in summary, summary
        p.card_shot("hot_spots_unjoined", "#opm-hotspots-card")
        assert p.errors == []
    finally:
        p.close()
