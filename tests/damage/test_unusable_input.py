"""Unusable input (missing, empty, all garbage) and bugs: one line, exit 2 or 3,
no traceback.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import io
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main

from .helpers import (
    Dump,
    assert_one_line_error,
    run_cli,
)

# ---------------------------------------------------------------- unusable input: one line, exit 2

def _unusable(case: str, root: Path, dump: Dump) -> Path:
    logdir = root / "logdir"
    if case == "missing_logdir":
        return logdir
    logdir.mkdir()
    if case == "empty_logdir":
        pass
    elif case == "all_six_empty":
        for path in dump.paths.values():
            (logdir / path.name).write_bytes(b"")
    elif case == "all_six_garbage":
        rng = random.Random(3)
        for path in dump.paths.values():
            (logdir / path.name).write_bytes(rng.randbytes(3000))
    elif case == "all_six_truncated_headers":
        for kind, path in dump.paths.items():
            (logdir / path.name).write_bytes(dump.raw[kind][:7])
    elif case == "garbage_profile":
        d = logdir / "run" / "plugins" / "profile" / "s"
        d.mkdir(parents=True)
        (d / "vm.xplane.pb").write_bytes(random.Random(4).randbytes(5000))
    elif case == "fifo_dump":
        os.mkfifo(logdir / "tfdbg_events.1.host.execution")
    else:
        raise ValueError(case)
    return logdir


@pytest.mark.parametrize("case", ["missing_logdir", "empty_logdir", "all_six_empty", "all_six_garbage",
                                  "all_six_truncated_headers", "garbage_profile", "fifo_dump"])
def test_unusable_input_is_one_line_and_exit_2(dump: Dump, tmp_path: Path, case: str) -> None:
    logdir = _unusable(case, tmp_path, dump)
    for command in (["summary", str(logdir)], ["summary", str(logdir), "--format", "json"],
                    ["explain", str(logdir), "MatMul"]):
        assert_one_line_error(run_cli(*command, timeout=60), str(logdir))


def test_unexpected_error_is_one_line_too(dump: Dump, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (any exception) still gives one line and a non-zero exit, not a traceback."""
    from tb_opmode.analyze import assemble as join

    dump.copy_to(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(join, "build_run", broken)
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(tmp_path)], stdout=out, stderr=err) == 3
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "RuntimeError" in lines[0] and "boom" in lines[0]
    monkeypatch.setenv("TB_OPMODE_TRACEBACK", "1")
    with pytest.raises(RuntimeError):
        main(["summary", str(tmp_path)], stdout=out, stderr=err)

