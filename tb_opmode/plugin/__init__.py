"""Stage 5, serving: the TensorBoard plugin (``OpModePlugin``, setup.py's entry point).

``routes`` answers the tab's requests (and maps errors to HTTP) over what ``run_store``
publishes: the runs of the logdir, read in the background, built in the worker
processes of ``pool``, with ``residency`` saying which full views stay in memory.
"""
from __future__ import annotations

from .routes import OpModeLoader, OpModePlugin

__all__ = ["OpModePlugin", "OpModeLoader"]
