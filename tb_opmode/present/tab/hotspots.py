"""The tab's Eager hot spots section: the lines of the user's code that issued eager work.

In: a ``RunView`` (its contract document's ``eager_sites``, ranked by
``analyze.eager_sites``). Out: ``hot_spots``, the payload of the hot spots route
(``payloads.HotSpots``): the first lines with their executions, time, shares, op types and
advice, the run's eager totals (its profiled eager time, and the part of it joined to a
line: the shares of the lines' times are of the whole), and a note saying what the times
cover. Its JavaScript is
``frontend/hotspots.js``.
"""
from __future__ import annotations

from ...analyze.eager_sites import DISPATCH_TIME, PROFILE_TIME
from ...vocab import EAGER
from ..payloads import EagerSiteDoc, HotSpot, HotSpots
from .limits import MAX_HOT_SPOT_OP_TYPES, MAX_HOT_SPOTS
from .view import RunView

__all__ = ["hot_spots", "times_note"]


def _capped(site: EagerSiteDoc) -> HotSpot:
    kept = dict(list(site["op_types"].items())[:MAX_HOT_SPOT_OP_TYPES])
    return {**site, "op_types": kept, "op_types_total": len(site["op_types"])}


# A run with no dump whose lines ``tb-opmode record``'s job counted and timed.
_DISPATCH_NOTE = ("Lines and times as the job dispatched its eager ops (tb-opmode record "
                  "counted each one and timed it: the op's run and TF's dispatch around it). "
                  "Ops TF issues itself (a constant made from a Python value) are on no line.")


def times_note(sites: list[EagerSiteDoc], profiled: bool, source: str = PROFILE_TIME) -> str:
    """What the times of the lines cover, in words (``source``: the lines' time source)."""
    if source == DISPATCH_TIME:
        return _DISPATCH_NOTE
    if not profiled:
        return ("No profile was joined to the run's eager executions: lines are ranked by "
                "executions. A profile (tf.profiler.experimental) adds their time.")
    untimed = sum(1 for s in sites if s["time_ns"] is None)
    if not untimed:
        return "Times are the profile's eager op events, each joined to the line that issued it."
    return (f"Times are the profile's eager op events, each joined to the line that issued it; "
            f"{untimed} line(s) ran outside the profile's window: ranked by executions, after "
            f"the timed ones.")


def hot_spots(view: RunView, limit: int = MAX_HOT_SPOTS) -> HotSpots:
    """The run's eager hot spots, the first ``limit`` lines."""
    sites = view.doc["eager_sites"]
    timed = any(s["time_ns"] is not None for s in sites)
    source = next((s["time_source"] for s in sites if s["time_source"]), "")
    joined_ns = sum(s["time_ns"] or 0 for s in sites)
    # the profile's eager time, of which the lines' are a part; the job's own clock has
    # no more than the lines it timed
    eager_ns = joined_ns if source == DISPATCH_TIME else sum(
        ns for (_op, mode, _kernel), (_n, ns) in view.model.times.items() if mode == EAGER)
    return {"run": view.model.run, "sites": [_capped(s) for s in sites[:limit]],
            "total": len(sites), "executions": sum(s["executions"] for s in sites),
            "time_ns": eager_ns if timed else None, "joined_ns": joined_ns if timed else None,
            "time_source": source, "note": times_note(sites, timed, source or PROFILE_TIME)}
