"""Protocol-buffer wire decoding of many small messages at once, with numpy.

In: one byte buffer (``padded``) and the ``[start, end)`` byte ranges of N
serialized messages of one type, e.g. the 3.4 million ``XEvent``s of a 70 MB
profile. Out: ``Fields``, from which each field number's values come as
arrays indexed by message (``scalar``), or, for repeated and nested
messages, as byte ranges (``ranges``) to scan in turn.

Why: upb parses a profile in a fraction of a second, but reading its events
back through Python attribute access costs a microsecond or more per field;
3.4 million events took three seconds. Here each pass of the loop decodes
the next field of every message still open, so the Python-level work is a
few dozen numpy operations in all, whatever the number of messages.

Damage is per message: a message whose bytes do not parse (a length past
its end, a varint longer than 10 bytes, a group or unknown wire type, a
field number 0) is flagged in ``Fields.bad``; its neighbours are unaffected.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from io import BufferedIOBase
from typing import BinaryIO, cast

import numpy as np

from . import fs
from .schema import FIXED32, FIXED64, LEN, VARINT

__all__ = ["Fields", "PAD", "padded", "read_padded", "varints", "short_varints", "varint_sizes", "scan",
           "VARINT", "FIXED64", "LEN", "FIXED32"]

# Zero bytes after the data: a varint read starting at most at the end of a
# message gathers up to 10 bytes, which then never index past the buffer.
PAD = 16
_CHUNK = 1 << 18
_U64 = np.uint64


def padded(data: bytes) -> np.ndarray:
    """``data`` as a read-only uint8 array followed by ``PAD`` zero bytes."""
    return np.frombuffer(data + bytes(PAD), dtype=np.uint8)


def read_padded(f: BinaryIO | BufferedIOBase) -> tuple[bytearray, int]:
    """The file's bytes (as many as its size when opened; fewer if it shrank
    meanwhile) followed by ``PAD`` zero bytes, read without a second copy;
    and the number of bytes read."""
    size = fs.size_of(f)
    data = bytearray(size + PAD)
    view = memoryview(data)
    n = 0
    while n < size:
        got = cast(BufferedIOBase, f).readinto(view[n:size])  # every file we open has readinto
        if not got:
            break
        n += got
    view.release()
    return data, n


def _words(buf: np.ndarray) -> np.ndarray:
    """A view of ``buf`` as overlapping little-endian uint64s, one starting at
    every byte: ``_words(buf)[p]`` holds bytes p .. p+7 (unaligned loads)."""
    return np.ndarray((buf.size - 7,), dtype="<u8", buffer=buf, strides=(1,))


_CONT = _U64(0x8080808080808080)
# SWAR steps that pack the 7 payload bits of 8 bytes into 56 bits: adjacent
# 7-bit groups join into 14-bit groups, then 28, then 56.
_PACK = [(_U64(0x007F007F007F007F), _U64(0x7F007F007F007F00), _U64(1)),
         (_U64(0x00003FFF00003FFF), _U64(0x3FFF00003FFF0000), _U64(2)),
         (_U64(0x000000000FFFFFFF), _U64(0x0FFFFFFF00000000), _U64(4))]


def varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The base-128 varints starting at byte positions ``pos`` of ``buf``:
    (values as uint64, sizes in bytes). Size 0 marks a varint longer than
    10 bytes.

    One-byte varints (tags, small ids) take one gather. Longer ones up to 8
    bytes are decoded from one unaligned 64-bit load each, with shifts and
    masks over the whole array; the rare longer ones (negative int64s are 10
    bytes) byte by byte."""
    first = buf[pos]
    values = (first & 0x7F).astype(_U64)
    sizes = np.ones(pos.size, dtype=np.int64)
    more = np.flatnonzero(first >= 0x80)
    if not more.size:
        return values, sizes
    w = _words(buf)[pos[more]]
    ends = ~w & _CONT  # the stop bit of each byte that ends a varint
    fits = ends != 0
    lowest = ends & (~ends + _U64(1))
    # the stop bit's index, from the exponent of the power of two as a float64 (exact)
    bit = (np.where(fits, lowest, _U64(1)).astype(np.float64).view(_U64) >> _U64(52)).astype(np.int64) - 1023
    n = (bit + 1) // 8
    packed = w & _U64(0x7F7F7F7F7F7F7F7F)
    for low, high, shift in _PACK:
        packed = (packed & low) | ((packed & high) >> shift)
    keep = (_U64(1) << (_U64(7) * n.astype(_U64))) - _U64(1)
    values[more] = packed & keep
    sizes[more] = n
    long = more[~fits]
    if long.size:
        values[long], sizes[long] = _slow_varints(buf, pos[long])
    return values, sizes


