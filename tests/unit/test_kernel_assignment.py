"""Kernel assignment on in-memory models: ``kernels.assign_eager``, ``assign_graph``,
``inferred_kernel`` and ``detect_onednn`` on reader facts built here, one branch each.

In: ``RunModel``s holding hand-made ``DumpSet``/``LogFacts``/``Profile`` facts, shaped as
the readers give them. Out: the kernel, evidence and note each branch gives. Where an
expectation is a fact of TensorFlow (which kernel TF 2.21 runs), it is read from the
committed run's log (``tests/data``), not written here.
"""
from __future__ import annotations

from collections import Counter

import pytest

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import (
    REMOVED,
    UNKNOWN,
    EagerAssignment,
    OpKernel,
    assign_eager,
    assign_graph,
    detect_onednn,
    inferred_kernel,
)
from tb_opmode.read.textlog import EagerKernel, LogFacts
from tb_opmode.read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN, DumpSet, GraphInfo, OpCreation
from tb_opmode.read.xplane import Profile

from .conftest import Fixture, log_eager_kernels

TF = "2.21.0"
GRAPH = "g1"


def dump(executions: dict[tuple[str, str], int] | None = None,
         ops: dict[str, str] | None = None, traces: dict[str, int] | None = None,
         trace_dtype: str = "DT_FLOAT") -> DumpSet:
    """A dump set: eager (op type, dtype) -> executions; graph op name -> op type; op name -> traces."""
    d = DumpSet(directory="/run", prefix="tfdbg_events.1.host", host="host", tensorflow_version=TF)
    d.execution_dtypes = Counter(executions or {})
    d.executions = Counter({(op, ""): n for (op, _t), n in (executions or {}).items()})
    graph = GraphInfo(GRAPH, name="train_step")
    for name, op_type in (ops or {}).items():
        graph.ops[name] = OpCreation(op_type, name, GRAPH, "/cpu:0", 1, ())
    d.graphs = {GRAPH: graph}
    d.traces = Counter({(GRAPH, name, 0): n for name, n in (traces or {}).items()})
    d.trace_dtypes = {(GRAPH, name, 0): trace_dtype for name in (traces or {})}
    return d


def model(*dumps: DumpSet, logs: tuple[LogFacts, ...] = (), profiles: tuple[Profile, ...] = (),
          onednn: bool | None = True) -> RunModel:
    m = RunModel(run=".", directory="/run", tensorflow_version=TF, onednn_enabled=onednn)
    m.dumps, m.logs, m.profiles = list(dumps), list(logs), list(profiles)
    return m


def log(eager: dict[EagerKernel, int] | None = None, graph: dict[str, tuple[str, str]] | None = None,
        cpu: frozenset[str] | None = None, banner: bool | None = None) -> LogFacts:
    facts = LogFacts(path="/run/tf.log", cpu_features=cpu, onednn_opts=banner)
    facts.eager_kernels = Counter(eager or {})
    facts.graph_kernels = dict(graph or {})
    return facts


def by_kernel(entries: list[EagerAssignment], op_type: str) -> dict[str, EagerAssignment]:
    return {e.kernel: e for e in entries if e.op_type == op_type}


@pytest.fixture(scope="module")
def tf_eager(full_health: Fixture) -> dict[tuple[str, str], str]:
    """(op type, dtype) -> the kernel TF 2.21's log shows its eager op ran, in the committed run."""
    out: dict[tuple[str, str], str] = {}
    for dispatched, kernels in log_eager_kernels(full_health.log()).items():
        for kernel, dtype in kernels:
            out[(dispatched.removeprefix("_Mkl"), dtype)] = kernel
    return out


# ---------------------------------------------------------------- eager, from the log

def test_eager_kernel_per_dtype_from_the_log(tf_eager: dict[tuple[str, str], str]) -> None:
    """Each dump dtype takes the log's kernel of the same dtype; a non-float output the
    non-float one. All executions keep their count."""
    facts = log({EagerKernel("Transpose", tf_eager[("Transpose", "DT_FLOAT")], "DT_FLOAT"): 1,
                 EagerKernel("Transpose", tf_eager[("Transpose", "DT_INT32")], "DT_INT32"): 1})
    m = model(dump({("Transpose", "DT_FLOAT"): 3, ("Transpose", ""): 2}), logs=(facts,))
    got = {(e.dtype, e.kernel, e.executions, e.evidence) for e in assign_eager(m, [])}
    assert got == {("DT_FLOAT", tf_eager[("Transpose", "DT_FLOAT")], 3, "log"),
                   ("", tf_eager[("Transpose", "DT_INT32")], 2, "log")}
    (mkl,) = [e for e in assign_eager(m, []) if e.dtype == "DT_FLOAT"]
    assert mkl.kernel != mkl.dispatch and f"__wrapped__{mkl.dispatch}" in mkl.note


