"""A stretch of a traces file read record by record, and what any reading of one gives.

In: a ``.graph_execution_traces`` file and a byte range of it. Out: a ``_Part``: counts
per (graph id, op name, output slot), the dtype, digest and device of each first trace,
the wall-time window, records, problems and where the next part begins. The fast reader
(``fastread``) gives parts of the same class, keyed by raw bytes until ``tracejob``
decodes them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...errors import Problem
from .. import fs
from ..tfrecord import RecordReader, frame_whole
from .events import _TRACES, _decoded
from .health import HealthSpec, health_digest, health_dtype, health_spec

__all__: list[str] = []


@dataclass
class _Part:
    """What one stretch of a traces file gave (in file order, parts join up)."""

    start: int
    stop: int = 0             # where the next part begins (the file size once at the end)
    end_offset: int = 0       # RecordReader.end_offset semantics
    fast: bool = False
    # fast: key bytes -> count, first record of each key; exact: (graph, op, slot) -> count
    counts: dict[Any, int] = field(default_factory=dict)
    samples: dict[bytes, bytes] = field(default_factory=dict)
    dtypes: dict[tuple[str, str, int], str] = field(default_factory=dict)
    digests: dict[tuple[str, str, int], int] = field(default_factory=dict)
    specs: dict[tuple[str, str, int], HealthSpec] = field(default_factory=dict)
    devices: dict[tuple[str, str, int], str] = field(default_factory=dict)
    first_payload: bytes = b""
    last_payload: bytes = b""
    first_wall: float = 0.0
    last_wall: float = 0.0
    decoded: bool = False     # exact: any DebugEvent decoded (last_wall is meaningful)
    framed: int = 0           # fast: bytes framed in the window that did not verify
    records: int = 0
    read_problems: list[Problem] = field(default_factory=list)
    frame_problems: list[Problem] = field(default_factory=list)
    truncated: bool = False


def _exact_part(path: str, start: int, stop: int | None) -> _Part:
    """Records of ``path`` from ``start`` up to the first one at or after ``stop``,
    decoded one by one."""
    part = _Part(start=start)
    counts: Counter[tuple[str, str, int]] = Counter()
    dtypes = part.dtypes
    # To the end of a small intact file: framed and checked at once, as the other files
    # are (``_events``); anything else, or a stretch, record by record.
    whole = frame_whole(path, start, reuse=True) if stop is None else None
    reader: Any = RecordReader(path, start=start, stop=stop) if whole is None else \
        _Framed(whole[0], whole[1])
    for event, _what, tr, _stack, _offset, _payload in _decoded(reader, path, _TRACES, part.read_problems):
        wall = event.wall_time
        if not part.first_wall:
            part.first_wall = wall
        part.last_wall = wall
        part.decoded = True
        key = (tr.tfdbg_context_id, tr.op_name, tr.output_slot)
        if key not in counts:
            dtypes[key] = health_dtype(tr.tensor_proto, tr.tensor_debug_mode)
            part.digests[key] = health_digest(tr.tensor_proto, tr.tensor_debug_mode)
            part.specs[key] = health_spec(tr.tensor_proto, tr.tensor_debug_mode)
            part.devices[key] = tr.device_name
        counts[key] += 1
    part.counts = counts
    part.frame_problems = reader.problems
    part.records = reader.records
    part.end_offset = reader.end_offset
    part.truncated = reader.truncated
    reached = reader.end_offset
    if stop is None or reached < stop:  # ended by the end of the file, not by ``stop``
        reached = _size(path)
    part.stop = max(reached, reader.end_offset)
    return part


class _Framed(list[tuple[int, Any]]):
    """The records ``frame_whole`` gave, with what ``_exact_part`` reads of a
    ``RecordReader`` that read them (none cut, no problem)."""

    def __init__(self, records: list[tuple[int, Any]], end: int) -> None:
        super().__init__(records)
        self.records, self.end_offset, self.truncated = len(records), end, False
        self.problems: list[Problem] = []


def _size(path: str) -> int:
    try:
        return fs.stat(path).st_size
    except OSError:
        return 0


# ---------------------------------------------------------------- traces, fast
