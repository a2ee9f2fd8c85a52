"""Real TensorFlow runs ("cells") for the truth matrix.

In: a cell name (one of ``CELLS``) and an output directory. Out, in OUTDIR:

- ``logdir/``      the run's logdir: the tfdbg2 dump written directly in it and,
                   for a profiled cell, the profile under it (the Keras
                   TensorBoard callback's ``logdir/<timestamp>/train/plugins/profile/...``
                   or ``tf.profiler.experimental``'s ``logdir/profile/plugins/profile/...``);
- ``stderr.log``   the child's stderr: TF's own log (``TF_CPP_MAX_VLOG_LEVEL=2`` or
                   ``TF_CPP_VMODULE=...``), outside the logdir;
- ``stdout.log``   the child's stdout: ``ONEDNN_VERBOSE=1`` lines, outside the logdir;
- ``cell.json``    what ran: ``{"cell", "tensorflow_version", "keras_version",
                   "tensor_debug_mode", "circular_buffer_size", "onednn", "profiled",
                   "log", "notes", ...}`` (see ``make_cell``).

Each cell runs in a child process (of ``python``) so that the TF environment
variables are set before TensorFlow is imported, with one inter-op and one
intra-op thread and fixed seeds so that its logs are deterministic. Every cell
also runs a few float (and one int32) eager ops outside any tf.function.

    python tests/matrix/workloads.py --list
    python tests/matrix/workloads.py CELL OUTDIR [--verify]

A cell whose packages are missing fails (``MissingPackages``, exit status 2)
with a message naming them; ``CELLS[name]["needs"]`` lists them as pip
requirements. "tf-keras" is needed only where ``tf.keras`` is Keras 3
(TF >= 2.16); with TF <= 2.15 ``tf.keras`` is Keras 2 already.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

__all__ = ["CELLS", "MissingPackages", "CellFailed", "make_cell", "reader_counts", "main"]

VMODULE = "execute=1,executor=1,op_kernel=1,process_function_library_runtime=1"
MODES = ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE", "FULL_TENSOR")
_CHILD_META = ".child.json"
_ENV_KEYS = ("TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL", "TF_CPP_MAX_VLOG_LEVEL",
             "TF_CPP_VMODULE", "ONEDNN_VERBOSE", "TF_USE_LEGACY_KERAS", "OMP_NUM_THREADS",
             "PYTHONHASHSEED")
_MISSING_EXIT = 3  # the child's exit status for missing packages


def _cell(workload: str, **kw: Any) -> dict:
    params = {
        "workload": workload,
        "tensor_debug_mode": "FULL_HEALTH",
        "circular_buffer_size": -1,  # None: do not pass it (TF's default, 1000)
        "onednn": True,
        # Every cell leaves a profile, as the issue scores "dump + profile"; each window
        # covers only part of the run (one fit step, one call), as users' profiles do.
        # The dump-only score hides it.
        "profiled": True,
        "log": "vlog2",
        "legacy_keras": False,  # TF_USE_LEGACY_KERAS=1 (Keras 2 via tf-keras)
        "needs": [],
        "steps": 4,
    }
    params.update(kw)
    return params


CELLS: dict[str, dict] = {}
for _mode in MODES:
    CELLS[f"fit_{_mode}"] = _cell(
        "fit", tensor_debug_mode=_mode,
        histogram_freq=1 if _mode == "FULL_HEALTH" else 0)
CELLS.update({
    # Default circular buffer (1000 records per kind): more than 1000 graph traces
    # and more than 1000 eager executions are written, only the last 1000 kept.
    "fit_default_buffer": _cell("fit", circular_buffer_size=None, steps=8, extra_eager=1100),
    "fit_spe": _cell("fit", steps_per_execution=2, evaluate=True, predict=True),
    # A profile of a late step, as users take to skip the warm-up: by then TF's executor
    # has stopped tracing its cheap nodes at the default tracer level (after ~90 runs).
    "fit_late_profile": _cell("fit", steps=100, profile_batch=96),
    # The same run profiled at step 2, the TensorBoard callback's default: the window is
    # early (the dump's call times say so) though the run is long.
    "fit_long_run": _cell("fit", steps=100),
    "custom_loop": _cell("custom_loop"),
    # Retracing (issue 25): every call of step traces, a lambda's tf.function per iteration.
    "retracing": _cell("retracing"),
    "tfdata_map": _cell("tfdata_map"),
    "control_flow": _cell("control_flow"),
    "mirrored": _cell("mirrored", steps=2, logical_cpus=2),
    "xla": _cell("xla"),
    "mixed_bf16": _cell("fit", policy="mixed_bfloat16", steps=3),
    "mixed_f16": _cell("fit", policy="mixed_float16", steps=3),
    "fit_onednn_off": _cell("fit", onednn=False),
    # TF_ENABLE_ONEDNN_OPTS unset: TF's default for the CPU that runs it (on with AVX-512
    # VNNI/BF16 or AMX, off elsewhere); only the log's first lines say which.
    "fit_onednn_default": _cell("fit", onednn=None),
    # Dumps of users who never profiled: NO_TENSOR (grappler fuses as if undebugged) and
    # CURT_HEALTH, a custom loop of eager then tf.function steps (Conv2D+BiasAdd+ReLU).
    "fit_NO_TENSOR_unprofiled": _cell("fit", tensor_debug_mode="NO_TENSOR", profiled=False),
    "fit_CURT_HEALTH_unprofiled": _cell("fit", tensor_debug_mode="CURT_HEALTH", profiled=False),
    "custom_loop_NO_TENSOR_unprofiled": _cell("custom_loop", tensor_debug_mode="NO_TENSOR",
                                              profiled=False),
    # model.fit(x, y) on NumPy arrays, the most common call: Keras builds its own tf.data
    # pipeline (RandomShuffle of the indices, slicing functions) in graphs of their own.
    "fit_numpy_NO_TENSOR_unprofiled": _cell("fit", tensor_debug_mode="NO_TENSOR",
                                            profiled=False, numpy_data=True),
    "fit_vmodule": _cell("fit", log="vmodule"),
    "tf_keras": _cell("fit", legacy_keras=True, needs=["tf-keras"]),
    "hf_bert": _cell("hf_bert", legacy_keras=True, steps=2,
                     needs=["transformers<5", "tf-keras"]),
})
del _mode


class CellFailed(RuntimeError):
    """The child TensorFlow run of a cell failed."""


class MissingPackages(CellFailed):
    """A cell needs packages that the child's Python does not have."""

    def __init__(self, cell: str, packages: list[str], python: str, detail: str = ""):
        self.cell, self.packages, self.python = cell, packages, python
        msg = (f"cell {cell!r} needs package(s) {', '.join(packages)} which {python} lacks"
               f" (pip install {' '.join(repr(p) for p in packages)})")
        super().__init__(msg + (f": {detail}" if detail else ""))


