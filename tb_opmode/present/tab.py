"""Pure functions behind the tab's routes: small JSON-ready dicts from a run's model.

In: a ``RunModel`` from ``join.build_run`` (its counts and kernels, plus the
dumps, profiles and logs it keeps), turned once by ``prepare`` into a
``RunView`` that holds what every request needs (the op table's rows with
their time, the mode x class time, the ``timeline.Timeline``). Out: dicts and
strings for the routes in ``plugin.py``: run overview, a page of the op table,
one op's detail (kernels, evidence, explanation, call sites with source lines,
graphs), a comparison of two runs, and the CSV and JSON exports. The timeline
window and the trace export are in ``timeline.py``.

Shared with the CLI, not recomputed here: rows and explanations are the summary contract's
(``join.run_json``, ``why.explain``), kernel classes ``why.kernel_class``,
times ``model.times`` (``why.op_times``), call sites and graphs
``why.call_sites`` and ``why.function_graphs``, the CSV ``export.render_csv``.
Nothing here reads a file or touches the network; bad parameters raise
``errors.BadParameter`` (a ``ValueError``) with a message, unknown ops
``errors.UnknownOpType`` (a ``LookupError``); the plugin turns them into 400 and 404.
"""
from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..analyze.assemble import is_user_op, row_op
from ..analyze.explain import call_sites, class_times, explain, function_graphs, kernel_class
from ..analyze.kernels import cpu_from_kernels, is_fused
from ..analyze.nodes import canonical_op
from ..analyze.workers import NO_DEVICE
from ..errors import BadParameter, UnknownOpType
from ..model import ModeStats, OpTypeRow, RunModel
from ..read import fs
from ..read.tfdbg import DEBUG_MODE_NAMES
from ..vocab import KERNEL_KINDS, MODES, REMOVED, UNKNOWN, is_onednn
from ..vocab import onednn_state as _onednn_word
from . import timeline as _timeline
from .contract import run_json, summary
from .csv import render_csv

__all__ = [
    "RunView", "prepare", "onednn_state", "overview", "op_rows", "op_page", "op_detail",
    "compare", "export_csv", "export_json", "dumps_json", "kernel_kind", "short_why",
    "SORT_KEYS", "FILTERS", "KINDS", "MAX_PAGE_SIZE", "dump_modes", "dump_gap",
    "dtype_label", "short_device", "lower_bound", "cpu_facts", "unknowns",
]

SORT_KEYS = ("total", "eager", "graph", "op_type", "time", "eager_time", "graph_time")
FILTERS = ("both", "differs", "no_onednn", "onednn", "eager_only", "graph_only",
           "low_precision")
MAX_PAGE_SIZE = 200
# What the tab colours a kernel by (with the mode): oneDNN or stock when a kernel ran;
# "removed" when grappler took the op out (no kernel ran); "unknown" when no evidence
# decides. Fusion is a separate mark (a kernel's ``fused``), never a colour of its own.
KINDS = KERNEL_KINDS
_MAX_SITES = 50
_MAX_GRAPHS = 50
_SNIPPET_CONTEXT = 3
_MAX_WARNINGS = 100
_MAX_FUNCTIONS = 100


@dataclass
class RunView:
    """A loaded run plus what the routes read; never changed once built."""

    model: RunModel
    logdir: str
    doc: dict[str, Any]                       # join.run_json of this run, without explanations
    rows: dict[str, dict[str, Any]]           # op type -> row JSON (with kernel class and time)
    class_time: dict[tuple[str, str], int]    # (mode, kernel class) -> profiled op time
    timeline: _timeline.Timeline
    # Profiled op time of op types the table has no row for (the dump does not count
    # them): (mode, op type) -> ns. Shown apart, so the overview's totals are the table's.
    outside_time: dict[tuple[str, str], int] = field(default_factory=dict)
    # (mode, kind) -> profiled op time of the table's rows (kernel "" counts as unknown).
    kind_time: dict[tuple[str, str], int] = field(default_factory=dict)
    # The dump's tensor_debug_mode names (most used first) and what they cannot count.
    dump_modes: list[str] = field(default_factory=list)
    # Modes whose counts the dump's circular buffer cut: mode -> what was cut and how.
    lower_bound: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Devices the dump's executions name (short names, most executions first), and
    # (mode, device) -> executions over all op types.
    devices: list[str] = field(default_factory=list)
    device_totals: dict[tuple[str, str], int] = field(default_factory=dict)


# What a mode leaves out when it instruments a graph: tfdbg's dumping callback inserts a
# debug op only for the output tensors these modes can summarise (and none for an op
# without outputs), so such a graph op has no execution trace and counts 0 executions.
_MODE_RECORDS = {"CURT_HEALTH": "float tensors only", "CONCISE_HEALTH": "float tensors only",
                 "FULL_HEALTH": "float tensors only",
                 "SHAPE": "float, integer and bool tensors only"}


