"""A dump set's files read into ``FileState``s (unchanged ones reused, grown ones resumed),
and joined into its ``DumpSet``.

In: a dump set's files (kind -> path) and the states of an earlier read, if any. Out:
``read_file_states`` (a state per file), ``assemble_dump_set`` (the ``DumpSet`` of those
states), ``read_dump_set`` (both). A file changed while it was read is read again, once.
"""
from __future__ import annotations

import gc
import os

from ...errors import Problem
from ..schema import EVENT_KINDS
from .dumpset import DUMP_FILE_RE, DumpSet, FileState, Identity, _tail_bytes, file_identity
from .events import _TRACES, _events
from .fold import _FOLDS, _fold_source_files
from .tracejob import _TraceJob
from .traceparts import _size

__all__ = ["read_file_states", "assemble_dump_set", "read_dump_set"]


def _grown(old: FileState, identity: Identity) -> bool:
    size, _mtime, ino, dev = identity
    if old.identity is None or not old.resumable():
        return False
    old_size, _old_mtime, old_ino, old_dev = old.identity
    return (ino, dev) == (old_ino, old_dev) and size > old_size and old.end_offset <= size \
        and _tail_bytes(old.path, old.end_offset) == old.tail_bytes


def read_file_states(files: dict[str, str],
                     previous: dict[str, FileState] | None = None) -> dict[str, FileState]:
    """Read each file of a dump set (kind -> path) into a ``FileState``.

    A state in ``previous`` is reused as it is when its file has not changed
    (same path, size, mtime, inode), and read on from its ``end_offset`` when
    the file only grew; any other change reads the file afresh. The states in
    ``previous`` may be changed in place.
    """
    # Reading makes many small objects that all live on: the cyclic GC would scan them
    # again and again for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_file_states(files, previous or {})
    finally:
        if enabled:
            gc.enable()


def _changed_since(state: FileState) -> str:
    """How ``state``'s file changed since it was sized for reading, in a way that makes
    what was read inconsistent ("" if it did not, or only grew: the readers then all
    read the same prefix). A file that could not be sized was reported by its reader."""
    before = state.identity
    if before is None:
        return ""
    now = file_identity(state.path)
    if now is None:
        return "removed"
    size, _mtime, ino, dev = now
    if (ino, dev) != (before[2], before[3]):
        return "replaced by another file"
    if size < before[0]:
        return f"cut from {before[0]} to {size} bytes"
    return ""


def _run_jobs(jobs: list[tuple[FileState, int]]) -> None:
    """Read each (state, offset to start at) into its state."""
    # The traces file first: its workers run while this process reads the rest.
    trace_job = None
    other = sum(_size(state.path) - start for state, start in jobs if state.kind != _TRACES)
    for state, start in jobs:
        if state.kind == _TRACES:
            trace_job = _TraceJob(state, start, other)
    read = False
    try:
        for state, start in jobs:
            if state.kind == "source_files":
                _fold_source_files(state.part, _events(state, start), state.path)
            elif state.kind != _TRACES:
                _FOLDS[state.kind](state.part, _events(state, start))
        read = True
    finally:
        if trace_job is not None and not read:
            trace_job.abandon()
    if trace_job is not None:
        trace_job.finish()


def _read_file_states(files: dict[str, str],
                      previous: dict[str, FileState]) -> dict[str, FileState]:
    states: dict[str, FileState] = {}
    jobs: list[tuple[FileState, int]] = []
    for kind in EVENT_KINDS:
        path = files.get(kind)
        if path is None:
            continue
        identity = file_identity(path)
        old = previous.get(kind)
        if old is not None and old.path == path and identity is not None:
            if old.identity == identity:
                states[kind] = old
                continue
            if _grown(old, identity):
                if old.truncated:
                    old.frame_problems.clear()
                    old.truncated = False
                old.identity = identity
                jobs.append((old, old.end_offset))
                continue
        jobs.append((FileState(kind, path, identity), 0))
    _run_jobs(jobs)
    # A file cut short, or replaced, while it was read gives counts of neither its old
    # nor its new self (the readers of its parts saw different files): read it again,
    # once, and if it changed again, say that its counts may be mixed.
    again = [i for i, (state, _start) in enumerate(jobs) if _changed_since(state)]
    if again:
        redo = [(FileState(jobs[i][0].kind, jobs[i][0].path, file_identity(jobs[i][0].path)), 0)
                for i in again]
        _run_jobs(redo)
        for i, (state, start) in zip(again, redo):
            why = _changed_since(state)
            if why:
                state.read_problems.append(Problem(state.path, 0, (
                    f"changed while being read ({why}; read again, it changed again): "
                    "counts may be mixed")))
            jobs[i] = (state, start)
    for state, _start in jobs:
        state.tail_bytes = _tail_bytes(state.path, state.end_offset)
        states[state.kind] = state
    return {kind: states[kind] for kind in EVENT_KINDS if kind in states}


_OWNED = {
    "metadata": ("tensorflow_version", "file_version", "run_id"),
    "source_files": ("source_files", "source_lines"),
    "stack_frames": ("stack_frames",),
    "graphs": ("graphs", "devices", "graph_walls"),
    "execution": ("executions", "execution_sites", "execution_dtypes", "tensor_debug_modes",
                  "execution_devices", "call_times", "call_args", "eager_times"),
    _TRACES: ("traces", "trace_dtypes", "trace_digests", "trace_devices", "trace_specs"),
}


def assemble_dump_set(directory: str, prefix: str, files: dict[str, str],
                      states: dict[str, FileState]) -> DumpSet:
    """The ``DumpSet`` of one file set from the states of its files (shared, not copied)."""
    m = DUMP_FILE_RE.match(prefix + ".metadata")
    host = m.group("host") if m else ""
    dump = DumpSet(directory=directory, prefix=prefix, host=host, files=dict(files))
    for kind in EVENT_KINDS:
        if kind not in files:
            dump.problems.append(Problem(os.path.join(directory, f"{prefix}.{kind}"), 0,
                                         f"missing: the dump set has no .{kind} file"))
    for kind in EVENT_KINDS:
        state = states.get(kind)
        if state is None:
            continue
        for name in _OWNED[kind]:
            setattr(dump, name, getattr(state.part, name))
        dump._touch(state.part.first_wall_time)
        dump._touch(state.part.last_wall_time)
        dump.problems.extend(state.read_problems)
        dump.problems.extend(state.frame_problems)
        dump.records += state.records
        dump.bytes_read += state.end_offset
    return dump


def read_dump_set(directory: str, prefix: str, files: dict[str, str]) -> DumpSet:
    """Read the six files of one dump set (missing ones become problems)."""
    return assemble_dump_set(directory, prefix, files, read_file_states(files))
