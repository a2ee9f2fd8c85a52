"""The answer first, in plain words (``present.lead``), on the committed runs.

In: the committed FULL_HEALTH and NO_TENSOR runs (read without TF). Out: every (op type,
mode)'s sentence agrees with the row its chips are drawn from (``tests/lead_check``), and
the check fails on a sentence that does not; the eager counts match TF's own; the CLI's
``explain`` says the same sentences first; tf.function names read as Python's; the
headline's premise lines name only op types that ran a oneDNN kernel in both modes.
"""
from __future__ import annotations

import copy
import io
import re

import pytest

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.cli import main
from tb_opmode.present.lead import function_words, lead
from tb_opmode.present.tab import build_view, overview

from ..lead_check import _mode_problems, chip_verdict, disagreements, leads_of
from .conftest import Fixture

_RUNS = ("full_health", "no_tensor")


@pytest.mark.parametrize("name", _RUNS)
def test_every_sentence_agrees_with_its_chips(name: str, request: pytest.FixtureRequest) -> None:
    fixture: Fixture = request.getfixturevalue(name)
    leads = leads_of(fixture.directory)
    assert len(leads) > 10
    assert disagreements(fixture.directory) == []


def test_the_check_catches_a_sentence_that_disagrees(full_health: Fixture) -> None:
    """A count or a kind changed in the sentence is reported."""
    row, lead = next((r, le) for r, le in leads_of(full_health.directory)
                     if r["graph"]["executions"] and chip_verdict(r["graph"]) == "oneDNN")
    stats = row["graph"]
    wrong_count = lead["graph"].replace(f"{stats['executions']}×", f"{stats['executions'] + 1}×")
    assert _mode_problems(row["op_type"], "graph", wrong_count, stats)
    wrong_kind = lead["graph"] + " 3 ran stock `Foo`."
    assert _mode_problems(row["op_type"], "graph", wrong_kind, stats)


def test_eager_counts_are_tf_own(full_health: Fixture) -> None:
    """The eager sentence's count, and its callers' counts, add up to DebugDataReader's."""
    by_op = {row["op_type"]: lead for row, lead in leads_of(full_health.directory)}
    for op, count in full_health.reference["eager"].items():
        text = by_op[op]["eager"]
        assert f"Eager, {count}×" in text, (op, text)
        parts = [int(n) for n in re.findall(r"(\d+) (?:from|with no call site)", text)]
        assert sum(parts) == count, (op, text)


def test_cli_explain_leads_with_the_same_sentences(full_health: Fixture) -> None:
    by_op = {row["op_type"]: lead for row, lead in leads_of(full_health.directory)}
    for op in ("Transpose", "MatMul", "AddV2", "Mul"):
        if op not in by_op:
            continue
        out = io.StringIO()
        assert main(["explain", str(full_health.directory), op], stdout=out, stderr=io.StringIO()) == 0
        head = out.getvalue().split("How TF decided")[0]
        flat = " ".join(head.split())
        for key in ("eager", "graph", "kernel"):
            assert " ".join(by_op[op][key].split()) in flat, (op, key, flat)


@pytest.mark.parametrize("graph,words", [
    ("__inference_step_123", "step"),
    ("__inference_train_step_42", "Keras train step"),
    ("__inference_multi_step_on_iterator_9094", "Keras train step"),
    ("one_step_on_data", "Keras train step"),
    ("__inference_predict_function_7", "Keras predict step"),
    ("my_fn", "my_fn"),
])
def test_function_words(graph: str, words: str) -> None:
    assert function_words(graph) == words


def test_premises_name_onednn_in_both_modes(full_health: Fixture, full_model: RunModel) -> None:
    view = build_view(full_model, str(full_health.directory), timeline=False)
    glance = overview(view)["glance"]
    both = [r for r in view.rows.values() if r["eager"]["executions"] and r["graph"]["executions"]]
    assert glance["basis"] == "both" and glance["total"] == len(both)
    assert sorted(glance["names"]) == sorted(r["op_type"] for r in both)
    expected = {r["op_type"] for r in both
                if any(k["onednn"] for k in r["eager"]["kernels"])
                and any(k["onednn"] for k in r["graph"]["kernels"])}
    named = {line.split(" ", 1)[0] for line in glance["premises"] if line.endswith("not graph-only.")}
    assert named == expected
    # The rest: op types that ran oneDNN in one mode and never ran in the other.
    one_mode = {r["op_type"] for r in view.rows.values()
                if (any(k["onednn"] for k in r["eager"]["kernels"]) and not r["graph"]["executions"])
                or (any(k["onednn"] for k in r["graph"]["kernels"]) and not r["eager"]["executions"])}
    rest = [line for line in glance["premises"] if not line.endswith("not graph-only.")]
    assert {line.split(" ", 1)[0] for line in rest} == one_mode and "Softmax" in one_mode
    assert all(" ran only " in line for line in rest)


def test_a_kernel_seen_and_inferred_is_named_once(full_health: Fixture, full_model: RunModel) -> None:
    """A kernel the log names for some executions and the rules infer for the others is
    two chips (a MirroredStrategy replica's Muls: ``Mul x48 (log)``, ``Mul x8
    (inferred)``); the kernel sentence named it twice ("stock `Mul`, stock `Mul` in both
    modes") and the graph sentence's split read as a slip. Here the committed run's Mul
    row, its graph's stock Mul split so, as that run's was."""
    model = full_model
    row = copy.deepcopy(build_view(model, str(full_health.directory), timeline=False).rows["Mul"])
    graph = row["graph"]["kernels"]
    (mul,) = [k for k in graph if k["name"] == "Mul" and k["kind"] == "stock"]
    assert mul["executions"] >= 2 and mul["evidence"] == "log"
    seen, inferred = mul["executions"] - 1, 1
    graph.append({**mul, "executions": inferred, "evidence": "inferred"})
    mul["executions"] = seen
    said = lead(model, row)
    assert said["kernel"].count("`Mul`") == 1, said["kernel"]
    assert f"{seen} ran stock `Mul` [log]" in said["graph"], said["graph"]
    assert f"{inferred} ran stock `Mul` [inferred]" in said["graph"], said["graph"]
    assert _mode_problems("Mul", "graph", said["graph"], row["graph"]) == []
