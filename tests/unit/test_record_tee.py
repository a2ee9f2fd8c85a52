"""What ``record`` keeps and what it shows: every byte in the run's file, and on the terminal
the job's output less the log lines the level turned on (``capture.tee``); the level's
environment (``capture.inprocess.environment``) and the window of steps.

The log lines are TensorFlow's own (``tests/data``: TF 2.21 and 2.13 excerpts, and the
VLOG 2 log of the committed FULL_HEALTH run), mixed with lines a job prints itself.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tb_opmode.capture.inprocess import LEVELS, Settings, environment, parse_steps
from tb_opmode.capture.plan import Plan
from tb_opmode.capture.tee import Hidden, Tee, nap_after

from .conftest import DATA, Fixture


def _hidden(level: str) -> Hidden:
    return Plan("logs", "logs/run", Settings("logs/run", level), {}).hidden


def _through(data: list[bytes], hidden: Hidden, tmp_path: Path, name: str = "kept.log") -> tuple[bytes, bytes]:
    """(what the terminal showed, what the file kept) of ``data`` written in these pieces."""
    shown_r, shown_w = os.pipe()
    tee = Tee(shown_w, str(tmp_path / name), hidden).start()
    got = bytearray()

    def read_all() -> None:
        for chunk in iter(lambda: os.read(shown_r, 65536), b""):
            got.extend(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    for piece in data:
        os.write(tee.writer, piece)
    tee.close_writer()
    assert tee.join(10)
    os.close(shown_w)
    reader.join(10)
    os.close(shown_r)
    return bytes(got), (tmp_path / name).read_bytes()


def _log_lines(path: Path) -> list[bytes]:
    return [line + b"\n" for line in path.read_bytes().splitlines() if not line.startswith(b"#")]


@pytest.mark.parametrize("name", ["vlog_tf221.txt", "vlog_tf213.txt"])
def test_kernels_keeps_every_byte_and_shows_the_job_without_the_lines_it_turned_on(
        tmp_path: Path, name: str) -> None:
    log = _log_lines(DATA / name)
    mine = [b"epoch 1/1 loss 0.25\n", b"Saved model to /tmp/x\n"]
    written = log[:5] + mine[:1] + log[5:20] + mine[1:] + log[20:]
    shown, kept = _through(written, _hidden("kernels"), tmp_path)
    assert kept == b"".join(written)
    lines = shown.splitlines(keepends=True)
    assert all(line in lines for line in mine)
    for line in lines:
        assert b"execute.cc" not in line and b"op_kernel.cc" not in line, line
    # what the level did not turn on stays: other modules' lines, oneDNN's
    assert any(b"port.cc" in line or b"cpu_feature_guard" in line or b"process_function_library_runtime"
               in line for line in lines)


def test_full_hides_the_vlog_and_onednn_lines_but_not_warnings_or_the_job(
        tmp_path: Path, full_health: Fixture) -> None:
    err = _log_lines(full_health.log("stderr"))
    out = _log_lines(full_health.log("stdout"))
    assert any(line.startswith(b"onednn_verbose,") for line in out)
    shown_err, kept_err = _through(err + [b"my own line\n"], _hidden("full"), tmp_path)
    assert kept_err == b"".join(err) + b"my own line\n"
    assert shown_err.endswith(b"my own line\n")
    assert len(shown_err) < len(kept_err) / 20
    assert not any(line.startswith(b"I") and b".cc:" in line[:80] for line in shown_err.splitlines())
    shown_out, _kept = _through(out, _hidden("full"), tmp_path, "out.log")
    assert b"onednn_verbose," not in shown_out


def test_a_proto_that_continues_a_hidden_line_is_hidden_and_the_next_line_of_the_job_shown(
        tmp_path: Path) -> None:
    # TF 2.21 at execute=1 logs an eager op's function definition after "goo.gle/debugproto".
    written = [b"I0000 00:00:1796327777.407625   16794 execute.cc:986] goo.gle/debugproto   \n"
               b"signature {\n  name: \"__wrapped__Cast\"\n  input_arg {\n    name: \"x\"\n  }\n}\n"
               b"node_def {\n  attr {\n    key: \"DstT\"\n  }\n}\n\n",
               b"hello from the job\n",
               b"W0000 00:00:1796327777.5   16794 execute.cc:1] a warning stays\n"]
    shown, _kept = _through(written, _hidden("kernels"), tmp_path)
    assert shown == b"hello from the job\nW0000 00:00:1796327777.5   16794 execute.cc:1] a warning stays\n"


def test_a_progress_bar_is_shown_before_its_line_ends(tmp_path: Path) -> None:
    """A partial line that cannot be a hidden one goes to the terminal at once."""
    shown_r, shown_w = os.pipe()
    tee = Tee(shown_w, str(tmp_path / "kept.log"), _hidden("kernels")).start()
    os.write(tee.writer, b"\r3/8 [=====>....]")
    deadline = time.monotonic() + 10
    got = b""
    while b"3/8" not in got and time.monotonic() < deadline:
        got += os.read(shown_r, 65536)
    assert got == b"\r3/8 [=====>....]"
    os.write(tee.writer, b" - loss: 0.5\n")
    tee.close_writer()
    assert tee.join(10)
    os.close(shown_w)
    assert os.read(shown_r, 65536) == b" - loss: 0.5\n"
    os.close(shown_r)


def test_a_line_split_across_writes_is_judged_whole(tmp_path: Path) -> None:
    line = b"2026-11-29 19:59:43.257332: I tensorflow/core/common_runtime/eager/execute.cc:1678] Executing op X\n"
    shown, kept = _through([line[:7], line[7:40], line[40:], b"job\n"], _hidden("kernels"), tmp_path)
    assert kept == line + b"job\n"
    assert shown == b"job\n"


def test_a_pipes_reader_waits_after_a_short_read_a_terminals_never() -> None:
    """Batching a pipe's short reads spares the job a wake-up per log line; a full chunk
    means the job writes faster than we read, and a pseudo-terminal holds too little."""
    assert 0 < nap_after(130, terminal=False) <= 0.05
    assert nap_after(1 << 16, terminal=False) == 0.0
    assert nap_after(130, terminal=True) == 0.0
    assert nap_after(4095, terminal=True) == 0.0


def test_the_level_adds_its_modules_to_the_users_vmodule_and_shows_info_lines() -> None:
    kernels, full = LEVELS["kernels"], LEVELS["full"]
    assert environment(kernels, {}) == {"TF_CPP_VMODULE": "execute=1,op_kernel=1,xla_ops=1"}
    assert environment(kernels, {"TF_CPP_VMODULE": "executor=2,execute=3"}) == {
        "TF_CPP_VMODULE": "executor=2,execute=3,op_kernel=1,xla_ops=1"}
    assert environment(kernels, {"TF_CPP_VMODULE": "execute=1,op_kernel=1,xla_ops=1"}) == {}
    # a higher minimum level would hide the INFO lines we read
    assert environment(kernels, {"TF_CPP_MIN_LOG_LEVEL": "2"})["TF_CPP_MIN_LOG_LEVEL"] == "0"
    assert environment(full, {}) == {"TF_CPP_MAX_VLOG_LEVEL": "2", "ONEDNN_VERBOSE": "1"}
    assert LEVELS["calls"].dump_mode == "NO_TENSOR" and kernels.dump_mode is None


def test_the_window_of_steps() -> None:
    assert parse_steps("2:4") == (2, 4)
    assert parse_steps("3") == (3, 3)
    for bad in ("", "a:b", "0:1", "5:4", "2:", "-1:3"):
        with pytest.raises(ValueError):
            parse_steps(bad)
