"""The eager hot spots' choice of frames, on the real stacks of a committed dump.

In: the committed FULL_HEALTH run (``tests/data/fit_full_health``: a few eager ops written
in the workload's own lines, then Keras ``fit``), its dump's stack frames and source files,
and what TF's ``DebugDataReader`` counted of it (``reference.json``). Out: failures when the
line chosen for an eager execution is not the innermost frame of the workload's own code,
when a library frame is taken for the user's, or when the lines' counts do not add up to
DebugDataReader's eager executions. Needs no TensorFlow.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from tb_opmode.analyze.assemble import RunModel, load
from tb_opmode.analyze.eager_sites import choose_frames, eager_sites, enclosing_function, is_user_frame
from tb_opmode.vocab import is_debug_kernel, is_function

from .conftest import Fixture


def _workload_file(model: RunModel) -> str:
    """The script that wrote the fixture, as its dump's frames name it."""
    names = {path for _host, path in model.dumps[0].source_files if path.endswith("regenerate.py")}
    assert len(names) == 1, names
    return names.pop()


def _eager_stacks(model: RunModel) -> list[tuple[str, list[tuple[str, int, str]], int]]:
    dump = model.dumps[0]
    return [(op, [f for f in map(dump.frame, stack) if f is not None], n)
            for (op, stack), n in dump.execution_sites.items()
            if not is_function(op) and not is_debug_kernel(op)]


def _source_line(model: RunModel, location: str) -> str:
    path, _, line = location.rpartition(":")
    for (_host, file_path), lines in model.dumps[0].source_lines.items():
        if file_path == path:
            return lines[int(line) - 1]
    raise AssertionError(f"{path} is not among the dump's source files")


def test_the_users_frame_is_the_innermost_of_the_workload_and_libraries_are_below(
        full_model: RunModel) -> None:
    workload = _workload_file(full_model)
    stacks = _eager_stacks(full_model)
    assert stacks
    for op, frames, _n in stacks:
        user, site, library = choose_frames(frames)
        mine = [i for i, f in enumerate(frames) if f[0] == workload]
        assert user == mine[-1], (op, frames[user] if user is not None else None)
        assert all(not is_user_frame(f[0]) for f in frames[user + 1:]), op
        assert library is not None and library > user and "site-packages" in frames[library][0]
        assert site is not None and site >= user


def test_a_frame_of_this_package_or_the_interpreter_is_never_the_users(full_model: RunModel) -> None:
    """Frames of tb_opmode (``record``'s in-process code), the standard library and
    ``<frozen ...>`` between the user's line and TF's are skipped like TF's own."""
    op, frames, _n = next(s for s in _eager_stacks(full_model) if s[0] == "MatMul")
    user = choose_frames(frames).user
    assert user is not None
    ours = [("/home/u/src/tb_opmode/capture/inprocess.py", 10, "hook"),
            ("/usr/lib/python3.11/contextlib.py", 81, "inner"), ("<frozen runpy>", 88, "_run_code")]
    wrapped = frames[:user + 1] + ours + frames[user + 1:]
    assert choose_frames(wrapped).user == user
    assert not any(is_user_frame(f[0]) for f in ours)


def test_a_comprehensions_frame_stands_for_the_function_around_it() -> None:
    frames = [("/p/train.py", 5, "<module>"), ("/p/train.py", 12, "helper"),
              ("/p/train.py", 13, "<listcomp>"), ("/p/train.py", 13, "<lambda>")]
    assert enclosing_function(frames, 3) == "helper"
    assert enclosing_function(frames, 0) == "<module>"


def test_the_lines_add_up_to_debug_data_readers_eager_executions(
        full_model: RunModel, full_health: Fixture) -> None:
    sites = eager_sites(full_model)
    eager = sum(n for op, n in full_health.reference["eager"].items() if not is_debug_kernel(op))
    assert sum(s.executions for s in sites) == eager
    workload = _workload_file(full_model)
    assert all(s.user_location.startswith(workload + ":") for s in sites)
    # The workload's own tf.matmul line issued its MatMul; its model.fit line the fit's
    # eager ops, through Keras' fit.
    matmul = [s for s in sites if "MatMul" in s.op_types]
    assert len(matmul) == 1 and "tf.matmul" in _source_line(full_model, matmul[0].user_location)
    assert matmul[0].location == matmul[0].user_location
    fit = [s for s in sites if "model.fit(" in _source_line(full_model, s.user_location)]
    assert len(fit) == 1 and fit[0].library_function == "fit"
    assert os.path.basename(fit[0].library_location.rpartition(":")[0]) == "trainer.py"


def test_ranked_by_executions_without_a_joined_profile(no_tensor_model: RunModel) -> None:
    sites = eager_sites(no_tensor_model)
    assert sites and all(s.time_ns is None and s.time_note for s in sites)
    assert [s.executions for s in sites] == sorted((s.executions for s in sites), reverse=True)
    assert abs(sum(s.share for s in sites) - 1.0) < 1e-9


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            return value, i


def _without_task_environment(xspace: bytes) -> bytes:
    """The XSpace with its ``Task Environment`` plane dropped, as TF 2.13 writes it: read at
    the protobuf wire level here, sharing nothing with the product's reader (field 1 of
    XSpace is a plane; field 2 of XPlane its name)."""
    out, i = bytearray(), 0
    while i < len(xspace):
        start = i
        key, i = _varint(xspace, i)
        assert key & 7 == 2, key  # XSpace's fields are all length-delimited
        size, i = _varint(xspace, i)
        body, i = xspace[i:i + size], i + size
        if key >> 3 != 1 or b"\x12\x10Task Environment" not in body:
            out += xspace[start:i]
    assert len(out) < len(xspace), "no Task Environment plane to drop"
    return bytes(out)


def _as_tf213_profile(full_health: Fixture, root: Path, shift_s: int) -> RunModel:
    """A copy of the run whose profile has no start time (TF 2.13's), its mtime moved by
    ``shift_s`` from the one the run left."""
    copy = root / f"shift_{shift_s}"
    shutil.copytree(full_health.directory, copy)  # keeps the mtimes
    (xplane,) = copy.glob("plugins/profile/*/*.xplane.pb")
    st = xplane.stat()
    xplane.write_bytes(_without_task_environment(xplane.read_bytes()))
    moved = st.st_mtime_ns + shift_s * 1_000_000_000
    os.utime(xplane, ns=(moved, moved))
    (model,) = load(str(copy))
    assert [p.time_source for p in model.profiles] == ["file_mtime"]
    return model


def test_a_profile_without_a_start_time_is_joined_by_its_mtime_or_says_why_not(
        full_health: Fixture, full_model: RunModel, tmp_path: Path) -> None:
    """With the mtime the run left, the estimated clock finds the lines the exact one does;
    with the mtime of a copy made an hour later (an upload to an object store), nothing is
    joined and every line says why, rather than taking another step's events."""
    exact = {s.user_location: s.time_ns for s in eager_sites(full_model)}
    assert any(exact.values())
    estimated = {s.user_location: s.time_ns
                 for s in eager_sites(_as_tf213_profile(full_health, tmp_path, 0))}
    assert {k for k, v in estimated.items() if v} == {k for k, v in exact.items() if v}
    late = eager_sites(_as_tf213_profile(full_health, tmp_path, 3600))
    assert late and all(s.time_ns is None for s in late)
    assert {s.time_note for s in late} == {
        "not joined to lines: the profile's eager events match the dump's executions nowhere "
        "near the clock estimated from the profile file's mtime (TF 2.13 writes no start "
        "time); a copy that did not keep the file's mtime, such as an upload to an object "
        "store, moves it"}