def test_eager_without_dtype_keeps_the_logs_split() -> None:
    """NO_TENSOR: no dtype to choose by, so the log's own 3:1 split of the kernels is kept."""
    facts = log({EagerKernel("Transpose", "_MklTranspose", "DT_FLOAT"): 3,
                 EagerKernel("Transpose", "Transpose", "DT_INT32"): 1})
    m = model(dump({("Transpose", DTYPE_UNKNOWN): 8}), logs=(facts,))
    entries = by_kernel(assign_eager(m, []), "Transpose")
    assert {k: e.executions for k, e in entries.items()} == {"_MklTranspose": 6, "Transpose": 2}


def test_eager_some_float_takes_only_float_kernels() -> None:
    """CURT/CONCISE_HEALTH: 'a float type': int kernels are not candidates."""
    facts = log({EagerKernel("Transpose", "_MklTranspose", "DT_FLOAT"): 1,
                 EagerKernel("Transpose", "Transpose", "DT_INT32"): 5})
    m = model(dump({("Transpose", DTYPE_SOME_FLOAT): 4}), logs=(facts,))
    assert {k: e.executions for k, e in by_kernel(assign_eager(m, []), "Transpose").items()} == \
        {"_MklTranspose": 4}


def test_eager_dispatch_line_only() -> None:
    """A log with 'Executing op' but no instantiation: the dispatch name, said to hide the rewrite."""
    m = model(dump({("Relu", "DT_FLOAT"): 2}), logs=(log({EagerKernel("Relu", "", ""): 2}),))
    (entry,) = assign_eager(m, [])
    assert (entry.kernel, entry.evidence) == ("Relu", "log")
    assert "only the dispatch line" in entry.note


def test_eager_rename_before_dispatch() -> None:
    """MatMul dispatched as _MklMatMul (the eager rename): counted under MatMul, note says so."""
    m = model(dump({("MatMul", "DT_FLOAT"): 1}),
              logs=(log({EagerKernel("_MklMatMul", "_MklMatMul", "DT_FLOAT"): 1}),))
    (entry,) = assign_eager(m, [])
    assert (entry.op_type, entry.kernel, entry.dispatch) == ("MatMul", "_MklMatMul", "_MklMatMul")
    assert "renamed to _MklMatMul before dispatch" in entry.note


def test_function_calls_are_not_eager_ops() -> None:
    m = model(dump({("__inference_step_5", ""): 3, ("Relu", "DT_FLOAT"): 1}))
    assert [e.op_type for e in assign_eager(m, [])] == ["Relu"]


# ---------------------------------------------------------------- eager, without a log

def test_eager_takes_the_kernel_its_graphs_ran() -> None:
    """No log: the same op type and dtype observed in this run's graphs stands for eager."""
    seen = OpKernel(GRAPH, "s", "Softmax", 4, "_MklSoftmax", "profile", dtype="DT_FLOAT")
    m = model(dump({("Softmax", "DT_FLOAT"): 2}))
    (entry,) = assign_eager(m, [seen])
    assert (entry.kernel, entry.evidence, entry.executions) == ("_MklSoftmax", "inferred", 2)
    assert "ran _MklSoftmax in this run's graphs" in entry.note


def test_graph_observation_of_another_dtype_does_not_count() -> None:
    seen = OpKernel(GRAPH, "t", "Transpose", 4, "_MklTranspose", "log", dtype="DT_FLOAT")
    m = model(dump({("Transpose", DTYPE_UNKNOWN): 2}))
    (entry,) = assign_eager(m, [seen])
    assert entry.kernel == UNKNOWN and "records no dtype" in entry.note


