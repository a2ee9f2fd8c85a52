"""A run of a profile alone: each eager op's kernel is TF's, or honestly unknown.

In: a job the real TensorFlow of this venv runs, with oneDNN's custom operations set on
and set off (``TF_ENABLE_ONEDNN_OPTS``, so that the answer never hangs on this machine's
CPU): a tf.function step, then between steps eager float ``MatMul`` and ``Transpose``,
an int32 ``Transpose``, ``Sum`` and ``AddV2``, all inside one profile. Its logdir holds
the profile alone (no dump, no log), as a user's who set ``profile_batch`` has. TF's own
log of the same job (``execute=1,op_kernel=1``) is kept outside the logdir. Out: for
each eager op type, every kernel ``tb-opmode summary`` names is one TF's log shows
instantiated for that op's one-node function, else ``(unknown)``; and where the log
shows one kernel for a float math op (MatMul), the summary names it.

Without a dump nothing records an eager op's dtype. It was taken as "no float output",
which made oneDNN's eager ``_MklMatMul`` a stock ``MatMul``, confidently, and the lead
sentence said "oneDNN only in graphs": the misconception the seed user asked about.

The log is parsed here with regexes of this file's own (no code of the product's).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict

import pytest

from tests.conftest import needs_tensorflow

_JOB = """
import sys
import tensorflow as tf

logdir = sys.argv[1]
w = tf.Variable(tf.random.uniform((32, 64), seed=1))
x = tf.random.uniform((16, 32), seed=2)
ints = tf.constant([[1, 2, 3], [4, 5, 6]])

@tf.function
def step(x):
    return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))

step(x)
tf.profiler.experimental.start(logdir)
for _ in range(5):
    loss = step(x)
    z = tf.transpose(tf.matmul(x, w))   # eager float MatMul and Transpose
    t = tf.transpose(ints)              # eager int32 Transpose
    _ = tf.reduce_sum(z) + loss         # eager Sum and AddV2
tf.profiler.experimental.stop()
"""

_EXECUTING = re.compile(r"\] Executing op (\S+) in device ")
_INSTANTIATING = re.compile(r"\] Instantiating kernel for node: \{\{node (\S+?)\}\} = (\w+)[\[(]")
_UNKNOWN = "(unknown)"


def _op_type(dispatched: str) -> str:
    """The op type of a dispatched name: oneDNN's eager rewrite renames MatMul to
    _MklMatMul before dispatch."""
    return re.sub(r"^_Mkl(Native)?", "", dispatched)


def _eager_kernels_in_log(log: str) -> dict[str, set[str]]:
    """Op type -> the kernels TF instantiated for the one-node functions of its eager
    dispatches (the node of such a function is named as the op dispatched)."""
    dispatched = {m.group(1) for m in _EXECUTING.finditer(log)}
    kernels: dict[str, set[str]] = defaultdict(set)
    for m in _INSTANTIATING.finditer(log):
        node, kernel = m.group(1), m.group(2)
        if node in dispatched:
            kernels[_op_type(node)].add(kernel)
    return dict(kernels)


@pytest.fixture(scope="module", params=["1", "0"], ids=["onednn_on", "onednn_off"])
def profiled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[dict[str, set[str]], dict[str, dict[str, int]]]:
    """(the log's eager kernels per op type, the summary's per op type: kernel -> executions)."""
    needs_tensorflow()
    out = tmp_path_factory.mktemp(f"profile_only_{request.param}")
    logdir, log = out / "logdir", out / "tf_log.txt"
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=request.param, TF_CPP_MIN_LOG_LEVEL="0",
               TF_CPP_VMODULE="execute=1,op_kernel=1")
    with log.open("w") as stderr:
        subprocess.run([sys.executable, "-c", _JOB, str(logdir)], env=env, stderr=stderr,
                       stdout=subprocess.DEVNULL, check=True, timeout=300)
    assert list(logdir.glob("plugins/profile/*/*.xplane.pb")), "the job wrote no profile"
    assert not list(logdir.rglob("tfdbg_events.*")) and not list(logdir.rglob("*.txt"))
    summary = subprocess.run([sys.executable, "-m", "tb_opmode.cli", "summary", str(logdir),
                              "--format", "json"], capture_output=True, text=True, check=True)
    (run,) = json.loads(summary.stdout)["runs"]
    ours = {row["op_type"]: {k["name"]: k["executions"] for k in row["eager"]["kernels"]}
            for row in run["op_types"] if row["eager"]["executions"]}
    return _eager_kernels_in_log(log.read_text(errors="replace")), ours


def test_every_eager_kernel_named_is_one_tf_instantiated_or_unknown(
        profiled: tuple[dict[str, set[str]], dict[str, dict[str, int]]]) -> None:
    truth, ours = profiled
    checked = [op for op in ("MatMul", "Transpose", "Sum", "AddV2") if op in truth]
    assert checked == ["MatMul", "Transpose", "Sum", "AddV2"], truth  # the log holds them
    for op_type in checked:
        named = set(ours.get(op_type, {})) - {_UNKNOWN}
        assert named <= truth[op_type], (op_type, ours.get(op_type), truth[op_type])


def test_a_float_math_op_of_one_kernel_is_named(
        profiled: tuple[dict[str, set[str]], dict[str, dict[str, int]]]) -> None:
    truth, ours = profiled
    (kernel,) = truth["MatMul"]  # float only: one kernel, _MklMatMul or MatMul by the setting
    assert ours["MatMul"] == {kernel: 5}, (ours["MatMul"], truth["MatMul"])
