"""TFRecord framing, verified with masked CRC32C, tolerant of damage.

In: a file path (and optionally a byte offset to resume from, and one to stop
at). Out: the payload of every intact record with its byte offset, and a list
of ``Problem``s (file, offset, what) for whatever was not intact. Also, for
readers that frame records themselves, ``ChunkVerifier``: checks every CRC of a
run of records at once, with a handful of vector operations instead of two
CRC calls per record; and ``frame_whole``, which reads an intact file of up to
``WHOLE_MAX_BYTES`` in one read, frames it by its lengths and checks all its
CRCs with one ``ChunkVerifier`` pass (None for anything else: ``RecordReader``
then says what is wrong where).

A record is: 8-byte little-endian length, 4-byte masked CRC32C of those 8
bytes, the payload, 4-byte masked CRC32C of the payload. Damage handling:

- bad payload CRC, length CRC intact: that record is skipped, reading goes on
  after it (the length can be trusted);
- bad length CRC: the length cannot be trusted, so we scan forward byte by
  byte for the next header whose length CRC and payload CRC both verify, and
  resume there. The scan reads windows of the file, not the rest of it at once,
  so memory stays bounded whatever the file's size (a payload longer than a
  window has its CRC checked as it streams by);
- a header or payload cut short at the end of the file: reported as a
  truncated tail (a file still being written ends this way). ``end_offset``
  tells where a later read should resume.
"""
from __future__ import annotations

import ctypes
import glob
import os
import struct
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import google_crc32c
import numpy as np

from ..errors import Problem
from . import fs

__all__ = ["RecordReader", "ChunkVerifier", "frame_whole", "next_intact_record", "masked_crc32c",
           "encode_record", "WHOLE_MAX_BYTES", "thread_buffer"]

_HEADER = 12
_FOOTER = 4
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
# A record longer than this is impossible in a dump (protobuf's 2 GiB limit);
# treating a bigger length as damage keeps a flipped high bit from hiding the tail.
_MAX_LENGTH = 1 << 31
# RecordReader reads this much at a time (a record longer than that, in one read).
_WINDOW = 16 << 20
# The search for the next intact record filters this many offsets at a time; numpy's
# temporaries take about 25 bytes per offset, so this keeps them to a few MB.
_SCAN_BLOCK = 1 << 18
_MASK_DELTA = 0xA282EAD8
_ALL_ONES = 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc: int = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


_ZERO_HEADER_CRC = masked_crc32c(bytes(8))


def encode_record(payload: bytes) -> bytes:
    """Frame one payload as TFRecord (used by tests to build damaged files)."""
    header = _U64.pack(len(payload))
    return (header + _U32.pack(masked_crc32c(header)) + payload
            + _U32.pack(masked_crc32c(payload)))


