"""Kernels inferred from the dump alone, against TF's own log.

In: small runs written here by real TensorFlow, each a ``tf.function`` whose ops grappler
treats in a way the dump's graph and traces show, dumped in each mode that records
digests, with TF's ``TF_CPP_MAX_VLOG_LEVEL=2`` log kept outside the logdir. Out:
assertions that the product, reading the dump only, gives each op the kernel the log
shows ran (scored by ``tests/matrix/truth.py``, which shares no code with the product).

- ``tf.tile(y, [1, 1])``: constant multiples whose product is 1 (the trace equals its
  input's, size included), which grappler's constant folding makes an Identity and
  removes; ``tf.tile(y, [2, 1])`` beside it runs Tile.
- ``tf.reshape(y, [-1, tf.shape(y)[-1]])`` on a ``[None, 10]`` input (Keras 2's sparse
  categorical cross-entropy flattening its logits) and the Reshape of its gradient
  (TF's own, through ``SparseSoftmaxCrossEntropyWithLogits``) back to ``tf.shape(y)``:
  grappler's static shapes leave two dimensions unknown, so both run although their
  traces equal their inputs'; ``tf.reshape(y, [-1, 10])`` and ``tf.reshape(y,
  tf.shape(x))`` beside them are removed (the dump alone does not say those are, so
  they are only asked not to be called run). A profile of a call decides where the
  assumption behind it (a batch dimension of None) holds: it shows the shape's Pack run,
  or, with a fully static input, shows none (grappler folded it, and the Reshape).
- A broadcasting Mul's gradient for a variable (TF 2.13 traces BroadcastGradientArgs):
  the Sum over axes grappler cannot fold, and the Reshape after it, run.
- Labels from a ``tf.data`` iterator, ``expand_dims`` then cast then ``reshape(.., [-1])``
  (Keras 2's sparse categorical cross-entropy), in a NO_TENSOR dump with a profile:
  int32 labels cast to int64 have the Reshape moved before the widening Cast (its own
  node idle), int64 labels cast to int32 have the narrowing Cast moved before the
  ExpandDims; the new Cast's name alone does not say which (``..._int64_Cast`` both
  times), the profile's iterator element types do.
- The same flattening Reshape on batches of a dataset, profiled late (past the runs after
  which the executor stops tracing cheap nodes, so the Pack's missing event says
  nothing): the profile's iterator shapes say whether the batch dimension was static
  (``drop_remainder=True``: grappler folds the shape and removes the Reshape) or not
  (it runs).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import RunModel, load
from tb_opmode.present.contract import summary
from tb_opmode.vocab import REMOVED
from tests.matrix.truth import score, truth_of

from .conftest import needs_tensorflow

_TILES = """
import sys
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1)

@tf.function
def f(x):
    y = tf.add(x, 1.0, name="y")
    once = tf.tile(y, [1, 1], name="once")
    twice = tf.tile(y, [2, 1], name="twice")
    return tf.nn.relu(once, name="ra"), tf.nn.relu(twice, name="rb")

x = tf.random.normal([4, 4])
for _ in range(3):
    f(x)
