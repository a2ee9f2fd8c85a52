"""The events of a profile's host planes, decoded all at once with numpy.

In: the XSpace ``xplane.read_profile`` parsed (``schema.XSpaceRawEvents``:
each line's events left as bytes) and the file's bytes (``locate``); then
the time base and the ``Profile`` to fill (``decode``). Out: that
``Profile``'s eager ops, graph ops, function calls, span and problems, by
the rules written in ``xplane.py``.

How: nothing is parsed whole. The planes and lines are walked by their
field headers, one ``pread`` each (``layout``); the planes' other fields
(names, metadata) are parsed by upb. Each line's events are then read in
windows of ``_WINDOW`` bytes: ``_walk`` finds where each event starts and ends
(``_Chains``, with numpy), and ``_events`` decodes the window's events all at
once for XEvent's layout as TF writes it (``wire.scan``, field by field, for
any other); lines are read two at a time in threads (numpy releases the GIL).
The stats of the events that need them are decoded the same way (``_stats``).
Only the output tuples are built one by one. Memory is the output plus a few windows,
whatever the file's size. ``tests/xplane_reference.py`` is the plain
event-by-event reading this must equal.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import Problem
from . import wire
from .schema import XSpaceRawEvents, read_varint
from .xtypes import _ASYNC, _DATA, _EPOCH_MIN_NS, _EXEC, _OP, _OTHER, HOST_PLANE, Profile, _event_kinds

# pread(n, offset) -> bytes: os.pread of a local file, a ranged read of a remote one
# (``fs.preader``).
Pread = Callable[[int, int], bytes]

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
# The most of a plane's bytes past its lines read whole for upb: more may hold lines
# written after the metadata (what upb would then parse, events and all), so such a
# plane is walked field by field, each line left on disk.
_REST_MAX = 64 << 20
# Metadata ids below this are looked up through a table (TF numbers from 1).
_TABLE_MAX = 1 << 20
# Bytes of a line read and decoded at once: ~200k events, whose decoding
# arrays take some tens of MB (two windows in flight, one per thread).
_WINDOW = 4 << 20
# Enough for a tag and a length (two varints of at most 10 bytes).
_HEADER = 20
# Rounds of _Chains._peel before it gives up (a branch of jumps this long: never in TF's files).
_PEEL_ROUNDS = 24


class Damaged(Exception):
    """The file's protobuf structure is broken (a field runs past its message,
    a varint longer than 10 bytes, a group or unknown wire type, field 0)."""


@dataclass
class LineRef:
    """Where one line of a host plane is in the file, and its timestamp as
    read before its events (serializers write field 3 before field 4)."""

    start: int
    end: int
    timestamp_ns: int
    # The last timestamp_ns the event walk met (None: none), checked against it.
    seen_ns: int | None = None


@dataclass
class Layout:
    """``space``: the XSpace with every plane's fields but its lines (names,
    metadata, stats), parsed by upb; ``lines``: per plane index, the lines of
    the host planes, located, not read."""

    space: Any
    lines: dict[int, list[LineRef]]


def _header(pread: Pread, pos: int, end: int) -> tuple[int, int, int, int]:
    """(field number, wire type, value or length, position after the header,
    i.e. the body of a LEN field or the next field) of the field at ``pos``."""
    head = pread(min(_HEADER, end - pos), pos)
    tag, p = read_varint(head, 0, len(head))
    if p < 0:
        raise Damaged(f"bad tag at byte {pos}")
    number, wt = tag >> 3, tag & 7
    if number == 0:
        raise Damaged(f"field number 0 at byte {pos}")
    if wt in (wire.VARINT, wire.LEN):
        value, p = read_varint(head, p, len(head))
        if p < 0:
            raise Damaged(f"bad varint at byte {pos}")
        after = pos + p + (value if wt == wire.LEN else 0)
    elif wt in (wire.FIXED64, wire.FIXED32):
        value, after = 0, pos + p + (8 if wt == wire.FIXED64 else 4)
    else:
        raise Damaged(f"wire type {wt} at byte {pos}")
    if after > end:
        raise Damaged(f"field {number} at byte {pos} runs past its message (ends {end})")
    return number, wt, value, pos + p if wt == wire.LEN else after


def _fields(pread: Pread, start: int, end: int) -> Iterator[tuple[int, int, int, int, int, int]]:
    """(number, wire type, value or length, tag position, body position, end)
    of each field of the message at ``[start, end)`` of the file, read by
    their headers alone (one pread each)."""
    pos = start
    while pos < end:
        number, wt, value, body = _header(pread, pos, end)
        after = body + value if wt == wire.LEN else body
        yield number, wt, value, pos, body, after
        pos = after


def layout(pread: Pread, size: int, walk_all: bool = False) -> Layout:
    """Walk the XSpace's planes and lines by their headers (one pread per
    field above the events, which stay on disk). Raises ``Damaged``.

    TF writes a plane's fields in number order: its lines (3) come before its
    metadata (4, 5) and stats (6), which run to the plane's end. So the walk of a
    plane stops at its first field past the lines, the rest taken whole for upb
    (thousands of metadata entries, one header each, were most of a small profile's
    reading) where it is at most ``_REST_MAX`` bytes; if upb then finds a line in it
    (written otherwise), every field is walked (``walk_all``)."""
    metas: list[bytes] = []
    lines: dict[int, list[LineRef]] = {}
    index = 0
    for number, wt, _, _, body, after in _fields(pread, 0, size):
        if (number, wt) != (1, wire.LEN):
            continue
        meta: list[bytes] = []
        refs: list[LineRef] = []
        for n, w, _, tag, b, a in _fields(pread, body, after):
            if (n, w) == (3, wire.LEN):
                refs.append(LineRef(b, a, _prescan_timestamp(pread, b, a)))
            elif n > 3 and not walk_all and after - tag <= _REST_MAX:
                meta.append(pread(after - tag, tag))
                break
            else:
                meta.append(pread(a - tag, tag))
        blob = b"".join(meta)
        metas.append(b"\x0a" + _varint(len(blob)) + blob)
        lines[index] = refs
        index += 1
    space = XSpaceRawEvents()
    try:
        space.ParseFromString(b"".join(metas))
    except DecodeError as e:
        raise Damaged(str(e)) from e
    if not walk_all and any(plane.lines for plane in space.planes):
        return layout(pread, size, walk_all=True)
    return Layout(space, {i: refs for i, refs in lines.items()
                          if space.planes[i].name == HOST_PLANE})


def _prescan_timestamp(pread: Pread, start: int, end: int) -> int:
    """The line's timestamp_ns (field 3) as far as it is written before the
    first event; 0 if none. The event walk checks that none follows."""
    ts = 0
    for number, wt, value, _, _, _ in _fields(pread, start, end):
        if (number, wt) == (4, wire.LEN):
            break
        if (number, wt) == (3, wire.VARINT):
            ts = _int64(value)
    return ts


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@dataclass
class HostPlane:
    """What decoding needs of one host plane: its metadata, taken out of the
    upb message, and its lines, located in the file."""

    name: str
    kinds: dict[int, tuple[int, str, str, str]]
    stat_names: dict[int, str]
    lines: list[LineRef]


def host_planes(found: Layout) -> list[HostPlane]:
    """The host planes of ``found``, in file order."""
    return [HostPlane(plane.name, _event_kinds(plane),
                      {e.key: e.value.name for e in plane.stat_metadata}, found.lines[i])
            for i, plane in enumerate(found.space.planes) if i in found.lines]


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

    def texts(self, i: np.ndarray, names: dict[int, str]) -> list[str]:
        """The values of stats ``i`` as text (numbers too, see number_text)."""
        out = self._names(self.ref[i], names)
        for j in np.flatnonzero(self.ref[i] == 0).tolist():
            k = int(i[j])
            out[j] = self.text(k, names) or self.number_text(k)
        texts: list[str] = out.tolist()
        return texts

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


def _windows(pread: Pread, ref: LineRef, window: int
             ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The line's events, window by window: (the window's bytes followed by
    ``wire.PAD`` zeros, event body starts, ends, both within the window).
    Records the last timestamp_ns met in ``ref.seen_ns``. Raises ``Damaged``."""
    pos, end = ref.start, ref.end
    pad = bytes(wire.PAD)
    while pos < end:
        data = pread(min(window, end - pos), pos)
        lim = len(data)
        if not lim:
            raise Damaged(f"file shrank while read (at byte {pos})")
        last = pos + lim == end  # the window reaches the line's end
        d = data + pad
        buf = np.frombuffer(d, dtype=np.uint8)
        starts, ends, p = _walk(d, buf, lim, ref)
        if p < lim and last:
            raise Damaged(f"an event or field at byte {pos + p} runs past its line (ends {end})")
        if not p:  # one field larger than the window
            window *= 2
            continue
        if starts.size:
            yield buf, starts, ends
        pos += p


