"""The reader needs no TensorFlow: summarise with ``import tensorflow`` made to fail, and
serve the tab from the built wheel in a venv that has no TensorFlow."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.present.contract import summary

from .conftest import free_port, get_json
from .unit.conftest import unpack

ROOT = Path(__file__).resolve().parent.parent


def test_summary_where_import_tensorflow_fails(bert_logdir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "tensorflow"
    blocker.mkdir(parents=True)
    attempts = tmp_path / "attempts"
    # Any import attempt, even one that some code caught, leaves a mark.
    (blocker / "__init__.py").write_text(
        f"open({str(attempts)!r}, 'a').write('x')\n"
        "raise ImportError('tensorflow is blocked in this test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(blocker.parent), str(Path(__file__).resolve().parent.parent)]))
    probe = subprocess.run([sys.executable, "-c", "import tensorflow"], env=env,
                           capture_output=True, text=True, check=False)
    assert probe.returncode != 0 and "blocked" in probe.stderr
    attempts.unlink()
    program = ("import sys, tb_opmode.cli as c; r = c.main(sys.argv[1:]); "
               "assert 'tensorflow' not in sys.modules; sys.exit(r)")
    proc = subprocess.run(
        [sys.executable, "-c", program, "summary", str(bert_logdir), "--format", "json"],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert not attempts.exists(), "something tried to import tensorflow"
    doc = json.loads(proc.stdout)
    expected = summary(load(str(bert_logdir)), str(bert_logdir))
    assert doc["runs"] == expected["runs"]
    assert any(r["op_type"] == "Transpose" for r in doc["runs"][0]["op_types"])


# ---------------------------------------------------------------- the wheel, in a venv without TF

def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=20)


@pytest.mark.wheel
def test_wheel_serves_the_tab_without_tensorflow(tmp_path: Path) -> None:
    """``pip wheel`` of the project, installed (with its dependencies, from the registry)
    into a new venv that has no TensorFlow; its ``tensorboard`` serves the committed
    FULL_HEALTH run: the plugin is listed, its ``index.js`` is served, the run loads.
    Run by ``make test`` (``-m wheel``); the venv is new each time, pip's cache keeps it quick."""
    src = tmp_path / "src"   # only what the wheel is built from: no tests, no venvs
    src.mkdir()
    shutil.copy2(ROOT / "setup.py", src / "setup.py")
    shutil.copytree(ROOT / "tb_opmode", src / "tb_opmode",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = ["-m", "pip", "--disable-pip-version-check", "-q"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([sys.executable, *pip, "wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(src)],
                   check=True, env=env, cwd=tmp_path, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("tb_opmode-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    subprocess.run([python, *pip, "install", str(wheel)], check=True, env=env, cwd=tmp_path, timeout=900)
    probe = ("import importlib.util as u, tb_opmode; "
             "print(u.find_spec('tensorflow') is None, tb_opmode.__file__)")
    where = subprocess.run(
        [python, "-c", probe],
        check=True, env=env, cwd=tmp_path, capture_output=True, text=True).stdout.split()
    assert where[0] == "True", "the wheel's venv has TensorFlow"
    assert where[1].startswith(str(venv)), where  # the installed wheel, not this checkout

    logdir = unpack("fit_full_health", tmp_path / "logdir")
    port = free_port()
    log_path = tmp_path / "tensorboard.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(venv / "bin" / "tensorboard"), "--logdir", str(logdir.directory),
                                 "--host", "127.0.0.1", "--port", str(port)],
                                stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
                                env=dict(env, TB_OPMODE_CACHE="off"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log_path.read_text(errors="replace")[-3000:]
            try:
                listing = get_json(f"{base}/data/plugins_listing")
                runs = get_json(f"{base}/data/plugin/opmode/runs")["runs"]
                if runs and all(r["status"] == "ready" for r in runs):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        entry = listing["opmode"]
        assert entry["enabled"] and entry["tab_name"] == "Op Mode"
        assert entry["loading_mechanism"]["module_path"] == "/data/plugin/opmode/index.js"
        with urllib.request.urlopen(f"{base}/data/plugin/opmode/index.js", timeout=10) as response:
            body = response.read()
            assert response.status == 200 and "javascript" in response.headers["Content-Type"]
        assert body == (src / "tb_opmode" / "static" / "index.js").read_bytes()
        assert [r["run"] for r in runs] == ["."]
    finally:
        _stop(proc)
