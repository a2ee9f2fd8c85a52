"""What ``tb-opmode`` prints for the committed runs: the summary as JSON, CSV and table,
``explain``, and the report in Markdown and HTML (``present.csv``, ``present.report``, ``cli``).

In: the unpacked fixtures, through ``cli.main`` in this process (no TensorFlow). Out: the
JSON contract with TF's counts, a CSV that is the JSON's rows, and a report that holds the
seed question's answer and, redacted, no path or host name of the machine that made it.
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.analyze.explain import call_sites
from tb_opmode.cli import main
from tb_opmode.present.csv import CSV_COLUMNS, render_csv

from .conftest import Fixture

DOCS = Path(__file__).resolve().parents[2] / "docs"


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def summary_doc(full_health: Fixture) -> dict[str, Any]:
    code, out, err = run("summary", str(full_health.directory), "--format", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_json_contract(summary_doc: dict[str, Any], full_health: Fixture) -> None:
    ref = full_health.reference
    (r,) = summary_doc["runs"]
    assert set(summary_doc) >= {"version", "warnings", "runs"}
    assert set(r) >= {"run", "tensorflow_version", "hosts", "onednn_enabled", "onednn_source", "counts_from",
                      "sources", "warnings", "functions", "xla_functions", "op_types"}
    assert {x["op_type"]: x["eager"]["executions"] for x in r["op_types"] if x["eager"]["executions"]} == ref["eager"]
    assert {x["op_type"]: x["graph"]["executions"] for x in r["op_types"] if x["graph"]["executions"]} == ref["graph"]
    assert {f["name"]: f["calls"] for f in r["functions"]} == ref["functions"]
    for x in r["op_types"]:
        for mode in ("eager", "graph"):
            kernels = x[mode]["kernels"]
            assert sum(k["executions"] for k in kernels) == x[mode]["executions"], (x["op_type"], mode)
            assert all(set(k) >= {"name", "executions", "onednn", "evidence"} for k in kernels)
            if x[mode]["executions"]:
                assert x[mode]["explanation"]
    (transpose,) = [x for x in r["op_types"] if x["op_type"] == "Transpose"]
    assert {(k["name"], k["evidence"]) for k in transpose["eager"]["kernels"]} == {
        ("_MklTranspose", "log"), ("Transpose", "log")}


def test_csv_is_the_jsons_rows(summary_doc: dict[str, Any], full_health: Fixture) -> None:
    code, out, err = run("summary", str(full_health.directory), "--format", "csv")
    assert code == 0, err
    assert out == render_csv(summary_doc)
    lines = list(csv.reader(io.StringIO(out)))
    assert tuple(lines[0]) == CSV_COLUMNS
    expected = sum(max(1, len(x[m]["kernels"])) for x in summary_doc["runs"][0]["op_types"]
                   for m in ("eager", "graph") if x[m]["executions"] or x[m]["kernels"])
    assert len(lines) - 1 == expected


def test_table(full_health: Fixture, summary_doc: dict[str, Any]) -> None:
    code, out, _err = run("summary", str(full_health.directory))
    assert code == 0
    assert f"TensorFlow {summary_doc['runs'][0]['tensorflow_version']}" in out
    (line,) = [x for x in out.splitlines() if x.split()[:1] == ["Transpose"] and x.split()[1].isdigit()]
    assert "_MklTranspose" in line and "(log)" in line


def _in_short(out: str) -> str:
    """The sentence under the run's first line, unwrapped."""
    lines = out.splitlines()
    assert lines[1].startswith("  in short: "), lines[:3]
    words = [lines[1]] + [x for x in itertools.takewhile(lambda x: x.startswith("    "), lines[2:])]
    return " ".join(x.strip() for x in words)


