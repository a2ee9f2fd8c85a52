"""Per-file partial results of a logdir, their associative merge, and where they are read.

In: the runs discovery found (``sources.RunSources``). Out: one ``Partial`` holding what
reading each source gave: a dump set's ``DumpSet`` (its six files' states, as the
cache keeps them), a profile's ``Profile``, a log's ``LogFacts`` (or why it could not
be read). ``analyze.assemble.build_run`` builds a run from a ``Partial``.

A unit of work (``Unit``) is one source: a dump set, a profile, a log. ``read_unit``
reads one, through the cache (``cache.cached_dump_set`` & co.), and returns the
``Partial`` of that one source; it is the only code that reads sources for a run,
whether in this process (``read_serial``; a big local log there, or else a big local
profile, is read meanwhile by a forked child, on another core), on a local process pool
(``read_pool``, ``tb-opmode summary --workers N``) or on a Dask cluster
(``daskread.read_dask``, ``--dask ADDRESS``). ``merge`` joins two partials: a union of the
sources each holds, so it is associative and commutative (a source read twice gives
the same value; the left one is kept), and ``Partial()`` is its identity. Pools can
therefore merge results as they arrive, in any order and grouping.

Workers read the files by their paths: on a cluster, every worker must see the logdir
at the same path (a shared file system), and have tb_opmode installed.
"""
from __future__ import annotations

import functools
import gc
import logging
import multiprocessing
import os
import pickle
import threading
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from . import forks, fs
from .cache import cached_dump_set, cached_log, cached_profile, defer_stores, store_deferred
from .sources import RunSources, dump_location
from .textlog import LogFacts
from .tfdbg import DumpSet, tracejob
from .xplane import Profile

__all__ = ["Unit", "Partial", "units_of", "read_unit", "merge", "merge_all", "read_serial",
           "read_pool", "read_pickled", "unpickled"]

logger = logging.getLogger(__name__)

# A local log at least this big is read by a forked child while this process reads the
# other sources (a log's facts are small to send back; its reading is all CPU).
FORK_LOG_BYTES = 16 << 20
# With no log so read, a local profile at least this big is (its events go back as
# columns, a few ms to pickle). Not beside a forked log: that child reads the log's
# halves on both cores already, and a third reader only takes turns with them.
FORK_PROFILE_BYTES = 4 << 20


@dataclass(frozen=True)
class Unit:
    """One source to read: ``kind`` "dump" (``path`` the directory, ``prefix`` and
    ``files`` (kind, path) of its set), "profile" or "log" (``path`` the file)."""

    kind: str
    path: str
    prefix: str = ""
    files: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.path, self.prefix)

    def size(self) -> int:
        """Bytes to read (0 for what cannot be sized): pools start the biggest first."""
        total = 0
        for path in [p for _k, p in self.files] or [self.path]:
            try:
                total += os.path.getsize(path)
            except OSError:
                pass  # its reader reports it
        return total


@dataclass
class Partial:
    """What reading some sources gave, keyed by ``Unit.key``. Values are the readers'
    own results; a log that could not be read keeps (errno, strerror)."""

    values: dict[tuple[str, str, str], Any] = field(default_factory=dict)

    def _get(self, unit: Unit) -> Any:
        found = self.values.get(unit.key)
        if found is None:
            # Not read ahead (a source found after the pool ran): read it here, the same way.
            found = read_unit(unit).values[unit.key]
            self.values[unit.key] = found
        return found

    def dump(self, directory: str, prefix: str, files: dict[str, str]) -> DumpSet:
        found: DumpSet = self._get(Unit("dump", directory, prefix, tuple(sorted(files.items()))))
        return found

    def profile(self, path: str) -> Profile:
        found: Profile = self._get(Unit("profile", path))
        return found

    def log(self, path: str) -> LogFacts:
        """The log's facts; raises OSError as ``cache.cached_log`` did when it was read."""
        found = self._get(Unit("log", path))
        if isinstance(found, tuple):
            errno, strerror = found
            raise OSError(errno, strerror, path)
        facts: LogFacts = found
        return facts


def units_of(runs: Iterable[RunSources]) -> list[Unit]:
    """The sources of ``runs``, each once."""
    seen: dict[tuple[str, str, str], Unit] = {}
    for sources in runs:
        for key, files in sorted(sources.dump_sets.items()):
            directory, prefix = dump_location(sources, key)
            unit = Unit("dump", directory, prefix, tuple(sorted(files.items())))
            seen.setdefault(unit.key, unit)
        for path in sources.profiles:
            seen.setdefault(("profile", path, ""), Unit("profile", path))
        for path in sources.logs:
            seen.setdefault(("log", path, ""), Unit("log", path))
    return list(seen.values())


def read_unit(unit: Unit) -> Partial:
    """Read one source (through the cache) into a ``Partial`` of that source alone."""
    if unit.kind == "dump":
        value: Any = cached_dump_set(unit.path, unit.prefix, dict(unit.files))
    elif unit.kind == "profile":
        value = cached_profile(unit.path)
    elif unit.kind == "log":
        try:
            value = cached_log(unit.path)
        except OSError as err:  # vanished or unreadable since discovery: the run says so
            value = (err.errno, err.strerror or str(err))
    else:
        raise ValueError(f"unknown unit kind {unit.kind!r}")
    return Partial({unit.key: value})


