"""Where an op type's executions came from: the Python lines and the tf.function graphs.

In: a ``RunModel`` whose kernels are assigned (``assemble`` + ``kernels``) and an op type.
Out: JSON-ready lists: ``call_sites`` (the Python lines that issued its eager executions,
or created its graph ops while a tf.function was traced, with the user's own line that
led there) and ``function_graphs`` (the graphs holding its graph executions, with the
tf.function each belongs to).

A stack's frames run outermost first. Frames inside TF itself or Keras' thin op wrappers
say nothing about why an op ran, so a call site is the innermost frame outside them; the
user's code is the innermost frame outside them and outside installed libraries.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

from ..model import RunModel
from ..read.tfdbg import DumpSet, GraphInfo
from .capture_frames import is_capture_frame
from .keras_steps import RUN_EAGERLY_WHY, in_keras_step, keras_steps_traced
from .py_function import in_py_function
from .recording import counted_eager_lines

__all__ = ["call_sites", "creating_line", "function_graphs", "EAGER_WHY_PYTHON", "eager_why"]

# Frames inside TF itself, or Keras' thin op wrappers, say nothing about why an op ran.
_INTERNAL = re.compile(r"[/\\](tensorflow|tensorflow_core|tf_keras[/\\]src[/\\]backend|"
                       r"keras[/\\]src[/\\]backend|keras[/\\]src[/\\]ops|keras[/\\]backend|"
                       r"keras[/\\]src[/\\]utils[/\\]traceback_utils)[/\\.]")
# Installed libraries and the interpreter's own code (``<frozen ...>``, ``<string>``).
_THIRD_PARTY = re.compile(r"[/\\](site-packages|dist-packages|lib[/\\]python\d+(\.\d+)?)[/\\]|^<")
_MAX_LINE_CHARS = 400
_MAX_VIA = 8
# How many of the op type's executed ops a function_graphs entry names.
_MAX_OP_NAMES = 5

Frame = tuple[str, int, str]  # (file path, line, function)
# (dump index, stack of frame ids), or (_RECORDED, the frames ``tb-opmode record``'s job
# counted eager dispatches from, for a run with no dump)
_Stack = tuple[int, tuple[Any, ...]]
_RECORDED = -1
_UserPath = tuple[Frame, tuple[Frame, ...]]  # (the user's frame, the frames on to the site)


def _frames(dump: DumpSet, stack: tuple[str, ...]) -> list[Frame]:
    """The frames of a stack that its own dump knows, outermost first; our recording's
    own frames (its wrapper of every tf.function call) left out: they are no one's site."""
    return [f for f in (dump.frame(frame_id) for frame_id in stack)
            if f is not None and not is_capture_frame(f[0])]


def _stack_frames(model: RunModel, key: _Stack) -> list[Frame]:
    index, stack = key
    if index == _RECORDED:
        return [f for f in stack if not is_capture_frame(f[0])]
    return _frames(model.dumps[index], stack)


def _is_user_code(path: str) -> bool:
    return not _THIRD_PARTY.search(path) and not _INTERNAL.search(path)


# The start of a thread (Python's threading module): a MirroredStrategy replica's stack
# begins there, and where TF's own code is all the rest, it is no one's line.
_THREAD_START = re.compile(r"(^|[/\\])threading\.py$")


def _pick(frames: list[Frame]) -> tuple[Optional[int], Optional[int]]:
    """Indexes of (call site: the innermost frame outside TF internals and a thread's start,
    or else the innermost frame; user code: the innermost frame outside TF and installed
    libraries)."""
    innermost_first = range(len(frames) - 1, -1, -1)
    site = next((i for i in innermost_first if not _INTERNAL.search(frames[i][0])
                 and not _THREAD_START.search(frames[i][0])), None)
    user = next((i for i in innermost_first if _is_user_code(frames[i][0])), None)
    if site is None and frames:
        site = _inside_tf(frames)
    return site, user


# TF's own code, and the part of it that only builds an op (its generated wrappers, the
# op library, the op callbacks tfdbg records the stack from).
_TF_CODE = re.compile(r"[/\\](tensorflow|tensorflow_core)[/\\]python[/\\]")
_OP_MACHINERY = re.compile(r"[/\\]tensorflow[/\\]python[/\\](debug|framework)[/\\]|[/\\]gen_\w+_ops\.py$")


def _inside_tf(frames: list[Frame]) -> int:
    """The site of a stack with no frame outside TF's internals but a thread's start (a
    MirroredStrategy replica's thread): the outermost frame of a library beside TF
    (Keras's ``train_step``), else the innermost TF frame that does more than build the op
    (``_BiasAddGrad``), else the innermost frame."""
    outside = (i for i, f in enumerate(frames) if not _TF_CODE.search(f[0]) and not _THREAD_START.search(f[0]))
    deciding = (i for i in range(len(frames) - 1, -1, -1)
                if not _OP_MACHINERY.search(frames[i][0]) and not _THREAD_START.search(frames[i][0]))
    return next(outside, next(deciding, len(frames) - 1))


