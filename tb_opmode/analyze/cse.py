"""Identical ops that grappler's common-subexpression elimination merged into one node.

In: one dump graph's ops (types, inputs, devices), the digests of their first traces,
whether those digests hold whole tensors (FULL_TENSOR), the ops counted as run so far
and the ones a profile or log saw run. Out: for each op of a merged group that did not
run, why; and for the one counted as run, the same group named.

The mechanism (tensorflow/core/grappler/optimizers/common_subgraph_elimination.cc,
``DedupComputations``): a pure op whose type, attributes and inputs equal another's is
replaced by it. Every consumer, tfdbg's debug ops included, then reads the one kept, and
the duplicate's node is deleted; constants of one value merge first, so that
``ExpandDims(y, dim)`` and ``ExpandDims_1(y, dim_1)`` merge where ``dim`` and ``dim_1``
hold the same value (Keras 2 expands its labels once for the loss and once for the
metric; its loss gradient takes ``Shape(logits)`` again). So exactly one node of such a
group runs, which a dump shows as ops of one type on the same tensors whose traces are
equal.

Which one grappler keeps is the first in its own node order, which the dump does not
record. The group's executions are counted once: as the op created last (the one TF
2.13 kept in every group the truth matrix met), and every op of the group says that the
choice between them is not known, so that a user reads one run, not which.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from ..read.tfdbg import OpCreation
from ..vocab import REMOVED
from .nodes import tensor_source

__all__ = ["merged_duplicates"]

# Pure ops whose result is fixed by their type, inputs and the dtypes a trace records
# (no attribute of theirs changes the value otherwise), which grappler can dedup.
_DEDUPABLE = frozenset(("Shape", "Size", "Rank", "ExpandDims", "Reshape", "Transpose",
                        "BroadcastTo", "Tile", "Fill", "ZerosLike", "OnesLike"))


def merged_duplicates(ops: Mapping[str, OpCreation], digests: Mapping[tuple[str, int], int],
                      whole_tensors: bool, ran: set[str], seen: set[str],
                      ) -> dict[str, tuple[str, str]]:
    """op name -> (kernel, note): REMOVED for a duplicate grappler deleted, "" (keep its
    kernel) for the one counted as run. ``digests``: (op name, slot) -> first trace's
    digest, 0 or missing where not recorded; ``whole_tensors``: the digests hash whole
    tensors, so two constants with equal digests hold one value."""
    order = {name: k for k, name in enumerate(ops)}

    def canonical(tensor: str) -> str:
        name, slot = tensor_source(tensor)
        source = ops.get(name)
        value = digests.get((name, slot), 0)
        if source is not None and source.op_type == "Const" and whole_tensors and value:
            return f"={value}"  # merged with every constant of that value first
        return f"{name}:{slot}"

    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name, op in ops.items():
        if op.op_type not in _DEDUPABLE or not (name in ran or name in seen):
            continue
        if any(t.startswith("^") for t in op.inputs) or not op.inputs:
            continue  # a control input is part of what grappler compares: keep it simple
        groups[(op.device, op.op_type, *map(canonical, op.inputs))].append(name)
    out: dict[str, tuple[str, str]] = {}
    for names in groups.values():
        if len(names) < 2:
            continue
        traced = {digests.get((name, 0), 0) for name in names}
        if len(traced) != 1 or (0 in traced and whole_tensors):
            continue  # their traces differ (an attribute the dump does not show)
        observed = [name for name in names if name in seen]
        if len(observed) > 1:
            continue  # two nodes of the group ran: grappler did not merge them
        kept = observed[0] if observed else max(names, key=order.__getitem__)
        others = sorted((n for n in names if n != kept), key=order.__getitem__)
        listed = ", ".join(others)
        why = ("grappler's common-subexpression elimination merged identical ops (same type "
               "on the same tensors, equal traces)")
        if observed:
            out[kept] = ("", f"{why}: {listed} now read this node, which ran")
            for name in others:
                out[name] = (REMOVED, f"{why}: this op reads {kept}, which ran in its place")
            continue
        out[kept] = ("", f"{why}, {kept} and {listed}, and ran one node for them all: counted "
                         f"here, as the one created last; which one it was the dump does not "
                         f"record (TF's log does)")
        for name in others:
            out[name] = (REMOVED, f"{why}, this one and {kept}, and ran one node for them: "
                                  f"counted as {kept}, the one created last; which one ran "
                                  f"the dump does not record (TF's log does)")
    return out
