"""Our counts against TensorFlow's own DebugDataReader, on dumps TF just wrote."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.cli import main
from tb_opmode.present.contract import summary

from .conftest import ddr_counts


@pytest.mark.parametrize("fixture", ["bert_logdir", "cnn_logdir", "cnn_off_logdir"])
def test_counts_equal_debug_data_reader(fixture: str, request: pytest.FixtureRequest) -> None:
    logdir: Path = request.getfixturevalue(fixture)
    eager, graph, functions = ddr_counts(logdir)
    assert sum(eager.values()) > 50 and sum(graph.values()) > 50 and functions
    (run,) = [m for m in load(str(logdir)) if m.dumps]
    assert run.run == "."
    ours_eager = Counter({t: r.eager.executions for t, r in run.op_types.items() if r.eager.executions})
    ours_graph = Counter({t: r.graph.executions for t, r in run.op_types.items() if r.graph.executions})
    assert ours_eager == eager
    assert ours_graph == graph
    assert run.functions == functions
    assert run.problems == []


def test_summary_json_contract(bert_logdir: Path, tf_version: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["summary", str(bert_logdir), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"version", "warnings", "runs"}
    (run,) = [r for r in doc["runs"] if r["run"] == "."]
    assert run["tensorflow_version"] == tf_version
    assert run["onednn_enabled"] is True
    assert run["sources"]["debugger"] and run["sources"]["profile"] and run["sources"]["logs"]
    by_type = {r["op_type"]: r for r in run["op_types"]}
    for row in run["op_types"]:
        assert set(row) == {"op_type", "eager", "graph"}
        for mode in ("eager", "graph"):
            assert isinstance(row[mode]["executions"], int)
            for k in row[mode]["kernels"]:
                assert k["evidence"] in ("log", "profile", "inferred")
                assert k["onednn"] == k["name"].startswith("_Mkl")
    # The seed question: eager Transpose is dispatched as Transpose but runs _MklTranspose.
    transpose = by_type["Transpose"]
    assert transpose["eager"]["executions"] >= 1
    assert [k["name"] for k in transpose["eager"]["kernels"]] == ["_MklTranspose"]
    assert transpose["eager"]["kernels"][0]["evidence"] == "log"
    assert transpose["eager"]["kernels"][0]["executions"] == transpose["eager"]["executions"]
    assert [k["name"] for k in by_type["MatMul"]["eager"]["kernels"]] == ["_MklMatMul"]
    assert all(not k["onednn"] for k in by_type["AddV2"]["eager"]["kernels"])
    assert by_type["AddV2"]["eager"]["executions"] and by_type["AddV2"]["graph"]["executions"]
    assert any(f["name"].startswith("__inference_") for f in run["functions"])


def test_profile_run_of_keras_callback_attaches_to_dump(bert_logdir: Path) -> None:
    models = load(str(bert_logdir))
    assert [m.run for m in models] == ["."]
    (profile,) = models[0].sources["profile"]
    assert profile.endswith(".xplane.pb") and "/plugins/profile/" in profile


def test_table_and_csv(bert_logdir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["summary", str(bert_logdir)]) == 0
    table = capsys.readouterr().out
    # The table's row: the op type, then its eager count (the lines above it are sentences).
    line = next(t for t in table.splitlines() if t.split()[:1] == ["Transpose"] and t.split()[1].isdigit())
    assert "_MklTranspose (log)" in line
    assert main(["summary", str(bert_logdir), "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "run,op_type,mode,executions,kernel,kernel_executions,onednn,evidence"
    assert any(r.startswith(".,Transpose,eager,") and ",_MklTranspose," in r for r in rows)
    doc = summary(load(str(bert_logdir)), str(bert_logdir))
    n_pairs = sum(1 for r in doc["runs"][0]["op_types"] for m in ("eager", "graph")
                  if r[m]["executions"] or r[m]["kernels"])
    kernel_rows = sum(max(1, len(r[m]["kernels"])) for r in doc["runs"][0]["op_types"]
                      for m in ("eager", "graph") if r[m]["executions"] or r[m]["kernels"])
    assert len(rows) - 1 == kernel_rows >= n_pairs


def test_missing_logdir_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["summary", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and "no such directory" in err
    assert main(["summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tfdbg_events" in err
    # A log given for its directory: said so, with what to give instead.
    log = Path(__file__).resolve().parent / "data" / "vlog_tf221.txt"
    assert main(["summary", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(log) in err and "a file, not a directory" in err, err


def test_several_hosts_in_one_directory(bert_logdir: Path, cnn_logdir: Path, tmp_path: Path) -> None:
    """Two dump sets (hosts) in one run directory: counts add up, both hosts listed."""
    import shutil

    logdir = tmp_path / "multi"
    shutil.copytree(bert_logdir, logdir, ignore=shutil.ignore_patterns("*.txt", "2*"))
    for path in cnn_logdir.glob("tfdbg_events.*"):
        ts, _host, kind = path.name.split(".", 1)[1].split(".", 2)
        shutil.copy(path, logdir / f"tfdbg_events.{ts}.worker-1.{kind}")
    (run,) = load(str(logdir))
    assert len(run.dumps) == 2 and set(run.hosts) >= {"worker-1"} and len(run.hosts) == 2
    total = [ddr_counts(d) for d in (bert_logdir, cnn_logdir)]
    expected_eager = total[0][0] + total[1][0]
    expected_graph = total[0][1] + total[1][1]
    assert Counter({t: r.eager.executions for t, r in run.op_types.items()
                    if r.eager.executions}) == expected_eager
    assert Counter({t: r.graph.executions for t, r in run.op_types.items()
                    if r.graph.executions}) == expected_graph
    assert run.functions == total[0][2] + total[1][2]
