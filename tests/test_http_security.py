"""The plugin's HTTP surface against hostile requests and hostile files.

In: logdirs real TensorFlow wrote (the ``cnn_logdir`` session fixture, and a
dump written here by a tiny TF program whose file name, function name, graph
name and source lines hold an HTML payload, plus records with the payload as
op type appended to that real dump). Out: assertions that

- parameters never cause a 500 (hypothesis over every route's parameters):
  unknown runs and ops are 404, malformed values 400 with a message;
- the static route serves only its fixed files (traversal in every spelling,
  through TensorBoard's WSGI app and through a real ``tensorboard`` process
  on 127.0.0.1 with raw, unnormalised request lines), and no request opens a
  file other than those (an audit hook watches ``open``);
- 50 concurrent clients while runs are still loading get either "still
  loading" or exactly the finished answer, never a half-built one;
- every user-controlled string reaches the browser as text: in headless
  Chromium, the payload shows literally and nothing executes (``browser``).
"""
from __future__ import annotations

import http.client
import importlib.metadata
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug import test as wtest
from werkzeug.wrappers import Response

from tb_opmode.plugin import routes as plugin_module
from tb_opmode.plugin import run_store
from tb_opmode.plugin.routes import STATIC_FILES, OpModePlugin
from tb_opmode.plugin.run_store import RunStore
from tb_opmode.read.tfrecord import encode_record

from .conftest import dump_files, link_tree, needs_tensorflow, running_tensorboard

