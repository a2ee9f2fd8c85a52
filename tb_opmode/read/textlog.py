"""Facts about op execution from a TensorFlow text log (stderr of a run).

In: a text file (or lines of bytes) captured from a TF run with
``TF_CPP_MAX_VLOG_LEVEL=2`` (or ``TF_CPP_VMODULE=execute=1,executor=1,op_kernel=1,
process_function_library_runtime=1``) and/or ``ONEDNN_VERBOSE=1``. Out: a
``LogFacts``: which ops were dispatched eagerly and which kernel the eager
wrapper ran, which kernels graph nodes ran and how often, which oneDNN
primitives executed and for how long, whether the start-up banner said the
oneDNN custom ops were on, the time span of the log, and the ``Problem``s met
(undecodable bytes, garbled lines, ...), one per kind with the first offset.

Lines we read (matched on source file name + message, never on line number,
which changes between TF versions):

- prefixes: TF 2.21 (absl) ``I0000 00:00:1795982351.947743    4020 execute.cc:1775] ``
  (epoch seconds, thread id, bare file name) and TF 2.13
  ``2026-11-29 19:59:43.134075: I tensorflow/core/common_runtime/eager/execute.cc:1678] ``
  (local date-time, no thread id, path);
- ``execute.cc`` ``Executing op X in device D``: one eager dispatch of X. X is
  the name after the eager oneDNN rename (``_MklMatMul``) but the stock name
  for ops that are only rewritten inside their wrapper (``Transpose``);
- ``process_function_library_runtime.cc``
  ``Running component function on device D from F with handle N`` and
  ``Component function execution succeeded.``: the eager op runs as the
  one-node function F = ``__wrapped__X..._device_D``;
- ``op_kernel.cc`` ``Instantiating kernel for node: {{node NAME}} = KERNEL[attrs](inputs)``:
  printed once, on the first run of a function. Inside a running wrapper of X
  the node named X is the op; its KERNEL (``_MklTranspose``) is remembered for
  the wrapper (key: F + handle, or X + device when the function-runtime lines
  are absent) and reused for its later executions, which print no
  instantiation. Every other instantiation is a graph node;
- ``executor.cc`` ``Process node: I step S {{node NAME}} = KERNEL[...](...) device: D``:
  one execution of a graph node (eager wrappers print none);
- ``port.cc`` ``oneDNN custom operations are on``: the start-up banner (TF 2.13
  and 2.21 print the same text; with ``TF_ENABLE_ONEDNN_OPTS=0`` they print
  nothing, so a missing banner is ``None``, not ``False``);
- ``onednn_verbose,v1,[timestamp,]primitive,exec,cpu,KIND,IMPL,PROP,...,TIME``
  (oneDNN 3.x) and ``onednn_verbose,[timestamp,]exec,cpu,KIND,IMPL,PROP,...,TIME``
  (oneDNN 2.x, TF 2.13; also ``dnnl_verbose``/``mkldnn_verbose``); the time is
  the last field. ``info``/``create`` lines and oneDNN Graph API lines are skipped.

Noise left out: in eager wrappers the ``_Arg``/``_Retval`` (and ``_DeviceArg``/
``_DeviceRetval``) nodes; everywhere the ``_SOURCE``/``_SINK`` nodes (``NoOp``
kernels the executor adds to every graph) and ``_Arg``/``_Retval`` kernels;
``Synchronous kernel done`` lines (a second line per executed node). Eager
``NoOp`` ops (their wrapper is pruned empty, so their kernel stays ``""``) and
tfdbg's own ``DebugNumericSummaryV2`` executions are counted like any other op
(the consumer decides). A tf.function call (``Executing op __inference_f_12``)
counts as an eager dispatch whose kernel is ``""``; its nodes show as graph
kernels. ``graph_kernels`` is keyed by node name only: when two graphs have a
node of the same name, the last line seen wins.

With thread ids (2.21) the dispatch/run/instantiate lines of each thread are
associated separately; without (2.13) all lines share one context, and a
function-runtime line is only taken for the current op when the function name
fits the dispatched op, which keeps lines from other threads out. Without the
function-runtime lines (a ``TF_CPP_VMODULE`` that leaves out
``process_function_library_runtime``) a wrapper is known only by op name and
device, so an op run with several dtypes is credited with the kernel of the
dtype instantiated last (for ``Transpose``: f32 ``_MklTranspose`` but int32
stock ``Transpose``).

Damage: lines are bytes throughout, undecodable bytes only become Problems.
A line into which another line was written (stdout oneDNN lines and stderr TF
lines share a file) is split where the second line starts and both pieces are
read, the cut piece only as far as it is complete. Only oneDNN lines and TF
lines we read are searched for such cuts (TF writes each line whole, so a TF
line we do not read rarely carries another one).

Reading is streamed in binary in 1 MiB chunks with lines capped at
``MAX_LINE`` bytes (the rest of a longer line is skipped, not held), so memory
stays constant on a multi-GB file (about 140-170 MB/s on TF 2.21/2.13 logs
with CPython 3.11).
"""
from __future__ import annotations

