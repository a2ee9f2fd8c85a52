"""The events of a profile's host planes, decoded all at once with numpy.

In: the XSpace ``xplane.read_profile`` parsed (``schema.XSpaceRawEvents``:
each line's events left as bytes) and the file's bytes (``layout``); then
the time base and the ``Profile`` to fill (``decode``). Out: that
``Profile``'s eager ops, graph ops, function calls, span and problems, by
the rules written in ``xplane.py``.

How: nothing is parsed whole. The planes and lines are walked by their
field headers, one ``pread`` each (``xlayout.layout``); the planes' other fields
(names, metadata) are parsed by upb. Each line's events are then read in
windows of ``_WINDOW`` bytes: ``xchains._walk`` finds where each event starts and ends
(``xchains._Chains``, with numpy), and ``xfields._events`` decodes the window's events
all at once for XEvent's layout as TF writes it (``wire.scan``, field by field, for
any other); lines are read two at a time in threads (numpy releases the GIL).
The stats of the events that need them are decoded the same way (``xfields._stats``).
Here the decoded columns become the ``Profile``'s entries (``_read_line``); its op
events stay columns (``op_events.OpEvents``) until something reads them. Memory is the
output plus a few windows, whatever the file's size. ``tests/xplane_reference.py`` is the plain
event-by-event reading this must equal.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Problem
from .xchains import _WINDOW, _windows
from .xfields import _TABLE_MAX, _events, _last, _Stats, _stats
from .xlayout import Damaged, HostPlane, Layout, LineRef, Pread, host_planes, layout
from .xtypes import _ASYNC, _DATA, _EPOCH_MIN_NS, _EXEC, _OP, _OTHER, GRAPH_BUILDING, Profile

__all__ = ["Damaged", "LineRef", "Layout", "HostPlane", "layout", "host_planes", "decode"]

_U64_MAX = np.uint64((1 << 64) - 1)
# Times (epoch ns; 2**62 is the year 2116), offsets and durations (ps) past
# this are damage; the bound keeps every sum below within int64.
_TIME_MAX = float(1 << 62)
_SMALL, _SMALL_T0 = 1 << 52, float(1 << 61)
_I64_MAX = (1 << 63) - 1
_THREADS = 2
# A plane whose lines hold fewer bytes than this is read in the calling thread: a
# small profile's numpy work is too little to gain from a second thread, whose start
# and hand-offs then cost more than it saved.
_THREAD_MIN_BYTES = 1 << 20
# Lines of the threads tf.data runs a dataset's functions on (tf_data_private_threadpool,
# tf_data_iterator_get_next, ...): what runs there is not part of a tf.function call.
_DATA_THREADS = "tf_data"


def decode(pread: Pread, planes: list[HostPlane], base: int, prof: Profile) -> bool:
    """Read the planes' events from the file (``pread``) into ``prof``. False if
    a line's timestamp_ns turned out to be written again after its events
    with another value (never by TF): the lines' ``timestamp_ns`` are then
    set to the last value, and the caller must decode again."""
    consistent = True
    for plane in planes:
        consistent &= _read_plane(pread, plane, base, prof)
    return consistent


def _inside(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each point, whether it lies in some [start, end) interval."""
    if not starts.size:
        return np.zeros(points.size, dtype=bool)
    order = np.argsort(starts, kind="stable")
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    i = np.searchsorted(starts, points, side="right") - 1
    return (i >= 0) & (reach[np.maximum(i, 0)] > points)


class _Reorder(Exception):
    """A constant-folding executor found in a later window starts before events
    of an earlier one: the line must be decoded in one window to be exact."""


@dataclass
class _Fold:
    """Constant-folding executor intervals of a line's earlier windows (offsets
    in ps, relative to the line), and the largest offset of an event read there."""

    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    max_off: int | None = None


def _add_graph_ops(prof: Profile, part: Profile, line_name: str) -> None:
    """A line's graph ops appended, and where tf.data's threads ran them, said so."""
    if line_name.startswith(_DATA_THREADS) and part.graph_ops:
        first = len(prof.graph_ops)
        prof.data_thread_ops.append((first, first + len(part.graph_ops)))
    prof.graph_ops.extend(part.graph_ops)
    _add_tally(prof.graph_tally, part.graph_tally)


