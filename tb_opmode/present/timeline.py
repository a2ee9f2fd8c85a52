"""The tab's timeline: a run's profiled events in lanes, windows of them, a Perfetto trace.

In: a ``RunModel`` with profiles (``assemble.build_run``), turned once by
``build_timeline`` into a ``Timeline``: per lane (tf.function calls, eager ops, graph ops) its
events sorted by start, in ns from the run's first event. Out: ``timeline_window``
(the events overlapping a window, or bins of them when there are too many) and
``export_trace`` (Chrome trace-event JSON that opens in Perfetto), either of them
optionally of one concrete function's calls only (``graph``: its calls and the graph ops
inside them, ``_Filter``).

Which op type a graph node ran for, and which kernel an eager event is put down
to, come from ``explain.node_op_types`` and ``explain.eager_kernels``: the same
mapping that gives the op table and the mode x class matrix their time, so the
three agree. Bad parameters raise ``errors.BadParameter`` (a ``ValueError``; the plugin answers 400).
"""
from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from ..analyze.explain import eager_kernels, node_op_types
from ..analyze.kernels import is_fused
from ..analyze.nodes import canonical_op
from ..errors import BadParameter
from ..model import RunModel
from ..vocab import PLUMBING_KERNELS, REMOVED, UNKNOWN, is_debug_kernel, is_function, is_onednn
from .lead import function_words

__all__ = ["Timeline", "build_timeline", "timeline_window", "export_trace", "LANES", "CLASSES",
           "MAX_EVENTS", "MAX_TRACE_EVENTS"]

# Lanes, top to bottom.
LANES = ("function", "eager", "graph")
# Box classes (index = code in the JSON).
CLASSES = ("eager_onednn", "eager_stock", "eager_unknown", "graph_onednn", "graph_stock",
           "function", "debug")
_CLS = {name: i for i, name in enumerate(CLASSES)}
_ONEDNN = frozenset((_CLS["eager_onednn"], _CLS["graph_onednn"]))
MAX_EVENTS = 10000
MAX_TRACE_EVENTS = 6000
# Bins per lane at most, when a window holds more events than asked for.
MAX_BINS = 1000
_TRACKS = {"function": "tf.function calls (eager dispatch)", "eager": "eager ops",
           "graph": "graph ops (inside tf.function)"}
_KIND = {"eager_onednn": "oneDNN", "graph_onednn": "oneDNN", "eager_stock": "stock",
         "graph_stock": "stock", "debug": "tfdbg instrumentation"}


@dataclass
class _Lane:
    """Events of one lane, sorted by start (ns from the run's first event)."""

    starts: list[int] = field(default_factory=list)
    durs: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    classes: list[int] = field(default_factory=list)
    # Graph ops tf.data ran on its own threads (a dataset's function, run ahead of the
    # steps): they fall in the spans of calls they are not part of.
    data_thread: list[bool] = field(default_factory=list)
    max_dur: int = 0


@dataclass(frozen=True)
class _Subset:
    """Some events of a lane, by start: their indexes in it, their starts, the longest's
    duration (how far before a window an event overlapping it can start)."""

    index: Sequence[int]
    starts: Sequence[int]
    max_dur: int


@dataclass
class _Filter:
    """What a filter on one concrete function keeps, built on first use: per function
    name, the indexes of its calls in the function lane; per function asked for, the
    events of each lane it keeps."""

    calls: dict[str, list[int]]
    kept: dict[str, dict[str, _Subset]] = field(default_factory=dict)


@dataclass
class Timeline:
    """A run's profiled events per lane; never changed once built (but for the cache of
    what a filter on a function keeps, filled on first use)."""

    lanes: dict[str, _Lane]
    t0_ns: int
    span_ns: int
    debug_time_ns: int  # time of tfdbg's instrumentation (hidden unless asked for)
    by_function: Optional[_Filter] = field(default=None, init=False, repr=False, compare=False)

    @property
    def events(self) -> int:
        return sum(len(lane.starts) for lane in self.lanes.values())


# One profiled event: start and duration (ns), label, kernel, op type, class code, and
# whether tf.data ran it on one of its threads.
_Event = tuple[int, int, str, str, str, int, bool]


