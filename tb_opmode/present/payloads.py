"""The shapes of the JSON the CLI and the tab serve, as ``TypedDict``s.

In: nothing but the mode words (``vocab``). Out: one ``TypedDict`` per object of the
summary contract (``contract.summary``: ``SummaryDoc``, ``RunDoc`` ..., which live in
``summary_types`` and are re-exported here) and of the tab's
route payloads (``tab.overview``: ``Overview``; ``tab.op_page``: ``OpPage`` of ``Row``;
``tab.op_detail``: ``OpDetail``; ``tab.compare``: ``Comparison``; the timeline route:
``TimelineWindow``), and ``of_mode``, which reads one mode of a row.

The tab's JavaScript types the same payloads as ``@typedef``s in ``frontend/data.js``,
under the same names (but ``RowMode``, there ``ModeStats``; ``TimelineWindow``, there
``TimelineAnswer``); ``tests/unit/test_payload_types.py`` fails when a field is on one
side only or optional on one side only, so change them together. A field that some
payloads lack is in a ``total=False`` base (Python 3.9 has no ``NotRequired``).
"""
from __future__ import annotations

from typing import Literal, Optional, TypedDict, Union, overload

from ..vocab import EAGER, GRAPH
from .summary_types import (
    EagerSiteDoc,
    FunctionCalls,
    FunctionsPayload,
    HotSpot,
    HotSpots,
    KernelDoc,
    ModeDoc,
    OnednnVerbose,
    OpTypeDoc,
    Primitive,
    RecordingDoc,
    RunDoc,
    SummaryDoc,
    TfFunction,
    TimeDoc,
    TimeShare,
    TimeShareCell,
    TraceDoc,
    XlaFunction,
    _ModeOptional,
    _RunFacts,
)

__all__ = [
    "TimeDoc", "KernelDoc", "ModeDoc", "OpTypeDoc", "FunctionCalls", "Primitive",
    "OnednnVerbose", "XlaFunction", "TimeShareCell", "TimeShare", "RunDoc", "SummaryDoc", "RecordingDoc",
    "TraceDoc", "TfFunction", "FunctionsPayload",
    "Kernel", "DtypeKernel", "DtypeSplit", "UncountedKernel", "Uncounted", "RowMode",
    "RowOptional", "Row", "OpPage", "ExportRun", "ExportDoc", "Frame", "Snippet", "Site", "GraphEntry", "FusedInto",
    "Lead", "OpDetailOptional", "OpDetail",
    "ModeTotals", "MatrixCell", "KindCell", "Glance", "DumpCoverage", "CpuFacts", "CutModes",
    "DtypeCount", "DtypeTotals", "DeviceTotals", "UnknownOp", "UnknownGroup", "Unknowns",
    "CappedVerbose", "ProfileFacts", "FunctionBrief", "FunctionsBrief", "Overview", "RunBrief",
    "CompareSide", "CompareMode",
    "CompareRow", "Comparison", "Nearest", "TimelineEvents", "TimelineBins",
    "TimelineWindow", "of_mode", "EagerSiteDoc", "HotSpot", "HotSpots",
]


# ---------------------------------------------------------------- the op table's rows

_KernelClass = TypedDict("_KernelClass", {"class": str})


class Kernel(KernelDoc, _KernelClass):
    """A kernel of a row: the contract's plus its class, kind, fused and folded marks."""

    kind: str
    fused: bool
    folded: bool


class DtypeKernel(TypedDict):
    name: str
    executions: int
    kind: str


class DtypeSplit(TypedDict):
    """Executions of one dtype in a mode, with the kernels they ran."""

    dtype: str
    label: str
    executions: int
    low_precision: bool
    kernels: list[DtypeKernel]


class UncountedKernel(TypedDict):
    name: str
    events: int
    onednn: bool
    kind: str


class Uncounted(TypedDict):
    """Graph executions the dump did not count though the profile or the log saw them."""

    profile_events: int
    profile_time_ns: int
    log_executions: int
    kernels: list[UncountedKernel]
    note: str


class _RowModeOptional(_ModeOptional, total=False):
    time_ns: int
    uncounted: Uncounted
    dtypes: list[DtypeSplit]
    devices: dict[str, int]
    lower_bound: bool


class RowMode(_RowModeOptional):
    """An op type in one mode as the table shows it (JS: ``ModeStats``)."""

    executions: int
    kernels: list[Kernel]


class RowOptional(TypedDict, total=False):
    """What only some rows carry (a literal with these keys in their place unpacks it)."""

    uncounted: bool


class Row(RowOptional):
    """A row of the op table: the contract's row plus what the table shows and filters on."""

    op_type: str
    eager: RowMode
    graph: RowMode
    total: int
    onednn: bool
    kernel_differs: bool
    kernel_differs_why: str
    fused: bool
    dtypes_differ: bool
    low_precision: bool


