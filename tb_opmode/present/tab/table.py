"""The optypes route: the op table, filtered, searched, sorted and paged
(``frontend/table.js`` shows it).

In: a ``view.RunView`` and the request's sort column and order, filters, search text,
page, and a trace's graph id (the Functions section's "its op types"). Out: ``op_rows``
(every row that passes, sorted) and ``op_page`` (one page of them, ``payloads.OpPage``).
A filter and a sort column are each a named entry of a table below; ``FILTERS`` and
``SORT_KEYS`` are their names, which a request gives. Unknown names, graphs and pages out
of range raise ``errors.BadParameter``.
"""
from __future__ import annotations

from typing import Any, Callable

from ...errors import BadParameter
from ...vocab import EAGER, GRAPH, MODES
from ..payloads import OpPage, Row, of_mode
from .limits import DEFAULT_PAGE_SIZE
from .view import RunView, page_slice

__all__ = ["op_rows", "op_page", "SORT_KEYS", "FILTERS"]


def _ran(row: Row, mode: str) -> bool:
    return bool(of_mode(row, mode)["executions"])


def _time(row: Row, mode: str) -> int:
    return of_mode(row, mode).get("time_ns", 0)


# What a row must be to pass each filter (filters combine with AND).
_FILTERS: dict[str, Callable[[Row], bool]] = {
    "both": lambda r: _ran(r, EAGER) and _ran(r, GRAPH),
    "differs": lambda r: r["kernel_differs"],
    "no_onednn": lambda r: not r["onednn"],
    "onednn": lambda r: r["onednn"],
    "eager_only": lambda r: _ran(r, EAGER) and not _ran(r, GRAPH),
    "graph_only": lambda r: _ran(r, GRAPH) and not _ran(r, EAGER),
    "low_precision": lambda r: r["low_precision"],
}
FILTERS = tuple(_FILTERS)

# The sort columns, each with its key (ties broken by op type).
_SORT_KEYS: dict[str, Callable[[Row], Any]] = {
    "total": lambda r: (r["total"], r["op_type"]),
    "eager": lambda r: (r["eager"]["executions"], r["op_type"]),
    "graph": lambda r: (r["graph"]["executions"], r["op_type"]),
    "op_type": lambda r: r["op_type"].lower(),
    "time": lambda r: (_time(r, EAGER) + _time(r, GRAPH), r["op_type"]),
    "eager_time": lambda r: (_time(r, EAGER), r["op_type"]),
    "graph_time": lambda r: (_time(r, GRAPH), r["op_type"]),
}
SORT_KEYS = tuple(_SORT_KEYS)


def _matches(row: Row, query: str) -> bool:
    """The search: ``query`` (lower case) is in the op type or a kernel's name."""
    if not query:
        return True
    names = [row["op_type"]] + [k["name"] for m in MODES for k in of_mode(row, m)["kernels"]]
    return any(query in name.lower() for name in names)


def _check(sort: str, filters: tuple[str, ...]) -> None:
    if sort not in _SORT_KEYS:
        raise BadParameter(f"sort must be one of {', '.join(SORT_KEYS)}; got {sort!r}")
    unknown = [f for f in filters if f not in _FILTERS]
    if unknown:
        raise BadParameter(f"filter must be one of {', '.join(FILTERS)}; got {unknown[0]!r}")


def _in_graph(view: RunView, graph: str) -> Callable[[Row], bool]:
    """The rows of the op types that ran in one trace's graph ("": every row)."""
    if not graph:
        return lambda r: True
    if graph not in view.graph_op_types:
        raise BadParameter(f"graph must be the graph id of a trace of this run; got {graph[:40]!r}")
    types = view.graph_op_types[graph]
    return lambda r: r["op_type"] in types


def op_rows(view: RunView, sort: str = "total", descending: bool = True,
            filters: tuple[str, ...] = (), query: str = "", graph: str = "") -> list[Row]:
    """Every row that passes the filters (AND), the search and the graph, sorted."""
    _check(sort, filters)
    passes = [_FILTERS[f] for f in filters] + [_in_graph(view, graph)]
    q = query.strip().lower()
    rows = [r for r in view.rows.values() if all(p(r) for p in passes) and _matches(r, q)]
    rows.sort(key=_SORT_KEYS[sort], reverse=descending)
    return rows


def op_page(view: RunView, sort: str = "total", descending: bool = True,
            filters: tuple[str, ...] = (), query: str = "", page: int = 0,
            page_size: int = DEFAULT_PAGE_SIZE, graph: str = "") -> OpPage:
    """One page of the op table."""
    window = page_slice(page, page_size)
    rows = op_rows(view, sort, descending, filters, query, graph)
    return {"run": view.doc["run"], "total": len(rows), "all_total": len(view.rows),
            "page": page, "page_size": page_size, "sort": sort,
            "order": "desc" if descending else "asc", "filters": list(filters), "q": query,
            "graph": graph,
            "lower_bound": sorted(view.lower_bound),
            "devices": view.devices if len(view.devices) > 1 else [],
            "rows": rows[window]}
