"""A ``tf.function(jit_compile=True)`` recorded with no dump: its ops ran inside an XLA
cluster, and no TF kernel of theirs is claimed.

In: ``tb-opmode record`` (``kernels``) of ``tests/record_jobs.py xla`` (this venv's TF):
MatMul, AddV2 and Relu in a jit-compiled function, called 6 times. TF's log (the run's
``stderr.log``) has XLA's launch line per call (``xla_ops.cc``, which ``record`` turns on)
and, while the function is compiled, an "Instantiating kernel" line per node: XLA's
compilation of it, not a TF kernel that ran. Out: the run names the function as XLA
compiled with TF's launches (counted here by a regex of this test's own), counts its ops
per call x calls, and gives them no TF kernel: ``(unknown)`` with the note that XLA
compiled them, where the graph kernels were the stock ``MatMul``, ``AddV2``, ``Relu``.
"""
from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest

from tb_opmode.analyze.per_call import XLA_CLUSTER_NOTE
from tb_opmode.cli import main
from tb_opmode.vocab import UNKNOWN

from .conftest import printed, record_job

_LAUNCH = re.compile(r"xla_ops\.cc:\d+\] XlaLocalLaunchOpBase::Compute (__inference_dense_\d+)\[")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], int, dict[str, int]]:
    """(the run's summary JSON, the job's calls, TF's launches per function in its log)."""
    logdir = tmp_path_factory.mktemp("xla") / "logs"
    calls = int(printed(record_job(logdir, "run", "xla"), "xla calls "))
    text = "".join(p.read_text(errors="replace") for p in (logdir / "run").rglob("stderr.log"))
    launches: dict[str, int] = {}
    for name in _LAUNCH.findall(text):
        launches[name] = launches.get(name, 0) + 1
    out, err = io.StringIO(), io.StringIO()
    assert main(["summary", str(logdir / "run"), "--format", "json"], out, err) == 0, err.getvalue()
    (run,) = json.loads(out.getvalue())["runs"]
    return run, calls, launches


def test_the_function_is_named_xla_compiled_with_tfs_launches(
        recorded: tuple[dict[str, Any], int, dict[str, int]]) -> None:
    run, calls, launches = recorded
    assert list(launches.values()) == [calls], launches
    assert [(f["name"], f["launches"]) for f in run["xla_functions"]] == list(launches.items())


@pytest.mark.parametrize("op_type", ["MatMul", "AddV2", "Relu"])
def test_its_ops_are_counted_per_call_and_claim_no_tf_kernel(
        recorded: tuple[dict[str, Any], int, dict[str, int]], op_type: str) -> None:
    run, calls, _launches = recorded
    (row,) = [r for r in run["op_types"] if r["op_type"] == op_type]
    graph = row["graph"]
    assert graph["executions"] == calls, row
    assert [(k["name"], k["executions"]) for k in graph["kernels"]] == [(UNKNOWN, calls)], graph
    assert graph["kernels"][0]["notes"] == [XLA_CLUSTER_NOTE], graph
