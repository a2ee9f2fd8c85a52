"""The reader needs no TensorFlow: summarise with ``import tensorflow`` made to fail."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tb_opmode.analyze.assemble import load
from tb_opmode.present.contract import summary


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
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "blocked" in probe.stderr
    attempts.unlink()
    proc = subprocess.run(
        [sys.executable, "-c",
         "import sys, tb_opmode.cli as c; r = c.main(sys.argv[1:]); "
         "assert 'tensorflow' not in sys.modules; sys.exit(r)",
         "summary", str(bert_logdir), "--format", "json"],
        env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not attempts.exists(), "something tried to import tensorflow"
    doc = json.loads(proc.stdout)
    expected = summary(load(str(bert_logdir)), str(bert_logdir))
    assert doc["runs"] == expected["runs"]
    assert any(r["op_type"] == "Transpose" for r in doc["runs"][0]["op_types"])