def short_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``varints`` for fields that are mostly several bytes long (times in ps):
    every varint from one unaligned 64-bit load, no split by length.
    (values as uint64, sizes in bytes); size 0 (value 0) for a varint longer
    than 8 bytes, which the caller reads otherwise."""
    w = _words(buf)[pos]
    # in place where it can: each temporary over millions of varints costs a pass of its own
    lowest = np.invert(w)
    lowest &= _CONT  # the stop bits
    mask = np.invert(lowest)
    mask += _U64(1)
    lowest &= mask  # the stop bit of the varint's last byte, 0 if none
    # its index, from the exponent of the power of two as a float64 (exact; 0 -> -1023)
    bit = lowest.astype(np.float64).view(_U64) >> _U64(52)
    sizes = bit.view(np.int64)
    sizes -= 1023 - 1
    np.maximum(sizes, 0, out=sizes)
    sizes //= 8
    np.left_shift(lowest, _U64(1), out=mask)
    mask -= _U64(1)
    w &= mask
    w &= _U64(0x7F7F7F7F7F7F7F7F)
    for low, high, shift in _PACK:
        np.bitwise_and(w, high, out=mask)
        mask >>= shift
        w &= low
        w |= mask
    w[sizes == 0] = 0
    return w, sizes


def varint_sizes(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The sizes ``varints`` gives (0: longer than 10 bytes), without the values:
    for fields whose value is not read but whose end must be known."""
    w = _words(buf)[pos]
    lowest = np.invert(w)
    lowest &= _CONT
    mask = np.invert(lowest)
    mask += _U64(1)
    lowest &= mask
    sizes: np.ndarray = (lowest.astype(np.float64).view(_U64) >> _U64(52)).view(np.int64)
    sizes -= 1023 - 1
    sizes //= 8
    long = np.flatnonzero(lowest == 0)  # 9 or 10 bytes, or longer
    if long.size:
        at = pos[long]
        sizes[long] = np.where(buf[at + 8] < 0x80, 9, np.where(buf[at + 9] < 0x80, 10, 0))
    return sizes


def _slow_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.zeros(pos.size, dtype=_U64)
    sizes = np.zeros(pos.size, dtype=np.int64)
    todo = np.arange(pos.size)
    for k in range(10):
        b = buf[pos[todo] + k]
        values[todo] |= (b & 0x7F).astype(_U64) << _U64(7 * k)
        more = b >= 0x80
        sizes[todo[~more]] = k + 1
        todo = todo[more]
        if not todo.size:
            break
    return values, sizes


