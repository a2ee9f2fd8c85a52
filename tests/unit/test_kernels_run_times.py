"""Profiled time of a run with no dump (``tb-opmode record``'s ``kernels`` level) is put
down to the rows its log counts: a fused node's time to the row its kernel's executions
are counted in, none left "outside the table".

In: the committed ``kernels`` run (``record_kernels``: log of execute/op_kernel lines, a
profile, no dump). Out: the view's time apart from the rows, and the fused kernel's time.
"""
from __future__ import annotations

import pytest

from tb_opmode.analyze.assemble import RunModel, load
from tb_opmode.analyze.kernels import is_fused
from tb_opmode.present.tab import build_view

from .conftest import Fixture


@pytest.fixture(scope="module")
def kernels_run(record_kernels: Fixture) -> RunModel:
    (model,) = load(str(record_kernels.directory))
    return model


def test_every_profiled_graph_op_has_its_row(kernels_run: RunModel, record_kernels: Fixture) -> None:
    view = build_view(kernels_run, str(record_kernels.directory), timeline=False)
    fused = {(op, kernel): ns for (op, mode, kernel), (_n, ns) in kernels_run.times.items()
             if mode == "graph" and is_fused(kernel)}
    assert fused  # the fit's Dense + ReLU ran a fused MatMul in its profiled steps
    assert view.outside_time == {}
    for (op, kernel), _ns in fused.items():
        row = view.rows[op]["graph"]
        assert any(k["name"] == kernel for k in row["kernels"]), (op, kernel, row["kernels"])
