"""Read tfdbg2 (Debugger V2) dumps without TensorFlow.

In: a directory. Out: one ``DumpSet`` per file set found in it (a file set is
the six ``tfdbg_events.<timestamp>.<host>.<kind>`` files of one host and
process), each holding aggregated facts rather than one object per record:

- metadata (TF version, file version, tfdbg run id);
- source files and stack frames, to resolve Python call sites;
- graphs: every op created in every graph (type, name, device, call site) and
  each graph's outer graph;
- eager executions, counted per (op type, graph id) and per call site;
- graph execution traces, counted per (graph id, op name, output slot).

Damaged records become ``Problem``s; everything intact is kept.

The other files are read record by record, but cheaply: a file of up to 16 MB that is
intact is read at once and its CRCs checked in one pass (``tfrecord.frame_whole``; any
damage and ``RecordReader`` reads it, reporting each problem); events are decoded with
``DebugEventRawStacks``, whose op creations and executions leave their call stack
serialized, so each distinct stack (a few hundred in a dump of thousands of records, most
of a ``.graphs`` file's bytes) is decoded once (``_Stacks``); a local dump's source lines
stay in their file until a line is asked for (``SourceLines.in_file``).

Each file is read into a ``FileState`` (the fields of ``DumpSet`` that file
fills, its problems, and the offset to resume from); ``assemble_dump_set``
joins the states of a set into the ``DumpSet``. ``read_file_states`` reuses
unchanged states and resumes grown files from their saved offset, so a cache
(``cache.py``) can keep the states between runs.

The ``.graph_execution_traces`` file is most of a dump (a million records per
thousand steps of a small model) and its records repeat: per (context id, op
name, output slot) they differ only in wall time and health values. A big one
is read by ``_TraceJob`` without decoding each record: records are framed by
hand, keyed by the bytes between the wall time and the tensor proto, their
CRCs checked a chunk at a time (``tfrecord.ChunkVerifier``), and only the first
record of each key is decoded and checked to have the expected layout. The
framing and keying work on 8 MB windows at once with numpy (``_Window``,
``_KeyTable``), and follow the cycle of keys a training loop repeats, checked
word for word. One forked worker reads the end of the file while this process
reads the other files, then the start of the traces file. Whatever does not fit
(damage, another layout) is read record by record with the same results as the
plain reader.
"""
from __future__ import annotations

import gc
import hashlib
import io
import logging
import math
import os
import pickle
import re
import struct
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from sys import intern
from typing import Any, Callable, NamedTuple, overload

import google_crc32c
import numpy as np  # tensorboard depends on numpy
from google.protobuf.message import DecodeError

from ..errors import Problem
from . import forks, fs
from .schema import (
    EVENT_KINDS,
    LEN,
    VARINT,
    CodeLocation,
    DebugEvent,
    DebugEventRawStacks,
    DebugEventSourceHeads,
    message_fields,
    read_varint,
)
from .tfrecord import ChunkVerifier, RecordReader, frame_whole, masked_crc32c, next_intact_record

__all__ = ["NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE",
           "FULL_TENSOR", "DEBUG_MODE_NAMES", "OpCreation", "GraphInfo", "DumpSet",
           "SourceLines", "FileState", "find_dump_sets", "read_dump_set",
           "read_file_states", "assemble_dump_set", "file_identity", "DUMP_FILE_RE",
           "DTYPE_NAMES", "DTYPE_UNKNOWN", "DTYPE_SOME_FLOAT", "health_dtype", "health_digest", "digest_rank"]

logger = logging.getLogger(__name__)

DUMP_FILE_RE = re.compile(
    r"^(?P<prefix>tfdbg_events\.(?P<ts>\d+)\.(?P<host>.+))\.(?P<kind>" + "|".join(EVENT_KINDS) + r")$")


# tensorflow/core/framework/types.proto: the dtypes a health summary can name.
DTYPE_NAMES = {1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
               6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL",
               14: "DT_BFLOAT16", 17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF",
               22: "DT_UINT32", 23: "DT_UINT64"}
# tfdbg's TensorDebugMode (debug_event.proto), by number: the one home of these numbers.
NO_TENSOR, CURT_HEALTH, CONCISE_HEALTH, FULL_HEALTH, SHAPE, FULL_TENSOR = 1, 2, 3, 4, 5, 7
DEBUG_MODE_NAMES = {0: "UNSPECIFIED", NO_TENSOR: "NO_TENSOR", CURT_HEALTH: "CURT_HEALTH",
                    CONCISE_HEALTH: "CONCISE_HEALTH", FULL_HEALTH: "FULL_HEALTH", SHAPE: "SHAPE",
                    6: "FULL_NUMERICS", FULL_TENSOR: "FULL_TENSOR",
                    8: "REDUCE_INF_NAN_THREE_SLOTS"}
_NO_TENSOR, _CURT, _CONCISE, _FULL_TENSOR = NO_TENSOR, CURT_HEALTH, CONCISE_HEALTH, FULL_TENSOR
# Index of the dtype in the health vector, per TensorDebugMode (FULL_HEALTH=4:
# [tensor_id, device_id, dtype, rank, size, ...]; SHAPE=5: [tensor_id, dtype, ...]).
_DTYPE_INDEX = {FULL_HEALTH: 2, SHAPE: 1}
# What a trace or execution says of its dtype when no dtype is recorded:
# NO_TENSOR (1) records nothing; CURT_HEALTH (2) and CONCISE_HEALTH (3) summarise
# float tensors only, so a summary says "some float type"; no summary in those
# modes (and in FULL_HEALTH) says "not a float type".
DTYPE_UNKNOWN = "?"
DTYPE_SOME_FLOAT = "float"


# Layouts of health tensors met so far: (the bytes before the vector's values, their
# length). TF writes every health tensor of a mode alike (dtype, shape, then the values
# in field 4), so a record's tensor is its layout's prefix and values, checked with one
# comparison instead of a walk over its fields.
_LAYOUTS: list[tuple[bytes, int]] = []
_MAX_LAYOUTS = 8


def _vector_field(tensor_proto: bytes) -> list[tuple[int, int, int, int, int]] | None:
    """The health vector's field as ``message_fields`` gives it (number, wire type,
    length, tag position, end), as a list of that one field, where ``tensor_proto`` is
    a known layout's prefix followed by its values: the fields before it are then known
    to parse and to hold no field 4 or 6, so the walks below find this field first,
    as they would walking all fields. None for any other tensor (walked field by field)."""
    n = len(tensor_proto)
    for head, length in _LAYOUTS:
        if n == len(head) + length and tensor_proto.startswith(head):
            return [(tensor_proto[len(head) - 2] >> 3, LEN, length, 0, n)]
    fields = message_fields(tensor_proto, 0, n)
    if fields and len(_LAYOUTS) < _MAX_LAYOUTS:
        number, wire_type, length, tag_at, _end = fields[-1]
        head = tensor_proto[:n - length]
        # One-byte tag and length, and no other value field: the prefix says it all.
        if number in (4, 6) and wire_type == LEN and len(head) == tag_at + 2 and length < 0x80 \
                and not any(f[0] in (4, 6) and f[1] == LEN for f in fields[:-1]):
            _LAYOUTS.append((head, length))
    return None


