"""Python runs this at start-up in every process of a job that ``tb-opmode record`` started
(its directory is first on ``PYTHONPATH``), then the ``sitecustomize`` it hid, if any.

In: the environment (``TB_OPMODE_RECORD``, see ``capture.inprocess``). Out: in a process
that imports TensorFlow, the recording attached once the import is done; nothing else.

It loads ``inprocess.py`` by its path, not as ``tb_opmode.capture.inprocess``: the job's
Python need not have tb_opmode installed (``tb-opmode`` may live in a venv of its own),
and importing the package would cost the job time for nothing. The user's own
``sitecustomize`` (a site-packages one, or one on their ``PYTHONPATH``) still runs: ours
leaves ``sys.path`` and ``sys.modules`` as if it had not been there first. It does all
this only when Python imports it as ``sitecustomize`` (not when imported as a module of
the package, e.g. by the tests).
"""
from __future__ import annotations

import importlib.util
import os
import sys

__all__: list[str] = []

_HERE = os.path.dirname(os.path.abspath(__file__))
_INPROCESS = os.path.join(os.path.dirname(_HERE), "inprocess.py")
_NAME = "_tb_opmode_inprocess"


def _start() -> None:
    spec = importlib.util.spec_from_file_location(_NAME, _INPROCESS)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_INPROCESS}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    module.start_from_environment()


def _chain() -> None:
    """Import the ``sitecustomize`` Python would have imported without us: our directory
    is taken off ``sys.path`` while it is looked for, then put back where it was."""
    ours = sys.modules.pop("sitecustomize", None)
    places = [i for i, entry in enumerate(sys.path)
              if os.path.abspath(entry or os.curdir) == _HERE]
    for i in reversed(places):
        del sys.path[i]
    try:
        if importlib.util.find_spec("sitecustomize") is not None:
            __import__("sitecustomize")
        elif ours is not None:
            sys.modules["sitecustomize"] = ours
    finally:
        for i in places:
            sys.path.insert(i, _HERE)


if __name__ == "sitecustomize":
    try:
        if os.environ.get("TB_OPMODE_RECORD"):
            _start()
    except Exception as err:  # the job runs whatever happens to the recording
        sys.stderr.write(f"tb-opmode record: not recording this process: {type(err).__name__}: {err}\n")
    _chain()
