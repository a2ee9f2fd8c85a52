"""The op route: one op type, all of it (``frontend/detail.js`` shows it).

In: a ``view.RunView`` and an op type of it. Out: ``op_detail``, the
``payloads.OpDetail``: the op type's row plus the answer first (``lead.lead``: a
sentence per mode and one on its kernels), the evidence per mode in plain words, the
explanation and its short why (``short_why``) per mode, the kernels grappler fused it
into, its call sites with their source lines (``analyze.explain.call_sites``) and the
graphs that hold it (``analyze.explain.function_graphs``). Explanations are made here,
on request: they are long, and the view keeps none. An op type the run does not have
raises ``errors.UnknownOpType``; a number of sites out of range ``errors.BadParameter``.
"""
from __future__ import annotations

import re
from typing import Any, cast

from ...analyze.explain import call_sites, explain, function_graphs, kernel_class
from ...analyze.nodes import canonical_op
from ...errors import BadParameter, UnknownOpType
from ...model import KernelUse, ModeStats, OpTypeRow, RunModel
from ...vocab import KIND_FUSED, MODES
from ..lead import lead
from ..payloads import FusedInto, GraphEntry, OpDetail, OpDetailOptional, Site
from .limits import DEFAULT_SITES, MAX_FUSED_NODES_SHOWN, MAX_GRAPHS, MAX_SITES, SNIPPET_CONTEXT, WHY_SENTENCES
from .view import RunView

__all__ = ["op_detail", "short_why"]

_EVIDENCE_SOURCE = {"log": "the TensorFlow log", "profile": "the profiler trace",
                    "inferred": "inferred, not observed"}
_CLASS_WORD = {"onednn": "oneDNN", "fused": "fused", "stock": "stock", "unknown": "no kernel"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(]|\d+ of \d+: )")
# Sentences every explanation of a mode carries: in the full text only.
_GENERIC = ("Rules as of", "A graph op runs each time")


def _kernel_evidence(mode: str, stats: ModeStats, k: KernelUse) -> str:
    text = (f"{mode}: {k.name} ({_CLASS_WORD[kernel_class(k.name)]}) for {k.executions} "
            f"of {stats.executions} executions; evidence: "
            f"{_EVIDENCE_SOURCE.get(k.evidence, k.evidence)}")
    return text + f" ({'; '.join(k.notes)})" if k.notes else text


def _evidence_lines(row: OpTypeRow) -> list[str]:
    """Plain statements of what was seen, per mode (shown when no explanation exists)."""
    out: list[str] = []
    for mode in MODES:
        stats = row.mode(mode)
        if stats.kernels:
            out.extend(_kernel_evidence(mode, stats, k) for k in stats.kernels)
        elif stats.executions:
            out.append(f"{mode}: {stats.executions} executions; no kernel name was seen "
                       f"(no log line or profiler event names one)")
    return out


def short_why(explanation: str) -> str:
    """The why of an explanation in a few sentences: without its first one (how often and
    from where, which the tab shows as numbers and call sites) and the closing "Rules as
    of ..." (in the full text)."""
    sentences = [t for t in _SENTENCE.split(explanation.strip()) if t]
    body = [t for t in sentences[1:] if not t.startswith(_GENERIC)] or sentences[:1]
    return " ".join(body[:WHY_SENTENCES])


def _explanations(model: RunModel, row: OpTypeRow) -> OpDetailOptional:
    """The explanation of each mode the op type ran in, and its short why."""
    explained = explain(model, row.op_type)
    texts = {mode: explained[mode]["explanation"] for mode in MODES if row.mode(mode).executions}
    if not texts:
        return {}
    return {"explanation": texts,
            "why": {mode: short_why(text) for mode, text in texts.items() if text}}


def _fused_away(op_type: str, k: KernelUse) -> bool:
    """A graph kernel the op type was fused into: one grappler names its nodes for, or a
    fused kernel of another op."""
    return bool(k.fused_into) or (canonical_op(k.name) != op_type
                                  and kernel_class(k.name) == KIND_FUSED)


def _fusions(row: OpTypeRow) -> list[FusedInto]:
    return [{"kernel": k.name, "executions": k.executions, "evidence": k.evidence,
             "onednn": k.onednn, "nodes": k.fused_into[:MAX_FUSED_NODES_SHOWN]}
            for k in row.graph.kernels if _fused_away(row.op_type, k)]


def _graph_entry(graph: dict[str, Any]) -> GraphEntry:
    """A graph of ``function_graphs`` with the names the tab shows: ``outer`` is the
    outermost tf.function it belongs to, when that is another graph."""
    outer = graph["function"] if graph["function"] != graph["graph"] else ""
    return cast(GraphEntry, dict(graph, name=graph["graph"], outer=outer))


def op_detail(view: RunView, op_type: str, sites: int = DEFAULT_SITES) -> OpDetail:
    """Everything about one op type; ``UnknownOpType`` if the run has no such op type."""
    if op_type not in view.rows:
        raise UnknownOpType(f"run {view.doc['run']!r} has no op type {op_type!r}")
    if not 1 <= sites <= MAX_SITES:
        raise BadParameter(f"sites must be between 1 and {MAX_SITES}")
    model = view.model
    row = model.op_types[op_type]
    extras = _explanations(model, row)
    fused = _fusions(row)
    if fused:
        extras["fused_into"] = fused
    # analyze.explain builds sites and graphs as plain dicts; payloads name their shapes.
    found = {mode: cast(list[Site], call_sites(model, op_type, mode, limit=None,
                                               context=SNIPPET_CONTEXT, via=True))
             for mode in MODES}
    graphs = function_graphs(model, op_type)
    return {**view.rows[op_type], "lead": lead(model, view.rows[op_type]),
            "evidence": _evidence_lines(row), **extras,
            "call_sites": {mode: found[mode][:sites] for mode in MODES},
            "call_sites_total": {mode: len(found[mode]) for mode in MODES},
            "graphs": [_graph_entry(g) for g in graphs[:MAX_GRAPHS]],
            "graphs_total": len(graphs)}
