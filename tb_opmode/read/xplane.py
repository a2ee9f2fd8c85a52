"""Op executions read from a TensorFlow profiler trace (``<host>.xplane.pb``).

In: the path of one ``.xplane.pb`` file (one serialized ``XSpace``, written by
``tf.profiler.experimental.start/stop`` or the Keras TensorBoard callback), or
a log directory to search for such files. Out: a ``Profile`` holding plain
tuples: the eager op executions, the graph op executions with the kernel that
ran, and the ``tf.function`` calls, all in absolute epoch nanoseconds, plus a
list of ``Problem``s. Bad content never raises: it becomes a ``Problem``.

How: ``xevents`` walks the file's planes and lines by their field headers,
has upb parse only the planes' names and metadata, and reads each line's
events in windows of a few MB straight from the file, decoding each window's
events all at once with numpy. Memory is the output plus a few windows, not
the file (upb held three times the file, the decoding arrays as much again).
A damaged event is skipped and counted; the others still read. A broken
protobuf structure (a field running past its message) reads nothing, as
with a protobuf parser.

What the files hold (measured on TF 2.13 and 2.21 CPU profiles):

- Plane ``/host:CPU``; one line per thread (``python``, ``tf_Compute/<id>``,
  ``tf_data_iterator_*``). Event name and display name are interned in
  ``event_metadata``, stat names (and string stat values, as ``ref_value``)
  in ``stat_metadata``.
- Times are stored relative to the start of profiling: line ``timestamp_ns``
  is a few microseconds, not an epoch. TF 2.21 adds a plane
  ``Task Environment`` (2.13 does not) with stat ``profile_start_time``
  (epoch ns), so
  absolute = profile_start_time + line.timestamp_ns + event.offset_ps // 1000
  (checked: it falls between profile_start_time and profile_stop_time, and a
  few ms before the file's mtime). TF 2.13 writes no such plane: the start is
  then estimated as file mtime minus the span of the events, and a note
  says so (``Profile.time_source == "file_mtime"``).
- Eager executions: events (``EagerExecute`` in 2.13 and 2.21) with stats
  ``eager_op`` (op type, or ``__inference_<fn>_<n>`` for a function call) and
  ``is_func``. We key on the stat, not the event name.
- Graph op executions: events named ``<node_name>:<kernel_type>`` whose
  metadata display name is the kernel type, mostly on ``tf_Compute`` lines
  but also on the calling thread when the executor runs inline.
- Async kernels (``IteratorGetNext``, ``_Recv``): TF 2.13 writes a
  ``node:type`` event; TF 2.21 writes ``ExecutorState::ProcessAsync::Start``
  with stats ``name`` and ``kernel_type`` instead (no ``node:type`` event,
  even at host_tracer_level 3), which we turn into a graph op: the launch,
  whose duration excludes the wait for the result.
- ``tf.function`` calls: events named after the Python function with stat
  ``tf_function_call`` (``traced-nonXla`` on a call that traced,
  ``notTraced-nonXla`` otherwise).
- tf.data: each element an iterator produces is an ``Iterator::Root`` event
  (on a ``tf_data_iterator_get_next`` line) with stats ``types`` ("float
  int32") and ``shapes`` ("[?,8,8,3] [?]"), the dataset's element spec, one
  entry per component, as ``IteratorGetNext``'s outputs are; kept once per
  distinct spec.
"""
from __future__ import annotations

import gc
import glob
import os
from collections.abc import Callable
from typing import Any

from ..errors import Problem
from . import fs, xevents
from .op_events import OpEvents
from .xtypes import _EPOCH_MIN_NS, HOST_PLANE, Profile

__all__ = ["Profile", "read_profile", "find_profiles", "HOST_PLANE", "CONSTANT_FOLDING_STEP_ID"]

_TASK_ENV_PLANE = "Task Environment"
_SUFFIX = ".xplane.pb"

# Step id of executors run by GraphRunner / shape inference to evaluate a
# constant subgraph while a function is traced (LogMemory::SpecialStepIds).
# Their ops (seen on the python line inside "tf.function-graph_building":
# ".../moments/Maximum:Maximum", "_send_...:_Send") are not executions of
# the user's graph, so ops under an ExecutorState::Process with this id are
# excluded.
CONSTANT_FOLDING_STEP_ID = -1


def find_profiles(root: str) -> list[str]:
    """Every ``**/plugins/profile/*/*.xplane.pb`` under ``root``, sorted."""
    pattern = os.path.join(glob.escape(root), "**", "plugins", "profile", "*", "*" + _SUFFIX)
    return sorted(glob.glob(pattern, recursive=True))


def _host(path: str) -> str:
    name = os.path.basename(path)
    return name[:-len(_SUFFIX)] if name.endswith(_SUFFIX) else name


def _profile_start(space: Any) -> int | None:
    for plane in space.planes:
        if plane.name == _TASK_ENV_PLANE:
            names = {e.key: e.value.name for e in plane.stat_metadata}
            for stat in plane.stats:
                if names.get(stat.metadata_id) == "profile_start_time":
                    return int(stat.uint64_value or stat.int64_value) or None
    return None