def health_dtype(tensor_proto: bytes, mode: int) -> str:
    """The dtype a debug tensor of ``mode`` records: a ``DT_*`` name,
    ``DTYPE_SOME_FLOAT`` (a float type, which one not recorded),
    ``DTYPE_UNKNOWN`` (NO_TENSOR: nothing recorded) or "" (no debug tensor where
    the mode summarises float tensors only: a non-float output).

    FULL_HEALTH/SHAPE: a float64 health vector, values in ``tensor_content``
    (field 4) or packed ``double_val`` (field 6). FULL_TENSOR: the tensor itself,
    whose field 1 is its dtype.
    """
    if mode == _NO_TENSOR:
        return DTYPE_UNKNOWN
    if not tensor_proto:
        return ""
    if mode in (_CURT, _CONCISE):
        return DTYPE_SOME_FLOAT
    if mode == _FULL_TENSOR:
        for number, wire_type, value, _, _after in message_fields(tensor_proto, 0, len(tensor_proto)) or ():
            if number == 1 and wire_type == VARINT:
                return DTYPE_NAMES.get(value, f"DT_{value}")
        return DTYPE_UNKNOWN
    index = _DTYPE_INDEX.get(mode)
    if index is None:
        return DTYPE_UNKNOWN
    for number, wire_type, length, _, after in _vector_field(tensor_proto) or \
            message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number in (4, 6) and wire_type == LEN:
            pos = after - length
            if length < 8 * (index + 1):
                return ""
            (value,) = struct.unpack_from("<d", tensor_proto, pos + 8 * index)
            if not math.isfinite(value):
                return ""  # a damaged or forged health tensor names no dtype
            return DTYPE_NAMES.get(int(value), f"DT_{int(value)}")
    return ""


def _digest(data: bytes) -> int:
    # Deterministic (unlike hash()): digests are cached and compared across processes.
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") or 1


def health_digest(tensor_proto: bytes, mode: int) -> int:
    """A digest of what a debug tensor says of the traced tensor's value, the same for
    two traces of one tensor: FULL_HEALTH/SHAPE's vector less its first element (the
    tensor id, which names the traced output), FULL_TENSOR's whole tensor. 0 where the
    mode records too little to tell two tensors apart (NO_TENSOR, CURT/CONCISE_HEALTH).
    Its low byte carries the tensor's rank (``digest_rank``).

    An op grappler removed leaves its debug node reading its input's tensor, so its
    digest equals its input's."""
    if not tensor_proto:
        return 0
    if mode == _FULL_TENSOR:
        return _with_rank(_digest(tensor_proto), _tensor_proto_rank(tensor_proto))
    if mode not in _DTYPE_INDEX:
        return 0
    for number, wire_type, length, _, after in _vector_field(tensor_proto) or \
            message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number in (4, 6) and wire_type == LEN and length > 8:
            rank = None
            at = after - length + 8 * (_DTYPE_INDEX[mode] + 1)  # the rank follows the dtype
            if at + 8 <= after:
                (value,) = struct.unpack_from("<d", tensor_proto, at)
                rank = int(value) if math.isfinite(value) and 0 <= value < 255 else None
            return _with_rank(_digest(tensor_proto[after - length + 8:after]), rank)
    return 0


def _with_rank(digest: int, rank: int | None) -> int:
    # A digest's low byte is rank + 1 (0: not recorded), so that two equal digests also
    # tell which rank the one tensor they record has, with nothing more to carry or cache.
    code = 0 if rank is None else min(rank + 1, 255)
    return ((digest & ~0xFF) | code) or 0x100


def digest_rank(digest: int) -> int | None:
    """The rank of the tensor a ``health_digest`` records, or None if not recorded."""
    code = digest & 0xFF
    return code - 1 if digest and code else None


def _tensor_proto_rank(tensor_proto: bytes) -> int | None:
    """The rank in a TensorProto's ``tensor_shape`` (field 2: ``dim`` = 2, ``unknown_rank`` = 3)."""
    for number, wire_type, length, _, after in message_fields(tensor_proto, 0, len(tensor_proto)) or ():
        if number == 2 and wire_type == LEN:
            rank = 0
            for inner, inner_wire, value, _, _end in message_fields(tensor_proto, after - length, after) or ():
                if inner == 3 and inner_wire == VARINT and value:
                    return None
                if inner == 2 and inner_wire == LEN:
                    rank += 1
            return rank
    return 0  # no tensor_shape: a scalar


class SourceLines(Sequence[str]):
    """The lines of one source file, as a sequence of str, held as one string and where
    each line ends in it: one str per line took twice the file's size (a dump's
    ``.source_files`` of 8 MB grew the reader by 27 MB), and pickled slower.

    Read from a dump (``of_record``), it keeps the file's ``source_file`` record as it
    is, already checked to decode, and makes its string only when a line is first
    asked for: most runs' lines are never shown (only a call site's detail shows
    them), and making the strings of a dump's 200,000 lines was a tenth of reading
    it. Pickled (the cache), it stays a record until then."""

    __slots__ = ("_text", "_ends", "_record", "_where")

    def __init__(self, lines: Iterable[str] = ()) -> None:
        self._record: bytes | None = None
        self._where: tuple[str, int, int, str, str] | None = None
        self._set(lines)

    def _set(self, lines: Iterable[str]) -> None:
        lines = list(lines)
        text = "".join(lines)
        # 4 bytes a line where they fit (the cache pickles them): a file of 4 G characters
        self._ends = array("I" if len(text) < 1 << 32 else "q", accumulate(map(len, lines)))
        self._text = text

    @classmethod
    def of_record(cls, record: bytes) -> SourceLines:
        """The lines of the ``source_file`` DebugEvent serialized in ``record`` (which the
        caller has decoded once, so it decodes), made when first used."""
        lines = cls.__new__(cls)
        lines._record, lines._where = record, None
        return lines

    @classmethod
    def in_file(cls, path: str, offset: int, length: int, host: str, file_path: str) -> SourceLines:
        """The lines of the ``source_file`` record of ``length`` payload bytes at ``offset``
        of the local file ``path`` (decoded once when it was read: the source file
        ``file_path`` of ``host``), read from the file when first used. A file that no
        longer holds that record there (its length or CRCs do not verify, or it names
        another source file) gives no lines, with a warning. The record is told by its
        content, not by the file's inode: a pool or cluster worker that read it may see
        the same shared file under another device number."""
        lines = cls.__new__(cls)
        lines._record, lines._where = None, (path, offset, length, host, file_path)
        return lines

    def _made(self) -> None:
        record, where = self._record, self._where
        if where is not None:
            src = _source_record_at(*where)
            self._set(src.lines if src is not None else ())
            self._where = None
            return
        if record is not None:
            # Two threads may both get here: each makes the same lines, and the record
            # is dropped only once text and ends are both set.
            self._set(DebugEvent.FromString(record).source_file.lines)
            self._record = None

    @property
    def text(self) -> str:
        """The file's lines, joined."""
        self._made()
        return self._text

    @property
    def ends(self) -> array[int]:
        """Where each line ends in ``text``."""
        self._made()
        return self._ends

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        ends = self.ends
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(ends)))]
        if index < 0:
            index += len(ends)
        if not 0 <= index < len(ends):
            raise IndexError("source line index out of range")
        return self._text[ends[index - 1] if index else 0:ends[index]]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceLines):
            return self.text == other.text and self.ends == other.ends
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-free but compared like a list

    def __repr__(self) -> str:
        return f"SourceLines({len(self.ends)} lines)"

    def __reduce__(self) -> tuple[Any, ...]:
        record, where = self._record, self._where
        if where is not None:
            return (SourceLines.in_file, where)
        if record is not None:
            return (SourceLines.of_record, (record,))
        return (_source_lines, (self._text, self._ends))


