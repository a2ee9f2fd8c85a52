"""The plugin's loader: runs read in a background thread, published whole.

In: a logdir holding tfdbg2 dumps, profiles and logs (found by
``discover.discover``). Out: per run a finished, never-changed ``tab.RunView``
(``view``), the run list (``runs``) and the loading progress (``progress``), for
``routes`` to serve.

Loading never happens in a request: a daemon thread scans the logdir, builds
each run (``assemble.build_run`` then ``tab.prepare``) and publishes it under a
lock as one finished, never-changed object, so a request sees either the old
model or the new one, never half of one. Every ``RESCAN_SECONDS`` it scans
again and rebuilds a run whose files changed (size or mtime) or appeared,
keeping the old model served until the new one is ready.

Many runs: when a scan has more than one run to load, they are built in
worker processes (``loadworker``, one per core: the reading is CPU-bound
Python), smallest first, each published as soon as it is ready, so a huge or
slow run holds up only its own worker. A run a route asks for while it is still
queued (the tab's user picked it) is sent to the next free worker, ahead of the
queue (``want``, ``view``). A lone run is built in the loader
thread (no process to start). Memory: at most ``RESIDENT_VIEWS`` runs' full
views are held (a small dump's view is ~27 MB; 200 would be 5 GB); the
others keep only what the run list shows, and a route asking for one rebuilds
its view from the on-disk cache (tens of milliseconds), evicting the least
recently used. Without the cache every view is held.
"""
from __future__ import annotations

import gc
import logging
import os
import selectors
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import IO, Any, Optional

from google.protobuf.message import DecodeError

from .. import loadworker
from ..analyze.assemble import build_run
from ..errors import BadParameter, NoSuchRun, StillLoading, UnloadableRun
from ..present import tab
from ..read import fs
from ..read.cache import CACHE_ENV, cache_dir, cached_dump_tasks, held_dump_tasks, load_view, store_view
from ..read.discover import RunSources, discover
from ..read.tfdbg import find_dump_sets

__all__ = ["RunLoader", "Signature", "file_signature"]

logger = logging.getLogger(__name__)


def file_signature(sources: RunSources) -> tuple[tuple[str, int, int], ...]:
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


Signature = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class _Loaded:
    """A published run: built once, then only read. ``view`` is the full view when
    ``full``, else its light form (``loadworker.light_view``), which only the run
    list reads; ``_view`` gives routes the full one."""

    view: tab.RunView
    signature: Signature
    loaded_at: float
    sources: Optional[RunSources] = None
    full: bool = True
    # What the run list says of it (``_listing``), made once: the tab (and the bench) ask
    # for the list of 200 runs several times a second while they load.
    listing: dict[str, Any] = field(default_factory=dict, compare=False)


def _listing(loaded: _Loaded) -> dict[str, Any]:
    """What the run list shows of a published run (besides its name and status)."""
    view = loaded.view
    doc = view.doc
    return dict(tensorflow_version=doc["tensorflow_version"],
                onednn_enabled=doc["onednn_enabled"],
                onednn_state=tab.onednn_state(view)[0],
                counts_from=doc["counts_from"],
                op_types=len(view.rows),
                executions=sum(r["total"] for r in view.rows.values()),
                has_profile=bool(view.model.profiles),
                warnings=len(doc["warnings"]),
                loaded_at=loaded.loaded_at)


def _loaded(view: tab.RunView, signature: Signature, loaded_at: float,
            sources: Optional[RunSources], full: bool) -> _Loaded:
    """A ``_Loaded`` with its listing made (a light and a full view list the same)."""
    loaded = _Loaded(view, signature, loaded_at, sources, full)
    loaded.listing.update(_listing(loaded))
    return loaded


def _signature_bytes(signature: Signature) -> int:
    return sum(max(0, size) for _p, size, _m in signature)


