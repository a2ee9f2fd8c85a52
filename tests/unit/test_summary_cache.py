"""The CLI's summary cache: a second ``tb-opmode summary`` of an unchanged logdir prints the
same document from one small cache entry, without reading or building any run; a changed
file, a call of ``main(argv)`` from Python and ``--workers`` all go through the readers.
On the committed TF 2.21 run of ``tests/data`` (no TensorFlow needed)."""
from __future__ import annotations

import io
import json
import logging
import os
import pickle
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_opmode import cli
from tb_opmode.analyze import assemble

from .conftest import Fixture


def _program(logdir: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> str:
    """``tb-opmode summary LOGDIR --format json`` as the program runs it (argv from sys.argv)."""
    out = io.StringIO()
    monkeypatch.setattr(sys, "argv", ["tb-opmode", "summary", str(logdir), "--format", "json", *extra])
    assert cli.main(stdout=out, stderr=io.StringIO()) == 0
    return out.getvalue()


def _kinds(cache_dir: Path) -> list[str]:
    """The kind (first word of the key) of every entry in the cache directory."""
    kinds = []
    for entry in sorted(cache_dir.glob("*.pickle")):
        with entry.open("rb") as f:
            kinds.append(pickle.load(f)["key"][0])
    return kinds


@pytest.fixture()
def run_copy(full_health: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path / "cache"))
    return Path(shutil.copytree(full_health.directory, tmp_path / "run"))


class _LoadSpy:
    """Counts the runs built (``assemble.load`` as the CLI calls it); ``fail``: any is an error."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail
        monkeypatch.setattr(cli, "load", self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.fail:
            raise AssertionError("runs built despite the summary cache")
        return assemble.load(*args, **kwargs)


def test_second_summary_comes_from_one_entry(run_copy: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    reference = _program(run_copy, monkeypatch)
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path / "cache"))
    assert _program(run_copy, monkeypatch) == reference  # cold: fills the cache
    assert _kinds(tmp_path / "cache").count("summary") == 1
    _LoadSpy(monkeypatch, fail=True)
    assert _program(run_copy, monkeypatch) == reference  # warm: nothing read, nothing built


def test_a_changed_file_builds_the_runs_again(run_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _program(run_copy, monkeypatch)
    spy = _LoadSpy(monkeypatch)
    log = run_copy / "tf_stderr.log"
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))  # same bytes, another mtime
    assert _program(run_copy, monkeypatch) == first
    assert spy.calls == 1
    log.write_bytes(b"")  # the log emptied: its kernels are no longer seen
    again = _program(run_copy, monkeypatch)
    assert spy.calls == 2 and again != first


def test_not_kept_for_callers_from_python_nor_for_workers(run_copy: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _LoadSpy(monkeypatch)
    argv = ["summary", str(run_copy), "--format", "json"]
    out = [io.StringIO(), io.StringIO()]
    for o in out:
        assert cli.main(argv, stdout=o, stderr=io.StringIO()) == 0
    assert spy.calls == 2 and out[0].getvalue() == out[1].getvalue()
    _program(run_copy, monkeypatch, "--workers", "1")
    _program(run_copy, monkeypatch, "--workers", "1")
    assert spy.calls == 4
    assert "summary" not in _kinds(tmp_path / "cache")


def test_an_unusable_cache_directory_is_one_warning(full_health: Fixture, no_tensor: Fixture,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """A cache that cannot be written (here TB_OPMODE_CACHE names a file; a read-only home
    alike) is said once, naming it, not once per file read: the summary of two runs gave
    a line for each of their dump sets, profiles, logs and views."""
    logdir = tmp_path / "logs"
    shutil.copytree(full_health.directory, logdir / "full")
    shutil.copytree(no_tensor.directory, logdir / "no_tensor")
    not_a_dir = tmp_path / "cache-is-a-file"
    not_a_dir.write_text("")
    monkeypatch.setenv("TB_OPMODE_CACHE", str(not_a_dir))
    with caplog.at_level(logging.WARNING, logger="tb_opmode.read.cache"):
        document = json.loads(_program(logdir, monkeypatch))
    said = [r.getMessage() for r in caplog.records if r.name == "tb_opmode.read.cache"]
    assert len(said) == 1, said
    assert str(not_a_dir) in said[0] and "TB_OPMODE_CACHE" in said[0]
    assert [r["run"] for r in document["runs"]] == ["full", "no_tensor"]  # and all was read
    assert not_a_dir.read_text() == ""
