"""A range of a big traces file read fast: framed, keyed and CRC-checked a window at a time.

In: a ``.graph_execution_traces`` file, a byte range, and the layout of its records (the
bytes after each key, ``framing._trace_tail``). Out: ``_Part``s in file order: fast ones
(counts by raw key, the first record of each key), and exact ones (``traceparts``) where a
window does not verify (damage, a cut-off file, another layout).
"""
from __future__ import annotations

import io
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

from .. import fs
from ..tfrecord import ChunkVerifier, RecordReader, next_intact_record
from .framing import _U64, _loop_frame, _Window
from .keytable import _KeyTable
from .traceparts import _exact_part, _Part

__all__: list[str] = []


_CHUNK = 8 << 20


# How far a worker looks for the first intact record of its half.
_SYNC_LIMIT = 1 << 20


def _first_payload(path: str, start: int) -> bytes | None:
    """The payload of the first intact record from ``start`` on. Not only the record at
    ``start``: when that one is damaged, the fast reader must still learn the layout
    from the next, or one flipped byte at the start reads a big file record by record."""
    records = iter(RecordReader(path, start=start))
    try:
        for _offset, payload in records:
            return payload
    except OSError:
        return None
    finally:
        records.close()  # type: ignore[attr-defined]  # a generator (RecordReader.__iter__): closes the file
    return None


def _fast_range(path: str, lo: int, hi: int, size: int, tail: int, sync: bool) -> list[_Part]:
    """Read the records that start in [lo, hi) of a traces file: fast parts, and exact
    parts where a window does not verify (damage). With ``sync``, ``lo`` is any byte
    offset and reading starts at the first intact record after it.

    The file is read in windows of ``_CHUNK`` bytes with ``pread``, not mapped: a mapped
    file cut short by someone else while we read it would kill the process (SIGBUS),
    and inside TensorBoard this runs in the server's own process. A short read ends the
    fast reading; the exact reader then takes over and reports what it finds."""
    verifier = ChunkVerifier()
    # One buffer for every window (and the search below): a new one per window would
    # leave the heap holding several.
    win = _Window(_CHUNK + (_SYNC_LIMIT if sync else 0))
    with fs.open_read(path) as f:
        readinto = _readinto(f) or win.copier(fs.preader(f))
        if sync:
            # One record past the search limit still fits in the window; a record too
            # big for it is missed here and read by the exact reader that fills the gap.
            limit = min(hi, lo + _SYNC_LIMIT)
            got = win.read(readinto, min(size, limit + _CHUNK) - lo, lo)
            found = next_intact_record(win.view[:got], got, 0, limit=limit - lo)
            if found is None:
                return []
            lo += found
        parts: list[_Part] = []
        pos = lo
        while pos < hi:
            part, pos, short = _fast_part(win, readinto, pos, hi, size, tail, verifier)
            if part.records:
                parts.append(part)
            if pos >= hi:
                break
            if short:  # the file was cut short: the exact reader reports what is left
                parts.append(_exact_part(path, pos, hi if hi < size else None))
                return parts
            # Damage (or a record too big for a window) in the window from ``pos``: read
            # that window record by record, then go on fast where the exact reader
            # stopped (a record boundary it verified, or found by its resync). Before,
            # the exact reader took the rest of the range: one flipped byte near the
            # start of a big file cost several times the intact read.
            stop = min(hi, pos + max(part.framed, 1))
            fill = _exact_part(path, pos, stop if stop < size else None)
            parts.append(fill)
            if fill.stop <= pos:  # the file shrank under the exact reader, which said so
                return parts
            pos = fill.stop
    if pos >= size:
        if parts and parts[-1].fast:
            parts[-1].stop = size
        elif not parts:
            parts.append(_exact_part(path, pos, None))
    return parts


def _readinto(f: Any) -> Callable[[Any, int], int] | None:
    """``readinto(view, offset)`` with ``os.preadv`` on a local file's descriptor (no
    copy, no seek); None for a file without one (remote)."""
    try:
        fd = f.fileno()
    except (OSError, AttributeError, io.UnsupportedOperation):
        return None
    if not hasattr(os, "preadv"):
        return None

    def readinto(view: Any, offset: int) -> int:
        return os.preadv(fd, [view], offset)
    return readinto


