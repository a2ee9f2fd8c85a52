"""The fields of a window's profile events and of their stats, decoded all at once.

In: a window's bytes and its events' body starts and ends (``xchains``). Out: per event,
its metadata id, offset and duration, whether it is damaged, and its stats' byte ranges
(``_events``); the stats of the events that need them, decoded (``_stats``: a
``_Stats``), and the last stat of an id per event (``_last``). Events and stats laid out
as TF writes them are read with numpy; any other layout by ``wire.scan``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import wire

__all__: list[str] = []

# Metadata ids below this are looked up through a table (TF numbers from 1).
_TABLE_MAX = 1 << 20


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

    def _names(self, refs: np.ndarray, names: dict[int, str]) -> np.ndarray:
        """``names.get(r, "")`` for each of ``refs`` (an object array), through a
        table when the ids are small (TF numbers stat metadata from 1)."""
        out = np.empty(refs.size, dtype=object)
        if refs.size and int(refs.max()) < _TABLE_MAX:
            table = np.empty(int(refs.max()) + 1, dtype=object)
            table[:] = [names.get(k, "") for k in range(table.size)]
            out[:] = table[refs]
        else:
            out[:] = [names.get(r, "") for r in refs.tolist()]
        return out

    def truthy(self, i: np.ndarray, names: dict[int, str]) -> np.ndarray:
        """``bool(value)`` of the stats ``i``: an interned string by its text,
        else any non-empty string, non-zero number or non-empty bytes."""
        named = self._names(self.ref[i], names).astype(bool)
        number = (self.i64[i] != 0) | (self.u64[i] != 0) | (self.dbl[i] != 0) | (self.bytes_len[i] > 0)
        return np.where(self.ref[i] != 0, named, (self.str_len[i] > 0) | number)

    def text_column(self, i: np.ndarray, names: dict[int, str]) -> np.ndarray:
        """The values of stats ``i`` as text (numbers too, see number_text), an object
        array."""
        out = self._names(self.ref[i], names)
        for j in np.flatnonzero(self.ref[i] == 0).tolist():
            k = int(i[j])
            out[j] = self.text(k, names) or self.number_text(k)
        return out

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


# One-byte tags of XEvent's fields 1-3 (metadata_id, offset_ps, duration_ps: varints) and
# of field 4 (stats) and of XStat's fields: 1 metadata_id, 2 double (fixed64), 3 uint64,
# 4 int64, 5 str, 6 bytes, 7 ref_value.
_EVENT_PREFIX = (0x08, 0x10, 0x18)
_STATS_TAG = 0x22
_S_MD, _S_DOUBLE, _S_U64, _S_I64, _S_STR, _S_BYTES, _S_REF = 0x08, 0x11, 0x18, 0x20, 0x2A, 0x32, 0x38

# (event, body start, end, rank within its event) of stat fields, not ordered by event
_StatRanges = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _events(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, _StatRanges]:
    """The events at ``[starts, ends)`` of ``buf``: (metadata_id, offset_ps,
    duration_ps as int64, bad, their stats' byte ranges), as ``wire.scan`` with
    prefix (1, 2, 3) and its ``scalar`` / ``ranges(4)`` / ``bad`` give them.

    Decoded for XEvent's layout as TF writes it (fields 1, 2, 3, each left out
    when zero, then only stats), one pass per field over every event and one
    per stat slot over the events with that many stats, each varint from one
    64-bit load. An event laid out otherwise (other fields or order, a varint
    over 8 bytes, damage) is scanned by ``wire.scan``, which reads anything."""
    n = starts.size
    pos = starts.astype(np.int64)
    odd = np.zeros(n, dtype=bool)
    values = []
    for tag in _EVENT_PREFIX:
        has = (pos < ends) & (buf[pos] == tag)
        # metadata ids are mostly one byte (varints reads those from one gather), times several
        value, size = (wire.varints if tag == 0x08 else wire.short_varints)(buf, pos + 1)
        after = pos + 1 + size
        odd |= has & ((size == 0) | (after > ends))
        value[~has] = 0
        np.copyto(pos, after, where=has)
        values.append(value.view(np.int64))
    md, off, dur = values
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
    todo = np.flatnonzero(pos < ends)
    rank = 0
    while todo.size:
        p = pos[todo]
        length, size = wire.varints(buf, p + 1)
        body = p + 1 + size
        room = ends[todo] - body
        ok = (buf[p] == _STATS_TAG) & (size > 0) & (room >= 0) & \
            (length <= np.maximum(room, 0).astype(np.uint64))
        odd[todo[~ok]] = True
        todo, body = todo[ok], body[ok]
        end = body + length[ok].astype(np.int64)
        parts.append((todo, body, end, rank))
        pos[todo] = end
        todo = todo[end < ends[todo]]
        rank += 1
    bad = np.zeros(n, dtype=bool)
    if parts:
        ev, st, en = (np.concatenate(x) for x in zip(*[q[:3] for q in parts]))
        rk = np.concatenate([np.full(q[0].size, q[3], dtype=np.int64) for q in parts])
        ranges = (ev, st, en, rk)
        if odd.any():  # their stats come from the generic scan below
            keep = ~odd[ev]
            ranges = (ev[keep], st[keep], en[keep], rk[keep])
    else:
        empty = np.zeros(0, dtype=np.int64)
        ranges = (empty, empty, empty, empty)
    g = np.flatnonzero(odd)
    if g.size:  # the generic scan, for these events only
        f = wire.scan(buf, starts[g], ends[g], prefix=(1, 2, 3))
        md[g] = f.scalar(1)[0].view(np.int64)
        off[g] = f.scalar(2)[0].view(np.int64)
        dur[g] = f.scalar(3)[0].view(np.int64)
        bad[g] = f.bad
        gev, gst, gen = f.ranges(4)
        first = np.flatnonzero(np.append(True, gev[1:] != gev[:-1])) if gev.size else gev
        grk = np.arange(gev.size) - np.repeat(first, np.diff(np.append(first, gev.size)))
        ranges = tuple(np.concatenate((a, b)) for a, b in zip(ranges, (g[gev], gst, gen, grk)))  # type: ignore[assignment]
    return md, off, dur, bad, ranges


def _by_event(n: int, ranges: _StatRanges) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stat ranges ordered by event (of ``n``), then by place in the event:
    each goes to its event's first slot plus its rank (a counting sort)."""
    event, start, end, rank = ranges
    counts = np.bincount(event, minlength=n)
    slot = (np.cumsum(counts) - counts)[event] + rank
    out = [np.empty(event.size, dtype=np.int64) for _ in range(3)]
    for o, a in zip(out, (event, start, end)):
        o[slot] = a
    return out[0], out[1], out[2]


