"""``tasks.dump_tasks``'s quick scan of a ``.graphs`` file against tfdbg's full reader.

Discovery asks every dump set of a logdir of runs which cluster tasks wrote it; the
quick scan decodes only the ``debugged_device`` records. These tests take the graphs
file TF 2.21 wrote for the committed fixture, and copies of it re-framed or damaged
byte by byte, and check that the quick scan (or its fall-back to the full read) names
the same devices as ``tfdbg.read_file_states`` on every one.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from tb_opmode.plugin.pool import Worker
from tb_opmode.plugin.run_store import RunStore
from tb_opmode.read import tasks
from tb_opmode.read.discover import discover
from tb_opmode.read.memo import memo
from tb_opmode.read.schema import DebugEvent
from tb_opmode.read.tfdbg import read_file_states
from tb_opmode.read.tfrecord import RecordReader, encode_record

from .conftest import Fixture


def _graphs(fixture: Fixture) -> Path:
    (path,) = fixture.directory.glob("*.graphs")
    return path


def _full_devices(path: Path) -> list[str]:
    return list(read_file_states({"graphs": str(path)})["graphs"].part.devices.values())


def _payloads(path: Path) -> list[bytes]:
    return [payload for _offset, payload in RecordReader(str(path))]


def test_quick_scan_names_the_devices_the_full_reader_does(full_health: Fixture) -> None:
    path = _graphs(full_health)
    quick = tasks._device_names(str(path))
    assert quick is not None, "an intact file written by TF takes the quick path"
    assert quick == _full_devices(path)
    assert quick and all("/job:localhost/" in d for d in quick)
    assert tasks.dump_tasks({"graphs": str(path)}) == frozenset({"localhost:0"})


def test_cluster_device_names_come_out_as_tasks(full_health: Fixture, tmp_path: Path) -> None:
    """The fixture's records re-framed with its device records renamed as a worker
    task's (what a MultiWorkerMirroredStrategy process records)."""
    out = bytearray()
    renamed = 0
    for payload in _payloads(_graphs(full_health)):
        event = DebugEvent.FromString(payload)
        if event.WhichOneof("what") == "debugged_device":
            event.debugged_device.device_name = "/job:worker/replica:0/task:3/device:CPU:0"
            payload = event.SerializeToString()
            renamed += 1
        out += encode_record(payload)
    assert renamed
    path = tmp_path / "tfdbg_events.1.vm.graphs"
    path.write_bytes(bytes(out))
    assert tasks._device_names(str(path)) == _full_devices(path)
    assert tasks.dump_tasks({"graphs": str(path)}) == frozenset({"worker:3"})


def _damaged(source: Path, tmp_path: Path, name: str, edit: str) -> Path:
    data = bytearray(source.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 0)
    device_at = None
    pos = 0
    for payload in _payloads(source):
        if DebugEvent.FromString(payload).WhichOneof("what") == "debugged_device":
            device_at = pos
            break
        pos += 16 + len(payload)
    assert device_at is not None
    if edit == "length":         # the first record's length: its header CRC no longer holds
        data[3] ^= 0x40
    elif edit == "device":       # inside the first device record's payload
        data[device_at + 12 + 20] ^= 0x01
    elif edit == "other":        # inside the first record's payload (not a device record)
        data[12 + length // 2] ^= 0x01
    elif edit == "cut":          # a file still being written: its last record cut short
        del data[-7:]
    path = tmp_path / name / source.name
    path.parent.mkdir()
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("edit", ["length", "device", "other", "cut"])
def test_damaged_files_name_what_the_full_reader_names(full_health: Fixture, tmp_path: Path,
                                                       edit: str) -> None:
    path = _damaged(_graphs(full_health), tmp_path, edit, edit)
    full = _full_devices(path)
    want = frozenset(t for t in map(tasks.task_of, full) if t)
    assert tasks.dump_tasks({"graphs": str(path)}) == want
    if edit == "device":  # the damaged device record is skipped by both: none left here
        assert tasks._device_names(str(path)) in (None, full)


def _renamed_graphs(source: Path, target: Path, device: str) -> None:
    """``source`` (a ``.graphs`` file) re-framed into ``target`` with its device records
    renamed to ``device``."""
    out = bytearray()
    for payload in _payloads(source):
        event = DebugEvent.FromString(payload)
        if event.WhichOneof("what") == "debugged_device":
            event.debugged_device.device_name = device
            payload = event.SerializeToString()
        out += encode_record(payload)
    target.write_bytes(bytes(out))


def test_the_plugins_workers_scan_as_discovery_does(full_health: Fixture, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A logdir of runs whose tasks the plugin's load workers read (``RunStore._read_cluster_tasks``
    as discovery's ``scan``): the same runs as discovery reading each itself, local runs
    apart and the two workers of a cluster job as one run; every file read by the
    workers, in one scan."""
    logdir = tmp_path / "logdir"
    dump = sorted(full_health.directory.glob("tfdbg_events.*"))
    for name in [f"run_{i}" for i in range(4)] + ["job/worker0", "job/worker1"]:
        (logdir / name).mkdir(parents=True)
        for path in dump:
            shutil.copyfile(path, logdir / name / path.name)
    for task in (0, 1):
        (graphs,) = (logdir / f"job/worker{task}").glob("*.graphs")
        _renamed_graphs(_graphs(full_health), graphs, f"/job:worker/replica:0/task:{task}/device:CPU:0")
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path / "cache"))
    memo.clear()
    store = RunStore(str(logdir))
    monkeypatch.setattr(store, "WORKERS", 2)
    monkeypatch.setattr(store, "SCAN_IN_WORKERS", 2)
    monkeypatch.setattr(store, "SCAN_CHUNK", 4)
    scans: list[list[str]] = []
    sent: list[int] = []

    def scan(paths: list[str]) -> list[frozenset[str]]:
        scans.append(list(paths))
        return store._read_cluster_tasks(paths)

    real_send = Worker.send_tasks
    monkeypatch.setattr(Worker, "send_tasks", lambda self, paths: (sent.append(len(paths)),
                                                                     real_send(self, paths))[1])
    try:
        by_workers = discover(str(logdir), scan=scan)
    finally:
        store.close()  # stops the workers the scan started, warm ones too
    assert store._pool.workers == [] and store._pool.warm == []
    assert [len(s) for s in scans] == [6] and sorted(sent) == [2, 4]
    memo.clear()
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    alone = discover(str(logdir))
    assert [(r.name, sorted(r.dump_sets)) for r in by_workers] == \
        [(r.name, sorted(r.dump_sets)) for r in alone]
    assert [r.name for r in alone] == ["job", "run_0", "run_1", "run_2", "run_3"]
    assert len(alone[0].dump_sets) == 2
