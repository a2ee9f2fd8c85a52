"""``tb-opmode record`` without TensorFlow: bad input is one line before anything runs, and a
job passes through unchanged (its streams teed and kept apart, its exit status, its
working directory, a terminal, Ctrl-C and SIGTERM, the user's own sitecustomize).

The jobs here are Python without TensorFlow (``tests/record_jobs.py``), so the recording
attaches to nothing: what is tested is the command around the job. The TF tier
(``tests/test_record_levels.py``) records real TensorFlow jobs.
"""
from __future__ import annotations

import io
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
JOBS = str(ROOT / "tests" / "record_jobs.py")
PY = sys.executable


def _record_in_process(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["record", *args], out, err)
    return code, out.getvalue(), err.getvalue()


def _env(**extra: str) -> dict[str, str]:
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TB_OPMODE_CACHE": "off", **extra}


def _record(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "tb_opmode.cli", "record", *args], env=kwargs.pop("env", _env()),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, **kwargs)


def _only_run(logdir: Path) -> Path:
    (rundir,) = [p for p in logdir.iterdir() if p.is_dir()]
    return rundir


def _manifest(rundir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((rundir / "manifest.json").read_text())
    return doc


BAD_INPUT = [
    (["--evidence", "tensors", "--", PY, "-c", "pass"], "--evidence: unknown level 'tensors'"),
    (["--steps", "two", "--", PY, "-c", "pass"], "--steps: expected A:B"),
    (["--steps", "0:2", "--", PY, "-c", "pass"], "--steps: expected 1 <= A <= B"),
    (["--steps", "4:2", "--", PY, "-c", "pass"], "--steps: expected 1 <= A <= B"),
    (["--name", "a/b", "--", PY, "-c", "pass"], "--name: a run name is one directory name"),
    (["--"], "no command after '--'"),
    ([PY, "-c", "pass"], "no command after '--'"),
    (["--", "no-such-command-tb-opmode"], "no-such-command-tb-opmode: command not found"),
    (["--evidnce", "calls", "--", PY], "unrecognized arguments: --evidnce calls"),
]


@pytest.mark.parametrize(("args", "says"), BAD_INPUT, ids=[s for _a, s in BAD_INPUT])
def test_bad_input_is_one_line_before_anything_runs(tmp_path: Path, args: list[str], says: str) -> None:
    logdir = tmp_path / "logs"
    code, out, err = _record_in_process(str(logdir), *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("tb-opmode: error: ") and says in err, err
    assert not logdir.exists() or not any(logdir.iterdir())


def test_no_logdir_is_one_line(tmp_path: Path) -> None:
    code, _out, err = _record_in_process("--", PY, "-c", "pass")
    assert code == 2 and err.count("\n") == 1 and "LOGDIR" in err, err


def test_a_logdir_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _out, err = _record_in_process(str(blocker / "logs"), "--", PY, "-c", "pass")
    assert code == 2 and err.count("\n") == 1, err
    assert f"{blocker / 'logs'}: cannot create LOGDIR" in err
    code, _out, err = _record_in_process(str(blocker), "--", PY, "-c", "pass")  # LOGDIR is the file
    assert code == 2 and err == f"tb-opmode: error: {blocker}: LOGDIR is a file, not a directory\n", err
    code, _out, err = _record_in_process("s3://bucket/logs", "--", PY, "-c", "pass")
    assert code == 2 and "record writes a local directory" in err


def test_a_run_name_taken_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "logs" / "run").mkdir(parents=True)
    code, _out, err = _record_in_process(str(tmp_path / "logs"), "--name", "run", "--", PY, "-c", "pass")
    assert code == 2 and "already exists; choose another --name" in err, err


def test_the_job_passes_through_with_its_streams_status_and_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = _record(str(tmp_path / "logs"), "--", PY, JOBS, "streams", "3", cwd=work)
    assert proc.returncode == 3, proc.stderr
    # teed, each stream to its own: the job's line on our stdout, its other one on stderr
    assert f"out False {work}\n" in proc.stdout and "err False" not in proc.stdout
    assert "err False\n" in proc.stderr and "out False" not in proc.stderr
    rundir = _only_run(tmp_path / "logs")
    assert (rundir / "stdout.log").read_text() == f"out False {work}\n"
    assert (rundir / "stderr.log").read_text() == "err False\n"
    doc = _manifest(rundir)
    assert doc["exit_status"] == 3 and doc["signal"] is None
    assert doc["command"] == [PY, JOBS, "streams", "3"] and doc["cwd"] == str(work)
    assert doc["evidence"] == "kernels" and doc["steps"] == [2, 4]
    assert doc["environment"]["set_by_record"]["TF_CPP_VMODULE"] == "execute=1,op_kernel=1,xla_ops=1"
    assert doc["started"] and doc["ended"] and doc["duration_s"] > 0 and doc["cpu_s"] > 0
    # the end: the tab's line, and the job's status
    assert f"tensorboard --logdir {tmp_path / 'logs'}" in proc.stdout
    assert "exited with status 3" in proc.stderr


def test_a_reader_of_our_output_gone_away_does_not_change_the_status(tmp_path: Path) -> None:
    """``tb-opmode record ... | head -1``: the job and its run are whole, the status the job's."""
    proc = subprocess.Popen([PY, "-m", "tb_opmode.cli", "record", str(tmp_path / "logs"), "--",
                             PY, JOBS, "streams", "5"], env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.close()
    assert proc.wait(timeout=120) == 5
    rundir = _only_run(tmp_path / "logs")
    assert (rundir / "stdout.log").read_text().startswith("out False")
    assert _manifest(rundir)["exit_status"] == 5


def test_a_shell_script_that_runs_python_is_a_command(tmp_path: Path) -> None:
    script = tmp_path / "train.sh"
    script.write_text(f"#!/bin/sh\ncd /\nexec {PY} {JOBS} streams 0\n")
    script.chmod(0o755)
    proc = _record(str(tmp_path / "logs"), "--name", "sh", "--", str(script))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "logs" / "sh" / "stdout.log").read_text() == "out False /\n"


def test_the_job_sees_a_terminal_where_record_has_one(tmp_path: Path) -> None:
    """On a terminal, each stream of the job is a terminal too (as without record), and
    what it writes reaches ours."""
    masters, slaves = zip(*(pty.openpty() for _ in range(2)))
    proc = subprocess.Popen([PY, "-m", "tb_opmode.cli", "record", str(tmp_path / "logs"), "--",
                             PY, JOBS, "streams", "0"], env=_env(), stdin=subprocess.DEVNULL,
                            stdout=slaves[0], stderr=slaves[1])
    for fd in slaves:
        os.close(fd)
    shown = {fd: b"" for fd in masters}
    reading = set(masters)
    deadline = time.monotonic() + 60
    while reading:  # until each terminal's other side is closed (the read fails or is empty)
        assert time.monotonic() < deadline, shown
        for fd in select.select(list(reading), [], [], 0.2)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            shown[fd] += data
            if not data:
                reading.discard(fd)
    proc.wait(timeout=60)
    for fd in masters:
        os.close(fd)
    shown_out, shown_err = (shown[fd] for fd in masters)
    assert proc.returncode == 0
    assert b"out True" in shown_out and b"err True" in shown_err, shown
    rundir = _only_run(tmp_path / "logs")
    assert (rundir / "stdout.log").read_text().startswith("out True")
    assert (rundir / "stderr.log").read_text() == "err True\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_record_stops_the_job_and_record_ends_as_it_did(tmp_path: Path, signum: int) -> None:
    proc = subprocess.Popen([PY, "-m", "tb_opmode.cli", "record", str(tmp_path / "logs"), "--",
                             PY, JOBS, "sleep"], env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.startswith("ready "), ready
    job = int(ready.split()[1])
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (-signum, 128 + signum), err
    with pytest.raises(ProcessLookupError):
        os.kill(job, 0)
    doc = _manifest(_only_run(tmp_path / "logs"))
    assert doc["signal"] == signal.Signals(signum).name and doc["exit_status"] == 128 + signum
    assert "tensorboard --logdir" in out


def test_the_users_sitecustomize_still_runs_and_ours_waits_for_tensorflow(tmp_path: Path) -> None:
    theirs = tmp_path / "site"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("print('their sitecustomize ran', flush=True)\n")
    code = ("import sys; print([type(f).__name__ for f in sys.meta_path if "
            "type(f).__name__ == '_AfterImport'], 'tensorflow' in sys.modules)")
    proc = _record(str(tmp_path / "logs"), "--name", "site", "--", PY, "-c", code,
                   env=_env(PYTHONPATH=f"{ROOT}{os.pathsep}{theirs}"))
    assert proc.returncode == 0, proc.stderr
    kept = (tmp_path / "logs" / "site" / "stdout.log").read_text()
    assert kept == "their sitecustomize ran\n['_AfterImport'] False\n"


def test_a_signal_before_the_jobs_group_is_known_reaches_the_job() -> None:
    """Ctrl-C in the instant between starting the job and knowing its group is kept and
    passed on once the group is known (it once left the job running, and record waiting)."""
    from tb_opmode.capture.job import _Group
    group = _Group()
    group.signal(signal.SIGTERM)   # before the job is started: kept
    proc = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"], process_group=0)
    try:
        group.started(proc.pid)
        assert proc.wait(timeout=30) == -signal.SIGTERM
        assert group.pending == []
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_job_that_never_ran_tensorflow_states_no_onednn_and_says_so(tmp_path: Path) -> None:
    """A run whose job never imported TensorFlow: its CPU says nothing of a oneDNN that
    never loaded, and asking for it is one line naming the run, how the job ended and
    where its own words are."""
    proc = _record(str(tmp_path / "logs"), "--name", "t1", "--", PY, JOBS, "streams", "4")
    assert proc.returncode == 4, proc.stderr
    (model,) = load(str(tmp_path / "logs"))
    assert model.onednn_enabled is None and "no TensorFlow evidence" in model.onednn_source
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(tmp_path / "logs"), "--run", "t1"], out, err) == 2
    assert err.getvalue().count("\n") == 1, err.getvalue()
    assert err.getvalue().startswith("tb-opmode: error: run t1: the recorded job wrote no TensorFlow "
                                     "evidence (it exited with status 4 after "), err.getvalue()
    assert "see its stderr.log" in err.getvalue()


