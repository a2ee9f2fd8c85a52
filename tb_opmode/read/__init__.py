"""Stage 1, reading: the files TensorFlow writes (tfdbg dumps, XPlane profiles, text
logs) into reader facts, with the cache that keeps them and run discovery."""
from __future__ import annotations

__all__: list[str] = []
