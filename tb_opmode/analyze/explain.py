"""Why each op type ran in its mode and with its kernel, in words.

In: a ``RunModel`` whose kernels are assigned (``assemble`` + ``kernels``) and an op type.
Out: ``explain``: per mode, an ``explanation`` paragraph and the ``reasons`` it is made
of (JSON-ready dicts, each with its ``kind`` and ``text``).

An explanation is a list of parts, in order (``_PARTS``): how the op type ran in the mode
(called eagerly from Python, or inside tf.function graphs); one reason per kernel it ran
(a oneDNN rewrite, a fusion, a removal, or why it stayed stock, from ``rules``); what kept
grappler's remapper from fusing it (tfdbg's own debug ops); which rules apply (TF
version, oneDNN). The paragraph is their texts, joined.

This module is also the face of its neighbours, which callers import from here:
``call_sites`` and ``function_graphs`` (``call_sites``: where executions came from),
``op_times``, ``node_op_types`` and ``eager_kernels`` (``events``: what profiled events
are booked to), ``kernel_class``, ``class_times`` and ``time_share`` (``times``).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..model import KernelUse, ModeStats, RunModel
from ..vocab import REMOVED, UNKNOWN, is_onednn
from .call_sites import EAGER_WHY_PYTHON, call_sites, eager_why, function_graphs
from .events import eager_kernels, node_op_types, op_times
from .kernels import is_fused
from .kernels.grappler import DATASET_GRAPHS
from .nodes import canonical_op
from .rules import NON_FLOAT, matching_rules, stock_reason
from .times import class_times, kernel_class, time_share
from .traces import traces_per_graph
from .traces_logged import run_ledger

__all__ = ["call_sites", "explain", "op_times", "time_share", "class_times", "function_graphs",
           "kernel_class", "node_op_types", "eager_kernels"]

# How many call sites and graphs a mode's sentence names, and how many graphs it lists.
_SITES_NAMED = 3
_GRAPHS_NAMED = 3
_GRAPHS_LISTED = 10

_EVIDENCE_WORDS = {"log": "seen in the TF log", "profile": "seen in the profile",
                   "inferred": "inferred, not observed"}

_Reason = dict[str, Any]


class _OpType(NamedTuple):
    """What explaining one op type draws on, gathered once for both modes."""

    model: RunModel
    op_type: str
    dtypes: dict[str, Counter[str]]  # mode -> dtype -> executions
    # Each kernel is explained by the dtype it ran for: an int32 Transpose stays stock
    # while a float one runs _MklTranspose, and the mode's commonest dtype would say so
    # of both.
    kernel_dtypes: dict[tuple[str, str], Counter[str]]  # (mode, kernel) -> dtype -> executions
    # A trace's graph id -> its Python function's traces (``traces.traces_per_graph``);
    # None: worked out when a graph mode is explained.
    traces: Mapping[str, int] | None = None

    @classmethod
    def of(cls, model: RunModel, op_type: str, traces: Mapping[str, int] | None = None) -> _OpType:
        dtypes: dict[str, Counter[str]] = {"eager": Counter(), "graph": Counter()}
        kernel_dtypes: dict[tuple[str, str], Counter[str]] = {}
        ran = [("eager", e.kernel, e.dtype, e.executions)
               for e in model.eager_ops if e.op_type == op_type]
        ran += [("graph", op.kernel, op.dtype, op.executions)
                for op in model.graph_ops if op.op_type == op_type]
        for mode, kernel, dtype, executions in ran:
            dtypes[mode][dtype] += executions
            kernel_dtypes.setdefault((mode, kernel), Counter())[dtype] += executions
        return cls(model, op_type, dtypes, kernel_dtypes, traces)

    def dtype(self, mode: str) -> str:
        """The mode's commonest dtype ("" where none is recorded)."""
        return self.dtypes[mode].most_common(1)[0][0] if self.dtypes[mode] else ""

    def kernel_dtype(self, mode: str, kernel: str) -> str:
        own = self.kernel_dtypes.get((mode, kernel))
        return own.most_common(1)[0][0] if own else self.dtype(mode)


# ---------------------------------------------------------------- one kernel's reason


