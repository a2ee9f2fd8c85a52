"""A dump graph's tensors: who reads each, and what the dump's first trace of one records.

In: a ``DumpSet`` (its graphs and ``trace_digests``), a graph id, op and tensor names
(``"op:slot"``). Out: names without their slot, each op's readers, and first-trace
digests (0: not recorded) and ranks (None: not recorded), which the rules compare to
tell an op that forwarded its input from one that computed something.
"""
from __future__ import annotations

from collections import defaultdict

from ...read.tfdbg import DumpSet, digest_rank
from ..nodes import tensor_source

__all__ = ["strip_slot", "consumers_of", "lowest_digest", "input_digest", "trace_rank"]

# An op's outputs looked at for its first trace: more than any op the rules ask about has.
_SLOTS_LOOKED_AT = 8


def strip_slot(tensor: str) -> str:
    """``"op:1"`` -> ``"op"``; a name without a numeric slot unchanged."""
    name, _, slot = tensor.rpartition(":")
    return name if name and slot.isdigit() else tensor


def consumers_of(dump: DumpSet, graph_id: str) -> dict[str, list[str]]:
    """Op name -> the ops of the graph that read one of its outputs (control inputs too)."""
    graph = dump.graphs.get(graph_id)
    out: dict[str, list[str]] = defaultdict(list)
    if graph is None:
        return out
    for op in graph.ops.values():
        for tensor in op.inputs:
            out[strip_slot(tensor.lstrip("^"))].append(op.op_name)
    return out


def lowest_digest(digests: dict[tuple[str, str, int], int], graph_id: str, op_name: str) -> int:
    """The digest of the first trace of the op's lowest traced output (0 if none)."""
    for slot in range(_SLOTS_LOOKED_AT):
        found = digests.get((graph_id, op_name, slot))
        if found is not None:
            return found
    return 0


def input_digest(dump: DumpSet, graph_id: str, tensor: str) -> int:
    """The digest of the first trace of the tensor an op reads (0 if not recorded)."""
    name, slot = tensor_source(tensor)
    return dump.trace_digests.get((graph_id, name, slot), 0)


def trace_rank(dump: DumpSet, graph_id: str, tensor: str) -> int | None:
    """The rank the first trace of a tensor records (None: not recorded)."""
    return digest_rank(input_digest(dump, graph_id, tensor))
