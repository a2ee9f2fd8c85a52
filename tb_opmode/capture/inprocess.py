"""Inside the user's job: switch on the evidence a recording asks for, as TensorFlow loads.

In: a recording's settings (``Settings``): from the environment variable
``TB_OPMODE_RECORD``, which ``tb-opmode record`` sets and its ``sitecustomize`` reads
(``start_from_environment``), or from ``tb_opmode.record(...)`` in the job itself
(``Recording``). Out, in the run directory, what TensorFlow itself writes once asked:

- a Debugger V2 dump (levels ``calls`` and ``full``), enabled right after TF's import;
- a profile of a window of steps, a step being a call of an outermost ``tf.function``
  (Keras ``fit``'s train function and a custom loop's step alike); a job that has called
  no tf.function a second after TF's import (an eager loop) gets a profile of its next
  second of eager work instead (``EAGER_WINDOW_S``), ended by its first tf.function call;
- TF's own Python line for each new trace ("Creating new FuncGraph for Python function
  ... (key: ...)"), in ``TRACE_LOG``, formatted as TF's default handler formats it, and
  how long each of those traces took (the job's facts' ``trace_seconds``, by the line's
  number in ``TRACE_LOG``);
- at the level with no dump, the Python lines that dispatched the job's eager ops
  (``_EagerLines``), counted as they dispatch: the job's facts' ``eager_lines``;
- ``job.<pid>.json``: what only the job knows (TF version, the steps it ran, the window
  profiled, what could not be done).

The C++ side (which modules log, oneDNN's verbose lines) is set through the environment
before TensorFlow loads its library: ``environment()`` says what to set, per level.

This module imports nothing else of tb_opmode and only the standard library at its top,
and touches TensorFlow only once the job has imported it: it runs inside the user's job,
which it must neither slow down nor change. Only the first process of a job that imports
TensorFlow records; any other writes its facts and runs untouched.
"""
from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import re
import sys
import threading
import time
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

__all__ = ["ENV_VAR", "TRACE_LOG", "JOB_FACTS", "Level", "LEVELS", "Settings", "Recording",
           "environment", "parse_steps", "attach_when_imported", "start_from_environment",
           "DEFAULT_STEPS", "EAGER_WINDOW_S"]

# The variable that carries a recording's settings into the job (JSON).
ENV_VAR = "TB_OPMODE_RECORD"
TRACE_LOG = "tf_python.log"
# The job's facts, one file per process that imported TensorFlow ({pid} filled in).
JOB_FACTS = "job.{pid}.json"
_CLAIM = ".recorded-by"
# The first call of a step function traces it; the window starts after it, early enough
# that TF's profiler still records small ops.
DEFAULT_STEPS = (2, 4)
# A job with no steps (eager ops only, or none yet): the seconds after TF's import whose
# eager work is profiled, so that its eager lines can be ranked by time. A tf.function
# called first ends the window, and its steps have the profile.
EAGER_WINDOW_S = (1.0, 2.0)

# The modules whose log lines we read: ``execute`` (each eager op and each call of a
# tf.function, as dispatched), ``op_kernel`` (each kernel, once, as instantiated) and
# ``xla_ops`` (each launch of a function XLA compiled: its nodes' instantiations are XLA's
# compilation of them, no TF kernel that runs).
_VMODULE = {"execute": 1, "op_kernel": 1, "xla_ops": 1}
_TRACE_LINE = "Creating new FuncGraph for Python function"
# Where TF builds a trace's graph, right after printing that line.
_TRACING_MODULE = "tensorflow.python.eager.polymorphic_function.tracing_compilation"
_LEGACY_TRACING_MODULE = "tensorflow.python.eager.polymorphic_function.tracing_compiler"
_BUILD = "_create_concrete_function"


@dataclass(frozen=True)
class Level:
    """What one ``--evidence`` level asks of TensorFlow."""

    name: str
    dump_mode: Optional[str]          # tfdbg2 tensor_debug_mode, None for no dump
    vmodule: Mapping[str, int]        # TF_CPP_VMODULE entries
    variables: Mapping[str, str]      # other variables, set before TF loads
    says: str                         # one line for --help and the manifest


