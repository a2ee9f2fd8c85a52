"""A dump whose ``.graphs`` file is cut (a run still writing it, a copy that stopped):
the graph executions of ops it no longer defines are in no count, and the answer says so
instead of answering as if they had not run.

In: the committed FULL_HEALTH run with its ``.graphs`` file cut to a fraction of itself,
through ``cli.main``. Out: the counts of the intact run split into counted and uncounted
(``uncounted_graph_executions``), and a headline qualified by it.
"""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.cli import main
from tb_opmode.present.tab import build_view, overview

from ..lead_check import disagreements, leads_of
from .conftest import Fixture


def _summary(logdir: Path, fmt: str = "json") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["summary", str(logdir), "--format", fmt], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _graph_executions(run: dict[str, Any]) -> int:
    return sum(row["graph"]["executions"] for row in run["op_types"])


@pytest.fixture
def cut(full_health: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    logdir = tmp_path / "cut"
    shutil.copytree(full_health.directory, logdir)
    (graphs,) = logdir.glob("tfdbg_events.*.graphs")
    with open(graphs, "r+b") as f:
        f.truncate(graphs.stat().st_size // 3)
    return logdir


def test_uncounted_executions_are_the_ones_the_cut_lost(full_health: Fixture, cut: Path) -> None:
    code, out, err = _summary(full_health.directory)
    assert code == 0, err
    (whole,) = json.loads(out)["runs"]
    code, out, err = _summary(cut)
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert whole["uncounted_graph_executions"] == 0
    assert run["uncounted_graph_executions"] > 0
    assert _graph_executions(run) + run["uncounted_graph_executions"] == _graph_executions(whole)
    assert any(f"{run['uncounted_graph_executions']} graph executions" in w for w in run["warnings"])


def test_the_answer_says_what_it_covers(full_health: Fixture, cut: Path) -> None:
    code, out, err = _summary(cut, "table")
    assert code == 0, err
    uncounted = json.loads(_summary(cut)[1])["runs"][0]["uncounted_graph_executions"]
    text = " ".join(out.split())
    assert "in short: among what was counted, " in text
    assert f"{uncounted:,} graph execution(s) are in no count" in text
    code, out, err = _summary(full_health.directory, "table")
    assert "among what was counted" not in out and "are in no count" not in out


def test_the_tabs_headline_says_it_too(cut: Path) -> None:
    (model,) = load(str(cut))
    glance = overview(build_view(model, str(cut), timeline=False))["glance"]
    assert glance["premises"][0].startswith(
        f"{model.uncounted_graph_executions:,} graph execution(s) are in no count")


def test_no_kernel_sentence_calls_an_op_eager_only_that_ran_in_graphs_uncounted(
        full_health: Fixture, cut: Path) -> None:
    whole = {row["op_type"]: row for row, _lead in leads_of(full_health.directory)}
    checked = 0
    for row, lead in leads_of(cut):
        ran_in_graphs = whole.get(row["op_type"], {}).get("graph", {}).get("executions", 0)
        if row["eager"]["executions"] and not row["graph"]["executions"] and ran_in_graphs:
            checked += 1
            assert "uncounted" in row["graph"], row["op_type"]
            assert "eagerly only" not in lead["kernel"], lead["kernel"]
            assert "uncounted by the dump" in lead["kernel"], lead["kernel"]
    assert checked  # the cut left some op types counted eagerly only
    assert disagreements(cut) == []


def test_explain_says_what_its_counts_leave_out(cut: Path) -> None:
    """``explain`` answers from the counts ``summary`` warns about: it warns the same."""
    summary_warnings = json.loads(_summary(cut)[1])["warnings"]
    assert any("graph executions" in w for w in summary_warnings)
    (model,) = load(str(cut))
    op_type = next(t for t, row in model.op_types.items() if row.eager.executions or row.graph.executions)
    out, err = io.StringIO(), io.StringIO()
    assert main(["explain", str(cut), op_type], stdout=out, stderr=err) == 0
    said = [line.removeprefix("tb-opmode: warning: ") for line in err.getvalue().splitlines()]
    assert said == summary_warnings
