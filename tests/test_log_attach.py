"""Which run a log outside every run's directory belongs to.

In: two real runs written at the same time by ``demo/make_logdir.py`` (the cnn
workload, oneDNN on and off), their logs moved about the way users keep them
(``logs/stderr_on/vlog.txt`` beside ``logs/onednn_on`` and ``logs/onednn_off``).
Out: assertions that a log is attached only where its content proves it belongs
(its debug nodes' tfdbg run id, else its lines' times fitting exactly one dump),
that what cannot be told apart is attached nowhere with a warning naming the
candidates, and that ``--log FILE --run RUN`` attaches by hand.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.cli import main
from tb_opmode.read.discover import discover

from .conftest import MAKE_LOGDIR, link_tree, needs_tensorflow

ON, OFF = "onednn_on", "onednn_off"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<root>/onednn_on and <root>/onednn_off, each a dump + profile + its VLOG log,
    made by two TF processes running at once (so their times overlap)."""
    needs_tensorflow()
    root = tmp_path_factory.mktemp("two_runs")
    procs = {flag: subprocess.Popen(
        [sys.executable, str(MAKE_LOGDIR), str(root / f"onednn_{flag}"), "--workload", "cnn",
         "--onednn", flag], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for flag in ("on", "off")}
    for proc in procs.values():
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    return root


def cli(*args: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["summary", *args, "--format", "json"], stdout=out, stderr=err)
    return code, json.loads(out.getvalue()) if code == 0 else {}, err.getvalue()


def by_run(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["run"]: r for r in doc["runs"]}


def kernels(run: dict[str, Any], op_type: str, mode: str) -> set[tuple[str, str]]:
    row = next(r for r in run["op_types"] if r["op_type"] == op_type)
    return {(k["name"], k["evidence"]) for k in row[mode]["kernels"]}


def strip_run_ids(src: Path, dst: Path) -> None:
    """``src`` without the lines naming a tfdbg_run_id: a VLOG of the same run with no
    debug nodes in it, all other lines (and their times) as TF wrote them."""
    lines = src.read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if b"tfdbg_run_id" not in line]
    assert len(kept) < len(lines)
    # A new file: ``dst`` may be a hard link to the fixture's log (``link_tree``).
    dst.unlink(missing_ok=True)
    dst.write_bytes(b"".join(kept))


def sibling_layout(two_runs: Path, root: Path) -> Path:
    """A layout users keep: the on-run's log kept in logs/stderr_on/vlog.txt."""
    logs = link_tree(two_runs, root / "logs")
    (logs / "stderr_on").mkdir()
    (logs / ON / "tf_log.txt").rename(logs / "stderr_on" / "vlog.txt")
    return logs


def test_sibling_log_attaches_to_the_run_its_debug_nodes_name(two_runs: Path,
                                                              tmp_path: Path) -> None:
    logs = sibling_layout(two_runs, tmp_path)
    code, doc, err = cli(str(logs))
    assert code == 0, err
    runs = by_run(doc)
    # Not a run of its own, and not the off-run's (before: the first run within
    # +-120 s of its mtime got it, so the off-run claimed the on-run's banner).
    assert set(runs) == {ON, OFF}
    assert runs[ON]["sources"]["logs"] == ["stderr_on/vlog.txt"]
    assert runs[OFF]["sources"]["logs"] == ["onednn_off/tf_log.txt"]
    assert "start-up banner" not in runs[OFF]["onednn_source"]
    assert ("_MklMatMul", "log") not in kernels(runs[OFF], "MatMul", "graph")
    assert kernels(runs[OFF], "MatMul", "graph") == {("MatMul", "log")}
    assert runs[ON]["onednn_enabled"] is True
    assert runs[ON]["onednn_source"] == "start-up banner in the log"
    assert kernels(runs[ON], "MatMul", "graph") == {("_MklMatMul", "log")}
    assert doc["warnings"] == []


