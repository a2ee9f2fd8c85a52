"""Why a tf.function traced again: the cause of each trace after a function's first, and
the advice each cause calls for.

In: ``CauseContext`` (a trace, the earlier traces of the same tf.function object, and
what the run records of their arguments). Out: ``changed_of``: the trace's ``changed``
list (``{"cause": word, ...}``; the words are ``CAUSES``) and a note; ``ADVICE``: what
to change for each cause, said at the call site.

The rules are an ordered list of named rules ``(context) -> Verdict | None``; the first
that decides wins:

- the first trace of a distribution strategy's copy of a tf.function (``strategy.run(f)``
  clones ``f`` once per strategy) changed nothing the user made: a note says so, and it
  is no cause (not ``new_function_object``, whose advice would be false);
- the first trace of a Python function changed nothing;
- where TF's log printed both traces' keys, the first's scope ``VARIABLE_CREATION`` and
  this one's ``NO_VARIABLE_CREATION`` for the same parameters: the first trace created
  variables and TF traced the call again without creating them (Keras 3's
  ``one_step_on_data``, traced twice inside one trace of ``multi_step_on_iterator``); the
  same note as below, and no cause;
- a function traced inside another's trace, where the log's keys show its parameters
  changed: that change (as below); else ``unknown`` (its outer function's retrace, or,
  inside the same outer trace, variables created or other arguments);
- a trace whose first op was made under ``_initialize`` is the first of its tf.function
  object: the same code traced by a new ``tf.function`` (``new_function_object``);
- the second trace of a first call that created variables (the first trace never
  called, its object's next trace made in the same call) changed nothing: a note says
  so, and it is no cause;
- where TF's log printed the keys (its line per new trace): what differs, each
  ``dtype``, ``shape`` (argument and dimension) and ``python_value`` (before, after);
- where the tensor arguments are recorded: a ``dtype`` changed, a ``shape`` changed
  (which argument; which dimension where the shapes are recorded, not only the sizes),
  or, the same tensors and a Python argument, a ``python_value``;
- else ``unknown``, with why and how to find out.

A call traces when its arguments match none of its tf.function's traces, not only when
they differ from the last one's: the changes are told against the *nearest* earlier
trace of the same object (the fewest differences; of equals, the latest). A call with a
batch size traced before and a new Python value changed the value, not the shape, though
the trace before had another batch size; a note names that nearest trace.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..read.trace_log import TraceParam, tensor_specs
from ..vocab import NOT_RECORDED

__all__ = ["CAUSES", "ADVICE", "ArgSpec", "EarlierTrace", "CauseContext", "Verdict", "CAUSE_RULES",
           "changed_of", "NOT_RECORDED", "VARIABLES_NOTE", "STRATEGY_COPY_NOTE"]

CAUSES = ("shape", "dtype", "python_value", "new_function_object", "unknown")

ADVICE = {
    "shape": ("give the tf.function an input_signature with None for the dimensions that "
              "change (tf.TensorSpec([None, ...])), or reduce_retracing=True"),
    "dtype": "keep one dtype for the argument (cast it before the call)",
    "python_value": ("pass a tensor (tf.constant(value)) instead of a Python number: each new "
                     "value is a new trace"),
    "new_function_object": ("create the tf.function once, outside the loop, and call that "
                            "object: a new tf.function object traces anew"),
    "unknown": "",
}


@dataclass(frozen=True)
class ArgSpec:
    """What the run recorded of one tensor argument on the call that traced."""

    name: str
    dtype: str = ""                       # "" where not recorded
    shape: tuple[int, ...] | None = None  # None where not recorded
    size: int | None = None               # elements, where recorded


@dataclass(frozen=True)
class EarlierTrace:
    """An earlier trace of the same tf.function object, as the run records it."""

    name: str                                     # its graph's name
    key: tuple[TraceParam, ...] | None = None     # its key in TF's log (None: no line)
    specs: list[ArgSpec] | None = None            # its tensor arguments (None: not recorded)


@dataclass
class CauseContext:
    """One trace and the ones before it (of the same Python function)."""

    first: bool                         # the Python function's first trace
    first_of_object: bool               # made under ``_initialize``
    strategy_copy: bool = False         # by MirroredStrategy's clone of the tf.function
    nested: bool = False                # traced inside another function's trace
    outer: str = ""                     # that function's name
    same_outer: bool = False            # the trace before was made inside the same outer trace
    previous_first_of_object: bool = False
    previous_calls: int = 0
    tensor_args: list[str] = field(default_factory=list)
    python_args: list[str] = field(default_factory=list)
    specs: list[ArgSpec] | None = None            # this trace's, None: not recorded
    previous_specs: list[ArgSpec] | None = None
    unrecorded_why: str = ""            # why specs are not recorded, and how to get them
    # the trace's key as TF's log line printed it, and the previous trace's (None: no line)
    key: tuple[TraceParam, ...] | None = None
    previous_key: tuple[TraceParam, ...] | None = None
    # the keys' ScopeType names ("VARIABLE_CREATION"; "": not printed, as in TF 2.13)
    scope: str = ""
    previous_scope: str = ""
    # every earlier trace of the same tf.function object, oldest first, the one before
    # last; empty: only the one before is known (``previous_key``, ``previous_specs``)
    earlier: list[EarlierTrace] = field(default_factory=list)


@dataclass
class Verdict:
    changed: list[dict[str, Any]]
    note: str = ""


Rule = Callable[[CauseContext], "Verdict | None"]
Shape = tuple[int | None, ...] | None

# Why TF traced one call twice, however the run shows it (no cause: nothing to change).
VARIABLES_NOTE = ("TF traced this function's first call twice because the first trace created "
                  "variables (tf.Variable inside the function); the first trace is never called")
_VARIABLES_LOGGED = ("TF's log shows it: the first trace was made allowing variables to be "
                     "created, this one for the same arguments without")


def _first_trace(ctx: CauseContext) -> Verdict | None:
    return Verdict([]) if ctx.first else None


def _variables_in_the_log(ctx: CauseContext) -> Verdict | None:
    """The keys' scope went from VARIABLE_CREATION to NO_VARIABLE_CREATION, the parameters
    the same: TF's second trace of a first call whose first trace created variables."""
    if (ctx.previous_scope, ctx.scope) != ("VARIABLE_CREATION", "NO_VARIABLE_CREATION") \
            or ctx.key is None or ctx.key != ctx.previous_key:
        return None
    return Verdict([], f"{VARIABLES_NOTE} ({_VARIABLES_LOGGED})")


