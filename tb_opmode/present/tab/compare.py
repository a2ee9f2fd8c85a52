"""The compare route: what changed per op type between two runs
(``frontend/compare.js`` shows it).

In: two ``view.RunView``s, ``a`` and ``b``. Out: ``compare``, the
``payloads.Comparison``: both runs in brief, and per op type that either has, each
mode's executions, kernels (with their classes) and time on each side, and what
changed (the mode, the count, the kernel, or whether a kernel is known at all); rows
with a kernel change first. Pages out of range raise ``errors.BadParameter``.
"""
from __future__ import annotations

from typing import Optional

from ...analyze.explain import kernel_class
from ...vocab import EAGER, GRAPH
from ..payloads import CompareMode, CompareRow, CompareSide, Comparison, Row, RunBrief, of_mode
from .limits import DEFAULT_COMPARE_PAGE_SIZE
from .view import RunView, onednn_state, page_slice

__all__ = ["compare"]

# A change of the kernels is "<mode> kernel" (``kernel_changed`` looks for it); one of
# whether a kernel is known at all, "<mode> kernel evidence".
_KERNEL_CHANGE = " kernel"


def _side(row: Optional[Row], mode: str) -> CompareSide:
    """One run's side of an op type in ``mode`` (nothing, if the run lacks the op type)."""
    if row is None:
        return {"executions": 0, "kernels": [], "classes": [], "time_ns": None}
    stats = of_mode(row, mode)
    kernels = sorted({k["name"] for k in stats["kernels"]})
    return {"executions": stats["executions"], "kernels": kernels,
            "classes": [kernel_class(k) for k in kernels], "time_ns": stats.get("time_ns")}


def _compare_mode(mode: str, a: Optional[Row], b: Optional[Row]) -> CompareMode:
    side_a, side_b = _side(a, mode), _side(b, mode)
    ta, tb = side_a["time_ns"], side_b["time_ns"]
    return {"a": side_a, "b": side_b,
            "time_delta_ns": (tb - ta) if ta is not None and tb is not None else None}


def _changes(mode: str, sides: CompareMode) -> list[str]:
    """What changed in ``mode``: whether it ran at all, else its count; the kernels, else
    whether a kernel is known (where both ran)."""
    a, b = sides["a"], sides["b"]
    na, nb, ka, kb = a["executions"], b["executions"], a["kernels"], b["kernels"]
    out = []
    if bool(na) != bool(nb):
        out.append(f"{mode} mode")
    elif na != nb:
        out.append(f"{mode} count")
    if ka and kb and ka != kb:
        out.append(f"{mode}{_KERNEL_CHANGE}")
    elif bool(ka) != bool(kb) and na and nb:
        out.append(f"{mode}{_KERNEL_CHANGE} evidence")
    return out


def _compare_row(op_type: str, a: Optional[Row], b: Optional[Row]) -> CompareRow:
    eager, graph = _compare_mode(EAGER, a, b), _compare_mode(GRAPH, a, b)
    changes = _changes(EAGER, eager) + _changes(GRAPH, graph)
    return {"op_type": op_type, "eager": eager, "graph": graph, "changes": changes,
            "kernel_changed": any(c.endswith(_KERNEL_CHANGE) for c in changes)}


def _run_brief(view: RunView) -> RunBrief:
    doc = view.doc
    state, reason = onednn_state(view)
    return {"run": doc["run"], "tensorflow_version": doc["tensorflow_version"],
            "onednn_enabled": doc["onednn_enabled"], "onednn_source": doc["onednn_source"],
            "onednn_state": state, "onednn_reason": reason}


def compare(a: RunView, b: RunView, changed_only: bool = True, page: int = 0,
            page_size: int = DEFAULT_COMPARE_PAGE_SIZE) -> Comparison:
    """Op types whose mode counts or kernels differ between runs ``a`` and ``b`` (with
    ``changed_only`` False, every op type either run has)."""
    window = page_slice(page, page_size)
    every = (_compare_row(op, a.rows.get(op), b.rows.get(op))
             for op in sorted(set(a.rows) | set(b.rows)))
    rows = [r for r in every if r["changes"] or not changed_only]
    rows.sort(key=lambda r: (not r["kernel_changed"], -len(r["changes"]), r["op_type"]))
    return {"a": _run_brief(a), "b": _run_brief(b),
            "total": len(rows), "kernel_changes": sum(1 for r in rows if r["kernel_changed"]),
            "page": page, "page_size": page_size, "rows": rows[window]}
