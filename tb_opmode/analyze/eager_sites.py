"""Eager cost by Python line: which lines of the user's own code issued the eager work.

In: a ``RunModel`` (its dumps' eager execution stacks and their wall times, its profiles'
eager op events, its profiled op times; for a run with no dump, the eager dispatches per
stack that ``tb-opmode record``'s job counted, ``RecordedRun.eager_lines``). Out:
``eager_sites``, one ``EagerSite`` per line of the user's code that issued eager
executions, ranked: first by eager time where the line has one, then by executions;
each with its share of the run's eager executions and time, the op types issued there,
where a library issued them (``location``: ``summary_v2.py`` for the Keras TensorBoard
callback's histograms), the library call the line makes, and advice.

A stack's frames run outermost first. The user's line is the innermost frame outside
installed libraries, the interpreter, TensorFlow, Keras and this package (``choose_frames``);
the counts per line are then exactly those a reader of the dump would make by taking, of
each eager execution's stack, the innermost frame in the user's files. Time comes from
``eager_times``: each profiled eager event joined to the dump's execution of its op type
that it ran as, by time; for a run with no dump, the wall time of the dispatches as the
recording job measured them (a profile's eager events name their op type, not their
line).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from ..model import RunModel
from ..read.tfdbg import DumpSet
from ..vocab import EAGER, GRAPH, is_debug_kernel, is_function
from .capture_frames import is_capture_frame
from .eager_times import SiteTimes, join_times
from .keras_steps import in_keras_step, keras_steps_traced
from .py_function import PY_FUNCTION_ADVICE, in_py_function
from .recording import counted_eager_lines

__all__ = ["Frame", "FrameChoice", "EagerSite", "choose_frames", "eager_sites", "is_user_frame",
           "enclosing_function", "NOT_USER_CODE", "INNER_SCOPES", "PROFILE_TIME", "DISPATCH_TIME",
           "ADVICE_RULES", "format_location"]

Frame = tuple[str, int, str]  # (file path, line, function)

# Frames of TensorFlow, Keras and this package: never the user's line, and (but for a
# library's own code that issued the op, such as summary_v2.py) never the call site either.
_INTERNAL = re.compile(r"[/\\](tensorflow|tensorflow_core|tf_keras|keras|tb_opmode)[/\\.]")
# Installed libraries and the interpreter's own code (``<frozen runpy>``, ``<string>``).
_THIRD_PARTY = re.compile(r"[/\\](site-packages|dist-packages|lib[/\\]python\d+(\.\d+)?)[/\\]|^<")
# Both, for ``tb-opmode record``'s job: it counts each eager op by the user's line found so.
NOT_USER_CODE = (_INTERNAL.pattern, _THIRD_PARTY.pattern)
# TF's own code that issues ops on a caller's behalf: a call site is the innermost frame
# outside it (the frame of a library or of the user's code that asked for the op).
_TF_OPS = re.compile(r"[/\\](tensorflow|tensorflow_core|tf_keras[/\\]src[/\\]backend|"
                     r"keras[/\\]src[/\\]backend|keras[/\\]src[/\\]ops|keras[/\\]backend|"
                     r"keras[/\\]src[/\\]utils[/\\]traceback_utils|tb_opmode)[/\\.]")
# Decorators and dispatchers between a call and the function it reaches: the library
# frame shown beside the user's line is the first frame below it outside these.
_WRAPPERS = re.compile(r"[/\\](util[/\\](dispatch|traceback_utils|deprecation|tf_decorator)|"
                       r"ops[/\\]weak_tensor_ops|framework[/\\]override_binary_operator|"
                       r"utils[/\\]traceback_utils)\.py$")


def is_user_frame(path: str) -> bool:
    """Whether a frame's file is the user's own code (not a library, the interpreter,
    TensorFlow, Keras or this package)."""
    return not _THIRD_PARTY.search(path) and not _INTERNAL.search(path)


class FrameChoice(NamedTuple):
    """Indexes into a stack's frames (None: no such frame)."""

    user: Optional[int]  # the innermost frame of the user's code
    site: Optional[int]  # the innermost frame outside TF's op code: who asked for the op
    library: Optional[int]  # the library frame the user's line called into