def test_records_screen_says_why_a_run_has_nothing_as_summary_does(tmp_path: Path) -> None:
    """The job ended without running TensorFlow: record's screen says so, and how it ended,
    in summary's words, naming the run's directory (it said "nothing ... gives counts yet")."""
    logs = tmp_path / "logs"
    proc = _record(str(logs), "--name", "t1", "--", PY, JOBS, "streams", "5")
    assert proc.returncode == 5, proc.stderr
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(logs)], out, err) == 2
    said = err.getvalue().removeprefix("tb-opmode: error: run t1: ").rstrip("\n")
    assert said.startswith("the recorded job wrote no TensorFlow evidence (it exited with status 5")
    assert f"tb-opmode record: run {logs / 't1'}: {said}\n" in proc.stdout, proc.stdout
    assert "yet" not in proc.stdout


def test_a_failed_job_says_its_command_and_how_it_ended(tmp_path: Path, record_kernels: Any) -> None:
    """A recorded job that failed (exit status 3) or died of a signal: the summary's
    recording lines, the tab's run facts and its Functions card say the command and how it
    ended, and the card says the run has nothing to find traces in, not "no traces in the
    dump" (it has no dump)."""
    from tb_opmode.present.tab import build_view, functions, overview
    logs = tmp_path / "logs"
    shutil.copytree(record_kernels.directory, logs / "ok")   # a run with evidence beside them
    assert _record(str(logs), "--name", "failed", "--", PY, JOBS, "streams", "3").returncode == 3
    proc = subprocess.Popen([PY, "-m", "tb_opmode.cli", "record", str(logs), "--name", "killed", "--",
                             PY, JOBS, "sleep"], env=_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().startswith("ready ")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(logs)], out, err) == 0, err.getvalue()
    text = out.getvalue()
    failed = text[text.index("run failed"):text.index("run killed")]
    assert f"  command: {PY} {JOBS} streams 3 (exited with status 3)\n" in failed, failed
    assert "(was killed by signal SIGTERM (exit status 143))" in text[text.index("run killed"):]
    models = {m.run: m for m in load(str(logs))}
    view = build_view(models["failed"], str(logs), timeline=False)
    recording = overview(view)["recording"]
    assert recording is not None
    assert (recording["exit_status"], recording["signal"], recording["ended"]) == (3, None, "exited with status 3")
    assert recording["command"] == [PY, JOBS, "streams", "3"]
    empty = functions(view)["empty"]
    assert "dump" not in empty.replace("no dump", "") and "exited with status 3" in empty, empty
    ok = functions(build_view(models["ok"], str(logs), timeline=False))
    assert ok["functions"] and ok["empty"] == ""


def test_the_reader_names_the_trace_log_the_recorder_writes() -> None:
    """The trace times of a manifest are matched to the lines of the file the recorder
    writes them into; the reader (read.manifest) cannot import the recorder (capture runs
    inside the user's job and imports nothing of ours), so the name is said twice."""
    from tb_opmode.capture.inprocess import TRACE_LOG as written
    from tb_opmode.read.manifest import TRACE_LOG as read

    assert written == read
