"""Find the runs under a logdir and the sources that belong to each.

In: a logdir path (and extra log files named by the user). Out: a list of
``RunSources``: which tfdbg2 dump sets, XPlane profiles and text logs make up
each run. Nothing is parsed here except what is needed to attach profiles and
logs to dumps (their host and time window, a log's run ids), so this stays cheap.

A run is a directory that holds a dump; its name is its path relative to the
logdir ("." for the logdir itself). A profile belongs to the deepest dump run
whose subtree holds it; failing that, to a dump run on the same host whose
time window overlaps the profile (the Keras callback writes
``logs/fit/<timestamp>/train/plugins/profile/...`` beside a dump in
``logs/fit/``). A profile that belongs to no dump is a run of its own, named by
its TensorBoard run directory (the one holding ``plugins/``). A text log in a
dump run's directory (or subtree) belongs to it. A log anywhere else is
attached only when its content proves where it belongs: the ``tfdbg_run_id``
of the debug nodes it shows ran is a dump's run id, or, when it names none,
its lines' times overlap the wall times of exactly one dump (file times are
no proof: two runs made side by side have the same). What cannot be told
apart is attached nowhere, with a warning naming the candidates; a log that
belongs to no dump is a run of its own. So the logs outside every run are
parsed here (through the cache, which the build of the run then reuses).

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

A logdir may be a URL (``s3://bucket/logs``): everything here goes through
``fs`` (one recursive listing of the bucket per discovery, sizes and ETags from it,
the heads of candidate logs fetched in parallel). Objects are regular files and
have no links, so the rules about FIFOs and symlinks do not apply to them.

File names need not be UTF-8: run names and the paths shown to people go
through ``display`` (undecodable bytes as ``\\xNN``, control characters and
bidirectional-text controls escaped), so JSON and terminals get valid text that
cannot move the cursor, forge a line, or reorder what is shown around it.
"""
from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import Problem, UnreadableLogdir
from . import fs
from .cache import cached_dump_set, cached_dump_tasks, cached_log, held_dump_tasks
from .tasks import is_cluster_task
from .textlog import looks_like_log
from .tfdbg import DUMP_FILE_RE, file_identity, find_dump_sets, read_file_states

fs_join = os.path.join  # '/'-joins URLs as it does paths

__all__ = ["RunSources", "discover", "LOG_SUFFIXES", "relpath", "display", "dump_location",
           "problem_text", "Scan"]

LOG_SUFFIXES = (".txt", ".log", ".out", ".err")
# Clocks of the dump, the profiler and the log all read the same host clock,
# but a profile's window and the dump's can be seconds apart at the edges.
_SLACK_S = 120.0

T = TypeVar("T")


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
    # A multi-worker job's run: (directory, why) of each worker whose dump is not there.
    missing_workers: list[tuple[str, str]] = field(default_factory=list)


def dump_location(sources: RunSources, key: str) -> tuple[str, str]:
    """(directory, file prefix) of the dump set ``sources.dump_sets[key]``. A job's run
    holds its workers' dumps, from their own sub-directories, under keys
    ``<sub-directory>/<prefix>`` (two workers on one host write the same prefix)."""
    sub, _, prefix = key.rpartition("/")
    return (os.path.join(sources.directory, sub) if sub else sources.directory), prefix


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
    rel = fs.relpath(path, logdir)
    return "." if rel == os.curdir else display(rel.replace(os.sep, "/"))


def _not_regular(path: str) -> str:
    """Why ``path`` cannot be read as a file ("" if it is a regular file, or vanished)."""
    try:
        mode = fs.stat(path).st_mode
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
        return fs.stat(path).st_mtime
    except OSError:
        return 0.0


