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
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from .nodes import canonical_op, match_nodes
from .runs import RunSources, discover, relpath
from .textlog import LogFacts, read_log
from .tfdbg import DumpSet, read_dump_set
from .tfrecord import Problem
from .xplane import Profile, read_profile

__all__ = ["KernelUse", "ModeStats", "OpTypeRow", "RunModel", "LogdirError", "build_run",
           "load", "summary", "MODES"]

MODES = ("eager", "graph")


class LogdirError(FileNotFoundError):
    """The logdir is missing or holds nothing we can read."""


@dataclass
class KernelUse:
    name: str
    executions: int
    onednn: bool
    evidence: str          # "log" | "profile" | "inferred"
    note: str = ""


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

    def row(self, op_type: str) -> OpTypeRow:
        row = self.op_types.get(op_type)
        if row is None:
            row = self.op_types[op_type] = OpTypeRow(op_type)
        return row


def _is_function(name: str) -> bool:
    # tf.function calls are dispatched as ops named after the traced function.
    return name.startswith(("__inference_", "__forward_", "__backward_"))


def _dump_counts(model: RunModel) -> None:
    for dump in model.dumps:
        for (op_type, graph_id), n in dump.executions.items():
            if graph_id or _is_function(op_type):
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


def _log_counts(model: RunModel) -> None:
    for log in model.logs:
        for dispatch, n in log.eager_dispatch.items():
            if _is_function(dispatch):
                model.functions[dispatch] += n
            else:
                model.row(canonical_op(dispatch)).eager.executions += n
        for node, n in log.graph_executions.items():
            kernel = log.graph_kernels.get(node, ("", ""))[0]
            if kernel and kernel not in ("_Retval", "_Arg", "NoOp", "_SOURCE", "_SINK"):
                model.row(canonical_op(kernel)).graph.executions += n


def _profile_counts(model: RunModel) -> None:
    for prof in model.profiles:
        for op_type, is_func, _start, _dur in prof.eager_ops:
            if is_func or _is_function(op_type):
                model.functions[op_type] += 1
            else:
                model.row(op_type).eager.executions += 1
        for _node, kernel, _start, _dur in prof.graph_ops:
            model.row(canonical_op(kernel)).graph.executions += 1


def _add_kernel(stats: ModeStats, name: str, executions: int, evidence: str, note: str = "") -> None:
    for k in stats.kernels:
        if k.name == name and k.evidence == evidence:
            k.executions += executions
            return
    stats.kernels.append(KernelUse(name, executions, name.startswith("_Mkl"), evidence, note))


def _eager_kernels(model: RunModel) -> None:
    per_type: dict[str, Counter] = defaultdict(Counter)
    dispatch_only: dict[str, bool] = {}
    for log in model.logs:
        for ek, n in log.eager_kernels.items():
            if _is_function(ek.dispatch):
                continue
            kernel = ek.kernel or ek.dispatch
            op_type = canonical_op(ek.dispatch)
            per_type[op_type][kernel] += n
            dispatch_only[op_type] = dispatch_only.get(op_type, True) and not ek.kernel
    for op_type, kernels in per_type.items():
        row = model.row(op_type)
        note = ("only the dispatch line ('Executing op') was seen; it hides the eager "
                "wrapper's graph rewrite" if dispatch_only.get(op_type) else "")
        if len(kernels) == 1 and row.eager.executions:
            # One kernel for every execution the log saw: it labels the dump's count too.
            (kernel,) = kernels
            _add_kernel(row.eager, kernel, row.eager.executions, "log", note)
        else:
            for kernel, n in kernels.most_common():
                _add_kernel(row.eager, kernel, n, "log", note)


def _graph_kernels(model: RunModel) -> None:
    """Label graph ops with the kernels their executed nodes ran."""
    node_kernel: dict[str, tuple[str, str]] = {}
    for prof in model.profiles:
        for node, kernel, _s, _d in prof.graph_ops:
            node_kernel.setdefault(node, (kernel, "profile"))
    for log in model.logs:
        for node, (kernel, _dtype) in log.graph_kernels.items():
            node_kernel[node] = (kernel, "log")  # the log outranks the profile
    if not node_kernel:
        return
    if not model.dumps:
        for node, (kernel, evidence) in node_kernel.items():
            row = model.op_types.get(canonical_op(kernel))
            if row is not None:
                _add_kernel(row.graph, kernel, 0, evidence)
        for row in model.op_types.values():
            if len(row.graph.kernels) == 1:
                row.graph.kernels[0].executions = row.graph.executions
        return
    for dump in model.dumps:
        op_counts: Counter = Counter()
        lowest: dict[tuple[str, str], int] = {}
        for (graph_id, op_name, slot), n in dump.traces.items():
            key = (graph_id, op_name)
            if key not in lowest or slot < lowest[key]:
                lowest[key] = slot
        for (graph_id, op_name, slot), n in dump.traces.items():
            if slot == lowest[(graph_id, op_name)]:
                op_counts[(graph_id, op_name)] += n
        names = {op_name for (_g, op_name) in op_counts}
        matched = match_nodes(names, node_kernel)
        for (graph_id, op_name), n in op_counts.items():
            nodes = matched.get(op_name)
            if not nodes:
                continue
            op = dump.graphs[graph_id].ops.get(op_name) if graph_id in dump.graphs else None
            if op is None:
                continue
            kernels = {node_kernel[node] for node in nodes}
            if len(kernels) > 1:
                # Equal names in several functions: keep the kernels that fit the op type.
                fitting = {k for k in kernels if canonical_op(k[0]) == op.op_type}
                kernels = fitting or kernels
            kernel, evidence = sorted(kernels)[0]
            _add_kernel(model.row(op.op_type).graph, kernel, n, evidence)


