"""Text logs: huge, garbled, non-UTF-8, with non-finite numbers: read in bounded
chunks and flat memory, the facts of the clean lines unchanged.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

import io
import math
import random
import shutil
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.read import fs, textlog

from .helpers import (
    ROOT,
    Dump,
    _write,
    assert_warned,
    summarize,
    warnings_of,
)


class _SpyFile(io.RawIOBase):
    """A file that records the size of every read asked of it."""

    def __init__(self, path: str, sizes: list[int]) -> None:
        self._f = open(path, "rb")
        self._sizes = sizes

    def read(self, n: int = -1) -> bytes:
        self._sizes.append(n)
        return self._f.read(n)

    def readinto(self, b: Any) -> int:
        self._sizes.append(len(b))
        return self._f.readinto(b)

    def readline(self, n: int | None = -1) -> bytes:
        self._sizes.append(-1 if n is None else n)
        return self._f.readline(n)

    def __iter__(self) -> Any:
        raise AssertionError("iterating a file by line holds an unbounded line")

    def close(self) -> None:
        self._f.close()
        super().close()

    def readable(self) -> bool:
        return True


def _big_log(cnn_logdir: Path, path: Path, size: int) -> bytes:
    """A log of about ``size`` bytes: the real log repeated, with a 3 MB line of binary
    garbage without newline and non-UTF-8 bytes in between."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    garbage = bytes(random.Random(9).randbytes(3 << 20)).replace(b"\n", b"\x00")
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(real)
            f.write(garbage + b"\n" + b"\xff\xfe latin-1: caf\xe9\n")
            written += len(real) + len(garbage) + 20
    return real


