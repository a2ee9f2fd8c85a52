"""Runs of the kinds real users have that the demo's Keras fit does not make.

In: a small run written here by real TensorFlow (a NO_TENSOR dump): a ``tf.data`` pipeline
with ``map`` and ``interleave`` iterated eagerly, and a ``tf.function`` with ``tf.cond``
and ``tf.while_loop``. Out: assertions that its counts are those TF's
``DebugDataReader`` reads, and that what the explanation says of the functions tf.data
runs itself holds.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.analyze.explain import explain

from .conftest import ddr_counts, needs_tensorflow

_PIPELINE = """
import sys
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="NO_TENSOR", circular_buffer_size=-1)
ds = tf.data.Dataset.range(6).map(lambda x: tf.cast(x, tf.float32) * 2.0)
ds = ds.interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(2), cycle_length=2).batch(4)

@tf.function
def step(x):
    y = tf.cond(tf.reduce_sum(x) > 5.0, lambda: x * 2.0, lambda: x + 1.0)
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.nn.relu(y - 1.0)),
                         [tf.constant(0), y])
    return y

for batch in ds:
    step(batch)
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_tensorflow()
    logdir = tmp_path_factory.mktemp("pipeline")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", _PIPELINE, str(logdir)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return logdir


def test_a_dataset_function_is_not_said_to_be_called_0_times(pipeline: Path) -> None:
    """The Cast of ``Dataset.map`` ran once per element, in a function tf.data runs
    itself: the dump records no call of it, and the explanation said it was "called 0
    times" beside its 6 executions."""
    (model,) = load(str(pipeline))
    eager, graph, functions = ddr_counts(pipeline)
    assert Counter({op: r.graph.executions for op, r in model.op_types.items()
                    if r.graph.executions}) == graph
    assert Counter({op: r.eager.executions for op, r in model.op_types.items()
                    if r.eager.executions}) == eager
    assert model.op_types["Cast"].graph.executions == graph["Cast"] == 6
    text = explain(model, "Cast")["graph"]["explanation"]
    assert "Dataset_map" in text and "called 0 times" not in text, text
    assert "run by tf.data for each element" in text, text
    # the tf.function's own graphs keep their calls: 3 batches, one call each
    assert "called 3 times" in explain(model, "Relu")["graph"]["explanation"]
