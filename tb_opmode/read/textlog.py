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
read, the cut piece only as far as it is complete. Only oneDNN lines and lines
carrying a message we read are searched for such cuts (TF writes each line
whole, so a TF line we do not read rarely carries another one).

Reading is streamed in binary in 4 MiB chunks with lines capped at ``MAX_LINE``
bytes (the rest of a longer line is skipped, not held), so memory stays constant
on a multi-GB file. A chunk's lines are not split in Python: searches over the
whole chunk, in C, find the few lines a handler reads one by one (the messages
above but Process node, oneDNN lines; the CPU line, which has no prefix, in the
chunk of cpu_feature_guard.cc's line and the next two), and one regex between them
reads every ``executor.cc`` Process node line at once: its step id and its
``{{node ...}}`` text, which a node prints the same at every step, so the text is
parsed once and the lines are counted per text (C ``Counter``), each step keeping
its texts until it is filed. In fact one regex finds both the handlers' lines and the
Process node lines, in one scan instead of two (a new text gets its node first); a
chunk where that could read a line otherwise (a text holding "] " or "_verbose,", a
Process node line not laid out so, a oneDNN line holding "] ", the CPU line's chunks,
the table of texts about to start again) is read with the two. Such a line is read wherever it starts (another
line written before it does not hide it); one the regex cannot take whole, or
with another line inside, is read as it is. The kernel of a node is the one its
last line names; a debug node's dump graph is the one its target names when its
step is filed. Memory holds one chunk and a table of distinct texts, not the
lines (README, Speed, for the figures).

A local file of ``SPLIT_BYTES`` or more is read in two halves at once, the second
by a forked child (not in a process running threads, where a fork can deadlock),
split just after a newline near the middle. What the second half cannot know is
kept for the merge: lines of a thread that dispatched no eager op there yet are
read after the first half (they may continue an op dispatched in it), and an eager
op whose wrapper the second half did not see instantiated takes the kernel the
first half saw. A step running across the split is filed in two parts.
"""
from __future__ import annotations

import datetime
import itertools
import logging
import math
import operator
import os
import pickle
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Optional, cast

from ..errors import Problem
from . import forks, fs

__all__ = ["EagerKernel", "LogFacts", "looks_like_log", "read_log", "parse_lines", "MAX_LINE"]

logger = logging.getLogger(__name__)

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
# being written, or the head of an over-long line) does not yield a cut value. These
# patterns start with their literal and look behind for the separator: the regex engine
# then skips to the literal in C rather than trying the pattern at every byte.
_T_ATTR = re.compile(rb"T=(?<=[\[ ]T=)(DT_[A-Z0-9_]+)[,\]]")
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
_CPU_GUARD = b"This TensorFlow binary is optimized"
_CPU_FEATURES = b"To enable the following instructions: "
# Blocks searched for that second line from the one with the first line on.
_CPU_BLOCKS = 3
_FOLDED = b"Folded node: "
_BANNER = b"oneDNN custom operations are "
# xla_ops.cc: one launch of a function XLA compiles (jit_compile=True).
_XLA_LAUNCH = b"XlaLocalLaunchOpBase::Compute "
_WRAPPED = b"__wrapped__"
_DEBUG_OP_NAME = re.compile(rb'op_name="(?<=[ \[]op_name=")([^"]*)"')
_DEBUG_CONTEXT = re.compile(rb'tfdbg_context_id="(?<=[ \[]tfdbg_context_id=")([^"]*)"')
_DEBUG_SLOT = re.compile(rb"output_slot=(?<=[ \[]output_slot=)(\d+)[,\]]")
_DEBUG_MODE = re.compile(rb"tensor_debug_mode=(?<=[ \[]tensor_debug_mode=)(\d+)[,\]]")
_DEBUG_BUFFER = re.compile(rb"circular_buffer_size=(?<=[ \[]circular_buffer_size=)(-?\d+)[,\]]")
_DEBUG_RUN_ID = re.compile(rb'tfdbg_run_id="(?<=[ \[]tfdbg_run_id=")([^"]*)"')
_DEBUG_KERNEL = b"Debug"  # DebugNumericSummaryV2, DebugIdentityV2: tfdbg's instrumentation
# Whole-block searches (each a literal first, which the regex engine skips to in C):
# the lines handlers other than executor.cc's read, one by one...
# (The CPU line, which has no prefix, is searched for only near cpu_feature_guard's line.)
_SPECIAL = re.compile(rb"\] (?:" + rb"|".join(re.escape(m) for m in (
    _EXECUTING, _RUNNING, _SUCCEEDED, _INSTANTIATING, _BANNER, _XLA_LAUNCH, _FOLDED,
    _CPU_GUARD)) + rb")")
# ...and every Process node line at once: (step id, "{{node NAME}} = KERNEL[..." to the end
# of the line), or ("", rest of the line) when it is not laid out so (``_line`` reads it).
# The look-behind (after the literal, so that it stays the literal) keeps the file name
# whole: "xexecutor.cc" is another file.
_PROCESS_LINE = re.compile(
    rb"executor\.cc:(?<=[/ ]executor\.cc:)\d+\] Process node: "
    rb"(?:\d+ step (-?\d+) (\{\{node [^ \n}]+\}\} = [^\[( \n]+[\[(][^\n]*)|[^\n]*)")
# Both at once, in one scan (``_Parser._at_once``): (step id, text, "") for a Process node
# line laid out as above, ("", "", marker to the end of the line) for a line ``_SPECIAL``
# finds, and ("", "", "") for anything else (a Process node line not laid out so, or not
# executor.cc's), which sends the block to the two scans.
# A look-behind is of fixed width, hence one per width of executor.cc's line number.
_AT_ONCE = re.compile(
    rb"\] (?:Process node: (?:(?:" + rb"|".join(
        rb"(?<=[/ ]executor\.cc:" + rb"\d" * n + rb"\] Process node: )" for n in (3, 4, 2, 1, 5, 6, 7, 8, 9))
    + rb")(?:\d+ step (-?\d+) (\{\{node [^ \n}]+\}\} = [^\[( \n]+[\[(][^\n]*)|[^\n]*)|)"
    rb"|((?:" + rb"|".join(re.escape(m) for m in (
        _EXECUTING, _RUNNING, _SUCCEEDED, _INSTANTIATING, _BANNER, _XLA_LAUNCH, _FOLDED,
        _CPU_GUARD)) + rb")[^\n]*))")
_ODD = re.compile(rb"[\x00\x80-\xff]")
# Distinct Process node texts kept (each node prints the same at every step); past this
# the table starts again, so that texts differing per line keep memory bounded.
_MAX_ENTRIES = 1 << 16
_N_RUN, _N_IGNORED, _N_DEAD, _N_DEBUG = range(4)
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
_THIRD = operator.itemgetter(2)


class _Node:
    """What a Process node line's ``{{node NAME}} = KERNEL[...]`` says (see ``_entry``).
    One object per text, hashed by identity: lines are counted per object, in C."""

    __slots__ = ("name", "kernel", "pair", "kind", "text")

    def __init__(self, name: bytes, kernel: bytes, pair: tuple[bytes, bytes], kind: int,
                 text: bytes) -> None:
        self.name = name
        self.kernel = kernel
        self.pair = pair  # (kernel, its T= dtype or b"")
        self.kind = kind  # _N_RUN, _N_IGNORED (plumbing), _N_DEAD, _N_DEBUG
        self.text = text  # the text, from "{{node " to the end of the line

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
    # The same per dump graph (tfdbg context id), where that graph's debug node of a
    # name read another tensor than ``debug_inputs`` says: a train and an evaluate
    # function both have ``while/.../Mul/DebugNumericSummaryV2``, reading the Mul in one
    # and, where grappler removed that Mul, its input in the other.
    context_debug_inputs: dict[str, dict[str, str]] = field(default_factory=dict)
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


def _first_input(line: bytes) -> tuple[int, bytes]:
    """Where a node line's input list opens and its first input: ``...](input, ...)``
    ((-1, b"") if the line has none)."""
    end = line.rfind(b") device: ")
    if end < 0:
        end = line.rstrip().rfind(b")")
    start = line.rfind(b"(", 0, end)
    if start < 0 or end < 0:
        return -1, b""
    return start, line[start + 1:end].split(b",", 1)[0].strip()


class _Step:
    """The nodes one executor step ran, and the dump graphs (tfdbg context ids) whose
    debug nodes ran in it: the step runs those graphs' nodes."""

    __slots__ = ("nodes", "contexts", "keys", "debug_lines")

    def __init__(self) -> None:
        self.nodes: dict[bytes, tuple[bytes, bytes]] = {}
        self.contexts: set[bytes] = set()
        self.debug_lines: dict[bytes, bytes] = {}  # debug node -> its line, read on its own
        # Nodes of the Process node lines read in bulk (``_Parser._bulk``), in line
        # order (shared objects, one per text): resolved when the step is filed.
        self.keys: list[_Node] = []


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
        # Per context, debug node -> its input where it differs from ``debug_inputs``.
        self.scoped_inputs: dict[bytes, dict[bytes, bytes]] = {}
        self.text_inputs: dict[bytes, bytes] = {}  # a debug node's text -> its first input
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
        self.matched_at = -1  # where in the block being read a line set last_matched
        self.cpu_blocks = 0  # blocks left to search for the CPU line (``_CPU_BLOCKS``)
        self.entries: dict[bytes, _Node] = {}  # Process node text -> what it says
        # Process node lines read in bulk, per text: how many, and the number (``seq``)
        # of the last; lines read one by one number their node name in ``name_seq``
        # (the last line of a name gives its kernel, whichever way it was read).
        self.key_counts: Counter[_Node] = Counter()
        self.key_last: dict[_Node, int] = {}
        self.name_seq: dict[bytes, int] = {}
        self.seq = 0
        # Step files by the set of texts they ran (the steps of a function run the same
        # nodes): (debug targets version, nodes, dump graphs, debug inputs of their own).
        self.step_sets: dict[frozenset[_Node], tuple[int, dict[bytes, tuple[bytes, bytes]],
                                                     frozenset[bytes], dict[bytes, bytes]]] = {}
        self.targets_version = 0
        # Debug nodes whose name has no input recorded yet (``_debug_input``).
        self.pending_debug: set[_Node] = set()
        # Nodes whose text holds "] " or "_verbose,": where another line may hide in a
        # line ``_at_once`` takes whole (``_region``'s two scans read it as it is).
        self.odd_nodes: set[_Node] = set()
        # Reading the second part of a split file (``_read_split``): what depends on the
        # lines before it is kept for the merge: lines of threads that have dispatched
        # nothing here yet (they may belong to an eager op dispatched before), and eager
        # executions whose wrapper was instantiated before.
        self.tail = False
        self.dispatched: set[Optional[bytes]] = set()
        self.orphans: list[tuple[bytes, int]] = []
        self.unresolved: Counter[tuple[bytes, tuple[bytes, bytes]]] = Counter()
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
            found = self.wrapper_kernels.get(key)
            if found is None and self.tail:
                self.unresolved[(ctx.dispatch, key)] += 1  # perhaps instantiated before
                return
            kernel, dtype = found or (b"", b"")
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

    def _line(self, line: bytes, off: int) -> None:
        """Read one line (without its newline) as it is, at file offset ``off``.

        Cheap tests first: the source location before the first ``"] "`` picks the
        handler (cached per location), and the prefix regex runs only on lines whose
        location we read."""
        if line.startswith(b"onednn_verbose,"):
            self._verbose(line, off, True)
            return
        j = line.find(b"] ")
        if j < 0:
            if b"_verbose," in line:
                self._stray(line, off)
            elif line.startswith(_CPU_FEATURES):
                self._cpu(line)
            return
        key = line[line.rfind(b" ", 0, j) + 1:j]
        entry = self.locations.get(key)
        if entry is None:
            entry = self._lookup(key)
        if entry is _JUNK:
            self._stray(line, off)
            return
        if not self.fmt:
            m = _PREFIX.match(line)
            if m is not None:
                self._first(m)
        # entry is a (prefix, handler) tuple once _JUNK and _PLAIN are out; mypy cannot
        # narrow the object() sentinels.
        if entry is _PLAIN or not line.startswith(entry[0], j + 2):  # type: ignore[index]
            # Not searched for lines written into it: TF writes whole lines, so a cut
            # line starts with a oneDNN line (stdout) or has a location we read.
            self.last_prefixed = line
            if _CPU_GUARD in line:
                self.cpu_blocks = _CPU_BLOCKS
            return
        m = _PREFIX.match(line)
        if m is None:  # a line written into the start of this one
            self._garbled(line, off)
            return
        self.last_prefixed = line
        self.last_matched = line
        if ((line.find(b"] ", j + 2) < 0 and b"_verbose," not in line)
                or not self._garbled(line, off)):
            entry[1](line, m.end(), m.group(6), off, False)  # type: ignore[index]  # as above

    def _sets_prefixed(self, line: bytes) -> bool:
        """Whether ``_line`` takes ``line`` as the last line with a TF prefix (its time is
        the log's last), without reading it."""
        if line.startswith(b"onednn_verbose,"):
            return False
        j = line.find(b"] ")
        if j < 0:
            return False
        key = line[line.rfind(b" ", 0, j) + 1:j]
        entry = self.locations.get(key)
        if entry is None:
            entry = self._lookup(key)
        if entry is _JUNK:
            return False
        if entry is _PLAIN or not line.startswith(entry[0], j + 2):  # type: ignore[index]  # as in _line
            return True
        return _PREFIX.match(line) is not None

    def _slow(self, line: bytes, off: int, at: int) -> None:
        """``_line``, noting ``at`` (the line's start in the block) when the line set
        ``last_matched``: the block's Process node lines after it may set it again."""
        before = self.last_matched
        self._line(line, off)
        if self.last_matched is not before:
            self.matched_at = at

    def one_line(self, line: bytes, off: int) -> None:
        """A line read on its own (the head of an over-long line, a last line without
        newline, a line of ``parse_lines`` with a newline inside)."""
        self.lines += 1
        if not line.isascii() or b"\x00" in line:
            self._odd_bytes(line, off)
        self._line(line, off)

    # -- the hot path: a block of whole lines ------------------------------------------
    def block(self, data: bytes, start: int, end: int, off: int) -> None:
        """Read the lines ``data[start:end]``, each ending in a newline and none longer
        than MAX_LINE; ``off`` is the file offset of ``data[start]``.

        Lines are not split: whole-block searches in C find the few lines a handler
        reads one by one (``_SPECIAL``, oneDNN lines, the CPU line), and between them
        one regex reads every ``Process node`` line at once (``_gap``). Lines of no
        interest are never looked at in Python."""
        if start >= end:
            return
        base = off - start  # file offset of data[0]
        self.lines += data.count(b"\n", start, end)
        if not data.isascii() or b"\x00" in data:
            self._odd_block(data, start, end, base)
        self.matched_at = -1
        pos = start
        # Until the first line with a TF prefix sets the format, every line that may
        # be one (it has a "] ") is read on its own, in order.
        while not self.fmt and pos < end:
            j = data.find(b"] ", pos, end)
            if j < 0:
                break
            ls = data.rfind(b"\n", pos, j) + 1 or pos
            le = data.find(b"\n", j, end) + 1
            self._region(data, pos, ls, base)
            self._slow(data[ls:le - 1], base + ls, ls)
            pos = le
        self._region(data, pos, end, base)
        self._tails(data, start, end)
        if self.cpu_blocks:
            self.cpu_blocks -= 1

    def _odd_block(self, data: bytes, start: int, end: int, base: int) -> None:
        """``_odd_bytes`` for each line of the block holding a NUL or a non-ASCII byte."""
        pos = start
        while pos < end:
            m = _ODD.search(data, pos, end)
            if m is None:
                return
            p = m.start()
            ls = data.rfind(b"\n", pos, p) + 1 or pos
            le = data.find(b"\n", p, end)
            self._odd_bytes(data[ls:le], base + ls)
            pos = le + 1

    def _region(self, data: bytes, a: int, b: int, base: int) -> None:
        """The lines ``data[a:b]``: those a handler reads one by one, in order, and the
        Process node lines between them at once."""
        if a >= b or (not self.cpu_blocks and self._at_once(data, a, b, base)):
            return
        spans: dict[int, int] = {}  # line start -> end (after its newline)
        for m in _SPECIAL.finditer(data, a, b):
            p = m.start()
            ls = data.rfind(b"\n", a, p) + 1 or a
            if ls not in spans:
                spans[ls] = data.find(b"\n", p, b) + 1
                if data.startswith(_CPU_GUARD, p + 2):
                    self.cpu_blocks = _CPU_BLOCKS
        for marker in (b"_verbose,", _CPU_FEATURES) if self.cpu_blocks else (b"_verbose,",):
            p = data.find(marker, a, b)
            while p >= 0:
                ls = data.rfind(b"\n", a, p) + 1 or a
                le = data.find(b"\n", p, b) + 1
                spans.setdefault(ls, le)
                p = data.find(marker, le, b)
        cur = a
        for ls in sorted(spans):
            if ls > cur:
                self._gap(data, cur, ls, base)
            le = spans[ls]
            self._slow(data[ls:le - 1], base + ls, ls)
            cur = le
        if cur < b:
            self._gap(data, cur, b, base)

    def _at_once(self, data: bytes, a: int, b: int, base: int) -> bool:
        """``_region`` with one scan for both kinds of lines (``_AT_ONCE``), when that reads
        them as the two scans would: every Process node line's text has a node (made here
        for a new one) without "] " or "_verbose," in it (no line hides in it), no other
        line is taken whole by the scan, and no oneDNN line holds "] ". False (nothing read
        but new texts' nodes) otherwise.

        A line the handlers read is found again by its text from the end of the one before
        (nothing between holds it: the scan would have matched it there); oneDNN lines
        only count primitives, so they are read in the order of the handlers' lines only."""
        found = _AT_ONCE.findall(data, a, b)
        specials = list(filter(None, map(_THIRD, found)))
        nodes = list(map(self.entries.get, map(_SECOND, found)))
        if nodes.count(None) != len(specials) and not self._new_texts(found, nodes):
            return False
        if self.odd_nodes and not self.odd_nodes.isdisjoint(nodes):
            return False
        spans: list[tuple[int, int, int]] = []  # (line start, end after its newline, index)
        cur = a
        for i, text in zip(itertools.compress(range(len(found)), map(_THIRD, found)), specials):
            if text.startswith(_CPU_GUARD):  # the CPU line's search starts here
                return False
            p = data.find(b"] " + text, cur, b)
            if p < 0:  # cannot be: the scan found it there
                return False
            ls = data.rfind(b"\n", a, p) + 1 or a
            cur = data.find(b"\n", p, b) + 1
            spans.append((ls, cur, i))
        p = data.find(b"_verbose,", a, b)
        while p >= 0:
            ls = data.rfind(b"\n", a, p) + 1 or a
            le = data.find(b"\n", p, b) + 1
            if data.find(b"] ", ls, le) >= 0:  # perhaps a TF line: read in line order
                return False
            spans.append((ls, le, -1))
            p = data.find(b"_verbose,", le, b)
        spans.sort()
        done = 0  # index in ``found`` of the next Process node line to read
        for ls, le, i in spans:
            if i > done:
                self._gap_found(found[done:i], nodes[done:i])
            if i >= 0:
                done = i + 1
            self._slow(data[ls:le - 1], base + ls, ls)
        if done < len(found):
            self._gap_found(found[done:], nodes[done:])
        return True

    def _new_texts(self, found: list[tuple[bytes, bytes, bytes]], nodes: list[Optional[_Node]]) -> bool:
        """The nodes of the Process node lines of ``_AT_ONCE`` whose text is new, put in
        ``nodes``; False if a line is not laid out so, a text holds another line, or the
        table of texts would start again (the two scans then read the block). A node made
        before the block's earlier lines are read is the same: what it says comes from its
        text alone, and whether a debug node's input is still wanted is asked again when
        its line is filed."""
        new = [i for i, node in enumerate(nodes) if node is None and not found[i][2]]
        if max(len(self.entries), len(self.pending_debug)) + len(new) >= _MAX_ENTRIES:
            return False
        for i in new:
            step_id, text = found[i][0], found[i][1]
            node = (self.entries.get(text) or self._entry(text)) if step_id else None
            if node is None:
                return False
            nodes[i] = node
        return True

    def _gap_found(self, found: list[tuple[bytes, bytes, bytes]],
                   nodes: list[Optional[_Node]]) -> None:
        """Process node lines of ``_AT_ONCE`` (all laid out, their nodes known): ``_gap``'s."""
        self._gap_nodes(found, dict.fromkeys(map(_FIRST, found)), cast("list[_Node]", nodes))

    def _gap(self, data: bytes, a: int, b: int, base: int) -> None:
        """Every ``executor.cc`` Process node line in ``data[a:b]`` (lines no other handler
        reads), by one regex in C; a line it cannot take whole is read by ``_line``."""
        found = _PROCESS_LINE.findall(data, a, b)
        if not found:
            return
        step_ids = dict.fromkeys(map(_FIRST, found))
        # Each line's node, looked up in C: once the texts are known (after a step or two)
        # that is all a line costs here.
        keys: list[Optional[_Node]] = list(map(self.entries.get, map(_SECOND, found)))
        if None in keys:
            texts = dict.fromkeys(map(_SECOND, found))
            # this gap's nodes (the table may start again on the way)
            found_nodes: dict[bytes, Optional[_Node]] = dict(zip(texts, map(self.entries.get, texts)))
            for key, node in found_nodes.items():
                if node is None:
                    node = found_nodes[key] = self._entry(key)
                    if node is None:  # another line written into it
                        self._gap_from(data, a, b, base, found, key)
                        return
            keys = list(map(found_nodes.__getitem__, map(_SECOND, found)))
        if b"" in step_ids:  # a line not laid out as _PROCESS_LINE expects
            self._gap_from(data, a, b, base, found, None)
            return
        self._gap_nodes(found, step_ids, cast("list[_Node]", keys))  # no None left

    def _gap_nodes(self, found: Sequence[tuple[bytes, ...]], step_ids: dict[bytes, None],
                   nodes: list[_Node]) -> None:
        """A gap's Process node lines ((step id, text, ...) as a regex found them), all laid
        out as ``_PROCESS_LINE`` expects, and their nodes: ``_bulk``, after the constant
        folding lines."""
        if b"-1" in step_ids:
            # Step -1 is grappler's constant folding evaluating nodes while it
            # optimises the graph, not a run of the graph.
            for step_id, node in zip(map(_FIRST, found), nodes):
                if step_id == b"-1" and node.kind != _N_IGNORED:
                    self.folded.add(node.name)
            kept = [(x, node) for x, node in zip(found, nodes) if x[0] != b"-1"]
            found = [x for x, _node in kept]
            nodes = [node for _x, node in kept]
            del step_ids[b"-1"]
            if not found:
                return
        steps = self.steps
        if len(steps) + sum(s not in steps for s in step_ids) > _OPEN_STEPS:
            # a step is filed to open another: that happens at a line, read them so
            self._apply(found, nodes)
            return
        self._bulk(found, step_ids, nodes)

    def _bulk(self, found: Sequence[tuple[bytes, ...]], step_ids: dict[bytes, None],
              keys: list[_Node]) -> None:
        """Process node lines (step id, text) and their nodes (all with entries), with no
        step to file on the way: counted per node in C; each step keeps its nodes (one
        object per text, so that a line's text is not kept)."""
        self.key_counts.update(keys)
        seq = self.seq
        self.key_last.update(zip(keys, range(seq, seq + len(keys))))
        self.seq = seq + len(keys)
        steps = self.steps
        if len(step_ids) == 1:
            (step_id,) = step_ids
            step = steps.get(step_id)
            if step is None:
                step = steps[step_id] = _Step()
            step.keys += keys
            groups = [step]
        else:
            groups = []
            for step_id in step_ids:
                if step_id not in steps:
                    steps[step_id] = _Step()
            for step_id, node in zip(map(_FIRST, found), keys):
                steps[step_id].keys.append(node)
            groups = [steps[s] for s in step_ids]
        for step in groups:
            if len(step.keys) > _MAX_ENTRIES:  # a long step: keep each text's last line
                step.keys = list(dict.fromkeys(step.keys[::-1]))[::-1]
        if self.pending_debug:
            hits = self.pending_debug.intersection(keys)
            if hits:
                for node in dict.fromkeys(keys):  # in line order: the first line's input wins
                    if node in hits:
                        self.pending_debug.discard(node)
                        if node.name not in self.debug_inputs:
                            self._debug_input(node.name, node.text)
        if len(self.key_last) > _MAX_ENTRIES:
            self._fold_keys()

    def _fold_keys(self) -> None:
        """Add the counts of the lines read in bulk to the per-node ones, each node's
        kernel the one of its last line."""
        last = self.key_last
        for node in sorted(last, key=last.__getitem__):
            if node.kind == _N_IGNORED or node.kind == _N_DEAD:
                continue
            n = self.key_counts[node]
            self.graph_exec[node.name] += n
            self.kernel_exec[node.kernel] += n
            if last[node] > self.name_seq.get(node.name, -1):
                self.graph_kernels[node.name] = node.pair
                self.name_seq[node.name] = last[node]
        self.key_counts.clear()
        last.clear()

    def _gap_from(self, data: bytes, a: int, b: int, base: int,
                  found: list[tuple[bytes, bytes]], key: Optional[bytes]) -> None:
        """The gap's lines before the first that ``_apply`` cannot take (one whose text is
        ``key``, or none laid out so) by ``_apply``, the rest one by one."""
        i = 0
        get = self.entries.get
        nodes: list[_Node] = []
        for step_id, k in found:
            node = get(k) if step_id and k != key else None
            if node is None:
                node = self._entry(k) if step_id and k != key else None
                if node is None:
                    break
            nodes.append(node)
            i += 1
        self._apply(found[:i], nodes)
        self._gap_lines(data, a, b, base, i)

    def _entry(self, key: bytes) -> Optional[_Node]:
        """What ``_executor`` reads from a Process node line ending in ``key``
        (``{{node NAME}} = KERNEL[attrs](inputs) device: D``), kept per distinct key:
        a node prints the same text at every step. None when another line was written
        into it (such a line is read by ``_line``, which splits it)."""
        if (b"] " in key or b"_verbose," in key) and _EMBEDDED.search(key) is not None:
            return None
        j = key.find(b"}} = ")
        name = key[7:j]
        k = _KERNEL_END.search(key, j + 5)
        if k is None:  # not in a key _PROCESS_LINE matched; for the type checker
            return None
        kernel = key[j + 5:k.start()]
        t = _T_ATTR.search(key, k.start())
        if (kernel in _IGNORED_KERNELS and kernel != b"_Arg") or name in _IGNORED_NODES:
            kind = _N_IGNORED
        elif _DEAD in key:
            kind = _N_DEAD
        elif kernel.startswith(_DEBUG_KERNEL):
            kind = _N_DEBUG
        else:
            kind = _N_RUN
        node = _Node(name, kernel, (kernel, t.group(1) if t is not None else b""), kind, key)
        if len(self.entries) >= _MAX_ENTRIES:
            self.entries.clear()  # keys that vary per line: memory stays bounded
            self.odd_nodes.clear()
        self.entries[key] = node
        if b"] " in key or b"_verbose," in key:
            self.odd_nodes.add(node)
        if kind == _N_DEBUG and name not in self.debug_inputs:
            if len(self.pending_debug) >= _MAX_ENTRIES:
                self.pending_debug.clear()  # such texts only: inputs then taken from _line
            self.pending_debug.add(node)
        return node

    def _apply(self, found: Sequence[tuple[bytes, ...]], nodes: list[_Node]) -> None:
        """``_executor`` on Process node lines already parsed: (step id, text) and node."""
        for x, node in zip(found, nodes):
            step_id, key = x[0], x[1]
            name, kernel, pair, kind = node.name, node.kernel, node.pair, node.kind
            if kind == _N_IGNORED:
                continue
            if step_id == b"-1":
                # Step -1 is grappler's constant folding evaluating nodes while it
                # optimises the graph, not a run of the graph.
                self.folded.add(name)
                continue
            if kind == _N_DEAD:
                continue  # an untaken branch: the node ran no kernel at this step
            self._ran(name, kernel, pair, step_id, key if kind == _N_DEBUG else None)

    def _ran(self, name: bytes, kernel: bytes, pair: tuple[bytes, bytes], step_id: bytes,
             debug_line: Optional[bytes]) -> None:
        """One execution of a graph node at a step, read on its own (``debug_line``: the
        text of a tfdbg debug node, whose input and target it names)."""
        self.graph_exec[name] += 1
        self.kernel_exec[kernel] += 1
        self.graph_kernels[name] = pair
        self.name_seq[name] = self.seq
        self.seq += 1
        step = self.steps.get(step_id)
        if step is None:
            if len(self.steps) >= _OPEN_STEPS:
                self._close_step(next(iter(self.steps)))
            step = self.steps[step_id] = _Step()
        step.nodes[name] = pair
        if debug_line is not None:
            step.debug_lines[name] = debug_line
            if name not in self.debug_inputs:
                self._debug_input(name, debug_line)
            target = self.debug_targets.get(name)
            if target is not None:
                step.contexts.add(target[0])

    def _gap_lines(self, data: bytes, a: int, b: int, base: int, skip: int) -> None:
        """The Process node lines of ``data[a:b]`` from the ``skip``-th on, one by one:
        those ``_entry`` takes as in ``_apply``, the others by ``_line``."""
        for i, m in enumerate(_PROCESS_LINE.finditer(data, a, b)):
            if i < skip:
                continue
            step_id, key = m.group(1), m.group(2)
            node = (self.entries.get(key) or self._entry(key)) if step_id else None
            if node is not None:
                self._apply([(step_id, key)], [node])
            else:
                ls = data.rfind(b"\n", a, m.start()) + 1 or a
                self._slow(data[ls:m.end()], base + ls, ls)

    def _is_fast(self, line: bytes) -> bool:
        """Whether ``block`` reads ``line`` as a Process node line of a gap (``_apply``)."""
        if _SPECIAL.search(line) or b"_verbose," in line or (self.cpu_blocks and _CPU_FEATURES in line):
            return False
        m = _PROCESS_LINE.search(line)
        if m is None or not m.group(1):
            return False
        # The text's own entry if it has one: a new object for a known text would make
        # the steps running it look different to ``_step_files``'s table.
        return (self.entries.get(m.group(2)) or self._entry(m.group(2))) is not None

    def _tails(self, data: bytes, start: int, end: int) -> None:
        """The block's last line with a TF prefix, and its last line a handler parsed:
        their times end the log's time span."""
        e = end
        while e > start:
            j = data.rfind(b"] ", start, e)
            if j < 0:
                break
            ls = data.rfind(b"\n", start, j) + 1 or start
            le = data.find(b"\n", j, end)
            line = data[ls:le]
            if self._sets_prefixed(line):
                self.last_prefixed = line
                break
            e = ls
        # A Process node line read by _apply (new lines are read by _line, which set
        # last_matched itself, at matched_at) sets it when its prefix can be read.
        e = end
        lo = max(start, self.matched_at + 1)
        while e > lo:
            p = data.rfind(b"] " + _PROCESS, lo, e)
            if p < 0:
                break
            ls = data.rfind(b"\n", start, p) + 1 or start
            line = data[ls:data.find(b"\n", p, end)]
            if self._is_fast(line) and _PREFIX.match(line) is not None:
                self.last_matched = line
                break
            e = ls

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
        if self.tail:
            self.dispatched.add(tid)
        prev = self.contexts.get(tid)
        if prev is not None:
            self._finalize(prev)
        self.contexts[tid] = _Context(op, device)

    def _pflr(self, line: bytes, at: int, tid: Optional[bytes], off: int, cut: bool) -> None:
        ctx = self.contexts.get(tid)
        if ctx is None:
            if self.tail and tid not in self.dispatched:
                self.orphans.append((line, off))
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
        if self.tail and tid not in self.dispatched:
            self.orphans.append((line, off))
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
        start, first = _first_input(line)
        if start < 0:
            return
        if first:
            self.debug_inputs[name] = first
        op = _DEBUG_OP_NAME.search(line, 0, start)
        ctx = _DEBUG_CONTEXT.search(line, 0, start)
        if op is not None and ctx is not None:
            slot = _DEBUG_SLOT.search(line, 0, start)
            self.targets_version += 1
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

    def _context_inputs(self, texts: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
        """Debug node -> the input its text names, for the (name, text) pairs of one step
        whose input is not the one ``debug_inputs`` keeps (the first line of the name)."""
        out: dict[bytes, bytes] = {}
        memo = self.text_inputs
        for name, text in texts:
            first = memo.get(text)
            if first is None:
                first = _first_input(text)[1]
                if len(memo) >= _MAX_ENTRIES:
                    memo.clear()
                memo[text] = first
            if first and self.debug_inputs.get(name, first) != first:
                out[name] = first
        return out

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
        s = line.find(b" step ", at) + 6
        self._ran(name, kernel, (kernel, dtype), line[s:line.find(b" ", s)],
                  line if kernel.startswith(_DEBUG_KERNEL) else None)

    def _close_step(self, step_id: bytes) -> None:
        """File a step's nodes under the dump graphs whose debug nodes ran in it."""
        step = self.steps.pop(step_id)
        nodes, contexts = step.nodes, step.contexts
        inputs = self._context_inputs(step.debug_lines.items()) if step.debug_lines else {}
        if step.keys:
            bulk_nodes, bulk_contexts, bulk_inputs = self._step_files(step.keys)
            nodes = {**bulk_nodes, **nodes} if nodes else bulk_nodes
            contexts = contexts | bulk_contexts
            if bulk_inputs:
                inputs = {**bulk_inputs, **inputs}
        for context in contexts:
            self.scoped.setdefault(context, {}).update(nodes)
            if inputs:
                self.scoped_inputs.setdefault(context, {}).update(inputs)

    def _step_files(self, keys: list[_Node]) -> tuple[dict[bytes, tuple[bytes, bytes]],
                                                     frozenset[bytes], dict[bytes, bytes]]:
        """The nodes of a step's texts read in bulk (the last line of a name wins), the
        dump graphs its debug nodes name and those debug nodes' inputs where they differ
        from ``debug_inputs``: the same for every step running these texts while the
        debug nodes' targets stay as they are."""
        texts = frozenset(keys)
        got = self.step_sets.get(texts)
        if got is not None and got[0] == self.targets_version:
            return got[1], got[2], got[3]
        nodes: dict[bytes, tuple[bytes, bytes]] = {}
        contexts: set[bytes] = set()
        debug: list[tuple[bytes, bytes]] = []
        duplicate = False
        for node in texts:
            if node.kind == _N_IGNORED or node.kind == _N_DEAD:
                continue
            duplicate = duplicate or node.name in nodes
            nodes[node.name] = node.pair
            if node.kind == _N_DEBUG:
                debug.append((node.name, node.text))
                target = self.debug_targets.get(node.name)
                if target is not None:
                    contexts.add(target[0])
        if duplicate:  # two texts of one name: the later line's kernel
            nodes = {}
            for node in keys:
                if node.kind != _N_IGNORED and node.kind != _N_DEAD:
                    nodes[node.name] = node.pair
        if len(self.step_sets) >= 256:
            self.step_sets.clear()
        frozen = frozenset(contexts)
        inputs = self._context_inputs(debug)
        self.step_sets[texts] = (self.targets_version, nodes, frozen, inputs)
        return nodes, frozen, inputs

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

    # -- a file read in two halves --------------------------------------------------
    _TAIL_FIELDS = ("fmt", "first_time", "last_prefixed", "last_matched", "onednn_opts",
                    "cpu_features", "dispatch", "eager", "graph_kernels", "debug_inputs",
                    "instantiated", "folded", "debug_targets", "debug_modes",
                    "circular_buffer_size", "run_ids", "xla_launches", "scoped", "graph_exec",
                    "kernel_exec", "prims", "prim_ms", "wrapper_kernels", "issues", "lines", "scoped_inputs",
                    "bytes", "dispatched", "orphans", "unresolved")

    def tail_state(self) -> dict[str, Any]:
        """What this parser (of a file's second half, ``tail``) read, to send back: its
        steps filed, its eager ops finished."""
        for tid in list(self.contexts):
            self._finalize(self.contexts.pop(tid))
        for step_id in list(self.steps):
            self._close_step(step_id)
        self._fold_keys()
        return {name: getattr(self, name) for name in self._TAIL_FIELDS}

    def merge_tail(self, t: dict[str, Any]) -> None:
        """Add what a parser of the rest of the file read (``tail_state``) to what this one
        read of its first part. Its lines of threads that dispatched nothing there yet are
        read here first (they may continue an eager op dispatched here); its eager ops
        whose wrapper it did not see instantiated take the kernel instantiated here. A
        step running across the split is filed in two parts."""
        for line, off in t["orphans"]:
            self._line(line, off)
        for tid in t["dispatched"]:
            ctx = self.contexts.pop(tid, None)
            if ctx is not None:  # its next dispatch, there, ended it
                self._finalize(ctx)
        for (dispatch, key), n in t["unresolved"].items():
            kernel, dtype = self.wrapper_kernels.get(key, (b"", b""))
            self.eager[(dispatch, kernel, dtype)] += n
        for step_id in list(self.steps):
            self._close_step(step_id)
        self._fold_keys()
        if not self.fmt:
            self.fmt, self.first_time = t["fmt"], t["first_time"]
        for name in ("last_prefixed", "last_matched", "onednn_opts"):
            if t[name] is not None:
                setattr(self, name, t[name])
        if t["cpu_features"] is not None:
            self.cpu_features = t["cpu_features"] | (self.cpu_features or frozenset())
        if self.circular_buffer_size is None:
            self.circular_buffer_size = t["circular_buffer_size"]
        for name in ("dispatch", "eager", "xla_launches", "graph_exec", "kernel_exec", "prims"):
            getattr(self, name).update(t[name])
        for key, ms in t["prim_ms"].items():
            self.prim_ms[key] = self.prim_ms.get(key, 0.0) + ms
        first = set(self.debug_inputs)  # the first line of a debug node gives its input
        for name in ("debug_targets", "debug_modes"):
            mine = getattr(self, name)
            mine.update((k, v) for k, v in t[name].items() if k not in first)
        # A debug node the tail saw first there kept its input only where it read
        # another one; where this part's first line of the name read another tensor,
        # the tail's graphs running it read the tail's.
        theirs: dict[bytes, bytes] = t["debug_inputs"]
        differ = {k for k, v in theirs.items() if self.debug_inputs.get(k, v) != v}
        for k, v in theirs.items():
            self.debug_inputs.setdefault(k, v)
        for context, nodes in t["scoped"].items():
            own: dict[bytes, bytes] = t["scoped_inputs"].get(context, {})
            moved = {k: theirs[k] for k in differ.intersection(nodes) if k not in own}
            moved.update((k, v) for k, v in own.items() if self.debug_inputs.get(k) != v)
            if moved:
                self.scoped_inputs.setdefault(context, {}).update(moved)
        self.graph_kernels.update(t["graph_kernels"])
        self.instantiated.update(t["instantiated"])
        self.wrapper_kernels.update(t["wrapper_kernels"])
        self.folded |= t["folded"]
        self.run_ids |= t["run_ids"]
        for context, nodes in t["scoped"].items():
            self.scoped.setdefault(context, {}).update(nodes)
        for kind, (offset, count) in t["issues"].items():
            entry = self.issues.setdefault(kind, [offset, 0])
            entry[1] += count
        self.lines += t["lines"]
        self.bytes = t["bytes"]

    # -- result --------------------------------------------------------------------
    def result(self) -> LogFacts:
        for tid in list(self.contexts):
            self._finalize(self.contexts.pop(tid))
        for step_id in list(self.steps):
            self._close_step(step_id)
        self._fold_keys()
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
        facts.context_debug_inputs = {_s(c): {_s(n): _s(i) for n, i in inputs.items()}
                                      for c, inputs in self.scoped_inputs.items()}
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


# Bytes read at a time (the fuzz tests shrink it); memory is about twice this.
_CHUNK = 1 << 22


def _lines_in(parser: _Parser, data: bytes, start: int, end: int, off: int) -> None:
    """``parser.block`` on the lines ``data[start:end]`` (whole lines; ``off`` the file
    offset of ``data[start]``), a line longer than MAX_LINE read as its head alone.

    Such a line holds a window of ``width`` bytes without newline aligned on the ones
    searched, so only those few windows are searched for one."""
    cap = MAX_LINE
    width = (cap + 2) // 2
    base = off - start
    w = start
    while w + width <= end:
        if data.find(b"\n", w, w + width) >= 0:
            w += width
            continue
        ls = data.rfind(b"\n", start, w) + 1 or start
        le = data.find(b"\n", w + width, end)
        if le - ls > cap:
            parser.block(data, start, ls, base + start)
            parser.issue(_LONG, base + ls)
            parser.one_line(data[ls:ls + cap], base + ls)
            start = le + 1
        w = le + 1
    parser.block(data, start, end, base + start)


def _read_file(f: BinaryIO, parser: _Parser, start: int = 0, stop: Optional[int] = None) -> None:
    """Read a file (from ``start``, a line start, to ``stop``, one after a newline, or the
    end) in chunks of ``_CHUNK`` bytes, each block of whole lines at once; a line longer
    than MAX_LINE keeps its head and the rest is read and dropped, so memory stays
    bounded. Sets ``parser.bytes`` and notes a last line without newline."""
    cap = MAX_LINE
    if start:
        f.seek(start)
    base = start      # file offset of ``data[0]``
    carry = b""       # the unfinished line before ``data``
    carry_off = 0     # its file offset
    dropping = False  # inside the cut-off tail of a long line
    while True:
        data = f.read(_CHUNK if stop is None else min(_CHUNK, stop - base))
        if not data:
            break
        s = 0
        if dropping:
            s = data.find(b"\n") + 1
            if not s:
                base += len(data)
                continue
            dropping = False
        if carry:
            i = data.find(b"\n", s)
            if i < 0:
                carry += data[s:]
                s = len(data)
            else:
                line = carry + data[s:i]
                carry = b""
                if len(line) > cap:
                    parser.issue(_LONG, carry_off)
                    parser.one_line(line[:cap], carry_off)
                else:
                    parser.block(line + b"\n", 0, len(line) + 1, carry_off)
                s = i + 1
        last = data.rfind(b"\n", s) + 1
        if last > s:
            _lines_in(parser, data, s, last, base + s)
            s = last
        if s < len(data):
            if not carry:
                carry_off = base + s
            carry += data[s:]
        base += len(data)
        if len(carry) > cap:
            parser.issue(_LONG, carry_off)
            parser.one_line(carry[:cap], carry_off)
            carry = b""
            dropping = True
    if carry:
        parser.issue(_PARTIAL, carry_off)
        parser.tail_cut = True
        parser.one_line(carry, carry_off)
    parser.bytes = base


def parse_lines(lines: Iterable[bytes], path: str = "<lines>") -> LogFacts:
    """Parse the given lines (each with or without its newline); offsets count
    one newline per line. Lines longer than MAX_LINE are cut as in ``read_log``."""
    parser = _Parser(path)
    pending = bytearray()  # whole lines, read as one block
    pending_off = 0
    pos = 0
    for line in lines:
        line = line[:-1] if line.endswith(b"\n") else line
        if len(line) > MAX_LINE or b"\n" in line:
            parser.block(bytes(pending), 0, len(pending), pending_off)
            pending.clear()
            if len(line) > MAX_LINE:
                parser.issue(_LONG, pos)
            parser.one_line(line[:MAX_LINE], pos)
            pos += len(line) + 1
            pending_off = pos
            continue
        pending += line
        pending += b"\n"
        pos += len(line) + 1
        if len(pending) >= _CHUNK:
            parser.block(bytes(pending), 0, len(pending), pending_off)
            pending.clear()
            pending_off = pos
    parser.block(bytes(pending), 0, len(pending), pending_off)
    parser.bytes = pos
    return parser.result()


def read_log(path: str) -> LogFacts:
    """Stream one log file from disk; constant memory whatever its size. A big local
    file is read in two halves at once, the second by a forked child (``_read_split``).

    Raises OSError if the file cannot be opened or read."""
    parser = _Parser(path)
    with fs.open_read(path) as f:
        split = _split_point(f, path)
        child = _fork_tail(f, path, split) if split else None
        if child is None:
            _read_file(f, parser)
        else:
            try:
                f.seek(0)
                _read_file(f, parser, 0, split)
            except BaseException:
                forks.abandon(child)
                raise
            tail = _tail_state(child)
            if tail is None:  # the child failed (logged): read the second half here
                _read_file(f, parser, split)
            else:
                parser.merge_tail(tail)
    return parser.result()


# A local log this big is read in two halves at once when another core is there.
SPLIT_BYTES = 64 << 20


def _split_point(f: BinaryIO, path: str) -> int:
    """Where to split ``path`` for two readers: just after a newline near its middle;
    0 for no split (small, remote, a running thread that forking could deadlock, one core,
    or no newline near the middle)."""
    if fs.is_remote(path) or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 \
            or threading.active_count() != 1:
        return 0
    try:
        size = os.fstat(f.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        return 0
    if size < SPLIT_BYTES:
        return 0
    f.seek(size // 2)
    near = f.read(min(_CHUNK, MAX_LINE))
    i = near.find(b"\n")
    return size // 2 + i + 1 if i >= 0 else 0


def _fork_tail(f: BinaryIO, path: str, split: int) -> Optional[tuple[int, int]]:
    """A forked child reading ``path`` from ``split`` on: (pid, fd its pickled state comes
    on), or None (then this process reads it all)."""
    def tail_state() -> bytes:  # runs in the child
        tail = _Parser(path)
        tail.tail = True
        with fs.open_read(path) as g:
            _read_file(g, tail, split)
        return pickle.dumps(tail.tail_state(), protocol=pickle.HIGHEST_PROTOCOL)

    try:
        return forks.start(tail_state)
    except OSError as err:
        logger.warning("%s: cannot fork a second reader (%s): read in one process", path, err)
        return None


def _tail_state(child: tuple[int, int]) -> Optional[dict[str, Any]]:
    """The state the child of ``_fork_tail`` sent, or None (logged) if it failed."""
    status, data = forks.collect(child)
    if status != 0:
        logger.warning("the second reader of a log failed (wait status %d): read here", status)
        return None
    try:
        state = pickle.loads(data)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as err:
        logger.warning("the second reader of a log sent no state (%s): read here", err)
        return None
    return state if isinstance(state, dict) else None


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