def choose_frames(frames: list[Frame]) -> FrameChoice:
    """The user's frame, the call site and the library frame just below the user's frame."""
    innermost_first = range(len(frames) - 1, -1, -1)
    user = next((i for i in innermost_first if is_user_frame(frames[i][0])), None)
    site = next((i for i in innermost_first if not _TF_OPS.search(frames[i][0])), None)
    below = range(user + 1 if user is not None else 0, len(frames))
    library = next((i for i in below if not _WRAPPERS.search(frames[i][0])), None)
    if user is None:
        library = None
    return FrameChoice(user, site, library)


def format_location(frame: Optional[Frame]) -> str:
    """``path:line`` of a frame, "" for none."""
    return f"{frame[0]}:{frame[1]}" if frame else ""


@dataclass
class EagerSite:
    """One line of the user's code and the eager executions it issued."""

    user_location: str  # "path:line"; "" where no frame of the user's code is on the stack
    user_function: str
    location: str  # the commonest call site of its executions ("path:line")
    location_function: str
    library_location: str  # the commonest library frame the line called into
    library_function: str
    executions: int = 0
    op_types: Counter[str] = field(default_factory=Counter)
    time_ns: Optional[int] = None  # None: no profile covered the line
    profiled_executions: int = 0
    time_note: str = ""
    # Where time_ns comes from: "profile" (its eager events joined to the dump's
    # executions), "dispatch" (the recording job's clock around each dispatch), "" none.
    time_source: str = ""
    share: float = 0.0
    time_share: Optional[float] = None
    advice: list[str] = field(default_factory=list)
    calls: Optional[int] = None  # the line's calls, where its op counts tell them
    scope: str = ""  # the function the line is written in (a comprehension's, its own)
    sites: Counter[Frame] = field(default_factory=Counter)
    libraries: Counter[Frame] = field(default_factory=Counter)
    py_function_executions: int = 0  # of them, those a tf.py_function ran (in a graph)
    keras_step_executions: int = 0  # of them, those issued under a Keras train/test/predict step

    def ops_per_call(self) -> Optional[int]:
        return self.executions // self.calls if self.calls else None


# Frames of code Python runs as a function of its own, inside the function the user wrote.
INNER_SCOPES = frozenset(("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>", "<lambda>"))


def enclosing_function(frames: list[Frame], index: int) -> str:
    """The function a frame's code is written in: a comprehension's or lambda's own frame
    stands for the function around it, in the same file."""
    while (frames[index][2] in INNER_SCOPES and index > 0
           and frames[index - 1][0] == frames[index][0]):
        index -= 1
    return frames[index][2]


class _Chosen(NamedTuple):
    user: Optional[Frame]
    site: Optional[Frame]
    library: Optional[Frame]
    scope: str  # the function the user's line is written in
    in_py_function: bool  # issued inside a tf.py_function
    in_keras_step: bool  # issued under Keras's train_step, test_step or predict_step


class _Stacks:
    """Each (dump, stack)'s frame choice, worked out once."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, tuple[str, ...]], _Chosen] = {}

    def frames_of(self, index: int, dump: DumpSet, stack: tuple[str, ...]) -> _Chosen:
        key = (index, stack)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = _chosen([f for f in map(dump.frame, stack) if f is not None])
        return found


def _user_key(user: Optional[Frame]) -> tuple[str, int]:
    return (user[0], user[1]) if user else ("", 0)


def _chosen(stack: list[Frame]) -> _Chosen:
    """The frames chosen of a stack, our recording's own left out (under ``tb-opmode
    record`` every tf.function call passes through its wrapper: no one's library)."""
    frames = [f for f in stack if not is_capture_frame(f[0])]
    user, site, library = choose_frames(frames)

    def at(i: Optional[int]) -> Optional[Frame]:
        return frames[i] if i is not None else None
    return _Chosen(at(user), at(site), at(library),
                   enclosing_function(frames, user) if user is not None else "",
                   in_py_function(frames), in_keras_step(frames))


def _add(sites: dict[tuple[str, int], EagerSite], op_type: str, n: int, chosen: _Chosen) -> None:
    """``n`` eager executions of ``op_type`` from a stack, filed under its user's line."""
    user, site, library, scope, in_py_function, in_keras_step = chosen
    key = _user_key(user)
    entry = sites.get(key)
    if entry is None:
        entry = sites[key] = EagerSite(format_location(user), user[2] if user else "",
                                       "", "", "", "", scope=scope)
    entry.executions += n
    entry.op_types[op_type] += n
    entry.py_function_executions += n if in_py_function else 0
    entry.keras_step_executions += n if in_keras_step else 0
    if site is not None:
        entry.sites[site] += n
    if library is not None:
        entry.libraries[library] += n


