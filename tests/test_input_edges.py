"""Inputs at the edges, on logdirs real TensorFlow wrote.

In: copies of the session fixtures (``bert_logdir``), changed the way a user's
disk can be: unreadable parts, symlinks into and out of the logdir, very long
run paths, names holding terminal escapes and bidi controls, and a dump written
by TF from a Python file whose name holds them. Out: assertions on what
``tb-opmode`` prints (warnings naming the path and the reason, one-line errors,
escaped text) and on the tab's HTTP routes.

The permission tests drop to uid 65534 in the child process: the suite runs as
root, and root reads a chmod 000 file anyway.
"""
from __future__ import annotations

import importlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main
from tb_opmode.read.discover import display

from .conftest import link_tree, needs_tensorflow
from .test_plugin import make_api

NOBODY = 65534
# What no terminal output may hold: ESC (colours, cursor moves, screen erase), NUL,
# a newline inside a name, and the bidi controls that reorder what follows them.
RAW_CONTROLS = ["\x1b", "\x00", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066",
                "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c"]


def cli(*args: str) -> tuple[int, str, str]:
    """``tb-opmode`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        code = main(list(args), stdout=out, stderr=err)
    except SystemExit as exc:  # argparse refusing an argument
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def cli_process(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``tb-opmode`` in a child process (for inputs that could hang it: a timeout ends it)."""
    return subprocess.run([sys.executable, "-m", "tb_opmode.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def cli_as_nobody(*args: str) -> tuple[int, str, str]:
    """``cli`` in a forked child running as uid/gid 65534 with no groups, so that chmod 000
    means something although the suite runs as root. A fork, not a new interpreter:
    this venv's Python lives under /root, which uid 65534 cannot enter; the fork has
    everything imported already (``warm_imports``) and reads only the logdir."""
    if os.geteuid() != 0:
        return cli(*args)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.environ["TB_OPMODE_CACHE"] = "off"  # the suite's cache directory is root's
            data = json.dumps(list(cli(*args)))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails
            data = json.dumps([-1, "", f"child failed: {exc!r}"])
        with os.fdopen(w, "w") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        data = f.read()
    os.waitpid(pid, 0)
    code, out, err = json.loads(data)
    assert code != -1, err
    return code, out, err


@pytest.fixture(scope="module", autouse=True)
def warm_imports(bert_logdir: Path) -> None:
    """Every module the CLI imports lazily, imported before ``cli_as_nobody`` forks."""
    # The profile decoder (and its thread pool) loads only when a profile is read, which a
    # warm cache skips: import it whatever an earlier test left in the cache.
    importlib.import_module("tb_opmode.read.xevents")
    importlib.import_module("concurrent.futures.thread")
    for fmt in ("json", "table", "csv"):
        assert cli("summary", str(bert_logdir), "--format", fmt)[0] == 0
    assert cli("explain", str(bert_logdir), "Transpose")[0] == 0


def json_doc(proc: subprocess.CompletedProcess) -> Any:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def json_of(code: int, out: str, err: str) -> Any:
    assert code == 0, err[-2000:]
    return json.loads(out)


@pytest.fixture()
def shared_tmp() -> Iterator[Path]:
    """A temporary directory the unprivileged child can enter (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="tb_opmode_edges_"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for d, _dirs, _files in os.walk(path):  # give back what a test took away
            os.chmod(d, 0o755)
        shutil.rmtree(path)


def copy_of(bert_logdir: Path, dst: Path) -> Path:
    """A copy of the BERT logdir whose log is a file of its own (not a hard link to the
    fixture's): chmod on it must not reach the session fixture."""
    link_tree(bert_logdir, dst)
    log = dst / "tf_log.txt"
    log.unlink()
    shutil.copy2(bert_logdir / "tf_log.txt", log)
    for d, _dirs, _files in os.walk(dst):
        os.chmod(d, 0o755)
    return dst


def profile_dir(logdir: Path) -> Path:
    (found,) = list(logdir.rglob("*.xplane.pb"))
    return found.parent.parent  # <run>/plugins/profile


def eager_evidence(doc: Any, op_type: str = "Transpose") -> set[str]:
    (run,) = doc["runs"]
    (row,) = [r for r in run["op_types"] if r["op_type"] == op_type]
    return {k["evidence"] for k in row["eager"]["kernels"]}


# ------------------------------------------------------------ 4. unreadable parts


def test_unreadable_log_and_directory_are_warnings(bert_logdir: Path, shared_tmp: Path) -> None:
    logdir = copy_of(bert_logdir, shared_tmp / "logs")
    whole = json_of(*cli_as_nobody("summary", str(logdir), "--format", "json"))
    assert whole["warnings"] == []
    plugins = profile_dir(logdir).parent
    (logdir / "tf_log.txt").chmod(0)
    plugins.chmod(0)
    code, out, err = cli_as_nobody("summary", str(logdir), "--format", "json")
    doc = json_of(code, out, err)
    (run,) = doc["runs"]
    assert run["sources"]["logs"] == [] and run["sources"]["profile"] == []
    rel = plugins.relative_to(logdir).as_posix()
    assert "tf_log.txt: byte 0: permission denied: not read" in run["warnings"]
    assert f"{rel}: byte 0: permission denied: directory not read" in run["warnings"]
    assert f"tb-opmode: warning: .: {rel}: byte 0: permission denied: directory not read\n" in err
    # The answer did change (no log: kernels inferred); now it says why.
    assert eager_evidence(whole) == {"log"} and eager_evidence(doc) == {"inferred"}


def test_unreadable_logdir_is_a_one_line_error(bert_logdir: Path, shared_tmp: Path) -> None:
    logdir = copy_of(bert_logdir, shared_tmp / "logs")
    logdir.chmod(0)
    code, out, err = cli_as_nobody("summary", str(logdir))
    assert code == 2, err
    assert err.splitlines() == [
        f"tb-opmode: error: {logdir}: cannot list the directory: permission denied"]
    assert out == ""


def test_logdir_whose_only_content_is_unreadable_says_so(bert_logdir: Path,
                                                         shared_tmp: Path) -> None:
    logdir = shared_tmp / "logs"
    logdir.mkdir(mode=0o755)
    copy_of(bert_logdir, logdir / "run").chmod(0)
    code, out, err = cli_as_nobody("summary", str(logdir))
    assert code == 2, err
    assert err.splitlines() == [
        f"tb-opmode: error: {logdir}: nothing found in what could be read; "
        "run: permission denied: directory not read"]


@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "directory"])
def test_log_option_must_be_a_regular_file(bert_logdir: Path, tmp_path: Path, kind: str) -> None:
    logdir = link_tree(bert_logdir, tmp_path / "logs")
    if kind == "dev_zero":
        bad = Path("/dev/zero")
        why = "a device"
    elif kind == "fifo":
        bad = tmp_path / "pipe.log"
        os.mkfifo(bad)
        why = "a FIFO (named pipe)"
    else:
        bad = tmp_path / "logs.d"
        bad.mkdir()
        why = "a directory"
    # A child with a timeout: before the fix, /dev/zero and a FIFO never returned.
    proc = cli_process("summary", str(logdir), "--log", str(bad), "--format", "json", timeout=120)
    doc = json_doc(proc)
    (run,) = doc["runs"]
    assert f"{bad}: byte 0: {why}, not a regular file: not read" in run["warnings"]
    assert str(bad) not in json.dumps(run["sources"])
    assert run["sources"]["logs"] == ["tf_log.txt"]


# ------------------------------------------------------------------ 5. symlinks


def test_symlinked_file_out_of_the_logdir_is_not_read(bert_logdir: Path, tmp_path: Path) -> None:
    logdir = link_tree(bert_logdir, tmp_path / "logs")
    outside = tmp_path / "elsewhere" / "kept.log"
    outside.parent.mkdir()
    (logdir / "tf_log.txt").rename(outside)
    (logdir / "tf_log.txt").symlink_to(outside)
    (logdir / "notes").symlink_to(outside)  # not named like a source: no warning needed
    code, out, err = cli("summary", str(logdir), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    (run,) = doc["runs"]
    assert run["sources"]["logs"] == []
    assert run["warnings"] == [
        f"tf_log.txt: byte 0: symlink to {outside}, outside the logdir: not followed"]
    assert eager_evidence(doc) == {"inferred"}
    # Named with --log, the same link is read: the user asked for it.
    code, out, err = cli("summary", str(logdir), "--format", "json",
                         "--log", str(logdir / "tf_log.txt"))
    assert code == 0 and err == "", err
    doc = json.loads(out)
    assert doc["runs"][0]["sources"]["logs"] == ["tf_log.txt"] and doc["warnings"] == []
    assert eager_evidence(doc) == {"log"}


def test_symlinked_file_inside_the_logdir_is_read(bert_logdir: Path, tmp_path: Path) -> None:
    logdir = link_tree(bert_logdir, tmp_path / "logs")
    kept = logdir / "kept" / "tf_log.keep"  # not named like a log: read only through the link
    kept.parent.mkdir()
    (logdir / "tf_log.txt").rename(kept)
    (logdir / "tf_log.txt").symlink_to(Path("kept") / "tf_log.keep")
    code, out, err = cli("summary", str(logdir), "--format", "json")
    assert code == 0 and err == "", err
    doc = json.loads(out)
    assert doc["runs"][0]["sources"]["logs"] == ["tf_log.txt"]
    assert eager_evidence(doc) == {"log"}


def test_symlinked_directories(bert_logdir: Path, tmp_path: Path) -> None:
    """Out of the logdir: not followed. Inside: read once, under its real name. A loop
    ends."""
    logdir = tmp_path / "logs"
    link_tree(bert_logdir, logdir / "real")
    outside = link_tree(bert_logdir, tmp_path / "elsewhere")
    (logdir / "alias").symlink_to("real")
    (logdir / "away").symlink_to(outside)
    (logdir / "real" / "loop").symlink_to("..")
    code, out, err = cli("summary", str(logdir), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [r["run"] for r in doc["runs"]] == ["real"]
    assert sorted(doc["warnings"]) == sorted([
        "real: alias: byte 0: the same directory as real, which is read already: not read twice",
        f"real: away: byte 0: symlink to {outside}, outside the logdir: not followed",
        "real: real/loop: byte 0: the same directory as ., which is read already: not read twice",
    ])
    assert doc["runs"][0]["sources"]["profile"], "the profile under real/ is still found"


# ---------------------------------------------------------- 6. long run names


def test_run_with_a_path_over_200_characters_works_over_http(bert_logdir: Path,
                                                             tmp_path: Path) -> None:
    parts = ["a" * 100, "b" * 100, "c" * 100, "d" * 20]
    link_tree(bert_logdir, tmp_path.joinpath(*parts))
    name = "/".join(parts)
    assert len(name) > 300
    api = make_api(tmp_path)
    try:
        runs = api.json("/runs")["runs"]
        assert [(r["run"], r["status"]) for r in runs] == [(name, "ready")], runs
        assert api.json("/overview", run=name)
        assert api.json("/optypes", run=name)["rows"]
        assert api.json("/op", run=name, op="Transpose")
        assert api.json("/timeline", run=name)
        assert api.json("/compare", a=name, b=name)
        assert api.status("/export", run=name, format="csv") == 200
        # Other text parameters keep their short cap.
        assert api.status("/optypes", run=name, q="x" * 201) == 400
    finally:
        api.plugin.close()


# ------------------------------------------------------ 7. escaping for terminals


def test_table_escapes_run_names_with_escapes_and_bidi(bert_logdir: Path,
                                                       tmp_path: Path) -> None:
    raw = "run\u202e\x1b[31mred\u2066x\u200f"
    link_tree(bert_logdir, tmp_path / raw)
    code, out, err = cli("summary", str(tmp_path))
    assert code == 0, err
    for ch in RAW_CONTROLS:
        assert ch not in out, repr(ch)
    assert "run run\\u202e\\x1b[31mred\\u2066x\\u200f  TensorFlow" in out


@pytest.fixture(scope="module")
def evil_source_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dump TF wrote while running eager Transposes from a Python file whose directory
    and name hold a bidi override, terminal escapes and a newline: they reach the dump's
    stack frames, and so ``explain``'s call sites, as they are."""
    needs_tensorflow()
    base = tmp_path_factory.mktemp("evil")
    src = base / "src\u202e\x1b[31m" / "ev\u202eil\x1b[2J\nx.py"
    src.parent.mkdir()
    src.write_text("import tensorflow as tf\n\n\ndef f\u00e9():\n    x = tf.ones([2, 3])\n"
                   "    for _ in range(3):\n        tf.transpose(x)\n\n\nf\u00e9()\n")
    driver = base / "driver.py"
    driver.write_text(
        "import runpy, sys\nimport tensorflow as tf\n"
        "tf.debugging.experimental.enable_dump_debug_info(sys.argv[1], "
        "tensor_debug_mode='NO_TENSOR', circular_buffer_size=-1)\n"
        "runpy.run_path(sys.argv[2], run_name='evil')\n"
        "tf.debugging.experimental.disable_dump_debug_info()\n")
    logdir = base / "logs"
    proc = subprocess.run([sys.executable, str(driver), str(logdir), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return logdir


def test_explain_escapes_call_site_paths_from_the_dump(evil_source_logdir: Path) -> None:
    code, out, err = cli("explain", str(evil_source_logdir), "Transpose")
    assert code == 0, err
    for ch in RAW_CONTROLS:
        assert ch not in out, (repr(ch), out)
    # The newline in the file name would have forged a line; every line is ours.
    shown = "src\\u202e\\x1b[31m/ev\\u202eil\\x1b[2J\\x0ax.py:7"
    sites = [line for line in out.splitlines() if shown in line]
    assert sites and sites[0].split() == ["3", f"{evil_source_logdir.parent}/{shown}", "f\u00e9"]
    assert "(ev\\u202eil\\x1b[2J\\x0ax.py:7)" in out.replace("\n    ", " ")  # the reason text
    # JSON stays exact: the raw name is there, as JSON escapes.
    code, out, err = cli("summary", str(evil_source_logdir), "--format", "json")
    assert code == 0, err
    (row,) = [r for r in json.loads(out)["runs"][0]["op_types"] if r["op_type"] == "Transpose"]
    assert "ev\u202eil\x1b[2J\nx.py" in row["eager"]["explanation"]


def test_display_escapes_bidi_controls_and_is_idempotent() -> None:
    for ch in ["\u202a", "\u202e", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c"]:
        assert display(f"a{ch}b") == f"a\\u{ord(ch):04x}b"
    text = "x\u202e\x1b[0m\n\udcff\u2028y"
    assert display(display(text)) == display(text)


# --------------------------------------------------------------- 8. arguments


def test_run_option_accepts_the_raw_and_the_shown_name(bert_logdir: Path, tmp_path: Path) -> None:
    raw = "r\u202e\nx"
    link_tree(bert_logdir, tmp_path / raw)
    link_tree(bert_logdir, tmp_path / "plain")
    for given in (raw, display(raw)):
        code, out, err = cli("summary", str(tmp_path), "--run", given, "--format", "json")
        assert code == 0, (given, err)
        assert [r["run"] for r in json.loads(out)["runs"]] == ["r\\u202e\\x0ax"]
        code, out, err = cli("explain", str(tmp_path), "Transpose", "--run", given)
        assert code == 0, (given, err)
        assert out.startswith("Transpose in run r\\u202e\\x0ax ")


@pytest.mark.parametrize("top", ["-1", "0", "two"])
def test_top_must_be_positive(bert_logdir: Path, top: str) -> None:
    proc = cli_process("explain", str(bert_logdir), "Transpose", "--top", top)
    assert proc.returncode == 2 and proc.stdout == ""
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("tb-opmode explain: error: argument --top: must be a positive integer")
    assert "Traceback" not in proc.stderr


def test_top_one_shows_one_call_site(bert_logdir: Path) -> None:
    code, out, err = cli("explain", str(bert_logdir), "Transpose", "--top", "1")
    assert code == 0, err
    eager = out.split("\ngraph:")[0]
    assert eager.count("\n    ") >= 1
    sites = eager.split("call sites:\n")[1].splitlines()
    assert len([s for s in sites if s.lstrip()[:1].isdigit()]) == 1
    # the rest are counted, and how to list them said
    assert any(s.strip().startswith("... and ") and "--top" in s for s in sites), sites
