"""CSV of the summary contract: the one writer behind ``tb-opmode summary --format csv``
and the tab's CSV export.

In: a document shaped like ``contract.summary()`` (``{"runs": [{"run", "op_types": [...]}]}``).
Out: CSV text, one line per (run, op type, mode, kernel); a mode that ran with no
kernel named gets one line with the kernel cells empty.
"""
from __future__ import annotations

import csv
import io
from typing import Any, Optional

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
        for row in run["op_types"]:
            for mode in MODES:
                writer.writerows(_mode_lines(run["run"], row, mode, with_time))
    return out.getvalue()


def _mode_lines(run: str, row: dict[str, Any], mode: str, with_time: bool) -> list[list[Any]]:
    """The lines of one op type in one mode: one per kernel, or one with the kernel cells
    empty when it ran with none named; none when it did not run in that mode."""
    stats = row[mode]
    if not stats["executions"] and not stats["kernels"]:
        return []
    lines = []
    for i, k in enumerate(stats["kernels"] or [None]):
        line = [run, row["op_type"], mode, stats["executions"], *_kernel_cells(k)]
        if with_time:
            line += _time_cells(k, stats.get("time_ns", "") if i == 0 else "")
        lines.append(line)
    return lines


def _kernel_cells(k: Optional[dict[str, Any]]) -> list[Any]:
    """kernel, kernel_executions, onednn, evidence."""
    if not k:
        return ["", "", "", ""]
    return [k["name"], k["executions"], str(k["onednn"]).lower(), k["evidence"]]


def _time_cells(k: Optional[dict[str, Any]], mode_time: Any) -> list[Any]:
    """kernel_class, time_ns (``mode_time``: the mode's, on its first line only),
    kernel_time_ns."""
    own = (k or {}).get("time") or {}
    return [kernel_class(k["name"]) if k else "unknown", mode_time,
            round(own["total_ms"] * 1e6) if "total_ms" in own else ""]
