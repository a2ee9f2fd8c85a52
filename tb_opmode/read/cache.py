"""On-disk cache of what was read from a logdir, so a second look is instant.

In: the files of a run (a tfdbg2 dump set, an XPlane profile, a text log).
Out: the same ``DumpSet``, ``Profile`` or ``LogFacts`` their readers give,
from the cache when the files have not changed since they were last read.

Where: ``$TB_OPMODE_CACHE`` if set (``off``, ``0`` or empty turns the cache
off), else ``$XDG_CACHE_HOME/tb_opmode``, else ``~/.cache/tb_opmode``; never
the logdir. One pickle per dump set / profile / log, named by a hash of its
path, holding the identity (size, mtime, inode, device) of each file it was
read from and a fingerprint of the code that reads it. A file that changed is
read again; a dump file that only grew (a run still writing) is read on from
the offset where the last read stopped (``tfdbg.read_file_states``). A cache
file that cannot be read (corrupt, foreign, from another version) is ignored
and rewritten; a cache directory that cannot be written is not used. Cache
files are only loaded when owned by the current user (they are pickles).

Size: the cache holds an entry for every file of every logdir read (per run a dump
set, the cluster tasks its ``.graphs`` names (``cached_dump_tasks``, asked by
discovery), a profile and the run's light view; the command line adds one summary
document per logdir and arguments, ``load_summary``), bounded by the disk rather
than by a count: entries go, least recently used first, only when the disk's
free space would fall under ``MIN_FREE_FRACTION`` of it (at least
``MIN_FREE_BYTES``), or past ``MAX_BYTES``/``MAX_ENTRIES`` when those are set.
Entries for files that no longer exist go first: each entry begins with a small
header naming its source files, so a sweep (at most every ``SWEEP_SECONDS``, and
before any live entry is evicted) can tell them without unpickling the values.
"""
from __future__ import annotations

import gc
import hashlib
import logging
import os
import pickle
import tempfile
import time
from typing import Any, Callable, Optional, TypeVar

from .. import __version__
from . import fs
from .tasks import dump_tasks
from .textlog import LogFacts, read_log
from .tfdbg import DumpSet, FileState, assemble_dump_set, file_identity, read_file_states
from .xplane import Profile, read_profile

__all__ = ["CACHE_ENV", "cache_dir", "cached_dump_set", "cached_profile", "cached_log",
           "defer_stores", "store_deferred",
           "MAX_ENTRIES", "MAX_BYTES", "MIN_FREE_BYTES", "MIN_FREE_FRACTION", "SWEEP_SECONDS",
           "prune", "load_view", "store_view", "prefetch_files", "cached_dump_tasks", "held_dump_tasks",
           "load_summary", "store_summary"]

CACHE_ENV = "TB_OPMODE_CACHE"
_OFF = ("", "0", "off", "none", "false", "no")
# 2: a header pickle (format, code, key, source files) before the value's pickle.
_FORMAT = 2
_SUFFIX = ".pickle"
_SWEPT = ".swept"
# No bound by count or total size unless set (tests set them): a count below what a
# logdir needs evicts, in order, the very entries the next read of the logdir needs,
# so nothing is ever a hit.
MAX_ENTRIES: Optional[int] = None
MAX_BYTES: Optional[int] = None
# The bound that holds: leave the disk this much free (the larger of the two).
MIN_FREE_BYTES = 1 << 30
MIN_FREE_FRACTION = 0.05
# How often the entries of deleted files are looked for (opening every header).
SWEEP_SECONDS = 3600.0

logger = logging.getLogger(__name__)
_LOAD_ERRORS = (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError,
                IndexError, KeyError, TypeError, ValueError)

T = TypeVar("T")


