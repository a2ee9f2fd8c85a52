"""The run's answer in plain words, before any table: which op types ran both eagerly and
in graphs, which of them ran a different kernel by mode, where "oneDNN kernels run in
graphs only" is false, and where it only seems true (the op type ran in one mode only).

In: op types of the summary contract (``OpTypeDoc``) or rows of the tab's table
(``payloads.Row``, the same keys plus more): read through ``Mapping`` so that both pass.
Out: ``kernel_kind`` and ``folded``, what a kernel's name says of it (the tab colours by
them); ``kernels_differ`` (why the kernels differ by mode, "" when they do not), which the
tab's rows and this module's sentences share, so that the terminal and the tab never
disagree; ``both_modes`` (the op types that ran in both modes, in the tab's glance
order); ``premises`` and ``one_mode_only``, the lines under the headline;
``glance_lines``, the sentences ``summary`` prints under a run's first line.
"""
from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..vocab import KIND_ONEDNN, KIND_REMOVED, KIND_STOCK, KIND_UNKNOWN, REMOVED, UNKNOWN, is_onednn

__all__ = ["kernel_kind", "folded", "simplified", "kernels_differ", "both_modes", "premises", "one_mode_only",
           "uncounted_line", "glance_lines", "MAX_NAMES", "MAX_ONE_MODE"]

# Op types named in the sentence of all that ran in both modes (the tab lists as many).
MAX_NAMES = 100
# Op types named by ``one_mode_only``.
MAX_ONE_MODE = 5
# Width the terminal sentences are wrapped to.
_WIDTH = 100

_Op = Mapping[str, Any]


# The kinds of a kernel that ran (not removed by grappler, not unknown).
_RAN_KINDS = (KIND_ONEDNN, KIND_STOCK)


def kernel_kind(name: str) -> str:
    """``removed`` (grappler took the op out: no kernel ran), ``unknown`` (no kernel named,
    or the evidence cannot decide), else ``onednn`` or ``stock``, fused or not."""
    if name == REMOVED:
        return KIND_REMOVED
    if not name or name == UNKNOWN:
        return KIND_UNKNOWN
    return KIND_ONEDNN if is_onednn(name) else KIND_STOCK


def folded(op_type: str, name: str) -> bool:
    """Constant-folded by grappler: the op's value came from a Const, computed once."""
    return name == "Const" and op_type != "Const"


def simplified(op_type: str, name: str) -> bool:
    """Replaced by grappler with an Identity: the op changed nothing (a Sum over no axes,
    or over axes of size 1), a graph simplification, not another kernel for the op."""
    return name == "Identity" and op_type != "Identity"


def _ran(op_type: str, mode: Mapping[str, Any]) -> set[str]:
    """Names of the kernels that really ran in a mode: not removed, folded, replaced by an
    Identity or unknown."""
    return {k["name"] for k in mode["kernels"]
            if kernel_kind(k["name"]) in _RAN_KINDS and not folded(op_type, k["name"])
            and not simplified(op_type, k["name"])}


def _names(ran: set[str]) -> str:
    return ", ".join(sorted(ran)) or "no kernel"


def kernels_differ(op: _Op) -> str:
    """Why the kernels differ between the modes ("" when they do not): the kernels that ran
    (ignoring removed, folded, Identity-replaced and unknown executions) differ; a mode where no kernel is
    named is unknown, which is not a difference."""
    eager, graph = op["eager"], op["graph"]
    if not eager["executions"] or not graph["executions"]:
        return ""
    ran_e, ran_g = _ran(op["op_type"], eager), _ran(op["op_type"], graph)
    if not ran_e or not ran_g or ran_e == ran_g:   # an unknown kernel does not differ
        return ""
    both = f"eager ran {_names(ran_e)}; graph ran {_names(ran_g)}"
    onednn_e, onednn_g = any(map(is_onednn, ran_e)), any(map(is_onednn, ran_g))
    if onednn_e != onednn_g:
        return f"oneDNN only {'eagerly' if onednn_e else 'in graphs'}: {both}"
    return both


def _total(op: _Op) -> int:
    return int(op["eager"]["executions"]) + int(op["graph"]["executions"])


def _onednn(op: _Op) -> bool:
    return any(k["onednn"] for mode in (op["eager"], op["graph"]) for k in mode["kernels"])


