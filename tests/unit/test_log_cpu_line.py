"""The CPU line of TF's start-up message (``To enable the following instructions: ...``,
no prefix, after cpu_feature_guard.cc's line) is read wherever the reading chunks fall.

In: the TF 2.21 log of the committed FULL_HEALTH run (tests/data). Out: the instruction
sets ``read_log`` reports equal those the line names (parsed here on its own)."""
from __future__ import annotations

import re

import pytest

from tb_opmode.read import textlog
from tb_opmode.read.textlog import scan

from .conftest import Fixture


def _named(log: bytes) -> frozenset[str]:
    m = re.search(rb"^To enable the following instructions: ([A-Z0-9_ ]+), in other operations", log, re.M)
    assert m is not None, "the fixture's log has no CPU line"
    return frozenset(m.group(1).decode().split())


@pytest.mark.parametrize("chunk", [None, 61, 997, 4096])
def test_cpu_line_read_at_any_chunking(full_health: Fixture, chunk: int | None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = full_health.log("stderr")
    want = _named(path.read_bytes())
    assert want  # the line names some
    if chunk is not None:
        monkeypatch.setattr(scan, "CHUNK_BYTES", chunk)
    assert textlog.read_log(str(path)).cpu_features == want
