"""Which kernel ran each dump graph op, and how we know: evidence first, then the rules.

In: a ``RunModel`` whose counts ``assemble`` filled, with its dumps, profiles and logs.
Out: per dump graph op that executed, an ``OpKernel``: its kernel, the evidence, the
executed node, the fusion or rewrite, and the name of the rule that decided it.

The order: the log's exact link (``links``), else an executed node whose name ends with
the op's; then, for the ops neither resolved, the remapper's Conv2DBackpropFilter +
BiasAddGrad fusion, the ordered ``graph_rules``, and two passes that look across ops
(the Reshape of a gradient's Sum, the duplicates grappler merged). Last, the ops whose
missing profiler event proves nothing say so.
"""
from __future__ import annotations

from collections import defaultdict

from ...model import OpKernel, RunModel
from ...read.tfdbg import FULL_TENSOR, DumpSet, OpCreation, digest_rank
from ...vocab import REMOVED, UNKNOWN
from ..call_sites import creating_line
from ..cse import DEDUPABLE, merged_duplicates
from ..nodes import canonical_op, data_inputs
from .context import InferenceContext, OpSite
from .fusions import infer_filter_bias_fusions
from .graph_rules import NO_PROFILER_EVENT, apply_rules
from .grappler import FoldingMemo, all_inputs_constant
from .links import (
    LogLink,
    NodeKernels,
    fused_node_note,
    link_verdict,
    log_links,
    node_kernels,
    profiled_debug_ops,
    suffix_index,
)
from .missing_events import say_untraced
from .remapper import is_fused
from .tensors import input_digest, lowest_digest, strip_slot
from .verdict import FROM_PROFILE, Verdict

__all__ = ["assign_graph", "EXECUTED_NODE_RULE", "MERGED_DUPLICATE_RULE"]

# The names the rules outside ``graph_rules``'s table record on the ops they decide.
EXECUTED_NODE_RULE = "executed_node_by_name"
MERGED_DUPLICATE_RULE = "merged_duplicate"
_SUM_REMOVED_RULE = "gradient_reshape_sum_removed"
_SUM_RAN_OVER_NO_AXES_RULE = "gradient_reshape_sum_over_no_axes"
_SUM_KEPT_RANK_RULE = "gradient_reshape_sum_kept_rank"
_SUM_UNTOLD_RULE = "gradient_reshape_sum_untold"
_AFTER_REMOVED_RESHAPE_RULE = "gradient_reshape_after_removed"
_AFTER_REMOVED_RESHAPE = ("unknown whether it ran: it reshapes {below}, which grappler removed "
                          "as a no-op by static shapes, so it knew the shapes here too, and "
                          "removes this Reshape where they make it a no-op; this dump records "
                          "no shapes, and the profiler records no event of a Reshape. To know, "
                          "keep TF's log (TF_CPP_VMODULE=executor=1) or dump with FULL_HEALTH "
                          "or SHAPE")


def assign_graph(model: RunModel) -> list[OpKernel]:
    """The kernel of every dump graph op that executed."""
    counts = _lowest_slot_counts(model)
    links = log_links(model)
    nodes = node_kernels(model)
    wanted = {op_name for (_i, _g, op_name) in counts}
    defined = wanted.union(*_graph_op_names(model))
    by_suffix = suffix_index(nodes, wanted, defined)
    out: list[OpKernel] = []
    unresolved: list[tuple[int, OpKernel]] = []
    # Ops whose debug node ran (so their graph ran) while no node of their own did.
    no_node: set[tuple[str, str]] = set()
    instantiations = _InstantiationsOnly(model)
    context_nodes: dict[str, set[str]] = {}  # per graph, made once
    for (i, graph_id, op_name), (slot, n) in counts.items():
        op = _graph_op(model.dumps[i], graph_id, op_name, slot, n)
        if op is None:
            continue  # counted as a problem by assemble
        if _from_log_link(op, links.get((graph_id, op_name, slot))):
            no_node.add((graph_id, op_name))
        if not op.kernel:
            # Names repeat across functions (args_0): where the log shows which nodes ran
            # in the op's own graph, only those are its.
            within = (_context_nodes(model, graph_id, context_nodes)
                      if (graph_id, op_name) in no_node else None)
            _from_executed_node(op, by_suffix, nodes, within)
        if op.kernel and instantiations.prove_nothing_of(i, op):
            _forget(op)
        if op.kernel:
            out.append(op)
        else:
            unresolved.append((i, op))
    profiled_debug = profiled_debug_ops(model, wanted, defined) if not model.logs else (set(), set())
    _infer(InferenceContext(model, out, nodes, by_suffix, profiled_debug, no_node), out, unresolved)
    return out + [op for _i, op in unresolved]


