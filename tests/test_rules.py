"""tb_opmode.analyze.rules: the kernel-rule table, and a check against the TF in this venv.

The table tests are pure. The real-TF test runs a small subprocess of this
venv's TensorFlow with ``TF_CPP_MAX_VLOG_LEVEL=2``, once with oneDNN forced on
and once off, reads the kernel each case instantiated from the
``Instantiating kernel`` lines, and asks the table for the same answer. It
needs only TensorFlow (no tensorboard, no other tb_opmode module), so it runs
under the TF 2.13 venv too.
"""
from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tb_opmode.analyze import rules
from tb_opmode.analyze.rules import (
    FIRST_VERSION,
    LAST_VERSION,
    MECHANISMS,
    MODES,
    RULES,
    Rule,
    covers,
    eager_dispatch_name,
    expected_kernel,
    matching_rules,
    normalize_dtype,
    parse_version,
    stock_reason,
)
from tests.conftest import machine_cpu

EAGER_MECHANISMS = {"eager-rename", "eager-wrapper-graph-pass"}
GRAPH_MECHANISMS = {"graph-pass", "remapper-fusion"}


def _overlap(a: Rule, b: Rule) -> bool:
    (alo, ahi), (blo, bhi) = (tuple(map(parse_version, r.versions)) for r in (a, b))
    return alo <= bhi and blo <= ahi and bool(a.dtypes & b.dtypes)


# ---------------------------------------------------------------- table sanity


def test_all_exports_exist() -> None:
    for name in rules.__all__:
        assert hasattr(rules, name), name


def test_rules_module_does_not_import_tensorflow() -> None:
    tree = ast.parse(Path(rules.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)}
    assert "tensorflow" not in imported


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.op_type}-{r.mode}-{r.kernel}")
def test_rule_fields(rule: Rule) -> None:
    lo, hi = (parse_version(v) for v in rule.versions)
    assert parse_version(FIRST_VERSION) <= lo <= hi <= parse_version(LAST_VERSION)
    assert rule.mode in MODES
    assert rule.mechanism in MECHANISMS
    assert rule.mechanism in (EAGER_MECHANISMS if rule.mode == "eager" else GRAPH_MECHANISMS)
    assert rule.op_type and not rule.op_type.startswith("_")
    assert rule.kernel.startswith("_Mkl" if rule.onednn else "_Fused"), rule.kernel
    assert isinstance(rule.dtypes, frozenset) and rule.dtypes
    assert all(d.startswith("DT_") and d == d.upper() for d in rule.dtypes)
    assert rule.source.strip(), "every rule says where its fact comes from"
    if rule.mechanism == "remapper-fusion" or not rule.onednn:
        assert rule.condition, "a fusion always depends on the op's neighbours"


def test_no_duplicate_keys() -> None:
    for a, b in itertools.combinations(RULES, 2):
        same_key = (a.op_type, a.mode, a.onednn, a.kernel, a.condition) == \
                   (b.op_type, b.mode, b.onednn, b.kernel, b.condition)
        assert not (same_key and _overlap(a, b)), (a, b)


def test_unconditional_rules_never_compete() -> None:
    plain = [r for r in RULES if not r.condition]
    for a, b in itertools.combinations(plain, 2):
        if (a.op_type, a.mode, a.onednn) == (b.op_type, b.mode, b.onednn):
            assert not _overlap(a, b), (a, b)


def test_every_eager_rule_has_a_graph_rule() -> None:
    """Whatever runs oneDNN eagerly runs it in a tf.function too (maybe conditionally)."""
    for e in (r for r in RULES if r.mode == "eager"):
        graph = [g for g in RULES if (g.op_type, g.mode, g.kernel) == (e.op_type, "graph", e.kernel)
                 and g.dtypes >= e.dtypes and g.versions == e.versions]
        assert graph, e
        if not e.condition and e.op_type != "SparseMatrixMatMul":  # graph needs TF_ENABLE_ONEDNN_SPMM
            assert any(not g.condition for g in graph), e


def test_table_covers_the_brief() -> None:
    ops = {r.op_type for r in RULES}
    for op in ("MatMul", "BatchMatMulV2", "Einsum", "Transpose", "ConjugateTranspose", "Softmax",
               "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
               "Conv3D", "AvgPool", "MaxPool", "MaxPoolGrad", "FusedBatchNormV3",
               "FusedBatchNormGradV3", "QuantizeV2", "Dequantize", "SparseMatrixMatMul"):
        assert op in ops, op


# ---------------------------------------------------------------- queries


def test_parse_version_and_dtype() -> None:
    assert parse_version("2.21.0") == (2, 21)
    assert parse_version("2.16.0rc1") == (2, 16)
    assert parse_version("2.13") == (2, 13)
    with pytest.raises(ValueError):
        parse_version("nightly")
    assert normalize_dtype("float32") == normalize_dtype("DT_FLOAT") == "DT_FLOAT"
    assert normalize_dtype("bfloat16") == "DT_BFLOAT16"
    assert normalize_dtype("float16") == "DT_HALF"
    assert normalize_dtype("int32") == "DT_INT32"
    assert covers("2.12.1") and covers("2.21.0") and covers("2.22.0rc0") and covers("2.22.0-rc0")
    assert not covers("2.11.0") and not covers("2.23.0")


