"""``tb-opmode record`` of jobs a new user writes first (``tests/record_jobs.py``, this venv's
TF): tf.functions traced again (a changed Python number, a new shape, a new function
object; one with an input_signature), a job of eager ops only, and a loop whose step
builds its layers on its first call.

The truth is the job's own: each tf.function's ``experimental_get_tracing_count()`` and the
calls it made, printed by the job; TF's log of the run, for the nodes a function's
executor instantiated. Out: ``functions`` names each function's traces, calls and causes;
a function grappler emptied (``x * 1``) is counted (it ran no op), not warned about as
uncounted; a dump of a job that built no graph is not warned about as still being written;
the step's first call, traced twice for its variables, is one tf.function object from TF's
log alone, with TF 2.13's (no scope in its keys) as with 2.21's.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main

from .conftest import needs_tensorflow

ROOT = Path(__file__).resolve().parent.parent
JOBS = str(ROOT / "tests" / "record_jobs.py")
PY = sys.executable


def _record(logdir: Path, name: str, level: str, job: str) -> subprocess.CompletedProcess[str]:
    needs_tensorflow()
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TB_OPMODE_CACHE": "off"}
    return subprocess.run([PY, "-m", "tb_opmode.cli", "record", str(logdir), "--name", name,
                           "--evidence", level, "--", PY, JOBS, job], env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def _cli(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    assert main(list(args), out, err) == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """(run directory, the job's stdout) of ``retrace`` at ``kernels`` and ``calls``, of
    ``eager`` at ``calls`` and of ``loop`` at ``kernels``, each recorded once."""
    logdir = tmp_path_factory.mktemp("record") / "logs"
    runs = {}
    for job, level in (("retrace", "kernels"), ("retrace", "calls"), ("eager", "calls"), ("loop", "kernels")):
        proc = _record(logdir, f"{job}-{level}", level, job)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[f"{job}-{level}"] = (logdir / f"{job}-{level}", proc.stdout)
    return runs


def _truth(stdout: str) -> dict[str, list[int]]:
    """Python function -> [traces, calls], as the job counted them."""
    (line,) = [x for x in stdout.splitlines() if x.startswith("traces and calls ")]
    truth: dict[str, list[int]] = json.loads(line.removeprefix("traces and calls "))
    return truth


@pytest.mark.parametrize("level", ["kernels", "calls"])
def test_functions_has_each_functions_traces_calls_and_causes(
        recorded: dict[str, tuple[Path, str]], level: str) -> None:
    rundir, stdout = recorded[f"retrace-{level}"]
    out, _err = _cli("functions", str(rundir), "--format", "json")
    (run,) = json.loads(out)["runs"]
    got = {f["python_name"]: [f["traces"], f["calls"]] for f in run["tf_functions"]}
    assert got == _truth(stdout)
    causes = {f["python_name"]: f["causes"] for f in run["tf_functions"]}
    assert causes == {"scale": {"python_value": 3}, "shapes": {"shape": 3},
                      "inner": {"new_function_object": 2}, "signed": {}}


@pytest.mark.parametrize("level", ["kernels", "calls"])
def test_each_trace_has_the_time_it_took(recorded: dict[str, tuple[Path, str]], level: str) -> None:
    """record times each trace (TF's line to the end of its graph's building): every trace
    the job made has a time, and together they are TF's own count of its graph building
    time (its monitoring counter, which the job printed; TF's timer starts a little
    before the line and ends after the function is cached: ours is at most that)."""
    rundir, stdout = recorded[f"retrace-{level}"]
    (line,) = [x for x in stdout.splitlines() if x.startswith("graph building seconds ")]
    tf_says = float(line.removeprefix("graph building seconds "))
    out, _err = _cli("functions", str(rundir), "--format", "json")
    (run,) = json.loads(out)["runs"]
    traces = [t for f in run["tf_functions"] for t in f["trace_list"]]
    assert sum(traced for traced, _calls in _truth(stdout).values()) == len(traces)
    assert all(t["tracing_s"] and t["tracing_from"] in ("record", "profile") for t in traces), traces
    timed = sum(t["tracing_s"] for t in traces if t["tracing_from"] == "record")
    profiled = sum(t["tracing_s"] for t in traces if t["tracing_from"] == "profile")
    assert 0.5 * tf_says - profiled <= timed <= tf_says + 0.001, (timed, profiled, tf_says)


def _instantiated(rundir: Path) -> dict[str, list[str]]:
    """Per function Python called, the kernels TF's log says its executor instantiated
    (at its first call: later calls reuse them)."""
    log = (rundir / "stderr.log").read_text(errors="replace")
    out: dict[str, list[str]] = {}
    for function, body in re.findall(r"Entering eager executing local operation '(__inference_\w+)'(.*?)"
                                     r"Exiting eager executing local operation", log, re.S):
        kernels = re.findall(r"Instantiating kernel for node: \{\{node [^}]+\}\} = (\w+)\[", body)
        out.setdefault(function, []).extend(kernels)
    return out


def _calls(rundir: Path, function: str) -> int:
    return (rundir / "stderr.log").read_text(errors="replace").count(f"Executing op {function} in device")


def test_a_function_grappler_emptied_is_counted_not_warned_about(
        recorded: dict[str, tuple[Path, str]]) -> None:
    """``scale(t, 1)``: grappler removes ``x * 1``, and TF's log shows that trace's executor
    instantiating its argument and its return value only. It ran no op of ours: its graph
    count is known (none), not "not counted"."""
    rundir, _stdout = recorded["retrace-kernels"]
    kernels = _instantiated(rundir)
    (emptied,) = [f for f, ks in kernels.items() if ks and set(ks) <= {"NoOp", "_Arg", "_Retval"}]
    assert emptied.startswith("__inference_scale_")
    out, err = _cli("summary", str(rundir), "--format", "json")
    (run,) = json.loads(out)["runs"]
    assert not [w for w in run["warnings"] if emptied in w], run["warnings"]
    # each call ran the Mul nodes its executor instantiated (grappler folds x * 0 in TF 2.13)
    (mul,) = [r for r in run["op_types"] if r["op_type"] == "Mul"]
    assert mul["graph"]["executions"] == sum(ks.count("Mul") * _calls(rundir, f) for f, ks in kernels.items())


def test_an_eager_only_jobs_dump_is_not_said_to_be_still_writing(
        recorded: dict[str, tuple[Path, str]]) -> None:
    rundir, stdout = recorded["eager-calls"]
    calls = _eager_truth(stdout)["calls"]
    (traces,) = rundir.glob("tfdbg_events.*.graph_execution_traces")
    assert traces.stat().st_size == 0  # no graph ran
    out, err = _cli("summary", str(rundir), "--format", "json")
    doc: dict[str, Any] = json.loads(out)
    assert doc["warnings"] == [] and err == ""
    (run,) = doc["runs"]
    assert {r["op_type"]: r["eager"]["executions"] for r in run["op_types"]
            if r["op_type"] in ("MatMul", "Relu")} == {"MatMul": calls, "Relu": calls}
    assert "No tf.function traces in the dump." in _cli("functions", str(rundir))[0]


def test_a_line_of_few_eager_ops_called_many_times_is_told_to_move_its_loop_into_a_graph(
        recorded: dict[str, tuple[Path, str]]) -> None:
    """The eager job's helper issues 3 ops per call and is called 12 times from a loop: too
    few ops for a tf.function around the helper alone; the advice is the loop that calls it,
    with the helper's calls and ops per call as the job counted them."""
    rundir, stdout = recorded["eager-calls"]
    truth = _eager_truth(stdout)
    (run,) = json.loads(_cli("summary", str(rundir), "--format", "json")[0])["runs"]
    top = run["eager_sites"][0]
    assert top["user_location"].endswith("record_jobs.py:" + str(_line_of("few eager ops, called from a loop")))
    assert top["executions"] == truth["calls"] * truth["ops_per_call"]
    (advice,) = [a for a in top["advice"] if "runs all those calls as one graph" in a]
    assert f"issues {truth['ops_per_call']} eager op(s) per call and ran {truth['calls']} times" in advice
    assert "the code that calls layer" in advice


def test_a_job_that_calls_no_tf_function_has_its_eager_work_profiled(
        recorded: dict[str, tuple[Path, str]]) -> None:
    """No step to count: the recording profiles a window of the job's eager work instead,
    so its eager lines are ranked by time, the helper's line first with its profiled ops."""
    rundir, _stdout = recorded["eager-calls"]
    assert list(rundir.glob("plugins/profile/*/*.xplane.pb")), sorted(p.name for p in rundir.rglob("*"))
    (run,) = json.loads(_cli("summary", str(rundir), "--format", "json")[0])["runs"]
    top = run["eager_sites"][0]
    assert top["user_location"].endswith("record_jobs.py:" + str(_line_of("few eager ops, called from a loop")))
    assert top["time_ns"] and top["profiled_executions"] > 0, top


def test_an_eager_window_and_the_steps_window_each_keep_their_profile(tmp_path: Path) -> None:
    """A job that works eagerly past the eager window's start, then calls a tf.function:
    the eager window's profile, ended by the first call, and the steps' both stay (TF names
    a profile's directory after the second it stopped in; the eager one is set aside)."""
    proc = _record(tmp_path / "logs", "late", "kernels", "eager_then_steps")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rundir = tmp_path / "logs" / "late"
    (process,) = json.loads((rundir / "manifest.json").read_text())["processes"]
    assert process["eager_profile"]["first_step"] == 0 and process["profile"]["first_step"] == 2
    profiles = sorted(p.parent.name for p in rundir.glob("plugins/profile/*/*.xplane.pb"))
    assert len(profiles) == 2 and sum(name.endswith("_eager") for name in profiles) == 1, profiles
    (run,) = json.loads(_cli("summary", str(rundir), "--format", "json")[0])["runs"]
    assert len(run["sources"]["profile"]) == 2


def _eager_truth(stdout: str) -> dict[str, int]:
    """The eager job's helper: its calls and ops per call, as the job counted them."""
    (line,) = [x for x in stdout.splitlines() if x.startswith("eager layer ")]
    truth: dict[str, int] = json.loads(line.removeprefix("eager layer "))
    return truth


def _line_of(marker: str) -> int:
    """The line of tests/record_jobs.py that holds ``marker``."""
    lines = Path(JOBS).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


def _step_keys(rundir: Path) -> list[str]:
    """The key of each of TF's messages for a new trace of ``step``, its address and the
    scope TF 2.21 prints (variable creation allowed or not) left out (TF 2.21 prints a key
    over several lines, TF 2.13 on one, with no scope)."""
    text = (rundir / "tf_python.log").read_text(errors="replace")
    messages = text.split("Level 1:tensorflow:Creating new FuncGraph for Python function ")
    return [re.sub(r", scope_type=<ScopeType\.\w+: \d+>", "", re.sub(r"^<function \S+ at 0x[0-9a-f]+>", "", m))
            for m in messages if re.match(r"<function \S+\.step at 0x", m)]


def test_a_first_trace_that_created_variables_is_one_object_from_the_log_alone(
        recorded: dict[str, tuple[Path, str]]) -> None:
    """The loop's ``step`` is made once and called 8 times with the same tensors; it builds
    its layers on its first call, which TF traces twice with the same key (TF 2.13 through
    another wrapper, at another address, and with no scope printed). From the log alone
    (``kernels``): one object, no cause, the first trace created variables; TF 2.13's run
    said a new tf.function object, and to hoist it out of a loop."""
    rundir, _stdout = recorded["loop-kernels"]
    keys = _step_keys(rundir)
    assert len(keys) == 2 and keys[0] == keys[1], keys
    out, _err = _cli("functions", str(rundir), "--format", "json")
    (run,) = json.loads(out)["runs"]
    (step,) = [f for f in run["tf_functions"] if f["python_name"] == "step"]
    assert (step["traces"], step["objects"], step["causes"], step["advice"]) == (2, 1, {}, []), step
    assert step["calls"] == 8
    assert "first trace created variables" in step["trace_list"][1]["note"], step
