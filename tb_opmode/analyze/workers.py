"""Multi-worker jobs and multi-device runs: who ran what.

In: a ``RunModel`` whose dump sets come from several workers (one dump per process of
a ``MultiWorkerMirroredStrategy`` job, each in its own sub-directory of the run) or
whose one dump ran on several devices (``MirroredStrategy`` replicas). Out: the run
JSON's ``workers`` list, one entry per dump set (task, host, directory, status), each
with its executions per device, mode, op type and kernel, and the collective ops
(``CollectiveReduceV2``, ``CollectiveBcastSend``...) that tie the workers together.

Where the numbers come from, so that they equal ``DebugDataReader``'s on each worker's
dump: eager executions per (op type, device of the first output) as the dump's
``execution`` records say (``DumpSet.execution_devices``); graph executions of the
lowest traced output slot per op, on the device its traces name
(``DumpSet.trace_devices``), as the run's counts are. Kernels are the run's own
assignment (``RunModel.graph_ops``, ``RunModel.eager_ops``), read per worker: a graph
op is known by its graph id, which tfdbg makes unique per process (a uuid), so it
belongs to exactly one worker's dump.

The task of a dump is read from the device names TF recorded in it
(``/job:worker/replica:0/task:1/device:CPU:0`` is task ``worker:1``); a one-process
run's devices are ``/job:localhost/...``. Discovery (``read.discover``) uses
``read.tasks.dump_tasks`` to put the dumps of one job into one run; ``present.workers``
renders this as text.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..model import OpKernel, RunModel
from ..read.discover import display, problem_text, relpath
from ..read.tasks import task_of
from ..read.tfdbg import DumpSet
from ..vocab import is_function

__all__ = ["is_collective", "breakdown", "collectives_across", "NO_DEVICE"]

# An eager execution with no output (AssignVariableOp, NoOp) records no device, nor
# does a graph op whose traces and creation name none.
NO_DEVICE = "(device not recorded)"


def is_collective(op_type: str) -> bool:
    """Whether an op type is one of TF's collectives (what ties the replicas of
    MultiWorkerMirroredStrategy together: all-reduce, broadcast, gather)."""
    return op_type.startswith("Collective") or op_type in ("NcclAllReduce", "NcclReduce",
                                                           "NcclBroadcast")


def _device_name(dump: DumpSet, device_id: int) -> str:
    if device_id < 0:
        return NO_DEVICE
    return str(dump.devices.get(device_id, f"device id {device_id} (not in the .graphs file)"))


def _kernel_list(counts: Counter[tuple[str, str]]) -> list[dict[str, Any]]:
    """[(kernel, evidence) -> n] as the run JSON's kernel lists, busiest first."""
    return [{"name": name, "executions": n, "evidence": evidence}
            for (name, evidence), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


_Found = tuple[str, str]  # (kernel, evidence)


def _mode_counters() -> dict[str, Counter[str]]:
    return {"eager": Counter(), "graph": Counter()}


@dataclass
class _Tally:
    """One dump's executions per device: per mode and op type, per (kernel, evidence),
    and the function calls."""

    counts: dict[str, dict[str, Counter[str]]] = field(
        default_factory=lambda: defaultdict(_mode_counters))
    kernels: dict[tuple[str, str, str], Counter[_Found]] = field(
        default_factory=lambda: defaultdict(Counter))
    functions: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))


def _eager_kernel(found: list[_Found]) -> _Found:
    """The kernel and evidence of eager executions the run assigned ``found`` to."""
    if len(found) == 1:
        return found[0]
    # The log split these executions between kernels by its own counts, which say
    # nothing of devices: name them all rather than invent a split.
    kernel = " or ".join(k for k, _e in found) or "(unknown)"
    evidence = "/".join(sorted({e for _k, e in found})) or "inferred"
    return kernel, evidence