class OpPage(TypedDict):
    """A page of the op table (the optypes route)."""

    run: str
    total: int
    all_total: int
    page: int
    page_size: int
    sort: str
    order: str
    filters: list[str]
    q: str
    graph: str
    lower_bound: list[str]
    devices: list[str]
    rows: list[Row]


class ExportRun(_RunFacts):
    """A run of the tab's JSON export: the contract's, its rows the table's."""

    op_types: list[Row]
    tensor_debug_modes: list[str]


class ExportDoc(TypedDict):
    """The tab's JSON export (the export route, ``format=json``)."""

    version: str
    warnings: list[str]
    runs: list[ExportRun]


# ---------------------------------------------------------------- the op detail

class Frame(TypedDict):
    file: str
    line: int
    function: str


class Snippet(TypedDict):
    first_line: int
    line: int
    lines: list[str]


class _SiteOptional(TypedDict, total=False):
    ops: int
    user_code: Frame
    via: list[Frame]
    snippet: Snippet


class Site(Frame, _SiteOptional):
    """A call site of an op type (``analyze.explain.call_sites``)."""

    count: int


class GraphEntry(TypedDict):
    """A graph that holds the op type (``analyze.explain.function_graphs``), named."""

    graph_id: str
    graph: str
    function: str
    function_graph_id: str
    function_calls: int
    executions: int
    ops: int
    op_names: list[str]
    name: str
    outer: str


class FusedInto(TypedDict):
    """A kernel grappler fused the op type into."""

    kernel: str
    executions: int
    evidence: str
    onednn: bool
    nodes: list[str]


class Lead(TypedDict):
    """The answer for an op type in plain words, first: one sentence per mode, one on
    the kernels of both (``present.lead``)."""

    eager: str
    graph: str
    kernel: str


class OpDetailOptional(TypedDict, total=False):
    """What only some op details carry."""

    explanation: dict[str, str]
    why: dict[str, str]
    fused_into: list[FusedInto]


class OpDetail(Row, OpDetailOptional):
    """One op type, all of it (the op route)."""

    lead: Lead
    evidence: list[str]
    call_sites: dict[str, list[Site]]
    call_sites_total: dict[str, int]
    graphs: list[GraphEntry]
    graphs_total: int


# ---------------------------------------------------------------- the overview

class ModeTotals(TypedDict):
    """A mode's totals in the overview."""

    executions: int
    op_types: int
    onednn_executions: int
    kernel_known_executions: int
    onednn_share_of_known: Optional[float]
    time_ns: Optional[int]
    removed_executions: int
    unknown_executions: int
    time_unattributed_ns: Optional[int]
    time_outside_table_ns: Optional[int]
    outside_table: list[str]
    share_of_executions: Optional[float]
    share_of_time: Optional[float]


MatrixCell = TypedDict("MatrixCell", {"mode": str, "class": str, "executions": int,
                                      "time_ns": Optional[int]})


class KindCell(TypedDict):
    mode: str
    kind: str
    executions: int
    fused_executions: int
    time_ns: Optional[int]


class Glance(TypedDict):
    """The headline: the op types that ran in both modes (the kernel-differs ones first),
    how many of them differ, and where "oneDNN runs in graphs only" is false."""

    basis: str
    total: int
    rows: list[Row]
    names: list[str]
    differs_total: int
    premises: list[str]


class DumpCoverage(TypedDict):
    """What the dump counts, and the graph op types it did not."""

    modes: list[str]
    records: str
    gap: str
    uncounted_op_types: list[str]
    uncounted_total: int
    uncounted_profile_events: int
    uncounted_log_executions: int
    uncounted_time_ns: int
    outside_table: list[str]


class CpuFacts(TypedDict):
    features: Optional[list[str]]
    source: str
    note: str


class CutModes(TypedDict):
    """A mode whose counts the dump's circular buffer cut: what was kept, how we know."""

    records: int
    how: str
    fix: str
    kind: str


class DtypeCount(TypedDict):
    label: str
    executions: int


class DtypeTotals(TypedDict):
    modes: dict[str, list[DtypeCount]]
    low_precision: list[str]
    low_precision_op_types: int
    recorded: bool


class DeviceTotals(TypedDict):
    device: str
    eager: int
    graph: int


class UnknownOp(TypedDict):
    op_type: str
    mode: str
    executions: int


class UnknownGroup(TypedDict):
    """Executions of unknown kernel for one reason, with how to find out."""

    what: str
    why: str
    how: str
    executions: int
    ops: list[UnknownOp]


class Unknowns(TypedDict):
    groups: list[UnknownGroup]
    groups_total: int
    executions: int
    without_reason: int
    without_reason_how: str


class CappedVerbose(TypedDict):
    primitives: list[Primitive]
    primitives_total: int
    note: str


class ProfileFacts(TypedDict):
    events: int
    span_ns: int
    debug_instrumentation_time_ns: int
    time_source: list[str]


