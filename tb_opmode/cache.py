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
files are only loaded when owned by the current user (they are pickles). The
oldest entries go when there are more than ``MAX_ENTRIES`` or ``MAX_BYTES``.
"""
from __future__ import annotations

import gc
import hashlib
import os
import pickle
import tempfile
from typing import Any, Callable, TypeVar

from . import __version__
from .textlog import LogFacts, read_log
from .tfdbg import DumpSet, FileState, assemble_dump_set, file_identity, read_file_states
from .xplane import Profile, read_profile

__all__ = ["CACHE_ENV", "cache_dir", "cached_dump_set", "cached_profile", "cached_log",
           "MAX_ENTRIES", "MAX_BYTES"]

CACHE_ENV = "TB_OPMODE_CACHE"
_OFF = ("", "0", "off", "none", "false", "no")
_FORMAT = 1
_SUFFIX = ".pickle"
# When a new entry is written, the oldest go until at most this many entries, of at
# most this many bytes in all, remain.
MAX_ENTRIES = 256
MAX_BYTES = 1 << 30
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


# The modules whose code decides what each kind of entry holds: an entry is stale
# once any of them changes (other modules, e.g. the plugin's, may change freely).
_READERS = {
    "dump": ("tfdbg.py", "tfrecord.py", "schema.py", "cache.py"),
    "profile": ("xplane.py", "xevents.py", "wire.py", "tfrecord.py", "schema.py", "cache.py"),
    "log": ("textlog.py", "tfrecord.py", "cache.py"),
}
_fingerprints: dict[str, str] = {}


def _code_fingerprint(kind: str) -> str:
    """Version, size and mtime of the modules that read ``kind`` (stat, not a hash)."""
    found = _fingerprints.get(kind)
    if found is None:
        h = hashlib.sha256(__version__.encode())
        here = os.path.dirname(os.path.abspath(__file__))
        for name in _READERS[kind]:
            try:
                st = os.stat(os.path.join(here, name))
            except OSError:
                continue
            h.update(f"{name}:{st.st_size}:{st.st_mtime_ns};".encode())
        found = _fingerprints[kind] = h.hexdigest()
    return found


def _entry_path(directory: str, key: tuple[str, ...]) -> str:
    digest = hashlib.sha256("\0".join(key).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(directory, digest[:40] + _SUFFIX)


def _load(path: str, key: tuple[str, ...]) -> Any:
    """The value stored under ``key`` at ``path``, or None (missing, corrupt, stale)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if hasattr(os, "getuid") and st.st_uid != os.getuid():
                return None
            # Many small objects: the cyclic GC would run over and over while they load.
            enabled = gc.isenabled()
            gc.disable()
            try:
                entry = pickle.load(f)
            finally:
                if enabled:
                    gc.enable()
    except _LOAD_ERRORS:
        return None
    if (not isinstance(entry, dict) or entry.get("format") != _FORMAT
            or entry.get("code") != _code_fingerprint(key[0]) or entry.get("key") != key):
        return None
    return entry.get("value")


def _usable_dir(directory: str) -> bool:
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.stat(directory)
    except OSError:
        return False
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def _store(directory: str, path: str, key: tuple[str, ...], value: Any) -> None:
    """Write atomically (temp file, then rename); a failure only means no cache."""
    if not _usable_dir(directory):
        return
    entry = {"format": _FORMAT, "code": _code_fingerprint(key[0]), "key": key, "value": value}
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        tmp = ""
    except (OSError, pickle.PicklingError, RecursionError):
        pass
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _prune(directory, os.path.basename(path))


def _prune(directory: str, keep: str) -> None:
    try:
        names = [n for n in os.listdir(directory) if n.endswith(_SUFFIX) and not n.startswith(".")]
    except OSError:
        return
    aged = []
    for name in names:
        try:
            st = os.stat(os.path.join(directory, name))
        except OSError:
            continue
        # The entry just written first, then the newest: those stay.
        aged.append((name == keep, st.st_mtime, st.st_size, name))
    aged.sort(reverse=True)
    total = 0
    for i, (_kept, _mtime, size, name) in enumerate(aged):
        total += size
        if i >= MAX_ENTRIES or (total > MAX_BYTES and i > 0):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def cached_dump_set(directory: str, prefix: str, files: dict[str, str]) -> DumpSet:
    """``tfdbg.read_dump_set``, through the cache: unchanged files are not read again,
    grown ones are read on from where the last read stopped."""
    where = cache_dir()
    if where is None:
        return assemble_dump_set(directory, prefix, files, read_file_states(files))
    key = ("dump", os.path.realpath(directory), prefix)
    path = _entry_path(where, key)
    previous = _load(path, key)
    if not (isinstance(previous, dict)
            and all(isinstance(s, FileState) for s in previous.values())):
        previous = None
    kept = {k: (s, s.identity) for k, s in previous.items()} if previous else {}
    states = read_file_states(files, previous)
    if set(states) != set(kept) or any(
            states[k] is not kept[k][0] or states[k].identity != kept[k][1] for k in states):
        _store(where, path, key, states)
    return assemble_dump_set(directory, prefix, files, states)


def _cached_file(kind: str, path: str, read: Callable[[str], T], expected: type) -> T:
    where = cache_dir()
    identity = file_identity(path)
    if where is None or identity is None:
        return read(path)
    key = (kind, os.path.realpath(path))
    entry_path = _entry_path(where, key)
    found = _load(entry_path, key)
    if (isinstance(found, tuple) and len(found) == 2 and found[0] == identity
            and isinstance(found[1], expected)):
        return found[1]
    value = read(path)
    # Only what was read from a file that did not change meanwhile is worth keeping.
    if file_identity(path) == identity:
        _store(where, entry_path, key, (identity, value))
    return value


def cached_profile(path: str) -> Profile:
    """``xplane.read_profile``, through the cache."""
    return _cached_file("profile", path, read_profile, Profile)


def cached_log(path: str) -> LogFacts:
    """``textlog.read_log``, through the cache (raises OSError as it does)."""
    return _cached_file("log", path, read_log, LogFacts)