def build_timeline(model: RunModel) -> Timeline:
    """Sort the run's profiled events into lanes (run once per load)."""
    raw = _events_by_lane(model)
    every = [e for events in raw.values() for e in events]
    t0 = min((e[0] for e in every), default=0)
    end = max((e[0] + e[1] for e in every), default=t0)
    debug_time = sum(max(0, e[1]) for e in every if e[5] == _CLS["debug"])
    lanes = {name: _lane(events, t0) for name, events in raw.items()}
    return Timeline(lanes=lanes, t0_ns=t0, span_ns=end - t0, debug_time_ns=debug_time)


def _events_by_lane(model: RunModel) -> dict[str, list[_Event]]:
    """The run's profiled events per lane, as the profiles list them."""
    raw: dict[str, list[_Event]] = {lane: [] for lane in LANES}
    eager_kernel = eager_kernels(model)
    op_of = node_op_types(model)
    for prof in model.profiles:
        for op_type, is_func, start, dur in prof.eager_ops:
            lane, event = _eager_event(op_type, is_func, start, dur, eager_kernel)
            raw[lane].append(event)
        data_thread = {i for first, end in prof.data_thread_ops for i in range(first, end)}
        raw["graph"] += [_graph_event(node, kernel, start, dur, op_of, at in data_thread)
                         for at, (node, kernel, start, dur) in enumerate(prof.graph_ops)
                         if kernel not in PLUMBING_KERNELS]
    return raw


def _eager_event(op_type: str, is_func: bool, start: int, dur: int,
                 eager_kernel: dict[str, str]) -> tuple[str, _Event]:
    """(lane, event) of an eager op or a tf.function call."""
    if is_func or is_function(op_type):
        return "function", (start, dur, op_type, "", op_type, _CLS["function"], False)
    kernel = eager_kernel.get(op_type, "")
    if kernel in (REMOVED, UNKNOWN):
        kernel = ""  # no kernel is known to have run it: the table's "unknown"
    if is_debug_kernel(op_type):
        cls = "debug"
    elif not kernel:
        cls = "eager_unknown"
    else:
        cls = "eager_onednn" if is_onednn(kernel) else "eager_stock"
    return "eager", (start, dur, op_type, kernel, op_type, _CLS[cls], False)


def _graph_event(node: str, kernel: str, start: int, dur: int, op_of: dict[str, str],
                 data_thread: bool) -> _Event:
    """The event of a graph node, put down to its op type."""
    if is_debug_kernel(kernel):
        cls = "debug"
    else:
        cls = "graph_onednn" if is_onednn(kernel) else "graph_stock"
    op_type = op_of.get(node) or canonical_op(kernel)
    return (start, dur, node, kernel, op_type, _CLS[cls], data_thread)


def _lane(events: list[_Event], t0: int) -> _Lane:
    """A lane of ``events``, sorted by start (the longest first at a tie), from ``t0``."""
    events.sort(key=lambda e: (e[0], -e[1]))
    lane = _Lane()
    for start, dur, label, kernel, op_type, cls_id, data_thread in events:
        lane.starts.append(start - t0)
        lane.durs.append(max(0, dur))
        lane.names.append(label)
        lane.kernels.append(kernel)
        lane.ops.append(op_type)
        lane.classes.append(cls_id)
        lane.data_thread.append(data_thread)
    lane.max_dur = max(lane.durs, default=0)
    return lane


def _bounds(tl: Timeline, start: Optional[int], end: Optional[int]) -> tuple[int, int]:
    lo = 0 if start is None else start
    hi = tl.span_ns + 1 if end is None else end
    if hi <= lo:
        raise BadParameter("end must be greater than start")
    return lo, hi


def _overlapping(tl: Timeline, lo: int, hi: int, debug: bool,
                 graph: str) -> Iterator[tuple[int, int]]:
    """(lane index, event index) of the events overlapping [lo, hi), lane by lane (of
    ``graph``'s calls only, when it is given)."""
    for li, lane, shown in _shown(tl, graph):
        first = bisect.bisect_left(shown.starts, lo - shown.max_dur)
        last = bisect.bisect_left(shown.starts, hi)
        for i in shown.index[first:last]:
            if lane.starts[i] + lane.durs[i] < lo:
                continue
            if not debug and lane.classes[i] == _CLS["debug"]:
                continue
            yield li, i


