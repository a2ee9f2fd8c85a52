"""The trace ledger's checker: a run's ``tf_functions`` and ``eager_sites`` against the truth.

In: a cell made by ``workloads.make_cell`` (its ``truth.json`` and ``logdir/``) and the
product's run JSON (one entry of ``runs[]`` of ``tb-opmode summary --format json``). Out:
lists of problems in words (empty: the run agrees with the truth).

This module shares no code with the product (``tb_opmode``): the truth comes from
TensorFlow itself (``experimental_get_tracing_count()``, the concrete functions it made,
and its ``DebugDataReader``), the profile is read with TensorFlow's own xplane protos.

The contract checked (issue 25's names, kept exactly):

- ``runs[].tf_functions``: ``[{"python_name", "location", "traces", "calls", "tracing_s",
  "causes", "advice", "trace_list": [{"graph", "calls", "args", "changed",
  "tracing_s"}]}]``, one entry per Python function object or one per Python function
  whose counts add up. ``location`` is "path:line" of the function (its ``def`` line, or
  any line of its body); ``graph`` the concrete function's name (``__inference_step_95``)
  for a trace Python called; ``causes`` maps each cause word to its number of traces;
  ``changed`` lists, per trace after the first, ``{"cause": word, ...}`` with ``arg`` and
  ``dim`` for ``shape``, ``arg`` for ``dtype`` and ``python_value``, and ``why`` for
  ``unknown``; the first trace of a Python function has ``changed == []``. An argument
  is named by its own name (``iterator``), a path into it (``iterator[0]``) allowed. A
  nested function's (Keras 3's ``one_step_on_data``) traces are matched by order, their
  causes asked where TF's log decides them (``DECIDES_NESTED``), else ``unknown`` with a
  why. The second trace of a first call that creates variables has ``changed == []``
  and a ``note`` that names the variables (the decision taken: no cause word, not counted
  in ``causes``); ``unknown`` with a why that names them is accepted too.
- ``runs[].eager_sites``: ``[{"location", "user_location", "executions", "time_ns",
  "op_types"}]``, ``user_location`` "path:line" of the first frame in the user's own code.

What decides a cause is ``DECIDES`` (the findings in the design notes): which evidence
of a run lets the product name a trace's cause for sure. Where the run has it, the
product must name the constructed cause; where not, ``unknown`` with a reason.
"""
from __future__ import annotations

import glob
import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CAUSES", "DECIDES", "DECIDES_NESTED", "Cell", "load_cell", "decided", "check_functions",
           "check_eager_sites", "check_profile_against_dump", "profile_facts", "dump_facts",
           "oracle_run"]

CAUSES = ("shape", "dtype", "python_value", "new_function_object", "unknown")

# Which evidence decides each cause (a run has it when any set is a subset of the run's):
#  - "stack":   op creation stacks (every dump mode): the trace's first op was created under
#               ``_initialize`` (the first trace of its tf.function object) or not;
#  - "specs":   each tensor argument's dtype and shape or size per call (FULL_HEALTH,
#               SHAPE: the eager producers of the call's inputs, the function's traced
#               iterator outputs; CONCISE_HEALTH: sizes only, no dtype);
#  - "log":     TF's Python line per new trace (its key: every argument's TensorSpec and
#               Literal values) and the C++ log's ``_Arg`` instantiations (dtype, shape).
DECIDES: dict[str, list[frozenset[str]]] = {
    "new_function_object": [frozenset({"stack"})],
    # The pair a first call that creates variables traces: the first never called, no call
    # between the two. No cause word: ``changed == []`` and a note naming the variables
    # (or ``unknown`` whose why names them; see ``_check_cause``).
    "variable_creation": [frozenset({"stack"})],
    "shape": [frozenset({"stack", "specs"}), frozenset({"stack", "sizes"}), frozenset({"log"})],
    "dtype": [frozenset({"stack", "specs"}), frozenset({"log"})],
    # By elimination (same object, same tensor specs), or the key's Literal values.
    "python_value": [frozenset({"stack", "specs"}), frozenset({"log"})],
}
# A nested function's traces are never called from Python (no stack of a call decides):
# only TF's line per trace decides, its key's parameters, and its scope ("scope": TF 2.21
# prints ``scope_type=<ScopeType.VARIABLE_CREATION: 2>``, ``NO_VARIABLE_CREATION`` for the
# trace again without creating variables; TF 2.13 prints none).
DECIDES_NESTED: dict[str, list[frozenset[str]]] = {
    "variable_creation": [frozenset({"scope"})],
    "shape": [frozenset({"log"})], "dtype": [frozenset({"log"})], "python_value": [frozenset({"log"})],
}
_SCOPE_MARK = "scope_type=<ScopeType."
# Which argument dimension changed: SHAPE records shapes, the log prints TensorSpecs.
DECIDES_DIM = {"SHAPE", "log"}
_MODE_EVIDENCE = {"FULL_HEALTH": {"stack", "specs", "sizes"}, "SHAPE": {"stack", "specs", "sizes"},
                  "CONCISE_HEALTH": {"stack", "sizes"}, "CURT_HEALTH": {"stack"},
                  "NO_TENSOR": {"stack"}}


