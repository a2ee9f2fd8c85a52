"""A rule's answer for one dump graph op: its kernel, how we know it, and why.

In: what a rule decided (a link read from the log, a rule of ``graph_rules``, a pass
after them). Out: the ``OpKernel`` fields it fills, the deciding rule's name recorded
on the op, and the note rendered with the ending that says what an inference rests on.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ...model import OpKernel

__all__ = ["Verdict", "UNSEEN", "UNSEEN_IN_GRAPH", "FROM_GRAPH", "FROM_PROFILE"]

# What an inferred note rests on, said once at its end, in parentheses: a user reading
# one op's note must tell a guess from what a log or profile showed.
UNSEEN = "inferred; no log or profile shows it"
UNSEEN_IN_GRAPH = "inferred from the dump's graph; no log or profile shows it"
FROM_GRAPH = "inferred from the dump's graph"
FROM_PROFILE = "inferred from the profile"


class Verdict(NamedTuple):
    """The kernel one op ran, as a rule decided it."""

    kernel: str
    note: str
    evidence: str = "inferred"
    # One of the endings above; "" where the note needs none or says its own.
    basis: str = ""
    # The executed node that stands for the op, and the fused node it went into;
    # None leaves what the op has.
    node: Optional[str] = None
    fused_into: Optional[str] = None
    # The dtype the evidence names, for an op whose trace recorded none.
    dtype: str = ""

    @property
    def full_note(self) -> str:
        return f"{self.note} ({self.basis})" if self.basis else self.note

    def apply(self, op: OpKernel, rule: str) -> None:
        """Fill ``op`` from this verdict, decided by the rule named ``rule``."""
        op.kernel, op.evidence, op.note, op.rule = self.kernel, self.evidence, self.full_note, rule
        if self.node is not None:
            op.node = self.node
        if self.fused_into is not None:
            op.fused_into = self.fused_into
        op.dtype = op.dtype or self.dtype
