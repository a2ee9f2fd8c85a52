"""Multi-worker jobs and MirroredStrategy replicas: one run, counts per worker and device.

The fixtures are real TensorFlow runs (tests/multiworker_job.py): a two-process
MultiWorkerMirroredStrategy job on 127.0.0.1 ports, each worker dumping into its own
sub-directory of one run, and a MirroredStrategy run over two logical CPUs. Every
count is checked against TensorFlow's DebugDataReader on each worker's own dump
(bench/ddr_counts.py, no product code).
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.ddr_counts import reference_device_counts
from tb_opmode.analyze.assemble import load
from tb_opmode.analyze.workers import NO_DEVICE
from tb_opmode.cli import main
from tb_opmode.present.tab import build_view, device_splits, short_device

from .conftest import ROOT, link_tree, needs_tensorflow

JOB = ROOT / "tests" / "multiworker_job.py"


def _make(kind: str, out: Path) -> Path:
    needs_tensorflow()  # the job is TF's own MultiWorkerMirroredStrategy / MirroredStrategy
    proc = subprocess.run([sys.executable, str(JOB), kind, str(out)], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode:
        logs = "".join(p.read_text(errors="replace")[-2000:] for p in out.glob("*.stderr"))
        raise RuntimeError(f"{kind} job failed: {proc.stderr[-2000:]}\n{logs}")
    return out


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUTDIR of a two-worker MultiWorkerMirroredStrategy job: OUTDIR/run/worker{0,1}."""
    return _make("multiworker", tmp_path_factory.mktemp("mwms"))


@pytest.fixture(scope="module")
def mirrored_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUTDIR of a MirroredStrategy run over two logical CPUs: one dump in OUTDIR/run."""
    return _make("mirrored", tmp_path_factory.mktemp("mirrored"))


def _summary(logdir: Path, *args: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(logdir), "--format", "json", *args], out, err) == 0, err.getvalue()
    return json.loads(out.getvalue())


def _ours(worker: dict[str, Any]) -> dict[str, dict[str, Counter]]:
    """A worker entry's counts as {mode: {device: Counter(op type)}}, devices named as the
    reference names them ("" for an execution without outputs)."""
    out: dict[str, dict[str, Counter]] = {"eager": {}, "graph": {}, "functions": {}}
    for d in worker["devices"]:
        device = "" if d["device"] == NO_DEVICE else d["device"]
        for row in d["op_types"]:
            for mode in ("eager", "graph"):
                if row[mode]["executions"]:
                    out[mode].setdefault(device, Counter())[row["op_type"]] += row[mode]["executions"]
        for f in d["functions"]:
            out["functions"].setdefault(device, Counter())[f["name"]] += f["calls"]
    return out


def _reference(directory: Path) -> dict[str, dict[str, Counter]]:
    return {kind: {d: Counter(c) for d, c in per.items()}
            for kind, per in reference_device_counts(str(directory)).items()}


def test_job_is_one_run_with_a_worker_per_task(job_dir: Path) -> None:
    doc = _summary(job_dir)
    assert [r["run"] for r in doc["runs"]] == ["run"]
    run = doc["runs"][0]
    workers = run["workers"]
    assert [(w["task"], w["directory"], w["status"]) for w in workers] == [
        ("worker:0", "run/worker0", "ok"), ("worker:1", "run/worker1", "ok")]
    assert all(w["host"] for w in workers)
    assert sorted(run["sources"]["debugger"]) == sorted(w["source"] for w in workers)
    # Each worker's compute ran on its own task's device.
    for w in workers:
        devices = [d["device"] for d in w["devices"] if d["device"] != NO_DEVICE]
        assert devices and all(f"/task:{w['task'].split(':')[1]}/" in d for d in devices)


def test_each_workers_functions_say_whose_they_are(job_dir: Path) -> None:
    """Each worker traced the job's train_step: one ledger entry per worker, named with its
    task (the same function twice, unnamed, read as two); the strategy's own iterator
    functions (_init_func, _next_func, _finalize_func) are not the job's."""
    run = _summary(job_dir)["runs"][0]
    tasks = sorted(w["task"] for w in run["workers"])
    names = sorted(f["name"] for f in run["tf_functions"])
    assert names == sorted(f"train_step ({task})" for task in tasks), names
    assert all(f["traces"] == 1 and f["calls"] >= 1 for f in run["tf_functions"]), run["tf_functions"]


