"""The TensorBoard plugin "opmode": its routes, over the runs its run store publishes.

In: a ``TBContext`` whose ``logdir`` holds tfdbg2 dumps, profiles and logs, read
by a ``run_store.RunStore`` in the background. Out: small JSON answers under
``/data/plugin/opmode/`` (runs, progress, overview, a page of the op table,
one op's detail, a timeline window, a comparison of two runs, exports) and the
tab's static files (``index.js`` and friends, from a fixed list). A request never
loads anything: it reads what the store published. It may only have the store read
a queued run next (``runs?want=RUN``, or any route asking for a run still queued).

Errors are mapped to HTTP once, in ``_route``: ``errors.BadParameter`` is a 400, an
unknown run or op type (``NoSuchRun``, ``UnknownOpType``) or a run that could not
be read a 404, a run still loading (``StillLoading``) a 503, and anything else a
bug: a 500 with its traceback logged.

The logdir: TensorBoard's ``context.logdir``, unless ``--opmode_logdir`` (through
``OpModeLoader``) or the environment's ``TB_OPMODE_LOGDIR`` names another. Both exist
for object stores: a TensorBoard that imports TensorFlow reads logdirs through
``tf.io.gfile``, which has no ``s3://`` without tensorflow-io and refuses to start;
it can then be given any local ``--logdir`` while this tab reads the bucket
(``read/fs.py``). A TensorBoard without TensorFlow reads ``s3://`` through fsspec
itself and passes it on as ``context.logdir``.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import re
from collections.abc import Iterable
from typing import Any, Callable, Optional, cast

from tensorboard import errors as tb_errors
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .. import vocab
from ..errors import BadParameter, NoSuchFile, PublicError
from ..present import tab, timeline
from .run_store import RunStore

__all__ = ["OpModePlugin", "OpModeLoader", "LOGDIR_ENV", "PLUGIN_NAME", "STATIC_FILES",
           "MAX_RESPONSE_BYTES"]

PLUGIN_NAME = "opmode"
# The logdir this tab reads, when it is not TensorBoard's (see the module's doc).
LOGDIR_ENV = "TB_OPMODE_LOGDIR"
# tb_opmode/static (a link to frontend/), one level above this module's package.
_STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
# The only files the static routes serve; nothing from the request becomes a path.
STATIC_FILES: dict[str, str] = {
    "index.js": "text/javascript",
    "data.js": "text/javascript",
    "views.js": "text/javascript",
    "dom.js": "text/javascript",
    "overview.js": "text/javascript",
    "table.js": "text/javascript",
    "detail.js": "text/javascript",
    "timelineview.js": "text/javascript",
    "compare.js": "text/javascript",
    "hotspots.js": "text/javascript",
    "functions.js": "text/javascript",
    "timeline.js": "text/javascript",
    "colors.js": "text/javascript",
    "vocab.js": "text/javascript",
    "style.css": "text/css",
}
MAX_RESPONSE_BYTES = 1 << 20
_MAX_TEXT_PARAM = 200
# Run names are paths relative to the logdir, as display text: a path can be
# PATH_MAX (4096) bytes and ``display`` writes an escaped byte as 4 characters.
_MAX_RUN_PARAM = 4 * 4096
_RUN_PARAMS = ("run", "a", "b", "want")
_JSON = "application/json"

logger = logging.getLogger(__name__)

# What get_plugin_apps maps a path to: a WSGI application (environ, start_response).
Handler = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# A route as written: a method taking the request, returning the response.
_Method = Callable[["OpModePlugin", wrappers.Request], wrappers.Response]
# The same method made a WSGI app by _route (bound, it is a Handler).
_App = Callable[["OpModePlugin", dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Unavailable(tb_errors.PublicError):
    """HTTP 503 (TensorBoard's errors stop at 404): the answer is not ready yet."""

    http_code = 503

    def __init__(self, details: str) -> None:
        super().__init__(f"Unavailable: {details}")
        self.headers.append(("Retry-After", "2"))


# errors.PublicError.http_status -> the TensorBoard error that answers it (TensorBoard's
# WSGI app turns these into responses with their text).
_TB_ERRORS: dict[int, Callable[[str], tb_errors.PublicError]] = {
    400: tb_errors.InvalidArgumentError,
    404: tb_errors.NotFoundError,
    503: _Unavailable,
}
_INTERNAL = ("Internal error: a bug in the opmode plugin answering this request; "
             "its traceback is in TensorBoard's log")


def _route(handler: _Method) -> _App:
    """A route: the WSGI app of ``handler`` (``Request.application``), with errors mapped
    to HTTP in this one place. An ``errors.PublicError`` answers with its status and
    message; any other exception is a bug: its traceback is logged and the answer is a
    500 (never a 404 that would pass it off as a missing run or op)."""

    @functools.wraps(handler)
    def answer(plugin: OpModePlugin, request: wrappers.Request) -> wrappers.Response:
        try:
            return handler(plugin, request)
        except PublicError as err:
            public = _TB_ERRORS.get(err.http_status)
            if public is None:
                logger.exception("opmode: %s answering %s", type(err).__name__, request.path)
                return _respond_text(request, _INTERNAL, 500)
            raise public(str(err)) from err
        except Exception:  # noqa: BLE001 - a bug: logged with its traceback, answered 500
            logger.exception("opmode: bug answering %s", request.path)
            return _respond_text(request, _INTERNAL, 500)

    # werkzeug types application() for a function of the request alone (and so its
    # result as an app of environ and start_response); it passes the request as the
    # last argument, so a method (plugin, request) works as well and stays a method.
    return cast(_App, wrappers.Request.application(answer))  # type: ignore[arg-type]


def _respond_text(request: wrappers.Request, text: str, code: int) -> wrappers.Response:
    response: wrappers.Response = http_util.Respond(request, text, "text/plain", code=code)
    return response


class OpModePlugin(base_plugin.TBPlugin):
    """Which ops ran eagerly or in graphs, and which oneDNN or stock kernel ran them.

    The runs come from a ``run_store.RunStore`` (``self.store``; one is made for the
    context's logdir unless given), started here unless ``start`` is False."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext, rescan_seconds: Optional[float] = None,
                 start: bool = True, store: Optional[RunStore] = None) -> None:
        flags = getattr(context, "flags", None)
        logdir = (getattr(flags, "opmode_logdir", None) or os.environ.get(LOGDIR_ENV)
                  or context.logdir or "")
        self.store = store if store is not None else RunStore(logdir, rescan_seconds)
        if start and self.store.logdir:
            self.store.start()

    # ------------------------------------------------------------ the store's

    def start(self) -> None:
        """Start the store's background thread (once)."""
        self.store.start()

    def close(self) -> None:
        """Stop the store's background thread (and its worker processes) and wait for it."""
        self.store.close()

    def rescan(self) -> None:
        """Have the store scan now instead of at the next interval."""
        self.store.rescan()

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until a full scan and all its loads finished (for tests and tools)."""
        return self.store.wait_idle(timeout)

    # ------------------------------------------------------------ TBPlugin

    def get_plugin_apps(self) -> dict[str, Handler]:
        apps: dict[str, Handler] = {
            "/vocab": self._serve_vocab,
            "/runs": self._serve_runs,
            "/progress": self._serve_progress,
            "/overview": self._serve_overview,
            "/functions": self._serve_functions,
            "/optypes": self._serve_optypes,
            "/op": self._serve_op,
            "/timeline": self._serve_timeline,
            "/compare": self._serve_compare,
            "/hotspots": self._serve_hotspots,
            "/export": self._serve_export,
            "/static/*": self._serve_static,
        }
        for name in STATIC_FILES:
            apps["/" + name] = self._serve_static
        return apps

    def is_active(self) -> bool:
        return self.store.active

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Op Mode",
                                            disable_reload=True)

    # ------------------------------------------------------------ helpers

    def _respond(self, request: wrappers.Request, body: Any) -> wrappers.Response:
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=True)
        if len(text) > MAX_RESPONSE_BYTES:
            raise BadParameter(
                "the answer would exceed 1 MB; ask for a smaller page or window")
        response: wrappers.Response = http_util.Respond(request, text, _JSON)
        return response

    @staticmethod
    def _text(request: wrappers.Request, name: str, default: str = "") -> str:
        value = request.args.get(name, default)
        cap = _MAX_RUN_PARAM if name in _RUN_PARAMS else _MAX_TEXT_PARAM
        if len(value) > cap:
            raise BadParameter(f"{name} is longer than {cap} characters")
        return value

    @staticmethod
    def _int(request: wrappers.Request, name: str, default: Optional[int], lo: int,
             hi: int) -> Optional[int]:
        raw = request.args.get(name)
        if raw is None or raw == "":
            return default
        if not re.fullmatch(r"-?\d{1,19}", raw.strip()):
            raise BadParameter(f"{name} must be an integer; got {raw[:40]!r}")
        value = int(raw)
        if not lo <= value <= hi:
            raise BadParameter(f"{name} must be between {lo} and {hi}; got {value}")
        return value

    @classmethod
    def _window(cls, request: wrappers.Request) -> tuple[Optional[int], Optional[int]]:
        """The ``start`` and ``end`` of a timeline window (ns from the run's first event)."""
        limit = 1 << 62
        return (cls._int(request, "start", None, -limit, limit),
                cls._int(request, "end", None, -limit, limit))

    @staticmethod
    def _bool(request: wrappers.Request, name: str, default: bool) -> bool:
        raw = request.args.get(name)
        if raw is None or raw == "":
            return default
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise BadParameter(f"{name} must be 0 or 1; got {raw[:40]!r}")

    # ------------------------------------------------------------ routes

    @_route
    def _serve_vocab(self, request: wrappers.Request) -> wrappers.Response:
        """The shared words (``vocab.served``): modes, evidence, kernel kinds, ..., by name."""
        return self._respond(request, vocab.served())

    @_route
    def _serve_runs(self, request: wrappers.Request) -> wrappers.Response:
        """All runs, loaded or not: ``[{run, status, tensorflow_version, ...}]`` plus progress.
        ``want``: a run the tab waits for, read next if it is still queued."""
        asked = self._text(request, "want")
        if asked:
            self.store.read_next(asked)
        return self._respond(request, self.store.runs())

    @_route
    def _serve_progress(self, request: wrappers.Request) -> wrappers.Response:
        """Runs, files and bytes loaded of those found."""
        return self._respond(request, self.store.progress())

    @_route
    def _serve_overview(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=``: run facts, mode shares, oneDNN coverage, the mode x class matrix."""
        view = self.store.view(self._text(request, "run"))
        return self._respond(request, tab.overview(view))

    @_route
    def _serve_functions(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=``: the trace ledger, per Python function run as a tf.function."""
        return self._respond(request, tab.functions(self.store.view(self._text(request, "run"))))

    @_route
    def _serve_optypes(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&sort=&order=asc|desc&filter=a,b&q=&graph=&page=&page_size=``: a page of
        the op table (``graph``: only the op types of one trace's graph)."""
        view = self.store.view(self._text(request, "run"))
        order = self._text(request, "order", "desc")
        if order not in ("asc", "desc"):
            raise BadParameter(f"order must be asc or desc; got {order[:40]!r}")
        raw_filters = self._text(request, "filter")
        filters = tuple(f for f in raw_filters.split(",") if f) if raw_filters else ()
        page = self._int(request, "page", 0, 0, 1_000_000)
        page_size = self._int(request, "page_size", 50, 1, tab.MAX_PAGE_SIZE)
        body = tab.op_page(view, self._text(request, "sort", "total"), order == "desc",
                           filters, self._text(request, "q"), page or 0, page_size or 50,
                           self._text(request, "graph"))
        return self._respond(request, body)

    @_route
    def _serve_op(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&op=&sites=``: kernels, evidence, call sites with source lines, graphs."""
        view = self.store.view(self._text(request, "run"))
        op = self._text(request, "op")
        if not op:
            raise BadParameter("missing parameter 'op'")
        sites = self._int(request, "sites", 10, 1, 50)
        body = tab.op_detail(view, op, sites or 10)
        return self._respond(request, body)

    @_route
    def _serve_timeline(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&start=&end=&max_events=&debug=&graph=``: events or bins of a window (ns
        from start); ``graph``: only the calls of one trace's concrete function (its name,
        as the trace ledger's ``graph``) and the graph ops inside them."""
        view = self.store.view(self._text(request, "run"))
        start, end = self._window(request)
        max_events = self._int(request, "max_events", 5000, 1, timeline.MAX_EVENTS)
        debug = self._bool(request, "debug", False)
        body = timeline.timeline_window(view.timeline, start, end, max_events or 5000, debug,
                                        self._text(request, "graph"))
        return self._respond(request, body)

    @_route
    def _serve_hotspots(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=``: the lines of the user's code that issued eager work, ranked."""
        view = self.store.view(self._text(request, "run"))
        return self._respond(request, tab.hot_spots(view))

    @_route
    def _serve_compare(self, request: wrappers.Request) -> wrappers.Response:
        """``?a=&b=&changed_only=&page=&page_size=``: op types whose modes or kernels differ."""
        a = self.store.view(self._text(request, "a"), "a")
        b = self.store.view(self._text(request, "b"), "b")
        changed_only = self._bool(request, "changed_only", True)
        page = self._int(request, "page", 0, 0, 1_000_000)
        page_size = self._int(request, "page_size", 100, 1, tab.MAX_PAGE_SIZE)
        body = tab.compare(a, b, changed_only, page or 0, page_size or 100)
        return self._respond(request, body)

    @_route
    def _serve_export(self, request: wrappers.Request) -> wrappers.Response:
        """``?run=&format=csv|json|trace`` (trace also takes start, end, max_events, debug
        and graph, as the timeline route does)."""
        view = self.store.view(self._text(request, "run"))
        fmt = self._text(request, "format", "csv")
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", view.doc["run"]).strip("._") or "logdir"
        if fmt == "csv":
            content, ctype, ext = tab.export_csv(view), "text/csv", "csv"
        elif fmt == "json":
            content, ctype, ext = tab.dumps_json(tab.export_json(view)), _JSON, "json"
        elif fmt == "trace":
            start, end = self._window(request)
            max_events = self._int(request, "max_events", timeline.MAX_TRACE_EVENTS, 1,
                                   timeline.MAX_TRACE_EVENTS)
            trace = timeline.export_trace(view.timeline, view.doc["run"],
                                          view.doc["tensorflow_version"], start, end,
                                          max_events or 1, self._bool(request, "debug", False),
                                          self._text(request, "graph"))
            content, ctype, ext = tab.dumps_json(trace), _JSON, "trace.json"
        else:
            raise BadParameter(f"format must be csv, json or trace; got {fmt[:40]!r}")
        if len(content) > MAX_RESPONSE_BYTES:
            raise BadParameter(
                "the export would exceed 1 MB; export a smaller timeline window")
        headers = [("Content-Disposition", f'attachment; filename="opmode-{safe}.{ext}"')]
        response: wrappers.Response = http_util.Respond(request, content, ctype, headers=headers)
        return response

    @_route
    def _serve_static(self, request: wrappers.Request) -> wrappers.Response:
        """A file of the tab, by its name in ``STATIC_FILES``; anything else is 404."""
        prefix = f"/data/plugin/{PLUGIN_NAME}/"
        path = request.path
        name = path[len(prefix):] if path.startswith(prefix) else ""
        if name.startswith("static/"):
            name = name[len("static/"):]
        ctype = STATIC_FILES.get(name)
        if ctype is None:
            raise NoSuchFile(f"no such file: {name[:80]!r}")
        try:
            with open(os.path.join(_STATIC_DIR, name), "rb") as f:
                body = f.read()
        except OSError as err:
            raise NoSuchFile(f"no such file: {name!r}") from err
        response: wrappers.Response = http_util.Respond(request, body, ctype)
        return response


class OpModeLoader(base_plugin.TBLoader):
    """Loads ``OpModePlugin`` and adds its flag ``--opmode_logdir`` to ``tensorboard``."""

    def define_flags(self, parser: Any) -> None:
        parser.add_argument(
            "--opmode_logdir", metavar="PATH_OR_URL", default=None,
            help="The logdir the Op Mode tab reads (a path, or a URL such as s3://bucket/logs "
                 f"read through fsspec), when it is not --logdir; also ${LOGDIR_ENV}.")

    def load(self, context: base_plugin.TBContext) -> OpModePlugin:
        return OpModePlugin(context)
