"""Logdirs of many runs: all load (in worker processes), small ones before a huge one,
views beyond the resident ones are rebuilt from the cache, and the cache keeps
every run's entries while dropping those of deleted files.

In: the session fixtures of conftest.py (the CNN custom loop and the BERT-like
``fit``, real TensorFlow files), copied into many run directories by hard
links. Out: assertions on the order and state of what the run store published and
on the cache directory. Nothing here is timed: the machine is shared.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import build_run
from tb_opmode.errors import StillLoading
from tb_opmode.plugin.pool import Job
from tb_opmode.plugin.run_store import RunStore, file_signature
from tb_opmode.present import tab
from tb_opmode.read import cache
from tb_opmode.read.discover import discover

from .conftest import link_tree

SMALL_RUNS = 12


class Recording(RunStore):
    """The plugin's run store, noting at each publication which runs were ready then, and
    each worker process it starts."""

    RESIDENT_VIEWS = 3
    WORKERS = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.published: list[tuple[str, set[str], bool]] = []
        self.sent: list[str] = []  # the runs in the order they were sent to a worker
        self.workers_started = 0
        super().__init__(*args, **kwargs)
        start_worker = self._pool.start_worker

        def noted_worker() -> Any:
            self.workers_started += 1
            worker = start_worker()
            if worker is not None:
                send = worker.send

                def noted(job: Job, *rest: Any) -> None:
                    self.sent.append(job.name)
                    send(job, *rest)
                worker.send = noted  # type: ignore[method-assign]
            return worker
        self._pool.start_worker = noted_worker  # type: ignore[method-assign]

    def _publish(self, job: Job, view: Any, full: bool) -> None:
        with self._lock:
            ready = set(self._runs)
        self.published.append((job.name, ready, full))
        super()._publish(job, view, full)


@pytest.fixture()
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("TB_OPMODE_CACHE", str(where))
    return where


@pytest.fixture()
def many(tmp_path: Path, cnn_logdir: Path, bert_logdir: Path) -> Path:
    """SMALL_RUNS copies of the CNN run and one bigger run (the BERT-like fit)."""
    logdir = tmp_path / "many"
    logdir.mkdir()
    for i in range(SMALL_RUNS):
        link_tree(cnn_logdir, logdir / f"small_{i:02d}")
    link_tree(bert_logdir, logdir / "huge")
    return logdir


def _plugin(logdir: Path) -> Iterator[Recording]:
    plugin = Recording(str(logdir))
    plugin.start()
    try:
        assert plugin.wait_idle(600), "background load did not finish"
        yield plugin
    finally:
        plugin.close()


def _bytes(logdir: Path, name: str) -> int:
    (sources,) = [r for r in discover(str(logdir)) if r.name == name]
    return sum(size for _p, size, _m in file_signature(sources))


def test_many_runs_all_ready_and_a_huge_one_last(many: Path, cache_env: Path) -> None:
    assert _bytes(many, "huge") > _bytes(many, "small_00")  # the premise
    for plugin in _plugin(many):
        names = [name for name, _ready, _full in plugin.published]
        assert sorted(names) == sorted([f"small_{i:02d}" for i in range(SMALL_RUNS)] + ["huge"])
        # Smallest first: the huge run is sent last, to an idle worker (it is too big to
        # queue behind another run). The other worker may still hold two small runs then
        # (``Worker.can_take``), and on a loaded machine they can finish after the huge
        # one, so its publication is among the last three, after every other small run.
        assert plugin.sent[-1] == "huge" and sorted(plugin.sent) == sorted(names), plugin.sent
        huge_at = names.index("huge")
        in_flight = 2 * (Recording.WORKERS - 1)
        assert huge_at >= len(names) - 1 - in_flight, names
        assert plugin.published[huge_at][1] == set(names[:huge_at])
        assert plugin._errors == {}
        assert plugin._pool.workers == []  # workers stop once the scan's loads are done
        # More runs than RESIDENT_VIEWS: they arrived light, to be rebuilt on request.
        assert not any(full for _n, _r, full in plugin.published)
        progress = plugin.progress()
        assert progress["runs_done"] == progress["runs_total"] == SMALL_RUNS + 1
        assert progress["pending"] == [] and progress["loading"] == ""


QUEUED_RUNS = 24


def test_a_run_asked_for_while_queued_is_read_next(
        tmp_path: Path, cnn_logdir: Path, cache_env: Path) -> None:
    """The tab's user picks a run still queued behind others (equal sizes load in name
    order, so the last name comes last): it goes to the next free worker instead."""
    logdir = tmp_path / "queued"
    logdir.mkdir()
    names = [f"run_{i:02d}" for i in range(QUEUED_RUNS)]
    for name in names:
        link_tree(cnn_logdir, logdir / name)
    last = names[-1]
    plugin = Recording(str(logdir))
    plugin.start()
    try:
        deadline = time.monotonic() + 600
        while not plugin.published and time.monotonic() < deadline:
            time.sleep(0.005)
        assert plugin.published, "no run was published"
        sent_before = len(plugin.sent)
        with pytest.raises(StillLoading, match="read next"):
            plugin.view(last)
        assert plugin.wait_idle(600), "background load did not finish"
        order = [name for name, _ready, _full in plugin.published]
        assert sorted(order) == names and sorted(plugin.sent) == names and plugin._errors == {}
        # Unasked it is sent last. Asked, it is the next run sent, but for those the store
        # may have sent in the pass it was in when asked (at most one per free slot: two
        # workers, two runs each). Its publication may come after runs the other worker
        # finishes meanwhile, so the order of sending is what is checked.
        assert plugin.sent.index(last) <= sent_before + 2 * Recording.WORKERS, (sent_before, plugin.sent)
        assert order.index(last) < len(names) - 1
        assert plugin._asked_next == {}
        assert plugin.view(last).doc["run"] == last
    finally:
        plugin.close()


def test_views_beyond_the_resident_ones_are_rebuilt_identically(
        many: Path, cache_env: Path, cnn_logdir: Path) -> None:
    for plugin in _plugin(many):
        # Every run's answers equal those of a view built directly, whichever is held.
        for name in ["huge", *(f"small_{i:02d}" for i in range(SMALL_RUNS)), "huge"]:
            view = plugin.view(name)
            (sources,) = [r for r in discover(str(many)) if r.name == name]
            direct = tab.build_view(build_run(sources, str(many)), str(many))
            assert json.dumps(tab.overview(view), sort_keys=True) == \
                json.dumps(tab.overview(direct), sort_keys=True), name
            assert tab.op_page(view, "total", True, (), "", 0, 50) == \
                tab.op_page(direct, "total", True, (), "", 0, 50)
            with plugin._lock:
                held = [n for n, loaded in plugin._runs.items() if loaded.full]
            assert len(held) <= Recording.RESIDENT_VIEWS and name in held
        # The run list reads the light ones without rebuilding anything.
        with plugin._lock:
            light = [n for n, loaded in plugin._runs.items() if not loaded.full]
        assert len(light) == SMALL_RUNS + 1 - Recording.RESIDENT_VIEWS
        for name in light:
            loaded = plugin._runs[name]
            assert loaded.view.doc["run"] == name and loaded.view.rows
            assert tab.onednn_state(loaded.view)[0] == "on"


def test_the_cache_holds_every_run_and_drops_deleted_files(
        many: Path, cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in _plugin(many):
        pass
    entries = list(cache_env.glob("*.pickle"))
    runs = discover(str(many))
    # One per file read, each run's light view, and per dump set the tasks that wrote it
    # (discovery asks, as every run's directory is below one holding no dump: the logdir).
    expected = sum(2 * len(r.dump_sets) + len(r.profiles) + len(r.logs) + 1 for r in runs)
    assert len(entries) == expected > 3 * SMALL_RUNS
    # A second start builds nothing: every run is listed from its cached light view.
    for plugin in _plugin(many):
        assert plugin._errors == {}
        assert len(plugin.published) == SMALL_RUNS + 1
        assert all(not full for _n, _r, full in plugin.published)
        assert plugin.workers_started == 0   # nothing was built: all from the view cache
        assert plugin.view("small_03").timeline is not None  # the full view on request
    assert sorted(cache_env.glob("*.pickle")) == sorted(entries)
    # Delete runs: the next sweep removes their entries, and only theirs.
    for i in range(SMALL_RUNS // 2):
        shutil.rmtree(many / f"small_{i:02d}")
    monkeypatch.setattr(cache, "SWEEP_SECONDS", 0.0)
    cache.prune(str(cache_env))
    left = discover(str(many))
    assert len(list(cache_env.glob("*.pickle"))) == sum(
        2 * len(r.dump_sets) + len(r.profiles) + len(r.logs) + 1 for r in left)


def test_a_full_disk_evicts_the_least_recently_used(
        many: Path, cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in _plugin(many):
        pass
    entries = sorted(cache_env.glob("*.pickle"), key=lambda p: p.stat().st_mtime)
    newest = entries[-1]
    sizes = sum(p.stat().st_size for p in entries)
    # The disk lacks room for all but the newest entry: the rest go, newest kept.
    monkeypatch.setattr(cache, "_free_bytes", lambda directory: (0, sizes - newest.stat().st_size))
    monkeypatch.setattr(cache, "SWEEP_SECONDS", 1e9)
    cache.prune(str(cache_env), newest.name)
    assert list(cache_env.glob("*.pickle")) == [newest]
    assert os.path.exists(newest)
