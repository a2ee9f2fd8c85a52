"""Session fixtures: real logdirs written by the real TensorFlow of this venv.

Each is built once per test session by ``demo/make_logdir.py`` (the same
script the README's demo runs), so every test reads files TF really wrote.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.ddr_counts import reference_counts
from tb_opmode.read import cache as _cache

ROOT = Path(__file__).resolve().parent.parent
# Debian's chromium, driven by Playwright in the browser tests; these flags keep
# it off the network, which this machine does not have.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

MAKE_LOGDIR = ROOT / "demo" / "make_logdir.py"
HAS_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


def needs_tensorflow() -> None:
    """Skip the calling test (or fixture) where this venv has no TensorFlow: its files
    are written, or its reference is computed, by the real TF of the venv."""
    if not HAS_TENSORFLOW:
        pytest.skip("needs TensorFlow, which this venv does not have (the no-TF tier is tests/unit)")


def make_logdir(out: Path, *args: str) -> Path:
    needs_tensorflow()
    proc = subprocess.run([sys.executable, str(MAKE_LOGDIR), str(out), *args],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        log = out / "tf_log.txt"
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(f"make_logdir {args} failed: {proc.stderr[-3000:]}\n{tail}")
    return out


RECORD_JOBS = ROOT / "tests" / "record_jobs.py"


def record_job(logdir: Path, name: str, job: str, *args: str, level: str = "kernels") -> str:
    """``tb-opmode record`` of ``tests/record_jobs.py JOB ARGS`` at ``level`` into
    ``logdir/name`` (this venv's TF); the job's stdout. Fails the test if it fails."""
    needs_tensorflow()
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TB_OPMODE_CACHE": "off"}
    proc = subprocess.run([sys.executable, "-m", "tb_opmode.cli", "record", str(logdir), "--name", name,
                           "--evidence", level, "--", sys.executable, str(RECORD_JOBS), job, *args],
                          env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def printed(stdout: str, prefix: str) -> str:
    """What the job printed after ``prefix`` on its one line starting so."""
    (line,) = [x for x in stdout.splitlines() if x.startswith(prefix)]
    return line.removeprefix(prefix)


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keep the summary cache of the whole suite out of the user's ~/.cache."""
    path = tmp_path_factory.mktemp("tb_opmode_cache")
    os.environ["TB_OPMODE_CACHE"] = str(path)
    return path


def reused(variable: str) -> Path | None:
    """A logdir made before by demo/make_logdir.py with the same arguments, named by an
    environment variable, to check against without making it again (a developer's
    targeted run; the suite makes its own)."""
    given = os.environ.get(variable)
    return Path(given) if given else None


@pytest.fixture(scope="session")
def bert_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed scenario: BERT-like model.fit, dump + profile + VLOG log
    (``TB_OPMODE_BERT_LOGDIR``: one made before)."""
    return reused("TB_OPMODE_BERT_LOGDIR") or make_logdir(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def cnn_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A custom loop: some steps eager, some in tf.function (``TB_OPMODE_CNN_LOGDIR``)."""
    return reused("TB_OPMODE_CNN_LOGDIR") or make_logdir(tmp_path_factory.mktemp("cnn"),
                                                         "--workload", "cnn")


@pytest.fixture(scope="session")
def cnn_off_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same custom loop with TF_ENABLE_ONEDNN_OPTS=0 (``TB_OPMODE_CNN_OFF_LOGDIR``)."""
    return reused("TB_OPMODE_CNN_OFF_LOGDIR") or make_logdir(
        tmp_path_factory.mktemp("cnn_off"), "--workload", "cnn", "--onednn", "off")


@pytest.fixture(scope="session")
def tf_version() -> str:
    needs_tensorflow()
    import tensorflow as tf
    return tf.__version__


def dump_files(logdir: Path) -> dict[str, Path]:
    """kind -> path of the single dump set in ``logdir``."""
    out = {}
    for name in os.listdir(logdir):
        if name.startswith("tfdbg_events."):
            out[name.rsplit(".", 1)[1]] = logdir / name
    return out


def link_tree(src: Path, dst: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """Copy a logdir by hard links (same bytes and mtimes, no extra disk), without the
    files whose names match a ``leave_out`` pattern."""
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)
    shutil.copytree(src, dst, copy_function=link,
                    ignore=shutil.ignore_patterns(*leave_out) if leave_out else None)
    return dst


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read().decode("utf-8"))


@contextlib.contextmanager
def running_tensorboard(logdir: Path | str | None, log_path: Path, runs: int, timeout: float,
                        args: list[str] | None = None, env: dict[str, str] | None = None,
                        settled: Callable[[dict[str, Any]], bool] | None = None) -> Iterator[str]:
    """A real ``tensorboard`` on 127.0.0.1 serving ``logdir`` (or given ``args``, in the
    environment plus ``env``), yielded as its base URL once our plugin lists ``runs`` runs,
    each ``settled`` (default: ready); always stopped."""
    settled = settled or (lambda run: run["status"] == "ready")
    port = free_port()
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main",
         *(args if args is not None else ["--logdir", str(logdir)]),
         "--port", str(port), "--host", "127.0.0.1"], stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, **env} if env else None)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tensorboard exited: {log_path.read_text(errors='replace')[-3000:]}")
            try:
                ready = get_json(f"{base}/data/plugin/opmode/runs")["runs"]
                if len(ready) == runs and all(settled(r) for r in ready):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"tensorboard did not load the runs: "
                                   f"{log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium driven by Playwright, one per test module."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class OpModePage:
    """A new browser context on TensorBoard's Op Mode tab, at one size and colour scheme:
    its page, the tab's iframe once the op table has rows, and the console errors seen."""

    def __init__(self, browser: Any, base: str, width: int, height: int,
                 scheme: str = "light", wait: bool = True) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": width, "height": height},
                                           color_scheme=scheme)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        if wait:
            self.open_tab()

    def open_tab(self) -> None:
        """Go to the tab and wait for the op table's rows (``wait=False`` leaves it to the
        test, which may time or watch the load)."""
        self.page.goto(f"{self.base}/#opmode")
        self.page.wait_for_selector("iframe", timeout=60000)
        self.frame = self.page.locator("iframe").element_handle().content_frame()
        self.frame.wait_for_selector("#opm-table tbody tr[data-op]", timeout=60000)


