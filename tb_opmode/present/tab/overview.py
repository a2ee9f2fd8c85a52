"""The overview route: a run at a glance and in full (``frontend/overview.js`` shows it).

In: a ``view.RunView``. Out: ``overview``, the ``payloads.Overview``: the run's facts
(TensorFlow, oneDNN and how we know, the CPU), per mode its totals and shares, the mode
x kernel class matrix and the mode x kind cells, the answer at a glance, what the dump
counts, dtypes, devices, unknown kernels grouped by why (``unknowns``), tf.functions
(every graph called, and the trace ledger's counts, as the Functions card has them),
ONEDNN_VERBOSE primitives, XLA functions and the profile's span. Each is made by a
builder of its own below; the payload lists them in the order the tab shows them.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Callable, Optional, cast

from ...analyze.explain import kernel_class
from ...analyze.kernels import cpu_from_kernels, is_fused
from ...model import ModeStats, RunModel
from ...read.tfdbg import DTYPE_UNKNOWN
from ...vocab import GRAPH, KERNEL_KINDS, KIND_FUSED, KIND_ONEDNN, KIND_REMOVED, KIND_STOCK, KIND_UNKNOWN, MODES
from ..glance import both_modes, one_mode_only, premises, uncounted_line
from ..payloads import (
    CappedVerbose,
    CpuFacts,
    DeviceTotals,
    DtypeSplit,
    DtypeTotals,
    DumpCoverage,
    FunctionCalls,
    FunctionsBrief,
    Glance,
    KindCell,
    MatrixCell,
    ModeTotals,
    OnednnVerbose,
    Overview,
    ProfileFacts,
    Row,
    UnknownGroup,
    Unknowns,
    of_mode,
)
from .dtypes import dtype_label
from .dump import dump_gap, dump_records
from .limits import (
    GLANCE_ROWS,
    MAX_DUMP_COVERAGE_OP_TYPES,
    MAX_FUNCTIONS,
    MAX_GLANCE_NAMES,
    MAX_OUTSIDE_TABLE_PER_MODE,
    MAX_PRIMITIVES,
    MAX_UNKNOWN_GROUPS,
    MAX_WARNINGS,
)
from .rows import kernel_kind
from .view import RunView, onednn_state

__all__ = ["overview", "unknowns", "cpu_facts", "KINDS"]

# What the tab colours a kernel by (with the mode): oneDNN or stock when a kernel ran;
# "removed" when grappler took the op out (no kernel ran); "unknown" when no evidence
# decides. Fusion is a separate mark (a kernel's ``fused``), never a colour of its own.
KINDS = KERNEL_KINDS
# The matrix's kernel classes, in the order its cells are listed for each mode.
_MATRIX_CLASSES = (KIND_ONEDNN, KIND_STOCK, KIND_FUSED, KIND_UNKNOWN)


# ---------------------------------------------------------------- per mode

def _scale(stats: ModeStats) -> float:
    """A log can count more executions than the dump saw (it ran longer): the share of
    each kernel's executions that the mode's count keeps."""
    known = sum(k.executions for k in stats.kernels)
    return stats.executions / known if known > stats.executions else 1.0


def _class_of_mode(stats: ModeStats, classify: Callable[[str], str] = kernel_class
                   ) -> dict[str, int]:
    """Executions of one op type in one mode per kernel class (+ ``unknown``)."""
    out: Counter[str] = Counter()
    scale = _scale(stats)
    for k in stats.kernels:
        out[classify(k.name)] += round(k.executions * scale)
    assigned = sum(out.values())
    if stats.executions > assigned:
        out[KIND_UNKNOWN] += stats.executions - assigned
    return dict(out)


def _fused_of_mode(stats: ModeStats) -> dict[str, int]:
    """Executions of fused kernels per kind (scaled as ``_class_of_mode`` scales)."""
    out: Counter[str] = Counter()
    scale = _scale(stats)
    for k in stats.kernels:
        if k.fused_into or is_fused(k.name):
            out[kernel_kind(k.name)] += round(k.executions * scale)
    return dict(out)


@dataclass
class _ModeCounts:
    """A mode's executions over the run's op types, by kernel class and by kind."""

    executions: int
    op_types: int
    classes: Counter[str]
    kinds: Counter[str]
    fused: Counter[str]           # executions of fused kernels, by kind

    @classmethod
    def of(cls, model: RunModel, mode: str) -> _ModeCounts:
        classes: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        fused: Counter[str] = Counter()
        stats = [row.mode(mode) for row in model.op_types.values()]
        for s in stats:
            classes.update(_class_of_mode(s))
            kinds.update(_class_of_mode(s, kernel_kind))
            fused.update(_fused_of_mode(s))
        return cls(executions=sum(s.executions for s in stats),
                   op_types=sum(1 for s in stats if s.executions),
                   classes=classes, kinds=kinds, fused=fused)


def _outside_table(view: RunView, mode: str) -> dict[str, int]:
    """Profiled time of the op types the table has no row for, in ``mode``."""
    return {op: ns for (m, op), ns in view.outside_time.items() if m == mode}


def _busiest(times: dict[str, int]) -> list[str]:
    return sorted(times, key=lambda op: (-times[op], op))


def _unattributed(view: RunView, mode: str, counts: _ModeCounts) -> int:
    """Profiled time of the kinds no execution of the mode was put down to."""
    return sum(view.kind_time.get((mode, kind), 0) for kind in KINDS if not counts.kinds.get(kind))


def _mode_totals(view: RunView, mode: str, counts: _ModeCounts, has_time: bool,
                 shares: tuple[Optional[float], Optional[float]]) -> ModeTotals:
    # Fused kernels are oneDNN ones (analyze.explain.kernel_class).
    onednn = counts.classes.get(KIND_ONEDNN, 0) + counts.classes.get(KIND_FUSED, 0)
    known = counts.executions - counts.classes.get(KIND_UNKNOWN, 0)
    outside = _outside_table(view, mode)
    return {
        "executions": counts.executions,
        "op_types": counts.op_types,
        "onednn_executions": onednn,
        "kernel_known_executions": known,
        "onednn_share_of_known": (onednn / known) if known else None,
        "time_ns": _mode_time(view, mode) if has_time else None,
        "removed_executions": counts.kinds.get(KIND_REMOVED, 0),
        "unknown_executions": counts.kinds.get(KIND_UNKNOWN, 0),
        "time_unattributed_ns": _unattributed(view, mode, counts) if has_time else None,
        "time_outside_table_ns": sum(outside.values()) if has_time else None,
        "outside_table": _busiest(outside)[:MAX_OUTSIDE_TABLE_PER_MODE],
        "share_of_executions": shares[0],
        "share_of_time": shares[1],
    }


def _mode_time(view: RunView, mode: str) -> int:
    """The op table's time in ``mode``: the sum of its rows'."""
    return sum(of_mode(r, mode).get("time_ns", 0) for r in view.rows.values())


def _modes(view: RunView, counts: dict[str, _ModeCounts]) -> dict[str, ModeTotals]:
    """Per mode its totals, with its share of the executions and of the table's time."""
    has_time = bool(view.model.profiles)
    total = sum(c.executions for c in counts.values())
    times = {mode: _mode_time(view, mode) if has_time else 0 for mode in MODES}
    total_time = sum(times.values())
    return {mode: _mode_totals(view, mode, counts[mode], has_time,
                               ((counts[mode].executions / total) if total else None,
                                (times[mode] / total_time) if total_time else None))
            for mode in MODES}


