"""What ``tb-opmode record`` costs the job it records, per evidence level.

In: options (steps, repetitions). Out: on stdout (and as JSON with ``--json``; as a kept
Markdown table with ``--results-dir``), the ``record`` rows of the bench's table: per
job and level, the job's wall time under ``record`` against the same job run plainly
(ratio of medians, with the target: ``kernels`` <= 1.1x, ``calls`` <= 1.75x, ``full``
for reference; the CPU time beside it, user + system, which other work on a shared machine
disturbs less than the wall time), the size of what the run leaves (and per 100 steps: ``kernels`` under
10 MB), and the share of executions whose kernel is observed (``log`` or ``profile``
evidence) rather than inferred, from ``tb-opmode summary``.

The jobs are the bench's own: demo/make_logdir.py's BERT-like Keras ``fit`` and its CNN
custom loop, run ``--bare`` (the workload alone, as a user's script: no dump, no callback,
no profile, no log). A job's time under ``record`` is the manifest's ``duration_s`` (from
starting the job to its end, as the plain job's is from starting it to its end: both
include Python's start and TF's import); ``record``'s own start and its summary after the
job are shown apart. Every variant runs in a child process, the variants of a job
interleaved within each repetition so that load from other work hits them alike.

    python bench/bench_record.py                      # 120 steps, 2 repetitions
    python bench/bench_record.py --quick              # 8 steps, once: the rows, not judged
    python bench/bench_record.py --results-dir bench/results
    python bench/bench_record.py --levels kernels     # one level (and the plain job)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "measure", "record_rows", "LEVELS", "JOBS"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
MAKE_LOGDIR = ROOT / "demo" / "make_logdir.py"
JOBS = {"BERT-like Keras fit": ["--workload", "bert"], "CNN custom loop": ["--workload", "cnn"]}
LEVELS = ("kernels", "calls", "full")
# The job's wall time under a level, at most this many times the plain job's.
TIME_TARGETS = {"kernels": 1.1, "calls": 1.75}
KERNELS_MB_PER_100_STEPS = 10.0
OBSERVED = ("log", "profile")

# bench.py's table, loaded by its path (bench/ is a directory of scripts).
_SPEC = importlib.util.spec_from_file_location("bench_table", HERE / "bench.py")
assert _SPEC is not None and _SPEC.loader is not None
_bench = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = _bench  # dataclasses look their module up while the class is made
_SPEC.loader.exec_module(_bench)
Row = _bench.Row


def _env() -> dict[str, str]:
    """The machine's environment, less what would change TF's log or our cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_CPP_", "ONEDNN_"))}
    env["TB_OPMODE_CACHE"] = "off"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _job(job: str, steps: int, out: Path) -> list[str]:
    return [PY, str(MAKE_LOGDIR), str(out), "--bare", "--steps", str(steps), *JOBS[job]]


