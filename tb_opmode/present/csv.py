"""CSV of the summary contract: the one writer behind ``tb-opmode summary --format csv``
and the tab's CSV export.

In: a document shaped like ``contract.summary()`` (``{"runs": [{"run", "op_types": [...]}]}``).
Out: CSV text, one line per (run, op type, mode, kernel); a mode that ran with no
kernel named gets one line with the kernel cells empty.
"""
from __future__ import annotations

import csv
import io
from typing import Any

from ..analyze.explain import kernel_class
from ..vocab import MODES

__all__ = ["render_csv", "CSV_COLUMNS", "CSV_TIME_COLUMNS"]

CSV_COLUMNS = ("run", "op_type", "mode", "executions", "kernel", "kernel_executions", "onednn",
               "evidence")
# Added with ``with_time`` (the tab's export): the kernel's class, the mode's op time (on
# the mode's first line only, so that the column adds up) and the kernel's own op time.
CSV_TIME_COLUMNS = ("kernel_class", "time_ns", "kernel_time_ns")


def render_csv(doc: dict[str, Any], with_time: bool = False) -> str:
    """The CSV text of ``doc``. With ``with_time``, each line also carries the kernel's
    ``explain.kernel_class``; the mode's profiled op time in ns (``time_ns`` of the mode) is on
    the first line of the mode only, empty on its other kernels' lines, so that summing the
    column gives the total; ``kernel_time_ns`` is the kernel's own profiled time (the
    kernel's ``time.total_ms``), empty when the profile has none for it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS + (CSV_TIME_COLUMNS if with_time else ()))
    for run in doc["runs"]:
        for r in run["op_types"]:
            for mode in MODES:
                stats = r[mode]
                if not stats["executions"] and not stats["kernels"]:
                    continue
                for i, k in enumerate(stats["kernels"] or [None]):
                    line = [run["run"], r["op_type"], mode, stats["executions"],
                            k["name"] if k else "", k["executions"] if k else "",
                            str(k["onednn"]).lower() if k else "", k["evidence"] if k else ""]
                    if with_time:
                        own = (k or {}).get("time") or {}
                        line += [kernel_class(k["name"]) if k else "unknown",
                                 stats.get("time_ns", "") if i == 0 else "",
                                 round(own["total_ms"] * 1e6) if "total_ms" in own else ""]
                    writer.writerow(line)
    return out.getvalue()
