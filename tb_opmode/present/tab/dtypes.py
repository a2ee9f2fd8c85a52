"""A dump's dtypes in words: the one place the tab says what a dtype marker means.

In: a dtype as the dump's records give it (``read.tfdbg.health_dtype``: a ``DT_*`` name,
or a marker for a dtype the record does not name). Out: ``dtype_label`` (``DT_HALF`` is
float16; a marker says what was or was not recorded), ``is_vague`` (a marker, no dtype)
and ``is_low_precision`` (a float type mixed precision computes in).
"""
from __future__ import annotations

from ...read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN

__all__ = ["UNNAMED_DTYPES", "dtype_label", "is_vague", "is_low_precision"]

# tensorflow/core/framework/types.proto names as a Python user writes them.
_DTYPE_WORDS = {"DT_HALF": "float16", "DT_BFLOAT16": "bfloat16", "DT_FLOAT": "float32",
                "DT_DOUBLE": "float64", "DT_BOOL": "bool", "DT_STRING": "string"}
# What a record says when it names no dtype, in words: NO_TENSOR records none;
# CURT_HEALTH and CONCISE_HEALTH summarise float tensors only, without their dtype;
# "" is no summary in a mode that summarises float tensors only (a non-float output, or
# none).
UNNAMED_DTYPES = {DTYPE_UNKNOWN: "not recorded", DTYPE_SOME_FLOAT: "a float type",
                  "": "no float output"}
# Float types a mixed-precision policy computes in.
_LOW_PRECISION = ("DT_HALF", "DT_BFLOAT16")


def dtype_label(dtype: str) -> str:
    """A dump's dtype (``DT_*``, as ``kernels`` and ``tfdbg`` spell it) as a Python user
    names it, or what a record that names none says (``UNNAMED_DTYPES``)."""
    unnamed = UNNAMED_DTYPES.get(dtype)
    if unnamed is not None:
        return unnamed
    return _DTYPE_WORDS.get(dtype, dtype[3:].lower() if dtype.startswith("DT_") else dtype)


def is_vague(dtype: str) -> bool:
    """A record that names no dtype: it neither agrees nor differs with one that does."""
    return dtype in UNNAMED_DTYPES


def is_low_precision(dtype: str) -> bool:
    return dtype in _LOW_PRECISION
