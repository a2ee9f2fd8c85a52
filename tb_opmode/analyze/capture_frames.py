"""Which stack frames are tb_opmode's own recording code, never the user's.

In: a frame's file path, as a dump's stacks name it. Out: ``is_capture_frame``: whether
it is a module of ``tb_opmode.capture`` (under ``tb-opmode record`` every call of a
tf.function passes through its wrapper of ``Function.__call__``, so without this the
user's line would be ours), wherever that package was installed when the run was
recorded: by the module path, not by a line, nor by this machine's copy of the package.
"""
from __future__ import annotations

import functools
import re

__all__ = ["CAPTURE_PACKAGE", "is_capture_frame"]

# The package whose modules run inside the recorded job (``capture.inprocess``).
CAPTURE_PACKAGE = "tb_opmode.capture"
_CAPTURE_PATH = re.compile(r"(?:^|[/\\])" + r"[/\\]".join(map(re.escape, CAPTURE_PACKAGE.split(".")))
                           + r"[/\\][^/\\]+\.py$")


# A stack names few files many times over (every frame of every op's stack is asked).
@functools.lru_cache(maxsize=4096)
def is_capture_frame(path: str) -> bool:
    """Whether ``path`` is a module of ``tb_opmode.capture`` (any install of it)."""
    return bool(_CAPTURE_PATH.search(path))
