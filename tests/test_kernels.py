"""Kernel truth: the kernel per (mode, op type) against TF's own log lines."""
from __future__ import annotations

import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.analyze.explain import explain
from tb_opmode.model import RunModel
from tb_opmode.vocab import REMOVED

_EXECUTING = re.compile(r"(?:\] |\s)Executing op (\S+) in device")
_INSTANTIATING = re.compile(r"Instantiating kernel for node: \{\{node ([^}]+)\}\} = ([A-Za-z0-9_]+)\[")
_PROCESS = re.compile(r"Process node: \d+ step (-?\d+) \{\{node ([^}]+)\}\} = ([A-Za-z0-9_]+)\[")
_THREAD = re.compile(r"^I\d{4} [\d:.]+ +(\d+) ")


def _canonical(name: str) -> str:
    for prefix in ("_MklNative", "_Mkl"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def truth_from_log(logdir: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(eager, graph) op type -> kernels, read straight from TF's log lines.

    Eager: the kernel of the node named like the dispatched op, instantiated
    after its 'Executing op' line on the same thread. Graph: the kernel of every
    'Process node' line (outside constant folding, step -1) whose node name ends
    with the name of an op that the dump (read by DebugDataReader) says executed.
    """
    from tensorflow.python.debug.lib import debug_events_reader  # the reference is TF's reader

    executed: dict[str, str] = {}
    with debug_events_reader.DebugDataReader(str(logdir)) as reader:
        reader.update()
        for t in reader.graph_execution_traces(digest=True):
            executed[t.op_name] = t.op_type
    eager: dict[str, set[str]] = defaultdict(set)
    graph: dict[str, set[str]] = defaultdict(set)
    dispatched: dict[str, str] = {}
    with open(logdir / "tf_log.txt", errors="replace") as f:
        for line in f:
            thread = _THREAD.match(line)
            tid = thread.group(1) if thread else ""
            m = _EXECUTING.search(line)
            if m:
                dispatched[tid] = m.group(1)
                continue
            m = _INSTANTIATING.search(line)
            if m and dispatched.get(tid) == m.group(1):
                eager[_canonical(m.group(1))].add(m.group(2))
                dispatched.pop(tid)
                continue
            m = _PROCESS.search(line)
            if m and m.group(1) != "-1" and not m.group(3).startswith("Debug"):
                parts = m.group(2).split("/")
                for i in range(len(parts)):
                    op_type = executed.get("/".join(parts[i:]))
                    if op_type is not None:
                        graph[op_type].add(m.group(3))
                        break
    return eager, graph


def kernel_sets(model: RunModel, mode: str) -> dict[str, set[str]]:
    """Op type -> names of the kernels we report in ``mode`` (placeholders included)."""
    return {op_type: {k.name for k in row.mode(mode).kernels}
            for op_type, row in model.op_types.items() if row.mode(mode).executions}


def ran_graph_kernels(model: RunModel) -> dict[str, set[str]]:
    """Op type -> kernels that ran as the op's own node (what TF's lines name after it).

    Left out: ops grappler removed, constant-folded or fused into another op's
    node (that node's lines carry the other op's name).
    """
    out: dict[str, set[str]] = defaultdict(set)
    for op in model.graph_ops:
        if op.kernel == REMOVED or op.fused_into or op.note.startswith("constant-folded"):
            out.setdefault(op.op_type, set())
            continue
        out[op.op_type].add(op.kernel)
    return dict(out)


def _dump_run(logdir: Path) -> RunModel:
    (model,) = [m for m in load(str(logdir)) if m.dumps]
    return model


def without_log(logdir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "nolog"
    shutil.copytree(logdir, out, ignore=shutil.ignore_patterns("*.txt"))
    return out


@pytest.mark.parametrize("fixture", ["bert_logdir", "cnn_logdir", "cnn_off_logdir"])
def test_kernels_with_log_equal_tf_log_lines(fixture: str, request: pytest.FixtureRequest) -> None:
    logdir: Path = request.getfixturevalue(fixture)
    model = _dump_run(logdir)
    truth_eager, truth_graph = truth_from_log(logdir)
    ours_eager = kernel_sets(model, "eager")
    ours_graph = ran_graph_kernels(model)
    checked = 0
    for op_type, kernels in ours_eager.items():
        if op_type in truth_eager:
            assert kernels == truth_eager[op_type], op_type
            checked += 1
    for op_type, kernels in ours_graph.items():
        assert kernels == truth_graph.get(op_type, set()), op_type
        checked += 1
    assert checked > 20
    for row in model.op_types.values():
        for stats in (row.eager, row.graph):
            assert all(k.evidence == "log" for k in stats.kernels if k.name != "Const"), row.op_type


@pytest.mark.parametrize("fixture", ["bert_logdir", "cnn_logdir", "cnn_off_logdir"])
def test_dump_and_profile_alone_match_the_log(fixture: str, request: pytest.FixtureRequest,
                                              tmp_path: Path) -> None:
    logdir: Path = request.getfixturevalue(fixture)
    with_log = _dump_run(logdir)
    alone = _dump_run(without_log(logdir, tmp_path))
    assert not alone.logs and alone.profiles
    pairs = equal = 0
    for mode in ("eager", "graph"):
        expected, got = kernel_sets(with_log, mode), kernel_sets(alone, mode)
        for op_type, kernels in expected.items():
            pairs += 1
            equal += got.get(op_type) == kernels
    assert pairs > 40
    assert equal / pairs >= 0.95, f"{equal}/{pairs}"


def test_seed_question(bert_logdir: Path, tmp_path: Path, tf_version: str) -> None:
    for model, evidence in ((_dump_run(bert_logdir), "log"),
                            (_dump_run(without_log(bert_logdir, tmp_path)), "inferred")):
        rows = model.op_types
        eager_t = rows["Transpose"].eager.kernels
        assert [k.name for k in eager_t] == ["_MklTranspose"]
        assert eager_t[0].evidence == evidence
        assert "_MklTranspose" in {k.name for k in rows["Transpose"].graph.kernels}
        for op in ("AddV2", "Mul"):
            for mode in ("eager", "graph"):
                kernels = {k.name for k in rows[op].mode(mode).kernels} - {REMOVED}
                assert kernels == {op}, (op, mode, kernels)
        assert {k.name for k in rows["MatMul"].eager.kernels} == {"_MklMatMul"}
        assert {k.name for k in rows["MatMul"].graph.kernels} == {"_MklMatMul"}
        assert model.onednn_enabled is True


def test_onednn_off_is_detected_and_everything_stock(cnn_off_logdir: Path, tmp_path: Path) -> None:
    for model in (_dump_run(cnn_off_logdir), _dump_run(without_log(cnn_off_logdir, tmp_path))):
        assert model.onednn_enabled is False, model.onednn_source
        for row in model.op_types.values():
            for stats in (row.eager, row.graph):
                assert not any(k.onednn for k in stats.kernels), row.op_type
        assert {k.name for k in model.op_types["Conv2D"].graph.kernels} == {"Conv2D"}


def test_custom_loop_has_both_modes_with_their_kernels(cnn_logdir: Path) -> None:
    model = _dump_run(cnn_logdir)
    conv = model.op_types["Conv2D"]
    assert conv.eager.executions and conv.graph.executions
    assert {k.name for k in conv.eager.kernels} == {"_MklNativeConv2D"}
    assert {k.name for k in conv.graph.kernels} == {"_MklNativeConv2D"}
    relu = model.op_types["Relu"]
    assert {k.name for k in relu.eager.kernels} == {"Relu"} == {k.name for k in relu.graph.kernels}


def test_unfused_graph_ops_say_the_dump_blocked_fusion(bert_logdir: Path, cnn_off_logdir: Path) -> None:
    """The dumped runs never fuse (checked against the log's kernels); a graph op the
    remapper could fuse says why: tfdbg's debug ops are extra consumers."""
    for logdir, fused in ((bert_logdir, "_MklNativeFusedMatMul"), (cnn_off_logdir, "_FusedConv2D")):
        model = _dump_run(logdir)
        # (FusedBatchNorm* are ops of their own, kernels _MklNativeFusedBatchNorm*.)
        assert not any(k.fused_into or "Fused" in k.name for row in model.op_types.values()
                       if not row.op_type.startswith("FusedBatchNorm") for k in row.graph.kernels)
        reasons = explain(model, "BiasAdd")["graph"]["reasons"]
        (blocked,) = [r for r in reasons if r["kind"] == "instrumentation"]
        assert fused in blocked["text"] and "enable_dump_debug_info" in blocked["text"]
        for op, mode in (("Transpose", "graph"), ("BiasAdd", "eager"), ("MatMul", "eager")):
            if op in model.op_types:
                got = explain(model, op)[mode]["reasons"]
                assert not [r for r in got if r["kind"] == "instrumentation"], (op, mode)