def _dump_window(sets: dict[str, dict[str, str]]) -> tuple[float, float, str]:
    """(start, end, host) of a dump directory: metadata's wall time to last write."""
    start, end, hosts = float("inf"), 0.0, set()
    for prefix, files in sets.items():
        m = DUMP_FILE_RE.match(prefix.rpartition("/")[2] + ".metadata")
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
    if fs.is_remote(path):
        return ""  # the listing that found it is the store's say; a denied read is reported
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


def _identity(directory: str) -> Any:
    """What tells a directory apart however it is reached: its device and inode (one
    stat, where its real path took a stat per component: 12,000 for 200 runs), or its
    URL (object stores have no links). Its real path if it cannot be stat'ed (its
    listing then says why)."""
    if not fs.is_remote(directory):
        try:
            st = os.stat(directory)
            return (st.st_dev, st.st_ino)
        except OSError:
            pass
    return fs.real(directory)


def _walk(logdir: str, warnings: list[tuple[str, str]]) -> Iterator[tuple[str, list[str]]]:
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
        real = _identity(directory)
        first = seen.get(real)
        if first is not None:
            warnings.append((directory, f"the same directory as {relpath(first, logdir)}, "
                                        "which is read already: not read twice"))
            continue
        seen[real] = directory
        try:
            entries = fs.list_entries(directory)
        except OSError as err:
            if directory == logdir:
                raise UnreadableLogdir(logdir, f"cannot list the directory: {_reason(err)}",
                                       display(logdir)) from err
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


def discover(logdir: str, extra_logs: tuple[str, ...] = (),
             log_run: str | None = None, scan: Scan | None = None) -> list[RunSources]:
    """Group the files under ``logdir`` (plus ``extra_logs``) into runs.

    ``log_run``: the name of the run the ``extra_logs`` belong to (``--log FILE --run
    RUN``): they are attached to it whatever they hold. Without it they are attached
    by what they hold, as logs outside any run's directory are (``_attach_logs``).
    ``scan``: reads the cluster tasks of the dump sets below a directory holding no
    dump that neither this process nor the cache knows yet, all at once (``Scan``;
    the plugin's load workers), instead of one by one here."""
    logdir = fs.absolute(logdir)
    extra = [fs.absolute(p) for p in extra_logs]
    remote = fs.is_remote(logdir)
    if remote:
        # One recursive listing of the whole logdir; the walk, stats and sizes below
        # are answered from it.
        try:
            fs.scan(logdir)
        except OSError as err:
            raise UnreadableLogdir(logdir, f"cannot list the directory: "
                                           f"{err.strerror or err}") from err
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
        if remote:  # the heads of the logs below are read next: fetch them in parallel
            fs.prefetch(fs_join(directory, n) for n in filenames if n.endswith(LOG_SUFFIXES))
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
            elif (_memoized(("looks", path), file_identity(path), functools.partial(looks_like_log, path))
                  if remote else looks_like_log(path)):
                # (Remote: the periodic scan of the tab would fetch every log's head again.)
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
    _group_jobs(runs, windows, logdir, scan)
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
    _attach_logs(runs, logs, extra, logdir, log_run, walk_warnings)
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
                                       f"{relpath(path, logdir)}: {message}{more}",
                               display(logdir))
    for path, message in walk_warnings:
        report = reporter(os.path.dirname(path))
        if report is not None:
            report.warnings.append((path, message))
    return sorted(runs.values(), key=lambda r: r.name)


# ---------------------------------------------------------------- multi-worker jobs


# scan(paths) -> the tasks of each ``.graphs`` file (``cache.cached_dump_tasks``), in order:
# how the plugin's loader has its load workers read them (``discover``'s ``scan``).
Scan = Callable[[list[str]], list[frozenset[str]]]


def _tasks(files: dict[str, str]) -> frozenset[str]:
    return _memoized(("tasks", files.get("graphs", "")), file_identity(files.get("graphs", "")),
                     lambda: cached_dump_tasks(files))


