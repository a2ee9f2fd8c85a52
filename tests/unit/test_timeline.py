"""The tab's timeline (``timeline.build_timeline``, ``timeline_window``, ``export_trace``) on the
committed run's profile.

In: ``full_model`` and the same ``.xplane.pb`` read by ``tests/xplane_reference.py``, a
plain event-by-event reading with our schema (no TensorFlow). Out: lanes that hold exactly
the profile's events, kernels that agree with the op table, windows and bins that keep
every event, and a Perfetto trace that names mode and kernel. A filter on one trace's
concrete function (``graph``) on the committed run and on a profile made up here with
two functions whose ops lie inside and outside their calls.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import is_onednn
from tb_opmode.present.ledger import tf_functions
from tb_opmode.present.timeline import CLASSES, LANES, Timeline, build_timeline, export_trace, timeline_window
from tb_opmode.read.xtypes import Profile
from tb_opmode.vocab import PLUMBING_KERNELS, is_debug_kernel
from tests.xplane_reference import reference_profile

from .conftest import Fixture


@pytest.fixture(scope="module")
def profile(full_health: Fixture) -> dict[str, Any]:
    (path,) = full_health.directory.glob("plugins/profile/*/*.xplane.pb")
    ref = reference_profile(path.read_bytes(), os.stat(path).st_mtime_ns)
    assert ref is not None
    return ref


@pytest.fixture(scope="module")
def tl(full_model: RunModel) -> Timeline:
    return build_timeline(full_model)


def test_lanes_hold_the_profiles_events(tl: Timeline, profile: dict[str, Any]) -> None:
    """tf.function calls, eager ops and graph ops (TF's plumbing nodes left out) as the plain reading has them."""
    calls = [e for e in profile["eager"] if e[1]]
    eager = [e for e in profile["eager"] if not e[1]]
    graph = [e for e in profile["graph"] if e[1] not in PLUMBING_KERNELS]
    assert calls and eager and graph
    assert {name: len(lane.starts) for name, lane in tl.lanes.items()} == {
        "function": len(calls), "eager": len(eager), "graph": len(graph)}
    lane = tl.lanes["graph"]
    assert Counter(zip(lane.names, lane.kernels)) == Counter((node, kernel) for node, kernel, _s, _d in graph)
    t0 = min(e[2] for e in calls + eager + graph)
    assert tl.t0_ns == t0 and min(min(x.starts) for x in tl.lanes.values()) == 0
    for name, lane in tl.lanes.items():
        assert lane.starts == sorted(lane.starts), name


def test_classes_are_mode_by_onednn(tl: Timeline) -> None:
    for mode in ("eager", "graph"):
        lane = tl.lanes[mode]
        for kernel, cls in zip(lane.kernels, lane.classes):
            name = CLASSES[cls]
            if name == "debug":
                continue
            assert name.startswith(mode), (kernel, name)
            if kernel:
                assert name.endswith("onednn") == is_onednn(kernel), (kernel, name)
    assert {CLASSES[c] for c in tl.lanes["function"].classes} == {"function"}


def test_graph_boxes_carry_the_tables_kernels(tl: Timeline, full_model: RunModel) -> None:
    """A graph node the op table linked to a dump op has, in the timeline, that op's kernel."""
    table = {op.node: op.kernel for op in full_model.graph_ops if op.node and op.evidence == "log"}
    lane = tl.lanes["graph"]
    checked = 0
    for node, kernel in zip(lane.names, lane.kernels):
        if node in table and not table[node].startswith("("):
            assert kernel == table[node], node
            checked += 1
    assert checked >= 5
    assert "_MklMatMul" in lane.kernels


def test_eager_boxes_carry_the_tables_eager_kernel(tl: Timeline, full_model: RunModel) -> None:
    kernels: dict[str, set[str]] = {}
    for e in full_model.eager_ops:
        kernels.setdefault(e.op_type, set()).add(e.kernel)
    lane = tl.lanes["eager"]
    for op, kernel in zip(lane.ops, lane.kernels):
        if len(kernels.get(op, ())) == 1:
            assert {kernel} == kernels[op], op


def test_window_of_everything(tl: Timeline) -> None:
    every = timeline_window(tl, max_events=5000, debug=True)
    assert every["level"] == "events" and every["total"] == tl.events == len(every["events"])
    hidden = timeline_window(tl, max_events=5000)
    debug = sum(CLASSES[c] == "debug" for lane in tl.lanes.values() for c in lane.classes)
    assert debug > 0 and hidden["total"] == tl.events - debug
    names = hidden["names"]
    assert all(not is_debug_kernel(names[e[4]]) for e in hidden["events"])


def test_window_keeps_only_overlapping_events(tl: Timeline) -> None:
    lo, hi = tl.span_ns // 3, 2 * tl.span_ns // 3
    got = timeline_window(tl, lo, hi, max_events=5000, debug=True)
    expected = sum(1 for lane in tl.lanes.values() for s, d in zip(lane.starts, lane.durs)
                   if s < hi and s + max(d, 0) > lo or lo <= s < hi)
    assert got["total"] == expected == len(got["events"])
    for _lane, start, dur, *_rest in got["events"]:
        assert start < hi and (start + dur > lo or start >= lo)


def test_bins_count_every_event(tl: Timeline) -> None:
    """Over ``max_events`` the window is binned; each event counts in at least one bin,
    per lane, and the oneDNN count never exceeds the bin's."""
    binned = timeline_window(tl, max_events=30)
    plain = timeline_window(tl, max_events=5000)
    assert binned["level"] == "bins" and binned["total"] == plain["total"] > 30
    per_lane: Counter[int] = Counter()
    for li, start, end, count, busy, _cls, _name, onednn in binned["bins"]:
        per_lane[li] += count
        assert start < end and 0 <= busy <= (end - start) * count and onednn <= count
    events = Counter(e[0] for e in plain["events"])
    for li, n in events.items():
        assert per_lane[li] >= n, LANES[li]


def test_perfetto_trace(tl: Timeline, full_model: RunModel) -> None:
    trace = export_trace(tl, ".", full_model.tensorflow_version)
    json.dumps(trace, allow_nan=False)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == trace["otherData"]["events"] == timeline_window(tl, max_events=5000)["total"]
    assert not trace["otherData"]["truncated"]
    threads = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert len(threads) == len(LANES)
    matmuls = [e for e in slices if e["args"]["kernel"] == "_MklMatMul"]
    assert matmuls and all("[graph · _MklMatMul · oneDNN]" in e["name"] for e in matmuls)
    assert all(e["ts"] >= tl.t0_ns / 1000.0 and e["dur"] >= 0 for e in slices)
    short = export_trace(tl, ".", full_model.tensorflow_version, max_events=5)
    assert short["otherData"]["truncated"] and short["otherData"]["events"] == 5


@pytest.mark.parametrize("bad", [0, 10**9])
def test_bad_max_events(tl: Timeline, bad: int) -> None:
    with pytest.raises(ValueError, match="max_events"):
        timeline_window(tl, max_events=bad)
    with pytest.raises(ValueError, match="max_events"):
        export_trace(tl, ".", "", max_events=bad)


def test_empty_model_has_an_empty_timeline() -> None:
    tl = build_timeline(RunModel(run=".", directory="/run"))
    window = timeline_window(tl)
    assert tl.events == 0 and window["total"] == 0 and window["events"] == []


# ---------------------------------------------------------------- a filter on one function

F, G = "__inference_f_11", "__inference_g_22"
# Epoch ns. f is called twice, g once; the graph ops lie inside or across their spans.
_CALLS = [(F, True, 1000, 1000), (G, True, 3000, 1000), (F, True, 5000, 1000)]
_GRAPH = [
    ("f/matmul", "_MklMatMul", 1100, 200),     # inside f's first call
    ("f/tail", "_MklMatMul", 1900, 200),       # starts in it, ends after it: not inside
    ("h/concurrent", "AddV2", 1400, 100),      # another thread's, in f's span: kept with f
    ("data/map", "Cast", 1200, 50),            # tf.data's thread (below): not f's
    ("f/debug", "DebugIdentityV2", 1600, 10),  # tfdbg's, in f's span: kept, shown with debug
    ("g/relu", "_MklRelu", 3100, 100),         # inside g's call
    ("f/add", "AddV2", 5500, 100),             # inside f's second call
    ("late", "AddV2", 7000, 10),               # inside no call
]


@pytest.fixture(scope="module")
def two_functions() -> Timeline:
    prof = Profile(path="/run/plugins/profile/1/h.xplane.pb", host="h",
                   eager_ops=[("AddV2", False, 500, 100), ("Mul", False, 6500, 50), *_CALLS],
                   graph_ops=list(_GRAPH), data_thread_ops=[(3, 4)])
    return build_timeline(RunModel(run=".", directory="/run", profiles=[prof]))


def _kept(window: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """(lane, name, epoch start, duration) of a window's events."""
    return [(window["lanes"][e[0]], window["names"][e[3]], e[1] + window["t0_ns"], e[2])
            for e in window["events"]]


def test_a_function_keeps_its_calls_and_the_graph_ops_inside_them(two_functions: Timeline) -> None:
    got = timeline_window(two_functions, graph=F)
    assert got["graph"] == F and got["t0_ns"] == 500 and got["span_ns"] == 6510
    assert _kept(got) == [("function", F, 1000, 1000), ("function", F, 5000, 1000),
                          ("graph", "f/matmul", 1100, 200), ("graph", "h/concurrent", 1400, 100),
                          ("graph", "f/add", 5500, 100)]
    debug = timeline_window(two_functions, graph=F, debug=True)
    assert ("graph", "f/debug", 1600, 10) in _kept(debug) and debug["total"] == got["total"] + 1
    assert _kept(timeline_window(two_functions, graph=G)) == [
        ("function", G, 3000, 1000), ("graph", "g/relu", 3100, 100)]
    unfiltered = timeline_window(two_functions)
    assert "graph" not in unfiltered and unfiltered["total"] == 2 + 3 + len(_GRAPH) - 1


def test_a_filtered_window_and_its_nearest_events(two_functions: Timeline) -> None:
    """A window keeps the kept events that overlap it; an empty one points to the nearest
    kept events, not to another function's."""
    t0 = two_functions.t0_ns
    second = timeline_window(two_functions, 5400 - t0, 5450 - t0, graph=F)
    assert _kept(second) == [("function", F, 5000, 1000)]
    between = timeline_window(two_functions, 2500 - t0, 2600 - t0, graph=F)
    assert between["total"] == 0
    assert between["nearest"] == {"before": 2000 - t0, "after": 5000 - t0}
    assert timeline_window(two_functions, 2500 - t0, 2600 - t0)["nearest"]["after"] == 3000 - t0


@pytest.mark.parametrize("name", ["__inference_never_called_9", "one_step_on_data", "AddV2"])
def test_a_function_not_called_keeps_nothing(two_functions: Timeline, name: str) -> None:
    got = timeline_window(two_functions, graph=name)
    assert got["graph"] == name and got["total"] == 0 and got["events"] == []
    assert got["nearest"] == {"before": None, "after": None}
    assert got["span_ns"] == two_functions.span_ns


def test_the_trace_export_keeps_what_the_window_keeps(two_functions: Timeline) -> None:
    trace = export_trace(two_functions, ".", "", graph=G)
    slices = [(e["tid"], e["name"].split(" ")[0]) for e in trace["traceEvents"] if e["ph"] == "X"]
    assert slices == [(1, G), (3, "g/relu")]
    assert trace["otherData"]["graph"] == G and trace["otherData"]["events"] == 2
    assert "graph" not in export_trace(two_functions, ".", "")["otherData"]


def test_a_trace_of_the_committed_run_keeps_its_calls(tl: Timeline, full_model: RunModel) -> None:
    """The trace ledger's name of a called trace is the name its calls carry in the profile:
    the filtered window holds its calls and graph ops inside them, no eager op."""
    called = [t["graph"] for f in tf_functions(full_model) for t in f["trace_list"] if t["calls"]]
    assert called
    every = timeline_window(tl, max_events=5000)
    for graph in called:
        got = timeline_window(tl, max_events=5000, graph=graph)
        lanes = Counter(got["lanes"][e[0]] for e in got["events"])
        assert lanes["function"] >= 1 and lanes["graph"] >= 1 and not lanes["eager"], lanes
        spans = [(e[1], e[1] + e[2]) for e in got["events"] if got["lanes"][e[0]] == "function"]
        assert all(got["names"][e[3]] == graph for e in got["events"]
                   if got["lanes"][e[0]] == "function")
        for _lane, start, dur, *_rest in (e for e in got["events"] if got["lanes"][e[0]] == "graph"):
            assert any(a <= start and start + dur <= z for a, z in spans), start
        assert 0 < got["total"] < every["total"]
        inside = sum(1 for s, d, c in zip(tl.lanes["graph"].starts, tl.lanes["graph"].durs,
                                          tl.lanes["graph"].classes)
                     if CLASSES[c] != "debug" and any(a <= s and s + d <= z for a, z in spans))
        assert lanes["graph"] == inside
