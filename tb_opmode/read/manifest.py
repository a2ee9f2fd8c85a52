"""What a run recorded by ``tb-opmode record`` says of its own environment and CPU.

In: a run's directory; ``tb-opmode record`` writes ``manifest.json`` there beside the dump.
Out: ``RecordedRun`` (the TF and oneDNN environment variables the job had, whether set by
the recording or by the user; the CPU's instruction sets, named as TF's start-up line names
them), or None where the directory holds no readable manifest. A file that is not one of
ours (no ``format`` of the recording) is ignored, not an error: a user may have any
``manifest.json`` in a logdir.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any, Optional

from . import fs

__all__ = ["MANIFEST", "RecordedRun", "recorded_run"]

MANIFEST = "manifest.json"
_FORMAT_PREFIX = "tb_opmode.record/"


@dataclass(frozen=True)
class RecordedRun:
    """The environment and CPU a recorded run had."""

    path: str
    environment: dict[str, str]
    # Upper-case instruction-set names (``AVX512_BF16``): /proc/cpuinfo's flags, and the
    # ones TF's own CPU line named; None where the manifest recorded neither.
    cpu_features: Optional[frozenset[str]]


def recorded_run(directory: str) -> Optional[RecordedRun]:
    """The manifest of the run in ``directory``, or None (absent, unreadable, not ours)."""
    path = posixpath.join(directory, MANIFEST) if fs.is_remote(directory) else \
        f"{directory.rstrip('/')}/{MANIFEST}"
    try:
        with fs.open_read(path) as f:
            doc = json.loads(f.read(1 << 20).decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not str(doc.get("format", "")).startswith(_FORMAT_PREFIX):
        return None
    return RecordedRun(path, _environment(doc), _cpu_features(doc))


def _environment(doc: dict[str, Any]) -> dict[str, str]:
    env = doc.get("environment") or {}
    out: dict[str, str] = {}
    for part in ("from_the_user", "set_by_record"):  # what the recording set wins
        values = env.get(part) if isinstance(env, dict) else None
        if isinstance(values, dict):
            out.update({str(k): str(v) for k, v in values.items()})
    return out


def _cpu_features(doc: dict[str, Any]) -> Optional[frozenset[str]]:
    cpu = doc.get("cpu")
    if not isinstance(cpu, dict):
        return None
    flags = cpu.get("flags") or []
    guard = cpu.get("tensorflow_cpu_feature_guard") or []
    if not flags and not guard:
        return None
    return frozenset(str(f).upper() for f in [*flags, *guard])