def _nested_in_the_log(ctx: CauseContext) -> Verdict | None:
    """A nested function's keys in TF's log differ in a parameter: that is why."""
    return _from_log(ctx) if ctx.nested else None


def _nested(ctx: CauseContext) -> Verdict | None:
    outer = ctx.outer or "another tf.function"
    if not ctx.nested:
        return None
    if ctx.same_outer:  # the outer function was not traced again: it is not why
        return Verdict([{"cause": "unknown", "why": (
            f"traced again inside the same trace of {outer}: TF traces a tf.function twice when "
            "its first trace created variables (as Keras's step does), or it was called with "
            "other arguments there; the dump cannot tell which")}])
    return Verdict([{"cause": "unknown", "why": f"traced inside a trace of {outer}: "
                     "it is traced again whenever that function is"}])


# Why a strategy's copy traces, where the user made one tf.function (no cause).
STRATEGY_COPY_NOTE = ("strategy.run traced this function's Python code in a copy of the tf.function "
                      "that MirroredStrategy makes once per strategy (call_for_each_replica), apart "
                      "from the traces of direct calls; it traces again only as the original would")


def _strategy_copy(ctx: CauseContext) -> Verdict | None:
    return Verdict([], STRATEGY_COPY_NOTE) if ctx.strategy_copy and ctx.first_of_object else None


def _new_object(ctx: CauseContext) -> Verdict | None:
    if not ctx.first_of_object:
        return None
    return Verdict([{"cause": "new_function_object",
                     "why": "the same code traced by a new tf.function object (its first trace)"}])


def _variable_creation(ctx: CauseContext) -> Verdict | None:
    if not (ctx.previous_first_of_object and ctx.previous_calls == 0):
        return None
    return Verdict([], VARIABLES_NOTE)