def dump_modes(model: RunModel) -> list[str]:
    """The tensor_debug_mode of the run's dumps (tfdbg ``DumpSet.tensor_debug_modes``),
    by name, most used first."""
    counts: Counter[int] = Counter()
    for dump in model.dumps:
        counts.update(dump.tensor_debug_modes)
    return [DEBUG_MODE_NAMES.get(n, str(n)) for n, _c in counts.most_common()]


def dump_gap(modes: list[str]) -> str:
    """Why a graph op the profile or log saw can have no trace in a dump of these modes."""
    limited = [m for m in modes if m in _MODE_RECORDS]
    if limited:
        return (f"the dump's {limited[0]} mode records {_MODE_RECORDS[limited[0]]}, so a graph "
                f"op without such an output (or without any output) is never traced")
    return ("the dump counts a graph op by the traces of its outputs, and it holds none of "
            "this op's (an op without outputs is never traced)")


# tensorflow/core/framework/types.proto names as a Python user writes them.
_DTYPE_WORDS = {"DT_HALF": "float16", "DT_BFLOAT16": "bfloat16", "DT_FLOAT": "float32",
                "DT_DOUBLE": "float64", "DT_BOOL": "bool", "DT_STRING": "string"}
# What a dump records when it names no dtype (see ``dtype_label``).
_VAGUE = ("?", "float", "")
# Float types a mixed-precision policy computes in.
_LOW_PRECISION = ("DT_HALF", "DT_BFLOAT16")


def dtype_label(dtype: str) -> str:
    """A dump's dtype (``kernels`` and ``tfdbg`` spelling) as words: ``DT_HALF`` is
    float16; ``?`` (NO_TENSOR records none) "not recorded"; ``float`` (CURT_HEALTH and
    CONCISE_HEALTH summarise float tensors only) "a float type"; "" (no summary in a mode
    that summarises float tensors: a non-float output, or none) "no float output"."""
    if dtype == "?":
        return "not recorded"
    if dtype == "float":
        return "a float type"
    if not dtype:
        return "no float output"
    return _DTYPE_WORDS.get(dtype, dtype[3:].lower() if dtype.startswith("DT_") else dtype)


def _dtype_splits(model: RunModel) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(op type, mode) -> executions per dtype the dump recorded, each with the kernels
    its executions ran (from ``model.eager_ops`` and ``model.graph_ops``)."""
    found: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for mode, items in (("eager", model.eager_ops), ("graph", model.graph_ops)):
        for item in items:
            if not item.executions:
                continue
            per = found.setdefault((item.op_type, mode), {})
            kernel = item.kernel or UNKNOWN
            per.setdefault(item.dtype or "", Counter())[kernel] += item.executions
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for key, per in found.items():
        entries: list[dict[str, Any]] = [
                   {"dtype": dt, "label": dtype_label(dt), "executions": sum(k.values()),
                    "low_precision": dt in _LOW_PRECISION,
                    "kernels": [{"name": name, "executions": n, "kind": kernel_kind(name)}
                                for name, n in k.most_common()]}
                   for dt, k in per.items()]
        entries.sort(key=lambda e: (-e["executions"], e["label"]))
        out[key] = entries
    return out


# Memoised: asked per row and device (10,000 times for a small run) of a handful of names.
@functools.lru_cache(maxsize=1024)
def short_device(name: str) -> str:
    """``/job:localhost/replica:0/task:0/device:CPU:1`` as ``CPU:1`` (with the task when it
    is not task 0, the job when it is not localhost)."""
    if not name:
        return ""
    parts = dict(p.split(":", 1) for p in name.strip("/").split("/") if ":" in p)
    device = parts.get("device", name)
    prefix = []
    if parts.get("job", "localhost") != "localhost":
        prefix.append(f"job:{parts['job']}")
    if parts.get("task", "0") != "0":
        prefix.append(f"task:{parts['task']}")
    return "/".join(prefix + [device])


def _device_splits(model: RunModel) -> dict[tuple[str, str], Counter[str]]:
    """(op type, mode) -> executions per device the dump's records name (short names; with
    the host in front when the run's dumps come from several hosts; "" for none recorded).
    From the run's ``workers`` (``analyze.workers``: per dump and device, counted as the
    run's counts are) when it has them; a run of one dump on one device has none, and its
    device is read from the dump the same way: graph, the device the traces of an op's
    lowest traced slot name (``DumpSet.lowest_slots``, ``DumpSet.trace_devices``); eager,
    the device of an execution's first output (``DumpSet.execution_devices``)."""
    out: dict[tuple[str, str], Counter[str]] = {}
    hosts = {d.host for d in model.dumps}

    def add(host: str, device: str, op_type: str, mode: str, n: int) -> None:
        if not n or op_type not in model.op_types:
            return  # not a row: a tf.function call (its ops are the graph's), a debug op
        short = short_device("" if device == NO_DEVICE else device)
        name = f"{host}/{short}" if len(hosts) > 1 and short else short
        out.setdefault((op_type, mode), Counter())[name] += n

    if model.workers:
        for entry in model.workers:
            for on_device in entry["devices"]:
                for row in on_device["op_types"]:
                    for mode in MODES:
                        add(entry["host"], on_device["device"], row["op_type"], mode,
                            row[mode]["executions"])
        return out
    for dump in model.dumps:
        if dump.trace_devices:  # else the reader recorded no devices: say nothing of them
            for (graph_id, op_name), (slot, n) in dump.lowest_slots().items():
                graph = dump.graphs.get(graph_id)
                op = graph.ops.get(op_name) if graph else None
                if op is not None:
                    add(dump.host, dump.trace_devices.get((graph_id, op_name, slot)) or op.device,
                        op.op_type, "graph", n)
        for (op_type, graph_id, device_id, _dtype), n in dump.execution_devices.items():
            if not graph_id:
                add(dump.host, dump.devices.get(device_id, "") if device_id >= 0 else "",
                    op_type, "eager", n)
    return out


