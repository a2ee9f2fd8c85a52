"""The eager lines ``tb-opmode record``'s job counts with no dump, on synthetic frames.

In: ``capture.inprocess._EagerLines`` given the analysis's own patterns of what is not the
user's code, an op wrapper compiled under a library's path (as TF's generated wrappers
are) that calls the wrapped dispatch function, called from this file (the user's code);
then the job's facts written into a manifest and read back (``read.manifest``). Out:
failures when a dispatch is filed under another line than the one that called the
wrapper, when a comprehension's frame is taken for the line's function, when a failed
dispatch or a tf.function's call is counted, when the count of stacks is not bounded,
or when the manifest loses or invents a dispatch, or the run does not warn of those left
out. Needs no TensorFlow.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tb_opmode.analyze.eager_sites import INNER_SCOPES, NOT_USER_CODE, choose_frames, enclosing_function
from tb_opmode.analyze.recording import DROPPED_LINES, note_recording
from tb_opmode.capture import inprocess
from tb_opmode.model import RunModel
from tb_opmode.read.manifest import recorded_run

LIBRARY = "/venv/lib/python3.11/site-packages/tensorflow/python/ops/gen_fake_ops.py"
_WRAPPER = """
def relu(dispatch, x):
    return dispatch(None, "Relu", None, x)

def fallback(execute, x):
    return execute(b"Relu", 1, [x], (), None)
"""


def _library() -> dict[str, Any]:
    """Functions whose code says it lives in TF's generated op wrappers."""
    scope: dict[str, Any] = {}
    exec(compile(_WRAPPER, LIBRARY, "exec"), scope)
    return scope


def _lines() -> inprocess._EagerLines:
    return inprocess._EagerLines(NOT_USER_CODE, tuple(INNER_SCOPES))


def _failing(*_args: Any) -> Any:
    raise ValueError("the op failed")


def _rows(facts: dict[str, Any]) -> list[tuple[str, int, list[tuple[str, int, str]]]]:
    return [(op, n, [tuple(facts["frames"][i]) for i in numbers])
            for op, n, numbers, _ns in facts["dispatches"]]


def _slow(*args: Any) -> Any:
    time.sleep(0.002)
    return args[3]


def test_each_dispatch_is_filed_under_the_line_that_called_the_wrapper() -> None:
    lines, lib = _lines(), _library()
    fast = lines.wrap_fast_path(_slow)
    here = sys._getframe().f_lineno
    results = [lib["relu"](fast, n) for n in range(3)]  # three dispatches from a comprehension
    assert results == [0, 1, 2]
    facts = lines.facts()
    ((op, n, frames),) = _rows(facts)
    assert (op, n) == ("Relu", 3)
    assert facts["dispatches"][0][3] >= 3 * 2_000_000  # each dispatch's wall time, summed
    # outermost first: this test's line, the comprehension's frame (before Python 3.12
    # inlined them), the library wrapper
    assert [f[0] for f in frames] == [__file__] * (len(frames) - 1) + [LIBRARY]
    assert frames[0][1:] == (here + 1, "test_each_dispatch_is_filed_under_the_line_that_called_the_wrapper")
    user, site, library = choose_frames(frames)
    assert user is not None and frames[user][1] == here + 1
    assert enclosing_function(frames, user) == frames[0][2]
    assert library == len(frames) - 1 and site is not None


def test_a_failed_dispatch_and_a_tf_functions_call_are_not_counted() -> None:
    lines, lib = _lines(), _library()
    with pytest.raises(ValueError):
        lib["relu"](lines.wrap_fast_path(_failing), 1)
    calls: list[Any] = []

    def execute(op_name: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(op_name)
    counted = lines.wrap_execute(execute)
    counted("__inference_step_12", 1, [], (), None)  # a tf.function's call
    lib["fallback"](counted, 1)  # the wrappers' slow path names the op in bytes
    assert calls == ["__inference_step_12", b"Relu"]
    assert [(op, n) for op, n, _frames in _rows(lines.facts())] == [("Relu", 1)]


def test_the_stacks_kept_are_bounded_and_the_rest_counted_as_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inprocess, "_MAX_EAGER_KEYS", 3)
    lines, lib = _lines(), _library()
    fast = lines.wrap_fast_path(lambda *args: None)
    makers: list[Callable[[], Any]] = [eval(compile(f"lambda: relu(fast, {i})", f"/work/job_{i}.py", "eval"),
                                            {"relu": lib["relu"], "fast": fast}) for i in range(40)]
    for i, make in enumerate(makers):
        for _ in range(i + 1):
            make()
    facts = lines.facts()
    rows = _rows(facts)
    # 10 x 3 stacks held while counting, the 3 commonest kept; every dispatch accounted for
    assert [n for _op, n, _frames in rows] == [30, 29, 28]
    assert sum(n for _op, n, _f in rows) + facts["dropped"] == sum(range(1, 41))


def _manifest(tmp_path: Path, facts: dict[str, Any]) -> Path:
    doc = {"format": "tb_opmode.record/1", "processes": [{"pid": 1, "recording": True, "eager_lines": facts}]}
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    return tmp_path


def test_the_manifest_gives_back_each_kept_stack_and_drops_a_damaged_row(tmp_path: Path) -> None:
    lines, lib = _lines(), _library()
    fast = lines.wrap_fast_path(_slow)
    for _ in range(2):
        lib["relu"](fast, 0)
    facts = lines.facts()
    facts["dispatches"].append(["Mul", 5, [99], 10])  # a frame number the table lacks
    facts["dispatches"].append(["Mul", "x", []])  # not laid out as the job writes it
    run = recorded_run(str(_manifest(tmp_path, facts)))
    assert run is not None and run.eager_lines is not None
    ((op, n, frames, ns),) = run.eager_lines
    assert (op, n) == ("Relu", 2) and frames[-1][0] == LIBRARY and frames[0][0] == __file__
    assert ns == facts["dispatches"][0][3] and ns is not None and ns >= 2 * 2_000_000
    assert run.eager_lines_dropped == 5


def test_a_run_whose_job_counted_nothing_says_so(tmp_path: Path) -> None:
    run = recorded_run(str(_manifest(tmp_path, _lines().facts())))
    assert run is not None and run.eager_lines == () and run.eager_lines_dropped == 0
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"format": "tb_opmode.record/1", "processes": [{"pid": 1, "recording": True}]}))
    run = recorded_run(str(tmp_path))
    assert run is not None and run.eager_lines is None


def test_dispatches_left_out_of_the_lines_are_a_warning_of_the_run(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inprocess, "_MAX_EAGER_KEYS", 1)
    lines, lib = _lines(), _library()
    fast = lines.wrap_fast_path(lambda *args: None)
    for _ in range(2):
        lib["relu"](fast, 0)  # one stack, twice: kept
    lib["fallback"](lines.wrap_execute(lambda *args, **kwargs: None), 0)  # another: left out
    _manifest(tmp_path, lines.facts())
    model = RunModel(run="r", directory=str(tmp_path))
    note_recording(model)
    assert [p.message for p in model.problems] == [DROPPED_LINES.format(n=1)]
