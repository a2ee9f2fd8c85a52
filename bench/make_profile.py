"""Write one big XPlane profile with tf.profiler, for the XPlane read benchmark.

In: an output directory and a number of steps. Out:
OUTDIR/plugins/profile/<session>/<host>.xplane.pb, a host profile of a loop
that runs a small dense model's training step as a tf.function and a few ops
eagerly each step (so the file holds both eager and graph op events, as a
real profile of a mixed run does). About 2 kB of profile per step on TF 2.21 (31,000 steps: ~70 MB).
"""
from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    w1 = tf.Variable(tf.random.uniform((32, 64), seed=1))
    w2 = tf.Variable(tf.random.uniform((64, 8), seed=2))
    x = tf.random.uniform((16, 32), seed=3)
    y = tf.random.uniform((16, 8), seed=4)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, w1))
            loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.01 * g1)
        w2.assign_sub(0.01 * g2)
        return loss

    step(x, y)
    tf.profiler.experimental.start(args.outdir)
    for _ in range(args.steps):
        loss = step(x, y)
        z = tf.transpose(tf.matmul(x, w1))  # eager ops between steps
        _ = tf.reduce_sum(z) + loss
    tf.profiler.experimental.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
