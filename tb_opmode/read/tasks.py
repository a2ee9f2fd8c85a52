"""Which task of a cluster wrote a dump: read from the device names it records.

In: TF device names (``/job:worker/replica:0/task:1/device:CPU:0``) or a dump set's
files. Out: the task (``worker:1``; ``localhost:0`` for a one-process run), and the
tasks a dump set's ``.graphs`` file names, with which discovery puts the dumps of one
multi-worker job into one run.

Discovery asks this of every dump set below a directory holding no dump itself (every
run of a logdir of runs), before any run loads, so it must not decode the whole
``.graphs`` file: ``dump_tasks`` frames its records, looks at each one's first field
tags to find the few ``debugged_device`` events, decodes only those, and checks every
CRC in one pass (``tfrecord.ChunkVerifier``). Anything it does not expect (damage, a
cut-off tail, another field layout) makes it read the file as ``tfdbg`` does instead,
so the answer is the same either way.
"""
from __future__ import annotations

import re
import struct
import threading
from array import array
from typing import Any

import numpy as np  # tensorboard depends on numpy
from google.protobuf.message import DecodeError

from . import fs
from .schema import DebugEvent
from .tfdbg import read_file_states
from .tfrecord import WHOLE_MAX_BYTES, ChunkVerifier, thread_buffer

__all__ = ["task_of", "is_cluster_task", "dump_tasks"]

_TASK = re.compile(r"/job:(?P<job>[^/]+)(?:/replica:\d+)?/task:(?P<task>\d+)")
def task_of(device: str) -> str:
    """``job:task`` of a TF device name (``/job:worker/replica:0/task:1/device:CPU:0`` ->
    ``worker:1``), or "" for a name without a job."""
    m = _TASK.search(device)
    return f"{m.group('job')}:{m.group('task')}" if m else ""


def is_cluster_task(task: str) -> bool:
    """Whether a task is a member of a cluster (``worker:1``, ``chief:0``), not the
    single process of a local run (``localhost:0``)."""
    return bool(task) and not task.startswith("localhost:")


def dump_tasks(files: dict[str, str]) -> frozenset[str]:
    """The tasks named by the devices a dump set's ``.graphs`` file records (kind ->
    path, as ``tfdbg.find_dump_sets`` gives). Reads only that file; an unreadable or
    damaged one names fewer tasks (its problems are reported when the run is built)."""
    path = files.get("graphs")
    if path is None:
        return frozenset()
    try:
        devices = _device_names(path)
    except OSError:
        devices = None  # the full read below says why (as a problem, or nothing)
    if devices is None:
        state = read_file_states({"graphs": path}).get("graphs")
        if state is None:
            return frozenset()
        devices = list(state.part.devices.values())
    return frozenset(t for t in map(task_of, devices) if t)


_U64 = struct.Struct("<Q")
_HEADER, _FOOTER = 12, 4
# A graphs file read whole by the quick path at most (a larger one streams through
# ``tfdbg``'s windows instead; the graphs of one process are tens of MB).
_QUICK_MAX_BYTES = 256 << 20
_FIELDS = DebugEvent.DESCRIPTOR.fields_by_name
_WALL_TIME_TAG = (_FIELDS["wall_time"].number << 3) | 1   # fixed64
_STEP_TAG = _FIELDS["step"].number << 3                   # varint
_DEVICE_TAG = (_FIELDS["debugged_device"].number << 3) | 2
# The one-byte tags of the length-delimited payloads a DebugEvent may carry.
_PAYLOAD_TAGS = frozenset((f.number << 3) | 2 for f in DebugEvent.DESCRIPTOR.oneofs_by_name["what"].fields
                          if f.number < 16)


_verifier: ChunkVerifier | None = None
_verifier_lock = threading.Lock()


def _device_names(path: str) -> list[str] | None:
    """The device names of the ``debugged_device`` events of a ``.graphs`` file, in file
    order (as ``tfdbg``'s reader keeps them by device id), or None when the file is not
    a run of intact records each laid out as TensorFlow writes them (wall time, optional
    step, then one payload field): then the caller reads it record by record."""
    read = _read_whole(path)
    if read is None:
        return None
    data, n, reuse = read
    framed = _frame(data, n)
    if framed is None:
        return None
    offsets, found, end = framed
    if offsets and not _intact(data, offsets, end, reuse):
        return None
    return _devices_of(data, found)


def _read_whole(path: str) -> tuple[Any, int, bool] | None:
    """(the file's bytes, how many, whether they are in the thread's reusable buffer),
    or None for a file too big for the quick path or cut short while read."""
    with fs.open_read(path) as f:
        size = fs.size_of(f)
        if size > _QUICK_MAX_BYTES:
            return None
        # Up to WHOLE_MAX_BYTES, into the thread's reusable buffer (the one ``tfdbg`` reads
        # the file into next): a fresh 11 MB for each run's file was 2,700 page faults,
        # and checked in place rather than copied for the check.
        readinto = getattr(f, "readinto", None)
        reuse = size <= WHOLE_MAX_BYTES and readinto is not None
        data: Any = thread_buffer(size) if reuse else f.read(size)
        n = readinto(data) if readinto is not None and reuse else len(data)
    if n < size:
        return None
    return data, n, reuse


def _frame(data: Any, n: int) -> tuple[array[int], list[tuple[int, int]], int] | None:
    """(the offset of each record of ``data[:n]``, the payload bounds of its
    ``debugged_device`` events, where the records end), or None if a record is cut off
    or not laid out as TF writes it."""
    u64 = _U64.unpack_from
    offsets = array("q")
    found: list[tuple[int, int]] = []
    pos = 0
    while pos < n:
        if n - pos < _HEADER + _FOOTER:
            return None  # a cut-off tail
        (length,) = u64(data, pos)
        start, stop = pos + _HEADER, pos + _HEADER + length
        if stop + _FOOTER > n:
            return None
        p = start
        if p < stop and data[p] == _WALL_TIME_TAG:
            p += 9
        if p < stop and data[p] == _STEP_TAG:
            p = _after_varint(data, p + 1, stop)
        if p >= stop or data[p] not in _PAYLOAD_TAGS:
            return None
        if data[p] == _DEVICE_TAG:
            found.append((start, stop))
        offsets.append(pos)
        pos = stop + _FOOTER
    return offsets, found, pos


def _after_varint(data: Any, p: int, stop: int) -> int:
    """Where the varint at ``p`` ends (its last byte at ``stop`` at most)."""
    while p < stop and data[p] & 0x80:
        p += 1
    return p + 1


def _intact(data: Any, offsets: array[int], end: int, reuse: bool) -> bool:
    """Whether the CRCs of every record verify (in place in the reusable buffer)."""
    global _verifier
    with _verifier_lock:
        if _verifier is None:
            _verifier = ChunkVerifier()  # its tables and C function, found once
        return (_verifier.verify(np.frombuffer(data, dtype=np.uint8), offsets, end, in_place=True)
                if reuse else _verifier.verify(data, offsets, end))


def _devices_of(data: Any, found: list[tuple[int, int]]) -> list[str] | None:
    """The device names of the ``debugged_device`` payloads at ``found``, by device id in
    file order; None if one does not decode."""
    devices: dict[int, str] = {}
    for start, stop in found:
        try:
            device = DebugEvent.FromString(data[start:stop]).debugged_device
        except DecodeError:
            return None
        devices[device.device_id] = device.device_name
    return list(devices.values())
