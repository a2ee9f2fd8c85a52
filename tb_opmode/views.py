"""Pure functions behind the tab's routes: small JSON-ready dicts from a run's model.

In: a ``RunModel`` from ``join.build_run`` (its counts and kernels, plus the
dumps, profiles and logs it keeps), turned once by ``prepare`` into a
``RunView`` that holds the indexes every request needs (rows with op time,
the timeline sorted per lane, graph ops per op type). Out: dicts and strings
for the routes in ``plugin.py``: run overview, a page of the op table, one op's
detail (kernels, evidence, call sites with source lines, graphs), a window of
the timeline (single events, or bins when zoomed out), a comparison of two
runs, and exports (CSV, JSON, Chrome/Perfetto trace JSON).

Nothing here reads a file or touches the network; bad parameters raise
``ValueError`` with a message, unknown ops raise ``KeyError``; the plugin
turns them into 400 and 404. Fields the model may grow later (an
``explanation``, ``time_ns`` or ``fused_into`` on a row or a mode) are passed
through when present and left out when not.
"""
from __future__ import annotations

import bisect
import csv
import io
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .join import MODES, ModeStats, OpTypeRow, RunModel, summary
from .nodes import canonical_op, match_nodes
from .tfdbg import DumpSet

try:  # explanations in words; absent from older checkouts, then the tab shows evidence only
    from . import why as _why
except ImportError:  # pragma: no cover - depends on the checkout
    _why = None

__all__ = [
    "RunView", "prepare", "kernel_class", "onednn_state", "is_debug_kernel", "overview", "op_rows",
    "op_page", "op_detail", "timeline_window", "compare", "export_csv", "export_json",
    "export_trace", "SORT_KEYS", "FILTERS", "LANES", "CLASSES", "MAX_PAGE_SIZE",
    "MAX_EVENTS", "MAX_TRACE_EVENTS", "dumps_json",
]

# Kernels tfdbg adds to instrument a graph; they are not the user's ops.
_DEBUG_KERNELS = frozenset({"DebugNumericSummaryV2", "DebugIdentityV2", "DebugIdentityV3",
                            "DebugIdentity", "DebugNanCount", "DebugNumericSummary"})
# Executor bookkeeping that is no op of the user's either.
_PLUMBING_KERNELS = frozenset({"_Retval", "_Arg", "NoOp", "_SOURCE", "_SINK"})

SORT_KEYS = ("total", "eager", "graph", "op_type", "time", "eager_time", "graph_time")
FILTERS = ("both", "differs", "no_onednn", "onednn", "eager_only", "graph_only")
# Timeline lanes, top to bottom.
LANES = ("function", "eager", "graph")
# Box classes of the timeline (index = code in the JSON).
CLASSES = ("eager_onednn", "eager_stock", "eager_unknown", "graph_onednn", "graph_stock",
           "function", "debug")
_CLS = {name: i for i, name in enumerate(CLASSES)}
MAX_PAGE_SIZE = 200
MAX_EVENTS = 10000
MAX_TRACE_EVENTS = 6000
_MAX_SITES = 50
_MAX_GRAPHS = 50
_SNIPPET_CONTEXT = 3
_MAX_LINE_CHARS = 400
_MAX_WARNINGS = 100
_MAX_FUNCTIONS = 100

# Paths of library code; the user's call site is the innermost frame outside them.
_LIBRARY_RE = re.compile(r"([/\\](site|dist)-packages[/\\])|([/\\]lib[/\\]python\d+(\.\d+)?[/\\])|^<")
# Frames of TF's own op plumbing, skipped when showing the path from the user's line inward.
_PLUMBING_RE = re.compile(
    r"tensorflow[/\\]python[/\\](debug|framework[/\\](op_callbacks|op_def_library|ops)|"
    r"util[/\\](traceback_utils|dispatch|deprecation)|eager[/\\](execute|context))")


def is_debug_kernel(kernel: str) -> bool:
    """A kernel tfdbg inserted to dump tensors (not an op of the user's program)."""
    return kernel in _DEBUG_KERNELS


def kernel_class(kernel: str) -> str:
    """``fused`` (a remapper fusion), ``onednn`` (a ``_Mkl*`` kernel), ``stock``, or
    ``unknown`` for a placeholder such as ``(optimized away)``."""
    if not kernel or kernel.startswith("("):
        return "unknown"
    base = canonical_op(kernel).lstrip("_")
    if "Fused" in kernel and not base.startswith(("FusedBatchNorm", "FusedPadConv2D",
                                                   "FusedResizeAndPadConv2D")):
        return "fused"
    return "onednn" if kernel.startswith("_Mkl") else "stock"


@dataclass
class _Lane:
    """Timeline events of one lane, sorted by start (ns from the run's first event)."""

    starts: list[int] = field(default_factory=list)
    durs: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    classes: list[int] = field(default_factory=list)
    max_dur: int = 0


