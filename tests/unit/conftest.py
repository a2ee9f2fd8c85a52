"""Fixtures of the no-TensorFlow tier: the committed runs of ``tests/data/``, unpacked.

``tests/data/regenerate.py`` wrote them with TensorFlow 2.21 and recorded, next to each,
what TF's own ``DebugDataReader`` reads from its dump (``<name>.reference.json``). Nothing
here needs TensorFlow: these tests run first, in ``.venv-notf`` (``make test``).
"""
from __future__ import annotations

import json
import re
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.analyze.assemble import RunModel, load

DATA = Path(__file__).resolve().parent.parent / "data"

# A line of TF's log (2.21 prefix) and the two lines that name an eager op's kernel.
_PREFIX = r"^I\d{4} [\d:.]+\s+(?P<tid>\d+) (?P<file>[\w.]+):\d+\] "
_EXECUTING = re.compile(_PREFIX + r"Executing op (?P<op>\S+) in device")
_INSTANTIATING = re.compile(_PREFIX + r"Instantiating kernel for node: \{\{node (?P<node>[^}]+)\}\} = "
                            r"(?P<kernel>[\w.]+)\[(?:T=(?P<dtype>DT_\w+))?")


@dataclass(frozen=True)
class Fixture:
    """One unpacked run: its directory and what TensorFlow recorded about it."""

    name: str
    directory: Path
    reference: dict[str, Any]

    def log(self, stream: str = "stderr") -> Path:
        return self.directory / f"tf_{stream}.log"


def unpack(name: str, root: Path) -> Fixture:
    target = root / name
    with tarfile.open(DATA / f"{name}.tar.xz") as tar:
        for member in tar.getmembers():  # our own archive; still, only files and directories
            assert member.isfile() or member.isdir(), member.name
        tar.extractall(target, filter="data")  # and nothing outside target
    counts = DATA / f"{name}.reference.json"  # a run with no dump has no DebugDataReader counts
    reference = json.loads(counts.read_text()) if counts.exists() else {}
    return Fixture(name, target, reference)


@pytest.fixture(scope="session")
def full_health(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    """Dump (FULL_HEALTH) + profile + VLOG/ONEDNN_VERBOSE log of a small Keras fit."""
    return unpack("fit_full_health", tmp_path_factory.mktemp("fixtures"))


@pytest.fixture(scope="session")
def no_tensor(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    """The same workload, NO_TENSOR dump only: no dtype, no profile, no log."""
    return unpack("fit_no_tensor", tmp_path_factory.mktemp("fixtures"))


@pytest.fixture(scope="session")
def record_kernels(tmp_path_factory: pytest.TempPathFactory) -> Fixture:
    """``tb-opmode record --evidence kernels`` of a Keras fit and a tf.function traced for three
    shapes: no dump; the log of TF's execute and op_kernel modules, TF's line per new trace
    (``tf_python.log``), a profile and the manifest."""
    return unpack("record_kernels", tmp_path_factory.mktemp("fixtures"))


@pytest.fixture(scope="session")
def full_model(full_health: Fixture) -> RunModel:
    (model,) = load(str(full_health.directory))
    return model


@pytest.fixture(scope="session")
def no_tensor_model(no_tensor: Fixture) -> RunModel:
    (model,) = load(str(no_tensor.directory))
    return model


def log_eager_kernels(log: Path) -> dict[str, Counter[tuple[str, str]]]:
    """Eager op type -> (kernel, T= dtype) -> count, read straight from TF's log: the
    ``Instantiating kernel`` line of the node named like the op that follows its
    ``Executing op`` line on the same thread (the op's one-node function)."""
    pending: dict[str, str] = {}
    out: dict[str, Counter[tuple[str, str]]] = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = _EXECUTING.match(line)
            if m:
                pending[m["tid"]] = m["op"]
                continue
            m = _INSTANTIATING.match(line)
            if m and pending.get(m["tid"]) is not None:
                op = pending[m["tid"]]
                if m["node"] in (op, op.removeprefix("_Mkl")):
                    out.setdefault(op, Counter())[(m["kernel"], m["dtype"] or "")] += 1
                    del pending[m["tid"]]
    return out


def tf_dtype(name: str) -> str:
    """``float32`` (TF's Python name, as reference.json has it) -> ``DT_FLOAT``."""
    special = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF"}
    return special.get(name, "DT_" + name.upper())
