"""The committed runs read without TensorFlow: counts equal those TF's DebugDataReader
recorded at regeneration time, kernels equal those TF's own log names.

In: ``tests/data/fit_full_health`` and ``fit_no_tensor`` (``conftest.py``). Out: assertions
that compare ``tb_opmode.analyze.assemble.load`` with ``<name>.reference.json`` (written by TF) and with
the log's ``Executing op`` / ``Instantiating kernel`` lines (parsed here, not by us).
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import RunModel, is_function, load
from tb_opmode.analyze.kernels import UNKNOWN

from .conftest import Fixture, log_eager_kernels, tf_dtype


def _counts(model: RunModel) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    eager = {op: row.eager.executions for op, row in model.op_types.items() if row.eager.executions}
    graph = {op: row.graph.executions for op, row in model.op_types.items() if row.graph.executions}
    return eager, graph, dict(model.functions)


@pytest.mark.parametrize("which", ["full_health", "no_tensor"])
def test_counts_equal_debug_data_readers(which: str, request: pytest.FixtureRequest) -> None:
    fixture: Fixture = request.getfixturevalue(which)
    model: RunModel = request.getfixturevalue("full_model" if which == "full_health" else "no_tensor_model")
    ref = fixture.reference
    assert model.counts_from == "debugger"
    assert _counts(model) == (ref["eager"], ref["graph"], ref["functions"])
    assert model.tensorflow_version == ref["tensorflow_version"]
    # Eager and graph ops both, a MatMul and a Transpose in each: what the fixture is for.
    for op in ("MatMul", "Transpose"):
        assert ref["eager"][op] >= 1 and ref["graph"][op] >= 1, op


def test_sources_of_the_full_run(full_model: RunModel, full_health: Fixture) -> None:
    profiles = sorted(p.relative_to(full_health.directory).as_posix()
                      for p in full_health.directory.glob("plugins/profile/*/*.xplane.pb"))
    assert len(profiles) == 1
    assert full_model.sources["profile"] == profiles
    assert full_model.sources["logs"] == ["tf_stderr.log", "tf_stdout.log"]
    assert full_model.problems == []


@pytest.mark.parametrize(("which", "mode"), [("full_health", 4), ("no_tensor", 1)])
def test_tensor_debug_mode_of_every_execution(which: str, mode: int, request: pytest.FixtureRequest) -> None:
    """Each execution record names its tensor_debug_mode (debug_event.proto: FULL_HEALTH = 4,
    NO_TENSOR = 1): one mode, on as many records as TF counted executions and calls."""
    fixture: Fixture = request.getfixturevalue(which)
    model: RunModel = request.getfixturevalue("full_model" if which == "full_health" else "no_tensor_model")
    (dump,) = model.dumps
    executions = sum(fixture.reference["eager"].values()) + sum(fixture.reference["functions"].values())
    assert dict(dump.tensor_debug_modes) == {mode: executions}


def test_eager_output_dtypes_equal_the_health_tensors(full_model: RunModel, full_health: Fixture) -> None:
    """FULL_HEALTH records each eager output's dtype; ours per op type equal what
    DebugDataReader read from the same health tensors ("?" = no health tensor: non-float)."""
    ours: dict[str, dict[str, int]] = {}
    for (op, dtype), n in full_model.dumps[0].execution_dtypes.items():
        if is_function(op):  # DebugDataReader's eager list leaves tf.function calls out
            continue
        ours.setdefault(op, {})[dtype or "?"] = ours.get(op, {}).get(dtype or "?", 0) + n
    want = {op: {("?" if d == "?" else tf_dtype(d)): n for d, n in per.items()}
            for op, per in full_health.reference["eager_output_dtypes"].items()}
    assert ours == want
    assert want["Transpose"] == {"DT_FLOAT": 1, "?": 1}  # the float32 and the int32 transpose


def test_eager_kernels_are_those_of_the_log(full_model: RunModel, full_health: Fixture) -> None:
    """Each eager op type's kernels (with evidence ``log``) are the ones the log's
    ``Instantiating kernel`` lines name after its ``Executing op`` line."""
    from_log = log_eager_kernels(full_health.log())
    assert from_log["Transpose"] == Counter({("_MklTranspose", "DT_FLOAT"): 1, ("Transpose", "DT_INT32"): 1})
    checked = 0
    for op in ("Transpose", "Softmax", "Relu", "MatMul"):
        dispatched = "_MklMatMul" if op == "MatMul" and "_MklMatMul" in from_log else op
        log_kernels = Counter({k: n for (k, _d), n in from_log[dispatched].items()})
        ours = Counter({e.kernel: e.executions for e in full_model.eager_ops if e.op_type == op})
        assert ours == log_kernels, op
        assert {e.evidence for e in full_model.eager_ops if e.op_type == op} == {"log"}
        checked += 1
    assert checked == 4


def test_eager_transpose_of_each_dtype(full_model: RunModel) -> None:
    """The seed question: the float32 eager Transpose ran _MklTranspose though dispatched
    as Transpose; the int32 one the stock kernel."""
    by_dtype = {e.dtype: e for e in full_model.eager_ops if e.op_type == "Transpose"}
    assert by_dtype["DT_FLOAT"].kernel == "_MklTranspose"
    assert by_dtype["DT_FLOAT"].dispatch == "Transpose"
    assert "__wrapped__Transpose" in by_dtype["DT_FLOAT"].note
    assert by_dtype[""].kernel == "Transpose"


def test_no_tensor_dump_cannot_tell_eager_transpose(no_tensor_model: RunModel) -> None:
    """NO_TENSOR records no dtype: eager Transpose is (unknown), and the note says why."""
    (entry,) = [e for e in no_tensor_model.eager_ops if e.op_type == "Transpose"]
    assert entry.kernel == UNKNOWN and entry.evidence == "inferred"
    assert "NO_TENSOR" in entry.note and "int32" in entry.note
    # MatMul is float math: the same kernel whatever the float dtype, but _MklMatMul with
    # oneDNN on and MatMul off, and a dump alone does not say which: unknown, saying how
    # to find out.
    assert no_tensor_model.onednn_enabled is None
    (matmul,) = [e for e in no_tensor_model.eager_ops if e.op_type == "MatMul"]
    assert matmul.kernel == UNKNOWN and "_MklMatMul" in matmul.note
    assert "profile one step" in matmul.note and "tb-opmode record" in matmul.note


def test_graph_kernels_are_those_of_the_log(full_model: RunModel, full_health: Fixture) -> None:
    """Every graph op linked to a node carries the kernel of that node's
    ``Process node`` line in the log."""
    text = full_health.log().read_text(errors="replace")
    checked = 0
    for op in full_model.graph_ops:
        if op.evidence != "log" or not op.node or op.fused_into or op.kernel.startswith("("):
            continue
        assert f"{{{{node {op.node}}}}} = {op.kernel}[" in text, (op.op_name, op.node, op.kernel)
        checked += 1
    assert checked >= 10
    transposes = {op.op_name: op.kernel for op in full_model.graph_ops if op.op_type == "Transpose"}
    # the transposing layer runs _MklTranspose; Tensordot's identity transpose is removed
    assert transposes["fixture_model_1/swap_axes_1/transpose"] == "_MklTranspose"
    assert transposes["fixture_model_1/proj_1/Tensordot/transpose"] == "(optimized away)"


def test_onednn_detected_from_the_banner(full_model: RunModel, no_tensor_model: RunModel,
                                         full_health: Fixture) -> None:
    assert "oneDNN custom operations are on" in full_health.log().read_text(errors="replace")
    assert (full_model.onednn_enabled, full_model.onednn_source) == (True, "start-up banner in the log")
    assert no_tensor_model.onednn_enabled is None  # a dump alone does not record it


def test_onednn_verbose_primitives_from_stdout(full_model: RunModel, full_health: Fixture) -> None:
    """The ONEDNN_VERBOSE lines (stdout) counted per primitive kind, as the lines say."""
    want: Counter[str] = Counter()
    for line in full_health.log("stdout").read_text().splitlines():
        fields = line.split(",")
        if fields[:3] == ["onednn_verbose", "v1", "primitive"] and fields[3] == "exec":
            want[fields[5]] += 1
        elif fields[:2] == ["onednn_verbose", "exec"]:
            want[fields[3]] += 1
    got: Counter[str] = Counter()
    for log in full_model.logs:
        for key, n in log.onednn_primitives.items():
            got[key[0]] += n
    assert want and got == want


def test_two_dumps_of_one_process_in_one_directory_are_named(full_health: Fixture, no_tensor: Fixture,
                                                              tmp_path: Path) -> None:
    """The same script dumped twice into one directory (each process writes its own set,
    both of task localhost:0): the run sums them, which TF's DebugDataReader refuses, so
    the run says so, naming both sets; one dump alone says nothing of the kind."""
    both = tmp_path / "rerun"
    both.mkdir()
    prefixes = set()
    for fixture in (full_health, no_tensor):
        for f in fixture.directory.glob("tfdbg_events.*"):
            shutil.copy(f, both / f.name)
            prefixes.add(f.name.rsplit(".", 1)[0])
    assert len(prefixes) == 2
    (model,) = load(str(both))
    said = [p.message for p in model.problems if "same task" in p.message]
    assert len(said) == 1, [str(p) for p in model.problems]
    assert "localhost:0" in said[0] and all(prefix in said[0] for prefix in prefixes)
    # the counts are still those of both dumps, as TF recorded them
    eager = {op: row.eager.executions for op, row in model.op_types.items() if row.eager.executions}
    assert eager == dict(Counter(full_health.reference["eager"]) + Counter(no_tensor.reference["eager"]))
    (alone,) = load(str(full_health.directory))
    assert not [p for p in alone.problems if "same task" in p.message]
