"""The truth checker: which kernel TensorFlow really ran for every execution of a dump.

In: a run's tfdbg2 dump (read with TensorFlow's own ``DebugDataReader``) and
TF's text log of the same process (``TF_CPP_MAX_VLOG_LEVEL=2`` or
``TF_CPP_VMODULE=execute=1,executor=1,op_kernel=1,process_function_library_runtime=1``),
kept outside the logdir. Out: ``Truth``, per (op type, mode) a Counter of the
kernel each execution ran, and ``score()``, how many executions of a
``tb-opmode summary --format json`` run carry that kernel.

This module shares no code with the product (``tb_opmode``): it parses the log
with its own regular expressions and reads the dump with TensorFlow, so a
mistake in the product's readers cannot hide here.

What counts as the truth:

- graph: one execution per ``graph_execution_trace`` of the lowest traced output
  slot of an op, as ``DebugDataReader`` gives them. In the log, every such trace
  is a ``Process node`` line of tfdbg's ``DebugIdentityV2`` node at a real step
  (not ``step -1``, grappler's constant folding at instantiation; not ``is
  dead``, an untaken branch). At the same step, the op's own node is
  ``<prefix><op name>`` for a prefix of the identity node's name (inlined calls,
  lowered ``cond``/``while`` bodies). If it ran, its kernel is the truth. If not,
  the tensor the debug op reads says what happened: a ``Const`` (folded), a
  fused kernel (fused into that node), a node grappler derived from the op
  (``<op>/...``: that node's kernel), else nothing ran for it: ``(optimized away)``.
- eager: one execution per non-function ``execution`` record. The dump's sequence
  of eager op types is aligned with the log's ``Executing op`` lines; the kernel
  is the one the op's one-node function ``__wrapped__<op>`` was instantiated with
  (``Instantiating kernel`` inside ``Running component function ... with handle H``;
  later runs of handle H reuse it), else the dispatched name.
"""
from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Truth", "truth_of", "score", "parse_log", "REMOVED", "CONST", "UNKNOWN", "NOT_RUN"]

REMOVED = "(optimized away)"
CONST = "Const"
UNKNOWN = "(unknown)"
# No node of the op's own ran, and the dump mode (NO_TENSOR: the debug op reads a
# constant, not the op's tensor) does not tell whether grappler removed or folded it.
NOT_RUN = "(no kernel: removed or folded)"
_EQUIVALENT = {NOT_RUN: (REMOVED, CONST)}

_LINE = re.compile(
    r"^(?:[IWEF]\d{4} [\d:.]+\s+(?P<tid>\d+) |\d{4}-\d\d-\d\d [\d:.]+: [IWEF] )"
    r"(?:\S*/)?(?P<file>[\w.]+\.cc):\d+\] (?P<msg>.*)$")