def _candidates(ctx: CauseContext) -> list[EarlierTrace]:
    """The earlier traces to compare with, oldest first."""
    return ctx.earlier or [EarlierTrace("", ctx.previous_key, ctx.previous_specs)]


Changes = list[dict[str, Any]]


def _nearest(ctx: CauseContext, changes_of: Callable[[EarlierTrace], Changes | None],
             ) -> tuple[list[EarlierTrace], Changes] | None:
    """The earlier traces this one differs from least (``changes_of``: what differs; None:
    not comparable), and their changes together, one per cause and argument (the latest
    trace's first): to match none of them, the call differed from each. The traces are
    those the changes are told against. None: no trace to compare with."""
    scored = [(trace, changes) for trace in reversed(_candidates(ctx))
              if (changes := changes_of(trace)) is not None]
    if not scored:
        return None
    fewest = min(len(changes) for _t, changes in scored)
    union: dict[tuple[str, str], tuple[EarlierTrace, dict[str, Any]]] = {}
    for trace, changes in scored:
        for c in changes if len(changes) == fewest else []:
            union.setdefault((c["cause"], str(c.get("arg", ""))), (trace, c))
    told = list({id(t): t for t, _c in union.values()}.values())
    if not union:  # equal to an earlier trace: that one
        told = [next(t for t, changes in scored if not changes)]
    return told, [c for _t, c in union.values()]


def _nearest_note(ctx: CauseContext, nearest: list[EarlierTrace]) -> str:
    """Where the nearest earlier traces are not just the one before: which they are."""
    if not ctx.earlier or [t.name for t in nearest] == [ctx.earlier[-1].name]:
        return ""
    names = [t.name for t in reversed(nearest) if t.name]
    if not names:
        return ""
    which = "the earlier trace" if len(names) == 1 else "the earlier traces"
    return f"compared with {' and '.join(names)}, {which} nearest to this call's arguments"


def _spec_changes(ctx: CauseContext, trace: EarlierTrace) -> Changes | None:
    """Per tensor argument of both traces that differs: its dtype change, else its shape's."""
    if trace.specs is None or ctx.specs is None:
        return None
    was = {a.name: a for a in trace.specs}
    out: Changes = []
    for now in ctx.specs:
        before = was.get(now.name)
        if before is None:
            continue
        if before.dtype and now.dtype and before.dtype != now.dtype:
            out.append({"cause": "dtype", "arg": now.name, "before": before.dtype, "after": now.dtype})
        elif (change := _shape_change(before, now)) is not None:
            out.append(change)
    return out


def _recorded(ctx: CauseContext) -> bool:
    """Whether this trace's tensors and an earlier trace's are recorded."""
    return ctx.specs is not None and any(t.specs is not None for t in _candidates(ctx))


def _tensor_change(name: str, was: tuple[str, Shape], now: tuple[str, Shape]) -> dict[str, Any] | None:
    """A dtype or shape change of one tensor of two keys (None: the same, or unknown)."""
    (dtype_was, shape_was), (dtype_now, shape_now) = was, now
    if dtype_was != dtype_now:
        return {"cause": "dtype", "arg": name, "before": dtype_was, "after": dtype_now}
    if shape_was is None or shape_now is None or shape_was == shape_now:
        return None
    change: dict[str, Any] = {"cause": "shape", "arg": name, "before": list(shape_was),
                              "after": list(shape_now)}
    dims = [i for i, (a, b) in enumerate(zip(shape_was, shape_now)) if a != b]
    if len(shape_was) == len(shape_now) and dims:
        change["dim"] = dims[0]
    return change


def _key_change(was: TraceParam, now: TraceParam) -> list[dict[str, Any]]:
    """What differs between one parameter of two keys: its dtype, shape or Python value;
    a nested spec (an iterator's, a tuple's) element by element, as ``name[i]``."""
    if now.kind == "python" and was.kind == "python":
        return [] if was.value == now.value else [
            {"cause": "python_value", "arg": now.name, "before": was.value, "after": now.value}]
    before, after = tensor_specs(was), tensor_specs(now)
    if len(before) != len(after):
        return []
    changes = (_tensor_change(name, (d0, s0), (d1, s1))
               for (name, d0, s0), (_n, d1, s1) in zip(before, after))
    return [c for c in changes if c is not None]


