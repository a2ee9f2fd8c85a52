"""Why a tf.function traced again, from the scope of TF's key, on a run TF wrote.

In: ``record_kernels`` (``tb-opmode record --evidence kernels``, TF 2.21: no dump; its
``tf_python.log`` holds TF's line per new trace, Keras 3's ``one_step_on_data`` traced
with ``scope_type`` ``VARIABLE_CREATION`` and again with ``NO_VARIABLE_CREATION``, and a
``step`` traced for three shapes). Out: the trace ledger says of each trace whose key
went from VARIABLE_CREATION to NO_VARIABLE_CREATION with the same parameters that the
first trace created variables (a note, no cause, the same tf.function object), and names
an argument's change where the scope stayed. The expectations are read from the log with
this module's own patterns, none of the product's parsing.
"""
from __future__ import annotations

import re

import pytest

from tb_opmode.analyze.assemble import RunModel, load
from tb_opmode.analyze.traces import FunctionLedger
from tb_opmode.analyze.traces_logged import run_ledger

from .conftest import Fixture

# One message: the function's qualified name, its key's first line, its parameters' lines.
_MESSAGE = re.compile(r"Creating new FuncGraph for Python function <function (\S+) at 0x[0-9a-f]+> "
                      r"\(key: ([^\n]*)\n((?:  [^\n]*\n)*)Output Type:")
_SCOPE = re.compile(r"scope_type=<ScopeType\.([A-Z_]+): \d+>")


def _traces_by_function(text: str) -> dict[str, list[tuple[str, str]]]:
    """The function's own name -> (scope, parameters' text) of each of its traces, in order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for m in _MESSAGE.finditer(text):
        scope = _SCOPE.search(m.group(2))
        out.setdefault(m.group(1).rsplit(".", 1)[-1], []).append((scope.group(1) if scope else "", m.group(3)))
    return out


@pytest.fixture(scope="module")
def kernels_run(record_kernels: Fixture) -> RunModel:
    (model,) = load(str(record_kernels.directory), None,
                    (str(record_kernels.directory / "tf_python.log"),))
    return model


def _pairs(record_kernels: Fixture, functions: list[FunctionLedger]) -> list[tuple[FunctionLedger, int, bool]]:
    """(function, index of a trace after its first, whether TF's key went from
    VARIABLE_CREATION to NO_VARIABLE_CREATION with the same parameters)."""
    logged = _traces_by_function((record_kernels.directory / "tf_python.log").read_text(errors="replace"))
    out = []
    for fn in functions:
        keys = logged.get(fn.python_name, [])
        assert len(keys) == len(fn.traces), (fn.python_name, len(keys), len(fn.traces))
        for i in range(1, len(keys)):
            (scope_was, params_was), (scope, params) = keys[i - 1], keys[i]
            created = (scope_was, scope) == ("VARIABLE_CREATION", "NO_VARIABLE_CREATION") and params == params_was
            out.append((fn, i, created))
    return out


def test_a_key_that_stopped_creating_variables_says_the_first_trace_created_them(
        kernels_run: RunModel, record_kernels: Fixture) -> None:
    """Keras 3's one_step_on_data, traced twice by one call inside multi_step_on_iterator:
    the first trace created variables, said in words, no cause, one tf.function object; a
    trace whose scope stayed is told by what its parameters changed."""
    pairs = _pairs(record_kernels, run_ledger(kernels_run))
    assert any(created for _fn, _i, created in pairs) and not all(created for _fn, _i, created in pairs)
    for fn, i, created in pairs:
        trace = fn.traces[i]
        if created:
            assert trace.changed == [] and "first trace created variables" in trace.note, (fn.name, trace)
            assert "new_function_object" not in fn.causes and fn.objects == 1, (fn.name, fn.causes)
        else:
            assert trace.changed and trace.changed[0]["cause"] in ("shape", "dtype", "python_value"), \
                (fn.name, trace.changed)


def test_keras_steps_are_named_as_the_dumps_ledger_names_them(kernels_run: RunModel,
                                                              record_kernels: Fixture) -> None:
    """Keras's step functions by what they are, with their Python names (a dump's ledger
    says "Keras train step"); the user's own function by its Python name."""
    text = (record_kernels.directory / "tf_python.log").read_text(errors="replace")
    qualnames = {m.group(1).rsplit(".", 1)[-1]: m.group(1) for m in _MESSAGE.finditer(text)}
    functions = run_ledger(kernels_run)
    assert functions
    for fn in functions:
        keras = ("Trainer." in qualnames[fn.python_name] or "Model." in qualnames[fn.python_name])
        if keras:
            assert fn.name.startswith("Keras ") and fn.name.endswith(f"({fn.python_name})"), fn.name
        else:
            assert fn.name == fn.python_name
    assert any(fn.name.startswith("Keras ") for fn in functions)
    assert any(fn.name == fn.python_name for fn in functions)  # the job's own step
