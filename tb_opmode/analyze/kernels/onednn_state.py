"""Whether TF's oneDNN custom operations were on in a run, how we know, and why they were off.

In: a ``RunModel``: its logs (the start-up banner, the CPU line, the kernels that ran), its
profiles' kernels, its dumps' dtypes, and what ``tb-opmode record`` wrote of its
environment and CPU (``model.recorded``). Out: ``detect_onednn``, the state (None where
nothing the run left decides it, and for a recorded job that never ran TensorFlow: its
CPU says nothing of a oneDNN that never loaded) and how we know, which for "off" says the cause: the
``TF_ENABLE_ONEDNN_OPTS=0`` the run was seen to set, TF's default for a CPU known not to
qualify, or "unknown: either"; ``run_cpu``, the instruction sets the log's CPU line names,
and ``known_cpu``, those or else the ones the run recorded.

Decisions as data: ``STATE_RULES``, asked in order; the first that answers decides.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, NamedTuple, Optional

from ...model import RunModel
from ...read.tfdbg import DTYPE_SOME_FLOAT, DTYPE_UNKNOWN
from ...vocab import is_onednn
from ..rules import expected_kernel
from ..tally import tally

__all__ = ["DEFAULT_ON_ISAS", "FIND_OUT", "StateRule", "STATE_RULES", "detect_onednn", "known_cpu", "run_cpu",
           "off_cause"]

# TF turns its oneDNN custom operations on by default on x86-64 Linux only where the CPU
# has one of these (port.cc); elsewhere they are off unless TF_ENABLE_ONEDNN_OPTS=1.
DEFAULT_ON_ISAS = frozenset(("AVX512_VNNI", "AVX512_BF16", "AVX_VNNI", "AMX_TILE", "AMX_INT8",
                             "AMX_BF16"))
_QUALIFY = "AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX"
_ENV = "TF_ENABLE_ONEDNN_OPTS"
# How a user finds out what nothing the run left says.
FIND_OUT = ("to know, profile one step (its kernels are _Mkl* with oneDNN on), keep the log's "
            "first lines (TF prints 'oneDNN custom operations are on' and the CPU's instruction "
            "sets at start-up), or record the run with `tb-opmode record`")

State = tuple[Optional[bool], str]


def run_cpu(model: RunModel) -> frozenset[str] | None:
    """The instruction sets the run's CPU had, from TF's start-up line in its log;
    None where no log says."""
    found = [log.cpu_features for log in model.logs if log.cpu_features is not None]
    return frozenset().union(*found) if found else None


def known_cpu(model: RunModel) -> frozenset[str] | None:
    """The instruction sets the run's CPU had, from the log's CPU line or else the CPU the
    run recorded (``tb-opmode record``'s manifest); None where neither says."""
    return _known_cpu(model)[0]


def _known_cpu(model: RunModel) -> tuple[frozenset[str] | None, str]:
    """(the CPU's instruction sets, where they were read) from the log or the manifest."""
    cpu = run_cpu(model)
    if cpu is not None:
        return cpu, "the log's CPU line"
    recorded = model.recorded
    if recorded is not None and recorded.cpu_features is not None:
        return recorded.cpu_features, "the CPU the run recorded"
    return None, ""


def _recorded_setting(model: RunModel) -> Optional[bool]:
    """TF_ENABLE_ONEDNN_OPTS as the run recorded it: True/False, None where unset or unknown."""
    value = (model.recorded.environment.get(_ENV) if model.recorded is not None else None)
    if value is None:
        return None
    return value.strip().lower() not in ("0", "false", "off", "no")


def off_cause(model: RunModel) -> str:
    """Why oneDNN's custom operations were off, only as far as the run shows it."""
    if _recorded_setting(model) is False:
        return f"{_ENV}=0 in the environment the run recorded"
    cpu, where = _known_cpu(model)
    if cpu is None:
        return (f"unknown: either {_ENV}=0 or TF's default on a CPU without {_QUALIFY}; "
                f"nothing the run left names its CPU or environment")
    has = sorted(cpu & DEFAULT_ON_ISAS)
    if not has:
        return (f"TF's default for this CPU: {where} names none of {_QUALIFY}, where TF turns "
                f"them on by default; {_ENV}=1 turns them on here)")
    return (f"unknown: either {_ENV}=0 or a TensorFlow build without oneDNN; {where} names "
            f"{', '.join(has)}, where TF turns them on by default")


def _banner(model: RunModel) -> Optional[State]:
    for log in model.logs:
        if log.onednn_opts is not None:
            return log.onednn_opts, "start-up banner in the log"
    return None


def _recorded_environment(model: RunModel) -> Optional[State]:
    setting = _recorded_setting(model)
    if setting is None:
        return None
    return (setting, f"{_ENV}={'1' if setting else '0'} in the environment the run recorded")


def _onednn_kernels_ran(model: RunModel) -> Optional[State]:
    kernels, profiled = _kernels_that_ran(model)
    if any(is_onednn(k) for k, _t in kernels) or any(is_onednn(k) for k in profiled):
        return True, "oneDNN kernels (_Mkl*) ran"
    return None


def _stock_kernels_ran(model: RunModel) -> Optional[State]:
    kernels, profiled = _kernels_that_ran(model)
    stock = _stock_where_onednn_runs_mkl(model, kernels, profiled)
    if not stock:
        return None
    return False, (f"stock {', '.join(stock[:3])} ran where oneDNN would run its _Mkl kernel "
                   f"(and no _Mkl kernel ran at all); cause: {off_cause(model)}")


def _log_without_banner(model: RunModel) -> Optional[State]:
    """A log with TF's CPU line but no banner: TF printed its start-up lines, and the
    banner is not among them, so the custom operations were off."""
    if run_cpu(model) is None or any(log.onednn_opts is not None for log in model.logs):
        return None
    return False, (f"the log's start-up lines have the CPU line but no 'oneDNN custom "
                   f"operations are on'; cause: {off_cause(model)}")


def _no_tensorflow(model: RunModel) -> Optional[State]:
    """A recorded job that left no TensorFlow evidence: no state to tell, whatever its CPU."""
    recorded = model.recorded
    if recorded is None or recorded.tensorflow_version or model.dumps or model.profiles or model.logs:
        return None
    return None, "the recorded job wrote no TensorFlow evidence"


def _recorded_cpu_default(model: RunModel) -> Optional[State]:
    """A recorded run that did not set the variable: TF's default for its CPU."""
    recorded = model.recorded
    if recorded is None or recorded.cpu_features is None or _ENV in recorded.environment:
        return None
    has = sorted(recorded.cpu_features & DEFAULT_ON_ISAS)
    if has:
        return True, (f"TF's default for this CPU: the CPU the run recorded has "
                      f"{', '.join(has)}, and {_ENV} was not set")
    return False, (f"TF's default for this CPU: the CPU the run recorded has none of {_QUALIFY}, "
                   f"and {_ENV} was not set")


class StateRule(NamedTuple):
    """One way of telling the oneDNN state: its name and what it asks."""

    name: str
    decide: Callable[[RunModel], Optional[State]]


STATE_RULES: tuple[StateRule, ...] = (
    StateRule("no_tensorflow", _no_tensorflow),
    StateRule("banner", _banner),
    StateRule("recorded_environment", _recorded_environment),
    StateRule("onednn_kernels_ran", _onednn_kernels_ran),
    StateRule("stock_kernels_ran", _stock_kernels_ran),
    StateRule("log_without_banner", _log_without_banner),
    StateRule("recorded_cpu_default", _recorded_cpu_default),
)


def detect_onednn(model: RunModel) -> State:
    """Whether TF_ENABLE_ONEDNN_OPTS was on in this run, and how we know (None, "":
    nothing the run left says)."""
    for rule in STATE_RULES:
        found = rule.decide(model)
        if found is not None:
            return found
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
