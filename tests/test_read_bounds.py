"""Reading damaged and changing files within bounds.

In: the ``cnn_logdir`` session fixture's real tfdbg2 dump; big traces files made by
repeating its real records (each copy is a valid run of records), damaged or cut
short on purpose. Out: assertions that the search for the next intact record after
damage holds a bounded window whatever the file's size (peak memory measured in a
child process, against the file's size) with exactly the records and problems the
whole-file search gave, and that a file cut short while it is being read is read
again, or named in a warning, rather than counted half old, half new.
"""
from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tb_opmode.read import tfdbg, tfrecord
from tb_opmode.read.tfrecord import RecordReader

from .conftest import dump_files

ROOT = Path(__file__).resolve().parent.parent
TRACES = "graph_execution_traces"


def _records(path: Path) -> list[tuple[int, bytes]]:
    reader = RecordReader(str(path))
    got = list(reader)
    assert reader.problems == []
    return got


def _repeated(src: Path, dst: Path, size: int) -> int:
    """``dst``: the records of ``src`` repeated to at least ``size`` bytes; returns
    how many records it holds."""
    raw = src.read_bytes()
    copies = size // len(raw) + 1
    with open(dst, "wb") as f:
        for _ in range(copies):
            f.write(raw)
    return copies * len(_records(src))


# ---------------------------------------------------------------- 2. bounded resync

RSS_SCRIPT = r"""
import resource, sys
import numpy  # imported by the search anyway: its own size is not the reading's
from tb_opmode.read.tfrecord import RecordReader
from tb_opmode.read.tfdbg import read_file_states
path, how = sys.argv[1], sys.argv[2]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if how == "reader":
    reader = RecordReader(path)
    n = sum(1 for _ in reader)
    problems = reader.problems
else:  # the dump reader: the fast trace path, then the exact reader where damaged
    state = read_file_states({"graph_execution_traces": path})["graph_execution_traces"]
    n, problems = state.records, state.read_problems + state.frame_problems
# The dump reader forks workers for the halves of a big traces file: a child's peak
# counts too (its RSS starts as this process's, so ``before`` is its base as well).
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(peak - before, n)
for p in problems:
    print(p.offset, p.message)
"""


def _read_in_child(path: Path, how: str) -> tuple[int, int, list[tuple[int, str]]]:
    """(peak RSS growth in bytes, records read, problems) of reading ``path`` in a fresh
    process (and its workers), where ru_maxrss is this read's peak alone."""
    proc = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(path), how],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    grown_kb, n = map(int, lines[0].split())
    problems = [(int(off), msg) for off, msg in (line.split(" ", 1) for line in lines[1:])]
    return grown_kb * 1024, n, problems


@pytest.mark.parametrize("how", ["reader", "dump"])
def test_damaged_big_file_is_resynced_in_bounded_memory(cnn_logdir: Path, tmp_path: Path,
                                                        how: str) -> None:
    """One flipped length byte near the start of a 64 MB traces file. Before, the search
    for the next intact record read the rest of the file at once: peak memory grew by
    more than the file's size (80 MB here); now it stays that of intact reading."""
    src = dump_files(cnn_logdir)[TRACES]
    path = tmp_path / src.name
    size = 64 << 20
    total = _repeated(src, path, size)
    first = _records(src)
    damaged = first[3][0]  # the fourth record: its length's low byte flipped
    with open(path, "r+b") as f:
        f.seek(damaged)
        byte = f.read(1)[0]
        f.seek(damaged)
        f.write(bytes([byte ^ 0x04]))
    grown, n, problems = _read_in_child(path, how)
    assert n == total - 1
    skipped = first[4][0] - damaged
    assert problems == [(damaged, f"bad length checksum; skipped {skipped} bytes to the next "
                                  "intact record")]
    assert grown < size // 2, f"peak RSS grew by {grown >> 20} MB reading a {size >> 20} MB file"


def _damage(raw: bytes, offsets: list[int], seed: int) -> bytes:
    """``raw`` with flipped bits, cut-out and inserted bytes (garbage, zeros, a copy of
    a record's header) at a few places: every path of the search for the next record."""
    rng = random.Random(seed)
    data = bytearray(raw)
    for _ in range(6):
        at = rng.choice(offsets) + rng.randrange(0, 40)
        what = rng.randrange(4)
        if what == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif what == 1:
            del data[at:at + rng.randint(1, 600)]
        elif what == 2:
            data[at:at] = rng.randbytes(rng.randint(1, 5000))
        else:
            data[at:at] = bytes(rng.randint(1, 700))
    return bytes(data)


