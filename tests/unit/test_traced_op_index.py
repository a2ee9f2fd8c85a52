"""Shortened debug-node names resolve through an index: linear work, the scan's answers.

In: a synthetic graph of HuggingFace-like op names
(``tf_bert_for_sequence_classification/bert/encoder/layer_._11/attention/...``), their
``op_name`` attributes shortened as TF's log shortens them (``SummarizeString`` in
tensorflow/core/framework/attr_value_util.cc: a string of 80 characters or more becomes
its first 10, ``...``, its last 10) and the debug identity nodes' own names, never
shortened. Out: the calls made to resolve N and 4N of them (counted by ``sys.setprofile``,
no timing) grow linearly, and every answer is the one of scanning all names.
"""
from __future__ import annotations

import sys
from types import FrameType
from typing import Any, Callable

from tb_opmode.analyze.kernels.links import traced_op_resolver

_MODEL = "tf_bert_for_sequence_classification/bert"
# One encoder layer's ops, as HuggingFace's TF BERT names them (forward and gradient).
_LAYER_OPS = ("attention/self/query/Tensordot/MatMul", "attention/self/key/Tensordot/MatMul",
              "attention/self/value/Tensordot/MatMul", "attention/self/Softmax",
              "attention/self/transpose", "attention/self/transpose_1",
              "attention/output/dense/Tensordot/MatMul", "attention/output/LayerNorm/batchnorm/mul",
              "intermediate/dense/Tensordot/MatMul", "intermediate/intermediate_act_fn/Gelu/mul",
              "output/dense/Tensordot/MatMul", "output/dense/BiasAdd",
              "output/LayerNorm/batchnorm/add_1")


def _shortened(name: str) -> str:
    """TF's log's rendering of a string attribute (the quotes left out)."""
    return name[:10] + "..." + name[-10:] if len(name) >= 80 else name


def _graph(layers: int) -> tuple[dict[str, object], list[tuple[str, str, str]]]:
    """(op names, [(pattern, identity node name, the op it traces)]) for ``layers`` layers."""
    names: dict[str, object] = {}
    debug_nodes = []
    for layer in range(layers):
        for k, op in enumerate(_LAYER_OPS):
            for name in (f"{_MODEL}/encoder/layer_._{layer}/{op}",
                         f"gradient_tape/{_MODEL}/encoder/layer_._{layer}/{op}/grad"):
                names[name] = None
                ident = f"StatefulPartitionedCall/{name}/DebugIdentityV2_{len(debug_nodes) + k}"
                debug_nodes.append((_shortened(name), ident, name))
    return names, debug_nodes


def _scan(pattern: str, ident: str, names: dict[str, object]) -> str:
    """The specification: every name that fits the shortened pattern, then the identity's
    own name picks among several."""
    if pattern in names or "..." not in pattern:
        return pattern
    head, _, tail = pattern.partition("...")
    hits = [n for n in names if n.startswith(head) and n.endswith(tail)]
    if len(hits) > 1:
        scope = ident.rpartition("/")[0]
        hits = [n for n in hits if scope == n or scope.endswith("/" + n)] or [
            n for n in hits if ("/" + n + "/") in ("/" + ident)]
    return hits[0] if len(hits) == 1 else ""


def _calls(work: Callable[[], object]) -> int:
    """The Python and C function calls ``work`` makes (each ``startswith`` is one)."""
    count = 0

    def profile(_frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def _resolve_all(layers: int) -> Callable[[], list[str]]:
    names, debug_nodes = _graph(layers)

    def work() -> list[str]:
        resolve = traced_op_resolver(names)
        return [resolve(pattern, ident) for pattern, ident, _op in debug_nodes]
    return work


def test_the_synthetic_patterns_are_shortened_as_the_log_shortens_them() -> None:
    names, debug_nodes = _graph(12)
    shortened = [p for p, _i, _o in debug_nodes if "..." in p]
    assert len(shortened) >= 0.9 * len(debug_nodes)  # the case the index is for
    # All begin alike, and a tail fits many ops: no head or tail alone tells them apart.
    assert len({p.partition("...")[0] for p in shortened}) <= 2
    assert max(sum(n.endswith(p.rpartition("...")[2]) for n in names) for p in shortened) >= 24


def test_resolving_grows_linearly_with_the_number_of_debug_nodes() -> None:
    small, large = _calls(_resolve_all(8)), _calls(_resolve_all(32))
    # 4x the names and 4x the debug nodes: a scan of every name per node makes 16x the calls.
    assert large <= 5 * small, (small, large)


def test_every_debug_node_resolves_to_its_op_as_the_scan_does() -> None:
    names, debug_nodes = _graph(12)
    resolved = _resolve_all(12)()
    assert resolved == [op for _p, _i, op in debug_nodes]
    assert resolved == [_scan(p, i, names) for p, i, _op in debug_nodes]


def test_ambiguous_and_unmatched_patterns_answer_as_the_scan_does() -> None:
    names, debug_nodes = _graph(3)
    long_tail = "x" * 90
    names.update({f"{_MODEL}/a/{long_tail}": None, f"{_MODEL}/b/{long_tail}": None,
                  "short": None, "sh...rt": None})
    cases = [(p, i) for p, i, _op in debug_nodes]
    # The identity named after the op's scope, not the op: one op fits, or several.
    cases += [(_shortened(f"{_MODEL}/a/{long_tail}"), f"P/{_MODEL}/a/DebugIdentityV2_1"),
              (_shortened(f"{_MODEL}/a/{long_tail}"), "P/elsewhere/DebugIdentityV2_1"),
              (_shortened(f"{_MODEL}/encoder/layer_._0/{_LAYER_OPS[0]}" + "y" * 60),
               "P/DebugIdentityV2_2"),
              ("short", "anything"), ("sh...rt", "x/DebugIdentityV2_3"), ("s...t", "s/t/D"),
              ("...", "D"), ("tf_bert_fo...", f"{_MODEL}/DebugIdentityV2_4")]
    resolve = traced_op_resolver(names)
    answers = [resolve(p, i) for p, i in cases]
    assert answers == [_scan(p, i, names) for p, i in cases]
    assert "" in answers  # the ambiguous and the unmatched are among them
