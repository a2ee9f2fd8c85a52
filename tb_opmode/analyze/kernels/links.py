"""The links from a dump's graph ops to the nodes TF's log and profile saw run.

In: a ``RunModel``'s dumps (their graphs' op names), logs (the executed nodes and
tfdbg's debug nodes) and profiles (``<node>:<kernel>`` events). Out: per traced op
output the ``LogLink`` its debug node gives, the executed nodes with their kernel, the
ops whose debug nodes a profile saw, and the ``Verdict`` a link decides.

The log's link is exact: tfdbg's ``DebugIdentityV2`` node names the dump's (graph id,
op name, slot) in its attributes, and reads (through ``DebugNumericSummaryV2``) the
tensor that really carries the op's output. When that tensor comes from another node,
grappler rewrote the op: constant folded it, removed it (an identity Transpose) or
fused it. A profile's events are matched to dump ops by the longest ``/``-suffix of the
node name (executor names carry the prefixes of inlined calls,
``StatefulPartitionedCall/...``).
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Callable, NamedTuple, Optional

from ...model import OpKernel, RunModel
from ...read.textlog import LogFacts
from ...read.tfdbg import NO_TENSOR
from ...vocab import DEBUG_PREFIX, REMOVED
from ..nodes import canonical_op, origin_name, suffixes
from ..tally import tally
from .remapper import FUSABLE, is_fused
from .tensors import strip_slot
from .verdict import Verdict

__all__ = ["LogLink", "TracedOpResolver", "NodeKernels", "traced_op_resolver", "TracedOpIndex",
           "log_links", "node_kernels", "profiled_debug_ops", "suffix_index",
           "longest_defined_suffix", "LINK_RULES",
           "link_verdict", "fused_node_note"]

# (shortened op name from a debug node's attribute, the debug node's name) -> dump op name.
TracedOpResolver = Callable[[str, str], str]
# Executed node name -> (kernel, dtype, evidence): what ``node_kernels`` answers.
NodeKernels = dict[str, tuple[str, str, str]]

_SLASH = re.compile("/")


def traced_op_resolver(names: Mapping[str, object]) -> TracedOpResolver:
    """The function that names the dump op a debug node traces, among one graph's
    ``names``: built once per graph, with the index of the names it resolves through."""
    return TracedOpIndex(names).resolve


class TracedOpIndex:
    """One graph's op names, indexed by the head and tail that TF's log keeps of them.

    TF's log shortens string attributes of 80 characters or more to ``head...tail``
    (the first and the last ten); the debug identity node's own name is never
    shortened and is ``<prefix><op name>/DebugIdentityV2_N`` or
    ``<prefix><scope>/DebugIdentityV2_N``, which picks among the ops the shortened
    name fits. The ops that fit a (head, tail) are one lookup, and which of several
    the identity names is decided from the runs of components of its name: never a
    scan of the graph's names, so that resolving a log's debug nodes is linear in
    their number."""

    def __init__(self, names: Mapping[str, object]) -> None:
        self.names = names
        # (len(head), len(tail)) -> (head, tail) -> the names that start and end so;
        # built for the lengths asked (TF's log has one pair).
        self._fitting: dict[tuple[int, int], dict[tuple[str, str], list[str]]] = {}

    def resolve(self, pattern: str, ident: str) -> str:
        """The dump op the debug identity node ``ident`` traces, from its ``op_name``
        attribute ``pattern``: "" if none or several fit."""
        if pattern in self.names or "..." not in pattern:
            return pattern
        head, _, tail = pattern.partition("...")
        hits = self._fitting_names(head, tail)
        if len(hits) > 1:
            scope = ident.rpartition("/")[0]
            named = [n for n in _component_runs(ident, head, tail) | {scope}
                     if n in self.names and n.startswith(head) and n.endswith(tail)]
            hits = [n for n in named if scope == n or scope.endswith("/" + n)] or named
        return hits[0] if len(hits) == 1 else ""

    def _fitting_names(self, head: str, tail: str) -> list[str]:
        lengths = (len(head), len(tail))
        index = self._fitting.get(lengths)
        if index is None:
            index = self._fitting[lengths] = _by_head_and_tail(self.names, *lengths)
        return index.get((head, tail), [])


def _by_head_and_tail(names: Iterable[str], head: int, tail: int) -> dict[tuple[str, str], list[str]]:
    """(first ``head`` characters, last ``tail`` characters) -> the names: a name
    shorter than either is keyed by itself there, which no head or tail of that
    length equals, as ``startswith``/``endswith`` would not match it."""
    index: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name in names:
        index[(name[:head], name[max(len(name) - tail, 0):])].append(name)
    return index


def _component_runs(ident: str, head: str, tail: str) -> set[str]:
    """The runs of whole components of ``ident`` that a ``/`` follows (the names ``n``
    for which ``"/" + n + "/"`` is in ``"/" + ident``), those that begin with ``head``
    and end with ``tail``."""
    path = "/" + ident
    cuts = [m.start() for m in _SLASH.finditer(path)]
    starts = [a + 1 for a in cuts if path.startswith(head, a + 1)]
    ends = [b for b in cuts if path.endswith(tail, 0, b)]
    return {path[a:b] for a in starts for b in ends if a <= b}


class LogLink(NamedTuple):
    """What the log says of one traced dump op output, through tfdbg's debug node."""

    expected: str                       # the op's own node name, had it run
    ran: tuple[str, str] | None         # (kernel, dtype) of that node in the op's graph, if it ran
    producer: str                       # the node whose tensor the debug node read ("": NO_TENSOR)
    producer_kernel: str
    dtype: str
    # Whether ``ran`` holds the nodes of the steps the op's graph ran in (executor lines),
    # not only the kernels the log instantiated, which leave out an argument's _Arg.
    per_step: bool = True


