"""Our own protobuf schemas for the files TensorFlow writes, so no TF import is needed.

In: nothing. Out: message classes ``DebugEvent`` (tfdbg2 dumps, from
``tensorflow/core/protobuf/debug_event.proto``) and ``XSpace`` (profiles, from
``tsl/profiler/protobuf/xplane.proto``), built at import time from field
numbers copied from TF 2.21's own descriptors; and ``XSpaceRawEvents``, the
same XSpace but with each line's events left as serialized bytes, for
``wire.scan`` to decode all at once; and ``DebugEventRawStacks``, the same
DebugEvent but with each op creation's and execution's ``code_location`` left as
serialized bytes: ops share a few hundred call stacks of ~70 frame ids each, so
``tfdbg`` decodes each distinct stack once instead of 70 strings per record; and
``DebugEventSourceHeads``, that one without a source file's lines (a dump's
``.source_files`` is megabytes of them, read only when a line is shown).

Only the fields we read are declared. Large nested messages we never look into
(``TensorProto`` health values, GraphDefs) are declared as ``bytes``: the wire
format is the same for a message and for bytes, and leaving them unparsed is
much faster. Unknown fields (newer TF versions) are skipped by protobuf.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["DebugEvent", "DebugEventRawStacks", "DebugEventSourceHeads", "CodeLocation", "XSpace", "XPlane",
           "XSpaceRawEvents", "EVENT_KINDS", "walk_fields",
           "message_fields", "read_varint", "VARINT", "FIXED64", "LEN", "FIXED32"]

_F = descriptor_pb2.FieldDescriptorProto
_TYPES = {
    "double": _F.TYPE_DOUBLE, "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64, "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES,
    "enum": _F.TYPE_ENUM,
}

# (message, [(number, name, type or ".pkg.Message", repeated?, oneof index or None)])
_DEBUG_EVENT_MESSAGES: list[tuple[str, list[tuple[int, str, str, bool, int | None]]]] = [
    ("DebugEvent", [
        (1, "wall_time", "double", False, None),
        (2, "step", "int64", False, None),
        (3, "debug_metadata", ".tb_opmode.DebugMetadata", False, 0),
        (4, "source_file", ".tb_opmode.SourceFile", False, 0),
        (6, "stack_frame_with_id", ".tb_opmode.StackFrameWithId", False, 0),
        (7, "graph_op_creation", ".tb_opmode.GraphOpCreation", False, 0),
        (8, "debugged_graph", ".tb_opmode.DebuggedGraph", False, 0),
        (9, "execution", ".tb_opmode.Execution", False, 0),
        (10, "graph_execution_trace", ".tb_opmode.GraphExecutionTrace", False, 0),
        (11, "graph_id", "string", False, 0),
        (12, "debugged_device", ".tb_opmode.DebuggedDevice", False, 0),
    ]),
    ("DebugMetadata", [
        (1, "tensorflow_version", "string", False, None),
        (2, "file_version", "string", False, None),
        (3, "tfdbg_run_id", "string", False, None),
    ]),
    ("SourceFile", [
        (1, "file_path", "string", False, None),
        (2, "host_name", "string", False, None),
        (3, "lines", "string", True, None),
    ]),
    ("FileLineCol", [
        (1, "file_index", "int32", False, None),
        (2, "line", "int32", False, None),
        (3, "col", "int32", False, None),
        (4, "func", "string", False, None),
        (5, "code", "string", False, None),
    ]),
    ("StackFrameWithId", [
        (1, "id", "string", False, None),
        (2, "file_line_col", ".tb_opmode.FileLineCol", False, None),
    ]),
    ("CodeLocation", [
        (1, "host_name", "string", False, None),
        (2, "stack_frame_ids", "string", True, None),
    ]),
    ("GraphOpCreation", [
        (1, "op_type", "string", False, None),
        (2, "op_name", "string", False, None),
        (3, "graph_name", "string", False, None),
        (4, "graph_id", "string", False, None),
        (5, "device_name", "string", False, None),
        (6, "input_names", "string", True, None),
        (7, "num_outputs", "int32", False, None),
        (8, "code_location", ".tb_opmode.CodeLocation", False, None),
        (9, "output_tensor_ids", "int32", True, None),
    ]),
    ("DebuggedGraph", [
        (1, "graph_id", "string", False, None),
        (2, "graph_name", "string", False, None),
        (3, "instrumented_ops", "string", True, None),
        (4, "original_graph_def", "bytes", False, None),
        (5, "instrumented_graph_def", "bytes", False, None),
        (6, "outer_context_id", "string", False, None),
    ]),
    ("DebuggedDevice", [
        (1, "device_name", "string", False, None),
        (2, "device_id", "int32", False, None),
    ]),
    ("Execution", [
        (1, "op_type", "string", False, None),
        (2, "num_outputs", "int32", False, None),
        (3, "graph_id", "string", False, None),
        (4, "input_tensor_ids", "int64", True, None),
        (5, "output_tensor_ids", "int64", True, None),
        (6, "tensor_debug_mode", "int32", False, None),
        (7, "tensor_protos", "bytes", True, None),  # TensorProto, left unparsed
        (8, "code_location", ".tb_opmode.CodeLocation", False, None),
        (9, "output_tensor_device_ids", "int32", True, None),
    ]),
    ("GraphExecutionTrace", [
        (1, "tfdbg_context_id", "string", False, None),
        (2, "op_name", "string", False, None),
        (3, "output_slot", "int32", False, None),
        (4, "tensor_debug_mode", "int32", False, None),
        (5, "tensor_proto", "bytes", False, None),  # TensorProto, left unparsed
        (6, "device_name", "string", False, None),
    ]),
]

_XPLANE_MESSAGES: list[tuple[str, list[tuple[int, str, str, bool, int | None]]]] = [
    ("XSpace", [
        (1, "planes", ".tb_opmode.XPlane", True, None),
        (2, "errors", "string", True, None),
        (3, "warnings", "string", True, None),
        (4, "hostnames", "string", True, None),
    ]),
    ("XPlane", [
        (1, "id", "int64", False, None),
        (2, "name", "string", False, None),
        (3, "lines", ".tb_opmode.XLine", True, None),
        (4, "event_metadata", ".tb_opmode.XEventMetadataEntry", True, None),
        (5, "stat_metadata", ".tb_opmode.XStatMetadataEntry", True, None),
        (6, "stats", ".tb_opmode.XStat", True, None),
    ]),
    # Map entries declared as plain repeated messages: same wire format, and
    # plain lists are cheaper to build than protobuf maps.
    ("XEventMetadataEntry", [
        (1, "key", "int64", False, None),
        (2, "value", ".tb_opmode.XEventMetadata", False, None),
    ]),
    ("XStatMetadataEntry", [
        (1, "key", "int64", False, None),
        (2, "value", ".tb_opmode.XStatMetadata", False, None),
    ]),
    ("XLine", [
        (1, "id", "int64", False, None),
        (10, "display_id", "int64", False, None),
        (2, "name", "string", False, None),
        (11, "display_name", "string", False, None),
        (3, "timestamp_ns", "int64", False, None),
        (9, "duration_ps", "int64", False, None),
        (4, "events", ".tb_opmode.XEvent", True, None),
    ]),
    ("XEvent", [
        (1, "metadata_id", "int64", False, None),
        (2, "offset_ps", "int64", False, None),
        (5, "num_occurrences", "int64", False, None),
        (3, "duration_ps", "int64", False, None),
        (4, "stats", ".tb_opmode.XStat", True, None),
    ]),
    ("XStat", [
        (1, "metadata_id", "int64", False, None),
        (2, "double_value", "double", False, None),
        (3, "uint64_value", "uint64", False, None),
        (4, "int64_value", "int64", False, None),
        (5, "str_value", "string", False, None),
        (6, "bytes_value", "bytes", False, None),
        (7, "ref_value", "uint64", False, None),
    ]),
    ("XEventMetadata", [
        (1, "id", "int64", False, None),
        (2, "name", "string", False, None),
        (4, "display_name", "string", False, None),
        (3, "metadata", "bytes", False, None),
        (5, "stats", ".tb_opmode.XStat", True, None),
        (6, "child_id", "int64", True, None),
    ]),
    ("XStatMetadata", [
        (1, "id", "int64", False, None),
        (2, "name", "string", False, None),
        (3, "description", "string", False, None),
    ]),
]


def _file(name: str, messages: list[tuple[str, list[tuple[int, str, str, bool, int | None]]]],
          oneofs: dict[str, str], package: str = "tb_opmode") -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    for msg_name, fields in messages:
        msg = fd.message_type.add(name=msg_name)
        if msg_name in oneofs:
            msg.oneof_decl.add(name=oneofs[msg_name])
        for number, fname, ftype, repeated, oneof in fields:
            field = msg.field.add(name=fname, number=number)
            field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if ftype.startswith("."):
                field.type = _F.TYPE_MESSAGE
                field.type_name = ftype.replace(".tb_opmode.", f".{package}.")
            else:
                field.type = _TYPES[ftype]
            if oneof is not None:
                field.oneof_index = oneof
    return fd


def _raw_events(messages: list[tuple[str, list[tuple[int, str, str, bool, int | None]]]]
                ) -> list[tuple[str, list[tuple[int, str, str, bool, int | None]]]]:
    """``messages`` with ``XLine.events`` declared as repeated bytes."""
    return [(name, [(number, fname, "bytes" if (name, fname) == ("XLine", "events") else ftype,
                     repeated, oneof) for number, fname, ftype, repeated, oneof in fields])
            for name, fields in messages]


def _raw_stacks(messages: list[tuple[str, list[tuple[int, str, str, bool, int | None]]]]
                ) -> list[tuple[str, list[tuple[int, str, str, bool, int | None]]]]:
    """``messages`` with ``GraphOpCreation.code_location`` and ``Execution.code_location``
    declared as bytes."""
    raw = {("GraphOpCreation", "code_location"), ("Execution", "code_location")}
    return [(name, [(number, fname, "bytes" if (name, fname) in raw else ftype,
                     repeated, oneof) for number, fname, ftype, repeated, oneof in fields])
            for name, fields in messages]


def _source_heads(messages: list[tuple[str, list[tuple[int, str, str, bool, int | None]]]]
                  ) -> list[tuple[str, list[tuple[int, str, str, bool, int | None]]]]:
    """``messages`` without ``SourceFile.lines`` (left as unknown fields: skipped by
    length, neither copied out nor checked to be UTF-8)."""
    return [(name, [f for f in fields if (name, f[1]) != ("SourceFile", "lines")])
            for name, fields in messages]


def _classes(fd: descriptor_pb2.FileDescriptorProto) -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    out = {}
    for msg in fd.message_type:
        desc = pool.FindMessageTypeByName(f"{fd.package}.{msg.name}")
        # GetMessageClass exists from protobuf 4.22 on; MessageFactory is the
        # older spelling, removed in 5.x. Both give the same class.
        if hasattr(message_factory, "GetMessageClass"):
            out[msg.name] = message_factory.GetMessageClass(desc)
        else:  # pragma: no cover - protobuf < 4.22
            # GetPrototype is gone from protobuf >= 4.22, whose stubs mypy reads.
            out[msg.name] = message_factory.MessageFactory(pool).GetPrototype(desc)  # type: ignore[attr-defined]
    return out


_DEBUG = _classes(_file("tb_opmode/debug_event.proto", _DEBUG_EVENT_MESSAGES, {"DebugEvent": "what"}))
_XPLANE = _classes(_file("tb_opmode/xplane.proto", _XPLANE_MESSAGES, {}))

DebugEvent = _DEBUG["DebugEvent"]
CodeLocation = _DEBUG["CodeLocation"]
DebugEventRawStacks = _classes(_file("tb_opmode/debug_event_raw.proto",
                                     _raw_stacks(_DEBUG_EVENT_MESSAGES), {"DebugEvent": "what"},
                                     package="tb_opmode.raw"))["DebugEvent"]
DebugEventSourceHeads = _classes(_file("tb_opmode/debug_event_heads.proto",
                                       _raw_stacks(_source_heads(_DEBUG_EVENT_MESSAGES)),
                                       {"DebugEvent": "what"}, package="tb_opmode.heads"))["DebugEvent"]
XSpace = _XPLANE["XSpace"]
XPlane = _XPLANE["XPlane"]
XSpaceRawEvents = _classes(_file("tb_opmode/xplane_raw.proto", _raw_events(_XPLANE_MESSAGES), {},
                                 package="tb_opmode.raw"))["XSpace"]

# Wire types, for the fields walked by hand.
VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

# The six files of a tfdbg2 dump set, by suffix.
EVENT_KINDS = ("metadata", "source_files", "stack_frames", "graphs", "execution",
               "graph_execution_traces")


def walk_fields(data: bytes | bytearray | memoryview, start: int, end: int
                ) -> Iterator[tuple[int, int, int, int, int]]:
    """The fields of the message in ``data[start:end]``, one at a time in Python,
    for the few fields around what is left unparsed or decoded in bulk: (field
    number, wire type, value or length, position of the tag, position after the
    field; a length-delimited body is the ``length`` bytes before it). Stops at
    the first malformed field."""
    pos = start
    while pos < end:
        tag_pos = pos
        tag, pos = read_varint(data, pos, end)
        wt = tag & 7
        if pos < 0:
            return
        if wt == VARINT:
            value, pos = read_varint(data, pos, end)
        elif wt == LEN:
            value, pos = read_varint(data, pos, end)
            if pos < 0 or value > end - pos:
                return
            pos += value
        elif wt in (FIXED64, FIXED32):
            value, pos = 0, pos + (8 if wt == FIXED64 else 4)
        else:
            return
        if pos < 0 or pos > end:
            return
        yield tag >> 3, wt, value, tag_pos, pos


def message_fields(data: bytes | bytearray | memoryview, start: int, end: int
                   ) -> list[tuple[int, int, int, int, int]] | None:
    """Every field of the message in ``data[start:end]`` (as ``walk_fields``
    gives them), or None unless the fields parse right up to ``end``."""
    fields = list(walk_fields(data, start, end))
    return fields if (fields[-1][4] if fields else start) == end else None


def read_varint(data: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """(value, position after it), or (0, -1) if it runs past ``end`` or 10 bytes."""
    value = 0
    for k in range(10):
        if pos >= end:
            break
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            return value, pos
    return 0, -1