def _fixed(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Little-endian fixed-width integers (4 or 8 bytes) at ``pos``, as uint64."""
    words: np.ndarray = _words(buf)[pos]
    if width == 8:
        return words
    low: np.ndarray = words & _U64(0xFFFFFFFF)
    return low


_Pass = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class Fields:
    """The fields of N messages, as scanned. ``dense`` holds the prefix
    fields, one (value, present) pair of arrays per field number. ``passes``
    holds one tuple per pass of the generic scan, in order: (message index,
    field number, wire type, value, body start). The value is the number for
    varint and fixed fields, the length for length-delimited ones (whose
    bytes start at body start)."""

    n: int
    bad: np.ndarray
    dense: dict[int, tuple[np.ndarray, np.ndarray]]
    passes: list[_Pass]

    def _select(self, number: int, wire_type: int
                ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(message index, value, body start) of each generic pass's
        occurrences of the field, pass by pass."""
        for msg, field, wt, val, body in self.passes:
            m = (field == number) & (wt == wire_type)
            if m.any():
                yield msg[m], val[m], body[m]

    def scalar(self, number: int, wire_type: int = VARINT
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(value, body start, present), one per message, of a singular
        field. The value is a uint64 (a length for a length-delimited field,
        whose bytes begin at body start). As protobuf parsers do, the last
        occurrence wins: the prefix first, then the passes in order, each
        with at most one field per message."""
        later = list(self._select(number, wire_type))
        if number in self.dense and wire_type == VARINT:
            values, present = self.dense[number]
            if later:
                values, present = values.copy(), present.copy()
        else:
            values, present = np.zeros(self.n, dtype=_U64), np.zeros(self.n, dtype=bool)
        starts = np.zeros(self.n, dtype=np.int64)
        for msg, val, body in later:
            values[msg] = val
            starts[msg] = body
            present[msg] = True
        return values, starts, present

    def ranges(self, number: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every occurrence of length-delimited field ``number`` (a repeated
        or nested message, a string): (message index, start, end) arrays,
        ordered by message, then by position in the message."""
        parts = [(msg, body, body + val.astype(np.int64))
                 for msg, val, body in self._select(number, LEN)]
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        msg, start, end = (np.concatenate(p) for p in zip(*parts))
        order = np.argsort(msg, kind="stable")
        return msg[order], start[order], end[order]


def scan(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
         prefix: tuple[int, ...] = ()) -> Fields:
    """Scan the messages at ``[starts[i], ends[i])`` of ``buf`` (from
    ``padded``; every end within the unpadded data) field by field.

    ``prefix``: varint fields that serializers write first, in this order
    (fields are written by number; zeros are left out). Each is taken in one
    pass where its one-byte tag is next, skipping the tag decoding and the
    wire-type split; whatever follows, in any order, is scanned generically.

    Messages are scanned in chunks of ``_CHUNK``: a pass makes a dozen
    temporary arrays, and over millions of messages at once they would
    take hundreds of megabytes."""
    n = starts.size
    dense = {number: (np.zeros(n, dtype=_U64), np.zeros(n, dtype=bool)) for number in prefix}
    bad = np.zeros(n, dtype=bool)
    passes: list[_Pass] = []
    for i in range(0, n, _CHUNK):
        chunk = slice(i, i + _CHUNK)
        for msg, *rest in _scan_chunk(buf, starts[chunk], ends[chunk], prefix, bad[chunk],
                                      {k: (v[chunk], p[chunk]) for k, (v, p) in dense.items()}):
            passes.append((msg + i, rest[0], rest[1], rest[2], rest[3]))
    return Fields(n, bad, dense, passes)


def _scan_chunk(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, prefix: tuple[int, ...],
                bad: np.ndarray, dense: dict[int, tuple[np.ndarray, np.ndarray]]) -> list[_Pass]:
    """``scan`` of one chunk: fills the views ``bad`` and ``dense`` and
    returns the generic passes, with message indexes within the chunk."""
    cur = starts.astype(np.int64)
    ends = ends.astype(np.int64)
    passes: list[_Pass] = []
    for number in prefix:
        # Over every message at once, with masks rather than index lists: most messages
        # have the field (a gather and a scatter per array cost more than a pass).
        tagged = (cur < ends) & (buf[cur] == (number << 3) | VARINT)
        value, size = varints(buf, cur + 1)
        nxt = cur + 1 + size
        ok = tagged & (size > 0) & (nxt <= ends)
        failed = tagged & ~ok
        bad |= failed
        values, present = dense[number]
        np.copyto(values, value, where=ok)
        present |= ok
        np.copyto(ends, cur, where=failed)  # stop scanning a bad message
        np.copyto(cur, nxt, where=ok)
    todo = np.flatnonzero(cur < ends)
    while todo.size:
        p = cur[todo]
        stop = ends[todo]
        tag, size = varints(buf, p)
        field, wt = (tag >> _U64(3)).astype(np.int64), (tag & _U64(7)).astype(np.int64)
        # Field numbers are 1 .. 2**29 - 1; groups (3, 4) and types 6, 7 never
        # appear in the messages we read.
        ok = (size > 0) & (field > 0) & (field < (1 << 29))
        p = p + size
        value = np.zeros(todo.size, dtype=_U64)
        body = p.copy()
        nxt = p.copy()
        m = np.flatnonzero(wt == VARINT)
        value[m], size = varints(buf, p[m])
        ok[m] &= size > 0
        nxt[m] = p[m] + size
        m = np.flatnonzero(wt == LEN)
        length, size = varints(buf, p[m])
        body[m] = p[m] + size
        room = stop[m] - body[m]
        fits = (size > 0) & (room >= 0) & (length <= np.maximum(room, 0).astype(_U64))
        ok[m] &= fits
        value[m] = np.where(fits, length, _U64(0))
        nxt[m] = body[m] + value[m].astype(np.int64)
        for wire_type, width in ((FIXED64, 8), (FIXED32, 4)):
            m = np.flatnonzero(wt == wire_type)
            value[m] = _fixed(buf, p[m], width)
            nxt[m] = p[m] + width
        ok &= np.isin(wt, (VARINT, FIXED64, LEN, FIXED32)) & (nxt <= stop)
        bad[todo[~ok]] = True
        passes.append((todo[ok], field[ok], wt[ok], value[ok], body[ok]))
        cur[todo] = nxt
        todo = todo[ok & (nxt < stop)]
    return passes