class _Kernel(NamedTuple):
    """One kernel an op type ran in a mode, with what its sentence says."""

    model: RunModel
    op_type: str
    mode: str
    use: KernelUse
    dtype: str

    @property
    def name(self) -> str:
        return self.use.name

    @property
    def how(self) -> str:
        return _EVIDENCE_WORDS[self.use.evidence]

    @property
    def notes(self) -> str:
        return "; ".join(self.use.notes)

    @property
    def onednn(self) -> bool:
        return is_onednn(self.use.name)


def _as_sentence(note: str) -> str:
    """A kernel's note (``rewritten by grappler ...``) as a sentence of its own, after a
    space; "" for no note."""
    return f" {note[:1].upper()}{note[1:].rstrip('.')}." if note else ""


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _no_kernel_ran(k: _Kernel) -> str | None:
    if k.name != REMOVED:
        return None
    return f"No kernel ran: {k.notes or 'grappler removed the op'} ({k.how})."


def _folded_into_a_constant(k: _Kernel) -> str | None:
    """A graph op grappler folded: its value was computed once, at optimisation, and a
    Const node feeds it; no kernel of its own runs (the headline says so too)."""
    if k.mode != "graph" or k.name != "Const" or k.op_type == "Const":
        return None
    how = k.notes or "constant-folded by grappler"
    return (f"No kernel of its own ran ({k.how}): {how.rstrip('.')}; the Const node that "
            "stands for it only hands out that value.")


def _kernel_unknown(k: _Kernel) -> str | None:
    if k.name != UNKNOWN:
        return None
    return f"Kernel {k.notes or 'unknown: the evidence in this run cannot decide it'}."


def _ran_fused(k: _Kernel) -> str | None:
    if not k.use.fused_into:
        return None
    return f"Ran inside the fused kernel {k.name} ({k.how}): {k.notes}."


def _fused_kernel(k: _Kernel) -> str | None:
    """A fused kernel is grappler's remapper's work, whatever renamed it afterwards: with
    oneDNN on, MklLayoutRewritePass only renames the remapper's ``_FusedMatMul`` node to its
    oneDNN form (``_MklNativeFusedMatMul``)."""
    if k.mode != "graph" or not is_fused(k.name):
        return None
    fused = (f"Runs the {'oneDNN ' if k.onednn else ''}fused kernel {k.name} ({k.how}): "
             f"grappler's remapper fused {k.op_type} with its neighbours into one node")
    if k.name.startswith("_MklNative"):
        return (fused + f", which TF's oneDNN graph pass (MklLayoutRewritePass) then renamed "
                        f"to its oneDNN form {k.name}.")
    return fused + "."


def _onednn_in_wrapper(k: _Kernel) -> str | None:
    """Eagerly, the graph pass rewrote the op's one-node function."""
    if not (k.onednn and k.mode == "eager" and "wrapped" in k.notes):
        return None
    return (f"Runs the oneDNN kernel {k.name} ({k.how}). TF dispatched it as {k.op_type} "
            f"(the 'Executing op' line, the profiler and Debugger V2 all show that name), "
            f"but every eager op runs as a one-node function, and TF's oneDNN graph pass "
            f"(MklLayoutRewritePass) rewrote that node to {k.name}; only the log's "
            f"'Instantiating kernel' line shows it.")


def _onednn_renamed(k: _Kernel) -> str | None:
    if not (k.onednn and k.mode == "eager" and "renamed" in k.notes):
        return None
    return (f"Runs the oneDNN kernel {k.name} ({k.how}): TF's eager oneDNN rewrite "
            f"(MklEagerOpRewrite) renamed it before dispatch.")


def _onednn_graph_pass(k: _Kernel) -> str | None:
    if not (k.onednn and k.mode == "graph"):
        return None
    version = f"TF {k.model.tensorflow_version}'s" if k.model.tensorflow_version else "TF's"
    return (f"Runs the oneDNN kernel {k.name} ({k.how}): {version} oneDNN graph pass "
            f"(MklLayoutRewritePass) rewrote the node after grappler optimised the graph."
            + _as_sentence(k.notes))


def _onednn_otherwise(k: _Kernel) -> str | None:
    if not k.onednn:
        return None
    return f"Runs the oneDNN kernel {k.name} ({k.how})." + _as_sentence(k.notes)


