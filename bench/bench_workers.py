"""Speed-up of ``tb-opmode summary --workers N`` and ``--dask ADDRESS`` on a logdir of
16 dumps (the README's "Multi-worker jobs", docs/multi-worker.md).

In: options (repetitions, pool sizes). Out: on stdout (and as JSON with ``--json``),
per variant the median wall time of a cold summary (cache off: every file is read),
its speed-up against the plain in-process summary as a ratio, the machine's load
average before and after, and whether every variant printed the same JSON (exit 1 if
not).

Input, made once in bench/cache/ (gitignored): ``workers_src``, a real BERT-like
model.fit run by demo/make_logdir.py (``--steps 120 --no-log``: a FULL_HEALTH dump of
~50 MB and a profile), and ``workers_16``, 16 run directories of hard links to it (no
extra disk). Each measured command is a child process; variants are interleaved
within each repetition so that load from other work hits them alike. The Dask
variant runs on a ``LocalCluster`` of 2 worker processes (1 thread each, 127.0.0.1)
started before and stopped after the measurements: an existing cluster, as
``--dask`` expects.

    python bench/bench_workers.py --reps 3
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / "cache"
PY = sys.executable
DUMPS = 16
STEPS = 120


def _marker(path: Path) -> Path:
    return path / ".bench-complete"


def source_run() -> Path:
    """bench/cache/workers_src: one real run (dump + profile), made once."""
    out = CACHE / "workers_src"
    if _marker(out).exists():
        return out
    tmp = CACHE / "workers_src.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [PY, str(ROOT / "demo" / "make_logdir.py"), str(tmp), "--steps", str(STEPS), "--no-log"]
    print(f"generating {out.name}: {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    _marker(out).write_text(" ".join(cmd[1:]) + "\n")
    return out


def sixteen_dumps(src: Path, n: int = DUMPS) -> Path:
    """bench/cache/workers_<n>: ``n`` run directories of hard links to ``src``."""
    out = CACHE / f"workers_{n}"
    if _marker(out).exists():
        return out
    tmp = CACHE / f"workers_{n}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for i in range(n):
        shutil.copytree(src, tmp / f"dump{i:02d}", copy_function=os.link,
                        ignore=shutil.ignore_patterns(_marker(src).name))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    _marker(out).write_text(f"{n} hard-linked copies of {src.name}\n")
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["TB_OPMODE_CACHE"] = "off"  # cold: every file is read by every variant
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_once(logdir: Path, extra: list[str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one ``tb-opmode summary LOGDIR --format json EXTRA``."""
    cmd = [PY, "-m", "tb_opmode.cli", "summary", str(logdir), "--format", "json", *extra]
    began = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - began
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return seconds, proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pools", default="2,4", help="--workers sizes to measure")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    logdir = sixteen_dumps(source_run())
    variants: dict[str, list[str]] = {"in-process": []}
    for n in (int(x) for x in args.pools.split(",") if x):
        variants[f"--workers {n}"] = ["--workers", str(n)]
    cluster = None
    if not args.no_dask:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        variants["--dask (LocalCluster, 2 processes)"] = ["--dask", cluster.scheduler_address]
    times: dict[str, list[float]] = {name: [] for name in variants}
    outputs: dict[str, set[str]] = {name: set() for name in variants}
    load_before = os.getloadavg()
    try:
        for _rep in range(args.reps):
            for name, extra in variants.items():
                seconds, out = run_once(logdir, extra)
                times[name].append(seconds)
                outputs[name].add(out)
    finally:
        if cluster is not None:
            cluster.close()
    load_after = os.getloadavg()
    base = statistics.median(times["in-process"])
    same = len(set().union(*outputs.values())) == 1
    doc = json.loads(next(iter(outputs["in-process"])))
    sources = sum(len(r["sources"]["debugger"]) for r in doc["runs"])
    size = sum(f.stat().st_size for f in logdir.rglob("*") if f.is_file()) // DUMPS
    result: dict[str, Any] = {
        "logdir": str(logdir.relative_to(ROOT)), "dumps": sources, "runs": len(doc["runs"]),
        "bytes_per_run": size, "reps": args.reps, "cpus": os.cpu_count(),
        "load_average_before": load_before, "load_average_after": load_after,
        "variants": {name: {"median_s": statistics.median(t), "runs_s": t,
                            "speedup": base / statistics.median(t)} for name, t in times.items()},
        "same_json": same}
    print(f"{sources} dumps in {len(doc['runs'])} runs ({size / 1e6:.0f} MB each), cache off, "
          f"{args.reps} repetitions, {os.cpu_count()} CPUs")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    for name, v in result["variants"].items():
        print(f"  {name:36s} {v['median_s']:7.2f} s  speed-up {v['speedup']:.2f}x")
    print("same JSON from every variant: " + ("yes" if same else "NO"))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
