"""The ordered rules that give a kernel to a dump graph op no log or profile resolved.

In: an ``InferenceContext`` (the run's evidence and per-graph facts) and an ``OpSite``
(one unresolved op). Out: ``GRAPH_RULES``, the table of named rules in the order they
are asked; ``apply_rules`` asks them in turn and applies the first ``Verdict``. The last
rule (the rule table for the dump's TF version) always answers.

Order matters: a fused op leaves no event of its own, so fusions come first; a folded
or removed op leaves none either, so the removals grappler always makes come before
the rule that reads a missing profiler event; what this run's own graphs showed comes
before the rule table.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

from ...vocab import REMOVED, UNKNOWN
from ..nodes import data_inputs
from ..rules import covers, parse_version
from ..static_shapes import SHAPE_NOT_FOLDED, broadcast_gradient_axes
from .context import InferenceContext, OpSite, ShapeProofs
from .fusions import fused_by_pattern, fused_into_consumer, fused_with_sibling
from .grappler import (
    DATASET_GRAPHS,
    REDUCTIONS,
    SHAPE_ONLY,
    forwarded_rank,
    identity_in_loop,
    lifted_capture,
    plus_folded_zeros,
    static_operand,
    tiles_once,
    times_a_constant_alike,
    times_ones,
    variable_times_zero,
)
from .missing_events import NO_EVENT_OPS
from .onednn import inferred_kernel
from .tensors import strip_slot
from .unrecorded_shapes import shapeless_no_op
from .verdict import UNSEEN, UNSEEN_IN_GRAPH, Verdict

__all__ = ["Rule", "GRAPH_RULES", "NO_PROFILER_EVENT", "apply_rules"]

# Note texts; a rule whose verdict has a ``basis`` gets its ending from the verdict.
NO_NODE_IN_LOG = ("no node of its own ran although its graph did (the log shows its debug "
                  "node): grappler removed or constant-folded it; a NO_TENSOR dump does not "
                  "record which")
LIFTED_CAPTURE = ("no Const kernel ran: it is an eager tensor the tf.data function captured by "
                  "value (its creation stack passes through TF's capture_by_value), which "
                  "tf.data feeds its function as an argument (_Arg) instead")
SUMMARY_FOLDED = ("constant-folded by grappler: its debug summary was folded into a constant "
                  "too (the profile shows tfdbg's identity node but no summary)")
INPUTS_CONSTANT = ("constant-folded by grappler: every input is a constant, so grappler "
                   "computed it once when it optimised the graph and feeds the result as a "
                   "constant")
GRADIENT_STOP_PRUNED = ("removed by grappler: its model pruner drops every StopGradient once the "
                        "graph is built, when that adds no edges, as for one input")
SINGLE_PACK = ("rewritten by grappler into ExpandDims: it packs a single tensor, which "
               "grappler's constant folding turns into an ExpandDims")
PROFILED_NO_EVENT = ("no profiler event for it although its debug node ran in the same step: "
                     "grappler most likely removed or folded it")
REDUCED_NO_EVENT = ("unknown whether it ran: no {op_type} kernel ran (no profiler event of its "
                    "own in a step that ran its debug node), so grappler removed it or left an "
                    "Identity in its place, which the profiler does not trace; which of the two "
                    "depends on edges after grappler's passes that the dump does not show (its "
                    "axes come from a gradient's BroadcastGradientArgs of two shapes). To know, "
                    "keep TF's log (TF_CPP_VMODULE=executor=1)")
SAME_TYPE_CAST = ("removed by grappler: its debug summary equals its input's, dtype included, "
                  "so it casts to the type it has, and grappler removes such casts")
TIMES_ONES = ("removed by grappler: it multiplies by a constant of ones (a gradient's seed), "
              "and its debug summary equals its other input's, so grappler's constant folding "
              "forwards that input instead")
TIMES_A_CONSTANT = ("unknown whether it ran: it multiplies by a constant, and its debug "
                    "summary equals its other input's, as it does for a factor of 1, which "
                    "grappler removes, and for any other positive one, which runs; the dump "
                    "does not record the constant's value. To know, keep TF's log "
                    "(TF_CPP_VMODULE=executor=1), profile a step, or dump with FULL_TENSOR")
TIMES_ZERO = ("constant-folded by grappler: it multiplies a variable by a constant of zeros "
              "(its trace and the constant's count every element zero), and grappler's "
              "constant folding replaces x * 0 by zeros where x's shape is static, as a "
              "variable's is")
PLUS_FOLDED_ZEROS = ("removed by grappler: it adds a product by zeros that grappler folds, and "
                     "its debug summary equals its other input's: x + 0, which grappler's "
                     "constant folding forwards")
TILES_ONCE = ("removed by grappler: its multiples are a constant, and its debug summary equals "
              "its input's, size included, so every multiple is 1; grappler's constant "
              "folding makes such a Tile an Identity, which its dependency optimizer removes")
IDENTITY_N = "removed by grappler, which forwards an IdentityN's inputs to its consumers"
DIVISION_BY_CONSTANT = ("rewritten by grappler from RealDiv into Mul: it divides by a constant, "
                        "which grappler's constant folding turns into a multiplication by its "
                        "reciprocal")
DIVISION_OF_CONSTANT = ("unknown whether it ran as RealDiv or as Reciprocal: it divides a "
                        "constant by a tensor, and grappler's constant folding rewrites 1 / y "
                        "into Reciprocal(y) where the constant is ones and y has the result's "
                        "shape; the dump does not record the constant's value. To know, keep "
                        "TF's log (TF_CPP_VMODULE=executor=1) or profile a step")
SAME_SHAPE = ("removed by grappler: at its first run its debug summary equals its input's, a "
              "tensor of rank {rank}, so its output has its input's very shape ({why}); "
              "grappler removes such a no-op once static shapes show it")
SAME_SHAPE_SHAPE_ONLY = "a rank-0 or rank-1 shape is fixed by its size"
SAME_SHAPE_REDUCTION = "a reduction of a scalar over no axes"
SAME_SHAPE_EXPAND = "an ExpandDims that ran would add a dimension"
FORWARDED_UNPROVEN = ("unknown whether it ran: at its first run its debug summary equals its "
                      "input's, so it forwarded its input unchanged; grappler removes such a "
                      "{op_type} where it can prove that from static shapes, which the dump does "
                      "not record, and the profiler records no event for it at the default host "
                      "tracer level. To know, keep TF's log (TF_CPP_MAX_VLOG_LEVEL=2), or "
                      "profile with host_tracer_level=3")
TRANSPOSE_UNPROVEN = ("unknown whether it ran: its debug summary equals its input's, as it does "
                      "for any permutation, and its permutation is computed from constants, "
                      "whose value the dump does not record: grappler removes a "
                      "Transpose by the identity permutation (Tensordot makes one for a Dense "
                      "layer on 3-D inputs) and runs any other. To know, keep TF's log "
                      "(TF_CPP_VMODULE=executor=1) or profile a step")
SHAPE_N_MATERIALIZED = ("unknown whether it ran: from TF 2.22 grappler materializes a ShapeN's "
                        "outputs (a constant for each statically known shape), and the node "
                        "runs a NoOp or nothing where every shape was known, as the truth "
                        "matrix's Conv2D gradient showed where TF 2.21 ran it; the dump does not "
                        "record which shapes were static. To know, keep TF's log "
                        "(TF_CPP_VMODULE=executor=1)")
INLINED_ARGUMENT = ("an argument of a function traced inside another: TF inlines the function "
                    "(or lowers the cond/while branch) into its caller, so the argument is an "
                    "edge and no node runs for it")
FUNCTION_ARGUMENT = "a function's argument: the function's executor feeds it through an _Arg node"
SEEN_IN_RUN = ("no node of its own was observed; other {op_type} ops ({dtype}) in this run's "
               "graphs ran {kernel}")

# Forwarders grappler removes only where static shapes prove them no-ops, which the
# dump does not record, and whose missing event proves nothing.
_UNPROVABLE_FORWARDERS = NO_EVENT_OPS | {"Sum", "Mean", "BroadcastTo"}


def _no_node_in_log(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if (site.op.graph_id, site.op.op_name) not in ctx.no_node:
        return None
    return Verdict(REMOVED, NO_NODE_IN_LOG, "log")


def _shape_n_materialized(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    version = site.dump.tensorflow_version
    if site.op.op_type != "ShapeN" or not covers(version) or parse_version(version) < (2, 22):
        return None
    return Verdict(UNKNOWN, SHAPE_N_MATERIALIZED)


def _lifted_capture(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type != "Const" or not lifted_capture(site.dump, site.op):
        return None
    return Verdict(REMOVED, LIFTED_CAPTURE, basis=UNSEEN)


def _summary_folded(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    # A NO_TENSOR dump has no summary nodes at all: a missing summary says nothing.
    name = site.op.op_name
    if not ctx.summaries or name not in ctx.identities or name in ctx.summaries \
            or site.op.op_type == "Const":
        return None
    return Verdict("Const", SUMMARY_FOLDED)


def _inputs_constant(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type == "Const" or not ctx.all_inputs_constant(site.graph_ops, site.op.op_name):
        return None
    return Verdict("Const", INPUTS_CONSTANT, basis=UNSEEN_IN_GRAPH)


def _gradient_stop_pruned(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    created = site.created
    if site.op.op_type not in ("StopGradient", "PreventGradient") or created is None \
            or len(created.inputs) != 1 or created.inputs[0].startswith("^"):
        return None
    return Verdict(REMOVED, GRADIENT_STOP_PRUNED, basis=UNSEEN_IN_GRAPH)


def _identity_in_loop(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    return identity_in_loop(site.dump, site.op, site.graph_ops,
                            no_event=site.no_own_event and site.traced_always)


def _single_pack(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    created = site.created
    if site.op.op_type != "Pack" or created is None or len(data_inputs(created.inputs)) != 1:
        return None
    return Verdict("ExpandDims", SINGLE_PACK, basis=UNSEEN_IN_GRAPH)


def _moved_across_casts(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    moved = ctx.moved_across_casts(site.key, site.graph_ops).get(site.op.op_name)
    return None if moved is None else Verdict(REMOVED, moved)


def _bypassed_in_no_tensor_dump(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if not site.no_tensor_dump:
        return None
    decided = ctx.bypassed(site.key, site.graph_ops).get(site.op.op_name)
    return None if decided is None else Verdict(*decided)


def _profiled_no_event(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    # Its graph ran in a profiled step: no event of its own means no node of its own,
    # unless it ran often enough for the executor to stop tracing it.
    if not (site.no_own_event and site.traced_always):
        return None
    if _reduces_over_computed_axes(site):
        return Verdict(UNKNOWN, REDUCED_NO_EVENT.format(op_type=site.op.op_type))
    return Verdict(REMOVED, PROFILED_NO_EVENT)


def _reduces_over_computed_axes(site: OpSite) -> bool:
    """A gradient's reduction over the axes ``BroadcastGradientArgs`` computes from the
    ``Shape`` of a tensor: where grappler proves the two shapes equal symbolically (a
    batch dimension unknown till run time on both sides), it materializes those axes as
    constants that keep a control input on the shapes they came from, and replaces the
    reduction by an Identity that inherits it; the dependency optimizer keeps that
    Identity or bypasses it by the edges it would add. Axes of constant shapes (Keras 2's
    loss of a scalar) fold with no such input, and the reduction is removed."""
    bga = broadcast_gradient_axes(site.created, site.graph_ops) if site.created is not None else None
    if bga is None:
        return False
    shapes = [site.graph_ops.get(strip_slot(t)) for t in data_inputs(bga.inputs)]
    return any(shape is None or shape.op_type != "Const" for shape in shapes)


def _same_type_cast(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type != "Cast" or not site.forwards_input:
        return None
    return Verdict(REMOVED, SAME_TYPE_CAST, basis=UNSEEN)


def _times_ones(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type != "Mul" or not times_ones(site.dump, site.op, site.graph_ops):
        return None
    return Verdict(REMOVED, TIMES_ONES, basis=UNSEEN)


def _times_zero(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if not variable_times_zero(site.dump, site.op, site.graph_ops):
        return None
    return Verdict("Const", TIMES_ZERO, basis=UNSEEN)


def _plus_folded_zeros(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if not plus_folded_zeros(site.dump, site.op, site.graph_ops):
        return None
    return Verdict(REMOVED, PLUS_FOLDED_ZEROS, basis=UNSEEN)


def _times_a_constant(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type != "Mul" or not times_a_constant_alike(site.dump, site.op, site.graph_ops):
        return None
    return Verdict(UNKNOWN, TIMES_A_CONSTANT)


def _tiles_once(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type != "Tile" or not site.forwards_input or not tiles_once(
            site.dump, site.op, site.graph_ops, ctx.folding_memo):
        return None
    return Verdict(REMOVED, TILES_ONCE, basis=UNSEEN)


def _identity_n(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    return Verdict(REMOVED, IDENTITY_N, basis=UNSEEN) if site.op.op_type == "IdentityN" else None


def _division_by_constant(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type != "RealDiv":
        return None
    inputs = site.graph_ops[site.op.op_name].inputs
    if len(inputs) <= 1 or not ctx.constant_input(site.graph_ops, inputs[1]):
        return None
    return Verdict("Mul", DIVISION_BY_CONSTANT, basis=UNSEEN)


def _division_of_constant(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if site.op.op_type not in ("RealDiv", "Div") or site.created is None:
        return None
    inputs = data_inputs(site.created.inputs)
    if len(inputs) != 2 or not ctx.constant_input(site.graph_ops, inputs[0]):
        return None
    return Verdict(UNKNOWN, DIVISION_OF_CONSTANT)


def _shape_unprovable(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    """A Reshape or Sum that forwarded its input where static shapes cannot prove it a
    no-op (``static_shapes``): it ran, with the kernel of the rule table."""
    op = site.op
    if not site.forwards_input or op.op_type not in ("Reshape", "Sum"):
        return None
    proofs = ctx.shape_proofs(site.key, site.graph_ops)
    ran = None if proofs.batch == "static" else proofs.unfolded.get(op.op_name)
    if op.op_name in proofs.packed:
        ran = _packed_shape_unfolded(ctx, site, proofs)
    if ran is None:
        return None
    kernel, why = inferred_kernel(ctx.model, op.op_type, "graph", op.dtype or "DT_FLOAT",
                                  ctx.cpu_seen)
    return Verdict(kernel, f"{ran}; {why}")


def _packed_shape_unfolded(ctx: InferenceContext, site: OpSite, proofs: ShapeProofs) -> str | None:
    """Why a Reshape to a packed shape ran, or None where its Pack was most likely folded."""
    ran, pack = proofs.packed[site.op.op_name]
    pack_ran = any(n == pack or n.endswith("/" + pack) for n in ctx.nodes)
    # A profile that would have shown the Pack run and did not, or a dataset of static
    # shapes: it was folded (most likely, for the latter), so the shapes were static and
    # the Reshape may well have been removed.
    folded = not pack_ran and (
        proofs.batch == "static" or (site.debug_node_profiled and site.traced_always))
    if folded:
        return None
    return ran + "; " + (SHAPE_NOT_FOLDED.format(pack=pack) if pack_ran else proofs.assumed)


def _same_shape(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    op = site.op
    rank = forwarded_rank(site.dump, op) if site.forwards_input else None
    if rank is None:
        return None
    if op.op_type in SHAPE_ONLY and rank <= 1 and static_operand(site.graph_ops, op.op_name,
                                                                  ctx.folding_memo):
        why = SAME_SHAPE_SHAPE_ONLY
    elif op.op_type in REDUCTIONS and rank == 0:
        why = SAME_SHAPE_REDUCTION
    elif op.op_type == "ExpandDims":
        why = SAME_SHAPE_EXPAND
    else:
        return None
    return Verdict(REMOVED, SAME_SHAPE.format(rank=rank, why=why), basis=UNSEEN)


def _forwarded_unproven(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    if not site.forwards_input or site.op.op_type not in _UNPROVABLE_FORWARDERS:
        return None
    return Verdict(UNKNOWN, FORWARDED_UNPROVEN.format(op_type=site.op.op_type))


def _transpose_by_a_computed_permutation(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    """A Transpose whose permutation constant folding computes (Tensordot concatenates its
    free and contracted axes): the identity where Tensordot keeps the axes in order. A
    literal permutation (``tf.transpose(x, [1, 0])``) is left to the rules after: nobody
    writes the identity."""
    if site.op.op_type != "Transpose" or not site.forwards_input or site.created is None:
        return None
    inputs = data_inputs(site.created.inputs)
    source = site.graph_ops.get(strip_slot(inputs[1])) if len(inputs) == 2 else None
    if source is None or source.op_type == "Const" or not ctx.constant_input(site.graph_ops,
                                                                             inputs[1]):
        return None
    return Verdict(UNKNOWN, TRANSPOSE_UNPROVEN)


def _shapeless_no_op(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    return shapeless_no_op(site)


def _placeholder(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    """A function's argument. A function run by its own executor (a tf.function called
    eagerly, a tf.data function) feeds it through an ``_Arg`` node; in a function
    traced inside another (inlined into its caller, or a cond/while branch lowered
    into it) it becomes an edge, and no node runs for it."""
    if site.op.op_type != "Placeholder":
        return None
    graphs = site.dump.graphs
    graph = graphs[site.op.graph_id]
    if graph.outer_id in graphs and not graph.name.startswith(DATASET_GRAPHS):
        return Verdict(REMOVED, INLINED_ARGUMENT)
    return Verdict("_Arg", FUNCTION_ARGUMENT)


def _seen_in_run(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    op = site.op
    observed = ctx.seen.get((op.op_type, op.dtype))
    if not observed:
        return None
    kernel = observed.most_common(1)[0][0]
    return Verdict(kernel, SEEN_IN_RUN.format(op_type=op.op_type, dtype=op.dtype or "same dtype",
                                              kernel=kernel))


def _by_rule_table(ctx: InferenceContext, site: OpSite) -> Optional[Verdict]:
    op = site.op
    return Verdict(*inferred_kernel(ctx.model, op.op_type, "graph", op.dtype or "DT_FLOAT",
                                    ctx.cpu_seen))


class Rule(NamedTuple):
    """One graph rule: its name (recorded on each op it decides), what it asks, and
    what it decides, in a line."""

    name: str
    decide: Callable[[InferenceContext, OpSite], Optional[Verdict]]
    decides: str


NO_PROFILER_EVENT = "no_profiler_event"

GRAPH_RULES: tuple[Rule, ...] = (
    Rule("sibling_fusion", fused_with_sibling,
         "fused with a sibling reading the same input whose node ran a fused kernel"),
    Rule("consumer_fusion", fused_into_consumer,
         "fused into a consumer (up to three fusable ops down) whose node ran a fused kernel"),
    Rule("contraction_pattern_fusion", fused_by_pattern,
         "fused: a NO_TENSOR graph's Conv2D/MatMul + BiasAdd [+ activation], by the oneDNN state"),
    Rule("no_node_in_log", _no_node_in_log,
         "removed or folded: the log shows its debug node ran and no node of its own"),
    Rule("shape_n_materialized", _shape_n_materialized,
         "unknown: a ShapeN on TF 2.22+, whose outputs grappler materializes where static"),
    Rule("lifted_capture", _lifted_capture,
         "no kernel: a tf.data function's Const that is a captured eager tensor, fed as _Arg"),
    Rule("summary_folded", _summary_folded,
         "constant-folded: the profile shows its debug identity but not its summary"),
    Rule("inputs_constant", _inputs_constant,
         "constant-folded: every input is a constant or computed from constants"),
    Rule("gradient_stop_pruned", _gradient_stop_pruned,
         "removed: a one-input StopGradient or PreventGradient, pruned"),
    Rule("identity_in_loop", _identity_in_loop,
         "a loop body's x * ones or Tile by ones: an Identity that stays or is bypassed, by "
         "its readers"),
    Rule("single_pack", _single_pack, "rewritten into ExpandDims: a Pack of one tensor"),
    Rule("moved_across_casts", _moved_across_casts,
         "removed: its work moved to the other side of a Cast (``cast_reorder``)"),
    Rule("bypassed_in_no_tensor_dump", _bypassed_in_no_tensor_dump,
         "bypassed or pruned, as a NO_TENSOR dump's graph shows (``no_tensor``)"),
    Rule(NO_PROFILER_EVENT, _profiled_no_event,
         "removed: no event of its own in a step that ran its debug node, while traced at every run "
         "(unknown for a gradient's reduction over BroadcastGradientArgs: an Identity leaves "
         "none either)"),
    Rule("same_type_cast", _same_type_cast, "removed: a Cast whose trace equals its input's"),
    Rule("times_ones", _times_ones, "removed: x * ones, its trace equal to x's"),
    Rule("times_zero", _times_zero, "constant-folded: a variable times a constant of zeros"),
    Rule("plus_folded_zeros", _plus_folded_zeros,
         "removed: x + (a variable times zeros), its trace equal to x's"),
    Rule("times_a_constant", _times_a_constant,
         "unknown: x * c, its trace equal to x's, c's value not recorded (1 is removed)"),
    Rule("tiles_once", _tiles_once, "removed: a Tile by constant multiples of 1"),
    Rule("identity_n", _identity_n, "removed: an IdentityN, its inputs forwarded"),
    Rule("division_by_constant", _division_by_constant, "rewritten into Mul: a RealDiv by a constant"),
    Rule("division_of_constant", _division_of_constant,
         "unknown: a RealDiv of a constant, Reciprocal where the constant is ones"),
    Rule("shape_unprovable", _shape_unprovable,
         "ran: a forwarding Reshape or Sum static shapes cannot prove a no-op"),
    Rule("same_shape", _same_shape,
         "removed: a forwarder whose input's rank fixes its output's shape"),
    Rule("forwarded_unproven", _forwarded_unproven,
         "unknown: a forwarder the dump cannot show grappler removed"),
    Rule("transpose_by_a_computed_permutation", _transpose_by_a_computed_permutation,
         "unknown: a Transpose by a permutation computed from constants, its trace its input's"),
    Rule("shapeless_no_op", _shapeless_no_op,
         "unknown: an op grappler removes where shapes make it a no-op, in a dump of no shapes"),
    Rule("placeholder", _placeholder, "a function's argument: _Arg, or an edge where inlined"),
    Rule("seen_in_run", _seen_in_run, "the kernel other ops of its type and dtype ran in this run"),
    Rule("rule_table", _by_rule_table, "the rule table's kernel for the dump's TF version"),
)

# The rules asked after ``NO_PROFILER_EVENT`` passed an op over: an op one of them
# decides whose debug node ran in a profiled step has no event that proves anything.
_AFTER_PROFILER_EVENT = frozenset(
    rule.name for rule in GRAPH_RULES[[r.name for r in GRAPH_RULES].index(NO_PROFILER_EVENT) + 1:])


def apply_rules(ctx: InferenceContext, site: OpSite) -> bool:
    """Apply the first rule that answers for the site's op; True where the op's missing
    profiler event proves nothing (its node may have run untraced)."""
    for rule in GRAPH_RULES:
        verdict = rule.decide(ctx, site)
        if verdict is not None:
            verdict.apply(site.op, rule.name)
            return rule.name in _AFTER_PROFILER_EVENT and site.no_own_event
    raise AssertionError("the rule table answers for every op")
