"""The events of a profile's host planes, decoded all at once with numpy.

In: the XSpace ``xplane.read_profile`` parsed (``schema.XSpaceRawEvents``:
each line's events left as bytes) and the file's bytes (``locate``); then
the time base and the ``Profile`` to fill (``decode``). Out: that
``Profile``'s eager ops, graph ops, function calls, span and problems, by
the rules written in ``xplane.py``.

How: the events are located in the file from the lengths upb found
(``_line_events``) and decoded field by field over all of them at once
(``wire.scan``), two lines at a time in threads (numpy releases the GIL).
The stats of the events that need them are decoded the same way. Only the
output tuples are built one by one. ``tests/xplane_reference.py`` is the
plain event-by-event reading this must equal.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Problem
from . import wire
from .schema import walk_fields
from .xtypes import _ASYNC, _EPOCH_MIN_NS, _EXEC, _OP, _OTHER, HOST_PLANE, Profile, _event_kinds

__all__ = ["HostPlane", "locate", "decode"]

_U64_MAX = np.uint64((1 << 64) - 1)
# Times (epoch ns; 2**62 is the year 2116), offsets and durations (ps) past
# this are damage; the bound keeps every sum below within int64.
_TIME_MAX = float(1 << 62)
_THREADS = 2
# Metadata ids below this are looked up through a table (TF numbers from 1).
_TABLE_MAX = 1 << 20


@dataclass
class HostPlane:
    """What decoding needs of one host plane, taken out of the upb message so
    that the message (three times the file in memory) can go first."""

    name: str
    kinds: dict[int, tuple[int, str, str, str]]
    stat_names: dict[int, str]
    # per line with events: (timestamp_ns, (buffer, event starts, event ends))
    lines: list[tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]


def locate(space: Any, raw: bytearray, size: int) -> list[HostPlane]:
    """The host planes of ``space`` with their events located in ``raw`` (the
    file's ``size`` bytes followed by ``wire.PAD`` zero bytes)."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    runs = _event_runs(raw, size)
    return [HostPlane(plane.name, _event_kinds(plane),
                      {e.key: e.value.name for e in plane.stat_metadata},
                      [(line.timestamp_ns, _line_events(line.events, buf, runs.get((i, j))))
                       for j, line in enumerate(plane.lines) if line.events])
            for i, plane in enumerate(space.planes) if plane.name == HOST_PLANE]


def decode(planes: list[HostPlane], base: int, prof: Profile) -> None:
    """Decode the located events into ``prof``."""
    for plane in planes:
        _read_plane(plane, base, prof)


def _inside(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each point, whether it lies in some [start, end) interval."""
    if not starts.size:
        return np.zeros(points.size, dtype=bool)
    order = np.argsort(starts, kind="stable")
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    i = np.searchsorted(starts, points, side="right") - 1
    return (i >= 0) & (reach[np.maximum(i, 0)] > points)


@dataclass
class _Stats:
    """The stats of some events of one line, decoded (see ``wire.scan``):
    one entry per stat, ordered by event."""

    buf: np.ndarray
    event: np.ndarray
    md: np.ndarray
    ref: np.ndarray
    str_start: np.ndarray
    str_len: np.ndarray
    i64: np.ndarray
    u64: np.ndarray
    dbl: np.ndarray
    bytes_len: np.ndarray

    def numeric(self) -> np.ndarray:
        """Whether the value is a number (no ref_value, no str_value)."""
        numeric: np.ndarray = (self.ref == 0) & (self.str_len == 0)
        return numeric

    def truthy(self, i: np.ndarray, names: dict[int, str]) -> np.ndarray:
        """``bool(value)`` of the stats ``i``: an interned string by its text,
        else any non-empty string, non-zero number or non-empty bytes."""
        named = np.array([bool(names.get(r)) for r in self.ref[i].tolist()], dtype=bool)
        number = (self.i64[i] != 0) | (self.u64[i] != 0) | (self.dbl[i] != 0) | (self.bytes_len[i] > 0)
        return np.where(self.ref[i] != 0, named, (self.str_len[i] > 0) | number)

    def texts(self, i: np.ndarray, names: dict[int, str]) -> list[str]:
        """The values of stats ``i`` as text (numbers too, see number_text)."""
        out = [names.get(r, "") if r else None for r in self.ref[i].tolist()]
        return [t if t is not None else self.text(k, names) or self.number_text(k)
                for t, k in zip(out, i.tolist())]

    def number_text(self, i: int) -> str:
        """A non-string value as text: the first non-zero of int64, uint64,
        double, bytes (read in that order), else "0"."""
        if self.i64[i] or self.u64[i] or self.dbl[i]:
            return str(int(self.i64[i]) or int(self.u64[i]) or float(self.dbl[i]))
        return "0" if not self.bytes_len[i] else "<bytes>"

    def text(self, i: int, names: dict[int, str]) -> str | None:
        """The value of stat ``i`` if it is a string (interned or inline), else None."""
        if self.ref[i]:
            return names.get(int(self.ref[i]), "")
        if self.str_len[i]:
            start = int(self.str_start[i])
            return self.buf[start:start + int(self.str_len[i])].tobytes().decode("utf-8", "replace")
        return None


def _stats(buf: np.ndarray, ranges: tuple[np.ndarray, np.ndarray, np.ndarray],
           wanted: np.ndarray) -> tuple[_Stats, np.ndarray]:
    """The stats of the events where ``wanted``, from the events' stat byte
    ranges (``Fields.ranges(4)``); and the events whose stats do not parse."""
    event, start, end = ranges
    keep = wanted[event]
    event, start, end = event[keep], start[keep], end[keep]
    f = wire.scan(buf, start, end, prefix=(1,))
    md = f.scalar(1)[0].view(np.int64)
    ref = f.scalar(7)[0]
    s_len, s_start, _ = f.scalar(5, wire.LEN)
    b_len = f.scalar(6, wire.LEN)[0]
    stats = _Stats(buf, event, md, ref, s_start, s_len.astype(np.int64), f.scalar(4)[0].view(np.int64),
                   f.scalar(3)[0], f.scalar(2, wire.FIXED64)[0].view(np.float64), b_len.astype(np.int64))
    return stats, np.unique(event[f.bad])


def _last(stats: _Stats, sid: int | None) -> np.ndarray:
    """Indexes of the stats with metadata ``sid``, the last one of each event
    (a repeated stat overwrites the earlier one, as in a dict)."""
    if sid is None:
        return np.zeros(0, dtype=np.int64)
    i = np.flatnonzero(stats.md == sid)
    ev = stats.event[i]
    return i[np.append(ev[1:] != ev[:-1], True)] if i.size else i


def _event_runs(data: bytearray, size: int) -> dict[tuple[int, int], tuple[int, int]]:
    """Where each line's events are in the file: (plane index, line index) ->
    (position of the first event's tag, end of the line). Only the few fields
    around the events are walked here, in Python."""
    runs = {}
    planes = (f for f in walk_fields(data, 0, size) if f[:2] == (1, wire.LEN))
    for i, (_, _, length, _, plane_end) in enumerate(planes):
        lines = (f for f in walk_fields(data, plane_end - length, plane_end) if f[:2] == (3, wire.LEN))
        for j, (_, _, length, _, line_end) in enumerate(lines):
            for number, wt, _, tag, _ in walk_fields(data, line_end - length, line_end):
                if (number, wt) == (4, wire.LEN):
                    runs[(i, j)] = (tag, line_end)
                    break
    return runs


def _line_events(raw: Any, buf: np.ndarray, run: tuple[int, int] | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buffer, starts, ends) of a line's serialized events. Serializers
    write a repeated field's elements back to back, so the positions follow
    from the lengths upb found; they are checked against the bytes, and if
    the events are not one run (or anything disagrees) they are copied out."""
    lens = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
    if run is not None:
        first, line_end = run
        # A sum of arrays (from 0) is an array; mypy types sum() of them as ndarray | int.
        heads: np.ndarray = 2 + sum((lens >= (1 << (7 * k))).astype(np.int64) for k in range(1, 5))  # type: ignore[assignment]
        tags = first + np.cumsum(heads + lens) - (heads + lens)
        if tags[-1] + heads[-1] + lens[-1] <= line_end and (buf[tags] == 0x22).all():
            got, sizes = wire.varints(buf, tags + 1)
            if (got == lens.astype(np.uint64)).all() and (sizes == heads - 1).all():
                return buf, tags + heads, tags + heads + lens
    copied = wire.padded(b"".join(raw))
    ends = np.cumsum(lens)
    return copied, ends - lens, ends


def _read_plane(plane: HostPlane, base: int, prof: Profile) -> None:
    stat_ids = {name: key for key, name in plane.stat_names.items()}
    counts = {"read": 0, "unknown": 0, "bad": 0, "range": 0}

    def read(line: tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]
             ) -> tuple[Profile, dict[str, int]]:
        part, seen = Profile(path=prof.path, host=prof.host), dict.fromkeys(counts, 0)
        _read_line(line[0], line[1], base, plane.kinds, plane.stat_names, stat_ids, part, seen)
        return part, seen

    # Two threads: most of a line's work is numpy, which releases the GIL.
    # Results are merged in line order, so the lists come out as if serial.
    with ThreadPoolExecutor(max_workers=max(1, min(_THREADS, len(plane.lines)))) as pool:
        for part, seen in pool.map(read, plane.lines):
            prof.eager_ops.extend(part.eager_ops)
            prof.graph_ops.extend(part.graph_ops)
            prof.function_calls.extend(part.function_calls)
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


def _kind_of(mds: np.ndarray, kinds: dict[int, tuple[int, str, str, str]]
             ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str, str, str] | None]]:
    """(kind per event, -1 for unknown metadata; index per event into the
    returned metadata list). TF numbers metadata from 1, so a lookup table
    serves; np.unique (a sort) only for odd ids."""
    if mds.size and 0 <= int(mds.min()) and int(mds.max()) < _TABLE_MAX:
        infos = [kinds.get(i) for i in range(int(mds.max()) + 1)]
        index = mds
    else:
        ids, inverse = np.unique(mds, return_inverse=True)
        infos = [kinds.get(int(i)) for i in ids]
        index = inverse.ravel()
    table = np.array([info[0] if info else -1 for info in infos], dtype=np.int64)
    return table[index], index, infos


