"""The layout of TF's trace records, and their framing a window at a time with numpy.

In: a traces file's bytes, a window (``_CHUNK`` bytes, ``fastread``) at a time, read into
one buffer. Out: where each record starts and ends (``_Window.frame``: the records of
TF's layout, by pointer doubling; ``_loop_frame``: any records, one by one, by their
lengths) and their keys; ``_trace_tail``, the bytes after a record's key.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np  # tensorboard depends on numpy

from ..schema import message_fields, read_varint

__all__: list[str] = []


_WALL_TAG = 0x09          # DebugEvent.wall_time, fixed64
_TRACE_TAG = 0x52         # DebugEvent.graph_execution_trace, length-delimited
_KEY_START = 9            # payload offset of the trace tag, after the wall time


def _trace_tail(payload: bytes) -> int | None:
    """Bytes from the tensor proto (or whatever follows the key fields) to the end of a
    trace record laid out as TF writes it: wall time, then one GraphExecutionTrace whose
    fields 1-4 (context, op name, slot, mode) come before fields 5-6 (tensor proto,
    device). None for any other layout."""
    if len(payload) < _KEY_START + 2 or payload[0] != _WALL_TAG or payload[_KEY_START] != _TRACE_TAG:
        return None
    length, pos = read_varint(payload, _KEY_START + 1, len(payload))
    if pos < 0 or pos + length != len(payload):
        return None
    fields = message_fields(payload, pos, len(payload))
    if not fields:
        return None
    boundary = len(payload)
    seen_tail = False
    for number, _, _, start, _ in fields:
        if number in (5, 6):
            if not seen_tail:
                boundary, seen_tail = start, True
        elif number in (1, 2, 3, 4):
            if seen_tail:
                return None
        else:
            return None
    return len(payload) - boundary


_U64 = struct.Struct("<Q")


def _loop_frame(data: Any, p: int, limit: int, cut: int) -> tuple[list[int], list[bytes], int]:
    """Frame the records of a window from ``p`` on by their lengths alone, one by one, as
    long as they start at or before ``limit``: their offsets, keys, and where the next
    would start."""
    unpack = _U64.unpack_from
    offsets: list[int] = []
    keys: list[bytes] = []
    add_key, add_offset = keys.append, offsets.append
    while p <= limit:
        add_offset(p)
        e = p + unpack(data, p)[0] + 16
        add_key(bytes(data[p + 21:e - cut]))
        p = e
    return offsets, keys, p


# Bytes of zeros kept after a window in its buffer: the vector framing looks a few
# bytes past the last record start it considers.
_PAD = 64
# The vector framing's scan for record starts goes over this many bytes at a time.
_MASK_BLOCK = 1 << 20


class _Window:
    """One buffer a traces file is read into, window after window, and the framing of
    the records in it with numpy."""

    def __init__(self, size: int) -> None:
        self.np = np
        self.buf: Any = np.zeros(size + _PAD, dtype=np.uint8)
        self.view = memoryview(self.buf.data)
        # Unaligned little-endian 64-bit words at every byte offset: lengths, key words.
        self.u64: Any = np.ndarray((len(self.buf) - 7,), dtype="<u8", buffer=self.buf, strides=(1,))
        self._empty: Any = np.zeros(0, dtype=np.int64)
        self.mask: Any = np.zeros(min(size, _MASK_BLOCK), dtype=bool)

    def copier(self, pread: Callable[[int, int], bytes]) -> Callable[[Any, int], int]:
        """``readinto`` for a file that has no descriptor (remote): read, then copy."""
        def fill(view: Any, offset: int) -> int:
            data = pread(len(view), offset)
            view[:len(data)] = data
            return len(data)
        return fill

    def read(self, fill: Callable[[Any, int], int], n: int, offset: int) -> int:
        """Read ``n`` bytes from ``offset`` into the buffer: how many were read."""
        got = fill(self.view[:n], offset)
        self.buf[got:got + _PAD] = 0
        return got

    def rows(self, width: int) -> Any:
        """The buffer as overlapping rows of ``width`` bytes, one starting at each byte."""
        return self.np.lib.stride_tricks.as_strided(
            self.buf, shape=(len(self.buf) - width + 1, width), strides=(1, 1), writeable=False)

    def join(self, starts: Any, offsets: list[int]) -> Any:
        if not offsets:
            return starts
        return self.np.concatenate((starts, self.np.array(offsets, dtype=self.np.int64)))

    def frame(self, window: int, limit: int) -> tuple[Any, Any]:
        """(starts, ends) of the records from the window's start on, as far as they follow
        each other and have the layout of TF's trace records (wall time first, then the
        trace), all starting at or before ``limit``: the same offsets the lengths alone
        give, found without a step per record.

        Every byte offset whose payload would begin with the wall-time tag and carry the
        trace tag 9 bytes later is a candidate; its length says where the next record
        would start. From the window's first record the chain of these jumps is followed
        by pointer doubling (``levels[k]`` jumps 2**k records at once): a byte inside a
        record that looks like a start (a health value's bytes) is never reached."""
        np = self.np
        buf = self.buf
        if limit < 0:
            return self._empty, self._empty
        # In blocks, into one mask: an 8 MB temporary per window would stay in the heap.
        mask = self.mask
        found = []
        for lo in range(0, limit + 1, len(mask)):
            n = min(len(mask), limit + 1 - lo)
            np.equal(buf[12 + lo:12 + lo + n], _WALL_TAG, out=mask[:n])
            found.append(np.flatnonzero(mask[:n]) + lo)
        cand = np.concatenate(found) if len(found) > 1 else found[0]
        if not cand.size or cand[0] != 0:
            return self._empty, self._empty
        cand = cand[buf[cand + 21] == _TRACE_TAG]
        if not cand.size or cand[0] != 0:
            return self._empty, self._empty
        lengths = self.u64[cand]
        ends = cand + np.minimum(lengths, np.uint64(window)).astype(np.int64) + 16
        n = cand.size
        if n == 1 or bool((ends[:-1] == cand[1:]).all()):
            return cand, ends
        at = np.searchsorted(cand, ends)
        hit = at < n
        hit[hit] = cand[at[hit]] == ends[hit]
        nxt = np.full(n + 1, n, dtype=np.int64)  # n: the sink, "no record of the layout follows"
        nxt[:n][hit] = at[hit]
        path = np.zeros(1, dtype=np.int64)
        jump = nxt
        while path[-1] != n:
            path = np.concatenate((path, jump[path]))
            jump = jump[jump]
        path = path[:int(np.argmax(path == n))]
        return cand[path], ends[path]
