"""Profiled eager time per line: each eager event of a profile joined to the execution it was.

In: a ``RunModel`` (its profiles' eager op events, in epoch ns; its dumps' eager execution
wall times per (op type, stack), ``DumpSet.eager_times``) and a function naming the line a
(dump, stack) belongs to. Out: ``SiteTimes``: per line, the profiled time and events of its
executions, the profiles' whole eager time, and what to say of lines no profile covered.

A profile event names its op type, not its stack; the dump names both, with the wall time
tfdbg wrote the execution's record at, just after the op ran. Per op type, both in time
order, each event is the first execution of its type recorded at or after its start.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

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


def _stamps(dump: DumpSet) -> dict[tuple[str, tuple[str, ...]], list[float]]:
    """(op type, stack) -> wall times (epoch s) of the dump's eager executions."""
    found: dict[tuple[str, tuple[str, ...]], list[float]] = getattr(
        dump, "eager_times", {})  # until the reader keeps them
    return found


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


def join_times(model: RunModel, line_of: LineOf) -> SiteTimes:
    """Profiled eager time per line (``line_of``'s key), for lines a profile covers."""
    times = SiteTimes()
    exact = [p for p in model.profiles if p.time_source in EXACT_CLOCKS and p.eager_ops]
    if not model.profiles:
        return times
    times.uncovered_note = "outside the profile's window"
    if not exact:
        times.uncovered_note = ("the profile's clock is estimated (no start time in the file): "
                                "its events are not joined to lines")
    for profile in exact:
        executions = _executions(model, profile, line_of, times.covered)
        for op_type, events in _events(profile).items():
            times.total_ns += sum(d for _s, d in events)
            if op_type in executions:
                _join(events, *executions[op_type], times)
    return times