PREFIX = "/data/plugin/opmode"
PAYLOAD = "<img src=x onerror=alert(1)>"
PAYLOAD_NO_SPACE = "<img/src=x/onerror=alert(2)>"
STATIC_DIR = Path(plugin_module.__file__).resolve().parent.parent / "static"


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs are read for real (an empty cache of this module's own), not from ~/.cache."""
    old = os.environ.get("TB_OPMODE_CACHE")
    os.environ["TB_OPMODE_CACHE"] = str(tmp_path_factory.mktemp("http_cache"))
    yield
    if old is None:
        os.environ.pop("TB_OPMODE_CACHE", None)
    else:
        os.environ["TB_OPMODE_CACHE"] = old


# ---------------------------------------------------------------- a real dump full of HTML

XSS_PROGRAM = '''
import sys
import tensorflow as tf

PAYLOAD = "<img src=x onerror=alert(1)>"
tf.debugging.experimental.enable_dump_debug_info(
    sys.argv[1], tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1)
x = tf.constant([[1.0, -2.0]])
y = tf.nn.relu(x)  # <img src=x onerror=alert(1)> <script>alert(3)</script>


def body(v):
    return tf.math.softplus(v * 2.0, name="img>onerror")  # <img src=x onerror=alert(1)>


# The Python function name (frames, tf.function and graph names): any string goes.
body.__code__ = body.__code__.replace(co_name=PAYLOAD)
body.__name__ = body.__qualname__ = PAYLOAD
body(x)
tf.function(body)(x)
tf.debugging.experimental.disable_dump_debug_info()
'''


def _append(path: Path, *events: Any) -> None:
    with open(path, "ab") as f:
        for ev in events:
            f.write(encode_record(ev.SerializeToString()))


def make_xss_run(run_dir: Path) -> Path:
    """A real TF dump in ``run_dir`` (a directory named after the payload: the run name)
    whose source file name, source lines, function and graph names hold the payload,
    plus appended records whose op type and op name are the payload (TF does not let
    a program name an op type), and a damaged log named after the payload (a warning)."""
    needs_tensorflow()
    from tensorflow.core.protobuf import debug_event_pb2

    run_dir.mkdir(parents=True)
    program = run_dir.parent / f"xss_{PAYLOAD}.py"
    program.write_text(XSS_PROGRAM)
    proc = subprocess.run([sys.executable, str(program), str(run_dir)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = dump_files(run_dir)
    # A real execution to borrow a call site (frames in the payload-named file) from.
    execution = None
    for raw in _payloads(files["execution"]):
        ev = debug_event_pb2.DebugEvent.FromString(raw)
        if ev.execution.op_type == "Relu":
            execution = ev
    assert execution is not None
    crafted = debug_event_pb2.DebugEvent()
    crafted.CopyFrom(execution)
    crafted.execution.op_type = PAYLOAD
    _append(files["execution"], crafted)
    graph = debug_event_pb2.DebugEvent(wall_time=execution.wall_time)
    graph.debugged_graph.graph_id = "xss-graph"
    graph.debugged_graph.graph_name = PAYLOAD_NO_SPACE
    op = debug_event_pb2.DebugEvent(wall_time=execution.wall_time)
    creation = op.graph_op_creation
    creation.op_type, creation.op_name = PAYLOAD, PAYLOAD_NO_SPACE
    creation.graph_id, creation.graph_name = "xss-graph", PAYLOAD_NO_SPACE
    creation.num_outputs = 1
    creation.code_location.CopyFrom(execution.execution.code_location)
    _append(files["graphs"], graph, op)
    trace = debug_event_pb2.DebugEvent(wall_time=execution.wall_time)
    trace.graph_execution_trace.tfdbg_context_id = "xss-graph"
    trace.graph_execution_trace.op_name = PAYLOAD_NO_SPACE
    _append(files["graph_execution_traces"], trace)
    (run_dir / f"{PAYLOAD}.log").write_bytes(
        b"I0000 00:00:1795982350.258913    4020 port.cc:153] oneDNN custom operations are on.\n"
        b"\x00\x00 " + PAYLOAD.encode() + b"\n")
    return run_dir


def _payloads(path: Path) -> list[bytes]:
    raw, pos, out = path.read_bytes(), 0, []
    while pos < len(raw):
        (n,) = struct.unpack_from("<Q", raw, pos)
        out.append(raw[pos + 12:pos + 12 + n])
        pos += 16 + n
    return out


@pytest.fixture(scope="module")
def hostile_logdir(tmp_path_factory: pytest.TempPathFactory, cnn_logdir: Path) -> Path:
    """Three runs: ``cnn`` (a real run), the payload-named run, and a copy of the cnn
    dump in a directory whose name is not UTF-8; plus a sentinel file nobody may serve."""
    root = tmp_path_factory.mktemp("hostile")
    logdir = root / "logdir"
    link_tree(cnn_logdir, logdir / "cnn")
    make_xss_run(logdir / PAYLOAD)
    odd = os.path.join(os.fsencode(logdir), b"r\xff")
    os.mkdir(odd)
    for path in dump_files(cnn_logdir).values():
        os.link(path, os.path.join(odd, os.fsencode(path.name)))
    (logdir / "secret.txt").write_text(SENTINEL_INSIDE)
    (root / "outside.txt").write_text(SENTINEL_OUTSIDE)
    return logdir


SENTINEL_INSIDE = f"SENTINEL-INSIDE-{uuid.uuid4()}"
SENTINEL_OUTSIDE = f"SENTINEL-OUTSIDE-{uuid.uuid4()}"


class Api:
    def __init__(self, plugin: OpModePlugin) -> None:
        self.plugin = plugin
        self.app = application.TensorBoardWSGI([plugin])
        self.client = wtest.Client(self.app, Response)

    def get(self, path: str, query: Any = None) -> Response:
        return self.client.get(PREFIX + path, query_string=query)

    def json(self, path: str, **params: Any) -> Any:
        r = self.get(path, params)
        assert r.status_code == 200, (path, params, r.get_data(as_text=True)[:500])
        return json.loads(r.get_data(as_text=True))


@pytest.fixture(scope="module")
def api(hostile_logdir: Path) -> Iterator[Api]:
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(hostile_logdir)))
    assert plugin.wait_idle(300)
    yield Api(plugin)
    plugin.close()


def test_hostile_runs_load_and_are_served_as_data(api: Api) -> None:
    runs = {r["run"]: r for r in api.json("/runs")["runs"]}
    assert set(runs) == {"cnn", PAYLOAD, "r\\xff"}, runs
    assert all(r["status"] == "ready" for r in runs.values()), runs
    rows = api.json("/optypes", run=PAYLOAD, q="img")["rows"]
    (row,) = [r for r in rows if r["op_type"] == PAYLOAD]
    assert row["eager"]["executions"] == 1 and row["graph"]["executions"] == 1
    detail = api.json("/op", run=PAYLOAD, op=PAYLOAD)
    text = json.dumps(detail)
    assert PAYLOAD_NO_SPACE in text   # the graph / op name
    sites = detail["call_sites"]["eager"]
    assert any(PAYLOAD in s["file"] for s in sites)
    overview = api.json("/overview", run=PAYLOAD)
    assert any(PAYLOAD in w for w in overview["warnings"])
    assert any(PAYLOAD in f["name"] for f in overview["functions"])
    response = api.get("/op", {"run": PAYLOAD, "op": PAYLOAD})
    assert response.mimetype == "application/json"
    assert response.headers.get("X-Content-Type-Options") == "nosniff"   # never sniffed as HTML
    export = api.get("/export", {"run": PAYLOAD, "format": "csv"})
    assert export.status_code == 200 and export.mimetype == "text/csv"
    disposition = export.headers["Content-Disposition"]
    assert re.fullmatch(r'attachment; filename="opmode-[A-Za-z0-9_.-]+\.csv"', disposition), disposition
    # The non-UTF-8 run answers under its display name.
    assert api.json("/overview", run="r\\xff")["run"] == "r\\xff"


# ---------------------------------------------------------------- parameters: never a 500

ROUTES = {
    "/runs": ["want"], "/progress": [],
    "/overview": ["run"],
    "/optypes": ["run", "sort", "order", "filter", "q", "page", "page_size"],
    "/op": ["run", "op", "sites"],
    "/timeline": ["run", "start", "end", "max_events", "debug"],
    "/compare": ["a", "b", "changed_only", "page", "page_size"],
    "/export": ["run", "format", "start", "end", "max_events", "debug"],
}
_VALUES = st.one_of(
    st.sampled_from(["cnn", PAYLOAD, "r\\xff", ".", "..", "../..", "/etc/passwd", "", " ",
                     "MatMul", "Relu", PAYLOAD, "total", "time", "op_type", "eager", "graph",
                     "asc", "desc", "both,no_onednn", "differs", "csv", "json", "trace", "0", "1",
                     "-1", "true", "maybe", "1e9", "nan", "inf", "0x10", "١٢٣", "１２",
                     "9" * 19, "9" * 20, "-" + "9" * 19, str(1 << 62), str(-(1 << 62) - 1),
                     "%", "%ff", "%00", "\x00", "\ud800".encode("utf-8", "surrogatepass").decode(
                         "utf-8", "replace"), "(", "[a-", "*", "\\", "x" * 200, "x" * 201,
                     "\n", "\r\nSet-Cookie: a=b"]),
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.text(max_size=30),
)


@st.composite
def requests_(draw: Any) -> tuple[str, list[tuple[str, str]]]:
    route = draw(st.sampled_from(sorted(ROUTES)))
    names = ROUTES[route] + ["unknown_param"]
    params = draw(st.lists(st.tuples(st.sampled_from(names), _VALUES), max_size=6))
    return route, params


def _check_request(api: Api, request: tuple[str, list[tuple[str, str]]]) -> None:
    route, params = request
    response = api.get(route, params)
    body = response.get_data(as_text=True)
    assert response.status_code in (200, 400, 404), (route, params, response.status_code, body[:300])
    if response.status_code != 200:
        assert body.strip(), "an error without a message"
    elif route != "/export":
        json.loads(body)
    assert "Traceback" not in body


@settings(max_examples=150, deadline=timedelta(seconds=30), derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(request=requests_())
def test_parameters_never_cause_a_500(api: Api, request: tuple[str, list[tuple[str, str]]]) -> None:
    _check_request(api, request)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("TB_OPMODE_FUZZ_EXAMPLES", "3000")),
          deadline=timedelta(seconds=60), database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(request=requests_())
def test_parameters_never_cause_a_500_long(api: Api, request: tuple[str, list[tuple[str, str]]]) -> None:
    _check_request(api, request)


@pytest.mark.parametrize("query", [
    b"run=%ff%fe", b"run=cnn&run=nope", b"run=%00", b"run=cnn&op=%c0%ae%c0%ae", b"run=" + b"%41" * 5000,
    b"run=cnn&page=%ef%bc%91", b"run=cnn&q=%ff", b"a=cnn&b=%ff", b"run=cnn&format=..%2f..%2fx",
    b"run=cnn&start=1&end=1", b"run=cnn&start=" + b"9" * 19 + b"&end=" + b"9" * 19,
])
@pytest.mark.parametrize("route", ["/overview", "/optypes", "/op", "/timeline", "/compare", "/export"])
def test_raw_query_strings(api: Api, route: str, query: bytes) -> None:
    response = api.client.get(PREFIX + route + "?" + query.decode("latin-1"))
    assert response.status_code in (200, 400, 404), response.get_data(as_text=True)[:300]


@pytest.mark.parametrize("path,params", [
    ("/overview", {"run": "nope"}), ("/overview", {"run": "/etc"}), ("/overview", {"run": ".."}),
    ("/op", {"run": "cnn", "op": "NoSuchOp"}), ("/op", {"run": "cnn", "op": "../../etc/passwd"}),
    ("/op", {"run": PAYLOAD, "op": PAYLOAD + "x"}), ("/compare", {"a": "cnn", "b": "r\xff"}),
    ("/timeline", {"run": str(Path("/").resolve())}), ("/export", {"run": "nope", "format": "csv"}),
])
def test_unknown_run_or_op_is_404(api: Api, path: str, params: dict[str, str]) -> None:
    response = api.get(path, params)
    assert response.status_code == 404, response.get_data(as_text=True)[:300]


# ---------------------------------------------------------------- static files and traversal

TRAVERSALS = [
    "/../../x", "/%2e%2e/%2e%2e/setup.py", "/static/../plugin.py", "/static/%2e%2e/plugin.py",
    "/static/%2e%2e%2fplugin.py", "/static/%252e%252e%252fplugin.py", "/static/..%2f..%2fsetup.py",
    "/static/.%2e/plugin.py", "/static/%c0%ae%c0%ae/plugin.py", "/static/..%5cplugin.py",
    "/static/..\\plugin.py", "/static//etc/passwd", "/static/%2fetc%2fpasswd", "//etc/passwd",
    "/static/index.js%00.py", "/static/index.js/../../plugin.py", "/static/index.js/",
    "/static/views.py", "/static/", "/plugin.py", "/static/~/.bashrc", "/static/C:%5cWindows%5cwin.ini",
    "/static/" + "%2e%2e%2f" * 12 + "etc/passwd", "/static/" + "..%2f" * 12 + "{outside}",
    "/static/{outside}", "/static/%2f{outside_enc}", "/{inside_name}", "/static/{inside_name}",
    "/static/../../../{inside_name}", "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt",
]


def _expand(path: str, logdir: Path) -> str:
    outside = (logdir.parent / "outside.txt").as_posix().lstrip("/")
    return path.format(outside=outside, outside_enc=outside.replace("/", "%2f"),
                       inside_name="secret.txt")


STATIC_BODIES = {(STATIC_DIR / name).read_bytes() for name in STATIC_FILES}


def _assert_refused(status: int, body: bytes, path: str) -> None:
    assert SENTINEL_INSIDE.encode() not in body and SENTINEL_OUTSIDE.encode() not in body, path
    assert b"root:" not in body and b"import " not in body[:2000] or body in STATIC_BODIES, path
    if status == 200:
        assert body in STATIC_BODIES, (path, body[:200])


@pytest.mark.parametrize("path", TRAVERSALS)
def test_static_route_refuses_traversal(api: Api, hostile_logdir: Path, path: str) -> None:
    full = PREFIX + _expand(path, hostile_logdir)
    response = api.client.get(full)
    assert response.status_code != 500
    _assert_refused(response.status_code, response.get_data(), full)


_AUDIT: dict[str, Any] = {"installed": False, "thread": None, "opened": []}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _AUDIT["thread"] == threading.get_ident():
        _AUDIT["opened"].append(args[0])


def test_requests_open_no_file_but_the_static_ones(api: Api, hostile_logdir: Path) -> None:
    """Watch every ``open`` made while requests are served (loading happens in the
    background thread, before): only the tab's own static files may be opened."""
    if not _AUDIT["installed"]:
        sys.addaudithook(_audit)   # permanent, but inert outside this test
        _AUDIT["installed"] = True
    for name in STATIC_FILES:       # warm up lazy initialisations (mimetypes, ...)
        api.client.get(f"{PREFIX}/{name}")
    api.get("/overview", {"run": "cnn"})
    hostile = [(PREFIX + _expand(p, hostile_logdir), None) for p in TRAVERSALS]
    hostile += [(PREFIX + route, {n: v for n in ROUTES[route]})
                for route in ROUTES for v in ("../../etc/passwd", "/etc/passwd", str(hostile_logdir),
                                              str(hostile_logdir / "secret.txt"), "secret.txt")]
    hostile += [(f"{PREFIX}/{name}", None) for name in STATIC_FILES]
    _AUDIT["opened"] = []
    _AUDIT["thread"] = threading.get_ident()
    try:
        for path, params in hostile:
            api.client.get(path, query_string=params)
    finally:
        _AUDIT["thread"] = None
    opened = [os.path.realpath(os.fsdecode(p)) for p in _AUDIT["opened"] if isinstance(p, (str, bytes))]
    allowed = {os.path.realpath(STATIC_DIR / name) for name in STATIC_FILES}
    assert opened and set(opened) <= allowed, sorted(set(opened) - allowed)


# ---------------------------------------------------------------- 50 clients while runs load

def _loading_logdir(root: Path, cnn_logdir: Path) -> Path:
    for name in ("r1", "r2", "r3", "r4"):
        link_tree(cnn_logdir, root / name)
    return root


REQUESTS = [(route, params) for run in ("r1", "r2", "r3", "r4") for route, params in (
    ("/overview", {"run": run}), ("/optypes", {"run": run, "page_size": 200}),
    ("/op", {"run": run, "op": "Conv2D"}), ("/timeline", {"run": run, "max_events": 200}),
    ("/export", {"run": run, "format": "json"}))] + [("/compare", {"a": "r1", "b": "r4"})]


def test_fifty_clients_while_runs_load(tmp_path: Path, cnn_logdir: Path) -> None:
    """50 threads ask the same questions while four runs load: every answer is 'still
    loading' / 'no such run yet' (404), or exactly the final answer (no half-built
    model), never anything else."""
    logdir = _loading_logdir(tmp_path / "logdir", cnn_logdir)
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(logdir)), start=False)
    app = application.TensorBoardWSGI([plugin])
    start = threading.Barrier(51)
    loaded = threading.Event()
    answers: list[tuple[int, str, Any, int, bytes]] = []
    runs_answers: list[Any] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        c = wtest.Client(app, Response)
        start.wait()
        i = k
        extra = 0
        while extra < 3:
            if loaded.is_set():
                extra += 1
            route, params = REQUESTS[i % len(REQUESTS)]
            i += 1
            r = c.get(PREFIX + route, query_string=params)
            with lock:
                answers.append((i % len(REQUESTS), route, params, r.status_code, r.get_data()))
            if k % 10 == 0:
                rr = c.get(PREFIX + "/runs")
                with lock:
                    runs_answers.append((rr.status_code, json.loads(rr.get_data(as_text=True))))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    try:
        plugin.start()
        start.wait()
        assert plugin.wait_idle(600), "the runs did not load"
        loaded.set()
        for t in threads:
            t.join(timeout=600)
    finally:
        plugin.close()
    final_client = wtest.Client(app, Response)
    final = {}
    for route, params in REQUESTS:
        r = final_client.get(PREFIX + route, query_string=params)
        assert r.status_code == 200, (route, params)
        final[(route, tuple(sorted(params.items())))] = r.get_data()
    outcomes: Counter = Counter()
    for _i, route, params, status, body in answers:
        text = body.decode("utf-8", "replace")
        if status == 200:
            assert body == final[(route, tuple(sorted(params.items())))], (route, params)
            outcomes["final answer"] += 1
        else:
            # A run still loading is a 503 (ask again); one not found yet a 404.
            assert (status, "still loading" in text or "no run named" in text) in (
                (503, True), (404, True)), (route, params, status, text[:300])
            assert ("still loading" in text) == (status == 503), (route, params, status, text[:300])
            outcomes["not loaded yet"] += 1
    final_runs = {r["run"]: r for r in json.loads(final_client.get(PREFIX + "/runs").get_data(
        as_text=True))["runs"]}
    for status, doc in runs_answers:
        assert status == 200
        for r in doc["runs"]:
            assert r["status"] in ("loading", "ready")
            if r["status"] == "ready":
                assert r["op_types"] == final_runs[r["run"]]["op_types"]
        p = doc["progress"]
        assert 0 <= p["runs_done"] <= p["runs_total"] and p["bytes_done"] <= p["bytes_total"]
    assert outcomes["not loaded yet"] > 0 and outcomes["final answer"] > 0, outcomes
    print(f"\n50 clients while loading: {len(answers)} requests, {dict(outcomes)}; "
          f"{len(runs_answers)} /runs answers")


