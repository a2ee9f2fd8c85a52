"""Join dumps, profiles and logs into one model per run.

In: a logdir (and optional extra log files). Out: ``RunModel``s, one per run,
and ``summary()``, the JSON-ready contract that the CLI and the tab share:
per op type and mode, execution counts and the kernels that ran, each with its
evidence level.

Counts come from the strongest source present: the tfdbg2 dump (eager
``execution`` records; graph ``graph_execution_trace`` records of the lowest
output slot traced per op, so an op with three traced outputs counts once per
run of its graph), else the text log, else the profile. Kernels come from
the evidence in hand: the log (``Instantiating kernel`` / ``Process node``)
first, then the profile's ``<node>:<kernel>`` events.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from . import fs
from .cache import cached_dump_set, cached_log, cached_profile, prefetch_files
from .kernels import EagerAssignment, OpKernel, assign_eager, assign_graph, detect_onednn, is_onednn
from .nodes import canonical_op
from .runs import RunSources, discover, display, relpath
from .textlog import LogFacts
from .tfdbg import DumpSet
from .tfrecord import Problem
from .why import explain, is_debug_kernel, op_times, time_share
from .xplane import Profile

__all__ = ["KernelUse", "ModeStats", "OpTypeRow", "RunModel", "LogdirError", "build_run",
           "load", "summary", "run_json", "row_op", "is_user_op", "onednn_primitives", "xla_functions", "is_function", "MODES"]

MODES = ("eager", "graph")


class LogdirError(FileNotFoundError):
    """The logdir is missing or holds nothing we can read."""


@dataclass
class KernelUse:
    name: str
    executions: int
    onednn: bool
    evidence: str          # "log" | "profile" | "inferred"
    notes: list[str] = field(default_factory=list)
    fused_into: list[str] = field(default_factory=list)


@dataclass
class ModeStats:
    executions: int = 0
    kernels: list[KernelUse] = field(default_factory=list)


@dataclass
class OpTypeRow:
    op_type: str
    eager: ModeStats = field(default_factory=ModeStats)
    graph: ModeStats = field(default_factory=ModeStats)

    def mode(self, mode: str) -> ModeStats:
        return self.eager if mode == "eager" else self.graph


@dataclass
class RunModel:
    run: str
    directory: str
    tensorflow_version: str = ""
    hosts: list[str] = field(default_factory=list)
    onednn_enabled: bool | None = None
    onednn_source: str = ""
    counts_from: str = ""
    sources: dict[str, list[str]] = field(default_factory=dict)
    functions: Counter = field(default_factory=Counter)
    op_types: dict[str, OpTypeRow] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    dumps: list[DumpSet] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    logs: list[LogFacts] = field(default_factory=list)
    graph_ops: list[OpKernel] = field(default_factory=list)
    eager_ops: list[EagerAssignment] = field(default_factory=list)
    # (op type, mode, kernel) -> [profiler events, total ns]
    times: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)

    def row(self, op_type: str) -> OpTypeRow:
        row = self.op_types.get(op_type)
        if row is None:
            row = self.op_types[op_type] = OpTypeRow(op_type)
        return row


def is_function(name: str) -> bool:
    # tf.function calls are dispatched as ops named after the traced function.
    return name.startswith(("__inference_", "__forward_", "__backward_"))


def _dump_counts(model: RunModel) -> None:
    for dump in model.dumps:
        for (op_type, graph_id), n in dump.executions.items():
            if graph_id or is_function(op_type):
                model.functions[op_type] += n
            else:
                model.row(op_type).eager.executions += n
        lowest: dict[tuple[str, str], int] = {}
        for (graph_id, op_name, slot) in dump.traces:
            key = (graph_id, op_name)
            if key not in lowest or slot < lowest[key]:
                lowest[key] = slot
        unknown = 0
        for (graph_id, op_name, slot), n in dump.traces.items():
            if slot != lowest[(graph_id, op_name)]:
                continue
            graph = dump.graphs.get(graph_id)
            op = graph.ops.get(op_name) if graph else None
            if op is None:
                unknown += n
                continue
            model.row(op.op_type).graph.executions += n
        if unknown:
            model.problems.append(Problem(
                dump.files.get("graph_execution_traces", dump.prefix), 0,
                f"{unknown} graph executions of ops the .graphs file does not define; not counted"))


# tfdbg's default circular_buffer_size: a dump made with it keeps only the last
# this many records of each kind (executions, graph execution traces).
DEFAULT_CIRCULAR_BUFFER = 1000


def _buffer_checks(model: RunModel) -> list[Problem]:
    """A dump whose record count of a kind is its circular buffer's size kept only
    the tail of the run: its counts are a lower bound."""
    sizes = {log.circular_buffer_size for log in model.logs if log.circular_buffer_size is not None}
    out = []
    for dump in model.dumps:
        for kind, n, path in (
                ("execution", sum(dump.executions.values()), dump.files.get("execution", dump.prefix)),
                ("graph_execution_trace", sum(dump.traces.values()),
                 dump.files.get("graph_execution_traces", dump.prefix))):
            limit = next((s for s in sizes if s > 0), DEFAULT_CIRCULAR_BUFFER)
            if n != limit or -1 in sizes:
                continue
            how = (f"the log shows its debug ops were built with circular_buffer_size={limit}"
                   if sizes else f"{limit} is tfdbg's default circular_buffer_size")
            out.append(Problem(path, 0, (
                f"{n} {kind} records, exactly the circular buffer's size ({how}): the dump kept "
                f"only the last {n}, so its counts are a lower bound; dump with "
                f"enable_dump_debug_info(..., circular_buffer_size=-1) to count every execution")))
    return out


# Fused kernels stand for the op their pattern starts with (the fused node keeps the
# name of the pattern's last op): a run without a dump names its rows after them.
_FUSED_HEADS = (("FusedConv2D", "Conv2D"), ("FusedMatMul", "MatMul"),
                ("FusedBatchMatMul", "BatchMatMulV2"), ("FusedDepthwiseConv2dNative",
                                                        "DepthwiseConv2dNative"),
                ("PadWithConv2D", "Conv2D"), ("PadWithFusedConv2D", "Conv2D"),
                ("FusedConv3D", "Conv3D"), ("FusedBatchNormEx", "FusedBatchNormV3"))


def row_op(kernel: str) -> str:
    """The op type a kernel ran for: ``_MklNativeConv2D`` -> Conv2D, and a fused kernel
    -> its pattern's first op (``_MklNativeFusedConv2D``, ``_FusedConv2D`` -> Conv2D)."""
    base = canonical_op(kernel).lstrip("_")
    for fused, head in _FUSED_HEADS:
        if base.startswith(fused):
            return head
    if base.endswith("WithBias"):  # _MklNativeConv2DBackpropFilterWithBias
        return base[:-len("WithBias")]
    return canonical_op(kernel)