class FunctionBrief(TypedDict):
    """A Python function of the trace ledger, in brief: its traces and its calls."""

    name: str
    traces: int
    calls: int
    nested: bool


class FunctionsBrief(TypedDict):
    """The overview's tf.functions, as the Functions card counts them: ``python_functions``
    of the ledger, their ``traces`` (one graph each) and ``calls`` from Python; and the
    ``other_graphs`` called that are no trace of the ledger (TF's own, such as
    ``initialize_variables``), which ``functions`` (every graph called) also holds."""

    python_functions: int
    traces: int
    calls: int
    functions: list[FunctionBrief]
    other_graphs: list[FunctionCalls]


class Overview(TypedDict):
    """The run at a glance and in full (the overview route)."""

    run: str
    tensorflow_version: str
    hosts: list[str]
    onednn_enabled: Optional[bool]
    onednn_source: str
    onednn_state: str
    onednn_reason: str
    counts_from: str
    count_basis: dict[str, str]
    recording: Optional[RecordingDoc]
    sources: dict[str, list[str]]
    warnings: list[str]
    warnings_total: int
    functions: list[FunctionCalls]
    functions_total: int
    tf_functions: FunctionsBrief
    op_types_total: int
    onednn_verbose: Optional[CappedVerbose]
    modes: dict[str, ModeTotals]
    matrix: list[MatrixCell]
    kinds: list[KindCell]
    glance: Glance
    dump: Optional[DumpCoverage]
    cpu: CpuFacts
    xla_functions: list[XlaFunction]
    lower_bound: dict[str, CutModes]
    dtypes: DtypeTotals
    devices: list[DeviceTotals]
    devices_none: dict[str, int]
    unknowns: Unknowns
    profile: ProfileFacts


# ---------------------------------------------------------------- the comparison

class RunBrief(TypedDict):
    """A run as the comparison names it: ``evidence``, what it was made from, in words;
    a recorded run's ``command`` and how it ``ended`` (else [] and "")."""

    run: str
    tensorflow_version: str
    onednn_enabled: Optional[bool]
    onednn_source: str
    onednn_state: str
    onednn_reason: str
    evidence: str
    command: list[str]
    ended: str


class CompareSide(TypedDict):
    """``seen``, per kernel: whether a log line or profile event shows it run (False for
    no kernel, a folded node, an unknown or inferred kernel)."""

    executions: int
    kernels: list[str]
    classes: list[str]
    seen: list[bool]
    time_ns: Optional[int]


class CompareMode(TypedDict):
    a: CompareSide
    b: CompareSide
    time_delta_ns: Optional[int]


class CompareRow(TypedDict):
    op_type: str
    eager: CompareMode
    graph: CompareMode
    changes: list[str]
    kernel_changed: bool


class Comparison(TypedDict):
    """Two runs compared (the compare route)."""

    a: RunBrief
    b: RunBrief
    evidence_note: str
    total: int
    kernel_changes: int
    evidence_changes: int
    page: int
    page_size: int
    rows: list[CompareRow]


# ---------------------------------------------------------------- the timeline window

class Nearest(TypedDict):
    before: Optional[int]
    after: Optional[int]


class _TimelineOptional(TypedDict, total=False):
    nearest: Nearest
    labels: dict[str, str]   # a tf.function's graph name -> its Python function's
    graph: str               # the concrete function whose calls alone the window holds


class _TimelineBase(_TimelineOptional):
    start: int
    end: int
    span_ns: int
    t0_ns: int
    lanes: list[str]
    classes: list[str]
    total: int
    names: list[str]
    fused: list[int]


class TimelineEvents(_TimelineBase):
    """A window of few events: each [lane, start, dur, name id, kernel id, class]."""

    level: Literal["events"]
    events: list[list[int]]


class TimelineBins(_TimelineBase):
    """A window of many events, binned: each [lane, start, end, count, busy ns, class,
    name id, oneDNN count]."""

    level: Literal["bins"]
    bins: list[list[int]]
    bin_ns: int


TimelineWindow = Union[TimelineEvents, TimelineBins]


# ---------------------------------------------------------------- reading a mode

@overload
def of_mode(by_mode: OpTypeDoc, mode: str) -> ModeDoc: ...
@overload
def of_mode(by_mode: Row, mode: str) -> RowMode: ...
@overload
def of_mode(by_mode: CompareRow, mode: str) -> CompareMode: ...


def of_mode(by_mode: Union[OpTypeDoc, Row, CompareRow], mode: str
            ) -> Union[ModeDoc, RowMode, CompareMode]:
    """The stats of one mode (one of ``vocab.MODES``) of a row: a ``TypedDict`` is read by
    literal keys, the modes are the vocabulary's words (``data.js``'s ``ofMode``)."""
    if mode == EAGER:
        return by_mode["eager"]
    if mode == GRAPH:
        return by_mode["graph"]
    raise KeyError(mode)
