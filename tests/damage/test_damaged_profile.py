"""A truncated XPlane profile beside a dump.

Part of the damage tests (see ``helpers.py``): real TF-written files of the
``cnn_logdir`` fixture, copied into ``tmp_path`` and damaged there."""
from __future__ import annotations

from pathlib import Path

from .helpers import (
    Dump,
    assert_warned,
    model_counts,
    summarize,
)

# ---------------------------------------------------------------- profiles

def test_truncated_profile_beside_a_dump(dump: Dump, cnn_logdir: Path, tmp_path: Path) -> None:
    dump.copy_to(tmp_path)
    (profile,) = cnn_logdir.glob("*/train/plugins/profile/*/*.xplane.pb")
    rel = profile.relative_to(cnn_logdir)
    target = tmp_path / rel
    target.parent.mkdir(parents=True)
    raw = profile.read_bytes()
    target.write_bytes(raw[:len(raw) // 2])
    rc, doc, stderr = summarize(tmp_path)
    assert rc == 0, stderr
    assert model_counts(doc) == dump.expected()[:3]
    assert [r["run"] for r in doc["runs"]] == ["."]   # the profile sits inside the dump's run
    assert_warned(doc, stderr, rel.as_posix(), 0, "not a complete XSpace")



