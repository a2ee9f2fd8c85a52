"""Fixtures of the damage tests: the intact dump of ``cnn_logdir`` (module scope), its
traces file grown past the fast reader's threshold, and an empty cache per test."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .helpers import BigTraces, Dump


@pytest.fixture(scope="module")
def dump(cnn_logdir: Path) -> Dump:
    from .helpers import (
        Dump,  # TF's protos: imported only where a test asks for the dump
    )
    return Dump(cnn_logdir)


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test reads through an empty cache of its own (see ``summarize``)."""
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path_factory.mktemp("cache")))



@pytest.fixture(scope="module")
def big(dump: Dump) -> BigTraces:
    from .helpers import BigTraces
    return BigTraces(dump)
