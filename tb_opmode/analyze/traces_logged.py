"""The trace ledger of a run without a dump, from TF's Python line per new trace.

In: a ``RunModel``: its ``trace_lines`` (``read.trace_log``: each new trace's function,
tf.function object and key, in the order TF made them) and its ``functions`` (concrete
function -> calls, from TF's ``execute`` lines). Out: ``run_ledger(model)``: the dumps'
ledger (``traces.ledger``) where the run has a dump, else the ``FunctionLedger`` list
the log alone tells (``tb-opmode record --evidence kernels`` writes no dump).

A log line names the Python function, not the concrete function it made: a trace's
calls are those of ``__inference_<name>_<uid>`` in uid order (TF numbers concrete
functions as it makes them). Where fewer of them ran than were traced, the calls go to
the last traces: the trace never called is the first one, which created variables (TF
traces such a first call again). A trace whose key's scope is ``NO_VARIABLE_CREATION`` is
that second trace, of the same tf.function object as the one before, though TF's line
names another function object (TF 2.21 traces each scope through its own wrapper); TF 2.13
prints no scope: there, a trace with the key of the trace before, which was never called,
is that second trace.
tf.data's wrappers and TF's own variable initializer are not the user's tf.functions
(the dump's ledger leaves them out too). ``strategy.run(f)`` traces MirroredStrategy's
copy of ``f``, whose line names TF's wrapper (``call_for_each_replica.<locals>.wrapped_fn``),
not ``f``; its concrete functions are ``f``'s by name: where one function's that ran
outnumber its own traces by the copies' traces, the copies are its; where ``f`` was only
run so (no line names it), the copies are ``f``, the one name no line claims whose
concrete functions that ran are as many as the copies' traces.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from ..model import RunModel
from ..read.trace_log import TraceLine, TraceParam
from .traces import KERAS_STEP_NAMES, RECORD_TIMER, FunctionLedger, TraceEntry, args_of_key, ledger
from .traces_causes import CauseContext, EarlierTrace, changed_of

__all__ = ["run_ledger", "logged_ledger"]

# Traces TF makes for itself, by the first test of the line's qualified name that holds.
_NOT_THE_USERS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("tf.data's function wrapper", lambda q: q.startswith("StructuredFunctionWrapper.")),
    ("TF's variable initializer", lambda q: "._initialize_uninitialized_variables." in q),
    ("a multi-device iterator's functions", lambda q: q.startswith("_PerDeviceGenerator.")),
)
_SAME_KEY = ("TF's log printed the same key for this trace as for the one before: a captured "
             "Python object or a tf.function option may have changed")


def run_ledger(model: RunModel) -> list[FunctionLedger]:
    """The run's trace ledger: its dumps' where it has any, else its log's."""
    return ledger(model) if model.dumps else logged_ledger(model.trace_lines, model.functions)


def _users(line: TraceLine) -> bool:
    return not any(test(line.qualname) for _what, test in _NOT_THE_USERS)


# A concrete function's name: its Python function's name and its uid, after the last
# underscore (a Python name with digits after an underscore, ``step_1``, stays whole).
_CONCRETE = re.compile(r"__inference_(.+)_(\d+)")


def _concrete_calls(name: str, functions: Counter[str]) -> list[tuple[str, int]]:
    """(concrete function, calls) of the Python function ``name`` that ran, in uid order."""
    ran = [(int(m.group(2)), f) for f in functions if (m := _CONCRETE.fullmatch(f)) and m.group(1) == name]
    return [(f, functions[f]) for _uid, f in sorted(ran)]


# The qualified name of the Python function a strategy copy of a tf.function traces.
_STRATEGY_COPY = "call_for_each_replica.<locals>.wrapped_fn"


def _is_copy(line: TraceLine) -> bool:
    return line.qualname == _STRATEGY_COPY


def _owner(lines: list[TraceLine]) -> TraceLine:
    """The line that names a function's traces: its first not made by a strategy copy."""
    return next((line for line in lines if not _is_copy(line)), lines[0])