def lower_bound(model: RunModel) -> dict[str, dict[str, Any]]:
    """Modes whose counts are a lower bound because the dump's circular buffer dropped the
    older records: mode -> records kept, how we know, and what to do."""
    out: dict[str, dict[str, Any]] = {}
    for cut in model.buffer_cuts:
        entry = out.setdefault(cut.mode, {"records": 0, "how": cut.how, "fix": cut.fix,
                                          "kind": cut.kind})
        entry["records"] += cut.records
    return out


def cpu_facts(model: RunModel) -> dict[str, Any]:
    """The CPU's instruction sets as TF's start-up line (cpu_feature_guard) in the log
    names them, or why they are unknown; what decides kernels by them."""
    found: list[frozenset[str]] = [log.cpu_features for log in model.logs if log.cpu_features]
    if not found:
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
    features = sorted(set().union(*found))
    return {"features": features,
            "source": "TensorFlow's start-up line in the log (cpu_feature_guard)",
            "note": ""}


def _split_how(note: str) -> tuple[str, str, str]:
    """An unknown kernel's note as (what is unknown: "kernel" or "whether it ran", why, how
    to find out), where the note says them."""
    what = "kernel"
    text = note
    for prefix, unknown in (("unknown whether it ran: ", "whether it ran"), ("unknown: ", "kernel")):
        if text.startswith(prefix):
            text, what = text[len(prefix):], unknown
            break
    for marker in (". To know, ", "; keep ", "; to know, ", "; dump with ", "; run with "):
        at = text.find(marker)
        if at > 0:
            how = text[at + 2:].strip()
            if how.lower().startswith("to know, "):
                how = how[len("to know, "):]
            return what, text[:at].strip(), how[0].upper() + how[1:]
    return what, text, ""


def unknowns(view: RunView, limit: int = 20) -> dict[str, Any]:
    """Executions whose kernel is unknown, grouped by the reason, with how to find out."""
    groups: dict[str, dict[str, Any]] = {}
    bare = 0
    for row in view.rows.values():
        for mode in MODES:
            stats = row[mode]
            known = 0
            for k in stats["kernels"]:
                known += k["executions"]
                if k["kind"] != "unknown":
                    continue
                notes = k.get("notes") or []
                if not notes:
                    bare += k["executions"]
                    continue
                what, why, how = _split_how(notes[0])
                g = groups.setdefault(why, {"what": what, "why": why, "how": how,
                                            "executions": 0, "ops": []})
                g["executions"] += k["executions"]
                if (row["op_type"], mode) not in [(o["op_type"], o["mode"]) for o in g["ops"]]:
                    g["ops"].append({"op_type": row["op_type"], "mode": mode,
                                     "executions": k["executions"]})
            if stats["executions"] > known and not stats.get("uncounted"):
                bare += stats["executions"] - known
    out = sorted(groups.values(), key=lambda g: (-g["executions"], g["why"]))
    return {"groups": out[:limit], "groups_total": len(out),
            "executions": sum(g["executions"] for g in out) + bare,
            "without_reason": bare,
            "without_reason_how": ("no log line or profiler event names their kernel: keep "
                                   "TF's log (TF_CPP_MAX_VLOG_LEVEL=2) or profile the run")
            if bare else ""}