def test_text_log_is_read_in_bounded_chunks(cnn_logdir: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """read_log never asks for the whole file or an unbounded line."""
    path = tmp_path / "big.log"
    _big_log(cnn_logdir, path, 24 << 20)
    size = path.stat().st_size
    sizes: list[int] = []
    # Logs are opened through the filesystem layer (tb_opmode/read/fs.py), which opens
    # local files with the builtin open.
    monkeypatch.setattr(fs, "open", lambda p, mode="r": _SpyFile(p, sizes), raising=False)
    facts = textlog.read_log(str(path))
    assert facts.bytes_read == size
    assert sizes and all(0 < n <= 4 << 20 for n in sizes), sorted(set(sizes))[:5]
    assert len(sizes) >= size // (4 << 20)


def test_text_log_memory_stays_flat(cnn_logdir: Path, tmp_path: Path) -> None:
    """Peak memory while parsing a log of 20+ MB (with 3 MB garbage lines) stays far below its size."""
    path = tmp_path / "big.log"
    real = _big_log(cnn_logdir, path, 20 << 20)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        facts = textlog.read_log(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one = textlog.read_log(_write(tmp_path / "one.log", real))
    copies = sum(facts.eager_dispatch.values()) // sum(one.eager_dispatch.values())
    assert copies >= 2 and facts.eager_dispatch == Counter(
        {k: v * copies for k, v in one.eager_dispatch.items()})
    assert size > 20 << 20
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MB for a {size / 2**20:.0f} MB log"


BIG_LOG_SCRIPT = r"""
import resource, sys
from tb_opmode.read.textlog import read_log
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
facts = read_log(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before, facts.bytes_read, sum(facts.eager_dispatch.values()))
"""


@pytest.mark.slow
def test_text_log_of_200_mb_streams_in_flat_memory(cnn_logdir: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    _big_log(cnn_logdir, path, 200 << 20)
    proc = subprocess.run([sys.executable, "-c", BIG_LOG_SCRIPT, str(path)], check=False, capture_output=True,
                          text=True, timeout=600, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr
    grown_kb, bytes_read, dispatches = (int(x) for x in proc.stdout.split())
    assert bytes_read == path.stat().st_size and dispatches > 0
    assert grown_kb < 64 * 1024, f"max RSS grew by {grown_kb // 1024} MB"


def _garbled_log(real: bytes) -> tuple[bytes, int]:
    """The real log with binary garbage lines, NULs and non-UTF-8 bytes put between its
    lines; returns (data, offset of the first garbage)."""
    rng = random.Random(13)
    lines = real.splitlines(keepends=True)
    out = bytearray()
    first = -1
    for i, line in enumerate(lines):
        if i % 97 == 50:
            if first < 0:
                first = len(out)
            junk = b"\xff\x00" + rng.randbytes(rng.randint(1, 300)).replace(b"\n", b"\x00")
            out += junk + b"\n"
            out += b"\x00\x00\x00\n" + "naïve café".encode("latin-1") + b"\n"
        out += line
    return bytes(out), first


def test_binary_garbage_and_non_utf8_in_a_text_log(dump: Dump, cnn_logdir: Path,
                                                   tmp_path: Path) -> None:
    """Through the CLI (dump + log): kernels, evidence, explanations and oneDNN
    primitives equal those from the clean log; the garbage is warned about at the
    offset of its first line."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    dump.copy_to(clean)
    dump.copy_to(dirty)
    (clean / "tf_log.txt").write_bytes(real)
    data, first = _garbled_log(real)
    (dirty / "tf_log.txt").write_bytes(data)
    rc, want, _ = summarize(clean)
    assert rc == 0 and want["runs"][0]["warnings"] == []
    assert want["runs"][0]["onednn_verbose"]["primitives"]
    rc, got, stderr = summarize(dirty)
    assert rc == 0, stderr
    assert got["runs"][0]["op_types"] == want["runs"][0]["op_types"]
    assert got["runs"][0]["onednn_verbose"] == want["runs"][0]["onednn_verbose"]
    assert got["runs"][0]["onednn_enabled"] == want["runs"][0]["onednn_enabled"]
    assert_warned(got, stderr, "tf_log.txt", first, "non-UTF-8")
    assert_warned(got, stderr, "tf_log.txt", first, "binary")
    assert len(warnings_of(got)) == 2


def test_binary_garbage_in_a_log_only_run(cnn_logdir: Path, tmp_path: Path) -> None:
    """The parser alone: the counts a log gives are unchanged by the garbage."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    data, first = _garbled_log(real)
    want = textlog.read_log(_write(tmp_path / "clean.log", real))
    got = textlog.read_log(_write(tmp_path / "dirty.log", data))
    for name in ("eager_dispatch", "eager_kernels", "graph_kernels", "graph_executions",
                 "onednn_primitives", "onednn_opts", "debug_targets", "tf_format"):
        assert getattr(got, name) == getattr(want, name), name
    assert got.onednn_time_ms.keys() == want.onednn_time_ms.keys()
    for key, ms in want.onednn_time_ms.items():
        assert got.onednn_time_ms[key] == pytest.approx(ms)
    assert sorted(p.offset for p in got.problems) == [first, first]


@pytest.mark.parametrize("source", ["log", "profile"])
def test_run_without_a_tf_version(cnn_off_logdir: Path, tmp_path: Path, source: str) -> None:
    """A run that left only its log (oneDNN off: no banner) or only its profile: no
    dump, so no TF version."""
    if source == "log":
        shutil.copyfile(cnn_off_logdir / "tf_log.txt", tmp_path / "tf_log.txt")
    else:
        (profile,) = cnn_off_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
        target = tmp_path / profile.relative_to(cnn_off_logdir)
        target.parent.mkdir(parents=True)
        shutil.copyfile(profile, target)
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    (run,) = doc["runs"]
    assert run["counts_from"] == source and run["op_types"]


def test_non_finite_numbers_in_a_log_stay_out_of_json(dump: Dump, cnn_logdir: Path,
                                                       tmp_path: Path) -> None:
    """oneDNN times 'nan', 'inf', '1e999', '-1' and an absl time of 400 digits: the JSON
    stays standard (no NaN/Infinity), the lines are warned about, no time is made up."""
    real = (cnn_logdir / "tf_log.txt").read_bytes()
    line = next(x for x in real.splitlines(keepends=True)
                if x.startswith(b"onednn_verbose,") and b",exec," in x)
    head = line.rstrip(b"\n").rsplit(b",", 1)[0]
    bad = b"".join(head + b"," + t + b"\n" for t in (b"nan", b"inf", b"-inf", b"1e999", b"-1"))
    bad += b"I0000 00:00:" + b"9" * 400 + b" 1 execute.cc:1] Executing op Relu in device /cpu:0\n"
    dump.copy_to(tmp_path / "clean")
    dump.copy_to(tmp_path / "dirty")
    (tmp_path / "clean" / "tf_log.txt").write_bytes(real)
    (tmp_path / "dirty" / "tf_log.txt").write_bytes(bad + real)
    rc, want, _ = summarize(tmp_path / "clean")
    rc, doc, stderr = summarize(tmp_path / "dirty")   # strict_json rejects NaN and Infinity
    assert rc == 0, stderr
    prims = doc["runs"][0]["onednn_verbose"]["primitives"]
    assert prims and all(math.isfinite(p["time_ms"]) and p["time_ms"] >= 0 for p in prims)
    # The bad lines count as executions of their primitive, with no time.
    before = {(p["kind"], p["implementation"], p["prop_kind"]): p for p in
              want["runs"][0]["onednn_verbose"]["primitives"]}
    for p in prims:
        b = before[(p["kind"], p["implementation"], p["prop_kind"])]
        assert p["time_ms"] == pytest.approx(b["time_ms"], abs=1e-3)
        assert p["count"] - b["count"] in (0, 5)
    assert_warned(doc, stderr, "tf_log.txt", 0, "garbled", "5 lines")
    facts = textlog.read_log(str(tmp_path / "dirty" / "tf_log.txt"))
    assert facts.first_time is None or math.isfinite(facts.first_time)