def log_links(model: RunModel) -> dict[tuple[str, str, int], LogLink]:
    """(graph id, op name, slot) -> the link from the debug node that traced it."""
    graph_ops: dict[str, dict[str, object]] = {}
    for dump in model.dumps:
        for graph_id, graph in dump.graphs.items():
            graph_ops.setdefault(graph_id, {}).update(graph.ops)
    resolvers: dict[str, TracedOpResolver] = {}
    links: dict[tuple[str, str, int], LogLink] = {}
    for log in model.logs:
        for ident, (ctx, pattern, slot) in log.debug_targets.items():
            resolve = resolvers.get(ctx)
            if resolve is None:
                resolve = resolvers[ctx] = traced_op_resolver(graph_ops.get(ctx, {}))
            op_name = resolve(pattern, ident)
            if op_name:
                links[(ctx, op_name, slot)] = _link(log, ctx, ident, op_name)
    return links


def _link(log: LogFacts, ctx: str, ident: str, op_name: str) -> LogLink:
    # The nodes of the steps this graph ran in: names repeat across functions.
    ran = log.context_kernels.get(ctx, log.graph_kernels)
    producer = _producer(log, ctx, ident, ran)
    expected = _expected_node(ident, op_name, producer, ran)
    kernel, dtype = ran.get(producer, ("", "")) if producer else ("", "")
    return LogLink(expected, ran.get(expected), producer, kernel, dtype,
                   per_step=ctx in log.context_kernels)


def _producer(log: LogFacts, ctx: str, ident: str, ran: dict[str, tuple[str, str]]) -> str:
    """The node whose tensor the debug node read; "" where it reads none (NO_TENSOR)."""
    if log.debug_modes.get(ident) == NO_TENSOR:
        return ""
    # Debug node names repeat across functions too: this graph's own inputs first.
    own = log.context_debug_inputs.get(ctx, {})
    summary_node = strip_slot(own.get(ident) or log.debug_inputs.get(ident, ""))
    summary_kernel = ran.get(summary_node, ("", ""))[0]
    if summary_kernel and not summary_kernel.startswith(DEBUG_PREFIX):
        # Grappler folded the summary itself into a constant: so was the op.
        return summary_node
    return strip_slot(own.get(summary_node) or log.debug_inputs.get(summary_node, summary_node))