def test_fused_graph_kernels_say_nothing_about_eager() -> None:
    fused = OpKernel(GRAPH, "m", "MatMul", 4, "_MklNativeFusedMatMul", "log", dtype="DT_FLOAT",
                     fused_into="_MklNativeFusedMatMul")
    m = model(dump({("MatMul", "DT_FLOAT"): 1}))
    (entry,) = assign_eager(m, [fused])
    assert entry.kernel != "_MklNativeFusedMatMul" and "this run's graphs" not in entry.note


@pytest.mark.parametrize(("op_type", "dtype"), [("Transpose", "DT_FLOAT"), ("Transpose", "DT_INT32"),
                                                ("Softmax", "DT_FLOAT"), ("Relu", "DT_FLOAT")])
def test_rule_table_agrees_with_tfs_log(op_type: str, dtype: str,
                                        tf_eager: dict[tuple[str, str], str]) -> None:
    """No evidence at all: the rule table's eager kernel for TF 2.21 is the one the
    committed run's TF 2.21 log shows."""
    m = model(dump({(op_type, dtype): 1}))
    (entry,) = assign_eager(m, [])
    assert (entry.kernel, entry.evidence) == (tf_eager[(op_type, dtype)], "inferred")


def test_onednn_off_keeps_stock(tf_eager: dict[tuple[str, str], str]) -> None:
    assert tf_eager[("Transpose", "DT_FLOAT")] != "Transpose"   # on: not stock
    m = model(dump({("Transpose", "DT_FLOAT"): 1}), onednn=False)
    (entry,) = assign_eager(m, [])
    assert entry.kernel == "Transpose"


def test_non_float_output_note() -> None:
    m = model(dump({("Range", ""): 1}))
    (entry,) = assign_eager(m, [])
    assert entry.note.startswith("non-float output")


# ---------------------------------------------------------------- the CPU decides

def test_cpu_dependent_kernel_is_unknown_without_the_cpu() -> None:
    """f16 MatMul: oneDNN with AVX512_FP16, stock without. No start-up line: unknown."""
    kernel, note = inferred_kernel(model(), "MatMul", "graph", "DT_HALF")
    assert kernel == UNKNOWN and "AVX512_FP16" in note


@pytest.mark.parametrize("has_fp16", [True, False])
def test_cpu_from_the_log_decides(has_fp16: bool) -> None:
    cpu = frozenset({"AVX512F", "AVX512_BF16"} | ({"AVX512_FP16"} if has_fp16 else set()))
    kernel, _note = inferred_kernel(model(logs=(log(cpu=cpu),)), "MatMul", "graph", "DT_HALF")
    assert kernel == ("_MklMatMul" if has_fp16 else "MatMul")


@pytest.mark.parametrize("has_fp16", [True, False])
def test_cpu_the_run_recorded_decides_without_a_log(has_fp16: bool) -> None:
    """``tb-opmode record``'s manifest names the CPU where no log line does."""
    from tb_opmode.read.manifest import RecordedRun

    m = model()
    m.recorded = RecordedRun(path="/run/manifest.json", environment={},
                             cpu_features=frozenset({"AVX512F"} | ({"AVX512_FP16"} if has_fp16
                                                                  else set())))
    kernel, _note = inferred_kernel(m, "MatMul", "graph", "DT_HALF")
    assert kernel == ("_MklMatMul" if has_fp16 else "MatMul")


def test_no_tensor_float_math_is_taken_as_float32() -> None:
    kernel, note = inferred_kernel(model(), "MatMul", "graph", DTYPE_UNKNOWN)
    assert kernel == inferred_kernel(model(), "MatMul", "graph", "DT_FLOAT")[0]
    assert "assuming float32" in note


# ---------------------------------------------------------------- graph ops

def test_graph_op_linked_by_node_name_suffix() -> None:
    """A Process-node line of the inlined call (``StatefulPartitionedCall/<op>``) labels the dump op."""
    d = dump(ops={"dense/MatMul": "MatMul"}, traces={"dense/MatMul": 3})
    facts = log(graph={"StatefulPartitionedCall/dense/MatMul": ("_MklMatMul", "DT_FLOAT")})
    (op,) = assign_graph(model(d, logs=(facts,)))
    assert (op.kernel, op.evidence, op.executions, op.node) == (
        "_MklMatMul", "log", 3, "StatefulPartitionedCall/dense/MatMul")


