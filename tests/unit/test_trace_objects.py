"""Which traces are a new tf.function object's: an address, a key, a context.

In: TF's trace lines as ``tb-opmode record`` keeps them (``tf_python.log``) of a job that
makes a tf.function in a loop and calls each once (``fn = make(); fn(t)``): CPython often
puts the third object where the first was freed, so TF's log prints the first's address
again, with the same key. Out: the log's ledger (``traces_logged``) counts three objects,
each trace after the first caused by a new function object, as TF's own count of traces
says; TF's second trace of a first call that created variables (the same key right after
an uncalled trace, at the same address or through 2.13's other wrapper) stays one object;
and the same object traced for the same arguments in another context (a distribution
strategy's scope: ``in_cross_replica_context=True``) is one object whose trace says so.

The lines are written here as TF 2.21 writes them, and parsed by the product's reader:
the subject is the ledger's reading of addresses, which a real run shows only when the
allocator happens to reuse one. ``tests/test_record_retrace.py`` records such a loop with
real TF (its ``inner``): in CI, on TF 2.13, the third object got the first's address and
was counted as the first object traced again, cause unknown; freeing each object before
making the next does not make TF's objects reuse addresses reliably, hence these lines.
"""
from __future__ import annotations

from collections import Counter

from tb_opmode.analyze.traces_logged import logged_ledger
from tb_opmode.read.trace_log import TraceLine, parse_trace_lines

# As TF 2.21 writes it (Python vlog level 1); 2.13 prints no FunctionContext, no scope.
_LINE = ("Level 1:tensorflow:Creating new FuncGraph for Python function <function "
         "make.<locals>.inner at {address}> (key: FunctionContext(context=EagerContext("
         "parent_graph=None, device_functions=(), colocation_stack=(), "
         "in_cross_replica_context={cross}, variable_policy=None, xla_context_id=0), "
         "scope_type=<ScopeType.{scope}: 2>), Input Parameters:\n"
         "  x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(3,), dtype=tf.float32, name=None)\n"
         "Output Type:\n"
         "  TensorSpec(shape=(3,), dtype=tf.float32, name=None)\n"
         "Captures:\n"
         "  None)\n")


def _lines(*addresses: str, scope: str = "VARIABLE_CREATION", cross: tuple[bool, ...] = ()
           ) -> list[TraceLine]:
    text = "".join(_LINE.format(address=a, scope=scope, cross=cross[i] if cross else False)
                   for i, a in enumerate(addresses)).encode()
    lines, _unread = parse_trace_lines(text, final=True)
    assert [line.address for line in lines] == list(addresses)
    return lines


def _calls(*per_trace: int) -> Counter[str]:
    """The concrete functions' calls, one function per trace, in uid order."""
    return Counter({f"__inference_inner_{10 + i}": n for i, n in enumerate(per_trace) if n})


def test_a_freed_address_printed_again_with_the_same_key_is_a_new_object() -> None:
    (fn,) = logged_ledger(_lines("0x7f01", "0x7f02", "0x7f01"), _calls(1, 1, 1))
    assert (len(fn.traces), fn.calls, fn.objects) == (3, 3, 3)
    assert fn.causes == {"new_function_object": 2}, fn.causes


def test_the_same_key_after_an_uncalled_trace_of_the_address_is_the_variables_retrace() -> None:
    """No scope printed (as 2.13 prints none): TF's second trace of a first call that
    created variables, the first never called; one object, no cause."""
    (fn,) = logged_ledger(_lines("0x7f01", "0x7f01", scope="NO_SCOPE"), _calls(0, 1))
    assert (len(fn.traces), fn.objects) == (2, 1)
    assert fn.causes == {}, fn.causes


def test_a_new_address_each_time_is_a_new_object_each_time() -> None:
    (fn,) = logged_ledger(_lines("0x7f01", "0x7f02", "0x7f03"), _calls(1, 1, 1))
    assert fn.objects == 3 and fn.causes == {"new_function_object": 2}, fn.causes


def test_the_same_arguments_in_another_context_are_the_same_objects_new_key() -> None:
    """As TF 2.21 logged a tf.function called, then called in a MirroredStrategy's scope
    (TF's tracing count: 2, one object)."""
    lines = _lines("0x7f01", "0x7f01", cross=(False, True))
    assert lines[0].context != lines[1].context and lines[0].params == lines[1].params
    (fn,) = logged_ledger(lines, _calls(1, 1))
    assert (len(fn.traces), fn.objects) == (2, 1)
    assert fn.causes == {"unknown": 1}, fn.causes
    (change,) = fn.traces[1].changed
    assert "in_cross_replica_context=False -> True" in change["why"], change


# MirroredStrategy's copy of a tf.function (``strategy.run(f)``): TF's line names its
# wrapper of the Python function, and its concrete functions bear the tf.function's name.
_COPY = "call_for_each_replica.<locals>.wrapped_fn"


def _named(*qualnames: str) -> list[TraceLine]:
    text = "".join(_LINE.replace("make.<locals>.inner", q).format(address=f"0x7f0{i}", scope="VARIABLE_CREATION",
                                                                   cross=q == _COPY)
                   for i, q in enumerate(qualnames)).encode()
    lines, _unread = parse_trace_lines(text, final=True)
    assert [line.qualname for line in lines] == list(qualnames)
    return lines


def test_a_strategy_copys_trace_is_its_functions_with_its_calls_and_no_cause() -> None:
    """``inner(t)`` once, then ``strategy.run(inner)`` 3 times (TF: one trace of each)."""
    (fn,) = logged_ledger(_named("make.<locals>.inner", _COPY), _calls(1, 3))
    assert (fn.python_name, len(fn.traces), fn.calls, fn.objects) == ("inner", 2, 4, 2)
    assert [t.calls for t in fn.traces] == [1, 3] and fn.causes == {}, fn.traces
    assert "strategy.run" in fn.traces[1].note and not fn.traces[0].note


def test_a_function_run_by_strategy_run_alone_is_named_by_its_concrete_functions() -> None:
    (fn,) = logged_ledger(_named(_COPY), _calls(3))
    assert (fn.python_name, len(fn.traces), fn.calls) == ("inner", 1, 3)
    assert "strategy.run" in fn.traces[0].note and fn.causes == {}


def test_copies_no_one_function_accounts_for_stay_apart() -> None:
    """Two functions with a concrete function more than their traces each: whose the copy
    is cannot be told, so it is not put with either."""
    calls = Counter({"__inference_inner_10": 1, "__inference_inner_11": 1, "__inference_outer_12": 1,
                     "__inference_outer_13": 1})
    by_name = {fn.python_name: fn for fn in logged_ledger(_named("make.<locals>.inner", "make.<locals>.outer",
                                                                 _COPY), calls)}
    assert sorted(by_name) == ["inner", "outer", "wrapped_fn"]
    assert len(by_name["inner"].traces) == 1 and len(by_name["outer"].traces) == 1
