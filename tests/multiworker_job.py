"""A real two-process ``MultiWorkerMirroredStrategy`` job, or a ``MirroredStrategy`` run
over two logical CPUs, each writing a tfdbg2 dump: the fixtures of tests/test_workers.py.

    python tests/multiworker_job.py multiworker OUTDIR [--workers 2] [--steps 2]
    python tests/multiworker_job.py mirrored OUTDIR [--steps 2]

``multiworker``: the parent starts one process per worker with a ``TF_CONFIG`` whose
cluster is on free 127.0.0.1 ports; worker N dumps into ``OUTDIR/run/workerN`` (worker 0
also writes a profile under it, as a chief would) and writes its stderr to
``OUTDIR/workerN.stderr`` (outside the run). ``mirrored``: one process, two logical CPU
devices, dump in ``OUTDIR/run``. Both fit a small Keras model for ``--steps`` steps with
one inter-op and one intra-op thread, and write ``OUTDIR/job.json`` (what ran).
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

__all__ = ["main"]


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (held open together, so distinct)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _fit(tf, strategy, steps: int) -> None:
    """A small dense layer trained for ``steps`` steps under ``strategy`` (the same on
    every worker): ``strategy.run`` in a tf.function whose gradients are all-reduced
    across the replicas (the collectives that tie the workers), then an eager op."""
    import numpy as np

    rng = np.random.RandomState(0)
    x = rng.rand(32, 8).astype("float32")
    y = rng.rand(32, 4).astype("float32")
    with strategy.scope():
        w = tf.Variable(rng.rand(8, 4).astype("float32"), name="w")
        b = tf.Variable(np.zeros(4, "float32"), name="b")
    data = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat())
    batches = iter(data)

    @tf.function
    def train_step(batch):
        def replica_step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(xb, w) + b) - yb))
            grads = tape.gradient(loss, [w, b])
            grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
            w.assign_sub(0.01 * grads[0])
            b.assign_sub(0.01 * grads[1])
            return loss

        losses = strategy.run(replica_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    for _ in range(steps):
        train_step(next(batches))
    # An eager op outside any tf.function, so each dump has eager executions of its own.
    tf.transpose(tf.constant(x[:4]))


def _child(kind: str, dump_dir: str, steps: int, profile: bool) -> int:
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    if kind == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.debugging.experimental.enable_dump_debug_info(
        dump_dir, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1)
    if kind == "mirrored":
        strategy = tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    if profile:
        tf.profiler.experimental.start(dump_dir)
    _fit(tf, strategy, steps)
    if profile:
        tf.profiler.experimental.stop()
    tf.debugging.experimental.disable_dump_debug_info()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("multiworker", "mirrored"))
    parser.add_argument("outdir")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--child", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    run = os.path.join(args.outdir, "run")
    if args.child >= 0:
        target = os.path.join(run, f"worker{args.child}") if args.kind == "multiworker" else run
        return _child(args.kind, target, args.steps, args.profile)
    os.makedirs(run, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0",
               CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CONFIG", None)
    began = time.time()
    me = [sys.executable, os.path.abspath(__file__), args.kind, args.outdir,
          "--steps", str(args.steps)]
    if args.kind == "mirrored":
        with open(os.path.join(args.outdir, "mirrored.stderr"), "wb") as err:
            code = subprocess.run([*me, "--child", "0"], env=env, stderr=err,
                                  stdin=subprocess.DEVNULL, timeout=600).returncode
        codes = [code]
    else:
        ports = _free_ports(args.workers)
        cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
        procs = []
        errs = []
        try:
            for i in range(args.workers):
                tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
                errs.append(open(os.path.join(args.outdir, f"worker{i}.stderr"), "wb"))
                procs.append(subprocess.Popen(
                    [*me, "--child", str(i), *(["--profile"] if i == 0 else [])],
                    env=dict(env, TF_CONFIG=tf_config), stderr=errs[-1], stdin=subprocess.DEVNULL))
            codes = [p.wait(timeout=600) for p in procs]
        finally:
            for p in procs:  # a worker left waiting for a dead peer would never end
                if p.poll() is None:
                    p.kill()
                    p.wait()
            for f in errs:
                f.close()
    with open(os.path.join(args.outdir, "job.json"), "w") as f:
        json.dump({"kind": args.kind, "workers": args.workers if args.kind == "multiworker" else 1,
                   "steps": args.steps, "exit_codes": codes, "seconds": time.time() - began}, f)
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
