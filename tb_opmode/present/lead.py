"""The answer to "why did this op run in this mode, with this kernel?", in plain words, first.

In: a ``RunModel`` (for the call sites and graphs of ``analyze.explain``) and a row of
the op table (``payloads.Row``: the counts and kernels the tab's chips show). Out:
``lead``: ``payloads.Lead``, one sentence per mode (how many times, called from where,
which kernels, split where the executions split) and one about the kernels of the two
modes; ``function_words``: a tf.function's name as its Python function reads.

Each sentence is built from the row itself, so that no sentence says other than a chip
does; how TF decided (rename lists, ``__wrapped__`` functions, the oneDNN graph pass's
citations) stays in the explanation one click below. Decisions are ordered lists of
named rules: which library called an eager op (``CALLERS``), what a group of
executions ran (``_GROUP_WORDS``), what the kernels of the two modes say
(``_KERNEL_RULES``).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..analyze.call_sites import eager_why
from ..analyze.explain import call_sites, function_graphs
from ..analyze.recording import counted_eager_lines
from ..analyze.rules import stock_reason
from ..model import RunModel
from ..vocab import EAGER, GRAPH, KIND_ONEDNN, KIND_REMOVED, KIND_STOCK, KIND_UNKNOWN
from .glance import simplified
from .payloads import Kernel, Lead, Row, RowMode

__all__ = ["lead", "function_words", "Caller", "CALLERS", "caller_label"]

# ---------------------------------------------------------------- who called it eagerly


class Caller(NamedTuple):
    """A named rule: a call site whose file matches ``path`` (and, when given, one of
    whose frames on the way matches ``via``) is ``label``."""

    name: str
    path: re.Pattern[str]
    via: re.Pattern[str] | None
    label: str


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text.replace("/", r"[/\\]"))


# The first rule that matches names the caller; a site none matches is named by its
# function and file.
CALLERS: tuple[Caller, ...] = (
    Caller("keras tensorboard histograms", _re("tensorboard/plugins/histogram/"),
           _re("keras/(src/)?callbacks/tensorboard"),
           "the Keras TensorBoard callback's histograms (`histogram_freq`)"),
    Caller("tensorboard histograms", _re("tensorboard/plugins/histogram/"), None,
           "TensorBoard histogram summaries"),
    Caller("tensorboard", _re("tensorboard/"), None, "TensorBoard summaries"),
    Caller("keras initializers", _re("keras/(src/)?initializers/"), None, "Keras initializers"),
    Caller("keras optimizers", _re("keras/(src/)?optimizers/"), None, "the Keras optimizer"),
    Caller("keras callbacks", _re("keras/(src/)?callbacks/"), None, "Keras callbacks"),
    Caller("keras metrics", _re("keras/(src/)?metrics/"), None, "Keras metrics"),
    Caller("keras", _re("/(tf_)?keras/"), None, "Keras"),
    Caller("tf.data", _re("tensorflow/python/data/"), None, "tf.data"),
)

_THIRD_PARTY = _re("/(site-packages|dist-packages)/")


def _base(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def caller_label(site: dict[str, Any]) -> str:
    """Who issued a call site's eager executions, in a user's words."""
    frames = [site["file"]] + [f["file"] for f in site.get("via") or []]
    for rule in CALLERS:
        if rule.path.search(site["file"]) and (
                rule.via is None or any(rule.via.search(f) for f in frames)):
            return rule.label
    if not _THIRD_PARTY.search(site["file"]):
        return f"your code (`{site['function']}` in {_base(site['file'])})"
    return f"`{site['function']}` in {_base(site['file'])}"


_NO_SITES = "no call sites: the run has no tfdbg dump with stack frames"
# A run whose eager lines ``tb-opmode record``'s job counted: what it did not see.
_NO_SITES_RECORDED = ("no call sites: the recording counts the ops that Python's op wrappers "
                      "dispatch; TF issued these itself, as it does a constant made from a "
                      "Python value")


def _callers(model: RunModel, op_type: str, executions: int) -> str:
    """``92 from X, 10 from Y``, busiest first; what no site accounts for, said."""
    sites = call_sites(model, op_type, EAGER, limit=None, snippets=False, via=True)
    groups: Counter[str] = Counter()
    for site in sites:
        groups[caller_label(site)] += site["count"]
    words = [f"{n} from {label}" for label, n in
             sorted(groups.items(), key=lambda pair: (-pair[1], pair[0]))]
    rest = executions - sum(groups.values())
    if not sites:
        return f" ({_NO_SITES_RECORDED if counted_eager_lines(model) else _NO_SITES})"
    if rest > 0:
        words.append(f"{rest} with no call site recorded")
    return " — " + ", ".join(words)


# ---------------------------------------------------------------- which tf.function

# tf.functions Keras makes for fit/evaluate/predict, by the name their graph carries.
_KERAS_STEPS = (
    ("Keras train step", re.compile(r"^(train_function|multi_step_on_iterator|"
                                    r"one_step_on_(data|iterator)|train_step)$")),
    ("Keras test step", re.compile(r"^(test_function|test_step)$")),
    ("Keras predict step", re.compile(r"^(predict_function|predict_step)$")),
)
_INFERENCE = re.compile(r"^__(inference|forward|backward)_(.*?)(_\d+)?$")


def function_words(name: str) -> str:
    """A tf.function's graph name as its Python function reads: ``__inference_step_123``
    is ``step``; Keras's own are ``Keras train step`` (or test, predict)."""
    match = _INFERENCE.match(name)
    bare = match.group(2) if match else name
    return next((words for words, pattern in _KERAS_STEPS if pattern.match(bare)), bare)


