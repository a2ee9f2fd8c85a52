"""Real TensorFlow runs with known retracing: the trace ledger's scenario, and its truth.

In: a cell (``CELLS``: a tfdbg2 dump mode, a profile or not, TF's log or not) and the
Python of a TensorFlow venv. Out, in OUTDIR:

- ``logdir/``     the run: the tfdbg2 dump (``circular_buffer_size=-1``) written in it and,
                  for a profiled cell, ``logdir/profile/plugins/profile/<run>/<host>.xplane.pb``
                  (``tf.profiler.experimental`` around iterations ``PROFILED`` of the loop);
- ``stderr.log``  the child's stderr: with ``log``, TF's C++ log (``TF_CPP_VMODULE=
                  execute=1,op_kernel=1``) and TF's Python line for each new trace
                  ("Creating new FuncGraph for Python function ... (key: ...)"), outside
                  the logdir as a user's redirected stderr would be; ``log.txt`` in the
                  logdir holds the same bytes, for a reader that looks there;
- ``truth.json``  what TensorFlow itself says of the run (see ``TRUTH_DOC``).

The scenario (``_Scenario.run``) is a custom training loop of ``ITERATIONS`` iterations
with the classic ``tf.function`` mistakes, each trace's cause constructed and checked
against the concrete functions TF made:

- ``step(x, lr)``: batch size and a Python float change in turn (every call traces:
  ``shape`` of ``x`` dimension 0, then ``python_value`` of ``lr``), then the first batch
  size again with a new ``lr`` (``python_value``: told against the nearest earlier trace);
- ``tf.function(lambda t: ...)`` made anew in the loop (``new_function_object``);
- ``project`` with an ``input_signature`` (one trace);
- ``normalize`` with ``reduce_retracing=True`` (two traces: the second relaxes dim 0);
- ``scale`` called with float32, then float64 (``dtype``);
- ``accumulate``, which makes a ``tf.Variable`` on its first call: TF traces that call
  twice (``variable_creation``; the first trace is never called), as Keras 2's train
  step does;
- ``eager_hot``: ``HOT_OPS`` small eager ops on one line, each iteration; and the same
  helper in a ``tf.function`` (``hot_graph``), so one run has its ops both ways;
- a Keras ``fit`` on three batch sizes (Adam, whose slots its first step creates: Keras 3
  traces ``one_step_on_data`` twice inside the first trace of ``multi_step_on_iterator``,
  ``variable_creation``) and ``predict`` on three batch sizes.

    python tests/traces/workloads.py --list
    python tests/traces/workloads.py CELL OUTDIR [--python PY]
    python tests/traces/workloads.py --all ROOT [--python PY]   # every cell, ROOT/<cell>

Each cell runs in a child process of the venv's ``python`` (the environment is set
before TensorFlow is imported); one inter-op and one intra-op thread, fixed seeds.
After the child, ``ddr_facts`` reads the dump with TensorFlow's ``DebugDataReader`` (in
another child of that python) and adds its counts to ``truth.json``. Nothing here
imports the product.
"""
from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

__all__ = ["CELLS", "MODES", "ITERATIONS", "STEP_RETURN", "PROFILED", "HOT_OPS", "CellFailed", "make_cell",
           "ddr_facts", "main", "TRUTH_DOC"]