def _source_lines(text: str, ends: array[int]) -> SourceLines:
    """Unpickle a ``SourceLines``."""
    lines = SourceLines.__new__(SourceLines)
    lines._record = lines._where = None
    lines._text, lines._ends = text, ends
    return lines


def _source_record_at(path: str, offset: int, length: int, host: str, file_path: str) -> Any:
    """The ``SourceFile`` of the record of ``length`` payload bytes at ``offset`` of ``path``
    if that record is still there (its length and CRCs verify, it decodes, and it is the
    source file ``file_path`` of ``host``); else None, logged: the file changed since it
    was read (and the next scan reads it again)."""
    why = ""
    try:
        with fs.open_read(path) as f:
            f.seek(offset)
            data = f.read(length + 16)
        if len(data) == length + 16 and struct.unpack_from("<Q", data)[0] == length \
                and masked_crc32c(data[:8]) == struct.unpack_from("<I", data, 8)[0] \
                and masked_crc32c(data[12:-4]) == struct.unpack_from("<I", data, length + 12)[0]:
            src = DebugEvent.FromString(data[12:-4]).source_file
            if (src.host_name, src.file_path) == (host, file_path):
                return src
            why = f"holds another source file at byte {offset}"
        else:
            why = f"holds no intact record of {length} bytes at byte {offset}"
    except (OSError, DecodeError) as err:
        why = f"cannot be read ({getattr(err, 'strerror', None) or err})"
    logger.warning("%s: %s (changed since it was read?); the lines of %s are not shown",
                   path, why, file_path)
    return None


class OpCreation(NamedTuple):
    """One op a graph created. A named tuple, not a dataclass: a dump's thousands are
    made three times faster, and a graph pickles them as columns (``GraphInfo``)."""

    op_type: str
    op_name: str
    graph_id: str
    device: str
    num_outputs: int
    stack: tuple[str, ...]
    inputs: tuple[str, ...] = ()


@dataclass
class GraphInfo:
    graph_id: str
    name: str = ""
    outer_id: str = ""
    ops: dict[str, OpCreation] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, ...]:
        # The ops as seven columns (one C-level transpose) rather than an object each:
        # pickling a dump's 4,000 ops one by one was most of storing its cache entry.
        return (_graph_info, (self.graph_id, self.name, self.outer_id, tuple(self.ops),
                              tuple(zip(*self.ops.values()))))


def _graph_info(graph_id: str, name: str, outer_id: str, names: tuple[str, ...],
                columns: tuple[tuple[Any, ...], ...]) -> GraphInfo:
    """Unpickle a ``GraphInfo``."""
    return GraphInfo(graph_id, name, outer_id, dict(zip(names, map(OpCreation._make, zip(*columns)))))