@dataclass
class RecordReader:
    """Reads one TFRecord file from ``start`` on; iterate for (offset, payload).

    After iteration, ``problems`` lists the damage seen and ``end_offset`` is
    the offset just past the last complete record (where to resume if the
    file grows). ``records`` counts payloads yielded, ``bytes_read`` the bytes
    consumed. With ``stop``, reading ends at the first record that starts at or
    after it (``end_offset`` is then that record's offset): a reader of one
    byte range of a file.
    """

    path: str
    start: int = 0
    verify: bool = True
    problems: list[Problem] = field(default_factory=list)
    end_offset: int = 0
    records: int = 0
    truncated: bool = False
    stop: int | None = None
    # While iterating: the open file, and its size (lowered when a read comes up short).
    _file: Any = field(default=None, init=False, repr=False, compare=False)
    _size: int = field(default=0, init=False, repr=False, compare=False)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        self.end_offset = self.start
        with fs.open_read(self.path) as f:
            size = fs.size_of(f)
            self._file, self._size = f, size
            pos, want = self.start, _WINDOW
            # Read, not mmap: a file that shrinks under a mapping raises SIGBUS and
            # kills the process; a short read here is just a truncated tail. Windows
            # of _WINDOW bytes keep memory flat, and so does the search for the next
            # intact record after damage (``_next_intact``): it reads windows of its
            # own rather than the rest of the file.
            try:
                while pos < size:
                    f.seek(pos)
                    data = f.read(min(size - pos, want))
                    final = pos + len(data) >= size or len(data) < min(size - pos, want)
                    if final:  # the file ends here (it may have shrunk since it was sized)
                        self._size = min(self._size, pos + len(data))
                    resume = yield from self._scan(data, pos, pos + len(data), final)
                    if resume is None:
                        return
                    pos, want = resume
            finally:
                self._file = None

    def _scan(self, data: bytes, base: int, size: int, final: bool
              ) -> Generator[tuple[int, bytes], None, tuple[int, int] | None]:
        """Records in ``data``, the file's bytes from offset ``base`` up to ``size``.
        Unless ``final`` (``size`` is the end of the file), returns where to go on
        and how much to read there once a record runs past ``size``; also where to go
        on when damage was skipped to a record beyond ``data``. None when done."""
        pos = base
        crc = masked_crc32c
        verify = self.verify
        u64 = _U64.unpack_from
        u32 = _U32.unpack_from
        stop = size if self.stop is None else min(size, self.stop)
        while pos < stop:
            if size - pos < _HEADER:
                return self._short_header(pos, size, final)
            (length,) = u64(data, pos - base)
            end = pos + _HEADER + length + _FOOTER
            if verify and crc(data[pos - base:pos - base + 8]) != u32(data, pos - base + 8)[0]:
                nxt = self._skip_bad_length(data, base, pos)
            elif length > _MAX_LENGTH or end > size:
                return self._past_end(pos, length, end, size, final)
            else:
                payload = data[pos - base + _HEADER:end - base - _FOOTER]
                if not verify or crc(payload) == u32(data, end - base - _FOOTER)[0]:
                    self.records += 1
                    yield pos, payload
                    pos = end
                    self.end_offset = pos
                    continue
                nxt = self._skip_bad_payload(data, base, pos, end, length)
            if nxt is None or nxt >= size:  # done, or go on in another window
                return None if nxt is None else (nxt, _WINDOW)
            pos = nxt
        return self._scan_end(pos, final)

    def _short_header(self, pos: int, size: int, final: bool) -> tuple[int, int] | None:
        """Fewer than a header's bytes left at ``pos``: read on, or the file's cut-off end."""
        if not final:
            return pos, _WINDOW
        self._truncated(pos, f"truncated record header ({size - pos} of {_HEADER} bytes)")
        return None

    def _past_end(self, pos: int, length: int, end: int, size: int, final: bool
                  ) -> tuple[int, int] | None:
        """A record at ``pos`` that runs past ``size``: read it in a larger window, or
        (at the end of the file, or a length no record has) the file's cut-off end."""
        if length <= _MAX_LENGTH and end > size and not final:
            return pos, max(_WINDOW, end - pos)
        self._truncated(pos, f"truncated record: length {length} runs past the end "
                             f"of the file ({size - pos - _HEADER} bytes left)")
        return None

    def _skip_bad_length(self, data: bytes, base: int, pos: int) -> int | None:
        """The record at ``pos`` has a bad length checksum: the next intact record (or
        None: none), reported as a problem."""
        nxt = self._next_intact(data, base, pos + 1)
        skipped = (nxt if nxt is not None else self._size) - pos
        self.problems.append(Problem(
            self.path, pos, f"bad length checksum; skipped {skipped} bytes"
            + (" to the next intact record" if nxt is not None else " to the end of the file")))
        return nxt

    def _skip_bad_payload(self, data: bytes, base: int, pos: int, end: int, length: int) -> int | None:
        """The record at ``pos`` (ending at ``end``) has a bad payload checksum: where to go
        on (or None: nowhere), reported as a problem, ``end_offset`` set there."""
        # The length verified, but the record may still be torn (bytes lost
        # inside it, a writer that died mid-record): go on after it only if
        # a verified header starts there, else search for the next record.
        nxt: int | None = end
        if end + _HEADER <= self._size:
            after = self._bytes_at(data, base, end, _HEADER)
            if len(after) == _HEADER and masked_crc32c(after[:8]) != _U32.unpack_from(after, 8)[0]:
                nxt = self._next_intact(data, base, pos + 1)
        self.problems.append(Problem(
            self.path, pos, f"bad payload checksum; record of {length} bytes skipped"
            + ("" if nxt == end else
               f", and {(nxt if nxt is not None else self._size) - end} more bytes up to "
               + ("the next intact record" if nxt is not None else "the end of the file"))))
        self.end_offset = self._size if nxt is None else nxt
        return nxt

    def _scan_end(self, pos: int, final: bool) -> tuple[int, int] | None:
        """Where to go on after the records of a window, up to ``stop``: None when done."""
        if pos > self.end_offset:  # stopped at ``stop`` after a resync
            self.end_offset = pos
        if not final and (self.stop is None or pos < self.stop):
            return pos, _WINDOW
        return None

    def _truncated(self, pos: int, message: str) -> None:
        self.truncated = True
        self.problems.append(Problem(self.path, pos, message + " (file still being written?)"))

    def _pread(self, offset: int, n: int) -> bytes:
        """``n`` bytes of the file from ``offset`` (fewer where it ends). A short read
        means the file shrank: its end is then where the read stopped."""
        f = self._file
        assert f is not None
        data = os.pread(f.fileno(), n, offset) if n > 0 else b""
        if len(data) < n:
            self._size = min(self._size, offset + len(data))
        return data

    def _bytes_at(self, data: bytes, base: int, offset: int, n: int) -> bytes:
        """``n`` bytes from ``offset``: from ``data`` (which starts at ``base``) if it
        holds them, else from the file."""
        if offset + n <= base + len(data):
            return data[offset - base:offset - base + n]
        return self._pread(offset, n)

    def _next_intact(self, data: bytes, base: int, pos: int) -> int | None:
        """The offset of the first record at or after ``pos`` whose length CRC and
        payload CRC both verify and which ends within the file, or None: what
        ``next_intact_record`` gives on the whole rest of the file, found without
        holding it. Offsets are searched in the bytes in hand (``data``, from
        ``base``), then in windows read from the file; a candidate whose record runs
        past the bytes in hand has its payload checked as it is streamed from the file.
        Memory: a window or two, whatever the file's size."""
        while True:
            size = self._size
            last = size - _HEADER - _FOOTER
            if pos > last:
                return None
            # Offsets up to ``stop`` have their 12 header bytes in ``data``.
            stop = min(last, base + len(data) - _HEADER)
            if pos < base or stop < pos:
                data = self._pread(pos, min(size - pos, _WINDOW))
                base = pos
                if len(data) < _HEADER + _FOOTER:
                    return None
                continue
            while pos <= stop:
                block_stop = min(stop, pos + _SCAN_BLOCK - 1)
                for p in _candidates(data, size - base, pos - base, block_stop - base):
                    if self._intact_in_file(data, base, p + base):
                        return p + base
                pos = block_stop + 1

    def _intact_in_file(self, data: bytes, base: int, pos: int) -> bool:
        """Whether a record starting at ``pos`` (its header in ``data``) verifies."""
        rel = pos - base
        header = data[rel:rel + 8]
        if masked_crc32c(header) != _U32.unpack_from(data, rel + 8)[0]:
            return False
        (length,) = _U64.unpack(header)
        end = pos + _HEADER + length + _FOOTER
        if end > self._size:
            return False
        if end <= base + len(data):
            stored_crc: int = _U32.unpack_from(data, end - base - _FOOTER)[0]
            return masked_crc32c(data[rel + _HEADER:end - base - _FOOTER]) == stored_crc
        # Runs past the bytes in hand: stream its payload's CRC from the file.
        crc: int = 0
        at = pos + _HEADER
        while at < end - _FOOTER:
            chunk = self._pread(at, min(_WINDOW, end - _FOOTER - at))
            if not chunk:
                return False  # the file shrank under us
            crc = google_crc32c.extend(crc, chunk)
            at += len(chunk)
        stored = self._pread(end - _FOOTER, _FOOTER)
        if len(stored) < _FOOTER:
            return False
        masked = (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
        expected: int = _U32.unpack(stored)[0]
        return masked == expected


def next_intact_record(buf: Any, size: int, pos: int, limit: int | None = None) -> int | None:
    """The offset of the first record at or after ``pos`` (and before ``limit``)
    whose length CRC and payload CRC both verify, or None."""
    last = size - _HEADER - _FOOTER
    if limit is not None:
        last = min(last, limit)
    while pos <= last:
        stop = min(last, pos + _SCAN_BLOCK - 1)
        for p in _candidates(buf, size, pos, stop):
            if _intact_at(buf, size, p):
                return p
        pos = stop + 1
    return None


def _intact_at(buf: Any, size: int, pos: int) -> bool:
    # bytes(): google_crc32c takes bytes only, not a memoryview of a buffer (a no-op on bytes)
    header = bytes(buf[pos:pos + 8])
    if masked_crc32c(header) != _U32.unpack_from(buf, pos + 8)[0]:
        return False
    (length,) = _U64.unpack(header)
    end = pos + _HEADER + length + _FOOTER
    if end > size:
        return False
    stored: int = _U32.unpack_from(buf, end - _FOOTER)[0]
    return masked_crc32c(bytes(buf[pos + _HEADER:end - _FOOTER])) == stored


def _candidates(buf: Any, size: int, pos: int, stop: int) -> Iterable[int]:
    """The offsets in [pos, stop] where a record could start, by two tests that
    every intact record passes, made on the whole block at once with numpy: its
    length fits in the file, and a zero length (an all-zero header) comes with
    the header CRC of zeros. One CRC per byte offset searched about 2 MB/s;
    random, text and zero-filled garbage almost never pass these tests."""
    n = stop - pos + 1
    if n < 4096:
        return range(pos, stop + 1)
    block = np.frombuffer(buf, dtype=np.uint8, count=n + 11, offset=pos)
    lengths = np.ndarray((n,), dtype="<u8", buffer=block, strides=(1,))
    stored = np.ndarray((n,), dtype="<u4", buffer=block, offset=8, strides=(1,))
    room = (size - _HEADER - _FOOTER - pos) - np.arange(n, dtype=np.int64)  # >= 0 up to stop
    ok = lengths <= room.astype(np.uint64)
    ok &= (lengths != 0) | (stored == _ZERO_HEADER_CRC)
    return (pos + np.flatnonzero(ok)).tolist()


# ``frame_whole`` reads files up to this size in one read (``RecordReader``'s window).
WHOLE_MAX_BYTES = _WINDOW
# One verifier per thread: its table of CRCs of zeros (by record length) is kept between
# files (the files of many runs have records of the same lengths), and it is not shared
# between the loader's thread and a route's; and the buffer ``frame_whole`` reuses.
_verifiers = threading.local()


def thread_buffer(n: int) -> memoryview:
    """``n`` bytes of this thread's reusable buffer (``n`` at most ``WHOLE_MAX_BYTES``),
    writable, read into again by the thread's next ``frame_whole(reuse=True)`` or
    ``thread_buffer``: a fresh buffer of megabytes for each file of each run was page
    faults as costly as reading it."""
    if n > WHOLE_MAX_BYTES:
        raise ValueError(f"{n} bytes is more than a reusable buffer holds ({WHOLE_MAX_BYTES})")
    held = getattr(_verifiers, "buffer", None)
    if held is None or len(held) < n:
        held = _verifiers.buffer = bytearray(max(n, 1 << 20))
    return memoryview(held)[:n]


def frame_whole(path: str, start: int = 0, reuse: bool = False
                ) -> tuple[list[tuple[int, memoryview]], int] | None:
    """Every record of an intact file from ``start`` to its end, read at once: (offset,
    payload) of each and the offset after the last, the file's size. None when the file
    holds more than ``WHOLE_MAX_BYTES`` from ``start``, ends in a partial record, has a
    length that does not add up, a CRC that does not verify or cannot be read whole:
    ``RecordReader`` then reads it and reports each problem as before. The payloads are
    views of one buffer (the CRC fields in it are overwritten by the check). With
    ``reuse``, that buffer is this thread's, read into again by its next such call: the
    caller must be done with the payloads by then (a fresh buffer of megabytes for each
    file of each run was page faults as costly as the read)."""
    try:
        with fs.open_read(path) as f:
            n = fs.size_of(f) - start
            if n > WHOLE_MAX_BYTES or n < 0:
                return None
            if reuse:
                buf: Any = thread_buffer(n)
            else:
                buf = bytearray(n)
            f.seek(start)
            got = f.readinto(buf) if hasattr(f, "readinto") else None
            if got is None:
                data = f.read(n)
                got = len(data)
                buf[:got] = data
    except OSError:
        return None  # RecordReader says why
    if got != n:
        return None  # the file shrank: RecordReader says where
    u64 = _U64.unpack_from
    offsets: list[int] = []
    add = offsets.append
    p = 0
    while p + _HEADER + _FOOTER <= n:
        (length,) = u64(buf, p)
        if length > _MAX_LENGTH:
            return None
        add(p)
        p += length + _HEADER + _FOOTER
    if p != n:
        return None
    if offsets:
        verifier = getattr(_verifiers, "v", None)
        if verifier is None:
            verifier = _verifiers.v = ChunkVerifier()
        if not verifier.verify(np.frombuffer(buf, dtype=np.uint8), offsets, n, in_place=True):
            return None
    view = memoryview(buf)
    ends = offsets[1:] + [n]
    return [(start + o, view[o + _HEADER:e - _FOOTER]) for o, e in zip(offsets, ends)], start + n


class ChunkVerifier:
    """Verifies every CRC of a run of consecutive records in one pass.

    The caller frames the records (reads each length, steps over it) and
    passes their offsets; ``verify`` says whether every length CRC and every
    payload CRC is intact. It relies on CRC32C being linear: a record whose
    stored CRCs, once unmasked, are right has the same CRC "residue" as an
    all-zero record of the same length, so XOR-ing each unmasked CRC with that
    of zeros turns a run of intact records into a buffer whose CRC equals the
    CRC of as many zero bytes. One C call over the whole run then checks them
    all (the CRC with its inversions undone is then zero); a damaged record
    changes the result (as surely as a per-record check would catch a single
    damaged record; two damaged records could cancel out with probability
    2^-32). Needs numpy.
    On False, re-read the run record by record to learn what is damaged.
    """

    def __init__(self) -> None:
        self._zero_crc: Any = np.zeros(0, dtype=np.uint32)  # crc32c(bytes(n)) by payload length n
        self._have: Any = np.zeros(0, dtype=bool)
        self._header_zero = google_crc32c.value(bytes(8))
        self._zeros = bytes(1 << 20)
        self._scratch: Any = np.zeros(0, dtype=np.uint8)
        self._extend = _c_extend()

    def _crc_of_zeros(self, n: int) -> int:
        crc = 0
        block = len(self._zeros)
        while n >= block:
            crc = google_crc32c.extend(crc, self._zeros)
            n -= block
        return google_crc32c.extend(crc, self._zeros[:n]) if n else crc

    def _zero_table(self, lengths: Any) -> Any:
        top = int(lengths.max())
        if top >= len(self._have):
            grow = max(top + 1, 2 * len(self._have), 1024)
            have = np.zeros(grow, dtype=bool)
            have[:len(self._have)] = self._have
            table = np.zeros(grow, dtype=np.uint32)
            table[:len(self._zero_crc)] = self._zero_crc
            self._have, self._zero_crc = have, table
        missing = lengths[~self._have[lengths]]
        if len(missing):
            for n in sorted(set(missing.tolist())):  # (np.unique would import numpy.ma: 20 ms)
                self._zero_crc[n] = self._crc_of_zeros(n)
                self._have[n] = True
        return self._zero_crc[lengths]

    def verify(self, buf: Any, offsets: Sequence[int], end: int, in_place: bool = False) -> bool:
        """Whether the records starting at ``offsets`` (ascending, consecutive, the last
        one ending at ``end``) in ``buf`` (bytes, mmap or any buffer) are all intact.
        With ``in_place``, ``buf`` is a writable uint8 array whose CRC fields may be
        overwritten (nothing else is): no copy of the records is made."""
        if not len(offsets):
            return True
        o = np.asarray(offsets, dtype=np.int64) if not hasattr(offsets, "typecode") else \
            np.frombuffer(cast(Any, offsets), dtype=np.int64)  # an array('q'): its buffer
        start = int(o[0])
        n = end - start
        if n < _HEADER + _FOOTER:
            return False
        if in_place:
            work = buf[start:end]
        else:
            if len(self._scratch) < n:
                self._scratch = np.empty(max(n, 2 * len(self._scratch)), dtype=np.uint8)
            work = self._scratch[:n]
            work[:] = np.frombuffer(buf, dtype=np.uint8, count=n, offset=start)
        rel = o - start
        nxt = np.empty_like(rel)
        nxt[:-1] = rel[1:]
        nxt[-1] = n
        lengths = nxt - rel - (_HEADER + _FOOTER)
        if int(lengths.min()) < 0 or int(lengths.max()) > _MAX_LENGTH:
            return False
        # Every 4-byte CRC field, read in place: a uint32 view with a stride of one byte.
        words = np.ndarray((n - 3,), dtype="<u4", buffer=work, strides=(1,))
        at_header = rel + 8
        at_payload = nxt - 4
        delta = np.uint32(_MASK_DELTA)
        for where, zero in ((at_header, np.uint32(self._header_zero)),
                            (at_payload, self._zero_table(lengths))):
            stored = words[where] - delta
            words[where] = ((stored << np.uint32(15)) | (stored >> np.uint32(17))) ^ zero
        # CRC32C with its initial and final inversions undone (start from ~0, compare
        # with ~0): zero exactly when the buffer's polynomial remainder is zero.
        crc: int
        if self._extend is not None:  # straight from the array, no copy
            crc = self._extend(_ALL_ONES, work.ctypes.data, n)
        else:
            crc = google_crc32c.extend(_ALL_ONES, work.tobytes())
        return crc == _ALL_ONES


def _c_extend() -> Any:
    """``crc32c_extend(crc, pointer, length)`` of the C library google-crc32c ships, if it
    can be found: it takes a pointer, so a numpy array needs no copy into bytes."""
    here = os.path.dirname(os.path.abspath(google_crc32c.__file__))
    for path in sorted(glob.glob(os.path.join(here + ".libs", "libcrc32c*.so*"))):
        try:
            lib = ctypes.CDLL(path)
            func = lib.crc32c_extend
        except (OSError, AttributeError):
            continue
        func.restype = ctypes.c_uint32
        func.argtypes = (ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t)
        if func(0, b"123456789", 9) == 0xE3069283:  # the CRC-32C check value
            return func
    return None