def test_counts_per_worker_equal_debugdatareader(job_dir: Path) -> None:
    run = _summary(job_dir)["runs"][0]
    totals: dict[str, Counter] = {"eager": Counter(), "graph": Counter()}
    for w in run["workers"]:
        reference = _reference(job_dir / w["directory"])
        assert _ours(w) == reference, w["directory"]
        for mode in totals:
            for c in reference[mode].values():
                totals[mode].update(c)
    # The run's own table is the sum of its workers'.
    for mode in totals:
        assert Counter({r["op_type"]: r[mode]["executions"] for r in run["op_types"]
                        if r[mode]["executions"]}) == totals[mode]


def test_kernels_per_device_add_up_to_its_executions(job_dir: Path, mirrored_dir: Path) -> None:
    for logdir in (job_dir, mirrored_dir):
        for w in _summary(logdir)["runs"][0]["workers"]:
            for d in w["devices"]:
                for row in d["op_types"]:
                    for mode in ("eager", "graph"):
                        stats = row[mode]
                        assert sum(k["executions"] for k in stats["kernels"]) == stats["executions"], \
                            (w["directory"], d["device"], row["op_type"], mode)


def test_collectives_tie_the_workers(job_dir: Path) -> None:
    run = _summary(job_dir)["runs"][0]
    reduce = next(c for c in run["collectives"] if c["op_type"] == "CollectiveReduceV2")
    assert reduce["in_every_worker"] is True
    for w in run["workers"]:
        ref = _reference(job_dir / w["directory"])
        n = sum(c.get("CollectiveReduceV2", 0) for c in ref["graph"].values())
        assert n > 0
        assert reduce["workers"][w["task"]] == {"eager": 0, "graph": n}
        assert {"op_type": "CollectiveReduceV2", "eager": 0, "graph": n} in w["collectives"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(job_dir)], out, err) == 0
    text = out.getvalue()
    assert "  worker:0  host " in text and "  worker:1  host " in text
    assert "collective CollectiveReduceV2: worker:0 eager 0 graph" in text


def test_missing_worker_is_named_and_the_other_shown(job_dir: Path, tmp_path: Path) -> None:
    copy = link_tree(job_dir, tmp_path / "job")
    for path in (copy / "run" / "worker1").iterdir():
        if path.name.startswith("tfdbg_events."):
            path.unlink()
    run = _summary(copy)["runs"][0]
    assert run["run"] == "run"
    by_dir = {w["directory"]: w for w in run["workers"]}
    assert by_dir["run/worker1"]["status"] == "missing"
    assert "no tfdbg dump in this worker's directory" in by_dir["run/worker1"]["problems"][0]
    assert _ours(by_dir["run/worker0"]) == _reference(job_dir / "run" / "worker0")


def test_missing_first_task_is_named_from_the_task_numbers(job_dir: Path, tmp_path: Path) -> None:
    copy = link_tree(job_dir, tmp_path / "job")
    shutil.rmtree(copy / "run" / "worker0")
    run = _summary(copy)["runs"][0]
    assert [(w["task"], w["status"]) for w in run["workers"]] == [("worker:1", "ok"), ("", "missing")]
    assert "task worker:0 left no dump here (tasks 1 of job worker did)" in run["workers"][1]["problems"][0]


