"""The object-store extra (``tb_opmode[s3]``): fsspec, imported at this module's top.

In: a URL scheme (``s3``, ``gs``, any scheme fsspec knows). Out: fsspec's filesystem
for it. A module of its own so that the one import of the extra sits here: ``fs``
imports this module the first time a URL is read, so a local logdir (the common case)
neither needs fsspec installed nor pays for importing it.
"""
from __future__ import annotations

from typing import Any

import fsspec

__all__ = ["filesystem"]


def filesystem(scheme: str) -> Any:
    """fsspec's filesystem for ``scheme``. Raises ImportError if its implementation
    (``s3fs``, ``gcsfs``) is not installed, ValueError for a scheme fsspec does not know."""
    return fsspec.filesystem(scheme)