def _why_stock(k: _Kernel) -> str:
    model = k.model
    if model.onednn_enabled is False:
        return f"oneDNN custom operations are off in this run ({model.onednn_source})"
    if not model.tensorflow_version:  # no dump metadata: no rule table applies
        return "the run's TF version is unknown (no tfdbg dump), so no oneDNN rule says why"
    # "" is an output the dump gave no summary: in a dump, a non-float one (the modes
    # that record dtypes summarise float tensors only); with no dump, not recorded.
    summarised = any(d.traces or d.executions for d in model.dumps)
    dtype = k.dtype or (NON_FLOAT if summarised else "DT_FLOAT")
    return stock_reason(k.op_type, k.mode, model.tensorflow_version, dtype)


# Reductions grappler turns into an Identity where they change nothing.
_REDUCTIONS = frozenset({"Sum", "Mean", "Prod", "Max", "Min", "All", "Any"})


def _replaced_by_grappler(k: _Kernel) -> str | None:
    """A graph op whose node grappler swapped for another op (a Sum over no axes for an
    Identity, a division by a constant for a Mul): that op's kernel ran, and the op's own
    kernel choice (the stock reason of ``_stock``) is beside the point."""
    if (k.mode != "graph" or k.onednn or k.name in (REMOVED, UNKNOWN) or k.op_type.startswith("_")
            or canonical_op(k.name) == k.op_type):
        return None
    how = k.notes or f"grappler rewrote its node into {k.name}"
    why = ("; it reduced over no axes, or only over axes of size 1, so it changed nothing"
           if k.name == "Identity" and k.op_type in _REDUCTIONS else "")
    return f"Runs the stock kernel {k.name} ({k.how}) in place of {k.op_type}: {how}{why}."


def _stock(k: _Kernel) -> str:
    extra = _as_sentence(k.notes) if k.use.evidence != "inferred" else ""
    return f"Runs the stock kernel {k.name} ({k.how}): {_why_stock(k).rstrip('.')}.{extra}"


# The sentence of a kernel: the first that applies (None: not this one); the last always does.
_KERNEL_SENTENCES: tuple[Callable[[_Kernel], str | None], ...] = (
    _no_kernel_ran,
    _folded_into_a_constant,
    _kernel_unknown,
    _ran_fused,
    _fused_kernel,
    _onednn_in_wrapper,
    _onednn_renamed,
    _onednn_graph_pass,
    _onednn_otherwise,
    _replaced_by_grappler,
    _stock,
)


def _kernel_sentence(k: _Kernel) -> str:
    return next(text for sentence in _KERNEL_SENTENCES if (text := sentence(k)) is not None)


# ---------------------------------------------------------------- the parts of a mode


def _eager_mode(facts: _OpType, stats: ModeStats) -> _Reason:
    sites = call_sites(facts.model, facts.op_type, "eager", limit=_SITES_NAMED, snippets=False)
    where = "; ".join(f"{s['function']} ({s['file'].rsplit('/', 1)[-1]}:{s['line']}) "
                      f"x{s['count']}" for s in sites)
    why = eager_why(facts.model, facts.op_type, stats.executions)
    text = (f"{facts.op_type} ran eagerly {_times(stats.executions)}: "
            f"{'it was ' if why == EAGER_WHY_PYTHON else ''}{why}" + (f", mostly by {where}." if where else "."))
    return {"kind": "mode", "text": text, "call_sites": sites}


def _traced(n: int) -> str:
    return "traced once" if n == 1 else f"traced {n} times"


def _function_groups(graphs: list[dict[str, Any]], traced: Mapping[str, int]
                     ) -> list[tuple[str, str, int, int]]:
    """(function, graph, traces, calls) per tf.function, busiest first: a function traced
    many times (a graph per trace, all of one name) is named once, with its trace count:
    the ledger's (``traced``) where it knows the function, else the graphs that ran."""
    traces: dict[tuple[str, str], set[str]] = {}
    calls: Counter[tuple[str, str]] = Counter()
    for g in graphs:
        key = (g["function"] or g["graph"], g["graph"])
        ids = traces.setdefault(key, set())
        if g["function_graph_id"] not in ids:
            ids.add(g["function_graph_id"])
            calls[key] += g["function_calls"]
    return [(fn, graph, max([len(ids)] + [traced.get(i, 0) for i in ids]), calls[(fn, graph)])
            for (fn, graph), ids in traces.items()]


