"""What discovery learnt of a file, kept while the file stays as it was.

In: a key (a kind and a path), the identity of the file(s) the value comes from, and
how to compute it. Out: the value, computed again only when the identity changed, so
that the tab's periodic discovery does not parse an unchanged log again (the disk
cache may be off). One entry per key, replaced when its files change; at most
``MAX_ENTRIES``, the least recently used going first.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, TypeVar

__all__ = ["Memo", "memo", "MAX_ENTRIES"]

# Entries kept: a few per run (its dump sets' tasks and run ids, its logs' heads and
# evidence), for logdirs of thousands of runs.
MAX_ENTRIES = 1 << 15

T = TypeVar("T")


class Memo:
    """(kind, path) -> (identity of the files, value), least recently used out first.
    Safe to use from several threads."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def known(self, key: tuple[str, str], identity: Any) -> tuple[bool, Any]:
        """(True, the value) if one is kept for ``key`` as its files are (``identity``,
        None for files that cannot be told), else (False, None)."""
        with self._lock:
            found = self._entries.get(key)
            if found is None or identity is None or found[0] != identity:
                return False, None
            self._entries.move_to_end(key)
            return True, found[1]

    def put(self, key: tuple[str, str], identity: Any, value: Any) -> None:
        with self._lock:
            self._entries[key] = (identity, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def get(self, key: tuple[str, str], identity: Any, compute: Callable[[], T]) -> T:
        """The value kept for ``key`` when its files are as they were, else ``compute()``
        (kept under ``identity``)."""
        hit, value = self.known(key, identity)
        if hit:
            known: T = value
            return known
        computed = compute()
        self.put(key, identity, computed)
        return computed

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


memo = Memo(MAX_ENTRIES)
