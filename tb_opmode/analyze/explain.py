"""Why each op ran in its mode and with its kernel, in words, with call sites and time.

In: a ``RunModel`` whose kernels are assigned (``assemble`` + ``kernels``). Out:
pure functions returning JSON-ready dicts: ``call_sites`` (Python lines that
issued eager executions, or created graph ops while a tf.function was traced),
``function_graphs`` (the graphs holding an op type's graph executions),
``explain`` (per op type and mode: an ``explanation`` string and ``reasons``),
``op_times`` (per op type, mode and kernel, from the profile) and
``time_share`` (share of op time by mode x kernel class).

The CLI and the tab share these: ``kernel_class`` is the one classification
of a kernel name, ``node_op_types`` the one mapping of profiled graph nodes to
op types, and ``eager_kernels`` the one choice of the kernel an eager event is
put down to, so the summary's times, the tab's table, matrix and timeline agree.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, Optional

from ..model import RunModel
from ..read.tfdbg import DumpSet
from ..vocab import PLUMBING_KERNELS, REMOVED, UNKNOWN, is_debug_kernel, is_function, is_onednn
from .kernels import is_fused
from .nodes import canonical_op, suffixes
from .rules import NON_FLOAT, matching_rules, stock_reason

__all__ = ["call_sites", "explain", "op_times", "time_share", "class_times", "function_graphs",
           "kernel_class", "node_op_types", "eager_kernels"]

# Frames inside TF itself, or Keras' thin op wrappers, say nothing about why an op ran.
_INTERNAL = re.compile(r"[/\\](tensorflow|tensorflow_core|tf_keras[/\\]src[/\\]backend|"
                       r"keras[/\\]src[/\\]backend|keras[/\\]src[/\\]ops|keras[/\\]backend|"
                       r"keras[/\\]src[/\\]utils[/\\]traceback_utils)[/\\.]")
# Installed libraries and the interpreter's own code (``<frozen ...>``, ``<string>``).
_THIRD_PARTY = re.compile(r"[/\\](site-packages|dist-packages|lib[/\\]python\d+(\.\d+)?)[/\\]|^<")
_MAX_LINE_CHARS = 400
_MAX_VIA = 8

Frame = tuple[str, int, str]  # (file path, line, function)


def kernel_class(kernel: str) -> str:
    """One of ``vocab.KERNEL_CLASSES``: ``fused`` (a oneDNN kernel grappler's remapper
    fused from several ops), ``onednn`` (another ``_Mkl*`` kernel), ``stock``, or
    ``unknown`` (no kernel: none seen, or the op was optimized away)."""
    if not kernel or kernel in (REMOVED, UNKNOWN):
        return "unknown"
    if is_fused(kernel) and is_onednn(kernel):
        return "fused"
    return "onednn" if is_onednn(kernel) else "stock"


def _frames(dump: DumpSet, stack: tuple[str, ...]) -> list[Frame]:
    """The frames of a stack that its own dump knows, outermost first."""
    return [f for f in (dump.frame(frame_id) for frame_id in stack) if f is not None]


def _pick(frames: list[Frame]) -> tuple[Optional[int], Optional[int]]:
    """Indexes of (call site: the innermost frame outside TF internals, or else the innermost
    frame; user code: the innermost frame outside TF and installed libraries)."""
    site = user = None
    for i in range(len(frames) - 1, -1, -1):  # frames run outermost first
        path = frames[i][0]
        if site is None and not _INTERNAL.search(path):
            site = i
        if user is None and not _THIRD_PARTY.search(path) and not _INTERNAL.search(path):
            user = i
        if site is not None and user is not None:
            break
    if site is None and frames:
        site = len(frames) - 1
    return site, user


def _snippet(model: RunModel, first: int, path: str, line: int,
             context: int) -> Optional[dict[str, Any]]:
    """The source around ``path:line`` (from dump ``first``, else any dump that has the file)."""
    for dump in [model.dumps[first]] + model.dumps[:first] + model.dumps[first + 1:]:
        for (_host, file_path), lines in dump.source_lines.items():
            if file_path == path and 1 <= line <= len(lines):
                lo, hi = max(1, line - context), min(len(lines), line + context)
                return {"first_line": lo, "line": line,
                        "lines": [text[:_MAX_LINE_CHARS] for text in lines[lo - 1:hi]]}
    return None


def _frame_json(frame: Frame) -> dict[str, Any]:
    return {"file": frame[0], "line": frame[1], "function": frame[2]}


def call_sites(model: RunModel, op_type: str, mode: str, limit: Optional[int] = 10,
               snippets: bool = True, context: int = 2, via: bool = False) -> list[dict[str, Any]]:
    """Python call sites of an op type, busiest first (``limit=None``: all of them).

    Eager: where its executions were issued; graph: where its executed graph ops
    were created while a tf.function was traced. A site is the innermost frame
    outside TF's own code; each has ``file``, ``line``, ``function``, ``count``
    (executions), for graph sites ``ops`` (graph ops created there), and
    ``user_code``: the innermost frame of the program itself (outside TF and
    installed libraries) that led there, when that is another frame. With
    ``snippets``, ``snippet`` holds the site's line with ``context`` lines each
    side; with ``via``, ``via`` lists the frames between the user's code and the
    site (outermost first, TF internals left out, the last few).
    """
    stacks: Counter[tuple[int, tuple[str, ...]]] = Counter()       # (dump index, stack) -> executions
    created_ops: Counter[tuple[int, tuple[str, ...]]] = Counter()  # (dump index, stack) -> graph ops created there
    if mode == "eager":
        for i, dump in enumerate(model.dumps):
            for (t, stack), n in dump.execution_sites.items():
                if t == op_type:
                    stacks[(i, stack)] += n
    else:
        for op in model.graph_ops:
            if op.op_type != op_type or not op.executions:
                continue
            for i, dump in enumerate(model.dumps):
                graph = dump.graphs.get(op.graph_id)
                created = graph.ops.get(op.op_name) if graph is not None else None
                if created is not None:
                    stacks[(i, created.stack)] += op.executions
                    created_ops[(i, created.stack)] += 1
                    break
    groups: dict[Frame, dict[str, Any]] = {}
    for (i, stack), n in stacks.items():
        frames = _frames(model.dumps[i], stack)
        site, user = _pick(frames)
        if site is None:
            continue  # no frame of this stack is known: nothing to show
        group = groups.setdefault(frames[site], {"count": 0, "ops": 0, "dump": i,
                                                 "paths": Counter()})
        group["count"] += n
        group["ops"] += created_ops[(i, stack)]
        if user is not None and user != site:
            path = tuple(f for f in frames[user + 1:site] if not _INTERNAL.search(f[0]))
            group["paths"][(frames[user], path[-_MAX_VIA:])] += n
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1]["count"], kv[0][0], kv[0][1]))
    out = []
    for frame, group in ordered[:limit]:
        item: dict[str, Any] = dict(_frame_json(frame), count=group["count"])
        if mode != "eager":
            item["ops"] = group["ops"]
        user_path = group["paths"].most_common(1)[0][0] if group["paths"] else None
        if user_path is not None:
            item["user_code"] = _frame_json(user_path[0])
        if via:
            item["via"] = [_frame_json(f) for f in user_path[1]] if user_path else []
        if snippets:
            snippet = _snippet(model, group["dump"], frame[0], frame[1], context)
            if snippet is not None:
                item["snippet"] = snippet
        out.append(item)
    return out


def function_graphs(model: RunModel, op_type: str) -> list[dict[str, Any]]:
    """The graphs that hold the op type's graph executions, busiest first: each with its
    name, the outermost function it belongs to (and that function's calls), the op
    type's executed ops in it (``ops``, the first ``op_names``) and their executions."""
    per_graph: dict[str, dict[str, Any]] = {}
    for op in model.graph_ops:
        if op.op_type == op_type:
            entry = per_graph.setdefault(op.graph_id, {"executions": 0, "op_names": []})
            entry["executions"] += op.executions
            entry["op_names"].append(op.op_name)
    out = []
    for graph_id, entry in per_graph.items():
        name, outer_name, outer_id = "", "", ""
        calls = 0
        for dump in model.dumps:
            graph = dump.graphs.get(graph_id)
            if graph is None:
                continue
            name = graph.name
            seen = set()
            # Climb to the outermost named graph: the root context tfdbg records is unnamed.
            while (graph.outer_id in dump.graphs and graph.outer_id not in seen
                   and dump.graphs[graph.outer_id].name):
                seen.add(graph.outer_id)
                graph = dump.graphs[graph.outer_id]
            outer_name, outer_id = graph.name, graph.graph_id
            # Calls of that very graph: Keras' train and evaluate functions share a name
            # (multi_step_on_iterator), so functions are told apart by graph id.
            calls += sum(n for (_op, called), n in dump.executions.items()
                         if called == graph.graph_id)
        out.append({"graph_id": graph_id, "graph": name, "function": outer_name,
                    "function_graph_id": outer_id, "function_calls": calls, "executions": entry["executions"],
                    "ops": len(entry["op_names"]), "op_names": sorted(entry["op_names"])[:5]})
    out.sort(key=lambda g: (-g["executions"], -g["ops"], g["graph"], g["graph_id"]))
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
    if name == UNKNOWN:
        return f"Kernel {notes or 'unknown: the evidence in this run cannot decide it'}."
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
    if model.onednn_enabled is False:
        reason = "oneDNN custom operations are off in this run (TF_ENABLE_ONEDNN_OPTS=0)"
    elif not model.tensorflow_version:  # no dump metadata: no rule table applies
        reason = "the run's TF version is unknown (no tfdbg dump), so no oneDNN rule says why"
    else:
        # "" is an output the dump gave no summary: in a dump, a non-float one (the modes
        # that record dtypes summarise float tensors only); with no dump, not recorded.
        reason = stock_reason(op_type, mode, model.tensorflow_version,
                              dtype or (NON_FLOAT if any(d.traces or d.executions
                                                         for d in model.dumps) else "DT_FLOAT"))
    extra = f" {notes}." if notes and evidence != "inferred" else ""
    return f"Runs the stock kernel {name} ({how}): {reason.rstrip('.')}.{extra}"


def _fusion_blocked(model: RunModel, op_type: str, mode: str, kernels: list[Any],
                    dtype: str) -> str:
    """Why a graph op that grappler's remapper can fuse ran unfused, when the
    likely reason is the dump itself; else "".

    tfdbg instruments graphs at trace time: every traced tensor gets a debug op
    as an extra consumer, and the remapper fuses a pattern only when its
    intermediate tensors have no other consumer. Measured (TF 2.21, oneDNN on,
    Dense(relu)+Dense, fit and predict, TF_CPP_MAX_VLOG_LEVEL=2): without the
    dump 4 _MklNativeFusedMatMul kernels; with FULL_HEALTH or NO_TENSOR none,
    _MklMatMul, BiasAdd and Relu instead."""
    if mode != "graph" or not model.tensorflow_version or not any(d.traces for d in model.dumps):
        return ""
    if any(k.fused_into or kernel_class(k.name) == "fused" or k.name == REMOVED for k in kernels):
        return ""
    fused = sorted({r.kernel for r in matching_rules(op_type, "graph", model.tensorflow_version,
                                                     dtype or "DT_FLOAT",
                                                     onednn=model.onednn_enabled is not False)
                    if r.mechanism == "remapper-fusion"})
    if not fused:
        return ""
    return (f"No fusion: TF {model.tensorflow_version} can fuse {op_type} with its neighbours "
            f"into {' or '.join(fused)}, but grappler's remapper fuses only when the intermediate "
            f"tensors have no other consumer, and this run's "
            f"tfdbg dump (enable_dump_debug_info) gave every traced tensor one, a debug op. "
            f"Without the dump, this op may run fused (measured on TF 2.21: a Dense+ReLU model "
            f"runs _MklNativeFusedMatMul without the dump, _MklMatMul, BiasAdd and Relu with it).")


def explain(model: RunModel, op_type: str) -> dict[str, Any]:
    """Per mode: explanation (a paragraph) and reasons (structured)."""
    row = model.op_types[op_type]
    out: dict[str, Any] = {}
    dtypes: dict[str, Counter[str]] = {"eager": Counter(), "graph": Counter()}
    # Each kernel is explained by the dtype it ran for: an int32 Transpose stays stock
    # while a float one runs _MklTranspose, and the mode's commonest dtype would say so
    # of both.
    kernel_dtypes: dict[tuple[str, str], Counter[str]] = {}
    for e in model.eager_ops:
        if e.op_type == op_type:
            dtypes["eager"][e.dtype] += e.executions
            kernel_dtypes.setdefault(("eager", e.kernel), Counter())[e.dtype] += e.executions
    for op in model.graph_ops:
        if op.op_type == op_type:
            dtypes["graph"][op.dtype] += op.executions
            kernel_dtypes.setdefault(("graph", op.kernel), Counter())[op.dtype] += op.executions
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
            own = kernel_dtypes.get((mode, k.name))
            reasons.append({"kind": "kernel", "kernel": k.name, "evidence": k.evidence,
                            "executions": k.executions,
                            "text": _kernel_reason(model, op_type, mode, kd,
                                                   own.most_common(1)[0][0] if own else dtype)})
        blocked = _fusion_blocked(model, op_type, mode, stats.kernels, dtype)
        if blocked:
            reasons.append({"kind": "instrumentation", "text": blocked})
        if model.tensorflow_version:
            reasons.append({"kind": "version", "text": (
                f"Rules as of TF {model.tensorflow_version} (from the dump's metadata); "
                f"oneDNN {'on' if model.onednn_enabled else 'off' if model.onednn_enabled is False else 'unknown'}"
                + (f" ({model.onednn_source})" if model.onednn_source else "") + ".")})
        out[mode] = {"explanation": " ".join(r["text"] for r in reasons), "reasons": reasons}
    return out


def node_op_types(model: RunModel) -> dict[str, str]:
    """Executed graph node (as the profile names it) -> the op type it ran for.

    The one mapping of profiled graph time to op types, in this order:

    1. the node ``kernels.assign_graph`` linked to a dump op (``OpKernel.node``),
       when it is that op's own node (not the node of another op it was fused
       into, nor the producer read in place of an op optimized away);
    2. the dump op named by the longest ``/``-suffix of the node name (inlined
       calls prefix names; this also finds ops tfdbg does not trace, e.g. ones
       without outputs such as ``AssignVariableOp``);
    3. the stock op of the node's kernel (``canonical_op``): nodes grappler made
       that stand for no dump op, and every node of a run without a dump (whose
       op types are named after kernels too).

    tfdbg's own nodes (``is_debug_kernel``) and executor plumbing
    (``PLUMBING_KERNELS``) are no user op: they are left out.
    """
    exact: dict[str, str] = {}
    for op in model.graph_ops:
        if op.node and not op.fused_into and op.kernel != REMOVED:
            exact.setdefault(op.node, op.op_type)
    by_name: dict[str, str] = {}
    for dump in model.dumps:
        for graph in dump.graphs.values():
            for name, created in graph.ops.items():
                by_name.setdefault(name, created.op_type)
    out: dict[str, str] = {}
    for prof in model.profiles:
        for node, kernel, _start, _dur in prof.graph_ops:
            if node in out or is_debug_kernel(kernel) or kernel in PLUMBING_KERNELS:
                continue
            op_type = exact.get(node) or next((by_name[s] for s in suffixes(node) if s in by_name),
                                              None)
            out[node] = op_type or canonical_op(kernel)
    return out


def eager_kernels(model: RunModel) -> dict[str, str]:
    """Op type -> the kernel its eager events are put down to: the one it ran eagerly most
    often (a profiler event of an eager op does not name its kernel). Op types without a
    known eager kernel are absent (their time is of kernel class ``unknown``)."""
    return {op_type: max(row.eager.kernels, key=lambda k: k.executions).name
            for op_type, row in model.op_types.items() if row.eager.kernels}


def op_times(model: RunModel) -> dict[tuple[str, str, str], list[int]]:
    """(op type, mode, kernel) -> [events, total ns], from the run's profiles.

    Eager events are booked to ``eager_kernels`` ("" when no kernel is known),
    graph events to their own kernel and the op type ``node_op_types`` gives.
    tf.function calls, tfdbg's instrumentation and executor plumbing are left out.
    """

    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    eager_kernel = eager_kernels(model)
    op_of = node_op_types(model)
    for prof in model.profiles:
        for op_type, is_func, _start, dur in prof.eager_ops:
            if is_func or is_function(op_type) or is_debug_kernel(op_type):
                continue
            cell = out[(op_type, "eager", eager_kernel.get(op_type, ""))]
            cell[0] += 1
            cell[1] += dur
        for node, kernel, _start, dur in prof.graph_ops:
            graph_op = op_of.get(node)
            if graph_op is None:
                continue  # tfdbg's own nodes and executor plumbing
            cell = out[(graph_op, "graph", kernel)]
            cell[0] += 1
            cell[1] += dur
    return dict(out)


def class_times(times: dict[tuple[str, str, str], list[int]]) -> dict[tuple[str, str], int]:
    """(mode, kernel class) -> profiled op time in ns, from ``op_times``."""
    totals: Counter[tuple[str, str]] = Counter()
    for (_op, mode, kernel), (_n, ns) in times.items():
        totals[(mode, kernel_class(kernel))] += ns
    return dict(totals)


def time_share(times: dict[tuple[str, str, str], list[int]]) -> dict[str, Any]:
    """Share of profiled op time by mode x kernel class."""
    totals = class_times(times)
    whole = sum(totals.values())
    return {"total_ms": whole / 1e6, "cells": [
        {"mode": mode, "class": cls, "ms": ns / 1e6, "share": (ns / whole if whole else 0.0)}
        for (mode, cls), ns in sorted(totals.items())]}
