"""How a run was recorded: the ``manifest.json`` that ``tb-opmode record`` leaves.

In: a run's directory (local or remote). Out: ``Recorded`` (the evidence level, the
dump's ``tensor_debug_mode``, the command, the TF version, the window of steps), or None
where the directory holds no manifest, or one this reader cannot read (a run made by
hand, a damaged file: the run is read all the same, without these facts).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from . import fs

__all__ = ["Recorded", "MANIFEST", "read_recorded", "is_recorded"]

MANIFEST = "manifest.json"
# Bigger than any manifest record writes; a bigger file is not ours.
_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Recorded:
    """What the manifest says of how the run was made."""

    evidence: str                  # "kernels", "calls", "full"
    dump_mode: Optional[str]       # tensor_debug_mode of its dump, None for no dump
    command: tuple[str, ...]
    tensorflow_version: str
    steps: tuple[int, ...]


def _text(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    return value if isinstance(value, str) else ""


def _parsed(doc: Any) -> Optional[Recorded]:
    if not isinstance(doc, dict) or not _text(doc, "format").startswith("tb_opmode.record/"):
        return None
    command = doc.get("command")
    steps = doc.get("steps")
    return Recorded(
        evidence=_text(doc, "evidence"), dump_mode=_text(doc, "dump_mode") or None,
        command=tuple(str(c) for c in command) if isinstance(command, list) else (),
        tensorflow_version=_text(doc, "tensorflow_version"),
        steps=tuple(s for s in steps if isinstance(s, int)) if isinstance(steps, list) else ())


def is_recorded(directory: str, filenames: list[str]) -> bool:
    """Whether ``directory`` (holding ``filenames``) is a run ``tb-opmode record`` made."""
    if MANIFEST not in filenames:
        return False
    try:
        return b'"format": "tb_opmode.record/' in fs.head(directory.rstrip("/") + "/" + MANIFEST, 512)
    except OSError:
        return False


def read_recorded(directory: str) -> Optional[Recorded]:
    """The manifest of the run in ``directory``, None where there is none to read."""
    path = directory.rstrip("/") + "/" + MANIFEST
    try:
        with fs.open_read(path) as f:
            data = f.read(_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > _MAX_BYTES:
        return None
    try:
        return _parsed(json.loads(data.decode("utf-8")))
    except (ValueError, UnicodeDecodeError):
        return None
