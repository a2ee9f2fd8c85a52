"""The compare route: what changed per op type between two runs
(``frontend/compare.js`` shows it).

In: two ``view.RunView``s, ``a`` and ``b``. Out: ``compare``, the
``payloads.Comparison``: both runs in brief (with the evidence each was made from: the
recording level, its dump, a profile, the log), ``evidence_note`` where that differs,
and per op type that either has, each mode's executions, kernels (with their classes,
and whether each was seen running) and time on each side, and what changed (the mode,
the count, the kernel, or only the kernel evidence); rows with a kernel change first.

A "kernel" change is one between kernels both runs saw run (a log line or a profile
event); where only what the evidence can attribute differs (no kernel: removed by
grappler, a node constant-folded to ``Const``, an unknown or inferred kernel), it is a
"kernel evidence" change: a run without a dump cannot see those. Pages out of range
raise ``errors.BadParameter``.
"""
from __future__ import annotations

from typing import Optional

from ...analyze.explain import kernel_class
from ...vocab import EAGER, GRAPH, INFERRED, KIND_REMOVED, KIND_UNKNOWN
from ..payloads import CompareMode, CompareRow, CompareSide, Comparison, Kernel, Row, RunBrief, of_mode
from ..recording import ended_text
from .limits import DEFAULT_COMPARE_PAGE_SIZE
from .view import RunView, onednn_state, page_slice

__all__ = ["compare"]

# A change of the kernels is "<mode> kernel" (``kernel_changed`` looks for it); one of
# only what the evidence attributes (or whether a kernel is known at all), "<mode> kernel
# evidence".
_KERNEL_CHANGE = " kernel"
_EVIDENCE_CHANGE = " kernel evidence"


def _seen(k: Kernel) -> bool:
    """Whether a log line or profile event shows the kernel run: not a node grappler
    removed or folded, nor an unknown or inferred kernel."""
    return k["kind"] not in (KIND_REMOVED, KIND_UNKNOWN) and not k["folded"] and k["evidence"] != INFERRED


def _side(row: Optional[Row], mode: str) -> CompareSide:
    """One run's side of an op type in ``mode`` (nothing, if the run lacks the op type)."""
    if row is None:
        return {"executions": 0, "kernels": [], "classes": [], "seen": [], "time_ns": None}
    stats = of_mode(row, mode)
    seen: dict[str, bool] = {}
    for k in stats["kernels"]:
        seen[k["name"]] = seen.get(k["name"], False) or _seen(k)
    kernels = sorted(seen)
    return {"executions": stats["executions"], "kernels": kernels,
            "classes": [kernel_class(k) for k in kernels], "seen": [seen[k] for k in kernels],
            "time_ns": stats.get("time_ns")}


def _compare_mode(mode: str, a: Optional[Row], b: Optional[Row]) -> CompareMode:
    side_a, side_b = _side(a, mode), _side(b, mode)
    ta, tb = side_a["time_ns"], side_b["time_ns"]
    return {"a": side_a, "b": side_b,
            "time_delta_ns": (tb - ta) if ta is not None and tb is not None else None}


def _changes(mode: str, sides: CompareMode, same_evidence: bool) -> list[str]:
    """What changed in ``mode``: whether it ran at all, else its count; the kernels both
    runs saw run, else (where both ran) the rest of the kernels: a kernel change where
    both runs had the same evidence and saw a kernel run, else a kernel evidence one."""
    a, b = sides["a"], sides["b"]
    na, nb, ka, kb = a["executions"], b["executions"], a["kernels"], b["kernels"]
    out = []
    if bool(na) != bool(nb):
        out.append(f"{mode} mode")
    elif na != nb:
        out.append(f"{mode} count")
    seen_a = {k for k, s in zip(ka, a["seen"]) if s}
    seen_b = {k for k, s in zip(kb, b["seen"]) if s}
    if seen_a and seen_b and seen_a != seen_b:
        out.append(f"{mode}{_KERNEL_CHANGE}")
    elif ka != kb and na and nb:
        real = same_evidence and seen_a and seen_b
        out.append(f"{mode}{_KERNEL_CHANGE if real else _EVIDENCE_CHANGE}")
    return out