import datetime
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Optional

from ..errors import Problem
from . import fs

__all__ = ["EagerKernel", "LogFacts", "looks_like_log", "read_log", "parse_lines", "MAX_LINE"]

# Lines longer than this are cut; only their head is parsed.
MAX_LINE = 1 << 20

_FMT_221 = "2.21-style"
_FMT_213 = "2.13-style"

# Group 6: thread id (absl); 7: local date-time (2.13); 9: source file base name.
_PREFIX = re.compile(
    rb"(?:([IWEF])(\d{4}) (\d\d):(\d\d):(\d+(?:\.\d+)?) +(\d+) "
    rb"|(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?): ([IWEF]) )"
    rb"(?:[^\s:\]]*/)?([^\s/:\]]+):\d+\] ")
# The same, anywhere in a line: where a second line was written into this one.
_EMBEDDED = re.compile(
    rb"[IWEF]\d{4} \d\d:\d\d:\d+(?:\.\d+)? +\d+ [^\s:\]]+:\d+\] "
    rb"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: [IWEF] [^\s:\]]+:\d+\] "
    rb"|(?:onednn|dnnl|mkldnn)_verbose,")
_LOCATION = re.compile(rb"(?:[^\s:\]]*/)?([^\s/:\]]+):\d+")
_Handler = Callable[[bytes, int, Optional[bytes], int, bool], None]
_PLAIN = object()  # a TF source location whose lines we do not read
_JUNK = object()   # not a source location: a continuation line or garbage
_VERBOSE_START = re.compile(rb"(?:onednn|dnnl|mkldnn)_verbose,")
# An attr value ends at "," or "]": a line cut short (the last line of a file still
# being written, or the head of an over-long line) does not yield a cut value.
_T_ATTR = re.compile(rb"[\[ ]T=(DT_[A-Z0-9_]+)[,\]]")
_KERNEL_END = re.compile(rb"[\[(]")

_IGNORED_KERNELS = frozenset((b"_Arg", b"_Retval", b"_DeviceArg", b"_DeviceRetval"))
_IGNORED_NODES = frozenset((b"_SOURCE", b"_SINK"))

_EXECUTING = b"Executing op "
_IN_DEVICE = b" in device "
_RUNNING = b"Running component function on device "
_SUCCEEDED = b"Component function execution succeeded"
_INSTANTIATING = b"Instantiating kernel for node: "
_PROCESS = b"Process node: "
_FOLDING_STEP = b" step -1 "
# executor.cc appends this to a node of an untaken cond branch: it ran no kernel.
_DEAD = b" is dead device: "
# cpu_feature_guard.cc's start-up message, whose second line has no prefix.
_CPU_FEATURES = b"To enable the following instructions: "
_FOLDED = b"Folded node: "
_BANNER = b"oneDNN custom operations are "
# xla_ops.cc: one launch of a function XLA compiles (jit_compile=True).
_XLA_LAUNCH = b"XlaLocalLaunchOpBase::Compute "
_WRAPPED = b"__wrapped__"
_DEBUG_OP_NAME = re.compile(rb'[ \[]op_name="([^"]*)"')
_DEBUG_CONTEXT = re.compile(rb'[ \[]tfdbg_context_id="([^"]*)"')
_DEBUG_SLOT = re.compile(rb"[ \[]output_slot=(\d+)[,\]]")
_DEBUG_MODE = re.compile(rb"[ \[]tensor_debug_mode=(\d+)[,\]]")
_DEBUG_BUFFER = re.compile(rb"[ \[]circular_buffer_size=(-?\d+)[,\]]")
_DEBUG_RUN_ID = re.compile(rb'[ \[]tfdbg_run_id="([^"]*)"')
_DEBUG_KERNEL = b"Debug"  # DebugNumericSummaryV2, DebugIdentityV2: tfdbg's instrumentation

# Problem kinds, in report order.
_NON_UTF8 = "non-UTF-8 bytes"
_BINARY = "binary (NUL) bytes"
_GARBLED = "garbled lines (another line written into them, or cut short)"
_LONG = f"lines longer than {MAX_LINE} bytes (only their head read)"
_PARTIAL = "last line has no newline (file still being written, or cut)"


@dataclass(frozen=True)
class EagerKernel:
    """One distinct (eager dispatch, wrapper kernel) pair."""

    dispatch: str  # name in "Executing op", e.g. "_MklMatMul", "Transpose"
    kernel: str    # kernel the __wrapped__ function instantiated for the op, "" if never seen
    dtype: str     # its T= attr, e.g. "DT_FLOAT"; "" if none or kernel unknown