# What a log or profile shows that is no op of the user's program: tfdbg's debug ops
# and the executor's own nodes.
_NOT_USER_OPS = frozenset(("_Retval", "_Arg", "NoOp", "_SOURCE", "_SINK"))


def is_user_op(kernel: str) -> bool:
    """Whether a kernel the log or profile names ran an op of the user's program, not
    tfdbg's instrumentation or the executor's plumbing."""
    return bool(kernel) and kernel not in _NOT_USER_OPS and not is_debug_kernel(kernel)


def _log_counts(model: RunModel) -> None:
    for log in model.logs:
        for dispatch, n in log.eager_dispatch.items():
            if is_function(dispatch):
                model.functions[dispatch] += n
            elif not is_debug_kernel(dispatch):  # an eager NoOp is the user's, as in a dump
                model.row(row_op(dispatch)).eager.executions += n
        for kernel, n in log.kernel_executions.items():
            if is_user_op(kernel):
                model.row(row_op(kernel)).graph.executions += n


def _profile_counts(model: RunModel) -> None:
    for prof in model.profiles:
        for op_type, is_func, _start, _dur in prof.eager_ops:
            if is_func or is_function(op_type):
                model.functions[op_type] += 1
            elif not is_debug_kernel(op_type):
                model.row(op_type).eager.executions += 1
        for _node, kernel, _start, _dur in prof.graph_ops:
            if is_user_op(kernel):
                model.row(row_op(kernel)).graph.executions += 1
        if prof.eager_ops or prof.graph_ops:
            model.problems.append(Problem(prof.path, 0, (
                "counts from this profile cover only the steps it profiled (the profiler's "
                "window), not the whole run; a tfdbg dump (enable_dump_debug_info) counts "
                "every execution")))