@pytest.mark.parametrize("version", [f"2.{m}.0" for m in range(12, 22)])
def test_transpose_eager_runs_mkl_though_dispatched_stock(version: str) -> None:
    kernel, rule = expected_kernel("Transpose", "eager", version)
    assert kernel == "_MklTranspose"
    assert rule is not None and rule.mechanism == "eager-wrapper-graph-pass"
    assert eager_dispatch_name("Transpose", version) == "Transpose"
    kernel, rule = expected_kernel("MatMul", "eager", version)
    assert kernel == "_MklMatMul" and rule is not None and rule.mechanism == "eager-rename"
    assert eager_dispatch_name("MatMul", version) == "_MklMatMul"


def test_dtype_and_onednn_keep_stock() -> None:
    assert expected_kernel("MatMul", "graph", "2.21.0", "DT_HALF") == ("MatMul", None)
    assert expected_kernel("Transpose", "eager", "2.13.1", "DT_INT32") == ("Transpose", None)
    assert expected_kernel("MatMul", "graph", "2.21.0", "DT_BFLOAT16")[0] == "_MklMatMul"
    assert expected_kernel("Conv2D", "eager", "2.21.0", "bfloat16")[0] == "_MklNativeConv2D"
    assert expected_kernel("Transpose", "eager", "2.21.0", onednn=False) == ("Transpose", None)
    assert "DT_HALF" in stock_reason("MatMul", "graph", "2.13.1", "DT_HALF")
    assert "TF_ENABLE_ONEDNN_OPTS=0" in stock_reason("Transpose", "eager", "2.21.0", "DT_FLOAT",
                                                     onednn=False)


def test_version_dependent_rules() -> None:
    assert expected_kernel("SparseMatrixMatMul", "eager", "2.16.2") == ("SparseMatrixMatMul", None)
    assert expected_kernel("SparseMatrixMatMul", "eager", "2.17.1")[0] == "_MklNativeSparseMatrixMatMul"
    assert "2.17" in stock_reason("SparseMatrixMatMul", "eager", "2.16.2", "DT_FLOAT")
    # graph needs TF_ENABLE_ONEDNN_SPMM=1: conditional, so stock by default
    assert expected_kernel("SparseMatrixMatMul", "graph", "2.21.0") == ("SparseMatrixMatMul", None)
    assert "TF_ENABLE_ONEDNN_SPMM" in stock_reason("SparseMatrixMatMul", "graph", "2.21.0", "DT_FLOAT")
    assert expected_kernel("MatMul", "graph", "2.11.0") == ("MatMul", None)
    assert "outside" in stock_reason("MatMul", "graph", "2.11.0", "DT_FLOAT")


def test_context_rules_are_listed_not_applied() -> None:
    assert expected_kernel("MaxPoolGrad", "graph", "2.21.0") == ("MaxPoolGrad", None)
    assert [r.kernel for r in matching_rules("MaxPoolGrad", "graph", "2.21.0")] == ["_MklNativeMaxPoolGrad"]
    assert "__wrapped__MaxPoolGrad" in stock_reason("MaxPoolGrad", "eager", "2.21.0", "DT_FLOAT")
    assert expected_kernel("BiasAdd", "graph", "2.21.0") == ("BiasAdd", None)
    fused = {r.kernel for r in matching_rules("BiasAdd", "graph", "2.21.0")}
    assert {"_MklNativeFusedMatMul", "_MklNativeFusedConv2D"} <= fused
    assert {r.kernel for r in matching_rules("BiasAdd", "graph", "2.21.0", onednn=False)} == \
        {"_FusedMatMul", "_FusedConv2D"}
    assert matching_rules("BiasAdd", "eager", "2.21.0") == ()


@pytest.mark.parametrize("op", sorted(rules.MEASURED_STOCK_OPS))
@pytest.mark.parametrize("mode", MODES)
def test_elementwise_ops_stay_stock(op: str, mode: str) -> None:
    for version in ("2.12.0", "2.21.0"):
        assert expected_kernel(op, mode, version) == (op, None)
        reason = stock_reason(op, mode, version, "DT_FLOAT")
        assert reason.endswith(".") and "No oneDNN kernel" in reason


def test_stock_reason_for_every_rule_key() -> None:
    for r in RULES:
        for dt in (*sorted(r.dtypes), "DT_INT8"):
            text = stock_reason(r.op_type, r.mode, r.versions[1], dt)
            assert text and text.endswith("."), (r, dt, text)


# ---------------------------------------------------------------- real TF

CASES = [("Transpose", "DT_FLOAT"), ("MatMul", "DT_FLOAT"), ("Softmax", "DT_FLOAT"),
         ("Relu", "DT_FLOAT"), ("AddV2", "DT_FLOAT"), ("MatMul", "DT_HALF"), ("Transpose", "DT_INT32")]