def test_damaged_worker_is_named_and_the_other_counted(job_dir: Path, tmp_path: Path) -> None:
    copy = link_tree(job_dir, tmp_path / "job")
    traces = next((copy / "run" / "worker1").glob("*.graph_execution_traces"))
    data = bytearray(traces.read_bytes())
    os.unlink(traces)  # a hard link to the fixture's file: write a file of its own
    data[len(data) // 2] ^= 0xFF
    traces.write_bytes(bytes(data))
    run = _summary(copy)["runs"][0]
    by_dir = {w["directory"]: w for w in run["workers"]}
    damaged = by_dir["run/worker1"]
    assert damaged["status"] == "damaged"
    assert any(traces.name in p for p in damaged["problems"])
    assert _ours(by_dir["run/worker0"]) == _reference(job_dir / "run" / "worker0")
    # The damaged worker still counts what is intact: no more than the reference.
    ref = _reference(job_dir / "run" / "worker1")
    ours = _ours(damaged)
    assert ours["eager"] == ref["eager"]
    assert sum(sum(c.values()) for c in ours["graph"].values()) < \
        sum(sum(c.values()) for c in ref["graph"].values())


def test_mirrored_replicas_per_device_equal_debugdatareader(mirrored_dir: Path) -> None:
    run = _summary(mirrored_dir)["runs"][0]
    assert run["run"] == "run"
    [worker] = run["workers"]
    assert worker["task"] == "localhost:0" and worker["status"] == "ok"
    devices = {d["device"] for d in worker["devices"]}
    assert {"/job:localhost/replica:0/task:0/device:CPU:0",
            "/job:localhost/replica:0/task:0/device:CPU:1"} <= devices
    reference = _reference(mirrored_dir / "run")
    assert _ours(worker) == reference
    # Both replicas ran the step's graph ops, and the all-reduce.
    for device in ("/job:localhost/replica:0/task:0/device:CPU:0",
                   "/job:localhost/replica:0/task:0/device:CPU:1"):
        assert reference["graph"][device]["MatMul"] > 0
    assert any(c["op_type"].startswith("Collective") for c in run["collectives"])


def test_tab_devices_equal_debugdatareader_and_the_dump(mirrored_dir: Path) -> None:
    """The tab's executions per device of each row (taken from the run's ``workers``) are
    DebugDataReader's, and the same as read from the dump alone (how the tab reads a run
    of one dump on one device, which has no ``workers``)."""
    [model] = load(str(mirrored_dir))
    assert model.workers
    view = build_view(model, str(mirrored_dir))
    reference = _reference(mirrored_dir / "run")
    for mode in ("eager", "graph"):
        expected: Counter[tuple[str, str]] = Counter()
        for device, per in reference[mode].items():
            for op_type, n in per.items():
                if op_type in model.op_types:
                    expected[(op_type, short_device(device))] += n
        got = Counter({(op_type, device): n for op_type, row in view.rows.items()
                       for device, n in row[mode].get("devices", {}).items()})
        assert got == expected, mode
        assert len({device for _op, device in got}) > 1, mode
    assert device_splits(model) == device_splits(replace(model, workers=[]))


def test_unreadable_worker_is_named_and_the_other_counted(job_dir: Path, tmp_path: Path) -> None:
    copy = link_tree(job_dir, tmp_path / "job")
    for path in (copy / "run" / "worker1").glob("tfdbg_events.*"):
        os.unlink(path)  # hard links to the fixture's files: replace, never write through
        path.write_bytes(b"not a TFRecord file at all\n" * 10)
    run = _summary(copy)["runs"][0]
    by_dir = {w["directory"]: w for w in run["workers"]}
    broken = by_dir["run/worker1"]
    assert broken["status"] == "unreadable" and broken["devices"] == []
    assert broken["problems"] and all(p.startswith("run/worker1/tfdbg_events.")
                                      for p in broken["problems"])
    assert by_dir["run/worker0"]["status"] == "ok"
    assert _ours(by_dir["run/worker0"]) == _reference(job_dir / "run" / "worker0")


def test_no_call_site_is_a_replica_threads_start(tmp_path: Path) -> None:
    """MirroredStrategy runs each replica's Keras step in a thread of its own, whose stack
    starts in Python's threading module and holds no line of the job's: the site of the
    gradient ops made there is Keras's (the library beside TF that made them: its train_step,
    or Keras 2's optimizer),
    not the thread's start nor tfdbg's own frame."""
    from tb_opmode.analyze.call_sites import call_sites

    needs_tensorflow()
    rundir = tmp_path / "logs" / "mirrored"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TB_OPMODE_CACHE": "off"}
    proc = subprocess.run([sys.executable, "-m", "tb_opmode.cli", "record", str(rundir.parent), "--name",
                           "mirrored", "--evidence", "calls", "--", sys.executable,
                           str(ROOT / "tests" / "record_jobs.py"), "mirrored_fit"],
                          env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (model,) = load(str(rundir))
    sites = [(op_type, mode, s) for op_type in model.op_types for mode in ("eager", "graph")
             for s in call_sites(model, op_type, mode, limit=None, snippets=False)]
    assert sites
    bad = [(op, mode, s["file"], s["line"]) for op, mode, s in sites
           if os.path.basename(s["file"]) in ("threading.py", "dumping_callback.py")]
    assert not bad, bad[:5]
    # Keras 3's train_step, Keras 2's optimizer's compute_gradients (TF 2.13)
    (grad,) = call_sites(model, "BiasAddGrad", "graph", limit=1, snippets=False)
    assert re.search(r"[/\\]keras[/\\]", grad["file"]), grad
