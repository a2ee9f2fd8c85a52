"""Stage 3, analysis: reader facts into a ``RunModel`` (counts, kernels, explanations)."""
from __future__ import annotations

__all__: list[str] = []
