"""Keras called eagerly in a loop: the hot lines' advice.

In: ``tb-opmode record`` (``kernels``) of ``tests/record_jobs.py`` jobs (this venv's TF
and Keras): ``keras_call``, a model of three Dense layers called eagerly 40 times, and
``eager_train``, a model trained by an eager loop (the forward pass, the tape's
gradient, ``apply_gradients``, a metric's ``update_state``) for 30 steps; each job prints its count, and TF's
log (the run's ``stderr.log``) has an "Executing op" line per eager dispatch, counted
here by a regex of this test's own. Out: the model's line is the busiest eager line, with
TF's MatMul dispatches, and it is told to call the model through a tf.function made once
(or model.predict): it had no advice, since its ops go through Keras, not TF's op
functions, from the user's line. In the training loop, the model's, the optimizer's and
the metric's lines are told to put the whole step in such a function. A ``fit`` compiled with
``run_eagerly=True`` is told so on its line (``fit_adam``), and one that traced its steps
is not; the answer for its MatMul says why it ran eagerly.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.keras_steps import RUN_EAGERLY_WHY
from tb_opmode.cli import main

from .conftest import RECORD_JOBS as JOBS
from .conftest import printed, record_job

_MATMUL = re.compile(r"\] Executing op (_Mkl)?MatMul in device ")


def _record(logdir: Path, job: str, prefix: str, *args: str) -> tuple[dict[str, Any], int, int]:
    """(the run's summary JSON, the count the job printed after ``prefix``, TF's eager
    MatMul dispatches)."""
    name = "-".join((job, *args))
    count = printed(record_job(logdir, name, job, *args), prefix).split()[0]
    text = "".join(p.read_text(errors="replace") for p in (logdir / name).rglob("stderr.log"))
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(logdir / name), "--format", "json"], out, err) == 0, err.getvalue()
    (run,) = json.loads(out.getvalue())["runs"]
    return run, int(count) if count.isdigit() else 0, len(_MATMUL.findall(text))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int, int]:
    return _record(tmp_path_factory.mktemp("keras_call") / "logs", "keras_call", "keras calls ")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int, int]:
    return _record(tmp_path_factory.mktemp("eager_train") / "logs", "eager_train", "eager steps ")


def _line_of(comment: str) -> str:
    (n,) = [i for i, text in enumerate(JOBS.read_text().splitlines(), 1) if comment in text]
    return f"{JOBS}:{n}"


def _model_line() -> int:
    return int(_line_of("# the model's forward pass, eagerly").rsplit(":", 1)[1])


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
        "made once outside the loop" in advice and "tf.function(model) or model.predict" in advice, advice


def test_an_eager_training_loops_model_and_optimizer_lines_are_told_to_put_the_step_in_a_graph(
        trained: tuple[dict[str, Any], int, int]) -> None:
    run, steps, _matmuls = trained
    by_line = {s["user_location"]: s for s in run["eager_sites"]}
    forward, backward, update = (by_line[_line_of(c)] for c in
                                 ("# the forward pass", "# the backward pass", "# the update"))
    # (Keras 2's optimizer issues ops whose counts do not tell its calls)
    assert steps == 30 and [s["calls"] for s in (forward, backward)] == [steps] * 2, by_line
    assert update["calls"] in (steps, None), update
    (model_advice,), (optimizer_advice,) = forward["advice"], update["advice"]
    assert model_advice.startswith("This line calls a Keras model (or layer) eagerly") \
        and "the whole step" in model_advice, model_advice
    assert optimizer_advice.startswith("This line calls a Keras optimizer eagerly") \
        and "the whole training step" in optimizer_advice, optimizer_advice
    (metric_advice,) = by_line[_line_of("# the metric")]["advice"]
    assert metric_advice.startswith("This line calls a Keras metric eagerly") \
        and "update_state in the step's tf.function" in metric_advice, metric_advice
    (gradient_advice,) = backward["advice"]  # TF's own gradient functions, called by the line
    assert gradient_advice.startswith(f"This line issues {backward['executions'] // steps} eager ops per call") \
        and "A tf.function around _eager_train runs them as one graph" in gradient_advice, gradient_advice


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_fit_whose_steps_ran_eagerly_is_told_of_run_eagerly(
        tmp_path: Path, mode: str) -> None:
    """Adam's slot variables are made eagerly while Keras traces its first step: a fit
    that traced its steps is not told of run_eagerly, though its train_step dispatched
    eager ops; one compiled with run_eagerly=True is, on the fit's line, and its MatMuls
    ran eagerly (TF's log)."""
    run, _n, matmuls = _record(tmp_path / "logs", "fit_adam", "fit_adam ", mode)
    (site,) = [s for s in run["eager_sites"] if s["user_location"] == _line_of("# the fit")]
    told = [a for a in site["advice"] if "run_eagerly=True" in a]
    out, err = io.StringIO(), io.StringIO()
    assert main(["explain", str(tmp_path / "logs" / f"fit_adam-{mode}"), "MatMul"], out, err) == 0, err.getvalue()
    said = " ".join(out.getvalue().split())
    if mode == "eager":
        assert matmuls >= 8 and len(told) == 1 and told[0].startswith("Keras ran its steps eagerly"), site
        assert f"Eager, {matmuls}×: {RUN_EAGERLY_WHY}" in said, said
    else:
        assert matmuls == 0 and told == [] and RUN_EAGERLY_WHY not in said, site
