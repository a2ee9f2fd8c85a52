"""Which stack frames are TF's tf.py_function machinery: an op issued under one ran
eagerly inside a graph.

In: a frame's file path (or a stack's frames), as a dump's stacks or ``tb-opmode record``'s
job name them. Out: ``is_py_function_frame``: whether it is TF's ``script_ops.py``, whose ``EagerFunc`` runs the
Python function of a ``tf.py_function`` (and of ``tf.numpy_function``) eagerly, op by op,
each time its graph op (``EagerPyFunc``) runs, in a tf.function or in tf.data;
``in_py_function``: whether a stack passes through it. Such an
op is not "called from Python outside any tf.function", and no tf.function around the
line that issues it puts it in a graph: TF ops in place of the tf.py_function do.
``tb-opmode record``'s job marks a dispatch made inside one with that module's frame, the
walk out to the user's line stopping before it; a dump's stacks hold it (though tfdbg
records no op run on a graph's own thread, which is where the function runs).
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["is_py_function_frame", "in_py_function", "PY_FUNCTION_ADVICE"]

_SCRIPT_OPS = re.compile(r"(^|[/\\])tensorflow[/\\]python[/\\]ops[/\\]script_ops\.py$")

# What to change where eager ops run inside a tf.py_function.
PY_FUNCTION_ADVICE = (
    "These ops run inside a tf.py_function: TF runs its Python function eagerly, op by op, "
    "each time the graph op (EagerPyFunc) runs, so no tf.function around this line or its "
    "caller puts them in a graph. Written as TF ops in the graph's own function (or the "
    "dataset's map function) instead of a tf.py_function, they run as graph ops.")


@functools.lru_cache(maxsize=4096)
def is_py_function_frame(path: str) -> bool:
    """Whether ``path`` is TF's ``script_ops.py`` (any install of TF)."""
    return bool(_SCRIPT_OPS.search(path))


def in_py_function(frames: Iterable[tuple[str, int, str]]) -> bool:
    """Whether a stack passes through a tf.py_function's EagerFunc (TF's script_ops.py)."""
    return any(is_py_function_frame(f[0]) for f in frames)