# Runs each case eagerly, then each inside its own tf.function, with a marker
# on fd 2 before each. Eager inputs are made before the marker, so a case's
# section holds only its own op (and _EagerConst for the perm). No case
# repeats an (op, dtype) pair eagerly, so every eager wrapper is instantiated.
_SCRIPT = r'''
import json, os, sys
import numpy as np
import tensorflow as tf

R = tf.raw_ops
NP = {"DT_FLOAT": np.float32, "DT_HALF": np.float16, "DT_INT32": np.int32}
CASES = json.loads(sys.argv[1])


def build(op, a, b, name):
    if op == "Transpose":
        return R.Transpose(x=a, perm=[1, 0], name=name)
    if op == "MatMul":
        return R.MatMul(a=a, b=b, name=name)
    if op == "Softmax":
        return R.Softmax(logits=a, name=name)
    if op == "Relu":
        return R.Relu(features=a, name=name)
    if op == "AddV2":
        return R.AddV2(x=a, y=b, name=name)
    raise ValueError(op)


for mode in ("eager", "graph"):
    for op, dt in CASES:
        a = tf.constant(np.arange(16).reshape(4, 4).astype(NP[dt]))
        b = tf.constant(np.ones((4, 4), NP[dt]))
        name = "case_%s_%s" % (op, dt)
        os.write(2, ("@@CASE " + json.dumps([mode, op, dt, name]) + "\n").encode())
        if mode == "eager":
            out = build(op, a, b, name)
        else:
            out = tf.function(lambda x, y, op=op, name=name: build(op, x, y, name))(a, b)
        out.numpy()
os.write(2, b"@@END\n")
print(json.dumps({"version": tf.__version__}))
'''

_INST = re.compile(r"Instantiating kernel for node: \{\{node ([^}]+)\}\} = ([A-Za-z0-9_]+)\[")
_EXEC = re.compile(r"Executing op (\S+) in device")
_SKIP = {"_Arg", "_Retval", "Const", "NoOp", "_EagerConst", "_DeviceArg", "_DeviceRetval"}


def _parse(log: str) -> dict[tuple[str, str, str], dict]:
    """(mode, op, dtype) -> {"node": name, "kernels": {node: kernel}, "dispatch": [names]}."""
    out: dict[tuple[str, str, str], dict] = {}
    cur: dict | None = None
    for line in log.splitlines():
        if line.startswith("@@CASE "):
            mode, op, dt, name = json.loads(line[7:])
            cur = out[(mode, op, dt)] = {"node": name, "kernels": {}, "dispatch": []}
        elif line.startswith("@@END"):
            cur = None
        elif cur is not None:
            m = _INST.search(line)
            if m and m.group(2) not in _SKIP:
                cur["kernels"][m.group(1)] = m.group(2)
                continue
            m = _EXEC.search(line)
            if m and m.group(1) != "_EagerConst" and not m.group(1).startswith("__inference"):
                cur["dispatch"].append(m.group(1))
    return out


@pytest.fixture(scope="session", params=[True, False], ids=["onednn-on", "onednn-off"])
def tf_kernels(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> tuple[str, bool, dict]:
    """Run the cases in this venv's TF; (tf version, oneDNN on?, parsed log)."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed in this venv")
    onednn: bool = request.param
    log_path = tmp_path_factory.mktemp("rules_tf") / "vlog.txt"
    env = dict(os.environ, TF_CPP_MAX_VLOG_LEVEL="2", TF_CPP_MIN_LOG_LEVEL="0",
               TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0", CUDA_VISIBLE_DEVICES="")
    with open(log_path, "wb") as err:
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(CASES)], stdout=subprocess.PIPE,
                              stderr=err, env=env, timeout=600)
    log = log_path.read_text(errors="replace")
    assert proc.returncode == 0, log[-3000:]
    version = json.loads(proc.stdout.decode().strip().splitlines()[-1])["version"]
    return version, onednn, _parse(log)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,dtype", CASES)
def test_table_matches_real_tf(tf_kernels: tuple[str, bool, dict], mode: str, op: str, dtype: str) -> None:
    version, onednn, seen = tf_kernels
    case = seen.get((mode, op, dtype))
    assert case is not None, f"no log section for {mode} {op} {dtype}"
    if mode == "graph":
        actual = case["kernels"].get(case["node"])
        assert actual, f"no kernel instantiated for node {case['node']}: {case['kernels']}"
    else:  # the one node inside __wrapped__<Op> (or the renamed op)
        kernels = set(case["kernels"].values())
        assert len(kernels) == 1, f"eager {op} {dtype}: kernels {case['kernels']}"
        (actual,) = kernels
        assert case["dispatch"] == [eager_dispatch_name(op, version, dtype, onednn, machine_cpu())], \
            case["dispatch"]
    expected, rule = expected_kernel(op, mode, version, dtype, onednn, machine_cpu())
    why = rule.source if rule else stock_reason(op, mode, version, dtype, onednn=onednn)
    assert expected == actual, f"TF {version} {mode} {op} {dtype} onednn={onednn}: table {expected} ({why})"
