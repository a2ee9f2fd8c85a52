"""The gradient Reshapes' pass reads a dump's digests once, however many Reshapes.

In: a synthetic dump graph of N broadcasting gradients, ``Reshape(Sum(g), Shape(x))``,
as TF builds them, recorded by a dump with no digests (NO_TENSOR, CURT_HEALTH), half of
the Sums seen removed by a profile (no event) and half seen running ``Sum``; the Reshapes
left to the default "ran". Out: the pass (``graph._gradient_reshapes``) walks the dump's
``trace_digests`` the same number of times for N and for 4N Reshapes (it walked them once
per Reshape: a BERT's thousand Reshapes times its tens of thousands of traced tensors),
and each Reshape gets the verdict of its Sum: removed with it, or unknown (a Sum that ran
over a shape no digest records).
"""
from __future__ import annotations

from typing import Any

from tb_opmode.analyze.kernels import graph
from tb_opmode.model import OpKernel, RunModel
from tb_opmode.read.tfdbg import DumpSet
from tb_opmode.read.tfdbg.dumpset import GraphInfo, OpCreation
from tb_opmode.vocab import REMOVED

_GRAPH = "g1"


class _CountingDigests(dict):  # type: ignore[type-arg]
    """A ``trace_digests`` that counts the walks over its entries."""

    walks = 0

    def items(self) -> Any:
        type(self).walks += 1
        return super().items()


def _op(op_type: str, name: str, *inputs: str) -> OpCreation:
    return OpCreation(op_type, name, _GRAPH, "/device:CPU:0", 1, (), inputs)


def _model(n: int) -> tuple[RunModel, list[OpKernel], list[tuple[int, OpKernel]]]:
    """A run of one dump whose graph holds ``n`` gradient Reshapes of a Sum."""
    ops: dict[str, OpCreation] = {}
    digests = _CountingDigests()
    resolved: list[OpKernel] = []
    unresolved: list[tuple[int, OpKernel]] = []
    for i in range(n):
        scope = f"gradient_tape/encoder/layer_{i}/add/grad"
        for created in (_op("Sum", f"{scope}/Sum", f"{scope}/g", f"{scope}/axes"),
                        _op("Reshape", f"{scope}/Reshape", f"{scope}/Sum", f"{scope}/Shape")):
            ops[created.op_name] = created
            digests[(_GRAPH, created.op_name, 0)] = 0  # no digest: NO_TENSOR, CURT_HEALTH
        kernel = REMOVED if i % 2 else "Sum"
        resolved.append(OpKernel(_GRAPH, f"{scope}/Sum", "Sum", 1, kernel, "profile"))
        unresolved.append((0, OpKernel(_GRAPH, f"{scope}/Reshape", "Reshape", 1, "Reshape",
                                       "inferred")))
    dump = DumpSet(directory="run", prefix="tfdbg_events.1", host="vm",
                   graphs={_GRAPH: GraphInfo(_GRAPH, "train_step", "", ops)},
                   trace_digests=digests)
    return RunModel(run="run", directory="run", dumps=[dump]), resolved, unresolved


def _walks(n: int) -> tuple[int, list[OpKernel]]:
    """The walks over the digests the pass makes for ``n`` Reshapes, and the Reshapes."""
    model, resolved, unresolved = _model(n)
    _CountingDigests.walks = 0
    graph._gradient_reshapes(model, resolved, unresolved)
    return _CountingDigests.walks, [op for _i, op in unresolved]


def test_the_digests_are_walked_as_often_for_4n_reshapes_as_for_n() -> None:
    few, _ = _walks(50)
    many, _ = _walks(200)
    assert few >= 1  # the pass did read them: the count measures it
    assert many == few


def test_each_reshape_gets_the_verdict_its_sum_shows() -> None:
    _, reshapes = _walks(20)
    for i, op in enumerate(reshapes):
        if i % 2:  # the profile saw no event of its Sum: removed with it
            assert (op.kernel, op.rule) == (REMOVED, "gradient_reshape_sum_removed"), op
        else:  # its Sum ran over a shape no digest records: left as it was
            assert (op.kernel, op.rule) == ("Reshape", ""), op
