"""The TensorBoard plugin "opmode": routes over runs loaded in a background thread.

In: a ``TBContext`` whose ``logdir`` holds tfdbg2 dumps, profiles and logs
(found by ``runs.discover``). Out: small JSON answers under
``/data/plugin/opmode/`` (runs, progress, overview, a page of the op table,
one op's detail, a timeline window, a comparison of two runs, exports) and the
tab's static files (``index.js`` and friends, from a fixed list).

Loading never happens in a request: a daemon thread scans the logdir, builds
each run (``join.build_run`` then ``views.prepare``) and publishes it under a
lock as one finished, never-changed object, so a request sees either the old
model or the new one, never half of one. Every ``RESCAN_SECONDS`` it scans
again and rebuilds a run whose files changed (size or mtime) or appeared,
keeping the old model served until the new one is ready.

Many runs: when a scan has more than one run to load, they are built in
worker processes (``loadworker``, one per core: the reading is CPU-bound
Python), smallest first, each published as soon as it is ready, so a huge or
slow run holds up only its own worker. A lone run is built in the loader
thread (no process to start). Memory: at most ``RESIDENT_VIEWS`` runs' full
views are held (a small dump's view is ~27 MB; 200 would be 5 GB); the
others keep only what the run list shows, and a route asking for one rebuilds
its view from the on-disk cache (tens of milliseconds), evicting the least
recently used. Without the cache every view is held. Routes turn bad
parameters into 400 (``InvalidArgumentError``) and unknown runs or ops into
404 (``NotFoundError``).
"""
from __future__ import annotations

import json
import logging
import os
import re
import selectors
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional

from google.protobuf.message import DecodeError
from tensorboard import errors
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from . import loadworker, timeline, views
from .cache import cache_dir, load_view, store_view
from .join import build_run
from .runs import RunSources, discover

__all__ = ["OpModePlugin", "PLUGIN_NAME", "STATIC_FILES", "MAX_RESPONSE_BYTES", "file_signature"]

PLUGIN_NAME = "opmode"
_STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")
# The only files the static routes serve; nothing from the request becomes a path.
STATIC_FILES: dict[str, str] = {
    "index.js": "text/javascript",
    "data.js": "text/javascript",
    "views.js": "text/javascript",
    "dom.js": "text/javascript",
    "overview.js": "text/javascript",
    "table.js": "text/javascript",
    "detail.js": "text/javascript",
    "timelineview.js": "text/javascript",
    "compare.js": "text/javascript",
    "timeline.js": "text/javascript",
    "colors.js": "text/javascript",
    "style.css": "text/css",
}
MAX_RESPONSE_BYTES = 1 << 20
_MAX_TEXT_PARAM = 200
# Run names are paths relative to the logdir, as display text: a path can be
# PATH_MAX (4096) bytes and ``display`` writes an escaped byte as 4 characters.
_MAX_RUN_PARAM = 4 * 4096
_RUN_PARAMS = ("run", "a", "b")
_JSON = "application/json"

logger = logging.getLogger(__name__)

Handler = Callable[[wrappers.Request], wrappers.Response]


def file_signature(sources: RunSources) -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime ns) of every file of a run: changes when a file grows or appears."""
    paths = [p for files in sources.dump_sets.values() for p in files.values()]
    paths += sources.profiles + sources.logs
    out = []
    for path in sorted(paths):
        try:
            st = os.stat(path)
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

    view: views.RunView
    signature: Signature
    loaded_at: float
    seconds: float
    sources: Optional[RunSources] = None
    full: bool = True


def _signature_bytes(signature: Signature) -> int:
    return sum(max(0, size) for _p, size, _m in signature)


class _Worker:
    """One ``loadworker`` process, fed one job at a time over its pipes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tb_opmode.loadworker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=None, close_fds=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
                + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])})
        self.job: Optional[tuple[RunSources, Signature]] = None
        self.began = 0.0

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def send(self, sources: RunSources, signature: Signature, logdir: str, full: bool) -> None:
        assert self.proc.stdin is not None
        loadworker.send(self.proc.stdin, (sources, signature, logdir, full))
        self.job = (sources, signature)
        self.began = time.monotonic()

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