class _InstantiationsOnly:
    """Logs that hold kernel instantiations but no executor line (``tb-opmode record``'s
    ``TF_CPP_VMODULE=execute=1,op_kernel=1``) prove less than they seem to: grappler
    instantiates a node's kernel to evaluate it when it folds it into a constant, so an
    op the dump's graph shows computed from constants only may never have run; and they
    leave out every _Arg, so a node named like a function's argument (args_0) is another
    function's. And node names repeat across functions: where the log shows the nodes a
    graph's function instantiated while it ran, a node outside them is another function's
    (a tf.data function's ``Reshape``). For those ops the rules decide, not the log."""

    def __init__(self, model: RunModel) -> None:
        self.model = model
        self.only = bool(model.logs) and not any(log.graph_executions for log in model.logs)
        self.memo: FoldingMemo = {}
        self.scopes = _function_scopes(model) if self.only else {}

    def prove_nothing_of(self, index: int, op: OpKernel) -> bool:
        if not self.only or op.evidence != "log" or op.op_type == "Const":
            return False
        if op.op_type == "Placeholder":
            return True
        scope = self._scope(index, op.graph_id)
        if scope is not None and (op.node or op.op_name) not in scope:
            return True
        graph = self.model.dumps[index].graphs.get(op.graph_id)
        return graph is not None and all_inputs_constant(graph.ops, op.op_name, self.memo)

    def _scope(self, index: int, graph_id: str) -> set[str] | None:
        """The nodes of the function called from Python whose graph is ``graph_id`` or
        holds it (a nested tf.function's, a branch's); None if no such function ran."""
        return next((self.scopes[(index, g)] for g in _graph_and_outers(self.model.dumps[index], graph_id)
                     if (index, g) in self.scopes), None)


def _function_scopes(model: RunModel) -> dict[tuple[int, str], set[str]]:
    """(dump index, graph id) -> the nodes the logs saw instantiated while that graph's
    function (its concrete function, called from Python) ran."""
    nodes_of: dict[str, set[str]] = {}
    for log in model.logs:
        for function, nodes in log.function_nodes.items():
            nodes_of.setdefault(function, set()).update(nodes)
    scopes: dict[tuple[int, str], set[str]] = {}
    for i, dump in enumerate(model.dumps):
        for (op_type, graph_id), _n in dump.executions.items():
            if graph_id and op_type in nodes_of:
                scopes.setdefault((i, graph_id), set()).update(nodes_of[op_type])
    return scopes


def _graph_and_outers(dump: DumpSet, graph_id: str) -> list[str]:
    """``graph_id`` and the graphs around it, innermost first."""
    out = [graph_id]
    graph = dump.graphs.get(graph_id)
    while graph is not None and graph.outer_id in dump.graphs and graph.outer_id not in out:
        out.append(graph.outer_id)
        graph = dump.graphs[graph.outer_id]
    return out


def _forget(op: OpKernel) -> None:
    """The op as before any evidence named its kernel (its dtype is the dump's)."""
    op.kernel = op.evidence = op.note = op.rule = op.node = op.fused_into = ""


def _graph_op_names(model: RunModel) -> list[dict[str, OpCreation]]:
    """Each dump graph's ops by name, traced or not (what a node name's suffix may name)."""
    return [graph.ops for dump in model.dumps for graph in dump.graphs.values()]


def _lowest_slot_counts(model: RunModel) -> dict[tuple[int, str, str], tuple[int, int]]:
    """(dump index, graph id, op name) -> (lowest traced slot, executions)."""
    return {(i, graph_id, op_name): found for i, dump in enumerate(model.dumps)
            for (graph_id, op_name), found in dump.lowest_slots().items()}


