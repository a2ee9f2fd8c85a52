"""The dumps of one multi-worker job made one run.

In: the runs discovery found (directory -> ``RunSources``, each holding dumps) and their
time windows. Out: the same, in place, where the dumps of a job's workers are one run.

Each process of a ``MultiWorkerMirroredStrategy`` job writes its own dump, so a job
dumps into one sub-directory per worker (``run/worker0``, ``run/worker1``). A directory
that holds no dump itself, whose sub-directories hold dumps of which at least one was
written by a cluster task (its devices name ``/job:worker/...``, not ``/job:localhost``),
is the job's run: all its sub-directories' dumps join it, keyed
``<sub-directory>/<prefix>``. A worker whose dump is missing is named: a sibling
directory named like the workers' (``worker1`` beside ``worker0``) holding no dump, and a
task number missing between the job's tasks.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

from .cache import cached_dump_tasks, held_dump_tasks
from .memo import memo
from .sources import RunSources, dump_window, relpath, within
from .tasks import is_cluster_task
from .tfdbg import file_identity

__all__ = ["Scan", "group_jobs"]

# scan(paths) -> the tasks of each ``.graphs`` file (``cache.cached_dump_tasks``), in order:
# how the plugin's loader has its load workers read them (``discover``'s ``scan``).
Scan = Callable[[list[str]], list[frozenset[str]]]
_Windows = dict[str, tuple[float, float, str]]


def group_jobs(runs: dict[str, RunSources], windows: _Windows, logdir: str,
               scan: Scan | None = None) -> None:
    """Make the dumps of each multi-worker job one run, in place (``windows``: each run's
    time window, updated alike). ``scan`` reads the tasks of the dumps not known yet all
    at once (see ``discover``)."""
    parents = _job_candidates(runs, logdir)
    _learn_tasks([f for members in parents.values() for d in members for f in runs[d].dump_sets.values()],
                 scan)
    for parent, members in sorted(parents.items()):
        tasks = {d: frozenset().union(*(_tasks(f) for f in runs[d].dump_sets.values()))
                 for d in members}
        if any(is_cluster_task(t) for ts in tasks.values() for t in ts):
            _join(runs, windows, logdir, parent, members, tasks)


def _job_candidates(runs: dict[str, RunSources], logdir: str) -> dict[str, list[str]]:
    """Directory holding no dump -> its sub-directories that do (the runs of a job's
    workers, if their dumps were written by cluster tasks)."""
    parents: dict[str, list[str]] = {}
    for directory, sources in runs.items():
        parent = os.path.dirname(directory)
        if (sources.dump_sets and parent != directory and within(parent, logdir)
                and parent not in runs):
            parents.setdefault(parent, []).append(directory)
    return parents


def _join(runs: dict[str, RunSources], windows: _Windows, logdir: str, parent: str,
          members: list[str], tasks: dict[str, frozenset[str]]) -> None:
    """The runs ``members`` become one run of ``parent``."""
    job = RunSources(relpath(parent, logdir), parent)
    for d in sorted(members):
        sub = os.path.relpath(d, parent).replace(os.sep, "/")
        member = runs.pop(d)
        windows.pop(d, None)
        for prefix, files in member.dump_sets.items():
            job.dump_sets[f"{sub}/{prefix}"] = files
        job.skipped.extend(member.skipped)
        job.warnings.extend(member.warnings)
    windows[parent] = dump_window(job.dump_sets)
    job.missing_workers = _missing_worker_dirs(parent, members) + _missing_tasks(parent, tasks)
    runs[parent] = job


def _tasks(files: dict[str, str]) -> frozenset[str]:
    return memo.get(("tasks", files.get("graphs", "")), file_identity(files.get("graphs", "")),
                    lambda: cached_dump_tasks(files))


def _learn_tasks(sets: list[dict[str, str]], scan: Scan | None) -> None:
    """Learn the tasks of these dump sets' ``.graphs`` files (into the memo, which
    ``_tasks`` then answers from): from the memo or the cache where they are known, the
    others read by ``scan`` all at once (in parallel). Without ``scan``, nothing: each
    is read when ``_tasks`` asks for it."""
    if scan is None:
        return
    todo = _tasks_unknown(sets)
    if not todo:
        return
    # The identity is the one taken before the read: a file changed meanwhile is read
    # again at the next scan.
    for (path, identity), tasks in zip(todo, scan([p for p, _i in todo])):
        memo.put(("tasks", path), identity, tasks)


def _tasks_unknown(sets: list[dict[str, str]]) -> list[tuple[str, Any]]:
    """(path, identity) of the ``.graphs`` files whose tasks neither the memo nor the
    cache holds as the files are (those the cache holds go to the memo)."""
    todo: list[tuple[str, Any]] = []
    for files in sets:
        path = files.get("graphs")
        if path is None:
            continue
        identity = file_identity(path)
        if identity is None or memo.known(("tasks", path), identity)[0]:
            continue
        held = held_dump_tasks(files)
        if held is not None:
            memo.put(("tasks", path), identity, held)
        else:
            todo.append((path, identity))
    return todo


def _stem(name: str) -> str:
    """A worker directory's name without its digits (``worker0`` -> ``worker``)."""
    return re.sub(r"\d+", "", name)


def _missing_worker_dirs(parent: str, members: list[str]) -> list[tuple[str, str]]:
    """(directory, why) of the sibling directories named like the job's workers' that
    hold no dump."""
    stems = {_stem(os.path.basename(d)) for d in members}
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        names = []  # listed a moment ago; the walk's warnings say why if it cannot be now
    return [(os.path.join(parent, name),
             "no tfdbg dump in this worker's directory (the worker did not start, failed "
             "before dumping, or its files were removed)")
            for name in names
            if (os.path.join(parent, name) not in members and _stem(name) in stems
                and name != _stem(name) and os.path.isdir(os.path.join(parent, name)))]


def _missing_tasks(parent: str, tasks: dict[str, frozenset[str]]) -> list[tuple[str, str]]:
    """(``parent/job:i``, why) of each task number missing between a job's tasks."""
    by_job: dict[str, set[int]] = {}
    for ts in tasks.values():
        for t in ts:
            job, _, index = t.partition(":")
            if is_cluster_task(t) and index.isdigit():
                by_job.setdefault(job, set()).add(int(index))
    out: list[tuple[str, str]] = []
    for job, indices in sorted(by_job.items()):
        have = ", ".join(str(n) for n in sorted(indices))
        out.extend((os.path.join(parent, f"{job}:{i}"),
                    f"task {job}:{i} left no dump here (tasks {have} of job {job} did)")
                   for i in range(max(indices) + 1) if i not in indices)
    return out
