"""Session fixtures: real logdirs written by the real TensorFlow of this venv.

Each is built once per test session by ``demo/make_logdir.py`` (the same
script the README's demo runs), so every test reads files TF really wrote.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Debian's chromium, driven by Playwright in the browser tests; these flags keep
# it off the network, which this machine does not have.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

MAKE_LOGDIR = ROOT / "demo" / "make_logdir.py"


def make_logdir(out: Path, *args: str) -> Path:
    proc = subprocess.run([sys.executable, str(MAKE_LOGDIR), str(out), *args],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode:
        log = out / "tf_log.txt"
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(f"make_logdir {args} failed: {proc.stderr[-3000:]}\n{tail}")
    return out


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keep the summary cache of the whole suite out of the user's ~/.cache."""
    path = tmp_path_factory.mktemp("tb_opmode_cache")
    os.environ["TB_OPMODE_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def bert_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed scenario: BERT-like model.fit, dump + profile + VLOG log."""
    return make_logdir(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def cnn_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A custom loop: some steps eager, some in tf.function."""
    return make_logdir(tmp_path_factory.mktemp("cnn"), "--workload", "cnn")


@pytest.fixture(scope="session")
def cnn_off_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same custom loop with TF_ENABLE_ONEDNN_OPTS=0."""
    return make_logdir(tmp_path_factory.mktemp("cnn_off"), "--workload", "cnn", "--onednn", "off")


@pytest.fixture(scope="session")
def tf_version() -> str:
    import tensorflow as tf
    return tf.__version__


def dump_files(logdir: Path) -> dict[str, Path]:
    """kind -> path of the single dump set in ``logdir``."""
    out = {}
    for name in os.listdir(logdir):
        if name.startswith("tfdbg_events."):
            out[name.rsplit(".", 1)[1]] = logdir / name
    return out


def link_tree(src: Path, dst: Path) -> Path:
    """Copy a logdir by hard links (same bytes and mtimes, no extra disk)."""
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)
    shutil.copytree(src, dst, copy_function=link)
    return dst
