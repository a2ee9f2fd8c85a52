"""Explanations and call sites (``explain.explain``, ``explain.call_sites``) on the committed run
and on in-memory dumps.

In: ``full_model`` (the committed FULL_HEALTH run, read without TF) and hand-made
``DumpSet`` stack frames. Out: call sites that point at the Python lines that issued the
ops (checked against the source text the dump itself carries), executions that add up to
TF's own counts, and explanations that name each kernel with its evidence.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from tb_opmode.analyze.assemble import RunModel, build_run, load
from tb_opmode.analyze.explain import call_sites, explain, function_graphs
from tb_opmode.analyze.kernels import is_fused
from tb_opmode.read.discover import RunSources
from tb_opmode.read.tfdbg import DumpSet

from .conftest import Fixture


def test_eager_call_sites_point_at_the_calls(full_model: RunModel, full_health: Fixture) -> None:
    """Eager Transpose: two sites, each the line of a ``tf.transpose(`` call in the program
    that ran (its text as the dump's source_files carry it), counts adding up to TF's."""
    sites = call_sites(full_model, "Transpose", "eager")
    assert sum(s["count"] for s in sites) == full_health.reference["eager"]["Transpose"]
    assert len(sites) == 2
    for site in sites:
        assert site["file"].endswith("regenerate.py") and site["function"] == "_workload"
        snippet = site["snippet"]
        text = snippet["lines"][site["line"] - snippet["first_line"]]
        assert "tf.transpose(" in text, text


def test_graph_call_sites_name_the_users_line(full_model: RunModel, full_health: Fixture) -> None:
    """Graph MatMul: ops created inside Keras' Dense.call while fit traced the step; each
    site counts the executions of the graph ops created there, and the user's own frame is named."""
    sites = call_sites(full_model, "MatMul", "graph", snippets=False, limit=None)
    assert sum(s["count"] for s in sites) == full_health.reference["graph"]["MatMul"]
    assert sum(s["ops"] for s in sites) == len([o for o in full_model.graph_ops if o.op_type == "MatMul"])
    for site in sites:
        user = site.get("user_code", site)
        assert user["file"].endswith("regenerate.py"), site


def test_limit_keeps_the_busiest(full_model: RunModel) -> None:
    every = call_sites(full_model, "MatMul", "graph", snippets=False, limit=None)
    assert len(every) >= 2
    assert call_sites(full_model, "MatMul", "graph", snippets=False, limit=1) == every[:1]
    assert [s["count"] for s in every] == sorted((s["count"] for s in every), reverse=True)


def test_explanation_names_each_kernel_and_its_evidence(full_model: RunModel, full_health: Fixture) -> None:
    doc = explain(full_model, "Transpose")
    for mode in ("eager", "graph"):
        stats = full_model.op_types["Transpose"].mode(mode)
        kernels = [r for r in doc[mode]["reasons"] if r["kind"] == "kernel"]
        assert {(r["kernel"], r["evidence"], r["executions"]) for r in kernels} == \
            {(k.name, k.evidence, k.executions) for k in stats.kernels}
        assert doc[mode]["explanation"] == " ".join(r["text"] for r in doc[mode]["reasons"])
        assert f"TF {full_model.tensorflow_version}" in doc[mode]["explanation"]
    eager_text = doc["eager"]["explanation"]
    assert f"ran eagerly {full_health.reference['eager']['Transpose']} times" in eager_text
    # the float32 one ran _MklTranspose though dispatched as Transpose: the reason is said
    assert "one-node function" in eager_text and "Instantiating kernel" in eager_text
    removed = [r for r in doc["graph"]["reasons"] if r.get("kernel") == "(optimized away)"]
    assert removed and "grappler" in removed[0]["text"]


def test_mode_that_did_not_run(full_model: RunModel) -> None:
    assert full_model.op_types["BiasAdd"].eager.executions == 0
    assert explain(full_model, "BiasAdd")["eager"] == {
        "explanation": "BiasAdd did not run in eager mode in this run.", "reasons": []}


def test_function_graphs_hold_the_graph_executions(full_model: RunModel, full_health: Fixture) -> None:
    graphs = function_graphs(full_model, "MatMul")
    assert graphs and sum(g["executions"] for g in graphs) == full_health.reference["graph"]["MatMul"]
    (calls,) = full_health.reference["functions"].values()
    assert {g["function_calls"] for g in graphs} == {calls}


def test_graph_explanation_says_each_graphs_calls(full_model: RunModel, full_health: Fixture) -> None:
    """The graph sentence names the fit's function with its calls as TF counted them,
    in words ("called once", not "called 1 times")."""
    (calls,) = full_health.reference["functions"].values()
    text = explain(full_model, "MatMul")["graph"]["reasons"][0]["text"]
    said = "called once" if calls == 1 else f"called {calls} times"
    assert said in text and "called 1 times" not in text, text
    # The fixture's function ran twice; the words for one call (HF BERT's one-step fit):
    from tb_opmode.analyze.explain import _group_words
    assert _group_words("f", "g", 1, 1) == "graph g of tf.function f (traced once, called once)"
    assert _group_words("g", "g", 2, 3) == "graph g (traced 2 times, called 3 times)"


# ---------------------------------------------------------------- in memory

def _dump_with_stack(stack_paths: list[tuple[str, int, str]], op_type: str, n: int) -> DumpSet:
    d = DumpSet(directory="/run", prefix="p", host="h", tensorflow_version="2.21.0")
    d.source_files = [("h", path) for path, _l, _f in stack_paths]
    d.source_lines = {("h", path): ["x = 1"] * (line + 3) for path, line, _f in stack_paths}
    d.stack_frames = {f"f{i}": (i, line, func) for i, (_p, line, func) in enumerate(stack_paths)}
    d.execution_sites = Counter({(op_type, tuple(d.stack_frames)): n})
    return d


def _model(*dumps: DumpSet) -> RunModel:
    m = RunModel(run=".", directory="/run", tensorflow_version="2.21.0")
    m.dumps = list(dumps)
    return m


def test_site_is_the_innermost_frame_outside_tensorflow() -> None:
    """Frames run outermost first; TF's own frames are skipped, the user's line is the site."""
    d = _dump_with_stack([("/home/u/train.py", 12, "main"),
                          ("/home/u/model.py", 40, "block"),
                          ("/venv/lib/python3.11/site-packages/tensorflow/python/ops/array_ops.py", 200, "transpose")],
                         "Transpose", 5)
    (site,) = call_sites(_model(d), "Transpose", "eager")
    assert (site["file"], site["line"], site["function"], site["count"]) == ("/home/u/model.py", 40, "block", 5)
    assert site["snippet"]["line"] == 40 and "user_code" not in site


def test_library_site_names_the_users_frame() -> None:
    """A site inside an installed library (not TF) keeps the library line and names the user's frame."""
    d = _dump_with_stack([("/home/u/train.py", 7, "main"),
                          ("/venv/lib/python3.11/site-packages/keras/src/layers/core/dense.py", 222, "call"),
                          ("/venv/lib/python3.11/site-packages/tensorflow/python/ops/math_ops.py", 10, "matmul")],
                         "MatMul", 3)
    (site,) = call_sites(_model(d), "MatMul", "eager", via=True)
    assert site["file"].endswith("dense.py") and site["user_code"]["file"] == "/home/u/train.py"


def test_sites_of_two_dumps_add_up() -> None:
    stack = [("/home/u/train.py", 3, "main")]
    (site,) = call_sites(_model(_dump_with_stack(stack, "Relu", 2), _dump_with_stack(stack, "Relu", 5)),
                         "Relu", "eager")
    assert site["count"] == 7


def test_unknown_frames_give_no_site() -> None:
    d = DumpSet(directory="/run", prefix="p", host="h")
    d.execution_sites = Counter({("Relu", ("missing",)): 4})
    assert call_sites(_model(d), "Relu", "eager") == []


def test_build_run_of_nothing_is_empty() -> None:
    """A run with no sources counts nothing and explains nothing (no crash)."""
    m = build_run(RunSources(name="empty", directory="/nonexistent"), "/")
    assert m.op_types == {} and m.counts_from == ""


def test_each_kernel_is_explained_by_the_dtype_it_ran_for(full_model: RunModel) -> None:
    """Eager Transpose ran _MklTranspose for its float32 calls and the stock kernel for
    its int32 one: the stock kernel's reason speaks of int32, not of the float rule."""
    kernels = {k.name for k in full_model.op_types["Transpose"].eager.kernels}
    assert {"_MklTranspose", "Transpose"} <= kernels, kernels
    reasons = {r["kernel"]: r["text"] for r in explain(full_model, "Transpose")["eager"]["reasons"]
               if r["kind"] == "kernel"}
    assert "does not stay stock" not in reasons["Transpose"], reasons["Transpose"]
    assert "DT_INT32" in reasons["Transpose"] or "non-float" in reasons["Transpose"], reasons["Transpose"]
    assert "_MklTranspose" in reasons["_MklTranspose"]


# ---------------------------------------------------------------- a run with no dump


@pytest.fixture(scope="module")
def kernels_run(record_kernels: Fixture) -> RunModel:
    """The ``kernels`` run of ``tb-opmode record``, with its trace log."""
    (model,) = load(str(record_kernels.directory), None,
                    (str(record_kernels.directory / "tf_python.log"),))
    return model


def _texts(model: RunModel, kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(op type, mode, reason) of every reason of ``kind`` the run's explanations give."""
    return [(op_type, mode, r) for op_type in model.op_types
            for mode, e in explain(model, op_type).items() for r in e["reasons"] if r["kind"] == kind]


def test_the_tf_version_is_said_from_where_it_was_read(kernels_run: RunModel, record_kernels: Fixture,
                                                       full_model: RunModel) -> None:
    """No dump: the version came from record's manifest, and the rules say so; a dump's
    run says its metadata."""
    manifest = json.loads((record_kernels.directory / "manifest.json").read_text())
    assert not kernels_run.dumps and kernels_run.tensorflow_version == manifest["tensorflow_version"]
    said = {r["text"] for _op, _mode, r in _texts(kernels_run, "version")}
    assert said and all("manifest of tb-opmode record" in t and "dump" not in t for t in said), said
    said = {r["text"] for _op, _mode, r in _texts(full_model, "version")}
    assert said and all("from the dump's metadata" in t for t in said), said


def test_no_trace_count_is_claimed_where_the_evidence_cannot_tell(kernels_run: RunModel) -> None:
    """The trace log shows a function traced several times, but without a dump no graph is
    tied to the op types that ran in it: no graph sentence says how often Python ran."""
    traced = Counter(line.name for line in kernels_run.trace_lines)
    assert max(traced.values()) > 1, traced
    for op_type, mode, reason in _texts(kernels_run, "mode"):
        if mode == "graph":
            assert "only once" not in reason["text"] and "once per trace" not in reason["text"], \
                (op_type, reason["text"])


def test_every_fused_kernel_credits_grapplers_remapper(kernels_run: RunModel, full_model: RunModel) -> None:
    """The remapper fuses; MklLayoutRewritePass only renames its node to the oneDNN form."""
    fused = [(op_type, r["text"]) for op_type, _mode, r in _texts(kernels_run, "kernel")
             if is_fused(r["kernel"])]
    assert fused
    for op_type, text in fused:
        assert "grappler's remapper" in text, (op_type, text)


def test_a_kernel_note_reads_as_its_own_sentence(full_model: RunModel, no_tensor_model: RunModel,
                                                 kernels_run: RunModel) -> None:
    """No reason strings a lower-case fragment after a full stop."""
    for model in (full_model, no_tensor_model, kernels_run):
        for op_type, _mode, r in _texts(model, "kernel"):
            assert not re.search(r"(?<!e\.g)(?<!i\.e)\. [a-z][a-z-]*[ ,:]", r["text"]), (op_type, r["text"])


def test_a_single_execution_is_once(full_model: RunModel) -> None:
    ran_once = [op for op, row in full_model.op_types.items() if row.eager.executions == 1]
    assert ran_once
    for op_type in ran_once:
        assert " 1 times" not in explain(full_model, op_type)["eager"]["explanation"]


def test_a_folded_op_runs_no_kernel_of_its_own(full_model: RunModel, no_tensor_model: RunModel) -> None:
    """A graph op grappler folded into a constant: the kernel sentence says no kernel of
    its own ran, as the headline's "ran no kernel (grappler folded them into a constant)"
    does, never that it runs the stock kernel Const."""
    folded = [(op_type, r["text"]) for model in (full_model, no_tensor_model)
              for op_type, mode, r in _texts(model, "kernel")
              if mode == "graph" and r["kernel"] == "Const" and op_type != "Const"]
    assert folded
    for op_type, text in folded:
        sentence = re.sub(r"^\d+ of \d+: ", "", text)  # one kernel of several
        assert sentence.startswith("No kernel of its own ran"), (op_type, text)
        assert "stock kernel Const" not in text, (op_type, text)
