"""Dump-only inference of ops grappler removed, folded or rewrote, on in-memory graphs.

In: one graph of hand-made ``OpCreation``s with FULL_HEALTH trace digests made by
``tfdbg.health_digest`` from health vectors laid out as TF writes them
(``[tensor_id, device_id, dtype, rank, size, -inf, +inf, nan, neg, zero, pos]``).
Out: the kernel ``kernels.assign_graph`` gives each op with neither log nor profile.
The rules under test are ours (what the dump lets us conclude); the matrix
(``tests/matrix``) holds them to TF's own log on real runs.
"""
from __future__ import annotations

import struct
from collections import Counter

from tb_opmode.analyze.assemble import RunModel
from tb_opmode.analyze.kernels import REMOVED, UNKNOWN, assign_graph
from tb_opmode.read.tfdbg import (
    DumpSet,
    GraphInfo,
    OpCreation,
    digest_all_zeros,
    digest_rank,
    health_digest,
)

GRAPH = "g1"
FULL_HEALTH = 4


def health(rank: int, size: int, tensor_id: int = 1, pos: int = 1) -> bytes:
    """A FULL_HEALTH TensorProto: field 4 (tensor_content) holding the float64 vector."""
    vector = struct.pack("<11d", tensor_id, -1, 1, rank, size, 0, 0, 0, 0, 0, pos)
    return bytes([4 << 3 | 2, len(vector)]) + vector


def build(ops: list[tuple[str, str, tuple[str, ...]]],
          traced: dict[str, tuple[int, int]]) -> list:
    """Graph ops (name, type, inputs) and, per traced op, the (rank, size) of its tensor."""
    return build_with(ops, {name: health(rank, size) for name, (rank, size) in traced.items()})


def build_with(ops: list[tuple[str, str, tuple[str, ...]]], traced: dict[str, bytes],
               version: str = "2.21.0", graph_name: str = "train_step") -> list:
    """Graph ops (name, type, inputs) and, per traced op, its FULL_HEALTH TensorProto (each
    given its own tensor id, as TF's are)."""
    dump = DumpSet(directory="/run", prefix="tfdbg_events.1.host", host="host",
                   tensorflow_version=version)
    graph = GraphInfo(GRAPH, name=graph_name)
    for name, op_type, inputs in ops:
        graph.ops[name] = OpCreation(op_type, name, GRAPH, "/cpu:0", 1, (), inputs)
    dump.graphs = {GRAPH: graph}
    for k, (name, proto) in enumerate(traced.items()):
        key = (GRAPH, name, 0)
        dump.traces[key] = 2
        dump.trace_dtypes[key] = "DT_FLOAT"
        dump.trace_digests[key] = health_digest(proto[:2] + struct.pack("<d", k + 1) + proto[10:],
                                                FULL_HEALTH)
    model = RunModel(run=".", directory="/run", tensorflow_version=version, onednn_enabled=True)
    model.dumps = [dump]
    return assign_graph(model)


def kernels(ops: list) -> dict[str, str]:
    return {op.op_name: op.kernel for op in ops}


def test_the_digest_carries_the_rank_and_not_the_tensor_id() -> None:
    a = health_digest(health(2, 6, tensor_id=1), FULL_HEALTH)
    b = health_digest(health(2, 6, tensor_id=9), FULL_HEALTH)
    assert a == b and digest_rank(a) == 2
    assert digest_rank(health_digest(health(0, 1), FULL_HEALTH)) == 0
    assert health_digest(health(3, 6), FULL_HEALTH) != a
    assert digest_rank(0) is None  # NO_TENSOR / CURT: nothing recorded


def test_a_rank_1_reshape_that_forwarded_its_input_was_removed() -> None:
    got = kernels(build(
        [("grad", "BiasAddGrad", ("x:0",)), ("shape", "Const", ()),
         ("Reshape", "Reshape", ("grad:0", "shape:0"))],
        {"grad": (1, 16), "Reshape": (1, 16)}))
    assert got["Reshape"] == REMOVED


