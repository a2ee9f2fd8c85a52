"""The run store's worker processes: runs and discovery's scans shared among them.

In: jobs for ``loadworker`` processes, one per core: runs to build (``Job``, sent with
``WorkerPool.build``) or chunks of ``.graphs`` files whose cluster tasks discovery
needs (``WorkerPool.read_tasks``). Out: each run's view handed to the store as it
arrives (``BuildHooks``), the tasks of each chunk, and the jobs no worker could take
(the store builds those itself).

Why processes: reading a run is CPU-bound Python, so threads would share one core;
``loadworker``'s docstring says why they are started with ``python -m``. Why one job
ahead: a worker is sent a second small run before it answers the first, so it never
waits for the store's thread (which shares TensorBoard's process with its threads)
between two runs; only small ones, so that no run waits behind a big one while
another worker could take it. A worker that dies fails the run it was building (that
run may be what killed it); its other runs go back to the queue.
"""
from __future__ import annotations

import gc
import logging
import os
import selectors
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from typing import IO, Any, Callable, Optional

from .. import loadworker
from ..present import tab
from ..read.cache import CACHE_ENV, cache_dir
from ..read.discover import RunSources

__all__ = ["Signature", "signature_bytes", "Job", "Worker", "BuildHooks", "WorkerPool",
           "PIPELINE_BYTES"]

logger = logging.getLogger(__name__)

# (path, size, mtime ns) of every file of a run (``run_store.file_signature``): a run is
# built again when it changes.
Signature = tuple[tuple[str, int, int], ...]

# A run of fewer bytes than this may be sent to a worker still busy with another such run.
PIPELINE_BYTES = 64 << 20

# What reading a reply raises when the worker is gone or sent something unreadable.
_DEAD_WORKER_ERRORS = (EOFError, OSError, ValueError, TypeError, AttributeError, ImportError)
# How long one wait for replies lasts before the store's stop flag is looked at again.
_SELECT_SECONDS = 0.5


def signature_bytes(signature: Signature) -> int:
    """The bytes of a run's files (a file that could not be stat'ed counts none)."""
    return sum(max(0, size) for _p, size, _m in signature)


@dataclass(frozen=True)
class Job:
    """A run to build, with the signature of the files it is built from."""

    sources: RunSources
    signature: Signature

    @property
    def name(self) -> str:
        return self.sources.name

    @property
    def pipelinable(self) -> bool:
        """Small enough to be sent to a worker still building another such run."""
        return signature_bytes(self.signature) < PIPELINE_BYTES


def _worker_environment(here: str) -> dict[str, str]:
    """The environment of a worker: ours, with this package's directory first on its
    path and the cache directory resolved (it may be relative to our directory)."""
    where = cache_dir()
    extra = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, CACHE_ENV: where if where is not None else "off",
            "PYTHONPATH": os.pathsep.join([here, *extra])}


class Worker:
    """One ``loadworker`` process, fed over its pipes; answers come in the order sent."""

    def __init__(self) -> None:
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # Started in the directory this package is in: ``python -m`` puts the working
        # directory first on sys.path, so a worker started where another tb_opmode lies
        # (a checkout of another version) would import that one, not TensorBoard's.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tb_opmode.loadworker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=None, close_fds=True, cwd=here,
            env=_worker_environment(here))
        # The runs sent and not answered yet, oldest first.
        self.jobs: deque[Job] = deque()

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def send(self, job: Job, logdir: str, full: bool) -> None:
        """Ask for the view of ``job``'s run (its light form unless ``full``)."""
        assert self.proc.stdin is not None
        loadworker.send(self.proc.stdin, ("run", job.sources, job.signature, logdir, full))
        self.jobs.append(job)

    def send_tasks(self, paths: list[str]) -> None:
        """Ask for the cluster tasks of these ``.graphs`` files (discovery's scan)."""
        assert self.proc.stdin is not None
        loadworker.send(self.proc.stdin, ("tasks", paths))

    def can_take(self, queue: list[Job]) -> bool:
        """Whether the next queued job (the last of ``queue``) goes to this worker now:
        when it is idle, or holds one small run and the next is small too."""
        if not queue:
            return False
        if not self.jobs:
            return True
        return len(self.jobs) < 2 and self.jobs[0].pipelinable and queue[-1].pipelinable

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