def _group(model: RunModel, stacks: _Stacks) -> dict[tuple[str, int], EagerSite]:
    """The dumps' eager executions grouped by the user's line (op types, call sites)."""
    sites: dict[tuple[str, int], EagerSite] = {}
    for index, dump in enumerate(model.dumps):
        for (op_type, stack), n in dump.execution_sites.items():
            if is_function(op_type) or is_debug_kernel(op_type):
                continue
            _add(sites, op_type, n, stacks.frames_of(index, dump, stack))
    return sites


def _group_recorded(model: RunModel) -> tuple[dict[tuple[str, int], EagerSite], SiteTimes]:
    """The eager dispatches ``tb-opmode record``'s job counted by stack (a run with no
    dump), grouped by the user's line as a dump's are; their wall time, as the job
    measured each dispatch, per line."""
    sites: dict[tuple[str, int], EagerSite] = {}
    times = SiteTimes(uncovered_note="")
    for line in counted_eager_lines(model):
        chosen = _chosen(list(line.frames))
        _add(sites, line.op_type, line.dispatches, chosen)
        if line.wall_ns is not None:
            key = _user_key(chosen.user)
            times.time_ns[key] += line.wall_ns
            times.events[key] += line.dispatches
            times.total_ns += line.wall_ns
    return sites, times


def _name_places(site: EagerSite) -> None:
    if site.sites:
        frame = site.sites.most_common(1)[0][0]
        site.location, site.location_function = format_location(frame), frame[2]
    else:
        site.location, site.location_function = site.user_location, site.user_function
    if site.libraries:
        frame = site.libraries.most_common(1)[0][0]
        site.library_location, site.library_function = format_location(frame), frame[2]


def _calls_of(site: EagerSite) -> Optional[int]:
    """How often the line ran, where its op counts tell: each op type a multiple of the
    rarest one's count (the rarest issued once per call, the others a fixed number of
    times). None where they do not fit that."""
    fewest = min(site.op_types.values(), default=0)
    if fewest <= 0 or len(site.op_types) < 2:
        return None
    if all(n % fewest == 0 for n in site.op_types.values()):
        return fewest
    return None


# ---------------------------------------------------------------- advice

@dataclass
class _AdviceContext:
    """What the advice rules read: the run's per-op profiled times by mode, and whether
    Keras traced a step function in it."""

    mean_ns: dict[tuple[str, str], float]
    keras_steps_traced: bool = False


def _mean_times(model: RunModel) -> dict[tuple[str, str], float]:
    """(op type, mode) -> mean profiled ns per event, from the run's op times."""
    totals: dict[tuple[str, str], list[int]] = {}
    for (op_type, mode, _kernel), (events, ns) in model.times.items():
        cell = totals.setdefault((op_type, mode), [0, 0])
        cell[0] += events
        cell[1] += ns
    return {key: ns / events for key, (events, ns) in totals.items() if events}


def _us(ns: float) -> str:
    return f"{ns / 1e3:.1f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def _measured(ctx: _AdviceContext, site: EagerSite) -> str:
    """Eager vs graph time per op of the line's op types, where this run measured both."""
    pairs = []
    for op_type, _n in site.op_types.most_common():
        eager, graph = ctx.mean_ns.get((op_type, EAGER)), ctx.mean_ns.get((op_type, GRAPH))
        if eager is not None and graph is not None:
            pairs.append(f"{op_type} {_us(eager)} eager vs {_us(graph)} in a graph")
    if not pairs:
        return ""
    return " Measured in this run, per op: " + "; ".join(pairs[:4]) + "."


_MANY_OPS = 8  # ops per call from which a line's dispatch overhead is worth a graph
_FEW_CALLS = 3  # calls under which op counts say nothing of a line's calls
_MANY_CALLS = 10  # calls of a line of few ops from which its caller's loop is worth a graph
# The library frame of a line that calls TensorFlow's ops itself (not through Keras or
# another library, whose own code a tf.function around the user's line would not help).
_TF_DIRECT = re.compile(r"(^|[/\\])(tensorflow|tensorflow_core)[/\\]python[/\\]")


def _calls_tf(site: EagerSite) -> bool:
    """Whether the line calls TF's ops itself, outside a tf.py_function (whose ops no
    tf.function around the line puts in a graph)."""
    return (bool(site.user_location) and bool(_TF_DIRECT.search(site.library_location))
            and not site.py_function_executions)


