"""A row of the op table: an op type of the summary contract plus what the table shows.

In: a row of ``contract.run_doc`` (``payloads.OpTypeDoc``) and its run's ``RowFacts``
(profiled time, the dtype and device splits, the modes the dump's buffer cut, what the
dump did not count), which ``view.build_view`` gathers once per run. Out: ``table_row``,
the ``payloads.Row`` that the table pages, filters and sorts, that the overview and the
detail read and the exports write; ``kernel_kind`` (``glance``'s), what the tab colours a
kernel by.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ...analyze.explain import kernel_class
from ...analyze.kernels import is_fused
from ...vocab import EAGER, GRAPH
from ..glance import folded, kernel_kind, kernels_differ
from ..payloads import DtypeSplit, Kernel, KernelDoc, ModeDoc, OpTypeDoc, Row, RowMode, RowOptional, Uncounted
from .dtypes import is_vague

__all__ = ["RowFacts", "table_row", "kernel_kind"]

@dataclass(frozen=True)
class RowFacts:
    """What one run adds to its contract rows, per (op type, mode) unless said."""

    time_ns: Mapping[tuple[str, str], int]            # profiled op time
    dtypes: Mapping[tuple[str, str], list[DtypeSplit]]
    # Executions per device; empty when the run's executions name one device at most.
    devices: Mapping[tuple[str, str], Counter[str]]
    cut_modes: frozenset[str]                        # modes the dump's buffer cut
    uncounted: Mapping[str, Uncounted]               # op type -> graph runs the dump missed


def _kernel(op_type: str, kernel: KernelDoc) -> Kernel:
    name = kernel["name"]
    return {**kernel, "class": kernel_class(name), "kind": kernel_kind(name),
            "fused": bool(kernel.get("fused_into")) or is_fused(name),
            "folded": folded(op_type, name)}


def _contract_mode(op_type: str, doc: ModeDoc) -> RowMode:
    """One mode of the contract's row, its kernels marked."""
    out: RowMode = {"executions": doc["executions"],
                    "kernels": [_kernel(op_type, k) for k in doc["kernels"]]}
    if "time" in doc:
        out["time"] = doc["time"]
    if "explanation" in doc:
        out["explanation"] = doc["explanation"]
    return out


def _row_mode(op_type: str, mode: str, doc: ModeDoc, facts: RowFacts) -> RowMode:
    """One mode of a row: the contract's, its kernels marked, plus the run's facts."""
    out = _contract_mode(op_type, doc)
    key = (op_type, mode)
    if key in facts.time_ns:
        out["time_ns"] = facts.time_ns[key]
    if mode == GRAPH and op_type in facts.uncounted:
        out["uncounted"] = facts.uncounted[op_type]
    if facts.dtypes.get(key):
        out["dtypes"] = facts.dtypes[key]
    if facts.devices.get(key):
        out["devices"] = dict(facts.devices[key])
    if mode in facts.cut_modes and out["executions"]:
        out["lower_bound"] = True
    return out


def _dtype_labels(mode: RowMode) -> set[str]:
    """The dtypes a mode's executions had, where the dump names them."""
    return {e["label"] for e in mode.get("dtypes", []) if not is_vague(e["dtype"])}


def _low_precision(mode: RowMode) -> bool:
    return any(e["low_precision"] for e in mode.get("dtypes", []))


def table_row(doc: OpTypeDoc, facts: RowFacts) -> Row:
    """A row of the contract plus what the table shows and filters on."""
    op_type = doc["op_type"]
    eager = _row_mode(op_type, EAGER, doc["eager"], facts)
    graph = _row_mode(op_type, GRAPH, doc["graph"], facts)
    kernels = eager["kernels"] + graph["kernels"]
    differs = kernels_differ({"op_type": op_type, "eager": eager, "graph": graph})
    marks: RowOptional = {"uncounted": True} if op_type in facts.uncounted else {}
    return {"op_type": op_type, "eager": eager, "graph": graph,
            "total": eager["executions"] + graph["executions"],
            "onednn": any(k["onednn"] for k in kernels),
            "kernel_differs": bool(differs), "kernel_differs_why": differs,
            "fused": any(k["fused"] for k in kernels), **marks,
            "dtypes_differ": len(_dtype_labels(eager) | _dtype_labels(graph)) > 1,
            "low_precision": _low_precision(eager) or _low_precision(graph)}
