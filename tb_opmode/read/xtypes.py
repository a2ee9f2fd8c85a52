"""What ``xplane`` (the reading) and ``xevents`` (the numpy decoding) of a profile share.

In: nothing of the package but ``Problem``. Out: ``Profile`` (what a profile's reading
holds), the host plane's name, the kinds of event metadata and ``_event_kinds``, which
sorts a plane's event metadata into them (the rules are in ``xplane.py``'s docstring).
A module of its own so that neither reader module imports the other's names back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import Problem
from .op_events import OpEvents

__all__ = ["Profile", "HOST_PLANE"]

HOST_PLANE = "/host:CPU"

# Graph op event name: a TF node name, ':', an op/kernel type name. Node names
# follow TF's node-name rule, so they hold no ':' and no space; that alone
# rejects every framework event we saw, all spelled with '::' or ': ':
#   ExecutorState::Process (the executor's per-node-batch wrapper),
#   ExecutorState::ProcessAsync::Done, ThreadpoolListener::{StartRegion,
#   StopRegion,Record} (2.21 thread-pool bookkeeping, zero duration),
#   KernelAndDeviceFunc::Run, IteratorGetNextOp::DoCompute, Iterator::Root...
#   (tf.data pipeline stages, not ops), EagerLocalExecute: <op> (eager
#   dispatch; the op is taken from EagerExecute's stat instead).
# Names without ':' (ExecutorDoneCallback, FunctionRun, PrefetchConsume,
# TFE_*, convert_to_tensor, tf.constant, ...) are not op executions either.
# OpKernel::TraceString may append "#k=v,...#" details (TfOpDetailsEnabled);
# not seen even with host_tracer_level=3 in 2.13/2.21, but cut off if there.
_OP_NAME = re.compile(r"([A-Za-z0-9.][A-Za-z0-9_.\-/>]*):([A-Za-z_][A-Za-z0-9_]*)")

_PROCESS = "ExecutorState::Process"
# The TraceMe around a tf.function's tracing (graph building), inside its call's event.
GRAPH_BUILDING = "tf.function-graph_building"
_ASYNC_START = "ExecutorState::ProcessAsync::Start"
# A line timestamp above this (year 1973) is already an epoch, not relative.
_EPOCH_MIN_NS = 10 ** 17

# Kinds of event metadata. _SCOPE: C++ scopes named "Class::Method" (the
# bulk of non-op events, e.g. ThreadpoolListener::Record); in 2.13/2.21 they
# never carry eager_op or tf_function_call, so their stats are not decoded.
# _DATA: a tf.data iterator's root stage (``Iterator::Root``, one per element produced), whose
# stats ``types`` and ``shapes`` give the dataset's element spec; 2.13 and 2.21 alike.
_OTHER, _OP, _EXEC, _ASYNC, _SCOPE, _DATA = 0, 1, 2, 3, 4, 5
_ITERATOR_ROOT = "Iterator::Root"


@dataclass
class Profile:
    """Op executions of one ``<host>.xplane.pb``; all times are epoch ns."""

    path: str
    host: str
    start_ns: int = 0
    end_ns: int = 0
    eager_ops: OpEvents = field(default_factory=OpEvents)
    """(op type from stat eager_op, is_func, start_ns, duration_ns); a list given is kept
    as ``OpEvents``"""
    graph_ops: OpEvents = field(default_factory=OpEvents)
    """(node_name as written, incl. call prefixes; kernel_type, start_ns, duration_ns)"""
    graph_tally: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    """(node, kernel) -> [events, total duration_ns] over ``graph_ops``, keys in the order
    each first occurs: summed by the decoder a window at a time (numpy's bincount over the
    events' metadata), so that ``analyze.tally`` need not walk every event again"""
    eager_tally: dict[tuple[str, bool], list[int]] = field(default_factory=dict)
    """(op type, is_func) -> [events, total duration_ns] over ``eager_ops``, likewise"""
    data_thread_ops: list[tuple[int, int]] = field(default_factory=list)
    """[first, end) index ranges of ``graph_ops`` that ran on tf.data's threads (a dataset's
    map function, at its own pace, not inside the tf.function call running meanwhile)"""
    function_calls: list[tuple[str, int, int]] = field(default_factory=list)
    """(Python function name, start_ns, duration_ns), tracing included"""
    graph_building: list[tuple[int, int]] = field(default_factory=list)
    """(start_ns, duration_ns) of each ``tf.function-graph_building`` event: a tracing"""
    iterator_specs: list[tuple[str, str]] = field(default_factory=list)
    """Distinct element specs of the tf.data iterators that produced elements, in order of
    first event: (``types``, ``shapes``) as TF writes them, e.g. ("float int32",
    "[?,8,8,3] [?]"): DataTypeString names and shapes, one per component, space-separated"""
    problems: list[Problem] = field(default_factory=list)
    # Facts about how the file was read that are not damage (e.g. estimated times).
    notes: list[str] = field(default_factory=list)
    time_source: str = ""
    """"profile_start_time" (exact), "line_timestamps" (already epoch),
    "file_mtime" (estimated, TF 2.13) or "" (nothing read)."""

    def __post_init__(self) -> None:
        if not isinstance(self.eager_ops, OpEvents):
            self.eager_ops = OpEvents(self.eager_ops)
        if not isinstance(self.graph_ops, OpEvents):
            self.graph_ops = OpEvents(self.graph_ops)


def _event_kinds(plane: Any) -> dict[int, tuple[int, str, str, str]]:
    """metadata id -> (kind, event name, node, kernel); node and kernel only for _OP."""
    kinds: dict[int, tuple[int, str, str, str]] = {}
    fullmatch = _OP_NAME.fullmatch
    for entry in plane.event_metadata:
        md = entry.value
        name = md.name
        match = fullmatch(name.split("#", 1)[0] if "#" in name else name)
        if match:
            node, kernel = match.groups()
            display = md.display_name
            if not display or display == kernel:
                kinds[entry.key] = (_OP, name, node, kernel)
                continue
        if name == _PROCESS:
            kinds[entry.key] = (_EXEC, name, "", "")
        elif name == _ASYNC_START:
            kinds[entry.key] = (_ASYNC, name, "", "")
        elif name == _ITERATOR_ROOT:
            kinds[entry.key] = (_DATA, name, "", "")
        elif "::" in name:
            kinds[entry.key] = (_SCOPE, name, "", "")
        else:
            kinds[entry.key] = (_OTHER, name, "", "")
    return kinds
