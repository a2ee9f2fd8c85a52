"""``bench/bench.py --quick`` end to end: the issue 12 table has every row.

Only the rows are checked, never the figures (no test times anything). Slow: it
builds small real inputs with TensorFlow and starts TensorBoard a few times.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (target number, words of the row) for every row of the table.
ROWS = [
    ("1", "cold summary with the log, vs DebugDataReader on the dump"),
    ("1", "memory (ru_maxrss)"),
    ("1", "text log"),
    ("1", "text log memory: whole log vs its first quarter"),
    ("2", "summary, cold"),
    ("2", "memory (the larger of tree PSS and ru_maxrss ratios)"),
    ("2", "summary, warm (our cache)"),
    ("3", "oneDNN off"),
    ("3", "peak memory (ru_maxrss)"),
    ("3", "read speed"),
    ("3", "repeated): read"),
    ("4", "runs all served, cold cache"),
    ("4", "runs all served, warm cache"),
    ("4", "TensorBoard memory, cold"),
    ("4", "TensorBoard memory, warm"),
    ("4", "picked in the tab while they load"),
    ("5", "tab overview, demo logdir"),
    ("5", "tab overview, 1,998-record FULL_HEALTH dump"),
    ("6", "counts == DebugDataReader's"),
    ("6", "kernels == the TF log's"),
]


@pytest.mark.slow
def test_quick_bench_prints_every_row(tmp_path: Path) -> None:
    cache = os.environ.get("TB_OPMODE_BENCH_CACHE", str(tmp_path / "inputs"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick", "--cache", cache],
                          env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout[done.stdout.index("issue 12 targets ("):]
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in table.splitlines() if re.match(r"\| \d \|", line)]
    for target, words in ROWS:
        assert any(r[0] == target and words in r[1] for r in rows), (target, words, table)
    for r in rows:
        assert len(r) == 7 and r[2], r  # every row has a figure of ours
        assert r[6] == "not judged (--quick)" or r[6].startswith("wrong:"), r
