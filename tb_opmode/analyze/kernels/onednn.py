"""Whether oneDNN was on and what the run's CPU had, and the kernel the rules then give.

In: a ``RunModel``: its logs (the oneDNN start-up banner, the CPU's instruction sets,
the kernels that ran), profiles and dumps (dtypes), and the graph ops other evidence
resolved. Out: the CPU's features a kernel showed (``cpu_from_kernels``), and for an op
no evidence observed the kernel of ``rules`` for the dump's TF version with a note saying
what it assumed (``inferred_kernel``): ``(unknown)`` where it hangs on a oneDNN state
nothing the run left decides (``onednn_state``, whose ``detect_onednn`` and ``run_cpu``
are re-exported here).
"""
from __future__ import annotations

from typing import Optional

from ...model import OpKernel, RunModel
from ...read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN
from ...vocab import UNKNOWN
from ..rules import cpu_dependence, expected_kernel
from .onednn_state import FIND_OUT, detect_onednn, known_cpu, run_cpu

__all__ = ["FLOAT_DTYPES", "FLOAT_MATH", "RERUN", "detect_onednn", "run_cpu",
           "cpu_from_kernels", "inferred_kernel"]

FLOAT_DTYPES = frozenset(("DT_FLOAT", "DT_DOUBLE", "DT_BFLOAT16", "DT_HALF"))

# Contractions, convolutions, pooling, softmax and batch norm: in a model they run in
# a float type, so an unrecorded dtype is taken as float32 (said in the note).
FLOAT_MATH = frozenset((
    "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "Conv2D",
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3D", "Conv3DBackpropInputV2",
    "Conv3DBackpropFilterV2", "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter", "AvgPool", "AvgPoolGrad", "AvgPool3D", "MaxPool",
    "MaxPoolGrad", "MaxPool3D", "Softmax", "FusedBatchNorm", "FusedBatchNormV2",
    "FusedBatchNormV3", "FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"))

# How to make a run that tells what a dump alone cannot.
RERUN = ("to know, keep TF's log (TF_CPP_MAX_VLOG_LEVEL=2, stderr) with the run, or dump "
         "with tensor_debug_mode='FULL_HEALTH'")

# The oneDNN state nothing the run left says: a kernel that hangs on it is not given.
_STATE_UNKNOWN = ("unknown: in TF {version} {op_type} ({dtype}) runs {on} with oneDNN's custom "
                  "operations on and {off} with them off, and nothing this run left says which "
                  "(TF turns them on by default only on CPUs with AVX512_VNNI, AVX512_BF16, "
                  "AVX_VNNI or AMX); " + FIND_OUT)


def cpu_from_kernels(model: RunModel, graph_ops: list[OpKernel]) -> dict[str, tuple[bool, str]]:
    """CPU feature -> (whether the run's CPU had it, how we know), from graph nodes a
    profile or log saw run a kernel that hangs on that feature (a float16 MatMul runs
    _MklMatMul only with AVX512_FP16). With oneDNN off or not known to be on, a stock
    kernel says nothing about the CPU, but the stock answer it implies is the same."""
    out: dict[str, tuple[bool, str]] = {}
    if model.onednn_enabled is False:
        return out
    for op in graph_ops:
        if op.evidence not in ("log", "profile") or op.fused_into or op.dtype not in FLOAT_DTYPES:
            continue
        needs = cpu_dependence(op.op_type, "graph", model.tensorflow_version, op.dtype, True)
        if needs is not None and needs.cpu:
            _note_cpu_feature(out, op, needs.cpu, needs.kernel)
    return out


def _note_cpu_feature(out: dict[str, tuple[bool, str]], op: OpKernel, cpu: str, kernel: str) -> None:
    """Record what the op's kernel shows of ``cpu``, which it runs ``kernel`` with; a
    kernel that needs the feature outranks a stock one that says it was missing."""
    source = "TF log" if op.evidence == "log" else "profile"
    if op.kernel == kernel:
        out[cpu] = (True, f"its graph {op.op_type} ({op.dtype}) ran {op.kernel} ({source})")
    elif op.kernel == op.op_type and cpu not in out:
        out[cpu] = (False, f"its graph {op.op_type} ({op.dtype}) ran the stock {op.kernel} ({source})")


