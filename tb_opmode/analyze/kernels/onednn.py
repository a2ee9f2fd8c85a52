"""Whether oneDNN was on and what the run's CPU had, and the kernel the rules then give.

In: a ``RunModel``: its logs (the oneDNN start-up banner, the CPU's instruction sets,
the kernels that ran), profiles and dumps (dtypes), and the graph ops other evidence
resolved. Out: oneDNN's state and how we know it (``detect_onednn``), the CPU's
features (``run_cpu``, ``cpu_from_kernels``), and for an op no evidence observed the
kernel of ``rules`` for the dump's TF version with a note saying what it assumed
(``inferred_kernel``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Optional

from ...model import OpKernel, RunModel
from ...read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN
from ...vocab import UNKNOWN, is_onednn
from ..rules import cpu_dependence, expected_kernel
from ..tally import tally

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

# The oneDNN state a rule's note assumes when nothing the run left says it.
_ASSUMED_ON = "; assuming oneDNN is on, TF's default on x86-64 Linux CPUs with AVX-512 VNNI/BF16 or AMX"


def detect_onednn(model: RunModel) -> tuple[bool | None, str]:
    """Whether TF_ENABLE_ONEDNN_OPTS was on in this run, and how we know."""
    for log in model.logs:
        if log.onednn_opts is not None:
            return log.onednn_opts, "start-up banner in the log"
    kernels, profiled = _kernels_that_ran(model)
    if any(is_onednn(k) for k, _t in kernels) or any(is_onednn(k) for k in profiled):
        return True, "oneDNN kernels (_Mkl*) ran"
    stock = _stock_where_onednn_runs_mkl(model, kernels, profiled)
    if stock:
        return False, (f"stock {', '.join(stock[:3])} ran where oneDNN would run its _Mkl kernel "
                       "(and no _Mkl kernel ran at all)")
    return None, ""


def _kernels_that_ran(model: RunModel) -> tuple[set[tuple[str, str]], set[str]]:
    """(the logs' (kernel, dtype) pairs, the profiles' kernels), each distinct: a profile
    has millions of events but few kernels, and the rule table is asked once per pair."""
    kernels: set[tuple[str, str]] = set()
    for log in model.logs:
        kernels.update(log.graph_kernels.values())
        kernels.update((ek.kernel, ek.dtype) for ek in log.eager_kernels if ek.kernel)
    profiled: set[str] = set()
    for prof in model.profiles:
        profiled.update(tally(prof).kernels)
    return kernels, profiled


def _stock_where_onednn_runs_mkl(model: RunModel, kernels: set[tuple[str, str]],
                                 profiled: set[str]) -> list[str]:
    """The stock float kernels that ran where oneDNN would have run an _Mkl one, sorted."""
    # A profile's events carry no dtype: a stock kernel says "oneDNN off" only if every
    # op of its type in the dump has a dtype oneDNN would take (a float16 MatMul runs
    # stock on most CPUs with oneDNN on); without a dump, float32 is assumed.
    dump_dtypes = _dump_dtypes_by_type(model, profiled) if model.dumps else {}
    kernels = kernels | {(k, "DT_FLOAT") for k in profiled
                         if dump_dtypes.get(k, {"DT_FLOAT"}) == {"DT_FLOAT"}}
    return sorted({k for k, t in kernels if t in ("DT_FLOAT", "")
                   and expected_kernel(k, "graph", model.tensorflow_version, "DT_FLOAT", True)[0] != k})


def _dump_dtypes_by_type(model: RunModel, op_types: set[str]) -> dict[str, set[str]]:
    """Op type -> the dtypes its graph ops' traced outputs have in the dumps (the
    "some float"/"not recorded" markers read as float32, as the rules read them)."""
    out: dict[str, set[str]] = defaultdict(set)
    for dump in model.dumps:
        for (graph_id, op_name, _slot), dtype in dump.trace_dtypes.items():
            graph = dump.graphs.get(graph_id)
            created = graph.ops.get(op_name) if graph is not None else None
            if created is not None and created.op_type in op_types:
                out[created.op_type].add(
                    "DT_FLOAT" if dtype in (DTYPE_SOME_FLOAT, DTYPE_UNKNOWN) else dtype or "non-float")
    return out


def run_cpu(model: RunModel) -> frozenset[str] | None:
    """The instruction sets the run's CPU had, from TF's start-up line in its log;
    None where no log says."""
    found = [log.cpu_features for log in model.logs if log.cpu_features is not None]
    return frozenset().union(*found) if found else None


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
    cpu = run_cpu(model)
    if dtype == DTYPE_UNKNOWN and op_type not in FLOAT_MATH:
        options = {t: expected_kernel(op_type, mode, version, t, onednn, cpu)[0]
                   for t in ("DT_FLOAT", "DT_INT32")}
        if options["DT_FLOAT"] != options["DT_INT32"]:
            return UNKNOWN, (f"unknown: this dump (NO_TENSOR) records no dtype, and {op_type} runs "
                             f"{options['DT_FLOAT']} for float32 but {options['DT_INT32']} "
                             f"for int32; {RERUN}")
    dtype, assumed = _dtype_read_as(op_type, dtype)
    kernel, rule = expected_kernel(op_type, mode, version, dtype, onednn, cpu)
    if cpu is None:
        answer = _by_cpu_feature(model, op_type, mode, dtype, kernel, rule, cpu_seen or {})
        if answer is not None:
            return answer
    return kernel, _rule_note(model, rule) + assumed


def _dtype_read_as(op_type: str, dtype: str) -> tuple[str, str]:
    """(the dtype the rules are asked with, what the note says it assumed)."""
    if dtype == DTYPE_UNKNOWN and op_type in FLOAT_MATH:
        return "DT_FLOAT", ("; assuming float32: the dump (NO_TENSOR) records no dtype, and this "
                            "op runs in a float type in models")
    if dtype == DTYPE_UNKNOWN:
        return "DT_FLOAT", "; the dump (NO_TENSOR) records no dtype, and the kernel is the same for any"
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
    version = model.tensorflow_version or "unknown TF version"
    assumed = "" if model.onednn_enabled is not None else _ASSUMED_ON
    if rule is None:
        return f"no oneDNN rewrite rule applies to it in TF {version}: stock kernel{assumed}"
    source = getattr(rule, "source", "")
    mechanism = getattr(rule, "mechanism", "")
    return f"by the {mechanism} rule for TF {version} ({source}){assumed}"
