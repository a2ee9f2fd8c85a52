"""The bench's rows for the shapes of run users have, beside the bench's own.

In: the bench cache (``bench.CACHE``), where the inputs are made once: the seed user's
own run (``bench/make_hf_bert.py``: HuggingFace's TFBertForSequenceClassification,
bert-base's shape randomly initialised, one ``fit`` step, FULL_HEALTH dump, profile and
the VLOG=2 + ONEDNN_VERBOSE log) and a profile of many small events (the bench's ~70 MB
XPlane, ``make_profile.py``, alone in its logdir). Out: the ``users`` rows of the table,
each against its reference in the same run (interleaved, medians):

- the bert-base run: cold summary with its log vs ``DebugDataReader`` on the dump alone
  (>= 4x), its memory (<= 1/3), and our counts against ``DebugDataReader``'s; and, not
  judged, the same run without its log (the dump and profile hard-linked into a logdir
  of their own): the floor that the log's reading adds to;
- the profile alone: the whole summary, cold, in MB of profile per second (>= 100 MB/s)
  against the reference code (``bench.REFERENCE_COMMIT``), and its peak memory, the
  larger of the tree's PSS and ``ru_maxrss`` (<= 2x the file + 200 MB).

Long op names are what the bench's own BERT-like model lacks: TF's log shortens them,
and resolving them is the work the seed user's run has and ours had not.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import bench
from bench import Row, Series

__all__ = ["measure_users", "generate_hf_bert"]


def generate_hf_bert() -> Path:
    """bench/cache/hf_bert: made once by make_hf_bert.py (a few minutes)."""
    out = bench.CACHE / "hf_bert"
    if bench._marker(out).exists():
        return out
    tmp = bench.CACHE / "hf_bert.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [bench.PY, str(bench.HERE / "make_hf_bert.py"), str(tmp)]
    print(f"generating {out.name}: {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    bench._marker(out).write_text(f"{' '.join(cmd[1:])}\n{time.perf_counter() - t0:.0f} s\n")
    return out


def _bert_rows(reps: int, work: Path) -> list[Row]:
    run = generate_hf_bert()
    (log,) = run.glob("tf_log.txt")
    dump_mb = sum(p.stat().st_size for p in run.glob("tfdbg_events.*")) / 1e6
    label = f"HuggingFace bert-base, 1 step ({dump_mb:.0f} MB dump, {log.stat().st_size / 1e6:.0f} MB log)"
    bench._cache_in_page_cache(log)
    bare = _without_log(run)
    ours, ddr, no_log = Series(), Series(), Series()
    for _ in range(reps):
        cold = work / "users_cold"
        shutil.rmtree(cold, ignore_errors=True)
        ours.runs.append(bench.run_measured(bench.ours_cmd(run), bench._env(str(cold))))
        ddr.runs.append(bench.run_measured(bench.ddr_cmd(run), bench._env(None)))
        shutil.rmtree(cold, ignore_errors=True)
        no_log.runs.append(bench.run_measured(bench.ours_cmd(bare), bench._env(str(cold))))
    speed = ddr.median() / ours.median()
    mem = ours.maxrss_mb() / ddr.maxrss_mb()
    same = bench.our_counts(json.loads(ours.runs[-1].stdout)) == json.loads(ddr.runs[-1].stdout)
    return [
        Row("users", f"{label}: cold summary with the log, vs DebugDataReader on the dump",
            f"{ours.median():.2f} s", f"{ddr.median():.2f} s", f"{speed:.1f}x faster", ">= 4x",
            speed >= 4),
        Row("users", f"{label}: memory (ru_maxrss)", f"{ours.maxrss_mb():.0f} MB",
            f"{ddr.maxrss_mb():.0f} MB", f"{mem:.2f} of it", "<= 1/3", mem <= 1 / 3),
        Row("users", f"{label}: counts == DebugDataReader's", "equal" if same else "DIFFER",
            "DebugDataReader", "", "equal", same),
        Row("users", f"{label}: the same run without its log (dump and profile), cold summary",
            f"{no_log.median():.2f} s", f"{ddr.median():.2f} s",
            f"{ddr.median() / no_log.median():.1f}x faster", "none (the floor under the log's cost)",
            None, "for reference"),
    ]


def _without_log(run: Path) -> Path:
    """A logdir beside ``run`` holding its dump and profile, hard-linked, and not its log."""
    bare = run.parent / f"{run.name}_no_log"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(run, bare, copy_function=os.link,
                    ignore=shutil.ignore_patterns("tf_log.txt", ".*"))
    return bare


def _profile_rows(reps: int, ref: Path | None) -> list[Row]:
    xp = bench.generate_xplane(bench.XPLANE_STEPS)
    logdir = xp.parents[3]  # the profile alone: plugins/profile/<session>/<host>.xplane.pb
    size_mb = xp.stat().st_size / 1e6
    bench._cache_in_page_cache(xp)
    variants = [("ours", None)] + ([("reference", ref)] if ref else [])
    by: dict[str, Series] = {}
    for _ in range(reps):
        for who, tree in variants:
            by.setdefault(who, Series()).runs.append(
                bench.run_measured(bench.ours_cmd(logdir), bench._on_path(bench._env(None), tree)))
    sampled = bench.run_measured(bench.ours_cmd(logdir), bench._env(None), sample=True)
    o = size_mb / by["ours"].median()
    r = size_mb / by["reference"].median() if "reference" in by else float("nan")
    peak = max(by["ours"].maxrss_mb(), sampled.peak_pss_kb / 1024)
    limit = 2 * size_mb + 200
    label = f"profile of many small events alone ({size_mb:.0f} MB XPlane, ~3.3M events)"
    return [
        Row("users", f"{label}: whole summary, cold", f"{o:.0f} MB/s ({by['ours'].median():.2f} s)",
            f"{r:.0f} MB/s ({bench.REFERENCE_COMMIT})", f"{o / r:.1f}x faster", ">= 100 MB/s", o >= 100),
        Row("users", f"{label}: peak memory (tree PSS, ru_maxrss)", f"{peak:.0f} MB", "", "",
            f"<= 2x + 200 MB = {limit:.0f} MB", peak <= limit),
    ]


def measure_users(reps: int, work: Path, ref: Path | None) -> list[Row]:
    """The users rows: the bert-base run against DebugDataReader, then the profile alone
    against the reference code."""
    return _bert_rows(reps, work) + _profile_rows(reps, ref)
