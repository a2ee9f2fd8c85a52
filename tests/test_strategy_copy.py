"""``strategy.run(f)`` with a tf.function ``f``: MirroredStrategy traces a copy of ``f``.

In: ``tb-opmode record`` of ``tests/record_jobs.py strategy_run`` (this venv's TF): a
tf.function run by ``strategy.run(f)`` 3 times over two logical CPUs, called directly once
before (``direct``) or not (``only``); the job prints TF's own tracing counts of ``f`` and
of the copy ``strategy.run(f)`` made of it (``call_for_each_replica`` clones a tf.function
once per strategy, around a wrapper of its Python function). Out: ``functions`` counts
both objects' traces as ``f``'s with the calls the job made, and gives the copy's trace
no cause: "new_function_object" advised creating the tf.function once, which the user
did. From TF's log alone (``kernels``, no dump) the copy's line names TF's wrapper
(``wrapped_fn``), not ``f``: it is not a function of its own, nor "called inside another
tf.function", and ``f``'s own trace does not get the copy's calls.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.traces_causes import STRATEGY_COPY_NOTE
from tb_opmode.cli import main

from .conftest import printed, record_job

RUNS = (("direct", "kernels"), ("direct", "calls"), ("only", "kernels"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, int]]]:
    """(run directory, TF's counts the job printed) per ``<variant>-<level>``."""
    logdir = tmp_path_factory.mktemp("strategy") / "logs"
    runs = {}
    for variant, level in RUNS:
        name = f"{variant}-{level}"
        stdout = record_job(logdir, name, "strategy_run", variant, level=level)
        runs[name] = (logdir / name, json.loads(printed(stdout, "strategy traces ")))
    return runs


def _functions(rundir: Path) -> list[dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["functions", str(rundir), "--format", "json"], out, err) == 0, err.getvalue()
    (run,) = json.loads(out.getvalue())["runs"]
    functions: list[dict[str, Any]] = run["tf_functions"]
    return functions


@pytest.mark.parametrize("variant,level", RUNS)
def test_the_copys_traces_are_the_functions_with_tfs_counts_and_no_cause(
        recorded: dict[str, tuple[Path, dict[str, int]]], variant: str, level: str) -> None:
    rundir, truth = recorded[f"{variant}-{level}"]
    (fn,) = _functions(rundir)
    assert fn["python_name"] == "replica_step" and not fn["nested"], fn
    assert (fn["traces"], fn["calls"]) == (truth["own"] + truth["copy"], truth["calls"]), (fn, truth)
    assert fn["causes"] == {} and fn["advice"] == [], fn
    copies = [t for t in fn["trace_list"] if t["note"] == STRATEGY_COPY_NOTE]
    assert len(copies) == truth["copy"] and [t["calls"] for t in copies] == [3], fn["trace_list"]
    if variant == "direct":  # the direct call's trace keeps its one call
        (own,) = [t for t in fn["trace_list"] if t["note"] != STRATEGY_COPY_NOTE]
        assert own["calls"] == 1 and own["changed"] == [], own


def test_with_a_dump_the_copys_argument_has_the_users_name(
        recorded: dict[str, tuple[Path, dict[str, int]]]) -> None:
    """The copy's wrapper takes ``*args`` (TF names its placeholder ``args_0``): the dump's
    source names the parameter, a tensor, not a Python value."""
    rundir, _truth = recorded["direct-calls"]
    (fn,) = _functions(rundir)
    assert [[(a["name"], a["kind"]) for a in t["args"]] for t in fn["trace_list"]] == [
        [("x", "tensor")], [("x", "tensor")]], fn["trace_list"]
