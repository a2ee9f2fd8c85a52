"""What the damage tests share: TFRecord framing walked by hand, the reference counts
from TensorFlow's own protos, the intact dump of a fixture logdir, the CLI run in
process and its warnings. Imported only by modules that need TensorFlow."""
from __future__ import annotations

import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main

from ..conftest import dump_files

# TensorFlow's own reader and protos are the reference: without TF every module that
# imports this one is skipped, with this reason.
debug_event_pb2 = pytest.importorskip("tensorflow.core.protobuf.debug_event_pb2",
                                      reason="the damage tests check against TensorFlow's own protos")
tf_record = pytest.importorskip("tensorflow.python.lib.io.tf_record")

ROOT = Path(__file__).resolve().parent.parent.parent
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




def reference(executions: list[bytes], graphs: list[bytes],
              traces: list[bytes]) -> tuple[Counter[str], Counter[str], Counter[str], int]:
    """(eager op types, graph op types, function calls, graph executions of unknown ops)
    from the given payloads, parsed by TensorFlow's protos: what a reader that reads
    exactly these records and nothing else must report."""
    eager: Counter[str] = Counter()
    functions: Counter[str] = Counter()
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
    graph: Counter[str] = Counter()
    untyped = 0
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

    def expected(self, lost: dict[str, frozenset[int]] | None = None,
                 without: tuple[str, ...] = ()) -> tuple[Counter[str], Counter[str], Counter[str], int]:
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


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[bytes]:
    """The real command in a child process (exit code, raw stdout/stderr bytes)."""
    full_env = dict(os.environ, TB_OPMODE_CACHE="off", **(env or {}))
    full_env.pop("TB_OPMODE_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "tb_opmode.cli", *args], check=False, capture_output=True,
                          timeout=timeout, cwd=str(ROOT), env=full_env)


def model_counts(doc: Any, run: str = ".") -> tuple[Counter[str], Counter[str], Counter[str]]:
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
    found: list[str] = r["warnings"]
    return found


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
    first: str = hits[0]
    return first


def assert_one_line_error(proc: subprocess.CompletedProcess[bytes], *words: str) -> str:
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tb-opmode: error: "), lines
    assert proc.stdout == b""
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]



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

    def expected_graph(self, dump: Dump, lost: set[int]) -> Counter[str]:
        kept = [p for i, p in enumerate(self.payloads) if i not in lost]
        return reference([], dump.payloads("graphs"), kept)[1]

    def index_at(self, offset: int) -> int:
        """The record that spans byte ``offset``."""
        return max(i for i, (off, _) in enumerate(self.records) if off <= offset)



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


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)

