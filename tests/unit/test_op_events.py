"""A profile's op events kept as the decoder's columns until read (``read.op_events``).

In: columns shaped as ``xevents`` adds them (a plane's node column with each event's
index into it, numpy times and durations, a Python list), and tuples. Out: the events
as a list of tuples, their count before any is made, equality with a plain list, a
pickle round trip, a time shift. The reading of real profiles against the plain
event-by-event reader is ``tests/test_xplane.py`` and ``tests/test_fuzz.py``.
"""
from __future__ import annotations

import pickle

import numpy as np

from tb_opmode.read.op_events import OpEvents
from tb_opmode.read.xtypes import Profile

NODES = np.array(["", "dense/MatMul", "dense/Relu"], dtype=object)
KERNELS = np.array(["", "_MklMatMul", "Relu"], dtype=object)


def window(ids: list[int], start: int) -> tuple[object, ...]:
    index = np.array(ids, dtype=np.int64)
    times = np.arange(start, start + len(ids), dtype=np.int64)
    return (NODES, index), (KERNELS, index), times, np.full(len(ids), 5, dtype=np.int64)


def test_columns_read_as_tuples_in_the_order_added() -> None:
    events = OpEvents()
    events.add(*window([1, 2], 100))
    events.extend([("loss/Cast", "Cast", 300, 1)])
    events.add(*window([2], 200))
    assert len(events) == 4 and events  # counted before any tuple is made
    assert list(events) == [("dense/MatMul", "_MklMatMul", 100, 5), ("dense/Relu", "Relu", 101, 5),
                            ("loss/Cast", "Cast", 300, 1), ("dense/Relu", "Relu", 200, 5)]
    assert events[1] == ("dense/Relu", "Relu", 101, 5) and events[-1][2] == 200


def test_one_profile_takes_anothers_events_whole() -> None:
    part = OpEvents([("a", "A", 1, 1)])
    part.add(*window([1], 10))
    whole = OpEvents()
    whole.add(*window([2], 0))
    whole.extend(part)
    assert len(whole) == 3
    assert whole == [("dense/Relu", "Relu", 0, 5), ("a", "A", 1, 1), ("dense/MatMul", "_MklMatMul", 10, 5)]


def test_a_list_given_to_a_profile_is_kept_as_events() -> None:
    prof = Profile(path="/run/h.xplane.pb", host="h", graph_ops=[("a", "A", 1, 2)],
                   eager_ops=[("AddV2", False, 3, 4)])
    assert isinstance(prof.graph_ops, OpEvents) and prof.graph_ops == [("a", "A", 1, 2)]
    assert prof.eager_ops + prof.graph_ops == [("AddV2", False, 3, 4), ("a", "A", 1, 2)]
    empty = Profile(path="/run/h.xplane.pb", host="h")
    assert not empty.graph_ops and len(empty.eager_ops) == 0


def test_a_pickle_keeps_the_columns_and_gives_the_same_events() -> None:
    events = OpEvents()
    events.add(["AddV2", "Mul"], np.array([False, True]), np.array([7, 8]), np.array([1, 2]))
    restored = pickle.loads(pickle.dumps(events))
    assert len(restored) == 2
    assert restored == [("AddV2", False, 7, 1), ("Mul", True, 8, 2)] == events


def test_a_shift_moves_each_event_by_the_same_time() -> None:
    events = OpEvents([("loss/Cast", "Cast", 7, 1)])
    events.add(*window([1, 2], 100))
    events.add(["AddV2"], [False], [50], [2])
    shifted = events.shifted(1000, field=2)
    assert len(shifted) == 4
    assert shifted == [("loss/Cast", "Cast", 1007, 1), ("dense/MatMul", "_MklMatMul", 1100, 5),
                       ("dense/Relu", "Relu", 1101, 5), ("AddV2", False, 1050, 2)]
    assert events[1][2] == 100  # the original keeps its times


def test_an_empty_window_adds_nothing() -> None:
    events = OpEvents()
    events.add(*window([], 0))
    assert len(events) == 0 and list(events) == []