def test_a_rank_3_reshape_that_forwarded_its_input_is_unknown() -> None:
    """[2,3,4] -> [2,3,4] or [4,3,2]: equal rank and size do not fix the shape, nor does
    the dump say whether grappler could prove the reshape a no-op."""
    (op,) = [o for o in build(
        [("x", "Relu", ()), ("shape", "Const", ()), ("Reshape", "Reshape", ("x:0", "shape:0"))],
        {"x": (3, 24), "Reshape": (3, 24)}) if o.op_name == "Reshape"]
    assert op.kernel == UNKNOWN and "host_tracer_level=3" in op.note


def test_a_reshape_that_changed_the_rank_ran() -> None:
    got = kernels(build(
        [("x", "Relu", ()), ("shape", "Const", ()), ("Reshape", "Reshape", ("x:0", "shape:0"))],
        {"x": (1, 24), "Reshape": (2, 24)}))
    assert got["Reshape"] == "Reshape"


def test_a_sum_of_a_scalar_was_removed_and_a_sum_of_a_matrix_is_unknown() -> None:
    got = kernels(build(
        [("loss", "Mul", ()), ("range", "Range", ()), ("Sum", "Sum", ("loss:0", "range:0")),
         ("m", "Mul", ()), ("Sum_1", "Sum", ("m:0", "range:0"))],
        {"loss": (0, 1), "Sum": (0, 1), "m": (2, 6), "Sum_1": (2, 6)}))
    assert got["Sum"] == REMOVED
    assert got["Sum_1"] == UNKNOWN


def test_an_expand_dims_that_kept_its_inputs_rank_did_not_run() -> None:
    got = kernels(build(
        [("x", "Relu", ()), ("axis", "Const", ()), ("ExpandDims", "ExpandDims", ("x:0", "axis:0"))],
        {"x": (2, 6), "ExpandDims": (2, 6)}))
    assert got["ExpandDims"] == REMOVED


def test_times_ones_is_forwarded_but_times_another_constant_runs() -> None:
    got = kernels(build(
        [("ones", "Const", ()), ("d", "DivNoNan", ()), ("mul", "Mul", ("ones:0", "d:0")),
         ("two", "Const", ()), ("mul_1", "Mul", ("two:0", "d:0")),
         ("e", "Relu", ()), ("mul_2", "Mul", ("two:0", "e:0"))],
        {"ones": (0, 1), "d": (1, 4), "mul": (1, 4), "two": (0, 1), "mul_1": (1, 4),
         "e": (1, 8), "mul_2": (2, 8)}))
    assert got["mul"] == REMOVED
    # x * c with x's health summary: c may be 1 (removed) or any c > 0 (ran)
    assert got["mul_1"] == UNKNOWN
    # a product whose summary is not its input's ran
    assert got["mul_2"] == "Mul"


def zeros(rank: int, size: int, tensor_id: int = 1) -> bytes:
    """A FULL_HEALTH TensorProto of a tensor whose every element is zero."""
    vector = struct.pack("<11d", tensor_id, -1, 1, rank, size, 0, 0, 0, 0, size, 0)
    return bytes([4 << 3 | 2, len(vector)]) + vector


def test_the_digest_says_whether_every_element_is_zero() -> None:
    assert digest_all_zeros(health_digest(zeros(2, 6), FULL_HEALTH))
    assert not digest_all_zeros(health_digest(health(2, 6), FULL_HEALTH))
    assert not digest_all_zeros(health_digest(zeros(0, 0), FULL_HEALTH))  # no element
    assert digest_rank(health_digest(zeros(2, 6), FULL_HEALTH)) == 2
    assert not digest_all_zeros(0)