def test_table_answers_in_plain_words_first(full_health: Fixture, summary_doc: dict[str, Any]) -> None:
    """The seed user's question, answered before any table: what ran in both modes (TF's
    DebugDataReader counts say which), which ran a different kernel by mode, and where a
    oneDNN kernel ran eagerly too."""
    code, out, _err = run("summary", str(full_health.directory))
    assert code == 0
    sentence = _in_short(out)
    ref = full_health.reference
    both = sorted(set(ref["eager"]) & set(ref["graph"]))
    listed = sentence.split("in graphs (", 1)[1].split(")", 1)[0]
    assert sorted(listed.split(", ")) == both
    assert sentence.startswith(f"in short: {len(both)} op type(s) ran both eagerly and in graphs")
    kernels = {(x["op_type"], m): {k["name"] for k in x[m]["kernels"]}
               for x in summary_doc["runs"][0]["op_types"] for m in ("eager", "graph")}
    # Transpose: eager ran the stock kernel and _MklTranspose, graphs _MklTranspose only.
    assert kernels[("Transpose", "eager")] == {"Transpose", "_MklTranspose"}
    assert "ran a different kernel by mode: Transpose (eager ran Transpose, _MklTranspose; " \
           "graph ran _MklTranspose)" in sentence
    for op in both:
        if op != "Transpose" and kernels[(op, "eager")] == kernels[(op, "graph")]:
            assert f"{op} (" not in sentence
    onednn_eager = {x["op_type"] for x in summary_doc["runs"][0]["op_types"]
                    if any(k["onednn"] for k in x["eager"]["kernels"])
                    and any(k["onednn"] for k in x["graph"]["kernels"])}
    premises = {x.split()[0] for x in out.splitlines() if x.endswith("oneDNN kernels are not graph-only.")}
    assert premises == onednn_eager and "MatMul" in premises
    # Softmax ran _MklSoftmax eagerly and never in a graph (DebugDataReader's counts).
    assert "Softmax" in ref["eager"] and "Softmax" not in ref["graph"]
    assert "Softmax ran only eagerly (`_MklSoftmax` once): no Softmax ran in a graph" in " ".join(
        x.strip() for x in out.splitlines())
    # Before the evidence: the sources line and the table come after it.
    assert out.index("in short:") < out.index("counts from:") < out.index("op type ")


def test_explain(full_health: Fixture) -> None:
    code, out, err = run("explain", str(full_health.directory), "Transpose", "--top", "2")
    assert code == 0, err
    n = full_health.reference["eager"]["Transpose"]
    assert f"\neager: {n} executions\n" in out and "kernel _MklTranspose  x1  [log]" in out
    assert "regenerate.py" in out   # the call site of the eager transposes
    code, _out, err = run("explain", str(full_health.directory), "Transposee")
    assert code == 2 and "has no op type 'Transposee'" in err


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_report_is_redacted(full_health: Fixture, summary_doc: dict[str, Any], fmt: str) -> None:
    code, out, err = run("report", str(full_health.directory), "--format", fmt)
    assert code == 0, err
    assert "Transpose" in out and "_MklTranspose" in out and "MatMul" in out
    assert str(full_health.directory) not in out
    for host in summary_doc["runs"][0]["hosts"]:
        assert f"{host}." not in out and f" {host} " not in out, host
    assert "host1" in out
    if fmt == "html":
        assert out.lstrip().lower().startswith("<!doctype html") and "<script" not in out.lower()


def test_report_not_redacted_keeps_the_host(full_health: Fixture, summary_doc: dict[str, Any]) -> None:
    code, out, _err = run("report", str(full_health.directory), "--no-redact")
    assert code == 0
    assert any(host in out for host in summary_doc["runs"][0]["hosts"])


def test_no_tensor_run_says_what_it_cannot_tell(no_tensor: Fixture) -> None:
    code, out, err = run("summary", str(no_tensor.directory), "--format", "json")
    assert code == 0, err
    (r,) = json.loads(out)["runs"]
    (transpose,) = [x for x in r["op_types"] if x["op_type"] == "Transpose"]
    (kernel,) = transpose["eager"]["kernels"]
    assert kernel["name"] == "(unknown)" and kernel["evidence"] == "inferred"
    assert r["onednn_enabled"] is None and r["sources"]["logs"] == [] and r["sources"]["profile"] == []


