"""Why each op ran in its mode and with its kernel, in words, with call sites and time.

In: a ``RunModel`` whose kernels are assigned (``join`` + ``kernels``). Out:
pure functions returning JSON-ready dicts: ``call_sites`` (Python lines that
issued eager executions, or created graph ops while a tf.function was traced),
``explain`` (per op type and mode: an ``explanation`` string and ``reasons``),
``op_times`` (per op type, mode and kernel, from the profile) and
``time_share`` (share of op time by mode x oneDNN).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from .kernels import REMOVED, is_fused, is_onednn
from .nodes import suffixes
from .rules import stock_reason

if TYPE_CHECKING:
    from .join import RunModel

__all__ = ["call_sites", "explain", "op_times", "time_share", "function_graphs", "kernel_class",
           "KERNEL_CLASSES"]

KERNEL_CLASSES = ("onednn", "fused", "stock", "unknown")
# Frames inside TF itself, or Keras' thin op wrappers, say nothing about why an op ran.
_INTERNAL = re.compile(r"/(tensorflow|tensorflow_core|tf_keras/src/backend|keras/src/backend|"
                       r"keras/src/ops|keras/backend|keras/src/utils/traceback_utils)[/.]")
_THIRD_PARTY = re.compile(r"/(site-packages|dist-packages|lib/python\d\.\d+)/")


def kernel_class(kernel: str) -> str:
    if not kernel or kernel == REMOVED:
        return "unknown"
    if is_fused(kernel) and is_onednn(kernel):
        return "fused"
    return "onednn" if is_onednn(kernel) else "stock"


def _frames(model: RunModel, stack: tuple[str, ...]) -> list[tuple[str, int, str]]:
    out = []
    for dump in model.dumps:
        if out:
            break
        for frame_id in stack:
            frame = dump.frame(frame_id)
            if frame is not None:
                out.append(frame)
    return out


def _pick(frames: list[tuple[str, int, str]]) -> tuple[tuple[str, int, str] | None,
                                                      tuple[str, int, str] | None]:
    """(call site: innermost frame outside TF internals, innermost frame of user code)."""
    site = user = None
    for frame in reversed(frames):  # frames run outermost first
        path = frame[0]
        if site is None and not _INTERNAL.search(path):
            site = frame
        if user is None and not _THIRD_PARTY.search(path) and not _INTERNAL.search(path):
            user = frame
        if site is not None and user is not None:
            break
    return site, user


def _snippet(model: RunModel, path: str, line: int, context: int = 2) -> list[dict[str, Any]]:
    for dump in model.dumps:
        for (host, file_path), lines in dump.source_lines.items():
            if file_path == path and lines:
                lo, hi = max(1, line - context), min(len(lines), line + context)
                return [{"line": i, "text": lines[i - 1]} for i in range(lo, hi + 1)]
    return []


def call_sites(model: RunModel, op_type: str, mode: str, limit: int = 10,
               snippets: bool = True) -> list[dict[str, Any]]:
    """Top Python call sites of an op type: eager executions, or graph op creation."""
    counts: Counter = Counter()
    if mode == "eager":
        for dump in model.dumps:
            for (t, stack), n in dump.execution_sites.items():
                if t == op_type:
                    counts[stack] += n
    else:
        executed = {(op.graph_id, op.op_name): op.executions for op in model.graph_ops
                    if op.op_type == op_type}
        for dump in model.dumps:
            for graph_id, graph in dump.graphs.items():
                for name, created in graph.ops.items():
                    n = executed.get((graph_id, name))
                    if n:
                        counts[created.stack] += n
    by_site: Counter = Counter()
    users: dict[tuple, Counter] = defaultdict(Counter)
    for stack, n in counts.items():
        site, user = _pick(_frames(model, stack))
        if site is None:
            continue
        by_site[site] += n
        if user is not None and user != site:
            users[site][user] += n
    out = []
    for (path, line, func), n in by_site.most_common(limit):
        item: dict[str, Any] = {"file": path, "line": line, "function": func, "count": n}
        if users[(path, line, func)]:
            upath, uline, ufunc = users[(path, line, func)].most_common(1)[0][0]
            item["user_code"] = {"file": upath, "line": uline, "function": ufunc}
        if snippets:
            item["source"] = _snippet(model, path, line)
        out.append(item)
    return out


def function_graphs(model: RunModel, op_type: str) -> list[dict[str, Any]]:
    """The graphs that hold the op type's graph executions, with their outermost function."""
    per_graph: Counter = Counter()
    for op in model.graph_ops:
        if op.op_type == op_type:
            per_graph[op.graph_id] += op.executions
    out = []
    for graph_id, n in per_graph.most_common():
        name, outer_name = "", ""
        for dump in model.dumps:
            graph = dump.graphs.get(graph_id)
            if graph is None:
                continue
            name = graph.name
            seen = set()
            while graph.outer_id and graph.outer_id in dump.graphs and graph.outer_id not in seen:
                seen.add(graph.outer_id)
                graph = dump.graphs[graph.outer_id]
            outer_name = graph.name
        calls = sum(c for f, c in model.functions.items()
                    if outer_name and f.startswith(f"__inference_{outer_name}_"))
        out.append({"graph_id": graph_id, "graph": name, "function": outer_name,
                    "function_calls": calls, "executions": n})
    return out


