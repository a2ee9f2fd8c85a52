"""The workers and collectives of a run JSON as text, for ``tb-opmode summary``.

In: one run of the JSON contract (``present.contract.run_json``) with the ``workers``
and ``collectives`` that ``analyze.workers`` made. Out: text lines, every string from
the files made printable by ``display``.
"""
from __future__ import annotations

from typing import Any

from ..read.discover import display

__all__ = ["render_workers"]


def render_workers(run: dict[str, Any]) -> str:
    """The ``workers`` and ``collectives`` of one run JSON as text for ``tb-opmode
    summary``: per worker and device, executions per mode and the busiest op types with
    their kernels. Every string from the files goes through ``display``."""

    workers = run.get("workers") or []
    if not workers:
        return ""
    lines = [f"  workers: {len(workers)} dump(s)"]
    for w in workers:
        who = display(w["task"] or "task ?")
        lines.append(f"  {who}  host {display(w['host']) or '?'}  {display(w['directory'])}  "
                     f"[{w['status']}]")
        for problem in w["problems"][:3]:
            lines.append(f"    ! {display(problem)}")
        if len(w["problems"]) > 3:
            lines.append(f"    ! ... and {len(w['problems']) - 3} more problem(s)")
        for d in w["devices"]:
            lines.append(f"    {display(d['device'])}: eager {d['eager_executions']}, "
                         f"graph {d['graph_executions']}"
                         + (", tf.function calls " + ", ".join(
                             f"{display(f['name'])} x{f['calls']}" for f in d["functions"])
                            if d["functions"] else ""))
            for row in d["op_types"][:8]:
                parts = []
                for mode in ("eager", "graph"):
                    stats = row[mode]
                    if stats["executions"]:
                        kernels = ", ".join(f"{display(k['name'])} x{k['executions']} "
                                            f"({k['evidence']})" for k in stats["kernels"])
                        parts.append(f"{mode} {stats['executions']}: {kernels or '-'}")
                lines.append(f"      {display(row['op_type'])}  " + "; ".join(parts))
            if len(d["op_types"]) > 8:
                lines.append(f"      ... {len(d['op_types']) - 8} more op types (--format json)")
    for c in run.get("collectives") or []:
        per = ", ".join(f"{display(task)} eager {v['eager']} graph {v['graph']}"
                        for task, v in c["workers"].items())
        flag = "" if c.get("in_every_worker", True) else "  (not in every worker)"
        lines.append(f"  collective {display(c['op_type'])}: {per}{flag}")
    return "\n".join(lines) + "\n"
