"""The decoder's per-key sums of a window's graph ops (``Profile.graph_tally``), by
metadata index (the common case) and event by event (a window with async launches),
agree with each other and with the plain sums over the events; ``analyze.tally`` takes
them only where they cover every graph op. Real profiles are checked against the plain
event-by-event reading in tests/test_xplane.py and tests/test_fuzz.py."""
from __future__ import annotations

import numpy as np

from tb_opmode.analyze.tally import tally
from tb_opmode.read import xevents
from tb_opmode.read.xtypes import Profile
from tests.xplane_reference import reference_tally

# Metadata columns as the decoder holds them: ids 2 and 4 name the same (node, kernel).
_NODES = np.array(["", "a", "b", "c", "b"], dtype=object)
_KERNELS = np.array(["", "MatMul", "_MklMatMul", "Relu", "_MklMatMul"], dtype=object)


def _key(i: int) -> tuple[str, str]:
    return (_NODES[i], _KERNELS[i])


def _window(ids: list[int], durations: list[int]) -> tuple[list[tuple[str, str, int, int]], np.ndarray]:
    events = [(_NODES[i], _KERNELS[i], t, d) for t, (i, d) in enumerate(zip(ids, durations))]
    return events, np.array(ids, dtype=np.int64)


def test_sums_by_metadata_equal_the_sums_event_by_event() -> None:
    ids, durations = [3, 2, 1, 4, 2, 3, 3], [5, 7, 11, 13, 17, 19, 23]
    events, index = _window(ids, durations)
    by_metadata: dict[tuple[str, str], list[int]] = {}
    xevents._tally_by_ids(by_metadata, index, _key, np.array(durations))
    one_by_one: dict[tuple[str, str], list[int]] = {}
    xevents._tally_events(one_by_one, [(e[0], e[1]) for e in events], durations)
    expected = reference_tally(events)
    assert expected == [(("c", "Relu"), [3, 47]), (("b", "_MklMatMul"), [3, 37]),
                        (("a", "MatMul"), [1, 11])]
    assert list(by_metadata.items()) == expected
    assert list(one_by_one.items()) == expected


def test_windows_add_up_in_the_order_keys_first_occur() -> None:
    total: dict[tuple[str, str], list[int]] = {}
    all_events = []
    for ids, durations in (([1, 3], [2, 3]), ([2, 1, 4], [5, 7, 11])):
        events, index = _window(ids, durations)
        all_events += events
        part: dict[tuple[str, str], list[int]] = {}
        xevents._tally_by_ids(part, index, _key, np.array(durations))
        xevents._add_tally(total, part)
    assert list(total.items()) == reference_tally(all_events)


def test_the_tally_takes_the_decoders_sums_only_where_they_cover_every_op() -> None:
    events, _index = _window([1, 2], [3, 4])
    decoded = Profile(path="/run/h.xplane.pb", host="h", graph_ops=events,
                      graph_tally={("a", "MatMul"): [1, 3], ("b", "_MklMatMul"): [1, 4]})
    assert tally(decoded).graph == {("a", "MatMul"): (1, 3), ("b", "_MklMatMul"): (1, 4)}
    # Sums that do not cover the events (a profile whose ops were replaced) are not used.
    stale = Profile(path="/run/h.xplane.pb", host="h", graph_ops=events + events[:1],
                    graph_tally={("a", "MatMul"): [1, 3], ("b", "_MklMatMul"): [1, 4]})
    assert tally(stale).graph == {("a", "MatMul"): (2, 6), ("b", "_MklMatMul"): (1, 4)}
    assert tally(stale).kernels == {"MatMul": (2, 6), "_MklMatMul": (1, 4)}