def _add_tally(into: dict[Any, list[int]], part: dict[Any, list[int]]) -> None:
    """``part``'s (events, ns) per key added to ``into``, new keys after the old."""
    for key, (n, ns) in part.items():
        cell = into.setdefault(key, [0, 0])
        cell[0] += n
        cell[1] += ns


def _read_plane(pread: Pread, plane: HostPlane, base: int, prof: Profile) -> bool:
    """Decode one plane's lines into ``prof``; False if a line's timestamp
    differs from the one it was decoded with (see ``decode``)."""
    stat_ids = {name: key for key, name in plane.stat_names.items()}
    kinds = _Kinds(plane.kinds)
    counts = {"read": 0, "unknown": 0, "bad": 0, "range": 0}

    def read(ref: LineRef) -> tuple[Profile, dict[str, int]]:
        try:
            return read_windows(ref, _WINDOW)
        except _Reorder:  # exact only when the whole line is one window
            return read_windows(ref, ref.end - ref.start)

    def read_windows(ref: LineRef, window: int) -> tuple[Profile, dict[str, int]]:
        part, seen = Profile(path=prof.path, host=prof.host), dict.fromkeys(counts, 0)
        fold = _Fold()
        ref.seen_ns = None
        for events in _windows(pread, ref, window):
            _read_line(ref.timestamp_ns, events, base, kinds, plane.stat_names, stat_ids,
                       part, seen, fold)
        return part, seen

    consistent = True
    # Two threads: most of a line's work is numpy, which releases the GIL.
    # Results are merged in line order, so the lists come out as if serial.
    threads = 1 if sum(ref.end - ref.start for ref in plane.lines) < _THREAD_MIN_BYTES \
        else max(1, min(_THREADS, len(plane.lines)))
    with ThreadPoolExecutor(max_workers=threads) if threads > 1 else nullcontext() as pool:
        results = pool.map(read, plane.lines) if pool is not None else map(read, plane.lines)
        for ref, (part, seen) in zip(plane.lines, results):
            last = ref.seen_ns if ref.seen_ns is not None else 0
            if last != ref.timestamp_ns:
                ref.timestamp_ns, consistent = last, False
            prof.eager_ops.extend(part.eager_ops)
            _add_tally(prof.eager_tally, part.eager_tally)
            _add_graph_ops(prof, part, ref.name)
            prof.function_calls.extend(part.function_calls)
            prof.graph_building.extend(part.graph_building)
            prof.iterator_specs.extend(s for s in part.iterator_specs if s not in prof.iterator_specs)
            if seen["read"]:
                prof.start_ns = min(prof.start_ns, part.start_ns) if prof.start_ns else part.start_ns
                prof.end_ns = max(prof.end_ns, part.end_ns)
            for key, n in seen.items():
                counts[key] += n
    where = f"events on {plane.name}"
    if counts["unknown"]:
        prof.problems.append(Problem(prof.path, 0, f"{counts['unknown']} {where} refer to "
                                                   "event metadata missing from the file; skipped"))
    if counts["bad"]:
        prof.problems.append(Problem(prof.path, 0, f"{counts['bad']} {where} do not parse "
                                                   "(damaged bytes?); skipped"))
    if counts["range"]:
        prof.problems.append(Problem(prof.path, 0, f"{counts['range']} {where} have times "
                                                   "beyond the int64 nanosecond range; skipped"))
    return consistent