def _graph_op(dump: DumpSet, graph_id: str, op_name: str, slot: int, executions: int,
              ) -> OpKernel | None:
    """The op, its kernel not yet known; None where its graph does not define it."""
    graph = dump.graphs.get(graph_id)
    created = graph.ops.get(op_name) if graph is not None else None
    if created is None:
        return None
    return OpKernel(graph_id, op_name, created.op_type, executions, "", "",
                    dtype=dump.trace_dtypes.get((graph_id, op_name, slot), ""))


def _from_log_link(op: OpKernel, link: LogLink | None) -> bool:
    """Fill ``op`` from the exact tfdbg link seen in the log; True where its debug node
    ran while no node of its own did (the link names none). A function's argument is
    not missing from a log of instantiations only: they leave out every _Arg."""
    if link is None:
        return False
    found = link_verdict(op, link)
    if found is not None:
        name, verdict = found
        verdict.apply(op, name)
    return not op.kernel and not link.producer and (link.per_step or op.op_type != "Placeholder")


def _context_nodes(model: RunModel, graph_id: str, made: dict[str, set[str]]) -> set[str]:
    """The nodes the logs saw run in the steps of graph ``graph_id`` (kept in ``made``:
    asked again for each op of the graph)."""
    found = made.get(graph_id)
    if found is None:
        found = made[graph_id] = {node for log in model.logs
                                  for node in log.context_kernels.get(graph_id, {})}
    return found


def _from_executed_node(op: OpKernel, by_suffix: dict[str, list[str]], nodes: NodeKernels,
                        within: set[str] | None = None) -> None:
    """Fill ``op`` from the executed node whose name ends with its own, its type's first,
    the shortest name first; only a node of ``within``, if given."""
    matched = by_suffix.get(op.op_name, [])
    if within is not None:
        matched = [m for m in matched if m in within]
    fitting = [m for m in matched if canonical_op(nodes[m][0]) == op.op_type] or matched
    if not fitting:
        return
    node = sorted(fitting, key=len)[0]
    kernel, dtype, evidence = nodes[node]
    note = fused_node_note(kernel) if is_fused(kernel) and not op.note else op.note
    Verdict(kernel, note, evidence, node=node, dtype=dtype).apply(op, EXECUTED_NODE_RULE)


def _infer(ctx: InferenceContext, resolved: list[OpKernel],
           unresolved: list[tuple[int, OpKernel]]) -> None:
    """Give every op no evidence resolved a kernel: fusions, the rules, the passes."""
    model = ctx.model
    if model.onednn_enabled is not False:
        infer_filter_bias_fusions(ctx, unresolved)
    untraced: list[OpKernel] = []  # no event, which says nothing after many runs
    for i, op in unresolved:
        if not op.kernel and apply_rules(ctx, OpSite(ctx, i, op)):
            untraced.append(op)
    _gradient_reshapes(model, resolved, unresolved)
    _merged_duplicates(model, resolved, unresolved)
    # An op another rule showed removed needs no word on what its missing event proves.
    untraced = [op for op in untraced if op.kernel != REMOVED]
    if untraced:
        say_untraced(model, untraced, ctx.graph_cut)


def _merged_duplicates(model: RunModel, resolved: list[OpKernel],
                       unresolved: list[tuple[int, OpKernel]]) -> None:
    """Of identical ops that grappler merged (``cse``), one ran: the inferred ones of a
    group are counted once, and say so."""
    by_graph: dict[tuple[int, str], list[OpKernel]] = defaultdict(list)
    for i, op in unresolved:
        by_graph[(i, op.graph_id)].append(op)
    seen_by_graph = _observed_by_graph(resolved)
    for (i, graph_id), ops in by_graph.items():
        _merged_in_graph(model.dumps[i], graph_id, ops, seen_by_graph[graph_id])