def ddr_counts(logdir: Path) -> tuple[Counter, Counter, Counter]:
    """(eager op types, graph op types, function calls) as TensorFlow's DebugDataReader
    counts them: the reference of bench/ddr_counts.py, the one the benchmark checks too."""
    needs_tensorflow()
    got = reference_counts(str(logdir))
    return Counter(got["eager"]), Counter(got["graph"]), Counter(got["functions"])


def machine_cpu() -> frozenset[str]:
    """This machine's instruction sets, named as TF's start-up line names them
    (AVX512_FP16): the real TF of the tests runs here, so their expectations are asked for here."""
    flags: set[str] = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
    return frozenset(f.upper() for f in flags)


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children the product forks during the test.

    The product forks a reader only while its process has a single thread, and other
    tests of a session leave idle ones behind (TensorBoard's, pools'), so this says it has
    one: the forking path is what these tests are about. Other tests' servers are children
    of this process too, so ``waitpid(-1)`` cannot tell whether the product reaped its
    own: the test checks each pid recorded here."""
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def assert_reaped(pids: list[int]) -> None:
    """Each child forked is gone: neither running nor left unreaped."""
    assert pids, "the product forked no child"
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


@pytest.fixture(autouse=True)
def _cache_reserve_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache evicts entries while its disk has less than 5% free: the tests that
    count entries must not hang on how full this machine's disk is (a test of the
    reserve sets its own free space)."""
    monkeypatch.setattr(_cache, "MIN_FREE_BYTES", 0)
    monkeypatch.setattr(_cache, "MIN_FREE_FRACTION", 0.0)
