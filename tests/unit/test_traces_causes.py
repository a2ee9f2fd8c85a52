"""The trace ledger's cause rules (``analyze/traces_causes.py``) on small inputs.

The inputs are what the dumps of ``tests/traces/workloads.py`` record (TF 2.21): ``step(x,
lr)`` traced for x float32 [4, 8] then [6, 8] (a SHAPE dump: shapes; FULL_HEALTH: sizes 32
then 48), for lr 0.1 then 0.05 (the same x), ``scale(t)`` for float32 then float64 [3, 5],
``accumulate`` (its first call created a variable: TF traced it twice, the first trace
never called), and a lambda's ``tf.function`` made anew in the loop. No TensorFlow needed.
"""
from __future__ import annotations

from tb_opmode.analyze.traces import FunctionLedger, TraceEntry, display_name
from tb_opmode.analyze.traces_causes import (
    CAUSE_RULES,
    CAUSES,
    ArgSpec,
    CauseContext,
    EarlierTrace,
    changed_of,
)
from tb_opmode.read.trace_log import TraceParam

X_4_8 = [ArgSpec("x", "float32", (4, 8), 32)]
X_6_8 = [ArgSpec("x", "float32", (6, 8), 48)]


def _later(**kw: object) -> CauseContext:
    ctx = CauseContext(first=False, first_of_object=False, tensor_args=["x"],
                       unrecorded_why="a NO_TENSOR dump records no dtypes or shapes")
    for name, value in kw.items():
        setattr(ctx, name, value)
    return ctx


def test_the_first_trace_changed_nothing() -> None:
    assert changed_of(CauseContext(first=True, first_of_object=True)).changed == []


def test_a_new_object_of_the_same_code_is_new_function_object() -> None:
    verdict = changed_of(_later(first_of_object=True, specs=X_4_8, previous_specs=X_4_8))
    assert [c["cause"] for c in verdict.changed] == ["new_function_object"]


def test_the_second_trace_of_a_call_that_created_variables_has_a_note_and_no_cause() -> None:
    verdict = changed_of(_later(previous_first_of_object=True, previous_calls=0))
    assert verdict.changed == [] and "variables" in verdict.note


def test_a_called_first_trace_before_is_no_variable_creation() -> None:
    verdict = changed_of(_later(previous_first_of_object=True, previous_calls=1))
    assert [c["cause"] for c in verdict.changed] == ["unknown"]


def test_shapes_recorded_name_the_argument_and_dimension() -> None:
    verdict = changed_of(_later(specs=X_6_8, previous_specs=X_4_8))
    assert verdict.changed[0]["cause"] == "shape"
    assert (verdict.changed[0]["arg"], verdict.changed[0]["dim"]) == ("x", 0)


def test_sizes_alone_name_the_argument_not_the_dimension() -> None:
    before = [ArgSpec("x", "float32", None, 32)]
    after = [ArgSpec("x", "float32", None, 48)]
    change = changed_of(_later(specs=after, previous_specs=before)).changed[0]
    assert change["cause"] == "shape" and change["arg"] == "x" and "dim" not in change


def test_a_dtype_change_wins_over_the_shape() -> None:
    before = [ArgSpec("t", "float32", (3, 5), 15)]
    after = [ArgSpec("t", "float64", (3, 5), 15)]
    change = changed_of(_later(tensor_args=["t"], specs=after, previous_specs=before)).changed[0]
    assert (change["cause"], change["arg"]) == ("dtype", "t")


def test_the_same_tensors_and_a_python_argument_is_python_value() -> None:
    verdict = changed_of(_later(python_args=["lr"], specs=X_4_8, previous_specs=X_4_8))
    assert [(c["cause"], c["arg"]) for c in verdict.changed] == [("python_value", "lr")]


def test_the_same_tensors_and_no_python_argument_is_unknown_with_why() -> None:
    change = changed_of(_later(specs=X_4_8, previous_specs=X_4_8)).changed[0]
    assert change["cause"] == "unknown" and change["why"]


def test_unrecorded_specs_are_unknown_with_how_to_find_out() -> None:
    change = changed_of(_later(python_args=["lr"])).changed[0]
    assert change == {"cause": "unknown", "why": "a NO_TENSOR dump records no dtypes or shapes"}


def test_every_cause_word_is_the_contracts() -> None:
    contexts = [_later(first_of_object=True), _later(specs=X_6_8, previous_specs=X_4_8),
                _later(python_args=["lr"], specs=X_4_8, previous_specs=X_4_8), _later()]
    words = {c["cause"] for ctx in contexts for c in changed_of(ctx).changed}
    assert words <= set(CAUSES) and [name for name, _ in CAUSE_RULES][-1] == "unknown"


