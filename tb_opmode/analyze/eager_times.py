"""Profiled eager time per line: each eager event of a profile joined to the execution it was.

In: a ``RunModel`` (its profiles' eager op events, in epoch ns; its dumps' eager execution
wall times per (op type, stack), ``DumpSet.eager_times``) and a function naming the line a
(dump, stack) belongs to. Out: ``SiteTimes``: per line, the profiled time and events of its
executions, the profiles' whole eager time, and what to say of lines no profile covered.

A profile event names its op type, not its stack; the dump names both, with the wall time
tfdbg wrote the execution's record at, just after the op ran. Per op type, both in time
order, each event is the first execution of its type recorded at or after its start. A
profile whose clock is estimated (TF 2.13 writes no start time) is joined by order: from
the execution where the dump runs the profile's op types in the same order, each event to
the next execution of its op type.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Optional

from ..model import RunModel
from ..read.tfdbg import DumpSet
from ..read.xtypes import Profile
from ..vocab import is_debug_kernel, is_function

__all__ = ["SiteTimes", "join_times", "EXACT_CLOCKS"]

# Profiles whose events are on the epoch clock the dump's wall times are on (TF 2.13's
# start is estimated from the file's mtime: a join by time would pair the wrong records).
EXACT_CLOCKS = ("profile_start_time", "line_timestamps")
# How long before an event's start its execution's record may be stamped: the two clocks
# are the same clock read in two places.
_SLACK_NS = 1_000

# The estimate is the file's mtime minus the events' span: a copy that did not keep the
# mtime (an object store's upload, ``cp`` without ``-p``) moves it by however long after
# the run the copy was made, and no join is better than a join to the wrong step.
_NOT_JOINED_NOTE = ("not joined to lines: the profile's eager events match the dump's "
                    "executions nowhere near the clock estimated from the profile file's mtime "
                    "(TF 2.13 writes no start time); a copy that did not keep the file's mtime, "
                    "such as an upload to an object store, moves it")

LineOf = Callable[[int, DumpSet, tuple[str, ...]], Hashable]


@dataclass
class SiteTimes:
    """Per line: profiled eager ns and events; the profiles' eager total; the words for a
    line without a time."""

    time_ns: Counter[Hashable] = field(default_factory=Counter)
    events: Counter[Hashable] = field(default_factory=Counter)
    total_ns: int = 0
    uncovered_note: str = "no profile in this run"
    # Lines with executions inside a profile's window (a line may be there and have no
    # event: the profiler did not trace its ops)
    covered: set[Hashable] = field(default_factory=set)


def _events(profile: Profile) -> dict[str, list[tuple[int, int]]]:
    """Op type -> (start, duration) of the profile's eager op events, in time order."""
    out: dict[str, list[tuple[int, int]]] = {}
    for op_type, is_func, start, dur in profile.eager_ops:
        if not is_func and not is_function(op_type) and not is_debug_kernel(op_type):
            out.setdefault(op_type, []).append((start, dur))
    for events in out.values():
        events.sort()
    return out


def _same_host(dump: DumpSet, profile: Profile) -> bool:
    return not dump.host or not profile.host or dump.host == profile.host


def _stamps(dump: DumpSet) -> dict[tuple[str, tuple[str, ...]], array[float]]:
    """(op type, stack) -> wall times (epoch s) of the dump's eager executions."""
    return dump.eager_times


def _lines_and_times(model: RunModel, profile: Profile, line_of: LineOf
                     ) -> Iterator[tuple[str, Hashable, list[int]]]:
    """(op type, line, wall times in ns) per stack of the dumps of the profile's host."""
    for index, dump in enumerate(model.dumps):
        if _same_host(dump, profile):
            for (op_type, stack), walls in _stamps(dump).items():
                yield op_type, line_of(index, dump, stack), [round(w * 1e9) for w in walls]


def _executions(model: RunModel, profile: Profile, line_of: LineOf,
                covered: set[Hashable]) -> dict[str, tuple[list[int], list[Hashable]]]:
    """Op type -> (wall times in ns, line of each), in time order, of the eager executions
    of the dumps of the profile's host; the lines with one in the profile's window added
    to ``covered``."""
    rows: dict[str, list[tuple[int, Hashable]]] = {}
    for op_type, line, ns in _lines_and_times(model, profile, line_of):
        if any(profile.start_ns <= t <= profile.end_ns for t in ns):
            covered.add(line)
        rows.setdefault(op_type, []).extend((t, line) for t in ns)
    out = {}
    for op_type, pairs in rows.items():
        pairs.sort(key=lambda p: p[0])
        out[op_type] = ([p[0] for p in pairs], [p[1] for p in pairs])
    return out