def _matrix(view: RunView, counts: dict[str, _ModeCounts]) -> list[MatrixCell]:
    """Executions and time per mode and kernel class (``analyze.explain.kernel_class``,
    the CLI's time share)."""
    has_time = bool(view.model.profiles)
    return [{"mode": mode, "class": cls, "executions": counts[mode].classes.get(cls, 0),
             "time_ns": view.class_time.get((mode, cls), 0) if has_time else None}
            for mode in MODES for cls in _MATRIX_CLASSES]


def _kinds(view: RunView, counts: dict[str, _ModeCounts]) -> list[KindCell]:
    """What the tab shows: executions per mode and kind (oneDNN, stock, removed by
    grappler, unknown) with the fused share, time only where executions are (the rest is
    the mode's ``time_unattributed_ns``)."""
    has_time = bool(view.model.profiles)
    return [{"mode": mode, "kind": kind, "executions": counts[mode].kinds.get(kind, 0),
             "fused_executions": counts[mode].fused.get(kind, 0),
             "time_ns": view.kind_time.get((mode, kind), 0)
             if has_time and counts[mode].kinds.get(kind) else None}
            for mode in MODES for kind in KINDS]


# ---------------------------------------------------------------- the other sections

def _glance(view: RunView) -> Glance:
    """The headline, the same question on every run: the op types that ran in both modes,
    those whose kernel differs by mode first, then those that ran oneDNN, then by
    executions (all their names, the first rows whole); and where the premise "oneDNN
    kernels run in graphs only" is false (``glance.premises``) or only seems true, the op
    type having run in one mode only (``glance.one_mode_only``)."""
    picked = cast(list[Row], both_modes(view.rows.values()))
    return {"basis": "both", "total": len(picked), "rows": picked[:GLANCE_ROWS],
            "names": [r["op_type"] for r in picked][:MAX_GLANCE_NAMES],
            "differs_total": sum(r["kernel_differs"] for r in picked),
            "premises": (uncounted_line(view.model.uncounted_graph_executions) + premises(picked)
                         + one_mode_only(view.rows.values()))}


