"""A run made ready for the tab's routes, once per load: ``RunView`` and ``build_view``.

In: a ``RunModel`` from ``analyze.assemble.build_run`` (its counts and kernels, plus the
dumps, profiles and logs it keeps). Out: ``build_view``'s ``RunView``, which holds what
every request reads (the summary contract of the run, the op table's rows with their
time, dtypes and devices, the mode x class time, the ``timeline.Timeline``), and what
the sections share: ``onednn_state`` and ``page_slice``. The loader builds views off the
request path and may pickle them (to its worker processes, into the view cache).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...analyze.explain import class_times
from ...errors import BadParameter
from ...model import RunModel
from ...read import fs
from ...vocab import onednn_state as _onednn_word
from .. import timeline as _timeline
from ..contract import run_doc
from ..payloads import CutModes, Row, RunDoc
from .dump import device_splits, dtype_splits, dump_modes, lower_bound, uncounted
from .limits import MAX_PAGE_SIZE
from .rows import RowFacts, kernel_kind, table_row

__all__ = ["RunView", "build_view", "onednn_state", "page_slice"]


@dataclass
class RunView:
    """A loaded run plus what the routes read; never changed once built."""

    model: RunModel
    logdir: str
    doc: RunDoc                               # contract.run_doc of this run, without explanations
    rows: dict[str, Row]                      # op type -> row (with kernel class and time)
    class_time: dict[tuple[str, str], int]    # (mode, kernel class) -> profiled op time
    timeline: _timeline.Timeline
    # Profiled op time of op types the table has no row for (the dump does not count
    # them): (mode, op type) -> ns. Shown apart, so the overview's totals are the table's.
    outside_time: dict[tuple[str, str], int] = field(default_factory=dict)
    # (mode, kind) -> profiled op time of the table's rows (kernel "" counts as unknown).
    kind_time: dict[tuple[str, str], int] = field(default_factory=dict)
    # The dump's tensor_debug_mode names (most used first) and what they cannot count.
    dump_modes: list[str] = field(default_factory=list)
    # Modes whose counts the dump's circular buffer cut: mode -> what was cut and how.
    lower_bound: dict[str, CutModes] = field(default_factory=dict)
    # Devices the dump's executions name (short names, most executions first), and
    # (mode, device) -> executions over all op types.
    devices: list[str] = field(default_factory=list)
    device_totals: dict[tuple[str, str], int] = field(default_factory=dict)
    # Graph id of a trace (or any dump graph) -> the op types that ran in it and in the
    # graphs nested in it: what the table shows filtered to one trace.
    graph_op_types: dict[str, frozenset[str]] = field(default_factory=dict)


def _op_types_by_graph(model: RunModel) -> dict[str, frozenset[str]]:
    """Each dump graph's op types that ran, its nested graphs' included (a tf.cond's
    branches, an inlined tf.function: part of the trace that holds them)."""
    outer = {gid: g.outer_id for dump in model.dumps for gid, g in dump.graphs.items()}
    found: dict[str, set[str]] = {}
    for op in model.graph_ops:
        graph_id, seen = op.graph_id, set()
        while graph_id and graph_id not in seen and op.executions:
            seen.add(graph_id)
            found.setdefault(graph_id, set()).add(op.op_type)
            graph_id = outer.get(graph_id, "")
    return {gid: frozenset(types) for gid, types in found.items()}


def _time_per_mode(model: RunModel) -> Counter[tuple[str, str]]:
    """(op type, mode) -> profiled op time, over its kernels."""
    out: Counter[tuple[str, str]] = Counter()
    for (op_type, mode, _kernel), (_events, ns) in model.times.items():
        out[(op_type, mode)] += ns
    return out


def _device_totals(per_row: dict[tuple[str, str], Counter[str]]) -> Counter[tuple[str, str]]:
    """(mode, device) -> executions over all op types."""
    out: Counter[tuple[str, str]] = Counter()
    for (_op_type, mode), per_device in per_row.items():
        for device, n in per_device.items():
            out[(mode, device)] += n
    return out


def _devices_by_use(totals: Counter[tuple[str, str]]) -> list[str]:
    """The devices executions name, most executions first ("", an op without outputs,
    names none)."""
    names: Counter[str] = Counter()
    for (_mode, device), n in totals.items():
        if device:
            names[device] += n
    return [d for d, _n in names.most_common()]


def _time_apart(model: RunModel, rows: dict[str, Row]
                ) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """Profiled op time of op types without a row, by (mode, op type), and of the rows'
    op types, by (mode, kernel kind)."""
    outside: Counter[tuple[str, str]] = Counter()
    kind_time: Counter[tuple[str, str]] = Counter()
    for (op_type, mode, kernel), (_events, ns) in model.times.items():
        if op_type in rows:
            kind_time[(mode, kernel_kind(kernel))] += ns
        else:
            outside[(mode, op_type)] += ns
    return outside, kind_time


def build_view(model: RunModel, logdir: str, timeline: bool = True) -> RunView:
    """Index one run for the routes (run once per load, off the request path). Without
    ``timeline`` its timeline is left empty: for a view only the run list will read
    (the loader's light views), whose full form is built again when a route asks."""
    logdir = fs.absolute(logdir)
    # Explanations are long and per op: made on request (op detail, JSON export).
    doc = run_doc(model, logdir, explanations=False)
    modes = dump_modes(model)
    devices = device_splits(model)
    device_totals = _device_totals(devices)
    names = _devices_by_use(device_totals)
    cut = lower_bound(model)
    facts = RowFacts(time_ns=_time_per_mode(model), dtypes=dtype_splits(model),
                     devices=devices if len(names) > 1 else {}, cut_modes=frozenset(cut),
                     uncounted=uncounted(model, doc["op_types"], modes))
    rows = {r["op_type"]: table_row(r, facts) for r in doc["op_types"]}
    outside, kind_time = _time_apart(model, rows)
    lanes = _timeline.build_timeline(model) if timeline else _timeline.Timeline({}, 0, 0, 0)
    return RunView(model=model, logdir=logdir, doc=doc, rows=rows,
                   class_time=class_times(model.times), timeline=lanes,
                   outside_time=dict(outside), kind_time=dict(kind_time), dump_modes=modes,
                   lower_bound=cut, devices=names, device_totals=dict(device_totals),
                   graph_op_types=_op_types_by_graph(model))


# The name the loader and its load worker call it by.


def onednn_state(view: RunView) -> tuple[str, str]:
    """("on" | "off" | "unknown", how we know), as ``kernels.detect_onednn`` decided."""
    model = view.model
    state = _onednn_word(model.onednn_enabled)
    if model.onednn_source:
        return state, model.onednn_source
    return state, ("no log banner, and no kernel seen says whether oneDNN's custom "
                   "operations were on")


def page_slice(page: int, page_size: int) -> slice:
    """The rows of page ``page`` (from 0) of ``page_size`` rows; ``BadParameter`` if
    either is out of range."""
    if page < 0:
        raise BadParameter("page must be >= 0")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise BadParameter(f"page_size must be between 1 and {MAX_PAGE_SIZE}")
    return slice(page * page_size, page * page_size + page_size)
