"""A 10+ MB traces file (the forked, chunked fast reader) damaged in the places
where its halves and windows meet.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from tb_opmode.read.tfrecord import encode_record

from .helpers import (
    BIG_TRACES_BYTES,
    BigTraces,
    Dump,
    _with_unknown_fields,
    assert_warned,
    model_counts,
    summarize,
    warnings_of,
)


def _big_damage(how: str, big: BigTraces) -> tuple[bytes, set[int], list[tuple[int, str]]]:
    raw, recs = big.raw, big.records
    n = len(recs)
    data = bytearray(raw)
    mid = big.index_at(len(raw) // 2)
    if how == "intact":
        return raw, set(), []
    if how == "bad_crc_early":
        i = n // 10
        data[recs[i][0] + 20] ^= 0x10
        return bytes(data), {i}, [(recs[i][0], "payload checksum")]
    if how == "flipped_length_at_the_middle":
        # the record where the file is split between the two readers
        data[recs[mid][0] + 1] ^= 0x04
        return bytes(data), {mid}, [(recs[mid][0], "length checksum")]
    if how == "first_records_of_the_second_half":
        lost = set(range(mid, mid + 3))
        for i in lost:
            data[recs[i][0] + 14] ^= 0x01
        return bytes(data), lost, [(recs[i][0], "payload checksum") for i in sorted(lost)]
    if how == "garbage_inserted_in_the_middle":
        at = recs[mid][0]
        junk = random.Random(8).randbytes(5000)
        return raw[:at] + junk + raw[at:], set(), [(at, "length checksum")]
    if how == "truncated_tail":
        off, payload = recs[-1]
        return raw[:off + 30], {n - 1}, [(off, "truncated")]
    if how == "unknown_fields_in_two_records":
        # Another layout (a newer TF): the fast path must not mistake their keys.
        out = bytearray()
        for i, (off, payload) in enumerate(recs):
            out += encode_record(_with_unknown_fields(payload)) if i in (n // 3, 2 * n // 3) else \
                raw[off:off + 16 + len(payload)]
        return bytes(out), set(), []
    raise ValueError(how)


BIG_DAMAGE = ["intact", "bad_crc_early", "flipped_length_at_the_middle",
              "first_records_of_the_second_half", "garbage_inserted_in_the_middle",
              "truncated_tail", "unknown_fields_in_two_records"]


@pytest.mark.parametrize("how", BIG_DAMAGE)
def test_big_traces_file_damaged(dump: Dump, big: BigTraces, tmp_path: Path, how: str) -> None:
    files = dump.copy_to(tmp_path)
    data, lost, expected_warnings = _big_damage(how, big)
    assert len(data) > BIG_TRACES_BYTES
    files["graph_execution_traces"].write_bytes(data)
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    eager, _, functions, _ = dump.expected()
    assert model_counts(doc) == (eager, big.expected_graph(dump, lost), functions)
    for offset, word in expected_warnings:
        assert_warned(doc, stderr, files["graph_execution_traces"].name, offset, word)
    assert len(warnings_of(doc)) == len(expected_warnings)