@dataclass
class RunView:
    """A loaded run plus the indexes the routes read; never changed once built."""

    model: RunModel
    doc: dict[str, Any]                       # summary()["runs"][0] of this run
    rows: dict[str, dict[str, Any]]           # op type -> row JSON (with time)
    explanations: dict[str, dict[str, str]]   # op type -> mode -> why, in words
    time_ns: dict[tuple[str, str], int]       # (op type, mode) -> profiled op time
    class_time: dict[tuple[str, str], int]    # (mode, kernel class) -> profiled op time
    debug_time_ns: int
    lanes: dict[str, _Lane]
    t0_ns: int
    span_ns: int
    graph_ops: dict[str, list[tuple[int, str, str]]]   # op type -> (dump index, graph id, op name)
    op_runs: dict[tuple[int, str, str], int]           # (dump index, graph id, op name) -> executions
    eager_sites: dict[str, list[tuple[int, tuple[str, ...], int]]]  # op type -> (dump, frames, n)


def _single_kernel(stats: ModeStats) -> Optional[str]:
    names = {k.name for k in stats.kernels}
    return names.pop() if len(names) == 1 else None


def _extra(obj: Any, name: str) -> Any:
    """A field a later version of the model may carry; None when absent or empty."""
    value = getattr(obj, name, None)
    return value if value not in (None, "", [], {}) else None


