"""Whether Keras ran its steps eagerly: ``run_eagerly=True``.

In: a stack's frames (file path, line, function), and a ``RunModel``'s traces. Out:
``in_keras_step``: whether a frame is Keras's ``train_step``, ``test_step`` or
``predict_step``; ``keras_steps_traced``: whether the run traced a step function of
Keras (TF's line per new trace, or a dump's graphs). An op dispatched eagerly under a
step, in a run that traced none, ran because the steps ran eagerly: the model was
compiled with ``run_eagerly=True``, or ``tf.config.run_functions_eagerly(True)`` is on.
A traced step dispatches a few ops of its own eagerly (the variables its first call
makes, Adam's slots), never its computation.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from ..model import RunModel

__all__ = ["in_keras_step", "keras_steps_traced", "RUN_EAGERLY_WHY"]

_STEP_METHODS = frozenset(("train_step", "test_step", "predict_step"))
_KERAS_CODE = re.compile(r"[/\\](tf_)?keras[/\\]")
# The functions Keras traces its steps as (Keras 3, Keras 2 and tf_keras).
_STEP_FUNCTIONS = frozenset(("one_step_on_data", "multi_step_on_iterator", "one_step_on_iterator",
                             "one_step_on_data_distributed", "train_function", "test_function",
                             "predict_function"))
# Why such ops ran eagerly, in words.
RUN_EAGERLY_WHY = ("Keras ran its steps eagerly (no step function of Keras was traced: the model "
                   "was compiled with run_eagerly=True, or tf.config.run_functions_eagerly(True) is on)")


def in_keras_step(frames: Iterable[tuple[str, int, str]]) -> bool:
    """Whether a stack passes through Keras's train_step, test_step or predict_step."""
    return any(f[2] in _STEP_METHODS and _KERAS_CODE.search(f[0]) for f in frames)


def keras_steps_traced(model: RunModel) -> bool:
    """Whether the run traced one of Keras's step functions."""
    return any(line.name in _STEP_FUNCTIONS for line in model.trace_lines) or any(
        graph.name in _STEP_FUNCTIONS for dump in model.dumps for graph in dump.graphs.values())