LEVELS: dict[str, Level] = {level.name: level for level in (
    Level("kernels", None, _VMODULE, {},
          "no dump: a profile of a few steps and the log of the modules we read"),
    Level("calls", "NO_TENSOR", _VMODULE, {},
          "adds a NO_TENSOR dump: exact counts and call sites, fusions kept"),
    Level("full", "FULL_HEALTH", {}, {"TF_CPP_MAX_VLOG_LEVEL": "2", "ONEDNN_VERBOSE": "1"},
          "FULL_HEALTH dump, VLOG 2, ONEDNN_VERBOSE=1 (the debug ops stop grappler's fusions)"),
)}


def _merged_vmodule(current: str, ours: Mapping[str, int]) -> str:
    """``TF_CPP_VMODULE`` with our modules at least at our level, the user's kept."""
    levels: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in current.split(","))):
        name, _, text = item.partition("=")
        levels[name] = int(text) if text.strip().isdigit() else 0
    for name, level in ours.items():
        levels[name] = max(levels.get(name, 0), level)
    return ",".join(f"{name}={level}" for name, level in levels.items())


def environment(level: Level, current: Mapping[str, str]) -> dict[str, str]:
    """The variables to set for ``level`` in an environment now ``current``: the modules
    we read added to any ``TF_CPP_VMODULE`` already set, the level's own variables, and
    ``TF_CPP_MIN_LOG_LEVEL=0`` where a higher one would hide TF's INFO lines (the log we
    read, the CPU and oneDNN banners)."""
    wanted = dict(level.variables)
    if level.vmodule:
        wanted["TF_CPP_VMODULE"] = _merged_vmodule(current.get("TF_CPP_VMODULE", ""), level.vmodule)
    if current.get("TF_CPP_MIN_LOG_LEVEL", "0").strip() not in ("", "0"):
        wanted["TF_CPP_MIN_LOG_LEVEL"] = "0"
    return {name: value for name, value in wanted.items() if current.get(name) != value}


def parse_steps(text: str) -> tuple[int, int]:
    """``A:B`` -> (A, B): the calls of an outermost tf.function to profile, counted from 1,
    both included. ``A`` alone is ``A:A``. ValueError says what is wrong."""
    first, sep, last = text.partition(":")
    try:
        a = int(first)
        b = int(last) if sep else a
    except ValueError:
        raise ValueError(f"expected A:B, two step numbers (e.g. 2:4); got {text!r}") from None
    if a < 1 or b < a:
        raise ValueError(f"expected 1 <= A <= B; got {text!r}")
    return a, b


@dataclass(frozen=True)
class Settings:
    """One recording: where, at which level, which steps to profile."""

    rundir: str
    evidence: str = "kernels"
    steps: tuple[int, int] = DEFAULT_STEPS
    # What is not the user's code (regexes of file paths) and the functions Python runs
    # inside the user's own (comprehensions): the analysis's, handed over so that the job
    # stops its walk where the analysis finds the user's line. Empty: no line counted.
    not_user_code: tuple[str, ...] = ()
    inner_scopes: tuple[str, ...] = ()

    def to_env(self) -> str:
        return json.dumps({"rundir": self.rundir, "evidence": self.evidence, "steps": list(self.steps),
                           "not_user_code": list(self.not_user_code),
                           "inner_scopes": list(self.inner_scopes)})

    @classmethod
    def from_env(cls, text: str) -> Settings:
        doc = json.loads(text)
        first, last = doc.get("steps") or DEFAULT_STEPS
        return cls(str(doc["rundir"]), str(doc.get("evidence", "kernels")), (int(first), int(last)),
                   tuple(map(str, doc.get("not_user_code") or ())),
                   tuple(map(str, doc.get("inner_scopes") or ())))

    @property
    def level(self) -> Level:
        return LEVELS[self.evidence]


