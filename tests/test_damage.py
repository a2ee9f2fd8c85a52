"""Broken and hostile input, end to end: real TF-written files damaged on purpose.

In: the ``cnn_logdir`` session fixture (a tfdbg2 dump, a profile and a VLOG +
ONEDNN_VERBOSE log that TensorFlow just wrote). Each test copies the files it
needs into ``tmp_path`` and damages the copies. Out: assertions on what
``tb-opmode summary`` makes of them: everything intact is read (counts equal
those TensorFlow's own protos give for the intact records), nothing is
invented, each problem is a warning naming file, byte offset and what, in the
summary JSON and on stderr; damaged input exits 0, unusable input exits 2 with
one line and no traceback.

The expected counts never come from our reader: records are split by walking
the TFRecord frames by hand, checked against TensorFlow's own
``tf_record_iterator``, and parsed with TensorFlow's ``debug_event_pb2``.
"""
from __future__ import annotations

import io
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from tensorflow.core.protobuf import debug_event_pb2
from tensorflow.python.lib.io import tf_record

from tb_opmode import fs, textlog, tfdbg
from tb_opmode.cli import main
from tb_opmode.tfdbg import find_dump_sets, read_dump_set
from tb_opmode.tfrecord import RecordReader, encode_record, masked_crc32c

from .conftest import ddr_counts, dump_files

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("metadata", "source_files", "stack_frames", "graphs", "execution", "graph_execution_traces")
FUNCTION_PREFIXES = ("__inference_", "__forward_", "__backward_")


# ---------------------------------------------------------------- framing and references

def frames(raw: bytes) -> list[tuple[int, bytes]]:
    """(offset, payload) of every record of an intact TFRecord file, by walking the frames."""
    out, pos = [], 0
    while pos < len(raw):
        (length,) = struct.unpack_from("<Q", raw, pos)
        out.append((pos, raw[pos + 12:pos + 12 + length]))
        pos += 16 + length
    assert pos == len(raw)
    return out


def records(path: Path) -> list[tuple[int, bytes]]:
    """The records of an intact file, checked against TensorFlow's own reader."""
    got = frames(path.read_bytes())
    assert [p for _, p in got] == list(tf_record.tf_record_iterator(str(path)))
    return got


def tf_event(payload: bytes) -> Any:
    return debug_event_pb2.DebugEvent.FromString(payload)




def reference(executions: list[bytes], graphs: list[bytes], traces: list[bytes]) -> tuple[Counter, Counter, Counter, int]:
    """(eager op types, graph op types, function calls, graph executions of unknown ops)
    from the given payloads, parsed by TensorFlow's protos: what a reader that reads
    exactly these records and nothing else must report."""
    eager, functions = Counter(), Counter()
    for payload in executions:
        ev = tf_event(payload)
        if ev.HasField("execution"):
            ex = ev.execution
            if ex.graph_id or ex.op_type.startswith(FUNCTION_PREFIXES):
                functions[ex.op_type] += 1
            else:
                eager[ex.op_type] += 1
    op_types = {}
    for payload in graphs:
        ev = tf_event(payload)
        if ev.HasField("graph_op_creation"):
            c = ev.graph_op_creation
            op_types[(c.graph_id, c.op_name)] = c.op_type
    parsed = [tf_event(p).graph_execution_trace for p in traces]
    parsed = [t for t in parsed if t.op_name]
    lowest: dict[tuple[str, str], int] = {}
    for t in parsed:
        key = (t.tfdbg_context_id, t.op_name)
        lowest[key] = min(lowest.get(key, t.output_slot), t.output_slot)
    graph, untyped = Counter(), 0
    for t in parsed:
        key = (t.tfdbg_context_id, t.op_name)
        if t.output_slot != lowest[key]:
            continue
        if key in op_types:
            graph[op_types[key]] += 1
        else:
            untyped += 1
    return eager, graph, functions, untyped


