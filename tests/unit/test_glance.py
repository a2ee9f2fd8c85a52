"""The plain-words answer (``present.glance``): when two modes' kernels differ, and the
sentences ``summary`` prints.

In: op types shaped as the summary contract has them (``OpTypeDoc``), small enough to
read at once; the real runs' sentences are checked against TF's counts in
``test_cli_outputs``. Out: assertions on ``kernels_differ``, ``both_modes`` and
``glance_lines``.
"""
from __future__ import annotations

from typing import Any

from tb_opmode.present.glance import (
    MAX_NAMES,
    MAX_ONE_MODE,
    both_modes,
    glance_lines,
    kernels_differ,
    one_mode_only,
    premises,
)
from tb_opmode.present.report import kernels_differ as report_kernels_differ
from tb_opmode.vocab import REMOVED, UNKNOWN


def _mode(*kernels: tuple[str, int]) -> dict[str, Any]:
    return {"executions": sum(n for _k, n in kernels),
            "kernels": [{"name": k, "executions": n, "onednn": k.startswith("_Mkl"), "evidence": "log"}
                        for k, n in kernels]}


def _op(op_type: str, eager: list[tuple[str, int]], graph: list[tuple[str, int]]) -> dict[str, Any]:
    return {"op_type": op_type, "eager": _mode(*eager), "graph": _mode(*graph)}


def test_only_kernels_that_ran_can_differ() -> None:
    # Removed by grappler, unknown, or folded into a Const: no kernel of the op ran there.
    assert kernels_differ(_op("Mul", [("Mul", 3)], [("Mul", 5), (REMOVED, 2)])) == ""
    assert kernels_differ(_op("Mul", [("Mul", 3)], [(UNKNOWN, 5)])) == ""
    assert kernels_differ(_op("Shape", [("Shape", 3)], [("Shape", 1), ("Const", 4)])) == ""
    # A Const op's own kernel is not a folded one.
    assert kernels_differ(_op("Const", [("Const", 1)], [("HostConst", 1)])) == \
        "eager ran Const; graph ran HostConst"
    # One mode only: nothing to compare.
    assert kernels_differ(_op("MatMul", [], [("_MklMatMul", 4)])) == ""


def test_onednn_in_one_mode_only_is_said_first() -> None:
    assert kernels_differ(_op("MatMul", [("MatMul", 1)], [("_MklMatMul", 4)])) == \
        "oneDNN only in graphs: eager ran MatMul; graph ran _MklMatMul"
    assert kernels_differ(_op("Transpose", [("_MklTranspose", 2), ("Transpose", 1)],
                              [("Transpose", 4)])) == \
        "oneDNN only eagerly: eager ran Transpose, _MklTranspose; graph ran Transpose"


def test_both_modes_puts_differing_then_onednn_then_the_most_run_first() -> None:
    ops = [_op("AddV2", [("AddV2", 9)], [("AddV2", 90)]),
           _op("Softmax", [("_MklSoftmax", 1)], [("_MklSoftmax", 1)]),
           _op("MatMul", [("MatMul", 1)], [("_MklMatMul", 4)]),
           _op("Pack", [("Pack", 5)], []),
           _op("Mul", [("Mul", 9)], [("Mul", 91)])]
    assert [op["op_type"] for op in both_modes(ops)] == ["MatMul", "Softmax", "Mul", "AddV2"]


def test_glance_lines_say_what_ran_in_both_modes_and_why_kernels_differ() -> None:
    ops = [_op("MatMul", [("_MklMatMul", 1)], [("_MklMatMul", 4)]),
           _op("Transpose", [("Transpose", 2)], [("_MklTranspose", 4)]),
           _op("Pack", [("Pack", 5)], [])]
    lines = glance_lines(ops)
    assert all(len(line) <= 100 for line in lines) and lines[0].startswith("  in short: ")
    assert all(line.startswith("    ") for line in lines[1:-1])
    text = " ".join(line.strip() for line in lines)
    assert text.startswith("in short: 2 op type(s) ran both eagerly and in graphs (Transpose, MatMul); "
                           "1 ran a different kernel by mode: Transpose (oneDNN only in graphs: "
                           "eager ran Transpose; graph ran _MklTranspose).")
    assert lines[-1] == "  MatMul also ran `_MklMatMul` eagerly, once: oneDNN kernels are not graph-only."