def _log_graph_counts(model: RunModel) -> Counter[str]:
    """Graph executions per op type as the TensorFlow log counted them (its window): per
    Process node line's kernel, as a run without a dump counts them."""
    out: Counter[str] = Counter()
    for log in model.logs:
        for kernel, n in log.kernel_executions.items():
            if is_user_op(kernel):
                out[row_op(kernel)] += n
    return out


def _uncounted(model: RunModel, rows: dict[str, dict[str, Any]], modes: list[str]) -> None:
    """Mark the rows the dump counts 0 graph executions for while the profile or the log saw
    the op run in a graph: ``row["graph"]["uncounted"]`` says what each saw and why."""
    if not model.dumps:
        return
    profile: dict[str, dict[str, Any]] = {}
    for (op_type, mode, kernel), (events, ns) in model.times.items():
        if mode != "graph" or op_type not in rows:
            continue
        entry = profile.setdefault(op_type, {"events": 0, "time_ns": 0, "kernels": Counter()})
        entry["events"] += events
        entry["time_ns"] += ns
        if kernel:
            entry["kernels"][kernel] += events
    logged = _log_graph_counts(model)
    why = dump_gap(modes)
    for op_type, row in rows.items():
        if row["graph"]["executions"]:
            continue
        seen = profile.get(op_type)
        log_n = logged.get(op_type, 0)
        if not seen and not log_n:
            continue
        saw = []
        if seen:
            saw.append(f"the profile saw {seen['events']:,} graph event"
                       f"{'' if seen['events'] == 1 else 's'}")
        if log_n:
            saw.append(f"the log saw {log_n:,} graph execution{'' if log_n == 1 else 's'}")
        kernels = seen["kernels"] if seen else Counter()
        row["graph"] = dict(row["graph"], uncounted={
            "profile_events": seen["events"] if seen else 0,
            "profile_time_ns": seen["time_ns"] if seen else 0,
            "log_executions": log_n,
            "kernels": [{"name": k, "events": n, "onednn": is_onednn(k), "kind": kernel_kind(k)}
                        for k, n in kernels.most_common()],
            "note": f"not counted: {why}; {' and '.join(saw)}",
        })
        row["uncounted"] = True


def kernel_kind(name: str) -> str:
    """``removed`` (grappler took the op out: no kernel ran), ``unknown`` (no kernel named,
    or the evidence cannot decide), else ``onednn`` or ``stock``, fused or not."""
    if name == REMOVED:
        return "removed"
    if not name or name == UNKNOWN:
        return "unknown"
    return "onednn" if is_onednn(name) else "stock"


def _folded(op_type: str, name: str) -> bool:
    """Constant-folded by grappler: the op's value came from a Const, computed once."""
    return name == "Const" and op_type != "Const"


def _ran(mode_doc: dict[str, Any]) -> set[str]:
    """Names of the kernels that really ran in a mode: not removed, folded or unknown."""
    return {k["name"] for k in mode_doc["kernels"]
            if k["kind"] in ("onednn", "stock") and not k["folded"]}


def _differs(op_type: str, eager: dict[str, Any], graph: dict[str, Any]) -> str:
    """Why the kernels differ between the modes ("" when they do not): the kernels that ran
    (ignoring removed, folded and unknown executions) differ, or one mode ran oneDNN and
    the other did not."""
    if not eager["executions"] or not graph["executions"]:
        return ""
    ran_e, ran_g = _ran(eager), _ran(graph)
    dnn_e, dnn_g = any(is_onednn(n) for n in ran_e), any(is_onednn(n) for n in ran_g)

    def names(ran: set[str]) -> str:
        return ", ".join(sorted(ran)) or "no kernel"
    if ran_e and ran_g and ran_e != ran_g:
        return f"eager ran {names(ran_e)}; graph ran {names(ran_g)}"
    if dnn_e != dnn_g:
        return (f"oneDNN only {'eagerly' if dnn_e else 'in graphs'}: eager ran {names(ran_e)}; "
                f"graph ran {names(ran_g)}")
    return ""