def _in_py_function(_ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    return PY_FUNCTION_ADVICE if site.py_function_executions else None


def _keras_run_eagerly(ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    """Keras's own steps dispatched their ops eagerly, and the run traced no step function
    of Keras: the steps ran eagerly, as they do with ``run_eagerly=True``."""
    if site.keras_step_executions < _MANY_OPS * 4 or ctx.keras_steps_traced:
        return None
    return (f"Keras ran its steps eagerly here, op by op ({site.keras_step_executions} eager ops "
            f"issued by its train_step, test_step or predict_step; no step function of Keras was "
            f"traced): the model was compiled with run_eagerly=True, or "
            f"tf.config.run_functions_eagerly(True) is on. Without it, Keras runs each step as a "
            f"tf.function graph." + _measured(ctx, site))


def _many_small_ops(ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    per_call = site.ops_per_call()
    if per_call is None or per_call < _MANY_OPS or (site.calls or 0) < _FEW_CALLS \
            or not _calls_tf(site):
        return None
    return (f"This line issues {per_call} eager ops per call ({site.calls} calls, as its op "
            f"counts tell): each is dispatched from Python one by one. {_as_one_graph(site)}."
            + _measured(ctx, site))


def _as_one_graph(site: EagerSite, per_call: str = "") -> str:
    """The sentence that says what to put in a tf.function: the function the line is in,
    or, for a line at module level (no function to wrap), its loop moved into one."""
    if site.scope in ("", "<module>"):
        return ("Moved into a function decorated with @tf.function (the loop around this line, "
                f"or its body), they run as one graph{per_call}")
    return f"A tf.function around {site.scope} runs them as one graph{per_call}"


def _around(site: EagerSite) -> str:
    """What a tf.function would wrap to hold this line's calls: the loop that calls its
    function, or, for a line at module level, the loop around it moved into a function."""
    if site.scope in ("", "<module>"):
        return "the loop around this line, moved into a function decorated with @tf.function"
    return f"the code that calls {site.scope} (its loop, or the step that holds it)"


def _few_ops_many_calls(ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    """A line of few ops run many times: a tf.function around it alone would cost about
    what it saves (a call of a tf.function costs about as much as a few eager ops); the
    loop that calls it is what to put in a graph."""
    per_call = site.ops_per_call()
    if per_call is None or per_call >= _MANY_OPS or (site.calls or 0) < _MANY_CALLS \
            or not _calls_tf(site):
        return None
    return (f"This line issues {per_call} eager op(s) per call and ran {site.calls} times (as "
            f"its op counts tell), each op dispatched from Python one by one. Too few per call "
            f"for a tf.function around the line alone to gain much: a tf.function around "
            f"{_around(site)} runs all those calls as one graph." + _measured(ctx, site))


# What a user's line calls in Keras that issues a step's ops, by the library frame it
# called into (its file, its function): a model's or layer's ``__call__`` (in Keras 3's
# ``layers`` package, Keras 2's and tf_keras' ``engine``), an optimizer's update, a
# metric's (Keras 2 wraps update_state in metrics_utils' ``decorated``). Each with what it
# is and what to put in the tf.function.
_TRAINING_STEP = "the forward pass, the loss, tape.gradient and apply_gradients"
_KERAS = r"[/\\](tf_)?keras[/\\](src[/\\])?"
_KERAS_CALLS: tuple[tuple[re.Pattern[str], frozenset[str], str, str], ...] = (
    (re.compile(_KERAS + r"(layers|engine|models)[/\\]"), frozenset({"__call__"}),
     "a Keras model (or layer)", f"for training, the whole step ({_TRAINING_STEP}) in one such "
     f"function; for inference, tf.function(model) or model.predict"),
    (re.compile(_KERAS + r"optimizers[/\\]"), frozenset({"apply_gradients", "apply", "minimize"}),
     "a Keras optimizer", f"the whole training step ({_TRAINING_STEP}) in one such function"),
    (re.compile(_KERAS + r"(metrics[/\\]|utils[/\\]metrics_utils\.py)"), frozenset({"update_state", "decorated"}),
     "a Keras metric", "its update_state in the step's tf.function, with the rest of the step"),
)


def _keras_called(site: EagerSite) -> Optional[tuple[str, str]]:
    """(what the line called in Keras, what to put in the tf.function), None if none."""
    return next(((what, step) for path, functions, what, step in _KERAS_CALLS
                 if site.library_function in functions and path.search(site.library_location)), None)


def _keras_step_call(ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    """A line that calls a Keras model, layer, optimizer or metric eagerly, often (several
    calls, as its op counts tell, or the eager ops of a few): in a tf.function made once,
    with the rest of its step, its ops run as one graph. Keras' own code in the way is why
    the rules for lines that call TF directly do not answer here."""
    per_call = site.ops_per_call()
    often = (site.calls or 0) >= _FEW_CALLS if per_call is not None else site.executions >= _MANY_OPS * 4
    called = _keras_called(site)
    if not often or called is None or site.py_function_executions:
        return None
    what, step = called
    how_many = (f"{per_call} eager ops per call ({site.calls} calls, as its op counts tell)"
                if per_call is not None else f"{site.executions} eager ops")
    return (f"This line calls {what} eagerly: {how_many}, each dispatched from Python one by "
            f"one. In a function decorated with @tf.function, made once outside the loop, they "
            f"run as one graph per call: {step}." + _measured(ctx, site))


def _summary_ops(_ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    if "summary" not in site.location.rsplit("/", 1)[-1]:
        return None
    return (f"These are TensorBoard summaries written eagerly by {site.location_function} "
            f"({site.location.rsplit('/', 1)[-1]}), called from this line: a Keras TensorBoard "
            f"callback's weight histograms (histogram_freq) are such. Writing them less often "
            f"(a larger histogram_freq, or 0) removes most of this eager work.")


def _repeated_ops(ctx: _AdviceContext, site: EagerSite) -> Optional[str]:
    if site.ops_per_call() is not None or site.executions < _MANY_OPS * 4 or not _calls_tf(site):
        return None
    return (f"{site.executions} eager ops were issued here. {_as_one_graph(site, ' per call')}."
            + _measured(ctx, site))


# Ordered rules (context, site) -> advice | None; every rule that answers is kept.
ADVICE_RULES: list[tuple[str, Callable[[_AdviceContext, EagerSite], Optional[str]]]] = [
    ("in_py_function", _in_py_function),
    ("keras_run_eagerly", _keras_run_eagerly),
    ("many_small_ops", _many_small_ops),
    ("few_ops_many_calls", _few_ops_many_calls),
    ("keras_step_call", _keras_step_call),
    ("summary_ops", _summary_ops),
    ("repeated_ops", _repeated_ops),
]


# ---------------------------------------------------------------- ranking

# ``EagerSite.time_source``'s words.
PROFILE_TIME, DISPATCH_TIME = "profile", "dispatch"


def _add_times(sites: dict[tuple[str, int], EagerSite], times: SiteTimes, source: str) -> None:
    for key, site in sites.items():
        if key in times.time_ns:
            site.time_ns = times.time_ns[key]
            site.profiled_executions = times.events.get(key, 0)
            site.time_source = source
        elif key in times.covered:
            site.time_ns = 0
            site.time_note = "in the profile's window, but the profile holds no event of its ops"
        else:
            site.time_note = times.uncovered_note


def _shares(ranked: list[EagerSite], total_ns: int) -> None:
    executions = sum(s.executions for s in ranked)
    for site in ranked:
        site.share = site.executions / executions if executions else 0.0
        if site.time_ns is not None and total_ns:
            site.time_share = site.time_ns / total_ns


def _rank_key(site: EagerSite) -> tuple[int, int, int, str]:
    timed = bool(site.time_ns)
    return (0 if timed else 1, -(site.time_ns or 0) if timed else 0, -site.executions,
            site.user_location)


def eager_sites(model: RunModel) -> list[EagerSite]:
    """The user's lines that issued the run's eager executions, ranked (see the module)."""
    stacks = _Stacks()
    sites = _group(model, stacks)
    source = PROFILE_TIME
    if sites:
        times = join_times(model, lambda i, d, s: _user_key(stacks.frames_of(i, d, s)[0]))
    else:
        (sites, times), source = _group_recorded(model), DISPATCH_TIME
    if not sites:
        return []
    _add_times(sites, times, source)
    ctx = _AdviceContext(_mean_times(model), keras_steps_traced(model))
    for site in sites.values():
        _name_places(site)
        site.calls = _calls_of(site)
        site.advice = [text for _name, rule in ADVICE_RULES
                       if (text := rule(ctx, site)) is not None]
    ranked = sorted(sites.values(), key=_rank_key)
    _shares(ranked, times.total_ns)
    return ranked
