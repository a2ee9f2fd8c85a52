"""Why a tf.function traced again: the cause of each trace after a function's first, and
the advice each cause calls for.

In: ``CauseContext`` (a trace, the trace of the same Python function before it, and
what the run records of their arguments). Out: ``changed_of``: the trace's ``changed``
list (``{"cause": word, ...}``; the words are ``CAUSES``) and a note; ``ADVICE``: what
to change for each cause, said at the call site.

The rules are an ordered list of named rules ``(context) -> Verdict | None``; the first
that decides wins:

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
- where TF's log printed both traces' keys (its line per new trace): what differs, a
  ``dtype``, a ``shape`` (argument and dimension) or a ``python_value`` (before, after);
- where both traces' tensor arguments are recorded: a ``dtype`` changed, a ``shape``
  changed (which argument; which dimension where the shapes are recorded, not only
  the sizes), or, the same tensors and a Python argument, a ``python_value``;
- else ``unknown``, with why and how to find out.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..read.trace_log import TraceParam, tensor_specs
from ..vocab import NOT_RECORDED

__all__ = ["CAUSES", "ADVICE", "ArgSpec", "CauseContext", "Verdict", "CAUSE_RULES", "changed_of",
           "NOT_RECORDED", "VARIABLES_NOTE"]

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


@dataclass
class CauseContext:
    """One trace and the one before it (of the same Python function)."""

    first: bool                         # the Python function's first trace
    first_of_object: bool               # made under ``_initialize``
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


def _new_object(ctx: CauseContext) -> Verdict | None:
    if not ctx.first_of_object:
        return None
    return Verdict([{"cause": "new_function_object",
                     "why": "the same code traced by a new tf.function object (its first trace)"}])


def _variable_creation(ctx: CauseContext) -> Verdict | None:
    if not (ctx.previous_first_of_object and ctx.previous_calls == 0):
        return None
    return Verdict([], VARIABLES_NOTE)


def _by_argument(ctx: CauseContext) -> list[tuple[ArgSpec, ArgSpec]]:
    before = {a.name: a for a in ctx.previous_specs or []}
    return [(before[a.name], a) for a in ctx.specs or [] if a.name in before]


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


def _from_log(ctx: CauseContext) -> Verdict | None:
    """TF's log printed both traces' keys: what differs is the cause (a dtype first, then
    a shape, then a Python value: the order the dump's rules decide in)."""
    if ctx.key is None or ctx.previous_key is None:
        return None
    changed = _key_changes(ctx.previous_key, ctx.key)
    first = next((cause for cause in ("dtype", "shape", "python_value")
                  if any(c["cause"] == cause for c in changed)), None)
    return Verdict([c for c in changed if c["cause"] == first]) if first else None


def _dtype(ctx: CauseContext) -> Verdict | None:
    if ctx.specs is None or ctx.previous_specs is None:
        return None
    changed = [{"cause": "dtype", "arg": now.name, "before": was.dtype, "after": now.dtype}
               for was, now in _by_argument(ctx) if was.dtype and now.dtype and was.dtype != now.dtype]
    return Verdict(changed) if changed else None


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
    if ctx.specs is None or ctx.previous_specs is None:
        return None
    changed = [c for was, now in _by_argument(ctx) if (c := _shape_change(was, now)) is not None]
    return Verdict(changed) if changed else None


def _python_value(ctx: CauseContext) -> Verdict | None:
    if ctx.specs is None or ctx.previous_specs is None or not ctx.python_args:
        return None
    return Verdict([{"cause": "python_value", "arg": name,
                     "why": "the tensors are the same as in the trace before; a Python argument is "
                            "part of the trace's key"} for name in ctx.python_args])


def _unknown(ctx: CauseContext) -> Verdict | None:
    why = ctx.unrecorded_why if ctx.specs is None or ctx.previous_specs is None else (
        "the recorded tensor arguments are the same and the function has no Python argument: "
        "a captured Python object or a tf.function option may have changed")
    return Verdict([{"cause": "unknown", "why": why}])


CAUSE_RULES: list[tuple[str, Rule]] = [
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
