"""Stage 4, presentation: a ``RunModel`` into the JSON contract, CSV, the tab's views,
the timeline and the report."""
from __future__ import annotations

__all__: list[str] = []