def _onednn(model: RunModel) -> None:
    for log in model.logs:
        if log.onednn_opts is not None:
            model.onednn_enabled, model.onednn_source = log.onednn_opts, "log banner"
            return
    mkl = any(k.name.startswith("_Mkl") for row in model.op_types.values()
              for mode in (row.eager, row.graph) for k in mode.kernels)
    if mkl:
        model.onednn_enabled = True
        model.onednn_source = "oneDNN kernels (_Mkl*) seen"


def build_run(sources: RunSources, logdir: str) -> RunModel:
    model = RunModel(run=sources.name, directory=sources.directory)
    for prefix, files in sorted(sources.dump_sets.items()):
        model.dumps.append(read_dump_set(sources.directory, prefix, files))
    model.profiles = [read_profile(p) for p in sources.profiles]
    model.logs = [read_log(p) for p in sources.logs]
    versions = sorted({d.tensorflow_version for d in model.dumps if d.tensorflow_version})
    model.tensorflow_version = ", ".join(versions)
    model.hosts = sorted({d.host for d in model.dumps} | {p.host for p in model.profiles})
    model.sources = {
        "debugger": [relpath(os.path.join(d.directory, d.prefix), logdir) for d in model.dumps],
        "profile": [relpath(p, logdir) for p in sources.profiles],
        "logs": [relpath(p, logdir) for p in sources.logs],
    }
    for part in (*model.dumps, *model.profiles, *model.logs):
        model.problems.extend(part.problems)
    if model.dumps:
        model.counts_from = "debugger"
        _dump_counts(model)
    elif any(log.eager_dispatch or log.graph_executions for log in model.logs):
        model.counts_from = "log"
        _log_counts(model)
    elif model.profiles:
        model.counts_from = "profile"
        _profile_counts(model)
    _eager_kernels(model)
    _graph_kernels(model)
    _onednn(model)
    return model


def load(logdir: str, run: str | None = None, extra_logs: tuple[str, ...] = ()) -> list[RunModel]:
    """Read every run under ``logdir`` (or only ``run``)."""
    if not os.path.isdir(logdir):
        raise LogdirError(f"{logdir}: no such directory")
    found = discover(logdir, extra_logs)
    if not found:
        raise LogdirError(
            f"{logdir}: no tfdbg2 dump (tfdbg_events.*), profile (plugins/profile/*/*.xplane.pb) "
            f"or TensorFlow log (*.txt, *.log, *.out, *.err) found")
    if run is not None:
        found = [r for r in found if r.name == run]
        if not found:
            raise LogdirError(f"{logdir}: no run named {run!r}")
    return [build_run(sources, os.path.abspath(logdir)) for sources in found]


def _kernels_json(stats: ModeStats) -> list[dict[str, Any]]:
    out = []
    for k in sorted(stats.kernels, key=lambda k: (-k.executions, k.name)):
        item: dict[str, Any] = {"name": k.name, "executions": k.executions, "onednn": k.onednn,
                                "evidence": k.evidence}
        if k.note:
            item["note"] = k.note
        out.append(item)
    return out


def _problem_text(problem: Problem, logdir: str) -> str:
    path = problem.path
    if os.path.isabs(path) and path.startswith(logdir.rstrip(os.sep) + os.sep):
        path = relpath(path, logdir)
    return f"{path}: byte {problem.offset}: {problem.message}"


def summary(models: list[RunModel], logdir: str) -> dict[str, Any]:
    """The JSON contract of ``tb-opmode summary --format json``."""
    logdir = os.path.abspath(logdir)
    runs = []
    all_warnings: list[str] = []
    for m in models:
        warnings = [_problem_text(p, logdir) for p in m.problems]
        all_warnings.extend(f"{m.run}: {w}" for w in warnings)
        rows = sorted(m.op_types.values(),
                      key=lambda r: (-(r.eager.executions + r.graph.executions), r.op_type))
        runs.append({
            "run": m.run,
            "tensorflow_version": m.tensorflow_version,
            "hosts": m.hosts,
            "onednn_enabled": m.onednn_enabled,
            "onednn_source": m.onednn_source,
            "counts_from": m.counts_from,
            "sources": m.sources,
            "warnings": warnings,
            "functions": [{"name": n, "calls": c} for n, c in sorted(
                m.functions.items(), key=lambda kv: (-kv[1], kv[0]))],
            "op_types": [{
                "op_type": r.op_type,
                "eager": {"executions": r.eager.executions, "kernels": _kernels_json(r.eager)},
                "graph": {"executions": r.graph.executions, "kernels": _kernels_json(r.graph)},
            } for r in rows],
        })
    return {"version": __version__, "warnings": all_warnings, "runs": runs}