def both_modes(ops: Iterable[_Op]) -> list[_Op]:
    """The op types that ran both eagerly and in a graph: those whose kernel differs by mode
    first, then those that ran a oneDNN kernel, then by executions, then by name."""
    picked = [op for op in ops if op["eager"]["executions"] and op["graph"]["executions"]]
    return sorted(picked, key=lambda op: (not kernels_differ(op), not _onednn(op),
                                          -_total(op), op["op_type"]))


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _how_known(kernel: dict[str, Any]) -> str:
    """Words for a kernel no evidence observed: said where the sentence states it ran."""
    return ", inferred from TF's rules (nothing this run left names it)" \
        if kernel.get("evidence") == "inferred" else ""


def premises(ops: Sequence[_Op]) -> list[str]:
    """Where "oneDNN kernels run in graphs only" is false in this run: an op type that
    ran a oneDNN kernel eagerly too, said once per op type, most executed first."""
    out = []
    for op in sorted(ops, key=lambda op: (-_total(op), op["op_type"])):
        eager = [k for k in op["eager"]["kernels"] if k["onednn"]]
        graph_onednn = any(k["onednn"] for k in op["graph"]["kernels"])
        if eager and graph_onednn:
            k = max(eager, key=lambda k: k["executions"])
            out.append(f"{op['op_type']} also ran `{k['name']}` eagerly, "
                       f"{_times(k['executions'])}{_how_known(k)}: oneDNN kernels are not graph-only.")
    return out


def one_mode_only(ops: Iterable[_Op]) -> list[str]:
    """Where oneDNN ran in one mode only because the op type ran in that mode only (the
    seed user's "_MklMatMul only in graphs": no MatMul ran eagerly at all), most executed
    first, at most ``MAX_ONE_MODE`` op types and how many more."""
    found = []
    for op in ops:
        for mode, other, words in (("graph", "eager", ("in graphs", "eagerly")),
                                   ("eager", "graph", ("eagerly", "in a graph"))):
            onednn = [k for k in op[mode]["kernels"] if k["onednn"]]
            if onednn and not op[other]["executions"]:
                k = max(onednn, key=lambda k: k["executions"])
                found.append((-op[mode]["executions"], op["op_type"], k["name"], k["executions"],
                              _how_known(k), words))
    lines = [f"{name} ran only {where} (`{kernel}` {_times(n)}{how}): no {name} ran {elsewhere}, "
             "so there is no kernel to compare it with."
             for _total, name, kernel, n, how, (where, elsewhere) in sorted(found)[:MAX_ONE_MODE]]
    if len(found) > MAX_ONE_MODE:
        lines.append(f"... and {len(found) - MAX_ONE_MODE} more op type(s) that ran oneDNN in one mode only.")
    return lines


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, _WIDTH, initial_indent="  ", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False)


def uncounted_line(uncounted: int) -> list[str]:
    """What the counts leave out, when the dump traced executions of ops its ``.graphs``
    file does not define: the answer covers the rest only."""
    if not uncounted:
        return []
    return [f"{uncounted:,} graph execution(s) are in no count: the dump traced them, but its "
            ".graphs file does not define their ops (cut, or still being written); the "
            "answer covers the rest only."]


def glance_lines(ops: Sequence[_Op], uncounted: int = 0) -> list[str]:
    """The run's answer for a terminal, wrapped, each line indented under the run's first:
    what ran in both modes, whose kernel differs and why, what the counts leave out
    (``uncounted`` graph executions), and the premises."""
    both = both_modes(ops)
    lines = _wrapped(_headline(both, "among what was counted, " if uncounted else ""))
    for text in uncounted_line(uncounted) + premises(both) + one_mode_only(ops):
        lines += _wrapped(text)
    return lines


def _headline(both: list[_Op], qualifier: str) -> str:
    """The sentence of what ran in both modes and whose kernel differs, and why."""
    if not both:
        return f"in short: {qualifier}no op type ran both eagerly and in a tf.function graph."
    names = [op["op_type"] for op in both]
    listed = ", ".join(names[:MAX_NAMES]) + (", ..." if len(names) > MAX_NAMES else "")
    differ = [(name, why) for name, why in zip(names, map(kernels_differ, both)) if why]
    text = f"in short: {qualifier}{len(both)} op type(s) ran both eagerly and in graphs ({listed}); "
    if differ:
        return text + f"{len(differ)} ran a different kernel by mode: " + "; ".join(
            f"{name} ({why})" for name, why in differ) + "."
    return text + "each ran the same kernel in both modes, where the kernel is known."