MODES = ("FULL_HEALTH", "SHAPE", "CURT_HEALTH", "CONCISE_HEALTH", "NO_TENSOR")
ITERATIONS = 12
PROFILED = (4, 5, 6, 7)  # the loop's iterations inside the profile's window
HOT_OPS = 41  # eager ops one call of eager_hot runs: 20 Mul, 20 Tanh, one AddN
VMODULE = "execute=1,op_kernel=1"
# The schedule of step's calls: (batch size, lr). Each call changes one thing from the
# call before, so each traces once for one cause.
STEP_SCHEDULE = [(4 + 2 * (i // 2), round(0.1 / (1 + (i + 1) // 2), 6)) for i in range(ITERATIONS)]
# After the loop, step once more with the first batch size and a new lr: the trace before
# had another batch size, but the call differs from the first traces in lr alone, so its
# cause is python_value (a call traces when it matches none of the traces, not the last).
STEP_RETURN = (STEP_SCHEDULE[0][0], 0.5)
KERAS_BATCHES = (4, 8, 16)
KERAS_SAMPLES = 32

TRUTH_DOC = """truth.json:
{"cell": name, "params": {...}, "tensorflow_version", "keras_version", "python_version",
 "workload_file": this file's absolute path, as the dump's stack frames name it,
 "functions": [   # one per tf.function object (a lambda made 12 times: 12 entries)
   {"key": unique, "python_name": "step", "file": path, "lines": [def line, last line],
    "kind": "user" | "keras_train" | "keras_predict" | "keras_inner",
    "keras_steps": steps Keras ran with this kind of function (Keras only; its calls are
                   the dump's, checked to add up to these),
    "top_level": called from Python (false: only from inside another tf.function),
    "traces": experimental_get_tracing_count(), "calls": calls from Python (null if not top_level),
    "trace_list": [{"graph": "__inference_step_12", "calls": n or null,
                    "cause": "first" | "shape" | "dtype" | "python_value" | "new_function_object"
                             | "variable_creation",
                    "changed": [{"arg": "x", "dim": 0}] ("shape"), [{"arg": "x"}] ("dtype",
                               "python_value"), [] otherwise,
                    "args": [{"name": "x", "dtype": "float32", "shape": [4, 8]} |
                             {"name": "lr", "python": "0.1"}],
                    "iteration": loop iteration of the traced call or null,
                    "profiled": the traced call ran inside the profile's window}]}],
 "eager": {"hot_line": "path:line", "hot_calls": n, "hot_ops_per_call": HOT_OPS,
           "hot_graph_key": key of the tf.function running the same helper},
 "lines": {"lambda", "call_site" (the line that calls every tracked tf.function),
           "keras_fit", "keras_predict": "path:line"},
 "profile": {"iterations": [...], "window": [start_ns, stop_ns] or null},
 "ddr": {"executions": n, "eager_executions": n, "function_calls": {graph name: n},
         "eager_by_user_line": {"path:line": n}, "graphs": [[id, name, outer id], ...]}}"""

CELLS: dict[str, dict[str, Any]] = {}
for _mode in MODES:
    _short = _mode.lower()
    CELLS[f"{_short}_profile_log"] = {"mode": _mode, "profile": True, "log": True}
    CELLS[f"{_short}_plain"] = {"mode": _mode, "profile": False, "log": False}
CELLS["full_health_profile"] = {"mode": "FULL_HEALTH", "profile": True, "log": False}
CELLS["no_tensor_log"] = {"mode": "NO_TENSOR", "profile": False, "log": True}
# No dump: what tracing and the loop cost without one (for comparison; no truth is checked).
CELLS["nodump_profile_log"] = {"mode": None, "profile": True, "log": True}
del _mode, _short

_CHILD_ENV_DROP = ("TF_CPP_MAX_VLOG_LEVEL", "TF_CPP_VMODULE", "TF_CPP_MIN_VLOG_LEVEL",
                   "TF_USE_LEGACY_KERAS", "TF_XLA_FLAGS", "CUDA_VISIBLE_DEVICES")


class CellFailed(RuntimeError):
    """The child TensorFlow run (or its DebugDataReader pass) failed."""


# ---------------------------------------------------------------- parent side

def _child_env(params: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    for var in _CHILD_ENV_DROP:
        env.pop(var, None)
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    if params["log"]:
        env["TF_CPP_VMODULE"] = VMODULE
    env["PYTHONHASHSEED"] = "0"
    env["OMP_NUM_THREADS"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def make_cell(name: str, outdir: pathlib.Path, python: str = sys.executable) -> dict[str, Any]:
    """Run cell ``name`` with ``python``'s TensorFlow into ``outdir`` (replacing a previous
    run there); add DebugDataReader's facts; write and return the truth dict."""
    if name not in CELLS:
        raise KeyError(f"unknown cell {name!r}; cells: {', '.join(CELLS)}")
    params = CELLS[name]
    outdir = pathlib.Path(outdir).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    logdir = outdir / "logdir"
    if logdir.exists():
        import shutil
        shutil.rmtree(logdir)
    for stale in ("truth.json", "stderr.log", "stdout.log"):
        (outdir / stale).unlink(missing_ok=True)
    logdir.mkdir()
    cmd = [python, os.path.abspath(__file__), "--child", name, str(outdir)]
    start = time.monotonic()
    with open(outdir / "stdout.log", "wb") as out, open(outdir / "stderr.log", "wb") as err:
        code = subprocess.run(cmd, env=_child_env(params), stdout=out, stderr=err,
                              stdin=subprocess.DEVNULL, timeout=900).returncode
    wall = round(time.monotonic() - start, 2)
    truth_path = outdir / "truth.json"
    if code or not truth_path.exists():
        tail = (outdir / "stderr.log").read_bytes()[-4000:].decode(errors="replace")
        raise CellFailed(f"cell {name!r} failed (exit {code}) with {python}; its stderr ends:\n{tail}")
    truth = json.loads(truth_path.read_text())
    truth["wall_seconds"] = wall
    if params["log"]:
        (logdir / "log.txt").write_bytes((outdir / "stderr.log").read_bytes())
    if params["mode"]:
        truth["ddr"] = ddr_facts(logdir, truth["workload_file"], python)
        _keras_calls(truth)
        _check_against_ddr(truth)
    truth_path.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return truth


def _keras_calls(truth: dict[str, Any]) -> None:
    """Keras step functions: called from Python (``top_level``) if the dump holds calls
    of their traces; their calls per trace are the dump's, their sum must be the steps
    Keras ran (checked here: the steps are counted independently of the dump)."""
    calls = truth["ddr"]["function_calls"]
    for kind in ("keras_train", "keras_predict"):
        fns = [f for f in truth["functions"] if f["kind"] == kind]
        total = 0
        for fn in fns:
            per = [calls.get(t["graph"], 0) for t in fn["trace_list"]]
            fn["top_level"] = any(per)
            if not fn["top_level"]:
                fn["kind"] = "keras_inner"
                continue
            for t, n in zip(fn["trace_list"], per):
                t["calls"] = n
            fn["calls"] = sum(per)
            total += fn["calls"]
        steps = fns[0]["keras_steps"] if fns else 0
        if total != steps:
            raise CellFailed(f"{kind}: the dump holds {total} calls of its step functions, "
                             f"Keras ran {steps} steps")


def _check_against_ddr(truth: dict[str, Any]) -> None:
    """The workload's own counts must agree with the dump's, or the truth is not one."""
    calls = truth["ddr"]["function_calls"]
    wrong = []
    for fn in truth["functions"]:
        for trace in fn["trace_list"]:
            if trace["calls"] is not None and calls.get(trace["graph"], 0) != trace["calls"]:
                wrong.append(f"{trace['graph']}: counted {trace['calls']}, "
                             f"DebugDataReader {calls.get(trace['graph'], 0)}")
    hot = truth["ddr"]["eager_by_user_line"].get(truth["eager"]["hot_line"], 0)
    want = truth["eager"]["hot_calls"] * truth["eager"]["hot_ops_per_call"]
    if hot != want:
        wrong.append(f"hot line {truth['eager']['hot_line']}: {want} eager ops expected, "
                     f"DebugDataReader {hot}")
    if wrong:
        raise CellFailed("the dump disagrees with the workload: " + "; ".join(wrong))


_DDR_SNIPPET = r"""
import json, sys
from collections import Counter
from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader
logdir, user_file = sys.argv[1], sys.argv[2]
out = {"function_calls": Counter(), "eager_by_user_line": Counter(), "executions": 0,
       "eager_executions": 0}
with DebugDataReader(logdir) as r:
    r.update()
    for ex in r.executions():
        out["executions"] += 1
        if ex.graph_id:
            out["function_calls"][ex.op_type] += 1
            continue
        out["eager_executions"] += 1
        _host, frames = r.read_execution_stack_trace(ex)
        mine = [f for f in frames if f[0] == user_file]
        if mine:
            out["eager_by_user_line"][f"{mine[-1][0]}:{mine[-1][1]}"] += 1
    graphs = []
    def walk(g):
        graphs.append([g.graph_id, g.name, g.outer_graph_id])
        for inner in g.inner_graph_ids:
            walk(r.graph_by_id(inner))
    for g in r.outermost_graphs():
        walk(g)
    out["graphs"] = graphs
print(json.dumps(out))
"""


def ddr_facts(logdir: pathlib.Path, user_file: str, python: str = sys.executable) -> dict[str, Any]:
    """Counts from TensorFlow's own DebugDataReader (in a child ``python``): executions,
    calls per concrete function, eager executions per line of ``user_file`` (the innermost
    frame of each eager execution's stack that is in that file), the graphs."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([python, "-c", _DDR_SNIPPET, str(logdir), user_file], env=env,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise CellFailed(f"DebugDataReader failed on {logdir}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------- child side

def _line_of(marker: str) -> int:
    """The line of this file that holds ``marker`` (as code, not in this function)."""
    lines = pathlib.Path(__file__).read_text().splitlines()
    found = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    if len(found) != 1:
        raise RuntimeError(f"marker {marker!r} found {len(found)} times in {__file__}")
    return found[0]


def _spec_of(name: str, value: Any) -> list[dict[str, Any]]:
    """An argument's specs, nested structures flattened (``data[0]``, ``data['x']``)."""
    if isinstance(value, (list, tuple)):
        return [s for i, v in enumerate(value) for s in _spec_of(f"{name}[{i}]", v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _spec_of(f"{name}[{k!r}]", v)]
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and hasattr(dtype, "name"):
        dims = None if shape.rank is None else [d if d is None else int(d) for d in shape]
        return [{"name": name, "dtype": dtype.name, "shape": dims}]
    element = getattr(value, "element_spec", None) or getattr(value, "_element_spec", None)
    if element is not None:  # a tf.data iterator's spec: its elements, by path
        return _spec_of(f"{name}.element", element)
    return [{"name": name, "python": repr(value)}]


def _uid(concrete_name: str) -> int:
    """The uid TF appends to a concrete function's name (``__inference_step_95``): the order
    in which the traces were made."""
    tail = concrete_name.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _cause_from_specs(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str:
    """Why a later trace of one tf.function object was made, from the two traces' specs,
    for traces Keras made: a shape or dtype changed, else (the same specs) it is the second
    trace of a first call that created variables."""
    if [a.get("dtype") for a in before] != [a.get("dtype") for a in after]:
        return "dtype"
    if [a.get("shape") for a in before] != [a.get("shape") for a in after]:
        return "shape"
    return "variable_creation"


def _changed(cause: str, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What differs between two traces' argument specs, as the cause names it."""
    out: list[dict[str, Any]] = []
    for old, new in zip(before, after):
        if cause == "shape" and old.get("shape") != new.get("shape"):
            old_s, new_s = old.get("shape") or [], new.get("shape") or []
            if len(old_s) != len(new_s):
                out.append({"arg": new["name"], "dim": None})
            out.extend({"arg": new["name"], "dim": d}
                       for d, (a, b) in enumerate(zip(old_s, new_s)) if a != b)
        elif cause == "dtype" and old.get("dtype") != new.get("dtype"):
            out.append({"arg": new["name"]})
        elif cause == "python_value" and old.get("python") != new.get("python"):
            out.append({"arg": new["name"]})
    return out


class _Tracked:
    """One tf.function object: its calls from Python, each trace with its cause."""

    def __init__(self, key: str, fn: Any, kind: str = "user", top_level: bool | None = True,
                 python_function: Any = None) -> None:
        self.key, self.fn, self.kind, self.top_level = key, fn, kind, top_level
        self.python_function = python_function or fn.python_function
        self.calls = 0
        self.traces: list[dict[str, Any]] = []
        self.graph_calls: dict[str, int] = {}
        self.known: set[str] = set()
        self.steps: int | None = None  # Keras: the steps it ran with this function's kind

    def concrete_names(self) -> dict[str, Any]:
        out = {}
        for cf in self.fn._list_all_concrete_functions():
            name = cf.name.decode() if isinstance(cf.name, bytes) else cf.name
            out[name] = cf
        return out

    def __call__(self, run: _Scenario, cause: str, *args: Any) -> Any:
        """Call the function; ``cause`` is why this call traces ("cached": it does not;
        "first,variable_creation": twice, as a first call that creates variables does)."""
        before = self.fn.experimental_get_tracing_count()
        result = self.fn(*args)  # tracked call line
        self.calls += 1
        traced = self.fn.experimental_get_tracing_count() - before
        causes = [] if cause == "cached" else cause.split(",")
        if traced != len(causes):
            raise RuntimeError(f"{self.key}: call {self.calls} traced {traced} times, "
                               f"the scenario says {cause!r}")
        names = self.concrete_names()
        new = sorted((n for n in names if n not in self.known), key=_uid)
        if len(new) != traced:
            raise RuntimeError(f"{self.key}: {traced} traces but new concrete functions {new}")
        for name, why in zip(new, causes):
            self.add_trace(name, names[name], why, run)
        # A call that traced runs its last trace (the first of two is the variable-creating one).
        called = new[-1] if new else self._which(names, args)
        self.graph_calls[called] = self.graph_calls.get(called, 0) + 1
        return result

    def _which(self, names: dict[str, Any], args: tuple[Any, ...]) -> str:
        before = self.fn.experimental_get_tracing_count()
        cf = self.fn.get_concrete_function(*args)
        if self.fn.experimental_get_tracing_count() != before:
            raise RuntimeError(f"{self.key}: get_concrete_function traced again")
        name = cf.name.decode() if isinstance(cf.name, bytes) else cf.name
        if name not in names:
            raise RuntimeError(f"{self.key}: the call ran {name}, not one of its traces")
        return name

    def specs_of(self, cf: Any) -> list[dict[str, Any]]:
        params = list(inspect.signature(self.python_function).parameters)
        args, _kwargs = cf.structured_input_signature
        return [spec for i, a in enumerate(args)
                for spec in _spec_of(params[i] if i < len(params) else f"arg{i}", a)]

    def add_trace(self, graph: str, cf: Any, cause: str, run: _Scenario | None) -> None:
        self.known.add(graph)
        specs = self.specs_of(cf)
        prev = self.traces[-1]["args"] if self.traces else []
        changed = _changed(cause, prev, specs)
        if cause in ("shape", "dtype", "python_value") and not changed:
            raise RuntimeError(f"{self.key}: trace {graph} has cause {cause} but no such change "
                               f"from {prev} to {specs}")
        self.traces.append({"graph": graph, "cause": cause, "changed": changed, "args": specs,
                            "iteration": run.iteration if run else None,
                            "profiled": bool(run and run.profiling)})

    def truth(self) -> dict[str, Any]:
        if self.fn.experimental_get_tracing_count() != len(self.traces):
            raise RuntimeError(f"{self.key}: TF counts {self.fn.experimental_get_tracing_count()} "
                               f"traces, the scenario {len(self.traces)}")
        # AutoGraph's wrapper (Keras's step functions) keeps the function it wraps in
        # __wrapped__: its source is the function's, not autograph's ``wrapper``.
        source = inspect.unwrap(self.python_function)
        code_lines, first = inspect.getsourcelines(source)
        for t in self.traces:
            t["calls"] = self.graph_calls.get(t["graph"], 0) if self.top_level else None
        return {"keras_steps": self.steps,"key": self.key, "python_name": self.python_function.__name__,
                "file": os.path.abspath(inspect.getsourcefile(source) or ""),
                "lines": [first, first + len(code_lines) - 1], "kind": self.kind,
                "top_level": self.top_level,
                "traces": self.fn.experimental_get_tracing_count(),
                "calls": self.calls if self.top_level else None,
                "trace_list": self.traces}


tf: Any = None  # the child's TensorFlow module, set by _Scenario.setup
COEFFS = [1.0 + i / 1000 for i in range(HOT_OPS // 2)]


def eager_hot(v: Any) -> Any:
    return tf.add_n([tf.tanh(v * c) for c in COEFFS])  # eager hot line


class _Scenario:
    def __init__(self, name: str, outdir: str) -> None:
        self.name = name
        self.params = CELLS[name]
        self.outdir = pathlib.Path(outdir)
        self.logdir = self.outdir / "logdir"
        self.iteration: int | None = None
        self.profiling = False
        self.tracked: list[_Tracked] = []
        self.window: list[int] | None = None

    def track(self, *args: Any, **kw: Any) -> _Tracked:
        t = _Tracked(*args, **kw)
        self.tracked.append(t)
        return t

    def setup(self) -> Any:
        if self.params["log"]:
            # TF's line per new trace is a Python vlog at level 1 of the "tensorflow"
            # logger; level 1 also lets through vlog 2's "Python function signature"
            # (every argument's values), which the filter drops before it is formatted.
            log = logging.getLogger("tensorflow")
            log.setLevel(1)
            log.addFilter(lambda r: r.levelno >= logging.DEBUG
                          or str(r.msg).startswith("Creating new FuncGraph"))
        global tf
        import numpy as np
        import tensorflow
        tf = tensorflow
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
        np.random.seed(0)
        tf.random.set_seed(0)
        if self.params["mode"]:
            tf.debugging.experimental.enable_dump_debug_info(
                str(self.logdir), tensor_debug_mode=self.params["mode"], circular_buffer_size=-1)
        return tf

    def run(self) -> dict[str, Any]:
        tf = self.setup()
        try:
            self.custom_loop(tf)
            self.keras(tf)
        finally:
            if self.params["mode"]:
                tf.debugging.experimental.disable_dump_debug_info()
        return self.truth(tf)

    def custom_loop(self, tf: Any) -> None:
        w = tf.Variable(tf.random.stateless_normal([8, 4], seed=[1, 2]), name="w")

        def step(x, lr):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
            grad = tape.gradient(loss, w)
            w.assign_sub(lr * grad)
            return loss

        def project(x):
            return tf.reduce_sum(tf.matmul(x, w), axis=1)

        def normalize(x):
            return (x - tf.reduce_mean(x)) / (tf.math.reduce_std(x) + 1e-6)

        def scale(t):
            return t * 2.0

        state: list[Any] = []

        def accumulate(t):
            if not state:  # a variable made on the first call: TF traces that call twice
                state.append(tf.Variable(0.0, name="total"))
            return state[0].assign_add(tf.reduce_sum(t))

        t_step = self.track("step", tf.function(step))
        t_project = self.track("project", tf.function(
            project, input_signature=[tf.TensorSpec([None, 8], tf.float32)]))
        t_normalize = self.track("normalize", tf.function(normalize, reduce_retracing=True))
        t_scale = self.track("scale", tf.function(scale))
        t_hot = self.track("hot_graph", tf.function(eager_hot), python_function=eager_hot)
        t_accumulate = self.track("accumulate", tf.function(accumulate))
        v32 = tf.ones([3, 5])
        v64 = tf.ones([3, 5], tf.float64)
        hot_v = tf.fill([16], 0.5)
        self.hot_calls = 0
        for i, (batch, lr) in enumerate(STEP_SCHEDULE):
            self.iteration = i
            if self.params["profile"] and i == PROFILED[0]:
                self.profile_start(tf)
            x = tf.random.stateless_normal([batch, 8], seed=[i, 0])
            t_step(self, "first" if i == 0 else ("shape" if i % 2 == 0 else "python_value"), x, lr)
            lam = self.track(f"lambda_{i}", tf.function(lambda t: tf.reduce_sum(t * t)))  # lambda line
            lam(self, "first" if i == 0 else "new_function_object", v32)
            t_project(self, "first" if i == 0 else "cached", x)
            t_normalize(self, {0: "first", 2: "shape"}.get(i, "cached"), x)
            t_scale(self, {0: "first", ITERATIONS // 2: "dtype"}.get(i, "cached"),
                    v32 if i < ITERATIONS // 2 else v64)
            t_accumulate(self, "first,variable_creation" if i == 0 else "cached", v32)
            eager_hot(hot_v)
            self.hot_calls += 1
            t_hot(self, "first" if i == 0 else "cached", hot_v)
            if self.params["profile"] and i == PROFILED[-1]:
                self.profile_stop(tf)
        self.iteration = None
        batch, lr = STEP_RETURN
        t_step(self, "python_value", tf.random.stateless_normal([batch, 8], seed=[ITERATIONS, 0]), lr)

    def profile_start(self, tf: Any) -> None:
        self.window = [time.time_ns(), 0]
        tf.profiler.experimental.start(str(self.logdir / "profile"))
        self.profiling = True

    def profile_stop(self, tf: Any) -> None:
        tf.profiler.experimental.stop()
        self.profiling = False
        if self.window:
            self.window[1] = time.time_ns()

    def keras(self, tf: Any) -> None:
        import numpy as np
        keras = tf.keras
        rs = np.random.RandomState(5)
        x = rs.rand(KERAS_SAMPLES, 8).astype("float32")
        y = rs.randint(0, 3, size=(KERAS_SAMPLES,)).astype("int32")
        model = keras.Sequential([keras.Input(shape=(8,)), keras.layers.Dense(16, activation="relu"),
                                  keras.layers.Dense(3)])
        model.compile(optimizer=keras.optimizers.Adam(0.01),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        steps = 0
        for batch in KERAS_BATCHES:
            model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)  # keras fit line
            steps += KERAS_SAMPLES // batch
        self.keras_fit_steps = steps
        psteps = 0
        for batch in KERAS_BATCHES:
            model.predict(x, batch_size=batch, verbose=0)  # keras predict line
            psteps += KERAS_SAMPLES // batch
        self.keras_predict_steps = psteps
        self.track_keras(model, steps, psteps)

    def track_keras(self, model: Any, fit_steps: int, predict_steps: int) -> None:
        """The Keras step functions, found where Keras keeps them. Which of them Python
        called, and how often each trace, is taken from the dump afterwards
        (``_keras_calls``) and checked against the steps Keras ran."""
        for kind, holder, steps in (("keras_train", model.train_function, fit_steps),
                                    ("keras_predict", model.predict_function, predict_steps)):
            for fn in _tf_functions_in(holder):
                t = self.track(f"{kind}_{fn.python_function.__name__}", fn, kind=kind,
                               top_level=None)
                t.steps = steps
                names = t.concrete_names()
                for name in sorted(names, key=_uid):
                    specs = t.specs_of(names[name])
                    why = _cause_from_specs(t.traces[-1]["args"], specs) if t.traces else "first"
                    t.add_trace(name, names[name], why, None)

    def truth(self, tf: Any) -> dict[str, Any]:
        import platform
        try:
            import keras
            keras_version = keras.__version__
        except (ImportError, AttributeError):
            keras_version = ""
        me = os.path.abspath(__file__)
        return {
            "cell": self.name, "params": self.params, "tensorflow_version": tf.__version__,
            "keras_version": keras_version, "python_version": platform.python_version(),
            "workload_file": me,
            "functions": [t.truth() for t in self.tracked],
            "eager": {"hot_line": f"{me}:{_line_of('# eager hot line')}",
                      "hot_calls": self.hot_calls, "hot_ops_per_call": HOT_OPS,
                      "hot_graph_key": "hot_graph"},
            "lines": {"lambda": f"{me}:{_line_of('# lambda line')}",
                      "call_site": f"{me}:{_line_of('# tracked call line')}",
                      "keras_fit": f"{me}:{_line_of('# keras fit line')}",
                      "keras_predict": f"{me}:{_line_of('# keras predict line')}"},
            "profile": {"iterations": list(PROFILED) if self.params["profile"] else [],
                        "window": self.window},
        }


def _tf_functions_in(holder: Any, depth: int = 0) -> list[Any]:
    """The tf.function objects behind a Keras step function: ``holder`` itself if it is
    one, else those its closure holds (Keras 3 wraps them in plain closures), outermost
    first."""
    if hasattr(holder, "experimental_get_tracing_count"):
        inner = _tf_functions_in(holder.python_function, depth + 1) if depth < 4 else []
        return [holder, *inner]
    found: list[Any] = []
    for cell in getattr(holder, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if depth < 4 and (callable(value)):
            for fn in _tf_functions_in(value, depth + 1):
                if all(fn is not f for f in found):
                    found.append(fn)
    return found


def _child_main(name: str, outdir: str) -> int:
    scenario = _Scenario(name, outdir)
    truth = scenario.run()
    (pathlib.Path(outdir) / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True))
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cell", nargs="?")
    parser.add_argument("outdir", nargs="?")
    parser.add_argument("--list", action="store_true", help="list the cells and exit")
    parser.add_argument("--all", metavar="ROOT", help="run every cell into ROOT/<cell>")
    parser.add_argument("--python", default=sys.executable, help="the child's Python")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child_main(args.cell, args.outdir)
    if args.list:
        for name, p in CELLS.items():
            print(f"{name:28s} {p['mode']:15s} profile={int(p['profile'])} log={int(p['log'])}")
        return 0
    todo = [(c, pathlib.Path(args.all) / c) for c in CELLS] if args.all else [(args.cell, args.outdir)]
    if not args.all and (not args.cell or not args.outdir):
        parser.error("CELL and OUTDIR are required (or --list, --all ROOT)")
    for cell, out in todo:
        try:
            truth = make_cell(cell, pathlib.Path(out), args.python)
        except CellFailed as e:
            sys.stderr.write(f"workloads: {e}\n")
            return 1
        print(f"{cell}: TF {truth['tensorflow_version']} {truth['wall_seconds']} s, "
              f"{len(truth['functions'])} function objects, "
              f"{truth.get('ddr', {}).get('executions')} executions", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