def _scanned(sets: list[dict[str, str]], scan: Scan | None) -> None:
    """Learn the tasks of these dump sets' ``.graphs`` files (into ``_memo``, which
    ``_tasks`` then answers from): from the memo or the cache where they are known, the
    others read by ``scan`` all at once (in parallel). Without ``scan``, nothing: each
    is read when ``_tasks`` asks for it."""
    if scan is None:
        return  # ``_tasks`` reads each one as it is asked for
    todo: list[tuple[str, Any]] = []
    for files in sets:
        path = files.get("graphs")
        if path is None:
            continue
        identity = file_identity(path)
        found = _memo.get(("tasks", path))
        if identity is None or (found is not None and found[0] == identity):
            continue
        held = held_dump_tasks(files)
        if held is not None:
            _memo[("tasks", path)] = (identity, held)
        else:
            todo.append((path, identity))
    if not todo:
        return
    # The identity is the one taken before the read: a file changed meanwhile is read
    # again at the next scan.
    for (path, identity), tasks in zip(todo, scan([p for p, _i in todo])):
        _memo[("tasks", path)] = (identity, tasks)


def _stem(name: str) -> str:
    """A worker directory's name without its digits (``worker0`` -> ``worker``)."""
    return re.sub(r"\d+", "", name)


def _group_jobs(runs: dict[str, RunSources], windows: dict[str, tuple[float, float, str]],
                logdir: str, scan: Scan | None = None) -> None:
    """Make the dumps of one multi-worker job one run, in place.

    Each process of a ``MultiWorkerMirroredStrategy`` job writes its own dump, so a job
    dumps into one sub-directory per worker (``run/worker0``, ``run/worker1``). A
    directory that holds no dump itself, whose sub-directories hold dumps of which at
    least one was written by a cluster task (its devices name ``/job:worker/...``, not
    ``/job:localhost``), is the job's run: all its sub-directories' dumps join it, keyed
    ``<sub-directory>/<prefix>``. A worker whose dump is missing is named: a sibling
    directory named like the workers' (``worker1`` beside ``worker0``) holding no dump,
    and a task number missing between the job's tasks."""
    parents: dict[str, list[str]] = {}
    for directory, sources in runs.items():
        parent = os.path.dirname(directory)
        if (sources.dump_sets and parent != directory and _within(parent, logdir)
                and parent not in runs):
            parents.setdefault(parent, []).append(directory)
    _scanned([f for members in parents.values() for d in members for f in runs[d].dump_sets.values()],
             scan)
    for parent, members in sorted(parents.items()):
        tasks = {d: frozenset().union(*(_tasks(f) for f in runs[d].dump_sets.values()))
                 for d in members}
        if not any(is_cluster_task(t) for ts in tasks.values() for t in ts):
            continue
        job = RunSources(relpath(parent, logdir), parent)
        for d in sorted(members):
            sub = os.path.relpath(d, parent).replace(os.sep, "/")
            member = runs.pop(d)
            windows.pop(d, None)
            for prefix, files in member.dump_sets.items():
                job.dump_sets[f"{sub}/{prefix}"] = files
            job.skipped.extend(member.skipped)
            job.warnings.extend(member.warnings)
        windows[parent] = _dump_window(job.dump_sets)
        job.missing_workers = _missing_workers(parent, members, tasks)
        runs[parent] = job


def _missing_workers(parent: str, members: list[str],
                     tasks: dict[str, frozenset[str]]) -> list[tuple[str, str]]:
    """(directory, why) of the job's workers that left no dump."""
    out = []
    stems = {_stem(os.path.basename(d)) for d in members}
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        names = []  # listed a moment ago; the walk's warnings say why if it cannot be now
    for name in names:
        path = os.path.join(parent, name)
        if (path not in members and _stem(name) in stems and name != _stem(name)
                and os.path.isdir(path)):
            out.append((path, "no tfdbg dump in this worker's directory (the worker did not "
                              "start, failed before dumping, or its files were removed)"))
    by_job: dict[str, set[int]] = {}
    for ts in tasks.values():
        for t in ts:
            job, _, index = t.partition(":")
            if is_cluster_task(t) and index.isdigit():
                by_job.setdefault(job, set()).add(int(index))
    for job, indices in sorted(by_job.items()):
        for i in range(max(indices) + 1):
            if i not in indices:
                have = ", ".join(str(n) for n in sorted(indices))
                out.append((os.path.join(parent, f"{job}:{i}"),
                            f"task {job}:{i} left no dump here (tasks {have} of job {job} did)"))
    return out


