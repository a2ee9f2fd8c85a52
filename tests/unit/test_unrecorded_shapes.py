"""Keras 3's loss ops that grappler removes where shapes make them no-ops, in dumps that
record no shapes: ``(unknown)`` there, and left to the other rules where the dump records
them.

In: hand-made ``OpCreation``s shaped like the truth matrix's Keras 3 fit (TF 2.21), whose
``fit_CURT_HEALTH`` / ``fit_NO_TENSOR`` cells named these ops' own kernels where TF's log
shows grappler removed them. Out: what ``unrecorded_shapes.shapeless_no_op`` decides.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tb_opmode.analyze.kernels.unrecorded_shapes import shapeless_no_op
from tb_opmode.read.tfdbg import CURT_HEALTH, FULL_HEALTH, NO_TENSOR, OpCreation
from tb_opmode.vocab import UNKNOWN

LOSS = [("data_1", "Placeholder", ()), ("loss/Cast", "Cast", ("data_1:0",)),
        ("Cast_2", "Cast", ("data_1:0",)), ("Cast_3", "Cast", ("ArgMax:0",)),
        ("ArgMax", "ArgMax", ()), ("range", "Range", ()), ("loss/Const", "Const", ()),
        ("mul", "Mul", ("div_no_nan:0", "BroadcastTo:0")), ("div_no_nan", "DivNoNan", ()),
        ("BroadcastTo", "BroadcastTo", ("Cast:0", "BroadcastTo/shape:0")),
        ("Sum", "Sum", ("mul:0", "range:0")), ("loss/Sum", "Sum", ("xent:0", "loss/Const:0")),
        ("ones", "Const", ()), ("grad/mul", "Mul", ("ones:0", "grad/div:0")),
        ("adam/Const_1", "Const", ()), ("adam/Mul_1", "Mul", ("adam/Sub_2:0", "adam/Const_1:0")),
        # Keras 2's SGD without momentum: v * 0.0 added to the step
        ("v", "ReadVariableOp", ()), ("SGD/mul_1", "Mul", ("v:0", "SGD/Cast/x:0")),
        ("SGD/Cast/x", "Const", ()), ("SGD/add", "AddV2", ("SGD/mul:0", "SGD/mul_1:0")),
        ("SGD/add_2", "AddV2", ("SGD/mul:0", "grad:0"))]


def site(name: str, mode: int, traced: bool = False, profiled: bool = True,
         inputs_traced: bool = True, cut: bool = False, traced_always: bool = True) -> Any:
    """``name``'s site in a dump of ``mode``; ``traced``: the dump holds its first trace's
    digest (FULL_HEALTH's, SHAPE's), as it does unless a circular buffer dropped it, and
    ``inputs_traced`` its inputs'; ``cut``: a circular buffer dropped graph traces;
    ``profiled``: a profiled step ran its debug node; ``traced_always``: the executor would
    have traced its node at every run (so a missing event proves it did not run)."""
    ops = {n: OpCreation(t, n, "g", "/cpu:0", 1, (), i) for n, t, i in LOSS}
    digests = {("g", name, 0): 0x1234} if traced else {}
    if inputs_traced:
        digests.update({("g", t.partition(":")[0], 0): 0x1234 for t in ops[name].inputs})
    return SimpleNamespace(dump=SimpleNamespace(tensor_debug_modes={mode: 1}, trace_digests=digests),
                           created=ops[name], graph_ops=ops, debug_node_profiled=profiled,
                           ctx=SimpleNamespace(graph_cut=cut), traced_always=traced_always,
                           op=SimpleNamespace(op_type=ops[name].op_type, op_name=name, graph_id="g"))


@pytest.mark.parametrize("name", ["Sum", "BroadcastTo", "grad/mul", "loss/Cast", "Cast_2",
                                  "adam/Mul_1", "SGD/add"])
@pytest.mark.parametrize("mode", [CURT_HEALTH, NO_TENSOR])
def test_a_loss_op_that_may_be_a_no_op_is_unknown_without_shapes(name: str, mode: int) -> None:
    verdict = shapeless_no_op(site(name, mode))
    assert verdict is not None and verdict.kernel == UNKNOWN
    assert verdict.note.startswith("unknown whether it ran") and "FULL_HEALTH" in verdict.note


@pytest.mark.parametrize("name", ["loss/Sum", "Cast_3", "mul", "SGD/add_2"])
def test_ops_no_shape_could_make_no_ops_are_left_to_the_other_rules(name: str) -> None:
    """A Sum over constant axes, a Cast of its own tensor, a product and a sum of tensors,
    in a profiled step (whose missing event the rules before read)."""
    assert shapeless_no_op(site(name, CURT_HEALTH)) is None


@pytest.mark.parametrize("name", ["loss/Sum", "Cast_3"])
def test_a_no_op_by_shape_no_profiled_step_ran_is_unknown(name: str) -> None:
    """Keras 2's metric casts its labels to the type they may have, and a Sum over
    constant axes may sum over none: without shapes, dtypes or a profile, unknown."""
    verdict = shapeless_no_op(site(name, NO_TENSOR, profiled=False))
    assert verdict is not None and verdict.kernel == UNKNOWN and "no profiled step" in verdict.note
    # A product no shape makes a no-op stays with the other rules.
    assert shapeless_no_op(site("mul", NO_TENSOR, profiled=False)) is None


def test_a_dump_that_records_shapes_is_left_to_the_rules_that_read_them() -> None:
    assert shapeless_no_op(site("Sum", FULL_HEALTH, traced=True)) is None
    # unless its circular buffer kept no trace of the op
    verdict = shapeless_no_op(site("Sum", FULL_HEALTH, traced=False))
    assert verdict is not None and verdict.kernel == UNKNOWN


def test_a_no_op_by_shape_whose_input_trace_a_buffer_dropped_is_unknown() -> None:
    """Keras 3's label Cast in a FULL_HEALTH dump with tfdbg's default buffer (the truth
    matrix's fit_default_buffer): its own trace kept, its input's dropped, so whether it
    forwarded its input is not known."""
    lost = site("loss/Cast", FULL_HEALTH, traced=True, inputs_traced=False, cut=True,
                traced_always=False)
    verdict = shapeless_no_op(lost)
    assert verdict is not None and verdict.kernel == UNKNOWN and "of its input" in verdict.note
    # A Cast with no twin, in a profiled step whose missing event proves nothing.
    alone = site("Cast_3", FULL_HEALTH, traced=True, inputs_traced=False, cut=True,
                 traced_always=False)
    verdict = shapeless_no_op(alone)
    assert verdict is not None and verdict.kernel == UNKNOWN and "cannot tell" in verdict.note
    # With the input's trace kept, the rules that compare traces decide.
    kept = site("loss/Cast", FULL_HEALTH, traced=True, cut=True, traced_always=False)
    assert shapeless_no_op(kept) is None
    # A profiled step that would have shown its node decides it too.
    seen = site("Cast_3", FULL_HEALTH, traced=True, inputs_traced=False, cut=True)
    assert shapeless_no_op(seen) is None