@dataclass
class Cell:
    """One cell's truth and where its files are."""

    root: Path
    truth: dict[str, Any]
    logdir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.logdir = self.root / "logdir"

    @property
    def mode(self) -> str:
        return str(self.truth["params"]["mode"])

    @property
    def evidence(self) -> set[str]:
        have = set(_MODE_EVIDENCE.get(self.mode, ()))
        if self.truth["params"]["log"]:
            have.add("log")
            if _SCOPE_MARK in (self.root / "stderr.log").read_text(errors="replace"):
                have.add("scope")
        if self.truth["params"]["profile"]:
            have.add("profile")
        return have


def load_cell(root: Path) -> Cell:
    return Cell(Path(root), json.loads((Path(root) / "truth.json").read_text()))


def decided(cell: Cell, cause: str, top_level: bool = True) -> bool:
    """Whether the run's evidence decides ``cause`` (``DECIDES``; a nested function's:
    ``DECIDES_NESTED``)."""
    have = cell.evidence
    return any(need <= have for need in (DECIDES if top_level else DECIDES_NESTED).get(cause, []))


# ------------------------------------------------------------------ tf_functions

def _split_location(location: str) -> tuple[str, int]:
    path, _, line = str(location).rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return str(location), -1


def _group_key(fn: dict[str, Any]) -> tuple[str, str, int, int]:
    return (fn["python_name"], fn["file"], fn["lines"][0], fn["lines"][1])