def _key_changes(previous: tuple[TraceParam, ...], key: tuple[TraceParam, ...]) -> list[dict[str, Any]]:
    before = {p.name: p for p in previous}
    return [c for now in key if now.name in before for c in _key_change(before[now.name], now)]


_ORDER = ("dtype", "shape", "python_value")


def _key_changes_of(ctx: CauseContext) -> Callable[[EarlierTrace], Changes | None]:
    key = ctx.key
    return lambda trace: None if trace.key is None or key is None else _key_changes(trace.key, key)


def _from_log(ctx: CauseContext) -> Verdict | None:
    """TF's log printed the keys: what differs from the nearest earlier traces' keys is the
    cause, every change (dtypes, then shapes, then Python values). An earlier key equal to
    this one explains nothing: the rules after decide."""
    found = _nearest(ctx, _key_changes_of(ctx)) if ctx.key is not None else None
    if found is None or not found[1]:
        return None
    nearest, changed = found
    return Verdict(sorted(changed, key=lambda c: _ORDER.index(c["cause"])), _nearest_note(ctx, nearest))


def _from_specs(ctx: CauseContext, cause: str) -> Verdict | None:
    """The recorded tensors' changes of one kind against the nearest earlier traces."""
    found = _nearest(ctx, lambda trace: _spec_changes(ctx, trace))
    if found is None:
        return None
    nearest, changed = found
    mine = [c for c in changed if c["cause"] == cause]
    return Verdict(mine, _nearest_note(ctx, nearest)) if mine else None


def _dtype(ctx: CauseContext) -> Verdict | None:
    return _from_specs(ctx, "dtype")


def _shape_change(was: ArgSpec, now: ArgSpec) -> dict[str, Any] | None:
    if was.shape is not None and now.shape is not None:
        if was.shape == now.shape:
            return None
        dims = [i for i, (a, b) in enumerate(zip(was.shape, now.shape)) if a != b]
        out: dict[str, Any] = {"cause": "shape", "arg": now.name, "before": list(was.shape),
                               "after": list(now.shape)}
        if len(was.shape) == len(now.shape) and dims:
            out["dim"] = dims[0]
        return out
    if was.size is not None and now.size is not None and was.size != now.size:
        return {"cause": "shape", "arg": now.name, "before_size": was.size, "after_size": now.size,
                "why": "the element count changed; which dimension is not recorded (a SHAPE dump "
                       "records the shapes)"}
    return None


def _shape(ctx: CauseContext) -> Verdict | None:
    return _from_specs(ctx, "shape")


def _python_value(ctx: CauseContext) -> Verdict | None:
    """The tensors equal an earlier trace's, and the function has Python arguments."""
    found = _nearest(ctx, lambda trace: _spec_changes(ctx, trace)) if ctx.python_args else None
    if found is None or found[1]:
        return None
    nearest, _same = found
    return Verdict([{"cause": "python_value", "arg": name,
                     "why": "the tensors are the same as in an earlier trace; a Python argument is "
                            "part of the trace's key"} for name in ctx.python_args],
                   _nearest_note(ctx, nearest))


def _unknown(ctx: CauseContext) -> Verdict | None:
    why = ctx.unrecorded_why if not _recorded(ctx) else (
        "the recorded tensor arguments are an earlier trace's and the function has no Python argument: "
        "a captured Python object or a tf.function option may have changed")
    return Verdict([{"cause": "unknown", "why": why}])


CAUSE_RULES: list[tuple[str, Rule]] = [
    ("strategy_copy", _strategy_copy),
    ("first_trace", _first_trace),
    ("variable_creation_in_the_log", _variables_in_the_log),
    ("nested_key_in_the_log", _nested_in_the_log),
    ("nested", _nested),
    ("new_function_object", _new_object),
    ("variable_creation", _variable_creation),
    ("key_in_the_log", _from_log),
    ("dtype", _dtype),
    ("shape", _shape),
    ("python_value", _python_value),
    ("unknown", _unknown),
]


def changed_of(ctx: CauseContext) -> Verdict:
    """The first rule's verdict (``unknown`` decides every context)."""
    for _name, rule in CAUSE_RULES:
        verdict = rule(ctx)
        if verdict is not None:
            return verdict
    raise AssertionError("the unknown rule decides every context")
