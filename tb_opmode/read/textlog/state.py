"""What the text log reader keeps between lines.

In: nothing (the reader's layers, ``steps``, ``handlers``, ``lines`` and ``scan``, build on
``ParseState``). Out: ``ParseState``, every table the reading fills, with the little
bookkeeping all layers share (problems, the first prefix, an eager op counted); and the
small records it holds: ``EagerOp`` (the op a thread last dispatched), ``OpenStep`` (an
executor step whose lines may still come), ``ProcessText`` (what one Process node text
says). All is bytes: text is decoded once, when ``facts.log_facts`` builds the answer.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from ..trace_log import TraceLineReader
from . import format as log_format
from .format import (
    BINARY,
    DEAD_NODE,
    DEBUG_KERNEL,
    NON_UTF8,
    PLUMBING_KERNELS,
    PLUMBING_NODES,
    TF213_STYLE,
    TF221_STYLE,
    Route,
    prefix_time,
)

__all__ = ["ParseState", "EagerOp", "OpenStep", "ProcessText", "KIND_RAN", "KIND_PLUMBING",
           "KIND_DEAD", "KIND_DEBUG", "MAX_TEXTS", "MAX_OPEN_STEPS"]

# What a Process node text is: a node that ran a kernel, plumbing (``_Retval`` ...,
# ``_SOURCE``/``_SINK``), a node of an untaken branch, or one of tfdbg's debug nodes.
KIND_RAN, KIND_PLUMBING, KIND_DEAD, KIND_DEBUG = range(4)
# Distinct texts kept in a table (each node prints the same at every step); past this
# the table starts again, so that texts differing per line keep memory bounded.
MAX_TEXTS = 1 << 16
# Steps whose lines may still come (executors of several functions interleave their
# lines); the oldest is filed when one more starts.
MAX_OPEN_STEPS = 64


class ProcessText:
    """What a Process node line's ``{{node NAME}} = KERNEL[...]`` says. One object per
    distinct text, hashed by identity: lines are counted per object, in C."""

    __slots__ = ("name", "kernel", "pair", "kind", "text")

    def __init__(self, text: bytes, name_end: int, kernel_end: int) -> None:
        """``text``, from "{{node " to the end of the line: its NAME ends at ``name_end``
        (the "}} = " after it), its KERNEL at ``kernel_end`` (the "[" or "(" after it)."""
        name = text[7:name_end]
        kernel = text[name_end + 5:kernel_end]
        t = log_format.T_ATTR.search(text, kernel_end)
        self.name = name
        self.kernel = kernel
        self.pair = (kernel, t.group(1) if t is not None else b"")  # (kernel, its T= dtype or b"")
        self.text = text
        self.kind: int  # KIND_RAN, KIND_PLUMBING, KIND_DEAD or KIND_DEBUG
        if (kernel in PLUMBING_KERNELS and kernel != b"_Arg") or name in PLUMBING_NODES:
            self.kind = KIND_PLUMBING  # _Arg stays: a graph's arguments, which dump ops name
        elif DEAD_NODE in text:
            self.kind = KIND_DEAD
        elif kernel.startswith(DEBUG_KERNEL):
            self.kind = KIND_DEBUG
        else:
            self.kind = KIND_RAN


class EagerOp:
    """The eager op a thread (or, without thread ids, the log) last dispatched.

    ``key`` names its wrapper function (function name, component handle) once the
    "Running component function" line is seen; ``kernel``/``dtype`` are set if its kernel
    is instantiated during this execution; ``depth`` counts component functions started
    minus finished."""

    __slots__ = ("dispatch", "device", "key", "kernel", "dtype", "depth", "is_function")

    def __init__(self, dispatch: bytes, device: bytes) -> None:
        self.dispatch = dispatch
        self.device = device
        self.key: Optional[tuple[bytes, bytes]] = None
        self.kernel = b""
        self.dtype = b""
        self.depth = 0
        self.is_function = dispatch.startswith(b"__inference_")


class OpenStep:
    """The nodes one executor step ran, and the dump graphs (tfdbg context ids) whose
    debug nodes ran in it: the step runs those graphs' nodes."""

    __slots__ = ("nodes", "contexts", "texts", "debug_lines")

    def __init__(self) -> None:
        self.nodes: dict[bytes, tuple[bytes, bytes]] = {}  # of lines read one by one
        self.contexts: set[bytes] = set()
        self.debug_lines: dict[bytes, bytes] = {}  # debug node -> its line, read on its own
        # The texts of the lines counted per text, in line order (shared objects, so that
        # no line's bytes are kept): resolved when the step is filed.
        self.texts: list[ProcessText] = []


