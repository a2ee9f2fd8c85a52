"""Where each event of a profile line's window starts and ends, found with numpy.

In: a located line (``xlayout.LineRef``) and a ``pread`` of its file. Out: the line's
events window by window (``_windows``): the window's bytes, and the body start and end
of each event in it (``_walk``; runs of back-to-back events by ``_Chains``); the line's
timestamp as the walk met it.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np

from . import wire
from .schema import read_varint
from .xlayout import Damaged, LineRef, Pread, _int64

__all__: list[str] = []

# Bytes of a line read and decoded at once: ~200k events, whose decoding
# arrays take some tens of MB (two windows in flight, one per thread).
_WINDOW = 4 << 20
# Rounds of _Chains._peel before it gives up (a branch of jumps this long: never in TF's files).
_PEEL_ROUNDS = 24


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
