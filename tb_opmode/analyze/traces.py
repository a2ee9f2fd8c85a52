"""The trace ledger: per Python function run as a tf.function, its traces, their calls,
what changed between them, the time spent tracing, and what to change.

In: a ``RunModel`` (its dumps: graphs, op-creation stacks, executions of each concrete
function; its profiles: ``tf.function-graph_building`` events). Out: ``ledger(model)``,
a ``FunctionLedger`` per Python function (name and ``def`` line; Keras's step functions
by what they do), each with its ``TraceEntry`` list in the order TF made them.

A trace is a concrete function (``__inference_<name>_<uid>``, one dump graph); the
graphs nested in it (a tf.cond's branches) are part of it, a tf.function called inside
it is listed on its own as nested (no calls from Python). Calls are the dump's
executions of the concrete function. Which trace starts a new tf.function object, and
its arguments, come from the op-creation stacks (``trace_stacks``), and from TF's log
line per new trace where the logs hold it (``read.trace_log``: the key, every argument's
dtype and shape and each Python value); why each trace was made from ``traces_causes``.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..model import RunModel
from ..read.tasks import task_of
from ..read.tfdbg import DEBUG_MODE_NAMES, DumpSet, HealthSpec
from ..read.trace_log import TraceLine, TraceParam, tensor_specs
from .capture_frames import is_capture_frame
from .trace_stacks import TraceFacts, parameters_of, trace_facts
from .traces_causes import ADVICE, NOT_RECORDED, ArgSpec, CauseContext, EarlierTrace, changed_of

__all__ = ["TraceEntry", "FunctionLedger", "ledger", "traces_per_graph", "KERAS_STEP_NAMES", "display_name",
           "args_of_key", "RECORD_TIMER"]

# A trace's ``tracing_from`` where ``tb-opmode record`` timed it (from TF's line announcing
# it to the end of its graph's building; a trace made inside it is in its time).
RECORD_TIMER = "record"

KERAS_STEP_NAMES = frozenset({
    "multi_step_on_iterator", "one_step_on_iterator", "one_step_on_data",
    "one_step_on_data_distributed", "train_function", "test_function", "predict_function",
    "step_function", "run_step", "train_step", "test_step", "predict_step"})
_KERAS_WORDS = {"train": "Keras train step", "evaluate": "Keras evaluate step",
                "predict": "Keras predict step"}
# Keras makes its step functions itself: what the user can change is the data.
_KERAS_ADVICE = {"shape": ("Keras traced its step again for a new batch shape: keep one batch size "
                           "(a batch size that divides the samples, or drop_remainder=True in tf.data)")}
_LIBRARY = re.compile(r"[/\\](site-packages|dist-packages|lib[/\\]python\d+(\.\d+)?)[/\\]|^<")
_MAX_SITES = 3


@dataclass
class TraceEntry:
    """One trace (concrete function) of a Python function."""

    graph: str                       # the concrete function's name, else the graph's
    graph_id: str
    calls: int = 0
    call_sites: list[str] = field(default_factory=list)   # "path:line", busiest first
    args: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    tracing_s: float | None = None
    tracing_from: str = ""           # "profile", "op_creations" (a lower bound) or ""
    first_of_object: bool = False


@dataclass
class FunctionLedger:
    """One Python function run as a tf.function, all its objects' traces."""

    python_name: str
    name: str                        # what to call it ("step", "Keras train step")
    location: str                    # "path:line" of its def (a lambda: its line)
    kind: str = "user"               # "user", "keras_train", "keras_evaluate", "keras_predict"
    nested: bool = False
    objects: int = 0
    traces: list[TraceEntry] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.traces)

    @property
    def tracing_s(self) -> float | None:
        times = [t.tracing_s for t in self.traces if t.tracing_s is not None]
        return sum(times) if times else None

    @property
    def causes(self) -> dict[str, int]:
        """Traces per cause word: a trace told against its nearest earlier traces may have
        more than one (a new shape and a new Python value), each of which traced it."""
        return dict(Counter(cause for t in self.traces for cause in dict.fromkeys(c["cause"] for c in t.changed)))

    @property
    def advice(self) -> list[str]:
        """What to change, per cause, at the call site."""
        where = next((t.call_sites[0] for t in self.traces if t.call_sites), "")
        # the file's name, as the trace lines and the def line say it (call_sites: the path)
        path, _, line = where.rpartition(":")
        at = f" (called at {os.path.basename(path)}:{line})" if where else ""
        words = dict(ADVICE, **_KERAS_ADVICE) if self.kind.startswith("keras") else ADVICE
        return [f"{cause}: {words[cause]}{at}" for cause in self.causes if words.get(cause)]