def inferred_kernel(model: RunModel, op_type: str, mode: str, dtype: str,
                    cpu_seen: dict[str, tuple[bool, str]] | None = None) -> tuple[str, str]:
    """(kernel, note) from the rule table for an op no evidence observed.

    ``dtype`` is a ``DT_*`` name, "" (a non-float output), ``DTYPE_SOME_FLOAT``
    (CURT/CONCISE_HEALTH: some float type) or ``DTYPE_UNKNOWN`` (NO_TENSOR). Where
    the answer hangs on what was not recorded (the dtype, the CPU), the kernel is
    ``UNKNOWN`` and the note says what it depends on. ``cpu_seen`` (from
    :func:`cpu_from_kernels`) answers a CPU question no log line did."""
    version = model.tensorflow_version
    onednn = model.onednn_enabled is not False
    cpu = known_cpu(model)
    if dtype == DTYPE_UNKNOWN and op_type not in FLOAT_MATH:
        options = {t: expected_kernel(op_type, mode, version, t, onednn, cpu)[0]
                   for t in ("DT_FLOAT", "DT_INT32")}
        if options["DT_FLOAT"] != options["DT_INT32"]:
            state = ("" if model.onednn_enabled is not None else
                     " with oneDNN's custom operations on, and nothing this run left says they were")
            return UNKNOWN, (f"unknown: {_no_dtype(model)}, and {op_type} runs "
                             f"{options['DT_FLOAT']} for float32 but {options['DT_INT32']} "
                             f"for int32{state}; {RERUN}")
    if model.onednn_enabled is None:
        hinge = _hinges_on_onednn(model, op_type, mode, dtype)
        if hinge is not None:
            return hinge
    dtype, assumed = _dtype_read_as(model, op_type, dtype)
    kernel, rule = expected_kernel(op_type, mode, version, dtype, onednn, cpu)
    if cpu is None:
        answer = _by_cpu_feature(model, op_type, mode, dtype, kernel, rule, cpu_seen or {})
        if answer is not None:
            return answer
    return kernel, _rule_note(model, rule) + assumed


def _hinges_on_onednn(model: RunModel, op_type: str, mode: str, dtype: str,
                      ) -> Optional[tuple[str, str]]:
    """(UNKNOWN, why) where the rules give another kernel with oneDNN on than off and
    nothing the run left says which it was; None where both give the same."""
    version = model.tensorflow_version
    cpu = known_cpu(model)
    read_as = ("DT_FLOAT", "DT_INT32") if dtype == DTYPE_UNKNOWN and op_type not in FLOAT_MATH \
        else (_dtype_read_as(model, op_type, dtype)[0],)
    for t in read_as:
        on = expected_kernel(op_type, mode, version, t, True, cpu)[0]
        off = expected_kernel(op_type, mode, version, t, False, cpu)[0]
        if on != off:
            return UNKNOWN, _STATE_UNKNOWN.format(version=version or "(unknown version)",
                                                  op_type=op_type, dtype=t, on=on, off=off)
    return None


def _no_dtype(model: RunModel) -> str:
    """Why an op's dtype is not known: a NO_TENSOR dump, or no dump at all (a profile
    and a log name no dtype of an eager op's output)."""
    return "the dump (NO_TENSOR) records no dtype" if model.dumps else \
        "nothing this run left records its dtype (no tfdbg dump)"


def _dtype_read_as(model: RunModel, op_type: str, dtype: str) -> tuple[str, str]:
    """(the dtype the rules are asked with, what the note says it assumed)."""
    if dtype == DTYPE_UNKNOWN and op_type in FLOAT_MATH:
        return "DT_FLOAT", (f"; assuming float32: {_no_dtype(model)}, and this op runs in a "
                            "float type in models")
    if dtype == DTYPE_UNKNOWN:
        return "DT_FLOAT", f"; {_no_dtype(model)}, and the kernel is the same for any"
    if dtype == DTYPE_SOME_FLOAT:
        return "DT_FLOAT", ("; assuming float32: this dump mode (CURT/CONCISE_HEALTH) records that "
                            "the output is a float type, not which")
    return dtype, ""


def _by_cpu_feature(model: RunModel, op_type: str, mode: str, dtype: str, kernel: str,
                    rule: object | None, cpu_seen: dict[str, tuple[bool, str]],
                    ) -> Optional[tuple[str, str]]:
    """(kernel, note) where the rules' answer hangs on a CPU feature no log line named:
    from a graph node that showed it, else unknown; None where no feature matters."""
    version = model.tensorflow_version
    needs = cpu_dependence(op_type, mode, version, dtype, model.onednn_enabled is not False)
    if needs is None:
        return None
    seen = cpu_seen.get(needs.cpu)
    if seen is None:
        return UNKNOWN, (f"unknown: in TF {version or '(unknown version)'} {op_type} ({dtype}) "
                         f"runs {needs.kernel} on a CPU with {needs.cpu} and {kernel} "
                         f"without, and nothing the run left names its CPU; keep TF's "
                         f"log (its start-up line lists the CPU's instruction sets)")
    has, how = seen
    if has:
        return needs.kernel, (f"by the rule for a CPU with {needs.cpu} ({needs.source}): "
                              f"the run's CPU has it, as {how}")
    return kernel, (f"{_rule_note(model, rule)}; {op_type} ({dtype}) runs {needs.kernel} "
                    f"only on a CPU with {needs.cpu}, which this run's had not, as {how}")


def _rule_note(model: RunModel, rule: object | None) -> str:
    """The note of a kernel the rules gave: which rule, or that none applies."""
    version = f"TF {model.tensorflow_version}" if model.tensorflow_version else \
        "TF (version unknown: the newest rules)"
    if rule is None:
        return f"no oneDNN rewrite rule applies to it in {version}: stock kernel"
    source = getattr(rule, "source", "")
    mechanism = getattr(rule, "mechanism", "")
    return f"by the {mechanism} rule for {version} ({source})"