def _kernel_reason(model: RunModel, op_type: str, mode: str, kernel: dict[str, Any],
                   dtype: str) -> str:
    name, evidence = kernel["name"], kernel["evidence"]
    version = model.tensorflow_version or "this TF version"
    how = {"log": "seen in the TF log", "profile": "seen in the profile",
           "inferred": "inferred, not observed"}[evidence]
    notes = "; ".join(kernel.get("notes", []))
    if name == REMOVED:
        return f"No kernel ran: {notes or 'grappler removed the op'} ({how})."
    if kernel.get("fused_into"):
        return f"Ran inside the fused kernel {name} ({how}): {notes}."
    if is_onednn(name):
        if mode == "eager" and "wrapped" in notes:
            return (f"Runs the oneDNN kernel {name} ({how}). TF dispatched it as {op_type} "
                    f"(the 'Executing op' line, the profiler and Debugger V2 all show that name), "
                    f"but every eager op runs as a one-node function, and TF's oneDNN graph pass "
                    f"(MklLayoutRewritePass) rewrote that node to {name}; only the log's "
                    f"'Instantiating kernel' line shows it.")
        if mode == "eager" and "renamed" in notes:
            return (f"Runs the oneDNN kernel {name} ({how}): TF's eager oneDNN rewrite "
                    f"(MklEagerOpRewrite) renamed it before dispatch.")
        if mode == "graph":
            return (f"Runs the oneDNN kernel {name} ({how}): TF {version}'s oneDNN graph pass "
                    f"(MklLayoutRewritePass) rewrote the node after grappler optimised the graph."
                    + (f" {notes}." if notes else ""))
        return f"Runs the oneDNN kernel {name} ({how})." + (f" {notes}." if notes else "")
    reason = stock_reason(op_type, mode, model.tensorflow_version, dtype or "DT_FLOAT") \
        if model.onednn_enabled is not False else \
        "oneDNN custom operations are off in this run (TF_ENABLE_ONEDNN_OPTS=0)"
    extra = f" {notes}." if notes and evidence != "inferred" else ""
    return f"Runs the stock kernel {name} ({how}): {reason}.{extra}"