def display_name(python_name: str, keras: str, path: str, nested: bool = False) -> str:
    """Keras's step functions by what they do (one called inside another by its Python
    name too: Keras 3's ``one_step_on_data`` runs inside ``multi_step_on_iterator``, and
    both train); any other function by its Python name."""
    if keras and python_name in KERAS_STEP_NAMES and re.search(r"keras", path):
        return f"{_KERAS_WORDS[keras]} ({python_name})" if nested else _KERAS_WORDS[keras]
    return python_name


def _concrete_names(dump: DumpSet) -> dict[str, tuple[str, int]]:
    """graph id -> (concrete function name, calls from Python)."""
    out: dict[str, tuple[str, int]] = {}
    for (op_type, graph_id), n in dump.executions.items():
        if graph_id:
            name, calls = out.get(graph_id, (op_type, 0))
            out[graph_id] = (name, calls + n)
    return out


def _call_sites(dump: DumpSet, concrete: str) -> list[str]:
    """Where Python called a concrete function: the innermost frame outside libraries
    and our recording's wrapper of the call."""
    sites: Counter[str] = Counter()
    for (op_type, stack), n in dump.execution_sites.items():
        if op_type != concrete:
            continue
        frames = [f for f in (dump.frame(i) for i in stack) if f is not None and not is_capture_frame(f[0])]
        user = [f for f in frames if not _LIBRARY.search(f[0])] or frames
        if user:
            sites[f"{user[-1][0]}:{user[-1][1]}"] += n
    return [s for s, _ in sites.most_common(_MAX_SITES)]


def _mode_name(dump: DumpSet) -> str:
    modes = [m for m, _ in dump.tensor_debug_modes.most_common(1)]
    return DEBUG_MODE_NAMES.get(modes[0], "") if modes else ""


def _unrecorded_why(mode: str) -> str:
    how = ("record with --evidence full (a FULL_HEALTH dump) or a SHAPE dump to tell a shape, "
           "a dtype and a Python value apart")
    if mode in ("NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH"):
        return f"a {mode} dump records no dtypes or shapes of the arguments; {how}"
    if mode:
        return (f"the {mode} dump holds no debug values of this call's arguments (their producers "
                f"were not recorded); {how}")
    return f"the run records no dtypes or shapes of the arguments; {how}"


_DTYPES = {"DT_FLOAT": "float32", "DT_DOUBLE": "float64", "DT_HALF": "float16",
           "DT_BFLOAT16": "bfloat16", "DT_INT32": "int32", "DT_INT64": "int64", "DT_INT8": "int8",
           "DT_INT16": "int16", "DT_UINT8": "uint8", "DT_BOOL": "bool", "DT_STRING": "string",
           "DT_COMPLEX64": "complex64", "DT_COMPLEX128": "complex128"}
_SPEC_MODES = ("FULL_HEALTH", "SHAPE")


def _arg_spec(name: str, spec: HealthSpec) -> ArgSpec | None:
    if spec is None or spec[0] == "DT_RESOURCE":
        return None
    dtype, _rank, size, shape = spec
    return ArgSpec(name, _DTYPES.get(dtype, dtype), shape, size)


