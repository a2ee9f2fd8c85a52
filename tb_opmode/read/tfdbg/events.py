"""A dump file's records decoded into events, each call stack decoded once.

In: a ``FileState`` (a file of a dump set and the offset to start at) or any iterable of
(offset, record bytes). Out: ``Events``: (DebugEvent, payload name, payload message,
call stack, offset, bytes) of the records that belong in that kind of file; undecodable
and stray records become ``Problem``s, and the reading's bookkeeping goes into the state.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from sys import intern
from typing import Any

import google_crc32c
from google.protobuf.message import DecodeError

from ...errors import Problem
from ..schema import CodeLocation, DebugEventRawStacks, DebugEventSourceHeads
from ..tfrecord import RecordReader, frame_whole
from .dumpset import FileState

__all__ = ["Events"]

# The kind of file most of a dump is: read apart from the others (``tracejob``).
_TRACES = "graph_execution_traces"


# The DebugEvent payloads each kind of file holds ("graph_id" events may sit in
# the graphs and execution files).
_KIND_WHAT = {
    "metadata": {"debug_metadata"},
    "source_files": {"source_file"},
    "stack_frames": {"stack_frame_with_id"},
    "graphs": {"graph_op_creation", "debugged_graph", "debugged_device", "graph_id"},
    "execution": {"execution", "graph_id"},
    "graph_execution_traces": {"graph_execution_trace"},
}


# The payloads whose ``code_location`` (a call stack of ~70 frame ids) is left serialized
# by ``DebugEventRawStacks`` and decoded once per distinct stack (``_Stacks``).
_STACKED = frozenset({"graph_op_creation", "execution"})


class _FrameIds(dict[bytes, str]):
    """Frame ids by their UTF-8 bytes, each decoded (and interned) once."""

    def __missing__(self, raw: bytes) -> str:
        # Interned: ops share most frames, and a cache pickle then stores each once.
        found = self[raw] = intern(raw.decode("utf-8"))
        return found


class _Stacks:
    """The call stacks of one file's records, each decoded once: a dump's 4,000 op
    creations and 2,000 executions share a few hundred stacks of ~70 frame ids (most of
    a ``.graphs`` file's bytes), and decoding every record's ids took more than all the
    rest of its fields."""

    __slots__ = ("known", "clashes", "frames", "last", "shared")

    def __init__(self) -> None:
        # CRC32C of a stack's bytes -> (those bytes, its ids); stacks whose CRCs clash with
        # a known one's, by their bytes.
        self.known: dict[int, tuple[bytes, tuple[str, ...]]] = {}
        self.clashes: dict[bytes, tuple[str, ...]] = {}
        self.frames = _FrameIds()
        # The last stack split by slicing: (its bytes, where its ids start, their step, ids).
        self.last: tuple[bytes, int, int, tuple[str, ...]] = (b"", -1, 0, ())
        self.shared = 0  # how many leading ids the last two stacks split had in common

    def of(self, raw: bytes) -> tuple[str, ...]:
        """The frame ids of a serialized ``CodeLocation`` (raises ``DecodeError`` as
        decoding the record whole would: bad UTF-8, a malformed message)."""
        # Keyed by CRC32C (one C call, ~0.2 us) rather than by the bytes: a dict hashes a
        # stack's ~2.7 KB with SipHash, ~0.5 us for every op creation and execution. A
        # hit is then compared byte for byte, so a clash only costs a second lookup.
        key = _crc32c(raw)
        found = self.known.get(key)
        if found is not None:
            if found[0] == raw:
                return found[1]
            ids = self.clashes.get(raw)
            if ids is None:
                ids = self.clashes[raw] = self._split(raw)
            return ids
        ids = self._split(raw)
        self.known[key] = (raw, ids)
        return ids

    def _split(self, raw: bytes) -> tuple[str, ...]:
        """TF writes a ``CodeLocation`` as its host name (field 1) and then ids of one
        length (field 2, a UUID each): those are cut out by slicing, each distinct id
        decoded once, and the frames a stack shares with the one split before (the
        outer frames: four fifths of its bytes, in a Keras fit) are taken from that
        one's ids. Any other layout, or bad UTF-8, is decoded by protobuf (which raises
        where the record is bad)."""
        n = len(raw)
        pos = 0
        if n >= 2 and raw[0] == 0x0A and raw[1] < 0x80:
            pos = 2 + raw[1]
        if pos + 2 <= n and raw[pos] == 0x12 and raw[pos + 1] < 0x80:
            step = raw[pos + 1] + 2
            count = (n - pos) // step
            if count * step == n - pos and raw[pos::step] == b"\x12" * count \
                    and raw[pos + 1::step] == bytes((step - 2,)) * count:
                try:
                    raw[2:pos].decode("utf-8")  # the host name, which protobuf checks too
                    ids = self._ids(raw, pos, step, count)
                except UnicodeDecodeError:
                    pass  # protobuf raises DecodeError for it below
                else:
                    self.last = (raw, pos, step, ids)
                    return ids
        return tuple(map(intern, CodeLocation.FromString(raw).stack_frame_ids))

    def _ids(self, raw: bytes, pos: int, step: int, count: int) -> tuple[str, ...]:
        last, last_pos, last_step, last_ids = self.last
        shared = 0
        if (last_pos, last_step) == (pos, step) and last[:pos] == raw[:pos]:
            # The most leading ids both stacks have: a binary search over prefixes, first
            # tried at as many as the last stack shared with the one before it.
            lo, hi = 0, min(count, len(last_ids))
            mid = min(self.shared, hi)
            while lo < hi:
                if raw.startswith(last[pos:pos + mid * step], pos):
                    lo = mid
                else:
                    hi = mid - 1
                mid = (lo + hi + 1) // 2
            shared = self.shared = lo
        new = tuple(map(self.frames.__getitem__,
                        [raw[i:i + step - 2] for i in range(pos + shared * step + 2, len(raw), step)]))
        return last_ids[:shared] + new if shared else new


_NO_STACK: tuple[str, ...] = ()
_crc32c = google_crc32c.value
# A file's events as its fold reads them: (DebugEvent, which payload it holds, that payload
# (the oneof's message), call stack, the record's offset, its bytes). The payload's name
# and message come along so that a fold does not ask the message again for each record.
Events = Iterator[tuple[Any, str, Any, tuple[str, ...], int, Any]]


def _decoded(reader: Iterable[tuple[int, Any]], path: str, kind: str,
             problems: list[Problem]) -> Events:
    """(DebugEvent, payload name, payload message, call stack, offset, bytes) of
    ``reader``'s records that belong in a ``kind`` file; the stack is that of an op
    creation or execution, else empty.

    Undecodable records, and events of another kind than the file's (a file
    renamed, or a payload a newer TF added), go into ``problems``; the latter
    counted into one problem for the file. A record counts as undecodable exactly
    when decoding it whole would fail: its stack is decoded (once per distinct one)
    before it is yielded. But for a source file's lines: their fields are checked to
    parse, their text to be UTF-8 only when read (``SourceLines``: a file whose
    lines are not gives none, with a warning).
    """
    allowed = _KIND_WHAT[kind]
    stray, first_stray = 0, 0
    # A source file's lines are not decoded here, only its name: they are decoded (and
    # checked to be UTF-8) when one is shown (``SourceLines``), from the file.
    decode = (DebugEventSourceHeads if kind == "source_files" else DebugEventRawStacks).FromString
    stacks = _Stacks()
    try:
        for offset, payload in reader:
            try:
                event = decode(payload)
                what = event.WhichOneof("what")
                body: Any = getattr(event, what) if what else None
                stack = stacks.of(body.code_location) if what in _STACKED else _NO_STACK
            except DecodeError as err:
                problems.append(Problem(path, offset, f"record is not a DebugEvent ({err})"))
                continue
            if what not in allowed:
                if not stray:
                    first_stray = offset
                stray += 1
                continue
            yield event, what, body, stack, offset, payload
    except OSError as err:
        problems.append(Problem(path, 0, f"cannot read: {err.strerror or err}"))
    if stray:
        problems.append(Problem(path, first_stray, (
            f"{stray} records hold no {kind} event (a file of another kind, or a "
            f"newer TensorFlow?); not used")))


def _events(state: FileState, start: int = 0) -> Events:
    """(DebugEvent, payload name and message, call stack, offset, bytes) of ``state``'s file
    from ``start`` on; bookkeeping into
    ``state``. A file small enough for one read is framed and checked whole
    (``tfrecord.frame_whole``); one with damage, a cut-off tail or more bytes than that
    is read by ``RecordReader``, which says what is wrong where."""
    # Into this thread's buffer, read again for the next file: every fold is done with
    # a file's payloads (keeping copies of what it keeps) before the next file is read.
    whole = frame_whole(state.path, start, reuse=True)
    if whole is not None:
        records, end = whole
        yield from _decoded(records, state.path, state.kind, state.read_problems)
        state.records += len(records)
        state.end_offset = end
        state.truncated = False
        return
    reader = RecordReader(state.path, start=start)
    yield from _decoded(reader, state.path, state.kind, state.read_problems)
    state.frame_problems.extend(reader.problems)
    state.records += reader.records
    state.end_offset = reader.end_offset
    state.truncated = reader.truncated
