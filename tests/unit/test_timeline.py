"""The tab's timeline (``timeline.build_timeline``, ``timeline_window``, ``export_trace``) on the
committed run's profile.

In: ``full_model`` and the same ``.xplane.pb`` read by ``tests/xplane_reference.py``, a
plain event-by-event reading with our schema (no TensorFlow). Out: lanes that hold exactly
the profile's events, kernels that agree with the op table, windows and bins that keep
every event, and a Perfetto trace that names mode and kernel.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import is_onednn
from tb_opmode.present.timeline import CLASSES, LANES, Timeline, build_timeline, export_trace, timeline_window
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
