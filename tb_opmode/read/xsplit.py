"""Where to cut a profile plane's lines so that two threads share its decoding evenly.

In: a host plane's located lines (``xlayout.LineRef``) and a ``pread`` of the file.
Out: ``pieces``, the plane's work as ``Piece``s, in the order to hand them to the
threads: when one line holds more than half the plane's bytes (a busy ``tf_Compute``
thread: one line can be most of a profile), it is cut in two at an event start, the
larger piece first, so that each thread gets about half the bytes.

Where an event starts cannot be read from the middle of a line: events are
back-to-back length-delimited fields (tag 0x22), and a 0x22 byte may as well start one
of an event's stats (the same tag) or be a number's byte. ``_event_start_near`` follows
the jumps from each 0x22 near the target: a false start dies within a few jumps or
merges into the chain of true events (a stat chain's last jump lands on the next event),
so a position every surviving chain passes through is an event start. The piece before
the cut proves it: its walk must end exactly there (``xchains._windows`` raises
``Damaged`` otherwise), and the caller reads the line whole when it does not.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .schema import read_varint
from .xlayout import LineRef, Pread

__all__ = ["Piece", "pieces"]

# A line is cut only when it holds this many bytes: below it, finding the cut and a
# second walk cost more than the balance gains.
MIN_CUT_BYTES = 8 << 20
# Bytes read at the target to find the cut, chains started in the first of them, and
# the jumps a chain must survive to count.
_PROBE = 64 << 10
_STARTS = 512
_JUMPS = 64
_EVENT_TAG = 0x22


@dataclass(frozen=True)
class Piece:
    """Part of a plane's work: line ``index`` of the plane whole (``part`` 0 of 1), or the
    first (0) or second (1) of its two pieces; ``ref`` its bytes."""

    index: int
    part: int
    parts: int
    ref: LineRef


def pieces(pread: Pread, lines: list[LineRef], threads: int) -> list[Piece]:
    """The plane's lines as pieces for ``threads`` threads: each line whole, in order,
    unless one holds more than half the bytes of two threads' work; that one is cut so
    that its second piece is half the plane's bytes, and that piece goes first."""
    whole = [Piece(i, 0, 1, ref) for i, ref in enumerate(lines)]
    sizes = [ref.end - ref.start for ref in lines]
    total = sum(sizes)
    if threads != 2 or not lines:
        return whole
    big = max(range(len(lines)), key=sizes.__getitem__)
    ref = lines[big]
    if sizes[big] * 2 <= total or sizes[big] < MIN_CUT_BYTES:
        return whole
    cut = _event_start_near(pread, ref, ref.end - total // 2)
    if cut is None:
        return whole
    first = Piece(big, 0, 2, dataclasses.replace(ref, end=cut, seen_ns=None))
    second = Piece(big, 1, 2, dataclasses.replace(ref, start=cut, seen_ns=None))
    return [second, *whole[:big], first, *whole[big + 1:]]


def _jump(data: bytes, p: int) -> int:
    """The position after the length-delimited field at ``p`` (its tag one byte), or -1
    if ``p`` holds no event tag or its length runs past ``data``."""
    if data[p] != _EVENT_TAG:
        return -1
    n, q = read_varint(data, p + 1, len(data))
    return q + n if q >= 0 and q + n < len(data) else -1


def _chain(data: bytes, p: int) -> list[int] | None:
    """The positions of ``_JUMPS`` fields chained from ``p``, or None if it dies first."""
    seen = [p]
    for _ in range(_JUMPS):
        p = _jump(data, p)
        if p < 0:
            return None
        seen.append(p)
    return seen


def _event_start_near(pread: Pread, ref: LineRef, target: int) -> int | None:
    """A position at or after ``target`` (inside ``ref``) where an event of the line starts,
    found as the first position every surviving chain from the 0x22 bytes at ``target``
    passes; None if there is none (then the line is not cut)."""
    start = max(ref.start, min(target, ref.end - _PROBE))
    data = pread(min(_PROBE, ref.end - start), start)
    common: set[int] | None = None
    for p in range(min(_STARTS, len(data))):
        if data[p] != _EVENT_TAG:
            continue
        chain = _chain(data, p)
        if chain is not None:
            common = set(chain) if common is None else common & set(chain)
    if not common:
        return None
    cut = start + min(common)
    return cut if ref.start < cut < ref.end else None