def _write_json(path: str, doc: Mapping[str, Any]) -> None:
    """Whole or not at all: a reader never sees half a file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


def _claim(rundir: str) -> bool:
    """True for the first process of the job to ask (the one that records)."""
    try:
        fd = os.open(os.path.join(rundir, _CLAIM), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()}\n")
    return True


class _StepWindow:
    """Counts calls of outermost tf.functions (a call made while another runs or traces
    is nested, not a step) and starts the profiler before call ``first``, stops it after
    call ``last``."""

    def __init__(self, first: int, last: int, start: Callable[[int], None],
                 stop: Callable[[int], None], on_first_call: Callable[[], None] = lambda: None) -> None:
        self.first, self.last = first, last
        self.calls = 0
        self._start, self._stop = start, stop
        self._on_first_call = on_first_call
        self._lock = threading.Lock()
        self._inside = threading.local()

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        window = self

        @functools.wraps(call)
        def __call__(fn: Any, *args: Any, **kwds: Any) -> Any:
            if getattr(window._inside, "step", 0):
                return call(fn, *args, **kwds)
            step = window._begin()
            window._inside.step = step
            try:
                return call(fn, *args, **kwds)
            finally:
                window._inside.step = 0
                if step == window.last:
                    window._stop(step)

        return __call__

    def _begin(self) -> int:
        with self._lock:
            self.calls += 1
            step = self.calls
        if step == 1:
            self._on_first_call()
        if step == self.first:
            self._start(step)
        return step


class _EagerWindow:
    """The profile of a job with no steps: opened ``EAGER_WINDOW_S[0]`` seconds after TF's
    import unless a tf.function was called by then, closed a second later, or at once by
    the first tf.function call (whose steps then have the profile) or by the job's end.
    Timer threads, daemons: the job never waits for them."""

    def __init__(self, start: Callable[[int], None], stop: Callable[[int], None],
                 calls: Callable[[], int]) -> None:
        self._start, self._stop, self._calls = start, stop, calls
        self._lock = threading.Lock()
        self._state = "waiting"  # then "open", then "done"
        self._timers: list[threading.Timer] = []

    def arm(self, seconds: tuple[float, float] = EAGER_WINDOW_S) -> None:
        for delay, then in ((seconds[0], self._open), (seconds[1], self.close)):
            timer = threading.Timer(delay, then)
            timer.daemon = True
            self._timers.append(timer)
            timer.start()

    def _open(self) -> None:
        with self._lock:
            if self._state != "waiting" or self._calls():
                self._state = "done"
                return
            self._state = "open"
            self._start(0)

    def close(self) -> None:
        """End the window (a tf.function call, the job's end, or its time)."""
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            if self._state == "open":
                self._stop(0)
            self._state = "done"


# At most this many traces are timed: a job that traces without end (a tf.function made
# anew in a loop) would otherwise grow the manifest past what its reader takes.
_MAX_TIMED_TRACES = 10_000


def _window_key(step: int) -> str:
    """The job's fact for a profile's window: the steps' ``profile``, or ``eager_profile``
    for the eager window (step 0: no step had run), a file of its own beside it."""
    return "eager_profile" if step == 0 else "profile"


def _set_aside_newest(root: str) -> None:
    """Rename the newest profile directory under ``root`` to ``<name>_eager``. TF names a
    profile's directory after the second it stopped in: a step window stopped in the same
    second as the eager window would write over its file."""
    try:
        newest = max((e for e in os.scandir(root) if e.is_dir()), key=lambda e: e.stat().st_mtime)
        os.rename(newest.path, newest.path + "_eager")
    except (OSError, ValueError):  # none there, or it cannot be renamed: left as it is
        pass


class _TraceTimer:
    """How long each trace TF's line announced took: from the line to the end of the
    function that builds its graph (``_create_concrete_function``), by the line's number.
    A trace made inside another's is timed inside it too (the outer time holds it)."""

    def __init__(self) -> None:
        self.seconds: list[Optional[float]] = []
        self._lock = threading.Lock()
        self._local = threading.local()

    def _stack(self) -> list[list[Any]]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        stack: list[list[Any]] = self._local.stack
        return stack

    def announced(self) -> None:
        """TF printed a trace's line, in this thread: its graph is built next."""
        stack = self._stack()
        while stack and not stack[-1][2]:  # announced, never built (an error between)
            stack.pop()
        with self._lock:
            if len(self.seconds) >= _MAX_TIMED_TRACES:
                return
            self.seconds.append(None)
            number = len(self.seconds) - 1
        stack.append([number, time.perf_counter(), False])  # [line number, start, claimed]

    def wrap(self, build: Callable[..., Any]) -> Callable[..., Any]:
        timer = self

        @functools.wraps(build)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = timer._stack()
            mine = stack[-1] if stack and not stack[-1][2] else None
            if mine is not None:
                mine[2] = True
            try:
                return build(*args, **kwargs)
            finally:
                if mine is not None:
                    timer.seconds[mine[0]] = round(time.perf_counter() - mine[1], 6)
                    if stack and stack[-1] is mine:
                        stack.pop()

        return timed


# The eager lines kept: the commonest (op type, stack) keys, the rest counted as dropped
# (a job that makes its own functions in a loop has no end of stacks); frames walked out
# from an op's wrapper in search of the user's line, and kept of each stack (those nearest
# the op, and those nearest the user's line: the call site and the library it called;
# frames are numbered in one table, so a long stack costs a list of small numbers).
_MAX_EAGER_KEYS = 500
_MAX_WALK = 512
_KEPT_FRAMES = 32
# The files AutoGraph writes a converted function to; TF's own stacks (and a dump's) name
# the user's source instead, through the source map of the conversion running.
_AUTOGRAPH_FILE = "__autograph_generated_file"
_TF_STACK = "tensorflow.python.util.tf_stack"
# tf.py_function's Python function runs eagerly, inside a graph's op (EagerPyFunc), through
# EagerFunc.__call__ of this module: the walk out to the user's line stops before it, so a
# dispatch made inside one is marked with that frame, outermost (a dump's stack has it).
_SCRIPT_OPS = "tensorflow.python.ops.script_ops"


class _Origin(NamedTuple):
    """A frame as AutoGraph's source map names it."""

    co_filename: str
    co_name: str
    line: int


class _EagerLines:
    """Each eager op the job dispatches from Python, counted by (op type, the frames from
    the op's wrapper out to the user's innermost line), as it is dispatched.

    Every generated op wrapper calls TFE_Py_FastPathExecute of TF's ``pywrap_tfe`` when
    eager, looking it up at each call, and falls back on ``execute`` of TF's module of
    that name (where a tf.function's call also goes, by its ``__inference_...`` name, not
    counted): wrapped there, one count per dispatch that returned, with its wall time (the
    op's run, eager on a CPU being synchronous, and TF's dispatch around it). What a
    wrapper does not dispatch (a constant made from a Python value, ops C++ issues
    itself) is not seen. A walk costs the frames between the op and the user's line;
    whether a frame's code is the user's is decided once per code object."""

    def __init__(self, not_user_code: Sequence[str], inner_scopes: Sequence[str]) -> None:
        self._not_user = re.compile("|".join(f"(?:{p})" for p in not_user_code))
        self._inner = frozenset(inner_scopes)
        # By id(code): a code object's own hash reads its bytecode and constants, each time.
        self._ends_walk: dict[int, bool] = {}
        self._codes: dict[int, types.CodeType] = {}  # kept alive: their ids stay theirs
        self._generated: set[int] = set()
        # Per thread, (op type, id(code) or an _Origin, instruction offset or line, ...) ->
        # [dispatches, ns]; an offset, not a line: a frame's line is computed, its offset read
        self._local = threading.local()
        self._all: list[dict[tuple[Any, ...], list[int]]] = []
        self.dropped = 0
        self._lock = threading.Lock()
        self._py_function_frame: tuple[Any, ...] = ()

    def _ends_at(self, code: types.CodeType | _Origin) -> bool:
        """Whether the walk ends at ``code``: the user's, not a comprehension's."""
        return not self._not_user.search(code.co_filename) and code.co_name not in self._inner

    def _classify(self, code: types.CodeType) -> bool:
        """``_ends_at(code)``, noted by the code's id."""
        ends = self._ends_walk[id(code)] = self._ends_at(code)
        self._codes[id(code)] = code
        if _AUTOGRAPH_FILE in code.co_filename:
            self._generated.add(id(code))
        return ends

    @staticmethod
    def _source_map() -> dict[Any, Any]:
        """AutoGraph's source map in this thread, (generated file, line) -> (file, line,
        function) as the user wrote them: the one TF's own stacks use. {} if none."""
        tf_stack: Any = sys.modules.get(_TF_STACK)
        try:
            found = tf_stack._source_mapper_stacks[threading.get_ident()][-1].get_effective_source_map()
        except (AttributeError, IndexError, KeyError, TypeError):
            return {}
        return found if isinstance(found, dict) else {}

    def _as_written(self, frame: types.FrameType) -> Optional[_Origin]:
        """A frame of AutoGraph's generated code as the user wrote it, None if unmapped."""
        origin = self._source_map().get((frame.f_code.co_filename, frame.f_lineno))
        return _Origin(origin[0], origin[2], origin[1]) if origin else None

    def count(self, op_type: str, frame: Optional[types.FrameType], ns: int) -> None:
        """One dispatch of ``op_type`` from ``frame`` (the op wrapper's): the walk out to
        the user's line; ``ns`` the dispatch's wall time. A frame of AutoGraph's generated
        code (an op made eagerly while a tf.function traces: a variable's creation) is
        taken as the user wrote it, and the walk goes on if that is not the user's code
        (Keras's own train function)."""
        # flat: op type, then (id(code) or an _Origin, offset or line) per frame
        key: list[Any] = [op_type]
        ends_walk = self._ends_walk
        while frame is not None and len(key) < 2 * _MAX_WALK:
            code = frame.f_code
            ends = ends_walk.get(id(code))
            if ends is None:
                ends = self._classify(code)
            if ends and id(code) in self._generated:
                origin = self._as_written(frame)
                if origin is not None:
                    key += (origin, origin.line)
                    if self._ends_at(origin):
                        break
                    frame = frame.f_back
                    continue
            key += (id(code), frame.f_lasti)
            if ends:
                break
            frame = frame.f_back
        if getattr(self._local, "in_py_function", 0):
            key += self._py_function_frame
        counts = self._counts()
        cell = counts.get(whole := tuple(key))
        if cell is None:
            if len(counts) >= 10 * _MAX_EAGER_KEYS:
                self.dropped += 1  # a race may lose one of these: it is a bound, not a count
                return
            cell = counts[whole] = [0, 0]
        cell[0] += 1
        cell[1] += ns

    def _counts(self) -> dict[tuple[Any, ...], list[int]]:
        """This thread's counts: no lock on the way of every dispatch."""
        try:
            return self._local.counts  # type: ignore[no-any-return]
        except AttributeError:
            counts: dict[tuple[Any, ...], list[int]] = {}
            self._local.counts = counts
            with self._lock:
                self._all.append(counts)
            return counts

    def wrap_fast_path(self, fast: Callable[..., Any]) -> Callable[..., Any]:
        count = self.count

        def fast_path_execute(*args: Any) -> Any:  # (context, op type, name, inputs and attrs)
            start = time.perf_counter_ns()
            result = fast(*args)
            count(args[1], sys._getframe(1), time.perf_counter_ns() - start)
            return result

        return fast_path_execute

    def wrap_execute(self, execute: Callable[..., Any]) -> Callable[..., Any]:
        count = self.count

        @functools.wraps(execute)
        def counted_execute(op_name: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            result = execute(op_name, *args, **kwargs)
            ns = time.perf_counter_ns() - start
            name = op_name.decode("utf-8", "replace") if isinstance(op_name, bytes) else str(op_name)
            if not name.startswith("__"):  # a tf.function's call, not an op
                count(name, sys._getframe(1), ns)
            return result

        return counted_execute

    def wrap_py_function(self, call: Callable[..., Any], path: str) -> Callable[..., Any]:
        """``EagerFunc.__call__`` (of ``path``), noting in its thread that the dispatches
        made meanwhile are tf.py_function's."""
        local = self._local
        self._py_function_frame = (_Origin(path, "__call__", 0), 0)

        @functools.wraps(call)
        def py_function_call(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(local, "in_py_function", 0)
            local.in_py_function = depth + 1
            try:
                return call(*args, **kwargs)
            finally:
                local.in_py_function = depth

        return py_function_call

    def _frame(self, item: tuple[Any, int]) -> tuple[str, int, str]:
        """(path, line, function) of a key's frame: (id(code), instruction offset), or an
        _Origin with its line."""
        where, at = item
        if isinstance(where, _Origin):
            return (where.co_filename, at, where.co_name)
        code = self._codes[where]
        line = next((n for begin, end, n in code.co_lines() if begin <= at < end), None)
        return (code.co_filename, line or 0, code.co_name)

    def _by_line(self) -> dict[tuple[str, tuple[tuple[str, int, str], ...]], list[int]]:
        """The counts per (op type, frames as lines): keys of one line at two offsets merged."""
        with self._lock:
            items = [item for counts in self._all for item in list(counts.items())]
        frames: dict[tuple[Any, int], tuple[str, int, str]] = {}
        merged: dict[tuple[str, tuple[tuple[str, int, str], ...]], list[int]] = {}
        for key, (n, ns) in items:
            op_type, stack = key[0], zip(key[1::2], key[2::2])
            lines = tuple(frames[f] if f in frames else frames.setdefault(f, self._frame(f)) for f in stack)
            cell = merged.setdefault((op_type, lines), [0, 0])
            cell[0] += n
            cell[1] += ns
        return merged

    def facts(self) -> dict[str, Any]:
        """The commonest keys as JSON: a table of frames (path, line, function) and per
        key [op type, dispatches, frame numbers outermost first, the dispatches' wall ns]."""
        ranked = sorted(self._by_line().items(), key=lambda item: -item[1][0])
        kept, rest = ranked[:_MAX_EAGER_KEYS], ranked[_MAX_EAGER_KEYS:]
        table: dict[tuple[str, int, str], int] = {}
        rows = []
        for (op_type, lines), (n, ns) in kept:
            if len(lines) > 2 * _KEPT_FRAMES:
                lines = lines[:_KEPT_FRAMES] + lines[-_KEPT_FRAMES:]
            numbers = [table.setdefault(frame, len(table)) for frame in reversed(lines)]
            rows.append([op_type, n, numbers, ns])
        return {"frames": [list(frame) for frame in table], "dispatches": rows,
                "dropped": self.dropped + sum(n for _key, (n, _ns) in rest)}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` once ``name`` has been imported whole, whoever imports it.
    It finds nothing itself: it asks the other finders, and has the loader they return
    call ``then`` after executing the module (the loader is left as it was)."""

    def __init__(self, name: str, then: Callable[[types.ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        execute = loader.exec_module
        then = self.then

        def exec_module(module: types.ModuleType) -> None:
            try:
                execute(module)
            finally:
                del loader.exec_module
            then(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _warn(text: str) -> None:
    sys.stderr.write(f"tb-opmode record: {text}\n")
    sys.stderr.flush()


@dataclass
class Recording:
    """The recording inside one process: what it switched on, what it saw, how to undo it.

    ``attach(tf)`` once TensorFlow is imported (``start_from_environment`` arranges it);
    ``finish()`` at the end (at exit, or when ``tb_opmode.record``'s block ends)."""

    settings: Settings
    recording: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    _undo: list[Callable[[], None]] = field(default_factory=list)
    _window: Optional[_StepWindow] = None
    _eager_window: Optional[_EagerWindow] = None
    _eager_lines: Optional[_EagerLines] = None
    _profiling: bool = False
    _finished: bool = False
    _tf: Any = None

    @property
    def facts_path(self) -> str:
        return os.path.join(self.settings.rundir, JOB_FACTS.format(pid=os.getpid()))

    def attach(self, tf: Any, claim: bool = True) -> None:
        """Switch on what the level asks, in this process if it is the job's first to
        import TensorFlow (``claim``); write this process's facts either way."""
        self._tf = tf
        self.recording = _claim(self.settings.rundir) if claim else True
        self.facts.update(pid=os.getpid(), argv=list(sys.argv), recording=self.recording,
                          tensorflow_version=getattr(tf, "__version__", None),
                          imported_at=time.time(), problems=[])
        if self.recording:
            for step in (self._enable_dump, self._log_traces, self._count_steps, self._count_eager_lines):
                self._attempt(step)
            atexit.register(self.finish)
        self._save()

    def _attempt(self, step: Callable[[], None]) -> None:
        """One part of the recording; its failure is a fact and one line, never the job's."""
        try:
            step()
        except Exception as err:  # TF's own errors are many; none may stop the job
            problem = f"{step.__name__.strip('_').replace('_', ' ')}: {type(err).__name__}: {err}"
            self.facts["problems"].append(problem)
            _warn(problem)

    def _enable_dump(self) -> None:
        mode = self.settings.level.dump_mode
        if mode is None:
            return
        self._tf.debugging.experimental.enable_dump_debug_info(
            self.settings.rundir, tensor_debug_mode=mode, circular_buffer_size=-1)
        self.facts["dump"] = {"mode": mode, "circular_buffer_size": -1}
        self._undo.append(self._tf.debugging.experimental.disable_dump_debug_info)

    def _log_traces(self) -> None:
        """TF's line for each new trace, written as TF's default handler would print it at
        Python log level 1, into our file: the job's own log and terminal stay as they were
        (the call goes on to TF's logger at the user's level)."""
        from_tf = sys.modules["tensorflow.python.platform.tf_logging"]
        vlog = from_tf.vlog
        path = os.path.join(self.settings.rundir, TRACE_LOG)
        lock = threading.Lock()

        timer = _TraceTimer()

        @functools.wraps(vlog)
        def traced_vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> Any:
            if level == 1 and isinstance(msg, str) and msg.startswith(_TRACE_LINE):
                line = f"Level 1:tensorflow:{msg % args if args else msg}\n"
                with lock, open(path, "a", encoding="utf-8") as f:
                    f.write(line)
                timer.announced()
            return vlog(level, msg, *args, **kwargs)

        setattr(from_tf, "vlog", traced_vlog)  # noqa: B010 (a module attribute mypy cannot see)
        self.facts["trace_log"] = TRACE_LOG
        self._undo.append(lambda: setattr(from_tf, "vlog", vlog))
        self._time_traces(timer)

    def _time_traces(self, timer: _TraceTimer) -> None:
        """Wrap the function that builds a trace's graph: a function of the module in TF
        2.14 and later, a method of ``TracingCompiler`` in 2.13. Neither there: not timed."""
        owner: Any = sys.modules.get(_TRACING_MODULE)
        if owner is None or not hasattr(owner, _BUILD):
            legacy = sys.modules.get(_LEGACY_TRACING_MODULE)
            owner = getattr(legacy, "TracingCompiler", None)
        build = getattr(owner, _BUILD, None)
        if build is None:
            self.facts["problems"].append("trace times: TF's graph building function not found")
            return
        setattr(owner, _BUILD, timer.wrap(build))
        self.facts["trace_seconds"] = timer.seconds  # the list, filled as traces end
        self._undo.append(lambda: setattr(owner, _BUILD, build))

    def _count_steps(self) -> None:
        module = sys.modules["tensorflow.python.eager.polymorphic_function.polymorphic_function"]
        function = module.Function
        call = function.__call__
        first, last = self.settings.steps
        eager = _EagerWindow(self._start_profile, self._stop_profile, lambda: window.calls)
        window = _StepWindow(first, last, self._start_profile, self._stop_profile, eager.close)
        self._window, self._eager_window = window, eager
        function.__call__ = window.wrap(call)
        self._undo.append(lambda: setattr(function, "__call__", call))
        eager.arm()

    def _count_eager_lines(self) -> None:
        """At the level with no dump (a dump has each eager op's stack already), the lines
        that dispatch eager ops: ``_EagerLines`` on TF's two dispatch functions."""
        settings = self.settings
        if settings.level.dump_mode is not None or not settings.not_user_code:
            return
        lines = _EagerLines(settings.not_user_code, settings.inner_scopes)
        tfe = sys.modules["tensorflow.python.pywrap_tfe"]
        execute_module = sys.modules["tensorflow.python.eager.execute"]
        fast, execute = tfe.TFE_Py_FastPathExecute, execute_module.execute
        setattr(tfe, "TFE_Py_FastPathExecute", lines.wrap_fast_path(fast))  # noqa: B010
        setattr(execute_module, "execute", lines.wrap_execute(execute))  # noqa: B010
        self._eager_lines = lines
        self._undo.append(lambda: setattr(tfe, "TFE_Py_FastPathExecute", fast))
        self._undo.append(lambda: setattr(execute_module, "execute", execute))
        script_ops: Any = sys.modules.get(_SCRIPT_OPS)
        eager_func = getattr(script_ops, "EagerFunc", None)
        if eager_func is not None:
            call = eager_func.__call__
            eager_func.__call__ = lines.wrap_py_function(call, script_ops.__file__)
            self._undo.append(lambda: setattr(eager_func, "__call__", call))

    def _start_profile(self, step: int) -> None:
        def start_profile() -> None:
            self._tf.profiler.experimental.start(self.settings.rundir)
            self._profiling = True
            self.facts[_window_key(step)] = {"first_step": step, "last_step": None, "started": time.time()}
        self._attempt(start_profile)

    def _stop_profile(self, step: int) -> None:
        if not self._profiling:
            return

        def stop_profile() -> None:
            self._profiling = False
            self._tf.profiler.experimental.stop()
            self.facts[_window_key(step)].update(last_step=step, stopped=time.time())
            if step == 0:
                _set_aside_newest(os.path.join(self.settings.rundir, "plugins", "profile"))
        self._attempt(stop_profile)
        self._save()

    def finish(self) -> None:
        """Stop what still runs (a profile whose window the job did not reach the end of),
        put back what was changed, and write the facts. Safe to call twice."""
        if self._finished or self._tf is None:
            return
        self._finished = True
        atexit.unregister(self.finish)
        if self._eager_window is not None:
            self._eager_window.close()
        if self._window is not None and self._profiling:
            self._stop_profile(self._window.calls)
        while self._undo:
            self._attempt(self._undo.pop())
        if self._window is not None:
            self.facts["steps_seen"] = self._window.calls
        if self._eager_lines is not None:
            self.facts["eager_lines"] = self._eager_lines.facts()
        self.facts["finished_at"] = time.time()
        self._save()

    def _save(self) -> None:
        try:
            _write_json(self.facts_path, self.facts)
        except OSError as err:
            _warn(f"cannot write {self.facts_path}: {err.strerror or err}")


def attach_when_imported(recording: Recording) -> Callable[[], None]:
    """Attach ``recording`` once TensorFlow is imported (at once if it already is). The
    function returned takes the import hook away again, if it is still waiting."""

    def attach(module: types.ModuleType) -> None:
        try:
            recording.attach(module)
        except Exception as err:  # never the job's failure
            _warn(f"cannot record this process: {type(err).__name__}: {err}")

    if "tensorflow" in sys.modules:
        attach(sys.modules["tensorflow"])
        return lambda: None
    hook = _AfterImport("tensorflow", attach)
    sys.meta_path.insert(0, hook)
    return lambda: sys.meta_path.remove(hook) if hook in sys.meta_path else None


def start_from_environment(environ: Mapping[str, str] = os.environ) -> Optional[Recording]:
    """In a process that ``tb-opmode record`` started: the recording, to attach once
    TensorFlow is imported. None without settings."""
    text = environ.get(ENV_VAR)
    if not text:
        return None
    recording = Recording(Settings.from_env(text))
    attach_when_imported(recording)
    return recording
