"""TFRecord framing, verified with masked CRC32C, tolerant of damage.

In: a file path (and optionally a byte offset to resume from). Out: the
payload of every intact record with its byte offset, and a list of
``Problem``s (file, offset, what) for whatever was not intact.

A record is: 8-byte little-endian length, 4-byte masked CRC32C of those 8
bytes, the payload, 4-byte masked CRC32C of the payload. Damage handling:

- bad payload CRC, length CRC intact: that record is skipped, reading goes on
  after it (the length can be trusted);
- bad length CRC: the length cannot be trusted, so we scan forward byte by
  byte for the next header whose length CRC and payload CRC both verify, and
  resume there;
- a header or payload cut short at the end of the file: reported as a
  truncated tail (a file still being written ends this way). ``end_offset``
  tells where a later read should resume.
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from typing import Iterator

import google_crc32c

__all__ = ["Problem", "RecordReader", "masked_crc32c", "encode_record"]

_HEADER = 12
_FOOTER = 4
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
# A record longer than this is impossible in a dump (protobuf's 2 GiB limit);
# treating a bigger length as damage keeps a flipped high bit from hiding the tail.
_MAX_LENGTH = 1 << 31


@dataclass(frozen=True)
class Problem:
    """Something in a file that could not be read as intended."""

    path: str
    offset: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}: byte {self.offset}: {self.message}"


def masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


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
    consumed.
    """

    path: str
    start: int = 0
    verify: bool = True
    problems: list[Problem] = field(default_factory=list)
    end_offset: int = 0
    records: int = 0
    truncated: bool = False

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        self.end_offset = self.start
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= self.start:
                return
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as buf:
                yield from self._scan(buf, size)

    def _scan(self, buf: mmap.mmap, size: int) -> Iterator[tuple[int, bytes]]:
        pos = self.start
        crc = masked_crc32c
        verify = self.verify
        while pos < size:
            if size - pos < _HEADER:
                self._truncated(pos, f"truncated record header ({size - pos} of {_HEADER} bytes)")
                return
            header = buf[pos:pos + 8]
            (length,) = _U64.unpack(header)
            (length_crc,) = _U32.unpack(buf[pos + 8:pos + 12])
            if verify and crc(header) != length_crc:
                nxt = self._resync(buf, size, pos + 1)
                skipped = (nxt if nxt is not None else size) - pos
                self.problems.append(Problem(
                    self.path, pos, f"bad length checksum; skipped {skipped} bytes"
                    + (" to the next intact record" if nxt is not None else " to the end of the file")))
                if nxt is None:
                    return
                pos = nxt
                continue
            end = pos + _HEADER + length + _FOOTER
            if length > _MAX_LENGTH or end > size:
                self._truncated(pos, f"truncated record: length {length} runs past the end "
                                     f"of the file ({size - pos - _HEADER} bytes left)")
                return
            payload = buf[pos + _HEADER:pos + _HEADER + length]
            if verify:
                (payload_crc,) = _U32.unpack(buf[end - _FOOTER:end])
                if crc(payload) != payload_crc:
                    self.problems.append(Problem(
                        self.path, pos, f"bad payload checksum; record of {length} bytes skipped"))
                    pos = end
                    self.end_offset = pos
                    continue
            self.records += 1
            yield pos, payload
            pos = end
            self.end_offset = pos

    def _truncated(self, pos: int, message: str) -> None:
        self.truncated = True
        self.problems.append(Problem(self.path, pos, message + " (file still being written?)"))

    def _resync(self, buf: mmap.mmap, size: int, pos: int) -> int | None:
        """The offset of the next fully verified record at or after ``pos``."""
        crc = masked_crc32c
        while pos + _HEADER + _FOOTER <= size:
            header = buf[pos:pos + 8]
            if crc(header) == _U32.unpack(buf[pos + 8:pos + 12])[0]:
                (length,) = _U64.unpack(header)
                end = pos + _HEADER + length + _FOOTER
                if end <= size and crc(buf[pos + _HEADER:end - _FOOTER]) == _U32.unpack(
                        buf[end - _FOOTER:end])[0]:
                    return pos
            pos += 1
        return None