def _shown(tl: Timeline, graph: str) -> list[tuple[int, _Lane, _Subset]]:
    """(lane index, lane, the events it shows) of each lane that shows any: all its events,
    or with ``graph`` those a filter on that function keeps."""
    kept = _kept(tl, graph) if graph else {}
    out = []
    for li, lane_name in enumerate(LANES):
        lane = tl.lanes.get(lane_name)
        if lane is None or not lane.starts:
            continue
        shown = kept.get(lane_name) if graph else _Subset(range(len(lane.starts)), lane.starts,
                                                          lane.max_dur)
        if shown is not None and shown.index:
            out.append((li, lane, shown))
    return out


def _kept(tl: Timeline, graph: str) -> dict[str, _Subset]:
    """The events of each lane a filter on the concrete function ``graph`` keeps: its calls
    in the function lane, the graph ops that lie within one of them (not those tf.data ran
    on its threads), no eager op (Python waits in the call). Cached per function the run
    called; a name it did not call keeps nothing."""
    # ``graph`` is the trace ledger's name of a trace, taken from the dump's execution
    # records: like the profile's event of the call (its eager_op stat), they name the op
    # type TF executed, the concrete function's name, so the two are matched as they are.
    if tl.by_function is None:
        tl.by_function = _Filter(_calls_by_function(tl.lanes.get("function")))
    cache = tl.by_function
    found = cache.kept.get(graph)
    if found is None:
        calls = cache.calls.get(graph)
        if calls is None:
            return {}
        found = cache.kept[graph] = _kept_of(tl, calls)
    return found


def _calls_by_function(lane: Optional[_Lane]) -> dict[str, list[int]]:
    """Function name -> the indexes of its calls in the function lane, by start."""
    out: dict[str, list[int]] = {}
    for i, name in enumerate(lane.names if lane is not None else ()):
        out.setdefault(name, []).append(i)
    return out


def _kept_of(tl: Timeline, calls: list[int]) -> dict[str, _Subset]:
    """The calls (indexes in the function lane) and the graph ops inside their spans."""
    out = {"function": _subset(tl.lanes["function"], calls)}
    graph_lane = tl.lanes.get("graph")
    if graph_lane is not None:
        spans = _merged_spans(tl.lanes["function"], calls)
        out["graph"] = _subset(graph_lane, _inside(graph_lane, spans))
    return out


def _subset(lane: _Lane, index: list[int]) -> _Subset:
    return _Subset(index, [lane.starts[i] for i in index],
                   max((lane.durs[i] for i in index), default=0))


def _merged_spans(lane: _Lane, calls: list[int]) -> list[tuple[int, int]]:
    """The [start, end] spans of ``calls`` (by start), overlapping ones merged: sorted and
    disjoint, so that an op inside two calls (of two threads) is kept once."""
    spans: list[tuple[int, int]] = []
    for i in calls:
        start, end = lane.starts[i], lane.starts[i] + lane.durs[i]
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


def _inside(lane: _Lane, spans: list[tuple[int, int]]) -> list[int]:
    """Indexes, by start, of the lane's events that start and end within one of ``spans``
    (sorted, disjoint), but those tf.data ran on its own threads."""
    out: list[int] = []
    for start, end in spans:
        first = bisect.bisect_left(lane.starts, start)
        last = bisect.bisect_right(lane.starts, end)
        out += [i for i in range(first, last)
                if lane.starts[i] + lane.durs[i] <= end and not lane.data_thread[i]]
    return out


