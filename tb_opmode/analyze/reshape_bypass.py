"""Reshapes grappler bypasses in a NO_TENSOR dump, where tfdbg's debug ops read no tensor.

In: one dump graph's ops (types, inputs) of a NO_TENSOR dump. Out: op name -> (kernel,
note) for the Reshapes whose node the bypass removed, and for the Reshapes it left
reading the bypassed one's input, whose fate the dump cannot tell.

The mechanism (tensorflow/core/grappler/optimizers/arithmetic_optimizer.cc, stage
``RemoveRedundantReshapeOrBroadcastTo``): a Reshape whose input is another Reshape
with no other non-control consumer reads that Reshape's input instead, and the inner
Reshape becomes a NoOp. In every mode but NO_TENSOR tfdbg's debug op reads the inner
Reshape's output, a second consumer, and the bypass does not happen; a NO_TENSOR
debug op reads a constant (and follows its op by control edges only), so the graph is
optimised as if undebugged. The outer Reshape then reads the inner one's input and is
removed too where grappler proves that input already has its target shape
(``ShapesSymbolicallyEqual``), which needs static shapes a NO_TENSOR dump does not
record: for it the answer is unknown. (The stage also bypasses through a chain of
unary element-wise ops; only the direct pair is decided here.)
"""
from __future__ import annotations

from collections import defaultdict

from ..read.tfdbg import OpCreation
from ..vocab import REMOVED, UNKNOWN

__all__ = ["bypassed_reshapes"]


def _source(tensor: str) -> tuple[str, int]:
    head, sep, tail = tensor.rpartition(":")
    return (head, int(tail)) if sep and tail.isdigit() else (tensor, 0)


def bypassed_reshapes(ops: dict[str, OpCreation]) -> dict[str, tuple[str, str]]:
    consumers: dict[str, list[str]] = defaultdict(list)
    for op in ops.values():
        for tensor in op.inputs:
            if not tensor.startswith("^"):
                consumers[_source(tensor)[0]].append(op.op_name)
    out: dict[str, tuple[str, str]] = {}
    outer: dict[str, str] = {}
    for op in ops.values():
        data = [t for t in op.inputs if not t.startswith("^")]
        if op.op_type != "Reshape" or not data:
            continue
        name, slot = _source(data[0])
        inner = ops.get(name)
        if inner is None or inner.op_type != "Reshape" or slot != 0 or consumers[name] != [op.op_name]:
            continue
        out[name] = (REMOVED, (
            f"removed by grappler: its only consumer {op.op_name} is a Reshape too, which "
            f"grappler's arithmetic optimizer makes read this Reshape's input directly "
            f"(RemoveRedundantReshapeOrBroadcastTo); a NO_TENSOR dump's debug op reads no "
            f"tensor, so it is no second consumer to stop that (inferred from the dump's "
            f"graph)"))
        outer[op.op_name] = name
    for name, inner_name in outer.items():
        if name in out:
            continue  # bypassed in turn by its own consumer
        out[name] = (UNKNOWN, (
            f"unknown whether it ran: grappler bypassed its input {inner_name} (a Reshape "
            f"with no other consumer), so it reads that Reshape's input, and removes it "
            f"where static shapes prove that input already has its target shape; a "
            f"NO_TENSOR dump records no shapes. To know, dump with FULL_HEALTH or SHAPE, "
            f"or keep TF's log (TF_CPP_MAX_VLOG_LEVEL=2)"))
    return out
