"""Identical ops that grappler's common-subexpression elimination merged into one node.

In: one dump graph's ops (types, inputs, devices), the digests of their first traces,
whether those digests hold whole tensors (FULL_TENSOR), the ops counted as run so far,
the ones a profile or log saw run, and the line of code that made each. Out: for each op
of a merged group that did not run, why (REMOVED, or UNKNOWN where the group may not have
been merged); and for the one counted as run, the same group named.

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

A dump that does not record the constants' values (any mode but FULL_TENSOR) cannot
show whether ``dim`` and ``dim_1`` hold one value: traces of shapes (SHAPE, FULL_HEALTH)
are equal for ``dim`` 1 and -1 alike, and NO_TENSOR, CURT/CONCISE_HEALTH record none.
Where the same line of code created both ops (Keras 2 calls one helper for the loss and
for the metric) and their traces, where recorded, are equal, one node ran for them or
each ran its own: the op created last is counted as run, which it is either way (or its
twin in its place), and the others are ``(unknown)``.

Grappler merges node by node until nothing changes, so a chain merges whole: three Dense
layers on one input each reshape it by a shape computed from ``Shape(x)`` and constants
(Tensordot's ``GatherV2``, ``Prod``, ``Pack``), ops that the dump shows as separate
though they compute one thing. Mergeable ops whose inputs are the same computation on
the same tensors, constants alike and traces equal, are such a group; the attributes of
the ops between (``Pack``'s axis, ``Prod``'s keep_dims) are not recorded, so only the one
created last is counted as run and the others are ``(unknown)``.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

from ..read.tfdbg import OpCreation
from ..vocab import REMOVED, UNKNOWN
from .nodes import tensor_source

__all__ = ["merged_duplicates", "DEDUPABLE"]

# Pure ops whose result is fixed by their type, inputs and the dtypes a trace records
# (no attribute of theirs changes the value otherwise), which grappler can dedup.
DEDUPABLE = frozenset(("Shape", "Size", "Rank", "ExpandDims", "Reshape", "Transpose",
                        "BroadcastTo", "Tile", "Fill", "ZerosLike", "OnesLike", "Cast"))
# Of those, the ones an attribute the inputs do not fix changes (Cast's DstT): merged only
# where the traces record the dtype (FULL_HEALTH, SHAPE, FULL_TENSOR digests), so that
# equal traces mean equal attributes. (Cast's Truncate, which no trace shows, is set by
# no Keras or tf.cast path; a pair differing only in it would be told merged.)
_DTYPE_DECIDES = frozenset(("Cast",))
# Pure ops of the shape arithmetic between a tensor and the ops above (Tensordot's, a
# gradient's), followed when asking whether two ops compute the same thing.
_SAME_COMPUTATION = DEDUPABLE | frozenset(("GatherV2", "Prod", "Pack", "ConcatV2",
                                           "StridedSlice", "Range"))
# Deeper chains are left unmatched (each its own computation): the ops these groups are
# about sit a few shape ops above a tensor.
_MAX_DEPTH = 16


_WHY = ("grappler's common-subexpression elimination merged identical ops (same type "
        "on the same tensors, equal traces)")
_MAYBE = ("unknown whether it ran: grappler's common-subexpression elimination merges it "
          "into {kept} (the same line of code made both, on the same tensors) where their "
          "constants hold one value, which this dump does not record; one node ran for them, "
          "counted as {kept}. To know, keep TF's log (TF_CPP_VMODULE=executor=1) or dump "
          "with FULL_TENSOR")
_MAYBE_ALIKE = ("unknown whether it ran: grappler's common-subexpression elimination merges it "
                "into {kept} where the shape arithmetic above both (the same ops on the same "
                "tensors, with constants) holds the same values and attributes, which this "
                "dump does not record; one node ran for them, counted as {kept}. To know, keep "
                "TF's log (TF_CPP_VMODULE=executor=1)")
_MAYBE_KEPT = ("{kept} and {listed} may have been merged by grappler's common-subexpression "
               "elimination (their constants' values are not recorded): one node ran for "
               "them at least, counted here")


def _mergeable(name: str, op: OpCreation, ran: set[str], seen: set[str]) -> bool:
    """A pure op counted or seen run, with inputs and none of them a control input (part
    of what grappler compares: left out, to keep this simple)."""
    if op.op_type not in DEDUPABLE or not (name in ran or name in seen):
        return False
    return _plain_inputs(op)


def _candidate_groups(ops: Mapping[str, OpCreation], digests: Mapping[tuple[str, int], int],
                      whole_tensors: bool, ran: set[str], seen: set[str],
                      ) -> list[list[str]]:
    """The mergeable ops grouped by device, type and inputs, constants of one value being
    one input."""

    def canonical(tensor: str) -> str:
        name, slot = tensor_source(tensor)
        source = ops.get(name)
        value = digests.get((name, slot), 0)
        if source is not None and source.op_type == "Const" and whole_tensors and value:
            return f"={value}"  # merged with every constant of that value first
        return f"{name}:{slot}"

    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name, op in ops.items():
        if _mergeable(name, op, ran, seen):
            groups[(op.device, op.op_type, *map(canonical, op.inputs))].append(name)
    return list(groups.values())


def _possible_groups(ops: Mapping[str, OpCreation], digests: Mapping[tuple[str, int], int],
                     sites: Mapping[str, str], ran: set[str], seen: set[str]) -> list[list[str]]:
    """Mergeable ops grouped by device, type, the line that created them, their first
    trace (where recorded: equal shapes and dtypes) and inputs, any constant standing for
    any other (its value not recorded)."""

    def wildcard(tensor: str) -> str:
        name, slot = tensor_source(tensor)
        source = ops.get(name)
        return "=?" if source is not None and source.op_type == "Const" else f"{name}:{slot}"

    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name, op in ops.items():
        site = sites.get(name, "")
        if site and _mergeable(name, op, ran, seen):
            traced = str(digests.get((name, 0), 0))
            groups[(op.device, op.op_type, site, traced, *map(wildcard, op.inputs))].append(name)
    return [names for names in groups.values() if len(names) >= 2]


def _computations(ops: Mapping[str, OpCreation]) -> Callable[[str], str]:
    """tensor -> what computes it: equal for tensors a chain of pure ops computes alike
    from the same tensors, any constant in the chain standing for any other."""
    memo: dict[str, str] = {}

    def of(tensor: str, depth: int = 0) -> str:
        name, slot = tensor_source(tensor)
        source = ops.get(name)
        if source is None or depth > _MAX_DEPTH:
            return f"{name}:{slot}"
        if source.op_type == "Const":
            # An op's own constants stay themselves: twins by constants alone are the
            # same-line rule's (``_possible_groups``), kept to one line of code.
            return "=?" if depth else f"{name}:{slot}"
        if source.op_type not in _SAME_COMPUTATION or not _plain_inputs(source):
            return f"{name}:{slot}"
        if name not in memo:
            inputs = ",".join(of(t, depth + 1) for t in source.inputs)
            memo[name] = f"{source.device}/{source.op_type}({inputs})"
        return f"{memo[name]}:{slot}"

    return of


def _plain_inputs(op: OpCreation) -> bool:
    return bool(op.inputs) and not any(t.startswith("^") for t in op.inputs)


def _computed_alike_groups(ops: Mapping[str, OpCreation], digests: Mapping[tuple[str, int], int],
                           ran: set[str], seen: set[str]) -> list[list[str]]:
    """Mergeable ops grouped by device, type, first trace and the computation of each
    input (``_computations``), where their inputs are not all the same tensors."""
    computation = _computations(ops)
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for name, op in ops.items():
        if _mergeable(name, op, ran, seen):
            traced = str(digests.get((name, 0), 0))
            groups[(op.device, op.op_type, traced, *map(computation, op.inputs))].append(name)
    return [names for names in groups.values()
            if len(names) >= 2 and len({tuple(ops[n].inputs) for n in names}) > 1]


def _maybe_merged(kept: str, others: list[str], why: str) -> dict[str, tuple[str, str]]:
    """Notes of a group that may have been merged: ``kept`` counted as run, the others
    unknown (``why``)."""
    out = {kept: ("", _MAYBE_KEPT.format(kept=kept, listed=", ".join(others)))}
    out.update({name: (UNKNOWN, why.format(kept=kept)) for name in others})
    return out


def _traced_alike(names: list[str], digests: Mapping[tuple[str, int], int],
                  whole_tensors: bool, op_type: str) -> bool:
    """Whether the ops' first traces are equal (else an attribute the dump does not show
    differs), and recorded where the op type's attributes need them to be."""
    traced = {digests.get((name, 0), 0) for name in names}
    unrecorded_allowed = not whole_tensors and op_type not in _DTYPE_DECIDES
    return len(traced) == 1 and (0 not in traced or unrecorded_allowed)


