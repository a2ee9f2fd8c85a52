"""Build a real TensorBoard logdir that reproduces the seed user's scenario.

In: an output directory and a workload name. Out: in OUTDIR, a tfdbg2 dump
(FULL_HEALTH, circular_buffer_size=-1), TensorBoard event files and an XPlane
profile under OUTDIR/<timestamp>/, and the run's stderr with
TF_CPP_MAX_VLOG_LEVEL=2 and ONEDNN_VERBOSE=1 saved as OUTDIR/tf_log.txt.

Workloads (no downloads, a few seconds each on 2 cores):
  bert  a small BERT-like Keras model trained by model.fit with the TensorBoard
        callback, after a few eager pre-processing ops (the seed question);
  cnn   a small CNN trained by a custom loop: some steps eagerly, some inside
        tf.function, profiled with tf.profiler.experimental.

The script re-runs itself in a child process so that the TF environment
variables are set before TensorFlow is imported and stderr lands in the log.
``--bare`` runs the workload alone, in this process, as a user's training script
would: no dump, no TensorBoard callback, no profile, no log (what ``tb-opmode record``
records, in ``bench/bench_record.py``).
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys

__all__ = ["main"]


def _child_env(onednn: bool, log: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    if log:
        env["TF_CPP_MAX_VLOG_LEVEL"] = "2"
        env["ONEDNN_VERBOSE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    return env


def _eager_preprocessing(tf) -> None:
    """A few eager ops of the kinds the seed user saw outside model.fit."""
    x = tf.random.uniform((8, 16), seed=1)
    w = tf.random.uniform((16, 16), seed=2)
    y = tf.matmul(x, w)
    y = tf.transpose(y)
    y = tf.nn.softmax(y)
    y = tf.nn.relu(y + 1.0) * 0.5
    img = tf.random.uniform((1, 8, 8, 3), seed=3)
    k = tf.random.uniform((3, 3, 3, 4), seed=4)
    z = tf.nn.conv2d(img, k, strides=1, padding="SAME")
    z = tf.nn.relu(z)
    _ = tf.reduce_sum(y) + tf.reduce_sum(z)


def _token_mixing(tf, seq: int):
    """A layer that mixes tokens through tf.transpose, as BERT's head split does."""

    class TokenMixing(tf.keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.mix = tf.keras.layers.Dense(seq, name="mix")

        def call(self, x):
            y = self.mix(tf.transpose(x, [0, 2, 1]))
            return x + tf.transpose(y, [0, 2, 1])

    return TokenMixing(name="token_mixing")


def _bert(tf, outdir: str, steps: int, bare: bool = False) -> None:
    seq, vocab, dim, heads = 16, 64, 32, 2
    ids = tf.keras.Input(shape=(seq,), dtype="int32", name="input_ids")
    h = tf.keras.layers.Embedding(vocab, dim, name="embeddings")(ids)
    att = tf.keras.layers.MultiHeadAttention(num_heads=heads, key_dim=dim // heads, name="attention")(h, h)
    h = tf.keras.layers.LayerNormalization(name="attention_norm")(h + att)
    h = _token_mixing(tf, seq)(h)
    ff = tf.keras.layers.Dense(dim * 2, activation="gelu", name="intermediate")(h)
    ff = tf.keras.layers.Dense(dim, name="output_dense")(ff)
    h = tf.keras.layers.LayerNormalization(name="output_norm")(h + ff)
    pooled = tf.keras.layers.Dense(dim, activation="tanh", name="pooler")(h[:, 0, :])
    logits = tf.keras.layers.Dense(2, name="classifier")(pooled)
    model = tf.keras.Model(ids, logits)
    n = 2 * steps
    x = tf.random.uniform((n, seq), maxval=vocab, dtype=tf.int32, seed=5)
    y = tf.random.uniform((n,), maxval=2, dtype=tf.int32, seed=6)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=3e-5),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    log_dir = os.path.join(outdir, datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    callbacks = [] if bare else [tf.keras.callbacks.TensorBoard(log_dir=log_dir, histogram_freq=1,
                                                                profile_batch=2)]
    model.fit(data, epochs=1, steps_per_epoch=steps, callbacks=callbacks, verbose=0)


def _cnn(tf, outdir: str, steps: int, bare: bool = False) -> None:
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", input_shape=(16, 16, 3)),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(8, 3, padding="same"),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.ReLU(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(4),
    ])
    opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = tf.random.uniform((4, 16, 16, 3), seed=7)
    y = tf.random.uniform((4,), maxval=4, dtype=tf.int32, seed=8)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    graph_step = tf.function(step)
    log_dir = os.path.join(outdir, datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), "train")
    step(x, y)  # eager: builds variables and runs every op eagerly once
    if not bare:
        tf.profiler.experimental.start(log_dir)
    for i in range(steps):
        if i % 2:
            step(x, y)
        else:
            graph_step(x, y)
    if not bare:
        tf.profiler.experimental.stop()


def _run_child(args: argparse.Namespace) -> None:
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    if not args.bare:
        tf.debugging.experimental.enable_dump_debug_info(
            args.outdir, tensor_debug_mode=args.mode, circular_buffer_size=-1)
    _eager_preprocessing(tf)
    if args.workload == "bert":
        _bert(tf, args.outdir, args.steps, args.bare)
    else:
        _cnn(tf, args.outdir, args.steps, args.bare)
    if not args.bare:
        tf.debugging.experimental.disable_dump_debug_info()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--workload", choices=("bert", "cnn"), default="bert")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--mode", default="FULL_HEALTH", help="tfdbg2 tensor_debug_mode")
    parser.add_argument("--onednn", choices=("on", "off"), default="on")
    parser.add_argument("--no-log", action="store_true", help="do not save the VLOG/ONEDNN_VERBOSE log")
    parser.add_argument("--bare", action="store_true",
                        help="the workload alone, here: no dump, callback, profile or log")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child or args.bare:
        _run_child(args)
        return 0
    os.makedirs(args.outdir, exist_ok=True)
    cmd = [sys.executable, os.path.abspath(__file__), args.outdir, "--child",
           "--workload", args.workload, "--steps", str(args.steps), "--mode", args.mode]
    env = _child_env(args.onednn == "on", not args.no_log)
    if args.no_log:
        return subprocess.run(cmd, env=env).returncode
    log_path = os.path.join(args.outdir, "tf_log.txt")
    with open(log_path, "wb") as log:
        code = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if code:
        sys.stderr.write(f"make_logdir: TensorFlow run failed (exit {code}); see {log_path}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