# A run whose build fails in a load worker process: the worker imports this first
# (Python imports ``sitecustomize`` from its path at start-up).
_FAILING_WORKER = """
import tb_opmode.analyze.assemble as assemble
_real = assemble.build_run


def build_run(sources, logdir):
    if sources.name == "a_bad":
        raise OverflowError("cannot convert float infinity to integer")
    return _real(sources, logdir)


assemble.build_run = build_run
"""


@pytest.mark.parametrize("where", ["store thread", "worker processes"])
def test_one_unloadable_run_does_not_stop_the_others(tmp_path: Path, cnn_logdir: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     where: str) -> None:
    logdir = tmp_path / "logdir"
    link_tree(cnn_logdir, logdir / "a_bad")
    link_tree(cnn_logdir, logdir / "b_good")
    if where == "store thread":
        monkeypatch.setattr(RunStore, "WORKERS", 1)
        real_build = run_store.build_run

        def build(sources: Any, logdir: str) -> Any:
            if sources.name == "a_bad":
                raise OverflowError("cannot convert float infinity to integer")
            return real_build(sources, logdir)

        monkeypatch.setattr(run_store, "build_run", build)
    else:
        monkeypatch.setattr(RunStore, "WORKERS", 2)
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "sitecustomize.py").write_text(_FAILING_WORKER)
        monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    plugin = OpModePlugin(base_plugin.TBContext(logdir=str(logdir)))
    try:
        assert plugin.wait_idle(300)
        runs = {r["run"]: r for r in Api(plugin).json("/runs")["runs"]}
        assert runs["a_bad"]["status"] == "error" and "OverflowError" in runs["a_bad"]["error"]
        assert runs["b_good"]["status"] == "ready"
    finally:
        plugin.close()