@pytest.mark.parametrize("seed", range(6))
def test_windowed_resync_finds_what_the_whole_file_search_found(
        cnn_logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """The same damaged real file read with windows far smaller than its records'
    spacing and with one window holding the whole file (what the search saw before):
    the same records, problems (offsets and bytes skipped) and end offset."""
    src = dump_files(cnn_logdir)["execution"]
    path = tmp_path / src.name
    offsets = [off for off, _ in _records(src)]
    path.write_bytes(_damage(src.read_bytes(), offsets, seed))

    def read(window: int, start: int = 0, stop: int | None = None) -> tuple:
        monkeypatch.setattr(tfrecord, "_WINDOW", window)
        reader = RecordReader(str(path), start=start, stop=stop)
        got = list(reader)
        return got, reader.problems, reader.end_offset, reader.truncated

    whole = read(1 << 30)
    assert whole[1], "the damage is seen"
    for window in (64, 1000, 4096, 70000):
        assert read(window) == whole, window
    size = path.stat().st_size
    assert read(333, size // 3, 2 * size // 3) == read(1 << 30, size // 3, 2 * size // 3)


# ---------------------------------------------------------------- 3. cut short while read

# Runs ``tb_opmode`` in a child whose os.pread and os.preadv (the fast trace reader
# reads its windows into one buffer with preadv) change the traces file at the second
# read of every process (the forked workers too), from another thread: a file cut
# short, or replaced, in the middle of being read.
CHANGE_SCRIPT = r"""
import io, os, shutil, sys, threading
from tb_opmode.read import tfdbg
from tb_opmode.cli import main
path, how, keep, spare, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
real_pread, real_preadv = os.pread, os.preadv
calls = [0]

def change():
    if how == "cut":
        os.truncate(path, keep)
    else:  # replaced, each time, by a fresh copy of the same bytes: a new inode
        tmp = f"{path}.{os.getpid()}.{calls[0]}"
        shutil.copyfile(spare, tmp)
        os.replace(tmp, path)

def maybe_change():
    calls[0] += 1
    if calls[0] % 2 == 0 and (how != "cut" or os.path.getsize(path) > keep):
        t = threading.Thread(target=change)
        t.start()
        t.join()

def pread(fd, n, offset):
    maybe_change()
    return real_pread(fd, n, offset)

def preadv(fd, buffers, offset):
    maybe_change()
    return real_preadv(fd, buffers, offset)

os.pread, os.preadv = pread, preadv
if mode == "states":
    state = tfdbg.read_file_states({"graph_execution_traces": path})["graph_execution_traces"]
    print(state.records, sum(state.part.traces.values()))
    for p in state.read_problems + state.frame_problems:
        print(p.offset, p.message)
else:
    out, err = io.StringIO(), io.StringIO()
    code = main(["summary", os.path.dirname(path), "--format", "json"], stdout=out, stderr=err)
    print(code)
    sys.stdout.write(err.getvalue())
"""


def _change_in_child(path: Path, how: str, keep: int, spare: Path, mode: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", CHANGE_SCRIPT, str(path), how, str(keep),
                           str(spare), mode], capture_output=True, text=True, timeout=300,
                          cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


def test_traces_file_cut_short_while_read_is_read_again(cnn_logdir: Path, tmp_path: Path) -> None:
    """Cut to its first 16 records in the middle of the fast read. Before, the counts
    were those of the windows read before the cut (tens of thousands of records, of a
    file then holding 16), with no warning; now the file is read again and counted as
    it is."""
    src = dump_files(cnn_logdir)[TRACES]
    path = tmp_path / src.name
    _repeated(src, path, 40 << 20)
    spare = tmp_path / "spare"
    first = _records(src)
    keep = first[16][0]
    lines = _change_in_child(path, "cut", keep, spare, "states")
    assert path.stat().st_size == keep, "the file was cut while being read"
    records, traced = map(int, lines[0].split())
    assert (records, traced) == (16, 16)
    assert lines[1:] == []


def test_traces_file_changing_on_every_read_is_warned_about(cnn_logdir: Path,
                                                            tmp_path: Path) -> None:
    """Replaced by another file in the middle of the read, and again in the middle of
    reading it again: the warning names the file; the exit status stays 0."""
    for kind, src in dump_files(cnn_logdir).items():
        if kind != TRACES:
            shutil.copyfile(src, tmp_path / src.name)
    src = dump_files(cnn_logdir)[TRACES]
    path = tmp_path / src.name
    spare = tmp_path.parent / f"{tmp_path.name}.spare"
    _repeated(src, spare, 40 << 20)
    shutil.copyfile(spare, path)
    lines = _change_in_child(path, "replace", 0, spare, "cli")
    assert lines[0] == "0"
    warned = [line for line in lines[1:] if "changed while being read" in line]
    assert warned == [f"tb-opmode: warning: .: {path.name}: byte 0: changed while being read "
                      "(replaced by another file; read again, it changed again): counts may "
                      "be mixed"], lines


def test_damage_at_the_start_keeps_the_fast_reader(cnn_logdir: Path, tmp_path: Path) -> None:
    """A flipped byte in the first record of a big traces file. Before, the fast reader
    learnt the records' layout from the first record only, so it gave up and the whole
    file was decoded record by record (a 256 MB file: 10 s, against 1 s intact); and any
    window that failed to verify handed the rest of its half to the exact reader. Now
    the layout comes from the first intact record and only the damaged window is read
    exactly; the counts are the exact reader's."""
    src = dump_files(cnn_logdir)[TRACES]
    path = tmp_path / src.name
    total = _repeated(src, path, 40 << 20)
    first = _records(src)
    with open(path, "r+b") as f:
        f.seek(40)  # inside the first record's payload
        byte = f.read(1)[0]
        f.seek(40)
        f.write(bytes([byte ^ 0x01]))
    size = path.stat().st_size
    payload = tfdbg._first_payload(str(path), 0)
    assert payload == first[1][1]
    tail = tfdbg._trace_tail(payload)
    assert tail is not None
    parts = tfdbg._fast_range(str(path), 0, size, size, tail, False)
    exact = [p for p in parts if not p.fast]
    assert sum(p.stop - p.start for p in exact) <= 2 * tfdbg._CHUNK
    assert sum(p.records for p in parts) == total - 1
    problems = [(p.offset, p.message) for part in parts for p in part.frame_problems]
    assert problems == [(0, f"bad payload checksum; record of {len(first[0][1])} bytes skipped")]
    state = tfdbg.read_file_states({TRACES: str(path)})[TRACES]
    reference = tfdbg.FileState(TRACES, str(path))
    tfdbg._apply(reference, [tfdbg._exact_part(str(path), 0, None)])
    assert state.part.traces == reference.part.traces and state.records == total - 1
    assert state.frame_problems == reference.frame_problems
