"""Profiled op time by mode and kernel class: how much ran oneDNN, fused, or stock.

In: ``events.op_times`` ((op type, mode, kernel) -> [events, total ns]). Out: the time per
(mode, kernel class) (``class_times``) and its share of the whole (``time_share``, the
summary's JSON), with ``kernel_class``, the one classification of a kernel name that the
summary, the CSV and the tab share.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..vocab import REMOVED, UNKNOWN, is_onednn
from .kernels import is_fused

__all__ = ["kernel_class", "class_times", "time_share"]


def kernel_class(kernel: str) -> str:
    """One of ``vocab.KERNEL_CLASSES``: ``fused`` (a oneDNN kernel grappler's remapper
    fused from several ops), ``onednn`` (another ``_Mkl*`` kernel), ``stock``, or
    ``unknown`` (no kernel: none seen, or the op was optimized away)."""
    if not kernel or kernel in (REMOVED, UNKNOWN):
        return "unknown"
    if is_fused(kernel) and is_onednn(kernel):
        return "fused"
    return "onednn" if is_onednn(kernel) else "stock"


def class_times(times: dict[tuple[str, str, str], list[int]]) -> dict[tuple[str, str], int]:
    """(mode, kernel class) -> profiled op time in ns, from ``op_times``."""
    totals: Counter[tuple[str, str]] = Counter()
    for (_op, mode, kernel), (_n, ns) in times.items():
        totals[(mode, kernel_class(kernel))] += ns
    return dict(totals)


def time_share(times: dict[tuple[str, str, str], list[int]]) -> dict[str, Any]:
    """Share of profiled op time by mode x kernel class."""
    totals = class_times(times)
    whole = sum(totals.values())
    return {"total_ms": whole / 1e6, "cells": [
        {"mode": mode, "class": cls, "ms": ns / 1e6, "share": (ns / whole if whole else 0.0)}
        for (mode, cls), ns in sorted(totals.items())]}