tf.debugging.experimental.disable_dump_debug_info()
"""


def _run(root: Path, script: str, mode: str) -> tuple[Path, Path]:
    """(logdir with the dump only, TF's log of the process, kept beside it)."""
    logdir, log = root / f"logdir_{mode}", root / f"tf_log_{mode}.txt"
    env = {**os.environ, "TF_CPP_MAX_VLOG_LEVEL": "2", "TF_CPP_MIN_LOG_LEVEL": "0",
           "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    with open(log, "wb") as out:
        proc = subprocess.run([sys.executable, "-c", script, str(logdir), mode], env=env,
                              stderr=out, stdout=subprocess.DEVNULL, timeout=600)
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]
    return logdir, log


@pytest.mark.parametrize("mode", ["FULL_HEALTH", "SHAPE", "FULL_TENSOR"])
def test_tile_by_ones_is_removed_and_a_real_tile_runs(tmp_path: Path, mode: str) -> None:
    needs_tensorflow()
    logdir, log = _run(tmp_path, _TILES, mode)
    (model,) = load(str(logdir))
    tiles = {op.op_name: op for op in model.graph_ops if op.op_type == "Tile"}
    assert tiles["once"].kernel == REMOVED and "every multiple is 1" in tiles["once"].note
    assert tiles["twice"].kernel == "Tile"
    run = summary(load(str(logdir)), str(logdir), explanations=False)["runs"][0]
    result = score(run, truth_of(logdir, [log]))
    assert result["share"] == 1.0, result


_RESHAPES = """
import sys
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1)

@tf.function(input_signature=[tf.TensorSpec([None, 10], tf.float32)])
def packed(x):
    labels = tf.argmax(x, axis=1, name="labels")
    with tf.GradientTape() as tape:
        y = tf.add(x, 1.0, name="shifted")
        tape.watch(y)
        flat = tf.reshape(y, [-1, tf.shape(y)[-1]], name="rpack")
        loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=flat, name="ce"), name="loss")
    # TF's gradients: ExpandDims(dloss, -1) * backprop, then a Reshape back to tf.shape(y)
    grad = tape.gradient(loss, y)
    fixed = tf.reshape(y, [-1, 10], name="rconst")
    same = tf.reshape(y, tf.shape(x), name="rshape")
    return tf.nn.relu(grad, name="o1"), tf.nn.relu(fixed, name="o2"), tf.nn.relu(same, name="o3")

x = tf.random.normal([4, 10])
for _ in range(2):
    packed(x)
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.mark.parametrize("mode", ["FULL_HEALTH", "SHAPE"])
def test_reshapes_to_shapes_packed_at_run_time_run(tmp_path: Path, mode: str) -> None:
    needs_tensorflow()
    logdir, log = _run(tmp_path, _RESHAPES, mode)
    (model,) = load(str(logdir))
    reshapes = {op.op_name: op for op in model.graph_ops if op.op_type == "Reshape"}
    graph = model.dumps[0].graphs[reshapes["rpack"].graph_id].ops
    # rpack's gradient: the Reshape of ExpandDims(dloss, -1) * backprop back to y's shape.
    (back,) = [name for name in reshapes
               if graph[graph[name].inputs[0].partition(":")[0]].op_type == "Mul"]
    for name in ("rpack", back):
        assert reshapes[name].kernel == "Reshape", (name, reshapes[name].note)
        assert "static shapes" in reshapes[name].note and "drop_remainder" in reshapes[name].note
    for name in ("rconst", "rshape"):
        assert reshapes[name].kernel != "Reshape", (name, reshapes[name].note)
    # The log says the same: the two run, at every call, and the other two do not.
    truth = truth_of(logdir, [log]).kernels[("Reshape", "graph")]
    ran = reshapes["rpack"].executions + reshapes[back].executions
    assert truth["Reshape"] == ran, truth  # no other Reshape ran (the seed's too is folded)


_BROADCAST_GRADIENTS = """
import sys
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1)
gamma = tf.Variable(tf.ones([8]), name="gamma")

@tf.function(input_signature=[tf.TensorSpec([None, 4, 8], tf.float32)])
def step(x):
    with tf.GradientTape() as tape:
        h = tf.add(x, 1.0, name="h")
        # A layer norm's scale, as BERT's: [?, 4, 1] * [8], whose gradient TF's tracing
        # cannot reduce statically (the batch dimension is None): BroadcastGradientArgs.
        inv = tf.math.rsqrt(tf.reduce_mean(tf.square(h), -1, keepdims=True) + 1e-5, name="inv")
        scale = tf.multiply(inv, gamma, name="scale")
        loss = tf.reduce_sum(tf.nn.relu(h * scale, name="act"), name="loss")
    return tape.gradient(loss, gamma)

