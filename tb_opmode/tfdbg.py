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
"""
from __future__ import annotations

import os
import re
import struct
from collections import Counter
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from .schema import EVENT_KINDS, DebugEvent
from .tfrecord import Problem, RecordReader

__all__ = ["OpCreation", "GraphInfo", "DumpSet", "find_dump_sets", "read_dump_set",
           "DUMP_FILE_RE", "DTYPE_NAMES", "health_dtype"]

DUMP_FILE_RE = re.compile(
    r"^(?P<prefix>tfdbg_events\.(?P<ts>\d+)\.(?P<host>.+))\.(?P<kind>" + "|".join(EVENT_KINDS) + r")$")


# tensorflow/core/framework/types.proto: the dtypes a health summary can name.
DTYPE_NAMES = {1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
               6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL",
               14: "DT_BFLOAT16", 17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF",
               22: "DT_UINT32", 23: "DT_UINT64"}
# Index of the dtype in the health vector, per TensorDebugMode (FULL_HEALTH=4:
# [tensor_id, device_id, dtype, rank, size, ...]; SHAPE=5: [tensor_id, dtype, ...]).
_DTYPE_INDEX = {4: 2, 5: 1}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def health_dtype(tensor_proto: bytes, mode: int) -> str:
    """The dtype a FULL_HEALTH/SHAPE debug tensor records, or "" if none.

    The health vector is a float64 TensorProto: values in ``tensor_content``
    (field 4) or packed ``double_val`` (field 6). Only float tensors are
    instrumented, so an execution without one had a non-float output.
    """
    index = _DTYPE_INDEX.get(mode)
    if index is None or not tensor_proto:
        return ""
    pos, end = 0, len(tensor_proto)
    try:
        while pos < end:
            key, pos = _varint(tensor_proto, pos)
            wire = key & 7
            if wire == 0:
                _, pos = _varint(tensor_proto, pos)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length, pos = _varint(tensor_proto, pos)
                if key >> 3 in (4, 6) and length >= 8 * (index + 1):
                    (value,) = struct.unpack_from("<d", tensor_proto, pos + 8 * index)
                    return DTYPE_NAMES.get(int(value), f"DT_{int(value)}")
                pos += length
            else:
                return ""
    except (IndexError, struct.error):
        return ""
    return ""


@dataclass(frozen=True)
class OpCreation:
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
    source_lines: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # stack frame id -> (file index, line, function)
    stack_frames: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    graphs: dict[str, GraphInfo] = field(default_factory=dict)
    devices: dict[int, str] = field(default_factory=dict)
    # (op type, graph id or "") -> count; a non-empty graph id is a tf.function call
    executions: Counter = field(default_factory=Counter)
    # (op type, stack frame ids) -> count
    execution_sites: Counter = field(default_factory=Counter)
    # (op type, dtype of the first output as the health tensor says, "" if none) -> count
    execution_dtypes: Counter = field(default_factory=Counter)
    # (graph id, op name, output slot) -> count
    traces: Counter = field(default_factory=Counter)
    # (graph id, op name, output slot) -> dtype its first health tensor names
    trace_dtypes: dict[tuple[str, str, int], str] = field(default_factory=dict)
    tensor_debug_modes: Counter = field(default_factory=Counter)
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


def find_dump_sets(directory: str) -> dict[str, dict[str, str]]:
    """File sets in one directory (not its subdirectories): prefix -> kind -> path."""
    sets: dict[str, dict[str, str]] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return sets
    for name in names:
        m = DUMP_FILE_RE.match(name)
        if m:
            sets.setdefault(m.group("prefix"), {})[m.group("kind")] = os.path.join(directory, name)
    return sets


def _events(dump: DumpSet, kind: str):
    path = dump.files.get(kind)
    if path is None:
        return
    reader = RecordReader(path)
    try:
        for offset, payload in reader:
            try:
                event = DebugEvent.FromString(payload)
            except DecodeError as err:
                dump.problems.append(Problem(path, offset, f"record is not a DebugEvent ({err})"))
                continue
            yield event
    except OSError as err:
        dump.problems.append(Problem(path, 0, f"cannot read: {err.strerror or err}"))
    dump.problems.extend(reader.problems)
    dump.records += reader.records
    dump.bytes_read += reader.end_offset


def read_dump_set(directory: str, prefix: str, files: dict[str, str]) -> DumpSet:
    """Read the six files of one dump set (missing ones become problems)."""
    m = DUMP_FILE_RE.match(prefix + ".metadata")
    host = m.group("host") if m else ""
    dump = DumpSet(directory=directory, prefix=prefix, host=host, files=dict(files))
    for kind in EVENT_KINDS:
        if kind not in files:
            dump.problems.append(Problem(os.path.join(directory, f"{prefix}.{kind}"), 0,
                                         f"missing: the dump set has no .{kind} file"))
    _read_metadata(dump)
    _read_source_files(dump)
    _read_stack_frames(dump)
    _read_graphs(dump)
    _read_executions(dump)
    _read_traces(dump)
    return dump


def _read_metadata(dump: DumpSet) -> None:
    for event in _events(dump, "metadata"):
        dump._touch(event.wall_time)
        if event.HasField("debug_metadata"):
            meta = event.debug_metadata
            dump.tensorflow_version = meta.tensorflow_version or dump.tensorflow_version
            dump.file_version = meta.file_version or dump.file_version
            dump.run_id = meta.tfdbg_run_id or dump.run_id


def _read_source_files(dump: DumpSet) -> None:
    for event in _events(dump, "source_files"):
        if event.HasField("source_file"):
            src = event.source_file
            key = (src.host_name, src.file_path)
            # Stack frames index files by first appearance, as DebugDataReader does.
            if key not in dump.source_lines:
                dump.source_files.append(key)
            dump.source_lines[key] = list(src.lines)


def _read_stack_frames(dump: DumpSet) -> None:
    for event in _events(dump, "stack_frames"):
        if event.HasField("stack_frame_with_id"):
            frame = event.stack_frame_with_id
            flc = frame.file_line_col
            dump.stack_frames[frame.id] = (flc.file_index, flc.line, flc.func)


def _read_graphs(dump: DumpSet) -> None:
    graphs = dump.graphs
    for event in _events(dump, "graphs"):
        dump._touch(event.wall_time)
        what = event.WhichOneof("what")
        if what == "graph_op_creation":
            op = event.graph_op_creation
            graph = graphs.get(op.graph_id)
            if graph is None:
                graph = graphs[op.graph_id] = GraphInfo(op.graph_id, op.graph_name)
            graph.ops[op.op_name] = OpCreation(
                op.op_type, op.op_name, op.graph_id, op.device_name, op.num_outputs,
                tuple(op.code_location.stack_frame_ids), tuple(op.input_names))
        elif what == "debugged_graph":
            g = event.debugged_graph
            graph = graphs.get(g.graph_id)
            if graph is None:
                graph = graphs[g.graph_id] = GraphInfo(g.graph_id)
            graph.name = g.graph_name or graph.name
            graph.outer_id = g.outer_context_id
        elif what == "debugged_device":
            dump.devices[event.debugged_device.device_id] = event.debugged_device.device_name


def _read_executions(dump: DumpSet) -> None:
    executions = dump.executions
    sites = dump.execution_sites
    for event in _events(dump, "execution"):
        dump._touch(event.wall_time)
        if event.HasField("execution"):
            ex = event.execution
            executions[(ex.op_type, ex.graph_id)] += 1
            sites[(ex.op_type, tuple(ex.code_location.stack_frame_ids))] += 1
            dump.tensor_debug_modes[ex.tensor_debug_mode] += 1
            dtype = health_dtype(ex.tensor_protos[0], ex.tensor_debug_mode) if ex.tensor_protos else ""
            dump.execution_dtypes[(ex.op_type, dtype)] += 1


def _read_traces(dump: DumpSet) -> None:
    traces = dump.traces
    first = last = 0.0
    for event in _events(dump, "graph_execution_traces"):
        wall = event.wall_time
        if not first:
            first = wall
        last = wall
        if event.HasField("graph_execution_trace"):
            tr = event.graph_execution_trace
            key = (tr.tfdbg_context_id, tr.op_name, tr.output_slot)
            if key not in traces:
                dump.trace_dtypes[key] = health_dtype(tr.tensor_proto, tr.tensor_debug_mode)
            traces[key] += 1
    dump._touch(first)
    dump._touch(last)
