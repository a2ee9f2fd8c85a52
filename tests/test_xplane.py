"""The XPlane reader on a profile the real TensorFlow of this venv writes.

The session fixture profiles a few eager ops and three calls of a
tf.function (MatMul + transpose), plus one tf.function whose tracing makes TF
constant-fold a small subgraph (ops that must not count as graph ops). Our
results are checked against the wall clock and against TF's own XSpace class.
"""
from __future__ import annotations

import os
import random
import socket
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.read import wire, xevents, xlayout
from tb_opmode.read.xplane import Profile, find_profiles, read_profile

from .conftest import needs_tensorflow
from .xplane_reference import reference_profile, reference_tally

N_CALLS = 3
N_EAGER = 2
# Ops TF runs while tracing g() to evaluate a constant shape (GraphRunner).
FOLDED = {"Maximum:Maximum", "floordiv:FloorDiv"}


@dataclass
class Run:
    path: Path
    logdir: Path
    t0: int  # wall clock before profiling started
    t1: int  # wall clock after it stopped


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    needs_tensorflow()
    import tensorflow as tf

    logdir = tmp_path_factory.mktemp("profile")
    a = tf.random.normal([8, 16])
    b = tf.random.normal([16, 4])

    @tf.function
    def f(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        return tf.transpose(tf.matmul(x, y))

    @tf.function
    def g(x: tf.Tensor) -> tf.Tensor:
        n = tf.shape(x)[0]
        return tf.reshape(x, tf.stack([tf.maximum(n // 2, 1), -1]))

    f(a, b)  # trace before profiling: the profiled calls only execute
    t0 = time.time_ns()
    tf.profiler.experimental.start(str(logdir))
    for _ in range(N_EAGER):
        tf.matmul(a, b)
        tf.transpose(a)
    for _ in range(N_CALLS):
        f(a, b)
    g(a)  # traced inside the profile
    tf.profiler.experimental.stop()
    t1 = time.time_ns()
    (path,) = logdir.glob("plugins/profile/*/*.xplane.pb")
    return Run(path, logdir, t0, t1)


@pytest.fixture(scope="session")
def prof(run: Run) -> Profile:
    return read_profile(str(run.path))


def _tf_space(path: Path) -> Any:  # TF's own XSpace message
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return space


def test_find_profiles(run: Run, tmp_path: Path) -> None:
    assert find_profiles(str(run.logdir)) == [str(run.path)]
    for rel in ("b/plugins/profile/s2/h2.xplane.pb", "a/train/plugins/profile/s1/h1.xplane.pb",
                "a/plugins/profile/s1/h1.trace.json.gz", "a/plugins/h.xplane.pb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    assert find_profiles(str(tmp_path)) == [
        str(tmp_path / "a/train/plugins/profile/s1/h1.xplane.pb"),
        str(tmp_path / "b/plugins/profile/s2/h2.xplane.pb")]


def _exact_times(run: Run) -> bool:
    """TF 2.21 records profile_start_time; TF 2.13 does not (mtime estimate)."""
    return any(p.name == "Task Environment" for p in _tf_space(run.path).planes)


def test_eager_ops(run: Run, prof: Profile) -> None:
    if _exact_times(run):
        assert prof.problems == []
    else:
        assert prof.problems == []
        assert [n[:36] for n in prof.notes] == ["no profile_start_time in the file (T"]
    assert prof.host == socket.gethostname()
    single = Counter(op for op, is_func, _, _ in prof.eager_ops if not is_func)
    assert single["MatMul"] == N_EAGER and single["Transpose"] == N_EAGER
    funcs = Counter(op.rsplit("_", 1)[0] for op, is_func, _, _ in prof.eager_ops if is_func)
    assert funcs == {"__inference_f": N_CALLS, "__inference_g": 1}


def test_function_calls(prof: Profile) -> None:
    assert Counter(name for name, _, _ in prof.function_calls) == {"f": N_CALLS, "g": 1}


def _onednn_in_this_process() -> bool:
    """Whether the TensorFlow of this process runs oneDNN kernels: by default only on a CPU
    with AVX512_VNNI, AVX512_BF16 or AMX (not on an AVX2 one), else as TF_ENABLE_ONEDNN_OPTS
    says. Asked of TF itself, not assumed of the machine the tests run on."""
    from tensorflow.python.framework import test_util
    return bool(test_util.IsMklEnabled())


def test_graph_ops_name_the_kernel_that_ran(prof: Profile) -> None:
    kernels = Counter((node, kernel) for node, kernel, _, _ in prof.graph_ops)
    # One event per node per function call; eager ops leave no such event. The kernel is
    # the one the executor ran: oneDNN's where TF runs oneDNN here, else the stock one.
    mkl = "_Mkl" if _onednn_in_this_process() else ""
    assert kernels == {("MatMul", f"{mkl}MatMul"): N_CALLS, ("transpose", f"{mkl}Transpose"): N_CALLS}


def test_constant_folding_while_tracing_is_excluded(run: Run, prof: Profile) -> None:
    space = _tf_space(run.path)
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = Counter(plane.event_metadata[e.metadata_id].name for line in plane.lines
                    for e in line.events)
    assert FOLDED <= set(names)  # the file has them...
    ours = {f"{node}:{kernel}" for node, kernel, _, _ in prof.graph_ops}
    assert not ours & FOLDED  # ...we drop them
    assert not any(k in ("_Send", "_Recv") for _, k, _, _ in prof.graph_ops)


def test_times_are_wall_clock(run: Run, prof: Profile) -> None:
    # Exact or estimated, the times fall in the window: the mtime estimate
    # moves every event later by (file written - last event end) >= 0.
    assert prof.time_source == ("profile_start_time" if _exact_times(run) else "file_mtime")
    assert run.t0 <= prof.start_ns < prof.end_ns <= run.t1
    for _, _, start, dur in prof.eager_ops + prof.graph_ops:
        assert run.t0 <= start and start + dur <= run.t1 and dur >= 0
    # start/end span every event on the plane, not only the ops we keep.
    spans = [(s, s + d) for _, _, s, d in prof.eager_ops + prof.graph_ops]
    spans += [(s, s + d) for _, s, d in prof.function_calls]
    assert prof.start_ns <= min(s for s, _ in spans) and max(e for _, e in spans) <= prof.end_ns
    # Lines are aligned with each other: each graph op ran (on a tf_Compute
    # thread) inside one function call executed from the python thread.
    calls = [(s, s + d) for op, is_func, s, d in prof.eager_ops if op.startswith("__inference_f")]
    inside = Counter(next(i for i, (s, e) in enumerate(calls) if s <= start and start + dur <= e)
                     for _, _, start, dur in prof.graph_ops)
    assert inside == {i: 2 for i in range(N_CALLS)}


def test_matches_tensorflows_own_parse(run: Run, prof: Profile) -> None:
    space = _tf_space(run.path)
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    if _exact_times(run):
        (env,) = [p for p in space.planes if p.name == "Task Environment"]
        env_stats = {env.stat_metadata[s.metadata_id].name: s for s in env.stats}
        base = env_stats["profile_start_time"].uint64_value
        assert base <= prof.start_ns and prof.end_ns <= env_stats["profile_stop_time"].uint64_value
    else:
        last = max(line.timestamp_ns + e.offset_ps // 1000 + e.duration_ps // 1000
                   for line in plane.lines for e in line.events)
        base = run.path.stat().st_mtime_ns - last
    stat_name = {k: v.name for k, v in plane.stat_metadata.items()}
    eager, graph, calls = [], [], []
    for line in plane.lines:
        for e in line.events:
            md = plane.event_metadata[e.metadata_id]
            start = base + line.timestamp_ns + e.offset_ps // 1000
            stats = {stat_name[s.metadata_id]: s for s in e.stats}
            if md.name == "EagerExecute":
                eager.append((stat_name[stats["eager_op"].ref_value],
                              bool(stats["is_func"].int64_value), start, e.duration_ps // 1000))
            if "tf_function_call" in stats:
                calls.append((md.name, start, e.duration_ps // 1000))
            if line.name.startswith("tf_Compute/") and md.display_name:
                node, kernel = md.name.rsplit(":", 1)
                assert kernel == md.display_name
                graph.append((node, kernel, start, e.duration_ps // 1000))
    assert sorted(eager) == sorted(prof.eager_ops)
    assert sorted(calls) == sorted(prof.function_calls)
    assert sorted(graph) == sorted(prof.graph_ops)


def test_without_profile_start_time_the_mtime_is_used(run: Run, prof: Profile,
                                                      tmp_path: Path) -> None:
    """TF 2.13 writes no "Task Environment" plane: times come from the mtime."""
    space = _tf_space(run.path)
    keep = [p for p in space.planes if p.name != "Task Environment"]
    del space.planes[:]
    space.planes.extend(keep)
    path = tmp_path / "old.xplane.pb"
    path.write_bytes(space.SerializeToString())
    mtime = prof.end_ns + 5_000_000
    os.utime(path, ns=(mtime, mtime))
    old = read_profile(str(path))
    assert old.time_source == "file_mtime"
    assert old.problems == [] and len(old.notes) == 1
    assert old.notes[0].startswith("no profile_start_time in the file")
    assert old.end_ns == mtime
    shift = mtime - prof.end_ns
    assert old.start_ns == prof.start_ns + shift
    assert old.graph_ops == [(n, k, s + shift, d) for n, k, s, d in prof.graph_ops]
    assert old.eager_ops == [(o, f, s + shift, d) for o, f, s, d in prof.eager_ops]


def _assert_nothing_read(p: Profile, path: Path, words: str) -> None:
    assert (p.eager_ops, p.graph_ops, p.function_calls) == ([], [], [])
    assert len(p.problems) == 1
    assert p.problems[0].path == str(path)
    assert words in p.problems[0].message


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(b"")
    _assert_nothing_read(read_profile(str(path)), path, "empty file")


def test_truncated_file(run: Run, tmp_path: Path) -> None:
    raw = run.path.read_bytes()
    path = tmp_path / "vm.xplane.pb"
    for cut in (1, len(raw) // 2, len(raw) - 100):
        path.write_bytes(raw[:cut])
        _assert_nothing_read(read_profile(str(path)), path, "not a complete XSpace")


def test_garbage_files(tmp_path: Path) -> None:
    rng = random.Random(7)
    path = tmp_path / "vm.xplane.pb"
    samples = [bytes(rng.randrange(256) for _ in range(4096)) for _ in range(20)]
    samples += [b"hello, this is a text file\n" * 10, b"\x00" * 64]
    for raw in samples:
        path.write_bytes(raw)
        p = read_profile(str(path))
        assert (p.eager_ops, p.graph_ops, p.function_calls) == ([], [], [])
        assert len(p.problems) == 1 and p.problems[0].path == str(path)


def test_unreadable_paths(tmp_path: Path) -> None:
    missing = tmp_path / "nope.xplane.pb"
    _assert_nothing_read(read_profile(str(missing)), missing, "cannot read file")
    _assert_nothing_read(read_profile(str(tmp_path)), tmp_path, "cannot read file")


def test_damaged_bytes_never_raise(run: Run, tmp_path: Path) -> None:
    """Flipped bytes in a real profile: a Problem or a sane Profile, never an exception."""
    raw = run.path.read_bytes()
    rng = random.Random(11)
    path = tmp_path / "vm.xplane.pb"
    outcomes: Counter[str] = Counter()
    for _ in range(300):
        data = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        p = read_profile(str(path))
        outcomes["problem" if p.problems else "clean"] += 1
        for op, is_func, start, dur in p.eager_ops:
            assert isinstance(op, str) and isinstance(is_func, bool)
            assert isinstance(start, int) and isinstance(dur, int)
        for node, kernel, start, dur in p.graph_ops:
            assert isinstance(node, str) and isinstance(kernel, str)
            assert isinstance(start, int) and isinstance(dur, int)
    assert outcomes["problem"] > 0


@pytest.mark.parametrize("variant", ["as_is", "small_chunks", "small_windows"])
@pytest.mark.parametrize("which", ["fixture", "bert"])
def test_like_the_plain_reading(run: Run, bert_logdir: Path, monkeypatch: pytest.MonkeyPatch,
                                variant: str, which: str) -> None:
    """read_profile decodes events all at once (tb_opmode.read.wire); the plain
    event-by-event reading of tests/xplane_reference.py must agree, also when
    the scan runs in many chunks, and when each line is read in windows of
    a few hundred bytes (a window holding one event or a few; the windows of
    a constant-folding executor and its ops differ)."""
    path = run.path if which == "fixture" else next(bert_logdir.rglob("*.xplane.pb"))
    if variant == "small_chunks":
        monkeypatch.setattr(wire, "_CHUNK", 7)
    elif variant == "small_windows":
        monkeypatch.setattr(xevents, "_WINDOW", 300)
    ours = read_profile(str(path))
    ref = reference_profile(path.read_bytes(), path.stat().st_mtime_ns)
    assert ref is not None and ref["graph"] and ref["eager"]
    assert ours.problems == []
    assert ours.eager_ops == ref["eager"]
    assert ours.graph_ops == ref["graph"]
    assert list(ours.graph_tally.items()) == reference_tally(ref["graph"])
    assert list(ours.eager_tally.items()) == reference_tally(ref["eager"])
    assert ours.function_calls == ref["calls"]
    assert ours.iterator_specs == ref["iterators"]
    assert (ours.start_ns, ours.end_ns) == (ref["start"], ref["end"])


def test_lines_written_after_the_metadata_read_alike_whole_or_walked(
        run: Run, prof: Profile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plane whose lines follow its metadata (``bench/make_profile.py --scale-from``
    writes them so, TF does not): where the bytes past the first non-line field are
    few, upb finds lines in them and the plane is walked again; where they are many
    (``_REST_MAX``; a repeated 1 GB profile peaked at 5.4 GB parsing them whole), it is
    walked field by field at once. Both read what the profile as TF wrote it reads."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_profile", Path(__file__).resolve().parent.parent / "bench" / "make_profile.py")
    assert spec is not None and spec.loader is not None
    make_profile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_profile)
    make_profile.scale(str(run.path), str(tmp_path), 0)  # one copy of the lines: same events
    (moved,) = tmp_path.glob("plugins/profile/scaled/*.xplane.pb")

    def events(p: Profile) -> tuple[Counter[Any], Counter[Any]]:
        return (Counter((n, k) for n, k, _s, _d in p.graph_ops),
                Counter(e[0] for e in p.eager_ops))

    expected = events(prof)
    assert expected[0] and expected[1]
    assert events(read_profile(str(moved))) == expected  # small: upb, then walked
    monkeypatch.setattr(xlayout, "_REST_MAX", 0)
    assert events(read_profile(str(moved))) == expected  # "big": walked at once