def _groups(truth: dict[str, Any]) -> dict[tuple[str, str, int, int], list[dict[str, Any]]]:
    """The truth's function objects by Python function (name and source lines)."""
    out: dict[tuple[str, str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for fn in truth["functions"]:
        out[_group_key(fn)].append(fn)
    return out


def _matches(entry: dict[str, Any], key: tuple[str, str, int, int]) -> bool:
    name, path, first, last = key
    where, line = _split_location(entry.get("location", ""))
    return entry.get("python_name") == name and os.path.realpath(where) == os.path.realpath(path) \
        and first <= line <= last


def _changed_causes(trace: dict[str, Any]) -> set[str]:
    return {c.get("cause", "") for c in trace.get("changed") or []}


def check_functions(cell: Cell, run: dict[str, Any]) -> list[str]:
    """Traces and calls per Python function, calls per trace, each trace's cause."""
    problems: list[str] = []
    entries = run.get("tf_functions")
    if not isinstance(entries, list):
        return ["the run has no tf_functions list"]
    used: set[int] = set()
    for key, objects in _groups(cell.truth).items():
        mine = [i for i, e in enumerate(entries) if _matches(e, key)]
        used.update(mine)
        label = f"{key[0]} ({os.path.basename(key[1])}:{key[2]})"
        if not mine:
            problems.append(f"{label}: not in tf_functions")
            continue
        got = [entries[i] for i in mine]
        want_traces = sum(o["traces"] for o in objects)
        have_traces = sum(int(e.get("traces", 0)) for e in got)
        if have_traces != want_traces:
            problems.append(f"{label}: {have_traces} traces, TF counts {want_traces}")
        if all(o["top_level"] for o in objects):
            want_calls = sum(o["calls"] for o in objects)
            have_calls = sum(int(e.get("calls", 0)) for e in got)
            if have_calls != want_calls:
                problems.append(f"{label}: {have_calls} calls, {want_calls} made")
        problems.extend(_check_traces(cell, label, objects, got))
    for i, e in enumerate(entries):
        if i not in used and e.get("calls"):
            problems.append(f"{e.get('python_name')} ({e.get('location')}): {e.get('calls')} calls "
                            f"of a function the run did not call")
    return problems


def _check_traces(cell: Cell, label: str, objects: list[dict[str, Any]],
                  got: list[dict[str, Any]]) -> list[str]:
    """Each trace of the truth against the product's: a trace Python called by its concrete
    function's name; one never called (the variable-creating first trace of a first call
    that created variables: its name is in no record) and a nested function's by order."""
    problems: list[str] = []
    truth_traces = [t for o in objects for t in o["trace_list"]]
    have = [t for e in got for t in e.get("trace_list", [])]
    called = {t.get("graph"): t for t in have if t.get("calls")}
    uncalled = [t for t in have if not t.get("calls")]
    top = all(o["top_level"] for o in objects)
    for n, want in enumerate(truth_traces):
        if not top:
            mine = have[n] if n < len(have) else None
        elif want["calls"]:
            mine = called.get(want["graph"])
        else:
            mine = uncalled.pop(0) if uncalled else None
        where = f"{label} trace {want['graph']}"
        if mine is None:
            problems.append(f"{where}: not in trace_list")
            continue
        if top and (mine.get("calls") or 0) != want["calls"]:
            problems.append(f"{where}: {mine.get('calls')} calls, {want['calls']} made")
        problems.extend(_check_cause(cell, where, want, mine, top))
    return problems


def _base_arg(name: Any) -> str:
    """An argument's own name, without the path into it (``iterator.element[0]``: ``iterator``)."""
    return str(name).split(".", 1)[0].split("[", 1)[0]


def _check_cause(cell: Cell, where: str, want: dict[str, Any], mine: dict[str, Any],
                 top_level: bool = True) -> list[str]:
    cause = want["cause"]
    causes = _changed_causes(mine)
    if cause == "first":
        return [] if not mine.get("changed") else [f"{where}: the first trace, but changed = {mine['changed']}"]
    if not decided(cell, cause, top_level):
        unknown = [c for c in mine.get("changed") or [] if c.get("cause") == "unknown"]
        if causes != {"unknown"} or not all(c.get("why") for c in unknown):
            return [f"{where}: the run cannot decide {cause!r} ({cell.mode}, evidence "
                    f"{sorted(cell.evidence)}): must be 'unknown' with why, is {mine.get('changed')}"]
        return []
    if cause == "variable_creation":
        if not causes and "variable" in str(mine.get("note", "")):
            return []
        if causes == {"unknown"} and all("variable" in str(c.get("why", "")) for c in mine["changed"]):
            return []
        return [f"{where}: the second trace of a call that created variables: changed must be "
                f"[] with a note naming the variables, is {mine.get('changed')} ({mine.get('note')!r})"]
    if causes != {cause}:
        return [f"{where}: cause {sorted(causes)}, constructed {cause!r}"]
    problems = []
    for change in want["changed"]:
        arg = _base_arg(change["arg"])
        named = [c for c in mine["changed"] if _base_arg(c.get("arg")) == arg]
        if cause in ("shape", "dtype", "python_value") and not named:
            problems.append(f"{where}: argument {arg!r} not named in {mine['changed']}")
        if cause == "shape" and (cell.mode in DECIDES_DIM or "log" in cell.evidence) and not any(
                c.get("dim") == change["dim"] for c in named):
            problems.append(f"{where}: dimension {change['dim']} of {arg!r} not named "
                            f"in {mine['changed']}")
    return problems


# ------------------------------------------------------------------ eager_sites

def check_eager_sites(cell: Cell, run: dict[str, Any]) -> list[str]:
    """The hot line first; executions per user line equal DebugDataReader's."""
    sites = run.get("eager_sites")
    if not isinstance(sites, list) or not sites:
        return ["the run has no eager_sites"]
    problems: list[str] = []
    hot = cell.truth["eager"]["hot_line"]
    ddr = cell.truth["ddr"]["eager_by_user_line"]
    per_line: Counter[str] = Counter()
    for s in sites:
        path, line = _split_location(s.get("user_location", ""))
        per_line[f"{os.path.realpath(path)}:{line}"] += int(s.get("executions", 0))
    first_path, first_line = _split_location(sites[0].get("user_location", ""))
    hot_path, hot_line = _split_location(hot)
    if (os.path.realpath(first_path), first_line) != (os.path.realpath(hot_path), hot_line):
        problems.append(f"first eager site is {sites[0].get('user_location')}, not the hot line {hot}")
    for where, n in ddr.items():
        path, line = _split_location(where)
        have = per_line.get(f"{os.path.realpath(path)}:{line}", 0)
        if have != n:
            problems.append(f"{where}: {have} eager executions, DebugDataReader counts {n}")
    profiled = "profile" in cell.evidence
    timed = [s for s in sites if s.get("time_ns")]
    if profiled and not sites[0].get("time_ns"):
        problems.append("the run has a profile covering the hot line, but its time_ns is empty")
    order = [int(s.get("time_ns") or 0) for s in timed]
    if order != sorted(order, reverse=True) or (timed and sites[:len(timed)] != timed):
        problems.append("eager sites with a profiled time are not ranked first by time")
    rest = [int(s.get("executions", 0)) for s in sites[len(timed):]]
    if rest != sorted(rest, reverse=True):
        problems.append("eager sites without a profiled time are not ranked by executions")
    return problems


# ------------------------------------------------------------------ profile vs dump

@dataclass
class ProfileCall:
    name: str
    start_ns: int
    duration_ns: int
    traced: bool
    tracing_count: int
    building_ns: int  # the tf.function-graph_building event inside it (0: none)


def _xplane_pb2() -> Any:
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:  # older layouts
        from tensorflow.core.profiler.protobuf import xplane_pb2  # type: ignore[no-redef]
    return xplane_pb2


_MEMO: dict[tuple[str, str], Any] = {}


def _memo(kind: str, cell: Cell, make: Any) -> Any:
    key = (kind, str(cell.root))
    if key not in _MEMO:
        _MEMO[key] = make(cell)
    return _MEMO[key]


def profile_facts(cell: Cell) -> list[ProfileCall]:
    """The profile's tf.function calls (see ``_profile_facts``), read once per cell."""
    return list(_memo("profile", cell, _profile_facts))


def _profile_facts(cell: Cell) -> list[ProfileCall]:
    """The profile's tf.function calls on the Python thread, in time order, each with the
    graph-building event it holds (read with TF's own xplane protos)."""
    paths = sorted(glob.glob(str(cell.logdir / "**" / "*.xplane.pb"), recursive=True))
    if not paths:
        return []
    space = _xplane_pb2().XSpace()
    space.ParseFromString(Path(paths[0]).read_bytes())
    calls: list[ProfileCall] = []
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            builds: list[tuple[int, int]] = []
            for ev in line.events:
                name = plane.event_metadata[ev.metadata_id].name
                start = line.timestamp_ns + ev.offset_ps // 1000
                if name == "tf.function-graph_building":
                    builds.append((start, ev.duration_ps // 1000))
                    continue
                stats = {}
                for s in ev.stats:
                    kind = s.WhichOneof("value")
                    value = getattr(s, kind) if kind else None
                    stats[stat_names.get(s.metadata_id)] = (
                        stat_names.get(value) if kind == "ref_value" else value)
                if "tf_function_call" in stats:
                    calls.append(ProfileCall(name, start, ev.duration_ps // 1000,
                                             str(stats["tf_function_call"]).startswith("traced"),
                                             int(stats.get("tracing_count") or 0), 0))
            for call in calls:
                for start, dur in builds:
                    if call.start_ns <= start <= call.start_ns + call.duration_ns:
                        call.building_ns = max(call.building_ns, dur)
    calls.sort(key=lambda c: c.start_ns)
    return calls


def dump_facts(cell: Cell) -> dict[str, Any]:
    """The dump's facts (see ``_dump_facts``), read once per cell."""
    return dict(_memo("dump", cell, _dump_facts))


def _dump_facts(cell: Cell) -> dict[str, Any]:
    """From TensorFlow's DebugDataReader: per concrete function called from Python its
    dump graph id, the wall-time span of its op creations (nested graphs included), and
    whether its first op was created under ``_initialize``."""
    from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader
    out: dict[str, Any] = {"graph_ids": {}, "spans": {}, "first_of_object": {}}
    with DebugDataReader(str(cell.logdir)) as reader:
        reader.update()
        for ex in reader.executions():
            if ex.graph_id:
                out["graph_ids"].setdefault(ex.op_type, ex.graph_id)
        walls: dict[str, list[float]] = defaultdict(list)
        first: dict[str, Any] = {}
        for op in reader.graph_op_digests():
            graph_id = op.graph_id
            first.setdefault(graph_id, op)
            while graph_id:  # nested graphs count towards their outermost function's trace
                walls[graph_id].append(op.wall_time)
                graph_id = reader.graph_by_id(graph_id).outer_graph_id
        for name, graph_id in out["graph_ids"].items():
            w = walls.get(graph_id, [])
            out["spans"][name] = (max(w) - min(w)) if w else 0.0
            op = first.get(graph_id)
            if op is not None:
                frames = reader.read_graph_op_creation_stack_trace(op)[1]
                out["first_of_object"][name] = any(f[2] == "_initialize" for f in _trace_frames(frames))
    return out


def _trace_frames(frames: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    """The frames between the innermost tf.function ``__call__`` and the tracing entry
    (``trace_function``, TF 2.13's ``_maybe_define_function``) below it."""
    calls = [i for i, f in enumerate(frames)
             if f[2] == "__call__" and os.path.basename(f[0]) == "polymorphic_function.py"]
    start = calls[-1] if calls else 0
    for i in range(start, len(frames)):
        if frames[i][2] in ("trace_function", "_maybe_define_function"):
            return frames[start:i]
    return frames[start:]


def check_profile_against_dump(cell: Cell) -> list[str]:
    """Where the profile holds a call of a traced function: its ``tracing_count`` is the
    number of traces its object had made by then (the truth's), a call that traced holds a
    graph-building event, and the dump's op creations of that trace fit inside it."""
    problems: list[str] = []
    calls = profile_facts(cell)
    if not calls:
        return ["no tf.function calls in the profile"] if "profile" in cell.evidence else []
    dump = dump_facts(cell)
    # The profiled calls of each Python function name, in order, and the truth's calls made
    # in the window: (object, trace index after the call, traced graph or None).
    expected: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    for fn in cell.truth["functions"]:
        for n, t in enumerate(fn["trace_list"]):
            if t["profiled"]:
                expected[fn["python_name"]].append((n + 1, t["graph"]))
    seen: dict[str, list[ProfileCall]] = defaultdict(list)
    for c in calls:
        seen[c.name].append(c)
    for name, traced in expected.items():
        got = [c for c in seen.get(name, []) if c.traced]
        if [c.tracing_count for c in got] != [n for n, _ in traced]:
            problems.append(f"{name}: profile tracing_count {[c.tracing_count for c in got]}, "
                            f"truth {[n for n, _ in traced]}")
            continue
        for c, (_n, graph) in zip(got, traced):
            span = dump["spans"].get(graph or "", 0.0)
            if not c.building_ns:
                problems.append(f"{name} ({graph}): traced, no graph-building event in its call")
            elif span * 1e9 > c.building_ns:
                problems.append(f"{name} ({graph}): op creations span {span * 1e3:.1f} ms, more "
                                f"than its graph building {c.building_ns / 1e6:.1f} ms")
    for fn in cell.truth["functions"]:
        for n, t in enumerate(fn["trace_list"]):
            flag = dump["first_of_object"].get(t["graph"])
            if flag is not None and flag != (n == 0):
                problems.append(f"{t['graph']}: _initialize in its stack is {flag}, but it is trace "
                                f"{n + 1} of its tf.function object")
    return problems


# ------------------------------------------------------------------ the checker's own test

def oracle_run(cell: Cell) -> dict[str, Any]:
    """The run JSON the contract asks for on this cell, made from the truth (each cause
    where ``DECIDES`` says the run decides it, else ``unknown``): what the checker must
    accept, and, altered, reject. Not a product: the checker's own test."""
    functions = []
    for fn in cell.truth["functions"]:
        trace_list = []
        for t in fn["trace_list"]:
            note = ""
            if t["cause"] == "first":
                changed: list[dict[str, Any]] = []
            elif t["cause"] == "variable_creation" and decided(cell, t["cause"], fn["top_level"]):
                changed, note = [], "traced twice: the first call created variables"
            elif not decided(cell, t["cause"], fn["top_level"]):
                changed = [{"cause": "unknown", "why": "the oracle's evidence does not decide it"}]
            elif t["changed"]:
                changed = [{"cause": t["cause"], "arg": _base_arg(c["arg"]), "dim": c.get("dim")}
                           for c in t["changed"]]
            else:
                changed = [{"cause": t["cause"]}]
            trace_list.append({"graph": t["graph"], "calls": t["calls"] or 0, "changed": changed,
                               "note": note})
        causes = Counter(c["cause"] for t in trace_list for c in t["changed"][:1])
        functions.append({"python_name": fn["python_name"], "location": f"{fn['file']}:{fn['lines'][0]}",
                          "traces": fn["traces"], "calls": fn["calls"] or 0, "causes": dict(causes),
                          "trace_list": trace_list})
    hot = cell.truth["eager"]["hot_line"]
    by_line = cell.truth["ddr"]["eager_by_user_line"]
    profiled = "profile" in cell.evidence
    sites = [{"user_location": where, "location": "", "executions": n, "op_types": {},
              "time_ns": 1000 if profiled and where == hot else 0}
             for where, n in sorted(by_line.items(), key=lambda kv: (kv[0] != hot, -kv[1]))]
    return {"tf_functions": functions, "eager_sites": sites}