def _row_json(row_doc: dict[str, Any], time_ns: dict[tuple[str, str], int]) -> dict[str, Any]:
    """A row of the summary contract plus what the table shows and filters on."""
    op_type = row_doc["op_type"]
    out: dict[str, Any] = {"op_type": op_type}
    for mode in MODES:
        mode_doc = dict(row_doc[mode])
        mode_doc["kernels"] = [dict(k, **{"class": kernel_class(k["name"]),
                                          "kind": kernel_kind(k["name"]),
                                          "fused": bool(k.get("fused_into"))
                                          or is_fused(k["name"]),
                                          "folded": _folded(op_type, k["name"])})
                               for k in mode_doc["kernels"]]
        if (op_type, mode) in time_ns:
            mode_doc["time_ns"] = time_ns[(op_type, mode)]
        out[mode] = mode_doc
    out["total"] = sum(out[mode]["executions"] for mode in MODES)
    out["onednn"] = any(k["onednn"] for mode in MODES for k in out[mode]["kernels"])
    why = _differs(op_type, out["eager"], out["graph"])
    out["kernel_differs"] = bool(why)
    out["kernel_differs_why"] = why
    out["fused"] = any(k["fused"] for mode in MODES for k in out[mode]["kernels"])
    return out


def prepare(model: RunModel, logdir: str, timeline: bool = True) -> RunView:
    """Index one run for the routes (run once per load, off the request path). Without
    ``timeline`` its timeline is left empty: for a view only the run list will read
    (the loader's light views), whose full form is built again when a route asks."""
    logdir = fs.absolute(logdir)
    # Explanations are long and per op: made on request (op detail, JSON export).
    doc = run_json(model, logdir, explanations=False)
    time_ns: Counter[tuple[str, str]] = Counter()
    for (op_type, mode, _kernel), (_events, ns) in model.times.items():
        time_ns[(op_type, mode)] += ns
    rows = {r["op_type"]: _row_json(r, time_ns) for r in doc["op_types"]}
    modes = dump_modes(model)
    _uncounted(model, rows, modes)
    dtypes = _dtype_splits(model)
    devices = _device_splits(model)
    device_totals: Counter[tuple[str, str]] = Counter()
    for (_op_type, mode), per in devices.items():
        for device, n in per.items():
            device_totals[(mode, device)] += n
    names: Counter[str] = Counter()   # devices by name; "" (an op without outputs) is none
    for (_mode, device), n in device_totals.items():
        if device:
            names[device] += n
    cut = lower_bound(model)
    for op_type, row in rows.items():
        labels: set[str] = set()
        for mode in MODES:
            split = dtypes.get((op_type, mode))
            if split:
                row[mode]["dtypes"] = split
                labels.update(e["label"] for e in split if e["dtype"] not in _VAGUE)
            on_devices = devices.get((op_type, mode))
            if on_devices and len(names) > 1:
                row[mode]["devices"] = dict(on_devices)
            if mode in cut and row[mode]["executions"]:
                row[mode]["lower_bound"] = True
        row["dtypes_differ"] = len(labels) > 1
        row["low_precision"] = any(e["low_precision"] for mode in MODES
                                   for e in row[mode].get("dtypes", []))
    outside: Counter[tuple[str, str]] = Counter()
    kind_time: Counter[tuple[str, str]] = Counter()
    for (op_type, mode, kernel), (_events, ns) in model.times.items():
        if op_type in rows:
            kind_time[(mode, kernel_kind(kernel))] += ns
        else:
            outside[(mode, op_type)] += ns
    lanes = _timeline.build(model) if timeline else _timeline.Timeline({}, 0, 0, 0)
    return RunView(model=model, logdir=logdir, doc=doc, rows=rows,
                   class_time=class_times(model.times), timeline=lanes,
                   outside_time=dict(outside), kind_time=dict(kind_time), dump_modes=modes,
                   lower_bound=cut, devices=[d for d, _n in names.most_common()],
                   device_totals=dict(device_totals))


# ---------------------------------------------------------------- overview

def onednn_state(view: RunView) -> tuple[str, str]:
    """("on" | "off" | "unknown", how we know), as ``kernels.detect_onednn`` decided."""
    model = view.model
    state = _onednn_word(model.onednn_enabled)
    if model.onednn_source:
        return state, model.onednn_source
    return state, ("no log banner, and no kernel seen says whether oneDNN's custom "
                   "operations were on")


def _capped_verbose(verbose: Any) -> Optional[dict[str, Any]]:
    """The log's ONEDNN_VERBOSE primitive counts (when the model has them), 30 rows at most."""
    if not isinstance(verbose, dict) or not verbose.get("primitives"):
        return None
    rows = list(verbose["primitives"])
    return {"primitives": rows[:30], "primitives_total": len(rows),
            "note": str(verbose.get("note", ""))}


def _class_of_mode(stats: ModeStats, classify: Callable[[str], str] = kernel_class
                   ) -> dict[str, int]:
    """Executions of one op type in one mode per kernel class (+ ``unknown``)."""
    out: Counter[str] = Counter()
    known = sum(k.executions for k in stats.kernels)
    # A log can count more executions than the dump saw (it ran longer): scale down.
    scale = stats.executions / known if known > stats.executions else 1.0
    for k in stats.kernels:
        out[classify(k.name)] += round(k.executions * scale)
    assigned = sum(out.values())
    if stats.executions > assigned:
        out["unknown"] += stats.executions - assigned
    return dict(out)