def read_profile(path: str) -> Profile:
    """Read one ``.xplane.pb``. Never raises for unreadable or bad content."""
    # The output is ~a million tuples that all live on: the cyclic GC would scan them
    # again and again for nothing (a third of the read's CPU on a 66 MB profile).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_profile(path)
    finally:
        if enabled:
            gc.enable()


def _read_profile(path: str) -> Profile:
    prof = Profile(path=path, host=_host(path))
    try:
        with fs.open_read(path) as f:
            size = fs.size_of(f)
            mtime_ns = fs.stat(path).st_mtime_ns
            if not size:
                prof.problems.append(Problem(path, 0, "empty file: no XSpace in it"))
                return prof
            try:
                _read_events(_buffered(fs.preader(f), size), size, mtime_ns, prof)
            except xevents.Damaged as e:
                prof = Profile(path=path, host=_host(path))
                prof.problems.append(Problem(path, 0, f"not a complete XSpace protobuf ({size} "
                                                      f"bytes; truncated or not a profile): {e}"))
    except OSError as e:
        prof = Profile(path=path, host=_host(path))
        prof.problems.append(Problem(path, 0, f"cannot read file: {e.strerror or e}"))
    return prof


# Reads within the block last read are served from it, and a read of at most
# _SMALL_READ bytes outside it reads the next _BLOCK bytes: the walk of a plane reads
# each of its thousands of metadata entries by its header and then its bytes (5,600
# reads of a few bytes each for a 0.4 MB profile, the most of its reading), and a file
# no bigger than a block is read once.
_SMALL_READ = 64 << 10
_BLOCK = 1 << 20


def _buffered(pread: Callable[[int, int], bytes], size: int) -> Callable[[int, int], bytes]:
    """``pread`` (n, offset) of a file of ``size`` bytes, through one held block. Safe in
    threads: the block is replaced whole, and two threads missing it both read."""
    held: tuple[int, bytes] = (0, b"")

    def read(n: int, offset: int) -> bytes:
        nonlocal held
        start, data = held
        stop = start + len(data)
        # Past the block's end only where the block ends the file (a short read, as pread).
        if start <= offset and (offset + n <= stop or stop >= size):
            return data[offset - start:offset - start + n]
        if n > _SMALL_READ:
            return pread(n, offset)
        at = 0 if size <= _BLOCK else offset
        data = pread(max(n, _BLOCK), at)
        held = (at, data)
        return data[offset - at:offset - at + n]
    return read


def _read_events(pread: Callable[[int, int], bytes], size: int, mtime_ns: int,
                 prof: Profile) -> None:
    """Read the file's events (``pread(n, offset)``: ``fs.preader``) into the empty
    ``prof``; raises ``xevents.Damaged`` for a broken protobuf structure, ``OSError``."""
    found = xevents.layout(pread, size)
    space = found.space
    if not found.lines:
        names = sorted({p.name for p in space.planes})
        prof.problems.append(Problem(prof.path, 0, f"no {HOST_PLANE} plane (planes: {names or 'none'}); "
                                                   "not a TensorFlow host profile?"))
        return
    planes = xevents.host_planes(found)
    start = _profile_start(space)
    del space, found
    # Twice at most: the lines' timestamps are taken as written before their
    # events; if one is written again later with another value (never by TF),
    # the second pass knows the last one, as a protobuf parser would.
    for _ in range(2):
        base = start
        if base is not None:
            prof.time_source = "profile_start_time"
        elif all(line.timestamp_ns >= _EPOCH_MIN_NS for p in planes for line in p.lines):
            base, prof.time_source = 0, "line_timestamps"
        else:
            base, prof.time_source = 0, "file_mtime"  # shifted below, once the span is known
        if xevents.decode(pread, planes, base, prof):
            break
        prof.eager_ops, prof.graph_ops, prof.function_calls = OpEvents(), OpEvents(), []
        prof.data_thread_ops, prof.graph_tally, prof.eager_tally = [], {}, {}
        prof.iterator_specs, prof.graph_building = [], []
        prof.problems, prof.start_ns, prof.end_ns = [], 0, 0
    if not prof.end_ns:
        prof.problems.append(Problem(prof.path, 0, f"no events on the {HOST_PLANE} plane"))
    elif prof.time_source == "file_mtime":
        shift = mtime_ns - prof.end_ns
        prof.eager_ops = prof.eager_ops.shifted(shift, field=2)
        prof.graph_ops = prof.graph_ops.shifted(shift, field=2)
        prof.function_calls = [(n, s + shift, d) for n, s, d in prof.function_calls]
        prof.graph_building = [(s + shift, d) for s, d in prof.graph_building]
        prof.start_ns += shift
        prof.end_ns += shift
        prof.notes.append(
            "no profile_start_time in the file (TF 2.13 writes none): absolute times "
            "estimated as file mtime minus the span of the events; off by the time TF took "
            "to write the file (milliseconds), more if the file was copied without its mtime")