def _tally_eager(tally: _Tally, model: RunModel, dump: DumpSet) -> None:
    """Eager executions per (op type, device of the first output), as the dump's
    execution records say, with the kernels the run assigned to their dtype."""
    assigned: dict[tuple[str, str], list[_Found]] = defaultdict(list)
    for e in model.eager_ops:
        assigned[(e.op_type, e.dtype)].append((e.kernel, e.evidence))
    for (op_type, graph_id, device_id, dtype), n in dump.execution_devices.items():
        device = _device_name(dump, device_id)
        if graph_id or is_function(op_type):
            tally.functions[device][op_type] += n
            continue
        tally.counts[device]["eager"][op_type] += n
        found = sorted(set(assigned.get((op_type, dtype), ())))
        tally.kernels[(device, "eager", op_type)][_eager_kernel(found)] += n


def _tally_graph(tally: _Tally, dump: DumpSet,
                 lowest: dict[tuple[str, str], tuple[int, int]]) -> None:
    """Graph executions of the lowest traced slot per op, on the device its traces name."""
    for (graph_id, op_name), (slot, n) in lowest.items():
        graph = dump.graphs.get(graph_id)
        creation = graph.ops.get(op_name) if graph else None
        if creation is None:
            continue  # not counted by the run either (a problem says so)
        device = dump.trace_devices.get((graph_id, op_name, slot)) or creation.device or NO_DEVICE
        tally.counts[device]["graph"][creation.op_type] += n


def _graph_op_device(dump: DumpSet, op: OpKernel,
                     lowest: dict[tuple[str, str], tuple[int, int]]) -> str | None:
    """The device a graph op of this dump ran on (None: another worker's graph: graph
    ids are uuids, one process's each)."""
    graph = dump.graphs.get(op.graph_id)
    if graph is None:
        return None
    first = lowest.get((op.graph_id, op.op_name))
    traced = dump.trace_devices.get((op.graph_id, op.op_name, first[0]), "") if first else ""
    created = graph.ops.get(op.op_name)
    return traced or (created.device if created is not None else "") or NO_DEVICE


def _tally_graph_kernels(tally: _Tally, model: RunModel, dump: DumpSet,
                         lowest: dict[tuple[str, str], tuple[int, int]]) -> None:
    """The run's kernel assignment of the dump's graph ops, per device."""
    for op in model.graph_ops:
        device = _graph_op_device(dump, op, lowest)
        if device is not None:
            tally.kernels[(device, "graph", op.op_type)][(op.kernel, op.evidence)] += op.executions


def _op_type_rows(tally: _Tally, device: str) -> list[dict[str, Any]]:
    """The device's op types, busiest first, with their executions and kernels per mode."""
    counts = tally.counts[device]
    names = set(counts["eager"]) | set(counts["graph"])
    ordered = sorted(names, key=lambda t: (-(counts["eager"][t] + counts["graph"][t]), t))
    return [{"op_type": op_type,
             **{mode: {"executions": counts[mode][op_type],
                       "kernels": _kernel_list(tally.kernels.get((device, mode, op_type),
                                                                 Counter()))}
                for mode in ("eager", "graph")}}
            for op_type in ordered]


def _device_entry(tally: _Tally, device: str) -> dict[str, Any]:
    counts = tally.counts[device]
    return {"device": device, "task": task_of(device),
            "eager_executions": sum(counts["eager"].values()),
            "graph_executions": sum(counts["graph"].values()),
            "functions": [{"name": name, "calls": n} for name, n in
                          sorted(tally.functions[device].items(), key=lambda kv: (-kv[1], kv[0]))],
            "op_types": _op_type_rows(tally, device)}


def _dump_breakdown(model: RunModel, index: int) -> dict[str, Any]:
    """Executions per device, mode, op type and kernel of ``model.dumps[index]``."""
    dump = model.dumps[index]
    tally = _Tally()
    _tally_eager(tally, model, dump)
    lowest = dump.lowest_slots()
    _tally_graph(tally, dump, lowest)
    _tally_graph_kernels(tally, model, dump, lowest)
    devices = sorted(set(tally.counts) | set(tally.functions))
    return {"devices": [_device_entry(tally, device) for device in devices]}


