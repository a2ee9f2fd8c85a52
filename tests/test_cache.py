"""The on-disk cache and the fast traces reader, on dumps TF really wrote.

Cache: a hit gives the same model without reading the files; a changed file
is read again, a grown one read on from where the last read stopped; the
directory comes from TB_OPMODE_CACHE / XDG_CACHE_HOME; nothing is written into
the logdir; a corrupt cache file is ignored. Fast reader: on intact and on
damaged files, it gives exactly what the record-by-record reader gives.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import pickle
import shutil
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze import assemble
from tb_opmode.cli import main
from tb_opmode.read import cache, tfdbg
from tb_opmode.read.tfdbg import DumpSet, events, fastread, find_dump_sets, read_dump_set, tracejob, traceparts

from .conftest import dump_files

TRACES = "graph_execution_traces"


@pytest.fixture()
def cache_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("TB_OPMODE_CACHE", str(where))
    return where


def _copy_dump(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for path in dump_files(src).values():
        shutil.copy2(path, dst / path.name)
    return dst


def _only_set(directory: Path) -> tuple[str, dict[str, str]]:
    ((prefix, files),) = find_dump_sets(str(directory)).items()
    return prefix, files


def _exact(directory: Path, monkeypatch: pytest.MonkeyPatch) -> DumpSet:
    """The record-by-record reading, as a reference."""
    prefix, files = _only_set(directory)
    with monkeypatch.context() as m:
        m.setattr(tracejob, "FAST_MIN_BYTES", 1 << 62)
        m.setenv("TB_OPMODE_CACHE", "off")
        return read_dump_set(str(directory), prefix, files)


def _assert_same(a: DumpSet, b: DumpSet) -> None:
    assert a == b
    # Same first-appearance order too (dict equality ignores it).
    for name in ("traces", "trace_dtypes", "executions", "execution_sites", "graphs",
                 "stack_frames", "source_lines"):
        assert list(getattr(a, name)) == list(getattr(b, name)), name


def _summary(logdir: Path, capsys: pytest.CaptureFixture) -> dict[str, Any]:
    assert main(["summary", str(logdir), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


class _Spy:
    """Counts the file reads started: RecordReader iterations, and reads of a whole
    small file (``frame_whole``, which falls back to RecordReader: counted once)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.starts: list[tuple[str, int]] = []
        real = events.RecordReader
        real_whole = events.frame_whole
        spy = self
        fallback: set[tuple[str, int]] = set()

        def kind(path: str) -> str:
            return os.path.basename(path).rsplit(".", 1)[1]

        class Reader(real):  # type: ignore[misc, valid-type]
            def __iter__(self):  # type: ignore[no-untyped-def]
                if (self.path, self.start) in fallback:
                    fallback.discard((self.path, self.start))
                else:
                    spy.starts.append((kind(self.path), self.start))
                return super().__iter__()

        def whole(path: str, start: int = 0, reuse: bool = False):  # type: ignore[no-untyped-def]
            spy.starts.append((kind(path), start))
            found = real_whole(path, start, reuse)
            if found is None:
                fallback.add((path, start))
            return found

        # Wherever the readers of the package look them up.
        for module in (events, traceparts, fastread):
            monkeypatch.setattr(module, "RecordReader", Reader)
        for module in (events, traceparts):
            monkeypatch.setattr(module, "frame_whole", whole)


# ---------------------------------------------------------------- cache