def _fused_of_mode(stats: ModeStats) -> dict[str, int]:
    """Executions of fused kernels per kind (scaled as ``_class_of_mode`` scales)."""
    out: Counter[str] = Counter()
    known = sum(k.executions for k in stats.kernels)
    scale = stats.executions / known if known > stats.executions else 1.0
    for k in stats.kernels:
        if k.fused_into or is_fused(k.name):
            out[kernel_kind(k.name)] += round(k.executions * scale)
    return dict(out)


def overview(view: RunView) -> dict[str, Any]:
    """Run facts, mode shares, oneDNN coverage per mode, the mode x class matrix, functions.

    ``matrix`` is by ``why.kernel_class`` (the CLI's time_share); ``kinds`` is what the tab
    shows: mode x kind (oneDNN, stock, removed by grappler, unknown) with the fused share,
    time only where executions are (the rest is ``time_unattributed_ns`` of the mode).
    A mode's ``time_ns`` is the sum of the op table's times; profiled time of op types the
    table has no row for is ``time_outside_table_ns`` (their names in ``outside_table``).
    """
    doc = view.doc
    model = view.model
    has_time = bool(model.profiles)
    modes: dict[str, dict[str, Any]] = {}
    matrix = []
    kinds = []
    for mode in MODES:
        classes: Counter[str] = Counter()
        by_kind: Counter[str] = Counter()
        fused: Counter[str] = Counter()
        for row in model.op_types.values():
            classes.update(_class_of_mode(row.mode(mode)))
            by_kind.update(_class_of_mode(row.mode(mode), kernel_kind))
            fused.update(_fused_of_mode(row.mode(mode)))
        executions = sum(row.mode(mode).executions for row in model.op_types.values())
        # Fused kernels are oneDNN ones (why.kernel_class).
        onednn = classes.get("onednn", 0) + classes.get("fused", 0)
        known = executions - classes.get("unknown", 0)
        mode_time = sum(r[mode].get("time_ns", 0) for r in view.rows.values())
        outside = {op: ns for (m, op), ns in view.outside_time.items() if m == mode}
        unattributed = 0
        for kind in KINDS:
            n = by_kind.get(kind, 0)
            ns = view.kind_time.get((mode, kind), 0)
            if not n:
                unattributed += ns
            kinds.append({"mode": mode, "kind": kind, "executions": n,
                          "fused_executions": fused.get(kind, 0),
                          "time_ns": (ns if n else None) if has_time else None})
        modes[mode] = {
            "executions": executions,
            "op_types": sum(1 for row in model.op_types.values() if row.mode(mode).executions),
            "onednn_executions": onednn,
            "kernel_known_executions": known,
            "onednn_share_of_known": (onednn / known) if known else None,
            "time_ns": mode_time if has_time else None,
            "removed_executions": by_kind.get("removed", 0),
            "unknown_executions": by_kind.get("unknown", 0),
            "time_unattributed_ns": unattributed if has_time else None,
            "time_outside_table_ns": sum(outside.values()) if has_time else None,
            "outside_table": sorted(outside, key=lambda op: (-outside[op], op))[:20],
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
        "kinds": kinds,
        "glance": _glance(view),
        "dump": _dump_coverage(view),
        "cpu": cpu_facts(model),
        "xla_functions": doc.get("xla_functions", []),
        "lower_bound": view.lower_bound,
        "dtypes": _dtype_totals(view),
        "devices": [{"device": d, "eager": view.device_totals.get(("eager", d), 0),
                     "graph": view.device_totals.get(("graph", d), 0)}
                    for d in view.devices] if len(view.devices) > 1 else [],
        "devices_none": {mode: view.device_totals.get((mode, ""), 0) for mode in MODES},
        "unknowns": unknowns(view),
        "profile": {
            "events": view.timeline.events,
            "span_ns": view.timeline.span_ns,
            "debug_instrumentation_time_ns": view.timeline.debug_time_ns,
            "time_source": sorted({p.time_source for p in model.profiles if p.time_source}),
        },
    }