x = tf.random.normal([2, 4, 8])
for _ in range(2):
    step(x)
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.mark.parametrize("mode", ["FULL_HEALTH", "SHAPE"])
def test_gradient_sum_over_axes_grappler_cannot_fold_runs(tmp_path: Path, mode: str) -> None:
    """A broadcasting Mul's gradient for its variable operand: Sum over
    BroadcastGradientArgs(Shape(inv), Shape(gamma)) of tensors of ranks 3 and 1, whose
    run-time batch dimension stops grappler from folding the axes, then a Reshape back
    to gamma's shape: both run (the log shows it), whatever their traces look like."""
    needs_tensorflow()
    logdir, log = _run(tmp_path, _BROADCAST_GRADIENTS, mode)
    (model,) = load(str(logdir))
    graph_ops = {op.op_name: op for op in model.graph_ops}
    ops = model.dumps[0].graphs[next(iter(graph_ops.values())).graph_id].ops
    bga = [name for name, op in ops.items() if op.op_type == "BroadcastGradientArgs"
           and {ops[t.partition(":")[0]].op_type for t in op.inputs} == {"Shape"}]
    # TF 2.13's tracing emits BroadcastGradientArgs for both Muls; 2.21's reduces
    # gamma's side statically (a constant reduction_indices), leaving the one for h * scale.
    decided = [op for op in graph_ops.values() if "grappler does not know" in op.note
               or "axes computed at run time" in op.note]
    if len(bga) == 2:
        assert decided and all(op.kernel in ("Sum", "Reshape") for op in decided), decided
    # Of h * scale, two tensors of one shape, the dump alone cannot tell: never decided.
    assert not [op for op in decided if op.op_name.startswith("gradient_tape/mul/")]
    run = summary(load(str(logdir)), str(logdir), explanations=False)["runs"][0]
    result = score(run, truth_of(logdir, [log]))
    for row in result["graph"]["wrong"]:  # Sum/Reshape kernels we named: none beyond what ran
        if row["op_type"] not in ("Sum", "Reshape"):
            continue
        for kernel, n in row["ours"].items():
            assert kernel == "(unknown)" or n <= row["truth"].get(kernel, 0), row
    ran = truth_of(logdir, [log]).kernels
    for op in decided:
        assert ran[(op.op_type, "graph")][op.op_type] >= op.executions, (op.op_name, ran)


_PROFILED_RESHAPE = """
import sys
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1)
shape = [4, 10] if "static" in sys.argv[1] else [None, 10]

@tf.function(input_signature=[tf.TensorSpec(shape, tf.float32)])
def packed(x):
    y = tf.add(x, 1.0, name="shifted")
    return tf.nn.relu(tf.reshape(y, [-1, tf.shape(y)[-1]], name="rpack"), name="out")

x = tf.random.normal([4, 10])
packed(x)
tf.profiler.experimental.start(sys.argv[1])  # the second call, profiled
packed(x)
tf.profiler.experimental.stop()
packed(x)
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.mark.parametrize("shapes", ["static", "dynamic"])
def test_a_profile_tells_whether_a_packed_shape_was_folded(tmp_path: Path, shapes: str) -> None:
    """With a batch dimension of None the shape's Pack runs (the profile shows it) and so
    does the Reshape; with a fully static input grappler folds the Pack and removes the
    Reshape, and the profile, which would have shown the Pack, shows none: the rule
    does not apply there, so the Reshape is not called run."""
    needs_tensorflow()
    root = tmp_path / shapes
    root.mkdir()
    logdir, log = _run(root, _PROFILED_RESHAPE, "FULL_HEALTH")
    assert list(logdir.glob("plugins/profile/*/*.xplane.pb"))
    (model,) = load(str(logdir))
    (rpack,) = [op for op in model.graph_ops if op.op_name == "rpack"]
    truth = truth_of(logdir, [log]).kernels[("Reshape", "graph")]
    if shapes == "dynamic":
        assert truth["Reshape"] == rpack.executions
        assert rpack.kernel == "Reshape" and "the profile shows rpack/shape ran" in rpack.note
    else:
        assert truth["Reshape"] == 0
        assert rpack.kernel != "Reshape", rpack.note


def _with_dataset(root: Path, script: str, mode: str,
                  spec: tuple[str, str]) -> tuple[RunModel, Path, Path]:
    """``script`` run in ``root`` (whose name the script reads) and loaded; its one profile
    must have seen the one dataset element ``spec`` (types, shapes)."""
    needs_tensorflow()
    root.mkdir()
    logdir, log = _run(root, script, mode)
    (model,) = load(str(logdir))
    assert [p.iterator_specs for p in model.profiles] == [[spec]]
    return model, logdir, log


_LABEL_CAST = """
import sys
import numpy as np
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1)
src, dst = (tf.int32, tf.int64) if "widen" in sys.argv[1] else (tf.int64, tf.int32)
x = np.random.RandomState(0).rand(16, 10).astype("float32")
y = (np.arange(16) % 10).astype(src.as_numpy_dtype)
it = iter(tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat())

