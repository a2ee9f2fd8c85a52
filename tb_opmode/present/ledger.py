"""The trace ledger as the contract carries it and as the CLI prints it.

In: a ``RunModel`` (``analyze.traces_logged.run_ledger``) or a run of the summary JSON. Out:
``tf_functions``: ``runs[].tf_functions`` of the contract (``payloads.TfFunction``), and
the text of ``tb-opmode functions`` and of the summary's ``tf.function calls:`` line,
grouped by Python function; ``no_traces_text``, what a run without traces lacks, by the
sources it has (a dump, a log, nothing: a recorded job that wrote no TensorFlow evidence).
"""
from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from typing import Any

from ..analyze.traces import FunctionLedger, TraceEntry
from ..analyze.traces_causes import NOT_RECORDED
from ..analyze.traces_logged import run_ledger
from ..model import RunModel
from .payloads import TfFunction, TraceDoc

__all__ = ["tf_functions", "functions_text", "functions_line", "no_traces_text"]

_WIDTH = 100


def _trace_json(t: TraceEntry) -> TraceDoc:
    return {"graph": t.graph, "graph_id": t.graph_id, "calls": t.calls, "call_sites": t.call_sites,
            "args": t.args, "changed": t.changed, "note": t.note,
            "tracing_s": None if t.tracing_s is None else round(t.tracing_s, 6),
            "tracing_from": t.tracing_from}


def _function_json(f: FunctionLedger) -> TfFunction:
    tracing = f.tracing_s
    return {"python_name": f.python_name, "name": f.name, "location": f.location, "kind": f.kind,
            "nested": f.nested, "objects": f.objects, "traces": len(f.traces), "calls": f.calls,
            "tracing_s": None if tracing is None else round(tracing, 6),
            "tracing_from": next((t.tracing_from for t in f.traces if t.tracing_from), ""),
            "causes": f.causes, "advice": f.advice,
            "trace_list": [_trace_json(t) for t in f.traces]}


def tf_functions(model: RunModel, functions: list[FunctionLedger] | None = None) -> list[TfFunction]:
    """The run's tf.functions, one entry per Python function (its objects' counts added);
    ``functions``: the run's ``ledger`` where the caller made it already."""
    return [_function_json(f) for f in (run_ledger(model) if functions is None else functions)]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _where(location: str) -> str:
    path, _, line = location.rpartition(":")
    return f"{os.path.basename(path)}:{line}" if path else location


def _seconds(value: Any, source: str) -> str:
    if value is None:
        return "tracing time not recorded"
    if source == "profile":
        return f"tracing {value * 1e3:.1f} ms (profile)"
    bound = " at least" if source == "op_creations" else ""
    return f"tracing{bound} {value * 1e3:.1f} ms"


def _counts(f: dict[str, Any]) -> str:
    objects = f" ({f['objects']} tf.function objects)" if f.get("objects", 1) > 1 else ""
    calls = "called inside another tf.function" if f.get("nested") else f"{f['calls']} calls"
    calls = calls if f.get("nested") else _plural(f["calls"], "call")
    return f"{_plural(f['traces'], 'trace')}{objects}, {calls}"


def _changed_text(changed: list[dict[str, Any]], note: str) -> str:
    if not changed:
        return note or "first trace"
    parts = []
    for c in changed:
        what = c["cause"] + (f" of {c['arg']}" if c.get("arg") else "")
        what += f" (dimension {c['dim']})" if c.get("dim") is not None else ""
        parts.append(what + (f": {c['why']}" if c["cause"] == "unknown" and c.get("why") else ""))
    # a note beside causes says which earlier trace they are told against
    return "; ".join(parts) + (f" ({note})" if note else "")


def _args_text(args: list[dict[str, Any]]) -> str:
    out = []
    for a in args:
        if a.get("kind") == "python":
            value = a.get("value", NOT_RECORDED)
            out.append(f"{a['name']}={'<Python value>' if value == NOT_RECORDED else value}")
        else:
            shape = a["shape"] if isinstance(a["shape"], str) else str(a["shape"]).replace(" ", "")
            # one "not recorded" where the dump recorded neither dtype nor shape
            said = a["dtype"] if shape == a["dtype"] else f"{a['dtype']} {shape}"
            out.append(f"{a['name']}: {said}")
    return ", ".join(out)


def _function_lines(f: dict[str, Any]) -> list[str]:
    # a function known from TF's log alone has no def line to show
    where = f" ({_where(f['location'])})" if f["location"] else ""
    head = f"{f['name']}{where}: {_counts(f)}, {_seconds(f['tracing_s'], f['tracing_from'])}"
    if f["causes"]:
        head += "; causes: " + ", ".join(f"{k} x{n}" for k, n in f["causes"].items())
    lines = textwrap.wrap(head, _WIDTH, subsequent_indent="    ")
    for advice in f["advice"]:
        lines += textwrap.wrap("advice: " + advice, _WIDTH, initial_indent="  ", subsequent_indent="    ")
    for t in f["trace_list"]:
        where = f" from {_where(t['call_sites'][0])}" if t["call_sites"] else ""
        # A nested function's traces run inside the outer graph: "0 calls" (from Python)
        # would contradict the line above, which says it was called.
        calls = "" if f.get("nested") else f"{_plural(t['calls'], 'call')}{where}, "
        text = (f"{t['graph']}: {calls}{_seconds(t['tracing_s'], t['tracing_from'])}; "
                f"args {_args_text(t['args']) or 'none'}; {_changed_text(t['changed'], t['note'])}")
        lines += textwrap.wrap(text, _WIDTH, initial_indent="    ", subsequent_indent="        ")
    return lines


def no_traces_text(run: Mapping[str, Any]) -> str:
    """Why a run lists no tf.function trace, by what it has to find them in: its dump,
    its log (a run without a dump), or nothing at all (and then, for a recorded job, how
    it ended)."""
    sources = run.get("sources") or {}
    if sources.get("debugger"):
        return "No tf.function traces in the dump."
    if sources.get("logs"):
        return "No tf.function traces in the log (this run has no dump)."
    recording = run.get("recording") or {}
    if recording.get("command"):
        ended = f" {recording['ended']} and" if recording.get("ended") else ""
        return (f"No tf.function traces to show: the recorded job{ended} wrote no TensorFlow "
                "evidence (no dump, no log, no profile).")
    return "No tf.function traces to show: this run has no dump and no log to find them in."


def functions_text(run: dict[str, Any]) -> str:
    """``tb-opmode functions``: each Python function, then each of its traces indented."""
    fns = run.get("tf_functions") or []
    if not fns:
        return f"{run['run']}: {no_traces_text(run)}\n"
    lines = [f"{run['run']}: {_plural(len(fns), 'Python function')} run as "
             f"{'a tf.function' if len(fns) == 1 else 'tf.functions'}"]
    for f in fns:
        lines += _function_lines(f)
    return "\n".join(lines) + "\n"


def functions_line(run: dict[str, Any]) -> list[str]:
    """The summary's ``tf.function calls:`` line, grouped by Python function, wrapped."""
    fns = [f for f in run.get("tf_functions") or [] if not f.get("nested")]
    if not fns:
        return []
    lines = ["  tf.function calls (per Python function):"]
    for f in fns:
        lines += textwrap.wrap(f"{f['name']}: {_plural(f['traces'], 'trace')}, {_plural(f['calls'], 'call')}",
                               _WIDTH, initial_indent="    ", subsequent_indent="      ")
    return lines
