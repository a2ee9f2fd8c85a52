"""Text logs attached to the runs they belong to.

In: the runs discovery found, the text logs under the logdir, the ``--log`` files and
the run they were named for (``--run``). Out: each log in its run's ``logs``, or in a
run of its own, and a warning for each log that could belong to several runs.

A log in a dump run's directory (or subtree) belongs to it, the deepest. A log anywhere
else is attached only when its content proves where it belongs: the ``tfdbg_run_id`` of
the debug nodes it shows ran is a dump's run id, or, when it names none, its lines'
times overlap the wall times of exactly one dump (file times are no proof: two runs
made side by side have the same). What cannot be told apart is attached nowhere, with
a warning naming the candidates; a log that belongs to no dump is a run of its own. So
the logs outside every run are parsed here (through the cache, which the build of the
run then reuses). A log that is a byte-for-byte copy of one its run has already (a
``--log`` of the run's own log, copied elsewhere) is read once, with a warning.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from . import fs
from .cache import cached_dump_set, cached_log
from .memo import memo
from .sources import CLOCK_SLACK_S, RunSources, dump_location, reason, relpath, within
from .tfdbg import file_identity, read_file_states

__all__ = ["attach_logs"]

_Warnings = list[tuple[str, str]]


@dataclass(frozen=True)
class _LogEvidence:
    """What in a log's content can tie it to a dump."""

    run_ids: frozenset[str]    # tfdbg_run_id of the debug nodes it shows ran
    first: float | None        # epoch seconds of its first and last prefixed line
    last: float | None


@dataclass(frozen=True)
class _Fit:
    """Where a log's content says it belongs: ``owners`` (the runs it proves to be of),
    else ``why`` it is none of them and the ``candidates`` it cannot tell apart."""

    owners: list[str]
    why: str = ""
    candidates: tuple[str, ...] = ()


def attach_logs(runs: dict[str, RunSources], logs: list[str], extra: list[str], logdir: str,
                log_run: str | None, warnings: _Warnings) -> None:
    """Attach each log to its run(s), adding runs of their own for logs of no dump run.
    ``extra``: the ``--log`` files, attached to ``log_run`` whatever they hold when it is
    given, else by what they hold. What cannot be read or attached is said in
    ``warnings`` as (path, message)."""
    dump_dirs = sorted((d for d, r in runs.items() if r.dump_sets or r.recorded), key=len, reverse=True)
    by_name = {r.name: d for d, r in runs.items()}
    for path in logs:
        if path in extra and log_run is not None:
            if log_run in by_name:  # else load() says there is no such run
                _add(runs, by_name[log_run], path)
            continue
        home = _home(path, dump_dirs)
        if home is not None:
            _add(runs, home, path)
        else:
            _attach_by_content(runs, path, path in extra, logdir, dump_dirs, warnings)


def _home(path: str, dump_dirs: list[str]) -> str | None:
    """The deepest of the dump runs (``dump_dirs``, deepest first) whose tree holds ``path``."""
    return next((d for d in dump_dirs if within(os.path.dirname(path), d)), None)


def _add(runs: dict[str, RunSources], owner: str, path: str) -> None:
    """``path`` among the run's logs, unless it is one already or a copy of one (``--log``
    of a copy of the run's own log would count every line twice)."""
    run = runs[owner]
    if path in run.logs:
        return
    copied = next((p for p in run.logs if _same_bytes(p, path)), None)
    if copied is not None:
        run.warnings.append((path, f"the same bytes as {copied}: read once, as that file"))
        return
    run.logs.append(path)


# The bytes compared at each end of two logs of one size: a copy is equal everywhere, two
# logs of one job differ within their first lines (times, thread ids).
_COMPARED_BYTES = 1 << 20


def _same_bytes(a: str, b: str) -> bool:
    """Whether two files are one log twice: the same size, head and tail."""
    try:
        if fs.stat(a).st_size != fs.stat(b).st_size:
            return False
        with fs.open_read(a) as fa, fs.open_read(b) as fb:
            if fa.read(_COMPARED_BYTES) != fb.read(_COMPARED_BYTES):
                return False
            end = max(fs.size_of(fa) - _COMPARED_BYTES, 0)
            fa.seek(end)
            fb.seek(end)
            return fa.read() == fb.read()
    except OSError:
        return False  # whichever cannot be read is said so when it is