def test_cache_hit_gives_identical_model_without_reading(
        bert_logdir: Path, cache_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    reference = _summary(bert_logdir, capsys)
    monkeypatch.setenv("TB_OPMODE_CACHE", str(cache_env))
    assert _summary(bert_logdir, capsys) == reference  # cold: fills the cache
    assert len(list(cache_env.glob("*.pickle"))) >= 3  # dump set, profile, log
    spy = _Spy(monkeypatch)

    def no_read(path: str) -> None:
        raise AssertionError(f"read {path} despite the cache")

    monkeypatch.setattr(cache, "read_profile", no_read)
    monkeypatch.setattr(cache, "read_log", no_read)
    assert _summary(bert_logdir, capsys) == reference  # warm
    assert spy.starts == []
    (warm,) = [m for m in assemble.load(str(bert_logdir)) if m.dumps]
    prefix, files = _only_set(bert_logdir)
    _assert_same(warm.dumps[0], _exact(bert_logdir, monkeypatch))


def test_changed_file_is_read_again(bert_logdir: Path, tmp_path: Path, cache_env: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    logdir = _copy_dump(bert_logdir, tmp_path / "run")
    prefix, files = _only_set(logdir)
    first = cache.cached_dump_set(str(logdir), prefix, files)
    _assert_same(first, _exact(logdir, monkeypatch))
    # Damage one record of the execution file in place: same size, new mtime.
    path = Path(files["execution"])
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10 ** 9))
    spy = _Spy(monkeypatch)
    second = cache.cached_dump_set(str(logdir), prefix, files)
    assert [kind for kind, _ in spy.starts] == ["execution"]  # the others came from the cache
    assert second.problems and second.problems != first.problems
    _assert_same(second, _exact(logdir, monkeypatch))


def _record_offsets(path: Path) -> list[int]:
    raw = path.read_bytes()
    offsets, pos = [], 0
    while pos < len(raw):
        offsets.append(pos)
        pos += struct.unpack_from("<Q", raw, pos)[0] + 16
    return offsets