def test_a_profile_event_of_an_untraced_op_does_not_label_a_shorter_name() -> None:
    """TF 2.22's MirroredStrategy fit: ``loss/Cast_1`` left no trace (its node ran), and
    ``Cast_1``, constant-folded, ran no node; the event is ``loss/Cast_1``'s, not the
    event of ``Cast_1`` its last component names."""
    d = dump(ops={"Cast_1": "Cast", "loss/Cast_1": "Cast"}, traces={"Cast_1": 2})
    prof = Profile(path="/run/p.xplane.pb", host="host",
                   graph_ops=[("loss/Cast_1", "Cast", 1, 1)])
    (op,) = assign_graph(model(d, profiles=(prof,)))
    assert op.op_name == "Cast_1" and op.evidence != "profile"
    # An executed node named by no op of the dump still labels the op its suffix names.
    inlined = Profile(path="/run/p.xplane.pb", host="host",
                      graph_ops=[("StatefulPartitionedCall/Cast_1", "Cast", 1, 1)])
    (op,) = assign_graph(model(d, profiles=(inlined,)))
    assert (op.kernel, op.evidence) == ("Cast", "profile")


def test_log_outranks_profile_and_profile_labels_alone() -> None:
    d = dump(ops={"a/MatMul": "MatMul", "b/Relu": "Relu"}, traces={"a/MatMul": 2, "b/Relu": 2})
    prof = Profile(path="/run/p.xplane.pb", host="host",
                   graph_ops=[("a/MatMul", "MatMul", 1, 1), ("b/Relu", "Relu", 2, 1)])
    facts = log(graph={"a/MatMul": ("_MklMatMul", "DT_FLOAT")})
    got = {op.op_name: (op.kernel, op.evidence) for op in assign_graph(model(d, logs=(facts,), profiles=(prof,)))}
    assert got == {"a/MatMul": ("_MklMatMul", "log"), "b/Relu": ("Relu", "profile")}


def test_lowest_traced_slot_counts() -> None:
    """An op traced on two output slots counts the executions of the lowest one."""
    d = dump(ops={"split": "Split"})
    d.traces = Counter({(GRAPH, "split", 1): 5, (GRAPH, "split", 0): 3})
    (op,) = assign_graph(model(d, onednn=False))
    assert op.executions == 3


def test_graph_op_without_evidence_is_inferred(tf_eager: dict[tuple[str, str], str]) -> None:
    d = dump(ops={"t": "Transpose"}, traces={"t": 2})
    (op,) = assign_graph(model(d))
    assert op.evidence == "inferred"
    # TF's graph pass rewrites a float Transpose as the eager wrapper's does (same pass).
    assert op.kernel == tf_eager[("Transpose", "DT_FLOAT")]


def test_graph_op_whose_debug_node_ran_but_not_itself_was_removed() -> None:
    """tfdbg's debug node of the op ran, reading another node's tensor: grappler removed the op."""
    d = dump(ops={"t": "Transpose", "x": "Relu"}, traces={"t": 2, "x": 2})
    facts = log(graph={"x": ("Relu", "DT_FLOAT"),
                       "t/DebugIdentityV2_3": ("DebugIdentityV2", "DT_FLOAT"),
                       "t/DebugNumericSummaryV2": ("DebugNumericSummaryV2", "DT_FLOAT")})
    facts.debug_targets = {"t/DebugIdentityV2_3": (GRAPH, "t", 0)}
    facts.debug_inputs = {"t/DebugIdentityV2_3": "t/DebugNumericSummaryV2", "t/DebugNumericSummaryV2": "x"}
    got = {op.op_name: op.kernel for op in assign_graph(model(d, logs=(facts,)))}
    assert got == {"t": REMOVED, "x": "Relu"}


# ---------------------------------------------------------------- oneDNN on or off

def test_detect_onednn() -> None:
    assert detect_onednn(model(logs=(log(banner=True),))) == (True, "start-up banner in the log")
    assert detect_onednn(model(logs=(log(banner=False),)))[0] is False
    ran = log(graph={"m": ("_MklMatMul", "DT_FLOAT")})
    assert detect_onednn(model(logs=(ran,))) == (True, "oneDNN kernels (_Mkl*) ran")
    stock = log(graph={"m": ("MatMul", "DT_FLOAT")})
    on, why = detect_onednn(model(logs=(stock,)))
    assert on is False and "MatMul" in why
    assert detect_onednn(model())[0] is None