def _receive(worker: Worker) -> Any:
    """A worker's next reply. A reply is many small objects that all live on: with the
    cyclic GC on, unpickling them sets off collections over TensorBoard's whole heap
    (TensorFlow's objects too), each scanning what is already there."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return loadworker.receive(worker.stdout)
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class BuildHooks:
    """What ``WorkerPool.build`` tells the run store, and asks it, as runs are built."""

    # A run's view arrived: publish it (full or light, as it was asked for).
    publish: Callable[[Job, tab.RunView, bool], None]
    # A run could not be built: the text shown on it ("TypeName: message").
    fail: Callable[[Job, str], None]
    # Reorder the queue (whose last job is sent next) before jobs are sent.
    bring_forward: Callable[[list[Job]], None]
    # The runs the workers are building now.
    show_loading: Callable[[list[str]], None]
    # A reply was taken: progress may have changed.
    progressed: Callable[[], None]


class WorkerPool:
    """The ``loadworker`` processes of one run store: every one started and not yet
    stopped (``workers``), and those started ahead of the jobs for them (``warm``:
    before discovery, or by its scan for the loads that follow), idle until taken."""

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self.workers: list[Worker] = []
        self.warm: list[Worker] = []

    def stopping(self) -> bool:
        """Whether the store is closing: no more jobs are sent."""
        return self._stop.is_set()

    def start_worker(self) -> Optional[Worker]:
        """A new worker, or None (logged) when none can be started."""
        try:
            worker = Worker()
        except (OSError, ValueError) as err:
            logger.warning("opmode: cannot start a load worker (%s); loading in this thread", err)
            return None
        self.workers.append(worker)
        return worker

    def warm_up(self, count: int) -> None:
        """Start ``count`` workers ahead of their jobs (fewer if one cannot start)."""
        for _ in range(count):
            worker = self.start_worker()
            if worker is None:
                return
            self.warm.append(worker)

    def take(self) -> Optional[Worker]:
        """A warm worker, else a new one, else None."""
        return self.warm.pop() if self.warm else self.start_worker()

    def retire(self, worker: Worker) -> None:
        worker.stop()
        if worker in self.workers:
            self.workers.remove(worker)

    def retire_warm(self) -> None:
        """Stop the workers no job took (a scan's workers stop once its loads are done)."""
        for worker in self.warm:
            self.retire(worker)
        self.warm = []

    def close(self) -> None:
        """Stop every worker."""
        for worker in list(self.workers):
            self.retire(worker)
        self.warm = []

    def read_tasks(self, chunks: list[list[str]], count: int) -> dict[int, list[frozenset[str]]]:
        """The cluster tasks of each chunk of ``.graphs`` files, by the chunk's index,
        read by up to ``count`` workers; a chunk missing from the answer was not read
        (its worker failed, none could start, or the store is stopping). The workers
        are left warm for the loads that follow."""
        return _TaskRound(self, chunks, count).run()

    def build(self, queue: list[Job], count: int, logdir: str, full: bool,
              hooks: BuildHooks) -> list[Job]:
        """Build the runs of ``queue`` (the last first) on up to ``count`` workers,
        handing each view to ``hooks.publish`` as it arrives; return the jobs left when
        no worker could be started or the store is stopping, the next one last."""
        return _BuildRound(self, queue, count, logdir, full, hooks).run()


class _Round:
    """The workers busy with one round of jobs, and the selector that hears them."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.selector = selectors.DefaultSelector()

    def listen(self, worker: Worker) -> None:
        self.selector.register(worker.stdout, selectors.EVENT_READ, worker)

    def unlisten(self, worker: Worker) -> None:
        self.selector.unregister(worker.stdout)

    def ready(self) -> list[Worker]:
        """The workers with a reply to read (waiting a moment for one)."""
        return [key.data for key, _events in self.selector.select(timeout=_SELECT_SECONDS)]


class _TaskRound(_Round):
    """``WorkerPool.read_tasks``: one chunk per worker at a time."""

    def __init__(self, pool: WorkerPool, chunks: list[list[str]], count: int) -> None:
        super().__init__(pool)
        self.chunks = chunks
        self.count = count
        self.got: dict[int, list[frozenset[str]]] = {}
        self.queue = list(reversed(range(len(chunks))))
        self.busy: dict[Worker, int] = {}

    def run(self) -> dict[int, list[frozenset[str]]]:
        try:
            while (self.queue or self.busy) and not self.pool.stopping():
                self._send()
                if not self.busy:
                    break  # no worker could start: the caller reads the rest
                for worker in self.ready():
                    self._take_reply(worker)
        finally:
            for worker in self.busy:
                self.pool.retire(worker)  # stopping: the busy ones are not waited for
            self.selector.close()
        return self.got

    def _send(self) -> None:
        while self.queue and len(self.busy) < self.count:
            worker = self.pool.take()
            if worker is None:
                return
            index = self.queue.pop()
            try:
                worker.send_tasks(self.chunks[index])
            except OSError as err:
                logger.warning("opmode: load worker %d is gone (%s); starting another",
                               worker.proc.pid, err)
                self.pool.retire(worker)
                self.queue.append(index)
                continue
            self.busy[worker] = index
            self.listen(worker)

    def _take_reply(self, worker: Worker) -> None:
        self.unlisten(worker)
        index = self.busy.pop(worker)
        tasks, alive = _tasks_reply(worker, len(self.chunks[index]))
        if tasks is not None:
            self.got[index] = tasks
        if alive:
            self.pool.warm.append(worker)
        else:
            self.pool.retire(worker)


def _tasks_reply(worker: Worker, expected: int) -> tuple[Optional[list[frozenset[str]]], bool]:
    """(the tasks a worker sent for a chunk of ``expected`` files, or None if it sent
    none, whether it is still usable)."""
    try:
        reply = loadworker.receive(worker.stdout)
    except _DEAD_WORKER_ERRORS as err:
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


class _BuildRound(_Round):
    """``WorkerPool.build``: workers taken as long as runs are queued, each fed its next
    run as it answers (``Worker.can_take``)."""

    def __init__(self, pool: WorkerPool, queue: list[Job], count: int, logdir: str,
                 full: bool, hooks: BuildHooks) -> None:
        super().__init__(pool)
        self.queue = queue
        self.count = count
        self.logdir = logdir
        self.full = full
        self.hooks = hooks
        self.busy: list[Worker] = []
        # The warm ones first; any left idle stop with the round.
        self.idle, pool.warm = pool.warm, []

    def run(self) -> list[Job]:
        try:
            while (self.queue or self.busy) and not self.pool.stopping():
                self.hooks.bring_forward(self.queue)
                self._fill()
                for worker in list(self.busy):
                    self._feed(worker)
                self._show_loading()
                if not self.busy:
                    break  # no worker could start: the caller builds the rest
                for worker in self.ready():
                    self._take_reply(worker)
                    self.hooks.progressed()
                self._show_loading()
        finally:
            for worker in self.busy:
                self.pool.retire(worker)  # stopping: the busy ones are not waited for
            self.selector.close()
            for worker in self.idle:
                self.pool.retire(worker)
        return self.queue

    def _fill(self) -> None:
        """Take workers (idle ones first) while runs wait and fewer than ``count`` work."""
        while self.queue and len(self.busy) < self.count:
            worker = self.idle.pop() if self.idle else self.pool.start_worker()
            if worker is None:
                return
            self.busy.append(worker)
            self.listen(worker)

    def _feed(self, worker: Worker) -> None:
        """Send ``worker`` the runs it can take; one with nothing to do goes idle."""
        while worker.can_take(self.queue):
            job = self.queue.pop()
            try:
                worker.send(job, self.logdir, self.full)
            except OSError as err:
                logger.warning("opmode: load worker %d is gone (%s); starting another",
                               worker.proc.pid, err)
                self.queue.append(job)
                if not worker.jobs:
                    self._drop(worker)
                # else its end is read with its replies: the run it had fails, the rest go back
                break
        if worker in self.busy and not worker.jobs:
            self._park(worker)

    def _take_reply(self, worker: Worker) -> None:
        if not self._publish_reply(worker):
            # Its other runs go to another worker (the first may be what killed it).
            self.queue.extend(reversed(worker.jobs))
            worker.jobs.clear()
            self._drop(worker)
        elif not worker.jobs:
            self._park(worker)

    def _publish_reply(self, worker: Worker) -> bool:
        """Take a worker's answer for its oldest run and hand it to the store; False if
        the worker died."""
        job = worker.jobs.popleft()
        try:
            reply = _receive(worker)
        except _DEAD_WORKER_ERRORS as err:
            code = worker.proc.poll()
            logger.error("opmode: the load worker for run %s died (exit %s, %s: %s); "
                         "the run is not loaded", job.name, code, type(err).__name__, err)
            self.hooks.fail(job, f"RuntimeError: the process loading it died (exit status "
                                 f"{code}; out of memory?)")
            return False
        if reply[0] == "ok":
            self.hooks.publish(job, reply[1], self.full)
            return True
        _kind, type_name, message, trace, expected = reply
        if expected:
            logger.warning("opmode: cannot load run %s: %s", job.name, message)
        else:
            logger.error("opmode: bug while loading run %s:\n%s", job.name, trace)
        self.hooks.fail(job, f"{type_name}: {message}")
        return True

    def _park(self, worker: Worker) -> None:
        self.busy.remove(worker)
        self.unlisten(worker)
        self.idle.append(worker)

    def _drop(self, worker: Worker) -> None:
        self.busy.remove(worker)
        self.unlisten(worker)
        self.pool.retire(worker)

    def _show_loading(self) -> None:
        self.hooks.show_loading([w.jobs[0].name for w in self.busy if w.jobs])
