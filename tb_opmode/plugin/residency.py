"""Which runs' full views the run store keeps in memory.

In: the names of runs as their full view is published or asked for, and the size of a
scan. Out: which full views to drop to their light form (``loadworker.light_view``:
what the run list shows), least recently used first, beyond ``limit``.

Why: a full view holds the run's dumps, profiles and timeline, and a logdir of many
runs would not fit in TensorBoard's memory; a light one is enough for the run list,
and a route asking for a run held light has its full view rebuilt from the on-disk
cache. Without the cache nothing could rebuild a dropped view cheaply, so every full
view is kept.
"""
from __future__ import annotations

from collections import OrderedDict

from ..read.cache import cache_dir

__all__ = ["Residency"]


class Residency:
    """The names of the runs whose full view is held, least recently used first, at
    most ``limit`` of them while the cache is on. The caller holds its lock."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: OrderedDict[str, None] = OrderedDict()

    def keeps_all(self, runs: int) -> bool:
        """Whether ``runs`` runs loaded together all keep their full view: always
        without the cache, else when they fit."""
        return cache_dir() is None or runs <= self.limit

    def hold(self, name: str) -> list[str]:
        """Mark ``name``'s full view held and used now; return the names whose full
        view to drop (the least recently used beyond ``limit``)."""
        self._held[name] = None
        self._held.move_to_end(name)
        if cache_dir() is None:
            return []
        dropped = []
        while len(self._held) > self.limit:
            old, _ = self._held.popitem(last=False)
            dropped.append(old)
        return dropped

    def used(self, name: str) -> None:
        """``name``'s full view was read: it is the last to be dropped."""
        if name in self._held:
            self._held.move_to_end(name)

    def forget(self, name: str) -> None:
        """``name``'s view is no longer full, or its run is gone."""
        self._held.pop(name, None)