def _dump_coverage(view: RunView) -> Optional[DumpCoverage]:
    """What the dump's tensor_debug_mode counts, and the graph op types it did not count
    though the profile or log saw them run (rows with 0 graph executions, and op types the
    table has no row for): the execution shares cover what the dump counts only."""
    if not view.model.dumps:
        return None
    modes = view.dump_modes
    missed = sorted(((r["op_type"], r["graph"]["uncounted"]) for r in view.rows.values()
                     if "uncounted" in r["graph"]),
                    key=lambda pair: (-pair[1]["profile_events"], pair[0]))
    return {
        "modes": modes,
        "records": dump_records(modes),
        "gap": dump_gap(modes),
        "uncounted_op_types": [op for op, _u in missed][:MAX_DUMP_COVERAGE_OP_TYPES],
        "uncounted_total": len(missed),
        "uncounted_profile_events": sum(u["profile_events"] for _op, u in missed),
        "uncounted_log_executions": sum(u["log_executions"] for _op, u in missed),
        "uncounted_time_ns": sum(u["profile_time_ns"] for _op, u in missed),
        "outside_table": _busiest(_outside_table(view, GRAPH))[:MAX_DUMP_COVERAGE_OP_TYPES],
    }


def cpu_facts(model: RunModel) -> CpuFacts:
    """The CPU's instruction sets as TF's start-up line (cpu_feature_guard) in the log
    names them, or why they are unknown; what decides kernels by them."""
    found: list[frozenset[str]] = [log.cpu_features for log in model.logs if log.cpu_features]
    if found:
        return {"features": sorted(set().union(*found)),
                "source": "TensorFlow's start-up line in the log (cpu_feature_guard)",
                "note": ""}
    why = ("no TensorFlow start-up line in a log names them" if model.logs
           else "the run has no TensorFlow log")
    # What the graph kernels a profile saw tell of the features kernels hang on.
    seen = cpu_from_kernels(model, model.graph_ops)
    shown = "".join(f"; {'has' if has else 'no'} {feature}: {how}"
                    for feature, (has, how) in sorted(seen.items()))
    return {"features": None, "source": "",
            "note": f"unknown: {why}{shown}; keep TF's stderr (its cpu_feature_guard line "
                    f"lists the CPU's instruction sets), since float16 and bfloat16 "
                    f"kernels depend on them (AVX512_FP16, AVX512_BF16, AMX)"}


def _capped_verbose(verbose: OnednnVerbose) -> Optional[CappedVerbose]:
    """The log's ONEDNN_VERBOSE primitive counts (when the model has them), the first
    ``MAX_PRIMITIVES``."""
    rows = verbose["primitives"]
    if not rows:
        return None
    return {"primitives": rows[:MAX_PRIMITIVES], "primitives_total": len(rows),
            "note": verbose["note"]}


