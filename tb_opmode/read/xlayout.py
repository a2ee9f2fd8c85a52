"""Where a profile's host planes and their lines are: the XSpace walked by field headers.

In: a ``pread`` of an ``*.xplane.pb`` file and its size. Out: ``layout`` (the XSpace's
fields but its lines, parsed by upb, and each host plane's lines located, not read),
``host_planes`` (what decoding needs of each host plane); ``Damaged`` for a broken
protobuf structure.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from . import wire
from .schema import XSpaceRawEvents, read_varint
from .xtypes import HOST_PLANE, _event_kinds

# pread(n, offset) -> bytes: os.pread of a local file, a ranged read of a remote one
# (``fs.preader``).
Pread = Callable[[int, int], bytes]

__all__ = ["Pread", "Damaged", "LineRef", "Layout", "HostPlane", "layout", "host_planes"]

# The most of a plane's bytes past its lines read whole for upb: more may hold lines
# written after the metadata (what upb would then parse, events and all), so such a
# plane is walked field by field, each line left on disk.
_REST_MAX = 64 << 20
# Enough for a tag and a length (two varints of at most 10 bytes).
_HEADER = 20


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
    # The thread's name (``python``, ``tf_Compute/<id>``, ``tf_data_private_threadpool/<id>``)
    name: str = ""
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
                refs.append(LineRef(b, a, *_prescan(pread, b, a)))
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


def _prescan(pread: Pread, start: int, end: int) -> tuple[int, str]:
    """The line's timestamp_ns (field 3; 0 if none) and name (field 2) as far as they
    are written before the first event. The event walk checks that no timestamp follows."""
    ts, name = 0, ""
    for number, wt, value, _, body, after in _fields(pread, start, end):
        if (number, wt) == (4, wire.LEN):
            break
        if (number, wt) == (3, wire.VARINT):
            ts = _int64(value)
        elif (number, wt) == (2, wire.LEN):
            name = pread(after - body, body).decode("utf-8", "replace")
    return ts, name


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
