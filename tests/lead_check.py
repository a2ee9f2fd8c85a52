"""Whether the answer's plain sentences (``present.lead``) agree with the chips and counts.

In: a run's directory. Out: ``disagreements``, one line per (op type, mode) whose visible
sentence says another count, another kernel or another kind (oneDNN, stock, no kernel)
than the row the tab's chips are drawn from; empty when every one agrees.

The chips' verdict is computed here as ``frontend/dom.js``'s ``verdict`` does, from the
row's kernels, with no code of the product's sentence rules; the sentences are read as
text, as a user reads them.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tb_opmode.analyze.assemble import load
from tb_opmode.present.tab import build_view, op_detail

__all__ = ["disagreements", "chip_verdict", "leads_of"]

_RAN = ("onednn", "stock")
_NAMED = re.compile(r"(oneDNN|stock) `([^`]+)`")


def chip_verdict(stats: dict[str, Any]) -> str:
    """The verdict chip of a mode, as dom.js's ``verdict`` words it."""
    ran = [k for k in stats["kernels"] if k["kind"] in _RAN]
    onednn = sum(k["executions"] for k in ran if k["kind"] == "onednn")
    total = sum(k["executions"] for k in ran)
    if not total:
        removed = any(k["kind"] == "removed" for k in stats["kernels"])
        return "no kernel ran" if removed else "kernel unknown"
    if onednn == total:
        return "oneDNN"
    return "not oneDNN (stock)" if not onednn else f"partly oneDNN ({onednn} of {total})"


def _count_words(stats: dict[str, Any]) -> str:
    return f"{'at least ' if stats.get('lower_bound') else ''}{stats['executions']}×"


def _mode_problems(op: str, mode: str, text: str, stats: dict[str, Any]) -> list[str]:
    where = f"{op} {mode}: {text!r}"
    if not stats["executions"]:
        ok = "did not run" in text or "did not count" in text
        return [] if ok else [f"{where} names executions the row does not have"]
    out = []
    if _count_words(stats) not in text:
        out.append(f"{where} lacks the count {_count_words(stats)}")
    kernels = stats["kernels"]
    if len(kernels) > 1:   # the split is said: each group's count, and what it ran
        for k in kernels:
            if f"{k['executions']} ran" not in text and f"{k['executions']} with" not in text:
                out.append(f"{where} lacks the split {k['executions']} of {k['name']}")
    verdict = chip_verdict(stats)
    named = _NAMED.findall(text)
    if verdict == "oneDNN" and any(kind == "stock" for kind, _n in named):
        out.append(f"{where} calls a kernel stock beside the chip {verdict!r}")
    if verdict == "not oneDNN (stock)" and any(kind == "oneDNN" for kind, _n in named):
        out.append(f"{where} calls a kernel oneDNN beside the chip {verdict!r}")
    return out


def _kernel_problems(op: str, text: str, row: dict[str, Any]) -> list[str]:
    """Every kernel the kernel sentence names ran, of the kind it says, in a mode."""
    ran = {(k["name"], k["kind"]) for mode in ("eager", "graph") for k in row[mode]["kernels"]}
    out = []
    for kind, name in _NAMED.findall(text):
        if (name, "onednn" if kind == "oneDNN" else "stock") not in ran:
            out.append(f"{op} kernel: {text!r} says {kind} {name}, which no chip shows")
    if row["kernel_differs"] and "differs" not in text:
        out.append(f"{op} kernel: {text!r} beside the chip 'kernel differs'")
    return out


def leads_of(logdir: Path | str) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """(row, lead) of every op type of every run of a logdir."""
    out = []
    for model in load(str(logdir)):
        view = build_view(model, str(logdir), timeline=False)
        for op in view.rows:
            detail: dict[str, Any] = dict(op_detail(view, op))
            out.append((detail, dict(detail["lead"])))
    return out


def disagreements(logdir: Path | str) -> list[str]:
    """Each (op type, mode) whose sentence disagrees with its row; [] when all agree."""
    out: list[str] = []
    for row, lead in leads_of(logdir):
        op = row["op_type"]
        for mode in ("eager", "graph"):
            out += _mode_problems(op, mode, lead[mode], row[mode])
        out += _kernel_problems(op, lead["kernel"], row)
    return out
