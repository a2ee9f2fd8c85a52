"""What the graph rules read of one run: its evidence, and per-graph facts built once.

In: a ``RunModel``, the graph ops its log or profile resolved, the executed nodes
(``links.node_kernels``, ``links.suffix_index``), the ops whose debug nodes a profile
saw and those whose debug node ran without a node of their own. Out: an
``InferenceContext`` that answers each graph's questions (its readers, its profiled
window, the ops moved across Casts, bypassed in a NO_TENSOR dump or whose shapes static
inference cannot prove), each built at its first question and kept for the next; and
per unresolved op an ``OpSite``: its dump, graph and the facts several rules ask of it.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from functools import cached_property, partial
from typing import NamedTuple

from ...model import OpKernel, RunModel
from ...read.tfdbg import NO_TENSOR, DumpSet, OpCreation
from ...vocab import REMOVED
from ..cast_reorder import reordered_across_casts
from ..datasets import batch_dimension
from ..no_tensor import bypassed_reshapes, pruned_dead_ops
from ..static_shapes import (
    BATCH_ASSUMPTION,
    BATCH_SEEN,
    unfolded_gradient_reductions,
    unprovable_reshapes,
)
from .grappler import FORWARDERS, FoldingMemo, all_inputs_constant, constant_input, same_tensor_as_input
from .links import NodeKernels
from .missing_events import (
    NO_EVENT_OPS,
    calls_before_window,
    runs_before_window,
    traced_at_every_run,
)
from .onednn import cpu_from_kernels
from .tensors import consumers_of, trace_rank

__all__ = ["GraphKey", "ShapeProofs", "InferenceContext", "OpSite"]

# (dump index, graph id): one graph of one dump of the run.
GraphKey = tuple[int, str]


class ShapeProofs(NamedTuple):
    """What a graph's static shapes cannot prove, read once per graph."""

    batch: str                            # its dataset's batch dimension: "static", "dynamic", ""
    assumed: str                          # what the notes say of it
    unfolded: dict[str, str]              # gradient reductions grappler cannot fold -> why
    packed: dict[str, tuple[str, str]]    # Reshapes to a packed shape -> (why, the Pack)


