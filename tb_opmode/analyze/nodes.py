"""Map executed graph nodes (log, profile) back to the ops in the dump.

In: the dump's graphs (op name -> op type per graph) and node names as the
executor and profiler print them. Out: for each dump op, the executed node
names that stand for it.

Executor and profiler names carry the prefixes of inlined function calls:
``StatefulPartitionedCall/functional_1/dense_1/MatMul`` is the op
``functional_1/dense_1/MatMul`` of the function the call inlined. We match by
the longest ``/``-separated suffix of the node name that is an op name in the
dump.

Grappler's optimizers name a node they make in place of an op
``[<scope>/]<Optimizer>/<Stage>_<op's name>``: the MatMul that absorbed a Transpose runs as
``ArithmeticOptimizer/FoldTransposeIntoMatMul_MatMul``; ``origin_name`` gives the op's name.
A dump op's inputs name tensors (``x:1``, ``tensor_source``) and control inputs (``^x``,
which ``data_inputs`` leaves out).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["suffixes", "canonical_op", "origin_name", "tensor_source", "data_inputs"]

_OPTIMIZED = re.compile(r"(^|/)[A-Za-z]+Optimizer/[A-Za-z0-9]+_([^/]+)$")


def origin_name(node: str) -> str:
    """The op a grappler-made node stands for (``a/ArithmeticOptimizer/X_MatMul`` ->
    ``a/MatMul``); other names unchanged."""
    # Most names hold no optimizer's: a substring test is a tenth of the regex's sub.
    return _OPTIMIZED.sub(r"\1\2", node) if "Optimizer/" in node else node

# Prefixes TF puts on kernels that replace a stock op, longest first.
_MKL_PREFIXES = ("_MklNative", "_Mkl")


def canonical_op(kernel: str) -> str:
    """The stock op a kernel name stands for: ``_MklNativeConv2D`` -> ``Conv2D``."""
    for prefix in _MKL_PREFIXES:
        if kernel.startswith(prefix) and len(kernel) > len(prefix):
            return kernel[len(prefix):]
    return kernel


def suffixes(node: str) -> Iterable[str]:
    """``a/b/c`` -> ``a/b/c``, ``b/c``, ``c``: longest first."""
    yield node
    start = node.find("/")
    while start != -1:
        yield node[start + 1:]
        start = node.find("/", start + 1)


def data_inputs(inputs: Iterable[str]) -> list[str]:
    """A graph op's inputs less its control inputs (``"^x"``)."""
    return [t for t in inputs if not t.startswith("^")]


def tensor_source(tensor: str) -> tuple[str, int]:
    """A graph input's (op name, output slot): ``"x:1"`` -> ("x", 1), ``"x"`` -> ("x", 0),
    ``"^x"`` (a control input) -> ("x", 0)."""
    tensor = tensor.lstrip("^")
    head, sep, tail = tensor.rpartition(":")
    return (head, int(tail)) if sep and head and tail.isdigit() else (tensor, 0)
