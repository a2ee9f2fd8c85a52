"""The graph rules as a table: each op names the rule that decided it, and no output does.

In: the committed runs of ``tests/data`` (TF 2.21: FULL_HEALTH with profile and log;
NO_TENSOR alone), loaded as the product loads them. Out: assertions on
``OpKernel.rule`` and on the table ``graph_rules.GRAPH_RULES`` itself.
"""
from __future__ import annotations

import json

import pytest

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import graph, verdict
from tb_opmode.analyze.kernels.fusions import FILTER_BIAS_RULE
from tb_opmode.analyze.kernels.graph_rules import GRAPH_RULES
from tb_opmode.analyze.kernels.links import LINK_RULES
from tb_opmode.present import tab
from tb_opmode.present.contract import summary

from .conftest import Fixture

_LINK_NAMES = {name for name, _rule in LINK_RULES}
_TABLE_NAMES = {rule.name for rule in GRAPH_RULES}
# The rules outside the two tables: the name match, the fusion found before the table,
# and the passes after it.
_OTHER_NAMES = {graph.EXECUTED_NODE_RULE, graph.MERGED_DUPLICATE_RULE, FILTER_BIAS_RULE,
                "gradient_reshape_sum_removed", "gradient_reshape_sum_over_no_axes",
                "gradient_reshape_sum_kept_rank", "gradient_reshape_after_removed",
                "gradient_reshape_sum_untold"}
_ENDINGS = (verdict.UNSEEN, verdict.UNSEEN_IN_GRAPH, verdict.FROM_GRAPH, verdict.FROM_PROFILE)


def test_the_table_names_each_rule_once_and_ends_with_one_that_always_answers() -> None:
    names = [rule.name for rule in GRAPH_RULES]
    assert len(set(names)) == len(names)
    assert not (set(names) & _LINK_NAMES) and not (set(names) & _OTHER_NAMES)
    assert all(rule.decides for rule in GRAPH_RULES)
    assert names[-1] == "rule_table"


@pytest.mark.parametrize("which", ["full_model", "no_tensor_model"])
def test_every_graph_op_names_the_rule_that_decided_it(which: str, request: pytest.FixtureRequest) -> None:
    model: RunModel = request.getfixturevalue(which)
    assert model.graph_ops
    by_rule: dict[str, set[str]] = {}
    for op in model.graph_ops:
        assert op.rule in _LINK_NAMES | _TABLE_NAMES | _OTHER_NAMES, (op.op_name, op.rule)
        by_rule.setdefault(op.rule, set()).add(op.evidence)
        if op.rule in _LINK_NAMES:
            assert op.evidence == "log", (op.op_name, op.rule)
        # Each note says once what an inference rests on.
        assert all(op.note.count(f"({ending})") <= 1 for ending in _ENDINGS), op.note
    if which == "no_tensor_model":
        # No log, no profile: every op is inferred, most by the rules of the table.
        assert set(by_rule) <= _TABLE_NAMES | _OTHER_NAMES
        assert by_rule.keys() & _TABLE_NAMES
    else:
        assert by_rule.keys() & _LINK_NAMES


def test_no_output_carries_the_rule(full_model: RunModel, full_health: Fixture) -> None:
    """The rule is for scoring the rules, not part of the JSON, CSV or table contract."""
    logdir = str(full_health.directory)
    view = tab.build_view(full_model, logdir)
    outputs = [json.dumps(summary([full_model], logdir, explanations=True)),
               json.dumps(tab.export_json(view)), tab.export_csv(view)]
    used = {op.rule for op in full_model.graph_ops}
    assert used
    for text in outputs:
        assert '"rule"' not in text
        assert not [name for name in used if name in text]


def _reduction_site(axes_type: str, shapes: str = "Shape") -> object:
    """A gradient's Sum(g, axes) as HuggingFace BERT's LayerNorm has (TF 2.21's truth
    matrix), its axes made by an op of ``axes_type`` from two ops of type ``shapes``."""
    from types import SimpleNamespace

    from tb_opmode.read.tfdbg import OpCreation

    def op(name: str, op_type: str, inputs: tuple[str, ...] = ()) -> OpCreation:
        return OpCreation(op_type, name, "g", "/cpu:0", 1, (), inputs)

    ops = {"g": op("g", "Mul"), "a": op("a", shapes), "b": op("b", shapes),
           "bga": op("bga", axes_type, ("a:0", "b:0")),
           "mul_1/Sum": op("mul_1/Sum", "Sum", ("g:0", "bga:0"))}
    return SimpleNamespace(op=SimpleNamespace(op_type="Sum", op_name="mul_1/Sum"),
                           created=ops["mul_1/Sum"], graph_ops=ops)


def test_a_reduction_over_computed_axes_without_an_event_is_unknown() -> None:
    """Grappler turns such a Sum it proves a no-op into an Identity, which leaves no
    profiler event either and which it keeps or bypasses by edges the dump does not show
    (the matrix's hf_bert: mul_1/Sum ran as Identity, mul_2/Sum_1 was removed)."""
    from tb_opmode.analyze.kernels import graph_rules

    assert graph_rules._reduces_over_computed_axes(_reduction_site("BroadcastGradientArgs"))
    # Constant axes, a Range over a rank grappler folds (Keras 3's losses), or the axes of
    # two constant shapes (Keras 2's loss of scalars, TF 2.13's matrix) leave no control
    # input that could keep an Identity: removed.
    assert not graph_rules._reduces_over_computed_axes(_reduction_site("Const"))
    assert not graph_rules._reduces_over_computed_axes(_reduction_site("Range"))
    assert not graph_rules._reduces_over_computed_axes(
        _reduction_site("BroadcastGradientArgs", shapes="Const"))
