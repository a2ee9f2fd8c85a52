"""What a dump's op-creation stacks say of a tf.function's traces.

In: a ``DumpSet`` (its graphs, their ops' creation stacks, its source files). Out:
``TraceFacts`` per graph that is a trace of a tf.function (a concrete function): its
Python function's name and place (``path``, ``def`` line), whether its first op was
created under ``_initialize`` (the first trace of its tf.function object), whether it
is a distribution strategy's copy of the user's tf.function (``strategy.run(f)``, whose
arguments are then named by the user's parameters), whether TF itself made it
(``initialize_variables``) or tf.data did, and its arguments (the ``Placeholder`` ops
the trace made for them, captures left out).

Every tf.function trace passes through the tracing entry (``_create_concrete_function``,
older TF ``_create_graph_function``); a tf.cond or while branch is made by
``func_graph_from_py_func`` under cond_v2 / while_v2 instead, after that entry.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..read.tfdbg import DumpSet, GraphInfo
from .capture_frames import is_capture_frame

__all__ = ["TraceFacts", "trace_facts", "parameters_of"]

Frame = tuple[str, int, str]

# TF 2.13 makes a trace's argument placeholders in _maybe_define_function itself, before
# the function graph is built: the first op of its graphs has no other entry frame.
_TRACE_ENTRIES = frozenset({"_create_concrete_function", "_create_graph_function",
                            "_maybe_define_function"})
_TRACE_CALLS = frozenset({"trace_function", "_maybe_define_function", "_define_function_with_shape_relaxation"})
_FUNC_GRAPH = "func_graph_from_py_func"
_CALL_FILES = frozenset({"polymorphic_function.py", "def_function.py"})
# TF's own functions and tf.data's: traced by TF, never a user's tf.function.
_TF_OWN = frozenset({"_initialize_uninitialized_variables"})
# (a distribution strategy's iterator over several devices traces _init_func, _next_func
# and _finalize_func of its own)
_DATA_FILES = frozenset({"structured_function.py", "dataset_ops.py", "multi_device_iterator_ops.py"})
_ARGUMENT_MAKERS = frozenset({"placeholder_arguments", "_get_defun_input",
                              "_get_defun_inputs_from_args", "_get_defun_inputs"})
# How many of a graph's ops are searched for a frame in the function's own body.
_BODY_SEARCH = 400


@dataclass
class TraceFacts:
    """One graph that is a trace of a tf.function, as its creation stacks tell it."""

    graph_id: str
    python_name: str
    path: str = ""
    line: int = 0               # the ``def`` line where the source says it, else a body line
    first_of_object: bool = False
    args: list[str] = field(default_factory=list)
    nested: bool = False        # made inside another trace (its outer graph is named)
    keras: str = ""             # "train", "evaluate" or "predict": made by Keras' fit, ...
    strategy_copy: bool = False  # MirroredStrategy's clone of a tf.function given to strategy.run


# The Keras method whose call traced a step function, and what the step does.
_KERAS_CALLERS = {"fit": "train", "train_on_batch": "train", "evaluate": "evaluate",
                  "test_on_batch": "evaluate", "predict": "predict", "predict_on_batch": "predict"}


def _keras_kind(frames: list[Frame]) -> str:
    return next((_KERAS_CALLERS[f[2]] for f in reversed(frames)
                 if f[2] in _KERAS_CALLERS and re.search(r"[/\\](tf_)?keras[/\\]", f[0])), "")


def _frames(dump: DumpSet, stack: Sequence[str]) -> list[Frame]:
    return [f for f in (dump.frame(i) for i in stack) if f is not None]


def _last(frames: list[Frame], names: frozenset[str]) -> int:
    return max((i for i, f in enumerate(frames) if f[2] in names), default=-1)


def _is_trace(frames: list[Frame]) -> bool:
    """Whether the innermost graph-making frame of a graph's first op is a tf.function's
    tracing entry (a branch of tf.cond or a loop body is made by func_graph_from_py_func
    called from elsewhere)."""
    entry = _last(frames, _TRACE_ENTRIES)
    if entry < 0:
        return False
    graphs = [i for i, f in enumerate(frames) if f[2] == _FUNC_GRAPH and i > entry]
    return all(frames[i - 1][2] in _TRACE_ENTRIES for i in graphs)


def _innermost_call(frames: list[Frame], methods: tuple[str, ...] = ("__call__", "get_concrete_function")
                    ) -> int:
    """The index of the innermost tf.function method of ``methods`` on a stack, -1 if none."""
    return max((i for i, f in enumerate(frames) if f[2] in methods
                and os.path.basename(f[0]) in _CALL_FILES), default=-1)


def _call_frames(frames: list[Frame]) -> list[Frame]:
    """The frames between the innermost tf.function ``__call__`` (or
    ``get_concrete_function``) and the tracing entry below it."""
    start = max(_innermost_call(frames), 0)
    end = _last(frames, _TRACE_CALLS | _TRACE_ENTRIES)
    return frames[start:end + 1] if end >= start else frames[start:]


# ``strategy.run(f)`` with a tf.function ``f``: MirroredStrategy's call_for_each_replica
# clones ``f`` (``Function._clone``, once per strategy) around a wrapper of its Python
# function and calls the clone, whose traces are not ``f``'s own.
_STRATEGY_COPIER = ("mirrored_run.py", "call_for_each_replica")
_CALL_WRAPPERS = frozenset({"traceback_utils.py"})


def _strategy_copy(frames: list[Frame]) -> bool:
    """Whether the tf.function call that traced is call_for_each_replica's call of its
    clone: the frame that made the call (past TF's error-handling wrapper and
    ``tb-opmode record``'s of ``Function.__call__``) is that one."""
    call = _innermost_call(frames, ("__call__",))
    if call < 0:
        return False
    caller = next((f for f in reversed(frames[:call])
                   if os.path.basename(f[0]) not in _CALL_WRAPPERS and not is_capture_frame(f[0])), None)
    return caller is not None and (os.path.basename(caller[0]), caller[2]) == _STRATEGY_COPIER


def _made_by_tf(frames: list[Frame]) -> bool:
    return any(f[2] in _TF_OWN or os.path.basename(f[0]) in _DATA_FILES for f in frames)


def _is_body(func: str, name: str) -> bool:
    # AutoGraph's converted lambda keeps the lambda's lines but not its name.
    return func == name or (name == "<lambda>" and func in ("", "<lambda>"))


def _below_entry(dump: DumpSet, stack: Sequence[str]) -> list[Frame]:
    """The frames below the innermost tracing entry, outermost first (all of them when there
    is no entry). Resolved from the innermost frame out, as far as the entry: the frames
    above it (the caller's loop, Keras's fit) are most of a stack."""
    below: list[Frame] = []
    for frame_id in reversed(stack):
        frame = dump.frame(frame_id)
        if frame is None:
            continue
        if frame[2] in _TRACE_ENTRIES:
            break
        below.append(frame)
    below.reverse()
    return below


def _body_line(dump: DumpSet, graph: GraphInfo) -> tuple[str, int]:
    """The least line of the function's own frame (its name, below the tracing entry)
    among the graph's ops' stacks."""
    seen: set[tuple[str, ...]] = set()
    best: tuple[str, int] = ("", 0)
    for n, op in enumerate(graph.ops.values()):
        if n >= _BODY_SEARCH:
            break
        if op.stack in seen:
            continue
        seen.add(op.stack)
        for path, line, func in _below_entry(dump, op.stack):
            if _is_body(func, graph.name) and (not best[1] or line < best[1]):
                best = (path, line)
                break
    return best


def _def_line(dump: DumpSet, path: str, line: int, name: str) -> int:
    """The ``def`` line above a body line, where the dump holds the source file; a
    lambda's own line."""
    lines = next((text for (_host, p), text in dump.source_lines.items() if p == path), None)
    if lines is None or not 0 < line <= len(lines) or name == "<lambda>":
        return line
    pattern = re.compile(rf"\s*(async\s+)?def\s+{re.escape(name)}\s*\(")
    for at in range(line, 0, -1):
        if pattern.match(lines[at - 1]):
            return at
    return line


def parameters_of(dump: DumpSet, path: str, line: int) -> list[str]:
    """The parameter names of the function defined at ``path:line`` (its ``def`` or
    ``lambda`` text, up to the colon), where the dump holds the source; else []."""
    lines = next((text for (_host, p), text in dump.source_lines.items() if p == path), None)
    if lines is None or not 0 < line <= len(lines):
        return []
    text = " ".join(str(lines[i]) for i in range(line - 1, min(line + 5, len(lines))))
    found = re.search(r"\bdef\s+\w+\s*\((.*?)\)\s*(->[^:]*)?:", text) or re.search(r"\blambda\b([^:]*):", text)
    if not found:
        return []
    names = []
    for part in found.group(1).split(","):
        name = part.split("=")[0].split(":")[0].strip().lstrip("*")
        if name and name not in ("self", "cls", "/") and name.isidentifier():
            names.append(name)
    return names


def _arguments(dump: DumpSet, graph: GraphInfo) -> list[str]:
    """The Placeholder ops the trace made for the function's arguments, in order."""
    return [op.op_name for op in graph.ops.values()
            if op.op_type == "Placeholder" and _made_for_an_argument(dump, op.stack)]


def _made_for_an_argument(dump: DumpSet, stack: Sequence[str]) -> bool:
    """Whether an argument maker is on the stack below its innermost tracing entry (the
    innermost frame alone when there is no entry). Read from the innermost frame out: a
    trace's captures make placeholders too, and their stacks run deep into the body."""
    innermost: Frame | None = None
    maker = False
    for frame_id in reversed(stack):
        frame = dump.frame(frame_id)
        if frame is None:
            continue
        innermost = innermost or frame
        if frame[2] in _TRACE_ENTRIES:
            return maker
        maker = maker or frame[2] in _ARGUMENT_MAKERS
    return innermost is not None and innermost[2] in _ARGUMENT_MAKERS


def _facts_of(dump: DumpSet, graph: GraphInfo) -> TraceFacts | None:
    first = next(iter(graph.ops.values()), None)
    if first is None or not graph.name:
        return None
    frames = _frames(dump, first.stack)
    if not _is_trace(frames) or _made_by_tf(frames):
        return None
    path, line = _body_line(dump, graph)
    outer = dump.graphs.get(graph.outer_id)
    def_line = _def_line(dump, path, line, graph.name)
    copy = _strategy_copy(frames)
    args = _arguments(dump, graph)
    if copy:
        args = _copied_arguments(args, parameters_of(dump, path, def_line))
    return TraceFacts(graph.graph_id, graph.name, path, def_line,
                      any(f[2] == "_initialize" for f in _call_frames(frames)),
                      args, bool(outer is not None and outer.name), _keras_kind(frames), copy)


def _copied_arguments(args: list[str], parameters: list[str]) -> list[str]:
    """A strategy copy's arguments by the user's parameter names: its wrapper takes
    ``*args``, so TF names the tensor in position N ``args_N``."""
    def named(arg: str) -> str:
        m = re.fullmatch(r"args_(\d+)", arg)
        return parameters[int(m.group(1))] if m and int(m.group(1)) < len(parameters) else arg
    return [named(a) for a in args]


def trace_facts(dump: DumpSet) -> list[TraceFacts]:
    """The dump's tf.function traces, in the order TF made them (the dump's order)."""
    return [f for f in (_facts_of(dump, g) for g in dump.graphs.values()) if f is not None]
