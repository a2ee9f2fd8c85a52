"""Eager ops a ``tf.py_function`` runs inside a tf.function: why they ran eagerly, and
what to change.

In: ``tb-opmode record`` (``kernels``, no dump) of ``tests/record_jobs.py py_function``
(this venv's TF): a tf.function whose ``tf.py_function`` runs Mul, Relu and AddV2 eagerly,
called 12 times; the job prints how often its Python function ran, and TF's log (the
run's ``stderr.log``) has an "Executing op" line per eager dispatch, counted here by a
regex of this test's own. Out: the eager counts are TF's; the answer says that a
tf.py_function ran them (EagerPyFunc runs its Python function eagerly), not that they
were "called from Python outside any tf.function"; the hot line's only advice is to
write them as TF ops in place of the tf.py_function, not a tf.function around the line
or its caller (the caller is a graph already).
"""
from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.call_sites import EAGER_WHY_PYTHON
from tb_opmode.analyze.py_function import PY_FUNCTION_ADVICE
from tb_opmode.cli import main

from .conftest import printed, record_job

_EXECUTING = re.compile(r"\] Executing op (\w+) in device ")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """(run directory, how often the job's tf.py_function ran)."""
    logdir = tmp_path_factory.mktemp("py_function") / "logs"
    stdout = record_job(logdir, "run", "py_function")
    return logdir / "run", int(printed(stdout, "py_function ran "))


def _cli(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main(list(args), out, err) == 0, err.getvalue()
    return out.getvalue()


def _logged_eager(rundir: Path) -> Counter[str]:
    """TF's own eager dispatches: its log's "Executing op" lines (tf.function calls left out)."""
    text = "".join(p.read_text(errors="replace") for p in rundir.rglob("stderr.log"))
    return Counter(op for op in _EXECUTING.findall(text) if not op.startswith("__inference_"))


def test_the_eager_counts_are_tfs(recorded: tuple[Path, int]) -> None:
    rundir, ran = recorded
    (run,) = json.loads(_cli("summary", str(rundir), "--format", "json"))["runs"]
    eager = {r["op_type"]: r["eager"]["executions"] for r in run["op_types"] if r["eager"]["executions"]}
    logged = _logged_eager(rundir)
    assert ran == 12 and all(logged[op] == ran for op in ("Mul", "Relu", "AddV2")), (ran, logged)
    assert {op: eager.get(op) for op in ("Mul", "Relu", "AddV2")} == {op: ran for op in ("Mul", "Relu", "AddV2")}


@pytest.mark.parametrize("op_type", ["Mul", "Relu", "AddV2"])
def test_the_answer_says_a_py_function_ran_them(recorded: tuple[Path, int], op_type: str) -> None:
    rundir, ran = recorded
    text = " ".join(_cli("explain", str(rundir), op_type).split())
    assert f"Eager, {ran}×: run by a tf.py_function" in text, text
    assert EAGER_WHY_PYTHON not in text, text


def test_the_hot_lines_advice_is_to_leave_the_py_function(recorded: tuple[Path, int]) -> None:
    rundir, ran = recorded
    (run,) = json.loads(_cli("summary", str(rundir), "--format", "json"))["runs"]
    sites: list[dict[str, Any]] = run["eager_sites"]
    (site,) = [s for s in sites if s["user_function"] == "eager_side"]
    assert site["executions"] == 3 * ran and site["advice"] == [PY_FUNCTION_ADVICE], site
