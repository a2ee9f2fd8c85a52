"""A dump set's traces file read into its ``FileState``: fast in forked workers when big,
else record by record.

In: a traces ``FileState`` and the offset to start at. Out: the state filled as one plain
read would fill it (``_apply``): counts per (graph id, op name, output slot), first
dtypes, digests and devices, the wall-time window, problems. A big file is split between
this process and a forked worker (``_TraceJob``), each range read by ``fastread``; the fast
parts' raw keys are then decoded once each (``_apply_fast``).
"""
from __future__ import annotations

import os
import pickle
import threading
from collections import Counter

from google.protobuf.message import DecodeError

from .. import forks, fs
from ..schema import DebugEvent
from .dumpset import FileState
from .fastread import _fast_range, _first_payload
from .fold import _traces_window
from .framing import _KEY_START, _trace_tail
from .health import HealthSpec, health_digest, health_dtype, health_spec
from .traceparts import _exact_part, _Part, _size

__all__: list[str] = []


# A traces file smaller than this is read record by record (forking and numpy
# cost more than they save below a few MB).
FAST_MIN_BYTES = 4 << 20


_WORKERS = 2  # processes reading a big traces file: this one and a forked worker
# What reading a byte of a dump set's other files costs (decoded event by event), in
# bytes of the traces file read fast: see _TraceJob.
_OTHER_FILE_COST = 5


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
    infos: dict[bytes, tuple[tuple[str, str, int], str, int, str, HealthSpec]] = {}
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
            tkey, dtype, digest, device, spec = info
            if tkey not in exact:
                part.dtypes[tkey] = dtype
                part.digests[tkey] = digest
                part.specs[tkey] = spec
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


def _key_info(sample: bytes, key: bytes) -> tuple[tuple[str, str, int], str, int, str, HealthSpec] | None:
    """(context id, op name, slot), health dtype, digest, device and spec of the first
    record of a key, if the record has the layout the key assumes."""
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
            health_digest(tr.tensor_proto, tr.tensor_debug_mode), tr.device_name,
            health_spec(tr.tensor_proto, tr.tensor_debug_mode))


def _apply(state: FileState, parts: list[_Part]) -> None:
    """Fold parts (in file order) into a traces ``FileState``, as one plain read would."""
    part_set = state.part
    traces, dtypes, digests = part_set.traces, part_set.trace_dtypes, part_set.trace_digests
    specs = part_set.trace_specs
    devices = part_set.trace_devices
    for part in parts:
        for key, n in part.counts.items():
            if key not in traces:
                dtypes[key] = part.dtypes.get(key, "")
                digests[key] = part.digests.get(key, 0)
                specs[key] = part.specs.get(key)
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
