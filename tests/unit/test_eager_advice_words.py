"""The advice of an eager hot line names what to put in a tf.function in words that can be
done: a line at module level has no function to wrap ("a tf.function around <module>"
was the advice), so its loop is to be moved into one.

In: ``EagerSite``s as ``eager_sites`` makes them (a line that calls TF's op functions
itself; one that calls a Keras model, optimizer or metric; one under Keras's steps run
eagerly). Out: each advice rule's text (``ADVICE_RULES``).
"""
from __future__ import annotations

from collections import Counter

from tb_opmode.analyze.eager_sites import ADVICE_RULES, EagerSite, _AdviceContext

_TF = "/venv/lib/python3.11/site-packages/tensorflow/python/ops/math_ops.py:2290"
_KERAS_LAYER = "/venv/lib/python3.11/site-packages/keras/src/layers/layer.py:1002"
_KERAS_OPTIMIZER = "/venv/lib/python3.11/site-packages/keras/src/optimizers/base_optimizer.py:462"


def _site(scope: str, library: str, function: str, **ops: int) -> EagerSite:
    site = EagerSite("train.py:9", scope, "train.py:9", scope, library, function, scope=scope)
    site.op_types = Counter(ops)
    site.executions = sum(ops.values())
    site.calls = min(ops.values())
    return site


def _advice(site: EagerSite) -> list[str]:
    ctx = _AdviceContext({})  # no times measured
    return [text for _name, rule in ADVICE_RULES if (text := rule(ctx, site)) is not None]


def test_a_module_level_line_is_told_to_move_its_loop_into_a_tf_function() -> None:
    (advice,) = _advice(_site("<module>", _TF, "reduce_sum", Sum=30, Mul=270))
    assert "<module>" not in advice and "Moved into a function decorated with @tf.function" in advice


def test_a_line_in_a_function_is_told_to_wrap_that_function() -> None:
    (advice,) = _advice(_site("train", _TF, "reduce_sum", Sum=30, Mul=270))
    assert "A tf.function around train runs them as one graph" in advice


def test_keras_calls_are_told_to_put_the_step_in_a_tf_function() -> None:
    (model,) = _advice(_site("<module>", _KERAS_LAYER, "__call__", MatMul=60, Relu=30))
    (optimizer,) = _advice(_site("<module>", _KERAS_OPTIMIZER, "apply_gradients", Mul=120, AddV2=30))
    assert model.startswith("This line calls a Keras model (or layer) eagerly: 3 eager ops per call")
    assert "tf.function(model) or model.predict" in model
    assert optimizer.startswith("This line calls a Keras optimizer eagerly: 5 eager ops per call")
    assert "the whole training step" in optimizer and "model.predict" not in optimizer
    metrics = "/venv/lib/python3.11/site-packages/keras/src/metrics/reduction_metrics.py:142"
    (metric,) = _advice(_site("<module>", metrics, "update_state", AddV2=60, ReadVariableOp=30))
    assert metric.startswith("This line calls a Keras metric eagerly: 3 eager ops per call")
    assert "its update_state in the step's tf.function" in metric


def test_keras_steps_run_eagerly_are_told_of_run_eagerly_only_where_no_step_was_traced() -> None:
    site = _site("<module>", "/venv/lib/python3.11/site-packages/keras/src/backend/tensorflow/trainer.py:399",
                 "fit", MatMul=64, Relu=32)
    site.keras_step_executions = 96
    rules = dict(ADVICE_RULES)
    assert rules["keras_run_eagerly"](_AdviceContext({}, keras_steps_traced=True), site) is None
    told = rules["keras_run_eagerly"](_AdviceContext({}, keras_steps_traced=False), site)
    assert told is not None and told.startswith("Keras ran its steps eagerly here, op by op (96 eager ops")
    site.keras_step_executions = 12  # a few, as a traced step's variables make eagerly
    assert rules["keras_run_eagerly"](_AdviceContext({}, keras_steps_traced=False), site) is None
