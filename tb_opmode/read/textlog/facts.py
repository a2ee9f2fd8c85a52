"""What a text log says about op execution: ``LogFacts``, made of the reader's tables.

In: a ``StepFiling`` (the reader's state) at the end of the reading. Out: ``LogFacts``,
its bytes decoded to text: which ops were dispatched eagerly and which kernel each
eager wrapper ran, which kernels graph nodes ran and how often (in all and per dump
graph), what tfdbg's debug nodes read, which oneDNN primitives executed and for how
long, whether the start-up banner said the oneDNN custom ops were on, the log's time
span, and the ``Problem``s met, one per kind with its count and first offset.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from ...errors import Problem
from ...vocab import UNKNOWN
from ..trace_log import TraceLine
from . import format as log_format
from .format import PROBLEM_KINDS, as_text, prefix_time
from .steps import StepFiling

__all__ = ["EagerKernel", "LogFacts", "log_facts"]


@dataclass(frozen=True)
class EagerKernel:
    """One distinct (eager dispatch, wrapper kernel) pair."""

    dispatch: str  # name in "Executing op", e.g. "_MklMatMul", "Transpose"
    kernel: str    # kernel the __wrapped__ function instantiated for the op, "" if never seen
    dtype: str     # its T= attr, e.g. "DT_FLOAT"; "" if none or kernel unknown


@dataclass
class LogFacts:
    """What one text log says about op execution.

    Eager ``NoOp`` ops (their wrapper is pruned empty, so their kernel stays "") and
    tfdbg's own ``DebugNumericSummaryV2`` executions are counted like any other op (the
    consumer decides). A tf.function call (``Executing op __inference_f_12``) counts as
    an eager dispatch whose kernel is ""; its nodes show as graph kernels."""

    path: str
    tf_format: str = ""  # "2.21-style", "2.13-style" or "" (first prefix format seen)
    # Epoch seconds of the first/last prefixed line. 2.13-style times are local
    # date-times converted with the reader's time zone (the writer's is not
    # recorded); absl lines with a real month/day (no year) give None.
    first_time: Optional[float] = None
    last_time: Optional[float] = None
    # Whether the start-up banner said oneDNN's custom ops were on (None: no banner).
    onednn_opts: Optional[bool] = None
    # Instruction sets TF's start-up line says the CPU has (None: no such line).
    cpu_features: Optional[frozenset[str]] = None
    eager_dispatch: Counter[str] = field(default_factory=Counter)
    eager_kernels: Counter[EagerKernel] = field(default_factory=Counter)
    # Node name -> (kernel, dtype). Keyed by name only: when two graphs have a node of
    # the same name, the last line seen wins.
    graph_kernels: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The same per dump graph (tfdbg context id): the nodes of the steps in which that
    # graph's debug nodes ran. Node names repeat across functions (a train and an
    # evaluate function both inline ``StatefulPartitionedCall/...``), so a dump op's
    # node is looked up among its own graph's.
    context_kernels: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # tfdbg's own debug nodes (``<op>/DebugNumericSummaryV2``) -> the tensor they
    # read: when it is not ``<op>``'s, grappler removed or forwarded ``<op>``.
    debug_inputs: dict[str, str] = field(default_factory=dict)
    # The same per dump graph (tfdbg context id), where that graph's debug node of a
    # name read another tensor than ``debug_inputs`` says: a train and an evaluate
    # function both have ``while/.../Mul/DebugNumericSummaryV2``, reading the Mul in one
    # and, where grappler removed that Mul, its input in the other.
    context_debug_inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    # DebugIdentityV2 node -> (tfdbg context id = dump graph id, dump op name,
    # output slot): the exact link from an executed node name to the dump's op.
    debug_targets: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    # DebugIdentityV2 node -> its tensor_debug_mode (1, NO_TENSOR: it reads a
    # constant, not the op's tensor, so its input says nothing of the op).
    debug_modes: dict[str, int] = field(default_factory=dict)
    # The circular_buffer_size tfdbg's debug nodes were built with (None: not seen).
    circular_buffer_size: Optional[int] = None
    # The tfdbg_run_id of every dump whose debug nodes this log shows ran: it is the
    # dump's own run id (its metadata), so it ties a log to its dump exactly.
    tfdbg_run_ids: frozenset[str] = frozenset()
    # Functions XLA compiled (jit_compile=True) -> launches the log shows (xla_ops.cc).
    xla_launches: Counter[str] = field(default_factory=Counter)
    graph_executions: Counter[str] = field(default_factory=Counter)
    # tf.function (``__inference_...``) -> the nodes its executor instantiated, node ->
    # (kernel, dtype); plumbing left out (a function that instantiated only plumbing has
    # no node: it is here, ran nothing of ours). TF 2.21 logs the end of each function's
    # execution: without that line a function also takes the kernels grappler's constant
    # folding instantiates before the thread's next function.
    function_nodes: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # Fused node -> the ops fused into it after its first (fused_ops: ("BiasAdd", "Relu")).
    fused_ops: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # TF's Python line per new trace, with its key (read.trace_log), in file order.
    trace_lines: list[TraceLine] = field(default_factory=list)
    # kernel -> graph node executions that ran it (node names repeat across functions,
    # so per-kernel counts are taken per line, not through graph_kernels)
    kernel_executions: Counter[str] = field(default_factory=Counter)
    onednn_primitives: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    onednn_time_ms: dict[tuple[str, str, str], float] = field(default_factory=dict)
    lines: int = 0
    bytes_read: int = 0
    problems: list[Problem] = field(default_factory=list)


class _Texts:
    """Bytes as text, one str object per distinct text, and one tuple per distinct pair:
    node and kernel names repeat across the tables (a node in its step, its function,
    its graph), and a str per occurrence made the pickled facts (sent from a forked
    reader, kept in the cache) four times what they hold."""

    def __init__(self) -> None:
        self._texts: dict[bytes, str] = {}
        self._pairs: dict[tuple[str, str], tuple[str, str]] = {}

    def __call__(self, b: bytes) -> str:
        text = self._texts.get(b)
        if text is None:
            text = self._texts[b] = as_text(b)
        return text

    def pair(self, a: bytes, b: bytes) -> tuple[str, str]:
        key = (self(a), self(b))
        return self._pairs.setdefault(key, key)

    def nodes(self, table: dict[bytes, tuple[bytes, bytes]]) -> dict[str, tuple[str, str]]:
        return {self(n): self.pair(k, t) for n, (k, t) in table.items()}


def log_facts(state: StepFiling) -> LogFacts:
    """The facts of a log read to its end (what is still open is finished first)."""
    state.flush()
    _unknown_where_keyless_kernels_differ(state)
    facts = LogFacts(path=state.path, tf_format=state.tf_format, first_time=state.first_time,
                     onednn_opts=state.onednn_opts, cpu_features=state.cpu_features,
                     lines=state.lines, bytes_read=state.bytes)
    text = _Texts()
    facts.last_time = _last_time(state)
    facts.trace_lines = state.traces.close()
    facts.eager_dispatch = Counter({text(k): v for k, v in state.dispatch.items()})
    for (d, k, t), v in state.eager_kernels.items():
        facts.eager_kernels[EagerKernel(text(d), text(k), text(t))] += v
    facts.graph_kernels = text.nodes(_graph_kernels(state))
    _add_debug_facts(state, facts, text)
    facts.xla_launches = Counter({text(k): v for k, v in state.xla_launches.items()})
    facts.context_kernels = {text(c): text.nodes(nodes) for c, nodes in state.context_kernels.items()}
    for n, v in state.graph_executions.items():
        facts.graph_executions[text(n)] += v
    for k, v in state.kernel_executions.items():
        facts.kernel_executions[text(k)] += v
    facts.function_nodes = {text(f): text.nodes(nodes) for f, nodes in state.function_nodes.items()}
    facts.fused_ops = {text(n): tuple(as_text(o).strip().strip('"') for o in ops.split(b",") if o.strip())
                       for n, ops in state.fused_ops.items()}
    _add_primitives(state, facts)
    facts.problems = _problems(state)
    return facts


# The eager kernel of runs whose wrapper, known by (op, device) only, instantiated
# several kernels (``analyze`` says why).
AMBIGUOUS_WRAPPER = UNKNOWN.encode()


def _unknown_where_keyless_kernels_differ(state: StepFiling) -> None:
    """Runs credited to the kernel their (op, device) wrapper instantiated, where that key
    instantiated several kernels (not only one kernel for several dtypes): which one each
    used is unknown."""
    for (dispatch, device, kernel, dtype), n in list(state.keyless_runs.items()):
        if len(state.keyless_kernels.get((dispatch, device), ())) > 1:
            state.eager_kernels[(dispatch, kernel, dtype)] -= n
            state.eager_kernels[(dispatch, AMBIGUOUS_WRAPPER, b"")] += n
            del state.keyless_runs[(dispatch, device, kernel, dtype)]
    state.eager_kernels += Counter()  # drops the counts brought to zero


def _last_time(state: StepFiling) -> Optional[float]:
    """The time of the last line with a TF location, or if that was no TF line after all
    (or a piece of a garbled line came later) of the last line read by a handler."""
    times = [prefix_time(m) for m in (log_format.PREFIX.match(x) for x in
             (state.last_prefixed, state.last_matched) if x is not None) if m is not None]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _graph_kernels(state: StepFiling) -> dict[bytes, tuple[bytes, bytes]]:
    """A node that Process node lines show ran keeps that kernel. Where the log has such
    lines, a node only instantiated did not run at a step: grappler instantiates kernels
    to evaluate nodes it then folds away. Only a log without executor lines falls back
    on instantiations."""
    if state.graph_executions:
        return dict(state.graph_kernels)
    return {n: kt for n, kt in state.instantiated.items() if n not in state.folded}


def _add_debug_facts(state: StepFiling, facts: LogFacts, text: _Texts) -> None:
    facts.debug_inputs = {text(n): text(i) for n, i in state.debug_inputs.items()}
    facts.context_debug_inputs = {text(c): {text(n): text(i) for n, i in inputs.items()}
                                  for c, inputs in state.context_debug_inputs.items()}
    facts.debug_targets = {text(n): (text(c), text(o), slot)
                           for n, (c, o, slot) in state.debug_targets.items()}
    facts.debug_modes = {text(n): m for n, m in state.debug_modes.items()}
    facts.circular_buffer_size = state.circular_buffer_size
    facts.tfdbg_run_ids = frozenset(as_text(r) for r in state.run_ids)


def _add_primitives(state: StepFiling, facts: LogFacts) -> None:
    for key, v in state.primitives.items():
        text_key = (as_text(key[0]), as_text(key[1]), as_text(key[2]))
        facts.onednn_primitives[text_key] += v
        if key in state.primitive_ms:
            facts.onednn_time_ms[text_key] = facts.onednn_time_ms.get(text_key, 0.0) + state.primitive_ms[key]


def _problems(state: StepFiling) -> list[Problem]:
    out = []
    for kind in PROBLEM_KINDS:
        entry = state.problems.get(kind)
        if entry is not None:
            first, count = entry
            what = "line" if count == 1 else "lines"
            out.append(Problem(state.path, first, f"{kind}: {count} {what}, the first at this offset"))
    return out
