"""The tab's Functions section: the trace ledger of a run (``functions.js`` draws it).

In: a ``RunView`` (its ``doc``: the contract's ``tf_functions``). Out: ``functions``,
a ``FunctionsPayload``: the Python functions run as tf.functions, the most traced first
(at most ``MAX_FUNCTIONS``, each with at most ``MAX_TRACES`` of its traces; ``total``
and each function's ``traces`` say how many there are; ``empty``, where it has none, says
why by what the run holds: ``ledger.no_traces_text``).
"""
from __future__ import annotations

from typing import cast

from ..ledger import no_traces_text
from ..payloads import FunctionsPayload, TfFunction
from .view import RunView

__all__ = ["functions", "MAX_FUNCTIONS", "MAX_TRACES"]

MAX_FUNCTIONS = 100
MAX_TRACES = 50


def _capped(f: TfFunction) -> TfFunction:
    return cast(TfFunction, {**f, "trace_list": f["trace_list"][:MAX_TRACES]})


def functions(view: RunView) -> FunctionsPayload:
    """The run's trace ledger, capped."""
    fns = view.doc.get("tf_functions", [])
    return {"run": view.model.run, "total": len(fns),
            "functions": [_capped(f) for f in fns[:MAX_FUNCTIONS]],
            "empty": "" if fns else no_traces_text(view.doc)}