class ParseState:
    """Every table the reading of one log fills (see ``facts.LogFacts`` for the answer
    made of them)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tf_format = ""
        self.first_time: Optional[float] = None
        self.last_prefixed: Optional[bytes] = None  # last line with a TF prefix
        self.last_matched: Optional[bytes] = None  # last line a handler read
        self.onednn_opts: Optional[bool] = None
        self.cpu_features: Optional[frozenset[str]] = None
        self.dispatch: Counter[bytes] = Counter()
        self.eager_kernels: Counter[tuple[bytes, bytes, bytes]] = Counter()
        self.graph_kernels: dict[bytes, tuple[bytes, bytes]] = {}
        self.debug_inputs: dict[bytes, bytes] = {}
        # Graph nodes seen only in "Instantiating kernel" lines, and nodes that ran only
        # under constant folding (step -1).
        self.instantiated: dict[bytes, tuple[bytes, bytes]] = {}
        self.folded: set[bytes] = set()
        # Function -> the nodes its executor instantiated (node -> (kernel, dtype)): the
        # instantiation lines after its "Executing op" on its thread, until it exits.
        self.function_nodes: dict[bytes, dict[bytes, tuple[bytes, bytes]]] = {}
        self.open_functions: dict[Optional[bytes], bytes] = {}
        # Fused node -> its fused_ops attribute as written ('"BiasAdd", "Relu"').
        self.fused_ops: dict[bytes, bytes] = {}
        # TF's Python line per new trace (read.trace_log), read from the same blocks.
        self.traces = TraceLineReader()
        self.debug_targets: dict[bytes, tuple[bytes, bytes, int]] = {}
        self.debug_modes: dict[bytes, int] = {}
        self.circular_buffer_size: Optional[int] = None
        self.run_ids: set[bytes] = set()
        self.xla_launches: Counter[bytes] = Counter()
        self.graph_executions: Counter[bytes] = Counter()
        self.kernel_executions: Counter[bytes] = Counter()
        self.primitives: Counter[tuple[bytes, bytes, bytes]] = Counter()
        self.primitive_ms: dict[tuple[bytes, bytes, bytes], float] = {}
        self.problems: dict[str, list[int]] = {}  # kind -> [first offset, count]
        self.lines = 0
        self.bytes = 0
        # Set before the last line of a file when it has no newline: its last field (a
        # oneDNN time) may be cut short, so it is not taken.
        self.tail_cut = False

        # Eager ops: the one each thread runs, and the kernel each wrapper instantiated.
        self.eager_ops: dict[Optional[bytes], EagerOp] = {}
        self.wrapper_kernels: dict[tuple[bytes, bytes], tuple[bytes, bytes]] = {}
        # Without function-runtime lines a wrapper is known by (op, device) only: the
        # kernels each such key instantiated, and the runs credited to one of them without
        # an instantiation of their own. A key that instantiated several kernels
        # (Transpose of int32, stock; of float, oneDNN) cannot tell which its other runs used.
        self.keyless_kernels: dict[tuple[bytes, bytes], set[bytes]] = {}
        self.keyless_runs: Counter[tuple[bytes, bytes, bytes, bytes]] = Counter()

        # Executor steps, and the nodes filed per dump graph (tfdbg context id).
        self.open_steps: dict[bytes, OpenStep] = {}
        self.context_kernels: dict[bytes, dict[bytes, tuple[bytes, bytes]]] = {}
        # Per dump graph, debug node -> its input where it differs from ``debug_inputs``.
        self.context_debug_inputs: dict[bytes, dict[bytes, bytes]] = {}
        self.input_of_text: dict[bytes, bytes] = {}  # a debug node's text -> its first input
        # Process node text -> what it says.
        self.texts: dict[bytes, ProcessText] = {}
        # Lines counted per text: how many, and the number (``seq``) of the last; lines
        # read one by one number their node name in ``name_seq`` (the last line of a
        # name gives its kernel, whichever way it was read).
        self.text_counts: Counter[ProcessText] = Counter()
        self.text_last_seq: dict[ProcessText, int] = {}
        self.name_seq: dict[bytes, int] = {}
        self.seq = 0
        # How steps running a set of texts are filed (the steps of a function run the
        # same nodes): (debug targets version, nodes, dump graphs, own debug inputs).
        self.filing_of_texts: dict[frozenset[ProcessText],
                                   tuple[int, dict[bytes, tuple[bytes, bytes]],
                                         frozenset[bytes], dict[bytes, bytes]]] = {}
        self.targets_version = 0
        # Debug node texts whose name has no input recorded yet.
        self.debug_texts_pending: set[ProcessText] = set()
        # Texts holding "] " or "_verbose,": another line may hide in a line the one-scan
        # read takes whole, so a block with one is read by the two scans.
        self.odd_texts: set[ProcessText] = set()

        # Line routing: "file:line" -> the route of its file, or what ``lines`` keeps for
        # a location whose lines are not read, or for text that is no location.
        self.locations: dict[bytes, Route] = {}
        self.matched_at = -1  # where in the block being read a line set last_matched
        self.cpu_blocks = 0  # blocks left to search for the CPU line (``CPU_LINE_BLOCKS``)

        # Reading the second half of a split file (``split``): what depends on the lines
        # before it is kept for the merge: lines of threads that have dispatched nothing
        # here yet (they may belong to an eager op dispatched before), and eager
        # executions whose wrapper was instantiated before.
        self.tail = False
        self.dispatched: set[Optional[bytes]] = set()
        self.orphans: list[tuple[bytes, int]] = []
        self.unresolved: Counter[tuple[bytes, tuple[bytes, bytes]]] = Counter()

    def note_problem(self, kind: str, offset: int) -> None:
        entry = self.problems.get(kind)
        if entry is None:
            self.problems[kind] = [offset, 1]
        else:
            entry[1] += 1

    def note_odd_bytes(self, line: bytes, off: int) -> None:
        """Problems for a line holding a NUL or bytes that are not UTF-8. Bytes that are not
        UTF-8 in a whole TF line that no handler reads are TF's own text, not damage: TF
        writes a string tensor's bytes raw into some messages (``execute.cc``'s "Full type
        information ... TensorHandle(...)" at VLOG 2)."""
        if not line.isascii():
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                if not _tf_line_not_read(line):
                    self.note_problem(NON_UTF8, off)
        if b"\x00" in line:
            self.note_problem(BINARY, off)

    def take_format(self, m: re.Match[bytes]) -> None:
        """The log's style and start time, from its first prefixed line."""
        self.tf_format = TF221_STYLE if m.group(1) is not None else TF213_STYLE
        self.first_time = prefix_time(m)

    def count_eager_op(self, op: EagerOp) -> None:
        """Count a finished eager op with the kernel its wrapper ran: the one instantiated
        during this run, else the one its wrapper instantiated before ("" if none)."""
        if op.kernel:
            kernel, dtype = op.kernel, op.dtype
        elif op.is_function:
            kernel, dtype = b"", b""
        else:
            key = op.key if op.key is not None else (op.dispatch, op.device)
            found = self.wrapper_kernels.get(key)
            if found is None and self.tail:
                self.unresolved[(op.dispatch, key)] += 1  # perhaps instantiated before
                return
            kernel, dtype = found or (b"", b"")
            if op.key is None and found is not None:
                self.keyless_runs[(op.dispatch, op.device, kernel, dtype)] += 1
        self.eager_kernels[(op.dispatch, kernel, dtype)] += 1


def _tf_line_not_read(line: bytes) -> bool:
    """Whether ``line`` starts with a TF prefix and holds nothing a handler reads (no
    handled message, Process node or oneDNN line in it)."""
    return (log_format.PREFIX.match(line) is not None
            and log_format.HANDLED_LINE.search(line) is None
            and log_format.PROCESS_NODE_MARK not in line and log_format.ONEDNN_MARK not in line)