def cache_dir() -> str | None:
    """The cache directory in force, or None when the cache is turned off."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        if value.strip().lower() in _OFF:
            return None
        return os.path.abspath(os.path.expanduser(value))
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tb_opmode")


# The modules whose code decides what each kind of entry holds (dotted, under the
# package; a package stands for all its modules): an entry is stale once the content
# of any of them changes (other modules, e.g. the plugin's, may change freely). A module
# listed here that does not exist is an error, not a module skipped: a rename must not
# silently stop the invalidation.
_READERS: dict[str, tuple[str, ...]] = {
    "dump": ("read.tfdbg", "read.tfrecord", "read.schema", "read.cache", "errors"),
    "profile": ("read.xplane", "read.xevents", "read.xlayout", "read.xchains", "read.xfields",
                "read.xtypes", "read.wire", "read.tfrecord", "read.schema", "read.cache", "errors"),
    "log": ("read.textlog", "read.trace_log", "read.tfrecord", "read.cache", "errors"),
    "tasks": ("read.tasks", "read.tfdbg", "read.tfrecord", "read.schema", "read.cache", "errors"),
    # A run's light view (what the tab's run list shows) comes from all of the code.
    "view": (),
    # So does the CLI's summary of a logdir (``load_summary``).
    "summary": (),
}
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_fingerprints: dict[str, str] = {}


def _reader_files(kind: str) -> list[str]:
    """The source files of the modules that read ``kind``, relative to the package."""
    names = _READERS[kind]
    if not names:
        return _sources_under("")
    files: list[str] = []
    for name in names:
        path = os.path.join(*name.split("."))
        is_package = os.path.isdir(os.path.join(_PACKAGE_DIR, path))
        files.extend(_sources_under(path) if is_package else [path + ".py"])
    return files


def _sources_under(directory: str) -> list[str]:
    """The ``.py`` files under ``directory`` (relative to the package), sorted."""
    top = os.path.join(_PACKAGE_DIR, directory)
    return sorted(os.path.relpath(os.path.join(d, n), _PACKAGE_DIR)
                  for d, _dirs, files in os.walk(top) for n in files if n.endswith(".py"))


def _code_fingerprint(kind: str) -> str:
    """The version and a hash of the content of the modules that read ``kind`` (once per
    process). Raises ``FileNotFoundError`` if a module ``_READERS`` names is missing."""
    found = _fingerprints.get(kind)
    if found is None:
        h = hashlib.sha256(__version__.encode())
        for name in _reader_files(kind):
            with open(os.path.join(_PACKAGE_DIR, name), "rb") as f:
                h.update(name.encode() + b"\0" + hashlib.sha256(f.read()).digest())
        found = _fingerprints[kind] = h.hexdigest()
    return found


def _entry_path(directory: str, key: tuple[str, ...]) -> str:
    digest = hashlib.sha256("\0".join(key).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(directory, digest[:40] + _SUFFIX)


def _load(path: str, key: tuple[str, ...]) -> Any:
    """The value stored under ``key`` at ``path``, or None (missing, corrupt, stale).
    A failure to read or unpickle an entry is logged (with its traceback when it is not
    plain I/O or a truncated file) and the files are read instead; only the unpickling
    is guarded, so a bug in this module is not mistaken for a damaged entry."""
    code = _code_fingerprint(key[0])
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    except NotADirectoryError as err:
        _say_unusable(os.path.dirname(path), err)
        return None
    except OSError as err:
        logger.warning("opmode cache: cannot open %s (%s); reading the files instead", path, err)
        return None
    with f:
        st = os.fstat(f.fileno())
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            logger.warning("opmode cache: %s is not owned by this user: not loaded", path)
            return None
        # Many small objects: the cyclic GC would run over and over while they load.
        enabled = gc.isenabled()
        gc.disable()
        try:
            header = pickle.load(f)
            if (not isinstance(header, dict) or header.get("format") != _FORMAT
                    or header.get("code") != code or header.get("key") != key):
                return None  # another version's, or another key's (a hash clash): rewritten
            value = pickle.load(f)
        except _LOAD_ERRORS as err:
            # Unpickling damaged or foreign bytes can raise any of these; I/O errors and
            # truncation say enough in one line, anything else gets its traceback.
            plain = isinstance(err, (OSError, EOFError, pickle.UnpicklingError))
            logger.warning("opmode cache: cannot load %s (%s: %s); reading the files instead",
                           path, type(err).__name__, err, exc_info=not plain)
            return None
        finally:
            if enabled:
                gc.enable()
    _touch(path)
    return value


def _touch(path: str) -> None:
    """Mark an entry used: eviction goes by mtime, least recently used first."""
    try:
        os.utime(path)
    except FileNotFoundError:
        pass  # evicted meanwhile by another process
    except OSError as err:  # a read-only cache: its entries are still read
        _say_once(os.path.dirname(path), "touch",
                  f"cannot mark the entries of {os.path.dirname(path)} used ({err}): "
                  "eviction cannot tell which were read last")


def _usable_dir(directory: str) -> bool:
    """Whether entries can be written in ``directory`` (made if missing); if not, said
    once (``_say_unusable``)."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.stat(directory)
    except OSError as err:
        _say_unusable(directory, err)
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        _say_unusable(directory, "not owned by this user")
        return False
    return True