def _jsonable(value: Any) -> Any:
    """Dataclasses and containers from the model as plain JSON values."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    return str(value)


def _node_types(model: RunModel) -> dict[str, str]:
    """Executed node name (profile) -> op type of the dump op it stands for."""
    op_type_of: dict[str, str] = {}
    for dump in model.dumps:
        for graph in dump.graphs.values():
            for name, op in graph.ops.items():
                op_type_of.setdefault(name, op.op_type)
    nodes = {node for prof in model.profiles for node, _k, _s, _d in prof.graph_ops}
    out: dict[str, str] = {}
    for op_name, matched in match_nodes(set(op_type_of), nodes).items():
        for node in matched:
            out[node] = op_type_of[op_name]
    return out


def _build_lanes(model: RunModel, node_types: dict[str, str]) -> tuple[dict[str, _Lane], int, int]:
    raw: dict[str, list[tuple[int, int, str, str, str, int]]] = {lane: [] for lane in LANES}
    for prof in model.profiles:
        for op_type, is_func, start, dur in prof.eager_ops:
            if is_func or op_type.startswith(("__inference_", "__forward_", "__backward_")):
                raw["function"].append((start, dur, op_type, "", op_type, _CLS["function"]))
                continue
            row = model.op_types.get(op_type)
            kernel = _single_kernel(row.eager) if row is not None else None
            if is_debug_kernel(op_type):
                cls = "debug"
            elif kernel is None:
                cls = "eager_unknown"
            else:
                cls = "eager_onednn" if kernel.startswith("_Mkl") else "eager_stock"
            raw["eager"].append((start, dur, op_type, kernel or "", op_type, _CLS[cls]))
        for node, kernel, start, dur in prof.graph_ops:
            if kernel in _PLUMBING_KERNELS:
                continue
            if is_debug_kernel(kernel):
                cls = "debug"
            else:
                cls = "graph_onednn" if kernel.startswith("_Mkl") else "graph_stock"
            op_type = node_types.get(node) or canonical_op(kernel)
            raw["graph"].append((start, dur, node, kernel, op_type, _CLS[cls]))
    starts = [e[0] for events in raw.values() for e in events]
    t0 = min(starts) if starts else 0
    end = max((e[0] + e[1] for events in raw.values() for e in events), default=t0)
    lanes: dict[str, _Lane] = {}
    for name, events in raw.items():
        events.sort(key=lambda e: (e[0], -e[1]))
        lane = _Lane()
        for start, dur, label, kernel, op_type, cls in events:
            lane.starts.append(start - t0)
            lane.durs.append(max(0, dur))
            lane.names.append(label)
            lane.kernels.append(kernel)
            lane.ops.append(op_type)
            lane.classes.append(cls)
        lane.max_dur = max(lane.durs, default=0)
        lanes[name] = lane
    return lanes, t0, end - t0


def _class_of_mode(stats: ModeStats) -> dict[str, int]:
    """Executions of one op type in one mode per kernel class (+ ``unknown``)."""
    out: Counter = Counter()
    known = sum(k.executions for k in stats.kernels)
    # A log can count more executions than the dump saw (it ran longer): scale down.
    scale = stats.executions / known if known > stats.executions else 1.0
    for k in stats.kernels:
        out[kernel_class(k.name)] += round(k.executions * scale)
    assigned = sum(out.values())
    if stats.executions > assigned:
        out["unknown"] += stats.executions - assigned
    return dict(out)


def _onednn_executions(stats: ModeStats) -> int:
    """Executions that ran a ``_Mkl*`` kernel, scaled like ``_class_of_mode``."""
    known = sum(k.executions for k in stats.kernels)
    scale = stats.executions / known if known > stats.executions else 1.0
    return round(sum(k.executions for k in stats.kernels if k.onednn) * scale)


def _row_json(row_doc: dict[str, Any], row: OpTypeRow, time_ns: dict[tuple[str, str], int]
              ) -> dict[str, Any]:
    out: dict[str, Any] = {"op_type": row_doc["op_type"]}
    total = 0
    onednn_any = False
    for mode in MODES:
        stats = row.mode(mode)
        mode_doc = dict(row_doc[mode])
        kernels = []
        for k in mode_doc["kernels"]:
            k = dict(k)
            k["class"] = kernel_class(k["name"])
            onednn_any = onednn_any or k["onednn"]
            kernels.append(k)
        mode_doc["kernels"] = kernels
        t = _extra(stats, "time_ns")
        if t is None:
            t = time_ns.get((row.op_type, mode))
        if t is not None:
            mode_doc["time_ns"] = int(t)
        for name in ("fused_into",):
            value = _extra(stats, name)
            if value is not None:
                mode_doc[name] = _jsonable(value)
        out[mode] = mode_doc
        total += mode_doc["executions"]
    out["total"] = total
    out["onednn"] = onednn_any
    # Placeholders such as "(optimized away)" are no kernel: they do not make modes differ.
    eager_names = sorted({k["name"] for k in out["eager"]["kernels"] if k["class"] != "unknown"})
    graph_names = sorted({k["name"] for k in out["graph"]["kernels"] if k["class"] != "unknown"})
    out["kernel_differs"] = bool(eager_names and graph_names and eager_names != graph_names)
    out["fused"] = any(k.get("fused_into") or k["class"] == "fused"
                       for m in MODES for k in out[m]["kernels"])
    for name in ("fused_into", "fusions"):
        value = _extra(row, name)
        if value is not None:
            out[name] = _jsonable(value)
    return out


def prepare(model: RunModel, logdir: str) -> RunView:
    """Index one run for the routes (run once per load, off the request path)."""
    doc = summary([model], logdir)["runs"][0]
    # Explanations are long: kept for the op detail and the JSON export, not the table.
    explanations: dict[str, dict[str, str]] = {}
    for row_doc in doc["op_types"]:
        for mode in MODES:
            text = row_doc[mode].pop("explanation", None)
            if text:
                explanations.setdefault(row_doc["op_type"], {})[mode] = str(text)
    node_types = _node_types(model)
    lanes, t0, span = _build_lanes(model, node_types)
    time_ns: Counter = Counter()
    class_time: Counter = Counter()
    debug_time = 0
    eager = lanes["eager"]
    for op_type, dur, cls in zip(eager.ops, eager.durs, eager.classes):
        if cls == _CLS["debug"]:
            debug_time += dur
        else:
            time_ns[(op_type, "eager")] += dur
    for op_type, n_time in list(time_ns.items()):
        row = model.op_types.get(op_type[0])
        classes = _class_of_mode(row.eager) if row is not None else {}
        total = sum(classes.values())
        if not total:
            class_time[("eager", "unknown")] += n_time
            continue
        for cls, n in classes.items():
            class_time[("eager", cls)] += n_time * n // total
    graph = lanes["graph"]
    for op_type, kernel, dur, cls in zip(graph.ops, graph.kernels, graph.durs, graph.classes):
        if cls == _CLS["debug"]:
            debug_time += dur
            continue
        time_ns[(op_type, "graph")] += dur
        class_time[("graph", kernel_class(kernel))] += dur
    rows_by_type = {r["op_type"]: r for r in doc["op_types"]}
    rows = {t: _row_json(rows_by_type[t], model.op_types[t], time_ns)
            for t in rows_by_type if t in model.op_types}
    graph_ops: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    op_runs: Counter = Counter()
    eager_sites: dict[str, list[tuple[int, tuple[str, ...], int]]] = defaultdict(list)
    for index, dump in enumerate(model.dumps):
        for graph_id, graph in dump.graphs.items():
            for name, op in graph.ops.items():
                graph_ops[op.op_type].append((index, graph_id, name))
        lowest: dict[tuple[str, str], int] = {}
        for (graph_id, op_name, slot) in dump.traces:
            key = (graph_id, op_name)
            if key not in lowest or slot < lowest[key]:
                lowest[key] = slot
        for (graph_id, op_name, slot), n in dump.traces.items():
            if slot == lowest[(graph_id, op_name)]:
                op_runs[(index, graph_id, op_name)] += n
        for (op_type, frames), n in dump.execution_sites.items():
            eager_sites[op_type].append((index, frames, n))
    return RunView(model=model, doc=doc, rows=rows, explanations=explanations,
                   time_ns=dict(time_ns),
                   class_time=dict(class_time), debug_time_ns=debug_time, lanes=lanes,
                   t0_ns=t0, span_ns=span, graph_ops=dict(graph_ops), op_runs=dict(op_runs),
                   eager_sites=dict(eager_sites))


# ---------------------------------------------------------------- overview

def onednn_state(view: RunView) -> tuple[str, str]:
    """("on" | "off" | "unknown", how we know) for the overview."""
    model = view.model
    if model.onednn_enabled is True:
        return "on", model.onednn_source or "oneDNN kernels seen"
    if model.onednn_enabled is False:
        return "off", model.onednn_source or "the log says so"
    named = sum(len(row.mode(mode).kernels) for row in model.op_types.values() for mode in MODES)
    if named and model.logs:
        return "off", ("inferred: the log has no 'oneDNN custom operations are on' banner and "
                       f"none of the {named} kernels seen is a _Mkl* kernel")
    if named:
        return "unknown", f"no log banner; none of the {named} kernels seen is a _Mkl* kernel"
    return "unknown", "no log and no kernel names: nothing says"



def _capped_verbose(verbose: Any) -> Optional[dict[str, Any]]:
    """The log's ONEDNN_VERBOSE primitive counts (when the model has them), 30 rows at most."""
    if not isinstance(verbose, dict) or not verbose.get("primitives"):
        return None
    rows = list(verbose["primitives"])
    return {"primitives": rows[:30], "primitives_total": len(rows),
            "note": str(verbose.get("note", ""))}


