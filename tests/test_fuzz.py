"""Property-based fuzzing (hypothesis) of every reader of untrusted bytes.

Targets: the TFRecord framing (``RecordReader``), the tfdbg2 protobuf reading
(``read_dump_set`` on files of fuzzed, re-framed DebugEvent payloads), the
XPlane reader (``read_profile``) and the text-log parser (``parse_lines`` /
``read_log``). Inputs: arbitrary bytes, and real files TensorFlow wrote (the
``cnn_logdir`` session fixture, the real-line fixtures in tests/data) mutated
by flips, overwrites, insertions, deletions and cuts. Properties: no exception
other than the documented ones (``read_log``: OSError only when the file
cannot be opened), no hang (hypothesis ``deadline`` per input), only intact
data yielded, and what was intact before a mutation is still read after it.

The default run is short and derandomized (the same inputs every time, a few
seconds in all). The long run draws fresh random inputs, many more of them::

    pytest -m slow tests/test_fuzz.py
    TB_OPMODE_FUZZ_EXAMPLES=20000 pytest -m slow tests/test_fuzz.py -k record
"""
from __future__ import annotations

import os
import struct
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import google_crc32c
import pytest
from google.protobuf.internal.encoder import _VarintBytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tb_opmode.read import textlog, xevents
from tb_opmode.read.schema import DebugEvent, XSpace
from tb_opmode.read.textlog import LogFacts, parse_lines, read_log, scan
from tb_opmode.read.tfdbg import find_dump_sets, read_dump_set
from tb_opmode.read.tfrecord import Problem, RecordReader, encode_record
from tb_opmode.read.xplane import read_profile

from .conftest import dump_files
from .xplane_reference import reference_profile, reference_tally

DATA = Path(__file__).resolve().parent / "data"
_CHECKS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
           HealthCheck.data_too_large, HealthCheck.filter_too_much]

# Short, the same inputs on every run: part of the default suite.
FAST = settings(max_examples=40, deadline=timedelta(seconds=5), derandomize=True,
                database=None, suppress_health_check=_CHECKS, print_blob=True)
# Long, fresh inputs each run: by hand (pytest -m slow).
SLOW = settings(max_examples=int(os.environ.get("TB_OPMODE_FUZZ_EXAMPLES", "3000")),
                deadline=timedelta(seconds=20), database=None,
                suppress_health_check=_CHECKS, print_blob=True)