def _add_kernel(stats: ModeStats, name: str, executions: int, evidence: str, note: str = "",
                fused_into: str = "") -> None:
    for k in stats.kernels:
        if k.name == name and k.evidence == evidence:
            k.executions += executions
            if note and note not in k.notes:
                k.notes.append(note)
            if fused_into and fused_into not in k.fused_into:
                k.fused_into.append(fused_into)
            return
    stats.kernels.append(KernelUse(name, executions, is_onednn(name), evidence,
                                   [note] if note else [], [fused_into] if fused_into else []))


def _apply_kernels(model: RunModel) -> None:
    model.graph_ops = assign_graph(model) if model.dumps else []
    for op in model.graph_ops:
        _add_kernel(model.row(op.op_type).graph, op.kernel, op.executions, op.evidence,
                    op.note, op.fused_into)
    if not model.dumps:
        _graph_kernels_without_dump(model)
    model.eager_ops = assign_eager(model, model.graph_ops)
    for e in model.eager_ops:
        _add_kernel(model.row(e.op_type).eager, e.kernel, e.executions, e.evidence, e.note)


def _graph_kernels_without_dump(model: RunModel) -> None:
    """No dump: each kernel seen is its row's, with the executions its evidence counts
    (the log's Process node lines, else the profile's events)."""
    counted: Counter = Counter()
    evidence: dict[str, str] = {}
    for log in model.logs:
        for kernel, n in log.kernel_executions.items():
            if is_user_op(kernel):
                counted[kernel] += n
                evidence[kernel] = "log"
    if not counted:
        for prof in model.profiles:
            for _node, kernel, _s, _d in prof.graph_ops:
                if is_user_op(kernel):
                    counted[kernel] += 1
                    evidence[kernel] = "profile"
    for kernel, n in counted.items():
        row = model.op_types.get(row_op(kernel))
        if row is not None and row.graph.executions:
            _add_kernel(row.graph, kernel, n, evidence[kernel])
    for row in model.op_types.values():
        # Counts from one source, kernels from another (a log with executions, and a
        # profile's kernels besides): one kernel takes the row's count.
        if len(row.graph.kernels) == 1:
            row.graph.kernels[0].executions = row.graph.executions


# file_version values of tfdbg2 dumps this reader knows (TF 2.3 to 2.21 write "debug.Event:1").
_KNOWN_DUMP_VERSION = 1
_DUMP_VERSION_PREFIX = "debug.Event:"


def _dump_usable(dump: DumpSet) -> bool:
    """Whether anything at all was read from a dump set (a record of a kind we know)."""
    return bool(dump.tensorflow_version or dump.file_version or dump.run_id or dump.source_files
                or dump.stack_frames or dump.graphs or dump.devices or dump.executions
                or dump.traces)


