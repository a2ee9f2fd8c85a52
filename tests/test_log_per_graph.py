"""Debug nodes of one name in two functions, read from TF's log per graph.

In: a run written here by real TensorFlow: two ``tf.function``s, ``thrice`` and ``once``,
each with an op ``scale`` (``x * 3`` and ``x * 1``) traced by a FULL_HEALTH dump, and
TF's ``TF_CPP_MAX_VLOG_LEVEL=2`` log of the process in the logdir. Both functions have a
debug node ``scale/DebugNumericSummaryV2``; grappler keeps ``thrice``'s Mul and removes
``once``'s (x * 1), so that node reads ``scale`` in one and ``x`` in the other, and the
log's first such line, ``thrice``'s, is the wrong one for ``once``. (Keras 2 on TF 2.13
does the same with the train and evaluate functions of a ``steps_per_execution`` fit.)
Out: assertions that each function's op gets its own graph's answer, scored against
the truth checker (``tests/matrix/truth.py``, which shares no code with the reader), and
that a log read in two halves gives the same per-graph inputs wherever it is split.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.present.contract import summary
from tb_opmode.read.textlog import read_log
from tb_opmode.read.textlog import split as textlog_split
from tests.matrix.truth import score, truth_of

from .conftest import needs_tensorflow

_WORKLOAD = """
import sys
import tensorflow as tf

tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1)

@tf.function
def once(x):
    s = tf.multiply(x, tf.ones([4, 4]), name="scale")
    return tf.nn.relu(s, name="out")

@tf.function
def thrice(x):
    s = tf.multiply(x, tf.fill([4, 4], 3.0), name="scale")
    return tf.nn.relu(s, name="out")

x = tf.random.normal([4, 4])
for _ in range(2):
    thrice(x)  # first: the log's first line of scale/DebugNumericSummaryV2 is thrice's
    once(x)
tf.debugging.experimental.disable_dump_debug_info()
"""


@pytest.fixture(scope="module")
def two_functions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_tensorflow()
    root = tmp_path_factory.mktemp("two_functions")
    logdir = root / "logdir"
    env = {**os.environ, "TF_CPP_MAX_VLOG_LEVEL": "2", "TF_CPP_MIN_LOG_LEVEL": "0",
           "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    with open(root / "tf_log.txt", "wb") as log:
        proc = subprocess.run([sys.executable, "-c", _WORKLOAD, str(logdir)], env=env,
                              stderr=log, stdout=subprocess.DEVNULL, timeout=600)
    assert proc.returncode == 0, (root / "tf_log.txt").read_text(errors="replace")[-3000:]
    (logdir / "tf_log.txt").write_bytes((root / "tf_log.txt").read_bytes())
    return root


def _scale_kernels(logdir: Path) -> dict[str, tuple[str, str]]:
    (model,) = load(str(logdir))
    graphs = model.dumps[0].graphs
    return {graphs[op.graph_id].name: (op.kernel, op.evidence)
            for op in model.graph_ops if op.op_name == "scale"}


def test_each_function_reads_its_own_debug_nodes(two_functions: Path) -> None:
    logdir = two_functions / "logdir"
    facts = read_log(str(logdir / "tf_log.txt"))
    # The premise: one debug node name, two inputs, the global table keeping thrice's.
    assert facts.debug_inputs["scale/DebugNumericSummaryV2"] == "scale"
    assert {"scale/DebugNumericSummaryV2": "x"} in facts.context_debug_inputs.values()
    assert _scale_kernels(logdir) == {"thrice": ("Mul", "log"),
                                      "once": ("(optimized away)", "log")}
    truth = truth_of(logdir, [two_functions / "tf_log.txt"])
    run = summary(load(str(logdir)), str(logdir), explanations=False)["runs"][0]
    result = score(run, truth)
    assert result["share"] == 1.0, result


def test_two_halves_keep_each_graphs_debug_inputs(two_functions: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  forks: list[int]) -> None:
    """Split anywhere, above all between the two functions' first summary lines (the
    head's first line of the name is thrice's, the tail's once's)."""
    path = two_functions / "tf_log.txt"
    whole = read_log(str(path))
    data = path.read_bytes()
    starts = [0] + [i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n")]
    summary_lines = [i for i, s in enumerate(starts)
                     if b"{{node scale/DebugNumericSummaryV2}}" in data[s:s + 4096].split(b"\n", 1)[0]
                     and b"Process node" in data[s:s + 200]]
    assert len(summary_lines) >= 2
    between = range(summary_lines[0] + 1, summary_lines[-1] + 1)
    picks = sorted({*between[::max(1, len(between) // 30)],
                    *range(1, len(starts), max(1, len(starts) // 20))})
    for line in picks:
        split = starts[line]
        monkeypatch.setattr(textlog_split, "_split_point", lambda f, p, split=split: split)
        halves = read_log(str(path))
        assert halves.context_debug_inputs == whole.context_debug_inputs, line
        assert halves.debug_inputs == whole.debug_inputs, line
        assert halves.context_kernels == whole.context_kernels, line
    assert forks