@dataclass
class DumpSet:
    """Everything read from one tfdbg2 file set."""

    directory: str
    prefix: str
    host: str
    files: dict[str, str] = field(default_factory=dict)
    tensorflow_version: str = ""
    file_version: str = ""
    run_id: str = ""
    first_wall_time: float = 0.0
    last_wall_time: float = 0.0
    # (host, path) of each source file, in file order: stack frames index it.
    source_files: list[tuple[str, str]] = field(default_factory=list)
    source_lines: dict[tuple[str, str], Sequence[str]] = field(default_factory=dict)
    # stack frame id -> (file index, line, function)
    stack_frames: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    graphs: dict[str, GraphInfo] = field(default_factory=dict)
    devices: dict[int, str] = field(default_factory=dict)
    # (op type, graph id or "") -> count; a non-empty graph id is a tf.function call
    executions: Counter[tuple[str, str]] = field(default_factory=Counter)
    # (op type, stack frame ids) -> count
    execution_sites: Counter[tuple[str, tuple[str, ...]]] = field(default_factory=Counter)
    # (op type, dtype of the first output as the health tensor says, "" if none) -> count
    execution_dtypes: Counter[tuple[str, str]] = field(default_factory=Counter)
    # (graph id, op name, output slot) -> count
    traces: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    # (graph id, op name, output slot) -> dtype its first health tensor names
    trace_dtypes: dict[tuple[str, str, int], str] = field(default_factory=dict)
    # (graph id, op name, slot) -> health_digest of its first trace
    trace_digests: dict[tuple[str, str, int], int] = field(default_factory=dict)
    # Per device (a MirroredStrategy replica, a worker's CPU): (op type, graph id or "",
    # device id of the first output, -1 if it has none, dtype as in execution_dtypes)
    # -> count of executions, and
    # (graph id, op name, slot) -> device name of its first trace (an op of a graph is
    # placed on one device).
    execution_devices: Counter[tuple[str, str, int, str]] = field(default_factory=Counter)
    # graph id -> wall times (epoch s) of its calls from Python (tf.function calls), in
    # file order: where a profile's window falls among a function's runs.
    call_times: dict[str, list[float]] = field(default_factory=dict)
    trace_devices: dict[tuple[str, str, int], str] = field(default_factory=dict)
    tensor_debug_modes: Counter[int] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    records: int = 0
    bytes_read: int = 0

    def _touch(self, wall_time: float) -> None:
        if wall_time:
            if not self.first_wall_time or wall_time < self.first_wall_time:
                self.first_wall_time = wall_time
            if wall_time > self.last_wall_time:
                self.last_wall_time = wall_time

    def frame(self, frame_id: str) -> tuple[str, int, str] | None:
        """(file path, line, function) of a stack frame id, if known."""
        found = self.stack_frames.get(frame_id)
        if found is None:
            return None
        index, line, func = found
        path = self.source_files[index][1] if 0 <= index < len(self.source_files) else "?"
        return path, line, func

    def lowest_slots(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(graph id, op name) -> (its lowest traced output slot, that slot's trace count),
        in the order the traces first name each op. The run counts an op's executions as
        the traces of its lowest traced slot (each execution traces every traced slot once),
        so analysis, worker breakdown and tab all count by this."""
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for (graph_id, op_name, slot), n in self.traces.items():
            have = out.get((graph_id, op_name))
            if have is None or slot < have[0]:
                out[(graph_id, op_name)] = (slot, n)
        return out


def find_dump_sets(directory: str) -> dict[str, dict[str, str]]:
    """File sets in one directory (not its subdirectories): prefix -> kind -> path."""
    sets: dict[str, dict[str, str]] = {}
    try:
        names = fs.listdir(directory)
    except OSError:
        return sets
    for name in names:
        m = DUMP_FILE_RE.match(name)
        if m:
            sets.setdefault(m.group("prefix"), {})[m.group("kind")] = os.path.join(directory, name)
    return sets


# ---------------------------------------------------------------- file states

# (size, mtime_ns, inode, device) of a file when it was read.
Identity = tuple[int, int, int, int]


def file_identity(path: str) -> Identity | None:
    """What tells a file apart from its earlier self: size, mtime, inode, device."""
    try:
        st = fs.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@dataclass
class FileState:
    """What reading one file of a dump set gave, and where a later read resumes.

    ``part`` holds the ``DumpSet`` fields this kind of file fills (and its
    wall-time window); the problems are kept apart from it so that a resumed
    read can drop a truncated tail that has since been completed.
    """

    kind: str
    path: str
    identity: Identity | None = None
    part: DumpSet = field(default_factory=lambda: DumpSet("", "", ""))
    end_offset: int = 0
    records: int = 0
    read_problems: list[Problem] = field(default_factory=list)
    frame_problems: list[Problem] = field(default_factory=list)
    truncated: bool = False
    # graph_execution_traces only: first non-zero and last wall time read.
    first_wall: float = 0.0
    last_wall: float = 0.0
    # The bytes just before end_offset, to recognise the same file grown.
    tail_bytes: bytes = b""

    def resumable(self) -> bool:
        """Reading can go on from ``end_offset``: no damage but a cut-off last record."""
        frames = self.frame_problems
        return not self.read_problems and (not frames or (self.truncated and len(frames) == 1))


def _tail_bytes(path: str, end: int) -> bytes:
    try:
        with fs.open_read(path) as f:
            f.seek(max(0, end - 64))
            return f.read(end - max(0, end - 64))
    except OSError:
        return b""


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


def _fold_metadata(part: DumpSet, events: Events) -> None:
    for event, what, meta, _stack, _offset, _payload in events:
        part._touch(event.wall_time)
        if what == "debug_metadata":
            part.tensorflow_version = meta.tensorflow_version or part.tensorflow_version
            part.file_version = meta.file_version or part.file_version
            part.run_id = meta.tfdbg_run_id or part.run_id


def _fold_source_files(part: DumpSet, events: Events, path: str = "") -> None:
    # A local file's records are read again from it when their lines are first asked
    # for, so a cache entry holds where they are, not the 8 MB of lines; a remote one's
    # are kept (a second fetch would cost more than it saves).
    local = bool(path) and not fs.is_remote(path)
    for _event, what, src, _stack, offset, payload in events:
        if what == "source_file":
            key = (src.host_name, src.file_path)
            # Stack frames index files by first appearance, as DebugDataReader does.
            if key not in part.source_lines:
                part.source_files.append(key)
            # The record decoded above: its lines are made when first read.
            part.source_lines[key] = (SourceLines.in_file(path, offset, len(payload), *key) if local
                                      else SourceLines.of_record(bytes(payload)))


def _fold_stack_frames(part: DumpSet, events: Events) -> None:
    for _event, what, frame, _stack, _offset, _payload in events:
        if what == "stack_frame_with_id":
            flc = frame.file_line_col
            part.stack_frames[frame.id] = (flc.file_index, flc.line, flc.func)


def _touch_all(part: DumpSet, walls: list[float]) -> None:
    """``part._touch`` of every wall time, done with their least non-zero one and their
    largest (the same window: one method call per record was a tenth of a fold)."""
    nonzero = [w for w in walls if w]
    if nonzero:
        part._touch(min(nonzero))
        part._touch(max(nonzero))


def _fold_graphs(part: DumpSet, events: Events) -> None:
    graphs = part.graphs
    new_op = tuple.__new__
    texts: dict[str, str] = {}
    walls: list[float] = []
    wall = walls.append
    for event, what, op, stack, _offset, _payload in events:
        wall(event.wall_time)
        if what == "graph_op_creation":
            graph = graphs.get(op.graph_id)
            if graph is None:
                graph = graphs[op.graph_id] = GraphInfo(op.graph_id, op.graph_name)
            # The graph's own id string, not a new one per op: the cache entry then
            # pickles it once per graph instead of once per op.
            graph_id = graph.graph_id
            name = op.op_name
            # The stack is shared by the ops of one call site (``_Stacks``). The tuple made
            # directly (a named tuple's own constructor is a Python call) from a list of the
            # input names (one C call; iterating the repeated field took twice as long).
            # Op types and devices are a few strings each made anew per op: one object each
            # (pickled once, not per op).
            op_type, device = op.op_type, op.device_name
            op_type, device = texts.setdefault(op_type, op_type), texts.setdefault(device, device)
            graph.ops[name] = new_op(OpCreation, (op_type, name, graph_id, device,
                                                  op.num_outputs, stack, tuple(op.input_names[:])))
        elif what == "debugged_graph":
            g = op
            graph = graphs.get(g.graph_id)
            if graph is None:
                graph = graphs[g.graph_id] = GraphInfo(g.graph_id)
            graph.name = g.graph_name or graph.name
            graph.outer_id = g.outer_context_id
        elif what == "debugged_device":
            part.devices[op.device_id] = op.device_name
    _touch_all(part, walls)


def _fold_executions(part: DumpSet, events: Events) -> None:
    # Counted once per distinct (op type, graph, mode, stack, dtype, device), then summed
    # into the five counters: most executions repeat one of a few hundred such keys, and
    # five counter updates per record were a third of the fold. Each counter's keys come
    # out in the order of their first record, as counting record by record gives them.
    seen: Counter[tuple[str, str, int, tuple[str, ...], str, int]] = Counter()
    walls: list[float] = []
    wall = walls.append
    calls = part.call_times.setdefault
    for event, what, ex, stack, _offset, _payload in events:
        wall_time = event.wall_time
        wall(wall_time)
        if what == "execution":
            mode = ex.tensor_debug_mode
            protos = ex.tensor_protos
            ids = ex.output_tensor_device_ids
            graph_id = ex.graph_id
            if graph_id:
                calls(graph_id, []).append(wall_time)
            seen[(ex.op_type, graph_id, mode, stack,
                  health_dtype(protos[0] if protos else b"", mode), ids[0] if ids else -1)] += 1
    executions = part.executions
    sites = part.execution_sites
    modes = part.tensor_debug_modes
    dtypes = part.execution_dtypes
    devices = part.execution_devices
    for (op_type, graph_id, mode, stack, dtype, device), n in seen.items():
        executions[(op_type, graph_id)] += n
        sites[(op_type, stack)] += n
        modes[mode] += n
        dtypes[(op_type, dtype)] += n
        devices[(op_type, graph_id, device, dtype)] += n
    _touch_all(part, walls)


_FOLDS = {"metadata": _fold_metadata, "source_files": _fold_source_files,
          "stack_frames": _fold_stack_frames, "graphs": _fold_graphs,
          "execution": _fold_executions}
_TRACES = "graph_execution_traces"


def _traces_window(state: FileState) -> None:
    part = state.part
    part.first_wall_time = part.last_wall_time = 0.0
    part._touch(state.first_wall)
    part._touch(state.last_wall)


# ---------------------------------------------------------------- traces, exact

@dataclass
class _Part:
    """What one stretch of a traces file gave (in file order, parts join up)."""

    start: int
    stop: int = 0             # where the next part begins (the file size once at the end)
    end_offset: int = 0       # RecordReader.end_offset semantics
    fast: bool = False
    # fast: key bytes -> count, first record of each key; exact: (graph, op, slot) -> count
    counts: dict[Any, int] = field(default_factory=dict)
    samples: dict[bytes, bytes] = field(default_factory=dict)
    dtypes: dict[tuple[str, str, int], str] = field(default_factory=dict)
    digests: dict[tuple[str, str, int], int] = field(default_factory=dict)
    devices: dict[tuple[str, str, int], str] = field(default_factory=dict)
    first_payload: bytes = b""
    last_payload: bytes = b""
    first_wall: float = 0.0
    last_wall: float = 0.0
    decoded: bool = False     # exact: any DebugEvent decoded (last_wall is meaningful)
    framed: int = 0           # fast: bytes framed in the window that did not verify
    records: int = 0
    read_problems: list[Problem] = field(default_factory=list)
    frame_problems: list[Problem] = field(default_factory=list)
    truncated: bool = False


def _exact_part(path: str, start: int, stop: int | None) -> _Part:
    """Records of ``path`` from ``start`` up to the first one at or after ``stop``,
    decoded one by one."""
    part = _Part(start=start)
    counts: Counter[tuple[str, str, int]] = Counter()
    dtypes = part.dtypes
    # To the end of a small intact file: framed and checked at once, as the other files
    # are (``_events``); anything else, or a stretch, record by record.
    whole = frame_whole(path, start, reuse=True) if stop is None else None
    reader: Any = RecordReader(path, start=start, stop=stop) if whole is None else \
        _Framed(whole[0], whole[1])
    for event, _what, tr, _stack, _offset, _payload in _decoded(reader, path, _TRACES, part.read_problems):
        wall = event.wall_time
        if not part.first_wall:
            part.first_wall = wall
        part.last_wall = wall
        part.decoded = True
        key = (tr.tfdbg_context_id, tr.op_name, tr.output_slot)
        if key not in counts:
            dtypes[key] = health_dtype(tr.tensor_proto, tr.tensor_debug_mode)
            part.digests[key] = health_digest(tr.tensor_proto, tr.tensor_debug_mode)
            part.devices[key] = tr.device_name
        counts[key] += 1
    part.counts = counts
    part.frame_problems = reader.problems
    part.records = reader.records
    part.end_offset = reader.end_offset
    part.truncated = reader.truncated
    reached = reader.end_offset
    if stop is None or reached < stop:  # ended by the end of the file, not by ``stop``
        reached = _size(path)
    part.stop = max(reached, reader.end_offset)
    return part


class _Framed(list[tuple[int, Any]]):
    """The records ``frame_whole`` gave, with what ``_exact_part`` reads of a
    ``RecordReader`` that read them (none cut, no problem)."""

    def __init__(self, records: list[tuple[int, Any]], end: int) -> None:
        super().__init__(records)
        self.records, self.end_offset, self.truncated = len(records), end, False
        self.problems: list[Problem] = []


def _size(path: str) -> int:
    try:
        return fs.stat(path).st_size
    except OSError:
        return 0


# ---------------------------------------------------------------- traces, fast

# A traces file smaller than this is read record by record (forking and numpy
# cost more than they save below a few MB).
FAST_MIN_BYTES = 4 << 20
_CHUNK = 8 << 20
_WORKERS = 2  # processes reading a big traces file: this one and a forked worker
# What reading a byte of a dump set's other files costs (decoded event by event), in
# bytes of the traces file read fast: see _TraceJob.
_OTHER_FILE_COST = 5
# How far a worker looks for the first intact record of its half.
_SYNC_LIMIT = 1 << 20
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
    unpack = _U64.unpack_from
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
                if offsets:
                    p = offsets.pop()
                    keys.pop()
                else:
                    p = int(starts[-1])
                    starts, ends = starts[:-1], ends[:-1]
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
            if keys:
                chunk = Counter(keys)
                new = [k for k in chunk if k not in counts]
                if new:
                    firsts = dict(zip(reversed(keys), reversed(offsets)))
                    for k in new:
                        o = firsts[k]
                        samples[k] = bytes(data[o + 12:o + 12 + unpack(data, o)[0]])
                for k, n in chunk.items():
                    counts[k] = counts.get(k, 0) + n
            first, last = int(every[0]), int(every[-1])
            if not part.records:
                part.first_payload = bytes(data[first + 12:first + 12 + unpack(data, first)[0]])
            part.records += len(every)
            part.last_payload = bytes(data[last + 12:last + 12 + unpack(data, last)[0]])
            pos += p
    finally:
        table.flush(counts)
    part.stop = part.end_offset = pos
    return part, pos, short


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
# Keys of more 8-byte words than this are keyed one by one (an op name of some 2 KB).
_MAX_KEY_WORDS = 255


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


class _KeyTable:
    """The distinct keys of one fast part, numbered by first appearance, and how many
    records of each its windows held; keyed with numpy (``count``).

    A key is hashed from its 8-byte words (the last word ends at the key's end, so it
    may overlap the one before; no byte outside the key is read), its length and its
    last word; the hash finds its number among the keys met. Every record's words are
    then compared with those of the key it was numbered as, so that two keys of one
    hash (or a new key that hashes like a known one) cannot be counted as one: the
    window is keyed one by one instead.

    A training loop traces the same ops in the same order at every step: once a
    window's keys repeat a cycle, the next window is framed and keyed as its
    continuation (``predict``, ``check``), each record's length field and words
    compared with what the cycle says, without scanning the window or hashing."""

    def __init__(self, win: _Window, cut: int) -> None:
        np = win.np
        self.np = np
        self.win = win
        self.cut = cut
        # The numbers the last windows repeated, and where in that cycle the next
        # record is (None: no cycle seen, or the window broke it).
        self.cycle: Any = None
        self.phase = 0
        self._predicted: Any = None
        # One odd multiplier per word (splitmix64 of its index: fixed, well mixed).
        z = np.arange(1, _MAX_KEY_WORDS + 3, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        self.mult: Any = (z ^ (z >> np.uint64(31))) | np.uint64(1)
        self.hashes: Any = np.zeros(0, dtype=np.uint64)     # sorted
        self.ids: Any = np.zeros(0, dtype=np.int64)         # the number of each sorted hash
        self.lengths: Any = np.zeros(0, dtype=np.int64)     # per number: the key's length,
        self.last: Any = np.zeros(0, dtype=np.uint64)       # its last word,
        self.words: Any = np.zeros((0, 0), dtype=np.uint64)  # its other words (0-padded)
        self.totals: Any = np.zeros(0, dtype=np.int64)      # records counted
        self.keys: list[bytes] = []
        self._pending: tuple[Any, ...] | None = None

    def predict(self, limit: int) -> tuple[Any, Any] | None:
        """(starts, ends) of the window's records that start at or before ``limit``, if
        they follow the cycle: the length field of each record where the cycle puts it
        says so. None without a cycle, or where the window leaves it."""
        np = self.np
        cycle = self.cycle
        self._predicted = None
        if cycle is None or limit < 0:
            return None
        sizes = self.lengths + (21 + self.cut)  # per number: the record's bytes
        turn = np.concatenate((cycle[self.phase:], cycle[:self.phase]))
        seq = np.tile(turn, limit // int(sizes[cycle].sum()) + 2)
        lengths = sizes[seq]
        ends = np.cumsum(lengths)
        starts = ends - lengths
        n = int(np.searchsorted(starts, limit, side="right"))
        starts, ends = starts[:n], ends[:n]
        if not n or not bool((self.win.u64[starts] == (lengths[:n] - 16).astype(np.uint64)).all()):
            self.cycle = None
            return None
        self._predicted = seq[:n]
        return starts, ends

    def check(self, starts: Any, ends: Any) -> bool:
        """Whether the records ``predict`` framed (the first ``len(starts)`` of them) hold
        the keys the cycle says, word for word; ``keep`` then counts them."""
        np = self.np
        win = self.win
        ids = self._predicted[:len(starts)]
        self._predicted = None
        self._pending = None
        ks = starts + 21
        kl = self.lengths[ids]
        if not bool((win.u64[ks + kl - 8] == self.last[ids]).all()):
            self.cycle = None
            return False
        nwords = (kl - 1) >> 3
        order = np.argsort(nwords.astype(np.uint8), kind="stable")
        lo = 0
        for w, m in enumerate(np.bincount(nwords).tolist()):
            idx = order[lo:lo + m]
            lo += m
            if w and m and not bool((self.words[ids[idx], :w] ==
                                     win.rows(8 * w)[ks[idx]].view(np.uint64)).all()):
                self.cycle = None
                return False
        self._pending = (None, ids, ids[:0], self.lengths, self.last, self.words, True)
        return True

    def count(self, starts: Any, ends: Any) -> bool:
        """Number the keys of the records at ``starts``..``ends`` of the window; False if
        they cannot be numbered exactly this way. ``keep`` then counts them."""
        np = self.np
        win = self.win
        cut = self.cut
        self._pending = None
        ks = starts + 21
        kl = ends - cut - ks
        if int(kl.min()) < 8:
            return False
        nwords = (kl - 1) >> 3  # whole words before the last one
        if int(nwords.max()) > _MAX_KEY_WORDS:
            return False
        last = win.u64[ks + kl - 8]
        mult = self.mult
        h = kl.astype(np.uint64) * mult[-1] + last * mult[-2]
        order = np.argsort(nwords.astype(np.uint8), kind="stable")
        sizes = np.bincount(nwords)
        classes: list[tuple[int, Any, Any]] = []
        lo = 0
        for w, m in enumerate(sizes.tolist()):
            if not m:
                continue
            idx = order[lo:lo + m]
            lo += m
            if not w:
                continue
            words = win.rows(8 * w)[ks[idx]].view(np.uint64)
            h[idx] += words @ mult[:w]
            classes.append((w, idx, words))
        known = self.hashes.size
        at = np.searchsorted(self.hashes, h)
        found = at < known
        found[found] = self.hashes[at[found]] == h[found]
        ids = np.empty(h.size, dtype=np.int64)
        ids[found] = self.ids[at[found]]
        miss = np.flatnonzero(~found)
        base = self.lengths.size
        firsts = miss[:0]
        if miss.size:
            o = np.argsort(h[miss], kind="stable")
            sorted_h = h[miss][o]
            head = np.ones(sorted_h.size, dtype=bool)
            head[1:] = sorted_h[1:] != sorted_h[:-1]
            group = np.cumsum(head) - 1
            firsts = miss[o[head]]           # each new hash's first record (a stable sort)
            rank = np.argsort(firsts)
            number = np.empty(rank.size, dtype=np.int64)
            number[rank] = np.arange(base, base + rank.size)
            ids[miss[o]] = number[group]
            firsts = firsts[rank]            # in file order: numbers base, base + 1, ...
        lengths = np.concatenate((self.lengths, kl[firsts]))
        lasts = np.concatenate((self.last, last[firsts]))
        if not (bool((lengths[ids] == kl).all()) and bool((lasts[ids] == last).all())):
            return False
        table = self.words  # copied only when keys are new: it holds every key's words
        if firsts.size:
            width = max(table.shape[1], int(nwords[firsts].max()))
            table = np.zeros((lengths.size, width), dtype=np.uint64)
            table[:base, :self.words.shape[1]] = self.words
        first = np.zeros(h.size, dtype=bool)
        first[firsts] = True
        for w, idx, words in classes:
            mine = ids[idx]
            new = first[idx]
            if new.any():
                table[mine[new], :w] = words[new]
            if not bool((table[mine, :w] == words).all()):
                return False
        self._pending = (h, ids, firsts, lengths, lasts, table, False)
        return True

    def keep(self, starts: Any, ends: Any, counts: dict[Any, int], samples: dict[bytes, bytes],
             more: bool) -> None:
        """Count the records ``count`` or ``check`` numbered (their CRCs verified); new
        keys go into ``counts`` (at 0, in file order: ``flush`` adds the totals) and
        ``samples``. ``more``: records keyed one by one follow them in the window."""
        np = self.np
        assert self._pending is not None
        h, ids, firsts, lengths, lasts, table, predicted = self._pending
        self._pending = None
        data = self.win.buf
        cut = self.cut
        if firsts.size:
            hashes = np.concatenate((self.hashes, h[firsts]))
            numbers = np.concatenate((self.ids, np.arange(self.lengths.size, lengths.size)))
            o = np.argsort(hashes, kind="stable")
            self.hashes, self.ids = hashes[o], numbers[o]
            self.lengths, self.last, self.words = lengths, lasts, table
            self.totals = np.concatenate((self.totals, np.zeros(firsts.size, dtype=np.int64)))
            for r in firsts.tolist():
                s, e = int(starts[r]), int(ends[r])
                key = bytes(data[s + 21:e - cut])
                self.keys.append(key)
                if key not in counts:
                    counts[key] = 0
                    samples[key] = bytes(data[s + 12:e - 4])
        self.totals += np.bincount(ids, minlength=self.totals.size)
        if more:
            self.cycle = None
        elif predicted:
            self.phase = (self.phase + ids.size) % self.cycle.size
        else:
            self._find_cycle(ids)

    def _find_cycle(self, ids: Any) -> None:
        """The cycle ``ids`` (a window's numbers, in file order) repeat at least twice,
        ending with the window, if any: the next window starts where it starts."""
        np = self.np
        self.cycle, self.phase = None, 0
        n = ids.size
        for p in np.flatnonzero(ids == ids[0])[1:5].tolist() if n > 1 else ():
            if 2 * p > n:
                break
            if bool((ids[p:] == ids[:-p]).all()):
                self.cycle = ids[n - p:].copy()
                return

    def flush(self, counts: dict[Any, int]) -> None:
        """Add the records counted to ``counts`` (once, when the part ends)."""
        for key, n in zip(self.keys, self.totals.tolist()):
            if n:
                counts[key] = counts.get(key, 0) + n
        self.totals = self.np.zeros(self.totals.size, dtype=self.np.int64)


def _can_fork() -> bool:
    # Forking a process that runs other threads (a TensorBoard server) can deadlock the
    # child on a lock some thread held; such a process reads in one process instead.
    return hasattr(os, "fork") and threading.active_count() == 1


class _TraceJob:
    """Reads a traces file from ``start`` on, in forked workers when it is big.

    ``_WORKERS`` processes read it: this one and ``_WORKERS - 1`` forked workers. This
    process also reads the dump set's other files (``other_bytes`` of them) first, so
    its range of the traces file is smaller by what those cost (``_OTHER_FILE_COST``):
    all finish about together. One worker fewer than before (this process took no
    range): a worker's memory counts against the whole, and two cores were all busy."""

    def __init__(self, state: FileState, start: int, other_bytes: int = 0) -> None:
        self.state = state
        self.start = start
        self.size = _size(state.path)
        self.tail: int | None = None
        # (lo, hi, find the first record after lo?, (pid, read fd) of its worker or None)
        self.ranges: list[tuple[int, int, bool, tuple[int, int] | None]] = []
        if self.size - start < FAST_MIN_BYTES:
            return
        first = _first_payload(state.path, start)
        self.tail = _trace_tail(first) if first else None
        if self.tail is None:
            return
        # A remote file is read in this process: fsspec's event-loop thread and sockets
        # do not survive a fork.
        workers = (_WORKERS if _can_fork() and (os.cpu_count() or 1) > 1
                   and not fs.is_remote(state.path) else 1)
        span = self.size - start
        bounds = [start, self.size]
        if workers > 1:
            cost = _OTHER_FILE_COST * other_bytes
            own = max(0, min(span, (span + cost) // workers - cost))
            rest = span - own
            bounds = [start] + [start + own + rest * i // (workers - 1) for i in range(workers)]
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            if lo < hi:
                self.ranges.append((lo, hi, lo > start, self._fork(lo, hi, lo > start) if i else None))

    def _fork(self, lo: int, hi: int, sync: bool) -> tuple[int, int] | None:
        """Start a worker for one range: (pid, fd to read its result from), or None."""
        def parts() -> bytes:  # runs in the child
            found = _fast_range(self.state.path, lo, hi, self.size, self.tail or 0, sync)
            return pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)

        try:
            return forks.start(parts)
        except OSError:
            return None  # the range is read here

    @staticmethod
    def _result(child: tuple[int, int]) -> list[_Part] | None:
        status, data = forks.collect(child)
        if status != 0:
            return None
        try:
            parts = pickle.loads(data)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
            return None
        return parts if isinstance(parts, list) else None

    def abandon(self) -> None:
        """Stop waiting for the workers (reading failed elsewhere): reap them."""
        for _lo, _hi, _sync, child in self.ranges:
            if child is not None:
                forks.abandon(child)
        self.ranges = []

    def finish(self) -> None:
        state = self.state
        results: list[list[_Part]] | None = []
        for lo, hi, sync, child in self.ranges:
            got = self._result(child) if child is not None else \
                _fast_range(state.path, lo, hi, self.size, self.tail or 0, sync)
            if got is None or results is None:
                results = None  # go on reaping the other workers
            else:
                results.append(got)
        if self.tail is None or results is None \
                or not _apply_fast(state, self.start, self.size, results):
            _apply(state, [_exact_part(state.path, self.start, None)])


def _apply_fast(state: FileState, start: int, size: int, results: list[list[_Part]]) -> bool:
    """Join the parts of every range into ``state``; False if a fast part's records do not
    have the layout its key assumes (then the caller reads the file record by record)."""
    path = state.path
    parts: list[_Part] = []
    cur = start
    for ranged in results:
        for part in ranged:
            if part.start > cur:
                fill = _exact_part(path, cur, part.start)
                parts.append(fill)
                cur = fill.stop
            if part.start == cur:
                parts.append(part)
                cur = part.stop
    if cur < size:
        parts.append(_exact_part(path, cur, None))
    infos: dict[bytes, tuple[tuple[str, str, int], str, int, str]] = {}
    for part in parts:
        if not part.fast:
            continue
        exact: Counter[tuple[str, str, int]] = Counter()
        for key, n in part.counts.items():
            info = infos.get(key)
            if info is None:
                info = _key_info(part.samples.get(key, b""), key)
                if info is None:
                    return False
                infos[key] = info
            tkey, dtype, digest, device = info
            if tkey not in exact:
                part.dtypes[tkey] = dtype
                part.digests[tkey] = digest
                part.devices[tkey] = device
            exact[tkey] += n
        part.counts = exact
        try:
            first = DebugEvent.FromString(part.first_payload).wall_time
            last = DebugEvent.FromString(part.last_payload).wall_time
        except DecodeError:
            return False
        if not first:  # the first non-zero wall time would be further on
            return False
        part.first_wall, part.last_wall = first, last
        part.decoded = True
    _apply(state, parts)
    return True


def _key_info(sample: bytes, key: bytes) -> tuple[tuple[str, str, int], str, int, str] | None:
    """(context id, op name, slot), health dtype, digest and device of the first record of
    a key, if the record has the layout the key assumes."""
    if not sample or sample[_KEY_START:_KEY_START + len(key)] != key:
        return None
    tail = _trace_tail(sample)
    if tail is None or len(sample) - tail != _KEY_START + len(key):
        return None
    try:
        event = DebugEvent.FromString(sample)
    except DecodeError:
        return None
    tr = event.graph_execution_trace
    return ((tr.tfdbg_context_id, tr.op_name, tr.output_slot),
            health_dtype(tr.tensor_proto, tr.tensor_debug_mode),
            health_digest(tr.tensor_proto, tr.tensor_debug_mode), tr.device_name)


def _apply(state: FileState, parts: list[_Part]) -> None:
    """Fold parts (in file order) into a traces ``FileState``, as one plain read would."""
    part_set = state.part
    traces, dtypes, digests = part_set.traces, part_set.trace_dtypes, part_set.trace_digests
    devices = part_set.trace_devices
    for part in parts:
        for key, n in part.counts.items():
            if key not in traces:
                dtypes[key] = part.dtypes.get(key, "")
                digests[key] = part.digests.get(key, 0)
                devices[key] = part.devices.get(key, "")
            traces[key] += n
        if part.decoded:
            if not state.first_wall:
                state.first_wall = part.first_wall
            state.last_wall = part.last_wall
        state.read_problems.extend(part.read_problems)
        state.frame_problems.extend(part.frame_problems)
        state.records += part.records
        state.end_offset = part.end_offset
        state.truncated = part.truncated
    _traces_window(state)


# ---------------------------------------------------------------- dump sets

def _grown(old: FileState, identity: Identity) -> bool:
    size, _mtime, ino, dev = identity
    if old.identity is None or not old.resumable():
        return False
    old_size, _old_mtime, old_ino, old_dev = old.identity
    return (ino, dev) == (old_ino, old_dev) and size > old_size and old.end_offset <= size \
        and _tail_bytes(old.path, old.end_offset) == old.tail_bytes


def read_file_states(files: dict[str, str],
                     previous: dict[str, FileState] | None = None) -> dict[str, FileState]:
    """Read each file of a dump set (kind -> path) into a ``FileState``.

    A state in ``previous`` is reused as it is when its file has not changed
    (same path, size, mtime, inode), and read on from its ``end_offset`` when
    the file only grew; any other change reads the file afresh. The states in
    ``previous`` may be changed in place.
    """
    # Reading makes many small objects that all live on: the cyclic GC would scan them
    # again and again for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_file_states(files, previous or {})
    finally:
        if enabled:
            gc.enable()


def _changed_since(state: FileState) -> str:
    """How ``state``'s file changed since it was sized for reading, in a way that makes
    what was read inconsistent ("" if it did not, or only grew: the readers then all
    read the same prefix). A file that could not be sized was reported by its reader."""
    before = state.identity
    if before is None:
        return ""
    now = file_identity(state.path)
    if now is None:
        return "removed"
    size, _mtime, ino, dev = now
    if (ino, dev) != (before[2], before[3]):
        return "replaced by another file"
    if size < before[0]:
        return f"cut from {before[0]} to {size} bytes"
    return ""


def _run_jobs(jobs: list[tuple[FileState, int]]) -> None:
    """Read each (state, offset to start at) into its state."""
    # The traces file first: its workers run while this process reads the rest.
    trace_job = None
    other = sum(_size(state.path) - start for state, start in jobs if state.kind != _TRACES)
    for state, start in jobs:
        if state.kind == _TRACES:
            trace_job = _TraceJob(state, start, other)
    read = False
    try:
        for state, start in jobs:
            if state.kind == "source_files":
                _fold_source_files(state.part, _events(state, start), state.path)
            elif state.kind != _TRACES:
                _FOLDS[state.kind](state.part, _events(state, start))
        read = True
    finally:
        if trace_job is not None and not read:
            trace_job.abandon()
    if trace_job is not None:
        trace_job.finish()


def _read_file_states(files: dict[str, str],
                      previous: dict[str, FileState]) -> dict[str, FileState]:
    states: dict[str, FileState] = {}
    jobs: list[tuple[FileState, int]] = []
    for kind in EVENT_KINDS:
        path = files.get(kind)
        if path is None:
            continue
        identity = file_identity(path)
        old = previous.get(kind)
        if old is not None and old.path == path and identity is not None:
            if old.identity == identity:
                states[kind] = old
                continue
            if _grown(old, identity):
                if old.truncated:
                    old.frame_problems.clear()
                    old.truncated = False
                old.identity = identity
                jobs.append((old, old.end_offset))
                continue
        jobs.append((FileState(kind, path, identity), 0))
    _run_jobs(jobs)
    # A file cut short, or replaced, while it was read gives counts of neither its old
    # nor its new self (the readers of its parts saw different files): read it again,
    # once, and if it changed again, say that its counts may be mixed.
    again = [i for i, (state, _start) in enumerate(jobs) if _changed_since(state)]
    if again:
        redo = [(FileState(jobs[i][0].kind, jobs[i][0].path, file_identity(jobs[i][0].path)), 0)
                for i in again]
        _run_jobs(redo)
        for i, (state, start) in zip(again, redo):
            why = _changed_since(state)
            if why:
                state.read_problems.append(Problem(state.path, 0, (
                    f"changed while being read ({why}; read again, it changed again): "
                    "counts may be mixed")))
            jobs[i] = (state, start)
    for state, _start in jobs:
        state.tail_bytes = _tail_bytes(state.path, state.end_offset)
        states[state.kind] = state
    return {kind: states[kind] for kind in EVENT_KINDS if kind in states}


_OWNED = {
    "metadata": ("tensorflow_version", "file_version", "run_id"),
    "source_files": ("source_files", "source_lines"),
    "stack_frames": ("stack_frames",),
    "graphs": ("graphs", "devices"),
    "execution": ("executions", "execution_sites", "execution_dtypes", "tensor_debug_modes",
                  "execution_devices", "call_times"),
    _TRACES: ("traces", "trace_dtypes", "trace_digests", "trace_devices"),
}


def assemble_dump_set(directory: str, prefix: str, files: dict[str, str],
                      states: dict[str, FileState]) -> DumpSet:
    """The ``DumpSet`` of one file set from the states of its files (shared, not copied)."""
    m = DUMP_FILE_RE.match(prefix + ".metadata")
    host = m.group("host") if m else ""
    dump = DumpSet(directory=directory, prefix=prefix, host=host, files=dict(files))
    for kind in EVENT_KINDS:
        if kind not in files:
            dump.problems.append(Problem(os.path.join(directory, f"{prefix}.{kind}"), 0,
                                         f"missing: the dump set has no .{kind} file"))
    for kind in EVENT_KINDS:
        state = states.get(kind)
        if state is None:
            continue
        for name in _OWNED[kind]:
            setattr(dump, name, getattr(state.part, name))
        dump._touch(state.part.first_wall_time)
        dump._touch(state.part.last_wall_time)
        dump.problems.extend(state.read_problems)
        dump.problems.extend(state.frame_problems)
        dump.records += state.records
        dump.bytes_read += state.end_offset
    return dump


def read_dump_set(directory: str, prefix: str, files: dict[str, str]) -> DumpSet:
    """Read the six files of one dump set (missing ones become problems)."""
    return assemble_dump_set(directory, prefix, files, read_file_states(files))
