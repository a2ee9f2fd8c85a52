"""Logs named with ``--log``: a path naming nothing is bad input, a copy of a log the run
already has is read once.

In: the committed FULL_HEALTH run (dump, profile, TF 2.21 log), through ``cli.main``.
Out: exit 2 and one line naming the parameter for a missing file, before anything is
read; for a copy of the run's own log, the summary of the run without it and a warning
naming both files.
"""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from tb_opmode.cli import main

from .conftest import Fixture


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", [("summary",), ("functions",), ("explain", "MatMul"),
                                     ("report",)])
def test_a_missing_log_is_bad_input(full_health: Fixture, tmp_path: Path,
                                    command: tuple[str, ...]) -> None:
    missing = tmp_path / "typo.log"
    extra = ("--output", str(tmp_path / "r.md")) if command[0] == "report" else ()
    code, out, err = _run(command[0], str(full_health.directory), *command[1:], *extra,
                          "--log", str(missing))
    assert code == 2 and out == ""
    assert err == f"tb-opmode: error: --log {missing}: no such file\n"


def test_a_copy_of_the_runs_log_is_read_once(full_health: Fixture, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    code, out, err = _run("summary", str(full_health.directory), "--format", "json")
    assert code == 0, err
    plain = json.loads(out)
    copy = tmp_path / "copy.log"
    shutil.copyfile(full_health.log("stderr"), copy)
    code, out, err = _run("summary", str(full_health.directory), "--format", "json",
                          "--log", str(copy))
    assert code == 0, err
    doc = json.loads(out)
    (run,), (plain_run,) = doc["runs"], plain["runs"]
    assert run["op_types"] == plain_run["op_types"]  # not a line counted twice
    assert run["sources"]["logs"] == plain_run["sources"]["logs"]
    (warning,) = [w for w in run["warnings"] if str(copy) in w]
    assert "the same bytes as" in warning and full_health.log("stderr").name in warning


def test_a_log_of_the_same_size_but_other_bytes_is_read(full_health: Fixture, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a copy is left out: the run's log with its last line's text changed (same
    size) is a log of its own, read beside it."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    data = bytearray(full_health.log("stderr").read_bytes())
    i = data.rstrip(b"\n").rfind(b"\n") + 1 + 60  # inside the last line's message
    data[i] = ord("#") if data[i] != ord("#") else ord("%")
    other = tmp_path / "other.log"
    other.write_bytes(bytes(data))
    code, out, err = _run("summary", str(full_health.directory), "--format", "json",
                          "--log", str(other))
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert other.name in json.dumps(run["sources"]["logs"])