def _function_phrase(name: str, calls: int) -> str:
    """``the Keras train step (`multi_step_on_iterator`, called 4 times)``, ``step (...)``."""
    words = function_words(name)
    called = (", called once" if calls == 1 else f", called {calls} times") if calls else ""
    if words != name and words.startswith("Keras"):
        return f"the {words} (`{name}`{called})"
    return f"`{words}`" + (f" ({called[2:]})" if called else "")


def _where_in_graphs(model: RunModel, op_type: str) -> str:
    """``inside Keras train step (called 4 times)``; a few functions by executions."""
    per_function: Counter[str] = Counter()
    # per Python function, the calls of each of its traces (a function traced 12 times,
    # each trace called once, was called 12 times)
    calls: dict[str, dict[str, int]] = {}
    for g in function_graphs(model, op_type):
        name = g["function"] or g["graph"]
        per_function[name] += g["executions"]
        calls.setdefault(name, {})[g["function_graph_id"] or g["graph_id"]] = g["function_calls"] or 0
    if not per_function:
        return "inside tf.function graphs"
    named = [_function_phrase(name, sum(calls[name].values()))
             for name, _n in per_function.most_common(3)]
    more = f" and {len(per_function) - 3} more" if len(per_function) > 3 else ""
    return "inside " + ", ".join(named) + more


# ---------------------------------------------------------------- what the executions ran


def _kind_of(op_type: str, k: Kernel) -> str:
    if k["folded"]:
        return "folded"
    if simplified(op_type, k["name"]):
        return "simplified"
    if k.get("fused_into"):
        return "fused"
    return k["kind"]


# What a group of executions ran, by its kind: ``16 ran oneDNN `_MklTranspose```.
_GROUP_WORDS: dict[str, Callable[[int, str], str]] = {
    KIND_ONEDNN: lambda n, name: f"{n} ran oneDNN `{name}`",
    KIND_STOCK: lambda n, name: f"{n} ran stock `{name}`",
    "fused": lambda n, name: f"{n} ran inside the fused kernel `{name}`",
    "folded": lambda n, _name: f"{n} ran no kernel (grappler folded them into a constant)",
    "simplified": lambda n, _name: f"{n} ran as an Identity (grappler simplified them: they changed nothing)",
    KIND_REMOVED: lambda n, _name: f"{n} ran no kernel (grappler removed them)",
    KIND_UNKNOWN: lambda n, _name: f"{n} with the kernel unknown",
}


def _groups(op_type: str, stats: RowMode) -> list[str]:
    kernels = sorted(stats["kernels"], key=lambda k: (-k["executions"], k["name"]))
    kinds = Counter((_kind_of(op_type, k), k["name"]) for k in kernels)
    # One kernel can be two chips, seen in the log for some executions and inferred for
    # others (ops of one type the log shows, and ops it does not): each group says which,
    # as the chips do, or "48 ran stock `Mul`, ..., 8 ran stock `Mul`" reads as a slip.
    return [_GROUP_WORDS[_kind_of(op_type, k)](k["executions"], k["name"])
            + (f" [{k['evidence']}]" if kinds[(_kind_of(op_type, k), k["name"])] > 1 else "")
            for k in kernels]


def _count(stats: RowMode) -> str:
    return f"{'at least ' if stats.get('lower_bound') else ''}{stats['executions']}×"


def _ran(op_type: str, stats: RowMode) -> str:
    """``; 16 ran oneDNN `_MklTranspose`, 24 ran no kernel (...)`` where kernels split."""
    groups = _groups(op_type, stats)
    return "; " + ", ".join(groups) if len(groups) > 1 else ""


def _eager(model: RunModel, row: Row) -> str:
    stats = row["eager"]
    if not stats["executions"]:
        return "Eager: did not run eagerly."
    return (f"Eager, {_count(stats)}: {eager_why(model, row['op_type'], stats['executions'])}"
            f"{_callers(model, row['op_type'], stats['executions'])}{_ran(row['op_type'], stats)}.")