def _compare_row(op_type: str, a: Optional[Row], b: Optional[Row], same_evidence: bool) -> CompareRow:
    eager, graph = _compare_mode(EAGER, a, b), _compare_mode(GRAPH, a, b)
    changes = _changes(EAGER, eager, same_evidence) + _changes(GRAPH, graph, same_evidence)
    return {"op_type": op_type, "eager": eager, "graph": graph, "changes": changes,
            "kernel_changed": any(c.endswith(_KERNEL_CHANGE) for c in changes)}


def _evidence(view: RunView) -> str:
    """What the run was made from, in words: how it was recorded, its dump, profile and log."""
    m, r = view.model, view.model.recorded
    level = f"tb-opmode record --evidence {r.evidence}" if r and r.evidence else "made by hand"
    has = {k: bool(m.sources.get(k)) for k in ("debugger", "profile", "logs")}
    mode = (r.dump_mode if r else None) or m.reads_tensors
    dump = (f"a {mode} dump" if mode else "a dump") if has["debugger"] else "no dump"
    return (f"{level}: {dump}, {'a profile' if has['profile'] else 'no profile'}, "
            f"{'the log' if has['logs'] else 'no log'}")


def _run_brief(view: RunView) -> RunBrief:
    doc = view.doc
    state, reason = onednn_state(view)
    r = view.model.recorded
    return {"run": doc["run"], "tensorflow_version": doc["tensorflow_version"],
            "onednn_enabled": doc["onednn_enabled"], "onednn_source": doc["onednn_source"],
            "onednn_state": state, "onednn_reason": reason, "evidence": _evidence(view),
            "command": list(r.command) if r else [],
            "ended": ended_text(r.exit_status, r.signal) if r else ""}


def _evidence_note(a: RunBrief, b: RunBrief) -> str:
    """"" where both runs were made from the same evidence; else what differs, and what
    that does to the comparison."""
    if a["evidence"] == b["evidence"]:
        return ""
    return (f"The two runs were made from different evidence (A: {a['evidence']}; B: "
            f"{b['evidence']}). What only one run's evidence can attribute (no kernel: removed "
            "by grappler; a node constant-folded to Const; an unknown or inferred kernel) "
            "shows on one side for that reason: such a difference is marked \"evidence differs\", "
            "not a kernel change. Counts may differ for the same reason.")


def compare(a: RunView, b: RunView, changed_only: bool = True, page: int = 0,
            page_size: int = DEFAULT_COMPARE_PAGE_SIZE) -> Comparison:
    """Op types whose mode counts or kernels differ between runs ``a`` and ``b`` (with
    ``changed_only`` False, every op type either run has)."""
    window = page_slice(page, page_size)
    brief_a, brief_b = _run_brief(a), _run_brief(b)
    same = brief_a["evidence"] == brief_b["evidence"]
    every = (_compare_row(op, a.rows.get(op), b.rows.get(op), same)
             for op in sorted(set(a.rows) | set(b.rows)))
    rows = [r for r in every if r["changes"] or not changed_only]
    rows.sort(key=lambda r: (not r["kernel_changed"], -len(r["changes"]), r["op_type"]))
    return {"a": brief_a, "b": brief_b, "evidence_note": _evidence_note(brief_a, brief_b),
            "total": len(rows), "kernel_changes": sum(1 for r in rows if r["kernel_changed"]),
            "evidence_changes": sum(1 for r in rows
                                    if any(c.endswith(_EVIDENCE_CHANGE) for c in r["changes"])),
            "page": page, "page_size": page_size, "rows": rows[window]}