def _group_words(function: str, graph: str, traces: int, calls: int) -> str:
    """``graph G`` of tf.function F, with its traces and calls."""
    words = f"graph {graph}" + (f" of tf.function {function}" if function != graph else "")
    return f"{words} ({_traced(traces)}, {_called(function, calls)})"


def _called(function: str, calls: int) -> str:
    """How often a function was called. No call recorded is not "called 0 times" beside
    the executions of its ops: tf.data runs its functions (``Dataset.map``'s) itself, per
    element, and no Python call of them is recorded."""
    if calls:
        return "called once" if calls == 1 else f"called {calls} times"
    if function.startswith(DATASET_GRAPHS):
        return "run by tf.data for each element, not called from Python: the dump records no call of it"
    return "no call of it recorded"


def _graph_mode(facts: _OpType, stats: ModeStats) -> _Reason:
    graphs = function_graphs(facts.model, facts.op_type)
    traced = facts.traces if facts.traces is not None else traces_per_graph(run_ledger(facts.model))
    groups = _function_groups(graphs, traced)
    where = "; ".join(_group_words(*g) for g in groups[:_GRAPHS_NAMED])
    text = (f"{facts.op_type} ran {_times(stats.executions)} inside tf.function graphs"
            + (f": {where}." if where else ".")
            + " A graph op runs each time its function is called; " + _python_ran(groups))
    return {"kind": "mode", "text": text, "graphs": graphs[:_GRAPHS_LISTED]}


def _python_ran(groups: list[tuple[str, str, int, int]]) -> str:
    """How often Python ran the functions, as their traces say; with no function known (no
    dump names the graphs that ran the op), only what holds of every function."""
    if not groups:
        return ("Python runs a function only to trace it (which functions held this op, and "
                "their traces, take a tfdbg dump to tell).")
    if all(traces == 1 for _f, _g, traces, _c in groups):
        return "Python ran only once, to trace it."
    return "Python ran the function once per trace (tb-opmode functions says why it traced again)."


def _mode_reasons(facts: _OpType, mode: str, stats: ModeStats) -> list[_Reason]:
    """How the op type ran in the mode, and where from."""
    return [(_eager_mode if mode == "eager" else _graph_mode)(facts, stats)]


def _kernel_reasons(facts: _OpType, mode: str, stats: ModeStats) -> list[_Reason]:
    """One reason per kernel the op type ran in the mode, the busiest first."""
    out = []
    for use in sorted(stats.kernels, key=lambda k: -k.executions):
        kernel = _Kernel(facts.model, facts.op_type, mode, use,
                         facts.kernel_dtype(mode, use.name))
        text = _kernel_sentence(kernel)
        # Where executions split, each reason says whose it is: "24 of 40: No kernel ran"
        # beside "16 of 40: Runs _MklTranspose" is a split, not a contradiction.
        if len(stats.kernels) > 1:
            text = f"{use.executions} of {stats.executions}: {text}"
        out.append({"kind": "kernel", "kernel": use.name, "evidence": use.evidence,
                    "executions": use.executions, "text": text})
    return out


def _unfused(kernels: list[KernelUse]) -> bool:
    """Whether no kernel of the op type was fused or removed."""
    return not any(k.fused_into or kernel_class(k.name) == "fused" or k.name == REMOVED
                   for k in kernels)


def _fusion_blocked(model: RunModel, op_type: str, mode: str, kernels: list[KernelUse],
                    dtype: str) -> str:
    """Why a graph op that grappler's remapper can fuse ran unfused, when the
    likely reason is the dump itself; else "".

    tfdbg instruments graphs at trace time: every traced tensor gets a debug op
    as an extra consumer, and the remapper fuses a pattern only when its
    intermediate tensors have no other consumer. Measured on TF 2.21 with oneDNN on
    (a Dense(relu)+Dense model, fit and predict, kernels from TF's log): without the
    dump the MatMuls run _MklNativeFusedMatMul; with FULL_HEALTH or NO_TENSOR none
    is fused, _MklMatMul, BiasAdd and Relu run instead."""
    traced = any(d.traces for d in model.dumps)
    if mode != "graph" or not model.tensorflow_version or not traced or not _unfused(kernels):
        return ""
    states = (True, False) if model.onednn_enabled is None else (model.onednn_enabled,)
    fused = sorted({r.kernel for state in states
                    for r in matching_rules(op_type, "graph", model.tensorflow_version,
                                            dtype or "DT_FLOAT", onednn=state)
                    if r.mechanism == "remapper-fusion" and is_onednn(r.kernel) == state})
    if not fused:
        return ""
    example = " or ".join(_MEASURED_FUSION[state] for state in states)
    return (f"No fusion: TF {model.tensorflow_version} can fuse {op_type} with its neighbours "
            f"into {' or '.join(fused)}, but grappler's remapper fuses only when the intermediate "
            f"tensors have no other consumer, and this run's "
            f"tfdbg dump (enable_dump_debug_info) gave every traced tensor one, a debug op. "
            f"Without the dump, this op may run fused (measured on TF 2.21: a Dense+ReLU model "
            f"runs {example}).")


