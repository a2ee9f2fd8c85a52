"""The run's facts in a real browser against a real ``tensorboard``: the run's
CPU features beside its oneDNN state, XLA-compiled functions as a mode of their own, the
dtype split per op (mixed precision), per-device (MirroredStrategy replica) columns, "counts
are a lower bound" when the dump's circular buffer dropped records, and "unknown, because
..." with how to find out; axe-core on the overview of each such run.

In: real TensorFlow runs of the truth matrix's workloads (``tests/matrix/workloads.py``),
each a few seconds: ``mirrored`` (two logical CPUs), ``xla`` (a jit_compile function),
``mixed_f16`` (Keras mixed_float16) with its log and, as ``mixed_f16_nolog``, without it
or its profile,
and ``fit_default_buffer`` (tfdbg's default circular buffer of 1000 records). Each run
directory holds the dump and the run's stdout/stderr logs. The truth for counts per dtype
and per device is TensorFlow's own ``DebugDataReader``, run in a child process; the CPU's
instruction sets are TF's own start-up line. Out: assertions on what a person sees, and
screenshots in tests/artifacts/.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import get_json, link_tree, machine_cpu, running_tensorboard
from .test_browser_layout_and_labels import SIZES, Page, _plugin_installed
from .test_browser_timeline_access_exports import axe_js  # noqa: F401  (the session fixture)

pytestmark = pytest.mark.browser

CELLS = {"mirrored": "mirrored", "xla": "xla", "mixed_f16": "mixed_f16",
         "default_buffer": "fit_default_buffer"}


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each cell's output directory (``logdir/``, ``stderr.log``, ``stdout.log``)."""
    from .matrix.workloads import make_cell
    out = {}
    for name, cell in CELLS.items():
        out[name] = tmp_path_factory.mktemp(f"room_{name}")
        make_cell(cell, out[name])
    return out