def _join(events: list[tuple[int, int]], walls: list[int], lines: list[Hashable],
          times: SiteTimes) -> None:
    """Each event to the first execution not yet taken recorded at or after its start."""
    j = 0
    for start, dur in events:
        j = max(j, bisect_left(walls, start - _SLACK_NS, j))
        if j >= len(walls):
            return
        times.time_ns[lines[j]] += dur
        times.events[lines[j]] += 1
        j += 1


# An estimated clock (TF 2.13's: the file's mtime is taken for the last event's end, late
# by the time TF took to write the file, seconds on a busy machine) is not used to pair
# events: they are joined by order instead, from where the dump's executions (and
# tf.function calls, whose names tell traces apart) run the profile's in the same order.
_BEFORE_NS = 60_000_000_000  # how much earlier than its estimate the window may have begun
_AFTER_NS = 1_000_000_000
_PROBE = 200  # events compared to find the start
_MATCHED = 0.9  # of them that must match
_RESYNC = 8  # executions looked ahead for an event's op type (an op the profile missed)
_NO_LINE = ""  # a tf.function call: an anchor of the order, no line's time

Sequence = list[tuple[int, str, Hashable]]  # (wall ns, op type or function, line) in time order
Events = list[tuple[int, int, str]]  # (start ns, duration ns, op type or function)


def _sequence(model: RunModel, profile: Profile, line_of: LineOf) -> Sequence:
    rows: Sequence = [(t, op_type, line)
                      for op_type, line, ns in _lines_and_times(model, profile, line_of) for t in ns]
    for dump in model.dumps:
        if _same_host(dump, profile):
            for graph_id, walls in dump.call_times.items():
                name = dump.graphs[graph_id].name if graph_id in dump.graphs else ""
                rows.extend((round(w * 1e9), name, _NO_LINE) for w in walls if name)
    rows.sort(key=lambda r: r[0])
    return rows


def _ordered_events(profile: Profile, known: set[str]) -> Events:
    """The profile's eager events and tf.function calls of op types the dump knows."""
    return sorted((s, d, op) for op, _f, s, d in profile.eager_ops
                  if op in known and not is_debug_kernel(op))


def _score(seq: Sequence, k: int, probe: Events) -> int:
    return sum(1 for i, e in enumerate(probe[:len(seq) - k]) if seq[k + i][1] == e[2])


def _start_index(seq: Sequence, events: Events) -> Optional[int]:
    """Where in ``seq`` the profile's events begin (None: nowhere enough match): the best
    match, the latest of equals (the estimate is late, never early)."""
    probe = events[:_PROBE]
    first_start, _dur, first_op = probe[0]
    lo, hi = first_start - _BEFORE_NS, first_start + _AFTER_NS
    candidates = [k for k, (t, op_type, _l) in enumerate(seq) if op_type == first_op and lo <= t <= hi]
    scored = [(_score(seq, k, probe), k) for k in candidates]
    best = max(scored, default=None)
    if best is None or best[0] < _MATCHED * len(probe):
        return None
    return best[1]


def _join_in_order(seq: Sequence, start: int, events: Events, times: SiteTimes) -> None:
    """Each event to the next execution of its op type, from ``start`` on."""
    j = start
    for _start, dur, op_type in events:
        found = next((i for i in range(j, min(j + _RESYNC, len(seq))) if seq[i][1] == op_type), None)
        if found is None:
            continue
        line = seq[found][2]
        if line != _NO_LINE and not is_function(op_type):
            times.time_ns[line] += dur
            times.events[line] += 1
            times.covered.add(line)
        j = found + 1


def _join_estimated(model: RunModel, profile: Profile, line_of: LineOf, times: SiteTimes) -> bool:
    """The profile's events joined by order; False where the order matches nowhere."""
    seq = _sequence(model, profile, line_of)
    events = _ordered_events(profile, {op for _t, op, _l in seq})
    named = {op for _s, _d, op in events}  # what the profile names (2.13: no calls)
    seq = [row for row in seq if row[1] in named]
    start = _start_index(seq, events) if events else None
    if start is None:
        return False
    times.total_ns += sum(d for _s, d, op in events if not is_function(op))
    _join_in_order(seq, start, events, times)
    return True


def _join_exact(model: RunModel, profile: Profile, line_of: LineOf, times: SiteTimes) -> None:
    executions = _executions(model, profile, line_of, times.covered)
    for op_type, events in _events(profile).items():
        times.total_ns += sum(d for _s, d in events)
        if op_type in executions:
            _join(events, *executions[op_type], times)


def join_times(model: RunModel, line_of: LineOf) -> SiteTimes:
    """Profiled eager time per line (``line_of``'s key), for lines a profile covers."""
    times = SiteTimes()
    if not model.profiles:
        return times
    times.uncovered_note = "outside the profile's window"
    for profile in (p for p in model.profiles if p.eager_ops):
        if profile.time_source in EXACT_CLOCKS:
            _join_exact(model, profile, line_of, times)
        elif not _join_estimated(model, profile, line_of, times):
            times.uncovered_note = _NOT_JOINED_NOTE
    return times