class Dump:
    """The intact dump of a fixture logdir: paths, raw bytes and records per kind."""

    def __init__(self, logdir: Path) -> None:
        self.paths = dump_files(logdir)
        assert set(self.paths) == set(KINDS)
        self.raw = {k: p.read_bytes() for k, p in self.paths.items()}
        self.records = {k: records(p) for k, p in self.paths.items()}

    def payloads(self, kind: str, lost: frozenset[int] = frozenset()) -> list[bytes]:
        return [p for i, (_, p) in enumerate(self.records[kind]) if i not in lost]

    def expected(self, lost: Optional[dict[str, frozenset[int]]] = None,
                 without: tuple[str, ...] = ()) -> tuple[Counter, Counter, Counter, int]:
        lost = lost or {}

        def kept(kind: str) -> list[bytes]:
            return [] if kind in without else self.payloads(kind, lost.get(kind, frozenset()))

        return reference(kept("execution"), kept("graphs"), kept("graph_execution_traces"))

    def copy_to(self, logdir: Path, skip: tuple[str, ...] = ()) -> dict[str, Path]:
        logdir.mkdir(parents=True, exist_ok=True)
        out = {}
        for kind, path in self.paths.items():
            if kind not in skip:
                out[kind] = logdir / path.name
                shutil.copyfile(path, out[kind])
        return out


@pytest.fixture(scope="module")
def dump(cnn_logdir: Path) -> Dump:
    return Dump(cnn_logdir)


def test_reference_equals_debug_data_reader(dump: Dump, cnn_logdir: Path) -> None:
    """The hand-made reference agrees with TensorFlow's DebugDataReader on the intact dump."""
    eager, graph, functions, untyped = dump.expected()
    ref_eager, ref_graph, ref_functions = ddr_counts(cnn_logdir)
    assert (eager, graph, functions, untyped) == (ref_eager, ref_graph, ref_functions, 0)
    assert sum(eager.values()) > 50 and sum(graph.values()) > 50


# ---------------------------------------------------------------- running the CLI

