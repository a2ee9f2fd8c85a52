"""TFRecord framing damage (truncated records, bad checksums, flipped lengths) in a
real dump: every intact record is still read, each damage is one warning at its
offset; and the hand-made reference agrees with DebugDataReader.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from tb_opmode.read.tfdbg import find_dump_sets, read_dump_set
from tb_opmode.read.tfrecord import RecordReader, masked_crc32c

from ..conftest import ddr_counts
from .helpers import (
    Dump,
    assert_warned,
    model_counts,
    summarize,
    warnings_of,
)


def test_reference_equals_debug_data_reader(dump: Dump, cnn_logdir: Path) -> None:
    """The hand-made reference agrees with TensorFlow's DebugDataReader on the intact dump."""
    eager, graph, functions, untyped = dump.expected()
    ref_eager, ref_graph, ref_functions = ddr_counts(cnn_logdir)
    assert (eager, graph, functions, untyped) == (ref_eager, ref_graph, ref_functions, 0)
    assert sum(eager.values()) > 50 and sum(graph.values()) > 50


# ---------------------------------------------------------------- framing damage

def _truncate_last(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    off, payload = recs[-1]
    return raw[:off + 12 + len(payload) // 2], {len(recs) - 1}, [(off, "truncated")]


def _truncate_header(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    off, _ = recs[-1]
    return raw[:off + 5], {len(recs) - 1}, [(off, "truncated record header")]


def _bad_payload_crc(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    victim = len(recs) // 2
    off, payload = recs[victim]
    data = bytearray(raw)
    data[off + 12 + len(payload) // 2] ^= 0x5A
    return bytes(data), {victim}, [(off, "payload checksum")]


def _bad_footer(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    victim = len(recs) // 4
    off, payload = recs[victim]
    data = bytearray(raw)
    data[off + 12 + len(payload)] ^= 0x01  # the stored payload CRC itself
    return bytes(data), {victim}, [(off, "payload checksum")]


def _flipped_length_high(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    victim = len(recs) // 3
    off, _ = recs[victim]
    data = bytearray(raw)
    data[off + 6] ^= 0x40  # the length now runs far past the end of the file
    return bytes(data), {victim}, [(off, "length checksum")]


def _flipped_length_low(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    victim = 2 * len(recs) // 3
    off, _ = recs[victim]
    data = bytearray(raw)
    data[off] ^= 0x01  # off by one: still inside the file
    return bytes(data), {victim}, [(off, "length checksum")]


def _three_at_once(raw: bytes, recs: list[tuple[int, bytes]]) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    data, lost1, w1 = _bad_payload_crc(raw, recs)
    data, lost2, w2 = _flipped_length_high(data, recs)
    data, lost3, w3 = _truncate_last(data, recs)
    return data, lost1 | lost2 | lost3, w1 + w2 + w3


DAMAGE: dict[str, Callable[[bytes, list[tuple[int, bytes]]], tuple[bytes, set[int], list[tuple[int, str]]]]] = {
    "truncated_last_record": _truncate_last,
    "truncated_header": _truncate_header,
    "bad_payload_crc": _bad_payload_crc,
    "bad_stored_crc": _bad_footer,
    "flipped_length_high_bit": _flipped_length_high,
    "flipped_length_low_bit": _flipped_length_low,
    "three_at_once": _three_at_once,
}


@pytest.mark.parametrize("kind", ["execution", "graph_execution_traces", "graphs"])
@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_framing_damage_keeps_every_intact_record(dump: Dump, tmp_path: Path, kind: str,
                                                  how: str) -> None:
    files = dump.copy_to(tmp_path / "logdir")
    data, lost, expected_warnings = DAMAGE[how](dump.raw[kind], dump.records[kind])
    files[kind].write_bytes(data)

    rc, doc, stderr = summarize(tmp_path / "logdir")
    assert rc == 0, stderr
    eager, graph, functions, untyped = dump.expected({kind: frozenset(lost)})
    assert model_counts(doc) == (eager, graph, functions)
    for offset, word in expected_warnings:
        assert_warned(doc, stderr, files[kind].name, offset, word)
    if untyped:  # graph ops whose creation record was lost: reported, not guessed
        assert any(f"{untyped} graph executions of ops the .graphs file does not define" in w
                   for w in warnings_of(doc))
    # Nothing else is reported: one warning per damage (plus the uncounted ones).
    assert len(warnings_of(doc)) == len(expected_warnings) + (1 if untyped else 0)
    assert doc["runs"][0]["tensorflow_version"]


def test_dump_set_reader_recovers_exactly_the_intact_records(dump: Dump, tmp_path: Path) -> None:
    """The dump-set reader (below the CLI) on all kinds damaged at once: records
    read = intact records minus the damaged ones, per file."""
    files = dump.copy_to(tmp_path)
    lost_total = intact_total = 0
    for kind in ("graphs", "execution", "graph_execution_traces", "stack_frames", "source_files"):
        data, lost, _ = _three_at_once(dump.raw[kind], dump.records[kind])
        files[kind].write_bytes(data)
        lost_total += len(lost)
    for recs in dump.records.values():
        intact_total += len(recs)
    ((prefix, found),) = find_dump_sets(str(tmp_path)).items()
    ds = read_dump_set(str(tmp_path), prefix, found)
    assert ds.records == intact_total - lost_total
    assert len(ds.problems) == 3 * 5


# ---------------------------------------------------------------- a wrong length whose CRC verifies

@pytest.mark.parametrize("how", ["torn_record_then_more_records", "bytes_missing_in_a_payload",
                                 "forged_length"])
def test_record_after_a_wrong_length_is_kept(dump: Dump, tmp_path: Path, how: str) -> None:
    raw, recs = dump.raw["execution"], dump.records["execution"]
    victim = len(recs) // 2
    off, payload = recs[victim]
    after = off + 16 + len(payload)
    if how == "torn_record_then_more_records":
        data = raw[:off + 12 + len(payload) // 2] + raw[after:]
    elif how == "bytes_missing_in_a_payload":
        cut = off + 12 + len(payload) // 2
        data = raw[:cut] + raw[cut + 3:]
    else:
        header = struct.pack("<Q", len(payload) + 7)
        data = raw[:off] + header + struct.pack("<I", masked_crc32c(header)) + raw[off + 12:]
    path = tmp_path / "x.execution"
    path.write_bytes(data)
    reader = RecordReader(str(path))
    got = [p for _, p in reader]
    assert got == dump.payloads("execution", frozenset({victim}))
    assert [p.offset for p in reader.problems] == [off]