# What a Dense+ReLU model ran, measured on TF 2.21, by oneDNN state (the note names only
# the kernels of the run's own state).
_MEASURED_FUSION = {
    True: ("_MklNativeFusedMatMul without the dump, _MklMatMul, BiasAdd and Relu with it, "
           "oneDNN on"),
    False: "_FusedMatMul where oneDNN is off",
}


def _instrumentation_reasons(facts: _OpType, mode: str, stats: ModeStats) -> list[_Reason]:
    """What kept the remapper from fusing the op type: the dump's debug ops."""
    blocked = _fusion_blocked(facts.model, facts.op_type, mode, stats.kernels, facts.dtype(mode))
    return [{"kind": "instrumentation", "text": blocked}] if blocked else []


def _version_source(model: RunModel) -> str:
    """Where the run's TF version was read: a dump's metadata, else the manifest of
    ``tb-opmode record`` (``analyze.recording``); "" where neither gave it."""
    if any(d.tensorflow_version for d in model.dumps):
        return " (from the dump's metadata)"
    recorded = model.recorded
    if recorded is not None and recorded.tensorflow_version == model.tensorflow_version:
        return " (from the manifest of tb-opmode record)"
    return ""


def _version_reasons(facts: _OpType, mode: str, stats: ModeStats) -> list[_Reason]:
    """Which rules the reasons come from: the run's TF version, and oneDNN's setting."""
    model = facts.model
    if not model.tensorflow_version:
        return []
    onednn = "unknown" if model.onednn_enabled is None else "on" if model.onednn_enabled else "off"
    source = f" ({model.onednn_source})" if model.onednn_source else ""
    return [{"kind": "version", "text": (
        f"Rules as of TF {model.tensorflow_version}{_version_source(model)}; "
        f"oneDNN {onednn}{source}.")}]


# The parts of a mode's explanation, in the order the paragraph reads them.
_PARTS: tuple[Callable[[_OpType, str, ModeStats], list[_Reason]], ...] = (
    _mode_reasons,
    _kernel_reasons,
    _instrumentation_reasons,
    _version_reasons,
)


def explain(model: RunModel, op_type: str, traces: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Per mode: explanation (a paragraph) and reasons (structured). ``traces``:
    ``traces.traces_per_graph`` of the run's ledger, made once by a caller explaining many op types."""
    facts = _OpType.of(model, op_type, traces)
    row = model.op_types[op_type]
    out: dict[str, Any] = {}
    for mode in ("eager", "graph"):
        stats = row.mode(mode)
        if not stats.executions:
            out[mode] = {"explanation": f"{op_type} did not run in {mode} mode in this run.",
                         "reasons": []}
            continue
        reasons = _said_once([reason for part in _PARTS for reason in part(facts, mode, stats)],
                             model.onednn_source)
        out[mode] = {"explanation": " ".join(r["text"] for r in reasons), "reasons": reasons}
    return out


def _said_once(reasons: list[_Reason], source: str) -> list[_Reason]:
    """The version note names oneDNN's source only if no reason before it did (the kernel
    reason of a stock kernel says why oneDNN is off, a paragraph need not say it twice)."""
    said = f" ({source})"
    if not source or not any(said in r["text"] for r in reasons if r["kind"] != "version"):
        return reasons
    return [{**r, "text": r["text"].replace(said, " (as above)")} if r["kind"] == "version" else r
            for r in reasons]
