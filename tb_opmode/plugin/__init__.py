"""Stage 5, serving: the TensorBoard plugin (``OpModePlugin``, setup.py's entry point)."""
from __future__ import annotations

from .routes import OpModeLoader, OpModePlugin

__all__ = ["OpModePlugin", "OpModeLoader"]