def _expected_node(ident: str, op_name: str, producer: str, ran: dict[str, tuple[str, str]]) -> str:
    """The name the op's own node has in the log, had it run."""
    # The identity node is "<prefix><op name>/DebugIdentityV2_N" or, for some outputs,
    # "<prefix><scope>/DebugIdentityV2_N"; the prefix is whatever precedes the op name in it.
    at = ident.rfind(op_name + "/")
    expected = ident[:at] + op_name if at >= 0 else ""
    if not expected and producer and (producer == op_name or producer.endswith("/" + op_name)):
        expected = producer
    if expected and expected in ran:
        return expected
    return next((c for c in _names_under_identity_prefixes(ident, op_name) if c in ran), expected)


def _names_under_identity_prefixes(ident: str, op_name: str) -> list[str]:
    """The identity hangs under another scope ("<prefix>a/b/DebugIdentityV2_7" for op
    "a/b/x"): the op's node, if it ran, is "<prefix>" + op name for some leading part of
    the identity's name. Those names, the longest prefix first, the bare op name last."""
    cut = ident.find("/")
    candidates = [op_name]
    while cut != -1:
        candidates.append(ident[:cut + 1] + op_name)
        cut = ident.find("/", cut + 1)
    return candidates[::-1]


def node_kernels(model: RunModel) -> NodeKernels:
    """Executed node name -> (kernel, dtype, evidence), log outranking profile."""
    nodes: NodeKernels = {}
    for prof in model.profiles:
        for node, kernel in tally(prof).graph:
            if not kernel.startswith(DEBUG_PREFIX):
                nodes.setdefault(node, (kernel, "", "profile"))
    for log in model.logs:
        for node, (kernel, dtype) in log.graph_kernels.items():
            if not kernel.startswith(DEBUG_PREFIX):
                nodes[node] = (kernel, dtype, "log")
    return nodes


def profiled_debug_ops(model: RunModel, wanted: set[str], defined: set[str],
                       ) -> tuple[set[str], set[str]]:
    """Dump op names whose tfdbg nodes ran in a profiled step: (summary ran, identity ran).

    tfdbg hangs ``<op>/DebugNumericSummaryV2`` and ``<op>/DebugIdentityV2_N`` on
    each traced output. When the identity ran but the summary left no event,
    grappler folded the summary into a constant, which it does only when the
    op's own value was constant. ``wanted`` and ``defined`` are as for
    ``suffix_index``.
    """
    summaries: set[str] = set()
    identities: set[str] = set()
    for prof in model.profiles:
        for node, kernel in tally(prof).graph:
            if kernel.startswith("DebugNumericSummary"):
                target = summaries
            elif kernel.startswith("DebugIdentity"):
                target = identities
            else:
                continue
            op_name = longest_defined_suffix(node.rpartition("/")[0], defined)
            if op_name in wanted:
                target.add(op_name)
    return summaries, identities


def suffix_index(nodes: NodeKernels, wanted: set[str], defined: set[str],
                 ) -> dict[str, list[str]]:
    """Dump op name -> executed nodes that stand for it, by the longest suffix of the
    node's name, or of the name of the op grappler made it from (its own node wins,
    being shorter).

    ``wanted`` holds the traced ops' names, ``defined`` every op name of the dump's
    graphs. The longest suffix is looked for among all defined names: where it names
    an op that left no trace, the node is that op's, not a traced op's whose name is
    a shorter suffix (``loss/Cast_1`` is not ``Cast_1``).
    """
    index: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        op_name = longest_defined_suffix(origin_name(node), defined)
        if op_name in wanted:
            index[op_name].append(node)
    return index


def longest_defined_suffix(node: str, defined: set[str]) -> str:
    """The longest ``/``-suffix of ``node`` that names an op of the dump; "" if none."""
    for suffix in suffixes(node):
        if suffix in defined:
            return suffix
    return ""


def _own_node_ran(op: OpKernel, link: LogLink) -> Optional[Verdict]:
    """The op's own node ran (its output may be forwarded by another node, an Identity)."""
    if not link.expected or link.ran is None:
        return None
    kernel, dtype = link.ran
    note = ""
    if is_fused(kernel):
        note = fused_node_note(kernel)
    elif (kernel not in ("", REMOVED) and canonical_op(kernel) != op.op_type
          and not op.op_type.startswith("_")):
        note = f"rewritten by grappler from {op.op_type} into {kernel}"
    return Verdict(kernel, note, "log", node=link.expected, dtype=dtype)


