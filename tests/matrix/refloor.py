"""Rewrite the measured floors of ``test_matrix.py`` from the matrix's artifacts.

In: ``tests/artifacts/matrix-<TF version>.json`` of each TF minor the matrix ran on
(``make matrix`` writes them). Out: the ``FLOORS`` and ``UNKNOWN_ALLOWED`` entries of
``tests/matrix/test_matrix.py``, rewritten in place for the cells that miss the goal (a
dump-only share under 99%, an unknown share over 1%): the measured figure less half a
point (more one for unknowns), so that noise between machines passes and a regression
fails. Each cell keeps the reason written next to it; a new cell gets ``_CHEAP`` and must
be given its true reason by hand. Run it after a change to kernel assignment:

    python tests/matrix/refloor.py           # rewrite the floors
    python tests/matrix/refloor.py --table   # print the table of tests/matrix/README.md
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
TARGET = ROOT / "tests" / "matrix" / "test_matrix.py"
GOAL, MAX_UNKNOWN = 0.99, 0.01
NOISE, UNKNOWN_NOISE = 0.005, 0.005


def _measured() -> dict[str, dict[str, tuple[float, float]]]:
    """cell -> TF minor -> (dump + profile share, unknown share)."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for path in sorted(ARTIFACTS.glob("matrix-*.json")):
        minor = ".".join(path.stem.removeprefix("matrix-").split(".")[:2])
        for cell, row in json.loads(path.read_text()).items():
            wo = row["without_log"]
            out.setdefault(cell, {})[minor] = (wo["share"], wo["unknown_share"])
    return out


def _block(text: str, name: str) -> tuple[int, int, dict[str, str]]:
    """Where the dict ``name`` sits in ``text`` and the reason of each of its cells."""
    start = text.index(f"{name}: dict[")
    end = text.index("\n}\n", start) + 2  # just after the closing brace
    reasons = dict(re.findall(r'^    "(\w+)": \(\{[^}]*\}, (.+)\),$', text[start:end], re.M))
    return start, end, reasons


def _render(name: str, annotation: str, rows: dict[str, dict[str, float]],
            reasons: dict[str, str], default: str) -> str:
    lines = [f"{name}: {annotation} = {{"]
    for cell in sorted(rows):
        floors = ", ".join(f"'{minor}': {value}" for minor, value in sorted(rows[cell].items()))
        lines.append(f'    "{cell}": ({{{floors}}}, {reasons.get(cell, default)}),')
    return "\n".join(lines) + "\n}"


def table() -> str:
    """The table of tests/matrix/README.md: per cell, executions and the three shares per TF version."""
    runs: dict[str, dict[str, Any]] = {}
    for path in sorted(ARTIFACTS.glob("matrix-*.json")):
        runs[path.stem.removeprefix("matrix-")] = json.loads(path.read_text())
    versions = sorted(runs, key=lambda v: [int(x) for x in v.split(".")], reverse=True)
    head = ["cell", f"executions ({versions[0]})"] + [
        f"TF {v}: with log / dump + profile (unknown) / dump alone" for v in versions]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell in sorted({c for r in runs.values() for c in r}):
        first = runs[versions[0]].get(cell)
        total = (first["with_log"]["eager"]["total"] + first["with_log"]["graph"]["total"]
                 if first else 0)
        row = [cell, f"{total:,}"]
        for v in versions:
            got = runs[v].get(cell)
            if got is None:
                row += ["-"]
                continue
            wo, alone = got["without_log"], got.get("dump_only")
            row += [f"{got['with_log']['share']:.2%} / **{wo['share']:.2%}** "
                    f"({wo['unknown_share']:.1%}) / "
                    + (f"{alone['share']:.2%}" if alone else "-")]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> int:
    if sys.argv[1:] == ["--table"]:
        print(table())
        return 0
    measured = _measured()
    if not measured:
        sys.stderr.write(f"refloor: no matrix-*.json in {ARTIFACTS}; run `make matrix` first\n")
        return 2
    floors: dict[str, dict[str, float]] = {}
    unknowns: dict[str, dict[str, float]] = {}
    for cell, by_minor in measured.items():
        for minor, (share, unknown) in by_minor.items():
            if share < GOAL:
                floors.setdefault(cell, {})[minor] = round(max(share - NOISE, 0.0), 3)
            if unknown > MAX_UNKNOWN:
                unknowns.setdefault(cell, {})[minor] = round(unknown + UNKNOWN_NOISE, 3)
    text = TARGET.read_text()
    annotation = "dict[str, tuple[dict[str, float], str]]"
    for name, rows, default in (("FLOORS", floors, "_CHEAP"),
                                ("UNKNOWN_ALLOWED", unknowns, "_UNDECIDED")):
        start, end, reasons = _block(text, name)
        text = text[:start] + _render(name, annotation, rows, reasons, default) + text[end:]
    TARGET.write_text(text)
    print(f"refloor: {len(floors)} cells under {GOAL:.0%}, {len(unknowns)} over "
          f"{MAX_UNKNOWN:.0%} unknown, from {sorted({m for c in measured.values() for m in c})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
