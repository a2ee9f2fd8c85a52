"""``bench/bench.py``: ``--quick`` end to end prints every row of its table, and a kept
table holds what was printed.

Only the rows are checked, never the figures (no test times anything). The end-to-end
test is slow: it builds small real inputs with TensorFlow and starts TensorBoard a few
times. The kept-table test needs neither.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# bench/ is a directory of scripts, not a package: load bench.py by its path.
_SPEC = importlib.util.spec_from_file_location("bench_script", ROOT / "bench" / "bench.py")
assert _SPEC is not None and _SPEC.loader is not None
bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = bench  # dataclasses look their module up while the class is made
_SPEC.loader.exec_module(bench)

# (group, words of the row) for every row of the table.
ROWS = [
    ("seed", "cold summary with the log, vs DebugDataReader on the dump"),
    ("seed", "memory (ru_maxrss)"),
    ("seed", "text log"),
    ("seed", "text log memory: whole log vs its first quarter"),
    ("dump", "summary, cold"),
    ("dump", "memory (the larger of tree PSS and ru_maxrss ratios)"),
    ("dump", "summary, warm (our cache)"),
    ("profile", "oneDNN off"),
    ("profile", "peak memory (ru_maxrss)"),
    ("profile", "read speed"),
    ("profile", "repeated): read"),
    ("runs", "runs all served, cold cache"),
    ("runs", "runs all served, warm cache"),
    ("runs", "TensorBoard memory, cold"),
    ("runs", "TensorBoard memory, warm"),
    ("runs", "picked in the tab while they load"),
    ("tab", "tab overview, demo logdir"),
    ("tab", "tab overview, 1,998-record FULL_HEALTH dump"),
    ("truth", "counts == DebugDataReader's"),
    ("truth", "kernels == the TF log's"),
]
GROUPS = "|".join(sorted({group for group, _ in ROWS}))


@pytest.mark.slow
def test_quick_bench_prints_every_row(tmp_path: Path) -> None:
    cache = os.environ.get("TB_OPMODE_BENCH_CACHE", str(tmp_path / "inputs"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick", "--cache", cache],
                          env=env, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = done.stdout[done.stdout.index("targets, one row per measure ("):]
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in table.splitlines() if re.match(rf"\| ({GROUPS}) \|", line)]
    for group, words in ROWS:
        assert any(r[0] == group and words in r[1] for r in rows), (group, words, table)
    for r in rows:
        assert len(r) == 7 and r[2], r  # every row has a figure of ours
        assert r[6] == "not judged (--quick)" or r[6].startswith("wrong:"), r


def test_kept_table_holds_the_printed_lines_one_file_per_run(tmp_path: Path) -> None:
    rows = [bench.Row("seed", "text log 238 MB, cold", "417 MB/s", "95 MB/s", "4.40x", ">= 500 MB/s", False),
            bench.Row("truth", "counts == DebugDataReader's", "equal", "DebugDataReader", "", "equal", True)]
    lines = bench.table_lines(rows, judged=True)
    first = bench.keep_results(tmp_path, "\ntargets, one row per measure (this run)\n", lines, ["--reps", "1"],
                               "13:16")
    second = bench.keep_results(tmp_path, "heading", lines, [], "13:30")
    commit = bench.short_commit()
    assert first.name.endswith(f"-{commit}.md") and second.name.endswith(f"-{commit}-2.md")
    assert first.name[:10] == second.name[:10] and re.fullmatch(r"\d{4}-\d\d-\d\d", first.name[:10])
    text = first.read_text()
    assert "`python bench/bench.py --reps 1`" in text and "targets, one row per measure (this run)" in text
    assert text.splitlines()[-len(lines):] == lines
    assert lines[2].split(" | ")[-1] == "MISSED |" and lines[3].endswith("| met |")