def test_grown_files_are_read_on_from_the_saved_offset(
        bert_logdir: Path, tmp_path: Path, cache_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = dump_files(bert_logdir)
    logdir = _copy_dump(bert_logdir, tmp_path / "run")
    prefix, files = _only_set(logdir)
    cuts = {}
    for kind in ("execution", TRACES):
        offsets = _record_offsets(full[kind])
        cuts[kind] = offsets[len(offsets) // 2] + 30  # inside a record: a truncated tail
        Path(files[kind]).write_bytes(full[kind].read_bytes()[:cuts[kind]])
    partial = cache.cached_dump_set(str(logdir), prefix, files)
    assert sum(1 for p in partial.problems if "truncated" in p.message) == 2
    _assert_same(partial, _exact(logdir, monkeypatch))
    for kind in ("execution", TRACES):  # the run wrote on
        with open(files[kind], "ab") as f:
            f.write(full[kind].read_bytes()[cuts[kind]:])
    spy = _Spy(monkeypatch)
    grown = cache.cached_dump_set(str(logdir), prefix, files)
    starts = dict(spy.starts)
    assert set(starts) == {"execution", TRACES}
    assert all(start > 0 for start in starts.values())  # not from the beginning
    _assert_same(grown, _exact(logdir, monkeypatch))
    assert grown.problems == []


def test_cache_directory_from_environment(bert_logdir: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    prefix, files = _only_set(bert_logdir)
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path / "explicit"))
    assert cache.cache_dir() == str(tmp_path / "explicit")
    cache.cached_dump_set(str(bert_logdir), prefix, files)
    assert list((tmp_path / "explicit").glob("*.pickle"))
    monkeypatch.delenv("TB_OPMODE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == str(tmp_path / "xdg" / "tb_opmode")
    cache.cached_dump_set(str(bert_logdir), prefix, files)
    assert list((tmp_path / "xdg" / "tb_opmode").glob("*.pickle"))
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == str(tmp_path / "home" / ".cache" / "tb_opmode")
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    assert cache.cache_dir() is None
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert cache.cached_dump_set(str(bert_logdir), prefix, files).traces
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == before


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*")}


def test_nothing_is_written_into_the_logdir(bert_logdir: Path, cache_env: Path) -> None:
    before = _snapshot(bert_logdir)
    assemble.load(str(bert_logdir))
    assemble.load(str(bert_logdir))
    assert _snapshot(bert_logdir) == before
    assert list(cache_env.glob("*.pickle"))


def test_corrupt_cache_file_is_ignored(bert_logdir: Path, cache_env: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture,
                                       caplog: pytest.LogCaptureFixture) -> None:
    reference = _summary(bert_logdir, capsys)
    entries = sorted(cache_env.glob("*.pickle"))
    assert entries
    for i, entry in enumerate(entries):
        raw = entry.read_bytes()
        entry.write_bytes([b"", b"not a pickle", raw[:len(raw) // 2], raw[::-1]][i % 4])
    with caplog.at_level(logging.WARNING, logger=cache.__name__):
        assert _summary(bert_logdir, capsys) == reference
    # Not swallowed: each entry that could not be loaded is named in the log.
    named = {str(e) for e in entries if any(str(e) in r.getMessage() for r in caplog.records
                                            if "cannot load" in r.getMessage())}
    assert len(named) >= min(len(entries), 2), caplog.text
    # Rewritten: the next run is a hit again.
    spy = _Spy(monkeypatch)
    assert _summary(bert_logdir, capsys) == reference
    assert spy.starts == []


def _package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the package's sources that the cache fingerprints instead of the real one."""
    copy = tmp_path / "tb_opmode"
    shutil.copytree(Path(cache._PACKAGE_DIR), copy,
                    ignore=shutil.ignore_patterns("static", "__pycache__"))
    monkeypatch.setattr(cache, "_PACKAGE_DIR", str(copy))
    monkeypatch.setattr(cache, "_fingerprints", {})
    return copy


def test_code_fingerprint_follows_content_not_names(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit of a reader that keeps its size and mtime still makes its entries stale;
    an edit of a module that does not read the kind does not."""
    copy = _package_copy(tmp_path, monkeypatch)
    before = {kind: cache._code_fingerprint(kind) for kind in cache._READERS}
    source = copy / "read" / "textlog" / "scan.py"
    st = source.stat()
    text = source.read_text()
    edited = text.replace("from __future__ import annotations", "from __future__ import annotations"[::-1], 1)
    assert edited != text and len(edited) == len(text)
    source.write_text(edited)
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    monkeypatch.setattr(cache, "_fingerprints", {})
    after = {kind: cache._code_fingerprint(kind) for kind in cache._READERS}
    assert after["log"] != before["log"] and after["view"] != before["view"]
    assert after["dump"] == before["dump"] and after["profile"] == before["profile"]


def test_a_fingerprinted_module_that_is_gone_is_an_error(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every module the cache fingerprints exists; one renamed away fails loudly instead
    of silently leaving stale entries valid."""
    for kind, names in cache._READERS.items():
        for name in names:
            assert importlib.util.find_spec(f"tb_opmode.{name}") is not None, (kind, name)
    copy = _package_copy(tmp_path, monkeypatch)
    (copy / "read" / "xevents.py").rename(copy / "read" / "xevents_renamed.py")
    assert cache._code_fingerprint("log")  # xevents does not read logs
    with pytest.raises(FileNotFoundError):
        cache._code_fingerprint("profile")


# ---------------------------------------------------------------- fast traces reader

def _fast(directory: Path, monkeypatch: pytest.MonkeyPatch, fork: bool = True) -> DumpSet:
    prefix, files = _only_set(directory)
    with monkeypatch.context() as m:
        m.setattr(tracejob, "FAST_MIN_BYTES", 0)
        m.setattr(fastread, "_CHUNK", 64 << 10)  # many chunks even in a small file
        m.setattr(fastread, "_SYNC_LIMIT", 1 << 16)
        calls: list[tuple[int, int]] = []
        if not fork:
            m.setattr(tracejob, "_can_fork", lambda: False)
            real = tracejob._fast_range

            def fast_range(path: str, lo: int, hi: int, *args: Any) -> list[Any]:
                calls.append((lo, hi))
                return real(path, lo, hi, *args)

            m.setattr(tracejob, "_fast_range", fast_range)
        m.setenv("TB_OPMODE_CACHE", "off")
        dump = read_dump_set(str(directory), prefix, files)
        assert fork or calls  # the fast reader did run
        return dump


@pytest.mark.parametrize("fork", [True, False])
def test_fast_reader_equals_plain_reader(bert_logdir: Path, monkeypatch: pytest.MonkeyPatch,
                                         fork: bool) -> None:
    fast = _fast(bert_logdir, monkeypatch, fork)
    assert fast.traces and fast.problems == []
    _assert_same(fast, _exact(bert_logdir, monkeypatch))


def _damage(path: Path, how: str) -> None:
    raw = bytearray(path.read_bytes())
    offsets = _record_offsets(path)
    if how == "payload":       # one bad payload CRC, in each half
        for at in (offsets[len(offsets) // 4], offsets[3 * len(offsets) // 4]):
            raw[at + 40] ^= 0x01
    elif how == "length":      # a length that runs past the end: resync
        raw[offsets[2 * len(offsets) // 3] + 6] ^= 0x40
    elif how == "at_split":    # damage right where the second worker starts
        raw[offsets[len(offsets) // 2] + 2] ^= 0x10
    elif how == "truncated":
        raw = raw[:offsets[-3] + 25]
    elif how == "garbage":
        raw += bytes(range(256)) * 64
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["payload", "length", "at_split", "truncated", "garbage"])
def test_fast_reader_equals_plain_reader_on_damage(bert_logdir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    logdir = _copy_dump(bert_logdir, tmp_path / "run")
    _damage(Path(dump_files(logdir)[TRACES]), how)
    exact = _exact(logdir, monkeypatch)
    assert exact.problems
    _assert_same(_fast(logdir, monkeypatch), exact)
    _assert_same(_fast(logdir, monkeypatch, fork=False), exact)


def _spied(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, bool]]:
    """How each vector step of the fast reader ended (in this process: no fork)."""
    seen: Counter[tuple[str, bool]] = Counter()
    for name in ("predict", "check", "count"):
        real = getattr(tfdbg._KeyTable, name)

        def spy(self: Any, *args: Any, _real: Any = real, _name: str = name) -> Any:
            got = _real(self, *args)
            seen[(_name, got is not None and got is not False)] += 1
            return got

        monkeypatch.setattr(tfdbg._KeyTable, name, spy)
    monkeypatch.setattr(tracejob, "_can_fork", lambda: False)
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    return seen


def _fast_and_exact(path: Path) -> tuple[tfdbg.FileState, tfdbg.FileState]:
    state = tfdbg.read_file_states({TRACES: str(path)})[TRACES]
    reference = tfdbg.FileState(TRACES, str(path))
    tfdbg._apply(reference, [tfdbg._exact_part(str(path), 0, None)])
    return state, reference


def _assert_same_state(state: tfdbg.FileState, reference: tfdbg.FileState) -> None:
    for name in ("traces", "trace_dtypes", "trace_digests", "trace_devices"):
        got, want = getattr(state.part, name), getattr(reference.part, name)
        assert got == want and list(got) == list(want), name
    assert (state.records, state.end_offset, state.first_wall, state.last_wall) == \
        (reference.records, reference.end_offset, reference.first_wall, reference.last_wall)
    assert state.frame_problems == reference.frame_problems == []


def test_fast_reader_follows_the_cycle_of_a_training_loop_and_leaves_it(
        cnn_logdir: Path, bert_logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A traces file whose records repeat those of one run (the CNN's) for three
    windows, then another's (the BERT's). Where a window's keys repeat a cycle, the
    next window is framed and keyed as its continuation (predict, check); where the
    records change, that fails and the window is framed and keyed from scratch
    (count), and the new cycle is followed again. Counts, dtypes, digests, devices,
    their first-appearance order and the wall-time window are the record-by-record
    reader's."""
    path = tmp_path / f"mixed.{TRACES}"
    with open(path, "wb") as f:
        for logdir, size in ((cnn_logdir, 3 * tfdbg._CHUNK), (bert_logdir, 3 * tfdbg._CHUNK)):
            raw = dump_files(logdir)[TRACES].read_bytes()
            for _ in range(size // len(raw) + 1):
                f.write(raw)
    seen = _spied(monkeypatch)
    state, reference = _fast_and_exact(path)
    assert seen[("predict", True)] and seen[("check", True)], seen  # the cycle was followed
    assert seen[("predict", False)] or seen[("check", False)], seen  # and left, at the change
    assert seen[("count", True)] >= 2, seen  # each run's records keyed from scratch once
    _assert_same_state(state, reference)


def test_fast_reader_sees_a_key_changed_inside_the_cycle(bert_logdir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """One record in the middle of a repeating file names another op of the same
    length (its CRCs made right): the framing the cycle predicts holds, the keys do
    not; that record is counted under its own key, as the record-by-record reader
    counts it."""
    from tb_opmode.read.schema import DebugEvent
    from tb_opmode.read.tfrecord import RecordReader, encode_record

    path = tmp_path / f"big.{TRACES}"
    raw = dump_files(bert_logdir)[TRACES].read_bytes()
    data = bytearray(raw * (3 * tfdbg._CHUNK // len(raw) + 1))
    path.write_bytes(bytes(data))
    at, payload = next((o, p) for o, p in RecordReader(str(path)) if o >= 3 * tfdbg._CHUNK // 2)
    event = DebugEvent.FromString(payload)
    name = event.graph_execution_trace.op_name
    event.graph_execution_trace.op_name = name[:-1] + ("x" if name[-1] != "x" else "y")
    record = encode_record(event.SerializeToString())
    assert len(record) == len(payload) + 16
    data[at:at + len(record)] = record
    path.write_bytes(bytes(data))
    seen = _spied(monkeypatch)
    state, reference = _fast_and_exact(path)
    assert seen[("check", False)] and seen[("check", True)], seen
    changed = (event.graph_execution_trace.tfdbg_context_id, event.graph_execution_trace.op_name,
               event.graph_execution_trace.output_slot)
    assert reference.part.traces[changed] == 1
    _assert_same_state(state, reference)


def test_fast_reader_tells_apart_keys_of_one_hash(bert_logdir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key hashed alike (all multipliers 0): numbering by hash would count all
    records of a length as one key; the word-by-word check refuses it and the window
    is keyed one by one, with the record-by-record reader's counts."""
    path = tmp_path / f"big.{TRACES}"
    raw = dump_files(bert_logdir)[TRACES].read_bytes()
    path.write_bytes(raw * (2 * tfdbg._CHUNK // len(raw) + 1))
    real_init = tfdbg._KeyTable.__init__

    def colliding(self: Any, *args: Any) -> None:
        real_init(self, *args)
        self.mult[:] = 0

    monkeypatch.setattr(tfdbg._KeyTable, "__init__", colliding)
    seen = _spied(monkeypatch)
    state, reference = _fast_and_exact(path)
    assert seen[("count", False)] and not seen[("count", True)], seen
    assert len(reference.part.traces) > 1
    _assert_same_state(state, reference)


def test_source_lines_are_the_files_lines(bert_logdir: Path) -> None:
    """``DumpSet.source_lines`` (one string per file and where its lines end) gives the
    lines each ``source_file`` record of the dump holds, as a list would: length,
    items, negative items, slices, equality, and through a pickle (the cache)."""
    from tb_opmode.read.schema import DebugEvent
    from tb_opmode.read.tfrecord import RecordReader

    prefix, files = _only_set(bert_logdir)
    dump = read_dump_set(str(bert_logdir), prefix, files)
    want: dict[tuple[str, str], list[str]] = {}
    for _offset, payload in RecordReader(files["source_files"]):
        src = DebugEvent.FromString(payload).source_file
        want[(src.host_name, src.file_path)] = list(src.lines)
    assert list(dump.source_lines) == list(want) and len(want) > 1
    for key, lines in want.items():
        got = dump.source_lines[key]
        assert isinstance(got, tfdbg.SourceLines)
        assert got == lines and list(got) == lines and len(got) == len(lines)
        assert got[-1:] == lines[-1:] and got[1:4] == lines[1:4] and got[::-2] == lines[::-2]
        if lines:
            assert (got[0], got[-1], got[len(lines) // 2]) == (lines[0], lines[-1], lines[len(lines) // 2])
        with pytest.raises(IndexError):
            got[len(lines)]
        assert pickle.loads(pickle.dumps(got)) == got
    assert any(len(lines) > 10 for lines in want.values())


def test_oldest_entries_are_pruned(bert_logdir: Path, tmp_path: Path, cache_env: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    profile = next(bert_logdir.rglob("*.xplane.pb"))
    monkeypatch.setattr(cache, "MAX_ENTRIES", 2)
    copies = []
    for i in range(4):
        copy = tmp_path / f"p{i}" / profile.name
        copy.parent.mkdir()
        shutil.copy2(profile, copy)
        copies.append(copy)
        cache.cached_profile(str(copy))
    assert len(list(cache_env.glob("*.pickle"))) == 2
    # The newest are kept: reading the last copy again is a hit.
    monkeypatch.setattr(cache, "read_profile", lambda path: pytest.fail(f"read {path}"))
    assert cache.cached_profile(str(copies[-1])).path == str(copies[-1])
