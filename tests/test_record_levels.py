"""``tb-opmode record`` on real TensorFlow jobs (``tests/record_jobs.py``, this venv's TF):
a Keras ``fit`` and a custom loop at each level, Ctrl-C, a failing job, the Python API.

Each level leaves what it says: ``kernels`` no dump, ``calls`` a NO_TENSOR dump, ``full`` a
FULL_HEALTH one; every level a profile of the window of steps (calls of the outermost
tf.function), TF's line per new trace, the log of the modules we read, the manifest. Where
there is a dump, our counts equal TensorFlow's ``DebugDataReader``'s. The NO_TENSOR run
keeps grappler's MatMul fusion (the job's own kernels), the FULL_HEALTH run loses it, as
TF's own log says.

A ``kernels`` run (no dump, no line per node execution) counts eager ops and function
calls exactly (TF's ``execute`` lines) and graph ops per call x calls: checked against the
``calls`` run of the same job, whose log also has TF's ``executor`` and function-runtime
lines (the user's ``TF_CPP_VMODULE``, which ``record`` keeps), read by the truth matrix's
own checker (``tests/matrix/truth.py``, no code of the product's), and against
``DebugDataReader``. Each run says the evidence level that made it, and the ``full`` run
that its fusions are not the job's, naming the fused kernels of the ``kernels`` run.
"""
from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.traces_causes import NOT_RECORDED
from tb_opmode.capture.summary import ROWS
from tb_opmode.cli import main

from .conftest import ddr_counts, needs_tensorflow
from .matrix.truth import parse_log

ROOT = Path(__file__).resolve().parent.parent
JOBS = str(ROOT / "tests" / "record_jobs.py")
PY = sys.executable
# The outermost tf.function a job calls once per step (Keras 3, Keras 2, the loop's own).
STEP_FUNCTIONS = {"fit": ("multi_step_on_iterator", "train_function"), "loop": ("step",)}
# The user's own TF_CPP_VMODULE at the calls level: what the truth checker reads besides
# ``execute`` and ``op_kernel`` (a line per node execution, the eager wrappers' runs).
TRUTH_VMODULE = "executor=1,process_function_library_runtime=1"


def _env() -> dict[str, str]:
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TB_OPMODE_CACHE": "off"}


