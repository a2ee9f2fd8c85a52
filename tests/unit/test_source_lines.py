"""A dump's source lines are read from its ``.source_files`` when first asked for, and a
cache entry holds where they are rather than the lines (``tfdbg.SourceLines.in_file``).

In: the committed FULL_HEALTH run of ``tests/data`` (written by TF 2.21), copied so its
file can be replaced. Out: the lines equal protobuf's decoding of each record, before and
after a pickle, and a file replaced since it was read gives no lines and a warning naming
the file, rather than another file's lines (the record is checked by its length, CRCs and
source file name when it is read again).
"""
from __future__ import annotations

import logging
import pickle
import shutil
from pathlib import Path

import pytest

from tb_opmode.read import tfdbg
from tb_opmode.read.schema import DebugEvent
from tb_opmode.read.tfrecord import RecordReader

from .conftest import Fixture


def _copy(fixture: Fixture, tmp_path: Path) -> tuple[str, dict[str, str]]:
    (src,) = {p.parent for p in fixture.directory.rglob("tfdbg_events.*.source_files")}
    dst = tmp_path / "dump"
    shutil.copytree(src, dst)
    ((prefix, files),) = tfdbg.find_dump_sets(str(dst)).items()
    return prefix, files


def _expected(path: str) -> dict[tuple[str, str], list[str]]:
    out = {}
    for _offset, payload in RecordReader(path):
        src = DebugEvent.FromString(payload).source_file
        out[(src.host_name, src.file_path)] = list(src.lines)
    return out


def test_lines_are_read_from_the_file_when_asked(full_health: Fixture, tmp_path: Path) -> None:
    prefix, files = _copy(full_health, tmp_path)
    dump = tfdbg.read_dump_set(str(tmp_path / "dump"), prefix, files)
    want = _expected(files["source_files"])
    assert len(want) > 1 and any(len(v) > 10 for v in want.values())
    pickled = pickle.dumps(dump.source_lines)
    # The pickle names where the lines are: far smaller than the lines themselves.
    assert len(pickled) * 20 < sum(len("".join(v)) for v in want.values())
    for lines in (dump.source_lines, pickle.loads(pickled)):
        assert {k: list(v) for k, v in lines.items()} == want


def test_a_replaced_file_gives_no_lines_and_says_so(full_health: Fixture, tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    prefix, files = _copy(full_health, tmp_path)
    dump = tfdbg.read_dump_set(str(tmp_path / "dump"), prefix, files)
    path = Path(files["source_files"])
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[::-1])  # another file (another inode) under the same name
    key = next(k for k in dump.source_lines if len(_expected_lines(data, k)) > 0)
    with caplog.at_level(logging.WARNING, logger="tb_opmode.read.tfdbg"):
        assert list(dump.source_lines[key]) == []
    assert any(str(path) in r.getMessage() and "not shown" in r.getMessage() for r in caplog.records)


def _expected_lines(data: bytes, key: tuple[str, str]) -> list[str]:
    pos, out = 0, {}
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 8], "little")
        src = DebugEvent.FromString(data[pos + 12:pos + 12 + length]).source_file
        out[(src.host_name, src.file_path)] = list(src.lines)
        pos += length + 16
    return out.get(key, [])
