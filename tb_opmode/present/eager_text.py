"""The eager hot spots of a run JSON as text, for ``tb-opmode summary``.

In: one run of the JSON contract (``present.contract.run_json``) with its ``eager_sites``
(``analyze.eager_sites``, ranked). Out: a short block of text lines, the first lines of the
user's code, one each (wrapped) with what to change there under it, every string from the
files made printable by ``display``.
"""
from __future__ import annotations

import textwrap
from typing import Any

from ..analyze.eager_sites import DISPATCH_TIME
from ..read.discover import display

__all__ = ["render_hot_spots", "short_location", "site_figures", "SUMMARY_SITES"]

# Lines of the user's code the summary lists; the rest are in the JSON and the report.
SUMMARY_SITES = 5
# Op types named per line in the summary, busiest first.
_OP_TYPES = 4
_WIDTH = 100


def short_location(location: str) -> str:
    """``dir/file.py:12`` of a ``path:line``: the file and the directory it is in."""
    parts = location.replace("\\", "/").rsplit("/", 2)
    return "/".join(parts[-2:]) if len(parts) > 1 else location


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.2f} ms"


def site_figures(site: dict[str, Any]) -> str:
    """A line's executions and time with their shares, in words."""
    n = site["executions"]
    text = f"{n} execution{'' if n == 1 else 's'} ({site['share']:.1%})"
    if site["time_ns"] is not None:
        share = f" ({site['time_share']:.1%})" if site["time_share"] is not None else ""
        text += f", {_ms(site['time_ns'])} eager time{share}"
    elif site["time_note"]:
        text += f", time: {site['time_note']}"
    return text


def _site_line(rank: int, site: dict[str, Any]) -> str:
    where = (f"{short_location(site['user_location'])} (in {site['user_scope']})"
             if site["user_location"] else "(no line of your code on the stack)")
    ops = list(site["op_types"].items())
    named = ", ".join(f"{op} x{n}" for op, n in ops[:_OP_TYPES])
    if len(ops) > _OP_TYPES:
        named += f", +{len(ops) - _OP_TYPES} more"
    via = ""
    if site["location"] and site["location"] != site["user_location"]:
        via = f"; ops issued by {site['location_function']} ({short_location(site['location'])})"
    text = display(f"{rank}. {where}: {site_figures(site)}; {named}{via}")
    return "\n".join(textwrap.wrap(text, _WIDTH, initial_indent="    ",
                                   subsequent_indent="       ")) + "\n" + _advice_lines(site)


def _advice_lines(site: dict[str, Any]) -> str:
    """What to change at the line (``analyze.eager_sites.ADVICE_RULES``), one wrapped
    paragraph each, under the line's figures: the summary answers "what to change" too."""
    return "".join("\n".join(textwrap.wrap(display(f"fix: {advice}"), _WIDTH, initial_indent="       ",
                                           subsequent_indent="            ")) + "\n"
                   for advice in site.get("advice") or [])


def render_hot_spots(run: dict[str, Any], limit: int = SUMMARY_SITES) -> str:
    """The first ``limit`` eager hot spots of one run JSON ("" if none)."""
    sites = run.get("eager_sites") or []
    if not sites:
        return ""
    timed = any(s["time_ns"] is not None for s in sites)
    order = "by profiled eager time, then executions" if timed else "by executions"
    if any(s.get("time_source") == DISPATCH_TIME for s in sites):
        order = "by eager time, as the job timed each dispatch"
    more = f"; {len(sites) - limit} more in --format json" if len(sites) > limit else ""
    head = textwrap.wrap(f"Eager hot spots (lines of your code, {order}{more}):", _WIDTH,
                         initial_indent="  ", subsequent_indent="    ")
    lines = ["\n".join(head) + "\n"]
    lines += [_site_line(i + 1, s) for i, s in enumerate(sites[:limit])]
    return "".join(lines)