# ---------------------------------------------------------------- a real tensorboard process

@pytest.fixture(scope="module")
def tensorboard(hostile_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``tensorboard`` on 127.0.0.1 serving the hostile logdir; always stopped."""
    plugins = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="tensorboard_plugins")}
    if plugins.get("opmode") != "tb_opmode.plugin:OpModeLoader":
        pytest.skip("tb_opmode is not installed as a TensorBoard plugin (pip install -e .)")
    log_path = tmp_path_factory.mktemp("tb_log") / "tensorboard.log"
    with running_tensorboard(hostile_logdir, log_path, runs=3, timeout=240) as base:
        yield base


def _raw_get(base: str, path: str) -> tuple[int, bytes]:
    """GET with the request line exactly as given (no client-side normalisation)."""
    host, port = base.rsplit("/", 1)[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=20)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", TRAVERSALS)
def test_real_server_refuses_traversal(tensorboard: str, hostile_logdir: Path, path: str) -> None:
    full = PREFIX + _expand(path, hostile_logdir).replace("\\", "%5c")
    status, body = _raw_get(tensorboard, full)
    assert status != 500, full
    _assert_refused(status, body, full)


# ---------------------------------------------------------------- the browser

_NO_IMG_X = """() => [...document.querySelectorAll('img')].filter(
    (i) => (i.getAttribute('src') || '').startsWith('x')).length"""


@pytest.mark.browser
def test_payloads_render_as_text_and_nothing_runs(browser: Any, tensorboard: str) -> None:
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{tensorboard}/#opmode")
        page.wait_for_selector("iframe", timeout=60000)
        frame = page.locator("iframe").element_handle().content_frame()
        frame.wait_for_selector("#opm-table tbody tr[data-op]", timeout=60000)
        options = frame.eval_on_selector_all("#opm-run option", "os => os.map(o => o.textContent)")
        assert PAYLOAD in options
        frame.select_option("#opm-run", PAYLOAD)
        frame.wait_for_function(
            "(p) => [...document.querySelectorAll('#opm-table tbody tr[data-op]')]"
            ".some((r) => r.dataset.op === p)", arg=PAYLOAD, timeout=30000)
        cell = frame.evaluate(
            "(p) => [...document.querySelectorAll('#opm-table tbody tr[data-op]')]"
            ".find((r) => r.dataset.op === p).querySelector('td').textContent", PAYLOAD)
        assert PAYLOAD in cell
        frame.evaluate(
            "(p) => [...document.querySelectorAll('#opm-table tbody tr[data-op]')]"
            ".find((r) => r.dataset.op === p).click()", PAYLOAD)
        # Call sites are folded under the answer: present, not necessarily shown.
        frame.wait_for_selector("#opm-sites .opm-site", state="attached", timeout=30000)
        detail = frame.evaluate("() => document.querySelector('#opm-ops').textContent")
        assert detail.count(PAYLOAD) >= 2        # the op type, the file of its call site
        assert PAYLOAD_NO_SPACE in detail        # its graph and op name
        # A call site of the real program: its file, function and source line.
        frame.select_option("#opm-run", PAYLOAD)
        frame.fill("#opm-search", "Relu")
        frame.wait_for_function(
            "() => [...document.querySelectorAll('#opm-table tbody tr[data-op]')]"
            ".some((r) => r.dataset.op === 'Relu')", timeout=30000)
        frame.click("#opm-table tr[data-op='Relu']")
        frame.wait_for_function(
            "() => (document.querySelector('#opm-sites') || {}).textContent?.includes('Relu') ||"
            " document.querySelectorAll('#opm-sites .opm-site').length > 0", timeout=30000)
        time.sleep(0.5)
        sites = frame.evaluate("() => document.querySelector('#opm-sites').textContent")
        assert f"xss_{PAYLOAD}.py" in sites
        assert "<script>alert(3)</script>" in sites  # the source line, as text
        overview = frame.evaluate("() => document.querySelector('#opm-overview').textContent")
        assert PAYLOAD in overview               # the warning naming the payload-named log
        # Nothing was parsed as HTML, nothing ran.
        assert frame.evaluate(_NO_IMG_X) == 0 and page.evaluate(_NO_IMG_X) == 0
        assert not frame.evaluate("() => [...document.scripts].some(s => s.textContent.includes('alert'))")
        time.sleep(1.0)
        assert dialogs == [] and errors == []
        ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "09_xss_as_text.png"))
    finally:
        context.close()
