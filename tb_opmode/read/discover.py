"""Find the runs under a logdir and the sources that belong to each.

In: a logdir path or URL (and extra log files named by the user). Out: a list of
``RunSources``: which tfdbg2 dump sets, XPlane profiles and text logs make up each run.
Nothing is parsed here except what is needed to attach profiles and logs to dumps
(their host and time window, a log's run ids), so this stays cheap.

A run is a directory that holds a dump; its name is its path relative to the logdir
("." for the logdir itself); the dumps of a multi-worker job's workers are one run
(``jobs``). A profile belongs to the deepest dump run whose subtree holds it; failing
that, to a dump run on the same host whose time window overlaps the profile (the Keras
callback writes ``logs/fit/<timestamp>/train/plugins/profile/...`` beside a dump in
``logs/fit/``). A profile that belongs to no dump is a run of its own, named by its
TensorBoard run directory (the one holding ``plugins/``). Text logs go where their
place or their content says (``logattach``).

Only regular files are read: a FIFO, socket or device named like a dump, a profile or
a log would block or never end, so it is listed in ``RunSources.skipped`` instead (so is
a ``--log`` that is not a regular file). What discovery could not look at is never
dropped silently: an unreadable directory or log, and a symlink that leads out of the
logdir, become ``RunSources.warnings``; a logdir that cannot be listed at all raises
``UnreadableLogdir``.

Symlinks, to files or directories, are followed only when their target resolves inside
the logdir (a link in a logdir must not make us read, or show in the tab, a file the
logdir's owner did not put there); ``--log`` files are exempt, the user named them.
Each real directory is read once: a second path to it (a link, or a link loop) is
skipped with a warning.

A logdir may be a URL (``s3://bucket/logs``): everything here goes through ``fs`` (one
recursive listing of the bucket per discovery, sizes and ETags from it, the heads of
candidate logs fetched in parallel). Objects are regular files and have no links, so
the rules about FIFOs and symlinks do not apply to them.
"""
from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..errors import UnreadableLogdir
from . import fs
from .jobs import Scan, group_jobs
from .logattach import attach_logs
from .manifest import is_recorded
from .memo import memo
from .sources import (
    CLOCK_SLACK_S,
    RunSources,
    display,
    dump_location,
    dump_window,
    mtime,
    problem_text,
    reason,
    relpath,
    within,
)
from .textlog import looks_like_log
from .tfdbg import DUMP_FILE_RE, file_identity, find_dump_sets

fs_join = os.path.join  # '/'-joins URLs as it does paths

__all__ = ["RunSources", "discover", "LOG_SUFFIXES", "relpath", "display", "dump_location",
           "problem_text", "Scan"]

# A log saved gzip-compressed (`2>&1 | gzip > train.log.gz`, a rotated log) is read as
# its text (``textlog.read_log``).
LOG_SUFFIXES = tuple(s + z for s in (".txt", ".log", ".out", ".err") for z in ("", ".gz"))

_Warnings = list[tuple[str, str]]
_Window = tuple[float, float, str]  # (start, end, host)

# What a file that is not a regular file is, by the first test of its mode that holds.
_NOT_REGULAR: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


@dataclass
class _Found:
    """What the walk of a logdir found, before runs are joined and sources attached."""

    remote: bool
    runs: dict[str, RunSources] = field(default_factory=dict)  # directory -> its run
    windows: dict[str, _Window] = field(default_factory=dict)  # dump directory or profile
    profiles: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    skipped: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # directory -> (path, why)
    warnings: _Warnings = field(default_factory=list)

    def skip(self, directory: str, path: str, why: str) -> None:
        self.skipped.setdefault(directory, []).append((path, why))