def _record(logdir: Path, name: str, level: str, *job: str,
            extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    needs_tensorflow()
    return subprocess.run([PY, "-m", "tb_opmode.cli", "record", str(logdir), "--name", name,
                           "--evidence", level, "--", PY, JOBS, *job], env={**_env(), **(extra or {})},
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def _summary(rundir: Path) -> dict[str, Any]:
    out = io.StringIO()
    assert main(["summary", str(rundir), "--format", "json"], out, io.StringIO()) == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def _manifest(rundir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((rundir / "manifest.json").read_text())
    return doc


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, Any]]:
    """Each job at each level, recorded once: (run directory, the finished process)."""
    logdir = tmp_path_factory.mktemp("record") / "logs"
    runs = {}
    for job in ("fit", "loop"):
        for level in ("kernels", "calls", "full"):
            extra = {"TF_CPP_VMODULE": TRUTH_VMODULE} if level == "calls" else {}
            proc = _record(logdir, f"{job}-{level}", level, job, extra=extra)
            assert proc.returncode == 0, proc.stderr[-3000:]
            runs[job, level] = (logdir / f"{job}-{level}", proc)
    return runs


CELLS = [(job, level) for job in ("fit", "loop") for level in ("kernels", "calls", "full")]


@pytest.mark.parametrize(("job", "level"), CELLS)
def test_each_level_leaves_its_evidence(recorded: dict[tuple[str, str], tuple[Path, Any]],
                                        job: str, level: str) -> None:
    rundir, proc = recorded[job, level]
    doc = _manifest(rundir)
    (process,) = doc["processes"]
    assert doc["evidence"] == level and doc["exit_status"] == 0 and process["recording"]
    assert doc["tensorflow_version"] == process["tensorflow_version"] and process["problems"] == []
    # the window: steps 2 to 4 of the outermost tf.function, each of the job's 8 steps seen
    assert process["profile"]["first_step"] == 2 and process["profile"]["last_step"] == 4
    assert process["steps_seen"] == 8
    # one profile, and one more where the job had called no tf.function a second after
    # TF's import (a slow machine building the model): that of its eager work then
    assert len(list(rundir.glob("plugins/profile/*/*.xplane.pb"))) == 1 + ("eager_profile" in process)
    # TF's line for each new trace names the step function
    traces = (rundir / "tf_python.log").read_text()
    assert traces.startswith("Level 1:tensorflow:Creating new FuncGraph for Python function ")
    assert any(f"<function {name} " in traces or f".{name} at " in traces for name in STEP_FUNCTIONS[job])
    # the dump of the level, or none
    dumps = {p.name.rsplit(".", 1)[-1] for p in rundir.glob("tfdbg_events.*")}
    assert dumps == (set() if level == "kernels" else
                     {"metadata", "source_files", "stack_frames", "graphs", "execution",
                      "graph_execution_traces"})
    assert doc["dump_mode"] == {"kernels": None, "calls": "NO_TENSOR", "full": "FULL_HEALTH"}[level]
    # the log of the modules we read, kept whole in the run and off the terminal
    log = (rundir / "stderr.log").read_text(errors="replace")
    assert "Executing op " in log and "Instantiating kernel for node" in log
    assert ("Process node: " in log) == (level != "kernels")  # calls: the user's TRUTH_VMODULE
    if level == "calls":
        # the user's modules kept beside ours
        assert set(doc["environment"]["set_by_record"]["TF_CPP_VMODULE"].split(",")) == \
            {*TRUTH_VMODULE.split(","), "execute=1", "op_kernel=1", "xla_ops=1"}
    assert "Executing op " not in proc.stderr and "Instantiating kernel" not in proc.stderr
    assert f"{job} done" in proc.stdout and f"{job} done" in (rundir / "stdout.log").read_text()
    assert f"run {rundir.name} " in proc.stdout and "tensorboard --logdir" in proc.stdout


@pytest.mark.parametrize(("job", "level"), [c for c in CELLS if c[1] != "kernels"])
def test_counts_equal_debug_data_readers(recorded: dict[tuple[str, str], tuple[Path, Any]],
                                         job: str, level: str) -> None:
    rundir, _proc = recorded[job, level]
    eager, graph, functions = ddr_counts(rundir)
    (run,) = _summary(rundir)["runs"]
    ours_eager = Counter({r["op_type"]: r["eager"]["executions"] for r in run["op_types"]})
    ours_graph = Counter({r["op_type"]: r["graph"]["executions"] for r in run["op_types"]})
    assert +ours_eager == eager and +ours_graph == graph
    assert {f["name"]: f["calls"] for f in run["functions"]} == dict(functions)


@pytest.mark.parametrize("job", ["fit", "loop"])
def test_the_no_tensor_run_keeps_the_fusion_the_full_health_run_loses(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str) -> None:
    """Dense+ReLU's MatMul, BiasAdd and Relu run as one fused kernel in the job (NO_TENSOR
    reads no tensor) and as three with a FULL_HEALTH dump: TF's log says which."""
    def graph_kernels(level: str) -> set[str]:
        (run,) = _summary(recorded[job, level][0])["runs"]
        return {k["name"] for r in run["op_types"] if r["op_type"] in ("MatMul", "BiasAdd", "Relu")
                for k in r["graph"]["kernels"] if k["evidence"] == "log"}

    assert any("FusedMatMul" in k for k in graph_kernels("calls")), graph_kernels("calls")
    assert not any("Fused" in k for k in graph_kernels("full")), graph_kernels("full")


def test_ctrl_c_stops_the_job_and_leaves_a_readable_run(tmp_path: Path) -> None:
    needs_tensorflow()
    proc = subprocess.Popen([PY, "-m", "tb_opmode.cli", "record", str(tmp_path / "logs"), "--name", "int",
                             "--evidence", "calls", "--", PY, JOBS, "forever"], env=_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("step 6"):
            break
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode in (-signal.SIGINT, 130), err[-3000:]
    rundir = tmp_path / "logs" / "int"
    doc = _manifest(rundir)
    assert doc["signal"] == "SIGINT" and doc["exit_status"] == 130
    (process,) = doc["processes"]
    assert process["steps_seen"] >= 6 and process["profile"]["last_step"] == 4
    (run,) = _summary(rundir)["runs"]
    (function,) = run["functions"]
    assert function["calls"] >= 6 and run["counts_from"] == "debugger"


def test_a_failing_job_leaves_a_readable_run_and_its_status(tmp_path: Path) -> None:
    proc = _record(tmp_path / "logs", "fail", "kernels", "fail")
    assert proc.returncode == 1
    rundir = tmp_path / "logs" / "fail"
    assert "RuntimeError: the job failed after its loop" in (rundir / "stderr.log").read_text()
    assert "RuntimeError: the job failed after its loop" in proc.stderr
    assert _manifest(rundir)["exit_status"] == 1
    (run,) = _summary(rundir)["runs"]
    assert run["counts_from"]


def test_the_python_api_records_a_block(tmp_path: Path) -> None:
    """TF imported inside the block: the C++ log settings take effect; imported before it:
    a warning says they cannot, and the rest is recorded."""
    needs_tensorflow()
    for when in ("late", "early"):
        proc = subprocess.run([PY, JOBS, "api", str(tmp_path / "logs"), when], env=_env(),
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rundir = tmp_path / "logs" / f"api-{when}"
        doc = _manifest(rundir)
        assert doc["in_process"] and doc["evidence"] == "calls" and doc["exit_status"] == 0
        assert (rundir / "tf_python.log").read_text().count("Creating new FuncGraph") >= 1
        assert "loop done" in (rundir / "stdout.log").read_text() and "loop done" in proc.stdout
        log = (rundir / "stderr.log").read_text(errors="replace")
        assert ("Executing op " in log) == (when == "late")
        assert ("cannot take effect" in proc.stderr) == (when == "early")
        assert ("not_applied" in doc) == (when == "early")
        eager, graph, _functions = ddr_counts(rundir)
        (run,) = _summary(rundir)["runs"]
        assert sum(r["graph"]["executions"] for r in run["op_types"]) == sum(graph.values())
        assert sum(r["eager"]["executions"] for r in run["op_types"]) == sum(eager.values())


def _tfdbg_skipped_op_types() -> frozenset[str]:
    """The op types tfdbg's op callback ignores in eager mode (``dumping_callback.py``)."""
    from tensorflow.python.debug.lib.op_callbacks_common import OP_CALLBACK_SKIP_OPS
    return frozenset(op.decode() for op in OP_CALLBACK_SKIP_OPS)


def _takes_star_args(nodes: dict[str, Any]) -> bool:
    """Whether a step's nodes are a function traced from ``*args`` (tf.data's)."""
    return any(node.kernel == "_Arg" and re.fullmatch(r"args_\d+", name)
               for name, node in nodes.items())


def _graph_kernels(run: dict[str, Any]) -> Counter[str]:
    """Kernel -> graph executions in the row of the op it ran for (a fused kernel in the
    row of its pattern's first op only: the rows of the ops fused into it repeat it)."""
    out: Counter[str] = Counter()
    for row in run["op_types"]:
        for k in row["graph"]["kernels"]:
            base = k["name"].removeprefix("_MklNative").removeprefix("_Mkl").lstrip("_")
            head = base.removeprefix("Fused") if base.startswith("Fused") else base
            if head == row["op_type"]:
                out[k["name"]] += k["executions"]
    return out


# Kernels whose counts in the NO_TENSOR run are not the job's: its debug ops read
# constants (NO_TENSOR's) and identities grappler removes without them.
INSTRUMENTED = {"Const", "Identity"}
_NOT_OPS = {"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "NoOp", "_SOURCE", "_SINK"}


@pytest.mark.parametrize("job", ["fit", "loop"])
def test_a_kernels_run_counts_per_call_times_calls_as_tf_ran_them(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str) -> None:
    """Eager ops and function calls: DebugDataReader's counts of the same job (TF's log's for
    the op types tfdbg does not record). Graph: each
    kernel's executions (per call x calls) are the Process node lines of TF's log of the
    same job, every one with log or profile evidence, the job's fused MatMul among them."""
    (run,) = _summary(recorded[job, "kernels"][0])["runs"]
    truth_dir = recorded[job, "calls"][0]
    eager, _graph, functions = ddr_counts(truth_dir)
    # _EagerConst (a Python value made a tensor): the log shows it, tfdbg records none
    ours_eager = Counter({r["op_type"]: r["eager"]["executions"] for r in run["op_types"]
                          if r["op_type"] != "_EagerConst"})
    # tfdbg writes no execution record for the op types of its skip list (Identity, If, While,
    # ...): TF's log of the same job counts those (Keras 2's fit dispatches int64 Identity
    # ops eagerly; Keras 3's none).
    skipped = _tfdbg_skipped_op_types()
    runs = parse_log([truth_dir / "stderr.log"])
    logged = Counter(dispatch for dispatch, _kernel in runs.eager)
    eager = Counter({**{op: n for op, n in eager.items() if op not in skipped},
                     **{op: n for op, n in logged.items() if op in skipped}})
    assert +ours_eager == eager
    assert sorted(f["calls"] for f in run["functions"]) == sorted(functions.values())
    assert run["count_basis"]["eager"].startswith("exact")
    assert run["count_basis"]["graph"].startswith("per call x calls")
    truth = Counter({k: n for k, n in runs.graph_kernels.items()
                     if k not in _NOT_OPS and not k.startswith("Debug")})
    # tf.data runs its functions (a map's gathers, per batch) outside execute, so a kernels
    # run counts none of their nodes. Their steps are told by their arguments: tf.data
    # traces a function through a wrapper of ``*args`` (TF's structured_function), whose
    # _Arg nodes are args_0, args_1, ... (step ids do not tell: TF draws them all negative)
    tf_data = Counter(node.kernel for nodes in runs.steps.values() if _takes_star_args(nodes)
                      for node in nodes.values())
    truth -= tf_data
    ours = _graph_kernels(run)
    assert ours and {k: n for k, n in ours.items() if k not in INSTRUMENTED} == \
        {k: truth[k] for k in ours if k not in INSTRUMENTED}
    # what TF ran that the kernels run does not count: instrumented kernels, and what runs
    # once as the pipeline is built
    untold = {k: n for k, n in (truth - ours).items() if k not in INSTRUMENTED and n != 1}
    assert not untold, (untold, tf_data)
    evidence = {k["evidence"] for r in run["op_types"] for k in r["graph"]["kernels"]}
    assert evidence <= {"log", "profile"}, evidence
    fused = {k["name"] for r in run["op_types"] if r["op_type"] in ("MatMul", "BiasAdd", "Relu")
             for k in r["graph"]["kernels"]}
    assert any("FusedMatMul" in k for k in fused), fused
    assert fused & set(truth), (fused, truth)


_DATA_SEEN = re.compile(r"the profile saw (.+?) there in its window")
_DATA_MADE = re.compile(r"the run made (.+?); the profile's window saw none")


def _op_of_kernel(kernel: str) -> str:
    return kernel.removeprefix("_MklNative").removeprefix("_Mkl")


@pytest.mark.parametrize("job", ["fit", "loop"])
def test_a_kernels_run_names_the_tf_data_ops_it_does_not_count(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str) -> None:
    """tf.data runs a dataset's functions per element on its own threads, outside
    ``execute``: a kernels run cannot count them, and says so, naming the op types the
    profile saw there (each one TF's log of the same job shows tf.data running), or,
    where its window saw none (tf.data may prefetch a small dataset whole before it),
    the datasets of the run that run functions (each one the log shows dispatched). The
    loop has no dataset: nothing is said."""
    (run,) = _summary(recorded[job, "kernels"][0])["runs"]
    runs = parse_log([recorded[job, "calls"][0] / "stderr.log"])
    tf_data = {_op_of_kernel(node.kernel) for nodes in runs.steps.values()
               if _takes_star_args(nodes) for node in nodes.values()} - _NOT_OPS
    basis = run["count_basis"]["graph"]
    seen, made = _DATA_SEEN.search(basis), _DATA_MADE.search(basis)
    if job == "loop":
        assert seen is None and made is None and not tf_data, (basis, tf_data)
        return
    assert tf_data and (seen or made), basis
    if seen is not None:
        named = {part.split(" x")[0] for part in seen.group(1).split(", ")}
        assert named and named <= tf_data, (named, tf_data)
    else:
        dispatched = {dispatch for dispatch, _kernel in runs.eager}
        datasets = set(made.group(1).split(", ")) if made else set()
        assert datasets and datasets <= dispatched and all("Dataset" in d for d in datasets), \
            (datasets, dispatched)
    assert "record --evidence calls" in basis


@pytest.mark.parametrize(("job", "level"), CELLS)
def test_each_run_says_its_evidence_level(recorded: dict[tuple[str, str], tuple[Path, Any]],
                                          job: str, level: str) -> None:
    rundir, proc = recorded[job, level]
    (run,) = _summary(rundir)["runs"]
    dump = {"kernels": None, "calls": "NO_TENSOR", "full": "FULL_HEALTH"}[level]
    assert run["recording"]["evidence"] == level and run["recording"]["dump_mode"] == dump
    assert f"recorded with: tb-opmode record --evidence {level} ({dump or 'no dump'})" in proc.stdout
    assert bool(run["recording"]["note"]) == (level == "full")


@pytest.mark.parametrize("job", ["fit", "loop"])
def test_a_tensor_reading_dump_says_its_fusions_differ_naming_the_jobs(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str) -> None:
    """Summarised together, the full run names the fused kernels the kernels run of the
    same command ran; those are the kernels TF's log shows the kernels run instantiate."""
    logdir = recorded[job, "full"][0].parent
    out = io.StringIO()
    assert main(["summary", str(logdir), "--format", "json"], out, io.StringIO()) == 0
    runs = {r["run"]: r for r in json.loads(out.getvalue())["runs"]}
    full = runs[f"{job}-full"]["recording"]
    assert "FULL_HEALTH" in full["note"] and full["compared_with"] == f"{job}-kernels"
    logged = (logdir / f"{job}-kernels" / "stderr.log").read_text(errors="replace")
    assert full["fused_kernels"] and all(f"}} = {k}[" in logged for k in full["fused_kernels"])
    assert any("FusedMatMul" in k for k in full["fused_kernels"])
    assert not runs[f"{job}-calls"]["recording"]["note"] and not runs[f"{job}-kernels"]["recording"]["note"]


# What the loop job passes its step (``tests/record_jobs.py``): the key TF's log prints.
LOOP_STEP_ARGS = [{"name": "xb", "kind": "tensor", "dtype": "float32", "shape": [8, 8]},
                  {"name": "yb", "kind": "tensor", "dtype": "int32", "shape": [8]}]


@pytest.mark.parametrize(("job", "level"), CELLS)
def test_the_trace_log_is_one_of_the_runs_logs(recorded: dict[tuple[str, str], tuple[Path, Any]],
                                               job: str, level: str) -> None:
    """Record's ``tf_python.log`` (TF's line per new trace) is read at every level, a dump
    or none: the step function's traces carry the arguments TF's key printed, and
    ``functions`` lists them."""
    rundir, _proc = recorded[job, level]
    (run,) = _summary(rundir)["runs"]
    assert any(p.endswith("tf_python.log") for p in run["sources"]["logs"]), run["sources"]
    steps = [f for f in run["tf_functions"] if f["python_name"] in STEP_FUNCTIONS[job]]
    assert steps and all(t["args"] for f in steps for t in f["trace_list"]), steps
    args = [a for f in steps for t in f["trace_list"] for a in t["args"]]
    assert all(a["dtype"] != NOT_RECORDED and a["shape"] != NOT_RECORDED for a in args), args
    if job == "loop":
        assert all(t["args"] == LOOP_STEP_ARGS for f in steps for t in f["trace_list"]), steps
        assert sum(f["calls"] for f in steps) == 8
    out = io.StringIO()
    assert main(["functions", str(rundir)], out, io.StringIO()) == 0
    assert all(f"{f['name']}: " in out.getvalue() or f"{f['name']} (" in out.getvalue() for f in steps)


_TRACE = re.compile(r"Creating new FuncGraph for Python function <function (\S+) at 0x[0-9a-f]+> "
                    r"\(key: ([^\n]*)\n((?:  [^\n]*\n)*)Output Type:")
_SCOPE = re.compile(r"scope_type=<ScopeType\.([A-Z_]+): \d+>")


def test_a_first_trace_that_created_variables_is_said_at_every_level(
        recorded: dict[tuple[str, str], tuple[Path, Any]]) -> None:
    """The loop's step builds its Dense layers on its first call: TF traces that call with
    variable creation allowed, then again without (the scope of its key, as this test reads
    TF's lines in ``tf_python.log``). Every level says the first trace created variables,
    no cause and one tf.function object: the ``kernels`` run from the log alone, where the
    second trace's line names another function object (TF's wrapper of that scope)."""
    for level in ("kernels", "calls", "full"):
        rundir, _proc = recorded["loop", level]
        text = (rundir / "tf_python.log").read_text(errors="replace")
        keys = [(s.group(1) if (s := _SCOPE.search(m.group(2))) else "", m.group(3))
                for m in _TRACE.finditer(text) if m.group(1).rsplit(".", 1)[-1] == "step"]
        if [scope for scope, _params in keys] != ["VARIABLE_CREATION", "NO_VARIABLE_CREATION"]:
            pytest.skip(f"this TensorFlow printed no scope of step's two traces: {keys}")
        assert keys[0][1] == keys[1][1], keys
        (run,) = _summary(rundir)["runs"]
        (step,) = [f for f in run["tf_functions"] if f["python_name"] == "step"]
        assert (step["traces"], step["objects"], step["causes"]) == (2, 1, {}), (level, step)
        again = step["trace_list"][1]
        assert again["changed"] == [] and "first trace created variables" in again["note"], (level, again)


@pytest.mark.parametrize("job", ["fit", "loop"])
def test_call_sites_are_the_jobs_lines_not_the_recordings(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str) -> None:
    """Under record every tf.function call passes through our wrapper of its ``__call__``:
    the call sites the ledger and ``explain`` show are the job's own lines all the same."""
    rundir, _proc = recorded[job, "calls"]
    (run,) = _summary(rundir)["runs"]
    sites = [s for f in run["tf_functions"] for t in f["trace_list"] for s in t["call_sites"]]
    assert sites and all(s.rpartition(":")[0] == JOBS for s in sites), sites
    out = io.StringIO()
    assert main(["explain", str(rundir), "MatMul", "--top", "50"], out, io.StringIO()) == 0
    assert f"{JOBS}:" in out.getvalue()
    assert os.path.join("tb_opmode", "capture", "") not in out.getvalue()


def _headline(text: str) -> list[str]:
    """The lines between a run's first line and its ``counts from:`` line."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("run "))
    end = next(i for i, line in enumerate(lines) if line.startswith("  counts from:"))
    return lines[first + 1:end]


@pytest.mark.parametrize(("job", "level"), CELLS)
def test_the_screen_record_prints_says_what_summary_says(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str, level: str) -> None:
    """Record's one screen cuts only the table: its answer in words is the one ``summary``
    gives from all the op types, and it counts the rows it left out."""
    rundir, proc = recorded[job, level]
    out = io.StringIO()
    assert main(["summary", str(rundir)], out, io.StringIO()) == 0
    assert _headline(proc.stdout) == _headline(out.getvalue())
    (run,) = _summary(rundir)["runs"]
    left = len(run["op_types"]) - ROWS
    assert (f"  ... {left} more op types: tb-opmode summary " in proc.stdout) == (left > 0)


def _ddr_eager_lines(rundir: Path, path: str) -> Counter[tuple[str, str]]:
    """(``path:line``, op type) -> eager executions, as DebugDataReader reads the dump: each
    execution filed under its stack's innermost frame in ``path`` (the job's own file)."""
    from tensorflow.python.debug.lib import debug_events_reader

    lines: Counter[tuple[str, str]] = Counter()
    with debug_events_reader.DebugDataReader(str(rundir)) as reader:
        reader.update()
        for execution in reader.executions():
            if execution.op_type.startswith("__"):
                continue  # a tf.function's call
            _host, frames = reader.read_execution_stack_trace(execution)
            mine = [f for f in frames if f[0] == path]
            lines[f"{mine[-1][0]}:{mine[-1][1]}" if mine else "", execution.op_type] += 1
    return lines


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, Any]]:
    """The MirroredStrategy fit at the levels without and with a dump (its replicas'
    eager ops come from threads of their own)."""
    logdir = tmp_path_factory.mktemp("record_mirrored") / "logs"
    runs = {}
    for level in ("kernels", "calls"):
        proc = _record(logdir, level, level, "mirrored_fit")
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs["mirrored_fit", level] = (logdir / level, proc)
    return runs


@pytest.mark.parametrize("job", ["fit", "loop", "mirrored_fit"])
def test_a_kernels_run_names_the_lines_that_issue_eager_ops_as_the_dump_does(
        recorded: dict[tuple[str, str], tuple[Path, Any]], job: str, request: pytest.FixtureRequest) -> None:
    """With no dump, the job counts each eager op by the user's line as it dispatches it:
    per (line, op type), the counts equal those DebugDataReader finds in the ``calls`` run
    of the same job (the op types tfdbg skips left out), and no op type is counted more
    often than TF's own log says it ran eagerly."""
    if job == "mirrored_fit":
        recorded = request.getfixturevalue("mirrored")
    kernels, _proc = recorded[job, "kernels"]
    (run,) = _summary(kernels)["runs"]
    ours: Counter[tuple[str, str]] = Counter()
    for site in run["eager_sites"]:
        for op_type, n in site["op_types"].items():
            ours[site["user_location"], op_type] += n
    skipped = _tfdbg_skipped_op_types()
    calls, _proc = recorded[job, "calls"]
    truth = _ddr_eager_lines(calls, JOBS)
    assert any(line for line, _op in truth), truth  # the job's own lines issue eager ops
    assert +Counter({k: n for k, n in ours.items() if k[1] not in skipped}) == +truth
    logged = Counter(dispatch for dispatch, _kernel in parse_log([kernels / "stderr.log"]).eager)
    per_op: Counter[str] = Counter()
    for (_line, op_type), n in ours.items():
        per_op[op_type] += n
    assert all(n <= logged[op_type] for op_type, n in per_op.items()), (per_op, logged)
    # each line timed by the job's clock around its dispatches, and ranked by that time
    times = [site["time_ns"] for site in run["eager_sites"]]
    assert all(site["time_source"] == "dispatch" for site in run["eager_sites"])
    assert all(t is not None and t > 0 for t in times) and times == sorted(times, reverse=True), times
