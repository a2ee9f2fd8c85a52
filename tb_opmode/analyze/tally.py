"""A profile's events summed per distinct key, so that each key is classified once.

In: a ``Profile``'s events (eager ``(op type, is a function call, start, duration)``,
graph ``(node, kernel, start, duration)``). Out: an ``EventTally``: per distinct
(op type, is a call), (node, kernel) and kernel, the number of events and their total
duration, in the order each key first occurs.

A profile has millions of events but a few hundred (or thousand) distinct names: what
books events to op types, modes and kernels (``events``, ``kernels``) asks once per key
here, not once per event. The sums are the decoder's (``Profile.graph_tally`` and
``eager_tally``, made a window at a time from the events' metadata ids); for a profile
made otherwise they are made here with ``operator.itemgetter``, ``Counter`` and numpy's
``bincount``: no Python code runs per event. The timeline, which draws each event,
still reads the events themselves.
"""
from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np  # tensorboard depends on numpy

from ..read.xtypes import Profile

__all__ = ["EventTally", "tally"]

# id(profile) -> its tally, dropped when the profile is (a Profile is unhashable).
_TALLIES: dict[int, EventTally] = {}


class EventTally(NamedTuple):
    """Events and total ns per distinct key, each in the order the key first occurs."""

    eager: dict[tuple[str, bool], tuple[int, int]]   # (op type, is a call) -> (events, ns)
    graph: dict[tuple[str, str], tuple[int, int]]    # (node, kernel) -> (events, ns)
    kernels: dict[str, tuple[int, int]]              # graph kernel -> (events, ns)


def tally(prof: Profile) -> EventTally:
    """The profile's events per distinct key: made once per profile."""
    found = _TALLIES.get(id(prof))
    if found is None:
        graph = _decoded(prof.graph_tally, prof.graph_ops) or _sums(prof.graph_ops, itemgetter(0, 1))
        kernels: dict[str, list[int]] = {}
        for (_node, kernel), (n, ns) in graph.items():
            cell = kernels.setdefault(kernel, [0, 0])
            cell[0] += n
            cell[1] += ns
        eager = _decoded(prof.eager_tally, prof.eager_ops) or _sums(prof.eager_ops, itemgetter(0, 1))
        found = EventTally(eager, graph,
                           {k: (n, ns) for k, (n, ns) in kernels.items()})
        _TALLIES[id(prof)] = found
        weakref.finalize(prof, _TALLIES.pop, id(prof), None)
    return found


def _decoded(decoded: dict[Any, list[int]], events: Sequence[Any]) -> dict[Any, tuple[int, int]]:
    """The decoder's own sums of ``events`` (``Profile.graph_tally``, ``eager_tally``)
    where they cover every event; {} where they do not (a profile made otherwise, or
    emptied of its events)."""
    if sum(n for n, _ns in decoded.values()) != len(events):
        return {}
    return {key: (n, ns) for key, (n, ns) in decoded.items()}


def _sums(events: Sequence[tuple[Any, Any, int, int]], key: Any) -> dict[Any, tuple[int, int]]:
    """key(event) -> (events, total of their durations, the 4th field)."""
    if not events:
        return {}
    keys = list(map(key, events))
    counts = Counter(keys)
    slot = {k: i for i, k in enumerate(counts)}
    ids = np.fromiter(map(slot.__getitem__, keys), dtype=np.intp, count=len(keys))
    durations = np.fromiter(map(itemgetter(3), events), dtype=np.float64, count=len(keys))
    # Float sums of integers are exact below 2**53 ns (104 days of one key's time).
    totals = np.bincount(ids, weights=durations, minlength=len(slot)).tolist()
    return {k: (counts[k], int(totals[i])) for k, i in slot.items()}