_EXEC = re.compile(r"^Executing op (\S+) in device ")
_RUN = re.compile(r"^Running component function on device \S+ from (\S+) with handle (\d+)")
_DONE = "Component function execution succeeded"
_INST = re.compile(r"^Instantiating kernel for node: \{\{node (.+?)\}\} = ([\w]+)[\[(]")
_PROC = re.compile(r"^Process node: \d+ step (-?\d+) \{\{node (.+?)\}\} = ([\w]+)[\[(]")
_ATTR_OP = re.compile(r'[\[ ]op_name="([^"]*)"')
_ATTR_CTX = re.compile(r'[\[ ]tfdbg_context_id="([^"]*)"')
_ATTR_SLOT = re.compile(r"[\[ ]output_slot=(\d+)")
_ATTR_MODE = re.compile(r"[\[ ]tensor_debug_mode=(\d+)")
_PLUMBING = {"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "NoOp"}
# Op types grappler's remapper absorbs into a fused node (remapper.cc's patterns): only
# these can have run inside a consumer's or sibling's fused kernel.
_FUSABLE = {"MatMul", "BatchMatMulV2", "Conv2D", "Conv3D", "DepthwiseConv2dNative", "BiasAdd",
            "BiasAddGrad", "Conv2DBackpropFilter", "FusedBatchNorm", "FusedBatchNormV3", "Relu",
            "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "AddV2", "Add", "Mul", "Pad", "Gelu",
            "Erf", "Softplus", "Mish"}


def _canonical(kernel: str) -> str:
    for prefix in ("_MklNative", "_Mkl"):
        if kernel.startswith(prefix):
            return kernel[len(prefix):]
    return kernel


def _fused(kernel: str) -> bool:
    base = _canonical(kernel)
    return ("Fused" in base and not base.startswith("FusedBatchNorm")) or "WithBias" in base \
        or base.startswith(("PadWith", "FusedBatchNormEx")) or base in ("Swish", "FusedMish")


def _first_input(msg: str) -> str:
    """The first data input of a logged NodeDef: ``...](a:0, ^b) device: ...``."""
    end = msg.rfind(") device: ")
    if end < 0:
        return ""
    start = msg.rfind("](", 0, end)
    if start < 0:
        return ""
    for item in msg[start + 2:end].split(","):
        item = item.strip()
        if item and not item.startswith("^"):
            name, _, slot = item.rpartition(":")
            return name if name and slot.isdigit() else item
    return ""


@dataclass
class _Node:
    kernel: str
    first_input: str


@dataclass
class _Ident:
    step: str
    node: str
    ctx: str
    op: str
    slot: int
    first_input: str
    mode: int


@dataclass
class LogRuns:
    """What the log says ran: graph nodes per real step, debug identities, eager ops."""

    steps: dict[str, dict[str, _Node]] = field(default_factory=lambda: defaultdict(dict))
    idents: list[_Ident] = field(default_factory=list)
    eager: list[tuple[str, str]] = field(default_factory=list)  # (dispatch, kernel)
    # kernel -> Process node lines at real steps (a while loop runs a node many times a step)
    graph_kernels: Counter = field(default_factory=Counter)


def parse_log(paths: Iterable[Path]) -> LogRuns:
    out = LogRuns()
    # per thread: [dispatch, handle, kernel, depth]
    current: dict[str | None, list[Any]] = {}
    handle_kernel: dict[tuple[str, str], str] = {}
    pending: list[list[Any]] = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = _LINE.match(line.rstrip("\n"))
                if m is None:
                    continue
                tid, src, msg = m.group("tid"), m.group("file"), m.group("msg")
                if src == "execute.cc":
                    e = _EXEC.match(msg)
                    if e is not None:
                        rec = [e.group(1), None, "", 0]
                        current[tid] = rec
                        if not e.group(1).startswith("__inference_"):
                            pending.append(rec)
                elif src == "process_function_library_runtime.cc":
                    rec = current.get(tid)
                    if rec is None:
                        continue
                    r = _RUN.match(msg)
                    if r is not None:
                        rec[3] += 1
                        if rec[1] is None and r.group(1).startswith("__wrapped__"):
                            rec[1] = (r.group(1), r.group(2))
                    elif msg.startswith(_DONE):
                        rec[3] -= 1
                        if rec[3] <= 0:
                            current.pop(tid, None)
                elif src == "op_kernel.cc":
                    i = _INST.match(msg)
                    rec = current.get(tid)
                    if (i is not None and rec is not None and rec[1] is not None and not rec[2]
                            and rec[3] > 0 and i.group(2) not in _PLUMBING
                            and i.group(1) == rec[0]):
                        rec[2] = i.group(2)
                        handle_kernel[rec[1]] = i.group(2)
                elif src == "executor.cc":
                    p = _PROC.match(msg)
                    if p is None:
                        continue
                    step, node, kernel = p.groups()
                    if step == "-1" or " is dead device: " in msg:
                        continue
                    out.steps[step][node] = _Node(kernel, _first_input(msg))
                    out.graph_kernels[kernel] += 1
                    if kernel == "DebugIdentityV2":
                        op = _ATTR_OP.search(msg)
                        ctx = _ATTR_CTX.search(msg)
                        slot = _ATTR_SLOT.search(msg)
                        mode = _ATTR_MODE.search(msg)
                        out.idents.append(_Ident(step, node, ctx.group(1) if ctx else "",
                                                 op.group(1) if op else "",
                                                 int(slot.group(1)) if slot else 0,
                                                 _first_input(msg),
                                                 int(mode.group(1)) if mode else 0))
    for dispatch, handle, kernel, _depth in pending:
        if not kernel and handle is not None:
            kernel = handle_kernel.get(handle, "")
        out.eager.append((dispatch, kernel or dispatch))
    return out


def _resolve_op(ident: _Ident, names: Iterable[str]) -> str | None:
    """The dump op an identity node traces. TF's log shortens attribute strings over
    about 80 characters to ``head...tail``; the identity's own name is never shortened
    and holds the op's name (``<prefix><op>/DebugIdentityV2_N``) or its scope."""
    pattern = ident.op
    if "..." not in pattern:
        return pattern
    head, _, tail = pattern.partition("...")
    hits = [n for n in names if n.startswith(head) and n.endswith(tail)]
    if len(hits) > 1:
        scope = ident.node.rpartition("/")[0]
        hits = [n for n in hits if scope == n or scope.endswith("/" + n)]
    return hits[0] if len(hits) == 1 else None


def _graph_label(ident: _Ident, op_name: str, nodes: dict[str, _Node],
                 consumers: dict[str, list[str]], graph: Any) -> str:
    cuts = [0] + [i + 1 for i, c in enumerate(ident.node) if c == "/"]
    prefixes = [ident.node[:cut] for cut in sorted(cuts, reverse=True)]
    # "<prefix><op name>/DebugIdentityV2_N" first: op "y" of "y/DebugIdentityV2_3" is the
    # node "y", not the node "y/y" (its constant, named in y's scope).
    exact = [p for p in prefixes if ident.node.startswith(p + op_name + "/")]
    for prefix in exact + [p for p in prefixes if p not in exact]:
        own = nodes.get(prefix + op_name)
        if own is not None:
            return own.kernel
    if ident.mode == 1:
        # NO_TENSOR: the debug op reads a constant, so only names tell. A node that
        # absorbed this op is a fused kernel named after a consumer (a pattern's last op)
        # or, for BiasAddGrad, after the sibling reading the same gradient.
        op_type = graph.get_op_creation_digest(op_name).op_type
        if op_type not in _FUSABLE:
            return NOT_RUN
        if op_type == "BiasAddGrad":
            source = (graph.get_op_creation_digest(op_name).input_names or [""])[0]
            source = source.rpartition(":")[0] or source
            for sibling in consumers.get(source, []):
                for prefix in prefixes:
                    node = nodes.get(prefix + sibling)
                    if node is not None and "WithBias" in node.kernel:
                        return node.kernel
        frontier = [op_name]
        for _hop in range(3):
            frontier = [c for name in frontier for c in consumers.get(name, [])]
            for consumer in frontier:
                for prefix in prefixes:
                    node = nodes.get(prefix + consumer)
                    if node is not None and _fused(node.kernel):
                        return node.kernel
        return NOT_RUN
    producer = ident.first_input
    node = nodes.get(producer)
    if node is not None and node.kernel.startswith("Debug"):
        producer = node.first_input
    elif node is not None and node.kernel == "Const":
        return CONST  # the summary itself was folded: so was the op's value
    node = nodes.get(producer)
    if node is None:
        return REMOVED
    if node.kernel == "Const":
        return CONST
    if _fused(node.kernel):
        # An op absorbed into a fused node ran inside it; an op the remapper cannot
        # absorb (an identity, a Reshape that forwarded the fused node's bias gradient)
        # reading one was removed: it does nothing of the fused node's work.
        op_type = graph.get_op_creation_digest(op_name).op_type
        return node.kernel if op_type in _FUSABLE else REMOVED
    tail = "/" + op_name + "/"
    if tail in "/" + producer:
        return node.kernel  # grappler made a node of its own for the op's work
    if re.search(r"Optimizer/\w+_" + re.escape(op_name.rpartition("/")[2]) + "$", producer):
        return node.kernel  # a rewritten node: ArithmeticOptimizer/FoldTransposeIntoMatMul_MatMul
    return REMOVED


@dataclass
class Truth:
    """Per (op type, mode): Counter kernel -> executions; and what could not be told."""

    kernels: dict[tuple[str, str], Counter] = field(default_factory=lambda: defaultdict(Counter))
    untold: Counter = field(default_factory=Counter)  # mode -> executions with no truth

    def total(self, mode: str) -> int:
        return sum(sum(c.values()) for (_t, m), c in self.kernels.items() if m == mode)


def _consumers(graph: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for op in graph._op_by_name.values():  # DebugDataReader's DebuggedGraph
        for tensor in op.input_names or []:
            out[tensor.lstrip("^").rpartition(":")[0] or tensor].append(op.op_name)
    return out


def truth_of(dump_dir: Path, logs: Iterable[Path]) -> Truth:
    from tensorflow.python.debug.lib.debug_events_reader import DebugDataReader

    runs = parse_log(logs)
    truth = Truth()
    with DebugDataReader(str(dump_dir)) as reader:
        reader.update()
        # graph: lowest traced slot per op, traces in dump order
        traces: dict[tuple[str, str], dict[int, int]] = defaultdict(Counter)
        for t in reader.graph_execution_traces():
            traces[(t.graph_id, t.op_name)][t.output_slot] += 1
        names: dict[str, set[str]] = defaultdict(set)
        for (gid, name) in traces:
            names[gid].add(name)
        consumers: dict[str, dict[str, list[str]]] = {}
        logged: dict[tuple[str, str, int], list[str]] = defaultdict(list)
        for ident in runs.idents:
            op = _resolve_op(ident, names.get(ident.ctx, ()))
            if op is None:
                continue
            if ident.ctx not in consumers:
                consumers[ident.ctx] = _consumers(reader.graph_by_id(ident.ctx))
            logged[(ident.ctx, op, ident.slot)].append(
                _graph_label(ident, op, runs.steps[ident.step], consumers[ident.ctx],
                             reader.graph_by_id(ident.ctx)))
        for (gid, name), slots in traces.items():
            slot = min(slots)
            n = slots[slot]
            op_type = reader.graph_by_id(gid).get_op_creation_digest(name).op_type
            labels = logged.get((gid, name, slot), [])[-n:]  # a circular buffer keeps the tail
            truth.kernels[(op_type, "graph")].update(labels)
            truth.untold["graph"] += n - len(labels)
        # eager: align the dump's op types with the log's dispatches
        ours = [e.op_type for e in reader.executions(digest=False)
                if not e.op_type.startswith("__") and not e.graph_id]
        theirs = [(d, k) for d, k in runs.eager
                  if not d.startswith("__") and not d.startswith("Debug")]
        matcher = difflib.SequenceMatcher(None, ours, [_canonical(d) for d, _k in theirs],
                                          autojunk=False)
        pairs: list[tuple[int, int]] = []
        left: dict[str, list[int]] = defaultdict(list)
        free: dict[str, list[int]] = defaultdict(list)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag == "equal":
                pairs += zip(range(a1, a2), range(b1, b2))
                continue
            for a in range(a1, a2):
                left[ours[a]].append(a)
            for b in range(b1, b2):
                free[_canonical(theirs[b][0])].append(b)
        # The dump writes a record after its op ran, the log before: an op run inside
        # another's execution swaps places. Pair what is left by op type, in order.
        for op_type, rows in left.items():
            pairs += zip(rows, free.get(op_type, []))
        for a, b in pairs:
            truth.kernels[(ours[a], "eager")][theirs[b][1]] += 1
        told = len(pairs)
        truth.untold["eager"] += len(ours) - told
    truth.kernels = {k: v for k, v in truth.kernels.items() if v}
    return truth


def score(run: dict[str, Any], truth: Truth) -> dict[str, Any]:
    """How many executions of ``run`` (one run of the summary JSON) carry the true kernel,
    scored three ways: right, unknown, wrong.

    Per (op type, mode): right = sum over kernels of min(ours, truth); ``unknown``
    = executions we labelled unknown; the rest (``wrong_count``) are wrong: a kernel
    said with confidence that TF's log contradicts. ``wrong`` lists the op types
    that are not all right; ``share``, ``unknown_share`` and ``wrong_share`` sum to 1."""
    ours: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row in run["op_types"]:
        for mode in ("eager", "graph"):
            for k in row[mode]["kernels"]:
                ours[(row["op_type"], mode)][k["name"]] += k["executions"]
    out: dict[str, Any] = {}
    for mode in ("eager", "graph"):
        total = right = unknown = 0
        wrong = []
        for (op_type, m), want in sorted(truth.kernels.items()):
            if m != mode:
                continue
            have = ours.get((op_type, mode), Counter())
            have = Counter(have)
            ok = 0
            for k, n in sorted(want.items(), key=lambda kv: kv[0] in _EQUIVALENT):
                for name in (k, *_EQUIVALENT.get(k, ())):
                    took = min(n, have[name])
                    have[name] -= took
                    n -= took
                    ok += took
            total += sum(want.values())
            right += ok
            unknown += min(have[UNKNOWN], sum(want.values()) - ok)
            if ok < sum(want.values()):
                wrong.append({"op_type": op_type, "truth": dict(want),
                              "ours": dict(ours.get((op_type, mode), {}))})
        out[mode] = {"total": total, "right": right, "unknown": unknown,
                     "wrong_count": total - right - unknown, "wrong": wrong,
                     "untold": truth.untold[mode]}
    total = out["eager"]["total"] + out["graph"]["total"]
    right = out["eager"]["right"] + out["graph"]["right"]
    unknown = out["eager"]["unknown"] + out["graph"]["unknown"]
    out["share"] = right / total if total else 1.0
    out["unknown_share"] = unknown / total if total else 0.0
    out["wrong_share"] = (total - right - unknown) / total if total else 0.0
    return out
