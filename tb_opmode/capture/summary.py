"""What ``record`` prints once the job has ended: the run's summary on one screen, and how
to open the tab.

In: the run directory and its LOGDIR, and the CLI's table renderer (``render``: the
summary document as text, the same table ``tb-opmode summary`` prints, cut to a number of
rows). Out: text on ``stdout``: the run's answer in plain words from all its op types,
then the table of the busiest (the rest counted, with the command that lists them), then
the ``tensorboard --logdir`` line. A run with nothing to read (a job that never ran
TensorFlow: how it ended, as ``summary`` says), or whose reading fails, is one line that
says so: the job's exit status stands either way.
"""
from __future__ import annotations

import os
import shlex
from typing import Any, Callable, Optional, TextIO

from ..analyze.assemble import load
from ..errors import PublicError
from ..present.contract import summary
from ..present.recording import recorded_nothing
from ..read.discover import display

__all__ = ["print_summary", "ROWS"]

# Op types shown: with the run's header lines and the two below, one terminal screen.
ROWS = 15

# The summary document as text, each run's table cut to its first N op types (the lines
# above the table speak of all of them).
Render = Callable[[dict[str, Any], Optional[int]], str]


def _named(doc: dict[str, Any], name: str) -> tuple[dict[str, Any], int]:
    """The document with each run named as in the logdir (not ``.``), and how many op
    types the tables of ``ROWS`` rows leave out."""
    left = sum(max(0, len(run["op_types"]) - ROWS) for run in doc["runs"])
    runs = [{**run, "run": name if run["run"] == "." else f"{name}/{run['run']}"} for run in doc["runs"]]
    return {**doc, "runs": runs}, left


def print_summary(rundir: str, logdir: str, render: Render, stdout: TextIO) -> None:
    """The summary of the one run in ``rundir``, then the line that opens the tab."""
    stdout.write("\n")
    try:
        loaded = load(rundir)
        models = [m for m in loaded if m.counts_from]
        # The job has ended: a run with nothing says why, as `tb-opmode summary` does.
        nothing = next(filter(None, (recorded_nothing(m, rundir) for m in loaded)), "")
        if models:
            doc, left = _named(summary(models, rundir, explanations=False), os.path.basename(rundir))
            stdout.write(render(doc, ROWS).rstrip("\n") + "\n")
            if left:
                stdout.write(f"  ... {left} more op types: tb-opmode summary {shlex.quote(rundir)}\n")
        elif nothing:
            stdout.write(f"tb-opmode record: {nothing}\n")
        else:
            stdout.write(f"tb-opmode record: nothing in {display(rundir)} gives counts\n")
    except PublicError as err:
        stdout.write(f"tb-opmode record: cannot summarise {display(rundir)}: {display(str(err))}\n")
    except Exception as err:  # a bug in reading must not hide the job's own status
        stdout.write(f"tb-opmode record: cannot summarise {display(rundir)}: unexpected "
                     f"{type(err).__name__}: {display(str(err))[:300]}\n")
    stdout.write(f"\nOpen the tab:  tensorboard --logdir {shlex.quote(logdir)}\n")
    stdout.flush()