def _graph(model: RunModel, row: Row) -> str:
    stats = row["graph"]
    if not stats["executions"]:
        if "uncounted" in stats:
            seen = stats["uncounted"]
            return (f"Graph: ran ({seen['profile_events']} profiler events, "
                    f"{seen['log_executions']} log lines), but the dump did not count it.")
        return "Graph: did not run in a tf.function."
    return (f"Graph, {_count(stats)}: {_where_in_graphs(model, row['op_type'])}"
            f"{_ran(row['op_type'], stats)}.")


# ---------------------------------------------------------------- the kernels of both modes


def _mode(row: Row, mode: str) -> RowMode:
    return row["eager"] if mode == EAGER else row["graph"]


@dataclass(frozen=True)
class _Both:
    """What the kernel sentence reads: the kernels that ran in each mode, by kind."""

    model: RunModel
    row: Row

    def ran(self, mode: str) -> list[Kernel]:
        return [k for k in _mode(self.row, mode)["kernels"]
                if k["kind"] in (KIND_ONEDNN, KIND_STOCK) and not k["folded"]
                and not simplified(self.row["op_type"], k["name"])]

    def names(self, mode: str) -> set[str]:
        return {k["name"] for k in self.ran(mode)}

    def words(self, mode: str) -> str:
        # A kernel once, however many chips (evidences) it has, busiest first.
        ran: Counter[tuple[bool, str]] = Counter()
        for k in self.ran(mode):
            ran[(k["onednn"], k["name"])] += k["executions"]
        return ", ".join(f"{'oneDNN' if onednn else 'stock'} `{name}`"
                         for (onednn, name), _n in ran.most_common()) or "no kernel"


def _no_kernel_ran(b: _Both) -> str | None:
    if b.names(EAGER) or b.names(GRAPH):
        return None
    return "Kernel: none ran that the evidence names (see the chips and the why below)."


def _one_mode(b: _Both) -> str | None:
    modes = [m for m in (EAGER, GRAPH) if b.names(m)]
    if len(modes) != 1:
        return None
    other = GRAPH if modes[0] == EAGER else EAGER
    where = "eagerly" if modes[0] == EAGER else "in graphs"
    if _mode(b.row, other)["executions"]:
        return f"Kernel: {b.words(modes[0])} {where}; in {other} mode no kernel ran that is named."
    if "uncounted" in _mode(b.row, other):  # it ran there, in no count of the dump
        return f"Kernel: {b.words(modes[0])} {where}; in graphs {_uncounted_kernels(b.row)}."
    return f"Kernel: {b.words(modes[0])}, {where} only."


def _uncounted_kernels(row: Row) -> str:
    """What the profile saw of graph executions the dump did not count."""
    seen = ", ".join(f"`{k['name']}`" for k in row["graph"]["uncounted"]["kernels"])
    return (f"it ran too, uncounted by the dump (the profile saw {seen})" if seen
            else "it ran too, uncounted by the dump")


def _differs(b: _Both) -> str | None:
    if not b.row["kernel_differs"]:
        return None
    return (f"Kernel differs by mode: eagerly {b.words(EAGER)}; "
            f"in graphs {b.words(GRAPH)}.")


def _stock_why(b: _Both) -> str:
    model = b.model
    if model.onednn_enabled is False:
        return " (oneDNN's custom kernels are off in this run)"
    if not model.tensorflow_version:
        return ""
    reason = stock_reason(b.row["op_type"], GRAPH, model.tensorflow_version, "DT_FLOAT")
    return " (no oneDNN kernel exists for it)" if reason.startswith("No oneDNN kernel") else ""


def _same_stock(b: _Both) -> str | None:
    if any(k["onednn"] for m in (EAGER, GRAPH) for k in b.ran(m)):
        return None
    return f"Kernel: {b.words(GRAPH)} in both modes{_stock_why(b)}."


def _same_onednn(b: _Both) -> str | None:
    wrapped = any("wrapped" in note for k in b.ran(EAGER) for note in k.get("notes", []))
    tail = (f" — eagerly too, though TF's 'Executing op' log line, the profiler and "
            f"Debugger V2 name it `{b.row['op_type']}`") if wrapped else ""
    return f"Kernel: {b.words(GRAPH)} in both modes{tail}."


# The kernel sentence: the first rule that applies (None: not this one); the last always does.
_KERNEL_RULES: tuple[Callable[[_Both], str | None], ...] = (
    _no_kernel_ran,
    _one_mode,
    _differs,
    _same_stock,
    _same_onednn,
)


def _kernel(model: RunModel, row: Row) -> str:
    both = _Both(model, row)
    return next(text for rule in _KERNEL_RULES if (text := rule(both)) is not None)


def lead(model: RunModel, row: Row) -> Lead:
    """The answer for one op type, one plain sentence per mode and one on its kernels."""
    return {"eager": _eager(model, row), "graph": _graph(model, row),
            "kernel": _kernel(model, row)}