class _Names:
    """The names a window's answer refers to by index, in the order first used."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def id(self, text: str) -> int:
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.ids)
        return found


def timeline_window(tl: Timeline, start: Optional[int] = None, end: Optional[int] = None,
                    max_events: int = 5000, debug: bool = False, graph: str = "") -> dict[str, Any]:
    """Events (or bins when there are more than ``max_events``) overlapping [start, end) ns.

    Times are nanoseconds from the run's first profiled event. Each event is
    ``[lane, start, dur, name, kernel, class]`` with lane/name/kernel indexes
    into ``lanes``/``names`` and class an index into ``classes``; each bin is
    ``[lane, start, end, count, busy_ns, class, name, onednn_count]``, where an event counts
    in every bin it overlaps (with the part of its time in the bin). ``fused`` lists the
    indexes in ``names`` of kernels grappler's remapper fused from several ops (the tab
    marks their boxes; their colour stays mode x oneDNN).

    ``graph``, a concrete function's name as the function lane's events carry it (the
    trace ledger's ``graph``, e.g. ``__inference_step_120``), keeps only that function's
    calls and the graph ops inside them, and says so (``graph`` in the answer); ``span_ns``
    and ``t0_ns`` stay the run's. A graph op runs on the executor's threads, not nested
    under the call in the profile, so what ties it to a call is its time: it is kept when it
    starts and ends within the call's span. A function that ran on another thread at the
    same time would have its ops kept too; the ops tf.data ran on its own threads (a
    dataset's function, ahead of the steps) are not. No eager op is kept: Python waits in
    the call. A name the run did not call keeps nothing (an empty window, ``nearest``
    None), as the profile may hold none of a trace's calls.
    """
    if not 1 <= max_events <= MAX_EVENTS:
        raise BadParameter(f"max_events must be between 1 and {MAX_EVENTS}")
    lo, hi = _bounds(tl, start, end)
    picked = list(_overlapping(tl, lo, hi, debug, graph))
    names = _Names()
    out: dict[str, Any] = {"start": lo, "end": hi, "span_ns": tl.span_ns,
                           "t0_ns": tl.t0_ns, "lanes": list(LANES),
                           "classes": list(CLASSES), "total": len(picked)}
    if graph:
        out["graph"] = graph
    fused: set[int] = set()
    if len(picked) <= max_events:
        out["level"] = "events"
        out["events"] = _event_rows(tl, picked, names, fused)
    else:
        binning = _Binning(lo, hi, max_events)
        for li, i in picked:
            binning.add(li, tl.lanes[LANES[li]], i)
        out["level"] = "bins"
        out["bin_ns"] = binning.width
        out["bins"] = binning.rows(names)
    if not picked:
        out["nearest"] = _nearest(tl, lo, hi, debug, graph)
    out["names"] = list(names.ids)
    labels = {name: function_words(name) for name in names.ids if is_function(name)}
    if labels:
        out["labels"] = labels
    out["fused"] = sorted(fused)
    return out


def _event_rows(tl: Timeline, picked: list[tuple[int, int]], names: _Names,
                fused: set[int]) -> list[list[int]]:
    """The picked events as ``[lane, start, dur, name, kernel, class]``; the names of
    fused kernels are added to ``fused``."""
    rows = []
    for li, i in picked:
        lane = tl.lanes[LANES[li]]
        kernel = lane.kernels[i]
        rows.append([li, lane.starts[i], lane.durs[i], names.id(lane.names[i]),
                     names.id(kernel), lane.classes[i]])
        if kernel and is_fused(kernel):
            fused.add(names.ids[kernel])
    return rows


@dataclass
class _Bin:
    """The events of one lane in one bin: how many, their time in it, and the class and
    name that take most of it."""

    count: int = 0
    busy: int = 0
    classes: Counter[int] = field(default_factory=Counter)
    labels: Counter[str] = field(default_factory=Counter)
    onednn: int = 0


class _Binning:
    """[lo, hi) cut into equal bins, as many as ``max_events`` allows per lane."""

    def __init__(self, lo: int, hi: int, max_events: int) -> None:
        self.lo, self.hi = lo, hi
        self.count = max(1, min(MAX_BINS, max_events // len(LANES)))
        self.width = max(1, -(-(hi - lo) // self.count))
        self.bins: dict[tuple[int, int], _Bin] = {}

    def add(self, li: int, lane: _Lane, i: int) -> None:
        """Count event ``i`` of lane ``li`` in every bin it spans, with the part of it that
        falls there: an event longer than a bin is drawn over all its bins, not as a
        1-px tick."""
        s, d = lane.starts[i], lane.durs[i]
        a, z = max(s, self.lo), min(s + d, self.hi)
        first = max(0, min(self.count - 1, (a - self.lo) // self.width))
        last = max(first, min(self.count - 1, (max(a, z - 1) - self.lo) // self.width))
        for b in range(first, last + 1):
            b_lo = self.lo + b * self.width
            part = max(0, min(z, b_lo + self.width) - max(a, b_lo))
            entry = self.bins.setdefault((li, b), _Bin())
            entry.count += 1
            entry.busy += part
            entry.classes[lane.classes[i]] += max(1, part)
            entry.labels[lane.names[i]] += max(1, part)
            entry.onednn += 1 if lane.classes[i] in _ONEDNN else 0

    def rows(self, names: _Names) -> list[list[int]]:
        """``[lane, start, end, count, busy_ns, class, name, onednn_count]`` per bin."""
        out = []
        for (li, b), entry in sorted(self.bins.items()):
            start = self.lo + b * self.width
            out.append([li, start, min(self.hi, start + self.width), entry.count, entry.busy,
                        entry.classes.most_common(1)[0][0],
                        names.id(entry.labels.most_common(1)[0][0]), entry.onednn])
        return out


def _nearest(tl: Timeline, lo: int, hi: int, debug: bool, graph: str) -> dict[str, Optional[int]]:
    """Where the closest events are when [lo, hi) holds none: the latest end before ``lo``
    and the earliest start at or after ``hi`` (ns from the run's first event, or None), of
    the events shown (``graph``'s only, when given)."""
    ends: list[int] = []
    starts: list[int] = []
    for _li, lane, shown in _shown(tl, graph):
        after = _next_shown(lane, shown, bisect.bisect_left(shown.starts, hi), 1, debug)
        if after < len(shown.index):
            starts.append(shown.starts[after])
        before = _next_shown(lane, shown, bisect.bisect_left(shown.starts, lo) - 1, -1, debug)
        if before >= 0:
            i = shown.index[before]
            ends.append(lane.starts[i] + lane.durs[i])
    return {"before": max(ends, default=None), "after": min(starts, default=None)}


def _next_shown(lane: _Lane, shown: _Subset, at: int, step: int, debug: bool) -> int:
    """The position in ``shown`` of the first event from ``at`` on, going by ``step``, that
    is drawn (tfdbg's instrumentation only with ``debug``); past either end if none is."""
    while (0 <= at < len(shown.index) and not debug
           and lane.classes[shown.index[at]] == _CLS["debug"]):
        at += step
    return at


def export_trace(tl: Timeline, run: str, tensorflow_version: str, start: Optional[int] = None,
                 end: Optional[int] = None, max_events: int = MAX_TRACE_EVENTS,
                 debug: bool = False, graph: str = "") -> dict[str, Any]:
    """Chrome trace-event JSON (opens in Perfetto): one track per lane, mode and kernel in
    names; with ``graph``, of that function's calls only, as ``timeline_window`` keeps them."""
    if not 1 <= max_events <= MAX_TRACE_EVENTS:
        raise BadParameter(f"max_events must be between 1 and {MAX_TRACE_EVENTS}")
    lo, hi = _bounds(tl, start, end)
    events = sorted((tl.lanes[LANES[li]].starts[i], li, i)
                    for li, i in _overlapping(tl, lo, hi, debug, graph))
    truncated = len(events) > max_events
    events = events[:max_events]
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
         "args": {"name": f"tb_opmode run {run}"}}]
    for li, lane_name in enumerate(LANES):
        trace.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": li + 1,
                      "args": {"name": _TRACKS[lane_name]}})
        trace.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": li + 1,
                      "args": {"sort_index": li}})
    for s, li, i in events:
        lane = tl.lanes[LANES[li]]
        cls = CLASSES[lane.classes[i]]
        kernel = lane.kernels[i]
        if cls == "function":
            name = f"{lane.names[i]} [tf.function call]"
        else:
            mode = LANES[li]
            name = (f"{lane.names[i]} [{mode} · {kernel or 'kernel ?'} · "
                    f"{_KIND.get(cls, 'kernel unknown')}]")
        trace.append({"ph": "X", "name": name, "cat": cls, "pid": 1, "tid": li + 1,
                      "ts": (tl.t0_ns + s) / 1000.0, "dur": lane.durs[i] / 1000.0,
                      "args": {"op_type": lane.ops[i], "kernel": kernel, "class": cls}})
    other: dict[str, Any] = {"run": run, "tensorflow_version": tensorflow_version,
                             "events": len(events), "truncated": truncated, "window_ns": [lo, hi]}
    if graph:
        other["graph"] = graph
    return {"traceEvents": trace, "displayTimeUnit": "ns", "otherData": other}
