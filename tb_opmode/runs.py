"""Find the runs under a logdir and the sources that belong to each.

In: a logdir path (and extra log files named by the user). Out: a list of
``RunSources``: which tfdbg2 dump sets, XPlane profiles and text logs make up
each run. Nothing is parsed here except what is needed to attach profiles and
logs to dumps (their host and time window), so this stays cheap.

A run is a directory that holds a dump; its name is its path relative to the
logdir ("." for the logdir itself). A profile belongs to the deepest dump run
whose subtree holds it; failing that, to a dump run on the same host whose
time window overlaps the profile (the Keras callback writes
``logs/fit/<timestamp>/train/plugins/profile/...`` beside a dump in
``logs/fit/``). A profile that belongs to no dump is a run of its own, named by
its TensorBoard run directory (the one holding ``plugins/``). Text logs attach
the same way: same directory (or subtree), then time overlap; a log that
belongs to nothing is a run of its own too.

Only regular files are read: a FIFO, socket or device named like a dump, a
profile or a log would block or never end, so it is listed in
``RunSources.skipped`` instead. File names need not be UTF-8: run names and
the paths shown to people go through ``display`` (undecodable bytes as
``\\xNN``, control characters escaped), so JSON and terminals get valid text.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from .textlog import looks_like_log
from .tfdbg import DUMP_FILE_RE, find_dump_sets

__all__ = ["RunSources", "discover", "LOG_SUFFIXES", "relpath", "display"]

LOG_SUFFIXES = (".txt", ".log", ".out", ".err")
# Clocks of the dump, the profiler and the log all read the same host clock,
# but a profile's window and the dump's can be seconds apart at the edges.
_SLACK_S = 120.0


@dataclass
class RunSources:
    name: str
    directory: str
    dump_sets: dict[str, dict[str, str]] = field(default_factory=dict)
    profiles: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    # (path, why) of files named like a source that are not regular files; not read
    skipped: list[tuple[str, str]] = field(default_factory=list)


# C0 and C1 controls and the Unicode line/paragraph separators: all break or forge lines.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def display(text: str) -> str:
    """``text`` (a path or a name taken from one) as valid, one-line text.

    File names are bytes; Python hands undecodable ones over as lone
    surrogates, which cannot be encoded as UTF-8 (a crash on a strict
    terminal, invalid JSON). Those bytes become ``\\xNN``, and control
    characters (a newline in a file name would forge a line of output)
    become ``\\xNN`` too."""
    if not text.isascii():
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if _CONTROL.search(text):
        text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", text)
    return text


def relpath(path: str, logdir: str) -> str:
    """``path`` relative to ``logdir``, '/'-separated, as display text (see ``display``)."""
    rel = os.path.relpath(path, logdir)
    return "." if rel == os.curdir else display(rel.replace(os.sep, "/"))


def _not_regular(path: str) -> str:
    """Why ``path`` cannot be read as a file ("" if it is a regular file, or vanished)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""  # gone or unreadable: the reader reports it
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _profile_run_dir(path: str) -> str:
    """The TensorBoard run directory of ``<run>/plugins/profile/<session>/<host>.xplane.pb``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(path))))


def _is_profile(path: str) -> bool:
    parts = path.replace(os.sep, "/").split("/")
    return (path.endswith(".xplane.pb") and len(parts) >= 4
            and parts[-4] == "plugins" and parts[-3] == "profile")


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _dump_window(sets: dict[str, dict[str, str]]) -> tuple[float, float, str]:
    """(start, end, host) of a dump directory: metadata's wall time to last write."""
    start, end, hosts = float("inf"), 0.0, set()
    for prefix, files in sets.items():
        m = DUMP_FILE_RE.match(prefix + ".metadata")
        if m:
            hosts.add(m.group("host"))
            start = min(start, float(m.group("ts")))
        for path in files.values():
            end = max(end, _mtime(path))
    host = hosts.pop() if len(hosts) == 1 else ""
    return (start if start != float("inf") else end), end, host


def discover(logdir: str, extra_logs: tuple[str, ...] = ()) -> list[RunSources]:
    """Group the files under ``logdir`` (plus ``extra_logs``) into runs."""
    logdir = os.path.abspath(logdir)
    extra = [os.path.abspath(p) for p in extra_logs]
    windows: dict[str, tuple[float, float, str]] = {}
    runs: dict[str, RunSources] = {}
    profiles: list[str] = []
    logs: list[str] = []
    skipped: dict[str, list[tuple[str, str]]] = {}  # directory -> (path, why)
    for directory, dirnames, filenames in os.walk(logdir, followlinks=False):
        dirnames.sort()
        sets = find_dump_sets(directory)
        for files in sets.values():
            for kind, path in list(files.items()):
                why = _not_regular(path)
                if why:
                    del files[kind]
                    skipped.setdefault(directory, []).append((path, why))
        if sets:
            runs[directory] = RunSources(relpath(directory, logdir), directory, dump_sets=sets)
            windows[directory] = _dump_window(sets)
        for name in sorted(filenames):
            path = os.path.join(directory, name)
            if not (_is_profile(path) or name.endswith(LOG_SUFFIXES)):
                continue
            why = _not_regular(path)
            if why:
                skipped.setdefault(directory, []).append((path, why))
            elif _is_profile(path):
                profiles.append(path)
                # A profile is written when profiling stops, inside the run it profiled.
                t = _mtime(path)
                windows[path] = (t, t, name[:-len(".xplane.pb")])
            elif name.endswith(LOG_SUFFIXES) and looks_like_log(path):
                logs.append(path)
    logs.extend(p for p in extra if p not in logs)
    for path in logs:
        # A log is written up to the end of its process, the dump up to its last op.
        t = _mtime(path)
        windows[path] = (t, t, "")
    dump_dirs = sorted(runs, key=len, reverse=True)  # deepest first

    def attach(path: str, home: str) -> str | None:
        for d in dump_dirs:
            if _within(home, d):
                return d
        span = windows.get(path)
        if span is None:
            return None
        start, end, host = span
        for d in dump_dirs:
            dstart, dend, dhost = windows[d]
            if host and dhost and host != dhost:
                continue
            if start <= dend + _SLACK_S and end >= dstart - _SLACK_S:
                return d
        return None

    for path in profiles:
        owner = attach(path, _profile_run_dir(path))
        if owner is None:
            owner = _profile_run_dir(path)
            runs.setdefault(owner, RunSources(relpath(owner, logdir), owner))
        runs[owner].profiles.append(path)
    for path in logs:
        owner = attach(path, os.path.dirname(path))
        if owner is None and len(runs) == 1 and path in extra:
            owner = next(iter(runs))
        if owner is None:
            owner = os.path.dirname(path)
            runs.setdefault(owner, RunSources(relpath(owner, logdir), owner))
        if path not in runs[owner].logs:
            runs[owner].logs.append(path)
    # A skipped file is reported by the deepest run above it, else by the first run,
    # so that it shows up somewhere.
    by_depth = sorted(runs, key=len, reverse=True)
    for directory, entries in sorted(skipped.items()):
        owner = next((r for r in by_depth if _within(directory, r)), None)
        if owner is None and runs:
            owner = min(runs, key=lambda d: runs[d].name)
        if owner is not None:
            runs[owner].skipped.extend(entries)
    return sorted(runs.values(), key=lambda r: r.name)