_SCRATCH = threading.local()


def _zeroed(n: int) -> np.ndarray:
    """This thread's zeroed int32 array of at least ``n`` entries, kept from window to
    window (filling a new one of the window's size cost a third of ``_Chains``);
    the caller sets it back to zeros. One for a window much larger than ``_WINDOW`` (a
    line read whole, an event larger than the window) is not kept."""
    if n > 2 * _WINDOW + 1:
        return np.zeros(n, dtype=np.int32)
    arr: np.ndarray | None = getattr(_SCRATCH, "index", None)
    if arr is None or arr.size < n:
        arr = _SCRATCH.index = np.zeros(n, dtype=np.int32)
    return arr


class _Chains:
    """The runs of back-to-back events in one window, found with numpy.

    Every byte 0x22 (the tag of field 4, length-delimited) may start an event;
    its length varint says where the next field would start. Events follow
    each other, so from a known event the run is the chain of these jumps,
    found by peeling the other candidates off (``_peel``), or, if that takes
    too many rounds, by pointer doubling (``_double``): ``levels[k]`` jumps
    2**k events at once, so a run of n events takes log2(n) array gathers over
    the candidates instead of n steps of a Python loop. Candidates inside an
    event (its stats, or a 0x22 byte in a number) are never reached."""

    def __init__(self, buf: np.ndarray, lim: int) -> None:
        cand = np.flatnonzero(buf[:lim] == 0x22)
        length, size = wire.varints(buf, cand + 1)
        fits = (size > 0) & (length <= np.uint64(lim))
        length[~fits] = lim + 1  # past any window: not valid below
        body = cand + 1 + size
        end = body + length.astype(np.int64)
        valid = fits & (end <= lim)
        stop = cand.size  # the sink: "no event follows"
        # position -> 1 + candidate, for the valid ones; everything else 0
        index = _zeroed(lim + 1)
        got = np.flatnonzero(valid)
        at = cand[got]
        try:
            index[at] = got + 1
            jump = index[end[got]].astype(np.int64) - 1
        finally:
            index[at] = 0
        nxt = np.full(stop + 1, stop, dtype=np.int32)
        nxt[got] = np.where(jump < 0, stop, jump)
        self.cand, self.body, self.end, self.valid = cand, body, end, valid
        self.levels = [nxt]

    def run(self, p: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(body starts, ends) of the events from the one whose tag is at
        ``p`` as far as they follow each other within the window, and the
        position after the last; empty and ``p`` if that event does not fit."""
        i = int(np.searchsorted(self.cand, p))
        if i >= self.cand.size or self.cand[i] != p or not self.valid[i]:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, p
        path = self._peel(i)
        if path is None:
            path = self._double(i)
        return self.body[path], self.end[path], int(self.end[path[-1]])

    def _peel(self, i: int) -> np.ndarray | None:
        """The run from candidate ``i`` by peeling: the jumps form a forest
        (each candidate jumps forward to one other, or to the sink), and the
        run is the one path from ``i`` to the sink. Removing, round after
        round, the candidates nothing alive jumps to (but ``i``) leaves
        exactly that path: a path candidate keeps its predecessor on the path,
        anything else loses its ancestors in as many rounds as its branch is
        long. Branches are short (a stat's chain joins its event's end within
        the event, a 0x22 byte in a number mostly jumps to no candidate), so a
        few bincounts replace log2(n) gathers; None after ``_PEEL_ROUNDS``
        (then ``_double``)."""
        stop = self.cand.size
        jump = self.levels[0][i:stop] - i  # the sink is stop - i
        alive = self.valid[i:].copy()
        size = stop - i + 1
        indeg = np.bincount(jump[alive], minlength=size)
        leaves = np.flatnonzero(alive & (indeg[:-1] == 0))
        leaves = leaves[leaves != 0]
        for _ in range(_PEEL_ROUNDS):
            if not leaves.size:
                return np.flatnonzero(alive) + i
            alive[leaves] = False
            lost = np.bincount(jump[leaves], minlength=size)
            indeg -= lost
            leaves = np.flatnonzero((lost[:-1] > 0) & (indeg[:-1] == 0) & alive)
        return None

    def _double(self, i: int) -> np.ndarray:
        """The run from candidate ``i`` by pointer doubling (see the class)."""
        stop = self.cand.size
        path = np.array([i], dtype=np.int32)
        k = 0
        while path[-1] != stop:
            if k == len(self.levels):
                jump = self.levels[-1]
                self.levels.append(jump[jump])
            path = np.concatenate((path, self.levels[k][path]))
            k += 1
        path = path[:int(np.argmax(path == stop))]
        return path


def _walk(d: bytes, buf: np.ndarray, lim: int, ref: LineRef) -> tuple[np.ndarray, np.ndarray, int]:
    """Walk the fields of ``d[:lim]`` (a window of a line; ``d`` has
    ``wire.PAD`` bytes after ``lim``; ``buf`` the same as an array): the
    events' body starts and ends, and the position of the first field not
    wholly in the window (``lim`` if none). Runs of events are found by
    ``_Chains``; the few other fields of a line are walked here."""
    chains: _Chains | None = None
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    p = 0
    while p < lim:
        if d[p] == 0x22:
            chains = chains or _Chains(buf, lim)
            s, e, q = chains.run(p)
            if q == p:
                break
            starts.append(s)
            ends.append(e)
            p = q
            continue
        tag, q = read_varint(d, p, lim)
        if q < 0:
            break
        number, wt = tag >> 3, tag & 7
        if number == 0 or wt not in (wire.VARINT, wire.LEN, wire.FIXED64, wire.FIXED32):
            raise Damaged(f"field number {number}, wire type {wt} in a line")
        if wt == wire.VARINT:
            value, q = read_varint(d, q, lim)
            if q < 0:
                break
            if number == 3:
                ref.seen_ns = _int64(value)
        elif wt == wire.LEN:
            n, b = read_varint(d, q, lim)
            if b < 0 or b + n > lim:
                break
            if number == 4:  # an event whose tag is not the one-byte 0x22
                starts.append(np.array([b], dtype=np.int64))
                ends.append(np.array([b + n], dtype=np.int64))
            q = b + n
        else:
            q += 8 if wt == wire.FIXED64 else 4
            if q > lim:
                break
        p = q
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, p
    return np.concatenate(starts), np.concatenate(ends), p


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
            prof.graph_ops.extend(part.graph_ops)
            prof.function_calls.extend(part.function_calls)
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
    # Garbage times would overflow int64 arithmetic: checked in floats first, unless
    # every offset and duration is below 2**52 and t0 below 2**61 (so every sum below
    # stays under _TIME_MAX: the window's four extremes decide it).
    if not (off.size and abs(float(t0)) < _SMALL_T0 and -_SMALL < int(off.min()) and
            int(off.max()) < _SMALL and -_SMALL < int(dur.min()) and int(dur.max()) < _SMALL):
        off_f, dur_f = off.astype(np.float64), dur.astype(np.float64)
        approx = float(t0) + off_f / 1000.0
        sane = (abs(float(t0)) < _TIME_MAX) & (np.abs(off_f) < _TIME_MAX) & \
            (np.abs(dur_f) < _TIME_MAX) & (np.abs(approx) < _TIME_MAX) & \
            (np.abs(approx + dur_f / 1000.0) < _TIME_MAX)
        counts["range"] += int((usable & ~sane).sum())
        usable &= sane
        del approx, sane, off_f, dur_f

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
    nodes = node_column[index[ops]].tolist()
    kernels = kernel_column[index[ops]].tolist()
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
        names = name_column[index[events]].tolist()
        prof.function_calls.extend(zip(names, ts[events].tolist(), dns[events].tolist()))
    _iterator_specs(kind == _DATA, usable, stats, ok_stat, stat_ids, stat_names, prof)


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