# ---------------------------------------------------------------- parent side

def _child_env(params: dict) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("TF_CPP_MAX_VLOG_LEVEL", "TF_CPP_VMODULE", "TF_CPP_MIN_VLOG_LEVEL",
                "TF_USE_LEGACY_KERAS", "TF_XLA_FLAGS", "CUDA_VISIBLE_DEVICES"):
        env.pop(var, None)
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    if params["onednn"] is not None:  # None: TF's default for this CPU
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if params["onednn"] else "0"
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    env["ONEDNN_VERBOSE"] = "1"
    if params["log"] == "vlog2":
        env["TF_CPP_MAX_VLOG_LEVEL"] = "2"
    elif params["log"] == "vmodule":
        env["TF_CPP_VMODULE"] = VMODULE
    if params["legacy_keras"]:
        env["TF_USE_LEGACY_KERAS"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["OMP_NUM_THREADS"] = "1"
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _file_stats(outdir: pathlib.Path) -> dict:
    logdir = outdir / "logdir"
    dump = {p.name.rsplit(".", 1)[-1]: p.stat().st_size
            for p in sorted(logdir.glob("tfdbg_events.*"))}
    profiles = sorted(str(p.relative_to(outdir)) for p in logdir.rglob("*.xplane.pb"))
    stats = {"dump_files": dump, "profiles": profiles}
    err = outdir / "stderr.log"
    out = outdir / "stdout.log"
    counts = {"process_node": 0, "instantiating_kernel": 0, "executing_op": 0}
    if err.exists():
        with err.open("rb") as f:
            for line in f:
                if b"Process node:" in line:
                    counts["process_node"] += 1
                elif b"Instantiating kernel" in line:
                    counts["instantiating_kernel"] += 1
                elif b"Executing op" in line:
                    counts["executing_op"] += 1
    onednn = 0
    if out.exists():
        with out.open("rb") as f:
            onednn = sum(1 for line in f if line.startswith(b"onednn_verbose,") and b",exec," in line)
    stats["log_lines"] = counts
    stats["onednn_verbose_exec_lines"] = onednn
    stats["stderr_bytes"] = err.stat().st_size if err.exists() else 0
    stats["stdout_bytes"] = out.stat().st_size if out.exists() else 0
    return stats


def make_cell(name: str, outdir: pathlib.Path, python: str = sys.executable) -> dict:
    """Run cell ``name`` in a child ``python``; write and return its cell.json dict.

    Raises ``MissingPackages`` if the child lacks a package the cell needs,
    ``CellFailed`` if the TensorFlow run fails (the message ends with the tail of
    its stderr). ``outdir`` is created; a previous cell there is replaced.
    """
    if name not in CELLS:
        raise KeyError(f"unknown cell {name!r}; cells: {', '.join(CELLS)}")
    params = CELLS[name]
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    logdir = outdir / "logdir"
    if logdir.exists():
        import shutil
        shutil.rmtree(logdir)
    for stale in ("cell.json", _CHILD_META, "stderr.log", "stdout.log"):
        (outdir / stale).unlink(missing_ok=True)
    logdir.mkdir()
    cmd = [python, os.path.abspath(__file__), "--child", name, str(outdir.resolve())]
    start = time.monotonic()
    with open(outdir / "stdout.log", "wb") as out, open(outdir / "stderr.log", "wb") as err:
        code = subprocess.run(cmd, env=_child_env(params), stdout=out, stderr=err,
                              stdin=subprocess.DEVNULL, timeout=900).returncode
    wall = round(time.monotonic() - start, 2)
    meta_path = outdir / _CHILD_META
    child = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta_path.unlink(missing_ok=True)
    if code == _MISSING_EXIT and child.get("missing"):
        raise MissingPackages(name, child["missing"], python, child.get("missing_detail", ""))
    if code:
        tail = (outdir / "stderr.log").read_bytes()[-4000:].decode(errors="replace")
        raise CellFailed(f"cell {name!r} failed (exit {code}) with {python}; "
                         f"see {outdir / 'stderr.log'}; its end:\n{tail}")
    meta = {
        "cell": name,
        "tensorflow_version": child.get("tensorflow_version"),
        "keras_version": child.get("keras_version"),
        "tensor_debug_mode": params["tensor_debug_mode"],
        "circular_buffer_size": params["circular_buffer_size"],
        "onednn": params["onednn"],
        "profiled": params["profiled"],
        "log": params["log"],
        "notes": child.get("notes", []),
        "workload": params["workload"],
        "params": params,
        "env": {k: v for k, v in _child_env(params).items() if k in _ENV_KEYS},
        "python": python,
        "wall_seconds": wall,
    }
    for key, value in child.items():
        if key not in meta:
            meta[key] = value
    meta.update(_file_stats(outdir))
    if not meta["dump_files"]:
        raise CellFailed(f"cell {name!r}: the run wrote no tfdbg_events.* in {logdir}")
    (outdir / "cell.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return meta


_READER_SNIPPET = r"""
import json, sys
from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader
with DebugDataReader(sys.argv[1]) as r:
    r.update()
    print(json.dumps({"executions": len(r.executions(digest=True)),
                      "graph_execution_traces": len(r.graph_execution_traces(digest=True)),
                      "graphs": len(r.outermost_graphs())}))
"""


def reader_counts(logdir: pathlib.Path, python: str = sys.executable) -> dict:
    """Counts from TensorFlow's own DebugDataReader (run in a child ``python``)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([python, "-c", _READER_SNIPPET, str(logdir)], env=env,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"DebugDataReader failed on {logdir}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------- child side

class _Child:
    def __init__(self, name: str, outdir: str):
        self.name = name
        self.params = CELLS[name]
        self.outdir = pathlib.Path(outdir)
        self.logdir = self.outdir / "logdir"
        self.meta: dict[str, Any] = {"notes": []}
        self.tf: Any = None

    def note(self, text: str) -> None:
        self.meta["notes"].append(text)

    def write_meta(self) -> None:
        (self.outdir / _CHILD_META).write_text(json.dumps(self.meta, indent=1, default=str))

    # -- set-up ----------------------------------------------------------

    def check_needs(self, tf) -> list[str]:
        missing = []
        detail = []
        major_minor = tuple(int(x) for x in tf.__version__.split(".")[:2])
        for need in self.params["needs"]:
            if need == "tf-keras":
                if major_minor < (2, 16):
                    continue  # tf.keras is Keras 2 already
                try:
                    import tf_keras  # noqa: F401
                except ImportError as e:
                    missing.append(f"tf-keras=={major_minor[0]}.{major_minor[1]}.*")
                    detail.append(str(e))
            elif need.startswith("transformers"):
                try:
                    import transformers
                except ImportError as e:
                    missing.append(need)
                    detail.append(str(e))
                    continue
                if int(transformers.__version__.split(".")[0]) >= 5:
                    missing.append(need)
                    detail.append(f"transformers {transformers.__version__} has no TensorFlow models")
        if missing:
            self.meta["missing"] = missing
            self.meta["missing_detail"] = "; ".join(detail)
        return missing

    def keras_version(self, tf) -> str:
        if self.params["legacy_keras"]:
            try:
                import tf_keras
                return tf_keras.__version__
            except ImportError:
                pass
        version = getattr(tf.keras, "__version__", None)
        if version:
            return version
        import keras
        return keras.__version__

    def run(self) -> int:
        if self.params.get("logical_cpus"):
            import tensorflow as tf
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()
                      for _ in range(self.params["logical_cpus"])])
        import tensorflow as tf
        self.tf = tf
        self.meta["tensorflow_version"] = tf.__version__
        if self.check_needs(tf):
            self.write_meta()
            sys.stderr.write(f"workloads: cell {self.name} needs {self.meta['missing']}: "
                             f"{self.meta['missing_detail']}\n")
            return _MISSING_EXIT
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
        self.meta["keras_version"] = self.keras_version(tf)
        import random

        import numpy as np
        random.seed(0)
        np.random.seed(0)
        tf.random.set_seed(0)
        kwargs = {"tensor_debug_mode": self.params["tensor_debug_mode"]}
        if self.params["circular_buffer_size"] is not None:
            kwargs["circular_buffer_size"] = self.params["circular_buffer_size"]
        tf.debugging.experimental.enable_dump_debug_info(str(self.logdir), **kwargs)
        self.write_meta()
        try:
            self.eager_ops()
            getattr(self, "wl_" + self.params["workload"])()
            self.eager_ops(tag="end")
        finally:
            tf.debugging.experimental.disable_dump_debug_info()
            sys.stdout.flush()
            sys.stderr.flush()
            self.write_meta()
        return 0

    # -- pieces shared by the cells --------------------------------------

    def eager_ops(self, tag: str = "start") -> None:
        """Float (and int32) eager ops outside any tf.function."""
        tf = self.tf
        x = tf.constant(np.random.RandomState(1).rand(8, 16).astype("float32"))
        w = tf.constant(np.random.RandomState(2).rand(16, 16).astype("float32"))
        y = tf.matmul(x, w)
        y = tf.transpose(y)
        y = tf.nn.softmax(y)
        y = tf.nn.relu(y + 1.0) * 0.5
        img = tf.constant(np.random.RandomState(3).rand(1, 8, 8, 3).astype("float32"))
        k = tf.constant(np.random.RandomState(4).rand(3, 3, 3, 4).astype("float32"))
        z = tf.nn.conv2d(img, k, strides=1, padding="SAME")
        z = tf.nn.max_pool2d(tf.nn.relu(z), 2, 2, "VALID")
        ints = tf.transpose(tf.reshape(tf.range(12, dtype=tf.int32), (3, 4)))
        d = tf.transpose(tf.cast(y, tf.float64))
        total = tf.reduce_sum(y) + tf.reduce_sum(z) + tf.cast(tf.reduce_sum(ints), tf.float32)
        total += tf.cast(tf.reduce_sum(d), tf.float32)
        self.meta.setdefault("eager_check", {})[tag] = float(total.numpy())

    def keras(self):
        return self.tf.keras

    def image_model(self):
        """Conv2D -> transpose inside a layer -> Dense+activation -> logits."""
        keras = self.keras()
        tf = self.tf

        class SwapAxes(keras.layers.Layer):
            def call(self, x):
                return tf.transpose(x, [0, 2, 1])

        inp = keras.Input(shape=(8, 8, 3), name="image")
        h = keras.layers.Conv2D(4, 3, padding="same", activation="relu", name="conv")(inp)
        h = keras.layers.Reshape((16, 16), name="to_seq")(h)
        h = SwapAxes(name="swap_axes")(h)
        h = keras.layers.Flatten(name="flatten")(h)
        h = keras.layers.Dense(16, activation="relu", name="hidden")(h)
        out = keras.layers.Dense(3, name="logits")(h)
        if self.params.get("policy"):
            out = keras.layers.Activation("linear", dtype="float32", name="to_f32")(out)
        return keras.Model(inp, out, name="cell_model")

    def image_data(self, n: int):
        rs = np.random.RandomState(5)
        x = rs.rand(n, 8, 8, 3).astype("float32")
        y = rs.randint(0, 3, size=(n,)).astype("int32")
        return x, y

    @contextlib.contextmanager
    def profile_window(self):
        """tf.profiler over the block, when the cell is profiled (a user's one window)."""
        if not self.params["profiled"]:
            yield
            return
        profile_dir = self.logdir / "profile"
        self.meta["profile_log_dir"] = os.path.relpath(profile_dir, self.outdir)
        self.tf.profiler.experimental.start(str(profile_dir))
        try:
            yield
        finally:
            self.tf.profiler.experimental.stop()

    def tensorboard_callback(self, histogram_freq: int = 0):
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        log_dir = str(self.logdir / stamp)
        self.meta["tensorboard_log_dir"] = os.path.relpath(log_dir, self.outdir)
        return self.keras().callbacks.TensorBoard(
            log_dir=log_dir, histogram_freq=histogram_freq,
            profile_batch=self.params.get("profile_batch", 2))

    # -- workloads -------------------------------------------------------

    def wl_fit(self) -> None:
        tf, keras, p = self.tf, self.keras(), self.params
        if p.get("policy"):
            keras.mixed_precision.set_global_policy(p["policy"])
            self.meta["policy"] = p["policy"]
        batch, steps = 4, p["steps"]
        spe = p.get("steps_per_execution", 1)
        model = self.image_model()
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"], steps_per_execution=spe)
        x, y = self.image_data(batch * steps)
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).repeat()
        callbacks = [self.tensorboard_callback(p.get("histogram_freq", 0))] if p["profiled"] else []
        if p.get("numpy_data"):  # arrays, as most users pass them: Keras shuffles in tf.data
            model.fit(x, y, batch_size=batch, epochs=1, callbacks=callbacks, verbose=0)
        else:
            model.fit(data, epochs=1, steps_per_epoch=steps, callbacks=callbacks, verbose=0)
        self.meta["fit_steps"] = steps
        if p.get("evaluate"):
            model.evaluate(data, steps=2, verbose=0)
            self.meta["evaluate_steps"] = 2
        if p.get("predict"):
            model.predict(tf.data.Dataset.from_tensor_slices(x).batch(batch), steps=2, verbose=0)
            self.meta["predict_steps"] = 2
        if p.get("policy"):
            keras.mixed_precision.set_global_policy("float32")
            # eager ops in the policy's compute dtype too (f16 MatMul may stay stock)
            dtype = tf.bfloat16 if "bfloat16" in p["policy"] else tf.float16
            a = tf.cast(tf.constant(x[0, :, :, 0]), dtype)
            self.meta["low_precision_eager"] = float(tf.reduce_sum(tf.cast(
                tf.nn.softmax(tf.transpose(tf.matmul(a, a))), tf.float32)).numpy())
            self.note(f"eager MatMul/Transpose/Softmax in {dtype.name} after fit")
        extra = p.get("extra_eager", 0)
        if extra:
            v = tf.constant([1.0, 2.0])
            for _ in range(extra):
                v = v * 1.0001
            self.meta["extra_eager_muls"] = extra
            self.note(f"{extra} extra eager Mul ops after fit, so executions exceed the buffer too")

    def wl_custom_loop(self) -> None:
        tf, keras = self.tf, self.keras()
        model = self.image_model()
        opt = keras.optimizers.SGD(0.01)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        x, y = self.image_data(4)
        x, y = tf.constant(x), tf.constant(y)

        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, model(xb, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        graph_step = tf.function(step)
        step(x, y)  # eager: builds variables and runs every op eagerly once
        modes = []
        with self.profile_window():
            for i in range(self.params["steps"]):
                if i % 2:
                    step(x, y)
                    modes.append("eager")
                else:
                    graph_step(x, y)
                    modes.append("graph")
        self.meta["step_modes"] = ["eager"] + modes

    def wl_retracing(self) -> None:
        """The classic tf.function mistakes of the trace ledger's workload, as kernels see
        them: ``step`` traced on every call (a new batch size, a new Python float), a lambda's
        tf.function made anew each iteration, a line of small eager ops; one iteration
        profiled. Each trace is a graph of its own, with its own kernels."""
        tf = self.tf
        rng = np.random.RandomState(8)
        w = tf.Variable(rng.rand(8, 16).astype("float32"))
        b = tf.Variable(np.zeros(16, "float32"))

        @tf.function
        def step(x, lr):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(x, w) + b)))
            grad_w, grad_b = tape.gradient(loss, [w, b])
            w.assign_sub(lr * grad_w)
            b.assign_sub(lr * grad_b)
            return loss

        steps = self.params["steps"]
        for i in range(steps):
            x = tf.constant(rng.rand(4 + 2 * i, 8).astype("float32"))
            window = self.profile_window() if i == steps - 2 else contextlib.nullcontext()
            with window:
                step(x, 0.1 / (i + 1))
                softmax = tf.function(lambda t: tf.nn.softmax(tf.transpose(t) * 2.0))
                softmax(x)
                v = x
                for _ in range(10):
                    v = tf.tanh(v * 0.5)
        self.meta["retracing_steps"] = steps
        self.note(f"step traced on each of {steps} calls (batch size and a Python float), a "
                  "lambda's tf.function made anew each iteration, 20 eager ops a line")

    def wl_tfdata_map(self) -> None:
        tf = self.tf
        w = tf.constant(np.random.RandomState(6).rand(6, 6).astype("float32"))

        def prep(x):
            x = tf.transpose(x)
            x = tf.matmul(x, w)
            x = tf.nn.softmax(tf.nn.relu(x * 2.0 - 0.5))
            return tf.reduce_mean(x, axis=0) + tf.sqrt(tf.abs(x[0]) + 1.0)

        data = np.random.RandomState(7).rand(8, 6, 6).astype("float32")
        ds = tf.data.Dataset.from_tensor_slices(data).map(prep).batch(2)

        @tf.function
        def consume(dataset):
            total = tf.constant(0.0)
            for batch in dataset:
                total += tf.reduce_sum(tf.matmul(batch, tf.transpose(batch)))
            return total

        results = [float(consume(ds).numpy())]
        with self.profile_window():  # the second call only
            results.append(float(consume(ds).numpy()))
        eager_total = sum(float(tf.reduce_sum(b).numpy()) for b in ds)  # eager iteration
        self.meta["tfdata_results"] = results + [eager_total]
        self.note("dataset of 8 elements, map(prep) then batch(2); consumed twice by a "
                  "tf.function and once eagerly")

    def wl_control_flow(self) -> None:
        tf = self.tf

        @tf.function
        def f(x, flag):
            y = tf.cond(flag,
                        lambda: tf.nn.relu(tf.matmul(x, x)),
                        lambda: tf.nn.softmax(tf.transpose(x)) * 3.0)
            i = tf.constant(0)

            def body(i, acc):
                return i + 1, tf.tanh(acc * 0.5 + 0.1)

            _, y = tf.while_loop(lambda i, acc: i < 3, body, [i, y])
            return tf.reduce_sum(y)

        x = tf.constant(np.random.RandomState(8).rand(4, 4).astype("float32"))
        flags = [True, False, True, False, True]
        results = []
        for i, flag in enumerate(flags):
            # The profile sees one call, whose cond took the False branch: the True
            # branch's nodes ran at other calls, not in the window.
            with self.profile_window() if i == 1 else contextlib.nullcontext():
                results.append(float(f(x, tf.constant(flag)).numpy()))
        self.meta["cond_flags"] = flags
        self.meta["while_iterations"] = 3
        self.meta["control_flow_results"] = results
        self.note("one tf.function traced once, called 5 times with flag T,F,T,F,T "
                  "(the untaken branch's nodes are dead at each step); while_loop of 3 iterations")

    def wl_mirrored(self) -> None:
        tf, keras = self.tf, self.keras()
        devices = [d.name for d in tf.config.list_logical_devices("CPU")]
        self.meta["logical_devices"] = devices
        strategy = tf.distribute.MirroredStrategy(devices)
        self.meta["num_replicas"] = strategy.num_replicas_in_sync
        with strategy.scope():
            model = self.image_model()
            model.compile(optimizer=keras.optimizers.SGD(0.01),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            opt = keras.optimizers.SGD(0.01)
        x, y = self.image_data(8)
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat()
        callbacks = [self.tensorboard_callback()] if self.params["profiled"] else []
        model.fit(data, epochs=1, steps_per_epoch=self.params["steps"], callbacks=callbacks,
                  verbose=0)
        dist = iter(strategy.experimental_distribute_dataset(
            tf.data.Dataset.from_tensor_slices((x, y)).batch(4)))

        @tf.function
        def train_step(batch):
            def replica_step(xb, yb):
                with tf.GradientTape() as tape:
                    logits = model(xb, training=True)
                    loss = tf.reduce_mean(
                        tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            losses = strategy.run(replica_step, args=batch)
            return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

        losses = [float(train_step(next(dist)).numpy()) for _ in range(2)]
        self.meta["strategy_run_losses"] = losses
        self.note(f"MirroredStrategy over {devices}: model.fit {self.params['steps']} steps, "
                  "then 2 custom steps via strategy.run in a tf.function")

    def wl_xla(self) -> None:
        tf = self.tf

        @tf.function(jit_compile=True)
        def xla_fn(a, b):
            return tf.reduce_sum(tf.nn.relu(tf.matmul(a, b) + 1.0) * tf.transpose(a))

        @tf.function
        def plain_fn(a, b):
            return tf.reduce_sum(tf.nn.relu(tf.matmul(a, b) + 1.0) * tf.transpose(a))

        a = tf.constant(np.random.RandomState(9).rand(4, 4).astype("float32"))
        b = tf.constant(np.random.RandomState(10).rand(4, 4).astype("float32"))
        calls = []
        for i in range(2):
            try:
                with self.profile_window() if i == 1 else contextlib.nullcontext():
                    value = float(xla_fn(a, b).numpy())
                calls.append({"call": i, "ok": True, "value": value})
            except Exception as e:  # tfdbg's debug ops have no XLA kernel
                first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                calls.append({"call": i, "ok": False, "error": type(e).__name__,
                              "message": first[:500]})
        self.meta["jit_compile_calls"] = calls
        self.meta["jit_compile_failed"] = not all(c["ok"] for c in calls)
        if self.meta["jit_compile_failed"]:
            self.note(f"tf.function(jit_compile=True) failed under the dump: "
                      f"{calls[0].get('error')}: {calls[0].get('message', '')[:200]}")
        else:
            self.note("tf.function(jit_compile=True) ran under the dump")
        self.meta["plain_fn_result"] = float(plain_fn(a, b).numpy())
        self.note("then the same function without jit_compile, and the eager ops")
        self.eager_ops(tag="after_xla")

    def wl_hf_bert(self) -> None:
        tf = self.tf
        import transformers
        from transformers import BertConfig, TFBertForSequenceClassification
        keras = tf.keras
        self.meta["transformers_version"] = transformers.__version__
        config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=32, num_labels=2)
        model = TFBertForSequenceClassification(config)
        steps, batch, seq = self.params["steps"], 2, 16
        rs = np.random.RandomState(11)
        ids = rs.randint(0, 64, size=(batch * steps, seq)).astype("int32")
        mask = np.ones_like(ids)
        labels = rs.randint(0, 2, size=(batch * steps,)).astype("int32")
        data = tf.data.Dataset.from_tensor_slices(
            ({"input_ids": ids, "attention_mask": mask}, labels)).batch(batch)
        model.compile(optimizer=keras.optimizers.Adam(3e-5),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(data, epochs=1, steps_per_epoch=steps,
                  callbacks=[self.tensorboard_callback()] if self.params["profiled"] else [],
                  verbose=0)
        self.meta["fit_steps"] = steps
        self.note("TFBertForSequenceClassification(tiny BertConfig), random ids, "
                  f"fit {steps} steps with the TensorBoard callback (profile_batch=2)")


np: Any = None


def _child_main(name: str, outdir: str) -> int:
    global np
    import numpy
    np = numpy
    child = _Child(name, outdir)
    try:
        return child.run()
    except BaseException as e:
        child.meta["error"] = f"{type(e).__name__}: {e}"[:2000]
        child.write_meta()
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cell", nargs="?")
    parser.add_argument("outdir", nargs="?")
    parser.add_argument("--list", action="store_true", help="list the cells and exit")
    parser.add_argument("--verify", action="store_true",
                        help="also count the dump with TensorFlow's DebugDataReader")
    parser.add_argument("--python", default=sys.executable, help="the child's Python")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(args.cell, args.outdir)
    if args.list:
        for name, params in CELLS.items():
            extra = f"  needs {', '.join(params['needs'])}" if params["needs"] else ""
            print(f"{name:20s} {params['workload']:12s} {params['tensor_debug_mode']:14s}"
                  f" buffer={params['circular_buffer_size']} onednn={params['onednn']}"
                  f" profiled={int(params['profiled'])} log={params['log']}{extra}")
        return 0
    if not args.cell or not args.outdir:
        parser.error("CELL and OUTDIR are required (or --list)")
    if args.cell not in CELLS:
        parser.error(f"unknown cell {args.cell!r}; --list shows the cells")
    try:
        meta = make_cell(args.cell, pathlib.Path(args.outdir), args.python)
    except MissingPackages as e:
        sys.stderr.write(f"workloads: {e}\n")
        return 2
    except CellFailed as e:
        sys.stderr.write(f"workloads: {e}\n")
        return 1
    summary = {k: meta[k] for k in ("cell", "tensorflow_version", "keras_version",
                                    "wall_seconds", "dump_files", "profiles", "log_lines",
                                    "onednn_verbose_exec_lines", "stderr_bytes", "notes")}
    if args.verify:
        meta["reader_counts"] = summary["reader_counts"] = reader_counts(
            pathlib.Path(args.outdir) / "logdir", args.python)
        (pathlib.Path(args.outdir) / "cell.json").write_text(
            json.dumps(meta, indent=1, sort_keys=True) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