# ---------------------------------------------------------------- logs outside a run


@dataclass(frozen=True)
class _LogEvidence:
    """What in a log's content can tie it to a dump."""

    run_ids: frozenset[str]    # tfdbg_run_id of the debug nodes it shows ran
    first: float | None        # epoch seconds of its first and last prefixed line
    last: float | None


# (kind, path) -> (identity of the files, value): what discovery learnt of a file last
# time, so that the tab's periodic scan does not parse an unchanged log again (the disk
# cache may be off). One entry per file, replaced when the file changes.
_memo: dict[tuple[str, str], tuple[Any, Any]] = {}


def _memoized(key: tuple[str, str], identity: Any, compute: Callable[[], T]) -> T:
    found = _memo.get(key)
    if found is not None and identity is not None and found[0] == identity:
        known: T = found[1]
        return known
    value = compute()
    _memo[key] = (identity, value)
    return value


def _log_evidence(path: str) -> _LogEvidence:
    """The run ids and time span of ``path``'s lines (parsed through the cache, which
    the run's build reads again for free). Raises OSError if it cannot be read."""
    def compute() -> _LogEvidence:
        facts = cached_log(path)
        return _LogEvidence(facts.tfdbg_run_ids, facts.first_time, facts.last_time)
    return _memoized(("log", path), file_identity(path), compute)


def _set_identity(files: dict[str, str]) -> tuple[Any, ...]:
    return tuple((kind, file_identity(p)) for kind, p in sorted(files.items()))


def _dump_run_ids(sources: RunSources) -> frozenset[str]:
    """The tfdbg run ids of a run's dump sets, from their (small) metadata files."""
    ids = set()
    for files in sources.dump_sets.values():
        path = files.get("metadata")
        if path is None:
            continue
        def compute(path: str = path) -> str:
            state = read_file_states({"metadata": path}).get("metadata")
            return state.part.run_id if state is not None else ""
        run_id = _memoized(("run_id", path), file_identity(path), compute)
        if run_id:
            ids.add(run_id)
    return frozenset(ids)


def _dump_walls(sources: RunSources) -> list[tuple[float, float]]:
    """(first, last) wall time of the records of each of a run's dump sets. Reads the
    whole dump (through the cache, so the run's build then gets it for free): only
    asked for when a log outside every run has nothing but its times to go by."""
    out = []
    for prefix, files in sorted(sources.dump_sets.items()):
        def compute(prefix: str = prefix, files: dict[str, str] = files) -> tuple[float, float]:
            dump = cached_dump_set(*dump_location(sources, prefix), files)
            return dump.first_wall_time, dump.last_wall_time
        first, last = _memoized(("walls", os.path.join(*dump_location(sources, prefix))),
                                _set_identity(files), compute)
        if first and last:
            out.append((first, last))
    return out


def _names(runs: dict[str, RunSources], dirs: list[str]) -> str:
    return ", ".join(sorted(runs[d].name for d in dirs))


