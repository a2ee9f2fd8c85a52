"""The model of one run: what the analysis makes of the readers' facts.

In: the readers' types (``DumpSet``, ``Profile``, ``LogFacts``, ``Problem``). Out: the
dataclasses that ``analyze`` fills and ``present`` reads: ``RunModel`` (one run: its
sources, counts per op type and mode, kernels, problems, profiled times), its rows
(``OpTypeRow``, ``ModeStats``, ``KernelUse``) and the kernel assignments
(``OpKernel`` per dump graph op, ``EagerAssignment`` per eager op type and dtype), and
the counts a dump's circular buffer cut (``BufferCut``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .errors import Problem
from .read.manifest import RecordedRun
from .read.textlog import LogFacts
from .read.tfdbg import DumpSet
from .read.trace_log import TraceLine
from .read.xplane import Profile

__all__ = ["KernelUse", "ModeStats", "OpTypeRow", "RunModel", "OpKernel", "EagerAssignment",
           "BufferCut"]


@dataclass
class KernelUse:
    name: str
    executions: int
    onednn: bool
    evidence: str          # one of vocab.EVIDENCE: "log" | "profile" | "inferred"
    notes: list[str] = field(default_factory=list)
    fused_into: list[str] = field(default_factory=list)


@dataclass
class ModeStats:
    executions: int = 0
    kernels: list[KernelUse] = field(default_factory=list)


@dataclass
class OpTypeRow:
    op_type: str
    eager: ModeStats = field(default_factory=ModeStats)
    graph: ModeStats = field(default_factory=ModeStats)

    def mode(self, mode: str) -> ModeStats:
        return self.eager if mode == "eager" else self.graph


@dataclass(frozen=True)
class BufferCut:
    """A dump whose records of one kind are exactly its circular buffer's size: tfdbg
    kept only the last ``records``, so the counts of that mode are a lower bound."""

    path: str      # the dump file of those records
    kind: str      # "execution" (eager counts) or "graph_execution_trace" (graph counts)
    records: int
    how: str       # how the buffer's size is known (the log, or tfdbg's default)
    fix: str       # what to do to count every execution

    @property
    def mode(self) -> str:
        return "eager" if self.kind == "execution" else "graph"


@dataclass
class RunModel:
    run: str
    directory: str
    tensorflow_version: str = ""
    hosts: list[str] = field(default_factory=list)
    onednn_enabled: bool | None = None
    onednn_source: str = ""
    # How ``tb-opmode record`` made the run, its environment and CPU (its manifest.json);
    # None for a run made by hand.
    recorded: RecordedRun | None = None
    counts_from: str = ""
    sources: dict[str, list[str]] = field(default_factory=dict)
    functions: Counter[str] = field(default_factory=Counter)
    op_types: dict[str, OpTypeRow] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # Graph executions the dump traced of ops its .graphs file does not define (a file
    # cut, or still being written): in no row, and said so wherever counts are read.
    uncounted_graph_executions: int = 0
    dumps: list[DumpSet] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    logs: list[LogFacts] = field(default_factory=list)
    # TF's Python line per new trace in the logs (its key), in the logs' order
    trace_lines: list[TraceLine] = field(default_factory=list)
    graph_ops: list[OpKernel] = field(default_factory=list)
    eager_ops: list[EagerAssignment] = field(default_factory=list)
    # (op type, mode, kernel) -> [profiler events, total ns]
    times: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    # The run JSON's ``workers`` (analyze.workers.breakdown): per worker and device, for a
    # run of several dumps (a multi-worker job) or devices (MirroredStrategy); else empty.
    workers: list[dict[str, Any]] = field(default_factory=list)
    # Dumps whose circular buffer dropped records (``analyze.assemble`` sets it; each is
    # also one of ``problems``, in words).
    buffer_cuts: list[BufferCut] = field(default_factory=list)
    # Mode ("eager", "graph", "functions") -> how its counts were made, in words: exact, or
    # per call x calls (``analyze.per_call``), or the profiled window only.
    count_basis: dict[str, str] = field(default_factory=dict)
    # A run counted per call x calls: (op type, kernel, executions, evidence, note) per kernel.
    per_call_kernels: list[tuple[str, str, int, str, str]] = field(default_factory=list)
    # The tensor_debug_mode of a dump whose debug ops read tensors ("" if none): its
    # graph kernels are not the job's (``analyze.recording``).
    reads_tensors: str = ""

    def row(self, op_type: str) -> OpTypeRow:
        row = self.op_types.get(op_type)
        if row is None:
            row = self.op_types[op_type] = OpTypeRow(op_type)
        return row


@dataclass
class OpKernel:
    """The kernel one dump graph op ran (all its executions: a graph is optimised once)."""

    graph_id: str
    op_name: str
    op_type: str
    executions: int
    kernel: str
    evidence: str
    node: str = ""
    dtype: str = ""
    note: str = ""
    fused_into: str = ""
    # The name of the rule of ``analyze.kernels`` that decided the kernel, so that each
    # rule's answers can be scored against TF's log; never written to any output.
    rule: str = ""


@dataclass
class EagerAssignment:
    op_type: str
    dtype: str
    executions: int
    kernel: str
    evidence: str
    dispatch: str = ""
    note: str = ""