def creating_line(dump: DumpSet, stack: tuple[str, ...]) -> str:
    """``path:line`` of a stack's call site (its innermost frame outside TF), or "" when
    the dump knows none of its frames."""
    frames = _frames(dump, stack)
    site, _user = _pick(frames)
    if site is None:
        return ""
    path, line, _func = frames[site]
    return f"{path}:{line}"


def _snippet(model: RunModel, first: int, path: str, line: int,
             context: int) -> Optional[dict[str, Any]]:
    """The source around ``path:line`` (from dump ``first``, else any dump that has the file)."""
    first = max(first, 0)
    for dump in model.dumps[first:first + 1] + model.dumps[:first] + model.dumps[first + 1:]:
        for (_host, file_path), lines in dump.source_lines.items():
            if file_path == path and 1 <= line <= len(lines):
                lo, hi = max(1, line - context), min(len(lines), line + context)
                return {"first_line": lo, "line": line,
                        "lines": [text[:_MAX_LINE_CHARS] for text in lines[lo - 1:hi]]}
    return None


# Why an op ran eagerly, where no tf.py_function issued it.
EAGER_WHY_PYTHON = "called from Python outside any tf.function"


_BY_PY_FUNCTION = ("run by a tf.py_function, whose Python function runs eagerly, op by op, each "
                   "time its graph op (EagerPyFunc) runs, inside a tf.function or tf.data")


def _eager_issuers(model: RunModel, op_type: str) -> tuple[int, int]:
    """The eager executions of an op type issued inside a tf.py_function (their stacks, a
    dump's or those ``tb-opmode record``'s job counted, which mark them so, pass through
    TF's ``script_ops.py``), and those Keras's steps, run eagerly, issued."""
    keras_eager = not keras_steps_traced(model)
    inside = keras = 0
    for key, n in _eager_stacks(model, op_type).items():
        frames = _stack_frames(model, key)
        if in_py_function(frames):
            inside += n
        elif keras_eager and in_keras_step(frames):
            keras += n
    return inside, keras


def eager_why(model: RunModel, op_type: str, executions: int) -> str:
    """Why ``executions`` eager runs of an op type ran eagerly, in words: run by a
    tf.py_function inside a graph, by Keras's steps run eagerly, called from Python
    outside a tf.function; each with its count where they are several."""
    inside, keras = _eager_issuers(model, op_type)
    inside = min(inside, executions)
    keras = min(keras, executions - inside)
    whys = [(n, why) for n, why in ((inside, _BY_PY_FUNCTION), (keras, RUN_EAGERLY_WHY),
                                    (executions - inside - keras, EAGER_WHY_PYTHON)) if n]
    if len(whys) == 1:
        return whys[0][1]
    return ", ".join(f"{n} {why}" for n, why in whys)


def _frame_json(frame: Frame) -> dict[str, Any]:
    return {"file": frame[0], "line": frame[1], "function": frame[2]}


def _eager_stacks(model: RunModel, op_type: str) -> Counter[_Stack]:
    """(dump index, stack) -> eager executions of the op type issued from it; for a run
    whose dumps have no stack, the dispatches ``tb-opmode record``'s job counted."""
    stacks: Counter[_Stack] = Counter()
    for i, dump in enumerate(model.dumps):
        for (t, stack), n in dump.execution_sites.items():
            if t == op_type:
                stacks[(i, stack)] += n
    for line in counted_eager_lines(model):
        if line.op_type == op_type:
            stacks[(_RECORDED, line.frames)] += line.dispatches
    return stacks


def _graph_stacks(model: RunModel, op_type: str) -> tuple[Counter[_Stack], Counter[_Stack]]:
    """((dump index, stack) -> executions of the graph ops created there, -> how many
    graph ops were created there), each op's stack as the first dump defining it records."""
    stacks: Counter[_Stack] = Counter()
    created_ops: Counter[_Stack] = Counter()
    for op in model.graph_ops:
        if op.op_type != op_type or not op.executions:
            continue
        for i, dump in enumerate(model.dumps):
            graph = dump.graphs.get(op.graph_id)
            created = graph.ops.get(op.op_name) if graph is not None else None
            if created is not None:
                stacks[(i, created.stack)] += op.executions
                created_ops[(i, created.stack)] += 1
                break
    return stacks, created_ops


@dataclass
class _Site:
    """What the stacks through one call site add up to."""

    dump: int  # the dump of the first stack met through it, for its snippet
    count: int = 0
    ops: int = 0
    paths: Counter[_UserPath] = field(default_factory=Counter)

    def user_path(self) -> Optional[_UserPath]:
        """The commonest way from the user's code to the site."""
        return self.paths.most_common(1)[0][0] if self.paths else None