def _dtypes_of_rows(view: RunView) -> Iterator[tuple[str, DtypeSplit]]:
    for row in view.rows.values():
        for mode in MODES:
            for entry in of_mode(row, mode).get("dtypes", []):
                yield mode, entry


def _dtype_totals(view: RunView) -> DtypeTotals:
    """Executions per dtype and mode over the table's rows (where the dump records dtypes),
    and whether mixed precision (float16/bfloat16) shows."""
    per: dict[str, Counter[str]] = {mode: Counter() for mode in MODES}
    low: set[str] = set()
    for mode, entry in _dtypes_of_rows(view):
        per[mode][entry["label"]] += entry["executions"]
        if entry["low_precision"]:
            low.add(entry["label"])
    not_recorded = dtype_label(DTYPE_UNKNOWN)
    return {"modes": {mode: [{"label": k, "executions": n} for k, n in per[mode].most_common()]
                      for mode in MODES},
            "low_precision": sorted(low),
            "low_precision_op_types": sum(1 for r in view.rows.values() if r["low_precision"]),
            "recorded": any(label != not_recorded for c in per.values() for label in c)}


def _devices(view: RunView) -> list[DeviceTotals]:
    """Executions per device and mode, for a run whose executions name several devices."""
    if len(view.devices) < 2:
        return []
    return [{"device": d, "eager": view.device_totals.get(("eager", d), 0),
             "graph": view.device_totals.get(("graph", d), 0)} for d in view.devices]


def _profile(view: RunView) -> ProfileFacts:
    return {"events": view.timeline.events, "span_ns": view.timeline.span_ns,
            "debug_instrumentation_time_ns": view.timeline.debug_time_ns,
            "time_source": sorted({p.time_source for p in view.model.profiles if p.time_source})}


# ---------------------------------------------------------------- unknown kernels

# How an unknown kernel's note opens (and what is unknown then), and the words that
# start its advice on how to find out.
_UNKNOWN_OPENINGS = (("unknown whether it ran: ", "whether it ran"), ("unknown: ", "kernel"))
_ADVICE_MARKERS = (". To know, ", "; keep ", "; to know, ", "; dump with ", "; run with ")
_TO_KNOW = "to know, "
_WITHOUT_REASON_HOW = ("no log line or profiler event names their kernel: keep TF's log "
                       "(TF_CPP_MAX_VLOG_LEVEL=2) or profile the run")


def _split_how(note: str) -> tuple[str, str, str]:
    """An unknown kernel's note as (what is unknown: "kernel" or "whether it ran", why, how
    to find out), where the note says them."""
    what, text = "kernel", note
    for opening, unknown in _UNKNOWN_OPENINGS:
        if text.startswith(opening):
            text, what = text[len(opening):], unknown
            break
    at = next((at for at in map(text.find, _ADVICE_MARKERS) if at > 0), -1)
    if at < 0:
        return what, text, ""
    how = text[at + 2:].strip()
    if how.lower().startswith(_TO_KNOW):
        how = how[len(_TO_KNOW):]
    return what, text[:at].strip(), how[0].upper() + how[1:]


def _add_unknown(groups: dict[str, UnknownGroup], op_type: str, mode: str, executions: int,
                 note: str) -> None:
    what, why, how = _split_how(note)
    group = groups.setdefault(why, {"what": what, "why": why, "how": how, "executions": 0,
                                    "ops": []})
    group["executions"] += executions
    if not any(o["op_type"] == op_type and o["mode"] == mode for o in group["ops"]):
        group["ops"].append({"op_type": op_type, "mode": mode, "executions": executions})


