"""Which kernel ran each eager op: per (op type, dtype of its first output).

In: a ``RunModel`` (its dumps' eager executions per op type and dtype, or its rows'
counts without a dump; its logs' wrapper kernels) and the graph ops already assigned.
Out: ``EagerAssignment`` per (op type, dtype), split between kernels where the log saw
several: from the log where it names the kernel, else from the same op type and dtype
in this run's graphs, else from the rule table (``onednn.inferred_kernel``).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from ...model import EagerAssignment, OpKernel, RunModel
from ...read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN
from ...vocab import UNKNOWN, is_function
from ..nodes import canonical_op
from ..rules import matching_rules
from .onednn import FLOAT_DTYPES, FLOAT_MATH, cpu_from_kernels, inferred_kernel

__all__ = ["assign_eager"]

# (kernel, dtype, dispatch name) -> executions, per op type, from the log.
_LogKernels = Counter[tuple[str, str, str]]


def assign_eager(model: RunModel, graph_ops: list[OpKernel]) -> list[EagerAssignment]:
    """The kernel of eager executions, per (op type, dtype of the first output)."""
    log_kernels = _log_eager_kernels(model)
    seen = _graph_kernels_by_type(graph_ops)
    cpu_seen = cpu_from_kernels(model, graph_ops)
    out: list[EagerAssignment] = []
    for (op_type, dtype), n in sorted(_eager_executions(model).items()):
        candidates = log_kernels.get(op_type)
        if candidates:
            out.extend(_eager_from_log(op_type, dtype, n, candidates))
        else:
            out.append(_eager_inferred(model, op_type, dtype, n, seen, cpu_seen))
    return out


def _eager_executions(model: RunModel) -> Counter[tuple[str, str]]:
    """(op type, dtype) -> eager executions: the dumps', else the rows', whose dtype
    nothing recorded (``DTYPE_UNKNOWN``; "" is a dump's word for a non-float output, which
    made a profile's eager float MatMul stock where oneDNN's `_MklMatMul` ran)."""
    per_dtype: Counter[tuple[str, str]] = Counter()
    for dump in model.dumps:
        for (op_type, dtype), n in dump.execution_dtypes.items():
            if not is_function(op_type):
                per_dtype[(op_type, dtype)] += n
    if not model.dumps:
        for op_type, row in model.op_types.items():
            if row.eager.executions:
                per_dtype[(op_type, DTYPE_UNKNOWN)] += row.eager.executions
    return per_dtype


def _log_eager_kernels(model: RunModel) -> dict[str, _LogKernels]:
    """Op type -> (kernel, dtype, dispatch name) -> executions the logs saw."""
    log_kernels: dict[str, _LogKernels] = defaultdict(Counter)
    for log in model.logs:
        for ek, n in log.eager_kernels.items():
            if not is_function(ek.dispatch):
                log_kernels[canonical_op(ek.dispatch)][(ek.kernel, ek.dtype, ek.dispatch)] += n
    return log_kernels


def _graph_kernels_by_type(graph_ops: list[OpKernel]) -> dict[tuple[str, str], Counter[str]]:
    """What the graph pass did to each op type and dtype in this run's graphs, where the
    op's own node ran. Grappler does not run on an eager op's one-node function, so
    grappler's rewrites and fusions (RealDiv -> Mul, ...WithBias) say nothing about eager."""
    seen: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for op in graph_ops:
        if (op.evidence in ("log", "profile") and not op.fused_into
                and canonical_op(op.kernel) == op.op_type):
            seen[(op.op_type, op.dtype)][op.kernel] += op.executions
    return seen


