"""What the commands say of a run with no dump (``tb-opmode record``'s ``kernels`` level),
where its answers are partial: the warning of a count it could not make, read as a
sentence; and a tf.function called only inside another one.

In: the committed ``kernels`` run (``record_kernels``, TF 2.21: a Keras ``fit``, whose
``one_step_on_data`` runs inside ``multi_step_on_iterator``, then a loop of ``step``), and
a copy whose log lost the instantiation lines of one function, and a copy without its
profile, through ``cli.main``. Out: the warnings, the count basis and the text of
``summary`` and ``functions``.
"""
from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tb_opmode.cli import main
from tb_opmode.present.ledger import functions_text

from .conftest import Fixture


def _run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _executed_functions(log: Path) -> list[str]:
    """The concrete functions TF's log says Python called, in order of first call."""
    names = re.findall(r"Entering eager executing local operation '(__inference_\w+)'", log.read_text())
    return list(dict.fromkeys(names))


@pytest.fixture
def unseen(record_kernels: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A copy of the run whose log lost the instantiation lines of the loop's first
    ``step``: its calls are in the log, the nodes it ran nowhere (nor in the profile,
    whose window is the fit's steps). Returns the logdir and that function."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    logdir = tmp_path / "run"
    shutil.copytree(record_kernels.directory, logdir)
    log = logdir / "stderr.log"
    function = next(f for f in _executed_functions(log) if f.startswith("__inference_step_"))
    kept, inside = [], False
    for line in log.read_text().splitlines(keepends=True):
        inside = inside or f"Entering eager executing local operation '{function}'" in line
        if inside and "Instantiating kernel for node" in line:
            continue
        inside = inside and f"Exiting eager executing local operation '{function}'" not in line
        kept.append(line)
    log.write_text("".join(kept))
    return logdir, function


def test_a_count_the_run_could_not_make_is_one_sentence(unseen: tuple[Path, str]) -> None:
    """The warning names the run once and no byte: it is of no file."""
    logdir, function = unseen
    code, out, err = _run("summary", str(logdir), "--format", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    (warning,) = [w for w in doc["warnings"] if function in w]
    assert warning.startswith(".: graph counts are per call x calls; ")
    assert "byte" not in warning and str(logdir) not in warning
    (run,) = doc["runs"]
    assert [w for w in run["warnings"] if function in w] == [warning.removeprefix(".: ")]


def test_a_function_python_never_called_is_said_to_run_inside_another(record_kernels: Fixture) -> None:
    """Keras traced ``one_step_on_data`` and ran it inside ``multi_step_on_iterator``'s
    graph: TF's log has its trace lines and not one call of it from Python. The dump's
    ledger says "called inside another tf.function"; so does the log's (it said 0 calls)."""
    called = _executed_functions(record_kernels.directory / "stderr.log")
    qualnames = re.findall(r"Creating new FuncGraph for Python function <function (\S+) at ",
                           (record_kernels.directory / "tf_python.log").read_text())
    # tf.data's wrapper of a dataset's function is TF's, not the user's (no ledger lists it)
    traced = {q.rpartition(".")[2] for q in qualnames if not q.startswith("StructuredFunctionWrapper.")}
    never_called = {name for name in traced if not any(f.startswith(f"__inference_{name}_") for f in called)}
    assert "one_step_on_data" in never_called and "step" not in never_called
    code, out, err = _run("functions", str(record_kernels.directory), "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    nested = {f["python_name"] for f in run["tf_functions"] if f["nested"]}
    assert nested == never_called
    code, out, err = _run("functions", str(record_kernels.directory))
    assert code == 0, err
    text = " ".join(out.split())
    assert "(one_step_on_data): 2 traces, called inside another tf.function" in text
    assert "0 calls" not in text
    code, out, err = _run("summary", str(record_kernels.directory))
    assert code == 0, err
    assert "one_step_on_data" not in out  # the summary lists what Python called, as with a dump


def test_one_function_is_one(record_kernels: Fixture) -> None:
    code, out, err = _run("functions", str(record_kernels.directory), "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert len(run["tf_functions"]) > 1
    assert functions_text(run).startswith(f".: {len(run['tf_functions'])} Python functions run as tf.functions")
    one = {**run, "tf_functions": run["tf_functions"][:1]}
    assert functions_text(one).splitlines()[0] == ".: 1 Python function run as a tf.function"


def test_the_reports_functions_name_no_def_line_the_log_does_not_give(record_kernels: Fixture) -> None:
    """TF's trace line names a function, not where it is defined: the report shows none
    (it showed "(`?`)"), as ``functions`` does."""
    code, out, err = _run("functions", str(record_kernels.directory), "--format", "json")
    (run,) = json.loads(out)["runs"]
    called = [f for f in run["tf_functions"] if not f["nested"]]
    assert called and all(f["location"] == "" for f in called)
    code, out, err = _run("report", str(record_kernels.directory))
    assert code == 0, err
    section = out[out.index("### Functions"):]
    for f in called:
        assert f"- `{f['name']}`: {f['traces']} trace" in section, section
    assert "`?`" not in out


def test_a_run_with_no_dump_nor_profile_names_the_host_its_manifest_names(
        record_kernels: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``kernels`` run whose job ran no step (an eager loop: no profile) has no file named
    after its host, but ``record`` wrote the host in its manifest: the summary said
    "hosts ?"."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    logdir = tmp_path / "run"
    shutil.copytree(record_kernels.directory, logdir)
    shutil.rmtree(logdir / "plugins")
    host = json.loads((logdir / "manifest.json").read_text())["host"]
    assert host
    code, out, err = _run("summary", str(logdir), "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["sources"]["profile"] == [] and run["sources"]["debugger"] == []
    assert run["hosts"] == [host]
    code, out, err = _run("summary", str(logdir))
    assert f"  hosts {host}  " in out.splitlines()[0]


def _dispatched_datasets(log: Path) -> set[str]:
    """The Dataset ops TF's log says Python dispatched eagerly."""
    return set(re.findall(r"Executing op (\w+Dataset\w*) in device", log.read_text()))


@pytest.mark.parametrize("profiled", [True, False])
def test_the_tf_data_functions_a_kernels_run_does_not_count_are_said(
        record_kernels: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profiled: bool) -> None:
    """Keras's fit feeds its steps through tf.data, whose map functions run per element on
    tf.data's threads, never through execute: the count basis says they are not counted,
    with the ops of theirs the profile saw, or, the profile taken away, the datasets that
    ran them (each one the log shows dispatched, a mapping one among them)."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    logdir = tmp_path / "run"
    shutil.copytree(record_kernels.directory, logdir)
    if not profiled:
        for xplane in logdir.rglob("*.xplane.pb"):
            xplane.unlink()
    code, out, _err = _run("summary", str(logdir), "--format", "json")
    assert code == 0
    (run,) = json.loads(out)["runs"]
    basis = run["count_basis"]["graph"]
    assert "not counted: the ops of tf.data functions" in basis and "--evidence calls" in basis
    made = re.search(r"the run made (.+?); the profile's window saw none", basis)
    if profiled and made is None:  # the window saw some of their ops: those are named
        assert re.search(r"the profile saw \w+ x\d+", basis), basis
        return
    datasets = set(made.group(1).split(", ")) if made else set()
    assert datasets and datasets <= _dispatched_datasets(logdir / "stderr.log"), basis
    assert any("Map" in d for d in datasets), datasets


def test_a_run_without_its_profile_says_so_in_its_graph_count_basis(
        record_kernels: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run with its profile deleted (a log kept alone): its graph counts are
    still per call x calls, from the log's instantiation lines, and the basis says there
    was no profile, not "the profile of 0 calls"."""
    monkeypatch.setenv("TB_OPMODE_CACHE", "off")
    logdir = tmp_path / "run"
    shutil.copytree(record_kernels.directory, logdir)
    with_profile = json.loads(_run("summary", str(logdir), "--format", "json")[1])
    shutil.rmtree(logdir / "plugins")
    code, out, err = _run("summary", str(logdir), "--format", "json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    basis = run["count_basis"]["graph"]
    assert basis.startswith("per call x calls: the nodes each call runs (no profile: "), basis
    assert "the profile of" not in basis
    (profiled,) = with_profile["runs"]
    assert re.search(r"\(the profile of [1-9]\d* calls; ", profiled["count_basis"]["graph"])