def test_a_nested_retrace_inside_one_outer_trace_is_not_blamed_on_the_outer() -> None:
    """Keras 3's one_step_on_data traced twice inside multi_step_on_iterator's one trace:
    "traced again whenever that function is" would contradict the outer's one trace."""
    again = changed_of(_later(nested=True, outer="multi_step_on_iterator", same_outer=True)).changed
    assert [c["cause"] for c in again] == ["unknown"]
    assert "whenever" not in again[0]["why"] and "same trace" in again[0]["why"]
    outer_retraced = changed_of(_later(nested=True, outer="multi_step_on_iterator")).changed
    assert "whenever that function is" in outer_retraced[0]["why"]


def test_keras_functions_nested_in_another_have_their_own_label() -> None:
    path = "/site-packages/keras/src/backend/tensorflow/trainer.py"
    outer = display_name("multi_step_on_iterator", "train", path)
    inner = display_name("one_step_on_data", "train", path, nested=True)
    assert outer != inner and "one_step_on_data" in inner


def _key(rows: int, lr: str) -> tuple[TraceParam, ...]:
    return (TraceParam("x", "tensor", "float32", (rows, 4)), TraceParam("lr", "python", value=lr))


def test_a_call_is_told_against_the_nearest_earlier_trace_not_the_one_before() -> None:
    """step(x, lr) traced for 1 row and lr 0.1, then 2 rows and 0.2: a call with 1 row and
    0.4 matched neither; it differs from the first in lr alone, from the one before in
    both. Its cause is the Python value, and a note names the trace it is told against."""
    earlier = [EarlierTrace("__inference_step_1", _key(1, "0.1")),
               EarlierTrace("__inference_step_2", _key(2, "0.2"))]
    verdict = changed_of(_later(key=_key(1, "0.4"), previous_key=earlier[-1].key, earlier=earlier))
    assert [(c["cause"], c["arg"], c["before"], c["after"]) for c in verdict.changed] == [
        ("python_value", "lr", "0.1", "0.4")]
    assert "__inference_step_1" in verdict.note and "__inference_step_2" not in verdict.note


def test_a_call_differing_from_its_nearest_traces_in_different_ways_says_each() -> None:
    """Equally near traces: 1 row and lr 0.1, 2 rows and 0.2; a call with 2 rows and 0.1
    differs from each in one way. Both are why it traced: fixing one alone still retraces."""
    earlier = [EarlierTrace("__inference_step_1", _key(1, "0.1")),
               EarlierTrace("__inference_step_2", _key(2, "0.2"))]
    verdict = changed_of(_later(key=_key(2, "0.1"), previous_key=earlier[-1].key, earlier=earlier))
    assert sorted(c["cause"] for c in verdict.changed) == ["python_value", "shape"]


def test_the_trace_before_alone_gets_no_note() -> None:
    earlier = [EarlierTrace("__inference_step_1", _key(1, "0.1")),
               EarlierTrace("__inference_step_2", _key(2, "0.1"))]
    verdict = changed_of(_later(key=_key(3, "0.1"), previous_key=earlier[-1].key, earlier=earlier))
    assert [c["cause"] for c in verdict.changed] == ["shape"] and verdict.note == ""
    assert verdict.changed[0]["before"] == [2, 4]


def test_recorded_tensors_equal_to_an_earlier_trace_are_a_python_value() -> None:
    """A dump's specs: x [4, 8], then [6, 8], then [4, 8] again with a Python argument: the
    third call's tensors are the first's, so the Python value changed, not the shape."""
    earlier = [EarlierTrace("__inference_step_1", specs=X_4_8), EarlierTrace("__inference_step_2", specs=X_6_8)]
    verdict = changed_of(_later(specs=X_4_8, previous_specs=X_6_8, python_args=["lr"], earlier=earlier))
    assert [(c["cause"], c["arg"]) for c in verdict.changed] == [("python_value", "lr")]
    assert "__inference_step_1" in verdict.note


def test_advice_names_the_call_site_by_its_file_as_the_trace_lines_do() -> None:
    """The advice's call site is ``file.py:line``, as the def line and the trace lines say
    it, not the absolute path (the trace's call_sites keep that)."""
    fn = FunctionLedger("step", "step", "/home/u/proj/train.py:4", traces=[
        TraceEntry("__inference_step_1", "1", 1, ["/home/u/proj/train.py:9"]),
        TraceEntry("__inference_step_2", "2", 1, ["/home/u/proj/train.py:9"],
                   changed=[{"cause": "shape", "arg": "x", "before": [1], "after": [2]}])])
    (advice,) = fn.advice
    assert advice.startswith("shape: ") and advice.endswith("(called at train.py:9)"), advice