@tf.function
def step(it):
    logits, labels = next(it)
    target = tf.reshape(tf.cast(tf.expand_dims(labels, -1, name="ey"), dst, name="cast"), [-1],
                        name="flat")
    return tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=target, logits=logits, name="ce"), name="loss")

step(it)
tf.profiler.experimental.start(sys.argv[1])
step(it)
step(it)
tf.profiler.experimental.stop()
step(it)
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.mark.parametrize("direction", ["widen", "narrow"])
def test_a_profiles_dataset_types_tell_which_way_a_label_cast_was_moved(
        tmp_path: Path, direction: str) -> None:
    types = "float int32" if direction == "widen" else "float int64"
    model, logdir, log = _with_dataset(tmp_path / direction, _LABEL_CAST, "NO_TENSOR",
                                       (types, "[?,10] [?]"))
    ops = {op.op_name: op for op in model.graph_ops if op.op_name in ("cast", "flat")}
    truth = truth_of(logdir, [log])
    moved = "flat" if direction == "widen" else "cast"
    # The checker: the moved op's own node never ran (a copy under another name did).
    assert truth.kernels[(ops[moved].op_type, "graph")].get(ops[moved].op_type, 0) == 0, truth.kernels
    assert ops[moved].kernel == REMOVED and "tf.data iterator records" in ops[moved].note, ops[moved]
    if direction == "narrow":  # the Reshape reads the ExpandDims' copy, and runs
        assert ops["flat"].kernel == "Reshape", ops["flat"]
    run = summary(load(str(logdir)), str(logdir), explanations=False)["runs"][0]
    result = score(run, truth)
    assert result["share"] == 1.0, result


_DATASET_RESHAPE = """
import sys
import numpy as np
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode=sys.argv[2], circular_buffer_size=-1)
x = np.random.RandomState(0).rand(16, 10).astype("float32")
y = (np.arange(16) % 10).astype("int32")
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder="static" in sys.argv[1])
it = iter(data.repeat())

@tf.function
def step(it):
    logits, labels = next(it)
    y = tf.add(logits, 1.0, name="shifted")
    flat = tf.reshape(y, [-1, tf.shape(y)[-1]], name="rpack")
    return tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=flat, name="ce"), name="loss")

for _ in range(120):  # past the runs after which cheap nodes leave no event
    step(it)
tf.profiler.experimental.start(sys.argv[1])
step(it)
tf.profiler.experimental.stop()
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.mark.parametrize("batch", ["static", "dynamic"])
def test_a_profiles_dataset_shapes_tell_whether_the_batch_dimension_was_static(
        tmp_path: Path, batch: str) -> None:
    shapes = "[4,10] [4]" if batch == "static" else "[?,10] [?]"
    model, logdir, log = _with_dataset(tmp_path / batch, _DATASET_RESHAPE, "FULL_HEALTH",
                                       ("float int32", shapes))
    (rpack,) = [op for op in model.graph_ops if op.op_name == "rpack"]
    ran = truth_of(logdir, [log]).kernels[("Reshape", "graph")].get("Reshape", 0)
    if batch == "dynamic":  # the Pack's event, where the profile has one, tells it first
        assert ran == rpack.executions
        assert rpack.kernel == "Reshape" and (f"batch dimension unknown ({shapes})" in rpack.note
                                              or "shows rpack/shape ran" in rpack.note)
    else:  # before, "ran", assuming a batch dimension of None
        assert ran == 0
        assert rpack.kernel != "Reshape", rpack.note