def overview(view: RunView) -> dict[str, Any]:
    """Run facts, mode shares, oneDNN coverage per mode, the mode x class matrix, functions."""
    doc = view.doc
    model = view.model
    modes: dict[str, dict[str, Any]] = {}
    matrix = []
    for mode in MODES:
        classes: Counter = Counter()
        for row in model.op_types.values():
            classes.update(_class_of_mode(row.mode(mode)))
        executions = sum(row.mode(mode).executions for row in model.op_types.values())
        onednn = sum(_onednn_executions(row.mode(mode)) for row in model.op_types.values())
        known = executions - classes.get("unknown", 0)
        has_time = bool(model.profiles)
        mode_time = sum(t for (m, _c), t in view.class_time.items() if m == mode)
        modes[mode] = {
            "executions": executions,
            "op_types": sum(1 for row in model.op_types.values() if row.mode(mode).executions),
            "onednn_executions": onednn,
            "kernel_known_executions": known,
            "onednn_share_of_known": (onednn / known) if known else None,
            "time_ns": mode_time if has_time else None,
        }
        for cls in ("onednn", "stock", "fused", "unknown"):
            matrix.append({"mode": mode, "class": cls, "executions": classes.get(cls, 0),
                           "time_ns": view.class_time.get((mode, cls), 0) if has_time else None})
    total = sum(m["executions"] for m in modes.values())
    total_time = sum(m["time_ns"] or 0 for m in modes.values())
    for m in modes.values():
        m["share_of_executions"] = (m["executions"] / total) if total else None
        m["share_of_time"] = ((m["time_ns"] or 0) / total_time) if total_time else None
    warnings = doc["warnings"]
    functions = doc["functions"]
    state, reason = onednn_state(view)
    return {
        "run": doc["run"],
        "tensorflow_version": doc["tensorflow_version"],
        "hosts": doc["hosts"],
        "onednn_enabled": doc["onednn_enabled"],
        "onednn_source": doc["onednn_source"],
        "onednn_state": state,
        "onednn_reason": reason,
        "counts_from": doc["counts_from"],
        "sources": doc["sources"],
        "warnings": warnings[:_MAX_WARNINGS],
        "warnings_total": len(warnings),
        "functions": functions[:_MAX_FUNCTIONS],
        "functions_total": len(functions),
        "op_types_total": len(view.rows),
        "onednn_verbose": _capped_verbose(doc.get("onednn_verbose")),
        "modes": modes,
        "matrix": matrix,
        "profile": {
            "events": sum(len(lane.starts) for lane in view.lanes.values()),
            "span_ns": view.span_ns,
            "debug_instrumentation_time_ns": view.debug_time_ns,
            "time_source": sorted({p.time_source for p in model.profiles if p.time_source}),
        },
    }


# ---------------------------------------------------------------- op table

def _passes(row: dict[str, Any], filters: tuple[str, ...], query: str) -> bool:
    eager, graph = row["eager"], row["graph"]
    for f in filters:
        if f == "both" and not (eager["executions"] and graph["executions"]):
            return False
        if f == "differs" and not row["kernel_differs"]:
            return False
        if f == "no_onednn" and row["onednn"]:
            return False
        if f == "onednn" and not row["onednn"]:
            return False
        if f == "eager_only" and (not eager["executions"] or graph["executions"]):
            return False
        if f == "graph_only" and (not graph["executions"] or eager["executions"]):
            return False
    if query:
        hay = [row["op_type"].lower()] + [k["name"].lower() for m in MODES
                                          for k in row[m]["kernels"]]
        if not any(query in h for h in hay):
            return False
    return True


