"""Run discovery (``read.discover``): which files make up which run."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from tb_opmode.analyze.assemble import load
from tb_opmode.read.discover import discover


def _profile(logdir: Path) -> Path:
    (found,) = list(logdir.rglob("*.xplane.pb"))
    return found


def _layout(bert_logdir: Path, root: Path) -> tuple[Path, Path]:
    """root/dbg holds the dump and log; root/fit/<ts>/train holds the profile."""
    dbg = root / "dbg"
    shutil.copytree(bert_logdir, dbg, ignore=shutil.ignore_patterns("2*"))
    src = _profile(bert_logdir)
    rel = src.relative_to(bert_logdir)
    dst = root / "fit" / rel
    dst.parent.mkdir(parents=True)
    shutil.copy2(src, dst)  # keeps the mtime: written while the dump was
    return dbg, dst


def test_profile_in_a_sibling_directory_attaches_by_host_and_time(bert_logdir: Path,
                                                                   tmp_path: Path) -> None:
    dbg, profile = _layout(bert_logdir, tmp_path)
    runs = discover(str(tmp_path))
    assert [r.name for r in runs] == ["dbg"]
    assert runs[0].profiles == [str(profile)]
    assert runs[0].logs == [str(dbg / "tf_log.txt")]


def test_profile_of_another_time_is_a_run_of_its_own(bert_logdir: Path, tmp_path: Path) -> None:
    _dbg, profile = _layout(bert_logdir, tmp_path)
    day_before = profile.stat().st_mtime - 86400
    os.utime(profile, (day_before, day_before))
    runs = {r.name: r for r in discover(str(tmp_path))}
    profile_run = str(profile.parent.parent.parent.parent.relative_to(tmp_path))
    assert set(runs) == {"dbg", profile_run}
    assert runs["dbg"].profiles == []
    assert runs[profile_run].profiles == [str(profile)] and not runs[profile_run].dump_sets
    models = {m.run: m for m in load(str(tmp_path))}
    alone = models[profile_run]
    assert alone.counts_from == "profile"
    # Without a dump, graph op types are named after the kernels the profile saw.
    assert alone.op_types["MatMul"].graph.executions > 0
    assert {k.name for k in alone.op_types["MatMul"].graph.kernels} == {"_MklMatMul"}


def test_log_outside_the_logdir(bert_logdir: Path, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(bert_logdir, logdir, ignore=shutil.ignore_patterns("*.txt"))
    outside = tmp_path / "elsewhere.log"
    shutil.copy2(bert_logdir / "tf_log.txt", outside)
    (model,) = load(str(logdir))
    assert not model.logs
    assert model.op_types["Transpose"].eager.kernels[0].evidence == "inferred"
    (model,) = load(str(logdir), extra_logs=(str(outside),))
    assert [log.path for log in model.logs] == [str(outside)]
    assert model.op_types["Transpose"].eager.kernels[0].evidence == "log"
