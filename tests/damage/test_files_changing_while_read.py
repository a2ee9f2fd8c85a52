"""Files growing or shrinking while they are read: each read is a consistent
prefix, never an exception or a crash.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from tb_opmode.read import textlog, tfdbg
from tb_opmode.read.tfdbg import find_dump_sets, read_dump_set
from tb_opmode.read.tfrecord import RecordReader

from .helpers import (
    ROOT,
    BigTraces,
    Dump,
    _grow,
    _write,
    tf_event,
)


def test_record_file_growing_while_read_gives_consistent_prefixes(dump: Dump, tmp_path: Path) -> None:
    """A thread writes a real .execution file in random pieces (records cut anywhere)
    while we read it over and over: each read is a prefix of the intact records,
    a cut record at the end is a 'truncated' warning at its offset, never an
    exception; reading on from ``end_offset`` later gives exactly the rest."""
    intact = dump.records["execution"]
    path = tmp_path / "growing.execution"
    path.write_bytes(b"")
    done = threading.Event()
    writer = threading.Thread(target=_grow, args=(path, dump.raw["execution"], done, 1, 4000))
    writer.start()
    reads = partial_reads = 0
    resumed: list[tuple[int, bytes]] = []
    resume_at = 0
    try:
        while not done.is_set() or reads == 0:
            reader = RecordReader(str(path))
            got = list(reader)
            reads += 1
            assert got == intact[:len(got)]
            for problem in reader.problems:
                assert problem.offset == reader.end_offset and "truncated" in problem.message
            partial_reads += bool(reader.problems)
            # Incremental reading from the last end offset only ever adds the next records.
            more_reader = RecordReader(str(path), start=resume_at)
            more = list(more_reader)
            assert more == intact[len(resumed):len(resumed) + len(more)]
            resumed += more
            resume_at = more_reader.end_offset
    finally:
        writer.join()
    final = RecordReader(str(path))
    assert list(final) == intact and final.problems == []
    resumed += list(RecordReader(str(path), start=resume_at))
    assert resumed == intact
    assert reads > 5 and partial_reads > 0



def _reads_while_growing(directory: Path, path: Path, data: bytes, seed: int, max_chunk: int,
                         counter: str, keys: list[Any]) -> int:
    """Read the dump set in ``directory`` again and again, at least once, while a
    thread appends ``data`` to ``path`` (``_grow``). Each read must count exactly a
    prefix of ``keys`` in its ``counter`` (``executions`` or ``traces``) and report
    nothing but a truncated tail. Returns how many reads were made."""
    done = threading.Event()
    writer = threading.Thread(target=_grow, args=(path, data, done, seed, max_chunk))
    writer.start()
    reads = 0
    try:
        while not done.is_set() or reads == 0:
            ((prefix, found),) = find_dump_sets(str(directory)).items()
            ds = read_dump_set(str(directory), prefix, found)
            counts = getattr(ds, counter)
            assert counts == Counter(keys[:sum(counts.values())])
            assert all("truncated" in p.message for p in ds.problems)
            reads += 1
    finally:
        writer.join()
    return reads


def test_dump_set_growing_while_read(dump: Dump, tmp_path: Path) -> None:
    """The same through the dump-set reader: counts are those of a prefix of the
    execution records, whatever moment the read happens at."""
    dump.copy_to(tmp_path, skip=("execution",))
    path = tmp_path / dump.paths["execution"].name
    path.write_bytes(b"")
    keys = []
    for _, payload in dump.records["execution"]:
        ex = tf_event(payload).execution
        keys.append((ex.op_type, ex.graph_id))
    assert _reads_while_growing(tmp_path, path, dump.raw["execution"], 2, 20000, "executions", keys) > 2


def test_big_traces_file_growing_while_read(dump: Dump, big: BigTraces, tmp_path: Path) -> None:
    """The fast reader on a traces file being written: each read counts a prefix."""
    dump.copy_to(tmp_path, skip=("graph_execution_traces",))
    path = tmp_path / dump.paths["graph_execution_traces"].name
    path.write_bytes(big.raw[:len(big.raw) // 2])  # start big enough for the fast path
    keys = [(t.tfdbg_context_id, t.op_name, t.output_slot) for t in big.traces]
    assert _reads_while_growing(tmp_path, path, big.raw[len(big.raw) // 2:], 4, 200000, "traces", keys) > 0
    ((prefix, found),) = find_dump_sets(str(tmp_path)).items()
    ds = read_dump_set(str(tmp_path), prefix, found)
    assert ds.traces == Counter(keys) and ds.problems == []


def test_text_log_growing_while_read(cnn_logdir: Path, tmp_path: Path) -> None:
    """A log read while a thread appends to it: the facts are exactly those of the
    bytes read so far (``bytes_read``), a cut last line is a warning."""
    data = (cnn_logdir / "tf_log.txt").read_bytes()[:3 << 20]
    path = tmp_path / "growing.log"
    path.write_bytes(b"")
    done = threading.Event()
    writer = threading.Thread(target=_grow, args=(path, data, done, 3, 60000))
    writer.start()
    snapshot = tmp_path / "snapshot.log"
    reads = []
    try:
        while not done.is_set():
            facts = textlog.read_log(str(path))
            reads.append(facts.bytes_read)
            snapshot.write_bytes(data[:facts.bytes_read])
            same = textlog.read_log(str(snapshot))
            for name in ("eager_dispatch", "eager_kernels", "graph_kernels", "graph_executions",
                         "onednn_primitives", "onednn_time_ms", "lines"):
                assert getattr(facts, name) == getattr(same, name), name
    finally:
        writer.join()
    assert len(reads) > 2 and any(0 < b < len(data) for b in reads)


def test_cut_last_line_invents_no_time_or_dtype(cnn_logdir: Path, tmp_path: Path) -> None:
    """The last line of a log still being written, cut inside a oneDNN time or a
    T= attr: the primitive or node counts, but no cut number or dtype is taken."""
    data = (cnn_logdir / "tf_log.txt").read_bytes()
    lines = data.splitlines(keepends=True)
    def cuttable(x: bytes) -> bool:
        if not (x.startswith(b"onednn_verbose,") and b",exec," in x):
            return False
        last = x.rstrip(b"\n").rsplit(b",", 1)[1]
        try:
            return float(last[:-1]) > 0 and float(last[:-1]) != float(last)
        except ValueError:
            return False

    verbose = next(i for i, x in enumerate(lines) if cuttable(x))
    head = b"".join(lines[:verbose])
    whole = textlog.read_log(_write(tmp_path / "a.log", head))
    line = lines[verbose].rstrip(b"\n")
    last = line.rsplit(b",", 1)[1]
    kept = last[:-1]   # "0.012" of "0.0123": a number, but not the one oneDNN printed
    assert float(kept) > 0 and float(kept) != float(last), line
    facts = textlog.read_log(_write(tmp_path / "b.log", head + line[:-1]))
    assert sum(facts.onednn_primitives.values()) == sum(whole.onednn_primitives.values()) + 1
    assert facts.onednn_time_ms == whole.onednn_time_ms
    assert any("no newline" in p.message for p in facts.problems)

    node = next(x for x in lines if b"Process node:" in x and b"T=DT_FLOAT," in x
                and b" step -1 " not in x and b"}} = _Retval[" not in x and b"}} = _Arg[" not in x)
    cut = node[:node.index(b"T=DT_FLOAT,") + len(b"T=DT_FL")]
    facts = textlog.read_log(_write(tmp_path / "c.log", cut))
    assert facts.graph_kernels and all(dtype in ("", "DT_FLOAT") for _, dtype in facts.graph_kernels.values())
    assert "DT_FL" not in {d for _, d in facts.graph_kernels.values()}


SHRINK_SCRIPT = r"""
import os, sys
from tb_opmode.read.tfrecord import RecordReader
path = sys.argv[1]
reader = RecordReader(path)
it = iter(reader)
next(it)
os.truncate(path, 0)          # the file is replaced or truncated under the reader
n = sum(1 for _ in it)
print("read", n, "more; problems:", len(reader.problems))
"""


def test_file_shrinking_while_read_does_not_kill_the_process(dump: Dump, tmp_path: Path) -> None:
    path = tmp_path / "shrinking.execution"
    path.write_bytes(dump.raw["execution"])
    proc = subprocess.run([sys.executable, "-c", SHRINK_SCRIPT, str(path)], check=False, capture_output=True,
                          timeout=60, cwd=str(ROOT))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])


FAST_SHRINK_SCRIPT = r"""
import os, sys
from tb_opmode.read import tfdbg
from tb_opmode.read.tfrecord import RecordReader
path = sys.argv[1]
size = os.path.getsize(path)
tail = tfdbg._trace_tail(tfdbg._first_payload(path, 0))
os.truncate(path, size * 6 // 10 + 5)   # cut short after the reader sized it, mid-record
parts = tfdbg._fast_range(path, 0, size, size, tail, False)
intact = sum(1 for _ in RecordReader(path))
print(sum(p.records for p in parts), intact, sum(p.fast for p in parts))
"""


def test_traces_file_shrinking_under_the_fast_reader(dump: Dump, tmp_path: Path) -> None:
    """The fast trace reader (in TensorBoard's own process) reads windows with pread: a
    file cut short after it was sized gives a short read, not SIGBUS (a mapping) or an
    exception, and every record still intact is counted."""
    path = tmp_path / "big.graph_execution_traces"
    raw = dump.raw["graph_execution_traces"]
    path.write_bytes(raw * (tfdbg.FAST_MIN_BYTES * 2 // len(raw) + 1))
    proc = subprocess.run([sys.executable, "-c", FAST_SHRINK_SCRIPT, str(path)], check=False, capture_output=True,
                          timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    counted, intact, fast = map(int, proc.stdout.split())
    assert counted == intact > 0 and fast == 1


# ---------------------------------------------------------------- text logs: size and garbage


