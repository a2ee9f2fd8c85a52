"""``partials.read_serial`` reads a big local log (with none, the biggest big profile) in
a forked child beside the dump.

In: the committed FULL_HEALTH run of ``tests/data`` (dump, profile and the TF 2.21 log
of a Keras fit), read with the log or the profile forked (a size threshold lowered to
0) and without. Out: the same summary JSON either way; the profile is not forked beside
a forked log; a child that fails is logged and its source read again in this process,
with the same result.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.present.contract import summary
from tb_opmode.read import cache, partials
from tb_opmode.read.partials import Unit

from ..conftest import assert_reaped
from .conftest import Fixture


def _summary_json(logdir: Path) -> str:
    return json.dumps(summary(load(str(logdir)), str(logdir)), sort_keys=True)


def _spy_forks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``read_serial`` forks a child for, from now on."""
    forked: list[str] = []
    fork_unit = partials._fork_unit

    def spy(unit: Unit) -> tuple[int, int] | None:
        child = fork_unit(unit)
        assert child is not None
        forked.append(unit.path)
        return child

    monkeypatch.setattr(partials, "_fork_unit", spy)
    return forked


def test_forked_log_gives_the_same_summary(full_health: Fixture, monkeypatch: pytest.MonkeyPatch,
                                           forks: list[int]) -> None:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 1 << 60)
    plain = _summary_json(full_health.directory)
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 0)
    forked = _spy_forks(monkeypatch)
    assert _summary_json(full_health.directory) == plain
    # the run's two logs (TF's stderr, oneDNN's stdout), each in a child of its own
    assert sorted(forked) == [str(full_health.log("stderr")), str(full_health.log("stdout"))]
    assert '"onednn_verbose"' in plain and full_health.log().name in plain


def test_forked_profile_gives_the_same_summary(full_health: Fixture, monkeypatch: pytest.MonkeyPatch,
                                               forks: list[int]) -> None:
    """With no log big enough to fork, the profile is read beside the dump."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 1 << 60)
    monkeypatch.setattr(partials, "FORK_PROFILE_BYTES", 1 << 60)
    plain = _summary_json(full_health.directory)
    monkeypatch.setattr(partials, "FORK_PROFILE_BYTES", 0)
    forked = _spy_forks(monkeypatch)
    assert _summary_json(full_health.directory) == plain
    (profile,) = full_health.directory.glob("plugins/profile/*/*.xplane.pb")
    assert forked == [str(profile)]
    run = json.loads(plain)["runs"][0]
    assert run["sources"]["profile"] and run["time_share"]  # the profile's times are in it
    assert_reaped(forks)


def test_no_profile_forked_beside_a_forked_log(full_health: Fixture, monkeypatch: pytest.MonkeyPatch,
                                               forks: list[int]) -> None:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 0)
    monkeypatch.setattr(partials, "FORK_PROFILE_BYTES", 0)
    forked = _spy_forks(monkeypatch)
    _summary_json(full_health.directory)
    assert sorted(forked) == [str(full_health.log("stderr")), str(full_health.log("stdout"))]


def test_failed_child_is_logged_and_the_log_read_here(full_health: Fixture, monkeypatch: pytest.MonkeyPatch,
                                                       forks: list[int],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 1 << 60)
    plain = _summary_json(full_health.directory)

    def broken(unit: Unit) -> bytes:
        raise OSError(5, "input/output error (made by the test)", unit.path)

    # Only the forked child calls read_pickled on this path: it exits 1 without a result.
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 0)
    monkeypatch.setattr(partials, "read_pickled", broken)
    with caplog.at_level(logging.WARNING, logger=partials.__name__):
        assert _summary_json(full_health.directory) == plain
    assert any("the child that read it failed" in r.getMessage() and full_health.log().name in r.getMessage()
               for r in caplog.records)


def test_failure_beside_the_child_leaves_no_child(full_health: Fixture, monkeypatch: pytest.MonkeyPatch,
                                                  forks: list[int]) -> None:
    """Reading the dump fails while a child reads the log: the error comes out, and the
    child is gone (not left blocked on its pipe)."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 0)
    real = partials.read_unit

    def dump_fails(unit: Unit) -> partials.Partial:
        if unit.kind == "dump":
            raise OSError(5, "input/output error (made by the test)", unit.path)
        return real(unit)

    monkeypatch.setattr(partials, "read_unit", dump_fails)
    with pytest.raises(OSError, match="made by the test"):
        load(str(full_health.directory))
    assert_reaped(forks)


def test_child_writes_the_cache_after_sending_and_is_reaped(full_health: Fixture, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            forks: list[int]) -> None:
    """The child stores the log's cache entry only once its result is sent (the parent
    builds the run meanwhile), and by the time ``load`` returns the entry is written and
    the child reaped."""
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 0)
    events = tmp_path / "events.txt"  # each child's, with its pid
    real_read, real_store = partials.read_pickled, cache._store

    def read_then_note(unit: Unit) -> bytes:
        data = real_read(unit)
        with open(events, "a") as f:
            f.write(f"{os.getpid()} sent\n")
        return data

    def note_store(directory: str, path: str, key: tuple[str, ...], *rest: Any) -> None:
        if key[0] == "log" and cache._deferred is None:
            with open(events, "a") as f:
                f.write(f"{os.getpid()} stored\n")
        real_store(directory, path, key, *rest)

    monkeypatch.setattr(partials, "read_pickled", read_then_note)
    monkeypatch.setattr(cache, "_store", note_store)
    plain = _summary_json(full_health.directory)
    assert_reaped(forks)
    by_pid: dict[str, list[str]] = {}
    for line in events.read_text().splitlines():
        pid, what = line.split()
        by_pid.setdefault(pid, []).append(what)
    assert sorted(by_pid) == sorted(str(p) for p in forks)  # the logs' two children
    assert all(seen == ["sent", "stored"] for seen in by_pid.values()), by_pid
    # The entries were there when load returned: the logs are not read again.
    def unreadable(path: str) -> None:
        raise AssertionError(f"{path} read again: its cache entry was not written")

    monkeypatch.setattr(cache, "read_log", unreadable)
    monkeypatch.setattr(partials, "FORK_LOG_BYTES", 1 << 60)
    assert _summary_json(full_health.directory) == plain