def test_sgd_without_momentum_folds_v_times_zero_and_removes_x_plus_it() -> None:
    """Keras 2's SGD: ``mul_1 = v * 0.0`` (a Const of zeros) is folded to zeros, and
    ``add = mul + mul_1`` is x + 0, removed; a product by zeros of a tensor that is not a
    variable's value (its shape perhaps not static) is not decided that way."""
    ops = [("v", "ReadVariableOp", ()), ("m", "Const", ()), ("g", "Neg", ()),
           ("mul", "Mul", ("g:0", "lr:0")), ("lr", "Const", ()),
           ("mul_1", "Mul", ("v:0", "m:0")), ("add", "AddV2", ("mul:0", "mul_1:0")),
           ("h", "Relu", ()), ("mul_2", "Mul", ("h:0", "m:0"))]
    protos = {"v": health(1, 4, pos=4), "m": zeros(0, 1), "g": health(1, 4, pos=2),
              "lr": health(0, 1), "mul": health(1, 4, pos=1), "mul_1": zeros(1, 4),
              "add": health(1, 4, pos=1), "h": health(1, 4, pos=3), "mul_2": zeros(1, 4)}
    got = kernels(build_with(ops, protos, "2.13.1"))
    assert got["mul_1"] == "Const" and got["add"] == REMOVED
    assert got["mul_2"] != "Const" and got["mul"] == "Mul"


def test_a_one_input_pack_runs_as_expand_dims() -> None:
    got = kernels(build(
        [("x", "StridedSlice", ()), ("packed", "Pack", ("x:0",)),
         ("y", "StridedSlice", ()), ("packed_1", "Pack", ("x:0", "y:0"))],
        {"packed": (1, 1), "packed_1": (1, 2)}))
    assert got["packed"] == "ExpandDims"
    assert got["packed_1"] == "Pack"


def test_an_op_of_constants_is_folded() -> None:
    got = kernels(build(
        [("c", "Const", ()), ("Cast", "Cast", ("c:0",))], {"Cast": (1, 3)}))
    assert got["Cast"] == "Const"
    assert Counter(got.values())["Const"] == 1


def test_a_rank_1_reshape_to_a_shape_computed_at_run_time_is_unknown() -> None:
    """``Reshape(Sum, Shape(gamma))``: the target is ``tf.shape`` of a tensor, not a
    constant; TF 2.13's grappler keeps such Reshapes of BERT's LayerNorm gradients."""
    (op,) = [o for o in build(
        [("gamma", "ReadVariableOp", ()), ("s", "Shape", ("gamma:0",)), ("x", "Relu", ()),
         ("Sum", "Sum", ("x:0",)), ("Reshape", "Reshape", ("Sum:0", "s:0"))],
        {"Sum": (1, 32), "Reshape": (1, 32)}) if o.op_name == "Reshape"]
    assert op.kernel == UNKNOWN, op.note


# HuggingFace BERT's Dense layers on 3-D inputs run Tensordot, which transposes its input by
# a permutation computed from constants, the identity: TF 2.21's log shows grappler removed
# every such Transpose, which the rule table, knowing the oneDNN state, called _MklTranspose.
TENSORDOT = [("x", "AddV2", ()), ("free", "Const", ()), ("axes", "Const", ()),
             ("perm", "ConcatV2", ("free:0", "axes:0", "axis:0")), ("axis", "Const", ()),
             ("Tensordot/transpose", "Transpose", ("x:0", "perm:0"))]


def test_a_transpose_by_a_constant_permutation_that_forwarded_is_unknown() -> None:
    got = {op.op_name: op for op in build(TENSORDOT, {"x": (3, 24), "Tensordot/transpose": (3, 24)})}
    assert got["Tensordot/transpose"].kernel == UNKNOWN
    assert "identity permutation" in got["Tensordot/transpose"].note


