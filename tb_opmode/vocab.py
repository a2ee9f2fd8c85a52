"""The words the analysis and its presentations share, defined once.

In: nothing (this module imports no other of the package). Out: the modes, the
evidence levels, the kernel classes and kinds and the two kernel names that are no
kernel (``REMOVED``, ``UNKNOWN``), the oneDNN states, and the checks that sort
what a dump, log or profile names: a tf.function call (``is_function``), a tfdbg
instrumentation kernel (``is_debug_kernel``), the executor's plumbing
(``PLUMBING_KERNELS``), a oneDNN kernel (``is_onednn``). ``served()``: the words as the
tab's JavaScript receives them (``GET /data/plugin/opmode/vocab``), under these names,
so that the frontend names them and holds no copy.
"""
from __future__ import annotations

from typing import Any

__all__ = ["MODES", "EAGER", "GRAPH", "EVIDENCE", "LOG", "PROFILE", "INFERRED", "REMOVED",
           "UNKNOWN", "KERNEL_CLASSES", "KERNEL_KINDS", "KIND_ONEDNN", "KIND_FUSED",
           "KIND_STOCK", "KIND_REMOVED", "KIND_UNKNOWN", "ONEDNN_STATES", "ONEDNN_ON",
           "ONEDNN_OFF", "ONEDNN_UNKNOWN", "PLUMBING_KERNELS", "FUNCTION_PREFIXES",
           "DEBUG_PREFIX", "ONEDNN_PREFIX", "NOT_RECORDED", "is_function", "is_debug_kernel", "is_onednn",
           "onednn_state", "served"]

# How an op ran: dispatched one by one (eager), or inside a graph (tf.function).
EAGER, GRAPH = "eager", "graph"
MODES = (EAGER, GRAPH)
# How a kernel is known, strongest first: the TF log, the profiler trace, inference.
LOG, PROFILE, INFERRED = "log", "profile", "inferred"
EVIDENCE = (LOG, PROFILE, INFERRED)
# Shown as the kernel of an op that grappler took out of the graph.
REMOVED = "(optimized away)"
# Shown where the evidence cannot decide the kernel; the note says why and how to find out.
UNKNOWN = "(unknown)"
# Said of a trace's argument whose dtype, shape or Python value the run did not record.
NOT_RECORDED = "not recorded"
# ``explain.kernel_class``: fused (a oneDNN kernel grappler's remapper made of several
# ops), another oneDNN kernel, a stock one, or no kernel known.
KIND_ONEDNN, KIND_FUSED, KIND_STOCK, KIND_REMOVED, KIND_UNKNOWN = (
    "onednn", "fused", "stock", "removed", "unknown")
KERNEL_CLASSES = (KIND_ONEDNN, KIND_FUSED, KIND_STOCK, KIND_UNKNOWN)
# ``tab.kernel_kind``, what the tab colours a kernel by: fusion is a mark, not a kind.
KERNEL_KINDS = (KIND_ONEDNN, KIND_STOCK, KIND_REMOVED, KIND_UNKNOWN)
# RunModel.onednn_enabled -> the word the tab and the run list say.
ONEDNN_ON, ONEDNN_OFF, ONEDNN_UNKNOWN = "on", "off", "unknown"
ONEDNN_STATES = {True: ONEDNN_ON, False: ONEDNN_OFF, None: ONEDNN_UNKNOWN}
# Executor bookkeeping nodes: no op of the user's program.
PLUMBING_KERNELS = frozenset(("_Retval", "_Arg", "NoOp", "_SOURCE", "_SINK"))
# tf.function calls are dispatched as ops named after the traced function.
FUNCTION_PREFIXES = ("__inference_", "__forward_", "__backward_")
# DebugIdentityV2 / DebugNumericSummaryV2 and kin: tfdbg's own nodes.
DEBUG_PREFIX = "Debug"
# oneDNN kernels are registered as _Mkl<Op> (_MklNative<Op>, _MklFused<Op>, ...).
ONEDNN_PREFIX = "_Mkl"


def is_function(name: str) -> bool:
    """An op named after a traced tf.function: a call of the function, not an op."""
    return name.startswith(FUNCTION_PREFIXES)


def is_debug_kernel(kernel: str) -> bool:
    """A kernel tfdbg inserted to dump tensors (``DebugIdentityV2``, ``DebugNumericSummaryV2``
    and kin): instrumentation, not an op of the user's program."""
    return kernel.startswith(DEBUG_PREFIX)


def is_onednn(kernel: str) -> bool:
    """A oneDNN kernel (``_Mkl*``)."""
    return kernel.startswith(ONEDNN_PREFIX)


def onednn_state(enabled: bool | None) -> str:
    """``on``, ``off`` or ``unknown`` for ``RunModel.onednn_enabled``."""
    return ONEDNN_STATES[enabled]


def served() -> dict[str, Any]:
    """Every word above by its name here (tuples and sets as lists; ``ONEDNN_STATES``,
    keyed by Python's True/False/None, as its three names), for the tab's JavaScript."""
    words = {name: value for name, value in globals().items()
             if name in __all__ and name != "ONEDNN_STATES" and not callable(value)}
    return {name: sorted(value) if isinstance(value, frozenset) else
            list(value) if isinstance(value, tuple) else value for name, value in words.items()}