# What was already said of a cache directory in this process, (directory, what): a
# read-only home or a TB_OPMODE_CACHE naming a file fails every entry alike, and a line
# per file read (dozens for a few runs) buried the one thing to do about it.
_said: set[tuple[str, str]] = set()


def _say_once(directory: str, what: str, text: str) -> None:
    """Warn ``text`` the first time ``what`` goes wrong in ``directory``, then no more."""
    if (directory, what) not in _said:
        _said.add((directory, what))
        logger.warning("opmode cache: %s", text)


def _say_unusable(directory: str, why: object) -> None:
    _say_once(directory, "unusable",
              f"{directory} is not a usable directory ({why}): nothing cached, every file "
              f"is read; set {CACHE_ENV} to a writable directory, or to off")


# While set (``defer_stores``), what ``_store`` would write now, to write later.
_deferred: Optional[list[tuple[str, str, tuple[str, ...], Any, list[str]]]] = None


def defer_stores() -> None:
    """Keep what is to be stored from now on, and write it at ``store_deferred``: a forked
    reader sends its result first, its parent waiting on it, and writes the cache after."""
    global _deferred
    if _deferred is None:
        _deferred = []


def store_deferred() -> None:
    """Write what was kept since ``defer_stores``, and store at once from now on."""
    global _deferred
    pending, _deferred = _deferred or [], None
    for args in pending:
        _store(*args)


