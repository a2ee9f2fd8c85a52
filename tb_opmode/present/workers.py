"""The workers and collectives of a run JSON as text, for ``tb-opmode summary``.

In: one run of the JSON contract (``present.contract.run_json``) with the ``workers``
and ``collectives`` that ``analyze.workers`` made. Out: text lines, every string from
the files made printable by ``display``.
"""
from __future__ import annotations

from typing import Any

from ..read.discover import display

__all__ = ["render_workers"]

# A worker's problems listed at most; the rest are counted.
MAX_PROBLEMS = 3
# A device's op types listed at most, busiest first; the rest are in the JSON.
MAX_OP_TYPES = 8


def render_workers(run: dict[str, Any]) -> str:
    """The ``workers`` and ``collectives`` of one run JSON as text for ``tb-opmode
    summary``: per worker and device, executions per mode and the busiest op types with
    their kernels. Every string from the files goes through ``display``."""
    workers = run.get("workers") or []
    if not workers:
        return ""
    lines = [f"  workers: {len(workers)} dump(s)"]
    for w in workers:
        lines += _worker_lines(w)
    lines += [_collective_line(c) for c in run.get("collectives") or []]
    return "\n".join(lines) + "\n"


def _worker_lines(w: dict[str, Any]) -> list[str]:
    """One worker: its task, host and directory, its problems, then each device."""
    who = display(w["task"] or "task ?")
    lines = [f"  {who}  host {display(w['host']) or '?'}  {display(w['directory'])}  "
             f"[{w['status']}]"]
    lines += [f"    ! {display(problem)}" for problem in w["problems"][:MAX_PROBLEMS]]
    if len(w["problems"]) > MAX_PROBLEMS:
        lines.append(f"    ! ... and {len(w['problems']) - MAX_PROBLEMS} more problem(s)")
    for d in w["devices"]:
        lines += _device_lines(d)
    return lines


def _device_lines(d: dict[str, Any]) -> list[str]:
    """One device of a worker: executions per mode, tf.function calls, its busiest op types."""
    functions = (", tf.function calls " + ", ".join(
        f"{display(f['name'])} x{f['calls']}" for f in d["functions"]) if d["functions"] else "")
    lines = [f"    {display(d['device'])}: eager {d['eager_executions']}, "
             f"graph {d['graph_executions']}{functions}"]
    lines += [_op_type_line(row) for row in d["op_types"][:MAX_OP_TYPES]]
    if len(d["op_types"]) > MAX_OP_TYPES:
        lines.append(f"      ... {len(d['op_types']) - MAX_OP_TYPES} more op types (--format json)")
    return lines


def _op_type_line(row: dict[str, Any]) -> str:
    """An op type on a device: per mode that ran it, its executions and kernels."""
    parts = []
    for mode in ("eager", "graph"):
        stats = row[mode]
        if stats["executions"]:
            kernels = ", ".join(f"{display(k['name'])} x{k['executions']} "
                                f"({k['evidence']})" for k in stats["kernels"])
            parts.append(f"{mode} {stats['executions']}: {kernels or '-'}")
    return f"      {display(row['op_type'])}  " + "; ".join(parts)


def _collective_line(c: dict[str, Any]) -> str:
    """A collective op: its executions per worker and mode."""
    per = ", ".join(f"{display(task)} eager {v['eager']} graph {v['graph']}"
                    for task, v in c["workers"].items())
    flag = "" if c.get("in_every_worker", True) else "  (not in every worker)"
    return f"  collective {display(c['op_type'])}: {per}{flag}"