def _dtype_totals(view: RunView) -> dict[str, Any]:
    """Executions per dtype and mode over the table's rows (where the dump records dtypes),
    and whether mixed precision (float16/bfloat16) shows."""
    per: dict[str, Counter[str]] = {mode: Counter() for mode in MODES}
    for row in view.rows.values():
        for mode in MODES:
            for e in row[mode].get("dtypes", []):
                per[mode][e["label"]] += e["executions"]
    low = sorted({e["label"] for row in view.rows.values() for mode in MODES
                  for e in row[mode].get("dtypes", []) if e["low_precision"]})
    return {"modes": {mode: [{"label": k, "executions": n} for k, n in per[mode].most_common()]
                      for mode in MODES},
            "low_precision": low,
            "low_precision_op_types": sum(1 for r in view.rows.values() if r["low_precision"]),
            "recorded": any(label != "not recorded" for c in per.values() for label in c)}


def _dump_coverage(view: RunView) -> Optional[dict[str, Any]]:
    """What the dump's tensor_debug_mode counts, and the graph op types it did not count
    though the profile or log saw them run (rows with 0 graph executions, and op types the
    table has no row for): the execution shares cover what the dump counts only."""
    if not view.model.dumps:
        return None
    modes = view.dump_modes
    limited = next((m for m in modes if m in _MODE_RECORDS), "")
    uncounted = sorted((r for r in view.rows.values() if r["graph"].get("uncounted")),
                       key=lambda r: (-r["graph"]["uncounted"]["profile_events"], r["op_type"]))
    outside = {op: ns for (m, op), ns in view.outside_time.items() if m == "graph"}
    return {
        "modes": modes,
        "records": _MODE_RECORDS.get(limited, "every traced output tensor"),
        "gap": dump_gap(modes),
        "uncounted_op_types": [r["op_type"] for r in uncounted][:30],
        "uncounted_total": len(uncounted),
        "uncounted_profile_events": sum(r["graph"]["uncounted"]["profile_events"]
                                        for r in uncounted),
        "uncounted_log_executions": sum(r["graph"]["uncounted"]["log_executions"]
                                        for r in uncounted),
        "uncounted_time_ns": sum(r["graph"]["uncounted"]["profile_time_ns"] for r in uncounted),
        "outside_table": sorted(outside, key=lambda op: (-outside[op], op))[:30],
    }


_GLANCE_ROWS = 8


def _glance(view: RunView) -> dict[str, Any]:
    """The answer at a glance: the op types that ran a oneDNN kernel in either mode (or,
    in a run without one, those that ran in both modes), most executed first."""
    rows = sorted(view.rows.values(), key=lambda r: (-r["total"], r["op_type"]))
    picked = [r for r in rows if r["onednn"]]
    basis = "onednn"
    if not picked:
        picked = [r for r in rows if r["eager"]["executions"] and r["graph"]["executions"]]
        basis = "both"
    return {"basis": basis, "total": len(picked), "rows": picked[:_GLANCE_ROWS]}


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
        if f == "low_precision" and not row.get("low_precision"):
            return False
    if query:
        hay = [row["op_type"].lower()] + [k["name"].lower() for m in MODES
                                          for k in row[m]["kernels"]]
        if not any(query in h for h in hay):
            return False
    return True


def _sort_key(sort: str) -> Callable[[dict[str, Any]], Any]:
    def time_of(row: dict[str, Any], mode: str) -> int:
        ns: int = row[mode].get("time_ns", 0)
        return ns
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
        raise BadParameter(f"sort must be one of {', '.join(SORT_KEYS)}; got {sort!r}")
    for f in filters:
        if f not in FILTERS:
            raise BadParameter(f"filter must be one of {', '.join(FILTERS)}; got {f!r}")
    q = query.strip().lower()
    rows = [r for r in view.rows.values() if _passes(r, filters, q)]
    rows.sort(key=_sort_key(sort), reverse=descending)
    return rows