@dataclass
class LogFacts:
    """What one text log says about op execution (see the module docstring)."""

    path: str
    tf_format: str = ""  # "2.21-style", "2.13-style" or "" (first prefix format seen)
    # Epoch seconds of the first/last prefixed line. 2.13-style times are local
    # date-times converted with the reader's time zone (the writer's is not
    # recorded); absl lines with a real month/day (no year) give None.
    first_time: Optional[float] = None
    last_time: Optional[float] = None
    onednn_opts: Optional[bool] = None
    # Instruction sets TF's start-up line says the CPU has (None: no such line).
    cpu_features: Optional[frozenset[str]] = None
    eager_dispatch: Counter[str] = field(default_factory=Counter)
    eager_kernels: Counter[EagerKernel] = field(default_factory=Counter)
    graph_kernels: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The same per dump graph (tfdbg context id): the nodes of the steps in which that
    # graph's debug nodes ran. Node names repeat across functions (a train and an
    # evaluate function both inline ``StatefulPartitionedCall/...``), so a dump op's
    # node is looked up among its own graph's.
    context_kernels: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # tfdbg's own debug nodes (``<op>/DebugNumericSummaryV2``) -> the tensor they
    # read: when it is not ``<op>``'s, grappler removed or forwarded ``<op>``.
    debug_inputs: dict[str, str] = field(default_factory=dict)
    # DebugIdentityV2 node -> (tfdbg context id = dump graph id, dump op name,
    # output slot): the exact link from an executed node name to the dump's op.
    debug_targets: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    # DebugIdentityV2 node -> its tensor_debug_mode (1, NO_TENSOR: it reads a
    # constant, not the op's tensor, so its input says nothing of the op).
    debug_modes: dict[str, int] = field(default_factory=dict)
    # The circular_buffer_size tfdbg's debug nodes were built with (None: not seen).
    circular_buffer_size: Optional[int] = None
    # The tfdbg_run_id of every dump whose debug nodes this log shows ran: it is the
    # dump's own run id (its metadata), so it ties a log to its dump exactly.
    tfdbg_run_ids: frozenset[str] = frozenset()
    # Functions XLA compiled (jit_compile=True) -> launches the log shows (xla_ops.cc).
    xla_launches: Counter[str] = field(default_factory=Counter)
    graph_executions: Counter[str] = field(default_factory=Counter)
    # kernel -> graph node executions that ran it (node names repeat across functions,
    # so per-kernel counts are taken per line, not through graph_kernels)
    kernel_executions: Counter[str] = field(default_factory=Counter)
    onednn_primitives: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    onednn_time_ms: dict[tuple[str, str, str], float] = field(default_factory=dict)
    lines: int = 0
    bytes_read: int = 0
    problems: list[Problem] = field(default_factory=list)


def _s(b: bytes) -> str:
    return b.decode("utf-8", "replace")


class _Context:
    """The eager op a thread (or, without thread ids, the log) last dispatched.

    ``key`` names its wrapper function (function name, component handle) once
    the "Running component function" line is seen; ``kernel``/``dtype`` are
    set if its kernel is instantiated during this execution; ``depth`` counts
    component functions started minus finished."""

    __slots__ = ("dispatch", "device", "key", "kernel", "dtype", "depth", "is_function")

    def __init__(self, dispatch: bytes, device: bytes) -> None:
        self.dispatch = dispatch
        self.device = device
        self.key: Optional[tuple[bytes, bytes]] = None
        self.kernel = b""
        self.dtype = b""
        self.depth = 0          # component functions running on this thread
        self.is_function = dispatch.startswith(b"__inference_")


# Steps whose lines may still come (executors of several functions interleave their
# lines); the oldest is filed when one more starts.
_OPEN_STEPS = 64


class _Step:
    """The nodes one executor step ran, and the dump graphs (tfdbg context ids) whose
    debug nodes ran in it: the step runs those graphs' nodes."""

    __slots__ = ("nodes", "contexts")

    def __init__(self) -> None:
        self.nodes: dict[bytes, tuple[bytes, bytes]] = {}
        self.contexts: set[bytes] = set()


