"""Records as a newer TF could write them (unknown fields of every wire type, a
newer file_version) and crafted health tensors with non-finite numbers.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest

from tb_opmode.read.tfdbg import find_dump_sets, read_dump_set
from tb_opmode.read.tfrecord import encode_record

from .helpers import (
    KINDS,
    Dump,
    _key,
    _varint,
    _with_unknown_fields,
    assert_warned,
    debug_event_pb2,
    model_counts,
    records,
    summarize,
    tf_event,
    warnings_of,
)


def test_unknown_fields_and_newer_file_version(dump: Dump, tmp_path: Path) -> None:
    files = dump.copy_to(tmp_path)
    for kind in KINDS:
        data = bytearray()
        for _, payload in dump.records[kind]:
            if kind == "metadata":
                ev = tf_event(payload)
                assert ev.debug_metadata.file_version == "debug.Event:1"
                ev.debug_metadata.file_version = "debug.Event:7"
                payload = ev.SerializeToString()
            data += encode_record(_with_unknown_fields(payload))
        files[kind].write_bytes(bytes(data))
        # TensorFlow's own reader and protos accept them too: the files are well formed.
        for _, payload in records(files[kind]):
            tf_event(payload)

    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    assert model_counts(doc) == dump.expected()[:3]
    run = doc["runs"][0]
    import tensorflow as tf
    assert run["tensorflow_version"] == tf.__version__
    (_warning,) = warnings_of(doc)  # the version, and nothing about the unknown fields
    assert_warned(doc, stderr, files["metadata"].name, 0, "debug.Event:7", "newer")


# ---------------------------------------------------------------- damaged health tensors (crafted)

@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_dtype_in_a_health_tensor(dump: Dump, tmp_path: Path, value: float) -> None:
    files = dump.copy_to(tmp_path)
    ev = debug_event_pb2.DebugEvent(wall_time=1.0)
    ev.execution.op_type = "Relu"
    ev.execution.tensor_debug_mode = 4  # FULL_HEALTH: [tensor_id, device_id, dtype, ...]
    health = struct.pack("<11d", 1, -1, value, 2, 8, 0, 0, 0, 0, 0, 0)
    ev.execution.tensor_protos.add().ParseFromString(
        b"\x08\x02" + _key(4, 2) + _varint(len(health)) + health)  # DT_DOUBLE, tensor_content
    with open(files["execution"], "ab") as f:
        f.write(encode_record(ev.SerializeToString()))
    ((prefix, found),) = find_dump_sets(str(tmp_path)).items()
    ds = read_dump_set(str(tmp_path), prefix, found)
    eager, _, _, _ = dump.expected()
    assert sum(n for (op, g), n in ds.executions.items() if op == "Relu" and not g) == eager["Relu"] + 1



