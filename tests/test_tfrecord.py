"""The TFRecord reader on real dump files, intact and damaged on purpose."""
from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest

from tb_opmode.read import tfrecord
from tb_opmode.read.tfrecord import RecordReader, encode_record, masked_crc32c

from .conftest import dump_files


def _read(path: Path) -> tuple[list[tuple[int, bytes]], RecordReader]:
    reader = RecordReader(str(path))
    return list(reader), reader


def test_payloads_equal_tensorflows_reader(bert_logdir: Path) -> None:
    from tensorflow.python.lib.io import tf_record  # the reference needs TF (bert_logdir too)

    for kind, path in dump_files(bert_logdir).items():
        ours, reader = _read(path)
        theirs = list(tf_record.tf_record_iterator(str(path)))
        assert [p for _, p in ours] == theirs, kind
        assert reader.problems == []
        assert reader.end_offset == path.stat().st_size


def test_masked_crc_matches_tensorflow_framing(bert_logdir: Path) -> None:
    raw = dump_files(bert_logdir)["metadata"].read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    assert masked_crc32c(raw[:8]) == struct.unpack("<I", raw[8:12])[0]
    assert encode_record(raw[12:12 + length]) == raw[:16 + length]


def _copy(src: Path, tmp_path: Path) -> tuple[Path, bytes, list[tuple[int, bytes]]]:
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    intact, _ = _read(src)
    return dst, src.read_bytes(), intact


def test_truncated_tail_keeps_every_complete_record(bert_logdir: Path, tmp_path: Path) -> None:
    path, raw, intact = _copy(dump_files(bert_logdir)["execution"], tmp_path)
    cut = intact[-1][0] + 20  # inside the last record's payload
    path.write_bytes(raw[:cut])
    got, reader = _read(path)
    assert got == intact[:-1]
    assert reader.truncated and len(reader.problems) == 1
    problem = reader.problems[0]
    assert problem.path == str(path) and problem.offset == intact[-1][0]
    assert "truncated" in problem.message
    assert reader.end_offset == intact[-1][0]  # where to resume when the file grows


def test_truncated_header(bert_logdir: Path, tmp_path: Path) -> None:
    path, raw, intact = _copy(dump_files(bert_logdir)["execution"], tmp_path)
    path.write_bytes(raw + b"\x05\x00\x00")
    got, reader = _read(path)
    assert got == intact
    assert [p.offset for p in reader.problems] == [len(raw)]


