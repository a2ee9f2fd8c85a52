"""A TF log saved gzip-compressed (``python train.py 2>&1 | gzip > train.log.gz``, a
rotated log) is read as its text, on the committed TF 2.21 run (no TensorFlow needed).

In: ``fit_full_health`` with its ``tf_stderr.log`` replaced by the same log gzipped, whole
or cut as a log still being compressed is. Out: the same kernels, with the same evidence,
as the plain log gives; a cut stream keeps the text before the cut and says so, naming
the file.
"""
from __future__ import annotations

import gzip
import shutil
import zlib
from pathlib import Path

from tb_opmode.analyze.assemble import RunModel, load

from .conftest import Fixture


def _kernels(model: RunModel) -> dict[tuple[str, str], list[tuple[str, int, str]]]:
    return {(op, mode): sorted((k.name, k.executions, k.evidence) for k in row.mode(mode).kernels)
            for op, row in model.op_types.items() for mode in ("eager", "graph")}


def _with_log(full_health: Fixture, target: Path, data: bytes) -> Path:
    run = Path(shutil.copytree(full_health.directory, target))
    (run / "tf_stderr.log").unlink()
    (run / "tf_stderr.log.gz").write_bytes(data)
    return run


def test_a_gzipped_log_is_read_as_its_text(full_health: Fixture, full_model: RunModel,
                                           tmp_path: Path) -> None:
    """It was left out of the run without a word (and read as binary garbage with --log)."""
    plain = (full_health.directory / "tf_stderr.log").read_bytes()
    run = _with_log(full_health, tmp_path / "run", gzip.compress(plain))
    (model,) = load(str(run))
    assert "tf_stderr.log.gz" in model.sources["logs"]
    assert _kernels(model) == _kernels(full_model)
    assert not [p for p in model.problems if "tf_stderr.log.gz" in p.path]


def test_a_cut_gzip_stream_keeps_the_text_before_the_cut(full_health: Fixture,
                                                         tmp_path: Path) -> None:
    plain = (full_health.directory / "tf_stderr.log").read_bytes()
    packed = gzip.compress(plain)
    cut = packed[:len(packed) // 2]
    run = _with_log(full_health, tmp_path / "run", cut)
    text = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(cut)  # all the cut holds
    assert 0 < len(text) < len(plain)
    (model,) = load(str(run))
    (log,) = [g for g in model.logs if g.path.endswith("tf_stderr.log.gz")]
    assert log.bytes_read == len(text)
    said = [p for p in model.problems if p.path.endswith("tf_stderr.log.gz") and "gzip" in p.message]
    assert len(said) == 1 and said[0].offset == len(text), [str(p) for p in model.problems]