def _sort_key(sort: str) -> Callable[[dict[str, Any]], Any]:
    def time_of(row: dict[str, Any], mode: str) -> int:
        return row[mode].get("time_ns", 0)
    keys = {
        "total": lambda r: (r["total"], r["op_type"]),
        "eager": lambda r: (r["eager"]["executions"], r["op_type"]),
        "graph": lambda r: (r["graph"]["executions"], r["op_type"]),
        "op_type": lambda r: r["op_type"].lower(),
        "time": lambda r: (time_of(r, "eager") + time_of(r, "graph"), r["op_type"]),
        "eager_time": lambda r: (time_of(r, "eager"), r["op_type"]),
        "graph_time": lambda r: (time_of(r, "graph"), r["op_type"]),
    }
    return keys[sort]


def op_rows(view: RunView, sort: str = "total", descending: bool = True,
            filters: tuple[str, ...] = (), query: str = "") -> list[dict[str, Any]]:
    """Every row that passes the filters (AND) and the search, sorted."""
    if sort not in SORT_KEYS:
        raise ValueError(f"sort must be one of {', '.join(SORT_KEYS)}; got {sort!r}")
    for f in filters:
        if f not in FILTERS:
            raise ValueError(f"filter must be one of {', '.join(FILTERS)}; got {f!r}")
    q = query.strip().lower()
    rows = [r for r in view.rows.values() if _passes(r, filters, q)]
    rows.sort(key=_sort_key(sort), reverse=descending)
    return rows


def op_page(view: RunView, sort: str = "total", descending: bool = True,
            filters: tuple[str, ...] = (), query: str = "", page: int = 0,
            page_size: int = 50) -> dict[str, Any]:
    """One page of the op table."""
    if page < 0:
        raise ValueError("page must be >= 0")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
    rows = op_rows(view, sort, descending, filters, query)
    start = page * page_size
    return {"run": view.doc["run"], "total": len(rows), "all_total": len(view.rows),
            "page": page, "page_size": page_size, "sort": sort,
            "order": "desc" if descending else "asc", "filters": list(filters), "q": query,
            "rows": rows[start:start + page_size]}


# ---------------------------------------------------------------- op detail

def _frame_info(dump: DumpSet, frame_id: str) -> Optional[tuple[str, str, int, str]]:
    """(host, path, line, function) of a stack frame id."""
    found = dump.stack_frames.get(frame_id)
    if found is None:
        return None
    index, line, func = found
    if 0 <= index < len(dump.source_files):
        host, path = dump.source_files[index]
    else:
        host, path = dump.host, "?"
    return host, path, line, func


def _user_frame(frames: list[tuple[str, str, int, str]]) -> int:
    """Index of the innermost frame outside library code (else of TF plumbing, else the last)."""
    for i in range(len(frames) - 1, -1, -1):
        if not _LIBRARY_RE.search(frames[i][1]):
            return i
    for i in range(len(frames) - 1, -1, -1):
        if not _PLUMBING_RE.search(frames[i][1]):
            return i
    return len(frames) - 1


def _snippet(dump: DumpSet, host: str, path: str, line: int) -> Optional[dict[str, Any]]:
    lines = dump.source_lines.get((host, path))
    if not lines or line < 1 or line > len(lines):
        return None
    first = max(1, line - _SNIPPET_CONTEXT)
    last = min(len(lines), line + _SNIPPET_CONTEXT)
    return {"first_line": first, "line": line,
            "lines": [text[:_MAX_LINE_CHARS] for text in lines[first - 1:last]]}


def _sites(view: RunView, stacks: list[tuple[int, tuple[str, ...], int, int]],
           limit: int) -> tuple[list[dict[str, Any]], int]:
    """Group (dump, frame ids, executions, ops) by the user's frame; the busiest first."""
    groups: dict[tuple[int, str, str, int, str], dict[str, Any]] = {}
    for index, frame_ids, n, ops in stacks:
        dump = view.model.dumps[index]
        frames = [f for f in (_frame_info(dump, fid) for fid in frame_ids) if f is not None]
        if not frames:
            key = (index, "", "?", 0, "")
            via: list[tuple[str, str, int, str]] = []
        else:
            i = _user_frame(frames)
            host, path, line, func = frames[i]
            key = (index, host, path, line, func)
            via = [f for f in frames[i + 1:] if not _PLUMBING_RE.search(f[1])][:6]
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"count": 0, "ops": 0, "via": via}
        group["count"] += n
        group["ops"] += ops
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1]["count"], kv[0][2], kv[0][3]))
    out = []
    for (index, host, path, line, func), group in ordered[:limit]:
        dump = view.model.dumps[index]
        site: dict[str, Any] = {"file": path, "line": line, "function": func, "host": host,
                                "count": group["count"], "ops": group["ops"],
                                "via": [{"file": p, "line": ln, "function": fn}
                                        for _h, p, ln, fn in group["via"]]}
        snippet = _snippet(dump, host, path, line) if path != "?" else None
        if snippet is not None:
            site["snippet"] = snippet
        out.append(site)
    return out, len(groups)