class _Parser:
    def __init__(self, path: str) -> None:
        self.path = path
        self.fmt = ""
        self.first_time: Optional[float] = None
        self.last_prefixed: Optional[bytes] = None
        self.onednn_opts: Optional[bool] = None
        self.cpu_features: Optional[frozenset[str]] = None
        self.dispatch: Counter[bytes] = Counter()
        self.eager: Counter[tuple[bytes, bytes, bytes]] = Counter()
        self.graph_kernels: dict[bytes, tuple[bytes, bytes]] = {}
        self.debug_inputs: dict[bytes, bytes] = {}
        # Graph nodes seen only in "Instantiating kernel" lines, and nodes that
        # ran only under constant folding (step -1).
        self.instantiated: dict[bytes, tuple[bytes, bytes]] = {}
        self.folded: set[bytes] = set()
        self.debug_targets: dict[bytes, tuple[bytes, bytes, int]] = {}
        self.debug_modes: dict[bytes, int] = {}
        self.circular_buffer_size: Optional[int] = None
        self.run_ids: set[bytes] = set()
        self.xla_launches: Counter[bytes] = Counter()
        self.steps: dict[bytes, _Step] = {}
        self.scoped: dict[bytes, dict[bytes, tuple[bytes, bytes]]] = {}
        self.graph_exec: Counter[bytes] = Counter()
        self.kernel_exec: Counter[bytes] = Counter()
        self.prims: Counter[tuple[bytes, bytes, bytes]] = Counter()
        self.prim_ms: dict[tuple[bytes, bytes, bytes], float] = {}
        self.contexts: dict[Optional[bytes], _Context] = {}
        self.wrapper_kernels: dict[tuple[bytes, bytes], tuple[bytes, bytes]] = {}
        self.issues: dict[str, list[int]] = {}  # kind -> [first offset, count]
        self.lines = 0
        self.bytes = 0
        # Set before the last line of a file when it has no newline: its last
        # field (a oneDNN time) may be cut short, so it is not taken.
        self.tail_cut = False
        self.locations: dict[bytes, object] = {}  # "file:line" -> handler, _PLAIN
        self.last_matched: Optional[bytes] = None  # last line parsed by a handler
        # source file -> (message starts it prints that we read, handler)
        self.handlers: dict[bytes, tuple[tuple[bytes, ...], _Handler]] = {
            b"execute.cc": ((_EXECUTING,), self._execute),
            b"process_function_library_runtime.cc": ((_RUNNING, _SUCCEEDED), self._pflr),
            b"op_kernel.cc": ((_INSTANTIATING,), self._op_kernel),
            b"executor.cc": ((_PROCESS,), self._executor),
            b"port.cc": ((_BANNER,), self._port),
            b"xla_ops.cc": ((_XLA_LAUNCH,), self._xla),
            b"constant_folding.cc": ((_FOLDED,), self._folded),
        }

    # -- bookkeeping ---------------------------------------------------------------
    def issue(self, kind: str, offset: int) -> None:
        entry = self.issues.get(kind)
        if entry is None:
            self.issues[kind] = [offset, 1]
        else:
            entry[1] += 1

    def _finalize(self, ctx: _Context) -> None:
        if ctx.kernel:
            kernel, dtype = ctx.kernel, ctx.dtype
        elif ctx.is_function:
            kernel, dtype = b"", b""
        else:
            key = ctx.key if ctx.key is not None else (ctx.dispatch, ctx.device)
            kernel, dtype = self.wrapper_kernels.get(key, (b"", b""))
        self.eager[(ctx.dispatch, kernel, dtype)] += 1

    # -- the hot loop --------------------------------------------------------------
    def _lookup(self, key: bytes) -> object:
        """What a ``file:line`` key before the first ``"] "`` of a line means:
        a handler, _PLAIN (a TF source location we do not read) or _JUNK."""
        m = _LOCATION.fullmatch(key)
        if m is None:
            return _JUNK
        value = self.handlers.get(m.group(1), _PLAIN)
        if len(self.locations) < 4096:
            self.locations[key] = value
        return value

    def run(self, batches: Iterable[tuple[int, list[bytes]]]) -> None:
        """Parse batches of lines: (file offset of the first line, lines without
        their newline, each but the last followed by one newline in the file).

        Cheap tests first: the source location before the first ``"] "`` picks
        the handler (cached per location), and the prefix regex runs only on
        lines whose location we read."""
        match = _PREFIX.match
        locations = self.locations
        lookup = self._lookup
        nlines = self.lines
        last_prefixed = self.last_prefixed
        for nbytes, lines in batches:
            nlines += len(lines)
            joined = b"\n".join(lines)
            # Whole-batch tests first, so most lines skip these tests.
            odd = not joined.isascii() or b"\x00" in joined
            verbose = b"_verbose," in joined
            del joined
            for line in lines:
                off = nbytes
                nbytes += len(line) + 1
                if odd:
                    self._odd_bytes(line, off)
                if verbose and line.startswith(b"onednn_verbose,"):
                    self._verbose(line, off, True)
                    continue
                j = line.find(b"] ")
                if j < 0:
                    if verbose and b"_verbose," in line:
                        self._stray(line, off)
                    elif line.startswith(_CPU_FEATURES):
                        self._cpu(line)
                    continue
                key = line[line.rfind(b" ", 0, j) + 1:j]
                entry = locations.get(key)
                if entry is None:
                    entry = lookup(key)
                if entry is _JUNK:
                    self._stray(line, off)
                    continue
                if not self.fmt:
                    m = match(line)
                    if m is not None:
                        self._first(m)
                # entry is a (prefix, handler) tuple once _JUNK and _PLAIN are out; mypy cannot
                # narrow the object() sentinels, and an isinstance check costs in this loop.
                if entry is _PLAIN or not line.startswith(entry[0], j + 2):  # type: ignore[index]
                    # Not searched for lines written into it: TF writes whole lines,
                    # so a cut line starts with a oneDNN line (stdout) or has a
                    # location we read (checked below).
                    last_prefixed = line
                    continue
                m = match(line)
                if m is None:  # a line written into the start of this one
                    self._garbled(line, off)
                    continue
                last_prefixed = line
                self.last_matched = line
                if ((line.find(b"] ", j + 2) < 0 and b"_verbose," not in line)
                        or not self._garbled(line, off)):
                    entry[1](line, m.end(), m.group(6), off, False)  # type: ignore[index]  # as above
        self.lines = nlines
        self.last_prefixed = last_prefixed

    def _cpu(self, line: bytes) -> None:
        """``To enable the following instructions: AVX2 AVX512F ... FMA, in other
        operations, rebuild ...``: instruction sets the CPU has and the binary was
        not built for; the kernel of some dtypes depends on them (AVX512_FP16)."""
        words = line[len(_CPU_FEATURES):].split(b",", 1)[0].split()
        found = frozenset(_s(w) for w in words if w.isalnum() or b"_" in w)
        self.cpu_features = found | (self.cpu_features or frozenset())

    def _odd_bytes(self, line: bytes, off: int) -> None:
        if not line.isascii():
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                self.issue(_NON_UTF8, off)
        if b"\x00" in line:
            self.issue(_BINARY, off)

    def _first(self, m: re.Match[bytes]) -> None:
        self.fmt = _FMT_221 if m.group(1) is not None else _FMT_213
        self.first_time = _prefix_time(m)

    # -- garbled lines -------------------------------------------------------------
    def _garbled(self, line: bytes, off: int) -> bool:
        """Split ``line`` where other lines were written into it and parse each
        piece; False (nothing done) if nothing was written into it."""
        cuts = [0]
        for e in _EMBEDDED.finditer(line, 1):
            cuts.append(e.start())
        if len(cuts) == 1:
            return False
        cuts.append(len(line))
        self.issue(_GARBLED, off)
        for i in range(len(cuts) - 1):
            a, b = cuts[i], cuts[i + 1]
            self._piece(line[a:b], off + a, b < len(line))
        return True

    def _piece(self, seg: bytes, off: int, cut: bool) -> None:
        """Parse one piece of a garbled line; ``cut``: its tail was overwritten."""
        if _VERBOSE_START.match(seg):
            self._verbose(seg, off, not cut, split=False)
            return
        m = _PREFIX.match(seg)
        if m is None:
            return  # the tail of a line cut earlier: its head was parsed already
        if not self.fmt:
            self._first(m)
        self.last_matched = seg
        entry = self.handlers.get(m.group(9))
        if entry is not None and seg.startswith(entry[0], m.end()):
            entry[1](seg, m.end(), m.group(6), off, cut)

    def _stray(self, line: bytes, off: int) -> None:
        """A line with no TF prefix at its start: oneDNN v0 lines
        (dnnl_verbose, ...), continuations of multi-line messages, or garbage."""
        if _VERBOSE_START.match(line):
            self._verbose(line, off, True)
        else:
            self._garbled(line, off)

    # -- oneDNN verbose ------------------------------------------------------------
    def _verbose(self, line: bytes, off: int, whole: bool, split: bool = True) -> None:
        """One verbose line; ``whole``: its last field can be trusted as the time."""
        whole = whole and not self.tail_cut
        fields = line.rstrip(b"\r\n").split(b",")
        idx = -1
        for i in range(1, min(len(fields), 5)):
            if fields[i] == b"exec":
                idx = i
                break
        if idx < 0 or fields[idx - 1] == b"graph":
            # info/create/template lines, or a oneDNN Graph API line (other layout)
            if split and b"] " in line:
                self._garbled(line, off)
            return
        if len(fields) < idx + 6:
            if not (split and self._garbled(line, off)):
                self.issue(_GARBLED, off)
            return
        ms: Optional[float] = None
        if whole:
            try:
                ms = float(fields[-1])
            except ValueError:
                if split and self._garbled(line, off):
                    return
                self.issue(_GARBLED, off)
            else:
                if not math.isfinite(ms) or ms < 0:  # "nan", "inf", "1e999": no time oneDNN prints
                    ms = None
                    self.issue(_GARBLED, off)
        key = (fields[idx + 2], fields[idx + 3], fields[idx + 4])
        self.prims[key] += 1
        if ms is not None:
            self.prim_ms[key] = self.prim_ms.get(key, 0.0) + ms

    # -- TF lines ------------------------------------------------------------------
    def _execute(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        if not line.startswith(_EXECUTING, at):
            return
        i = line.find(_IN_DEVICE, at)
        if i < 0:
            if not cut:
                self.issue(_GARBLED, off)
            return
        op = line[at + len(_EXECUTING):i]
        device = line[i + len(_IN_DEVICE):].strip()
        if not op or b" " in op:
            self.issue(_GARBLED, off)
            return
        self.dispatch[op] += 1
        prev = self.contexts.get(tid)
        if prev is not None:
            self._finalize(prev)
        self.contexts[tid] = _Context(op, device)

    def _pflr(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        ctx = self.contexts.get(tid)
        if ctx is None:
            return
        if line.startswith(_RUNNING, at):
            i = line.rfind(b" from ", at)
            j = line.rfind(b" with handle ", at)
            if i < 0 or j < i:
                return
            fn = line[i + 6:j]
            handle = line[j + 13:].strip()
            if not handle.isdigit():
                return
            ctx.depth += 1
            if ctx.key is None and _runs(fn, ctx.dispatch):
                ctx.key = (fn, handle)
                if not fn.startswith(_WRAPPED):
                    ctx.is_function = True
        elif line.startswith(_SUCCEEDED, at):
            ctx.depth -= 1
            if ctx.key is not None and ctx.depth <= 0:
                self._finalize(ctx)
                del self.contexts[tid]

    def _node(self, line: bytes, at: int) -> Optional[tuple[bytes, bytes, bytes]]:
        """(name, kernel, dtype) from ``{{node NAME}} = KERNEL[attrs](inputs)``."""
        i = line.find(b"{{node ", at)
        if i < 0:
            return None
        j = line.find(b"}} = ", i)
        if j < 0:
            return None
        k = _KERNEL_END.search(line, j + 5)
        if k is None:
            return None
        name = line[i + 7:j]
        kernel = line[j + 5:k.start()]
        if not name or not kernel or b" " in kernel:
            return None
        t = _T_ATTR.search(line, k.start())
        return name, kernel, (t.group(1) if t is not None else b"")

    def _kept_node(self, line: bytes, at: int, off: int,
                   args: bool = False) -> Optional[tuple[bytes, bytes, bytes]]:
        """The node of a kernel line, or None when garbled (counted) or plumbing.
        ``args``: keep ``_Arg`` nodes (a graph's arguments, which dump ops name)."""
        parsed = self._node(line, at)
        if parsed is None:
            self.issue(_GARBLED, off)
            return None
        name, kernel, _dtype = parsed
        if (kernel in _IGNORED_KERNELS and not (args and kernel == b"_Arg")) or name in _IGNORED_NODES:
            return None
        return parsed

    def _op_kernel(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        if not line.startswith(_INSTANTIATING, at):
            return
        parsed = self._kept_node(line, at, off)
        if parsed is None:
            return
        name, kernel, dtype = parsed
        ctx = self.contexts.get(tid)
        if (ctx is not None and not ctx.is_function and not ctx.kernel
                and name == ctx.dispatch and (ctx.key is None or ctx.depth > 0)):
            ctx.kernel, ctx.dtype = kernel, dtype
            key = ctx.key if ctx.key is not None else (ctx.dispatch, ctx.device)
            self.wrapper_kernels[key] = (kernel, dtype)
            return
        self.instantiated[name] = (kernel, dtype)
        if kernel.startswith(_DEBUG_KERNEL) and name not in self.debug_inputs:
            self._debug_input(name, line)

    def _debug_input(self, name: bytes, line: bytes) -> None:
        """Record the first input of a tfdbg debug node: ``...](input, ...)``."""
        end = line.rfind(b") device: ")
        if end < 0:
            end = line.rstrip().rfind(b")")
        start = line.rfind(b"(", 0, end)
        if start < 0 or end < 0:
            return
        first = line[start + 1:end].split(b",", 1)[0].strip()
        if first:
            self.debug_inputs[name] = first
        op = _DEBUG_OP_NAME.search(line, 0, start)
        ctx = _DEBUG_CONTEXT.search(line, 0, start)
        if op is not None and ctx is not None:
            slot = _DEBUG_SLOT.search(line, 0, start)
            self.debug_targets[name] = (ctx.group(1), op.group(1),
                                        int(slot.group(1)) if slot is not None else 0)
            mode = _DEBUG_MODE.search(line, 0, start)
            if mode is not None:
                self.debug_modes[name] = int(mode.group(1))
            run_id = _DEBUG_RUN_ID.search(line, 0, start)
            if run_id is not None:
                self.run_ids.add(run_id.group(1))
            if self.circular_buffer_size is None:
                size = _DEBUG_BUFFER.search(line, 0, start)
                if size is not None:
                    self.circular_buffer_size = int(size.group(1))

    def _executor(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        if not line.startswith(_PROCESS, at):
            return
        parsed = self._kept_node(line, at, off, args=True)
        if parsed is None:
            return
        name, kernel, dtype = parsed
        if line.startswith(_FOLDING_STEP, line.find(b" step ", at)):
            # Step -1 is grappler's constant folding evaluating nodes while it
            # optimises the graph, not a run of the graph.
            self.folded.add(name)
            return
        if _DEAD in line:
            return  # an untaken branch: the node ran no kernel at this step
        self.graph_exec[name] += 1
        self.kernel_exec[kernel] += 1
        self.graph_kernels[name] = (kernel, dtype)
        s = line.find(b" step ", at) + 6
        step_id = line[s:line.find(b" ", s)]
        step = self.steps.get(step_id)
        if step is None:
            if len(self.steps) >= _OPEN_STEPS:
                self._close_step(next(iter(self.steps)))
            step = self.steps[step_id] = _Step()
        step.nodes[name] = (kernel, dtype)
        if kernel.startswith(_DEBUG_KERNEL):
            if name not in self.debug_inputs:
                self._debug_input(name, line)
            target = self.debug_targets.get(name)
            if target is not None:
                step.contexts.add(target[0])

    def _close_step(self, step_id: bytes) -> None:
        """File a step's nodes under the dump graphs whose debug nodes ran in it."""
        step = self.steps.pop(step_id)
        for context in step.contexts:
            self.scoped.setdefault(context, {}).update(step.nodes)

    def _folded(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        """``Folded node: {{node X}} = ...``: grappler evaluated X once, at optimisation."""
        if line.startswith(_FOLDED, at):
            parsed = self._node(line, at)
            if parsed is not None:
                self.folded.add(parsed[0])

    def _xla(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        """``XlaLocalLaunchOpBase::Compute __inference_f_93[_XlaMustCompile=true,...]``."""
        start = at + len(_XLA_LAUNCH)
        end = line.find(b"[", start)
        name = line[start:end if end > 0 else len(line)].strip()
        if name and b" " not in name:
            self.xla_launches[name] += 1

    def _port(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        if line.startswith(_BANNER, at):
            word = line[at + len(_BANNER):at + len(_BANNER) + 3]
            if word.startswith(b"on"):
                self.onednn_opts = True
            elif word.startswith(b"off"):
                self.onednn_opts = False

    # -- result --------------------------------------------------------------------
    def result(self) -> LogFacts:
        for tid in list(self.contexts):
            self._finalize(self.contexts.pop(tid))
        for step_id in list(self.steps):
            self._close_step(step_id)
        facts = LogFacts(path=self.path, tf_format=self.fmt, first_time=self.first_time,
                         onednn_opts=self.onednn_opts, cpu_features=self.cpu_features,
                         lines=self.lines, bytes_read=self.bytes)
        # The last line with a TF location, or if that was no TF line after all
        # (or a piece of a garbled line came later) the last line we parsed.
        times = [_prefix_time(m) for m in (_PREFIX.match(x) for x in
                 (self.last_prefixed, self.last_matched) if x is not None) if m is not None]
        known = [t for t in times if t is not None]
        facts.last_time = max(known) if known else None
        facts.eager_dispatch = Counter({_s(k): v for k, v in self.dispatch.items()})
        for (d, k, t), v in self.eager.items():
            facts.eager_kernels[EagerKernel(_s(d), _s(k), _s(t))] += v
        # A node that "Process node" lines show ran keeps that kernel. Where the
        # log has such lines, a node only instantiated did not run at a step:
        # grappler instantiates kernels to evaluate nodes it then folds away. Only
        # a log without executor lines falls back on instantiations.
        if self.graph_exec:
            kernels = dict(self.graph_kernels)
        else:
            kernels = {n: kt for n, kt in self.instantiated.items() if n not in self.folded}
        facts.graph_kernels = {_s(n): (_s(k), _s(t)) for n, (k, t) in kernels.items()}
        facts.debug_inputs = {_s(n): _s(i) for n, i in self.debug_inputs.items()}
        facts.debug_targets = {_s(n): (_s(c), _s(o), slot)
                               for n, (c, o, slot) in self.debug_targets.items()}
        facts.debug_modes = {_s(n): m for n, m in self.debug_modes.items()}
        facts.circular_buffer_size = self.circular_buffer_size
        facts.tfdbg_run_ids = frozenset(_s(r) for r in self.run_ids)
        facts.xla_launches = Counter({_s(k): v for k, v in self.xla_launches.items()})
        facts.context_kernels = {_s(c): {_s(n): (_s(k), _s(t)) for n, (k, t) in nodes.items()}
                                 for c, nodes in self.scoped.items()}
        for n, v in self.graph_exec.items():
            facts.graph_executions[_s(n)] += v
        for k, v in self.kernel_exec.items():
            facts.kernel_executions[_s(k)] += v
        for key, v in self.prims.items():
            skey = (_s(key[0]), _s(key[1]), _s(key[2]))
            facts.onednn_primitives[skey] += v
            if key in self.prim_ms:
                facts.onednn_time_ms[skey] = facts.onednn_time_ms.get(skey, 0.0) + self.prim_ms[key]
        for kind in (_NON_UTF8, _BINARY, _GARBLED, _LONG, _PARTIAL):
            entry = self.issues.get(kind)
            if entry is not None:
                first, count = entry
                what = "line" if count == 1 else "lines"
                facts.problems.append(Problem(
                    self.path, first, f"{kind}: {count} {what}, the first at this offset"))
        return facts


def _runs(fn: bytes, dispatch: bytes) -> bool:
    """Whether component function ``fn`` is the one that runs eager op ``dispatch``:
    itself (a tf.function call) or its wrapper ``__wrapped__<op>[_<attrs>]_device_<dev>``,
    where an op name's leading underscores are doubled (``__wrapped____MklMatMul``)."""
    if not fn.startswith(_WRAPPED):
        return fn == dispatch
    return fn[len(_WRAPPED):].lstrip(b"_").startswith(dispatch.lstrip(b"_") + b"_")


def _prefix_time(m: re.Match[bytes]) -> Optional[float]:
    if m.group(1) is not None:
        if m.group(2) == b"0000" and m.group(3) == b"00" and m.group(4) == b"00":
            t = float(m.group(5))  # absl before InitializeLog: epoch seconds
            return t if math.isfinite(t) else None  # 400 digits of garbage read as inf
        return None  # month/day but no year
    text = m.group(7).decode("ascii")
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    try:
        return datetime.datetime.strptime(text, fmt).timestamp()  # local time zone
    except (ValueError, OverflowError, OSError):  # no such date, or out of the platform's range
        return None


_CHUNK = 1 << 20


def _cut_long(pos: int, lines: list[bytes], parser: _Parser) -> Iterator[tuple[int, list[bytes]]]:
    """Batches of ``lines`` (starting at offset ``pos``) with every line longer
    than MAX_LINE cut to its head; a cut line ends its batch so the offsets of
    the next batch stay true."""
    start = 0
    for i, line in enumerate(lines):
        if len(line) > MAX_LINE:
            parser.issue(_LONG, pos)
            yield pos - sum(len(x) + 1 for x in lines[start:i]), lines[start:i] + [line[:MAX_LINE]]
            start = i + 1
        pos += len(line) + 1
    if start < len(lines):
        yield pos - sum(len(x) + 1 for x in lines[start:]), lines[start:]


def _file_batches(f: BinaryIO, parser: _Parser) -> Iterator[tuple[int, list[bytes]]]:
    """Batches of lines read in 1 MiB chunks; a line longer than MAX_LINE keeps
    its head and the rest is read and dropped, so memory stays bounded. Sets
    ``parser.bytes`` to the bytes read and notes a last line without newline."""
    pos = 0          # file offset of ``carry``
    carry = b""      # the unfinished last line of the chunks read so far
    dropping = False  # inside the cut-off tail of a long line
    while True:
        data = f.read(_CHUNK)
        if not data:
            break
        if dropping:
            i = data.find(b"\n")
            if i < 0:
                pos += len(data)
                continue
            pos += i + 1
            data = data[i + 1:]
            dropping = False
        buf = carry + data if carry else data
        lines = buf.split(b"\n")
        carry = lines.pop()
        if lines:
            if max(map(len, lines)) > MAX_LINE:
                yield from _cut_long(pos, lines, parser)
            else:
                yield pos, lines
            pos += len(buf) - len(carry)
        if len(carry) > MAX_LINE:
            parser.issue(_LONG, pos)
            yield pos, [carry[:MAX_LINE]]
            pos += len(carry)
            carry = b""
            dropping = True
    if carry:
        parser.issue(_PARTIAL, pos)
        parser.tail_cut = True
        yield pos, [carry]
        pos += len(carry)
    parser.bytes = pos


def parse_lines(lines: Iterable[bytes], path: str = "<lines>") -> LogFacts:
    """Parse the given lines (each with or without its newline); offsets count
    one newline per line. Lines longer than MAX_LINE are cut as in ``read_log``."""
    parser = _Parser(path)

    def batches() -> Iterator[tuple[int, list[bytes]]]:
        pos = 0
        for line in lines:
            line = line[:-1] if line.endswith(b"\n") else line
            yield from _cut_long(pos, [line], parser)
            pos += len(line) + 1
        parser.bytes = pos

    parser.run(batches())
    return parser.result()


def read_log(path: str) -> LogFacts:
    """Stream one log file from disk; constant memory whatever its size.

    Raises OSError if the file cannot be opened or read."""
    parser = _Parser(path)
    with fs.open_read(path) as f:
        parser.run(_file_batches(f, parser))
    return parser.result()


def looks_like_log(path: str, head_bytes: int = 65536) -> bool:
    """Whether the first ``head_bytes`` of ``path`` hold a TF log or oneDNN verbose line."""
    try:
        head = fs.head(path, head_bytes)
    except OSError:
        return False
    for line in head.split(b"\n"):
        if _PREFIX.match(line) or _VERBOSE_START.match(line):
            return True
    return False