def _store(directory: str, path: str, key: tuple[str, ...], value: Any,
           sources: list[str]) -> None:
    """Write atomically (temp file, then rename); a failure only means no cache."""
    if _deferred is not None:
        _deferred.append((directory, path, key, value, sources))
        return
    if not _usable_dir(directory):
        return
    header = {"format": _FORMAT, "code": _code_fingerprint(key[0]), "key": key,
              "sources": sources}
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
    except OSError as err:  # a read-only file system, a directory we may not write in
        _say_unusable(directory, err)
        return
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(header, f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        tmp = ""
    except OSError as err:
        logger.warning("opmode cache: cannot write %s: %s", path, err)
    except (pickle.PicklingError, RecursionError, TypeError, AttributeError) as err:
        # A value that cannot be pickled is a bug of ours: say where, and go on uncached.
        logger.warning("opmode cache: cannot store %s (%s: %s)", path, type(err).__name__, err,
                       exc_info=True)
    finally:
        if tmp:
            _unlink(tmp)
    prune(directory, os.path.basename(path))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass  # another process (a worker of the same TensorBoard) took it first
    except OSError as err:
        logger.warning("opmode cache: cannot remove %s: %s", path, err)


def _sources(path: str) -> Optional[list[str]]:
    """The source files named in an entry's header; None if it has none readable."""
    try:
        with open(path, "rb") as f:
            header = pickle.load(f)
    except FileNotFoundError:
        return None
    except _LOAD_ERRORS as err:
        logger.info("opmode cache: unreadable entry %s (%s): removed", path, err)
        return []
    if not isinstance(header, dict) or not isinstance(header.get("sources"), list):
        return []  # an entry of an older format: nothing can use it
    return [p for p in header["sources"] if isinstance(p, str)]


def _sweep(directory: str, names: list[str], keep: str) -> set[str]:
    """Remove the entries whose source files are all gone (or which cannot be read);
    return the names removed."""
    gone = set()
    for name in names:
        if name == keep:
            continue
        path = os.path.join(directory, name)
        found = _sources(path)
        if found is None:
            gone.add(name)  # already removed by someone else
        elif not any(os.path.exists(p) for p in found):
            _unlink(path)
            gone.add(name)
    try:
        with open(os.path.join(directory, _SWEPT), "w", encoding="ascii") as f:
            f.write(f"{time.time():.0f}\n")
    except OSError as err:
        logger.warning("opmode cache: cannot write %s: %s", os.path.join(directory, _SWEPT), err)
    return gone


def _sweep_due(directory: str) -> bool:
    try:
        return time.time() - os.stat(os.path.join(directory, _SWEPT)).st_mtime > SWEEP_SECONDS
    except FileNotFoundError:
        return True
    except OSError as err:
        logger.warning("opmode cache: cannot stat the sweep mark in %s: %s", directory, err)
        return False


def _free_bytes(directory: str) -> tuple[int, int]:
    """(free bytes for us, bytes to keep free) on the cache's file system."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError) as err:
        logger.warning("opmode cache: cannot tell the free space of %s: %s", directory, err)
        return 1 << 62, 0
    size = st.f_blocks * st.f_frsize
    return st.f_bavail * st.f_frsize, max(MIN_FREE_BYTES, int(size * MIN_FREE_FRACTION))


def prune(directory: str, keep: str = "") -> None:
    """Remove entries of deleted files (when a sweep is due), then, least recently
    used first, entries until the disk has its reserve free and the optional
    bounds hold; the entry ``keep`` (just written) stays."""
    swept = _sweep_due(directory)
    if not swept and MAX_BYTES is None and MAX_ENTRIES is None and _has_reserve(directory):
        # Nothing to sweep or evict: the directory is not listed (a store per file of
        # hundreds of runs would list the hundreds of entries each time).
        return
    names = _entry_names(directory)
    if names is None:
        return
    if swept:
        gone = _sweep(directory, names, keep)
        names = [n for n in names if n not in gone]
    _evict_past_bounds(directory, names, keep, swept)


def _has_reserve(directory: str) -> bool:
    free, reserve = _free_bytes(directory)
    return free >= reserve


def _entry_names(directory: str) -> Optional[list[str]]:
    """The names of the entries in the cache directory; None (logged) if it cannot be listed."""
    try:
        return [n for n in os.listdir(directory) if n.endswith(_SUFFIX) and not n.startswith(".")]
    except OSError as err:
        logger.warning("opmode cache: cannot list %s: %s", directory, err)
        return None


def _evict_past_bounds(directory: str, names: list[str], keep: str, swept: bool) -> None:
    """Evict, least recently used first, entries among ``names`` until the disk has its
    reserve free and the optional bounds hold (``swept``: the dead entries are gone)."""
    free, reserve = _free_bytes(directory)
    if _within_bounds(free, reserve, len(names)):
        return  # nothing to evict: no need to stat every entry (a store per run of hundreds)
    aged = _by_age(directory, names, keep)
    excess = _excess_bytes(aged, free, reserve)
    count = len(aged) - MAX_ENTRIES if MAX_ENTRIES is not None else 0
    if excess <= 0 and count <= 0:
        return
    if not swept:
        # Before a live entry goes, the dead ones do, whenever they were last looked for.
        gone = _sweep(directory, [n for *_r, n in aged], keep)
        excess -= _bytes_of(aged, gone)
        count -= len(gone)
        aged = [a for a in aged if a[3] not in gone]
    _evict(directory, aged, excess, count)


def _within_bounds(free: int, reserve: int, entries: int) -> bool:
    """Whether the disk has its reserve free and no bound is set that ``entries`` could pass."""
    return free >= reserve and MAX_BYTES is None and (MAX_ENTRIES is None or entries <= MAX_ENTRIES)


def _bytes_of(aged: list[_Aged], names: set[str]) -> int:
    return sum(size for _k, _m, size, n in aged if n in names)


# An entry as eviction sees it: (whether it is the one to keep, mtime, size, name).
_Aged = tuple[bool, float, int, str]


def _by_age(directory: str, names: list[str], keep: str) -> list[_Aged]:
    """The entries ``names`` that can be stat'ed, the one to keep first, then the most
    recently used: those stay."""
    aged = []
    for name in names:
        try:
            st = os.stat(os.path.join(directory, name))
        except FileNotFoundError:
            continue
        except OSError as err:
            logger.warning("opmode cache: cannot stat %s: %s", name, err)
            continue
        aged.append((name == keep, st.st_mtime, st.st_size, name))
    aged.sort(reverse=True)
    return aged


def _excess_bytes(aged: list[_Aged], free: int, reserve: int) -> int:
    """Bytes to free: what the disk lacks of its reserve, or the entries' bytes past
    ``MAX_BYTES``, whichever is more."""
    excess = max(0, reserve - free)
    if MAX_BYTES is not None:
        excess = max(excess, sum(size for _k, _m, size, _n in aged) - MAX_BYTES)
    return excess


def _evict(directory: str, aged: list[_Aged], excess: int, count: int) -> None:
    """Remove entries, least recently used first (never ``aged[0]``, the one to keep or
    the last used), until ``excess`` bytes and ``count`` entries are gone."""
    for _kept, _mtime, size, name in reversed(aged[1:]):
        if excess <= 0 and count <= 0:
            break
        _unlink(os.path.join(directory, name))
        excess -= size
        count -= 1


def cached_dump_set(directory: str, prefix: str, files: dict[str, str]) -> DumpSet:
    """``tfdbg.read_dump_set``, through the cache: unchanged files are not read again,
    grown ones are read on from where the last read stopped."""
    where = cache_dir()
    if where is None:
        return assemble_dump_set(directory, prefix, files, read_file_states(files))
    key = ("dump", fs.real(directory), prefix)
    path = _entry_path(where, key)
    previous = _load(path, key)
    if not (isinstance(previous, dict)
            and all(isinstance(s, FileState) for s in previous.values())):
        previous = None
    kept = {k: (s, s.identity) for k, s in previous.items()} if previous else {}
    if fs.is_remote(directory):
        # The files the cache does not hold as they are now, fetched in parallel.
        fs.prefetch(_stale(files, previous))
    states = read_file_states(files, previous)
    if set(states) != set(kept) or any(
            states[k] is not kept[k][0] or states[k].identity != kept[k][1] for k in states):
        _store(where, path, key, states, sorted(files.values()))
    return assemble_dump_set(directory, prefix, files, states)


def _cached_file(kind: str, path: str, read: Callable[[str], T], expected: type[T]) -> T:
    where = cache_dir()
    identity = file_identity(path)
    if where is None or identity is None:
        return read(path)
    key = (kind, fs.real(path))
    entry_path = _entry_path(where, key)
    found = _held(entry_path, key, identity, expected)
    if found is not None:
        return found
    value = read(path)
    # Only what was read from a file that did not change meanwhile is worth keeping.
    if file_identity(path) == identity:
        _store(where, entry_path, key, (identity, value), [path])
    return value


def _held(entry_path: str, key: tuple[str, ...], identity: Any, expected: type[T]) -> T | None:
    """The value stored for a file whose identity was ``identity``, else None."""
    found = _load(entry_path, key)
    if (isinstance(found, tuple) and len(found) == 2 and found[0] == identity
            and isinstance(found[1], expected)):
        value: T = found[1]
        return value
    return None


def _stale(files: dict[str, str], previous: dict[str, FileState] | None) -> list[str]:
    """The files of a dump set whose state in ``previous`` is not of the file as it is."""
    return [p for k, p in files.items()
            if not previous or k not in previous or previous[k].identity != file_identity(p)]


def prefetch_files(profiles: list[str], logs: list[str],
                   dump_sets: tuple[tuple[str, str, dict[str, str]], ...] = ()) -> None:
    """Fetch, in parallel, the remote files among these that the cache does not hold as
    they are now (``fs.prefetch``: small objects only; a no-op locally). ``dump_sets``:
    (directory, prefix, files) of dump sets."""
    where = cache_dir()
    todo = []
    for directory, prefix, files in dump_sets:
        if not fs.is_remote(directory):
            continue
        previous = None
        if where is not None:
            key = ("dump", fs.real(directory), prefix)
            previous = _load(_entry_path(where, key), key)
        todo.extend(_stale(files, previous if isinstance(previous, dict) else None))
    for kind, paths in (("profile", profiles), ("log", logs)):
        for path in paths:
            if not fs.is_remote(path):
                continue
            file_key = (kind, fs.real(path))
            found = _load(_entry_path(where, file_key), file_key) if where is not None else None
            if not (isinstance(found, tuple) and len(found) == 2
                    and found[0] == file_identity(path)):
                todo.append(path)
    fs.prefetch(todo)


def load_view(logdir: str, run: str, signature: tuple[tuple[str, int, int], ...]) -> Any:
    """The light view (``loadworker.light_view``) stored for ``run`` of ``logdir``
    when its files had exactly ``signature`` (path, size, mtime of each), else None:
    a warm start of a logdir of many runs lists them all without building one."""
    where = cache_dir()
    if where is None:
        return None
    key = ("view", fs.real(logdir), run)
    found = _load(_entry_path(where, key), key)
    if isinstance(found, tuple) and len(found) == 2 and found[0] == signature:
        return found[1]
    return None


def store_view(logdir: str, run: str, signature: tuple[tuple[str, int, int], ...],
               light: Any) -> None:
    """Keep ``run``'s light view for ``load_view``."""
    where = cache_dir()
    if where is None:
        return
    key = ("view", fs.real(logdir), run)
    _store(where, _entry_path(where, key), key, (signature, light), [p for p, _s, _m in signature])


def load_summary(logdir: str, args: tuple[str, ...], signature: Any) -> Any:
    """The summary (``tb-opmode summary``'s JSON document) stored for ``logdir`` read with
    ``args`` when its runs' sources were exactly ``signature``, else None: a second
    summary of an unchanged logdir unpickles one small document instead of the dump's
    state, and builds no run."""
    where = cache_dir()
    if where is None:
        return None
    key = ("summary", fs.real(logdir), *args)
    found = _load(_entry_path(where, key), key)
    if isinstance(found, tuple) and len(found) == 2 and found[0] == signature:
        return found[1]
    return None


def store_summary(logdir: str, args: tuple[str, ...], signature: Any, doc: Any,
                  sources: list[str]) -> None:
    """Keep ``doc`` for ``load_summary``; ``sources``: the files it was made from."""
    where = cache_dir()
    if where is None:
        return
    key = ("summary", fs.real(logdir), *args)
    _store(where, _entry_path(where, key), key, (signature, doc), sources)


def cached_profile(path: str) -> Profile:
    """``xplane.read_profile``, through the cache."""
    return _cached_file("profile", path, read_profile, Profile)


def cached_dump_tasks(files: dict[str, str]) -> frozenset[str]:
    """``tasks.dump_tasks``, through the cache (keyed by the ``.graphs`` file): what
    discovery asks of every dump set of a logdir of runs at each start."""
    path = files.get("graphs")
    if path is None:
        return frozenset()
    return _cached_file("tasks", path, lambda p: dump_tasks({"graphs": p}), frozenset)


def held_dump_tasks(files: dict[str, str]) -> frozenset[str] | None:
    """What ``cached_dump_tasks`` would answer from the cache alone, without reading the
    file; None when the cache holds nothing for it as it is now."""
    path = files.get("graphs")
    if path is None:
        return frozenset()
    where = cache_dir()
    identity = file_identity(path)
    if where is None or identity is None:
        return None
    key = ("tasks", fs.real(path))
    return _held(_entry_path(where, key), key, identity, frozenset)


def cached_log(path: str) -> LogFacts:
    """``textlog.read_log``, through the cache (raises OSError as it does)."""
    return _cached_file("log", path, read_log, LogFacts)