def _fit(path: str, evidence: _LogEvidence, runs: dict[str, RunSources],
         dump_dirs: list[str]) -> tuple[list[str], str, list[str]]:
    """(the runs ``path``'s content proves it belongs to, why none if none, the runs it
    could belong to when it cannot tell them apart).

    A log's own tfdbg run ids are proof: it ran the debug nodes of those dumps. A log
    without any (a VLOG with no debug nodes, a plain stderr) is tied by time only when
    its lines' span overlaps the wall times of exactly one run's dump; the dump, the
    profiler and the log read the same host clock. A log naming run ids of no dump
    here is another run's log, whatever its times."""
    if evidence.run_ids:
        named = [d for d in dump_dirs if _dump_run_ids(runs[d]) & evidence.run_ids]
        if named:
            return named, "", []
        ids = ", ".join(sorted(evidence.run_ids))
        return [], f"its debug nodes name tfdbg run id {ids}, which no dump here has", []
    if evidence.first is None or evidence.last is None:
        return [], "it has no tfdbg run id and no timed line to tie it to a dump", []
    start, end = evidence.first, evidence.last
    fits = [d for d in dump_dirs
            if any(start <= last + _SLACK_S and end >= first - _SLACK_S
                   for first, last in _dump_walls(runs[d]))]
    if len(fits) == 1:
        return fits, "", []
    if fits:
        return [], (f"it has no tfdbg run id, and its times fit several runs "
                    f"({_names(runs, fits)})"), fits
    return [], "it has no tfdbg run id, and its times fit no run's dump", []


def _attach_logs(runs: dict[str, RunSources], logs: list[str], extra: list[str], logdir: str,
                 log_run: str | None, warnings: list[tuple[str, str]]) -> None:
    """Attach each log to its run(s), adding runs of their own for logs of no dump run.

    A log in a dump run's directory tree belongs to that run (the deepest). Evidence
    from anywhere else is attached only when its content proves where it belongs
    (``_fit``): attaching by file times alone once gave a oneDNN-off run the log, and so
    the oneDNN banner, of the oneDNN-on run beside it. What cannot be told apart is not
    attached, with a warning naming the candidates. ``--log`` files go to ``log_run``
    when it is given, whatever they hold."""
    dump_dirs = sorted((d for d, r in runs.items() if r.dump_sets), key=len, reverse=True)
    by_name = {r.name: d for d, r in runs.items()}

    def add(owner: str, path: str) -> None:
        if path not in runs[owner].logs:
            runs[owner].logs.append(path)

    for path in logs:
        given = path in extra
        if given and log_run is not None:
            if log_run in by_name:  # else load() says there is no such run
                add(by_name[log_run], path)
            continue
        home = next((d for d in dump_dirs if _within(os.path.dirname(path), d)), None)
        if home is not None:
            add(home, path)
            continue
        try:
            evidence = _log_evidence(path)
        except OSError as err:  # vanished or unreadable since it was found
            warnings.append((path, f"{_reason(err)}: not read"))
            continue
        owners, why, candidates = _fit(path, evidence, runs, dump_dirs)
        for owner in owners:
            add(owner, path)
        if owners:
            continue
        if given:
            if len(runs) == 1:
                add(next(iter(runs)), path)  # the only run it can be for
            else:
                warnings.append((path, f"given with --log, but {why}: attached to no run; "
                                       "name its run with --run"))
            continue
        for d in candidates:
            runs[d].warnings.append((path, f"a log outside this run's directory that may be "
                                           f"this run's: {why}: attached to none of them "
                                           "(--log FILE --run RUN attaches it by hand)"))
        # A log that belongs to no dump run is a run of its own, as it always was.
        owner = os.path.dirname(path)
        runs.setdefault(owner, RunSources(relpath(owner, logdir), owner))
        add(owner, path)
        if candidates or evidence.run_ids:
            warnings.append((path, f"not attached to a dump's run: {why}"))


def problem_text(problem: Problem, logdir: str) -> str:
    """A problem as the run's warnings say it: its file relative to ``logdir`` (absolute
    paths outside it kept), the byte offset, and the message, all printable."""
    path = problem.path
    if (os.path.isabs(path) or fs.is_remote(path)) and path.startswith(logdir.rstrip(os.sep) + os.sep):
        path = relpath(path, logdir)
    return f"{display(path)}: byte {problem.offset}: {display(problem.message)}"