def _sites(model: RunModel, stacks: Counter[_Stack],
           created_ops: Counter[_Stack]) -> dict[Frame, _Site]:
    """The stacks grouped by their call site (stacks of which no frame is known left out)."""
    sites: dict[Frame, _Site] = {}
    for (i, stack), n in stacks.items():
        frames = _stack_frames(model, (i, stack))
        site, user = _pick(frames)
        if site is None:
            continue  # no frame of this stack is known: nothing to show
        found = sites.setdefault(frames[site], _Site(dump=i))
        found.count += n
        found.ops += created_ops[(i, stack)]
        if user is not None and user != site:
            path = tuple(f for f in frames[user + 1:site] if not _INTERNAL.search(f[0]))
            found.paths[(frames[user], path[-_MAX_VIA:])] += n
    return sites


def _site_json(model: RunModel, frame: Frame, site: _Site, mode: str, snippets: bool,
               context: int, via: bool) -> dict[str, Any]:
    item: dict[str, Any] = dict(_frame_json(frame), count=site.count)
    if mode != "eager":
        item["ops"] = site.ops
    user_path = site.user_path()
    if user_path is not None:
        item["user_code"] = _frame_json(user_path[0])
    if via:
        item["via"] = [_frame_json(f) for f in user_path[1]] if user_path else []
    if snippets:
        snippet = _snippet(model, site.dump, frame[0], frame[1], context)
        if snippet is not None:
            item["snippet"] = snippet
    return item


def call_sites(model: RunModel, op_type: str, mode: str, limit: Optional[int] = 10,
               snippets: bool = True, context: int = 2, via: bool = False) -> list[dict[str, Any]]:
    """Python call sites of an op type, busiest first (``limit=None``: all of them).

    Eager: where its executions were issued; graph: where its executed graph ops
    were created while a tf.function was traced. A site is the innermost frame
    outside TF's own code; each has ``file``, ``line``, ``function``, ``count``
    (executions), for graph sites ``ops`` (graph ops created there), and
    ``user_code``: the innermost frame of the program itself (outside TF and
    installed libraries) that led there, when that is another frame. With
    ``snippets``, ``snippet`` holds the site's line with ``context`` lines each
    side; with ``via``, ``via`` lists the frames between the user's code and the
    site (outermost first, TF internals left out, the last few).
    """
    if mode == "eager":
        stacks, created_ops = _eager_stacks(model, op_type), Counter[_Stack]()
    else:
        stacks, created_ops = _graph_stacks(model, op_type)
    sites = _sites(model, stacks, created_ops)
    ordered = sorted(sites.items(), key=lambda kv: (-kv[1].count, kv[0][0], kv[0][1]))
    return [_site_json(model, frame, site, mode, snippets, context, via)
            for frame, site in ordered[:limit]]


def _outermost(dump: DumpSet, graph: GraphInfo) -> GraphInfo:
    """The outermost named graph around ``graph``: the root context tfdbg records is
    unnamed."""
    seen: set[str] = set()
    while (graph.outer_id in dump.graphs and graph.outer_id not in seen
           and dump.graphs[graph.outer_id].name):
        seen.add(graph.outer_id)
        graph = dump.graphs[graph.outer_id]
    return graph


def _function_of(model: RunModel, graph_id: str) -> dict[str, Any]:
    """A graph's name, the outermost function it belongs to, and that function's calls."""
    name, outer_name, outer_id = "", "", ""
    calls = 0
    for dump in model.dumps:
        graph = dump.graphs.get(graph_id)
        if graph is None:
            continue
        name = graph.name
        outer = _outermost(dump, graph)
        outer_name, outer_id = outer.name, outer.graph_id
        # Calls of that very graph: Keras' train and evaluate functions share a name
        # (multi_step_on_iterator), so functions are told apart by graph id.
        calls += sum(n for (_op, called), n in dump.executions.items() if called == outer_id)
    return {"graph_id": graph_id, "graph": name, "function": outer_name,
            "function_graph_id": outer_id, "function_calls": calls}


def function_graphs(model: RunModel, op_type: str) -> list[dict[str, Any]]:
    """The graphs that hold the op type's graph executions, busiest first: each with its
    name, the outermost function it belongs to (and that function's calls), the op
    type's executed ops in it (``ops``, the first ``op_names``) and their executions."""
    executions: Counter[str] = Counter()
    op_names: dict[str, list[str]] = {}
    for op in model.graph_ops:
        if op.op_type == op_type:
            executions[op.graph_id] += op.executions
            op_names.setdefault(op.graph_id, []).append(op.op_name)
    out = [dict(_function_of(model, graph_id), executions=executions[graph_id], ops=len(names),
                op_names=sorted(names)[:_MAX_OP_NAMES])
           for graph_id, names in op_names.items()]
    out.sort(key=lambda g: (-g["executions"], -g["ops"], g["graph"], g["graph_id"]))
    return out
