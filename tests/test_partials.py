"""Per-source partial results merge associatively, and pools read them as this process does.

The logdir is a real two-worker MultiWorkerMirroredStrategy job (two dumps and a
profile, tests/multiworker_job.py), with worker 0's TF log (its stderr) attached.
``--workers 2`` (a local process pool) and ``--dask`` (a two-worker LocalCluster the
test starts on 127.0.0.1, processes) must give exactly the JSON of the plain run.
"""
from __future__ import annotations

import functools
import io
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import build_run
from tb_opmode.cli import main
from tb_opmode.present.contract import summary
from tb_opmode.read import partials
from tb_opmode.read.discover import discover
from tb_opmode.read.partials import Partial, merge, read_unit, units_of

from .conftest import free_port
from .test_workers import job_dir  # noqa: F401  (the module fixture, shared)


def _cli_json(*argv: str) -> tuple[int, dict[str, Any] | None, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["summary", *argv, "--format", "json"], out, err)
    return code, (json.loads(out.getvalue()) if code == 0 else None), err.getvalue()


def _trees(items: list[Partial]) -> Iterator[Partial]:
    """Every way of merging ``items`` in this order with a binary tree of merges."""
    if len(items) == 1:
        yield items[0]
        return
    for cut in range(1, len(items)):
        for left in _trees(items[:cut]):
            for right in _trees(items[cut:]):
                yield merge(left, right)


def test_merge_in_any_grouping_and_order_gives_the_same_json(
        job_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    logdir = str(job_dir)
    found = discover(logdir, (str(job_dir / "worker0.stderr"),), log_run="run")
    units = units_of(found)
    kinds = sorted(u.kind for u in units)
    assert kinds == ["dump", "dump", "log", "profile"]
    expected = json.dumps(summary([build_run(s, logdir) for s in found], logdir), sort_keys=True)
    parts = [read_unit(u) for u in units]
    # From here on nothing may be read again: the JSON must come from the merged parts.
    def no_reading(unit: partials.Unit) -> Partial:
        raise AssertionError(f"{unit} read again: the merge lost it")
    monkeypatch.setattr(partials, "read_unit", no_reading)
    assert json.loads(expected)["runs"][0]["sources"]["logs"]

    def check(merged: Partial) -> None:
        assert set(merged.values) == {u.key for u in units}
        got = summary([build_run(s, logdir, merged) for s in found], logdir)
        assert json.dumps(got, sort_keys=True) == expected

    # Every grouping (the 5 binary trees over 4 parts) in one order, and every order
    # (4! of them) folded from the left and from the right.
    trees = list(_trees(parts))
    assert len(trees) == 5
    for merged in trees:
        check(merged)
    for order in itertools.permutations(parts):
        check(functools.reduce(merge, order))
        check(functools.reduce(lambda a, b: merge(b, a), reversed(order)))
    # Partial() is the identity of merge.
    whole = merge(merge(parts[0], parts[1]), merge(parts[2], parts[3]))
    assert merge(Partial(), whole).values == whole.values == merge(whole, Partial()).values


@pytest.mark.parametrize("cache", ["off", "on"])
def test_process_pool_gives_the_same_json(job_dir: Path, cache: str,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Off: the pool's processes read every file; on: they fill, then read, the cache.
    monkeypatch.setenv("TB_OPMODE_CACHE", "off" if cache == "off" else str(tmp_path / "cache"))
    code, plain, err = _cli_json(str(job_dir))
    assert code == 0, err
    for _ in range(2 if cache == "on" else 1):
        code, pooled, err = _cli_json(str(job_dir), "--workers", "2")
        assert code == 0, err
        assert pooled == plain
    assert plain is not None and plain["runs"][0]["workers"]


def test_dask_cluster_gives_the_same_json(job_dir: Path) -> None:  # noqa: F811
    distributed = pytest.importorskip("distributed")
    code, plain, err = _cli_json(str(job_dir))
    assert code == 0, err
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
        code, on_dask, err = _cli_json(str(job_dir), "--dask", cluster.scheduler_address)
    assert code == 0, err
    assert on_dask == plain


def test_dask_without_a_scheduler_is_one_error_line(job_dir: Path) -> None:  # noqa: F811
    pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{free_port()}"
    code, _doc, err = _cli_json(str(job_dir), "--dask", address)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tb-opmode: error: --dask {address}: cannot reach")


def test_workers_must_be_positive(job_dir: Path) -> None:  # noqa: F811
    with pytest.raises(SystemExit) as exit_:
        main(["summary", str(job_dir), "--workers", "0"], io.StringIO(), io.StringIO())
    assert exit_.value.code == 2
