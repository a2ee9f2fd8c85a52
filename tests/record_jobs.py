"""Tiny jobs for the ``tb-opmode record`` tests, run as ``python tests/record_jobs.py JOB``.

In: the job's name (and, for some, an argument). Out: what the job prints and its exit
status; the TF jobs train for a few steps (seconds on two cores).

- ``fit``: a Keras ``fit`` of Dense+ReLU (8 steps), after a few eager ops;
- ``loop``: a custom loop, a ``tf.function`` step of Dense+ReLU (8 calls) beside eager ops;
- ``fail``: the loop, then an exception (exit status 1);
- ``api LOGDIR early|late``: the loop in ``with tb_opmode.record(LOGDIR, evidence="calls")``,
  TensorFlow imported before the block or inside it;
- ``forever``: a ``tf.function`` called until the job is interrupted, printing each step;
- ``retrace``: ``tf.function``s traced again for a changed Python number (one a product by 1,
  which grappler empties), a new shape, a new function object; one with an input_signature;
  prints each one's ``experimental_get_tracing_count()`` and calls as JSON;
- ``eager``: eager ops only, no ``tf.function``: a helper of three ops called from a
  loop for 2.5 s after TF's import, at least 12 times (it prints how many);
- ``eager_then_steps``: eager ops for 1.6 s after TF's import, then 6 calls of a
  ``tf.function``;
- ``mirrored_fit``: a Keras ``fit`` under MirroredStrategy over two logical CPUs;
- ``strategy_run direct|only``: a ``tf.function`` run by ``strategy.run(f)`` 3 times
  (MirroredStrategy over two logical CPUs), called directly once before (``direct``) or
  not (``only``); prints TF's tracing counts of it and of the strategy's copy of it;
- ``py_function``: a ``tf.function`` whose ``tf.py_function`` runs three TF ops eagerly
  (Mul, Relu, AddV2), called 12 times; prints how often the Python function ran;
- ``xla``: a ``tf.function(jit_compile=True)`` of MatMul, AddV2 and Relu called 6 times;
  prints the calls;
- ``keras_call``: a Keras model of three Dense layers called eagerly 40 times in a loop;
  prints the calls;
- ``eager_train``: a Keras model trained by an eager loop (GradientTape, apply_gradients,
  a metric's update_state)
  of 30 steps, no ``tf.function``; prints the steps;
- ``fit_adam graph|eager``: a Keras ``fit`` of 8 steps with Adam (whose slot variables its
  first step creates, eagerly, while the step is traced), compiled with
  ``run_eagerly=True`` for ``eager``;
- ``streams``: no TF: a line on stdout (is it a terminal, the working directory), one on
  stderr (is it a terminal), then exit N;
- ``sleep``: no TF: prints ``ready PID`` and sleeps until a signal ends it.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any

__all__ = ["main"]


def _fit() -> None:
    import tensorflow as tf

    x = tf.random.uniform((64, 8), seed=1)
    y = tf.cast(tf.reduce_sum(x, axis=1) > 4.0, tf.int32)  # eager ops before the fit
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    print("fit done", flush=True)


def _loop() -> None:
    import tensorflow as tf

    hidden = tf.keras.layers.Dense(16, activation="relu")
    head = tf.keras.layers.Dense(2)
    opt = tf.keras.optimizers.SGD(0.01)
    x = tf.random.uniform((8, 8), seed=2)
    y = tf.random.uniform((8,), maxval=2, dtype=tf.int32, seed=3)

    @tf.function
    def step(xb: tf.Tensor, yb: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = head(hidden(xb))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
        variables = hidden.trainable_variables + head.trainable_variables
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    for _ in range(8):
        loss = step(x, y)
        tf.nn.relu(x - 0.5)  # an eager op per step
    print(f"loop done {float(loss):.3f}", flush=True)


def _fail() -> None:
    _loop()
    raise RuntimeError("the job failed after its loop")


def _api(logdir: str, early: str) -> None:
    """The loop inside ``with tb_opmode.record(...)``; TF imported inside the block, or
    before it (``early`` == "early")."""
    import tb_opmode

    if early == "early":
        import tensorflow  # noqa: F401
    with tb_opmode.record(logdir, evidence="calls", name="api-" + early) as rundir:
        _loop()
    print(f"recorded into {rundir}", flush=True)


def _forever() -> None:
    import tensorflow as tf

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        return tf.nn.relu(tf.matmul(x, x))

    n = 0
    while True:
        n += 1
        step(tf.ones((4, 4)))
        print(f"step {n}", flush=True)
        time.sleep(0.05)


def _retrace() -> None:
    import json

    import tensorflow as tf

    @tf.function
    def scale(x: tf.Tensor, k: int) -> tf.Tensor:
        return x * k  # k == 1: grappler removes the product, the graph runs no op

    @tf.function
    def shapes(x: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(x * 2.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def signed(x: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(x + 1.0)

    def make() -> Any:
        @tf.function
        def inner(x: tf.Tensor) -> tf.Tensor:
            return x + 1.0
        return inner

    t = tf.ones([3])
    for k in range(4):
        scale(t, k)
    for n in range(1, 5):
        shapes(tf.ones([n]))
        signed(tf.ones([n]))
    inner_traces = 0
    for _ in range(3):
        fn = make()
        fn(t)
        inner_traces += fn.experimental_get_tracing_count()
    truth = {"scale": [scale.experimental_get_tracing_count(), 4],
             "shapes": [shapes.experimental_get_tracing_count(), 4],
             "signed": [signed.experimental_get_tracing_count(), 4], "inner": [inner_traces, 3]}
    print("traces and calls " + json.dumps(truth), flush=True)
    print(f"graph building seconds {_graph_building_s()}", flush=True)


def _graph_building_s() -> float | None:
    """TF's own count of the time its tf.functions spent building graphs (outermost
    traces; the monitoring counter /tensorflow/core/tf_function/graph_building_time_usecs)."""
    import importlib

    for name in ("tensorflow.python.eager.polymorphic_function.tracing_compilation",
                 "tensorflow.python.eager.polymorphic_function.tracing_compiler"):
        try:
            counter = getattr(importlib.import_module(name), "_graph_building_time_counter", None)
        except ImportError:
            continue
        if counter is not None:
            return float(counter.get_cell().value()) / 1e6
    return None


def _eager() -> None:
    import json

    import tensorflow as tf

    imported = time.monotonic()

    def layer(a: tf.Tensor) -> tf.Tensor:
        return tf.nn.relu(tf.matmul(a, a)) / 8.0  # few eager ops, called from a loop

    a = tf.random.normal([8, 8], seed=4)
    calls = 0
    # on past the recording's eager window (1 to 2 s after TF's import), which profiles it
    while calls < 12 or time.monotonic() - imported < 2.5:
        a = layer(a)
        calls += 1
    print("eager layer " + json.dumps({"calls": calls, "ops_per_call": 3}), flush=True)


def _eager_then_steps() -> None:
    import tensorflow as tf

    imported = time.monotonic()
    x = tf.ones((4, 4))
    while time.monotonic() - imported < 1.6:  # eager work into the recording's eager window
        x = tf.nn.relu(x @ x) / 4.0

    @tf.function
    def step(a: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(a @ a)

    for _ in range(6):
        step(x)
    print("eager then steps done", flush=True)


def _mirrored_fit() -> None:
    import tensorflow as tf

    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4, activation="relu"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    x, y = tf.random.normal([32, 8], seed=5), tf.random.normal([32, 1], seed=6)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # each replica's step in a thread of its own
    print("mirrored fit done", flush=True)


def _strategy_run(direct: str) -> None:
    import json

    import tensorflow as tf
    from tensorflow.python.distribute import mirrored_run

    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        w = tf.Variable(tf.ones((4, 4)))

    @tf.function
    def replica_step(x: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(tf.matmul(x, w))

    x = tf.ones((2, 4))
    calls = 0
    if direct == "direct":
        replica_step(x)
        calls += 1
    for _ in range(3):
        strategy.run(replica_step, args=(x,))
        calls += 1
    # the copy strategy.run made of the tf.function, and traced (TF's own cache of it)
    copy = mirrored_run._cfer_fn_cache[strategy][replica_step]
    counts = {"own": replica_step.experimental_get_tracing_count(),
              "copy": copy.experimental_get_tracing_count(), "calls": calls}
    print("strategy traces " + json.dumps(counts), flush=True)


def _py_function() -> None:
    import tensorflow as tf

    ran = 0

    def eager_side(y: tf.Tensor) -> tf.Tensor:
        nonlocal ran
        ran += 1
        return tf.nn.relu(y * 2.0) + 1.0  # eager ops, run by EagerPyFunc inside the graph

    @tf.function
    def step(x: tf.Tensor) -> tf.Tensor:
        z = tf.py_function(eager_side, [tf.matmul(x, x)], tf.float32)
        return tf.reduce_sum(z)

    x = tf.ones((8, 8))
    for _ in range(12):
        step(x)
    print(f"py_function ran {ran}", flush=True)


def _xla() -> None:
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def dense(x: tf.Tensor, w: tf.Tensor) -> tf.Tensor:
        return tf.nn.relu(tf.matmul(x, w) + 1.0)

    x, w = tf.random.normal((16, 32), seed=1), tf.random.normal((32, 32), seed=2)
    for _ in range(6):
        dense(x, w)
    print("xla calls 6", flush=True)


def _keras_call() -> None:
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(32, activation="relu"), tf.keras.layers.Dense(1)])
    x = tf.random.normal((8, 16), seed=1)
    calls = 0
    for _ in range(40):
        model(x, training=False)  # the model's forward pass, eagerly, op by op
        calls += 1
    print(f"keras calls {calls}", flush=True)


def _eager_train() -> None:
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    opt = tf.keras.optimizers.SGD(0.01)
    metric = tf.keras.metrics.Mean()
    x, y = tf.random.normal((32, 16), seed=1), tf.random.normal((32, 1), seed=2)
    steps = 0
    for _ in range(30):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))  # the forward pass
        grads = tape.gradient(loss, model.trainable_variables)  # the backward pass
        opt.apply_gradients(zip(grads, model.trainable_variables))  # the update
        metric.update_state(loss)  # the metric
        steps += 1
    print(f"eager steps {steps}", flush=True)


def _fit_adam(mode: str) -> None:
    import tensorflow as tf

    x, y = tf.random.normal((64, 8), seed=1), tf.random.normal((64, 1), seed=2)
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", run_eagerly=mode == "eager")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)  # the fit
    print(f"fit_adam {mode} done", flush=True)


def _streams(status: str = "0") -> None:
    print(f"out {os.isatty(1)} {os.getcwd()}", flush=True)
    print(f"err {os.isatty(2)}", file=sys.stderr, flush=True)
    sys.exit(int(status))


def _sleep() -> None:
    print(f"ready {os.getpid()}", flush=True)
    time.sleep(600)


JOBS = {"fit": _fit, "loop": _loop, "fail": _fail, "api": _api, "forever": _forever,
        "retrace": _retrace, "eager": _eager, "mirrored_fit": _mirrored_fit,
        "strategy_run": _strategy_run, "py_function": _py_function, "xla": _xla,
        "keras_call": _keras_call, "eager_train": _eager_train, "fit_adam": _fit_adam,
        "eager_then_steps": _eager_then_steps, "streams": _streams,
        "sleep": _sleep}


def main(argv: list[str]) -> None:
    JOBS[argv[0]](*argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