def _evidence_lines(row: OpTypeRow) -> list[str]:
    """Plain statements of what was seen, per mode (shown when no explanation exists)."""
    out = []
    source = {"log": "the TensorFlow log", "profile": "the profiler trace",
              "inferred": "inferred, not observed"}
    for mode in MODES:
        stats = row.mode(mode)
        if not stats.executions and not stats.kernels:
            continue
        if not stats.kernels:
            out.append(f"{mode}: {stats.executions} executions; no kernel name was seen "
                       f"(no log line or profiler event names one)")
            continue
        for k in stats.kernels:
            kind = {"onednn": "oneDNN", "fused": "fused", "stock": "stock",
                    "unknown": "no kernel"}[kernel_class(k.name)]
            text = (f"{mode}: {k.name} ({kind}) for {k.executions} of {stats.executions} "
                    f"executions; evidence: {source.get(k.evidence, k.evidence)}")
            notes = _notes(k)
            if notes:
                text += f" ({'; '.join(notes)})"
            out.append(text)
    return out


def _notes(kernel: Any) -> list[str]:
    """A kernel's notes, whichever shape the model gives them (``notes`` list or ``note``)."""
    notes = getattr(kernel, "notes", None)
    if isinstance(notes, (list, tuple)):
        return [str(n) for n in notes if n]
    note = getattr(kernel, "note", "")
    return [note] if note else []


def _explanation(model: RunModel, op_type: str) -> Optional[dict[str, str]]:
    """Mode -> a paragraph saying why the op ran there with its kernel (from ``why``)."""
    if _why is None or not hasattr(_why, "explain"):
        return None
    explained = _why.explain(model, op_type)
    out = {}
    for mode in MODES:
        part = explained.get(mode) if isinstance(explained, dict) else None
        text = part.get("explanation") if isinstance(part, dict) else part
        if isinstance(text, str) and text and model.op_types[op_type].mode(mode).executions:
            out[mode] = text
    return out or None


def op_detail(view: RunView, op_type: str, sites: int = 10) -> dict[str, Any]:
    """Everything about one op type; ``KeyError`` if the run has no such op type."""
    if op_type not in view.rows:
        raise KeyError(op_type)
    if not 1 <= sites <= _MAX_SITES:
        raise ValueError(f"sites must be between 1 and {_MAX_SITES}")
    row = view.model.op_types[op_type]
    out = dict(view.rows[op_type])
    out["evidence"] = _evidence_lines(row)
    explanation = view.explanations.get(op_type) or _explanation(view.model, op_type)
    if explanation:
        out["explanation"] = explanation
    fused = []
    for k in row.graph.kernels:
        nodes = [str(n) for n in (getattr(k, "fused_into", None) or [])]
        if nodes or (canonical_op(k.name) != op_type and kernel_class(k.name) == "fused"):
            fused.append({"kernel": k.name, "executions": k.executions, "evidence": k.evidence,
                          "onednn": k.onednn, "nodes": nodes[:5]})
    if fused and "fused_into" not in out:
        out["fused_into"] = fused
    eager_stacks = [(i, frames, n, 0) for i, frames, n in view.eager_sites.get(op_type, [])]
    graph_stacks = []
    graphs: dict[tuple[int, str], dict[str, Any]] = {}
    for index, graph_id, name in view.graph_ops.get(op_type, []):
        dump = view.model.dumps[index]
        op = dump.graphs[graph_id].ops[name]
        runs = view.op_runs.get((index, graph_id, name), 0)
        graph_stacks.append((index, op.stack, runs, 1))
        g = graphs.get((index, graph_id))
        if g is None:
            info = dump.graphs[graph_id]
            outer = dump.graphs.get(info.outer_id)
            g = graphs[(index, graph_id)] = {
                "graph_id": graph_id, "name": info.name,
                "outer": outer.name if outer is not None and outer.name else info.outer_id,
                "ops": 0, "executions": 0, "op_names": []}
        g["ops"] += 1
        g["executions"] += runs
        if len(g["op_names"]) < 5:
            g["op_names"].append(name)
    eager_sites, eager_total = _sites(view, eager_stacks, sites)
    graph_sites, graph_total = _sites(view, graph_stacks, sites)
    out["call_sites"] = {"eager": eager_sites, "graph": graph_sites}
    out["call_sites_total"] = {"eager": eager_total, "graph": graph_total}
    ordered = sorted(graphs.values(), key=lambda g: (-g["executions"], -g["ops"], g["name"]))
    out["graphs"] = ordered[:_MAX_GRAPHS]
    out["graphs_total"] = len(ordered)
    return out


# ---------------------------------------------------------------- timeline