def _merged_in_graph(dump: DumpSet, graph_id: str, ops: list[OpKernel], seen: set[str]) -> None:
    """``_merged_duplicates`` for one graph's inferred ops; ``seen``: its ops a log or
    profile saw run."""
    ran = {op.op_name for op in ops if op.kernel not in (REMOVED, UNKNOWN, "Const", "")}
    if len(ran) < 2 and not seen:
        return
    graph_ops = dump.graphs[graph_id].ops
    digests = _graph_digests(dump, graph_id)
    whole_tensors = set(dump.tensor_debug_modes) == {FULL_TENSOR}
    # Twins by constants whose values are not recorded (``cse``): ops cse can merge.
    sites = {} if whole_tensors else {
        name: creating_line(dump, graph_ops[name].stack)
        for name in ran if name in graph_ops and graph_ops[name].op_type in DEDUPABLE}
    decided = merged_duplicates(graph_ops, digests, whole_tensors, ran, seen, sites)
    for op in ops:
        kernel, note = decided.get(op.op_name, (None, ""))
        if kernel is None or op.op_name not in ran:
            continue
        if kernel:  # "" keeps the kernel of the one counted as run
            op.kernel, op.rule = kernel, MERGED_DUPLICATE_RULE
        op.note = note


def _graph_digests(dump: DumpSet, graph_id: str) -> dict[tuple[str, int], int]:
    """(op name, slot) -> the digest of its first trace, for one graph."""
    return {(name, slot): d for (g, name, slot), d in dump.trace_digests.items() if g == graph_id}


def _observed_by_graph(resolved: list[OpKernel]) -> dict[str, set[str]]:
    """Graph id -> the ops a log or profile saw run a kernel of their own."""
    seen_by_graph: dict[str, set[str]] = defaultdict(set)
    for op in resolved:
        if op.kernel not in (REMOVED, UNKNOWN, "Const") and op.evidence in ("log", "profile"):
            seen_by_graph[op.graph_id].add(op.op_name)
    return seen_by_graph


def _gradient_reshapes(model: RunModel, resolved: list[OpKernel],
                       unresolved: list[tuple[int, OpKernel]]) -> None:
    """A broadcasting op's gradient is ``Reshape(Sum(g, axes), Shape(x))``. Where the
    Reshape forwarded its input (rank >= 2, so the dump cannot say whether grappler
    could prove it a no-op), its Sum, whose event a profile records, tells what grappler
    knew of the shapes: a Sum it removed (it proved the axes empty) goes with its
    Reshape; a Sum that ran over no axes (its trace equals its input's) means the
    shapes were not known, so the Reshape ran too; a Sum that kept its rank and reduced
    has the very static shape the Reshape restores, and grappler removes that Reshape.
    A Sum that left no event but may have run as an Identity (a reduction over the axes
    of symbolic shapes, ``graph_rules``) leaves its Reshape ``(unknown)`` too. A Reshape
    left to the default that reads a Reshape removed so is ``(unknown)``: the shapes were
    static there, so it may be a no-op too (the Sum's own gradient)."""
    decided = {(op.graph_id, op.op_name): op for op in resolved}
    decided.update({(op.graph_id, op.op_name): op for _i, op in unresolved})
    reshapes = [(i, op) for i, op in unresolved if op.op_type == "Reshape"]
    # Gathered once per dump: asked per Reshape, a walk over every digest was quadratic
    # in a large graph (a BERT's thousand Reshapes).
    digested = {i: _digested_ops(model.dumps[i]) for i in {i for i, _op in reshapes}}
    for i, op in reshapes:
        found = _gradient_reshape_verdict(model.dumps[i], op, decided, digested[i])
        if found is not None:
            name, verdict = found
            verdict.apply(op, name)
    for i, op in reshapes:
        below = _removed_reshape_below(model.dumps[i], op, decided, digested[i])
        if below:
            Verdict(UNKNOWN, _AFTER_REMOVED_RESHAPE.format(below=below)).apply(
                op, _AFTER_REMOVED_RESHAPE_RULE)


def _removed_reshape_below(dump: DumpSet, op: OpKernel, decided: dict[tuple[str, str], OpKernel],
                           digested: set[tuple[str, str]]) -> str:
    """The Reshape a Reshape left to the default "ran" reads, where that one was removed
    with its Sum (``_reshape_after_sum``); "" otherwise."""
    created = dump.graphs[op.graph_id].ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    below = decided.get((op.graph_id, strip_slot(inputs[0]))) if inputs else None
    if below is None or below.rule != _SUM_REMOVED_RULE:
        return ""
    return below.op_name if _left_to_default(op, digested) else ""


