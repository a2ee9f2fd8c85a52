"""A run's recording, as the summary and the tab say it, and two runs of one command compared.

In: ``RunModel``s (``model.recorded``, ``model.reads_tensors``, their graph kernels). Out:
``recording_doc``, a run's ``RecordingDoc`` (the evidence level that made it, the command
and how it ended, in words by ``ended_text``; for a run whose dump reads tensors, the note
that its fusions differ from the job's); ``recorded_nothing``, what ``summary`` and
``record``'s screen say of a recorded run whose job wrote no TensorFlow evidence; and
``compare_fusions``, which names, in that note, the fused kernels a ``kernels`` run of
the same command in the same logdir ran: the job's own kernels.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional

from ..analyze.kernels.remapper import is_fused
from ..analyze.recording import FUSION_NOTE
from ..model import RunModel
from ..read.discover import display
from .payloads import RecordingDoc, RunDoc

__all__ = ["recording_doc", "ended_text", "recorded_nothing", "compare_fusions", "fused_kernels"]


def ended_text(exit_status: Optional[int], signal: Optional[str]) -> str:
    """How a recorded job ended, in words ("" where its manifest does not say)."""
    if signal:
        status = f" (exit status {exit_status})" if exit_status is not None else ""
        return f"was killed by signal {signal}{status}"
    return "" if exit_status is None else f"exited with status {exit_status}"


def recorded_nothing(model: RunModel, name: Optional[str] = None) -> str:
    """Why a run ``record`` made holds nothing to read ("" if it holds sources): the job
    wrote no TensorFlow evidence, how it ended, and where its own words are. ``name``:
    the run as the reader knows it, where not as its logdir names it (``.``)."""
    recorded = model.recorded
    if recorded is None or any(model.sources.get(k) for k in ("debugger", "profile", "logs")):
        return ""
    ended = ended_text(recorded.exit_status, recorded.signal)
    ended = f"it {ended}" if ended else ""
    took = "" if recorded.duration_s is None else f"after {recorded.duration_s:.1f} s"
    how = " ".join(filter(None, (ended, took)))
    return (f"run {display(model.run if name is None else name)}: the recorded job wrote no TensorFlow evidence "
            f"({how + '; ' if how else ''}see its stderr.log)")


def recording_doc(m: RunModel) -> Optional[RecordingDoc]:
    """None for a run made by hand whose dump (if any) reads no tensor."""
    r = m.recorded
    if r is None and not m.reads_tensors:
        return None
    return {"evidence": r.evidence if r else "",
            "dump_mode": r.dump_mode if r else (m.reads_tensors or None),
            "command": list(r.command) if r else [],
            "exit_status": r.exit_status if r else None, "signal": r.signal if r else None,
            "ended": ended_text(r.exit_status, r.signal) if r else "",
            "note": FUSION_NOTE.format(mode=m.reads_tensors) if m.reads_tensors else "",
            "compared_with": "", "fused_kernels": []}


def fused_kernels(m: RunModel) -> Counter[str]:
    """Fused kernel -> the graph executions of the run that it ran."""
    out: Counter[str] = Counter()
    for row in m.op_types.values():
        for k in row.graph.kernels:
            if is_fused(k.name):
                out[k.name] += k.executions
    return out


def _kernels_run_of(m: RunModel, models: list[RunModel]) -> Optional[RunModel]:
    """A ``kernels`` run of the same command as ``m``'s, the last one read."""
    if m.recorded is None:
        return None
    same = [o for o in models if o is not m and o.recorded is not None
            and o.recorded.evidence == "kernels" and o.recorded.command == m.recorded.command]
    return same[-1] if same else None


def compare_fusions(models: list[RunModel], docs: list[RunDoc]) -> None:
    """In the note of each run whose dump reads tensors: the fused kernels a ``kernels``
    run of the same command ran (both in the logdir), or that it ran none."""
    for m, doc in zip(models, docs):
        recording = doc.get("recording")
        other = _kernels_run_of(m, models) if m.reads_tensors else None
        if recording is None or other is None:
            continue
        fused = fused_kernels(other)
        recording["compared_with"] = doc_run = other.run
        recording["fused_kernels"] = sorted(fused)
        ran = (", ".join(f"{k} x{n}" for k, n in sorted(fused.items())) if fused
               else "no fused kernel")
        recording["note"] += f"; the kernels run of the same command, {doc_run}, ran {ran}"
