"""``read.forks``: a child's result comes with its length, so the parent can take it
without waiting for the child's work after sending (``start``'s ``after``).

In: children forked by the test doing small work. Out: what ``collect`` gives with and
without reaping, and that ``reap_deferred`` leaves no child behind.
"""
from __future__ import annotations

import os

import pytest

from tb_opmode.read import forks as forks_mod

from ..conftest import assert_reaped


def test_result_taken_while_the_child_still_works(forks: list[int]) -> None:
    gate_r, gate_w = os.pipe()  # the child's after() waits on it until the test writes

    def after() -> None:
        os.read(gate_r, 1)

    child = forks_mod.start(lambda: b"result" * 1000, after=after)
    assert forks_mod.collect(child, reap=False) == (0, b"result" * 1000)
    assert os.waitpid(child[0], os.WNOHANG) == (0, 0)  # still in after()
    os.write(gate_w, b"x")
    os.close(gate_r)
    os.close(gate_w)
    forks_mod.reap_deferred()
    assert_reaped(forks)


@pytest.mark.parametrize("reap", [True, False])
def test_a_child_that_fails_sends_nothing(forks: list[int], reap: bool) -> None:
    def fails() -> bytes:
        raise RuntimeError("made by the test")

    status, data = forks_mod.collect(forks_mod.start(fails), reap=reap)
    assert status != 0 and data == b""
    assert_reaped(forks)


def test_an_empty_result_is_a_result(forks: list[int]) -> None:
    assert forks_mod.collect(forks_mod.start(lambda: b"")) == (0, b"")
    assert_reaped(forks)