def _gradient_reshape_verdict(dump: DumpSet, op: OpKernel, decided: dict[tuple[str, str], OpKernel],
                              digested: set[tuple[str, str]]) -> tuple[str, Verdict] | None:
    """(rule name, verdict) for a Reshape of a Sum a profile or log decided, or None."""
    blind = _left_to_default(op, digested)
    if op.kernel != UNKNOWN and not blind:
        return None
    summed_input = _summed_input(dump, op, decided)
    if summed_input is None:
        return None
    source, summed = summed_input
    mine = lowest_digest(dump.trace_digests, op.graph_id, source.op_name)
    theirs = input_digest(dump, op.graph_id, source.inputs[0])
    if blind and summed.kernel not in (REMOVED, UNKNOWN):
        return None
    if not blind and (not mine or not theirs):
        return None
    return _reshape_after_sum(source.op_name, summed, mine, theirs)


def _left_to_default(op: OpKernel, digested: set[tuple[str, str]]) -> bool:
    """Whether a dump that records too little to tell two tensors apart (CURT/
    CONCISE_HEALTH, NO_TENSOR: no digests) left this Reshape to the default "ran": only a
    removed Sum below it can say more. ``digested``: its dump's ``_digested_ops``."""
    return op.kernel == "Reshape" and op.evidence == "inferred" and \
        (op.graph_id, op.op_name) not in digested


def _digested_ops(dump: DumpSet) -> set[tuple[str, str]]:
    """The (graph id, op name) of the dump's ops a trace of which has a digest."""
    return {(g, name) for (g, name, _s), d in dump.trace_digests.items() if d}


def _summed_input(dump: DumpSet, op: OpKernel, decided: dict[tuple[str, str], OpKernel],
                  ) -> tuple[OpCreation, OpKernel] | None:
    """(the Sum the Reshape reads, that Sum's kernel) where a profile or log decided it."""
    graph_ops = dump.graphs[op.graph_id].ops
    created = graph_ops.get(op.op_name)
    inputs = data_inputs(created.inputs) if created is not None else []
    source = graph_ops.get(strip_slot(inputs[0])) if inputs else None
    summed = decided.get((op.graph_id, source.op_name)) if source is not None else None
    if source is None or summed is None or source.op_type != "Sum" or not source.inputs:
        return None
    return (source, summed) if _decided_by_events(summed) else None


def _decided_by_events(op: OpKernel) -> bool:
    """Whether a log or profile decided the op: it saw its node, or no event of it."""
    return op.evidence in ("profile", "log") or (
        op.kernel in (REMOVED, UNKNOWN) and op.rule == NO_PROFILER_EVENT)


def _reshape_after_sum(sum_name: str, summed: OpKernel, mine: int,
                       theirs: int) -> tuple[str, Verdict] | None:
    """What the Sum below a Reshape shows grappler knew of the shapes."""
    if summed.kernel == UNKNOWN:
        return _SUM_UNTOLD_RULE, Verdict(
            UNKNOWN, f"unknown whether it ran: it reshapes {sum_name} back, which left no "
                     f"profiler event (removed, or an Identity the profiler does not trace), so "
                     f"grappler proved that Sum's axes empty; whether that proves this Reshape "
                     f"a no-op depends on static shapes the dump does not record. To know, keep "
                     f"TF's log (TF_CPP_VMODULE=executor=1)")
    if summed.kernel == REMOVED:
        return _SUM_REMOVED_RULE, Verdict(
            REMOVED, f"removed by grappler with its input {sum_name}: that Sum left no profiler "
                     f"event, so grappler proved its axes empty from static shapes, which make "
                     f"this Reshape back a no-op too", basis=FROM_PROFILE)
    if canonical_op(summed.kernel) != "Sum":
        return None
    if mine == theirs:
        return _SUM_RAN_OVER_NO_AXES_RULE, Verdict(
            "Reshape", f"ran: its input {sum_name} ran although it summed over no axes (its "
                       f"trace equals its input's), so grappler did not know the shapes that "
                       f"would make this Reshape a no-op either", basis=FROM_PROFILE)
    if digest_rank(mine) is not None and digest_rank(mine) == digest_rank(theirs):
        return _SUM_KEPT_RANK_RULE, Verdict(
            REMOVED, f"removed by grappler: its input {sum_name} ran and kept its rank, so its "
                     f"static shape is the one this Reshape restores", basis=FROM_PROFILE)
    return None