def _entries(lines: list[TraceLine], functions: Counter[str], name: str) -> list[TraceEntry]:
    """One entry per trace line, each with the concrete function and calls it got
    (``name``: the one its concrete functions bear)."""
    ran = _concrete_calls(name, functions)
    uncalled = max(len(lines) - len(ran), 0)
    named = [(name, 0)] * uncalled + ran[-len(lines):]
    return [TraceEntry(graph, f"log:{line.address}:{i}", calls, args=args_of_key(line.params),
                       tracing_s=line.seconds, tracing_from=RECORD_TIMER if line.seconds is not None else "")
            for i, (line, (graph, calls)) in enumerate(zip(lines, named))]


# Keras's step functions, by the method that made them (its qualified name holds it),
# else as a step of unknown kind: the log prints no path to tell Keras from the user.
_KERAS_MAKERS = (("make_train_function", "Keras train step"), ("make_test_function", "Keras evaluate step"),
                 ("make_predict_function", "Keras predict step"))
_KERAS_OWNERS = ("Trainer.", "Model.")


def _display_name(line: TraceLine) -> str:
    """A Keras step function as the dump's ledger calls it ("Keras train step"), with its
    Python name; any other function by its Python name."""
    name, qualname = line.name, line.qualname
    if name not in KERAS_STEP_NAMES or not any(o in qualname for o in _KERAS_OWNERS):
        return name
    words = next((w for maker, w in _KERAS_MAKERS if maker in qualname), "Keras step")
    return f"{words} ({name})"


def _variables_retrace(line: TraceLine, previous: TraceLine | None, before: TraceEntry | None) -> bool:
    """Whether ``line`` is TF's second trace of a first call that created variables, of the
    same tf.function object: its scope says so (NO_VARIABLE_CREATION), or the same key
    comes right after a trace never called (a new object's trace is the one its call made,
    so it is called), at the same address, or, TF 2.13 printing no scope, through another
    wrapper at another address."""
    if line.scope == "NO_VARIABLE_CREATION":
        return True
    if previous is None or before is None or before.calls or line.params != previous.params:
        return False
    return line.address == previous.address or not (line.scope or previous.scope)


# A trace's key as the ledger compares them: its context as printed, its parameters.
_Key = tuple[str, tuple[TraceParam, ...]]


def _new_object(line: TraceLine, previous: TraceLine | None, before: TraceEntry | None,
                keys: dict[str, set[_Key]]) -> bool:
    """Whether ``line`` is the first trace of a tf.function object: an address not seen
    before, or one seen with this very key, context included (``keys``: per address, the
    keys traced since its object's first trace). A tf.function traces a key once; so the
    same key again is another object Python put at a freed object's address (a
    tf.function made in a loop), except for TF's second trace of a first call that created
    variables (``_variables_retrace``). The same parameters in another context (a
    distribution strategy's scope) are the same object's new key."""
    if _variables_retrace(line, previous, before):
        return False
    return line.address not in keys or (line.context, line.params) in keys[line.address]


def _context_changed(line: TraceLine, keys: set[_Key]) -> str:
    """Why the object traced parameters it had traced before: the key's context fields
    that differ from such a trace's ("in_cross_replica_context=False -> True"); "" if none."""
    for context, params in keys:
        if params == line.params and context != line.context:
            was, now = _context_fields(context), _context_fields(line.context)
            changed = [f"{k}={was.get(k, '?')} -> {v}" for k, v in now.items() if was.get(k) != v]
            return (f"called in another context, the same arguments: TF's key differs in its "
                    f"context ({', '.join(changed) or line.context}): a distribution strategy's "
                    f"scope or replica, a device or an XLA context makes a trace of its own")
    return ""


def _context_fields(context: str) -> dict[str, str]:
    """``EagerContext(a=1, b=())`` as {"a": "1", "b": "()"} (top-level fields only)."""
    inner = context[context.find("(") + 1:-1] if context.endswith(")") else context
    return dict(field.partition("=")[::2] for field in inner.split(", ") if "=" in field)