def test_glance_lines_when_nothing_differs_or_nothing_ran_in_both() -> None:
    same = glance_lines([_op("Mul", [("Mul", 1)], [("Mul", 2)])])
    assert " ".join(x.strip() for x in same) == (
        "in short: 1 op type(s) ran both eagerly and in graphs (Mul); each ran the same kernel "
        "in both modes, where the kernel is known.")
    assert glance_lines([_op("Pack", [("Pack", 5)], [])]) == [
        "  in short: no op type ran both eagerly and in a tf.function graph."]
    many = [_op(f"Op{i:03d}", [("K", 1)], [("K", 1)]) for i in range(MAX_NAMES + 5)]
    text = " ".join(x.strip() for x in glance_lines(many))
    assert f"Op{MAX_NAMES - 1:03d}, ...)" in text and f"Op{MAX_NAMES:03d}" not in text


def test_onednn_in_one_mode_because_the_op_ran_in_one_mode_only() -> None:
    """The seed user's "_MklMatMul only in graphs" where no MatMul ran eagerly at all: said
    so, with the kernel's own count, most executed op types first; stock kernels and op
    types of both modes are not such lines."""
    ops = [_op("MatMul", [], [("_MklMatMul", 80), ("MatMul", 4)]),
           _op("Conv2D", [("_MklNativeConv2D", 2)], []),
           _op("Relu", [], [("Relu", 90)]),
           _op("Softmax", [("_MklSoftmax", 1)], [("_MklSoftmax", 4)])]
    assert one_mode_only(ops) == [
        "MatMul ran only in graphs (`_MklMatMul` 80 times): no MatMul ran eagerly, so there is no "
        "kernel to compare it with.",
        "Conv2D ran only eagerly (`_MklNativeConv2D` twice): no Conv2D ran in a graph, so there is "
        "no kernel to compare it with."]
    many = [_op(f"Op{i}", [], [("_MklOp", 100 - i)]) for i in range(MAX_ONE_MODE + 2)]
    lines = one_mode_only(many)
    assert len(lines) == MAX_ONE_MODE + 1 and lines[0].startswith("Op0 ran only in graphs")
    assert lines[-1] == "... and 2 more op type(s) that ran oneDNN in one mode only."
    text = " ".join(x.strip() for x in glance_lines(ops))
    assert text.endswith("Softmax also ran `_MklSoftmax` eagerly, once: oneDNN kernels are not graph-only. "
                         "MatMul ran only in graphs (`_MklMatMul` 80 times): no MatMul ran eagerly, so "
                         "there is no kernel to compare it with. Conv2D ran only eagerly "
                         "(`_MklNativeConv2D` twice): no Conv2D ran in a graph, so there is no kernel "
                         "to compare it with.")


def test_an_identity_grappler_put_in_place_of_the_op_is_no_other_kernel() -> None:
    """A Sum over no axes (or axes of size 1) that grappler made an Identity is a graph
    simplification: its Sum kernels are the same in both modes."""
    sum_op = _op("Sum", [("Sum", 25)], [("Sum", 100), (REMOVED, 52), ("Identity", 20)])
    assert kernels_differ(sum_op) == "" and not report_kernels_differ(sum_op)
    # An Identity op's own kernel is no replacement.
    assert kernels_differ(_op("Identity", [("Identity", 1)], [("_MklIdentity", 1)]))


def test_a_kernel_no_evidence_observed_is_said_to_be_inferred_where_a_sentence_states_it() -> None:
    """A profile alone names no eager kernel: the rules' _MklMatMul is said as inferred,
    in the premise and in the one-mode line alike; an observed one is said plainly."""
    inferred = _op("MatMul", [("_MklMatMul", 3)], [("_MklMatMul", 4)])
    inferred["eager"]["kernels"][0]["evidence"] = "inferred"
    only_graph = _op("BatchMatMulV2", [], [("_MklBatchMatMulV2", 2)])
    only_graph["graph"]["kernels"][0]["evidence"] = "inferred"
    (premise,) = premises([inferred])
    assert premise == ("MatMul also ran `_MklMatMul` eagerly, 3 times, inferred from TF's rules "
                       "(nothing this run left names it): oneDNN kernels are not graph-only.")
    (line,) = one_mode_only([only_graph])
    assert line.startswith("BatchMatMulV2 ran only in graphs (`_MklBatchMatMulV2` twice, inferred "
                           "from TF's rules (nothing this run left names it)): ")
    observed = _op("MatMul", [("_MklMatMul", 3)], [("_MklMatMul", 4)])
    assert premises([observed]) == ["MatMul also ran `_MklMatMul` eagerly, 3 times: oneDNN kernels "
                                    "are not graph-only."]
