"""Non-UTF-8 and hostile file names, FIFOs named like sources.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .helpers import (
    Dump,
    model_counts,
    run_cli,
    strict_json,
    summarize,
)

# ---------------------------------------------------------------- non-UTF-8 and hostile file names

def _fs(path: Path, *names: bytes) -> bytes:
    return os.path.join(os.fsencode(path), *names)


def test_non_utf8_file_names(dump: Dump, cnn_logdir: Path, tmp_path: Path) -> None:
    """Directories and files whose names are not UTF-8 (and one with a newline in its
    name): discovery and summary work, JSON is valid UTF-8, stderr has one line per
    warning, and the table and CSV print on a strict UTF-8 terminal."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    run = _fs(logdir, b"run\xff\xfe")
    os.mkdir(run)
    for kind, path in dump.paths.items():
        ts = path.name.split(".")[1]
        shutil.copyfile(path, os.path.join(run, b"tfdbg_events." + ts.encode() + b".h\xe9st." + kind.encode()))
    real_log = (cnn_logdir / "tf_log.txt").read_bytes()
    shutil.copyfile(cnn_logdir / "tf_log.txt", os.path.join(run, b"tf\xfdlog.txt"))
    (profile,) = cnn_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
    session = _fs(logdir, b"run\xff\xfe", b"prof\xff", b"plugins", b"profile", b"s\xfa")
    os.makedirs(session)
    shutil.copyfile(profile, os.path.join(session, b"vm\xfb.xplane.pb"))
    forged = _fs(logdir, b"evil\ntb-opmode: error: forged line\xe2\x80\xa8.log")  # U+2028
    with open(forged, "wb") as f:
        f.write(real_log[:20000].rsplit(b"\n", 1)[0] + b"\n\x00\x00 binary\n")

    rc, doc, stderr = summarize(logdir)
    assert rc == 0, stderr
    names = {r["run"] for r in doc["runs"]}
    assert "run\\xff\\xfe" in names, names
    (main_run,) = [r for r in doc["runs"] if r["run"] == "run\\xff\\xfe"]
    assert main_run["counts_from"] == "debugger"
    assert model_counts(doc, "run\\xff\\xfe") == dump.expected()[:3]
    assert main_run["hosts"] == ["h\\xe9st", "vm\\xfb"]
    assert "run\\xff\\xfe/tf\\xfdlog.txt" in main_run["sources"]["logs"]
    for line in stderr.splitlines():
        assert line.startswith("tb-opmode: warning: "), line
    assert any("evil\\x0atb-opmode: error: forged line\\u2028.log" in w for w in doc["warnings"])

    for fmt in ("json", "table", "csv"):
        proc = run_cli("summary", os.fsdecode(os.fsencode(logdir)), "--format", fmt,
                       env={"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"})
        err = proc.stderr.decode("utf-8")
        assert proc.returncode == 0 and "Traceback" not in err, err[-2000:]
        out = proc.stdout.decode("utf-8")   # strict: valid UTF-8
        if fmt == "json":
            assert strict_json(out)["runs"] == doc["runs"]
        else:
            assert "run\\xff\\xfe" in out
        assert all(line.startswith("tb-opmode: warning: ") for line in err.splitlines())


# ---------------------------------------------------------------- FIFOs and other non-files

def test_fifos_named_like_sources_do_not_hang(dump: Dump, cnn_logdir: Path, tmp_path: Path) -> None:
    """A FIFO named like a dump file, a log and a profile: nobody will ever write to
    them, so opening one blocks forever. They are skipped with a warning."""
    files = dump.copy_to(tmp_path, skip=("graph_execution_traces",))
    prefix = files["execution"].name.rsplit(".", 1)[0]
    os.mkfifo(tmp_path / f"{prefix}.graph_execution_traces")
    shutil.copyfile(cnn_logdir / "tf_log.txt", tmp_path / "tf_log.txt")
    os.mkfifo(tmp_path / "stuck.log")
    (tmp_path / "r" / "plugins" / "profile" / "s").mkdir(parents=True)
    os.mkfifo(tmp_path / "r" / "plugins" / "profile" / "s" / "vm.xplane.pb")
    proc = run_cli("summary", str(tmp_path), "--format", "json", timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    doc = strict_json(proc.stdout.decode())
    eager, _, functions, _ = dump.expected()
    got_eager, _, got_functions = model_counts(doc)
    assert (got_eager, got_functions) == (eager, functions)
    fifo_warnings = [w for w in doc["warnings"] if "FIFO" in w]
    for name in (f"{prefix}.graph_execution_traces", "stuck.log", "r/plugins/profile/s/vm.xplane.pb"):
        assert any(name in w for w in fifo_warnings), (name, doc["warnings"])
    assert "FIFO" in err