def discover(logdir: str, extra_logs: tuple[str, ...] = (),
             log_run: str | None = None, scan: Scan | None = None) -> list[RunSources]:
    """Group the files under ``logdir`` (plus ``extra_logs``) into runs.

    ``log_run``: the name of the run the ``extra_logs`` belong to (``--log FILE --run
    RUN``): they are attached to it whatever they hold. Without it they are attached
    by what they hold, as logs outside any run's directory are (``logattach``).
    ``scan``: reads the cluster tasks of the dump sets below a directory holding no
    dump that neither this process nor the cache knows yet, all at once (``Scan``;
    the plugin's load workers), instead of one by one here."""
    logdir = fs.absolute(logdir)
    extra = [fs.absolute(p) for p in extra_logs]
    found = _Found(remote=fs.is_remote(logdir))
    if found.remote:
        _scan_remote(logdir)
    for directory, filenames in _walk(logdir, found.warnings):
        _take_directory(found, logdir, directory, filenames)
    _take_given_logs(found, extra)
    group_jobs(found.runs, found.windows, logdir, scan)
    _attach_profiles(found, logdir)
    attach_logs(found.runs, found.logs, extra, logdir, log_run, found.warnings)
    return _runs_with_what_they_say(found, logdir)


def _scan_remote(logdir: str) -> None:
    """One recursive listing of the whole logdir: the walk, stats and sizes below are
    answered from it."""
    try:
        fs.scan(logdir)
    except OSError as err:
        raise UnreadableLogdir(logdir, f"cannot list the directory: "
                                       f"{err.strerror or err}") from err


# ---------------------------------------------------------------- the walk


def _identity(directory: str) -> Any:
    """What tells a directory apart however it is reached: its device and inode (one
    stat, where its real path takes one per path component), or its URL (object stores
    have no links). Its real path if it cannot be stat'ed (its listing then says why)."""
    if not fs.is_remote(directory):
        try:
            st = os.stat(directory)
            return (st.st_dev, st.st_ino)
        except OSError:
            pass
    return fs.real(directory)


def _walk(logdir: str, warnings: _Warnings) -> Iterator[tuple[str, list[str]]]:
    """(directory, sorted names of its non-directory entries), top-down in sorted order,
    like ``os.walk``, but following symlinks whose target is inside ``logdir``,
    reading each real directory once, and recording what it cannot read or skips
    in ``warnings`` as (path, message). Raises ``UnreadableLogdir`` when ``logdir``
    itself cannot be listed."""
    root = fs.real(logdir)
    seen: dict[Any, str] = {}  # the directory's identity -> the path it was read under
    stack = [logdir]
    # Symlinked directories wait until the real tree is walked: a target inside the
    # logdir is reachable without links too, and should keep its own name as a run.
    links: list[str] = []
    while stack or links:
        directory = stack.pop() if stack else links.pop(0)
        entries = _list_once(directory, logdir, seen, warnings)
        if entries is None:
            continue
        subdirs, files, linked = _sorted_entries(entries, root, warnings)
        links.extend(linked)
        # Reversed onto the stack, so the first name in sorted order is walked first.
        stack.extend(reversed(subdirs))
        yield directory, files


def _list_once(directory: str, logdir: str, seen: dict[Any, str], warnings: _Warnings) -> Optional[list[Any]]:
    """The entries of ``directory``, or None (with a warning) when it was read already
    under another path or cannot be listed. Raises ``UnreadableLogdir`` for the logdir."""
    real = _identity(directory)
    first = seen.get(real)
    if first is not None:
        warnings.append((directory, f"the same directory as {relpath(first, logdir)}, "
                                    "which is read already: not read twice"))
        return None
    seen[real] = directory
    try:
        return fs.list_entries(directory)
    except OSError as err:
        if directory == logdir:
            raise UnreadableLogdir(logdir, f"cannot list the directory: {reason(err)}",
                                   display(logdir)) from err
        warnings.append((directory, f"{reason(err)}: directory not read"))
        return None


