"""tb_opmode.read.textlog on real TF text logs (VLOG + ONEDNN_VERBOSE).

The fixtures in tests/data are real lines picked (order kept) from logs that
TF 2.21 and TF 2.13 wrote for ``demo/make_logdir.py``; a session fixture runs
real TF to write a fresh log; damage (binary bytes, long lines, cut lines) is
made by editing real lines.
"""
from __future__ import annotations

import datetime
import importlib.util
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.read.textlog import MAX_LINE, EagerKernel, LogFacts, looks_like_log, parse_lines, read_log, scan
from tb_opmode.read.textlog import split as log_split
from tests.conftest import assert_reaped

DATA = Path(__file__).resolve().parent / "data"
TF221 = DATA / "vlog_tf221.txt"
TF213 = DATA / "vlog_tf213.txt"


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _facts_equal(a: LogFacts, b: LogFacts) -> None:
    for name in ("tf_format", "first_time", "last_time", "onednn_opts", "eager_dispatch",
                 "eager_kernels", "graph_kernels", "graph_executions", "onednn_primitives"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.onednn_time_ms.keys() == b.onednn_time_ms.keys()
    for key in a.onednn_time_ms:
        assert a.onednn_time_ms[key] == pytest.approx(b.onednn_time_ms[key])


# --- the real-line fixtures, exact results ---------------------------------------

def test_tf221_fixture() -> None:
    facts = read_log(str(TF221))
    assert facts.path == str(TF221)
    assert facts.tf_format == "2.21-style"
    assert facts.first_time == 1795982350.258913  # the banner line
    assert facts.last_time == 1795982363.414035
    assert facts.onednn_opts is True
    assert facts.eager_dispatch == Counter({
        "_MklMatMul": 1, "DebugNumericSummaryV2": 1, "Transpose": 3,
        "__inference_multi_step_on_iterator_8237": 1})
    assert facts.eager_kernels == Counter({
        # MatMul is renamed before dispatch and its wrapper runs _MklMatMul
        EagerKernel("_MklMatMul", "_MklMatMul", "DT_FLOAT"): 1,
        # its wrapper was instantiated before the lines kept: kernel unknown
        EagerKernel("DebugNumericSummaryV2", "", ""): 1,
        # dispatched as Transpose, the wrapper runs _MklTranspose
        EagerKernel("Transpose", "_MklTranspose", "DT_FLOAT"): 1,
        # first f64 call instantiates (handle 378), the second reuses it
        EagerKernel("Transpose", "_MklTranspose", "DT_DOUBLE"): 2,
        EagerKernel("__inference_multi_step_on_iterator_8237", "", ""): 1,
    })
    prefix = "StatefulPartitionedCall/functional_1/attention_1/"
    nodes = [prefix + "query_1/MatMul", prefix + "key_1/MatMul", prefix + "value_1/MatMul"]
    # _SOURCE, _Retval and the eager wrappers' nodes are not graph kernels
    assert facts.graph_kernels == {n: ("_MklBatchMatMulV2", "DT_FLOAT") for n in nodes}
    assert facts.graph_executions == Counter({n: 1 for n in nodes})
    assert facts.onednn_primitives == Counter({
        ("gemm_api", "", "undef"): 1, ("reorder", "jit:blk", "undef"): 1,
        ("matmul", "brg_matmul:avx512_core", "undef"): 1})
    assert facts.onednn_time_ms == pytest.approx({
        ("gemm_api", "", "undef"): 24.3459, ("reorder", "jit:blk", "undef"): 0.00195312,
        ("matmul", "brg_matmul:avx512_core", "undef"): 0.0090332})
    assert facts.lines == 42
    assert facts.bytes_read == TF221.stat().st_size
    assert facts.problems == []


def test_tf213_fixture() -> None:
    facts = read_log(str(TF213))
    assert facts.tf_format == "2.13-style"
    # 2.13 writes local date-times: converted with the local time zone
    local = datetime.datetime(2026, 11, 29, 19, 59, 41, 562525).timestamp()
    assert facts.first_time == pytest.approx(local)
    assert facts.last_time == pytest.approx(
        datetime.datetime(2026, 11, 29, 19, 59, 49, 422527).timestamp())
    assert facts.onednn_opts is True  # 2.13 prints the same banner (util/port.cc)
    assert facts.eager_dispatch == Counter({
        "_MklMatMul": 1, "DebugNumericSummaryV2": 1, "Transpose": 3,
        "__inference_train_function_7022": 1})
    assert facts.eager_kernels == Counter({
        EagerKernel("_MklMatMul", "_MklMatMul", "DT_FLOAT"): 1,
        EagerKernel("DebugNumericSummaryV2", "", ""): 1,
        EagerKernel("Transpose", "_MklTranspose", "DT_FLOAT"): 1,
        EagerKernel("Transpose", "_MklTranspose", "DT_DOUBLE"): 2,
        EagerKernel("__inference_train_function_7022", "", ""): 1,
    })
    nodes = ["model/attention/query/einsum/Einsum", "model/attention/key/einsum/Einsum",
             "model/attention/value/einsum/Einsum"]
    assert facts.graph_kernels == {n: ("_MklEinsum", "DT_FLOAT") for n in nodes}
    assert facts.graph_executions == Counter({n: 1 for n in nodes})
    # oneDNN 2.7 (v0 lines: no "v1,primitive," and one field fewer for gemm_api)
    assert facts.onednn_primitives == Counter({
        ("gemm_api", "", "undef"): 1, ("reorder", "jit:blk", "undef"): 1,
        ("matmul", "brg:avx512_core", "undef"): 1})
    assert facts.onednn_time_ms == pytest.approx({
        ("gemm_api", "", "undef"): 29.2048, ("reorder", "jit:blk", "undef"): 0.00512695,
        ("matmul", "brg:avx512_core", "undef"): 0.00585938})
    assert facts.lines == 42
    assert facts.bytes_read == TF213.stat().st_size
    assert facts.problems == []


def _every_fact(facts: LogFacts) -> dict[str, Any]:
    return {f: getattr(facts, f) for f in LogFacts.__dataclass_fields__}


@pytest.mark.parametrize("path", [TF221, TF213])
def test_one_scan_reads_as_the_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """A block is read with one scan for the Process node lines and the handlers' lines
    (``LogParser._read_lines_in_one_scan``) where that reads them as the two scans do: every
    fact equals the two scans' (each block read by ``HANDLED_LINE`` and, between those
    lines, ``PROCESS_NODE_LINE``). The
    real lines four times over, in small blocks: new texts in the first copy, known ones
    after it."""
    log = tmp_path / "four.log"
    log.write_bytes(path.read_bytes() * 4)
    monkeypatch.setattr(scan, "CHUNK_BYTES", 2048)
    taken = []
    at_once = scan.LogParser._read_lines_in_one_scan

    def counted(self: Any, data: bytes, a: int, b: int, base: int) -> bool:
        taken.append(at_once(self, data, a, b, base))
        return taken[-1]

    monkeypatch.setattr(scan.LogParser, "_read_lines_in_one_scan", counted)
    one = read_log(str(log))
    assert sum(taken) > len(taken) // 2  # the one scan read most blocks
    monkeypatch.setattr(scan.LogParser, "_read_lines_in_one_scan", lambda self, data, a, b, base: False)
    two = read_log(str(log))
    assert _every_fact(one) == _every_fact(two)
    assert one.graph_executions == Counter({n: 4 * c for n, c in read_log(str(path)).graph_executions.items()})


@pytest.mark.parametrize("path", [TF221, TF213])
def test_parse_lines_same_as_read_log(path: Path) -> None:
    from_file = read_log(str(path))
    for lines in (_lines(path), path.read_bytes().splitlines()):
        facts = parse_lines(lines, str(path))
        _facts_equal(facts, from_file)
        assert facts.lines == from_file.lines
        assert facts.bytes_read == from_file.bytes_read
        assert facts.problems == []


def test_crlf_line_ends() -> None:
    path_lines = [line.rstrip(b"\n") + b"\r\n" for line in _lines(TF221)]
    _facts_equal(parse_lines(path_lines), read_log(str(TF221)))


def test_without_function_runtime_lines() -> None:
    """TF_CPP_VMODULE=execute=1,executor=1,op_kernel=1 prints no
    process_function_library_runtime lines: wrappers are then remembered per
    dispatch name + device."""
    lines = [x for x in _lines(TF221) if b"process_function_library_runtime" not in x]
    facts = parse_lines(lines)
    assert facts.eager_kernels[EagerKernel("Transpose", "_MklTranspose", "DT_FLOAT")] == 1
    assert facts.eager_kernels[EagerKernel("Transpose", "_MklTranspose", "DT_DOUBLE")] == 2
    assert facts.eager_kernels[EagerKernel("_MklMatMul", "_MklMatMul", "DT_FLOAT")] == 1
    assert facts.graph_kernels == read_log(str(TF221)).graph_kernels


def test_only_onednn_verbose_lines() -> None:
    lines = [x for x in _lines(TF213) if x.startswith(b"onednn_verbose")]
    facts = parse_lines(lines)
    assert facts.tf_format == "" and facts.first_time is None and facts.onednn_opts is None
    assert sum(facts.onednn_primitives.values()) == 3
    assert not facts.eager_dispatch and not facts.graph_kernels


def test_onednn_timestamp_lines() -> None:
    # Real lines written with ONEDNN_VERBOSE_TIMESTAMP=1 by TF 2.21 (oneDNN 3.7)
    # and TF 2.13 (oneDNN 2.7, whose timestamp may be printed as 1.79598e+12).
    lines = [
        b"onednn_verbose,v1,primitive,info,template:timestamp,operation,engine,primitive,"
        b"implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time\n",
        b"onednn_verbose,v1,1795982542301.712891,primitive,exec,cpu,gemm_api,,undef,"
        b"src_f32::blocked:ab:f0 wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,,,8x16:16x16,24.9131\n",
        b"onednn_verbose,v1,1795982542356.281006,primitive,exec,cpu,reorder,jit:blk,undef,"
        b"src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,8x16,3.3689\n",
        b"onednn_verbose,1.79598e+12,exec,cpu,gemm_api,,undef,src_f32::blocked:ab:f0 "
        b"wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,,8x16:16x16,22.6282\n",
        b"onednn_verbose,1795982544764.170898,exec,cpu,reorder,jit:blk,undef,"
        b"src_f32::blocked:ab:f0 dst_f32::blocked:ba:f0,,,8x16,0.0910645\n",
    ]
    facts = parse_lines(lines)
    assert facts.onednn_primitives == Counter({("gemm_api", "", "undef"): 2,
                                               ("reorder", "jit:blk", "undef"): 2})
    assert facts.onednn_time_ms == pytest.approx({("gemm_api", "", "undef"): 24.9131 + 22.6282,
                                                  ("reorder", "jit:blk", "undef"): 3.3689 + 0.0910645})
    assert facts.problems == []


def test_dnnl_verbose_prefix() -> None:
    # oneDNN 1.x-2.x spelled the marker dnnl_verbose (DNNL_VERBOSE=1); same fields.
    line = next(x for x in _lines(TF213) if x.startswith(b"onednn_verbose,exec,cpu,reorder"))
    facts = parse_lines([b"dnnl_" + line[len(b"onednn_"):]])
    assert facts.onednn_primitives == Counter({("reorder", "jit:blk", "undef"): 1})


# --- damage -----------------------------------------------------------------------

def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_binary_and_non_utf8_bytes(tmp_path: Path) -> None:
    lines = _lines(TF221)
    junk1 = b"\x00\x01\x02\xff\xfe\x00garbage\x00\n"
    junk2 = "Ünïcödé ok\n".encode("latin-1")  # not UTF-8
    data = b"".join(lines[:10]) + junk1 + b"".join(lines[10:30]) + junk2 + b"".join(lines[30:])
    facts = read_log(_write(tmp_path, "bin.txt", data))
    _facts_equal(facts, read_log(str(TF221)))
    assert facts.lines == 44
    assert facts.bytes_read == len(data)
    first_junk = len(b"".join(lines[:10]))
    by_kind = {p.message.split(":")[0]: p for p in facts.problems}
    assert set(by_kind) == {"non-UTF-8 bytes", "binary (NUL) bytes"}
    assert by_kind["non-UTF-8 bytes"].offset == first_junk
    assert "2 lines" in by_kind["non-UTF-8 bytes"].message
    assert by_kind["binary (NUL) bytes"].offset == first_junk
    assert "1 line," in by_kind["binary (NUL) bytes"].message
    assert all(p.path.endswith("bin.txt") for p in facts.problems)


# A real line of TF 2.21's VLOG 2 log (HuggingFace BERT's fit, bench/make_hf_bert.py):
# execute.cc writes a string tensor's bytes raw, here a lone 0xC3.
RAW_BYTES_LINE = (b"I0000 00:00:1796587597.967274    4101 execute.cc:353] Full type information with "
                  b"TFT_SHAPE_TENSOR for int32 for eager 'TensorHandle(\"\\032\xc3\\004\\nl\\n\\004seed"
                  b"\\022\\004_Arg\\\",/job:localhost/replica:0/task:0/device:CPU:0*\\007\\n\\001T"
                  b"\\022\\0 [...], shape=[], dtype=DT_STRING, device=\"/job:localhost/replica:0/task:0/"
                  b"device:CPU:0\")\n")


def test_raw_bytes_in_a_tf_line_not_read_are_no_problem(tmp_path: Path) -> None:
    """TF's own unread line with a byte that is not UTF-8 is no damage; the same byte in a
    line a handler reads, or in a line with no TF prefix, still is."""
    lines = _lines(TF221)
    data = b"".join(lines[:10]) + RAW_BYTES_LINE + b"".join(lines[10:])
    facts = read_log(_write(tmp_path, "raw.txt", data))
    assert facts.problems == []
    _facts_equal(facts, read_log(str(TF221)))
    executing = next(line for line in lines if b"] Executing op " in line)
    bad = executing.replace(b"Executing op ", b"Executing op \xc3", 1)
    unprefixed = RAW_BYTES_LINE[RAW_BYTES_LINE.index(b"Full"):]
    for odd in (bad, unprefixed):
        facts = read_log(_write(tmp_path, "odd.txt", b"".join(lines[:10]) + odd + b"".join(lines[10:])))
        assert [p.message.split(":")[0] for p in facts.problems] == ["non-UTF-8 bytes"], odd


def test_utf8_is_not_a_problem(tmp_path: Path) -> None:
    data = TF221.read_bytes() + "path /tmp/dönnées ok\n".encode()
    assert read_log(_write(tmp_path, "utf8.txt", data)).problems == []


@pytest.mark.parametrize("size", [10 * 1024 * 1024, MAX_LINE + 1, 3 * MAX_LINE // 2])
def test_very_long_line(tmp_path: Path, size: int) -> None:
    lines = _lines(TF221)
    long_line = b"x" * size + b"\n"
    data = b"".join(lines[:20]) + long_line + b"".join(lines[20:])
    path = _write(tmp_path, "long.txt", data)
    facts = read_log(path)
    _facts_equal(facts, read_log(str(TF221)))
    assert facts.lines == 43
    assert facts.bytes_read == len(data)
    assert len(facts.problems) == 1
    assert facts.problems[0].offset == len(b"".join(lines[:20]))
    assert facts.problems[0].message.startswith(f"lines longer than {MAX_LINE} bytes")
    same = parse_lines(data.splitlines(keepends=True), path)
    _facts_equal(same, facts)
    assert same.problems == facts.problems and same.bytes_read == facts.bytes_read


def test_long_line_that_is_a_tf_line(tmp_path: Path) -> None:
    """A huge Process node line: its head (name, kernel, T) is still read."""
    line = next(x for x in _lines(TF221) if b"Process node: 865 " in x)
    huge = line.rstrip(b"\n") + b" " + b"y" * (2 * MAX_LINE) + b"\n"
    facts = read_log(_write(tmp_path, "huge.txt", huge + b"".join(_lines(TF221)[:3])))
    node = "StatefulPartitionedCall/functional_1/attention_1/query_1/MatMul"
    assert facts.graph_executions == Counter({node: 1})
    assert facts.graph_kernels == {node: ("_MklBatchMatMulV2", "DT_FLOAT")}
    assert facts.onednn_opts is True


def test_empty_file(tmp_path: Path) -> None:
    facts = read_log(_write(tmp_path, "empty.txt", b""))
    assert facts == LogFacts(path=facts.path)
    assert parse_lines([]) == LogFacts(path="<lines>")
    assert not looks_like_log(facts.path)


def test_last_line_without_newline(tmp_path: Path) -> None:
    data = TF221.read_bytes()
    cut = data[:data.rindex(b"Component function execution succeeded")]
    facts = read_log(_write(tmp_path, "cut.txt", cut))
    assert facts.bytes_read == len(cut)
    assert [p.offset for p in facts.problems] == [cut.rindex(b"\n") + 1]
    assert "no newline" in facts.problems[0].message
    # the last Transpose still counts; its wrapper had been instantiated before
    assert facts.eager_kernels[EagerKernel("Transpose", "_MklTranspose", "DT_DOUBLE")] == 2


def test_interleaved_onednn_and_tf_lines(tmp_path: Path) -> None:
    """A oneDNN line (stdout) cut by the next TF line (stderr), its tail on a
    line of its own: both lines are still read."""
    lines = _lines(TF221)
    garbled = list(lines)
    offsets = []
    for marker in (b"exec,cpu,reorder", b"exec,cpu,matmul"):
        i = next(k for k, x in enumerate(garbled) if marker in x)
        onednn, tf_line = garbled[i], garbled[i + 1]
        assert tf_line.startswith(b"I0000 ")
        cut = onednn.index(b"::")  # inside the memory descriptors
        garbled[i:i + 2] = [onednn[:cut] + tf_line, onednn[cut:]]
        offsets.append(len(b"".join(garbled[:i])))
    data = b"".join(garbled)
    facts = read_log(_write(tmp_path, "garbled.txt", data))
    clean = read_log(str(TF221))
    for name in ("eager_dispatch", "eager_kernels", "graph_kernels", "graph_executions",
                 "onednn_primitives", "last_time"):
        assert getattr(facts, name) == getattr(clean, name), name
    # the cut lines' times are lost
    assert facts.onednn_time_ms == pytest.approx({("gemm_api", "", "undef"): 24.3459})
    assert len(facts.problems) == 1
    assert facts.problems[0].offset == offsets[0]
    assert facts.problems[0].message.startswith("garbled lines")
    assert ": 2 lines, " in facts.problems[0].message
    assert facts.bytes_read == len(data) and facts.lines == clean.lines


def test_tf_line_cut_by_another_tf_line() -> None:
    """A TF line whose end was overwritten: the complete line inside is read,
    the cut "Executing op" is not guessed at."""
    lines = _lines(TF221)
    process = next(x for x in lines if b"Process node: 877 " in x)
    executing = next(x for x in lines if b"Executing op DebugNumericSummaryV2" in x)
    cut = executing[:executing.index(b" in device")]
    facts = parse_lines([cut + process])
    assert facts.eager_dispatch == Counter()
    assert sum(facts.graph_executions.values()) == 1
    assert len(facts.problems) == 1 and facts.problems[0].offset == 0


def test_garbage_only(tmp_path: Path) -> None:
    data = os.urandom(1 << 16) + b"\n] ] onednn_verbose,exec\n" + b"\x00" * 5000
    facts = read_log(_write(tmp_path, "noise.bin", data))
    assert facts.bytes_read == len(data)
    assert not facts.eager_dispatch and not facts.onednn_primitives
    assert facts.tf_format == ""


# --- looks_like_log ---------------------------------------------------------------

def test_looks_like_log(tmp_path: Path) -> None:
    assert looks_like_log(str(TF221))
    assert looks_like_log(str(TF213))
    onednn_only = b"".join(x for x in _lines(TF213) if x.startswith(b"onednn_verbose"))
    assert looks_like_log(_write(tmp_path, "v.txt", onednn_only))
    assert not looks_like_log(_write(tmp_path, "text.txt", b"hello\nworld ] x\n"))
    assert not looks_like_log(_write(tmp_path, "bin", os.urandom(4096)))
    assert not looks_like_log(str(tmp_path / "missing.txt"))
    late = b"x\n" * 40000 + TF221.read_bytes()
    assert not looks_like_log(_write(tmp_path, "late.txt", late))
    assert looks_like_log(str(tmp_path / "late.txt"), head_bytes=len(late))


# --- real TF ---------------------------------------------------------------------

_PROGRAM = """
import tensorflow as tf
x = tf.random.uniform((8, 16), seed=1)
w = tf.random.uniform((16, 16), seed=2)
y = tf.matmul(x, w)
y = tf.transpose(y)
y = tf.transpose(y)
y = tf.transpose(tf.matmul(y, w))
# _EagerConst wrappers: int32, float32, then each reused
consts = [tf.constant([1, 2]), tf.constant([1.0, 2.0]), tf.constant([3, 4]), tf.constant([3.0])]

@tf.function
def f(a, b):
    return tf.matmul(a, b)

f(x, w)
f(x, w)
print("done", float(tf.reduce_sum(y)))
"""


@pytest.fixture(scope="session")
def real_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    path = tmp_path_factory.mktemp("textlog") / "tf_log.txt"
    env = dict(os.environ, TF_CPP_MAX_VLOG_LEVEL="2", ONEDNN_VERBOSE="1",
               TF_ENABLE_ONEDNN_OPTS="1", TF_CPP_MIN_LOG_LEVEL="0")
    with open(path, "wb") as out:
        # ONEDNN_VERBOSE writes to stdout, TF's log to stderr: one file for both.
        proc = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, stdout=out,
                              stderr=subprocess.STDOUT, timeout=600)
    assert proc.returncode == 0, path.read_bytes()[-3000:]
    return path


def test_real_tf_log(real_log: Path) -> None:
    facts = read_log(str(real_log))
    assert facts.tf_format in ("2.21-style", "2.13-style")
    assert facts.onednn_opts is True
    assert facts.first_time is not None and facts.last_time is not None
    assert facts.first_time <= facts.last_time
    # the first call instantiates the wrapper's kernel, later calls reuse it
    assert facts.eager_dispatch["Transpose"] == 3
    assert facts.eager_kernels[EagerKernel("Transpose", "_MklTranspose", "DT_FLOAT")] == 3
    assert facts.eager_dispatch["_MklMatMul"] == 2
    assert "MatMul" not in facts.eager_dispatch
    assert facts.eager_kernels[EagerKernel("_MklMatMul", "_MklMatMul", "DT_FLOAT")] == 2
    # reuse is per wrapper (function + handle), not per op name: the reused
    # int32 _EagerConst is not credited with the float one instantiated last
    const_f32 = EagerKernel("_EagerConst", "_EagerConst", "DT_FLOAT")
    const_i32 = EagerKernel("_EagerConst", "_EagerConst", "DT_INT32")
    assert facts.eager_kernels[const_f32] == 2
    assert facts.eager_kernels[const_i32] >= 2
    assert facts.eager_dispatch["_EagerConst"] == (facts.eager_kernels[const_f32]
                                                   + facts.eager_kernels[const_i32])
    assert sum(facts.eager_kernels.values()) == sum(facts.eager_dispatch.values())
    assert ("_MklMatMul", "DT_FLOAT") in facts.graph_kernels.values()
    assert facts.graph_kernels["MatMul"] == ("_MklMatMul", "DT_FLOAT")
    assert facts.graph_executions["MatMul"] == 2
    assert facts.onednn_primitives
    assert all(v >= 0 for v in facts.onednn_time_ms.values())
    assert facts.bytes_read == real_log.stat().st_size
    assert facts.problems == []
    assert looks_like_log(str(real_log))
    _facts_equal(parse_lines(real_log.read_bytes().splitlines(keepends=True)), facts)


def test_real_tf_log_onednn_off(cnn_off_logdir: Path) -> None:
    """TF_ENABLE_ONEDNN_OPTS=0: no banner at all, stock kernels everywhere, but
    oneDNN still runs gemm_api (stock MatMul calls its sgemm)."""
    facts = read_log(str(cnn_off_logdir / "tf_log.txt"))
    assert facts.onednn_opts is None
    assert facts.eager_dispatch["MatMul"] > 0 and "_MklMatMul" not in facts.eager_dispatch
    assert not any(k.kernel.startswith("_Mkl") for k in facts.eager_kernels)
    assert not any(k.startswith("_Mkl") for k, _ in facts.graph_kernels.values())
    assert {key[0] for key in facts.onednn_primitives} == {"gemm_api"}


# --- a big file read in two halves at once -----------------------------------------

@pytest.mark.parametrize("path", [TF221, TF213])
def test_two_halves_at_any_line_give_the_same_facts(path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    forks: list[int]) -> None:
    """The second half read by a forked child and merged: the facts of one reader,
    wherever the split falls (eager ops, their wrappers and steps run across it)."""
    whole = read_log(str(path))
    data = path.read_bytes()
    splits = [i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n")]
    assert len(splits) == whole.lines - 1
    for split in splits:
        monkeypatch.setattr(log_split, "_split_point", lambda f, p, split=split: split)
        halves = read_log(str(path))
        for name in ("tf_format", "first_time", "last_time", "onednn_opts", "eager_dispatch",
                     "eager_kernels", "graph_kernels", "graph_executions", "kernel_executions",
                     "context_kernels", "context_debug_inputs", "debug_inputs", "debug_targets",
                     "onednn_primitives",
                     "lines", "bytes_read", "problems"):
            assert getattr(halves, name) == getattr(whole, name), (split, name)


def test_split_point_is_a_line_start_near_the_middle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     forks: list[int]) -> None:
    data = TF221.read_bytes() * 40
    path = _write(tmp_path, "big.txt", data)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # whatever this machine has
    monkeypatch.setattr(log_split, "SPLIT_BYTES", len(data) // 2)
    with open(path, "rb") as f:
        split = log_split._split_point(f, path)
    # Work spread evenly: the split lies within one sampled stretch of the middle.
    assert data[split - 1:split] == b"\n"
    assert abs(split - len(data) // 2) <= len(data) // log_split._SAMPLES
    monkeypatch.setattr(log_split, "SPLIT_BYTES", len(data) + 1)
    with open(path, "rb") as f:
        assert log_split._split_point(f, path) == 0


def test_split_point_balances_work_not_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             forks: list[int]) -> None:
    """Three quarters of the bytes are a real line no handler reads, the rest the lines
    of a real run: the split falls among the read lines, past the byte middle, and the
    halves read there give the facts of one reader."""
    skipped = next(line for line in _lines(TF221) if b"Synchronous kernel done" in line)
    run = TF221.read_bytes() * 40
    filler = skipped * (3 * len(run) // len(skipped))
    data = filler + run
    path = _write(tmp_path, "clumped.txt", data)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(log_split, "SPLIT_BYTES", len(data) // 2)
    with open(path, "rb") as f:
        split = log_split._split_point(f, path)
    assert data[split - 1:split] == b"\n" and len(filler) < split < len(data)
    whole = parse_lines(data.splitlines(keepends=True))
    halves = read_log(path)
    for name in ("eager_kernels", "graph_kernels", "graph_executions", "kernel_executions", "lines"):
        assert getattr(halves, name) == getattr(whole, name), name


def test_failed_second_reader_is_logged_and_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    data = TF221.read_bytes() * 3
    path = _write(tmp_path, "three.txt", data)
    monkeypatch.setattr(log_split, "_split_point", lambda f, p: 0)
    want = read_log(path)

    def broken(self: Any, f: Any, parser: Any, start: int = 0, stop: Any = None) -> None:
        raise OSError(5, "input/output error (made by the test)")

    monkeypatch.setattr(log_split, "_split_point", lambda f, p: len(data) // 3)
    real = log_split.read_file
    monkeypatch.setattr(log_split, "read_file",
                        lambda f, parser, start=0, stop=None: (broken(None, f, parser) if parser.tail
                                                               else real(f, parser, start, stop)))
    with caplog.at_level(logging.WARNING, logger=log_split.__name__):
        got = read_log(path)
    assert got.eager_dispatch == want.eager_dispatch and got.graph_kernels == want.graph_kernels
    assert got.lines == want.lines and got.bytes_read == want.bytes_read
    assert any("second reader of a log failed" in r.getMessage() for r in caplog.records)


def test_failed_first_half_leaves_no_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          forks: list[int]) -> None:
    """Reading the first half fails: the error comes out and the second reader is gone."""
    data = TF221.read_bytes() * 3
    path = _write(tmp_path, "three.txt", data)
    monkeypatch.setattr(log_split, "_split_point", lambda f, p: len(data) // 3)
    real = log_split.read_file

    def first_half_fails(f: Any, parser: Any, start: int = 0, stop: Any = None) -> None:
        if not parser.tail:
            raise OSError(5, "input/output error (made by the test)")
        real(f, parser, start, stop)

    monkeypatch.setattr(log_split, "read_file", first_half_fails)
    with pytest.raises(OSError, match="made by the test"):
        read_log(path)
    assert_reaped(forks)