def op_page(view: RunView, sort: str = "total", descending: bool = True,
            filters: tuple[str, ...] = (), query: str = "", page: int = 0,
            page_size: int = 50) -> dict[str, Any]:
    """One page of the op table."""
    if page < 0:
        raise BadParameter("page must be >= 0")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise BadParameter(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
    rows = op_rows(view, sort, descending, filters, query)
    start = page * page_size
    return {"run": view.doc["run"], "total": len(rows), "all_total": len(view.rows),
            "page": page, "page_size": page_size, "sort": sort,
            "order": "desc" if descending else "asc", "filters": list(filters), "q": query,
            "lower_bound": sorted(view.lower_bound), "devices": view.devices
            if len(view.devices) > 1 else [],
            "rows": rows[start:start + page_size]}


# ---------------------------------------------------------------- op detail

_EVIDENCE_SOURCE = {"log": "the TensorFlow log", "profile": "the profiler trace",
                    "inferred": "inferred, not observed"}
_CLASS_WORD = {"onednn": "oneDNN", "fused": "fused", "stock": "stock", "unknown": "no kernel"}


def _evidence_lines(row: OpTypeRow) -> list[str]:
    """Plain statements of what was seen, per mode (shown when no explanation exists)."""
    out = []
    for mode in MODES:
        stats = row.mode(mode)
        if not stats.executions and not stats.kernels:
            continue
        if not stats.kernels:
            out.append(f"{mode}: {stats.executions} executions; no kernel name was seen "
                       f"(no log line or profiler event names one)")
            continue
        for k in stats.kernels:
            text = (f"{mode}: {k.name} ({_CLASS_WORD[kernel_class(k.name)]}) for {k.executions} "
                    f"of {stats.executions} executions; evidence: "
                    f"{_EVIDENCE_SOURCE.get(k.evidence, k.evidence)}")
            if k.notes:
                text += f" ({'; '.join(k.notes)})"
            out.append(text)
    return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_WHY_SENTENCES = 2
# Sentences every explanation of a mode carries: in the full text only.
_GENERIC = ("Rules as of", "A graph op runs each time")


def short_why(explanation: str) -> str:
    """The why of an explanation in a few sentences: without its first one (how often and
    from where, which the tab shows as numbers and call sites) and the closing "Rules as
    of ..." (in the full text)."""
    sentences = [t for t in _SENTENCE.split(explanation.strip()) if t]
    body = [t for t in sentences[1:] if not t.startswith(_GENERIC)] or sentences[:1]
    return " ".join(body[:_WHY_SENTENCES])


def op_detail(view: RunView, op_type: str, sites: int = 10) -> dict[str, Any]:
    """Everything about one op type; ``UnknownOpType`` if the run has no such op type."""
    if op_type not in view.rows:
        raise UnknownOpType(f"run {view.doc['run']!r} has no op type {op_type!r}")
    if not 1 <= sites <= _MAX_SITES:
        raise BadParameter(f"sites must be between 1 and {_MAX_SITES}")
    model = view.model
    row = model.op_types[op_type]
    out = dict(view.rows[op_type])
    out["evidence"] = _evidence_lines(row)
    explained = explain(model, op_type)
    explanation = {mode: explained[mode]["explanation"] for mode in MODES
                   if row.mode(mode).executions}
    if explanation:
        out["explanation"] = explanation
        out["why"] = {mode: short_why(text) for mode, text in explanation.items() if text}
    fused = []
    for k in row.graph.kernels:
        if k.fused_into or (canonical_op(k.name) != op_type and kernel_class(k.name) == "fused"):
            fused.append({"kernel": k.name, "executions": k.executions, "evidence": k.evidence,
                          "onednn": k.onednn, "nodes": k.fused_into[:5]})
    if fused:
        out["fused_into"] = fused
    out["call_sites"], out["call_sites_total"] = {}, {}
    for mode in MODES:
        found = call_sites(model, op_type, mode, limit=None, context=_SNIPPET_CONTEXT, via=True)
        out["call_sites"][mode] = found[:sites]
        out["call_sites_total"][mode] = len(found)
    graphs = function_graphs(model, op_type)
    # "inside": the outermost tf.function a graph belongs to, when that is another graph.
    out["graphs"] = [dict(g, name=g["graph"], outer=g["function"] if g["function"] != g["graph"]
                          else "") for g in graphs[:_MAX_GRAPHS]]
    out["graphs_total"] = len(graphs)
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
        raise BadParameter("page must be >= 0")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise BadParameter(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
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
                "a": {"executions": na, "kernels": ka, "classes": [kernel_class(k) for k in ka],
                      "time_ns": ta},
                "b": {"executions": nb, "kernels": kb, "classes": [kernel_class(k) for k in kb],
                      "time_ns": tb},
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
    """``tb-opmode summary --format csv`` of this run (rows in the table's default order),
    plus each kernel's class and the mode's op time."""
    return render_csv({"runs": [dict(view.doc, op_types=op_rows(view))]}, with_time=True)


def export_json(view: RunView) -> dict[str, Any]:
    """The CLI's JSON contract (``tb-opmode summary --format json``: ``{"version",
    "warnings", "runs": [...]}``) for this run, explanations included, its rows with the
    table's fields: kernel classes, per-mode time in ns, totals and flags."""
    doc = summary([view.model], view.logdir)
    run = doc["runs"][0]
    explained = {r["op_type"]: r for r in run["op_types"]}
    rows = []
    for row in op_rows(view):
        row = dict(row)
        for mode in MODES:
            text = explained[row["op_type"]][mode].get("explanation")
            if text:
                row[mode] = dict(row[mode], explanation=text)
        rows.append(row)
    run["op_types"] = rows
    run["tensor_debug_modes"] = view.dump_modes
    return doc


def dumps_json(value: Any) -> str:
    """Compact JSON text for a download."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)