class InferenceContext:
    """One run's evidence, as the rules read it, and the per-graph facts they ask for."""

    def __init__(self, model: RunModel, resolved: list[OpKernel], nodes: NodeKernels,
                 by_suffix: dict[str, list[str]], profiled_debug: tuple[set[str], set[str]],
                 no_node: set[tuple[str, str]]) -> None:
        self.model = model
        self.nodes = nodes
        self.by_suffix = by_suffix
        # Ops whose debug node ran (so their graph ran) while no node of their own did.
        self.no_node = no_node
        # Ops whose debug summary / identity node a profile saw run.
        self.summaries, self.identities = profiled_debug
        self.resolved_by_name = {(op.graph_id, op.op_name): op for op in resolved}
        # This run's own observations: (op type, dtype) -> kernels seen in its graphs.
        self.seen: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        for op in resolved:
            if op.kernel != REMOVED and not op.fused_into and op.evidence in ("log", "profile"):
                self.seen[(op.op_type, op.dtype)][op.kernel] += 1
        self.cpu_seen = cpu_from_kernels(model, resolved)
        self.graph_cut = any(cut.kind == "graph_execution_trace" for cut in model.buffer_cuts)
        self.eager_cut = any(cut.kind == "execution" for cut in model.buffer_cuts)
        self.iterator_specs = [spec for prof in model.profiles for spec in prof.iterator_specs]
        # Shared by every question of constant folding, so each op is asked once.
        self.folding_memo: FoldingMemo = {}
        self._consumers: dict[GraphKey, dict[str, list[str]]] = {}
        self._calls: dict[GraphKey, tuple[int, int] | None] = {}
        self._moved: dict[GraphKey, dict[str, str]] = {}
        self._bypassed: dict[GraphKey, dict[str, tuple[str, str]]] = {}
        self._shape_proofs: dict[GraphKey, ShapeProofs] = {}
        self._dtypes_by_graph: dict[int, dict[str, dict[tuple[str, int], str]]] = {}

    def consumers(self, key: GraphKey) -> dict[str, list[str]]:
        """Op name -> the graph's ops that read it."""
        found = self._consumers.get(key)
        if found is None:
            found = self._consumers[key] = consumers_of(self.model.dumps[key[0]], key[1])
        return found

    def calls(self, key: GraphKey) -> tuple[int, int] | None:
        """(calls, calls before the last profiled window) of the graph's function."""
        if key not in self._calls:
            self._calls[key] = calls_before_window(self.model, self.model.dumps[key[0]], key[1])
        return self._calls[key]

    def moved_across_casts(self, key: GraphKey, graph_ops: dict[str, OpCreation]) -> dict[str, str]:
        """Op name -> note, for the graph's ops whose work moved to the other side of a Cast."""
        found = self._moved.get(key)
        if found is None:
            dump = self.model.dumps[key[0]]
            found = self._moved[key] = reordered_across_casts(
                graph_ops, self._graph_dtypes(key), self.nodes, self.iterator_specs,
                debug_reads=set(dump.tensor_debug_modes) != {NO_TENSOR})
        return found

    def _graph_dtypes(self, key: GraphKey) -> dict[tuple[str, int], str]:
        """(op name, slot) -> the dtype its trace records, for one graph."""
        index, graph_id = key
        if index not in self._dtypes_by_graph:
            # Grouped once per dump: filtering the dump's traces per graph would go over
            # every trace of the dump for each of its graphs.
            grouped: dict[str, dict[tuple[str, int], str]] = {}
            for (g, name, slot), dtype in self.model.dumps[index].trace_dtypes.items():
                grouped.setdefault(g, {})[(name, slot)] = dtype
            self._dtypes_by_graph[index] = grouped
        return self._dtypes_by_graph[index].get(graph_id, {})

    def bypassed(self, key: GraphKey, graph_ops: dict[str, OpCreation]) -> dict[str, tuple[str, str]]:
        """Op name -> (kernel, note) for what a NO_TENSOR dump's graph shows bypassed or
        pruned."""
        found = self._bypassed.get(key)
        if found is None:
            found = self._bypassed[key] = {**bypassed_reshapes(graph_ops), **pruned_dead_ops(graph_ops)}
        return found

    def shape_proofs(self, key: GraphKey, graph_ops: dict[str, OpCreation]) -> ShapeProofs:
        """What the graph's static shapes cannot prove (``ShapeProofs``)."""
        found = self._shape_proofs.get(key)
        if found is None:
            # The rules' premise is a batch dimension only known at run time: where the
            # profile's dataset shows it, the notes say so; where it shows it static,
            # grappler may well have folded the shapes, and the rules say nothing.
            batch, shapes = batch_dimension(graph_ops, self.iterator_specs)
            assumed = BATCH_SEEN.format(shapes=shapes) if batch == "dynamic" else BATCH_ASSUMPTION
            dump = self.model.dumps[key[0]]
            found = self._shape_proofs[key] = ShapeProofs(
                batch, assumed,
                unfolded_gradient_reductions(graph_ops, partial(trace_rank, dump, key[1]), assumed),
                unprovable_reshapes(graph_ops, partial(self.constant_input, graph_ops)))
        return found

    def constant_input(self, graph_ops: dict[str, OpCreation], tensor: str) -> bool:
        """Whether constant folding computes the tensor (``grappler.constant_input``)."""
        return constant_input(graph_ops, tensor, self.folding_memo)

    def all_inputs_constant(self, graph_ops: dict[str, OpCreation], name: str) -> bool:
        """Whether constant folding computes op ``name`` (``grappler.all_inputs_constant``)."""
        return all_inputs_constant(graph_ops, name, self.folding_memo)

    def executed(self, graph_id: str, op_name: str) -> list[str]:
        """The executed nodes that stand for an op: the one its evidence resolved it to,
        else those its name is a suffix of."""
        done = self.resolved_by_name.get((graph_id, op_name))
        return [done.node] if done is not None and done.node else self.by_suffix.get(op_name, [])


class OpSite:
    """One op no log or profile resolved, where it sits in the run, and the facts about
    it that several rules ask, each worked out at the first asking."""

    def __init__(self, ctx: InferenceContext, index: int, op: OpKernel) -> None:
        self.ctx = ctx
        self.op = op
        self.dump: DumpSet = ctx.model.dumps[index]
        self.graph_ops = self.dump.graphs[op.graph_id].ops
        self.key: GraphKey = (index, op.graph_id)

    @cached_property
    def created(self) -> OpCreation | None:
        return self.graph_ops.get(self.op.op_name)

    @cached_property
    def no_tensor_dump(self) -> bool:
        """Whether its dump traced in NO_TENSOR mode only (no dtypes, no summaries)."""
        return set(self.dump.tensor_debug_modes) == {NO_TENSOR}

    @cached_property
    def debug_node_profiled(self) -> bool:
        """Whether a profiled step ran its debug node: its summary, or in a NO_TENSOR
        dump, which has none, its identity. So its graph ran there."""
        return self.op.op_name in (self.ctx.summaries or self.ctx.identities)

    @cached_property
    def no_own_event(self) -> bool:
        """Its debug node ran in a profiled step, and it is an op the profiler records
        at the default level, yet the profile has no event of its own."""
        return self.debug_node_profiled and self.op.op_type not in NO_EVENT_OPS

    @cached_property
    def traced_always(self) -> bool:
        """Whether its node, had it run, would have left an event at every run
        (``missing_events.traced_at_every_run``)."""
        ctx = self.ctx
        return traced_at_every_run(
            self.op.executions, ctx.graph_cut,
            runs_before_window(ctx.calls(self.key), self.op, ctx.graph_cut or ctx.eager_cut))

    @cached_property
    def forwards_input(self) -> bool:
        """A forwarder whose first trace records its first input's very tensor."""
        return self.op.op_type in FORWARDERS and same_tensor_as_input(self.dump, self.op, self.graph_ops)