def test_the_command_alone_tunes_malloc(full_health: Fixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_keep_freed_memory`` changes the whole process's allocator: the command sets it,
    a call of ``main`` from Python (a notebook, TensorBoard, these tests) does not."""
    from tb_opmode import cli
    calls: list[str] = []
    monkeypatch.setattr(cli, "_keep_freed_memory", lambda: calls.append("tuned"))
    assert run("summary", str(full_health.directory), "--format", "json")[0] == 0
    assert calls == []
    monkeypatch.setattr("sys.argv", ["tb-opmode", "summary", str(full_health.directory), "--format", "json"])
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert main() == 0 and calls == ["tuned"]


def test_explain_says_how_many_call_sites_top_left_out(full_health: Fixture) -> None:
    (model,) = load(str(full_health.directory))
    counts = {(op, mode): len(call_sites(model, op, mode, limit=None)) for op in model.op_types
              for mode in ("eager", "graph")}
    (op, mode), n = max(counts.items(), key=lambda kv: kv[1])
    assert n > 1
    code, out, err = run("explain", str(full_health.directory), op, "--top", "1")
    assert code == 0, err
    assert f"... and {n - 1} more call site{'s' if n > 2 else ''} (--top {n} lists them all)" in out
    once = [op for op, row in model.op_types.items() if row.eager.executions == 1][0]
    code, out, err = run("explain", str(full_health.directory), once)
    assert "\neager: 1 execution\n" in out, out


def test_functions_json_is_the_summarys_envelope(full_health: Fixture,
                                                 summary_doc: dict[str, Any]) -> None:
    code, out, err = run("functions", str(full_health.directory), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"version", "warnings", "runs"}
    assert doc["version"] == summary_doc["version"] and doc["warnings"] == summary_doc["warnings"]
    assert doc["runs"] == [{"run": r["run"], "tf_functions": r["tf_functions"]}
                           for r in summary_doc["runs"]]
    assert doc["runs"][0]["tf_functions"]  # the fit's step functions


@pytest.mark.parametrize("command", ["summary", "functions", "explain", "report"])
def test_an_unknown_option_is_told_with_its_commands_usage(
        full_health: Fixture, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = [command, str(full_health.directory), *(["MatMul"] if command == "explain" else []),
            "--frobnicate"]
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: tb-opmode {command} ")
    assert err.endswith(f"tb-opmode {command}: error: unrecognized arguments: --frobnicate\n")


def _help_entries(help_text: str) -> dict[str, str]:
    """``--help``'s arguments (``-h, --help``, ``--run RUN``, ``LOGDIR``) -> their help text."""
    entries: dict[str, str] = {}
    name = ""
    for line in help_text.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            name, _, rest = line.strip().partition("  ")
            entries[name] = rest.strip()
        elif line.startswith("   ") and name:
            entries[name] = (entries[name] + " " + line.strip()).strip()
        else:
            name = ""
    return entries


def _documented_usage(command: str) -> str:
    """The command's usage line in docs/cli.md's block of usages."""
    text = (DOCS / "cli.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"tb-opmode {command} LOGDIR")]
    return line


@pytest.mark.parametrize("command", ["summary", "functions", "explain", "report"])
def test_help_says_what_each_argument_is_and_the_docs_name_the_same_ones(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each argument of ``--help`` has a line saying what it is (``--log``, ``--format`` and
    LOGDIR of ``functions``, ``explain`` and ``report`` had none), and docs/cli.md's usage
    of the command names the options ``--help`` lists, no more, no fewer."""
    with pytest.raises(SystemExit) as stopped:
        main([command, "--help"])
    assert stopped.value.code == 0
    entries = _help_entries(capsys.readouterr().out)
    assert entries and all(entries.values()), {k: v for k, v in entries.items() if not v}
    options = {word for name in entries for word in re.findall(r"--[\w-]+", name)} - {"--help"}
    documented = _documented_usage(command)
    assert set(re.findall(r"--[\w-]+", documented)) == options, documented
    assert "LOGDIR" in entries and documented.startswith(f"tb-opmode {command} LOGDIR")
