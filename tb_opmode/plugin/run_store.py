"""The plugin's run store: the runs of a logdir, read in the background, published whole.

In: a logdir holding tfdbg2 dumps, profiles and logs (found by ``discover.discover``).
Out: per run a finished, never-changed ``tab.RunView`` (``view``), the run list
(``runs``) and the loading progress (``progress``), for ``routes`` to serve.

Reading never happens in a request: a daemon thread scans the logdir, builds each run
(``assemble.build_run`` then ``tab.build_view``) and publishes it under a lock as one
finished object, so a request sees either the old model or the new one, never half of
one. Every ``RESCAN_SECONDS`` it scans again and rebuilds a run whose files changed
(size or mtime) or appeared, keeping the old model served until the new one is ready.

Many runs: when a scan has more than one run to build, they are built in worker
processes (``pool``, one per core), smallest first, each published as soon as it is
ready, so a huge or slow run holds up only its own worker. A run a route asks for while
it is still queued (the tab's user picked it) is sent to the next free worker, ahead of
the queue (``read_next``, ``view``). A lone run is built in the store's thread (no
process to start). Which full views stay in memory is ``residency``'s to say; a route
asking for a run held light has its full view rebuilt from the on-disk cache.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from google.protobuf.message import DecodeError

from .. import loadworker
from ..analyze.assemble import build_run
from ..errors import BadParameter, NoSuchRun, StillLoading, UnloadableRun
from ..present import tab
from ..read import fs
from ..read.cache import cached_dump_tasks, held_dump_tasks, load_view, store_view
from ..read.discover import RunSources, discover
from ..read.tfdbg import find_dump_sets
from .pool import BuildHooks, Job, Signature, WorkerPool, signature_bytes
from .residency import Residency

__all__ = ["RunStore", "PublishedRun", "Signature", "file_signature"]

logger = logging.getLogger(__name__)


def file_signature(sources: RunSources) -> Signature:
    """(path, size, mtime ns) of every file of a run: changes when a file grows or appears."""
    paths = [p for files in sources.dump_sets.values() for p in files.values()]
    paths += sources.profiles + sources.logs
    out = []
    for path in sorted(paths):
        try:
            st = fs.stat(path)
            out.append((path, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((path, -1, 0))
    return tuple(out)


@dataclass(frozen=True)
class PublishedRun:
    """A run as published: built once, then only read. ``view`` is the full view when
    ``full``, else its light form (``loadworker.light_view``), which only the run list
    reads; ``RunStore.view`` gives routes the full one."""

    view: tab.RunView
    signature: Signature
    loaded_at: float
    sources: RunSources
    full: bool = True
    # What the run list says of it, made once: the run list is asked for often while
    # many runs load, and a run's entry does not change once it is published.
    listing: dict[str, Any] = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        self.listing.update(_listing(self))


def _listing(run: PublishedRun) -> dict[str, Any]:
    """What the run list shows of a published run (besides its name and status); a
    light and a full view list the same."""
    view = run.view
    doc = view.doc
    return dict(tensorflow_version=doc["tensorflow_version"],
                onednn_enabled=doc["onednn_enabled"],
                onednn_state=tab.onednn_state(view)[0],
                counts_from=doc["counts_from"],
                op_types=len(view.rows),
                executions=sum(r["total"] for r in view.rows.values()),
                has_profile=bool(view.model.profiles),
                # a recorded run's command, so that the comparison pairs runs of one command
                command=" ".join(view.model.recorded.command) if view.model.recorded else "",
                warnings=len(doc["warnings"]),
                loaded_at=run.loaded_at)


def _read_tasks_here(paths: list[str]) -> list[frozenset[str]]:
    return [cached_dump_tasks({"graphs": p}) for p in paths]


@dataclass
class _Progress:
    scans: int = 0
    runs_total: int = 0
    runs_done: int = 0
    files_total: int = 0
    files_done: int = 0
    bytes_total: int = 0
    bytes_done: int = 0
    loading: str = ""
    scanning: bool = False
    error: str = ""
    pending: list[str] = field(default_factory=list)


class RunStore:
    """Runs of one logdir, read in a background thread (``start``) and published whole."""

    RESCAN_SECONDS = 30.0
    # Full views held at once when others can be rebuilt from the cache (``residency``).
    RESIDENT_VIEWS = 8
    # Worker processes for a scan with several runs to build: one per core.
    WORKERS: Optional[int] = None
    # Discovery's scan of at least this many ``.graphs`` files the cache does not know
    # (a logdir of runs: their cluster tasks) is read by the workers, started for it (the
    # loads that follow use them): the cores share it, and TensorBoard's process is left
    # to serve.
    SCAN_IN_WORKERS = 8
    # ``.graphs`` files a worker reads per message of that scan.
    SCAN_CHUNK = 10

    def __init__(self, logdir: str, rescan_seconds: Optional[float] = None) -> None:
        self._logdir = fs.absolute(logdir) if logdir else ""
        self._rescan = self.RESCAN_SECONDS if rescan_seconds is None else rescan_seconds
        self._lock = threading.Lock()
        self._runs: dict[str, PublishedRun] = {}
        self._residency = Residency(self.RESIDENT_VIEWS)
        self._rebuild_locks: dict[str, threading.Lock] = {}
        self._stop = threading.Event()
        self._pool = WorkerPool(self._stop)
        self._discovered: dict[str, RunSources] = {}
        self._errors: dict[str, str] = {}
        self._failed: dict[str, Signature] = {}
        # Runs a route asked for while they were still queued, the last asked for last:
        # they go to the next free worker, ahead of the runs queued before them.
        self._asked_next: dict[str, None] = {}
        self._progress = _Progress()
        # Run name -> (its signature, the bytes it names), for ``_update_progress``.
        self._sizes: dict[str, tuple[Signature, int]] = {}
        self._active = False
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def logdir(self) -> str:
        return self._logdir

    @property
    def active(self) -> bool:
        """Whether the last scan found a run."""
        return self._active

    # ------------------------------------------------------------ the thread

    def start(self) -> None:
        """Start the background thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="opmode-store", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the background thread (and its worker processes) and wait for it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        self._pool.close()

    def rescan(self) -> None:
        """Scan now instead of at the next interval."""
        self._idle.clear()
        self._wake.set()

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until a full scan and all its loads finished (for tests and tools)."""
        return self._idle.wait(timeout)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._wake.clear()
                self._scan_once()
                self._idle.set()
                self._wake.wait(self._rescan)
        finally:
            if not self._stop.is_set():
                # An error we do not expect (a bug): threading.excepthook logs it; say so too.
                with self._lock:
                    self._progress.error = ("the background loader stopped on an unexpected "
                                            "error; see TensorBoard's log")
                    self._progress.scanning = False
                self._idle.set()

    def _scan_once(self) -> None:
        with self._lock:
            self._progress.scanning = True
        try:
            self._start_workers_before_discovery()
            self._scan_and_build()
        finally:
            self._pool.retire_warm()  # a scan's workers stop once its loads are done

    # ------------------------------------------------------------ a scan

    def _start_workers_before_discovery(self) -> None:
        """At the first scan, start the workers before discovery when the logdir looks
        like one of many runs still to read (``_cold_and_many``), so that their imports
        run while discovery walks the logdir instead of after it. They stay warm in the
        pool for the scan's tasks and loads, and stop with the scan. Not at later scans:
        most find nothing to load."""
        with self._lock:
            first = self._progress.scans == 0
        count = self._worker_count()
        if first and count >= 2 and not self._pool.warm and not fs.is_remote(self._logdir) \
                and self._cold_and_many():
            self._pool.warm_up(count)

    def _cold_and_many(self) -> bool:
        """Whether the logdir has at least ``SCAN_IN_WORKERS`` directories at its top, the
        first holding a dump set whose cluster tasks the cache does not hold (a cold start;
        a warm one lists its runs from the cache and needs no worker)."""
        try:
            names = sorted(os.listdir(self._logdir))
        except OSError:
            return False  # discovery says why
        dirs = [p for p in (os.path.join(self._logdir, n) for n in names) if os.path.isdir(p)]
        if len(dirs) < self.SCAN_IN_WORKERS:
            return False
        sets = find_dump_sets(dirs[0])
        return bool(sets) and all(held_dump_tasks(files) is None for files in sets.values())

    def _scan_and_build(self) -> None:
        found, scan_error = self._discover()
        signatures = {r.name: file_signature(r) for r in found}
        with self._lock:
            self._take_discovery(found, scan_error, signatures)
            todo = [Job(r, signatures[r.name]) for r in found
                    if not self._up_to_date(r.name, signatures[r.name])]
        # Smallest first: a huge run must not keep the small ones from the tab.
        todo.sort(key=lambda job: (signature_bytes(job.signature), job.name))
        try:
            if len(todo) > 1 and self._worker_count() > 1:
                self._build_in_workers(todo, signatures)
            else:
                self._build_queue_here(list(reversed(todo)), signatures)
        finally:
            with self._lock:
                self._progress.loading = ""
                self._progress.scanning = False

    def _discover(self) -> tuple[list[RunSources], str]:
        """The runs of the logdir, and why there are none if it cannot be scanned."""
        try:
            return discover(self._logdir, scan=self._read_cluster_tasks), ""
        except OSError as err:
            return [], f"cannot scan {self._logdir}: {err.strerror or err}"

    def _take_discovery(self, found: list[RunSources], scan_error: str,
                        signatures: dict[str, Signature]) -> None:
        """Note what a scan found and forget the runs it no longer finds (lock held)."""
        self._discovered = {r.name: r for r in found}
        for name in [n for n in (*self._runs, *self._errors, *self._asked_next)
                     if n not in self._discovered]:
            self._runs.pop(name, None)
            self._residency.forget(name)
            self._errors.pop(name, None)
            self._failed.pop(name, None)
            self._asked_next.pop(name, None)
        self._active = bool(found)
        self._progress.error = scan_error
        self._progress.scans += 1
        self._update_progress(signatures)

    def _up_to_date(self, name: str, signature: Signature) -> bool:
        """Whether run ``name`` is published from exactly these files, or failed on them
        before (lock held)."""
        current = self._runs.get(name)
        if current is not None and current.signature == signature:
            return True
        return self._failed.get(name) == signature

    def _read_cluster_tasks(self, paths: list[str]) -> list[frozenset[str]]:
        """``discover``'s ``Scan``: the cluster tasks of each ``.graphs`` file, read by the
        workers ``SCAN_CHUNK`` files at a time (each kept in the cache); a chunk a worker
        fails to read is read here. Few files, one core or a remote logdir: all read here."""
        count = self._worker_count()
        if count < 2 or len(paths) < self.SCAN_IN_WORKERS:
            return _read_tasks_here(paths)
        chunks = [paths[i:i + self.SCAN_CHUNK] for i in range(0, len(paths), self.SCAN_CHUNK)]
        got = self._pool.read_tasks(chunks, count)
        return [tasks for i, chunk in enumerate(chunks)
                for tasks in (got[i] if i in got else _read_tasks_here(chunk))]

    def _worker_count(self) -> int:
        if self.WORKERS is not None:
            return self.WORKERS
        if fs.is_remote(self._logdir):
            # Remote runs load in this process: discovery already fetched their logs
            # (and the listing has every object's size and ETag); a worker process
            # would fetch them again. Remote reading waits on the network, not the CPU.
            return 1
        try:
            return len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return os.cpu_count() or 1

    # ------------------------------------------------------------ building runs

    def _build_in_workers(self, todo: list[Job], signatures: dict[str, Signature]) -> None:
        """Build ``todo`` (smallest first) in worker processes, publishing each as it is
        done; what no worker could take is built in this thread."""
        full = self._residency.keeps_all(len(todo))
        if not full:
            todo = self._publish_cached_light_views(todo)

        def progressed() -> None:
            with self._lock:
                self._update_progress(signatures)

        hooks = BuildHooks(publish=self._publish, fail=self._fail,
                           bring_forward=self._bring_forward, show_loading=self._show_loading,
                           progressed=progressed)
        left = self._pool.build(list(reversed(todo)), self._worker_count(), self._logdir,
                                full, hooks)
        for job in reversed(left):
            if self._stop.is_set():
                return
            self._build_here(job)
            progressed()

    def _build_queue_here(self, queue: list[Job], signatures: dict[str, Signature]) -> None:
        """Build the runs of ``queue`` in this thread, the last first (after those a route
        asked for)."""
        while queue:
            self._bring_forward(queue)
            job = queue.pop()
            if self._stop.is_set():
                return
            with self._lock:
                self._progress.loading = job.name
            self._build_here(job)
            with self._lock:
                self._update_progress(signatures)

    def _publish_cached_light_views(self, todo: list[Job]) -> list[Job]:
        """Publish the runs whose light view the cache holds for exactly these files (a
        warm start lists its runs at once; each full view is built when a route asks);
        return the others, still to build."""
        left = []
        for job in todo:
            if self._stop.is_set():
                break
            light = load_view(self._logdir, job.name, job.signature)
            if light is None:
                left.append(job)
            else:
                self._publish(job, light, False)
        return left

    def _bring_forward(self, queue: list[Job]) -> None:
        """Move the queued runs a route asked for (``read_next``) to the end of ``queue``,
        where the next job is taken from: the last asked for is sent first."""
        with self._lock:
            if not self._asked_next:
                return
            rank = {name: i for i, name in enumerate(self._asked_next)}
        asked = sorted((job for job in queue if job.name in rank), key=lambda job: rank[job.name])
        if asked and queue[-len(asked):] != asked:
            queue[:] = [job for job in queue if job.name not in rank] + asked

    def _show_loading(self, names: list[str]) -> None:
        with self._lock:
            self._progress.loading = ", ".join(sorted(names))

    def _build_here(self, job: Job) -> None:
        """Build a run in this thread, publish it and keep its light view in the cache."""
        try:
            view = tab.build_view(build_run(job.sources, self._logdir), self._logdir)
        except (OSError, ValueError, DecodeError) as err:
            logger.warning("opmode: cannot load run %s: %s", job.name, err)
            self._fail(job, f"{type(err).__name__}: {err}")
            return
        except Exception as err:  # noqa: BLE001 - one run's bug must not stop the store
            # Not silent: logged with its traceback and shown on the run in the tab.
            logger.exception("opmode: bug while loading run %s", job.name)
            self._fail(job, f"{type(err).__name__}: {err}")
            return
        self._publish(job, view, True)
        store_view(self._logdir, job.name, job.signature, loadworker.light_view(view))

    def _publish(self, job: Job, view: tab.RunView, full: bool) -> None:
        published = PublishedRun(view, job.signature, time.time(), job.sources, full)
        with self._lock:
            self._runs[job.name] = published
            self._errors.pop(job.name, None)
            self._failed.pop(job.name, None)
            self._asked_next.pop(job.name, None)
            self._residency.forget(job.name)
            if full:
                self._hold(job.name)

    def _fail(self, job: Job, text: str) -> None:
        """Run ``job`` could not be built: ``text`` is shown on it until its files change."""
        with self._lock:
            self._errors[job.name] = text
            self._failed[job.name] = job.signature
            self._asked_next.pop(job.name, None)

    def _hold(self, name: str) -> None:
        """Mark ``name``'s full view used; drop those ``residency`` lets go to their light
        form (lock held)."""
        for old in self._residency.hold(name):
            run = self._runs.get(old)
            if run is not None and run.full:
                self._runs[old] = PublishedRun(loadworker.light_view(run.view), run.signature,
                                               run.loaded_at, run.sources, False)

    def _full_view(self, name: str, run: PublishedRun) -> tab.RunView:
        """The full view of a published run, rebuilt from the cache if only its light
        form is held (a route asked for a run beyond the resident ones)."""
        if run.full:
            with self._lock:
                self._residency.used(name)
            return run.view
        with self._lock:
            lock = self._rebuild_locks.setdefault(name, threading.Lock())
        with lock:  # two requests for the same run build it once
            with self._lock:
                current = self._runs.get(name)
            if current is not None and current.full:
                return self._full_view(name, current)
            return self._rebuild(name, run)

    def _rebuild(self, name: str, run: PublishedRun) -> tab.RunView:
        """Build the full view of a run held light, and hold it if it is still the one
        published (its rebuild lock held)."""
        began = time.monotonic()
        try:
            view = tab.build_view(build_run(run.sources, self._logdir), self._logdir)
        except Exception as err:  # noqa: BLE001 - answered as 404 and logged
            logger.exception("opmode: cannot rebuild run %s from the cache", name)
            raise UnloadableRun(f"run {name!r} could not be reloaded: {err}") from err
        logger.info("opmode: rebuilt run %s in %.2f s", name, time.monotonic() - began)
        with self._lock:
            if self._runs.get(name) is run:
                self._runs[name] = PublishedRun(view, run.signature, run.loaded_at,
                                                run.sources, True)
                self._hold(name)
        return view

    def _update_progress(self, signatures: dict[str, Signature]) -> None:
        """Recount progress (lock held)."""
        p = self._progress
        p.runs_total = len(signatures)
        p.runs_done = p.files_total = p.files_done = p.bytes_total = p.bytes_done = 0
        p.pending = []
        for name, sig in signatures.items():
            size = self._bytes_of(name, sig)
            p.files_total += len(sig)
            p.bytes_total += size
            run = self._runs.get(name)
            if (run is not None and run.signature == sig) or name in self._errors:
                p.runs_done += 1
                p.files_done += len(sig)
                p.bytes_done += size
            else:
                p.pending.append(name)

    def _bytes_of(self, name: str, signature: Signature) -> int:
        """``signature_bytes``, summed once per signature rather than at every recount
        (there is one per run published) (lock held)."""
        known = self._sizes.get(name)
        if known is None or known[0] is not signature:
            known = self._sizes[name] = (signature, signature_bytes(signature))
        return known[1]

    # ------------------------------------------------------------ what routes read

    def view(self, name: Optional[str], param: str = "run") -> tab.RunView:
        """The full view of run ``name`` (the request parameter ``param``), or the
        error that says why there is none: ``BadParameter`` (no name), ``NoSuchRun``,
        ``StillLoading`` or ``UnloadableRun``. A run still queued is read next: someone
        is waiting for it (``read_next``)."""
        if not name:
            raise BadParameter(f"missing parameter {param!r}")
        with self._lock:
            run = self._runs.get(name)
            known = name in self._discovered
            error = self._errors.get(name)
        if run is not None:
            return self._full_view(name, run)
        if error:
            raise UnloadableRun(f"run {name!r} could not be loaded: {error}")
        if known and self.read_next(name):
            raise StillLoading(f"run {name!r} is still loading; it is read next")
        if known:  # published or failed since the look above: ask again
            raise StillLoading(f"run {name!r} is still loading")
        raise NoSuchRun(f"no run named {name!r}")

    def read_next(self, name: str) -> bool:
        """Have run ``name`` read next, ahead of the runs queued before it (someone waits
        for it): True if it is known and neither published nor failed, else False."""
        with self._lock:
            if name not in self._discovered or name in self._runs or name in self._errors:
                return False
            self._asked_next.pop(name, None)  # the last asked for is read first
            self._asked_next[name] = None
            return True

    def runs(self) -> dict[str, Any]:
        """All runs, loaded or not: ``{"runs": [{run, status, tensorflow_version, ...}],
        "progress": ...}``, read under one lock so that both agree."""
        with self._lock:
            names = sorted(set(self._discovered) | set(self._runs))
            # A set: while many runs load, most are pending, and the list is asked often.
            pending = set(self._progress.pending)
            runs = [self._run_entry(name, pending) for name in names]
            progress = self._progress_locked()
        return {"runs": runs, "progress": progress}

    def _run_entry(self, name: str, pending: set[str]) -> dict[str, Any]:
        """Run ``name`` in the run list (lock held)."""
        entry: dict[str, Any] = {"run": name}
        run = self._runs.get(name)
        if run is not None:
            entry.update(status="ready", reloading=name in pending)
            entry.update(run.listing)
        elif name in self._errors:
            entry.update(status="error", error=self._errors[name])
        else:
            entry.update(status="loading")
        return entry

    def progress(self) -> dict[str, Any]:
        """Runs, files and bytes loaded of those found."""
        with self._lock:
            return self._progress_locked()

    def _progress_locked(self) -> dict[str, Any]:
        p = self._progress
        return {"scans": p.scans, "runs_total": p.runs_total, "runs_done": p.runs_done,
                "files_total": p.files_total, "files_done": p.files_done,
                "bytes_total": p.bytes_total, "bytes_done": p.bytes_done,
                "loading": p.loading, "scanning": p.scanning, "pending": list(p.pending),
                "error": p.error, "logdir_set": bool(self._logdir)}
