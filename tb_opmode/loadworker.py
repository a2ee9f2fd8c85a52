"""A process that builds runs for the plugin's run store, so runs load on every core.

In (stdin): length-prefixed pickles, one per job: ``("run", RunSources, signature,
logdir, full)`` to build a run, or ``("tasks", paths)`` to read the cluster tasks of
``.graphs`` files (discovery's scan of a logdir of runs, ``discover.Scan``).
Out (stdout): one length-prefixed pickle per job, in order: ``("ok", view)``
(the light view is also kept in the cache, ``cache.store_view``) where ``view``
is the ``tab.RunView`` (``full``) or its light form
(``light_view``: what the run list shows, without the dump, profile and
timeline data), or ``("tasks", [frozenset of tasks per path])`` (kept in the cache,
``cache.cached_dump_tasks``), or ``("error", type name, message, traceback text, expected)``.
EOF on stdin ends the process, so a worker never outlives its TensorBoard.

Why a process of its own, started with ``python -m`` rather than by
``multiprocessing``: reading a run is CPU-bound Python (threads would share one
core through the GIL), TensorBoard's process has threads (forking it could copy
a held lock), and ``multiprocessing``'s spawn would import TensorBoard's main
module, and with it TensorFlow, in every worker. Why a module outside ``plugin/``:
running a module inside it runs ``plugin/__init__`` first, which imports the routes and
with them TensorBoard and werkzeug, slowing each worker's start on the cores the runs
load on; a worker needs neither.
"""
from __future__ import annotations

import dataclasses
import gc
import logging
import os
import pickle
import struct
import sys
import traceback
from typing import IO, Any, Optional

from google.protobuf.message import DecodeError

from .analyze.assemble import build_run
from .present import tab
from .read.cache import cached_dump_tasks, store_view
from .read.xplane import Profile

__all__ = ["main", "send", "receive", "light_view", "expected_errors"]

_HEADER = struct.Struct("<Q")


def send(stream: IO[bytes], value: Any) -> None:
    """Write one message (a pickle with its length in front) and flush it."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def _read_exactly(stream: IO[bytes], n: int) -> Optional[bytes]:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(stream: IO[bytes]) -> Any:
    """Read one message; raises EOFError when the other side has gone."""
    head = _read_exactly(stream, _HEADER.size)
    if head is None:
        raise EOFError("the other end closed the pipe")
    body = _read_exactly(stream, _HEADER.unpack(head)[0])
    if body is None:
        raise EOFError("the pipe closed in the middle of a message")
    return pickle.loads(body)


def light_view(view: Any) -> Any:
    """The part of a ``RunView`` that the run list reads (its JSON document, row
    names, oneDNN facts, whether it has a profile), for a run whose full view is
    not held in memory (``plugin.residency``: a full view is several times its dump's
    size, and a logdir of many runs would not fit). Profiles keep their path, host and
    time source but no events; the timeline is left out. Only the run list may be given
    one (``RunStore.view`` gives routes the full view)."""
    model = view.model
    profiles = [Profile(path=p.path, host=p.host, start_ns=p.start_ns, end_ns=p.end_ns,
                        time_source=p.time_source) for p in model.profiles]
    light = dataclasses.replace(model, dumps=[], profiles=profiles, logs=[], graph_ops=[],
                                eager_ops=[])
    return dataclasses.replace(view, model=light, timeline=None)


def _build_view(sources: Any, logdir: str, full: bool = True) -> Any:
    """The run's view; without ``full`` only its light form is asked for, so the
    timeline (a sizeable part of a small run's build) is not made."""
    # A build makes many objects that live until it ends and few cycles: the cyclic GC
    # would scan them over and over. Off for the build, on again after it, which collects
    # any cycle it left.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return tab.build_view(build_run(sources, logdir), logdir, timeline=full)
    finally:
        if enabled:
            gc.enable()


def expected_errors() -> tuple[type[BaseException], ...]:
    """What a bad run raises (as opposed to a bug): logged without a traceback."""
    return (OSError, ValueError, DecodeError)


def main() -> int:
    # The protocol owns the real stdout; anything printed goes to stderr instead.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    logging.basicConfig(level=logging.WARNING, format="tb_opmode worker %(process)d: %(message)s")
    expected = expected_errors()
    # What the imports made lives as long as the process: out of the GC's sight.
    gc.freeze()
    while True:
        try:
            job = receive(inp)
        except EOFError:
            return 0
        # The cyclic GC stays off until the reply is sent and dropped: turned on after the
        # build, its first collection would scan every object the run made, all still
        # alive; once they are freed it has little to see.
        gc.disable()
        try:
            send(out, _reply_to(job, expected))
        finally:
            gc.enable()


def _reply_to(job: tuple[Any, ...], expected: tuple[type[BaseException], ...]) -> tuple[Any, ...]:
    """The reply to one job: a run's view (kept in the cache too) or the tasks of
    ``.graphs`` files, or why there is none."""
    try:
        if job[0] == "tasks":
            return ("tasks", [cached_dump_tasks({"graphs": path}) for path in job[1]])
        _kind, sources, signature, logdir, full = job
        view = _build_view(sources, logdir, full)
        light = light_view(view)
        store_view(logdir, sources.name, signature, light)
        return ("ok", view if full else light)
    except Exception as err:  # noqa: BLE001 - reported to the parent, which logs it
        return ("error", type(err).__name__, str(err), traceback.format_exc(),
                isinstance(err, expected))


if __name__ == "__main__":
    sys.exit(main())
