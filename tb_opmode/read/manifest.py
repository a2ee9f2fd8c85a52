"""What a run recorded by ``tb-opmode record`` says of its own environment and CPU.

In: a run's directory; ``tb-opmode record`` writes ``manifest.json`` there beside the dump.
Out: ``RecordedRun`` (how the run was made: the evidence level, the dump's
``tensor_debug_mode``, the command, the TF version, the window of steps, the job's exit
status (and the signal that ended it, if one did) and wall time, the host it ran on; the TF and oneDNN
environment variables the job had, whether set by the recording or by the user; the CPU's
instruction sets, named as TF's start-up line names them), or None where the directory
holds no readable manifest (a run made by hand, a damaged file: the run is read all the
same, without these facts); ``is_recorded``: whether a directory is such a run. A file that is not one of
ours (no ``format`` of the recording) is ignored, not an error: a user may have any
``manifest.json`` in a logdir.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional

from . import fs

__all__ = ["MANIFEST", "TRACE_LOG", "EagerLine", "RecordedRun", "recorded_run", "is_recorded"]

MANIFEST = "manifest.json"
# The file of TF's line per new trace that ``tb-opmode record`` writes (``capture.inprocess``).
TRACE_LOG = "tf_python.log"
_FORMAT_PREFIX = "tb_opmode.record/"
# Bigger than any manifest record writes; a bigger file is not ours.
_MAX_BYTES = 8 << 20

Frame = tuple[str, int, str]  # (file path, line, function)


class EagerLine(NamedTuple):
    """Eager dispatches of one op type from one stack, as the job counted them."""

    op_type: str
    dispatches: int
    frames: tuple[Frame, ...]  # outermost first: the user's line, then inward to the op
    wall_ns: Optional[int] = None  # the dispatches' wall time, as the job measured it


@dataclass(frozen=True)
class RecordedRun:
    """How a recorded run was made, and the environment and CPU it had."""

    path: str
    environment: dict[str, str]
    # Upper-case instruction-set names (``AVX512_BF16``): /proc/cpuinfo's flags, and the
    # ones TF's own CPU line named; None where the manifest recorded neither.
    cpu_features: Optional[frozenset[str]]
    evidence: str = ""                    # "kernels", "calls", "full"
    dump_mode: Optional[str] = None       # tensor_debug_mode of its dump, None for no dump
    command: tuple[str, ...] = ()
    tensorflow_version: str = ""
    steps: tuple[int, ...] = ()
    exit_status: Optional[int] = None     # the job's, None where it did not end (or unknown)
    signal: Optional[str] = None          # the signal that ended the job ("SIGKILL"), if one did
    duration_s: Optional[float] = None    # the job's wall time
    host: str = ""                        # the host name the job ran on, "" if not recorded
    # How long each trace of the recording process's trace log took, by the trace's number
    # in that log (None: not timed); empty where the job did not record them.
    trace_seconds: tuple[Optional[float], ...] = ()
    # The recording process's eager dispatches per (op type, stack) (``tb-opmode record``
    # at the level with no dump), the commonest; None where the job did not count them.
    eager_lines: Optional[tuple[EagerLine, ...]] = None
    eager_lines_dropped: int = 0  # dispatches of the stacks not kept


def recorded_run(directory: str) -> Optional[RecordedRun]:
    """The manifest of the run in ``directory``, or None (absent, unreadable, not ours)."""
    path = posixpath.join(directory, MANIFEST) if fs.is_remote(directory) else \
        f"{directory.rstrip('/')}/{MANIFEST}"
    try:
        with fs.open_read(path) as f:
            data = f.read(_MAX_BYTES + 1)
        doc = json.loads(data.decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if len(data) > _MAX_BYTES or not isinstance(doc, dict) \
            or not _text(doc, "format").startswith(_FORMAT_PREFIX):
        return None
    command, steps = doc.get("command"), doc.get("steps")
    return RecordedRun(
        path, _environment(doc), _cpu_features(doc),
        evidence=_text(doc, "evidence"), dump_mode=_text(doc, "dump_mode") or None,
        command=tuple(str(c) for c in command) if isinstance(command, list) else (),
        tensorflow_version=_text(doc, "tensorflow_version"),
        steps=tuple(s for s in steps if isinstance(s, int)) if isinstance(steps, list) else (),
        exit_status=_number(doc, "exit_status", int), signal=_text(doc, "signal") or None,
        duration_s=_number(doc, "duration_s", float), host=_text(doc, "host"),
        trace_seconds=_trace_seconds(doc), **_eager_lines(doc))


def _recording_process(doc: dict[str, Any]) -> dict[str, Any]:
    """The facts of the job's process that recorded, {} if none."""
    processes = doc.get("processes")
    recording = next((p for p in processes if isinstance(p, dict) and p.get("recording")), None) \
        if isinstance(processes, list) else None
    return recording or {}