def _stats(buf: np.ndarray, ranges: _StatRanges, wanted: np.ndarray,
           needed: list[int]) -> tuple[_Stats, np.ndarray]:
    """The stats of the events where ``wanted``, from the events' stat byte
    ranges (``_events``); and the events whose stats do not parse. Numbers
    are decoded only for the stats whose metadata id is ``needed`` (the others
    read as 0; each is still checked to parse).

    Decoded for XStat's layout as TF writes it (field 1, then one value
    field), one pass per field over all of them; a stat laid out otherwise
    is scanned by ``wire.scan``, as all were before."""
    keep = wanted[ranges[0]]
    event, start, end = _by_event(wanted.size, (ranges[0][keep], ranges[1][keep], ranges[2][keep],
                                                 ranges[3][keep]))
    has = (start < end) & (buf[start] == _S_MD)
    md, size = wire.varints(buf, start + 1)
    md[~has] = 0
    q = np.where(has, start + 1 + size, start)
    odd = has & ((size == 0) | (q > end))
    tag = np.where(q < end, buf[np.minimum(q, end)], 0)
    fixed = tag == _S_DOUBLE
    varint = (tag == _S_U64) | (tag == _S_I64) | (tag == _S_REF)
    length = (tag == _S_STR) | (tag == _S_BYTES)
    # Numbers of other stats (ids of producers and consumers, 9-10 bytes each) are not
    # read: only their size.
    decoded = length | np.isin(md, np.array(needed, dtype=np.uint64))
    read, skip = np.flatnonzero(decoded), np.flatnonzero(~decoded)
    value = np.zeros(md.size, dtype=np.uint64)
    size = np.empty(md.size, dtype=np.int64)
    value[read], size[read] = wire.varints(buf, q[read] + 1)
    size[skip] = wire.varint_sizes(buf, q[skip] + 1)
    body = q + 1 + size
    room = end - body
    after = np.where(fixed, q + 9, np.where(varint, body, q))
    fits = length & (size > 0) & (room >= 0) & (value <= np.maximum(room, 0).astype(np.uint64))
    after = np.where(fits, body + np.where(fits, value, 0).astype(np.int64), after)
    odd |= (after != end) | ((varint | length) & (size == 0)) | (length & ~fits)
    odd |= (q < end) & ~(fixed | varint | length)
    words = np.ndarray((buf.size - 7,), dtype="<u8", buffer=buf, strides=(1,))
    dbl = np.where(fixed, words[np.minimum(q + 1, buf.size - 8)], 0).view(np.float64)
    zero = np.uint64(0)
    ref = np.where(tag == _S_REF, value, zero)
    u64 = np.where(tag == _S_U64, value, zero)
    i64 = np.where(tag == _S_I64, value, zero).view(np.int64)
    s_len = np.where(tag == _S_STR, value, zero).astype(np.int64)
    b_len = np.where(tag == _S_BYTES, value, zero).astype(np.int64)
    s_start = np.where(tag == _S_STR, body, 0)
    md = md.view(np.int64)
    bad = np.zeros(0, dtype=np.int64)
    g = np.flatnonzero(odd)
    if g.size:  # the generic scan, for these stats only
        f = wire.scan(buf, start[g], end[g], prefix=(1,))
        md[g] = f.scalar(1)[0].view(np.int64)
        ref[g] = f.scalar(7)[0]
        gs_len, gs_start, _ = f.scalar(5, wire.LEN)
        s_len[g], s_start[g] = gs_len.astype(np.int64), gs_start
        b_len[g] = f.scalar(6, wire.LEN)[0].astype(np.int64)
        i64[g] = f.scalar(4)[0].view(np.int64)
        u64[g] = f.scalar(3)[0]
        dbl[g] = f.scalar(2, wire.FIXED64)[0].view(np.float64)
        bad = event[g[f.bad]]  # (repeats are harmless; np.unique would import numpy.ma)
    return _Stats(buf, event, md, ref, s_start, s_len, i64, u64, dbl, b_len), bad


def _last(stats: _Stats, sid: int | None) -> np.ndarray:
    """Indexes of the stats with metadata ``sid``, the last one of each event
    (a repeated stat overwrites the earlier one, as in a dict)."""
    if sid is None:
        return np.zeros(0, dtype=np.int64)
    i = np.flatnonzero(stats.md == sid)
    ev = stats.event[i]
    return i[np.append(ev[1:] != ev[:-1], True)] if i.size else i
