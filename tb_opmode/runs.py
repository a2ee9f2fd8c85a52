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
``RunSources.skipped`` instead (so is a ``--log`` that is not a regular file).
What discovery could not look at is never dropped silently: an unreadable
directory or log, and a symlink that leads out of the logdir, become
``RunSources.warnings``; a logdir that cannot be listed at all raises
``UnreadableLogdir``.

Symlinks, to files or directories, are followed only when their target
resolves inside the logdir (a link in a logdir must not make us read, or show
in the tab, a file the logdir's owner did not put there); ``--log`` files are
exempt, the user named them. Each real directory is read once: a second path
to it (a link, or a link loop) is skipped with a warning.

File names need not be UTF-8: run names and the paths shown to people go
through ``display`` (undecodable bytes as ``\\xNN``, control characters and
bidirectional-text controls escaped), so JSON and terminals get valid text that
cannot move the cursor, forge a line, or reorder what is shown around it.
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from .textlog import looks_like_log
from .tfdbg import DUMP_FILE_RE, find_dump_sets

__all__ = ["RunSources", "UnreadableLogdir", "discover", "LOG_SUFFIXES", "relpath", "display"]

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
    # (path, message) of what discovery could not or would not look at: unreadable
    # directories and logs, symlinks out of the logdir, second paths to a directory
    warnings: list[tuple[str, str]] = field(default_factory=list)


class UnreadableLogdir(OSError):
    """The logdir exists but cannot be listed (or nothing in it could be): saying
    "nothing found" would send the user looking for files that are there."""

    def __init__(self, logdir: str, reason: str) -> None:
        super().__init__(f"{display(logdir)}: {reason}")
        self.filename = logdir
        self.strerror = reason

    def __str__(self) -> str:
        return str(self.args[0])


# C0 and C1 controls and the Unicode line/paragraph separators break or forge lines;
# the bidirectional controls (LRM/RLM, ALM, LRE..RLO, LRI..PDI) reorder the text
# shown after them, so a name could display as something it is not.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029"
                      "\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")


def display(text: str) -> str:
    """``text`` (a path or a name taken from one) as valid, one-line text.

    File names are bytes; Python hands undecodable ones over as lone
    surrogates, which cannot be encoded as UTF-8 (a crash on a strict
    terminal, invalid JSON). Those bytes become ``\\xNN``, and control
    characters (a newline in a file name would forge a line of output)
    become ``\\xNN`` too, bidirectional controls ``\\uNNNN``. The result has
    none of those characters, so ``display(display(t)) == display(t)``: a name
    typed as shown and the raw name map to the same display name."""
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


def _reason(err: OSError) -> str:
    """An OSError as the few lower-case words people read in a warning ("permission denied")."""
    return (err.strerror or type(err).__name__).lower()


def _open_error(path: str) -> str:
    """Why the regular file ``path`` cannot be opened for reading ("" if it can).

    Discovery only looks at file names; without this an unreadable log would
    just not look like a log and drop out of the answer unnoticed."""
    try:
        # O_NONBLOCK: the file was a regular file a moment ago; if it has been
        # swapped for a FIFO since, do not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return ""  # vanished: nothing to report
    except OSError as err:
        return _reason(err)
    os.close(fd)
    return ""


def _source_name(name: str) -> bool:
    """Whether a file named ``name`` would be read as part of a run."""
    return bool(DUMP_FILE_RE.match(name)) or name.endswith((*LOG_SUFFIXES, ".xplane.pb"))


def _walk(logdir: str, warnings: list[tuple[str, str]]) -> Iterator[tuple[str, list[str]]]:
    """(directory, sorted names of its non-directory entries), top-down in sorted order,
    like ``os.walk``, but following symlinks whose target is inside ``logdir``,
    reading each real directory once, and recording what it cannot read or skips
    in ``warnings`` as (path, message). Raises ``UnreadableLogdir`` when ``logdir``
    itself cannot be listed."""
    root = os.path.realpath(logdir)
    seen: dict[str, str] = {}  # real path -> the path it was read under
    stack = [logdir]
    # Symlinked directories wait until the real tree is walked: a target inside the
    # logdir is reachable without links too, and should keep its own name as a run.
    links: list[str] = []
    while stack or links:
        directory = stack.pop() if stack else links.pop(0)
        real = os.path.realpath(directory)
        first = seen.get(real)
        if first is not None:
            warnings.append((directory, f"the same directory as {relpath(first, logdir)}, "
                                        "which is read already: not read twice"))
            continue
        seen[real] = directory
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            if directory == logdir:
                raise UnreadableLogdir(logdir, f"cannot list the directory: {_reason(err)}") from err
            warnings.append((directory, f"{_reason(err)}: directory not read"))
            continue
        subdirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows a symlink
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if not _within(target, root):
                        # Only links that could hold a source are worth a warning.
                        if is_dir or _source_name(entry.name):
                            warnings.append((entry.path, f"symlink to {display(target)}, outside "
                                                         "the logdir: not followed"))
                        continue
            except OSError as err:  # is_dir() on an entry that vanished or cannot be stat'ed
                warnings.append((entry.path, f"{_reason(err)}: not read"))
                continue
            if not is_dir:
                files.append(entry.name)
            elif entry.is_symlink():
                links.append(entry.path)
            else:
                subdirs.append(entry.path)
        # Reversed onto the stack, so the first name in sorted order is walked first.
        stack.extend(reversed(subdirs))
        yield directory, files