def _trace_seconds(doc: dict[str, Any]) -> tuple[Optional[float], ...]:
    """The recording process's ``trace_seconds`` (numbers or None), else ()."""
    times = _recording_process(doc).get("trace_seconds")
    if not isinstance(times, list):
        return ()
    return tuple(float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
                 for t in times)


def _frame(item: Any) -> Optional[Frame]:
    if isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) \
            and isinstance(item[1], int) and isinstance(item[2], str):
        return (item[0], item[1], item[2])
    return None


def _eager_line(row: Any, frames: list[Optional[Frame]]) -> Optional[EagerLine]:
    """[op type, dispatches, frame numbers(, wall ns)] -> EagerLine; None if it is not laid
    out so."""
    if not (isinstance(row, list) and len(row) in (3, 4) and isinstance(row[0], str)
            and isinstance(row[1], int) and row[1] > 0 and isinstance(row[2], list)):
        return None
    found = [frames[i] if isinstance(i, int) and 0 <= i < len(frames) else None for i in row[2]]
    if None in found:
        return None
    ns = row[3] if len(row) == 4 and isinstance(row[3], int) and row[3] >= 0 else None
    return EagerLine(row[0], row[1], tuple(f for f in found if f is not None), ns)


def _eager_lines(doc: dict[str, Any]) -> dict[str, Any]:
    """``eager_lines`` and ``eager_lines_dropped`` from the recording process's facts (a
    row not laid out as the job writes it counts as dropped)."""
    facts = _recording_process(doc).get("eager_lines")
    if not isinstance(facts, dict):
        return {}
    table = facts.get("frames")
    frames = [_frame(item) for item in table] if isinstance(table, list) else []
    rows = facts.get("dispatches")
    rows = rows if isinstance(rows, list) else []
    lines, dropped = [], _number(facts, "dropped", int) or 0
    for row in rows:
        line = _eager_line(row, frames)
        if line is None:
            dropped += row[1] if isinstance(row, list) and len(row) > 1 and isinstance(row[1], int) else 0
        else:
            lines.append(line)
    return {"eager_lines": tuple(lines), "eager_lines_dropped": dropped}


def is_recorded(directory: str, filenames: list[str]) -> bool:
    """Whether ``directory`` (holding ``filenames``) is a run ``tb-opmode record`` made."""
    if MANIFEST not in filenames:
        return False
    try:
        return f'"format": "{_FORMAT_PREFIX}'.encode() in fs.head(
            directory.rstrip("/") + "/" + MANIFEST, 512)
    except OSError:
        return False


def _text(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    return value if isinstance(value, str) else ""


def _number(doc: dict[str, Any], key: str, kind: type[Any]) -> Any:
    """``doc[key]`` as ``kind`` where it is a number (not a bool), else None."""
    value = doc.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return kind(value) if ok else None


def _environment(doc: dict[str, Any]) -> dict[str, str]:
    env = doc.get("environment") or {}
    out: dict[str, str] = {}
    for part in ("from_the_user", "set_by_record"):  # what the recording set wins
        values = env.get(part) if isinstance(env, dict) else None
        if isinstance(values, dict):
            out.update({str(k): str(v) for k, v in values.items()})
    return out


def _cpu_features(doc: dict[str, Any]) -> Optional[frozenset[str]]:
    cpu = doc.get("cpu")
    if not isinstance(cpu, dict):
        return None
    flags = cpu.get("flags") or []
    guard = cpu.get("tensorflow_cpu_feature_guard") or []
    if not flags and not guard:
        return None
    return frozenset(str(f).upper() for f in [*flags, *guard])
