"""The shapes of the summary JSON (``contract.summary``: ``SummaryDoc``, ``RunDoc`` and
what a run holds), as ``TypedDict``s.

In: nothing. Out: one ``TypedDict`` per object of the summary contract, which the CLI's
``--format json``, the report and the tab's export serve. ``payloads`` re-exports them
beside the tab's route payloads, which build on them, and is where
``tests/unit/test_payload_types.py`` checks both against ``frontend/data.js``.
"""
from __future__ import annotations

from typing import Any, Optional, TypedDict

__all__ = [
    "TimeDoc", "KernelDoc", "ModeDoc", "OpTypeDoc", "FunctionCalls", "TraceDoc",
    "TfFunction", "FunctionsPayload", "Primitive", "OnednnVerbose", "XlaFunction",
    "TimeShareCell", "TimeShare", "EagerSiteDoc", "HotSpot", "HotSpots", "RecordingDoc",
    "RunDoc", "SummaryDoc",
]


# ---------------------------------------------------------------- the summary contract

class TimeDoc(TypedDict):
    """Profiled time of a kernel or of a mode."""

    events: int
    total_ms: float
    mean_us: float


class _KernelDocOptional(TypedDict, total=False):
    notes: list[str]
    fused_into: list[str]
    time: TimeDoc


class KernelDoc(_KernelDocOptional):
    """A kernel of an op type in one mode (``contract``)."""

    name: str
    executions: int
    onednn: bool
    evidence: str


class _ModeOptional(TypedDict, total=False):
    time: TimeDoc
    explanation: str


class ModeDoc(_ModeOptional):
    """An op type in one mode (``contract``)."""

    executions: int
    kernels: list[KernelDoc]


class OpTypeDoc(TypedDict):
    """An op type of a run, per mode (``contract``)."""

    op_type: str
    eager: ModeDoc
    graph: ModeDoc


class FunctionCalls(TypedDict):
    name: str
    calls: int


class TraceDoc(TypedDict):
    """One trace (concrete function) of a tf.function (``analyze.traces.TraceEntry``)."""

    graph: str
    graph_id: str
    calls: int
    call_sites: list[str]
    args: list[dict[str, Any]]
    changed: list[dict[str, Any]]
    note: str
    tracing_s: Optional[float]
    tracing_from: str


class TfFunction(TypedDict):
    """One Python function run as a tf.function: the trace ledger
    (``analyze.traces.FunctionLedger``)."""

    python_name: str
    name: str
    location: str
    kind: str
    nested: bool
    objects: int
    traces: int
    calls: int
    tracing_s: Optional[float]
    tracing_from: str
    causes: dict[str, int]
    advice: list[str]
    trace_list: list[TraceDoc]


class FunctionsPayload(TypedDict):
    """The Functions section (the functions route, ``tab/functions.functions``); ``empty``:
    what to say where the run lists no trace (``ledger.no_traces_text``), else ""."""

    run: str
    total: int
    functions: list[TfFunction]
    empty: str


class Primitive(TypedDict):
    """ONEDNN_VERBOSE primitives of one kind and implementation."""

    kind: str
    implementation: str
    prop_kind: str
    count: int
    time_ms: float


class OnednnVerbose(TypedDict):
    primitives: list[Primitive]
    note: str


class XlaFunction(TypedDict):
    name: str
    launches: int
    calls_in_dump: int
    note: str


TimeShareCell = TypedDict("TimeShareCell", {"mode": str, "class": str, "ms": float,
                                            "share": float})


class TimeShare(TypedDict):
    """``analyze.explain.time_share``: profiled time per mode and kernel class."""

    total_ms: float
    cells: list[TimeShareCell]


class EagerSiteDoc(TypedDict):
    """A line of the user's code and the eager work it issued (``analyze.eager_sites``):
    ``time_ns`` null where no profile covered it (``time_note`` says why); ``time_source``
    "profile" (joined events), "dispatch" (the recording job's clock) or ""."""

    location: str
    user_location: str
    executions: int
    time_ns: Optional[int]
    op_types: dict[str, int]
    user_function: str
    user_scope: str
    location_function: str
    library_location: str
    library_function: str
    share: float
    time_share: Optional[float]
    profiled_executions: int
    time_note: str
    time_source: str
    calls: Optional[int]
    advice: list[str]


class HotSpot(EagerSiteDoc):
    """A line of the tab's eager hot spots: the contract's, its op types capped."""

    op_types_total: int


class HotSpots(TypedDict):
    """The eager hot spots section (``tab.hot_spots``): the run's lines ranked, the first
    ones; the run's eager executions and profiled eager time (null: no profile joined), and
    how much of that time is joined to a line (``joined_ns``; the rest is of eager ops the
    dump records no execution of, which no line can be found for); ``time_source`` as the
    lines' (for "dispatch", ``time_ns`` is the time of the dispatches the job counted)."""

    run: str
    sites: list[HotSpot]
    total: int
    executions: int
    time_ns: Optional[int]
    joined_ns: Optional[int]
    time_source: str
    note: str
class RecordingDoc(TypedDict):
    """How ``tb-opmode record`` made a run (its manifest), and whether its kernels are
    the job's: ``note`` says where a tensor-reading dump changed them, ``fused_kernels``
    the fused kernels the ``kernels`` run ``compared_with`` of the same command ran; how
    the job ended: ``exit_status``, ``signal`` (None where unknown) and ``ended``, the two
    in words ("exited with status 1"; "" where the manifest does not say)."""

    evidence: str
    dump_mode: Optional[str]
    command: list[str]
    exit_status: Optional[int]
    signal: Optional[str]
    ended: str
    note: str
    compared_with: str
    fused_kernels: list[str]


class _RunDocOptional(TypedDict, total=False):
    # A run of several workers or devices only; ``analyze.workers``'s own shapes.
    workers: list[dict[str, Any]]
    collectives: list[dict[str, Any]]


class _RunFacts(_RunDocOptional):
    run: str
    tensorflow_version: str
    hosts: list[str]
    onednn_enabled: Optional[bool]
    onednn_source: str
    counts_from: str
    uncounted_graph_executions: int
    count_basis: dict[str, str]
    recording: Optional[RecordingDoc]
    sources: dict[str, list[str]]
    warnings: list[str]
    notes: list[str]
    functions: list[FunctionCalls]
    tf_functions: list[TfFunction]
    onednn_verbose: OnednnVerbose
    xla_functions: list[XlaFunction]
    time_share: TimeShare
    eager_sites: list[EagerSiteDoc]


class RunDoc(_RunFacts):
    """One run of the summary contract (``contract.run_json``)."""

    op_types: list[OpTypeDoc]


class SummaryDoc(TypedDict):
    """``tb-opmode summary --format json`` (``contract.summary``)."""

    version: str
    warnings: list[str]
    runs: list[RunDoc]
