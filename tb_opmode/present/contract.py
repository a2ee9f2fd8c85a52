"""The JSON contract that the CLI and the tab share: ``summary()`` and ``run_json()``.

In: ``RunModel``s (``analyze.assemble.build_run`` / ``load``) and the logdir they were
read from. Out: per run, JSON-ready dicts: per op type and mode the execution count,
the kernels that ran with their evidence and profiled time, the explanation; the
run's facts (TF version, hosts, oneDNN state and source, where counts come from),
warnings, tf.functions, ONEDNN_VERBOSE primitives, XLA functions, time shares.

``summary_doc`` and ``run_doc`` build them typed (``payloads.SummaryDoc``,
``payloads.RunDoc``); ``summary`` and ``run_json`` return the same documents typed as the
plain dicts that ``csv.render_csv``, ``report`` and ``cli`` take.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, cast

from .. import __version__
from ..analyze.eager_sites import EagerSite, eager_sites
from ..analyze.explain import explain, time_share
from ..analyze.traces import traces_per_graph
from ..analyze.traces_logged import run_ledger
from ..analyze.workers import collectives_across
from ..model import ModeStats, OpTypeRow, RunModel
from ..read import fs
from ..read.discover import display, problem_text, relpath
from .ledger import tf_functions
from .payloads import (
    EagerSiteDoc,
    FunctionCalls,
    KernelDoc,
    ModeDoc,
    OnednnVerbose,
    OpTypeDoc,
    Primitive,
    RunDoc,
    SummaryDoc,
    TimeDoc,
    TimeShare,
    XlaFunction,
)
from .recording import compare_fusions, recording_doc

__all__ = ["summary", "run_json", "summary_doc", "run_doc", "run_warnings", "eager_site_doc", "eager_sites_doc",
           "onednn_primitives", "xla_functions",
           "MAX_KERNEL_NOTES", "MAX_FUSED_NODES"]

# How much of a kernel's lists the contract carries: its first notes, the first nodes
# grappler fused it into.
MAX_KERNEL_NOTES = 5
MAX_FUSED_NODES = 20


def _time_json(events: int, ns: int) -> TimeDoc:
    return {"events": events, "total_ms": ns / 1e6, "mean_us": ns / events / 1e3}


def _kernels_json(stats: ModeStats) -> list[KernelDoc]:
    out = []
    for k in sorted(stats.kernels, key=lambda k: (-k.executions, k.name)):
        item: KernelDoc = {"name": k.name, "executions": k.executions, "onednn": k.onednn,
                           "evidence": k.evidence}
        if k.notes:
            item["notes"] = k.notes[:MAX_KERNEL_NOTES]
        if k.fused_into:
            item["fused_into"] = k.fused_into[:MAX_FUSED_NODES]
        out.append(item)
    return out


def _mode_json(m: RunModel, row: OpTypeRow, mode: str, explanation: str) -> ModeDoc:
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
            k["time"] = _time_json(events, ns)
    # The mode's total holds every profiled event of the op type, also those of a kernel
    # no execution was labelled with, so that it adds up to the overview's.
    for (op_type, in_mode, _kernel), (events, ns) in m.times.items():
        if op_type == row.op_type and in_mode == mode:
            total_events += events
            total_ns += ns
    out: ModeDoc = {"executions": stats.executions, "kernels": kernels}
    if total_events:
        out["time"] = _time_json(total_events, total_ns)
    if explanation:
        out["explanation"] = explanation
    return out


def onednn_primitives(m: RunModel) -> OnednnVerbose:
    """ONEDNN_VERBOSE primitives executed, by kind and implementation (ISA)."""
    counts: Counter[tuple[str, str, str]] = Counter()
    times: dict[tuple[str, str, str], float] = {}
    for log in m.logs:
        counts.update(log.onednn_primitives)
        for key, ms in log.onednn_time_ms.items():
            times[key] = times.get(key, 0.0) + ms
    rows: list[Primitive] = [{"kind": kind, "implementation": impl, "prop_kind": prop, "count": n,
             "time_ms": round(times.get((kind, impl, prop), 0), 3)}
            for (kind, impl, prop), n in counts.most_common()]
    note = ""
    if rows and all(r["kind"] == "gemm_api" for r in rows):
        note = ("only gemm_api lines: stock MatMul also calls oneDNN's sgemm, so these alone do "
                "not prove that TF's oneDNN ops are on")
    elif any(r["kind"] == "gemm_api" for r in rows):
        note = "gemm_api lines also occur with oneDNN off (stock MatMul calls oneDNN's sgemm)"
    return {"primitives": rows, "note": note}


def xla_functions(m: RunModel) -> list[XlaFunction]:
    """tf.functions XLA compiled (jit_compile=True), from the log's XLA launches: a mode
    of their own. Their ops run inside one XLA cluster, not as TF kernels, and tfdbg
    cannot instrument a cluster (its debug ops have no XLA kernel): with the dump on, TF
    refuses to compile such a function, so a dump holds none of its ops."""
    launches: Counter[str] = Counter()
    for log in m.logs:
        launches.update(log.xla_launches)
    out: list[XlaFunction] = []
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


def eager_site_doc(site: EagerSite) -> EagerSiteDoc:
    """One line of ``analyze.eager_sites`` as the contract names it."""
    return {"location": site.location, "user_location": site.user_location,
            "executions": site.executions, "time_ns": site.time_ns,
            "op_types": dict(site.op_types.most_common()), "user_function": site.user_function,
            "user_scope": site.scope,
            "location_function": site.location_function,
            "library_location": site.library_location, "library_function": site.library_function,
            "share": site.share, "time_share": site.time_share,
            "profiled_executions": site.profiled_executions, "time_note": site.time_note,
            "time_source": site.time_source,
            "calls": site.calls, "advice": site.advice}


def eager_sites_doc(m: RunModel) -> list[EagerSiteDoc]:
    """The run's eager hot spots (``analyze.eager_sites``), ranked."""
    return [eager_site_doc(s) for s in eager_sites(m)]