def strict_json(text: str) -> Any:
    """Parse JSON as a strict consumer would: no NaN/Infinity, no lone surrogates."""
    def bad_constant(name: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {name}")

    doc = json.loads(text, parse_constant=bad_constant)

    def walk(x: Any) -> None:
        if isinstance(x, str):
            x.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return doc


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test reads through an empty cache of its own (see ``summarize``)."""
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path_factory.mktemp("cache")))


def summarize(logdir: Path, *args: str) -> tuple[int, Any, str]:
    """``tb-opmode summary LOGDIR --format json`` in process: (exit code, JSON, stderr).

    Run twice: the first reads the files, the second gets them from the cache;
    both must say the same (the cache keeps the warnings too)."""
    results = []
    for _ in range(2):
        out, err = io.StringIO(), io.StringIO()
        rc = main(["summary", str(logdir), "--format", "json", *args], stdout=out, stderr=err)
        doc = strict_json(out.getvalue()) if rc == 0 else None
        results.append((rc, doc, err.getvalue()))
    assert results[1] == results[0], "a second read (from the cache) differs from the first"
    return results[0]


def run_cli(*args: str, timeout: float = 120, env: Optional[dict[str, str]] = None
            ) -> subprocess.CompletedProcess:
    """The real command in a child process (exit code, raw stdout/stderr bytes)."""
    full_env = dict(os.environ, TB_OPMODE_CACHE="off", **(env or {}))
    full_env.pop("TB_OPMODE_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "tb_opmode.cli", *args], capture_output=True,
                          timeout=timeout, cwd=str(ROOT), env=full_env)


def model_counts(doc: Any, run: str = ".") -> tuple[Counter, Counter, Counter]:
    (r,) = [r for r in doc["runs"] if r["run"] == run]
    eager = Counter({x["op_type"]: x["eager"]["executions"] for x in r["op_types"]
                     if x["eager"]["executions"]})
    graph = Counter({x["op_type"]: x["graph"]["executions"] for x in r["op_types"]
                     if x["graph"]["executions"]})
    functions = Counter({f["name"]: f["calls"] for f in r["functions"]})
    return eager, graph, functions


def warnings_of(doc: Any, run: str = ".") -> list[str]:
    """The warnings of one run (each also in the top-level list, prefixed by the run)."""
    (r,) = [r for r in doc["runs"] if r["run"] == run]
    for w in r["warnings"]:
        assert f"{run}: {w}" in doc["warnings"]
    return r["warnings"]


def assert_warned(doc: Any, stderr: str, name: str, offset: int, *words: str,
                  run: str = ".") -> str:
    """A warning ``<name>: byte <offset>: ...`` naming ``words``, in the JSON and on stderr."""
    head = f"{name}: byte {offset}: "
    hits = [w for w in warnings_of(doc, run) if w.startswith(head)]
    assert hits, f"no warning for {head!r} in {warnings_of(doc, run)}"
    for word in words:
        assert any(word in h for h in hits), (word, hits)
    for h in hits:
        assert f"tb-opmode: warning: {run}: {h}\n" in stderr
    return hits[0]


def assert_one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tb-opmode: error: "), lines
    assert proc.stdout == b""
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


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


# ---------------------------------------------------------------- a big traces file (the fast reader)

BIG_TRACES_BYTES = 10 << 20   # above tfdbg's threshold for its chunked, forked reader


class BigTraces:
    """A traces file of 10+ MB: the real records repeated (each copy is a valid run of
    records), so the reader's fast path (forked halves, chunked CRCs) is used."""

    def __init__(self, dump: Dump) -> None:
        base = dump.records["graph_execution_traces"]
        copies = BIG_TRACES_BYTES // len(dump.raw["graph_execution_traces"]) + 1
        self.raw = dump.raw["graph_execution_traces"] * copies
        size = len(dump.raw["graph_execution_traces"])
        self.records = [(off + i * size, p) for i in range(copies) for off, p in base]
        self.payloads = [p for _, p in self.records]
        self.traces = [tf_event(p).graph_execution_trace for p in self.payloads]

    def expected_graph(self, dump: Dump, lost: set[int]) -> Counter:
        kept = [p for i, p in enumerate(self.payloads) if i not in lost]
        return reference([], dump.payloads("graphs"), kept)[1]

    def index_at(self, offset: int) -> int:
        """The record that spans byte ``offset``."""
        return max(i for i, (off, _) in enumerate(self.records) if off <= offset)


@pytest.fixture(scope="module")
def big(dump: Dump) -> BigTraces:
    return BigTraces(dump)


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


# ---------------------------------------------------------------- empty and missing files

def test_empty_file_in_a_dump_set(dump: Dump, tmp_path: Path) -> None:
    files = dump.copy_to(tmp_path)
    files["execution"].write_bytes(b"")
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    eager, graph, functions, _ = dump.expected(without=("execution",))
    assert model_counts(doc) == (eager, graph, functions) and not eager and graph
    assert_warned(doc, stderr, files["execution"].name, 0, "empty")


@pytest.mark.parametrize("missing", [("graphs",), ("execution",),
                                     ("metadata",),
                                     ("graph_execution_traces",), ("source_files", "stack_frames"),
                                     ("metadata", "source_files", "stack_frames", "graphs")])
def test_dump_set_missing_files(dump: Dump, tmp_path: Path, missing: tuple[str, ...]) -> None:
    files = dump.copy_to(tmp_path, skip=missing)
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    eager, graph, functions, untyped = dump.expected(without=missing)
    assert model_counts(doc) == (eager, graph, functions)
    prefix = next(iter(files.values())).name.rsplit(".", 1)[0]
    for kind in missing:
        assert_warned(doc, stderr, f"{prefix}.{kind}", 0, "missing")
    if "graphs" in missing:
        # Graph executions without the .graphs file have no op type: said, not guessed.
        assert untyped > 50 and not graph
        assert_warned(doc, stderr, files["graph_execution_traces"].name, 0,
                      f"{untyped} graph executions of ops the .graphs file does not define")
    run = doc["runs"][0]
    assert bool(run["tensorflow_version"]) == ("metadata" not in missing)


# ---------------------------------------------------------------- files that are not what their name says

def _event_file(tmp_path: Path) -> bytes:
    """A real TFRecord file of TensorBoard ``Event`` protos (not DebugEvents), written by TF."""
    import tensorflow as tf

    out = tmp_path / "summaries"
    writer = tf.summary.create_file_writer(str(out))
    with writer.as_default():
        for step in range(20):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
            tf.summary.text("note", "some text", step=step)
    writer.close()
    (path,) = out.iterdir()
    data = path.read_bytes()
    assert len(records(path)) > 20
    return data


def _impostor(name: str, dump: Dump, tmp_path: Path, cnn_logdir: Path) -> bytes:
    if name == "text":
        return b"this is a text file, not a tfdbg2 dump\n" * 200
    if name == "random":
        return random.Random(5).randbytes(20000)
    if name == "event_file":
        return _event_file(tmp_path)
    if name == "xplane":
        (profile,) = cnn_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
        return profile.read_bytes()
    raise ValueError(name)


IMPOSTORS = ["text", "random", "event_file", "xplane"]


@pytest.mark.parametrize("impostor", IMPOSTORS)
def test_file_named_like_a_dump_beside_a_real_dump(dump: Dump, tmp_path: Path, cnn_logdir: Path,
                                                   impostor: str) -> None:
    """The .execution file of a real dump set replaced by something else: the rest is
    read, nothing is counted from the impostor, and it is named in a warning."""
    data = _impostor(impostor, dump, tmp_path, cnn_logdir)
    files = dump.copy_to(tmp_path / "logdir")
    files["execution"].write_bytes(data)
    rc, doc, stderr = summarize(tmp_path / "logdir")
    assert rc == 0, stderr
    eager, graph, functions, _ = dump.expected(without=("execution",))
    assert model_counts(doc) == (eager, graph, functions)
    assert_warned(doc, stderr, files["execution"].name, 0)


@pytest.mark.parametrize("impostor", IMPOSTORS)
def test_file_named_like_a_dump_alone_is_unusable(dump: Dump, tmp_path: Path, cnn_logdir: Path,
                                                  impostor: str) -> None:
    """Nothing but an impostor: exit 2, one line that names the file, no traceback."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "tfdbg_events.1.host.execution").write_bytes(
        _impostor(impostor, dump, tmp_path, cnn_logdir))
    line = assert_one_line_error(run_cli("summary", str(logdir), "--format", "json"),
                                 "nothing readable", "tfdbg_events.1.host.execution")
    assert "byte 0" in line


def _graphs_as_execution(dump: Dump, tmp_path: Path) -> tuple[dict[str, Path], str]:
    files = dump.copy_to(tmp_path)
    files["execution"].write_bytes(dump.raw["graphs"])  # valid DebugEvents, wrong kind
    return files, "execution"


def _unknown_kind(dump: Dump, tmp_path: Path) -> tuple[dict[str, Path], str]:
    """Executions of a newer TF that moved to a oneof member we do not know (field 99)."""
    files = dump.copy_to(tmp_path)
    data = bytearray()
    for _, payload in dump.records["execution"]:
        ev = tf_event(payload)
        inner = ev.execution.SerializeToString()
        data += encode_record(_key(1, 1) + struct.pack("<d", ev.wall_time)
                              + _key(99, 2) + _varint(len(inner)) + inner)
    files["execution"].write_bytes(bytes(data))
    return files, "execution"


@pytest.mark.parametrize("make", [_graphs_as_execution, _unknown_kind],
                         ids=["graphs_renamed_as_execution", "unknown_oneof_member"])
def test_records_of_another_kind_are_reported(dump: Dump, tmp_path: Path,
                                              make: Callable[..., tuple[dict[str, Path], str]]) -> None:
    files, kind = make(dump, tmp_path)
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    eager, graph, functions, _ = dump.expected(without=(kind,))
    assert model_counts(doc) == (eager, graph, functions)   # nothing invented...
    assert_warned(doc, stderr, files[kind].name, 0)         # ...and not silent either


# ---------------------------------------------------------------- unknown fields, newer file_version

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


# Unknown fields of every wire type, as a newer TF could write them.
UNKNOWN = (_key(1000, 0) + _varint(123456789012)
           + _key(1001, 2) + _varint(11) + b"future data"
           + _key(1002, 1) + struct.pack("<d", 2.5)
           + _key(1003, 5) + struct.pack("<f", 1.5)
           + _key(1004, 3) + _key(1, 0) + _varint(7) + _key(1004, 4))


def _with_unknown_fields(payload: bytes) -> bytes:
    """``payload`` plus unknown fields at top level and inside its ``what`` message
    (a second occurrence of a message field merges into the first)."""
    ev = tf_event(payload)
    what = ev.WhichOneof("what")
    out = payload + UNKNOWN
    if what is not None:
        fd = ev.DESCRIPTOR.fields_by_name[what]
        if fd.message_type is not None:
            out += _key(fd.number, 2) + _varint(len(UNKNOWN)) + UNKNOWN
    return out


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
    (warning,) = warnings_of(doc)  # the version, and nothing about the unknown fields
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


# ---------------------------------------------------------------- files changing while read

def _grow(path: Path, data: bytes, done: threading.Event, seed: int, max_chunk: int) -> None:
    rng = random.Random(seed)
    with open(path, "ab") as f:
        pos = 0
        while pos < len(data):
            n = rng.randint(1, max_chunk)
            f.write(data[pos:pos + n])
            f.flush()
            pos += n
            time.sleep(rng.random() * 0.002)
    done.set()


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
from tb_opmode.tfrecord import RecordReader
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
    proc = subprocess.run([sys.executable, "-c", SHRINK_SCRIPT, str(path)], capture_output=True,
                          timeout=60, cwd=str(ROOT))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])


FAST_SHRINK_SCRIPT = r"""
import os, sys
from tb_opmode import tfdbg
from tb_opmode.tfrecord import RecordReader
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
    proc = subprocess.run([sys.executable, "-c", FAST_SHRINK_SCRIPT, str(path)], capture_output=True,
                          timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    counted, intact, fast = map(int, proc.stdout.split())
    assert counted == intact > 0 and fast == 1


# ---------------------------------------------------------------- text logs: size and garbage

def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


class _SpyFile(io.RawIOBase):
    """A file that records the size of every read asked of it."""

    def __init__(self, path: str, sizes: list[int]) -> None:
        self._f = open(path, "rb")
        self._sizes = sizes

    def read(self, n: int = -1) -> bytes:
        self._sizes.append(n)
        return self._f.read(n)

    def readinto(self, b: Any) -> int:
        self._sizes.append(len(b))
        return self._f.readinto(b)

    def readline(self, n: int = -1) -> bytes:
        self._sizes.append(n)
        return self._f.readline(n)

    def __iter__(self) -> Any:
        raise AssertionError("iterating a file by line holds an unbounded line")

    def close(self) -> None:
        self._f.close()
        super().close()

    def readable(self) -> bool:
        return True


def _big_log(cnn_logdir: Path, path: Path, size: int) -> bytes:
    """A log of about ``size`` bytes: the real log repeated, with a 3 MB line of binary
    garbage without newline and non-UTF-8 bytes in between."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    garbage = bytes(random.Random(9).randbytes(3 << 20)).replace(b"\n", b"\x00")
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(real)
            f.write(garbage + b"\n" + b"\xff\xfe latin-1: caf\xe9\n")
            written += len(real) + len(garbage) + 20
    return real


def test_text_log_is_read_in_bounded_chunks(cnn_logdir: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """read_log never asks for the whole file or an unbounded line."""
    path = tmp_path / "big.log"
    _big_log(cnn_logdir, path, 24 << 20)
    size = path.stat().st_size
    sizes: list[int] = []
    # Logs are opened through the filesystem layer (tb_opmode/fs.py), which opens local
    # files with the builtin open.
    monkeypatch.setattr(fs, "open", lambda p, mode="r": _SpyFile(p, sizes), raising=False)
    facts = textlog.read_log(str(path))
    assert facts.bytes_read == size
    assert sizes and all(0 < n <= 4 << 20 for n in sizes), sorted(set(sizes))[:5]
    assert len(sizes) >= size // (4 << 20)


def test_text_log_memory_stays_flat(cnn_logdir: Path, tmp_path: Path) -> None:
    """Peak memory while parsing a log of 20+ MB (with 3 MB garbage lines) stays far below its size."""
    path = tmp_path / "big.log"
    real = _big_log(cnn_logdir, path, 20 << 20)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        facts = textlog.read_log(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one = textlog.read_log(_write(tmp_path / "one.log", real))
    copies = sum(facts.eager_dispatch.values()) // sum(one.eager_dispatch.values())
    assert copies >= 2 and facts.eager_dispatch == Counter(
        {k: v * copies for k, v in one.eager_dispatch.items()})
    assert size > 20 << 20
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MB for a {size / 2**20:.0f} MB log"


BIG_LOG_SCRIPT = r"""
import resource, sys
from tb_opmode.textlog import read_log
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
facts = read_log(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before, facts.bytes_read, sum(facts.eager_dispatch.values()))
"""


@pytest.mark.slow
def test_text_log_of_200_mb_streams_in_flat_memory(cnn_logdir: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    _big_log(cnn_logdir, path, 200 << 20)
    proc = subprocess.run([sys.executable, "-c", BIG_LOG_SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=600, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr
    grown_kb, bytes_read, dispatches = (int(x) for x in proc.stdout.split())
    assert bytes_read == path.stat().st_size and dispatches > 0
    assert grown_kb < 64 * 1024, f"max RSS grew by {grown_kb // 1024} MB"


def _garbled_log(real: bytes) -> tuple[bytes, int]:
    """The real log with binary garbage lines, NULs and non-UTF-8 bytes put between its
    lines; returns (data, offset of the first garbage)."""
    rng = random.Random(13)
    lines = real.splitlines(keepends=True)
    out = bytearray()
    first = -1
    for i, line in enumerate(lines):
        if i % 97 == 50:
            if first < 0:
                first = len(out)
            junk = b"\xff\x00" + rng.randbytes(rng.randint(1, 300)).replace(b"\n", b"\x00")
            out += junk + b"\n"
            out += b"\x00\x00\x00\n" + "naïve café".encode("latin-1") + b"\n"
        out += line
    return bytes(out), first


def test_binary_garbage_and_non_utf8_in_a_text_log(dump: Dump, cnn_logdir: Path,
                                                   tmp_path: Path) -> None:
    """Through the CLI (dump + log): kernels, evidence, explanations and oneDNN
    primitives equal those from the clean log; the garbage is warned about at the
    offset of its first line."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    dump.copy_to(clean)
    dump.copy_to(dirty)
    (clean / "tf_log.txt").write_bytes(real)
    data, first = _garbled_log(real)
    (dirty / "tf_log.txt").write_bytes(data)
    rc, want, _ = summarize(clean)
    assert rc == 0 and want["runs"][0]["warnings"] == []
    assert want["runs"][0]["onednn_verbose"]["primitives"]
    rc, got, stderr = summarize(dirty)
    assert rc == 0, stderr
    assert got["runs"][0]["op_types"] == want["runs"][0]["op_types"]
    assert got["runs"][0]["onednn_verbose"] == want["runs"][0]["onednn_verbose"]
    assert got["runs"][0]["onednn_enabled"] == want["runs"][0]["onednn_enabled"]
    assert_warned(got, stderr, "tf_log.txt", first, "non-UTF-8")
    assert_warned(got, stderr, "tf_log.txt", first, "binary")
    assert len(warnings_of(got)) == 2


def test_binary_garbage_in_a_log_only_run(cnn_logdir: Path, tmp_path: Path) -> None:
    """The parser alone: the counts a log gives are unchanged by the garbage."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    data, first = _garbled_log(real)
    want = textlog.read_log(_write(tmp_path / "clean.log", real))
    got = textlog.read_log(_write(tmp_path / "dirty.log", data))
    for name in ("eager_dispatch", "eager_kernels", "graph_kernels", "graph_executions",
                 "onednn_primitives", "onednn_opts", "debug_targets", "tf_format"):
        assert getattr(got, name) == getattr(want, name), name
    assert got.onednn_time_ms.keys() == want.onednn_time_ms.keys()
    for key, ms in want.onednn_time_ms.items():
        assert got.onednn_time_ms[key] == pytest.approx(ms)
    assert sorted(p.offset for p in got.problems) == [first, first]


@pytest.mark.parametrize("source", ["log", "profile"])
def test_run_without_a_tf_version(cnn_off_logdir: Path, tmp_path: Path, source: str) -> None:
    """A run that left only its log (oneDNN off: no banner) or only its profile: no
    dump, so no TF version."""
    if source == "log":
        shutil.copyfile(cnn_off_logdir / "tf_log.txt", tmp_path / "tf_log.txt")
    else:
        (profile,) = cnn_off_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
        target = tmp_path / profile.relative_to(cnn_off_logdir)
        target.parent.mkdir(parents=True)
        shutil.copyfile(profile, target)
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    (run,) = doc["runs"]
    assert run["counts_from"] == source and run["op_types"]


def test_non_finite_numbers_in_a_log_stay_out_of_json(dump: Dump, cnn_logdir: Path,
                                                       tmp_path: Path) -> None:
    """oneDNN times 'nan', 'inf', '1e999', '-1' and an absl time of 400 digits: the JSON
    stays standard (no NaN/Infinity), the lines are warned about, no time is made up."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    line = next(x for x in real.splitlines(keepends=True)
                if x.startswith(b"onednn_verbose,") and b",exec," in x)
    head = line.rstrip(b"\n").rsplit(b",", 1)[0]
    bad = b"".join(head + b"," + t + b"\n" for t in (b"nan", b"inf", b"-inf", b"1e999", b"-1"))
    bad += b"I0000 00:00:" + b"9" * 400 + b" 1 execute.cc:1] Executing op Relu in device /cpu:0\n"
    dump.copy_to(tmp_path / "clean")
    dump.copy_to(tmp_path / "dirty")
    (tmp_path / "clean" / "tf_log.txt").write_bytes(real)
    (tmp_path / "dirty" / "tf_log.txt").write_bytes(bad + real)
    rc, want, _ = summarize(tmp_path / "clean")
    rc, doc, stderr = summarize(tmp_path / "dirty")   # strict_json rejects NaN and Infinity
    assert rc == 0, stderr
    prims = doc["runs"][0]["onednn_verbose"]["primitives"]
    assert prims and all(math.isfinite(p["time_ms"]) and p["time_ms"] >= 0 for p in prims)
    # The bad lines count as executions of their primitive, with no time.
    before = {(p["kind"], p["implementation"], p["prop_kind"]): p for p in
              want["runs"][0]["onednn_verbose"]["primitives"]}
    for p in prims:
        b = before[(p["kind"], p["implementation"], p["prop_kind"])]
        assert p["time_ms"] == pytest.approx(b["time_ms"], abs=1e-3)
        assert p["count"] - b["count"] in (0, 5)
    assert_warned(doc, stderr, "tf_log.txt", 0, "garbled", "5 lines")
    facts = textlog.read_log(str(tmp_path / "dirty" / "tf_log.txt"))
    assert facts.first_time is None or math.isfinite(facts.first_time)


# ---------------------------------------------------------------- profiles

def test_truncated_profile_beside_a_dump(dump: Dump, cnn_logdir: Path, tmp_path: Path) -> None:
    dump.copy_to(tmp_path)
    (profile,) = cnn_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
    rel = profile.relative_to(cnn_logdir)
    target = tmp_path / rel
    target.parent.mkdir(parents=True)
    raw = profile.read_bytes()
    target.write_bytes(raw[:len(raw) // 2])
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    assert model_counts(doc) == dump.expected()[:3]
    assert [r["run"] for r in doc["runs"]] == ["."]   # the profile sits inside the dump's run
    assert_warned(doc, stderr, rel.as_posix(), 0, "not a complete XSpace")


# ---------------------------------------------------------------- non-UTF-8 and hostile file names

def _fs(path: Path, *names: bytes) -> bytes:
    return os.path.join(os.fsencode(path), *names)


def test_non_utf8_file_names(dump: Dump, cnn_logdir: Path, tmp_path: Path) -> None:
    """Directories and files whose names are not UTF-8 (and one with a newline in its
    name): discovery and summary work, JSON is valid UTF-8, stderr has one line per
    warning, and the table and CSV print on a strict UTF-8 terminal."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    run = _fs(logdir, b"run\xff\xfe")
    os.mkdir(run)
    for kind, path in dump.paths.items():
        ts = path.name.split(".")[1]
        shutil.copyfile(path, os.path.join(run, b"tfdbg_events." + ts.encode() + b".h\xe9st." + kind.encode()))
    real_log = (cnn_logdir / "tf_log.txt").read_bytes()
    shutil.copyfile(cnn_logdir / "tf_log.txt", os.path.join(run, b"tf\xfdlog.txt"))
    (profile,) = cnn_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
    session = _fs(logdir, b"run\xff\xfe", b"prof\xff", b"plugins", b"profile", b"s\xfa")
    os.makedirs(session)
    shutil.copyfile(profile, os.path.join(session, b"vm\xfb.xplane.pb"))
    forged = _fs(logdir, b"evil\ntb-opmode: error: forged line\xe2\x80\xa8.log")  # U+2028
    with open(forged, "wb") as f:
        f.write(real_log[:20000].rsplit(b"\n", 1)[0] + b"\n\x00\x00 binary\n")

    rc, doc, stderr = summarize(logdir)
    assert rc == 0, stderr
    names = {r["run"] for r in doc["runs"]}
    assert "run\\xff\\xfe" in names, names
    (main_run,) = [r for r in doc["runs"] if r["run"] == "run\\xff\\xfe"]
    assert main_run["counts_from"] == "debugger"
    assert model_counts(doc, "run\\xff\\xfe") == dump.expected()[:3]
    assert main_run["hosts"] == ["h\\xe9st", "vm\\xfb"]
    assert "run\\xff\\xfe/tf\\xfdlog.txt" in main_run["sources"]["logs"]
    for line in stderr.splitlines():
        assert line.startswith("tb-opmode: warning: "), line
    assert any("evil\\x0atb-opmode: error: forged line\\u2028.log" in w for w in doc["warnings"])

    for fmt in ("json", "table", "csv"):
        proc = run_cli("summary", os.fsdecode(os.fsencode(logdir)), "--format", fmt,
                       env={"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"})
        err = proc.stderr.decode("utf-8")
        assert proc.returncode == 0 and "Traceback" not in err, err[-2000:]
        out = proc.stdout.decode("utf-8")   # strict: valid UTF-8
        if fmt == "json":
            assert strict_json(out)["runs"] == doc["runs"]
        else:
            assert "run\\xff\\xfe" in out
        assert all(line.startswith("tb-opmode: warning: ") for line in err.splitlines())


# ---------------------------------------------------------------- FIFOs and other non-files

def test_fifos_named_like_sources_do_not_hang(dump: Dump, cnn_logdir: Path, tmp_path: Path) -> None:
    """A FIFO named like a dump file, a log and a profile: nobody will ever write to
    them, so opening one blocks forever. They are skipped with a warning."""
    files = dump.copy_to(tmp_path, skip=("graph_execution_traces",))
    prefix = files["execution"].name.rsplit(".", 1)[0]
    os.mkfifo(tmp_path / f"{prefix}.graph_execution_traces")
    shutil.copyfile(cnn_logdir / "tf_log.txt", tmp_path / "tf_log.txt")
    os.mkfifo(tmp_path / "stuck.log")
    (tmp_path / "r" / "plugins" / "profile" / "s").mkdir(parents=True)
    os.mkfifo(tmp_path / "r" / "plugins" / "profile" / "s" / "vm.xplane.pb")
    proc = run_cli("summary", str(tmp_path), "--format", "json", timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    doc = strict_json(proc.stdout.decode())
    eager, _, functions, _ = dump.expected()
    got_eager, _, got_functions = model_counts(doc)
    assert (got_eager, got_functions) == (eager, functions)
    fifo_warnings = [w for w in doc["warnings"] if "FIFO" in w]
    for name in (f"{prefix}.graph_execution_traces", "stuck.log", "r/plugins/profile/s/vm.xplane.pb"):
        assert any(name in w for w in fifo_warnings), (name, doc["warnings"])
    assert "FIFO" in err


# ---------------------------------------------------------------- unusable input: one line, exit 2

def _unusable(case: str, root: Path, dump: Dump) -> Path:
    logdir = root / "logdir"
    if case == "missing_logdir":
        return logdir
    logdir.mkdir()
    if case == "empty_logdir":
        pass
    elif case == "all_six_empty":
        for path in dump.paths.values():
            (logdir / path.name).write_bytes(b"")
    elif case == "all_six_garbage":
        rng = random.Random(3)
        for path in dump.paths.values():
            (logdir / path.name).write_bytes(rng.randbytes(3000))
    elif case == "all_six_truncated_headers":
        for kind, path in dump.paths.items():
            (logdir / path.name).write_bytes(dump.raw[kind][:7])
    elif case == "garbage_profile":
        d = logdir / "run" / "plugins" / "profile" / "s"
        d.mkdir(parents=True)
        (d / "vm.xplane.pb").write_bytes(random.Random(4).randbytes(5000))
    elif case == "fifo_dump":
        os.mkfifo(logdir / "tfdbg_events.1.host.execution")
    else:
        raise ValueError(case)
    return logdir


@pytest.mark.parametrize("case", ["missing_logdir", "empty_logdir", "all_six_empty", "all_six_garbage",
                                  "all_six_truncated_headers", "garbage_profile", "fifo_dump"])
def test_unusable_input_is_one_line_and_exit_2(dump: Dump, tmp_path: Path, case: str) -> None:
    logdir = _unusable(case, tmp_path, dump)
    for command in (["summary", str(logdir)], ["summary", str(logdir), "--format", "json"],
                    ["explain", str(logdir), "MatMul"]):
        assert_one_line_error(run_cli(*command, timeout=60), str(logdir))


def test_unexpected_error_is_one_line_too(dump: Dump, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (any exception) still gives one line and a non-zero exit, not a traceback."""
    from tb_opmode import join

    dump.copy_to(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(join, "build_run", broken)
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(tmp_path)], stdout=out, stderr=err) == 3
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "RuntimeError" in lines[0] and "boom" in lines[0]
    monkeypatch.setenv("TB_OPMODE_TRACEBACK", "1")
    with pytest.raises(RuntimeError):
        main(["summary", str(tmp_path)], stdout=out, stderr=err)