def _merged_into_observed(kept: str, others: list[str]) -> dict[str, tuple[str, str]]:
    """Notes of a group whose one node a profile or log saw run."""
    listed = ", ".join(others)
    out = {kept: ("", f"{_WHY}: {listed} now read this node, which ran")}
    for name in others:
        out[name] = (REMOVED, f"{_WHY}: this op reads {kept}, which ran in its place")
    return out


def _merged_into_last(kept: str, others: list[str]) -> dict[str, tuple[str, str]]:
    """Notes of a group counted as its op created last, which one ran not being known."""
    listed = ", ".join(others)
    out = {kept: ("", f"{_WHY}, {kept} and {listed}, and ran one node for them all: counted "
                      f"here, as the one created last; which one it was the dump does not "
                      f"record (TF's log does)")}
    for name in others:
        out[name] = (REMOVED, f"{_WHY}, this one and {kept}, and ran one node for them: "
                              f"counted as {kept}, the one created last; which one ran "
                              f"the dump does not record (TF's log does)")
    return out


def _kept_and_others(names: list[str], seen: set[str],
                     order: dict[str, int]) -> tuple[str, list[str]] | None:
    """The op counted as run (the one a profile or log saw, else the one created last) and
    the others, in creation order; None where two were seen (grappler did not merge them)."""
    observed = [name for name in names if name in seen]
    if len(observed) > 1:
        return None
    kept = observed[0] if observed else max(names, key=order.__getitem__)
    return kept, sorted((n for n in names if n != kept), key=order.__getitem__)