def run_warnings(m: RunModel, logdir: str) -> list[str]:
    """The run's warnings, one line each: what could not be read, what a count leaves out
    (every command that answers from the run says them: ``explain`` too)."""
    # A problem of the run as a whole (its directory: a count it could not make) has no
    # file nor byte to name, and the run's name already leads each warning.
    return [display(p.message) if p.path == m.directory else problem_text(p, logdir)
            for p in m.problems]


def run_doc(m: RunModel, logdir: str, explanations: bool = True) -> RunDoc:
    """One run of the summary contract."""
    warnings = run_warnings(m, logdir)
    rows = sorted(m.op_types.values(),
                  key=lambda r: (-(r.eager.executions + r.graph.executions), r.op_type))
    op_types: list[OpTypeDoc] = []
    functions_ledger = run_ledger(m)  # the Functions section's and the explanations' trace counts
    traces = traces_per_graph(functions_ledger) if explanations else {}
    for r in rows:
        why = explain(m, r.op_type, traces) if explanations else {}
        op_types.append({
            "op_type": r.op_type,
            "eager": _mode_json(m, r, "eager", why.get("eager", {}).get("explanation", "")
                                if r.eager.executions else ""),
            "graph": _mode_json(m, r, "graph", why.get("graph", {}).get("explanation", "")
                                if r.graph.executions else ""),
        })
    functions: list[FunctionCalls] = [
        {"name": n, "calls": c} for n, c in sorted(m.functions.items(), key=lambda kv: (-kv[1], kv[0]))]
    doc: RunDoc = {
        "run": m.run,
        "tensorflow_version": m.tensorflow_version,
        "hosts": m.hosts,
        "onednn_enabled": m.onednn_enabled,
        "onednn_source": m.onednn_source,
        "counts_from": m.counts_from,
        "uncounted_graph_executions": m.uncounted_graph_executions,
        "count_basis": dict(m.count_basis),
        "recording": recording_doc(m),
        "sources": m.sources,
        "warnings": warnings,
        "notes": [f"{relpath(p.path, logdir)}: {n}" for p in m.profiles for n in p.notes],
        "functions": functions,
        "tf_functions": tf_functions(m, functions_ledger),
        "onednn_verbose": onednn_primitives(m),
        "xla_functions": xla_functions(m),
        # analyze.explain builds it as a plain dict; payloads.TimeShare is its shape.
        "time_share": cast(TimeShare, time_share(m.times)),
        "op_types": op_types,
        "eager_sites": eager_sites_doc(m),
    }
    if m.workers:  # only for a run of several workers or devices (analyze.workers.breakdown)
        doc["workers"] = m.workers
        doc["collectives"] = collectives_across(m.workers)
    return doc


def summary_doc(models: list[RunModel], logdir: str, explanations: bool = True) -> SummaryDoc:
    """The JSON contract of ``tb-opmode summary --format json``."""
    logdir = fs.absolute(logdir)
    runs = [run_doc(m, logdir, explanations) for m in models]
    compare_fusions(models, runs)
    all_warnings = [f"{r['run']}: {w}" for r in runs for w in r["warnings"]]
    return {"version": __version__, "warnings": all_warnings, "runs": runs}


def run_json(m: RunModel, logdir: str, explanations: bool = True) -> dict[str, Any]:
    """``run_doc``, typed as the plain dict its readers take."""
    return cast(dict[str, Any], run_doc(m, logdir, explanations))


def summary(models: list[RunModel], logdir: str, explanations: bool = True) -> dict[str, Any]:
    """``summary_doc``, typed as the plain dict its readers take."""
    return cast(dict[str, Any], summary_doc(models, logdir, explanations))
