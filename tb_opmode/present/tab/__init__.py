"""The tab's routes, as pure functions: small JSON-ready payloads from a run's model.

In: a ``RunModel`` from ``analyze.assemble.build_run``, turned once by ``build_view``
into a ``RunView`` that holds what every request needs. Out: the payloads the routes
in ``plugin/routes.py`` serve, typed in ``present/payloads.py``. One module per section
of the tab, beside its JavaScript in ``frontend/``:

- ``view``: ``RunView``, ``build_view`` and what every section shares; ``rows`` (a
  row of the op table), ``dump`` (what the dump records and misses), ``dtypes`` (a
  dtype in words) and ``limits`` (the caps of each list) serve it;
- ``overview`` <-> ``overview.js``: the run at a glance and in full;
- ``table`` <-> ``table.js``: the op table, filtered, searched, sorted and paged;
- ``detail`` <-> ``detail.js``: one op type, all of it;
- ``compare`` <-> ``compare.js``: two runs compared;
- ``hotspots`` <-> ``hotspots.js``: the lines of the user's code that issued eager work;
- ``functions`` <-> ``functions.js``: the trace ledger, per Python function;
- ``exports``: the CSV and JSON downloads.

A new section is a module here and its JavaScript in ``frontend/``, its payload a
``TypedDict`` in ``payloads`` and a ``@typedef`` in ``frontend/data.js``.

Shared with the CLI, not recomputed here: rows and explanations are the summary contract's
(``contract.run_doc``, ``analyze.explain.explain``), kernel classes
``analyze.explain.kernel_class``, times ``RunModel.times``, call sites and graphs
``analyze.explain.call_sites`` and ``analyze.explain.function_graphs``, the CSV
``csv.render_csv``; the timeline window and the trace export are in ``timeline``.
Nothing here reads a file or touches the network; bad parameters raise
``errors.BadParameter`` (a ``ValueError``) with a message, unknown ops
``errors.UnknownOpType`` (a ``LookupError``); the plugin turns them into 400 and 404.

This module is the package's face: it re-exports what the plugin, the CLI, the load
worker, the tests and the bench use, so ``from tb_opmode.present.tab import op_page``
keeps working.
"""
from __future__ import annotations

from .compare import compare
from .detail import op_detail, short_why
from .dtypes import dtype_label
from .dump import device_splits, dump_gap, dump_modes, lower_bound, short_device
from .exports import dumps_json, export_csv, export_json
from .functions import functions
from .hotspots import hot_spots
from .limits import MAX_PAGE_SIZE
from .overview import KINDS, cpu_facts, overview, unknowns
from .rows import kernel_kind
from .table import FILTERS, SORT_KEYS, op_page, op_rows
from .view import RunView, build_view, onednn_state

__all__ = [
    "RunView", "build_view", "onednn_state", "overview", "op_rows", "op_page",
    "op_detail", "compare", "export_csv", "export_json", "dumps_json", "kernel_kind",
    "short_why", "SORT_KEYS", "FILTERS", "KINDS", "MAX_PAGE_SIZE", "dump_modes", "dump_gap",
    "dtype_label", "short_device", "device_splits", "lower_bound", "cpu_facts", "unknowns",
    "hot_spots",
    "functions",
]