def test_bad_payload_crc_skips_one_record_only(bert_logdir: Path, tmp_path: Path) -> None:
    path, raw, intact = _copy(dump_files(bert_logdir)["graph_execution_traces"], tmp_path)
    victim = len(intact) // 2
    offset = intact[victim][0]
    data = bytearray(raw)
    data[offset + 12 + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    got, reader = _read(path)
    assert got == intact[:victim] + intact[victim + 1:]
    assert len(reader.problems) == 1
    assert reader.problems[0].offset == offset and "payload checksum" in reader.problems[0].message


def test_flipped_length_resyncs_to_next_record(bert_logdir: Path, tmp_path: Path) -> None:
    path, raw, intact = _copy(dump_files(bert_logdir)["graph_execution_traces"], tmp_path)
    victim = 5
    offset = intact[victim][0]
    data = bytearray(raw)
    data[offset + 6] ^= 0x40  # a high bit of the length: it now runs far past the end
    path.write_bytes(bytes(data))
    got, reader = _read(path)
    assert got == intact[:victim] + intact[victim + 1:]
    assert len(reader.problems) == 1
    assert reader.problems[0].offset == offset and "length checksum" in reader.problems[0].message


def test_empty_and_garbage_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    got, reader = _read(empty)
    assert got == [] and reader.problems == []
    garbage = tmp_path / "garbage"
    garbage.write_bytes(bytes(range(256)) * 40)
    got, reader = _read(garbage)
    assert got == []
    assert len(reader.problems) == 1 and "end of the file" in reader.problems[0].message


def test_resume_from_saved_offset_reads_only_new_records(bert_logdir: Path, tmp_path: Path) -> None:
    path, raw, intact = _copy(dump_files(bert_logdir)["execution"], tmp_path)
    half = intact[len(intact) // 2][0]
    path.write_bytes(raw[:half])
    first, reader = _read(path)
    path.write_bytes(raw)  # the training job wrote more
    second = list(RecordReader(str(path), start=reader.end_offset))
    assert first + second == intact


def _read_all(path: Path, **kw: int) -> tuple[list[tuple[int, bytes]], list[tuple[int, str]], int, bool]:
    reader = RecordReader(str(path), **kw)
    got = list(reader)
    return got, [(p.offset, p.message) for p in reader.problems], reader.end_offset, reader.truncated


def test_small_windows_read_exactly_what_one_read_does(bert_logdir: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """RecordReader reads _WINDOW bytes at a time (memory stays flat on a 500 MB
    file); records across window ends, records longer than a window, damage
    near a window end and ranges with start/stop must come out exactly as when
    the whole file is one window."""
    raw = dump_files(bert_logdir)["execution"].read_bytes()[:200_000]
    rng = random.Random(5)
    cases = {"intact": raw, "cut": raw[:-37]}
    for name in ("header", "payload", "torn", "garbage"):
        data = bytearray(raw)
        at = rng.randrange(1000, len(raw) - 1000)
        if name == "header":
            starts = [o for o, _ in RecordReader(_write(tmp_path / "x", raw))]
            data[rng.choice(starts[3:-3]) + 2] ^= 0x40
        elif name == "payload":
            data[at] ^= 0x01
        elif name == "torn":
            del data[at:at + 9]
        else:
            data[at:at] = rng.randbytes(5000)
        cases[name] = bytes(data)
    for name, data in cases.items():
        path = _write(tmp_path / name, data)
        size = len(data)
        for kw in ({}, {"start": 0, "stop": size // 2}, {"start": size // 3}):
            whole = _read_all(path, **kw)
            assert whole[0], name
            for window in (40, 333, 4096):
                monkeypatch.setattr(tfrecord, "_WINDOW", window)
                assert _read_all(path, **kw) == whole, (name, kw, window)
            monkeypatch.undo()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _plain_next_intact(buf: bytes, pos: int) -> int | None:
    """The search as the TFRecord format defines it: every offset, both CRCs."""
    for p in range(pos, len(buf) - 15):
        (length,) = struct.unpack_from("<Q", buf, p)
        end = p + 12 + length + 4
        if (struct.unpack_from("<I", buf, p + 8)[0] == masked_crc32c(buf[p:p + 8]) and end <= len(buf)
                and struct.unpack_from("<I", buf, end - 4)[0] == masked_crc32c(buf[p + 12:end - 4])):
            return p
    return None


def test_resync_search_equals_the_plain_search() -> None:
    """next_intact_record skips offsets with numpy (a length that cannot fit, a zero
    header without the CRC of zeros); it must find what checking every offset finds,
    in random, zero-filled and text garbage with intact and damaged records inside."""
    rng = random.Random(8)
    for trial in range(25):
        parts = []
        for _ in range(rng.randint(1, 6)):
            kind, n = rng.randrange(5), rng.randint(0, 12000)
            if kind == 0:
                parts.append(rng.randbytes(n))
            elif kind == 1:
                parts.append(bytes(n))
            elif kind == 2:
                parts.append(b"Executing op MatMul in device CPU:0\n" * (n // 36))
            elif kind == 3:
                parts.append(encode_record(rng.randbytes(rng.randint(0, 60))))
            else:
                rec = bytearray(encode_record(bytes(rng.randint(0, 60))))
                rec[-1] ^= 1  # a zero payload with a bad CRC
                parts.append(bytes(rec))
        buf = b"".join(parts)
        for start in (0, 1, len(buf) // 3):
            assert tfrecord.next_intact_record(buf, len(buf), start) == _plain_next_intact(buf, start), \
                (trial, start)