def _dump_checks(dump: DumpSet) -> list[Problem]:
    """Problems of a dump set that its reader does not report: empty files, a file version
    newer than the one we know."""
    out = []
    for kind, path in sorted(dump.files.items()):
        try:
            empty = fs.stat(path).st_size == 0
        except OSError:
            continue  # the reader reported it
        if empty:
            out.append(Problem(path, 0, f"empty file: no .{kind} records written (yet)"))
    version = dump.file_version
    if version:
        number = version[len(_DUMP_VERSION_PREFIX):] if version.startswith(_DUMP_VERSION_PREFIX) else ""
        path = dump.files.get("metadata", dump.prefix)
        if not number.isdigit():
            out.append(Problem(path, 0, f"unknown file_version {version!r}: read as "
                                        f"{_DUMP_VERSION_PREFIX}{_KNOWN_DUMP_VERSION}"))
        elif int(number) > _KNOWN_DUMP_VERSION:
            out.append(Problem(path, 0, f"file_version {version!r} is newer than "
                                        f"{_DUMP_VERSION_PREFIX}{_KNOWN_DUMP_VERSION}, the newest "
                                        "this reader knows: fields added since are ignored"))
    return out


def _read_logs(paths: list[str], problems: list[Problem]) -> list[LogFacts]:
    logs = []
    for path in paths:
        try:
            logs.append(cached_log(path))
        except OSError as err:  # vanished or unreadable since discovery
            problems.append(Problem(path, 0, f"cannot read: {err.strerror or err}"))
    return logs


def _log_run_checks(model: RunModel) -> list[Problem]:
    """A log of this run (in its directory, or given with --log --run) whose debug nodes
    name only other dumps' tfdbg run ids is most likely another run's log: its banner
    and kernels are used here all the same, so say so."""
    ours = {d.run_id for d in model.dumps if d.run_id}
    if not ours:
        return []
    out = []
    for log in model.logs:
        if log.tfdbg_run_ids and not log.tfdbg_run_ids & ours:
            out.append(Problem(log.path, 0, (
                f"its debug nodes name tfdbg run id {', '.join(sorted(log.tfdbg_run_ids))}, "
                f"but this run's dump is {', '.join(sorted(ours))}: the log is probably "
                "another run's, and is read as this run's all the same")))
    return out


def build_run(sources: RunSources, logdir: str) -> RunModel:
    model = RunModel(run=sources.name, directory=sources.directory)
    prefetch_files(sources.profiles, sources.logs)  # remote only: in parallel
    dumps = [cached_dump_set(sources.directory, prefix, files)
             for prefix, files in sorted(sources.dump_sets.items())]
    model.profiles = [cached_profile(p) for p in sources.profiles]
    read_problems: list[Problem] = []
    model.logs = _read_logs(sources.logs, read_problems)
    # A dump set of which nothing could be read (all damaged, or files named like a
    # dump holding something else) counts nothing: its problems say why.
    model.dumps = [d for d in dumps if _dump_usable(d)]
    versions = sorted({d.tensorflow_version for d in model.dumps if d.tensorflow_version})
    model.tensorflow_version = ", ".join(versions)
    model.hosts = sorted({display(d.host) for d in model.dumps}
                         | {display(p.host) for p in model.profiles if p.time_source})
    model.sources = {
        "debugger": [relpath(os.path.join(d.directory, d.prefix), logdir) for d in dumps],
        "profile": [relpath(p, logdir) for p in sources.profiles],
        "logs": [relpath(p, logdir) for p in sources.logs],
    }
    for path, why in sources.skipped:
        model.problems.append(Problem(path, 0, f"{why}, not a regular file: not read"))
    # What discovery could not read (or would not follow) changes the answer: say so,
    # here, so that the tab (which builds runs itself) says it too.
    model.problems.extend(Problem(path, 0, message) for path, message in sources.warnings)
    for dump in dumps:
        model.problems.extend(dump.problems)
        model.problems.extend(_dump_checks(dump))
    for part in (*model.profiles, *model.logs):
        model.problems.extend(part.problems)
    model.problems.extend(read_problems)
    model.problems.extend(_log_run_checks(model))
    if model.dumps:
        model.counts_from = "debugger"
        _dump_counts(model)
        model.problems.extend(_buffer_checks(model))
    elif any(log.eager_dispatch or log.graph_executions for log in model.logs):
        model.counts_from = "log"
        _log_counts(model)
    elif any(p.time_source for p in model.profiles):  # a host plane was read
        model.counts_from = "profile"
        _profile_counts(model)
    model.onednn_enabled, model.onednn_source = detect_onednn(model)
    _apply_kernels(model)
    model.times = op_times(model)
    return model