def _group_unknowns(groups: dict[str, UnknownGroup], row: Row, mode: str) -> int:
    """Add a row's unknown kernels in ``mode`` to ``groups`` by their reason; the
    executions with no reason to tell (no note, or no kernel named at all)."""
    stats = of_mode(row, mode)
    bare = 0
    for k in stats["kernels"]:
        if k["kind"] != KIND_UNKNOWN:
            continue
        notes = k.get("notes") or []
        if notes:
            _add_unknown(groups, row["op_type"], mode, k["executions"], notes[0])
        else:
            bare += k["executions"]
    known = sum(k["executions"] for k in stats["kernels"])
    if stats["executions"] > known and not stats.get("uncounted"):
        bare += stats["executions"] - known
    return bare


def unknowns(view: RunView, limit: int = MAX_UNKNOWN_GROUPS) -> Unknowns:
    """Executions whose kernel is unknown, grouped by the reason, with how to find out."""
    groups: dict[str, UnknownGroup] = {}
    bare = sum(_group_unknowns(groups, row, mode) for row in view.rows.values() for mode in MODES)
    ordered = sorted(groups.values(), key=lambda g: (-g["executions"], g["why"]))
    return {"groups": ordered[:limit], "groups_total": len(ordered),
            "executions": sum(g["executions"] for g in ordered) + bare,
            "without_reason": bare,
            "without_reason_how": _WITHOUT_REASON_HOW if bare else ""}


# ---------------------------------------------------------------- tf.functions

def _tf_functions(view: RunView) -> FunctionsBrief:
    """The trace ledger's counts (the Functions card's), and the graphs called that are no
    trace of it (TF's own, e.g. ``initialize_variables``)."""
    ledger = view.doc["tf_functions"]
    traced = {t["graph"] for f in ledger for t in f["trace_list"]}
    other: list[FunctionCalls] = [f for f in view.doc["functions"] if f["name"] not in traced]
    return {"python_functions": len(ledger), "traces": sum(f["traces"] for f in ledger),
            "calls": sum(f["calls"] for f in ledger if not f["nested"]),
            "functions": [{"name": f["name"], "traces": f["traces"], "calls": f["calls"],
                           "nested": f["nested"]} for f in ledger[:MAX_FUNCTIONS]],
            "other_graphs": other[:MAX_FUNCTIONS]}


# ---------------------------------------------------------------- the payload

def overview(view: RunView) -> Overview:
    """Run facts, mode shares, oneDNN coverage per mode, the mode x class matrix, functions.

    ``matrix`` is by ``analyze.explain.kernel_class`` (the CLI's time_share); ``kinds`` is
    what the tab shows. A mode's ``time_ns`` is the sum of the op table's times; profiled
    time of op types the table has no row for is ``time_outside_table_ns`` (their names
    in ``outside_table``).
    """
    doc = view.doc
    state, reason = onednn_state(view)
    counts = {mode: _ModeCounts.of(view.model, mode) for mode in MODES}
    return {
        "run": doc["run"],
        "tensorflow_version": doc["tensorflow_version"],
        "hosts": doc["hosts"],
        "onednn_enabled": doc["onednn_enabled"],
        "onednn_source": doc["onednn_source"],
        "onednn_state": state,
        "onednn_reason": reason,
        "counts_from": doc["counts_from"],
        "count_basis": doc["count_basis"],
        "recording": doc["recording"],
        "sources": doc["sources"],
        "warnings": doc["warnings"][:MAX_WARNINGS],
        "warnings_total": len(doc["warnings"]),
        "functions": doc["functions"][:MAX_FUNCTIONS],
        "functions_total": len(doc["functions"]),
        "tf_functions": _tf_functions(view),
        "op_types_total": len(view.rows),
        "onednn_verbose": _capped_verbose(doc["onednn_verbose"]),
        "modes": _modes(view, counts),
        "matrix": _matrix(view, counts),
        "kinds": _kinds(view, counts),
        "glance": _glance(view),
        "dump": _dump_coverage(view),
        "cpu": cpu_facts(view.model),
        "xla_functions": doc["xla_functions"],
        "lower_bound": view.lower_bound,
        "dtypes": _dtype_totals(view),
        "devices": _devices(view),
        "devices_none": {mode: view.device_totals.get((mode, ""), 0) for mode in MODES},
        "unknowns": unknowns(view),
        "profile": _profile(view),
    }