def _attach_by_content(runs: dict[str, RunSources], path: str, given: bool, logdir: str,
                       dump_dirs: list[str], warnings: _Warnings) -> None:
    """A log outside every dump run's directory: attached where its content proves it
    belongs (file times alone would give a oneDNN-off run the log, and so the oneDNN
    banner, of a oneDNN-on run made beside it); a ``--log`` file (``given``) to the only
    run if there is one; else a run of its own."""
    try:
        evidence = _log_evidence(path)
    except OSError as err:  # vanished or unreadable since it was found
        warnings.append((path, f"{reason(err)}: not read"))
        return
    fit = _fit(evidence, runs, dump_dirs)
    for owner in fit.owners:
        _add(runs, owner, path)
    if fit.owners:
        return
    if given:
        if len(runs) == 1:
            _add(runs, next(iter(runs)), path)  # the only run it can be for
        else:
            warnings.append((path, f"given with --log, but {fit.why}: attached to no run; "
                                   "name its run with --run"))
        return
    for d in fit.candidates:
        runs[d].warnings.append((path, f"a log outside this run's directory that may be "
                                       f"this run's: {fit.why}: attached to none of them "
                                       "(--log FILE --run RUN attaches it by hand)"))
    # A log that belongs to no dump run is a run of its own.
    owner = os.path.dirname(path)
    runs.setdefault(owner, RunSources(relpath(owner, logdir), owner))
    _add(runs, owner, path)
    if fit.candidates or evidence.run_ids:
        warnings.append((path, f"not attached to a dump's run: {fit.why}"))


def _log_evidence(path: str) -> _LogEvidence:
    """The run ids and time span of ``path``'s lines (parsed through the cache, which
    the run's build reads again for free). Raises OSError if it cannot be read."""
    def compute() -> _LogEvidence:
        facts = cached_log(path)
        return _LogEvidence(facts.tfdbg_run_ids, facts.first_time, facts.last_time)
    return memo.get(("log", path), file_identity(path), compute)


def _fit(evidence: _LogEvidence, runs: dict[str, RunSources], dump_dirs: list[str]) -> _Fit:
    """Where a log with this evidence belongs. A log's own tfdbg run ids are proof: it ran
    the debug nodes of those dumps; a log naming run ids of no dump here is another run's
    log, whatever its times. A log without any (a VLOG with no debug nodes, a plain
    stderr) is tied by time (``_fit_by_time``)."""
    if evidence.run_ids:
        named = [d for d in dump_dirs if _dump_run_ids(runs[d]) & evidence.run_ids]
        if named:
            return _Fit(named)
        ids = ", ".join(sorted(evidence.run_ids))
        return _Fit([], f"its debug nodes name tfdbg run id {ids}, which no dump here has")
    if evidence.first is None or evidence.last is None:
        return _Fit([], "it has no tfdbg run id and no timed line to tie it to a dump")
    return _fit_by_time(evidence.first, evidence.last, runs, dump_dirs)


def _fit_by_time(start: float, end: float, runs: dict[str, RunSources], dump_dirs: list[str]) -> _Fit:
    """A log whose lines span ``start``..``end`` belongs to a run when that span overlaps
    the wall times of exactly one run's dump: the dump, the profiler and the log read the
    same host clock."""
    fits = [d for d in dump_dirs
            if any(start <= last + CLOCK_SLACK_S and end >= first - CLOCK_SLACK_S
                   for first, last in _dump_walls(runs[d]))]
    if len(fits) == 1:
        return _Fit(fits)
    if fits:
        names = ", ".join(sorted(runs[d].name for d in fits))
        return _Fit([], f"it has no tfdbg run id, and its times fit several runs ({names})", tuple(fits))
    return _Fit([], "it has no tfdbg run id, and its times fit no run's dump")


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
        run_id = memo.get(("run_id", path), file_identity(path), compute)
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
        first, last = memo.get(("walls", os.path.join(*dump_location(sources, prefix))),
                               _set_identity(files), compute)
        if first and last:
            out.append((first, last))
    return out
