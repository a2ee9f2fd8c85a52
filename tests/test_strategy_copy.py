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
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.traces_causes import STRATEGY_COPY_NOTE
from tb_opmode.cli import main

from .conftest import needs_tensorflow

ROOT = Path(__file__).resolve().parent.parent
JOBS = str(ROOT / "tests" / "record_jobs.py")
PY = sys.executable
RUNS = (("direct", "kernels"), ("direct", "calls"), ("only", "kernels"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, int]]]:
    """(run directory, TF's counts the job printed) per ``<variant>-<level>``."""
    needs_tensorflow()
    logdir = tmp_path_factory.mktemp("strategy") / "logs"
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TB_OPMODE_CACHE": "off"}
    runs = {}
    for variant, level in RUNS:
        name = f"{variant}-{level}"
        proc = subprocess.run([PY, "-m", "tb_opmode.cli", "record", str(logdir), "--name", name,
                               "--evidence", level, "--", PY, JOBS, "strategy_run", variant],
                              env=env, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (line,) = [x for x in proc.stdout.splitlines() if x.startswith("strategy traces ")]
        runs[name] = (logdir / name, json.loads(line.removeprefix("strategy traces ")))
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