class OpModePlugin(base_plugin.TBPlugin):
    """Which ops ran eagerly or in graphs, and which oneDNN or stock kernel ran them."""

    plugin_name = PLUGIN_NAME
    RESCAN_SECONDS = 30.0
    # Full views held at once when others can be rebuilt from the cache.
    RESIDENT_VIEWS = 8
    # Worker processes for a scan with several runs to load: one per core.
    WORKERS: Optional[int] = None

    def __init__(self, context: base_plugin.TBContext, rescan_seconds: Optional[float] = None,
                 start: bool = True) -> None:
        self._logdir = os.path.abspath(context.logdir) if context.logdir else ""
        self._rescan = self.RESCAN_SECONDS if rescan_seconds is None else rescan_seconds
        self._lock = threading.Lock()
        self._runs: dict[str, _Loaded] = {}
        # Names of the runs whose full view is held, least recently used first.
        self._resident: OrderedDict[str, None] = OrderedDict()
        self._rebuild_locks: dict[str, threading.Lock] = {}
        self._workers: list[_Worker] = []
        self._discovered: dict[str, RunSources] = {}
        self._errors: dict[str, str] = {}
        self._failed: dict[str, tuple[tuple[str, int, int], ...]] = {}
        self._progress = _Progress()
        self._active = False
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if start and self._logdir:
            self.start()

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
            found = discover(self._logdir)
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
                for sources, signature in todo:
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

    def _worker_count(self) -> int:
        if self.WORKERS is not None:
            return self.WORKERS
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
        idle: list[_Worker] = []
        try:
            while (queue or selector.get_map()) and not self._stop.is_set():
                while queue and len(selector.get_map()) < self._worker_count():
                    worker = idle.pop() if idle else self._start_worker()
                    if worker is None:
                        break
                    sources, signature = queue.pop()
                    try:
                        worker.send(sources, signature, self._logdir, full)
                    except OSError as err:
                        logger.warning("opmode: load worker %d is gone (%s); starting another",
                                       worker.proc.pid, err)
                        self._retire(worker)
                        queue.append((sources, signature))
                        continue
                    selector.register(worker.stdout, selectors.EVENT_READ, worker)
                    self._show_loading(selector)
                if not selector.get_map():
                    break  # no worker could start: the rest load below, in this thread
                for key, _events in selector.select(timeout=0.5):
                    worker = key.data
                    selector.unregister(worker.stdout)
                    if self._finish(worker, full):
                        idle.append(worker)
                    else:
                        self._retire(worker)
                    with self._lock:
                        self._update_progress(signatures)
                    self._show_loading(selector)
        finally:
            for key in list(selector.get_map().values()):
                self._retire(key.data)  # stopping: the busy ones are not waited for
            selector.close()
            for worker in idle:
                self._retire(worker)
        for sources, signature in reversed(queue):
            if self._stop.is_set():
                return
            self._load(sources, signature)
            with self._lock:
                self._update_progress(signatures)

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
                self._publish(sources, signature, light, 0.0, False)
        return left

    def _show_loading(self, selector: selectors.BaseSelector) -> None:
        names = [key.data.job[0].name for key in selector.get_map().values() if key.data.job]
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
        assert worker.job is not None
        sources, signature = worker.job
        worker.job = None
        try:
            reply = loadworker.receive(worker.stdout)
        except (EOFError, OSError, ValueError, TypeError, AttributeError, ImportError) as err:
            code = worker.proc.poll()
            logger.error("opmode: the load worker for run %s died (exit %s, %s: %s); "
                         "the run is not loaded", sources.name, code, type(err).__name__, err)
            self._failed_run(sources.name, signature, RuntimeError(
                f"the process loading it died (exit status {code}; out of memory?)"))
            return False
        if reply[0] == "ok":
            _kind, view, seconds = reply
            self._publish(sources, signature, view, seconds, full)
        else:
            _kind, type_name, message, trace, expected = reply
            if expected:
                logger.warning("opmode: cannot load run %s: %s", sources.name, message)
            else:
                logger.error("opmode: bug while loading run %s:\n%s", sources.name, trace)
            with self._lock:
                self._errors[sources.name] = f"{type_name}: {message}"
                self._failed[sources.name] = signature
        return True

    def _publish(self, sources: RunSources, signature: Signature, view: views.RunView,
                 seconds: float, full: bool) -> None:
        loaded = _Loaded(view, signature, time.time(), seconds, sources, full)
        with self._lock:
            self._runs[sources.name] = loaded
            self._errors.pop(sources.name, None)
            self._failed.pop(sources.name, None)
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
                self._runs[old] = _Loaded(loadworker.light_view(loaded.view), loaded.signature,
                                          loaded.loaded_at, loaded.seconds, loaded.sources, False)

    def _full_view(self, name: str, loaded: _Loaded) -> views.RunView:
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
                view = views.prepare(build_run(loaded.sources, self._logdir), self._logdir)
            except Exception as err:  # noqa: BLE001 - answered as 404 and logged
                logger.exception("opmode: cannot rebuild run %s from the cache", name)
                raise errors.NotFoundError(f"run {name!r} could not be reloaded: {err}") from err
            logger.info("opmode: rebuilt run %s in %.2f s", name, time.monotonic() - began)
            with self._lock:
                if self._runs.get(name) is loaded:
                    self._runs[name] = _Loaded(view, loaded.signature, loaded.loaded_at,
                                               loaded.seconds, loaded.sources, True)
                    self._hold(name)
            return view

    def _load(self, sources: RunSources, signature: Signature) -> None:
        began = time.monotonic()
        try:
            model = build_run(sources, self._logdir)
            view = views.prepare(model, self._logdir)
        except (OSError, ValueError, DecodeError) as err:
            logger.warning("opmode: cannot load run %s: %s", sources.name, err)
            self._failed_run(sources.name, signature, err)
            return
        except Exception as err:  # noqa: BLE001 - one run's bug must not stop the loader
            # Not silent: logged with its traceback and shown on the run in the tab.
            logger.exception("opmode: bug while loading run %s", sources.name)
            self._failed_run(sources.name, signature, err)
            return
        self._publish(sources, signature, view, time.monotonic() - began, True)
        store_view(self._logdir, sources.name, signature, loadworker.light_view(view))

    def _failed_run(self, name: str, signature: Signature, err: BaseException) -> None:
        with self._lock:
            self._errors[name] = f"{type(err).__name__}: {err}"
            self._failed[name] = signature

    def _update_progress(self, signatures: dict[str, Signature]) -> None:
        """Recount progress (lock held)."""
        p = self._progress
        p.runs_total = len(signatures)
        p.runs_done = p.files_total = p.files_done = p.bytes_total = p.bytes_done = 0
        p.pending = []
        for name, sig in signatures.items():
            size = sum(max(0, s) for _p, s, _m in sig)
            p.files_total += len(sig)
            p.bytes_total += size
            loaded = self._runs.get(name)
            if (loaded is not None and loaded.signature == sig) or name in self._errors:
                p.runs_done += 1
                p.files_done += len(sig)
                p.bytes_done += size
            else:
                p.pending.append(name)

    # ------------------------------------------------------------ TBPlugin

    def get_plugin_apps(self) -> dict[str, Handler]:
        apps: dict[str, Handler] = {
            "/runs": self._serve_runs,
            "/progress": self._serve_progress,
            "/overview": self._serve_overview,
            "/optypes": self._serve_optypes,
            "/op": self._serve_op,
            "/timeline": self._serve_timeline,
            "/compare": self._serve_compare,
            "/export": self._serve_export,
            "/static/*": self._serve_static,
        }
        for name in STATIC_FILES:
            apps["/" + name] = self._serve_static
        return apps

    def is_active(self) -> bool:
        return self._active

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Op Mode",
                                            disable_reload=True)

    # ------------------------------------------------------------ helpers

    def _respond(self, request: wrappers.Request, body: Any) -> wrappers.Response:
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=True)
        if len(text) > MAX_RESPONSE_BYTES:
            raise errors.InvalidArgumentError(
                "the answer would exceed 1 MB; ask for a smaller page or window")
        return http_util.Respond(request, text, _JSON)

    def _view(self, name: Optional[str], param: str = "run") -> views.RunView:
        if not name:
            raise errors.InvalidArgumentError(f"missing parameter {param!r}")
        with self._lock:
            loaded = self._runs.get(name)
            known = name in self._discovered
            error = self._errors.get(name)
        if loaded is not None:
            return self._full_view(name, loaded)
        if error:
            raise errors.NotFoundError(f"run {name!r} could not be loaded: {error}")
        if known:
            raise errors.NotFoundError(f"run {name!r} is still loading")
        raise errors.NotFoundError(f"no run named {name!r}")

    @staticmethod
    def _text(request: wrappers.Request, name: str, default: str = "") -> str:
        value = request.args.get(name, default)
        cap = _MAX_RUN_PARAM if name in _RUN_PARAMS else _MAX_TEXT_PARAM
        if len(value) > cap:
            raise errors.InvalidArgumentError(f"{name} is longer than {cap} characters")
        return value

    @staticmethod
    def _int(request: wrappers.Request, name: str, default: Optional[int], lo: int,
             hi: int) -> Optional[int]:
        raw = request.args.get(name)
        if raw is None or raw == "":
            return default
        if not re.fullmatch(r"-?\d{1,19}", raw.strip()):
            raise errors.InvalidArgumentError(f"{name} must be an integer; got {raw[:40]!r}")
        value = int(raw)
        if not lo <= value <= hi:
            raise errors.InvalidArgumentError(f"{name} must be between {lo} and {hi}; got {value}")
        return value

    @classmethod
    def _window(cls, request: wrappers.Request) -> tuple[Optional[int], Optional[int]]:
        """The ``start`` and ``end`` of a timeline window (ns from the run's first event)."""
        limit = 1 << 62
        return (cls._int(request, "start", None, -limit, limit),
                cls._int(request, "end", None, -limit, limit))

    @staticmethod
    def _bool(request: wrappers.Request, name: str, default: bool) -> bool:
        raw = request.args.get(name)
        if raw is None or raw == "":
            return default
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise errors.InvalidArgumentError(f"{name} must be 0 or 1; got {raw[:40]!r}")

    def _progress_json(self) -> dict[str, Any]:
        p = self._progress
        return {"scans": p.scans, "runs_total": p.runs_total, "runs_done": p.runs_done,
                "files_total": p.files_total, "files_done": p.files_done,
                "bytes_total": p.bytes_total, "bytes_done": p.bytes_done,
                "loading": p.loading, "scanning": p.scanning, "pending": list(p.pending),
                "error": p.error, "logdir_set": bool(self._logdir)}

    # ------------------------------------------------------------ routes

    @wrappers.Request.application
    def _serve_runs(self, request: wrappers.Request) -> wrappers.Response:
        """All runs, loaded or not: ``[{run, status, tensorflow_version, ...}]`` plus progress."""
        with self._lock:
            names = sorted(set(self._discovered) | set(self._runs))
            runs = []
            for name in names:
                loaded = self._runs.get(name)
                entry: dict[str, Any] = {"run": name}
                if loaded is not None:
                    doc = loaded.view.doc
                    stale = (name in self._progress.pending)
                    entry.update(status="ready", reloading=stale,
                                 tensorflow_version=doc["tensorflow_version"],
                                 onednn_enabled=doc["onednn_enabled"],
                                 onednn_state=views.onednn_state(loaded.view)[0],
                                 counts_from=doc["counts_from"],
                                 op_types=len(loaded.view.rows),
                                 executions=sum(r["total"] for r in loaded.view.rows.values()),
                                 has_profile=bool(loaded.view.model.profiles),
                                 warnings=len(doc["warnings"]),
                                 loaded_at=loaded.loaded_at)
                elif name in self._errors:
                    entry.update(status="error", error=self._errors[name])
                else:
                    entry.update(status="loading")
                runs.append(entry)
            progress = self._progress_json()
        return self._respond(request, {"runs": runs, "progress": progress})

    @wrappers.Request.application
    def _serve_progress(self, request: wrappers.Request) -> wrappers.Response:
        """Runs, files and bytes loaded of those found."""
        with self._lock:
            body = self._progress_json()
        return self._respond(request, body)

    @wrappers.Request.application
    def _serve_overview(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=``: run facts, mode shares, oneDNN coverage, the mode x class matrix."""
        view = self._view(self._text(request, "run"))
        return self._respond(request, views.overview(view))

    @wrappers.Request.application
    def _serve_optypes(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&sort=&order=asc|desc&filter=a,b&q=&page=&page_size=``: a page of the op table."""
        view = self._view(self._text(request, "run"))
        order = self._text(request, "order", "desc")
        if order not in ("asc", "desc"):
            raise errors.InvalidArgumentError(f"order must be asc or desc; got {order[:40]!r}")
        raw_filters = self._text(request, "filter")
        filters = tuple(f for f in raw_filters.split(",") if f) if raw_filters else ()
        page = self._int(request, "page", 0, 0, 1_000_000)
        page_size = self._int(request, "page_size", 50, 1, views.MAX_PAGE_SIZE)
        try:
            body = views.op_page(view, self._text(request, "sort", "total"), order == "desc",
                                 filters, self._text(request, "q"), page or 0, page_size or 50)
        except ValueError as err:
            raise errors.InvalidArgumentError(str(err)) from err
        return self._respond(request, body)

    @wrappers.Request.application
    def _serve_op(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&op=&sites=``: kernels, evidence, call sites with source lines, graphs."""
        view = self._view(self._text(request, "run"))
        op = self._text(request, "op")
        if not op:
            raise errors.InvalidArgumentError("missing parameter 'op'")
        sites = self._int(request, "sites", 10, 1, 50)
        try:
            body = views.op_detail(view, op, sites or 10)
        except KeyError as err:
            raise errors.NotFoundError(f"run {view.doc['run']!r} has no op type {op!r}") from err
        except ValueError as err:
            raise errors.InvalidArgumentError(str(err)) from err
        return self._respond(request, body)

    @wrappers.Request.application
    def _serve_timeline(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&start=&end=&max_events=&debug=``: events or bins of a window (ns from start)."""
        view = self._view(self._text(request, "run"))
        start, end = self._window(request)
        max_events = self._int(request, "max_events", 5000, 1, timeline.MAX_EVENTS)
        debug = self._bool(request, "debug", False)
        try:
            body = timeline.timeline_window(view.timeline, start, end, max_events or 5000, debug)
        except ValueError as err:
            raise errors.InvalidArgumentError(str(err)) from err
        return self._respond(request, body)

    @wrappers.Request.application
    def _serve_compare(self, request: wrappers.Request) -> wrappers.Response:
        """``?a=&b=&changed_only=&page=&page_size=``: op types whose modes or kernels differ."""
        a = self._view(self._text(request, "a"), "a")
        b = self._view(self._text(request, "b"), "b")
        changed_only = self._bool(request, "changed_only", True)
        page = self._int(request, "page", 0, 0, 1_000_000)
        page_size = self._int(request, "page_size", 100, 1, views.MAX_PAGE_SIZE)
        try:
            body = views.compare(a, b, changed_only, page or 0, page_size or 100)
        except ValueError as err:
            raise errors.InvalidArgumentError(str(err)) from err
        return self._respond(request, body)

    @wrappers.Request.application
    def _serve_export(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&format=csv|json|trace`` (trace also takes start, end, max_events, debug)."""
        view = self._view(self._text(request, "run"))
        fmt = self._text(request, "format", "csv")
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", view.doc["run"]).strip("._") or "logdir"
        if fmt == "csv":
            content, ctype, ext = views.export_csv(view), "text/csv", "csv"
        elif fmt == "json":
            content, ctype, ext = views.dumps_json(views.export_json(view)), _JSON, "json"
        elif fmt == "trace":
            start, end = self._window(request)
            max_events = self._int(request, "max_events", timeline.MAX_TRACE_EVENTS, 1,
                                   timeline.MAX_TRACE_EVENTS)
            try:
                trace = timeline.export_trace(view.timeline, view.doc["run"],
                                              view.doc["tensorflow_version"], start, end,
                                              max_events or 1, self._bool(request, "debug", False))
            except ValueError as err:
                raise errors.InvalidArgumentError(str(err)) from err
            content, ctype, ext = views.dumps_json(trace), _JSON, "trace.json"
        else:
            raise errors.InvalidArgumentError(f"format must be csv, json or trace; got {fmt[:40]!r}")
        if len(content) > MAX_RESPONSE_BYTES:
            raise errors.InvalidArgumentError(
                "the export would exceed 1 MB; export a smaller timeline window")
        headers = [("Content-Disposition", f'attachment; filename="opmode-{safe}.{ext}"')]
        return http_util.Respond(request, content, ctype, headers=headers)

    @wrappers.Request.application
    def _serve_static(self, request: wrappers.Request) -> wrappers.Response:
        """A file of the tab, by its name in ``STATIC_FILES``; anything else is 404."""
        prefix = f"/data/plugin/{PLUGIN_NAME}/"
        path = request.path
        name = path[len(prefix):] if path.startswith(prefix) else ""
        if name.startswith("static/"):
            name = name[len("static/"):]
        ctype = STATIC_FILES.get(name)
        if ctype is None:
            raise errors.NotFoundError(f"no such file: {name[:80]!r}")
        try:
            with open(os.path.join(_STATIC_DIR, name), "rb") as f:
                body = f.read()
        except OSError as err:
            raise errors.NotFoundError(f"no such file: {name!r}") from err
        return http_util.Respond(request, body, ctype)