def _absorbed_by_fusion(op: OpKernel, link: LogLink) -> Optional[Verdict]:
    """An op the remapper cannot absorb (an identity, a Reshape forwarding the fused
    node's bias gradient) that reads a fused node does none of its work: grappler removed
    it and its consumers read the fused node's output directly."""
    kernel, producer = link.producer_kernel, link.producer
    if not (kernel and is_fused(kernel) and op.op_type not in FUSABLE):
        return None
    return Verdict(REMOVED, f"removed by grappler: its consumers read the output of {producer} "
                            f"({kernel}) directly", "log", node=producer)


def _fused(op: OpKernel, link: LogLink) -> Optional[Verdict]:
    kernel, producer = link.producer_kernel, link.producer
    if not (kernel and is_fused(kernel)):
        return None
    return Verdict(kernel, f"fused by grappler's remapper into {kernel}", "log", node=producer,
                   fused_into=producer)


def _rewritten_by_optimizer(op: OpKernel, link: LogLink) -> Optional[Verdict]:
    kernel, producer = link.producer_kernel, link.producer
    if not (kernel and kernel != "Const" and _derived(producer, op.op_name)):
        return None
    return Verdict(kernel, f"grappler rewrote it into the node {producer}, which ran {kernel} "
                           f"(e.g. its arithmetic optimizer folding a transpose into a MatMul)",
                   "log", node=producer)


_CONSTANT_FOLDED = ("constant-folded by grappler: its value was computed once, when the "
                    "graph was optimised, and is fed as a constant")


def _constant_folded(op: OpKernel, link: LogLink) -> Optional[Verdict]:
    """The debug node read a Const, and the op's own node did not run."""
    if link.producer_kernel != "Const":
        return None
    return Verdict("Const", _CONSTANT_FOLDED, "log", node=link.producer)


_REMOVED_READ_INPUT = ("removed by grappler (it did nothing, e.g. an identity transpose or "
                       "reshape): no node ran for it; its consumers read its input directly")


def _removed(op: OpKernel, link: LogLink) -> Optional[Verdict]:
    if not link.producer_kernel:
        return None
    return Verdict(REMOVED, _REMOVED_READ_INPUT, "log", node=link.producer)


def _derived(node: str, op_name: str) -> bool:
    """Whether ``node`` is one grappler made from the op: its optimizers name such
    nodes ``[<scope>/]<Optimizer>/<Stage>_<op's name>`` (ArithmeticOptimizer/
    FoldTransposeIntoMatMul_MatMul)."""
    base = op_name.rpartition("/")[2]
    return node.rpartition("/")[2].endswith("_" + base) and "Optimizer/" in node


LinkRule = Callable[[OpKernel, LogLink], Optional[Verdict]]

# (name, rule): what the debug node's link says of the op, in order; the first that
# answers decides. Each reads the log only (evidence "log").
LINK_RULES: tuple[tuple[str, LinkRule], ...] = (
    ("log_own_node", _own_node_ran),               # its own node ran
    ("log_absorbed_by_fusion", _absorbed_by_fusion),  # a non-fusable op reading a fused node
    ("log_fused", _fused),                         # the debug node read a fused node
    ("log_optimizer_rewrite", _rewritten_by_optimizer),  # a node an optimizer made from it
    ("log_constant_folded", _constant_folded),     # the debug node read a constant
    ("log_removed", _removed),                     # it read another node: the op's input
)


def link_verdict(op: OpKernel, link: LogLink) -> tuple[str, Verdict] | None:
    """(rule name, verdict) from the first of ``LINK_RULES`` that answers, or None."""
    for name, rule in LINK_RULES:
        verdict = rule(op, link)
        if verdict is not None:
            return name, verdict
    return None


def fused_node_note(kernel: str) -> str:
    """What an op whose own node ran a fused kernel says."""
    return f"its node became the fused kernel {kernel} (grappler's remapper)"