def test_log_that_fits_several_runs_is_attached_to_none(two_runs: Path, tmp_path: Path) -> None:
    logs = sibling_layout(two_runs, tmp_path)
    vlog = logs / "stderr_on" / "vlog.txt"
    strip_run_ids(vlog, vlog)  # only its times are left, and both runs ran then
    code, doc, err = cli(str(logs))
    assert code == 0, err
    runs = by_run(doc)
    assert runs[ON]["sources"]["logs"] == []
    assert runs[OFF]["sources"]["logs"] == ["onednn_off/tf_log.txt"]
    assert "start-up banner" not in runs[OFF]["onednn_source"]
    assert ("_MklMatMul", "log") not in kernels(runs[OFF], "MatMul", "graph")
    # A run of its own (what the log says, under its own name), never a dump's.
    assert runs["stderr_on"]["sources"] == {"debugger": [], "profile": [],
                                            "logs": ["stderr_on/vlog.txt"]}
    for name in (ON, OFF):
        (warning,) = [w for w in runs[name]["warnings"] if "stderr_on/vlog.txt" in w]
        assert "fit several runs (onednn_off, onednn_on)" in warning
        assert "attached to none of them" in warning and "--run" in warning
    # By hand it goes where it is told.
    code, doc, err = cli(str(logs), "--log", str(vlog), "--run", ON)
    assert code == 0, err
    (run,) = doc["runs"]
    assert run["sources"]["logs"] == ["stderr_on/vlog.txt"]
    assert kernels(run, "MatMul", "graph") == {("_MklMatMul", "log")}


def test_log_fitting_exactly_one_run_by_time_attaches(two_runs: Path, tmp_path: Path) -> None:
    logs = link_tree(two_runs, tmp_path / "logs")
    shutil.rmtree(logs / OFF)
    (logs / "stderr_on").mkdir()
    strip_run_ids(logs / ON / "tf_log.txt", logs / "stderr_on" / "vlog.txt")
    (logs / ON / "tf_log.txt").unlink()
    (run,) = discover(str(logs))
    assert run.name == ON and run.logs == [str(logs / "stderr_on" / "vlog.txt")]


def test_log_naming_another_dump_is_not_attached(two_runs: Path, tmp_path: Path) -> None:
    """The off-run's log beside the on-run only: its times fit, its run id does not."""
    logs = link_tree(two_runs, tmp_path / "logs")
    (logs / ON / "tf_log.txt").unlink()
    (logs / "stderr_off").mkdir()
    (logs / OFF / "tf_log.txt").rename(logs / "stderr_off" / "vlog.txt")
    shutil.rmtree(logs / OFF)
    runs = {r.name: r for r in discover(str(logs))}
    assert runs[ON].logs == []
    assert runs["stderr_off"].logs == [str(logs / "stderr_off" / "vlog.txt")]
    (warning,) = runs["stderr_off"].warnings
    assert "which no dump here has" in warning[1]


def test_log_inside_a_run_naming_another_dump_warns(two_runs: Path, tmp_path: Path) -> None:
    logs = link_tree(two_runs, tmp_path / "logs")
    (logs / OFF / "tf_log.txt").unlink()
    (logs / ON / "tf_log.txt").rename(logs / OFF / "tf_log.txt")
    models = {m.run: m for m in load(str(logs))}
    off = models[OFF]
    assert [log.path for log in off.logs] == [str(logs / OFF / "tf_log.txt")]
    (problem,) = [p for p in off.problems if p.path.endswith("tf_log.txt")]
    assert "its debug nodes name tfdbg run id" in problem.message
    assert "probably another run's" in problem.message


def test_given_log_attaches_by_content_or_by_hand(two_runs: Path, tmp_path: Path) -> None:
    logs = link_tree(two_runs, tmp_path / "logs")
    kept = tmp_path / "kept.log"
    (logs / ON / "tf_log.txt").rename(kept)
    code, doc, err = cli(str(logs), "--log", str(kept))
    assert code == 0, err
    runs = by_run(doc)
    assert runs[ON]["sources"]["logs"] == ["../kept.log"]
    assert runs[OFF]["sources"]["logs"] == ["onednn_off/tf_log.txt"]
    assert doc["warnings"] == []
    # Its content does not tie it to a run: warned about, attached to none.
    anonymous = tmp_path / "anonymous.log"
    strip_run_ids(kept, anonymous)
    code, doc, err = cli(str(logs), "--log", str(anonymous))
    assert code == 0, err
    assert all("../anonymous.log" not in r["sources"]["logs"] for r in doc["runs"])
    (warning,) = [w for w in doc["warnings"] if str(anonymous) in w]
    assert "given with --log" in warning and "name its run with --run" in warning
    # --run attaches it whatever it holds, and says so when it names another dump.
    code, doc, err = cli(str(logs), "--log", str(kept), "--run", OFF)
    assert code == 0, err
    (run,) = doc["runs"]
    assert run["sources"]["logs"] == ["onednn_off/tf_log.txt", "../kept.log"]
    assert any(str(kept) in w and "probably another run's" in w for w in run["warnings"])