def load(logdir: str, run: str | None = None, extra_logs: tuple[str, ...] = ()) -> list[RunModel]:
    """Read every run under ``logdir`` (or only ``run``)."""
    try:
        is_dir = fs.isdir(logdir)
    except OSError as err:  # remote: no credentials, endpoint down, no such bucket
        text = f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
        raise LogdirError(text) from err
    if not is_dir:
        raise LogdirError(f"{logdir}: no such directory")
    # --log FILE --run RUN: the user says which run the log is for.
    found = discover(logdir, extra_logs, log_run=run)
    if not found:
        raise LogdirError(
            f"{logdir}: no tfdbg2 dump (tfdbg_events.*), profile (plugins/profile/*/*.xplane.pb) "
            f"or TensorFlow log (*.txt, *.log, *.out, *.err) found")
    if run is not None:
        found = [r for r in found if r.name == run]
        if not found:
            raise LogdirError(f"{logdir}: no run named {run!r}")
    if fs.is_remote(logdir):
        # Every run's small objects in one batch of parallel requests, not run by run.
        prefetch_files([p for r in found for p in r.profiles], [p for r in found for p in r.logs],
                       [(r.directory, prefix, files) for r in found
                        for prefix, files in r.dump_sets.items()])
    return [build_run(sources, fs.absolute(logdir)) for sources in found]


def _kernels_json(stats: ModeStats) -> list[dict[str, Any]]:
    out = []
    for k in sorted(stats.kernels, key=lambda k: (-k.executions, k.name)):
        item: dict[str, Any] = {"name": k.name, "executions": k.executions, "onednn": k.onednn,
                                "evidence": k.evidence}
        if k.notes:
            item["notes"] = k.notes[:5]
        if k.fused_into:
            item["fused_into"] = k.fused_into[:20]
        out.append(item)
    return out


def _problem_text(problem: Problem, logdir: str) -> str:
    path = problem.path
    if (os.path.isabs(path) or fs.is_remote(path)) and path.startswith(logdir.rstrip(os.sep) + os.sep):
        path = relpath(path, logdir)
    return f"{display(path)}: byte {problem.offset}: {display(problem.message)}"


def _mode_json(m: RunModel, row: OpTypeRow, mode: str, explanation: str) -> dict[str, Any]:
    stats = row.mode(mode)
    kernels = _kernels_json(stats)
    total_events = total_ns = 0
    timed: set[str] = set()
    for k in kernels:
        # Profiled time is per kernel name; a kernel listed twice (seen in the log for
        # some executions, inferred for others) carries it once.
        if k["name"] in timed:
            continue
        timed.add(k["name"])
        events, ns = m.times.get((row.op_type, mode, k["name"]), (0, 0))
        if events:
            k["time"] = {"events": events, "total_ms": ns / 1e6, "mean_us": ns / events / 1e3}
    # The mode's total holds every profiled event of the op type, also those of a kernel
    # no execution was labelled with, so that it adds up to the overview's.
    for (op_type, in_mode, _kernel), (events, ns) in m.times.items():
        if op_type == row.op_type and in_mode == mode:
            total_events += events
            total_ns += ns
    out: dict[str, Any] = {"executions": stats.executions, "kernels": kernels}
    if total_events:
        out["time"] = {"events": total_events, "total_ms": total_ns / 1e6,
                       "mean_us": total_ns / total_events / 1e3}
    if explanation:
        out["explanation"] = explanation
    return out