class _Worker:
    """One ``loadworker`` process, fed one job at a time over its pipes."""

    def __init__(self) -> None:
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # Started in the directory this package is in: ``python -m`` puts the working
        # directory first on sys.path, so a worker started where another tb_opmode lies
        # (a checkout of another version) imported that one, not TensorBoard's. The
        # cache directory is passed resolved, as it may be relative to our directory.
        where = cache_dir()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tb_opmode.loadworker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=None, close_fds=True, cwd=here,
            env={**os.environ, CACHE_ENV: where if where is not None else "off",
                 "PYTHONPATH": os.pathsep.join(
                     [here] + [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                               if p])})
        # The runs sent and not answered yet, oldest first (answers come in order).
        self.jobs: deque[tuple[RunSources, Signature]] = deque()

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def send(self, sources: RunSources, signature: Signature, logdir: str, full: bool) -> None:
        assert self.proc.stdin is not None
        loadworker.send(self.proc.stdin, ("run", sources, signature, logdir, full))
        self.jobs.append((sources, signature))

    def send_tasks(self, paths: list[str]) -> None:
        """Ask for the cluster tasks of these ``.graphs`` files (discovery's scan)."""
        assert self.proc.stdin is not None
        loadworker.send(self.proc.stdin, ("tasks", paths))

    def stop(self) -> None:
        """Close its stdin (it exits at EOF); kill it if it does not go."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError as err:
            logger.warning("opmode: closing a load worker's pipe: %s", err)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            logger.warning("opmode: load worker %d did not exit; killing it", self.proc.pid)
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


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


class RunLoader:
    """Runs of one logdir, loaded in a background thread (``start``) and published whole."""

    RESCAN_SECONDS = 30.0
    # Full views held at once when others can be rebuilt from the cache.
    RESIDENT_VIEWS = 8
    # Worker processes for a scan with several runs to load: one per core.
    WORKERS: Optional[int] = None
    # Discovery's scan of at least this many ``.graphs`` files the cache does not know
    # (a logdir of runs: their cluster tasks) is read by the workers, started for it (the
    # loads that follow use them): two cores read it in half the time, and TensorBoard's
    # process, which did it all (a second for 200 runs), is left to serve.
    SCAN_IN_WORKERS = 8
    # ``.graphs`` files a worker reads per message of that scan.
    SCAN_CHUNK = 10

    def __init__(self, logdir: str, rescan_seconds: Optional[float] = None) -> None:
        self._logdir = fs.absolute(logdir) if logdir else ""
        self._rescan = self.RESCAN_SECONDS if rescan_seconds is None else rescan_seconds
        self._lock = threading.Lock()
        self._runs: dict[str, _Loaded] = {}
        # Names of the runs whose full view is held, least recently used first.
        self._resident: OrderedDict[str, None] = OrderedDict()
        self._rebuild_locks: dict[str, threading.Lock] = {}
        self._workers: list[_Worker] = []
        # Workers started by discovery's scan, waiting for the scan's loads.
        self._spare: list[_Worker] = []
        self._discovered: dict[str, RunSources] = {}
        self._errors: dict[str, str] = {}
        self._failed: dict[str, Signature] = {}
        # Runs a route asked for while they were still queued, the last asked for last:
        # they go to the next free worker, ahead of the runs queued before them.
        self._wanted: dict[str, None] = {}
        self._progress = _Progress()
        # Run name -> (its signature, the bytes it names), for ``_update_progress``.
        self._sizes: dict[str, tuple[Signature, int]] = {}
        self._active = False
        self._stop = threading.Event()
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

    # ------------------------------------------------------------ loading

    def start(self) -> None:
        """Start the background loader (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="opmode-loader", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the background loader (and its worker processes) and wait for it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        for worker in list(self._workers):
            self._retire(worker)

    def rescan(self) -> None:
        """Ask the loader to scan now instead of at the next interval."""
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
            self._start_early()
            self._scan_and_load()
        finally:
            for worker in self._spare:
                self._retire(worker)  # a scan's workers stop once its loads are done
            self._spare = []

    def _start_early(self) -> None:
        """At the first scan, start the load workers before discovery when the logdir
        looks like one of many runs still to read: local, two cores or more, at least
        ``SCAN_IN_WORKERS`` directories at its top, and the first of them holding a dump
        set whose cluster tasks the cache does not hold (a cold start; a warm one lists
        its runs from the cache and needs no worker). Their imports (~0.3 s each) then
        run while discovery walks the logdir, instead of after it. They wait in
        ``_spare`` for the scan's tasks and loads, and stop with the scan like the
        workers it starts. Not at later scans: most find nothing to load."""
        with self._lock:
            first = self._progress.scans == 0
        count = self._worker_count()
        if not first or count < 2 or self._spare or fs.is_remote(self._logdir):
            return
        try:
            names = sorted(os.listdir(self._logdir))
        except OSError:
            return  # discovery says why
        dirs = [p for p in (os.path.join(self._logdir, n) for n in names) if os.path.isdir(p)]
        if len(dirs) < self.SCAN_IN_WORKERS:
            return
        sets = find_dump_sets(dirs[0])
        if not sets or any(held_dump_tasks(files) is not None for files in sets.values()):
            return
        for _ in range(count):
            worker = self._start_worker()
            if worker is None:
                break
            self._spare.append(worker)

    def _scan_and_load(self) -> None:
        try:
            found = discover(self._logdir, scan=self._scan_tasks)
            scan_error = ""
        except OSError as err:
            found, scan_error = [], f"cannot scan {self._logdir}: {err.strerror or err}"
        signatures = {r.name: file_signature(r) for r in found}
        with self._lock:
            self._discovered = {r.name: r for r in found}
            for name in list(self._runs):
                if name not in self._discovered:
                    del self._runs[name]
                    self._resident.pop(name, None)
            for name in list(self._errors):
                if name not in self._discovered:
                    del self._errors[name]
                    self._failed.pop(name, None)
            for name in list(self._wanted):
                if name not in self._discovered:
                    del self._wanted[name]
            self._active = bool(found)
            self._progress.error = scan_error
            self._progress.scans += 1
            self._update_progress(signatures)
            todo = []
            for sources in found:
                signature = signatures[sources.name]
                current = self._runs.get(sources.name)
                if current is not None and current.signature == signature:
                    continue
                if self._failed.get(sources.name) == signature:
                    continue  # failed before on exactly these files
                todo.append((sources, signature))
        # Smallest first: a huge run must not keep the small ones from the tab.
        todo.sort(key=lambda job: (_signature_bytes(job[1]), job[0].name))
        try:
            if len(todo) > 1 and self._worker_count() > 1:
                self._load_in_workers(todo, signatures)
            else:
                queue = list(reversed(todo))
                while queue:
                    self._bring_forward(queue)
                    sources, signature = queue.pop()
                    if self._stop.is_set():
                        return
                    with self._lock:
                        self._progress.loading = sources.name
                    self._load(sources, signature)
                    with self._lock:
                        self._update_progress(signatures)
        finally:
            with self._lock:
                self._progress.loading = ""
                self._progress.scanning = False

    def _scan_tasks(self, paths: list[str]) -> list[frozenset[str]]:
        """``discover``'s ``Scan``: the cluster tasks of each ``.graphs`` file, read by the
        load workers ``SCAN_CHUNK`` files at a time (each kept in the cache); a chunk a
        worker fails to read is read here. Few files, one core or a remote logdir: all
        read here."""
        count = self._worker_count()
        if count < 2 or len(paths) < self.SCAN_IN_WORKERS:
            return [cached_dump_tasks({"graphs": p}) for p in paths]
        chunks = [paths[i:i + self.SCAN_CHUNK] for i in range(0, len(paths), self.SCAN_CHUNK)]
        got: dict[int, list[frozenset[str]]] = {}
        queue = list(reversed(range(len(chunks))))
        busy: dict[_Worker, int] = {}
        selector = selectors.DefaultSelector()
        try:
            while (queue or busy) and not self._stop.is_set():
                while queue and len(busy) < count:
                    worker = self._spare.pop() if self._spare else self._start_worker()
                    if worker is None:
                        break
                    index = queue.pop()
                    try:
                        worker.send_tasks(chunks[index])
                    except OSError as err:
                        logger.warning("opmode: load worker %d is gone (%s); starting another",
                                       worker.proc.pid, err)
                        self._retire(worker)
                        queue.append(index)
                        continue
                    busy[worker] = index
                    selector.register(worker.stdout, selectors.EVENT_READ, worker)
                if not busy:
                    break  # no worker could start: the rest is read below
                for key, _events in selector.select(timeout=0.5):
                    worker = key.data
                    selector.unregister(worker.stdout)
                    index = busy.pop(worker)
                    tasks, alive = self._tasks_reply(worker, len(chunks[index]))
                    if tasks is not None:
                        got[index] = tasks
                    if alive:
                        self._spare.append(worker)
                    else:
                        self._retire(worker)
        finally:
            for worker in busy:
                self._retire(worker)  # stopping: the busy ones are not waited for
            selector.close()
        return [t for i, chunk in enumerate(chunks)
                for t in (got[i] if i in got else [cached_dump_tasks({"graphs": p}) for p in chunk])]

    def _tasks_reply(self, worker: _Worker, expected: int) -> tuple[Optional[list[frozenset[str]]], bool]:
        """(the tasks a worker sent for a chunk of ``expected`` files, or None if it sent
        none, whether it is still usable)."""
        try:
            reply = loadworker.receive(worker.stdout)
        except (EOFError, OSError, ValueError, TypeError, AttributeError, ImportError) as err:
            logger.error("opmode: load worker %d died reading dumps' cluster tasks (exit %s, "
                         "%s: %s); read in this process instead", worker.proc.pid,
                         worker.proc.poll(), type(err).__name__, err)
            return None, False
        if reply[0] == "tasks" and isinstance(reply[1], list) and len(reply[1]) == expected:
            return reply[1], True
        if reply[0] == "error":
            _kind, _type_name, message, trace, known = reply
            if known:
                logger.warning("opmode: a load worker could not read dumps' cluster tasks (%s); "
                               "read in this process instead", message)
            else:
                logger.error("opmode: bug while reading dumps' cluster tasks:\n%s", trace)
            return None, True
        logger.error("opmode: load worker %d answered %r to a scan; read in this process instead",
                     worker.proc.pid, reply[0])
        return None, False

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

    def _keep_full(self, jobs: int) -> bool:
        """Whether a loaded run's full view is held: always without the cache (nothing
        could rebuild it cheaply), else when the scan's runs all fit."""
        return cache_dir() is None or jobs <= self.RESIDENT_VIEWS

    def _load_in_workers(self, todo: list[tuple[RunSources, Signature]],
                         signatures: dict[str, Signature]) -> None:
        """Build ``todo`` (smallest first) in worker processes, publishing each as it
        is done. A worker that dies fails its run (it may be what killed it) and is
        replaced; if none can be started the rest load in this thread."""
        full = self._keep_full(len(todo))
        if not full:
            todo = self._from_view_cache(todo)
        queue = list(reversed(todo))
        selector = selectors.DefaultSelector()
        idle, self._spare = self._spare, []  # those discovery's scan started, warm
        busy: list[_Worker] = []
        try:
            while (queue or busy) and not self._stop.is_set():
                self._bring_forward(queue)
                while queue and len(busy) < self._worker_count():
                    worker = idle.pop() if idle else self._start_worker()
                    if worker is None:
                        break
                    busy.append(worker)
                    selector.register(worker.stdout, selectors.EVENT_READ, worker)
                for worker in list(busy):
                    # A second run is sent before the first is answered, so the worker
                    # never waits for this thread (busy with TensorBoard's own threads)
                    # between two runs; only small ones, so that no run waits behind a
                    # big one while another worker could take it.
                    while queue and (not worker.jobs or (
                            len(worker.jobs) < 2 and self._small(worker.jobs[0]) and self._small(queue[-1]))):
                        sources, signature = queue.pop()
                        try:
                            worker.send(sources, signature, self._logdir, full)
                        except OSError as err:
                            logger.warning("opmode: load worker %d is gone (%s); starting another",
                                           worker.proc.pid, err)
                            queue.append((sources, signature))
                            if not worker.jobs:
                                busy.remove(worker)
                                selector.unregister(worker.stdout)
                                self._retire(worker)
                            # else its end is read below: the run it had fails, the rest go back
                            break
                    if worker in busy and not worker.jobs:
                        busy.remove(worker)
                        selector.unregister(worker.stdout)
                        idle.append(worker)
                self._show_loading(selector)
                if not busy:
                    break  # no worker could start: the rest load below, in this thread
                for key, _events in selector.select(timeout=0.5):
                    worker = key.data
                    if not self._finish(worker, full):
                        # Its other runs go to another worker (the first may be what killed it).
                        queue.extend(reversed(worker.jobs))
                        worker.jobs.clear()
                        busy.remove(worker)
                        selector.unregister(worker.stdout)
                        self._retire(worker)
                    elif not worker.jobs:
                        busy.remove(worker)
                        selector.unregister(worker.stdout)
                        idle.append(worker)
                    with self._lock:
                        self._update_progress(signatures)
                self._show_loading(selector)
        finally:
            for worker in busy:
                self._retire(worker)  # stopping: the busy ones are not waited for
            selector.close()
            for worker in idle:
                self._retire(worker)
        for sources, signature in reversed(queue):
            if self._stop.is_set():
                return
            self._load(sources, signature)
            with self._lock:
                self._update_progress(signatures)

    # A run of fewer bytes than this may be sent to a worker still busy with another
    # such run (``_load_in_workers``).
    PIPELINE_BYTES = 64 << 20

    def _small(self, job: tuple[RunSources, Signature]) -> bool:
        return _signature_bytes(job[1]) < self.PIPELINE_BYTES

    def _from_view_cache(self, todo: list[tuple[RunSources, Signature]]
                         ) -> list[tuple[RunSources, Signature]]:
        """Publish the runs whose light view the cache holds for exactly these files
        (a warm start lists 200 runs in a fraction of a second; each full view is
        built when a route asks); return the others, still to load."""
        left = []
        for sources, signature in todo:
            if self._stop.is_set():
                break
            light = load_view(self._logdir, sources.name, signature)
            if light is None:
                left.append((sources, signature))
            else:
                self._publish(sources, signature, light, False)
        return left

    def _bring_forward(self, queue: list[tuple[RunSources, Signature]]) -> None:
        """Move the queued runs a route asked for (``want``) to the end of ``queue``, where
        the next job is taken from: the last asked for is sent first."""
        with self._lock:
            if not self._wanted:
                return
            rank = {name: i for i, name in enumerate(self._wanted)}
        wanted = sorted((job for job in queue if job[0].name in rank), key=lambda job: rank[job[0].name])
        if wanted and queue[-len(wanted):] != wanted:
            queue[:] = [job for job in queue if job[0].name not in rank] + wanted

    def _show_loading(self, selector: selectors.BaseSelector) -> None:
        names = [key.data.jobs[0][0].name for key in selector.get_map().values() if key.data.jobs]
        with self._lock:
            self._progress.loading = ", ".join(sorted(names))

    def _start_worker(self) -> Optional[_Worker]:
        try:
            worker = _Worker()
        except (OSError, ValueError) as err:
            logger.warning("opmode: cannot start a load worker (%s); loading in this thread", err)
            return None
        self._workers.append(worker)
        return worker

    def _retire(self, worker: _Worker) -> None:
        worker.stop()
        if worker in self._workers:
            self._workers.remove(worker)

    def _finish(self, worker: _Worker, full: bool) -> bool:
        """Take a worker's answer and publish it; False if the worker died."""
        sources, signature = worker.jobs.popleft()
        # A reply is many small objects that all live on: with the cyclic GC on, their
        # unpickling set off collections over TensorBoard's whole heap (TensorFlow's
        # objects too), three times the unpickling itself.
        enabled = gc.isenabled()
        gc.disable()
        try:
            reply = loadworker.receive(worker.stdout)
        except (EOFError, OSError, ValueError, TypeError, AttributeError, ImportError) as err:
            code = worker.proc.poll()
            logger.error("opmode: the load worker for run %s died (exit %s, %s: %s); "
                         "the run is not loaded", sources.name, code, type(err).__name__, err)
            self._failed_run(sources.name, signature, RuntimeError(
                f"the process loading it died (exit status {code}; out of memory?)"))
            return False
        finally:
            if enabled:
                gc.enable()
        if reply[0] == "ok":
            _kind, view = reply
            self._publish(sources, signature, view, full)
        else:
            _kind, type_name, message, trace, expected = reply
            if expected:
                logger.warning("opmode: cannot load run %s: %s", sources.name, message)
            else:
                logger.error("opmode: bug while loading run %s:\n%s", sources.name, trace)
            with self._lock:
                self._errors[sources.name] = f"{type_name}: {message}"
                self._failed[sources.name] = signature
                self._wanted.pop(sources.name, None)
        return True

    def _publish(self, sources: RunSources, signature: Signature, view: tab.RunView,
                 full: bool) -> None:
        loaded = _loaded(view, signature, time.time(), sources, full)
        with self._lock:
            self._runs[sources.name] = loaded
            self._errors.pop(sources.name, None)
            self._failed.pop(sources.name, None)
            self._wanted.pop(sources.name, None)
            self._resident.pop(sources.name, None)
            if full:
                self._hold(sources.name)

    def _hold(self, name: str) -> None:
        """Mark ``name``'s full view used; drop the least recently used beyond
        ``RESIDENT_VIEWS`` to their light form (lock held)."""
        self._resident[name] = None
        self._resident.move_to_end(name)
        if cache_dir() is None:
            return  # nothing could rebuild a dropped view cheaply: keep them all
        while len(self._resident) > self.RESIDENT_VIEWS:
            old, _ = self._resident.popitem(last=False)
            loaded = self._runs.get(old)
            if loaded is not None and loaded.full and loaded.sources is not None:
                self._runs[old] = _loaded(loadworker.light_view(loaded.view), loaded.signature,
                                          loaded.loaded_at, loaded.sources, False)

    def _full_view(self, name: str, loaded: _Loaded) -> tab.RunView:
        """The full view of a published run, rebuilt from the cache if only its light
        form is held (a route asked for a run beyond the resident ones)."""
        if loaded.full:
            with self._lock:
                if name in self._resident:
                    self._resident.move_to_end(name)
            return loaded.view
        with self._lock:
            lock = self._rebuild_locks.setdefault(name, threading.Lock())
        with lock:  # two requests for the same run build it once
            with self._lock:
                current = self._runs.get(name)
            if current is not None and current.full:
                return self._full_view(name, current)
            assert loaded.sources is not None
            began = time.monotonic()
            try:
                view = tab.prepare(build_run(loaded.sources, self._logdir), self._logdir)
            except Exception as err:  # noqa: BLE001 - answered as 404 and logged
                logger.exception("opmode: cannot rebuild run %s from the cache", name)
                raise UnloadableRun(f"run {name!r} could not be reloaded: {err}") from err
            logger.info("opmode: rebuilt run %s in %.2f s", name, time.monotonic() - began)
            with self._lock:
                if self._runs.get(name) is loaded:
                    self._runs[name] = _loaded(view, loaded.signature, loaded.loaded_at,
                                               loaded.sources, True)
                    self._hold(name)
            return view

    def _load(self, sources: RunSources, signature: Signature) -> None:
        try:
            model = build_run(sources, self._logdir)
            view = tab.prepare(model, self._logdir)
        except (OSError, ValueError, DecodeError) as err:
            logger.warning("opmode: cannot load run %s: %s", sources.name, err)
            self._failed_run(sources.name, signature, err)
            return
        except Exception as err:  # noqa: BLE001 - one run's bug must not stop the loader
            # Not silent: logged with its traceback and shown on the run in the tab.
            logger.exception("opmode: bug while loading run %s", sources.name)
            self._failed_run(sources.name, signature, err)
            return
        self._publish(sources, signature, view, True)
        store_view(self._logdir, sources.name, signature, loadworker.light_view(view))

    def _failed_run(self, name: str, signature: Signature, err: BaseException) -> None:
        with self._lock:
            self._errors[name] = f"{type(err).__name__}: {err}"
            self._failed[name] = signature
            self._wanted.pop(name, None)

    def _update_progress(self, signatures: dict[str, Signature]) -> None:
        """Recount progress (lock held)."""
        p = self._progress
        p.runs_total = len(signatures)
        p.runs_done = p.files_total = p.files_done = p.bytes_total = p.bytes_done = 0
        p.pending = []
        sizes = self._sizes
        for name, sig in signatures.items():
            # Each signature's size summed once, not at every run published (it was
            # O(runs) per run: a fifth of TensorBoard's own work for 200 runs).
            known = sizes.get(name)
            if known is None or known[0] is not sig:
                known = sizes[name] = (sig, _signature_bytes(sig))
            size = known[1]
            p.files_total += len(sig)
            p.bytes_total += size
            loaded = self._runs.get(name)
            if (loaded is not None and loaded.signature == sig) or name in self._errors:
                p.runs_done += 1
                p.files_done += len(sig)
                p.bytes_done += size
            else:
                p.pending.append(name)

    # ------------------------------------------------------------ what routes read

    def view(self, name: Optional[str], param: str = "run") -> tab.RunView:
        """The full view of run ``name`` (the request parameter ``param``), or the
        error that says why there is none: ``BadParameter`` (no name), ``NoSuchRun``,
        ``StillLoading`` or ``UnloadableRun``. A run still queued is loaded next: someone
        is waiting for it (``_bring_forward``)."""
        if not name:
            raise BadParameter(f"missing parameter {param!r}")
        with self._lock:
            loaded = self._runs.get(name)
            known = name in self._discovered
            error = self._errors.get(name)
        if loaded is not None:
            return self._full_view(name, loaded)
        if error:
            raise UnloadableRun(f"run {name!r} could not be loaded: {error}")
        if known and self.want(name):
            raise StillLoading(f"run {name!r} is still loading; it is read next")
        if known:  # published or failed since the look above: ask again
            raise StillLoading(f"run {name!r} is still loading")
        raise NoSuchRun(f"no run named {name!r}")

    def want(self, name: str) -> bool:
        """Have run ``name`` read next, ahead of the runs queued before it (someone waits
        for it): True if it is known and neither loaded nor failed, else False."""
        with self._lock:
            if name not in self._discovered or name in self._runs or name in self._errors:
                return False
            self._wanted.pop(name, None)  # the last asked for is read first
            self._wanted[name] = None
            return True

    def runs(self) -> dict[str, Any]:
        """All runs, loaded or not: ``{"runs": [{run, status, tensorflow_version, ...}],
        "progress": ...}``, read under one lock so that both agree."""
        with self._lock:
            names = sorted(set(self._discovered) | set(self._runs))
            # A set: while 200 runs load, most are pending, and the tab (and the bench)
            # ask for this list several times a second.
            pending = set(self._progress.pending)
            runs = []
            for name in names:
                loaded = self._runs.get(name)
                entry: dict[str, Any] = {"run": name}
                if loaded is not None:
                    stale = (name in pending)
                    entry.update(status="ready", reloading=stale)
                    entry.update(loaded.listing or _listing(loaded))
                elif name in self._errors:
                    entry.update(status="error", error=self._errors[name])
                else:
                    entry.update(status="loading")
                runs.append(entry)
            progress = self._progress_locked()
        return {"runs": runs, "progress": progress}

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