def _fast_part(win: _Window, fill: Callable[[Any, int], int], pos: int, hi: int, size: int, tail: int,
               verifier: ChunkVerifier) -> tuple[_Part, int, bool]:
    """Records from ``pos`` read fast, window by window, until ``hi`` or a window that
    does not verify: (the part, where it stopped, whether a read came up short).
    ``part.framed`` is then how many bytes the failing window's framing covered.

    Each window is read into ``win``'s buffer (``fill(view, offset)``). Its records
    are framed and keyed with numpy where they have the layout TF writes
    (``_Window.frame``, ``_KeyTable.count``): a handful of array operations per
    window instead of Python steps per record. Records the vector path does not
    reach (the window's last one or two; a record of another layout; keys too short
    or too long for it) are framed and keyed one by one (``_loop_frame``), with the
    same result."""
    part = _Part(start=pos, fast=True)
    counts = part.counts
    samples = part.samples
    cut = tail + 4
    short = False
    table = _KeyTable(win, cut)
    try:
        while pos < hi:
            want = min(size, pos + _CHUNK) - pos
            window = win.read(fill, want, pos)
            data = win.buf
            short = window < want
            limit = min(hi - 1 - pos, window - 16)
            predicted = table.predict(limit)
            starts, ends = predicted or win.frame(window, limit)
            offsets, keys, p = _loop_frame(data, int(ends[-1]) if len(starts) else 0, limit, cut)
            if p > window:  # the last record runs past the window: leave it to the next one
                starts, ends, p = _drop_last(starts, ends, offsets, keys)
            if not len(starts) and not offsets:
                part.framed = min(p, window)
                break
            # Keyed before the CRCs are checked: the check rewrites the CRC fields in place
            # (keys and payloads lie between them).
            if len(starts) and not (predicted and table.check(starts, ends)) \
                    and not table.count(starts, ends):
                keys = [bytes(data[s + 21:e - cut]) for s, e in zip(starts.tolist(), ends.tolist())] + keys
                offsets = starts.tolist() + offsets
                starts, ends = starts[:0], ends[:0]
            every = win.join(starts, offsets)
            if not verifier.verify(data, every, p, in_place=True):
                part.framed = min(p, window)
                break
            short = False  # what was read verified; a short read shows again next window
            if len(starts):
                table.keep(starts, ends, counts, samples, bool(offsets))
            _count_keys(data, keys, offsets, counts, samples)
            _note_ends(part, data, int(every[0]), int(every[-1]), len(every))
            pos += p
    finally:
        table.flush(counts)
    part.stop = part.end_offset = pos
    return part, pos, short


def _drop_last(starts: Any, ends: Any, offsets: list[int], keys: list[bytes]) -> tuple[Any, Any, int]:
    """Leave a window's last record (it runs past the window) to the next window: the
    records framed (``starts``, ``ends``, and ``offsets`` and ``keys`` one by one, which
    follow them) less that one, and where it starts."""
    if offsets:
        keys.pop()
        return starts, ends, offsets.pop()
    return starts[:-1], ends[:-1], int(starts[-1])


def _payload(data: Any, offset: int) -> bytes:
    """The payload of the record at ``offset`` of a window."""
    return bytes(data[offset + 12:offset + 12 + _U64.unpack_from(data, offset)[0]])


def _count_keys(data: Any, keys: list[bytes], offsets: list[int], counts: dict[Any, int],
                samples: dict[bytes, bytes]) -> None:
    """Count the records keyed one by one (``keys``, at ``offsets`` of a verified window);
    a new key's first record goes into ``samples``."""
    if not keys:
        return
    chunk = Counter(keys)
    new = [k for k in chunk if k not in counts]
    if new:
        firsts = dict(zip(reversed(keys), reversed(offsets)))
        for k in new:
            samples[k] = _payload(data, firsts[k])
    for k, n in chunk.items():
        counts[k] = counts.get(k, 0) + n


def _note_ends(part: _Part, data: Any, first: int, last: int, records: int) -> None:
    """A verified window's ``records`` (the first at ``first``, the last at ``last``) added
    to ``part``, with the part's first and last payloads."""
    if not part.records:
        part.first_payload = _payload(data, first)
    part.records += records
    part.last_payload = _payload(data, last)