def test_other_transposes_are_not_unknown() -> None:
    """A permutation computed at run time grappler cannot see; a summary unlike the input's
    is no forwarding (another size)."""
    dynamic = [op if op[0] != "perm" else ("perm", "Shape", ("x:0",)) for op in TENSORDOT]
    got = kernels(build(dynamic, {"x": (3, 24), "Tensordot/transpose": (3, 24)}))
    assert got["Tensordot/transpose"] not in (UNKNOWN, REMOVED)
    got = kernels(build(TENSORDOT, {"x": (3, 24), "Tensordot/transpose": (3, 12)}))
    assert got["Tensordot/transpose"] not in (UNKNOWN, REMOVED)
    # A literal permutation is the user's (tf.transpose(x, [1, 0])): nobody writes the identity.
    literal = [op if op[0] != "perm" else ("perm", "Const", ()) for op in TENSORDOT]
    got = kernels(build(literal, {"x": (3, 24), "Tensordot/transpose": (3, 24)}))
    assert got["Tensordot/transpose"] not in (UNKNOWN, REMOVED)


def test_a_shape_n_is_unknown_from_tf_2_22() -> None:
    """TF 2.22 materializes a ShapeN's outputs where shapes are static (the truth matrix's
    Conv2D gradient, which 2.21 ran); the dump does not record which were."""
    ops = [("x", "Relu", ()), ("w", "ReadVariableOp", ()), ("ShapeN", "ShapeN", ("x:0", "w:0"))]
    traced = {"x": health(4, 64), "ShapeN": health(1, 4)}
    on_222 = {op.op_name: op for op in build_with(ops, traced, version="2.22.0")}
    assert on_222["ShapeN"].kernel == UNKNOWN and "2.22" in on_222["ShapeN"].note
    assert kernels(build_with(ops, traced, version="2.21.0"))["ShapeN"] == "ShapeN"


# Keras 2's loss gradient under steps_per_execution (TF 2.13's fit_spe cell): a Tile by
# constant multiples inside the lowered while loop's body.
LOOP_TILE = [("g", "Reshape", ()), ("multiples", "Const", ()),
             ("Tile", "Tile", ("g:0", "multiples:0")), ("out", "Mul", ("Tile:0", "g:0"))]


def test_a_tile_by_ones_in_a_loop_body_is_removed_or_kept_by_its_readers() -> None:
    """Constant folding makes it Identity(x, ^multiples); the dependency optimizer bypasses
    that Identity where it has at most 2 readers (its debug op counted)."""
    traced = {"g": health(1, 4), "Tile": health(1, 4)}
    got = {op.op_name: op for op in build_with(LOOP_TILE, traced, graph_name="while_body_3307")}
    assert got["Tile"].kernel == REMOVED and "tiles by multiples of one" in got["Tile"].note
    readers = LOOP_TILE + [("out_1", "Neg", ("Tile:0",)), ("out_2", "Abs", ("Tile:0",))]
    got = {op.op_name: op for op in build_with(readers, traced, graph_name="while_body_3307")}
    assert got["Tile"].kernel == "Identity"
    # A Tile whose trace is not its input's tiled more than once: it ran.
    bigger = {"g": health(1, 4), "Tile": health(1, 8)}
    assert kernels(build_with(LOOP_TILE, bigger, graph_name="while_body_3307"))["Tile"] == "Tile"


def test_a_division_of_a_constant_is_unknown() -> None:
    """``1 / loss_scale`` (Keras 2's float16 optimizer): constant folding rewrites 1 / y into
    Reciprocal(y), and the dump does not record the constant's value."""
    ops = [("one", "Const", ()), ("v", "ReadVariableOp", ()), ("truediv", "RealDiv", ("one:0", "v:0")),
           ("x", "Relu", ()), ("ratio", "RealDiv", ("x:0", "v:0"))]
    got = {op.op_name: op for op in build(ops, {"v": (0, 1), "truediv": (0, 1), "x": (1, 4),
                                                "ratio": (1, 4)})}
    assert got["truediv"].kernel == UNKNOWN and "Reciprocal" in got["truediv"].note
    assert got["ratio"].kernel == "RealDiv"