def _function(lines: list[TraceLine], functions: Counter[str], name: str = "") -> FunctionLedger:
    """The ledger of one Python function's traces (``lines``, in order); ``name``: the
    one its concrete functions bear, where its lines do not say it."""
    owner = _owner(lines)
    name = name or owner.name
    fn = FunctionLedger(name, _display_name(owner) if name == owner.name else name, "")
    keys: dict[str, set[_Key]] = {}
    earlier: list[EarlierTrace] = []  # of the current tf.function object
    for i, (line, entry) in enumerate(zip(lines, _entries(lines, functions, name))):
        before = fn.traces[-1] if i else None
        entry.first_of_object = _new_object(line, lines[i - 1] if i else None, before, keys)
        if entry.first_of_object:
            keys[line.address] = set()
        why = _context_changed(line, keys.get(line.address, set())) or _SAME_KEY
        keys.setdefault(line.address, set()).add((line.context, line.params))
        verdict = changed_of(CauseContext(
            first=before is None, first_of_object=entry.first_of_object, strategy_copy=_is_copy(line),
            previous_first_of_object=bool(before and before.first_of_object),
            previous_calls=before.calls if before else 0, unrecorded_why=why,
            key=line.params, previous_key=lines[i - 1].params if i else None,
            scope=line.scope, previous_scope=lines[i - 1].scope if i else "", earlier=earlier))
        entry.changed, entry.note = verdict.changed, verdict.note
        earlier = [*([] if entry.first_of_object else earlier), EarlierTrace(entry.graph, line.params)]
        fn.traces.append(entry)
        fn.objects += int(entry.first_of_object)
    return fn


def logged_ledger(lines: list[TraceLine], functions: Counter[str]) -> list[FunctionLedger]:
    """Every Python function TF's log says was traced (tf.data's and TF's own left out),
    the most traced first; ``functions``: the run's calls per concrete function.

    One whose traces Python never called, where the log does count calls, is nested: a
    tf.function called inside another is traced, and runs inlined in the outer graph,
    never through ``execute`` (Keras 3's ``one_step_on_data``). The log cannot tell it
    from a function only traced (``get_concrete_function``), a rarity; its "0 calls" was
    false for the common case."""
    by_function: dict[str, list[TraceLine]] = {}
    for line in filter(_users, lines):
        by_function.setdefault(line.qualname, []).append(line)
    names = {_STRATEGY_COPY: _copies_to_their_function(by_function, functions, lines)}
    out = [_function(mine, functions, names.get(q, "")) for q, mine in by_function.items()]
    for fn in out:
        fn.nested = bool(functions) and fn.calls == 0
    out.sort(key=lambda f: (-len(f.traces), -f.calls, f.name))
    return out


def _copies_to_their_function(by_function: dict[str, list[TraceLine]], functions: Counter[str],
                              lines: list[TraceLine]) -> str:
    """The strategy copies' traces put with the one function whose concrete functions that
    ran outnumber its own traces by the copies' (TF names a copy's concrete functions after
    the tf.function it copies), in log order. Where none does, the copies are left apart,
    and the name their concrete functions bear is returned: the one no line names with as
    many that ran as the copies' traces ("" where not exactly one)."""
    copies = by_function.get(_STRATEGY_COPY)
    if not copies:
        return ""
    owners = [q for q, mine in by_function.items() if q != _STRATEGY_COPY
              and len(_concrete_calls(mine[0].name, functions)) - len(mine) == len(copies)]
    if len(owners) != 1:
        return _unclaimed_name(functions, lines, len(copies))
    merged = {id(line) for line in by_function.pop(_STRATEGY_COPY) + by_function[owners[0]]}
    by_function[owners[0]] = [line for line in lines if id(line) in merged]  # in log order
    return ""


def _unclaimed_name(functions: Counter[str], lines: list[TraceLine], traces: int) -> str:
    """The one name of concrete functions that ran (``__inference_<name>_<uid>``) that no
    trace line names, with ``traces`` of them; "" where not exactly one."""
    claimed = {line.name for line in lines}
    ran = Counter(m.group(1) for f in functions if (m := _CONCRETE.fullmatch(f)))
    found = [name for name, n in ran.items() if name not in claimed and n == traces]
    return found[0] if len(found) == 1 else ""
