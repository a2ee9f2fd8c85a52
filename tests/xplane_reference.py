"""A plain, slow reading of an XSpace, event by event: the oracle for
``tb_opmode.read.xplane.read_profile``, which decodes all events at once with
numpy (``tb_opmode.read.wire``).

In: the bytes of a ``.xplane.pb`` and its mtime. Out: the same lists and
span ``read_profile`` gives, or None if the file does not parse. It walks
the fully parsed protobuf (our own ``XSpace`` schema, events as messages),
one attribute at a time, following the rules written in ``xplane.py``:

- an event counts if its metadata is known and its times fit in int64;
- ``EagerExecute``-like events: the last ``eager_op`` stat, the last
  ``is_func``; one function call per ``tf_function_call`` stat;
- graph ops: ``node:kernel`` events, and ``ProcessAsync::Start`` launches with
  string ``name`` and ``kernel_type`` stats, unless inside a constant-folding
  executor (step id -1, or started inside one), on the same line;
- ``Iterator::Root`` events: the last string ``types`` and ``shapes`` stats, each
  distinct pair with types once, in order.
"""
from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from tb_opmode.read import xplane, xtypes
from tb_opmode.read.schema import XSpace

__all__ = ["reference_profile", "reference_tally"]

_LIMIT = 1 << 62


def _value(stat: Any, names: dict[int, str]) -> Any:
    """A stat's value: interned string, string, else the first non-zero number."""
    if stat.ref_value:
        return names.get(stat.ref_value, "")
    if stat.str_value:
        return stat.str_value
    if stat.int64_value or stat.uint64_value or stat.double_value:
        return stat.int64_value or stat.uint64_value or stat.double_value
    return b"<bytes>" if stat.bytes_value else 0


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def reference_profile(data: bytes, mtime_ns: int) -> dict[str, Any] | None:
    space = XSpace()
    try:
        space.ParseFromString(data)
    except DecodeError:
        return None
    planes = [p for p in space.planes if p.name == xtypes.HOST_PLANE]
    base = xplane._profile_start(space)
    shift_to_mtime = base is None and not all(
        line.timestamp_ns >= xtypes._EPOCH_MIN_NS for p in planes for line in p.lines)
    base = base or 0
    out: dict[str, Any] = {"eager": [], "graph": [], "calls": [], "iterators": [], "start": 0,
                           "end": 0}
    for plane in planes:
        kinds = xtypes._event_kinds(plane)
        names = {e.key: e.value.name for e in plane.stat_metadata}
        ids = {name: key for key, name in names.items()}  # a repeated name: its last id
        for line in plane.lines:
            t0 = line.timestamp_ns if line.timestamp_ns >= xtypes._EPOCH_MIN_NS else base + line.timestamp_ns
            events = []
            for ev in line.events:
                off, dur = float(ev.offset_ps), float(ev.duration_ps)
                times = (float(t0), off, dur, float(t0) + off / 1000.0,
                         float(t0) + off / 1000.0 + dur / 1000.0)
                if ev.metadata_id in kinds and max(map(abs, times)) < _LIMIT:
                    stats = [(s.metadata_id, _value(s, names)) for s in ev.stats]
                    events.append((kinds[ev.metadata_id], ev, t0 + ev.offset_ps // 1000,
                                   ev.duration_ps // 1000, stats))
            execs = [(ev.offset_ps, ev.offset_ps + ev.duration_ps,
                      any(k == ids.get("id") and v in (-1, (1 << 64) - 1) for k, v in stats))
                     for (kind, *_), ev, _, _, stats in events if kind == xtypes._EXEC]
            folding = [(s, e) for s, e, own in execs if own]
            while True:  # an executor started inside a folding one folds too
                widened = [(s, e) for s, e, own in execs
                           if own or any(a <= s < b for a, b in folding)]
                if widened == folding:
                    break
                folding = widened
            for (kind, name, node, kernel), ev, start, dur, stats in events:
                out["start"] = min(out["start"], start) if out["start"] else start
                out["end"] = max(out["end"], start + dur)
                folded = any(s <= ev.offset_ps < e for s, e in folding)
                last = {name: v for k, v in stats for name in [names.get(k)] if ids.get(name) == k}
                if kind == xtypes._OP and not folded:
                    out["graph"].append((node, kernel, start, dur))
                elif kind == xtypes._ASYNC and not folded:
                    node, kernel = last.get("name"), last.get("kernel_type")
                    if isinstance(node, str) and isinstance(kernel, str) and node and kernel:
                        out["graph"].append((node, kernel, start, dur))
                elif kind == xtypes._DATA:
                    spec = tuple(v if isinstance(v, str) else ""
                                 for v in (last.get("types"), last.get("shapes")))
                    if spec[0] and spec not in out["iterators"]:
                        out["iterators"].append(spec)
                elif kind == xtypes._OTHER:
                    if "eager_op" in last:
                        out["eager"].append((_text(last["eager_op"]), bool(last.get("is_func")),
                                             start, dur))
                    out["calls"] += [(name, start, dur) for k, _ in stats
                                    if k == ids.get("tf_function_call")]
    if shift_to_mtime and out["end"]:
        shift = mtime_ns - out["end"]
        out["eager"] = [(o, f, s + shift, d) for o, f, s, d in out["eager"]]
        out["graph"] = [(n, k, s + shift, d) for n, k, s, d in out["graph"]]
        out["calls"] = [(n, s + shift, d) for n, s, d in out["calls"]]
        out["start"] += shift
        out["end"] += shift
    return out


def reference_tally(events: list[tuple[Any, Any, int, int]]) -> list[tuple[tuple[Any, Any], list[int]]]:
    """(first field, second field) -> [events, total ns, the fourth field] over ``events``
    (``reference_profile``'s graph or eager ops), event by event, keys in the order each
    first occurs: what the decoder's ``Profile.graph_tally`` and ``eager_tally`` must hold."""
    tally: dict[tuple[Any, Any], list[int]] = {}
    for first, second, _start, ns in events:
        cell = tally.setdefault((first, second), [0, 0])
        cell[0] += 1
        cell[1] += ns
    return list(tally.items())