def _column(values: list[Any]) -> np.ndarray:
    """An object array of ``values`` (strings gathered at C speed)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class _Kinds:
    """A plane's event metadata (``HostPlane.kinds``) as columns indexed by metadata id:
    kind, event name, node, kernel, made once per plane (made for every window of every
    line, they were most of a small profile's decoding). TF numbers metadata from 1, so
    the ids index the columns; np.unique (a sort) only for odd ids."""

    def __init__(self, kinds: dict[int, tuple[int, str, str, str]]) -> None:
        self.kinds = kinds
        self.top = max(kinds, default=-1)
        self.table = min(kinds, default=0) >= 0 and self.top < _TABLE_MAX
        if self.table:
            # One entry past the last id: what an id no metadata has maps to.
            self.columns = self._columns([kinds.get(i) for i in range(self.top + 2)])

    @staticmethod
    def _columns(infos: list[tuple[int, str, str, str] | None]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return (np.array([info[0] if info else -1 for info in infos], dtype=np.int64),
                _column([info[1] if info else "" for info in infos]),
                _column([info[2] if info else "" for info in infos]),
                _column([info[3] if info else "" for info in infos]))

    def of(self, mds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(kind per event, -1 for unknown metadata; index per event into the columns;
        the columns of event name, node and kernel)."""
        if self.table and (not mds.size or int(mds.min()) >= 0):
            index = np.minimum(mds, self.top + 1)
            kind, names, nodes, kernels = self.columns
        else:
            ids, inverse = np.unique(mds, return_inverse=True)
            kind, names, nodes, kernels = self._columns([self.kinds.get(int(i)) for i in ids])
            index = inverse.ravel()
        return kind[index], index, names, nodes, kernels


def _folding(kind: np.ndarray, usable: np.ndarray, off: np.ndarray, dur: np.ndarray,
             stats: _Stats, ok_stat: np.ndarray, sid: int | None, fold: _Fold) -> np.ndarray:
    """Per event of one window, whether it lies inside a constant-folding
    executor: an ExecutorState::Process whose step id is -1
    (CONSTANT_FOLDING_STEP_ID), or one started inside such an executor, in
    this window or an earlier one of the line (``fold``, updated here).
    Raises ``_Reorder`` if a folding executor here starts before an event
    of an earlier window, which it might then contain."""
    execs = np.flatnonzero(usable & (kind == _EXEC))
    own = np.zeros(kind.size, dtype=bool)
    if sid is not None:
        v = stats.numeric() & ok_stat & (stats.md == sid) & np.where(
            stats.i64 != 0, stats.i64 == -1, np.where(stats.u64 != 0, stats.u64 == _U64_MAX,
                                                     stats.dbl == -1.0))
        own[stats.event[v]] = True
    folding = own[execs]
    while True:
        f = execs[folding]
        starts, ends = np.concatenate((fold.starts, off[f])), np.concatenate((fold.ends, off[f] + dur[f]))
        widened = own[execs] | _inside(off[execs], starts, ends)
        if (widened == folding).all():
            break
        folding = widened
    f = execs[folding]
    if fold.max_off is not None and f.size and int(off[f].min()) < fold.max_off:
        raise _Reorder
    starts, ends = np.concatenate((fold.starts, off[f])), np.concatenate((fold.ends, off[f] + dur[f]))
    inside = np.zeros(kind.size, dtype=bool)
    inside[usable] = _inside(off[usable], starts, ends)
    fold.starts, fold.ends = starts, ends
    if usable.any():
        top = int(off[usable].max())
        fold.max_off = top if fold.max_off is None else max(fold.max_off, top)
    return inside


def _read_line(timestamp_ns: int, events: tuple[np.ndarray, np.ndarray, np.ndarray], base: int,
               kinds: _Kinds, stat_names: dict[int, str],
               stat_ids: dict[str, int], prof: Profile, counts: dict[str, int], fold: _Fold) -> None:
    """Decode one window of a line's events into ``prof`` and ``counts``."""
    buf, starts, ends = events
    mds, off, dur, bad, stat_ranges = _events(buf, starts, ends)
    kind, index, name_column, node_column, kernel_column = kinds.of(mds)
    counts["unknown"] += int(((kind < 0) & ~bad).sum())

    t0 = timestamp_ns if timestamp_ns >= _EPOCH_MIN_NS else base + timestamp_ns
    usable = (kind >= 0) & ~bad
    _drop_insane_times(t0, off, dur, usable, counts)

    needed = [stat_ids[k] for k in ("id", "name", "kernel_type", "eager_op", "is_func", "types", "shapes")
              if k in stat_ids]
    stats, bad_stats = _stats(buf, stat_ranges, usable & np.isin(kind, (_EXEC, _ASYNC, _OTHER, _DATA)),
                              needed)
    del stat_ranges
    bad = bad.copy()
    bad[bad_stats] = True
    counts["bad"] += int(bad.sum())
    usable &= ~bad
    counts["read"] += int(usable.sum())
    if not usable.any():
        return
    ok_stat = ~bad[stats.event]
    ts = int(t0) + off // 1000
    dns = dur // 1000
    start = int(ts.min(where=usable, initial=_I64_MAX))
    end = int(np.add(ts, dns).max(where=usable, initial=-_I64_MAX))
    prof.start_ns = min(prof.start_ns, start) if prof.start_ns else start
    prof.end_ns = max(prof.end_ns, end)
    folding = _folding(kind, usable, off, dur, stats, ok_stat, stat_ids.get("id"), fold)

    ops = np.flatnonzero(usable & (kind == _OP) & ~folding)
    async_ops = _async_launches(kind, stats, ok_stat, folding, stat_ids, stat_names)
    if async_ops:  # async launches interleave with the other ops in line order
        _add_with_async_launches(prof, ops, async_ops, index, node_column, kernel_column, ts, dns)
    else:
        ids, durations = index[ops], dns[ops]
        prof.graph_ops.add((node_column, ids), (kernel_column, ids), ts[ops], durations)
        _tally_by_ids(prof.graph_tally, ids, lambda i: (node_column[i], kernel_column[i]),
                      durations)

    other = (kind == _OTHER) & usable
    _eager_ops(kind, other, stats, stat_ids, stat_names, ts, dns, prof)
    call_sid = stat_ids.get("tf_function_call")
    if call_sid is not None:
        events = stats.event[(stats.md == call_sid) & other[stats.event]]
        names = name_column[index[events]].tolist()
        prof.function_calls.extend(zip(names, ts[events].tolist(), dns[events].tolist()))
    _graph_building(other, index, name_column, ts, dns, prof)
    _iterator_specs(kind == _DATA, usable, stats, ok_stat, stat_ids, stat_names, prof)


def _add_with_async_launches(prof: Profile, ops: np.ndarray, async_ops: list[tuple[int, Any, Any]],
                             index: np.ndarray, node_column: np.ndarray, kernel_column: np.ndarray,
                             ts: np.ndarray, dns: np.ndarray) -> None:
    """A window's graph ops and its async launches (named by stats), in line order, into
    ``prof.graph_ops`` and its tally, event by event: async launches are rare."""
    nodes = node_column[index[ops]].tolist()
    kernels = kernel_column[index[ops]].tolist()
    merged = sorted(list(zip(ops.tolist(), nodes, kernels)) + async_ops)
    ops = np.array([e for e, _, _ in merged], dtype=np.int64)
    nodes, kernels = [n for _, n, _ in merged], [k for _, _, k in merged]
    durations = dns[ops].tolist()
    prof.graph_ops.extend(zip(nodes, kernels, ts[ops].tolist(), durations))
    _tally_events(prof.graph_tally, zip(nodes, kernels), durations)


def _tally_by_ids(tally: dict[Any, list[int]], ids: np.ndarray, key_of: Callable[[int], Any],
                  durations: np.ndarray) -> None:
    """A window's events (an integer ``ids`` each that ``key_of`` turns into the event's
    key, in line order) added to ``tally`` per key as [events, ns]: one bincount per
    window, Python once per distinct id, keys in the order each first occurs."""
    if not ids.size:
        return
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    counts = np.bincount(inverse, minlength=unique.size).tolist()
    # Float sums of integer ns are exact below 2**53 (a window holds far less).
    totals = np.bincount(inverse, weights=durations, minlength=unique.size).tolist()
    for u in np.argsort(first, kind="stable").tolist():
        cell = tally.setdefault(key_of(int(unique[u])), [0, 0])
        cell[0] += counts[u]
        cell[1] += int(totals[u])


def _tally_events(tally: dict[Any, list[int]], keys: Iterable[Any], durations: list[int]) -> None:
    """The same, event by event: for the windows whose keys are not all ids (async
    launches named by stats, an eager op type written inline; both rare)."""
    for key, ns in zip(keys, durations):
        cell = tally.setdefault(key, [0, 0])
        cell[0] += 1
        cell[1] += ns


def _drop_insane_times(t0: int, off: np.ndarray, dur: np.ndarray, usable: np.ndarray,
                       counts: dict[str, int]) -> None:
    """Events whose times would overflow int64 arithmetic taken out of ``usable`` (in
    place) and counted as ``range``."""
    # Checked in floats, unless every offset and duration is below 2**52 and t0 below
    # 2**61 (so every sum stays under _TIME_MAX: the window's four extremes decide it).
    if off.size and abs(float(t0)) < _SMALL_T0 and -_SMALL < int(off.min()) and \
            int(off.max()) < _SMALL and -_SMALL < int(dur.min()) and int(dur.max()) < _SMALL:
        return
    off_f, dur_f = off.astype(np.float64), dur.astype(np.float64)
    approx = float(t0) + off_f / 1000.0
    sane = (abs(float(t0)) < _TIME_MAX) & (np.abs(off_f) < _TIME_MAX) & \
        (np.abs(dur_f) < _TIME_MAX) & (np.abs(approx) < _TIME_MAX) & \
        (np.abs(approx + dur_f / 1000.0) < _TIME_MAX)
    counts["range"] += int((usable & ~sane).sum())
    usable &= sane


def _async_launches(kind: np.ndarray, stats: _Stats, ok_stat: np.ndarray, folding: np.ndarray,
                    stat_ids: dict[str, int], stat_names: dict[int, str]) -> list[tuple[int, Any, Any]]:
    """(event, node name, kernel) of the window's async kernel launches that name both."""
    launches: dict[int, dict[str, str | None]] = {}
    for key in ("name", "kernel_type"):
        for j in _last(stats, stat_ids.get(key)).tolist():
            e = int(stats.event[j])
            if kind[e] == _ASYNC and ok_stat[j] and not folding[e]:
                launches.setdefault(e, {})[key] = stats.text(j, stat_names)
    return [(e, got["name"], got["kernel_type"]) for e, got in launches.items()
            if got.get("name") and got.get("kernel_type")]


def _eager_ops(kind: np.ndarray, other: np.ndarray, stats: _Stats, stat_ids: dict[str, int],
               stat_names: dict[int, str], ts: np.ndarray, dns: np.ndarray, prof: Profile) -> None:
    """The window's eager op events (op type, whether a function, start, duration) into
    ``prof.eager_ops``."""
    j = _last(stats, stat_ids.get("eager_op"))
    j = j[other[stats.event[j]]]
    is_func = np.zeros(kind.size, dtype=bool)
    f = _last(stats, stat_ids.get("is_func"))
    is_func[stats.event[f]] = stats.truthy(f, stat_names)
    events = stats.event[j]
    op_types, funcs, durations = stats.text_column(j, stat_names), is_func[events], dns[events]
    prof.eager_ops.add(op_types, funcs, ts[events], durations)
    refs = stats.ref[j].astype(np.int64)
    if refs.size and int(refs.min()) > 0:  # every op type an interned string: by its id
        _tally_by_ids(prof.eager_tally, refs * 2 + funcs,
                      lambda k: (stat_names.get(k >> 1, ""), bool(k & 1)), durations)
    else:
        _tally_events(prof.eager_tally, zip(op_types.tolist(), funcs.tolist()), durations.tolist())


def _graph_building(other: np.ndarray, index: np.ndarray, name_column: np.ndarray, ts: np.ndarray,
                    dns: np.ndarray, prof: Profile) -> None:
    """The ``tf.function-graph_building`` events (a tf.function's tracing) into
    ``prof.graph_building``."""
    events = np.flatnonzero(other)
    if events.size:
        # Compared per metadata entry (hundreds), not per event (a string each).
        events = events[(name_column == GRAPH_BUILDING)[index[events]]]
        prof.graph_building.extend(zip(ts[events].tolist(), dns[events].tolist()))


def _iterator_specs(data: np.ndarray, usable: np.ndarray, stats: _Stats, ok_stat: np.ndarray,
                    stat_ids: dict[str, int], stat_names: dict[int, str], prof: Profile) -> None:
    """The element specs (``types``, ``shapes`` stats) of the usable tf.data root events
    ``data``, each distinct one added to ``prof.iterator_specs`` once."""
    if not (data & usable).any():
        return
    spec: dict[int, dict[str, str]] = {}
    for key in ("types", "shapes"):
        for j in _last(stats, stat_ids.get(key)).tolist():
            e = int(stats.event[j])
            if data[e] and usable[e] and ok_stat[j]:
                spec.setdefault(e, {})[key] = stats.text(j, stat_names) or ""
    for e in sorted(spec):
        pair = (spec[e].get("types", ""), spec[e].get("shapes", ""))
        if pair[0] and pair not in prof.iterator_specs:
            prof.iterator_specs.append(pair)