def merge(a: Partial, b: Partial) -> Partial:
    """The union of two partials (a new one; neither is changed). Associative and
    commutative up to which of two reads of one source is kept (the left one): they
    are reads of the same file."""
    values = dict(b.values)
    values.update(a.values)
    return Partial(values)


def merge_all(partials: Iterable[Partial]) -> Partial:
    return functools.reduce(merge, partials, Partial())


def read_serial(units: list[Unit]) -> Partial:
    """Each unit in this process, one after the other; but big local logs (or, if there
    is none, the biggest local profile), when there is something else to read, another
    core and no other thread, each in a forked child meanwhile (its result sent back
    pickled; if it fails, it is read here)."""
    forked = _fork_big_units(units) if _can_fork_beside(units) else []
    skip = {unit.key for unit, _child in forked}
    try:
        merged = merge_all(read_unit(u) for u in units if u.key not in skip)
    except BaseException:
        for _unit, child in forked:
            forks.abandon(child)
        raise
    for unit, child in forked:
        merged = merge(merged, _forked_result(unit, child))
    return merged


def _can_fork_beside(units: list[Unit]) -> bool:
    """Whether a unit can be read by a forked child beside the others: there are others,
    another core, and no other thread (a lock a thread holds would stay held in the child)."""
    return (len(units) > 1 and (os.cpu_count() or 1) > 1 and hasattr(os, "fork")
            and threading.active_count() == 1)


def _fork_big_units(units: list[Unit]) -> list[tuple[Unit, tuple[int, int]]]:
    """The units among ``units`` being read by forked children: (unit, child)."""
    forked = []
    for unit in _to_fork(units):
        child = _fork_unit(unit)
        if child is not None:
            forked.append((unit, child))
    return forked


def _to_fork(units: list[Unit]) -> list[Unit]:
    """The big local logs; if there are none, the biggest big local profile."""
    local = [u for u in units if not fs.is_remote(u.path)]
    return _big_logs(local) or _biggest_big_profile(local)


def _big_logs(units: list[Unit]) -> list[Unit]:
    return [u for u in units if u.kind == "log" and u.size() >= FORK_LOG_BYTES]


def _biggest_big_profile(units: list[Unit]) -> list[Unit]:
    sizes = {u: u.size() for u in units if u.kind == "profile"}  # one stat each
    big = [u for u, size in sizes.items() if size >= FORK_PROFILE_BYTES]
    return [max(big, key=sizes.__getitem__)] if big else []


def _fork_unit(unit: Unit) -> tuple[int, int] | None:
    """``read_unit(unit)`` in a forked child: (its pid, the fd its pickled result comes
    on), or None when no child could be started (the unit is then read here). The child
    writes the cache after it sent the result: this process builds the run meanwhile."""
    try:
        return forks.start(functools.partial(_read_pickled_storing_later, unit), after=store_deferred)
    except OSError as err:
        logger.warning("%s: cannot fork to read it beside the rest (%s); read after it", unit.path, err)
        return None


def _read_pickled_storing_later(unit: Unit) -> bytes:  # runs in the child
    defer_stores()
    return read_pickled(unit)


def _forked_result(unit: Unit, child: tuple[int, int]) -> Partial:
    """What the child of ``_fork_unit`` read (the child left writing the cache, reaped by
    ``forks.reap_deferred``); the unit read here if the child failed."""
    status, data = forks.collect(child, reap=False)
    if status == 0:
        try:
            return unpickled(data)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as err:
            logger.warning("%s: the child that read it sent back no result (%s); read again here",
                           unit.path, err)
    else:
        logger.warning("%s: the child that read it failed (wait status %d); read again here",
                       unit.path, status)
    return read_unit(unit)


def read_pickled(unit: Unit) -> bytes:
    """``read_unit`` in a pool's process, its result pickled there: the parent then
    unpickles it with the cyclic GC off (a dump's result is many small objects that all
    live on; the GC would scan them again and again while they load)."""
    return pickle.dumps(read_unit(unit), protocol=pickle.HIGHEST_PROTOCOL)


def unpickled(data: bytes) -> Partial:
    """What ``read_pickled`` returned, unpickled with the cyclic GC off. Raises TypeError
    if it is not a ``Partial``."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        value = pickle.loads(data)
    finally:
        if enabled:
            gc.enable()
    if not isinstance(value, Partial):
        raise TypeError(f"a worker returned {type(value).__name__}, not a Partial")
    return value


def _context() -> multiprocessing.context.BaseContext:
    # fork is cheapest (nothing to import again), and safe while this process runs no
    # other thread (a lock held by a thread would stay held in the child); else spawn.
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _pool_worker() -> None:
    """A pool process reads each traces file in one process: the pool already keeps the
    cores busy, and each of its processes forking two trace readers of its own
    (``tfdbg.tracejob._TraceJob``) would put three processes on every core."""
    tracejob._WORKERS = 1


def read_pool(units: list[Unit], workers: int) -> Partial:
    """The units on a local pool of ``workers`` processes (biggest first), merged as
    they finish."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    ordered = sorted(units, key=lambda u: -u.size())
    merged = Partial()
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                             initializer=_pool_worker) as pool:
        for done in as_completed([pool.submit(read_pickled, u) for u in ordered]):
            merged = merge(merged, unpickled(done.result()))
    return merged