def _sorted_entries(entries: list[Any], root: str, warnings: _Warnings
                    ) -> tuple[list[str], list[str], list[str]]:
    """(subdirectories, names of files, symlinked directories) among a directory's
    entries, leaving out links that lead out of the logdir (``root``, real)."""
    subdirs: list[str] = []
    files: list[str] = []
    links: list[str] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()  # follows a symlink
            if entry.is_symlink() and not _link_inside(entry, is_dir, root, warnings):
                continue
        except OSError as err:  # is_dir() on an entry that vanished or cannot be stat'ed
            warnings.append((entry.path, f"{reason(err)}: not read"))
            continue
        if not is_dir:
            files.append(entry.name)
        elif entry.is_symlink():
            links.append(entry.path)
        else:
            subdirs.append(entry.path)
    return subdirs, files, links


def _link_inside(entry: Any, is_dir: bool, root: str, warnings: _Warnings) -> bool:
    """Whether a symlink's target is inside the logdir; a warning when it is not and the
    link could hold a source."""
    target = os.path.realpath(entry.path)
    if within(target, root):
        return True
    if is_dir or _source_name(entry.name):
        warnings.append((entry.path, f"symlink to {display(target)}, outside the logdir: not followed"))
    return False


def _source_name(name: str) -> bool:
    """Whether a file named ``name`` would be read as part of a run."""
    return bool(DUMP_FILE_RE.match(name)) or name.endswith((*LOG_SUFFIXES, ".xplane.pb"))


# ---------------------------------------------------------------- what a directory holds


def _take_directory(found: _Found, logdir: str, directory: str, filenames: list[str]) -> None:
    """A directory's dump sets (a run), profiles and logs."""
    sets = _dump_sets_in(found, directory, filenames)
    if sets:
        found.runs[directory] = RunSources(relpath(directory, logdir), directory, dump_sets=sets)
        found.windows[directory] = dump_window(sets)
    if is_recorded(directory, filenames):
        found.runs.setdefault(directory, RunSources(relpath(directory, logdir), directory)).recorded = True
    if found.remote:  # the heads of the logs below are read next: fetch them in parallel
        fs.prefetch(fs_join(directory, n) for n in filenames if n.endswith(LOG_SUFFIXES))
    for name in filenames:
        _take_file(found, directory, name)


def _dump_sets_in(found: _Found, directory: str, filenames: list[str]) -> dict[str, dict[str, str]]:
    """The dump sets of ``directory``, with only the files the walk listed that are
    regular files (the others skipped)."""
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
                found.skip(directory, path, why)
    return sets


def _take_file(found: _Found, directory: str, name: str) -> None:
    """A profile or a log of ``directory``, if ``name`` is one and it can be read."""
    path = os.path.join(directory, name)
    if not (_is_profile(path) or name.endswith(LOG_SUFFIXES)):
        return
    why = _not_regular(path)
    if why:
        found.skip(directory, path, why)
        return
    # Unreadable: warned about here, because a log we cannot open is indistinguishable
    # from a text file that is not a log.
    denied = _open_error(path)
    if denied:
        found.warnings.append((path, f"{denied}: not read"))
    elif _is_profile(path):
        found.profiles.append(path)
        # A profile is written when profiling stops, inside the run it profiled.
        t = mtime(path)
        found.windows[path] = (t, t, name[:-len(".xplane.pb")])
    elif _looks_like_log(path, found.remote):
        found.logs.append(path)


def _looks_like_log(path: str, remote: bool) -> bool:
    if not remote:
        return looks_like_log(path)
    # Remembered: the periodic scan of the tab would fetch every log's head again.
    return memo.get(("looks", path), file_identity(path), functools.partial(looks_like_log, path))


def _take_given_logs(found: _Found, extra: list[str]) -> None:
    """The ``--log`` files, named by the user: read even through a symlink out of the
    logdir (no warning for it then); but a FIFO or a device (``--log /dev/zero``) would
    block or never end, and a directory is not a log."""
    found.warnings[:] = [(p, m) for p, m in found.warnings if p not in extra]
    for path in extra:
        why = _not_regular(path)
        if why:
            found.skip(os.path.dirname(path), path, why)
        elif path not in found.logs:
            found.logs.append(path)