def _iterator_specs(dump: DumpSet, graph_id: str, name: str) -> list[ArgSpec]:
    """An iterator argument's elements: what the trace's first call traced of the outputs
    of the IteratorGetNext reading it (``name[i]`` for output i), those recorded."""
    graph = dump.graphs.get(graph_id)
    out: list[ArgSpec] = []
    for op in graph.ops.values() if graph is not None else ():
        if op.op_type.startswith("IteratorGetNext") and f"{name}:0" in op.inputs:
            for slot in range(op.num_outputs):
                spec = _arg_spec(f"{name}[{slot}]", dump.trace_specs.get((graph_id, op.op_name, slot)))
                out += [spec] if spec is not None else []
    return out


def _specs(dump: DumpSet, facts: TraceFacts, mode: str) -> list[ArgSpec] | None:
    """What the dump recorded of the tensor arguments of the trace's first call (the
    call that traced it): the eager outputs that fed it, or an iterator's elements as the
    trace read them; None where it recorded nothing of one of them."""
    recorded = dump.call_args.get(facts.graph_id)
    if mode not in _SPEC_MODES or recorded is None or len(recorded) < len(facts.args):
        return None
    out: list[ArgSpec] = []
    for name, spec in zip(facts.args, recorded):
        arg = _arg_spec(name, spec)
        elements = [] if arg is not None else _iterator_specs(dump, facts.graph_id, name)
        if arg is None and not elements:
            return None
        out += [arg] if arg is not None else elements
    return out


def _op_creation_spans(dump: DumpSet) -> dict[str, float]:
    """graph id -> wall-time span (s) of its op creations and its nested graphs'."""
    walls: dict[str, tuple[float, float]] = {}
    for graph_id, (first, last) in dump.graph_walls.items():
        seen: set[str] = set()
        while graph_id and graph_id in dump.graphs and graph_id not in seen:
            seen.add(graph_id)
            lo, hi = walls.get(graph_id, (first, last))
            walls[graph_id] = (min(lo, first), max(hi, last))
            graph_id = dump.graphs[graph_id].outer_id
    return {g: hi - lo for g, (lo, hi) in walls.items()}


def _building(model: RunModel) -> list[tuple[int, int]]:
    """The profiles' graph-building events (start, end ns), by start."""
    return sorted((start, start + dur) for p in model.profiles for start, dur in p.graph_building)


def _built_in(events: list[tuple[int, int]], first_wall: float) -> float | None:
    """The duration (s) of the innermost graph-building event holding the trace's first op
    creation, None if no profile window holds it."""
    at = int(first_wall * 1e9)
    holding = [end - start for start, end in events if start <= at <= end]
    return min(holding) / 1e9 if holding else None


def _shape_words(spec: ArgSpec | None) -> list[int] | str:
    """A recorded shape, else what is known of it (a FULL_HEALTH dump: the element count)."""
    if spec is not None and spec.shape is not None:
        return list(spec.shape)
    if spec is not None and spec.size is not None:
        return f"{NOT_RECORDED} ({spec.size} elements)"
    return NOT_RECORDED


def _args(facts: TraceFacts, python_args: list[str], specs: list[ArgSpec] | None) -> list[dict[str, Any]]:
    by_name = {s.name: s for s in specs or []}
    out: list[dict[str, Any]] = []
    for name in facts.args:
        spec = by_name.get(name)
        out.append({"name": name, "kind": "tensor",
                    "dtype": spec.dtype if spec and spec.dtype else NOT_RECORDED,
                    "shape": _shape_words(spec)})
    out.extend({"name": name, "kind": "python", "value": NOT_RECORDED} for name in python_args)
    return out


def _shape_list(shape: tuple[int | None, ...] | None) -> list[int | None] | str:
    return NOT_RECORDED if shape is None else list(shape)