def timeline_window(view: RunView, start: Optional[int] = None, end: Optional[int] = None,
                    max_events: int = 5000, debug: bool = False) -> dict[str, Any]:
    """Events (or bins when there are more than ``max_events``) overlapping [start, end) ns.

    Times are nanoseconds from the run's first profiled event. Each event is
    ``[lane, start, dur, name, kernel, class]`` with lane/name/kernel indexes
    into ``lanes``/``names`` and class an index into ``classes``; each bin is
    ``[lane, start, end, count, busy_ns, class, name, onednn_count]``.
    """
    if not 1 <= max_events <= MAX_EVENTS:
        raise ValueError(f"max_events must be between 1 and {MAX_EVENTS}")
    lo = 0 if start is None else start
    hi = view.span_ns + 1 if end is None else end
    if hi <= lo:
        raise ValueError("end must be greater than start")
    picked: list[tuple[int, int]] = []   # (lane index, event index)
    debug_cls = _CLS["debug"]
    for li, lane_name in enumerate(LANES):
        lane = view.lanes.get(lane_name)
        if lane is None or not lane.starts:
            continue
        first = bisect.bisect_left(lane.starts, lo - lane.max_dur)
        last = bisect.bisect_left(lane.starts, hi)
        for i in range(first, last):
            if lane.starts[i] + lane.durs[i] < lo:
                continue
            if not debug and lane.classes[i] == debug_cls:
                continue
            picked.append((li, i))
    names: dict[str, int] = {}

    def name_id(text: str) -> int:
        found = names.get(text)
        if found is None:
            found = names[text] = len(names)
        return found

    out: dict[str, Any] = {"start": lo, "end": hi, "span_ns": view.span_ns,
                           "t0_ns": view.t0_ns, "lanes": list(LANES),
                           "classes": list(CLASSES), "total": len(picked)}
    if len(picked) <= max_events:
        events = []
        for li, i in picked:
            lane = view.lanes[LANES[li]]
            events.append([li, lane.starts[i], lane.durs[i], name_id(lane.names[i]),
                           name_id(lane.kernels[i]), lane.classes[i]])
        out["level"] = "events"
        out["events"] = events
    else:
        nbins = max(1, min(1000, max_events // len(LANES)))
        width = max(1, -(-(hi - lo) // nbins))
        acc: dict[tuple[int, int], list[Any]] = {}
        for li, i in picked:
            lane = view.lanes[LANES[li]]
            s, d = lane.starts[i], lane.durs[i]
            b = max(0, min(nbins - 1, (max(s, lo) - lo) // width))
            entry = acc.get((li, b))
            if entry is None:
                entry = acc[(li, b)] = [0, 0, Counter(), Counter(), 0]
            entry[0] += 1
            entry[1] += min(s + d, hi) - max(s, lo)
            entry[2][lane.classes[i]] += max(1, d)
            entry[3][lane.names[i]] += max(1, d)
            entry[4] += 1 if lane.classes[i] in (_CLS["eager_onednn"], _CLS["graph_onednn"]) else 0
        bins = []
        for (li, b), (count, busy, classes, labels, onednn) in sorted(acc.items()):
            bstart = lo + b * width
            bins.append([li, bstart, min(hi, bstart + width), count, busy,
                         classes.most_common(1)[0][0], name_id(labels.most_common(1)[0][0]),
                         onednn])
        out["level"] = "bins"
        out["bin_ns"] = width
        out["bins"] = bins
    out["names"] = list(names)
    return out


# ---------------------------------------------------------------- compare

def _kernel_names(row: Optional[dict[str, Any]], mode: str) -> list[str]:
    if row is None:
        return []
    return sorted({k["name"] for k in row[mode]["kernels"]})


def compare(a: RunView, b: RunView, changed_only: bool = True, page: int = 0,
            page_size: int = 100) -> dict[str, Any]:
    """Op types whose mode counts or kernels differ between runs ``a`` and ``b``."""
    if page < 0:
        raise ValueError("page must be >= 0")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
    rows = []
    for op_type in sorted(set(a.rows) | set(b.rows)):
        ra, rb = a.rows.get(op_type), b.rows.get(op_type)
        changes = []
        entry: dict[str, Any] = {"op_type": op_type}
        for mode in MODES:
            na = ra[mode]["executions"] if ra else 0
            nb = rb[mode]["executions"] if rb else 0
            ka, kb = _kernel_names(ra, mode), _kernel_names(rb, mode)
            ta = ra[mode].get("time_ns") if ra else None
            tb = rb[mode].get("time_ns") if rb else None
            if bool(na) != bool(nb):
                changes.append(f"{mode} mode")
            elif na != nb:
                changes.append(f"{mode} count")
            if ka and kb and ka != kb:
                changes.append(f"{mode} kernel")
            elif bool(ka) != bool(kb) and na and nb:
                changes.append(f"{mode} kernel evidence")
            entry[mode] = {
                "a": {"executions": na, "kernels": ka, "time_ns": ta},
                "b": {"executions": nb, "kernels": kb, "time_ns": tb},
                "time_delta_ns": (tb - ta) if ta is not None and tb is not None else None,
            }
        entry["changes"] = changes
        entry["kernel_changed"] = any(c.endswith(" kernel") for c in changes)
        if changes or not changed_only:
            rows.append(entry)
    rows.sort(key=lambda r: (not r["kernel_changed"], -len(r["changes"]), r["op_type"]))
    start = page * page_size
    kernel_changes = sum(1 for r in rows if r["kernel_changed"])
    return {
        "a": _run_brief(a), "b": _run_brief(b),
        "total": len(rows), "kernel_changes": kernel_changes,
        "page": page, "page_size": page_size, "rows": rows[start:start + page_size],
    }


def _run_brief(view: RunView) -> dict[str, Any]:
    doc = view.doc
    state, reason = onednn_state(view)
    return {"run": doc["run"], "tensorflow_version": doc["tensorflow_version"],
            "onednn_enabled": doc["onednn_enabled"], "onednn_source": doc["onednn_source"],
            "onednn_state": state, "onednn_reason": reason}


# ---------------------------------------------------------------- exports

def export_csv(view: RunView) -> str:
    """One line per (op type, mode, kernel), like ``tb-opmode summary --format csv`` plus time."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "op_type", "mode", "executions", "kernel", "kernel_executions",
                     "onednn", "evidence", "kernel_class", "time_ns"])
    for row in op_rows(view):
        for mode in MODES:
            stats = row[mode]
            if not stats["executions"] and not stats["kernels"]:
                continue
            for k in stats["kernels"] or [None]:
                writer.writerow([view.doc["run"], row["op_type"], mode, stats["executions"],
                                 k["name"] if k else "", k["executions"] if k else "",
                                 str(k["onednn"]).lower() if k else "",
                                 k["evidence"] if k else "", k["class"] if k else "unknown",
                                 stats.get("time_ns", "")])
    return out.getvalue()


def export_json(view: RunView) -> dict[str, Any]:
    """The run's summary (the CLI's JSON contract for this run) with per-mode time."""
    doc = dict(view.doc)
    rows = []
    for row in op_rows(view):
        row = dict(row)
        for mode, text in view.explanations.get(row["op_type"], {}).items():
            row[mode] = dict(row[mode], explanation=text)
        rows.append(row)
    doc["op_types"] = rows
    return doc


def export_trace(view: RunView, start: Optional[int] = None, end: Optional[int] = None,
                 max_events: int = MAX_TRACE_EVENTS, debug: bool = False) -> dict[str, Any]:
    """Chrome trace-event JSON (opens in Perfetto): one track per mode, mode and kernel in names."""
    if not 1 <= max_events <= MAX_TRACE_EVENTS:
        raise ValueError(f"max_events must be between 1 and {MAX_TRACE_EVENTS}")
    window = timeline_window(view, start, end, MAX_EVENTS, debug)
    lo = window["start"]
    hi = window["end"]
    events: list[tuple[int, int, int]] = []  # (start, lane, index)
    for li, lane_name in enumerate(LANES):
        lane = view.lanes[lane_name]
        first = bisect.bisect_left(lane.starts, lo - lane.max_dur)
        last = bisect.bisect_left(lane.starts, hi)
        for i in range(first, last):
            if lane.starts[i] + lane.durs[i] < lo:
                continue
            if not debug and lane.classes[i] == _CLS["debug"]:
                continue
            events.append((lane.starts[i], li, i))
    events.sort()
    truncated = len(events) > max_events
    events = events[:max_events]
    tracks = {"function": "tf.function calls (eager dispatch)", "eager": "eager ops",
              "graph": "graph ops (inside tf.function)"}
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
         "args": {"name": f"tb_opmode run {view.doc['run']}"}}]
    for li, lane_name in enumerate(LANES):
        trace.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": li + 1,
                      "args": {"name": tracks[lane_name]}})
        trace.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": li + 1,
                      "args": {"sort_index": li}})
    for s, li, i in events:
        lane = view.lanes[LANES[li]]
        cls = CLASSES[lane.classes[i]]
        kernel = lane.kernels[i]
        if cls == "function":
            name = f"{lane.names[i]} [tf.function call]"
        else:
            mode = "graph" if cls.startswith("graph") or cls == "debug" else "eager"
            kind = {"eager_onednn": "oneDNN", "graph_onednn": "oneDNN", "eager_stock": "stock",
                    "graph_stock": "stock", "debug": "tfdbg instrumentation"}.get(
                        cls, "kernel unknown")
            label = lane.ops[i] if mode == "eager" else lane.names[i]
            name = f"{label} [{mode} · {kernel or 'kernel ?'} · {kind}]"
        trace.append({"ph": "X", "name": name, "cat": cls, "pid": 1, "tid": li + 1,
                      "ts": (view.t0_ns + s) / 1000.0, "dur": lane.durs[i] / 1000.0,
                      "args": {"op_type": lane.ops[i], "kernel": kernel, "class": cls}})
    return {"traceEvents": trace, "displayTimeUnit": "ns",
            "otherData": {"run": view.doc["run"], "tensorflow_version":
                          view.doc["tensorflow_version"], "events": len(events),
                          "truncated": truncated, "window_ns": [lo, hi]}}


def dumps_json(value: Any) -> str:
    """Compact JSON text for a download."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)