def explain(model: RunModel, op_type: str) -> dict[str, Any]:
    """Per mode: explanation (a paragraph) and reasons (structured)."""
    row = model.op_types[op_type]
    out: dict[str, Any] = {}
    dtypes = {"eager": Counter(), "graph": Counter()}
    for e in model.eager_ops:
        if e.op_type == op_type:
            dtypes["eager"][e.dtype] += e.executions
    for op in model.graph_ops:
        if op.op_type == op_type:
            dtypes["graph"][op.dtype] += op.executions
    for mode in ("eager", "graph"):
        stats = row.mode(mode)
        if not stats.executions:
            out[mode] = {"explanation": f"{op_type} did not run in {mode} mode in this run.",
                         "reasons": []}
            continue
        reasons: list[dict[str, Any]] = []
        if mode == "eager":
            sites = call_sites(model, op_type, "eager", limit=3, snippets=False)
            where = "; ".join(f"{s['function']} ({s['file'].rsplit('/', 1)[-1]}:{s['line']}) "
                              f"x{s['count']}" for s in sites)
            text = (f"{op_type} ran eagerly {stats.executions} times: it was called from Python "
                    f"outside any tf.function" + (f", mostly by {where}." if where else "."))
            reasons.append({"kind": "mode", "text": text, "call_sites": sites})
        else:
            graphs = function_graphs(model, op_type)
            where = "; ".join(f"graph {g['graph']}" + (
                f" of tf.function {g['function']} (called {g['function_calls']} times)"
                if g["function"] and g["function"] != g["graph"] else "")
                for g in graphs[:3])
            text = (f"{op_type} ran {stats.executions} times inside tf.function graphs"
                    + (f": {where}." if where else ".")
                    + " A graph op runs each time its function is called; Python ran only once, "
                      "to trace it.")
            reasons.append({"kind": "mode", "text": text, "graphs": graphs[:10]})
        dtype = dtypes[mode].most_common(1)[0][0] if dtypes[mode] else ""
        for k in sorted(stats.kernels, key=lambda k: -k.executions):
            kd = {"name": k.name, "evidence": k.evidence, "notes": k.notes,
                  "fused_into": k.fused_into}
            reasons.append({"kind": "kernel", "kernel": k.name, "evidence": k.evidence,
                            "executions": k.executions,
                            "text": _kernel_reason(model, op_type, mode, kd, dtype)})
        if model.tensorflow_version:
            reasons.append({"kind": "version", "text": (
                f"Rules as of TF {model.tensorflow_version} (from the dump's metadata); "
                f"oneDNN {'on' if model.onednn_enabled else 'off' if model.onednn_enabled is False else 'unknown'}"
                + (f" ({model.onednn_source})" if model.onednn_source else "") + ".")})
        out[mode] = {"explanation": " ".join(r["text"] for r in reasons), "reasons": reasons}
    return out


def _node_index(model: RunModel) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """Executed node -> (op type, kernel), exact (from assignments) and by suffix."""
    exact = {op.node: (op.op_type, op.kernel) for op in model.graph_ops if op.node}
    by_name: dict[str, tuple[str, str]] = {}
    for op in model.graph_ops:
        by_name.setdefault(op.op_name, (op.op_type, op.kernel))
    return exact, by_name


def op_times(model: RunModel) -> dict[tuple[str, str, str], list[int]]:
    """(op type, mode, kernel) -> [events, total ns], from the run's profiles."""
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    eager_kernel: dict[str, str] = {}
    for op_type, row in model.op_types.items():
        if row.eager.kernels:
            eager_kernel[op_type] = max(row.eager.kernels, key=lambda k: k.executions).name
    exact, by_name = _node_index(model)
    for prof in model.profiles:
        for op_type, is_func, _start, dur in prof.eager_ops:
            if is_func or op_type.startswith("__"):
                continue
            cell = out[(op_type, "eager", eager_kernel.get(op_type, op_type))]
            cell[0] += 1
            cell[1] += dur
        for node, kernel, _start, dur in prof.graph_ops:
            if kernel.startswith("Debug"):
                continue  # tfdbg's own instrumentation
            found = exact.get(node)
            if found is None:
                found = next((by_name[s] for s in suffixes(node) if s in by_name), None)
            if found is None:
                continue
            cell = out[(found[0], "graph", kernel)]
            cell[0] += 1
            cell[1] += dur
    return dict(out)


def time_share(times: dict[tuple[str, str, str], list[int]]) -> dict[str, Any]:
    """Share of profiled op time by mode x kernel class."""
    totals: Counter = Counter()
    for (_op, mode, kernel), (_n, ns) in times.items():
        totals[(mode, kernel_class(kernel))] += ns
    whole = sum(totals.values())
    return {"total_ms": whole / 1e6, "cells": [
        {"mode": mode, "class": cls, "ms": ns / 1e6, "share": (ns / whole if whole else 0.0)}
        for (mode, cls), ns in sorted(totals.items())]}
