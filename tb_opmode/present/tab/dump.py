"""What a run's tfdbg dump records, and what it cannot: the facts the table adds to rows.

In: a ``RunModel`` (its dumps, its kernel assignments ``eager_ops`` and ``graph_ops``,
its profiled ``times``, its logs, its per-worker counts ``workers``). Out, per run:
the dump's debug modes and what they leave out (``dump_modes``, ``dump_records``,
``dump_gap``), executions per dtype (``dtype_splits``) and per device
(``device_splits``, ``short_device``), the modes whose counts the dump's circular
buffer cut (``lower_bound``), and the graph op types the dump did not count though the
profile or the log saw them run (``uncounted``).
"""
from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from ...analyze.assemble import is_user_op, row_op
from ...analyze.workers import NO_DEVICE
from ...model import RunModel
from ...read.tfdbg import DEBUG_MODE_NAMES, DumpSet
from ...vocab import EAGER, GRAPH, MODES, UNKNOWN, is_onednn
from ..payloads import CutModes, DtypeSplit, OpTypeDoc, Uncounted
from .dtypes import dtype_label, is_low_precision
from .rows import kernel_kind

__all__ = ["dump_modes", "dump_records", "dump_gap", "dtype_splits", "short_device",
           "device_splits", "lower_bound", "uncounted"]

# What a mode leaves out when it instruments a graph: tfdbg's dumping callback inserts a
# debug op only for the output tensors these modes can summarise (and none for an op
# without outputs), so such a graph op has no execution trace and counts 0 executions.
_MODE_RECORDS = {"CURT_HEALTH": "float tensors only", "CONCISE_HEALTH": "float tensors only",
                 "FULL_HEALTH": "float tensors only",
                 "SHAPE": "float, integer and bool tensors only"}
# (host, device, op type, mode, executions): one count of executions on a device.
_DeviceCount = tuple[str, str, str, str, int]


def dump_modes(model: RunModel) -> list[str]:
    """The tensor_debug_mode of the run's dumps (tfdbg ``DumpSet.tensor_debug_modes``),
    by name, most used first."""
    counts: Counter[int] = Counter()
    for dump in model.dumps:
        counts.update(dump.tensor_debug_modes)
    return [DEBUG_MODE_NAMES.get(n, str(n)) for n, _c in counts.most_common()]


def _limiting_mode(modes: list[str]) -> str:
    """The first of ``modes`` that traces only some output tensors, or ""."""
    return next((m for m in modes if m in _MODE_RECORDS), "")


def dump_records(modes: list[str]) -> str:
    """Which output tensors a dump of these modes traces."""
    return _MODE_RECORDS.get(_limiting_mode(modes), "every traced output tensor")


def dump_gap(modes: list[str]) -> str:
    """Why a graph op the profile or log saw can have no trace in a dump of these modes."""
    limited = _limiting_mode(modes)
    if limited:
        return (f"the dump's {limited} mode records {_MODE_RECORDS[limited]}, so a graph "
                f"op without such an output (or without any output) is never traced")
    return ("the dump counts a graph op by the traces of its outputs, and it holds none of "
            "this op's (an op without outputs is never traced)")


# ---------------------------------------------------------------- dtypes

def _dtype_entries(per_dtype: dict[str, Counter[str]]) -> list[DtypeSplit]:
    entries: list[DtypeSplit] = [
        {"dtype": dt, "label": dtype_label(dt), "executions": sum(kernels.values()),
         "low_precision": is_low_precision(dt),
         "kernels": [{"name": name, "executions": n, "kind": kernel_kind(name)}
                     for name, n in kernels.most_common()]}
        for dt, kernels in per_dtype.items()]
    entries.sort(key=lambda e: (-e["executions"], e["label"]))
    return entries


def dtype_splits(model: RunModel) -> dict[tuple[str, str], list[DtypeSplit]]:
    """(op type, mode) -> executions per dtype the dump recorded, each with the kernels
    its executions ran (from ``model.eager_ops`` and ``model.graph_ops``)."""
    found: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for mode, items in ((EAGER, model.eager_ops), (GRAPH, model.graph_ops)):
        for item in items:
            if item.executions:
                per_dtype = found.setdefault((item.op_type, mode), {})
                per_dtype.setdefault(item.dtype or "", Counter())[item.kernel or UNKNOWN] += \
                    item.executions
    return {key: _dtype_entries(per_dtype) for key, per_dtype in found.items()}


# ---------------------------------------------------------------- devices

# Memoised: asked per row and device, many times over, of a handful of names.
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


def _worker_counts(workers: list[dict[str, Any]]) -> Iterator[_DeviceCount]:
    """The counts of ``analyze.workers``' breakdown, per worker and device."""
    for entry in workers:
        for on_device in entry["devices"]:
            for row in on_device["op_types"]:
                for mode in MODES:
                    yield (entry["host"], on_device["device"], row["op_type"], mode,
                           row[mode]["executions"])