def onednn_primitives(m: RunModel) -> dict[str, Any]:
    """ONEDNN_VERBOSE primitives executed, by kind and implementation (ISA)."""
    counts: Counter = Counter()
    times: Counter = Counter()
    for log in m.logs:
        counts.update(log.onednn_primitives)
        times.update(log.onednn_time_ms)
    rows = [{"kind": kind, "implementation": impl, "prop_kind": prop, "count": n,
             "time_ms": round(times[(kind, impl, prop)], 3)}
            for (kind, impl, prop), n in counts.most_common()]
    note = ""
    if rows and all(r["kind"] == "gemm_api" for r in rows):
        note = ("only gemm_api lines: stock MatMul also calls oneDNN's sgemm, so these alone do "
                "not prove that TF's oneDNN ops are on")
    elif any(r["kind"] == "gemm_api" for r in rows):
        note = "gemm_api lines also occur with oneDNN off (stock MatMul calls oneDNN's sgemm)"
    return {"primitives": rows, "note": note}


def xla_functions(m: RunModel) -> list[dict[str, Any]]:
    """tf.functions XLA compiled (jit_compile=True), from the log's XLA launches: a mode
    of their own. Their ops run inside one XLA cluster, not as TF kernels, and tfdbg
    cannot instrument a cluster (its debug ops have no XLA kernel): with the dump on, TF
    refuses to compile such a function, so a dump holds none of its ops."""
    launches: Counter = Counter()
    for log in m.logs:
        launches.update(log.xla_launches)
    out = []
    for name, n in sorted(launches.items()):
        calls = m.functions.get(name, 0)
        if m.dumps:
            note = (f"compiled by XLA: its ops ran inside an XLA cluster, not as TF kernels; "
                    f"tfdbg cannot instrument XLA clusters, so the dump holds none of its ops "
                    f"({calls} of its calls are in the dump; with the dump on, TF fails to "
                    f"compile it: no XLA kernel for tfdbg's debug ops). Run without the dump "
                    f"and with the log (TF_CPP_MAX_VLOG_LEVEL=2) to see its kernels")
        else:
            note = "compiled by XLA: its ops ran inside an XLA cluster, not as TF kernels"
        out.append({"name": name, "launches": n, "calls_in_dump": calls, "note": note})
    return out


def run_json(m: RunModel, logdir: str, explanations: bool = True) -> dict[str, Any]:
    """One run of the summary contract."""
    warnings = [_problem_text(p, logdir) for p in m.problems]
    rows = sorted(m.op_types.values(),
                  key=lambda r: (-(r.eager.executions + r.graph.executions), r.op_type))
    op_types = []
    for r in rows:
        why = explain(m, r.op_type) if explanations else {}
        op_types.append({
            "op_type": r.op_type,
            "eager": _mode_json(m, r, "eager", why.get("eager", {}).get("explanation", "")
                                if r.eager.executions else ""),
            "graph": _mode_json(m, r, "graph", why.get("graph", {}).get("explanation", "")
                                if r.graph.executions else ""),
        })
    return {
        "run": m.run,
        "tensorflow_version": m.tensorflow_version,
        "hosts": m.hosts,
        "onednn_enabled": m.onednn_enabled,
        "onednn_source": m.onednn_source,
        "counts_from": m.counts_from,
        "sources": m.sources,
        "warnings": warnings,
        "notes": [f"{relpath(p.path, logdir)}: {n}" for p in m.profiles for n in p.notes],
        "functions": [{"name": n, "calls": c} for n, c in sorted(
            m.functions.items(), key=lambda kv: (-kv[1], kv[0]))],
        "onednn_verbose": onednn_primitives(m),
        "xla_functions": xla_functions(m),
        "time_share": time_share(m.times),
        "op_types": op_types,
    }


def summary(models: list[RunModel], logdir: str, explanations: bool = True) -> dict[str, Any]:
    """The JSON contract of ``tb-opmode summary --format json``."""
    logdir = fs.absolute(logdir)
    runs = [run_json(m, logdir, explanations) for m in models]
    all_warnings = [f"{r['run']}: {w}" for r in runs for w in r["warnings"]]
    return {"version": __version__, "warnings": all_warnings, "runs": runs}