def _plain(job: str, steps: int, work: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(_job(job, steps, work / "plain"), env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{job}: exit {os.waitstatus_to_exitcode(status)}")
    return {"job_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime}


def _size(rundir: Path) -> int:
    return sum(p.stat().st_size for p in rundir.rglob("*") if p.is_file())


def observed_share(rundir: Path) -> tuple[int, int]:
    """(executions whose kernel has log or profile evidence, all executions) of the run,
    as ``tb-opmode summary`` gives them."""
    got = subprocess.run([PY, "-m", "tb_opmode.cli", "summary", str(rundir), "--format", "json"],
                         env=_env(), capture_output=True, text=True, check=True)
    observed = total = 0
    for run in json.loads(got.stdout)["runs"]:
        for row in run["op_types"]:
            for mode in ("eager", "graph"):
                total += row[mode]["executions"]
                observed += sum(k["executions"] for k in row[mode]["kernels"] if k["evidence"] in OBSERVED)
    return observed, total


def _recorded(job: str, level: str, steps: int, work: Path, name: str) -> dict[str, float]:
    logdir = work / "logs"
    t0 = time.perf_counter()
    subprocess.run([PY, "-m", "tb_opmode.cli", "record", str(logdir), "--name", name, "--evidence", level,
                    "--", *_job(job, steps, work / "out")], env=_env(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    total = time.perf_counter() - t0
    rundir = logdir / name
    manifest = json.loads((rundir / "manifest.json").read_text())
    observed, executions = observed_share(rundir)
    sample = {"job_s": manifest["duration_s"], "cpu_s": manifest["cpu_s"], "total_s": total,
              "bytes": _size(rundir),
              "observed": observed, "executions": executions}
    shutil.rmtree(rundir)
    return sample


def measure(steps: int, reps: int, work: Path, levels: tuple[str, ...] = LEVELS
            ) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Per job, per variant (plain and each of ``levels``), one sample per repetition."""
    results: dict[str, dict[str, list[dict[str, float]]]] = {job: {} for job in JOBS}
    for rep in range(reps):
        for job in JOBS:
            for variant in ("plain", *levels):
                name = f"{variant}-{rep}"
                sample = (_plain(job, steps, work) if variant == "plain"
                          else _recorded(job, variant, steps, work, name))
                results[job].setdefault(variant, []).append(sample)
                print(f"{job}, {variant}, repetition {rep + 1}: {sample['job_s']:.1f} s", flush=True)
    return results


def _median(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def record_rows(results: dict[str, dict[str, list[dict[str, float]]]], steps: int) -> list[Any]:
    """The table's ``record`` rows: per job and level, time, evidence size, observed share."""
    rows = []
    for job, variants in results.items():
        plain, plain_cpu = _median(variants["plain"], "job_s"), _median(variants["plain"], "cpu_s")
        for level in [lv for lv in LEVELS if lv in variants]:
            samples = variants[level]
            job_s, total_s = _median(samples, "job_s"), _median(samples, "total_s")
            cpu_s = _median(samples, "cpu_s")
            ratio = job_s / plain
            target = TIME_TARGETS.get(level)
            rows.append(Row("record", f"{job}, {steps} steps: the job under `--evidence {level}` vs plain "
                                      "(wall; CPU beside it)",
                            f"{job_s:.1f} s, CPU {cpu_s:.1f} s (record in all {total_s:.1f} s)",
                            f"plain {plain:.1f} s, CPU {plain_cpu:.1f} s",
                            f"{ratio:.2f}x (CPU {cpu_s / plain_cpu:.2f}x)",
                            f"<= {target}x" if target else "for reference",
                            None if target is None else ratio <= target))
            mb = _median(samples, "bytes") / 1e6
            per_100 = mb * 100 / steps
            rows.append(Row("record", f"{job}, `{level}`: what the run leaves", f"{mb:.1f} MB",
                            "", f"{per_100:.1f} MB per 100 steps",
                            f"< {KERNELS_MB_PER_100_STEPS:.0f} MB per 100 steps" if level == "kernels" else "",
                            per_100 < KERNELS_MB_PER_100_STEPS if level == "kernels" else None))
            observed = sum(s["observed"] for s in samples)
            executions = sum(s["executions"] for s in samples)
            share = observed / executions if executions else 0.0
            rows.append(Row("record", f"{job}, `{level}`: executions whose kernel is observed (log, profile)",
                            f"{share:.1%}", "", f"{observed // len(samples):,} of {executions // len(samples):,}",
                            "", None))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="8 steps, once: the rows, not judged")
    parser.add_argument("--levels", default=",".join(LEVELS),
                        help="the levels to measure, comma-separated (default all; the plain job always)")
    parser.add_argument("--json", help="also write the samples to this file")
    parser.add_argument("--results-dir", metavar="DIR",
                        help="also write the printed table to DIR/<date>-<short commit>-record.md")
    args = parser.parse_args(argv)
    steps, reps = (8, 1) if args.quick else (args.steps, args.reps)
    started = time.strftime("%H:%M")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; python {PY}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="tb_opmode_bench_record_"))
    try:
        levels = tuple(lv for lv in LEVELS if lv in args.levels.split(","))
        results = measure(steps, reps, work, levels)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = record_rows(results, steps)
    judged = not args.quick
    heading = (f"record rows ({'--quick: not judged' if not judged else 'this run'}; {steps} steps, "
               f"{reps} repetitions interleaved; {os.cpu_count()} cores, load average at the end "
               f"{os.getloadavg()[0]:.2f})")
    lines = _bench.table_lines(rows, judged)
    print("\n" + heading + "\n")
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.results_dir:
        directory = Path(args.results_dir)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{time.strftime('%Y-%m-%d')}-{_bench.short_commit()}-record.md"
        command = " ".join(["python bench/bench_record.py", *(sys.argv[1:] if argv is None else argv)])
        path.write_text("\n".join([f"# `{command}`, {time.strftime('%Y-%m-%d')}", "",
                                   f"Started {started}, ended {time.strftime('%H:%M')}; the table as "
                                   "printed. What each row measures: bench/bench_record.py's docstring.",
                                   "", heading, "", *lines]) + "\n")
        print(f"table kept in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
