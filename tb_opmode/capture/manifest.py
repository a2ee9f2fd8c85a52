"""``manifest.json``: what a recorded run directory holds and how it was made.

In: the recording's plan and command, how the job ended, and the facts each of the job's
TensorFlow processes wrote (``job.<pid>.json``, folded in and removed). Out:
``RUNDIR/manifest.json``, written as the job starts (a run whose recorder was killed still
says what it is) and again when it ends: the command, the working directory, the evidence
level, the window of steps, start, end, the job's wall and CPU time, the exit status or signal, the TF and oneDNN
environment variables (those the recording set and those the user had, by name and
value), the TensorFlow version, the CPU's flags (``/proc/cpuinfo``) and TF's own line
naming the instruction sets it was not built for, each process's facts, and the files.
"""
from __future__ import annotations

import glob
import json
import os
import re
import signal
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from .. import __version__
from .inprocess import JOB_FACTS, TRACE_LOG
from .plan import Plan

__all__ = ["FILE", "FORMAT", "STDOUT", "STDERR", "begin", "end", "cpu_flags", "tf_cpu_line"]

FILE = "manifest.json"
FORMAT = "tb_opmode.record/1"
STDOUT = "stdout.log"
STDERR = "stderr.log"
# Variables that change what TensorFlow, Keras or oneDNN does or logs. Named, not "TF_*":
# other tools use that prefix too (Terraform's TF_VAR_* may hold secrets).
_RELEVANT = ("TF_CPP_", "TF_ENABLE_", "TF_DISABLE_", "TF_ONEDNN_", "TF_MKL_", "TF_NUM_", "TF_XLA_",
             "TF_USE_", "TF_DETERMINISTIC_OPS", "TF_GPU_", "TF_FORCE_", "TF_CONFIG", "TF_INTRA_OP_",
             "TF_INTER_OP_", "KERAS_BACKEND", "ONEDNN_", "DNNL_", "MKL_", "KMP_", "OMP_")
# TF's start-up line (cpu_feature_guard): the instruction sets this CPU has that the
# binary was not compiled for; it comes early in stderr.
_TF_CPU = re.compile(rb"To enable the following instructions: ([A-Za-z0-9_ ]+?), in other operations")
_HEAD = 4 << 20


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _write(rundir: str, doc: Mapping[str, Any]) -> None:
    path = os.path.join(rundir, FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(f"{path}.tmp", path)


def cpu_flags(path: str = "/proc/cpuinfo") -> Optional[dict[str, Any]]:
    """The first processor's model name and flags; None where there is no such file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return {"model": fields.get("model name"), "flags": sorted(fields.get("flags", "").split())}


def tf_cpu_line(stderr_path: str) -> Optional[list[str]]:
    """The instruction sets TF's start-up line names, from the head of the job's stderr."""
    try:
        with open(stderr_path, "rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return None
    m = _TF_CPU.search(head)
    return m.group(1).decode().split() if m else None


def begin(plan: Plan, command: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any]:
    """The manifest as the job starts (written, and returned for ``end``)."""
    doc: dict[str, Any] = {
        "format": FORMAT, "tb_opmode_version": __version__,
        "evidence": plan.level.name, "evidence_means": plan.level.says,
        "dump_mode": plan.level.dump_mode, "steps": list(plan.settings.steps),
        "command": list(command), "cwd": os.getcwd(), "host": socket.gethostname(),
        "started": _now(), "ended": None, "duration_s": None, "cpu_s": None,
        "exit_status": None, "signal": None,
        "environment": {
            "set_by_record": dict(plan.variables),
            "from_the_user": {k: v for k, v in sorted(environ.items())
                              if k.startswith(_RELEVANT) and k not in plan.variables},
        },
        "files": {"stdout": STDOUT, "stderr": STDERR, "trace_log": TRACE_LOG},
        "cpu": cpu_flags(), "tensorflow_version": None, "processes": [],
    }
    _write(plan.rundir, doc)
    return doc


def _job_facts(rundir: str) -> list[dict[str, Any]]:
    """Each process's facts, oldest first, the files removed once read."""
    found = []
    for path in glob.glob(os.path.join(rundir, JOB_FACTS.format(pid="*"))):
        try:
            with open(path, encoding="utf-8") as f:
                found.append(json.load(f))
            os.remove(path)
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda facts: facts.get("imported_at") or 0)


def _status(returncode: Optional[int]) -> dict[str, Any]:
    """``exit_status`` and ``signal`` of a return code as ``subprocess`` gives it: a
    signal N as the shell says it, 128 + N."""
    if returncode is None or returncode >= 0:
        return {"exit_status": returncode, "signal": None}
    return {"exit_status": 128 - returncode, "signal": signal.Signals(-returncode).name}


def end(rundir: str, doc: dict[str, Any], returncode: Optional[int], duration_s: float,
        cpu_s: Optional[float] = None, problem: Optional[str] = None) -> dict[str, Any]:
    """The manifest once the job has ended: ``returncode`` as ``subprocess`` gives it
    (negative: killed by that signal; None: no exit status, e.g. an exception in a
    ``tb_opmode.record`` block, said in ``problem``); ``duration_s``, the job's wall time;
    ``cpu_s``, its CPU time (user + system, with the children it waited for), where known."""
    processes = doc["processes"] + _job_facts(rundir)
    recorded = next((p for p in processes if p.get("recording")), None)
    doc.update(ended=_now(), duration_s=round(duration_s, 3), processes=processes,
               cpu_s=None if cpu_s is None else round(cpu_s, 3),
               tensorflow_version=(recorded or {}).get("tensorflow_version"), **_status(returncode))
    doc["cpu"] = {**(doc.get("cpu") or {}),
                  "tensorflow_cpu_feature_guard": tf_cpu_line(os.path.join(rundir, STDERR))}
    if problem:
        doc["problem"] = problem
    _write(rundir, doc)
    return doc