def both(prop: Callable[..., Any], **strategies: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The property ``prop`` over ``strategies`` as a short default test and a long
    ``slow`` one (two separate hypothesis tests, each with its own settings)."""
    fast = FAST(given(**strategies)(prop))
    slow = pytest.mark.slow(SLOW(given(**strategies)(prop)))
    return fast, slow


# ---------------------------------------------------------------- shared inputs

def _crc(data: bytes) -> int:
    """Masked CRC32C, written out here rather than imported from the code under test."""
    c = google_crc32c.value(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _frames(raw: bytes) -> list[tuple[int, int]]:
    """(offset, end) of every record of an intact file."""
    out, pos = [], 0
    while pos < len(raw):
        (n,) = struct.unpack_from("<Q", raw, pos)
        out.append((pos, pos + 16 + n))
        pos += 16 + n
    return out


def _valid_frame_at(data: bytes, offset: int, payload: bytes) -> bool:
    if offset < 0 or offset + 16 + len(payload) > len(data):
        return False
    header = data[offset:offset + 8]
    (n,) = struct.unpack("<Q", header)
    end = offset + 12 + n
    return (n == len(payload) and struct.unpack_from("<I", data, offset + 8)[0] == _crc(header)
            and data[offset + 12:end] == payload
            and struct.unpack_from("<I", data, end)[0] == _crc(payload))


class _Inputs(dict):
    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return "<real inputs from cnn_logdir>"


@pytest.fixture(scope="module")
def real(cnn_logdir: Path) -> dict[str, Any]:
    """Small real inputs: the first records of each dump file, a profile, log lines."""
    out: dict[str, Any] = _Inputs(records={})
    for kind, path in dump_files(cnn_logdir).items():
        raw = path.read_bytes()
        frames = _frames(raw)
        keep = [f for f in frames if f[1] <= 24000][:60] or frames[:1]
        out["records"][kind] = [raw[a + 12:b - 4] for a, b in keep]
        out.setdefault("files", {})[kind] = raw[:keep[-1][1]]
    (profile,) = cnn_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
    out["profile"] = profile.read_bytes()
    lines = []
    for name in ("vlog_tf221.txt", "vlog_tf213.txt"):
        lines += (DATA / name).read_bytes().splitlines()
    lines += (cnn_logdir / "tf_log.txt").read_bytes().splitlines()[:3000:7]
    out["lines"] = lines
    return out


@st.composite
def mutation(draw: Any, data: bytes) -> tuple[bytes, int, int, int]:
    """One mutation of ``data``: (new bytes, start, end of the damaged span in the old
    bytes, length of what replaced it)."""
    size = len(data)
    kind = draw(st.sampled_from(["flip", "overwrite", "insert", "delete", "truncate"]
                                if size else ["insert"]))
    at = draw(st.integers(0, max(size - 1, 0)))
    if kind == "flip":
        bit = draw(st.integers(0, 7))
        new = bytearray(data)
        new[at] ^= 1 << bit
        return bytes(new), at, at + 1, 1
    if kind == "overwrite":
        junk = draw(st.binary(min_size=1, max_size=64))
        end = min(size, at + len(junk))
        return data[:at] + junk[:end - at] + data[end:], at, end, end - at
    if kind == "insert":
        junk = draw(st.binary(min_size=1, max_size=64))
        return data[:at] + junk + data[at:], at, at, len(junk)
    if kind == "delete":
        n = draw(st.integers(1, 64))
        return data[:at] + data[at + n:], at, min(size, at + n), 0
    return data[:at], at, size, 0


# ---------------------------------------------------------------- TFRecord framing

def _read_all(tmp: Path, data: bytes) -> tuple[list[tuple[int, bytes]], RecordReader]:
    path = tmp / "fuzz.tfrecord"
    path.write_bytes(data)
    reader = RecordReader(str(path))
    return list(reader), reader


def _check_reader_output(data: bytes, got: list[tuple[int, bytes]], reader: RecordReader) -> None:
    last_end = 0
    for offset, payload in got:
        assert offset >= last_end, "records overlap or go backwards"
        assert _valid_frame_at(data, offset, payload), "yielded a payload that is not CRC-valid"
        last_end = offset + 16 + len(payload)
    assert reader.records == len(got)
    assert last_end <= reader.end_offset <= len(data) or not got
    for p in reader.problems:
        assert isinstance(p, Problem) and 0 <= p.offset <= len(data) and p.message


def _record_reader_arbitrary(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tmp = tmp_path_factory.mktemp("rr", numbered=True)
    got, reader = _read_all(tmp, data)
    _check_reader_output(data, got, reader)


test_record_reader_arbitrary_bytes, test_record_reader_arbitrary_bytes_long = both(
    _record_reader_arbitrary, data=st.binary(max_size=4096) | st.builds(
        lambda payloads, junk: b"".join(encode_record(p) for p in payloads) + junk,
        st.lists(st.binary(max_size=64), max_size=8), st.binary(max_size=32)))


def _record_reader_mutated(real: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
                           data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(sorted(real["files"])))
    base = real["files"][kind]
    new, start, end, inserted = data.draw(mutation(base))
    tmp = tmp_path_factory.mktemp("rm", numbered=True)
    got, reader = _read_all(tmp, new)
    _check_reader_output(new, got, reader)
    # Everything the mutation did not touch is still read: records wholly before the
    # damaged span, and those wholly after it (shifted by the size change). Known gap
    # (damage/test_record_framing.test_record_after_a_wrong_length_is_kept, xfail): when bytes go
    # missing inside a payload or its CRC, the reader trusts the old length and also
    # loses the next record; that one record is not required here.
    shift = inserted - (end - start)
    payloads = {p for _, p in got}
    offsets = {o for o, _ in got}
    frames = _frames(base)
    exempt = -1
    if shift < 0 and any(a + 12 <= start < b for a, b in frames):
        exempt = next((a for a, _ in frames if a >= end), -1)
    for a, b in frames:
        if a == exempt:
            continue
        if b <= start or a >= end:
            if b <= start:
                assert a in offsets, f"intact record at {a} (before the damage at {start}) lost"
            else:
                assert a + shift in offsets, f"intact record at {a} (after the damage) lost"
            assert base[a + 12:b - 4] in payloads
    if start == end and inserted == 0:
        assert len(got) == len(_frames(base))
    # Damage anywhere is reported (unless it only cut the file at a record boundary).
    if len(got) < len(_frames(base)) and not (new == base[:start] and start in
                                              {a for a, _ in _frames(base)} | {len(base)}):
        assert reader.problems


test_record_reader_mutated_real_files, test_record_reader_mutated_real_files_long = both(
    _record_reader_mutated, data=st.data())


# ---------------------------------------------------------------- DebugEvent payloads (tfdbg)

@st.composite
def payload_mutation(draw: Any, payload: bytes) -> bytes:
    if not payload:
        return draw(st.binary(max_size=32))
    new, _s, _e, _i = draw(mutation(payload))
    if draw(st.booleans()):  # and maybe a second one
        new, _s, _e, _i = draw(mutation(new or b"\x00"))
    return new


def _dump_dir(tmp: Path, files: dict[str, bytes]) -> Path:
    for kind, data in files.items():
        (tmp / f"tfdbg_events.1700000000.fuzzhost.{kind}").write_bytes(data)
    return tmp


def _read_dump(tmp: Path) -> Any:
    ((prefix, found),) = find_dump_sets(str(tmp)).items()
    return read_dump_set(str(tmp), prefix, found)


def _check_dump(ds: Any, files: dict[str, bytes]) -> None:
    """Well-formed results, and nothing named that the files do not hold."""
    everything = b"".join(files.values())
    for (op_type, graph_id), n in ds.executions.items():
        assert n > 0 and op_type.encode() in everything and graph_id.encode() in everything
    for (context, op_name, slot), n in ds.traces.items():
        assert n > 0 and op_name.encode() in everything and context.encode() in everything
        assert isinstance(slot, int)
    for graph in ds.graphs.values():
        for name, op in graph.ops.items():
            assert name.encode() in everything and op.op_type.encode() in everything
    for p in ds.problems:
        assert isinstance(p, Problem) and p.offset >= 0
    assert ds.records <= sum(len(v) for v in files.values()) // 16 + 1


def _dump_fuzzed_payloads(real: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
                          data: st.DataObject) -> None:
    """Real DebugEvent payloads mutated, then framed with valid CRCs, so that the
    damage reaches the protobuf decoding and what reads the decoded events."""
    files: dict[str, bytes] = {}
    for kind in data.draw(st.sets(st.sampled_from(sorted(real["records"])), min_size=1)):
        records = real["records"][kind]
        picked = data.draw(st.lists(st.sampled_from(records), min_size=1, max_size=12))
        out = bytearray()
        for payload in picked:
            if data.draw(st.booleans()):
                payload = data.draw(payload_mutation(payload))
            out += encode_record(payload)
        files[kind] = bytes(out)
    tmp = tmp_path_factory.mktemp("dp", numbered=True)
    _check_dump(_read_dump(_dump_dir(tmp, files)), files)


test_dump_fuzzed_payloads, test_dump_fuzzed_payloads_long = both(_dump_fuzzed_payloads, data=st.data())


def _dump_mutated_files(real: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
                        data: st.DataObject) -> None:
    """Whole real dump files (prefixes) mutated at the byte level, CRCs and all."""
    files = dict(real["files"])
    for kind in data.draw(st.sets(st.sampled_from(sorted(files)), min_size=1, max_size=3)):
        files[kind], _s, _e, _i = data.draw(mutation(files[kind]))
    tmp = tmp_path_factory.mktemp("dm", numbered=True)
    _check_dump(_read_dump(_dump_dir(tmp, files)), files)


test_dump_mutated_files, test_dump_mutated_files_long = both(_dump_mutated_files, data=st.data())


def _health_event(op_type: str, mode: int, values: list[float], graph: bool) -> bytes:
    ev = DebugEvent(wall_time=1.5)
    content = struct.pack(f"<{len(values)}d", *values)
    tensor = b"\x08\x02" + b"\x22" + _varint(len(content)) + content
    if graph:
        tr = ev.graph_execution_trace
        tr.tfdbg_context_id, tr.op_name, tr.output_slot = "ctx", op_type, 0
        tr.tensor_debug_mode, tr.tensor_proto = mode, tensor
    else:
        ex = ev.execution
        ex.op_type, ex.tensor_debug_mode = op_type, mode
        ex.tensor_protos.append(tensor)
    return ev.SerializeToString()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _health_tensors(tmp_path_factory: pytest.TempPathFactory, events: list[tuple[str, int, list[float], bool]]) -> None:
    files = {"execution": b"".join(encode_record(_health_event(*e)) for e in events if not e[3]),
             "graph_execution_traces": b"".join(encode_record(_health_event(*e))
                                                for e in events if e[3])}
    tmp = tmp_path_factory.mktemp("ht", numbered=True)
    ds = _read_dump(_dump_dir(tmp, files))
    _check_dump(ds, files)
    assert sum(ds.executions.values()) == sum(1 for e in events if not e[3])


_EVENT = st.tuples(st.text(st.characters(min_codepoint=65, max_codepoint=122), min_size=1, max_size=12),
                   st.integers(0, 8), st.lists(st.floats(allow_nan=False, allow_infinity=False),
                                               max_size=12), st.booleans())
test_health_tensors, test_health_tensors_long = both(
    _health_tensors, events=st.lists(_EVENT, min_size=1, max_size=6))

# FULL_HEALTH (4) keeps the dtype at index 2, SHAPE (5) at index 1: both get a non-finite value.
_EVENT_NON_FINITE = st.tuples(
    st.sampled_from(["Relu"]), st.sampled_from([4, 5]),
    st.builds(lambda a, bad, rest: [a, bad, bad] + rest, st.floats(),
              st.sampled_from([float("nan"), float("inf"), float("-inf")]),
              st.lists(st.floats(), max_size=8)),
    st.booleans())


@settings(FAST, report_multiple_bugs=False)
@given(events=st.lists(_EVENT_NON_FINITE, min_size=1, max_size=6))
def test_health_tensors_with_non_finite_values(tmp_path_factory: pytest.TempPathFactory,
                                               events: list[Any]) -> None:
    _health_tensors(tmp_path_factory, events)


# ---------------------------------------------------------------- XPlane

def _check_profile(p: Any) -> None:
    for op, is_func, start, dur in p.eager_ops:
        assert isinstance(op, str) and isinstance(is_func, bool)
        assert isinstance(start, int) and isinstance(dur, int)
    for node, kernel, start, dur in p.graph_ops:
        assert isinstance(node, str) and isinstance(kernel, str) and kernel
        assert isinstance(start, int) and isinstance(dur, int)
    for name, start, dur in p.function_calls:
        assert isinstance(name, str) and isinstance(start, int) and isinstance(dur, int)
    for problem in p.problems:
        assert isinstance(problem, Problem)
    assert isinstance(p.start_ns, int) and isinstance(p.end_ns, int)


def _xplane_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tmp = tmp_path_factory.mktemp("xb", numbered=True)
    path = tmp / "vm.xplane.pb"
    path.write_bytes(data)
    _check_profile(read_profile(str(path)))


test_xplane_arbitrary_bytes, test_xplane_arbitrary_bytes_long = both(
    _xplane_bytes, data=st.binary(max_size=2048))


def _xplane_mutated(real: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
                    data: st.DataObject) -> None:
    raw = real["profile"]
    for _ in range(data.draw(st.integers(1, 3))):
        raw, _s, _e, _i = data.draw(mutation(raw))
    _xplane_bytes(tmp_path_factory, raw)


test_xplane_mutated_real_profile, test_xplane_mutated_real_profile_long = both(_xplane_mutated, data=st.data())

_I64 = st.integers(-(1 << 63), (1 << 63) - 1)
_NAMES = st.sampled_from(["/host:CPU", "Task Environment", "/device:GPU:0", ""])
_EVENT_NAMES = st.sampled_from([
    "EagerExecute", "ExecutorState::Process", "ExecutorState::ProcessAsync::Start",
    "dense/MatMul:_MklMatMul", "a:MatMul#id=1#", "train_step", "x:y:z", "", "::", "n:"]) | st.text(max_size=20)
_STAT_NAMES = st.sampled_from(["eager_op", "is_func", "tf_function_call", "id", "name",
                               "kernel_type", "profile_start_time", "other"])


@st.composite
def xspace(draw: Any) -> bytes:
    """A structurally valid XSpace with arbitrary names, ids, times and stats."""
    space = XSpace()
    for _ in range(draw(st.integers(0, 3))):
        plane = space.planes.add()
        plane.name = draw(_NAMES)
        stat_ids = draw(st.lists(st.integers(0, 12), max_size=8))
        for sid in stat_ids:
            entry = plane.stat_metadata.add()
            entry.key, entry.value.id, entry.value.name = sid, sid, draw(_STAT_NAMES)
        meta_ids = draw(st.lists(st.integers(-2, 12), max_size=8))
        for mid in meta_ids:
            entry = plane.event_metadata.add()
            entry.key, entry.value.id = mid, mid
            entry.value.name = draw(_EVENT_NAMES)
            entry.value.display_name = draw(st.sampled_from(["", "MatMul", "_MklMatMul", "y"]))
        for _ in range(draw(st.integers(0, 2))):
            stat = plane.stats.add()
            stat.metadata_id = draw(st.integers(0, 12))
            stat.uint64_value = draw(st.integers(0, (1 << 64) - 1))
        for _ in range(draw(st.integers(0, 3))):
            line = plane.lines.add()
            line.name = draw(st.sampled_from(["python", "tf_Compute/1", ""]))
            line.timestamp_ns = draw(_I64)
            for _ in range(draw(st.integers(0, 6))):
                ev = line.events.add()
                ev.metadata_id = draw(st.integers(-2, 14))
                ev.offset_ps, ev.duration_ps = draw(_I64), draw(_I64)
                for _ in range(draw(st.integers(0, 3))):
                    stat = ev.stats.add()
                    stat.metadata_id = draw(st.integers(0, 12))
                    which = draw(st.integers(0, 5))
                    if which == 0:
                        stat.int64_value = draw(_I64)
                    elif which == 1:
                        stat.uint64_value = draw(st.integers(0, (1 << 64) - 1))
                    elif which == 2:
                        stat.double_value = draw(st.floats())
                    elif which == 3:
                        stat.str_value = draw(st.text(max_size=10))
                    elif which == 4:
                        stat.ref_value = draw(st.integers(0, 14))
                    else:
                        stat.bytes_value = draw(st.binary(max_size=8))
    return space.SerializeToString()


test_xplane_structured, test_xplane_structured_long = both(
    _xplane_bytes, data=xspace())


def _split_lines(data: bytes) -> bytes:
    """The same XSpace with each line written as two halves back to back (a
    parser merges them: repeated fields concatenate), so that its events are
    no longer one run of bytes: read_profile must notice and still agree."""
    space = XSpace()
    space.ParseFromString(data)
    planes = []
    for plane in space.planes:
        rest = type(plane)()
        rest.CopyFrom(plane)
        del rest.lines[:]
        body = rest.SerializeToString()
        for line in plane.lines:
            halves = [type(line)(), type(line)()]
            for k, half in enumerate(halves):
                half.CopyFrom(line)
                del half.events[:]
                half.events.extend(line.events[:len(line.events) // 2] if k == 0
                                   else line.events[len(line.events) // 2:])
            both_halves = b"".join(h.SerializeToString() for h in halves)
            body += b"\x1a" + _VarintBytes(len(both_halves)) + both_halves
        planes.append(b"\x0a" + _VarintBytes(len(body)) + body)
    return b"".join(planes)


def _xplane_like_reference(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                           split: bool, window: int | None) -> None:
    """read_profile (numpy, all events at once) equals the plain event-by-event
    reading of tests/xplane_reference.py on valid XSpaces with arbitrary
    names, ids, stats and times, also when each line is read in windows of
    a few bytes (``window``; grown by the reader when an event is larger)."""
    if split:
        data = _split_lines(data)
    path = tmp_path_factory.mktemp("xr", numbered=True) / "vm.xplane.pb"
    path.write_bytes(data)
    saved = xevents._WINDOW
    xevents._WINDOW = window or saved
    try:
        ours = read_profile(str(path))
    finally:
        xevents._WINDOW = saved
    ref = reference_profile(data, path.stat().st_mtime_ns)
    assert ref is not None
    assert ours.eager_ops == ref["eager"]
    assert ours.graph_ops == ref["graph"]
    assert list(ours.graph_tally.items()) == reference_tally(ref["graph"])
    assert list(ours.eager_tally.items()) == reference_tally(ref["eager"])
    assert ours.function_calls == ref["calls"]
    assert ours.iterator_specs == ref["iterators"]
    assert (ours.start_ns, ours.end_ns) == (ref["start"], ref["end"])


test_xplane_like_reference, test_xplane_like_reference_long = both(
    _xplane_like_reference, data=xspace(), split=st.booleans(),
    window=st.sampled_from([None, 1, 16, 64, 256]))


# ---------------------------------------------------------------- text logs

def _check_facts(facts: LogFacts, nbytes: int) -> None:
    assert facts.bytes_read == nbytes
    for p in facts.problems:
        assert isinstance(p, Problem) and 0 <= p.offset <= max(nbytes, 0)
    for d in (facts.eager_dispatch, facts.graph_executions, facts.onednn_primitives):
        assert all(isinstance(v, int) and v > 0 for v in d.values())
    for v in facts.onednn_time_ms.values():
        assert v == v and v >= 0 and v != float("inf")
    for t in (facts.first_time, facts.last_time):
        assert t is None or (t == t and abs(t) != float("inf"))


@st.composite
def log_lines(draw: Any, real: list[bytes]) -> list[bytes]:
    """Real TF / oneDNN lines, mutated, cut, spliced into each other, and junk."""
    out = []
    for _ in range(draw(st.integers(0, 40))):
        pick = draw(st.integers(0, 9))
        line = draw(st.sampled_from(real))
        if pick < 4:
            out.append(line)
        elif pick < 6:
            out.append(draw(mutation(line or b" "))[0].replace(b"\n", b""))
        elif pick == 6:
            other = draw(st.sampled_from(real))
            at = draw(st.integers(0, len(line)))
            out.append(line[:at] + other)        # another line written into this one
        elif pick == 7:
            out.append(line[:draw(st.integers(0, len(line)))])
        else:
            out.append(draw(st.binary(max_size=200)).replace(b"\n", b""))
    return out


def _parse_lines_prop(real: dict[str, Any], data: st.DataObject) -> None:
    lines = data.draw(log_lines(real["lines"]) | st.lists(st.binary(max_size=300), max_size=30))
    facts = parse_lines(lines)
    _check_facts(facts, sum(len(x[:-1] if x.endswith(b"\n") else x) + 1 for x in lines))


test_parse_lines, test_parse_lines_long = both(_parse_lines_prop, data=st.data())


_COMPARED = ("tf_format", "first_time", "last_time", "onednn_opts", "eager_dispatch",
             "eager_kernels", "graph_kernels", "debug_inputs", "debug_targets",
             "graph_executions", "onednn_primitives", "onednn_time_ms", "lines", "bytes_read")


def _read_log_chunks(real: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
                     data: st.DataObject) -> None:
    """read_log with tiny chunks and a tiny line cap equals parse_lines of the same
    lines: chunk and cap boundaries never change what is read."""
    lines = data.draw(log_lines(real["lines"]))
    blob = b"".join(x + b"\n" for x in lines)
    chunk = data.draw(st.integers(1, 300))
    cap = data.draw(st.sampled_from([textlog.MAX_LINE, 50, 200]))
    tmp = tmp_path_factory.mktemp("rl", numbered=True)
    path = tmp / "fuzz.log"
    path.write_bytes(blob)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_BYTES", chunk)
        mp.setattr(scan, "MAX_LINE", cap)
        streamed = read_log(str(path))
        whole = parse_lines(lines, str(path))
    _check_facts(streamed, len(blob))
    for name in _COMPARED:
        assert getattr(streamed, name) == getattr(whole, name), name
    assert streamed.problems == whole.problems


test_read_log_chunking, test_read_log_chunking_long = both(_read_log_chunks, data=st.data())


def _one_scan(real: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
              data: st.DataObject) -> None:
    """The one scan of a block whose texts are known (``LogParser._read_lines_in_one_scan``) reads what the
    two scans read: read_log with it equals read_log without it, the lines three times
    over in small blocks (so that later blocks know their texts)."""
    lines = data.draw(log_lines(real["lines"]))
    blob = b"".join(x + b"\n" for x in lines) * 3
    chunk = data.draw(st.integers(64, 4096))
    tmp = tmp_path_factory.mktemp("os", numbered=True)
    path = tmp / "fuzz.log"
    path.write_bytes(blob)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_BYTES", chunk)
        one = read_log(str(path))
        mp.setattr(scan.LogParser, "_read_lines_in_one_scan", lambda self, data, a, b, base: False)
        two = read_log(str(path))
    for name in LogFacts.__dataclass_fields__:
        assert getattr(one, name) == getattr(two, name), name


test_one_scan, test_one_scan_long = both(_one_scan, data=st.data())


def _read_log_bytes(tmp_path_factory: pytest.TempPathFactory, blob: bytes, chunk: int) -> None:
    tmp = tmp_path_factory.mktemp("rb", numbered=True)
    path = tmp / "fuzz.log"
    path.write_bytes(blob)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "CHUNK_BYTES", chunk)
        mp.setattr(scan, "MAX_LINE", 64)
        facts = read_log(str(path))
    _check_facts(facts, len(blob))


test_read_log_arbitrary_bytes, test_read_log_arbitrary_bytes_long = both(
    _read_log_bytes, blob=st.binary(max_size=4096), chunk=st.integers(1, 512))


def test_pathological_lines_do_not_hang() -> None:
    """Inputs shaped against the regexes: long runs of the characters they repeat."""
    import time

    samples = [b"/" * 500_000 + b"] x", b"a/" * 250_000 + b"] x", b"I0000 00:00:" + b"1" * 500_000,
               b"2020-01-01 00:00:00" + b".0" * 200_000, b"onednn_verbose," * 60_000,
               b"{{node " * 100_000 + b"}} = ", b"x" * 3_000_000, b":1] " * 200_000,
               b"I0000 00:00:00.0 1 executor.cc:1] Process node: " + b"{{node a}} = K[" * 50_000]
    for line in samples:
        t = time.monotonic()
        facts = parse_lines([line, line])
        assert time.monotonic() - t < 10, line[:40]
        assert facts.lines == 2