def _not_regular(path: str) -> str:
    """Why ``path`` cannot be read as a file ("" if it is a regular file, or vanished)."""
    try:
        mode = fs.stat(path).st_mode
    except OSError:
        return ""  # gone or unreadable: the reader reports it
    if stat.S_ISREG(mode):
        return ""
    return next((why for test, why in _NOT_REGULAR if test(mode)), "not a regular file")


def _open_error(path: str) -> str:
    """Why the regular file ``path`` cannot be opened for reading ("" if it can).

    Discovery only looks at file names; without this an unreadable log would
    just not look like a log and drop out of the answer unnoticed."""
    if fs.is_remote(path):
        return ""  # the listing that found it is the store's say; a denied read is reported
    try:
        # O_NONBLOCK: the file was a regular file a moment ago; if it has been
        # swapped for a FIFO since, do not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return ""  # vanished: nothing to report
    except OSError as err:
        return reason(err)
    os.close(fd)
    return ""


# ---------------------------------------------------------------- profiles


def _profile_run_dir(path: str) -> str:
    """The TensorBoard run directory of ``<run>/plugins/profile/<session>/<host>.xplane.pb``."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(path))))


def _is_profile(path: str) -> bool:
    parts = path.replace(os.sep, "/").split("/")
    return (path.endswith(".xplane.pb") and len(parts) >= 4
            and parts[-4] == "plugins" and parts[-3] == "profile")


def _attach_profiles(found: _Found, logdir: str) -> None:
    """Each profile to its dump run, or to a run of its own."""
    dump_dirs = sorted(found.runs, key=len, reverse=True)  # deepest first
    for path in found.profiles:
        owner = _profile_owner(path, dump_dirs, found.windows)
        if owner is None:
            owner = _profile_run_dir(path)
            found.runs.setdefault(owner, RunSources(relpath(owner, logdir), owner))
        found.runs[owner].profiles.append(path)


def _profile_owner(path: str, dump_dirs: list[str], windows: dict[str, _Window]) -> str | None:
    """The dump run a profile belongs to: the deepest whose subtree holds its run
    directory, else the first on its host whose window overlaps the profile's."""
    home = _profile_run_dir(path)
    owner = next((d for d in dump_dirs if within(home, d)), None)
    span = windows.get(path)
    if owner is None and span is not None:
        owner = next((d for d in dump_dirs if d in windows and _same_time_and_host(span, windows[d])),
                     None)
    return owner


def _same_time_and_host(span: _Window, dump: _Window) -> bool:
    """Whether a profile's window could be a dump's: overlapping (with the clocks'
    slack), on the same host where both name one."""
    start, end, host = span
    dstart, dend, dhost = dump
    if host and dhost and host != dhost:
        return False
    return start <= dend + CLOCK_SLACK_S and end >= dstart - CLOCK_SLACK_S


# ---------------------------------------------------------------- the answer


def _runs_with_what_they_say(found: _Found, logdir: str) -> list[RunSources]:
    """The runs by name, each with the skipped files and warnings of its subtree (those
    outside every run with the first run, so that they show up somewhere). Raises
    ``UnreadableLogdir`` when no run was found and something could not be looked at."""
    runs = found.runs
    by_depth = sorted(runs, key=len, reverse=True)

    def reporter(path: str) -> RunSources | None:
        owner = next((r for r in by_depth if within(path, r)), None)
        if owner is None and runs:
            owner = min(runs, key=lambda d: runs[d].name)
        return runs[owner] if owner is not None else None

    for directory, entries in sorted(found.skipped.items()):
        report = reporter(directory)
        if report is not None:
            report.skipped.extend(entries)
    if not runs and found.warnings:
        # Nothing found, but not everything could be looked at: say what.
        path, message = found.warnings[0]
        more = f" (and {len(found.warnings) - 1} more)" if len(found.warnings) > 1 else ""
        raise UnreadableLogdir(logdir, f"nothing found in what could be read; "
                                       f"{relpath(path, logdir)}: {message}{more}",
                               display(logdir))
    for path, message in found.warnings:
        report = reporter(os.path.dirname(path))
        if report is not None:
            report.warnings.append((path, message))
    return sorted(runs.values(), key=lambda r: r.name)