def _eager_inferred(model: RunModel, op_type: str, dtype: str, n: int,
                    seen: dict[tuple[str, str], Counter[str]],
                    cpu_seen: dict[str, tuple[bool, str]]) -> EagerAssignment:
    """An eager (op type, dtype) no log line names: from this run's graphs, else the rules."""
    entry = EagerAssignment(op_type, dtype, n, "", "inferred")
    # The graphs' kernels stand for this dtype only where one is recorded: with none
    # (NO_TENSOR), an op whose kernel depends on the dtype stays for the rules to call.
    observed = seen.get((op_type, dtype)) if (
        dtype != DTYPE_UNKNOWN or op_type in FLOAT_MATH) else None
    # A graph rewrite that needs context (MaxPoolGrad needs its MaxPool)
    # does not carry over to a one-node function.
    contextual = any(r.condition for r in matching_rules(
        op_type, "graph", model.tensorflow_version, dtype or "DT_FLOAT",
        model.onednn_enabled is not False))
    if observed and not contextual:
        entry.kernel = observed.most_common(1)[0][0]
        entry.note = (f"eager ops run as one-node functions on which the same graph "
                      f"pass runs; {op_type} ({_dtype_words(dtype)}) ran {entry.kernel} in "
                      f"this run's graphs")
    else:
        entry.kernel, entry.note = inferred_kernel(model, op_type, "eager", dtype, cpu_seen)
        if not dtype:
            entry.note = "non-float output (not instrumented by this dump mode); " + entry.note
    return entry


def _dtype_words(dtype: str) -> str:
    return {DTYPE_UNKNOWN: "dtype not recorded", DTYPE_SOME_FLOAT: "a float type",
            "": "non-float"}.get(dtype, dtype)


def _eager_from_log(op_type: str, dtype: str, n: int,
                    candidates: _LogKernels) -> list[EagerAssignment]:
    """Eager executions of one (op type, dtype) labelled from the log's wrapper kernels.

    The health tensor's dtype is the output's; T= is the input's. They agree for
    the ops that matter here. Where the dump names no dtype (NO_TENSOR) or only
    "a float type", the log's own split of executions between kernels is kept."""
    same = _log_kernels_of_dtype(dtype, candidates)
    total = sum(c for _k, c in same)
    out = []
    left = n
    for i, ((kernel, _t, dispatch), c) in enumerate(sorted(same, key=lambda kc: -kc[1])):
        share = left if i == len(same) - 1 else min(left, round(n * c / total))
        left -= share
        if share <= 0:
            continue
        out.append(EagerAssignment(op_type, dtype, share, kernel or dispatch, "log", dispatch,
                                   _log_kernel_note(op_type, kernel, dispatch)))
    return out


def _log_kernels_of_dtype(dtype: str, candidates: _LogKernels,
                          ) -> list[tuple[tuple[str, str, str], int]]:
    """The log's kernels that stand for ``dtype``: every one where the dump names no
    dtype or only "a float type", else the one that ran most often."""
    same = [(k, c) for k, c in candidates.items() if _stands_for(dtype, k[1])]
    same = same or list(candidates.items())
    if dtype not in (DTYPE_UNKNOWN, DTYPE_SOME_FLOAT):
        same = [max(same, key=lambda kc: kc[1])]
    return same


def _stands_for(dtype: str, log_dtype: str) -> bool:
    """Whether a log line's T= dtype can be the dump's dtype of the op's output."""
    if dtype == DTYPE_UNKNOWN:
        return True
    if dtype == DTYPE_SOME_FLOAT:
        return log_dtype in FLOAT_DTYPES
    return log_dtype == dtype if dtype else log_dtype not in FLOAT_DTYPES


# The log's kernel for runs of a wrapper that instantiated several (``read.textlog``).
AMBIGUOUS_WRAPPER_NOTE = (
    "its one-node function was instantiated with several kernels in this run (one per dtype "
    "or attribute), and the log has no function-runtime lines to tell which of them each "
    "later run used (TF_CPP_VMODULE=process_function_library_runtime=1 adds them); a dump "
    "whose mode records dtypes (not NO_TENSOR) decides it")


def _log_kernel_note(op_type: str, kernel: str, dispatch: str) -> str:
    if kernel == UNKNOWN:
        return AMBIGUOUS_WRAPPER_NOTE
    if not kernel:
        return ("only the dispatch line ('Executing op') was seen; it hides the "
                "graph rewrite of the eager op's one-node function")
    if dispatch != kernel and canonical_op(dispatch) == op_type and dispatch == op_type:
        return (f"dispatched as {dispatch} ('Executing op'), but its one-node "
                f"function __wrapped__{dispatch} was instantiated with {kernel}")
    if dispatch != op_type:
        return f"renamed to {dispatch} before dispatch by TF's eager oneDNN rewrite"
    return ""
