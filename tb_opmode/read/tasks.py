"""Which task of a cluster wrote a dump: read from the device names it records.

In: TF device names (``/job:worker/replica:0/task:1/device:CPU:0``) or a dump set's
files. Out: the task (``worker:1``; ``localhost:0`` for a one-process run), and the
tasks a dump set's ``.graphs`` file names, with which discovery puts the dumps of one
multi-worker job into one run.
"""
from __future__ import annotations

import re

from .tfdbg import read_file_states

__all__ = ["task_of", "is_cluster_task", "dump_tasks"]

_TASK = re.compile(r"/job:(?P<job>[^/]+)(?:/replica:\d+)?/task:(?P<task>\d+)")
def task_of(device: str) -> str:
    """``job:task`` of a TF device name (``/job:worker/replica:0/task:1/device:CPU:0`` ->
    ``worker:1``), or "" for a name without a job."""
    m = _TASK.search(device)
    return f"{m.group('job')}:{m.group('task')}" if m else ""


def is_cluster_task(task: str) -> bool:
    """Whether a task is a member of a cluster (``worker:1``, ``chief:0``), not the
    single process of a local run (``localhost:0``)."""
    return bool(task) and not task.startswith("localhost:")


def dump_tasks(files: dict[str, str]) -> frozenset[str]:
    """The tasks named by the devices a dump set's ``.graphs`` file records (kind ->
    path, as ``tfdbg.find_dump_sets`` gives). Reads only that file; an unreadable or
    damaged one names fewer tasks (its problems are reported when the run is built)."""
    path = files.get("graphs")
    if path is None:
        return frozenset()
    state = read_file_states({"graphs": path}).get("graphs")
    if state is None:
        return frozenset()
    return frozenset(t for t in map(task_of, state.part.devices.values()) if t)
