"""A Keras model called eagerly in a loop: the hot line's advice.

In: ``tb-opmode record`` (``kernels``) of ``tests/record_jobs.py keras_call`` (this venv's
TF and Keras): a model of three Dense layers called eagerly 40 times; the job prints its
calls, and TF's log (the run's ``stderr.log``) has an "Executing op" line per eager
dispatch, counted here by a regex of this test's own. Out: the model's line is the
busiest eager line, with TF's MatMul dispatches, and it is told to
call the model through a tf.function made once (or model.predict): it had no advice,
since its ops go through Keras, not TF's op functions, from the user's line.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main

from .conftest import needs_tensorflow

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "tests" / "record_jobs.py"
PY = sys.executable
_MATMUL = re.compile(r"\] Executing op (_Mkl)?MatMul in device ")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int, int]:
    """(the run's summary JSON, the job's calls, TF's eager MatMul dispatches)."""
    needs_tensorflow()
    logdir = tmp_path_factory.mktemp("keras_call") / "logs"
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TB_OPMODE_CACHE": "off"}
    proc = subprocess.run([PY, "-m", "tb_opmode.cli", "record", str(logdir), "--name", "run", "--", PY,
                           str(JOBS), "keras_call"], env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("keras calls ")]
    text = "".join(p.read_text(errors="replace") for p in (logdir / "run").rglob("stderr.log"))
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(logdir / "run"), "--format", "json"], out, err) == 0, err.getvalue()
    (run,) = json.loads(out.getvalue())["runs"]
    return run, int(line.removeprefix("keras calls ")), len(_MATMUL.findall(text))


def _model_line() -> int:
    (n,) = [i for i, text in enumerate(JOBS.read_text().splitlines(), 1)
            if "# the model's forward pass, eagerly" in text]
    return n


def test_the_model_line_is_told_to_call_the_model_through_a_tf_function(
        recorded: tuple[dict[str, Any], int, int]) -> None:
    run, calls, matmuls = recorded
    busiest = max(run["eager_sites"], key=lambda s: s["executions"])
    assert busiest["user_location"] == f"{JOBS}:{_model_line()}", busiest
    # 3 MatMul a call (Keras 2's op counts, 2 Relu and 3 BiasAdd a call, do not tell the calls)
    assert busiest["op_types"]["MatMul"] == matmuls == 3 * calls == 120, busiest
    assert busiest["calls"] in (calls, None), busiest
    (advice,) = busiest["advice"]
    assert advice.startswith("This line calls a Keras model (or layer) eagerly") and \
        "tf.function made once" in advice and "model.predict" in advice, advice
