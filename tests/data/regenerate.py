"""Rewrite the committed fixtures of ``tests/data/`` with real TensorFlow.

In: nothing (run it from the repository root with a Python that has TensorFlow).
Out, under ``tests/data/``:

- ``fit_full_health/``: one run, a tfdbg2 dump (``tensor_debug_mode="FULL_HEALTH"``,
  ``circular_buffer_size=-1``) written directly in it, an XPlane profile under
  ``plugins/profile/<session>/<host>.xplane.pb`` (``tf.profiler.experimental`` around
  ``model.fit``), TF's log (``TF_CPP_MAX_VLOG_LEVEL=2``) as ``tf_stderr.log`` and the
  ``ONEDNN_VERBOSE=1`` lines as ``tf_stdout.log``, and ``reference.json``;
- ``fit_no_tensor/``: the same workload with ``tensor_debug_mode="NO_TENSOR"``, dump
  and ``reference.json`` only (no profile, no log: what a dump alone says);

``reference.json`` is written here, by TensorFlow: the TF version, the environment,
and per-op-type counts as TF's own ``DebugDataReader`` gives them (``bench/ddr_counts.py``:
eager executions, graph executions of the lowest traced output slot, tf.function
calls), plus the dtype of each eager execution from ``DebugDataReader.read_execution``
(FULL_HEALTH only records it). The tests compare ``tb_opmode``'s answers with it;
no file here is written by ``tb_opmode``.

The workload (``_workload``), in a child process so that the environment is set
before TensorFlow is imported, with one inter-op and one intra-op thread and fixed
seeds: a few eager ops (float32 MatMul, float32 and int32 Transpose, Softmax, Relu),
then ``model.fit`` for 2 steps of a Keras model whose Dense layer works on a 3-D
input (``Tensordot``: a MatMul and Transposes, some removed by grappler) after a
layer that transposes.

Made with TensorFlow 2.21.0 (tensorflow-cpu wheel, Keras 3), oneDNN on (the default),
on x86-64 Linux; environment of the child: ``TF_ENABLE_ONEDNN_OPTS=1
TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_MAX_VLOG_LEVEL=2 ONEDNN_VERBOSE=1 OMP_NUM_THREADS=1
PYTHONHASHSEED=0 CUDA_VISIBLE_DEVICES=``. Command::

    .venv/bin/python tests/data/regenerate.py

The file names of dumps and profiles carry the host name of the machine that ran it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

__all__ = ["FIXTURES", "main"]

HERE = Path(__file__).resolve().parent
FIXTURES = {"fit_full_health": "FULL_HEALTH", "fit_no_tensor": "NO_TENSOR"}
ENV = {"TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPP_MIN_LOG_LEVEL": "0", "TF_CPP_MAX_VLOG_LEVEL": "2",
       "ONEDNN_VERBOSE": "1", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
       "CUDA_VISIBLE_DEVICES": ""}


def _workload(tf: Any, outdir: str, profile: bool) -> None:
    import numpy as np

    rs = np.random.RandomState(1)
    x = tf.constant(rs.rand(4, 8).astype("float32"))
    w = tf.constant(rs.rand(8, 8).astype("float32"))
    y = tf.transpose(tf.matmul(x, w))
    y = tf.nn.relu(tf.nn.softmax(y))
    ints = tf.transpose(tf.reshape(tf.range(6, dtype=tf.int32), (2, 3)))
    _ = float(tf.reduce_sum(y).numpy()) + float(tf.reduce_sum(ints).numpy())

    keras = tf.keras

    class SwapAxes(keras.layers.Layer):  # type: ignore[misc,name-defined]
        def call(self, t: Any) -> Any:
            return tf.transpose(t, [0, 2, 1])

    inp = keras.Input(shape=(4, 6), name="seq")
    h = SwapAxes(name="swap_axes")(inp)
    h = keras.layers.Dense(5, name="proj")(h)  # on a 3-D input: Tensordot
    h = keras.layers.Flatten(name="flatten")(h)
    out = keras.layers.Dense(2, name="logits")(h)
    model = keras.Model(inp, out, name="fixture_model")
    model.compile(optimizer=keras.optimizers.SGD(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    xs = rs.rand(4, 4, 6).astype("float32")
    ys = rs.randint(0, 2, size=(4,)).astype("int32")
    data = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(2)
    if profile:
        tf.profiler.experimental.start(outdir)
    model.fit(data, epochs=1, steps_per_epoch=2, verbose=0)
    if profile:
        tf.profiler.experimental.stop()


def _child(outdir: str, mode: str) -> int:
    import random

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    random.seed(0)
    np.random.seed(0)
    tf.random.set_seed(0)
    tf.debugging.experimental.enable_dump_debug_info(
        outdir, tensor_debug_mode=mode, circular_buffer_size=-1)
    try:
        _workload(tf, outdir, profile=mode == "FULL_HEALTH")
    finally:
        tf.debugging.experimental.disable_dump_debug_info()
    return 0


def _reference(outdir: str, mode: str) -> dict[str, Any]:
    """What TensorFlow itself reads from the dump (DebugDataReader)."""
    sys.path.insert(0, str(HERE.parent.parent))
    import tensorflow as tf
    from tensorflow.python.debug.lib import debug_events_reader

    from bench.ddr_counts import reference_counts

    counts = reference_counts(outdir)
    eager_dtypes: dict[str, dict[str, int]] = {}
    with debug_events_reader.DebugDataReader(outdir) as reader:
        reader.update()
        for digest in reader.executions(digest=True):
            execution = reader.read_execution(digest)
            if execution.graph_id:
                continue
            names = []
            for values in execution.debug_tensor_values or []:
                # FULL_HEALTH: [tensor id, device, dtype enum, rank, size, ...]
                if mode == "FULL_HEALTH" and values is not None and len(values) > 2:
                    names.append(tf.dtypes.as_dtype(int(values[2])).name)
            key = ",".join(names) if names else "?"
            per = eager_dtypes.setdefault(digest.op_type, {})
            per[key] = per.get(key, 0) + 1
    return {"tensorflow_version": tf.__version__, "tensor_debug_mode": mode, "env": ENV,
            "written_by": "tests/data/regenerate.py with tensorflow.python.debug.lib."
                          "debug_events_reader.DebugDataReader",
            "eager": counts["eager"], "graph": counts["graph"], "functions": counts["functions"],
            "eager_output_dtypes": eager_dtypes}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--child":
        return _child(args[1], args[2])
    if args and args[0] == "--reference":
        json.dump(_reference(args[1], args[2]), sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    for name, mode in FIXTURES.items():
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TF_", "ONEDNN_")) and k != "TF_CPP_VMODULE"}
        env.update(ENV)
        if mode != "FULL_HEALTH":
            env.pop("TF_CPP_MAX_VLOG_LEVEL")
            env.pop("ONEDNN_VERBOSE")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(out), mode]
        with open(out / "tf_stderr.log", "wb") as err, open(out / "tf_stdout.log", "wb") as std:
            code = subprocess.run(cmd, env=env, stdout=std, stderr=err, cwd=HERE.parent.parent,
                                  check=False).returncode
        if code:
            sys.stderr.write((out / "tf_stderr.log").read_text(errors="replace")[-3000:])
            return code
        if mode != "FULL_HEALTH":
            (out / "tf_stderr.log").unlink()
            (out / "tf_stdout.log").unlink()
        ref = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--reference", str(out), mode],
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), capture_output=True,
                             text=True, check=True, cwd=HERE.parent.parent)
        (HERE / f"{name}.reference.json").write_text(ref.stdout)
        _archive(out, HERE / f"{name}.tar.xz")
        shutil.rmtree(out)
    return 0


def _archive(directory: Path, target: Path) -> None:
    """The run directory as a tar.xz (the dump's source_files and the VLOG log are
    mostly text: about a tenth of their size), members sorted, owner and mode fixed."""
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(target, "w:xz", preset=9) as tar:
        for path in sorted(directory.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(directory)), recursive=False, filter=clean)


if __name__ == "__main__":
    sys.exit(main())
