"""What reading a tfdbg2 dump set gives: the aggregated facts of the set, and the state of
each of its files.

In: nothing read here but a directory's listing (``find_dump_sets``) and a file's
``stat`` (``file_identity``). Out: the model classes ``DumpSet`` (everything read from
one file set), ``GraphInfo`` and ``OpCreation`` (its graphs and their ops), ``FileState``
(what one file gave and where a later read resumes); ``DUMP_FILE_RE``, the name of a
dump's file.
"""
from __future__ import annotations

import os
import re
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...errors import Problem
from .. import fs
from ..schema import EVENT_KINDS
from .health import HealthSpec

__all__ = ["DUMP_FILE_RE", "OpCreation", "GraphInfo", "DumpSet", "find_dump_sets", "Identity",
           "file_identity", "FileState"]


DUMP_FILE_RE = re.compile(
    r"^(?P<prefix>tfdbg_events\.(?P<ts>\d+)\.(?P<host>.+))\.(?P<kind>" + "|".join(EVENT_KINDS) + r")$")


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
    # (graph id, op name, slot) -> ``health_spec`` of its first trace (FULL_HEALTH, SHAPE)
    trace_specs: dict[tuple[str, str, int], HealthSpec] = field(default_factory=dict)
    # Per device (a MirroredStrategy replica, a worker's CPU): (op type, graph id or "",
    # device id of the first output, -1 if it has none, dtype as in execution_dtypes)
    # -> count of executions, and
    # (graph id, op name, slot) -> device name of its first trace (an op of a graph is
    # placed on one device).
    execution_devices: Counter[tuple[str, str, int, str]] = field(default_factory=Counter)
    # graph id -> wall times (epoch s) of its calls from Python (tf.function calls), in
    # file order: where a profile's window falls among a function's runs.
    call_times: dict[str, list[float]] = field(default_factory=dict)
    # (op type, stack frame ids) of an eager execution -> wall times (epoch s) of its
    # records, in file order: what a profile's eager events are joined to, by line.
    eager_times: dict[tuple[str, tuple[str, ...]], array[float]] = field(default_factory=dict)
    # graph id -> (first, last) wall time (epoch s) of its op creations: when it was traced.
    graph_walls: dict[str, tuple[float, float]] = field(default_factory=dict)
    # graph id of a tf.function called from Python -> per input of its first call, what a
    # FULL_HEALTH or SHAPE dump recorded of the eager output that fed it (``health_spec``),
    # None where nothing (not an eager output the dump holds, or another mode).
    call_args: dict[str, tuple[HealthSpec, ...]] = field(default_factory=dict)
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