def _folding(kind: np.ndarray, usable: np.ndarray, off: np.ndarray, dur: np.ndarray,
             stats: _Stats, ok_stat: np.ndarray, sid: int | None) -> np.ndarray:
    """Per event, whether it lies inside a constant-folding executor: an
    ExecutorState::Process whose step id is -1 (CONSTANT_FOLDING_STEP_ID),
    or one started inside such an executor."""
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
        widened = own[execs] | _inside(off[execs], off[f], off[f] + dur[f])
        if (widened == folding).all():
            break
        folding = widened
    f = execs[folding]
    inside = np.zeros(kind.size, dtype=bool)
    inside[usable] = _inside(off[usable], off[f], off[f] + dur[f])
    return inside


def _read_line(timestamp_ns: int, events: tuple[np.ndarray, np.ndarray, np.ndarray], base: int,
               kinds: dict[int, tuple[int, str, str, str]], stat_names: dict[int, str],
               stat_ids: dict[str, int], prof: Profile, counts: dict[str, int]) -> None:
    buf, starts, ends = events
    ev = wire.scan(buf, starts, ends, prefix=(1, 2, 3))
    mds = ev.scalar(1)[0].view(np.int64)
    off = ev.scalar(2)[0].view(np.int64)
    dur = ev.scalar(3)[0].view(np.int64)
    stat_ranges, bad = ev.ranges(4), ev.bad
    del ev  # its pass arrays are the bulk of the memory
    kind, index, infos = _kind_of(mds, kinds)
    counts["unknown"] += int(((kind < 0) & ~bad).sum())

    t0 = timestamp_ns if timestamp_ns >= _EPOCH_MIN_NS else base + timestamp_ns
    # Garbage times would overflow int64 arithmetic: checked in floats first.
    off_f, dur_f = off.astype(np.float64), dur.astype(np.float64)
    approx = float(t0) + off_f / 1000.0
    sane = (abs(float(t0)) < _TIME_MAX) & (np.abs(off_f) < _TIME_MAX) & \
        (np.abs(dur_f) < _TIME_MAX) & (np.abs(approx) < _TIME_MAX) & \
        (np.abs(approx + dur_f / 1000.0) < _TIME_MAX)
    usable = (kind >= 0) & ~bad
    counts["range"] += int((usable & ~sane).sum())
    usable &= sane
    del approx, sane, off_f, dur_f

    stats, bad_stats = _stats(buf, stat_ranges, usable & np.isin(kind, (_EXEC, _ASYNC, _OTHER)))
    del stat_ranges
    bad = bad.copy()
    bad[bad_stats] = True
    counts["bad"] += int(bad.sum())
    usable &= ~bad
    counts["read"] += int(usable.sum())
    if not counts["read"]:
        return
    ok_stat = ~bad[stats.event]
    ts = int(t0) + off // 1000
    dns = dur // 1000
    start, end = int(ts[usable].min()), int((ts + dns)[usable].max())
    prof.start_ns = min(prof.start_ns, start) if prof.start_ns else start
    prof.end_ns = max(prof.end_ns, end)
    folding = _folding(kind, usable, off, dur, stats, ok_stat, stat_ids.get("id"))

    def column(values: list[Any]) -> np.ndarray:  # strings gathered at C speed
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    ops = np.flatnonzero(usable & (kind == _OP) & ~folding)
    nodes = column([info[2] if info else "" for info in infos])[index[ops]].tolist()
    kernels = column([info[3] if info else "" for info in infos])[index[ops]].tolist()
    launches: dict[int, dict[str, str | None]] = {}
    for key in ("name", "kernel_type"):
        for j in _last(stats, stat_ids.get(key)).tolist():
            e = int(stats.event[j])
            if kind[e] == _ASYNC and ok_stat[j] and not folding[e]:
                launches.setdefault(e, {})[key] = stats.text(j, stat_names)
    async_ops = [(e, got["name"], got["kernel_type"]) for e, got in launches.items()
                 if got.get("name") and got.get("kernel_type")]
    if async_ops:  # async launches interleave with the other ops in line order
        merged = sorted(list(zip(ops.tolist(), nodes, kernels)) + async_ops)
        ops = np.array([e for e, _, _ in merged], dtype=np.int64)
        nodes, kernels = [n for _, n, _ in merged], [k for _, _, k in merged]
    prof.graph_ops.extend(zip(nodes, kernels, ts[ops].tolist(), dns[ops].tolist()))

    other = (kind == _OTHER) & usable
    j = _last(stats, stat_ids.get("eager_op"))
    j = j[other[stats.event[j]]]
    is_func = np.zeros(kind.size, dtype=bool)
    f = _last(stats, stat_ids.get("is_func"))
    is_func[stats.event[f]] = stats.truthy(f, stat_names)
    events = stats.event[j]
    prof.eager_ops.extend(zip(stats.texts(j, stat_names), is_func[events].tolist(),
                              ts[events].tolist(), dns[events].tolist()))
    call_sid = stat_ids.get("tf_function_call")
    if call_sid is not None:
        events = stats.event[(stats.md == call_sid) & other[stats.event]]
        names = column([info[1] if info else "" for info in infos])[index[events]].tolist()
        prof.function_calls.extend(zip(names, ts[events].tolist(), dns[events].tolist()))
