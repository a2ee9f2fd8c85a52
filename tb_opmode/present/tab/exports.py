"""The export route's downloads: the run as CSV and as JSON (the timeline's trace is
``timeline.export_trace``).

In: a ``view.RunView``. Out: ``export_csv`` (``tb-opmode summary --format csv`` of the
run, plus each kernel's class and the mode's time), ``export_json`` (the summary
contract of the run, explanations included, its rows the table's: ``payloads.ExportDoc``)
and ``dumps_json``, the compact text of a download.
"""
from __future__ import annotations

import json
from typing import Any

from ...vocab import EAGER, GRAPH
from ..contract import summary_doc
from ..csv import render_csv
from ..payloads import ExportDoc, ModeDoc, OpTypeDoc, Row, RowMode, of_mode
from .table import op_rows
from .view import RunView

__all__ = ["export_csv", "export_json", "dumps_json"]


def export_csv(view: RunView) -> str:
    """``tb-opmode summary --format csv`` of this run (rows in the table's default order),
    plus each kernel's class and the mode's op time."""
    return render_csv({"runs": [{**view.doc, "op_types": op_rows(view)}]}, with_time=True)


def _explained_mode(mode: RowMode, doc: ModeDoc) -> RowMode:
    text = doc.get("explanation")
    return {**mode, "explanation": text} if text else mode


def _explained_row(row: Row, doc: OpTypeDoc) -> Row:
    """A row with the explanation of each mode the contract explains."""
    return {**row, "eager": _explained_mode(of_mode(row, EAGER), of_mode(doc, EAGER)),
            "graph": _explained_mode(of_mode(row, GRAPH), of_mode(doc, GRAPH))}


def export_json(view: RunView) -> ExportDoc:
    """The CLI's JSON contract (``tb-opmode summary --format json``: ``{"version",
    "warnings", "runs": [...]}``) for this run, explanations included, its rows with the
    table's fields: kernel classes, per-mode time in ns, totals and flags."""
    doc = summary_doc([view.model], view.logdir)
    run = doc["runs"][0]
    explained = {r["op_type"]: r for r in run["op_types"]}
    rows = [_explained_row(row, explained[row["op_type"]]) for row in op_rows(view)]
    return {**doc, "runs": [{**run, "op_types": rows, "tensor_debug_modes": view.dump_modes}]}


def dumps_json(value: Any) -> str:
    """Compact JSON text for a download."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)