def discover(logdir: str, extra_logs: tuple[str, ...] = ()) -> list[RunSources]:
    """Group the files under ``logdir`` (plus ``extra_logs``) into runs."""
    logdir = os.path.abspath(logdir)
    extra = [os.path.abspath(p) for p in extra_logs]
    windows: dict[str, tuple[float, float, str]] = {}
    runs: dict[str, RunSources] = {}
    profiles: list[str] = []
    logs: list[str] = []
    skipped: dict[str, list[tuple[str, str]]] = {}  # directory -> (path, why)
    walk_warnings: list[tuple[str, str]] = []
    for directory, filenames in _walk(logdir, walk_warnings):
        sets = find_dump_sets(directory)
        names = set(filenames)
        for prefix, files in list(sets.items()):
            for kind, path in list(files.items()):
                if os.path.basename(path) not in names:
                    del files[kind]  # a link out of the logdir (warned about), or a directory
                    if not files:
                        del sets[prefix]  # nothing of this set is in the logdir
                    continue
                why = _not_regular(path)
                if why:
                    del files[kind]
                    skipped.setdefault(directory, []).append((path, why))
        if sets:
            runs[directory] = RunSources(relpath(directory, logdir), directory, dump_sets=sets)
            windows[directory] = _dump_window(sets)
        for name in filenames:
            path = os.path.join(directory, name)
            if not (_is_profile(path) or name.endswith(LOG_SUFFIXES)):
                continue
            why = _not_regular(path)
            if why:
                skipped.setdefault(directory, []).append((path, why))
                continue
            # Unreadable: warned about here, because a log we cannot open is
            # indistinguishable from a text file that is not a log.
            denied = _open_error(path)
            if denied:
                walk_warnings.append((path, f"{denied}: not read"))
            elif _is_profile(path):
                profiles.append(path)
                # A profile is written when profiling stops, inside the run it profiled.
                t = _mtime(path)
                windows[path] = (t, t, name[:-len(".xplane.pb")])
            elif looks_like_log(path):
                logs.append(path)
    # A link out of the logdir that the user also named with --log is read as asked.
    walk_warnings = [(p, m) for p, m in walk_warnings if p not in extra]
    for path in extra:
        # Named by the user, so read even through a symlink out of the logdir; but a
        # FIFO or a device (--log /dev/zero) would block or never end, and a
        # directory is not a log.
        why = _not_regular(path)
        if why:
            skipped.setdefault(os.path.dirname(path), []).append((path, why))
        elif path not in logs:
            logs.append(path)
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

    def reporter(path: str) -> RunSources | None:
        owner = next((r for r in by_depth if _within(path, r)), None)
        if owner is None and runs:
            owner = min(runs, key=lambda d: runs[d].name)
        return runs[owner] if owner is not None else None

    for directory, entries in sorted(skipped.items()):
        report = reporter(directory)
        if report is not None:
            report.skipped.extend(entries)
    if not runs and walk_warnings:
        # Nothing found, but not everything could be looked at: say what.
        path, message = walk_warnings[0]
        more = f" (and {len(walk_warnings) - 1} more)" if len(walk_warnings) > 1 else ""
        raise UnreadableLogdir(logdir, f"nothing found in what could be read; "
                                       f"{relpath(path, logdir)}: {message}{more}")
    for path, message in walk_warnings:
        report = reporter(os.path.dirname(path))
        if report is not None:
            report.warnings.append((path, message))
    return sorted(runs.values(), key=lambda r: r.name)