def args_of_key(key: tuple[TraceParam, ...]) -> list[dict[str, Any]]:
    """The arguments as TF's log line printed the trace's key: tensors (those nested in
    an iterator's or a tuple's spec as ``name[i]``) and Python values."""
    out: list[dict[str, Any]] = []
    for p in key:
        tensors = tensor_specs(p)
        if tensors:
            out += [{"name": name, "kind": "tensor", "dtype": dtype, "shape": _shape_list(shape)}
                    for name, dtype, shape in tensors]
        else:
            out.append({"name": p.name, "kind": "python", "value": p.value})
    return out


def _log_keys(lines: list[TraceLine], traces: list[TraceFacts]) -> dict[str, TraceLine]:
    """graph id -> TF's log line of its trace (its key). A function's lines are matched to its
    traces in order, only where they are as many (the same count by name: the log names
    the Python function, not the graph)."""
    by_name: dict[str, list[TraceLine]] = {}
    for line in lines:
        by_name.setdefault(line.name, []).append(line)
    made: dict[str, list[TraceFacts]] = {}
    for facts in traces:
        made.setdefault(facts.python_name, []).append(facts)
    return {facts.graph_id: line
            for name, mine in made.items() if len(by_name.get(name, ())) == len(mine)
            for facts, line in zip(mine, by_name[name])}


def _python_args(dump: DumpSet, facts: TraceFacts) -> list[str]:
    """The function's parameters no Placeholder stands for: Python values in the key."""
    tensors = {re.sub(r"_\d+$", "", a) for a in facts.args}
    return [p for p in parameters_of(dump, facts.path, facts.line) if p not in tensors]


