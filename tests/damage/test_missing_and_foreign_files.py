"""Dump sets with empty or missing files, files that are not what their name
says, records of another kind: the rest is read, nothing is invented.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from tb_opmode.read.tfrecord import encode_record

from .helpers import (
    Dump,
    _key,
    _varint,
    assert_one_line_error,
    assert_warned,
    model_counts,
    records,
    run_cli,
    summarize,
    tf_event,
)

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



