"""Eager ops whose one-node wrapper is known by (op, device) only: a log without TF's
function-runtime lines (``tb-opmode record``'s ``TF_CPP_VMODULE=execute=1,op_kernel=1``).

In: the real TF 2.21 lines of ``tests/data/vlog_tf221.txt`` (three eager Transposes: the
first two instantiate their wrapper, the third reuses the second's), with and without
their ``process_function_library_runtime`` lines, and with the second instantiation's
kernel edited to the stock one (as an int32 Transpose instantiates it). Out: each run's
kernel where the log can tell it, ``(unknown)`` where a key instantiated several kernels
and a run instantiated none of its own.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tb_opmode.read.textlog import parse_lines, read_log
from tb_opmode.read.textlog import split as log_split
from tb_opmode.vocab import UNKNOWN

TF221 = Path(__file__).resolve().parent.parent / "data" / "vlog_tf221.txt"
SECOND = b"= _MklTranspose[T=DT_DOUBLE,"  # the second run's instantiation


def _transposes(lines: list[bytes]) -> Counter[tuple[str, str]]:
    facts = parse_lines(lines)
    return Counter({(k.kernel, k.dtype): n for k, n in facts.eager_kernels.items()
                    if k.dispatch == "Transpose"})


def _lines(stock_second: bool, runtime_lines: bool) -> list[bytes]:
    lines = TF221.read_bytes().splitlines(keepends=True)
    assert sum(SECOND in line for line in lines) == 1
    if stock_second:
        lines = [line.replace(SECOND, b"= Transpose[T=DT_INT32,") for line in lines]
    if not runtime_lines:
        lines = [line for line in lines if b"process_function_library_runtime.cc" not in line]
    return lines


def test_function_runtime_lines_tell_each_run() -> None:
    assert _transposes(_lines(stock_second=True, runtime_lines=True)) == Counter(
        {("_MklTranspose", "DT_FLOAT"): 1, ("Transpose", "DT_INT32"): 2})


def test_one_kernel_for_several_dtypes_is_still_that_kernel() -> None:
    found = _transposes(_lines(stock_second=False, runtime_lines=False))
    assert {kernel for kernel, _dtype in found} == {"_MklTranspose"}
    assert sum(found.values()) == 3


def test_several_kernels_leave_a_run_that_instantiated_none_unknown() -> None:
    assert _transposes(_lines(stock_second=True, runtime_lines=False)) == Counter(
        {("_MklTranspose", "DT_FLOAT"): 1, ("Transpose", "DT_INT32"): 1, (UNKNOWN, ""): 1})


def test_two_halves_tell_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  forks: list[int]) -> None:
    """Split anywhere (the second half read by a forked child, merged): the same runs are
    unknown, the same exact."""
    data = b"".join(_lines(stock_second=True, runtime_lines=False))
    path = tmp_path / "keyless.log"
    path.write_bytes(data)
    whole = _transposes(data.splitlines(keepends=True))
    starts = [i + 1 for i, byte in enumerate(data[:-1]) if byte == ord("\n")]
    for split in starts:
        monkeypatch.setattr(log_split, "_split_point", lambda f, p, split=split: split)
        facts = read_log(str(path))
        halves = Counter({(k.kernel, k.dtype): n for k, n in facts.eager_kernels.items()
                          if k.dispatch == "Transpose"})
        assert halves == whole, split