@pytest.fixture(scope="module")
def room_logdir(cells: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    parent = tmp_path_factory.mktemp("tab_room_logdir")
    for name, out in cells.items():
        run = link_tree(out / "logdir", parent / name)
        for log in ("stderr.log", "stdout.log"):
            shutil.copy2(out / log, run / log)
    # The same dump without its log or its profile (whose float16 kernels would tell the
    # CPU): what the dump alone cannot decide is unknown.
    link_tree(cells["mixed_f16"] / "logdir", parent / "mixed_f16_nolog", leave_out=("*.xplane.pb",))
    return parent


@pytest.fixture(scope="module")
def tensorboard(room_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _plugin_installed()
    log_path = tmp_path_factory.mktemp("tb_room_log") / "tensorboard.log"
    with running_tensorboard(room_logdir, log_path, runs=5, timeout=300) as base:
        yield base


# TensorFlow's own reader: graph executions of one op type (its lowest traced slot, as the
# tab counts) per dtype the FULL_HEALTH summary names and per device the trace names.
_DDR = r"""
import json, sys
from collections import Counter
from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader
op_type = sys.argv[2]
dtypes, devices, eager = Counter(), Counter(), Counter()
with DebugDataReader(sys.argv[1]) as r:
    r.update()
    for t in r.graph_execution_traces(digest=False):
        graph = r.graph_by_id(t.graph_id)
        if graph.get_op_creation_digest(t.op_name).op_type != op_type or t.output_slot != 0:
            continue
        dtypes[int(t.debug_tensor_value[2])] += 1
        devices[t.device_name] += 1
    for e in r.executions(digest=False):
        if e.op_type == op_type:
            eager[int(e.debug_tensor_values[0][2]) if e.debug_tensor_values and
                  e.debug_tensor_values[0] else -1] += 1
print(json.dumps({"dtypes": dtypes, "devices": devices, "eager_dtypes": eager,
                  "executions": len(r.executions(digest=True))}))
"""
_DT = {1: "float32", 2: "float64", 19: "float16", 14: "bfloat16"}


def reader_truth(logdir: Path, op_type: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _DDR, str(logdir), op_type], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


class RunPage(Page):
    """A Page on one run, whichever run the tab opened by default, for runs with or without
    a profile (the timeline of a run without one loads nothing to wait for)."""

    def __init__(self, browser: Any, base: str, width: int, height: int, run: str,
                 scheme: str = "light") -> None:
        super().__init__(browser, base, width, height, run=run, wait=False, scheme=scheme)
        self.page.goto(f"{base}/#opmode")
        self.page.wait_for_selector("iframe", timeout=60000)
        self.frame = self.page.locator("iframe").element_handle().content_frame()
        self.frame.wait_for_selector("#opm-table tbody tr[data-op]", timeout=60000)
        self.frame.wait_for_selector(".opm-overview .opm-facts", timeout=60000)
        self.frame.wait_for_timeout(500)
        self.switch(run)

    def switch(self, run: str) -> None:
        """Show ``run``: choose it in the run menu and wait for its overview and table."""
        self.run = run
        if self.frame.eval_on_selector("#opm-run", "s => s.value") != run:
            with self.page.expect_response(lambda r: "/overview?" in r.url and
                                           f"run={run}" in r.url, timeout=30000):
                with self.page.expect_response(lambda r: "/optypes?" in r.url and
                                               f"run={run}" in r.url, timeout=30000):
                    self.frame.select_option("#opm-run", run)
        self.frame.wait_for_timeout(700)   # render the answers

    def text(self, selector: str) -> str:
        found = self.frame.locator(selector)
        assert found.count() >= 1, f"{selector}: not on the page"
        return found.first.inner_text()

    def scroll(self, selector: str) -> None:
        self.frame.evaluate("(s) => document.querySelector(s).scrollIntoView({block: 'start'})",
                            selector)
        self.frame.wait_for_timeout(200)


def _cpu_line(log: Path) -> list[str]:
    """The instruction sets of TF's start-up line (cpu_feature_guard.cc), read here."""
    m = re.search(r"To enable the following instructions: ([A-Z0-9_ ]+), in other operations",
                  log.read_text(errors="replace"))
    assert m, "no cpu_feature_guard line in the log"
    return m.group(1).split()


# ---------------------------------------------------------------- the CPU and oneDNN

def test_cpu_features_and_onednn_state_in_the_overview(browser: Any, tensorboard: str,
                                                       cells: dict[str, Path]) -> None:
    """The overview names the run's instruction sets (f16/bf16 kernels depend on them) next
    to oneDNN's state, as TF's start-up line in the log lists them; without the log it says
    they are unknown and how to learn them. The old tab showed neither."""
    want = _cpu_line(cells["mixed_f16"] / "stderr.log")
    p = RunPage(browser, tensorboard, 1400, 900, "mixed_f16")
    try:
        cpu = p.text("#opm-cpu")
        for feature in want:
            assert re.search(rf"\b{feature}\b", cpu), (feature, cpu)
        assert "start-up line" in cpu
        assert "oneDNN on" in p.text(".opm-glance-facts")
        assert all(f in p.text(".opm-glance-facts") for f in want)
        p.scroll("#opm-overview")
        p.shot("room_cpu_features")
        assert p.errors == []
    finally:
        p.close()
    p = RunPage(browser, tensorboard, 1400, 900, "mixed_f16_nolog")
    try:
        cpu = p.text("#opm-cpu")
        assert cpu.startswith("unknown") and "cpu_feature_guard" in cpu, cpu
        assert "instruction sets unknown" in p.text(".opm-glance-facts")
    finally:
        p.close()


# ---------------------------------------------------------------- XLA

def test_xla_functions_are_a_mode_of_their_own(browser: Any, tensorboard: str,
                                               cells: dict[str, Path]) -> None:
    """A jit_compile function's ops ran inside an XLA cluster: the mode matrix has a row of
    its own for it (graph, compiled by XLA) with the function and its launches, and says the
    dump holds none of its ops. The old tab's matrix had eager and graph only."""
    meta = json.loads((cells["xla"] / "cell.json").read_text())
    assert meta["jit_compile_failed"], "TF compiled the XLA function under the dump"
    # TF's own error names the function it could not compile with the dump's debug ops.
    name = re.search(r"compile graph (__inference_xla_fn_\d+)",
                     meta["jit_compile_calls"][0]["message"]).group(1)
    p = RunPage(browser, tensorboard, 1400, 900, "xla")
    try:
        row = p.text("#opm-matrix tr[data-mode='xla']")
        assert "XLA" in row and "graph, compiled by XLA" in row
        assert name in row, (name, row)
        assert "inside an XLA cluster" in row and "dump holds none of its ops" in row
        assert "XLA: 1 function(s) compiled" in p.text(".opm-glance-facts")
        p.scroll("#opm-matrix")
        p.shot("room_xla_mode")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- dtypes

def test_dtype_split_shows_mixed_precision(browser: Any, tensorboard: str,
                                          cells: dict[str, Path]) -> None:
    """Under mixed_float16, MatMul runs in float16 inside the graph (stock MatMul, or
    _MklMatMul on a CPU with AVX512_FP16) and in float32 and float16 eagerly: the table, the detail (kernel per
    dtype) and the overview say so, with DebugDataReader's counts per dtype. The old tab
    showed one count per mode, with no dtype."""
    truth = reader_truth(cells["mixed_f16"] / "logdir", "MatMul")
    graph = {_DT[int(k)]: n for k, n in truth["dtypes"].items()}
    eager = {_DT[int(k)]: n for k, n in truth["eager_dtypes"].items() if int(k) in _DT}
    assert "float16" in graph, truth
    p = RunPage(browser, tensorboard, 1400, 900, "mixed_f16")
    try:
        overview = p.text("#opm-dtypes")
        assert "Mixed precision: float16" in overview
        p.frame.check("input[data-filter='low_precision']")
        p.frame.wait_for_function(
            "() => [...document.querySelectorAll('#opm-table tbody tr[data-op]')].length && "
            "[...document.querySelectorAll('#opm-table tbody tr[data-op]')].every("
            "r => r.querySelector('.opm-dtype-low'))", timeout=20000)
        row = p.frame.locator("#opm-table tr[data-op='MatMul']")
        cells_ = row.locator("td")
        for label, n in graph.items():
            assert f"{label} ×{n:,}" in cells_.nth(4).inner_text(), (label, n)
        for label, n in eager.items():
            assert f"{label} ×{n:,}" in cells_.nth(2).inner_text(), (label, n)
        p.frame.evaluate("document.querySelector(\"#opm-table tr[data-op='MatMul']\")"
                         ".scrollIntoView({block: 'center'})")
        p.frame.wait_for_timeout(200)
        p.shot("room_dtype_table")
        row.locator("td.opm-op").click()
        p.frame.wait_for_selector("#opm-answer .opm-dtype-split[data-mode='graph']", timeout=20000)
        split = p.text("#opm-answer .opm-dtype-split[data-mode='graph'] tr[data-dtype='float16']")
        # The cell ran on this machine: oneDNN takes float16 only on a CPU with AVX512_FP16.
        kernel, kind = ("_MklMatMul", "oneDNN") if "AVX512_FP16" in machine_cpu() \
            else ("MatMul", "stock")
        assert f"{graph['float16']:,}" in split and kernel in split and kind in split, split
        if "float32" in eager:
            f32 = p.text("#opm-answer .opm-dtype-split[data-mode='eager'] tr[data-dtype='float32']")
            assert "_MklMatMul" in f32 and "oneDNN" in f32, f32
        p.frame.wait_for_timeout(400)   # the drawer slides in
        p.shot("room_dtype_detail")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- devices

@pytest.mark.parametrize("width,height", SIZES)
def test_per_device_columns_for_replicas(browser: Any, tensorboard: str, cells: dict[str, Path],
                                         width: int, height: int) -> None:
    """MirroredStrategy over two logical CPUs runs each replica's graph ops on its own
    device: the table has a column per device, whose counts are DebugDataReader's
    device_name split, and the overview totals executions per device. The old tab had no
    device anywhere."""
    from tb_opmode.read.tfdbg import DumpSet
    if "trace_devices" not in DumpSet.__dataclass_fields__:
        pytest.skip("this tree's dump reader records no devices (DumpSet.trace_devices comes "
                    "with the workers branch merged into main)")
    truth = reader_truth(cells["mirrored"] / "logdir", "MatMul")["devices"]
    short = {k.rsplit("device:", 1)[1]: n for k, n in truth.items()}
    assert len(short) == 2, truth
    p = RunPage(browser, tensorboard, width, height, "mirrored")
    try:
        heads = p.frame.eval_on_selector_all("#opm-table thead th[data-device]",
                                             "hs => hs.map(h => h.dataset.device)")
        assert sorted(heads) == sorted(short), heads
        p.search("MatMul")
        for device, n in short.items():
            cell = p.text(f"#opm-table tr[data-op='MatMul'] td[data-device='{device}']")
            assert f"graph {n:,}" in cell, (device, n, cell)
        # The device columns fit: the last one is inside the table's box or reachable by
        # scrolling it, never cut off by the page.
        clipped = p.frame.evaluate("""() => {
            const w = document.querySelector('#opm-table').closest('.opm-table-scroll');
            const last = [...document.querySelectorAll('#opm-table thead th')].pop();
            return last.getBoundingClientRect().right > w.getBoundingClientRect().right + 1 &&
                   w.scrollWidth <= w.clientWidth; }""")
        assert not clipped
        devices = p.text("#opm-devices")
        assert all(d in devices for d in short)
        p.scroll("#opm-ops")
        p.shot("room_device_columns")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- the circular buffer

def test_counts_cut_by_the_circular_buffer_are_a_lower_bound(
        browser: Any, tensorboard: str, cells: dict[str, Path]) -> None:
    """With tfdbg's default circular buffer the dump keeps the last 1000 records of each
    kind (DebugDataReader reads exactly 1000 executions): the glance, the overview, the
    table's columns and the detail say the counts are a lower bound, and what to do. The
    old tab showed the counts as if complete (the warning sat in a folded list)."""
    truth = reader_truth(cells["default_buffer"] / "logdir", "Mul")
    assert truth["executions"] == 1000, truth
    p = RunPage(browser, tensorboard, 1400, 900, "default_buffer")
    try:
        for sel in ("#opm-glance-lower-bound", "#opm-lower-bound"):
            note = p.text(sel)
            assert note.startswith("Counts are a lower bound") and "1,000" in note, note
            assert "circular_buffer_size=-1" in note
        box = p.frame.locator("#opm-glance-lower-bound").bounding_box()
        assert box and box["y"] + box["height"] <= 900, box   # seen without scrolling
        p.shot("room_lower_bound")
        heads = p.frame.eval_on_selector_all("#opm-table thead th", "hs => hs.map(h => h.innerText)")
        assert any(h.startswith("Eager ≥") for h in heads) and any(h.startswith("Graph ≥") for h in heads)
        first = p.frame.locator("#opm-table tbody tr[data-op]").first
        assert "≥" in first.locator("td").nth(1).inner_text() or \
            "≥" in first.locator("td").nth(3).inner_text()
        p.search("Mul")
        p.frame.locator("#opm-table tr[data-op='Mul'] td.opm-op").click()
        p.frame.wait_for_selector("#opm-answer [data-mode='eager']", timeout=20000)
        assert "at least" in p.text("#opm-answer [data-mode='eager']")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- unknown, because

def test_unknown_kernels_say_why_and_how_to_find_out(browser: Any, tensorboard: str) -> None:
    """Without the log, a float16 MatMul's kernel depends on a CPU feature nothing in the
    dump names: the overview lists the unknown executions grouped by why, with how to find
    out; with the log, the same executions have a known kernel. The old tab only counted
    them ("kernel unknown for N")."""
    rows = {r["op_type"]: r for r in get_json(
        f"{tensorboard}/data/plugin/opmode/optypes?run=mixed_f16&page_size=200")["rows"]}
    known = [k for k in rows["MatMul"]["graph"]["kernels"] if k["kind"] != "unknown"]
    assert known and known[0]["evidence"] == "log", rows["MatMul"]["graph"]
    p = RunPage(browser, tensorboard, 1400, 900, "mixed_f16_nolog")
    try:
        block = p.text("#opm-unknowns")
        assert "Kernel unknown, because" in block and "AVX512_FP16" in block
        assert "How to find out: Keep TF's log" in block
        n = rows["MatMul"]["graph"]["executions"]
        assert f"MatMul (graph ×{n:,})" in block, block
        o = get_json(f"{tensorboard}/data/plugin/opmode/overview?run=mixed_f16_nolog")
        assert f"Kernel unknown for {o['unknowns']['executions']:,} execution(s)" in block
        p.scroll("#opm-unknowns")
        p.shot("room_unknowns")
        assert p.errors == []
    finally:
        p.close()


# ---------------------------------------------------------------- axe-core

@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width,height", SIZES)
def test_axe_on_the_new_facts(browser: Any, tensorboard: str, axe_js: str,  # noqa: F811
                              width: int, height: int, scheme: str) -> None:
    """No serious or critical axe-core violation in what the runs above add: the lower-bound
    notes, the CPU, the XLA row, the dtype and device blocks, the unknowns, the device
    columns and dtype lines of the table."""
    p = RunPage(browser, tensorboard, width, height, "mirrored", scheme=scheme)
    try:
        p.frame.evaluate("(src) => { (0, eval)(src); return typeof axe; }", axe_js)
        found = {}
        for run in ("mirrored", "mixed_f16", "mixed_f16_nolog", "default_buffer", "xla"):
            p.switch(run)
            result = p.frame.evaluate("""async () => {
                const r = await axe.run({include: [['#opm-glance-card'], ['#opm-overview'],
                                                   ['#opm-ops']]}, {resultTypes: ['violations']});
                return r.violations.filter(v => ['serious', 'critical'].includes(v.impact))
                    .map(v => ({id: v.id, impact: v.impact, help: v.help,
                                nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' +
                                                                   n.failureSummary)}));
            }""")
            found[run] = result
        p.scroll("#opm-overview")
        p.shot(f"room_axe_{scheme}")
        assert all(not v for v in found.values()), found
    finally:
        p.close()