def _dump_entry(model: RunModel, dump: DumpSet, index: int | None,
                logdir: str) -> dict[str, Any]:
    """A dump set's entry; ``index``: its place in ``model.dumps`` (None: unreadable)."""
    tasks = sorted({t for t in map(task_of, dump.devices.values()) if t})
    entry: dict[str, Any] = {
        "task": ", ".join(tasks), "host": display(dump.host),
        "directory": relpath(dump.directory, logdir),
        "source": relpath(f"{dump.directory}/{dump.prefix}", logdir),
        "tensorflow_version": dump.tensorflow_version,
        "problems": [problem_text(p, logdir) for p in dump.problems]}
    if index is None:
        entry["status"] = "unreadable"
        entry["devices"] = []
    else:
        entry["status"] = "damaged" if dump.problems else "ok"
        entry.update(_dump_breakdown(model, index))
    entry["collectives"] = _collectives(entry)
    return entry


def _missing_entry(directory: str, why: str, logdir: str) -> dict[str, Any]:
    return {"task": "", "host": "", "directory": relpath(directory, logdir),
            "source": "", "tensorflow_version": "", "status": "missing",
            "problems": [display(why)], "devices": [], "collectives": []}


def _on_several_devices(entry: dict[str, Any]) -> bool:
    return len([d for d in entry["devices"] if d["device"] != NO_DEVICE]) > 1


def breakdown(model: RunModel, dumps: list[Any], missing: list[tuple[str, str]],
              logdir: str) -> list[dict[str, Any]]:
    """The run JSON's ``workers``: one entry per dump set in ``dumps`` (all the run's,
    also those nothing could be read from) and per worker in ``missing`` ((directory,
    why) of workers whose dump is not there), sorted by task. Empty for a run of one
    dump on one device (its op table says it all)."""
    usable = {id(d): i for i, d in enumerate(model.dumps)}
    entries = [_dump_entry(model, dump, usable.get(id(dump)), logdir) for dump in dumps]
    many_devices = any(_on_several_devices(e) for e in entries)
    entries += [_missing_entry(directory, why, logdir) for directory, why in missing]
    if len(entries) < 2 and not many_devices:
        return []
    return sorted(entries, key=lambda e: (e["task"] == "", _task_key(e["task"]), e["directory"]))


def _task_key(task: str) -> tuple[str, int]:
    job, _, index = task.partition(":")
    return job, int(index) if index.isdigit() else -1


def _collectives(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The collective op types a worker ran, with its executions per mode (summed over
    its devices): the ops that tie it to the other workers."""
    found: dict[str, Counter[str]] = defaultdict(Counter)
    for device in entry["devices"]:
        for row in device["op_types"]:
            if is_collective(row["op_type"]):
                for mode in ("eager", "graph"):
                    found[row["op_type"]][mode] += row[mode]["executions"]
    return [{"op_type": op_type, "eager": c["eager"], "graph": c["graph"]}
            for op_type, c in sorted(found.items())]


def _executions_of(worker: dict[str, Any], op_type: str) -> dict[str, int]:
    """A worker's executions of a collective op type per mode (0: it ran none)."""
    c = next((c for c in worker["collectives"] if c["op_type"] == op_type), None)
    return {"eager": c["eager"] if c else 0, "graph": c["graph"] if c else 0}


def _collective_across(op_type: str, readable: list[dict[str, Any]]) -> dict[str, Any]:
    per = {w["task"] or w["directory"]: _executions_of(w, op_type) for w in readable}
    item: dict[str, Any] = {"op_type": op_type, "workers": per}
    if op_type.startswith("CollectiveBcast"):
        item["note"] = ("a broadcast: one worker sends (CollectiveBcastSend), the others "
                        "receive (CollectiveBcastRecv)")
    else:
        item["in_every_worker"] = all(v["eager"] or v["graph"] for v in per.values())
    return item


def collectives_across(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per collective op type: the executions of each worker (by task, else directory),
    and, but for broadcasts (one sender, the others receivers), whether every readable
    worker ran it (a collective one worker lacks would hang the others: a sign its dump
    is cut or another program's)."""
    readable = [w for w in workers if w["status"] in ("ok", "damaged")]
    names = sorted({c["op_type"] for w in readable for c in w["collectives"]})
    return [_collective_across(name, readable) for name in names]