def _graph_counts(dump: DumpSet) -> Iterator[_DeviceCount]:
    """Graph executions on the device the traces of an op's lowest traced slot name
    (``DumpSet.lowest_slots``, ``DumpSet.trace_devices``), else the op's own device."""
    if not dump.trace_devices:
        return  # the reader recorded no devices: say nothing of them
    for (graph_id, op_name), (slot, n) in dump.lowest_slots().items():
        graph = dump.graphs.get(graph_id)
        op = graph.ops.get(op_name) if graph else None
        if op is not None:
            device = dump.trace_devices.get((graph_id, op_name, slot)) or op.device
            yield dump.host, device, op.op_type, GRAPH, n


def _eager_counts(dump: DumpSet) -> Iterator[_DeviceCount]:
    """Eager executions on the device of their first output (``DumpSet.execution_devices``)."""
    for (op_type, graph_id, device_id, _dtype), n in dump.execution_devices.items():
        if not graph_id:
            device = dump.devices.get(device_id, "") if device_id >= 0 else ""
            yield dump.host, device, op_type, EAGER, n


def _dump_counts(dumps: list[DumpSet]) -> Iterator[_DeviceCount]:
    for dump in dumps:
        yield from _graph_counts(dump)
        yield from _eager_counts(dump)


def device_splits(model: RunModel) -> dict[tuple[str, str], Counter[str]]:
    """(op type, mode) -> executions per device the dump's records name (short names; with
    the host in front when the run's dumps come from several hosts; "" for none recorded).
    From the run's ``workers`` (``analyze.workers``: per dump and device, counted as the
    run's counts are) when it has them; a run of one dump on one device has none, and its
    devices are read from the dump the same way."""
    several_hosts = len({d.host for d in model.dumps}) > 1
    counts = _worker_counts(model.workers) if model.workers else _dump_counts(model.dumps)
    out: dict[tuple[str, str], Counter[str]] = {}
    for host, device, op_type, mode, n in counts:
        if not n or op_type not in model.op_types:
            continue  # not a row: a tf.function call (its ops are the graph's), a debug op
        short = short_device("" if device == NO_DEVICE else device)
        name = f"{host}/{short}" if several_hosts and short else short
        out.setdefault((op_type, mode), Counter())[name] += n
    return out


# ---------------------------------------------------------------- what the counts miss

def lower_bound(model: RunModel) -> dict[str, CutModes]:
    """Modes whose counts are a lower bound because the dump's circular buffer dropped the
    older records: mode -> records kept, how we know, and what to do."""
    out: dict[str, CutModes] = {}
    for cut in model.buffer_cuts:
        entry = out.setdefault(cut.mode, {"records": 0, "how": cut.how, "fix": cut.fix,
                                          "kind": cut.kind})
        entry["records"] += cut.records
    return out


@dataclass
class _Profiled:
    """What the profile saw of an op type's graph executions."""

    events: int = 0
    time_ns: int = 0
    kernels: Counter[str] = field(default_factory=Counter)   # kernel -> events


def _profiled_graph_ops(model: RunModel, op_types: set[str]) -> dict[str, _Profiled]:
    out: dict[str, _Profiled] = {}
    for (op_type, mode, kernel), (events, ns) in model.times.items():
        if mode == GRAPH and op_type in op_types:
            seen = out.setdefault(op_type, _Profiled())
            seen.events += events
            seen.time_ns += ns
            if kernel:
                seen.kernels[kernel] += events
    return out


def _log_graph_counts(model: RunModel) -> Counter[str]:
    """Graph executions per op type as the TensorFlow log counted them (its window): per
    Process node line's kernel, as a run without a dump counts them."""
    out: Counter[str] = Counter()
    for log in model.logs:
        for kernel, n in log.kernel_executions.items():
            if is_user_op(kernel):
                out[row_op(kernel)] += n
    return out


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _uncounted_entry(seen: Optional[_Profiled], logged: int, why: str) -> Uncounted:
    saw = []
    if seen is not None:
        saw.append(f"the profile saw {_plural(seen.events, 'graph event')}")
    if logged:
        saw.append(f"the log saw {_plural(logged, 'graph execution')}")
    if seen is None:
        seen = _Profiled()
    return {"profile_events": seen.events, "profile_time_ns": seen.time_ns,
            "log_executions": logged,
            "kernels": [{"name": k, "events": n, "onednn": is_onednn(k), "kind": kernel_kind(k)}
                        for k, n in seen.kernels.most_common()],
            "note": f"not counted: {why}; {' and '.join(saw)}"}


def uncounted(model: RunModel, rows: list[OpTypeDoc], modes: list[str]) -> dict[str, Uncounted]:
    """Op type -> what the profile or the log saw of its graph executions, for the rows
    the dump counts none for while the profile or the log saw the op run in a graph,
    and why the dump did not."""
    if not model.dumps:
        return {}
    profiled = _profiled_graph_ops(model, {r["op_type"] for r in rows})
    logged = _log_graph_counts(model)
    why = dump_gap(modes)
    out: dict[str, Uncounted] = {}
    for row in rows:
        op_type = row["op_type"]
        seen, log_n = profiled.get(op_type), logged.get(op_type, 0)
        if not row["graph"]["executions"] and (seen is not None or log_n):
            out[op_type] = _uncounted_entry(seen, log_n, why)
    return out