class _Builder:
    """The ledger of one dump, built trace by trace in the order TF made them."""

    def __init__(self, model: RunModel, dump: DumpSet, keys: dict[str, TraceLine]) -> None:
        self.model = model
        self.dump = dump
        self.keys = keys
        self.concrete = _concrete_names(dump)
        self.mode = _mode_name(dump)
        self.why = _unrecorded_why(self.mode)
        self.spans = _op_creation_spans(dump)
        self.building = _building(model)
        self.functions: dict[tuple[str, str, str], FunctionLedger] = {}
        self.last: dict[tuple[str, str, str], tuple[TraceFacts, TraceEntry, list[ArgSpec] | None]] = {}
        # per Python function, the traces of its current tf.function object, oldest first
        self.earlier: dict[tuple[str, str, str], list[EarlierTrace]] = {}

    def _function(self, facts: TraceFacts) -> tuple[tuple[str, str, str], FunctionLedger]:
        location = f"{facts.path}:{facts.line}" if facts.path else ""
        key = (facts.python_name, location, facts.keras)
        if key not in self.functions:
            kind = f"keras_{facts.keras}" if facts.keras and facts.python_name in KERAS_STEP_NAMES else "user"
            self.functions[key] = FunctionLedger(
                facts.python_name, display_name(facts.python_name, facts.keras, facts.path, facts.nested),
                location, kind, facts.nested)
        return key, self.functions[key]

    def _outer_name(self, facts: TraceFacts) -> str:
        outer = self.dump.graphs.get(self._outer_id(facts))
        return outer.name if outer is not None else ""

    def _outer_id(self, facts: TraceFacts) -> str:
        return self.dump.graphs[facts.graph_id].outer_id

    def _tracing_time(self, entry: TraceEntry, logged: TraceLine | None) -> None:
        """The profile's graph building where its window holds the trace, else the time
        ``tb-opmode record`` measured for the trace's line, else the op creations' span (a
        lower bound)."""
        first = self.dump.graph_walls.get(entry.graph_id)
        built = _built_in(self.building, first[0]) if first and self.building else None
        if built is not None:
            entry.tracing_s, entry.tracing_from = built, "profile"
        elif logged is not None and logged.seconds is not None:
            entry.tracing_s, entry.tracing_from = logged.seconds, RECORD_TIMER
        elif entry.graph_id in self.spans:
            entry.tracing_s, entry.tracing_from = self.spans[entry.graph_id], "op_creations"

    def add(self, facts: TraceFacts) -> None:
        key, fn = self._function(facts)
        name, calls = self.concrete.get(facts.graph_id, (facts.python_name, 0))
        if facts.nested:
            calls = 0  # called from inside its outer function's graph, not from Python
        python_args = _python_args(self.dump, facts)
        specs = None if facts.nested else _specs(self.dump, facts, self.mode)
        before = self.last.get(key)
        logged = self.keys.get(facts.graph_id)
        logged_before = self.keys.get(before[1].graph_id) if before else None
        ctx = CauseContext(first=before is None, first_of_object=facts.first_of_object,
                           strategy_copy=facts.strategy_copy, nested=facts.nested, outer=self._outer_name(facts),
                           same_outer=bool(before and self._outer_id(before[0]) == self._outer_id(facts)),
                           previous_first_of_object=bool(before and before[0].first_of_object),
                           previous_calls=before[1].calls if before else 0,
                           tensor_args=list(facts.args), python_args=python_args, specs=specs,
                           previous_specs=before[2] if before else None, unrecorded_why=self.why,
                           key=logged.params if logged else None,
                           previous_key=logged_before.params if logged_before else None,
                           scope=logged.scope if logged else "",
                           previous_scope=logged_before.scope if logged_before else "",
                           earlier=self.earlier.get(key, []))
        verdict = changed_of(ctx)
        args = args_of_key(logged.params) if logged is not None else _args(facts, python_args, specs)
        entry = TraceEntry(name, facts.graph_id, calls, _call_sites(self.dump, name) if calls else [],
                           args, verdict.changed, verdict.note, first_of_object=facts.first_of_object)
        self._tracing_time(entry, logged)
        fn.traces.append(entry)
        fn.objects += int(facts.first_of_object or before is None)
        self.last[key] = (facts, entry, specs)
        mine = [] if facts.first_of_object else self.earlier.get(key, [])
        self.earlier[key] = [*mine, EarlierTrace(name, logged.params if logged else None, specs)]


def _worker_of(dump: DumpSet) -> str:
    """Which worker of a multi-worker job made a dump: its tasks (``worker:1``), else its
    host, else its directory's name."""
    tasks = sorted({t for t in map(task_of, dump.devices.values()) if t})
    return ", ".join(tasks) or dump.host or dump.directory.rstrip("/").rsplit("/", 1)[-1]


def ledger(model: RunModel) -> list[FunctionLedger]:
    """Every Python function the run's dumps traced, the most traced first; in a run of
    several dumps (a multi-worker job) each dump's functions are its worker's, and their
    names say which (``train_step (worker:1)``)."""
    out: list[FunctionLedger] = []
    for dump in model.dumps:
        made = list(trace_facts(dump))
        # the log's lines name no dump: read with one dump only
        keys = _log_keys(model.trace_lines, made) if len(model.dumps) == 1 else {}
        builder = _Builder(model, dump, keys)
        for facts in made:
            builder.add(facts)
        if len(model.dumps) > 1:
            for fn in builder.functions.values():
                fn.name = f"{fn.name} ({_worker_of(dump)})"
        out.extend(builder.functions.values())
    out.sort(key=lambda f: (f.nested, -len(f.traces), -f.calls, f.name))
    return out


def traces_per_graph(functions: list[FunctionLedger]) -> dict[str, int]:
    """Each trace's graph id -> how many traces its Python function has (``functions``: a
    ``ledger``): a graph that ran may be its function's second trace (Keras traces a step
    again when the first one created variables), which the graphs that ran alone do not show."""
    return {t.graph_id: len(f.traces) for f in functions for t in f.traces}