def _group_notes(names: list[str], seen: set[str],
                 order: dict[str, int]) -> dict[str, tuple[str, str]]:
    """The notes of one merged group (``_kept_and_others``)."""
    found = _kept_and_others(names, seen, order)
    if found is None:
        return {}
    notes = _merged_into_observed if found[0] in seen else _merged_into_last
    return notes(*found)


def _maybe_notes(groups: list[list[str]], ops: Mapping[str, OpCreation], seen: set[str],
                 order: dict[str, int], why: str,
                 decided: Mapping[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The notes of groups that may have been merged (``_possible_groups``,
    ``_computed_alike_groups``), each of the others saying ``why``; Casts left out, whose
    DstT no unrecorded trace fixes, and groups an op of which is already ``decided``."""
    out: dict[str, tuple[str, str]] = {}
    for names in groups:
        found = _kept_and_others(names, seen, order)
        if found is not None and ops[names[0]].op_type not in _DTYPE_DECIDES \
                and not any(name in decided for name in names):
            out.update(_maybe_merged(*found, why=why))
    return out


def merged_duplicates(ops: Mapping[str, OpCreation], digests: Mapping[tuple[str, int], int],
                      whole_tensors: bool, ran: set[str], seen: set[str],
                      sites: Mapping[str, str] | None = None,
                      ) -> dict[str, tuple[str, str]]:
    """op name -> (kernel, note): REMOVED for a duplicate grappler deleted, UNKNOWN for one
    it may have, "" (keep its kernel) for the one counted as run. ``digests``: (op name,
    slot) -> first trace's digest, 0 or missing where not recorded; ``whole_tensors``: the
    digests hash whole tensors, so two constants with equal digests hold one value;
    ``sites``: op name -> the line of code that created it (its innermost frame outside TF)."""
    order = {name: k for k, name in enumerate(ops)}
    out: dict[str, tuple[str, str]] = {}
    for names in _candidate_groups(ops, digests, whole_tensors, ran, seen):
        if len(names) >= 2 and _traced_alike(names, digests, whole_tensors,
                                             ops[names[0]].op_type):
            out.update(_group_notes(names, seen, order))
    if sites and not whole_tensors:
        maybe = _maybe_notes(_possible_groups(ops, digests, sites, ran, seen), ops, seen, order,
                             _MAYBE, decided={})
        out.update({name: note for name, note in maybe.items() if name not in out})
    out.update(_maybe_notes(_computed_alike_groups(ops, digests, ran, seen), ops, seen, order,
                            _MAYBE_ALIKE, decided=out))
    return out
