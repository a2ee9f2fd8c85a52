"""``read_log``: a log file read whole, or in two halves at once when it is big.

In: the path of a log (local or a URL). Out: its ``LogFacts``.

A local file of ``SPLIT_BYTES`` or more is read in two halves at once, the second by a
forked child (never in a process running threads, where a fork can deadlock), split
just after a newline where about half the reading work lies before it: the lines a
handler reads cost far more than the bytes scanned past, and a training log holds them
in clumps (start-up, the steps), so the byte middle can leave one half three times the
work of the other. The work is estimated from windows sampled across the file.

What the second half cannot know is kept for the merge (``tail_state``): lines of a
thread that dispatched no eager op there yet are read after the first half (they may
continue an op dispatched in it), and an eager op whose wrapper the second half did not
see instantiated takes the kernel the first half saw. A step running across the split
is filed in two parts. If the child fails, this process reads the second half itself.

A gzip-compressed log is read as its text, in one stream (its offsets are the text's);
where the stream ends early (still being written, or damaged), what came before is kept.
"""
from __future__ import annotations

import gzip
import io
import logging
import os
import pickle
import threading
import zlib
from typing import Any, BinaryIO, Optional

from .. import forks, fs
from .facts import LogFacts
from .format import CUT_STREAM, GZIP_MAGIC, HANDLED_LINE, MAX_LINE, PROCESS_NODE_MARK
from .scan import CHUNK_BYTES, LogParser, read_file

__all__ = ["read_log", "SPLIT_BYTES", "tail_state", "merge_tail"]

logger = logging.getLogger(__name__)

# A local log this big is read in two halves at once when another core is there.
SPLIT_BYTES = 64 << 20

# Windows read across a file to estimate where its reading work lies.
_SAMPLES = 64
_SAMPLE_BYTES = 1 << 16
# The reading cost of a line, in bytes scanned past at the same cost: a line a handler
# reads, a Process node line (counted in C once its text is known). Fitted to the halves
# of bench/make_hf_bert.py's log (bench results of 2026-12-06); only the ratio matters.
_HANDLED_LINE_COST = 4000
_PROCESS_LINE_COST = 1200

# What the reader of the second half sends back (``tail_state``).
_TAIL_FIELDS = ("tf_format", "first_time", "last_prefixed", "last_matched", "onednn_opts",
                "cpu_features", "dispatch", "eager_kernels", "graph_kernels", "debug_inputs",
                "instantiated", "folded", "debug_targets", "debug_modes", "circular_buffer_size",
                "run_ids", "xla_launches", "context_kernels", "graph_executions",
                "kernel_executions", "primitives", "primitive_ms", "wrapper_kernels", "problems",
                "lines", "context_debug_inputs", "bytes", "dispatched", "orphans", "unresolved",
                "function_nodes", "fused_ops", "traces", "keyless_kernels", "keyless_runs")
# Counters the merge adds up.
_SUMMED = ("dispatch", "eager_kernels", "xla_launches", "graph_executions", "kernel_executions",
           "primitives", "keyless_runs")


def read_log(path: str) -> LogFacts:
    """Stream one log file from disk; constant memory whatever its size. A big local
    file is read in two halves at once, the second by a forked child.

    Raises OSError if the file cannot be opened or read."""
    parser = LogParser(path)
    # the first bytes read apart: a stream the log is read from need not seek
    if fs.head(path, len(GZIP_MAGIC)) == GZIP_MAGIC:
        with fs.open_read(path) as f:
            read_file(io.BufferedReader(_Gunzipped(f, parser)), parser)
        return parser.result()
    with fs.open_read(path) as f:
        split = _split_point(f, path)
        child = _fork_second_half(path, split) if split else None
        if child is None:
            read_file(f, parser)
        else:
            try:
                f.seek(0)
                read_file(f, parser, 0, split)
            except BaseException:
                forks.abandon(child)
                raise
            tail = _collect_tail_state(child)
            if tail is None:  # the child failed (logged): read the second half here
                read_file(f, parser, split)
            else:
                merge_tail(parser, tail)
    return parser.result()


class _Gunzipped(io.RawIOBase):
    """A gzip stream's text; where the stream ends early or is damaged, the text ends
    there and the parser notes it (a log compressed while written is cut, not lost)."""

    def __init__(self, f: BinaryIO, parser: LogParser) -> None:
        super().__init__()
        self._stream = gzip.GzipFile(fileobj=f, mode="rb")
        self._parser = parser
        self._at = 0  # offset in the text
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # read1: what one read of the stream gives; a larger read that meets the cut end
        # would raise, losing the text it had decompressed before it.
        if self._ended:
            return 0
        try:
            data = self._stream.read1(len(buffer))
        except (EOFError, OSError, zlib.error):
            self._parser.note_problem(CUT_STREAM, self._at)
            self._ended = True
            return 0
        buffer[:len(data)] = data
        self._at += len(data)
        return len(data)


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
    middle = _middle_of_work(f, size)
    f.seek(middle)
    near = f.read(min(CHUNK_BYTES, MAX_LINE))
    i = near.find(b"\n")
    return middle + i + 1 if i >= 0 and middle + i + 1 < size else 0


def _middle_of_work(f: BinaryIO, size: int) -> int:
    """The offset with about half of the file's reading work before it, estimated from
    ``_SAMPLES`` windows, one in the middle of each equal stretch of the file."""
    stretch = size / _SAMPLES
    costs = [_cost_per_byte(f, int(stretch * (i + 0.5)), size) for i in range(_SAMPLES)]
    half, before = sum(costs) / 2, 0.0
    for i, cost in enumerate(costs):
        if before + cost >= half:
            return int(stretch * (i + (half - before) / cost))
        before += cost
    return size // 2


def _cost_per_byte(f: BinaryIO, centre: int, size: int) -> float:
    """The reading cost per byte of the window around ``centre`` (at least 1: the scan)."""
    start = max(0, min(centre - _SAMPLE_BYTES // 2, size - _SAMPLE_BYTES))
    f.seek(start)
    window = f.read(_SAMPLE_BYTES)
    if not window:
        return 1.0
    handled = sum(1 for _ in HANDLED_LINE.finditer(window))
    cost = (len(window) + _HANDLED_LINE_COST * handled
            + _PROCESS_LINE_COST * window.count(PROCESS_NODE_MARK))
    return cost / len(window)


def _fork_second_half(path: str, split: int) -> Optional[tuple[int, int]]:
    """A forked child reading ``path`` from ``split`` on: (pid, fd its pickled state comes
    on), or None (then this process reads it all)."""
    def second_half() -> bytes:  # runs in the child
        tail = LogParser(path)
        tail.tail = True
        with fs.open_read(path) as g:
            read_file(g, tail, split)
        return pickle.dumps(tail_state(tail), protocol=pickle.HIGHEST_PROTOCOL)

    try:
        return forks.start(second_half)
    except OSError as err:
        logger.warning("%s: cannot fork a second reader (%s): read in one process", path, err)
        return None


def _collect_tail_state(child: tuple[int, int]) -> Optional[dict[str, Any]]:
    """The state the child of ``_fork_second_half`` sent, or None (logged) if it failed."""
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


def tail_state(parser: LogParser) -> dict[str, Any]:
    """What the reader of a file's second half (``parser.tail``) read, to send back: its
    steps filed, its eager ops finished."""
    parser.flush()
    return {name: getattr(parser, name) for name in _TAIL_FIELDS}


def merge_tail(parser: LogParser, tail: dict[str, Any]) -> None:
    """Add what the reader of the rest of the file read (``tail_state``) to what ``parser``
    read of its first part."""
    _continue_first_half(parser, tail)
    _merge_start_up(parser, tail)
    for name in _SUMMED:
        getattr(parser, name).update(tail[name])
    for key, ms in tail["primitive_ms"].items():
        parser.primitive_ms[key] = parser.primitive_ms.get(key, 0.0) + ms
    _merge_debug_nodes(parser, tail)
    parser.graph_kernels.update(tail["graph_kernels"])
    parser.instantiated.update(tail["instantiated"])
    for function, nodes in tail["function_nodes"].items():
        parser.function_nodes.setdefault(function, {}).update(nodes)
    parser.fused_ops.update(tail["fused_ops"])
    # A message across the split is lost (its second half begins mid-message): the
    # ledger then finds fewer lines than traces and does not use that function's.
    parser.traces.lines += tail["traces"].close()
    parser.wrapper_kernels.update(tail["wrapper_kernels"])
    for key, kernels in tail["keyless_kernels"].items():
        parser.keyless_kernels.setdefault(key, set()).update(kernels)
    parser.folded |= tail["folded"]
    parser.run_ids |= tail["run_ids"]
    for context, nodes in tail["context_kernels"].items():
        parser.context_kernels.setdefault(context, {}).update(nodes)
    for kind, (offset, count) in tail["problems"].items():
        entry = parser.problems.setdefault(kind, [offset, 0])
        entry[1] += count
    parser.lines += tail["lines"]
    parser.bytes = tail["bytes"]


def _continue_first_half(parser: LogParser, tail: dict[str, Any]) -> None:
    """End the first half with what the second knew it could not: its lines of threads
    that dispatched nothing there yet are read here (they may continue an eager op
    dispatched here), an op a thread dispatched there ends that thread's op here, its
    eager ops whose wrapper it did not see instantiated take the kernel instantiated here.
    Then the first half's open steps are filed (a step across the split in two parts)."""
    for line, off in tail["orphans"]:
        parser.read_line(line, off)
    for tid in tail["dispatched"]:
        op = parser.eager_ops.pop(tid, None)
        if op is not None:  # its next dispatch, there, ended it
            parser.count_eager_op(op)
    for (dispatch, key), n in tail["unresolved"].items():
        kernel, dtype = parser.wrapper_kernels.get(key, (b"", b""))
        parser.eager_kernels[(dispatch, kernel, dtype)] += n
        if kernel and key[0] == dispatch:  # a wrapper known by (op, device) only
            parser.keyless_runs[(dispatch, key[1], kernel, dtype)] += n
    for step_id in list(parser.open_steps):
        parser.file_step(step_id)
    parser.fold_text_counts()


def _merge_start_up(parser: LogParser, tail: dict[str, Any]) -> None:
    """The log's format and start from the first half, if it had a prefixed line; its
    last lines, banner and CPU line from the second where it has them."""
    if not parser.tf_format:
        parser.tf_format, parser.first_time = tail["tf_format"], tail["first_time"]
    for name in ("last_prefixed", "last_matched", "onednn_opts"):
        if tail[name] is not None:
            setattr(parser, name, tail[name])
    if tail["cpu_features"] is not None:
        parser.cpu_features = tail["cpu_features"] | (parser.cpu_features or frozenset())
    if parser.circular_buffer_size is None:
        parser.circular_buffer_size = tail["circular_buffer_size"]


def _merge_debug_nodes(parser: LogParser, tail: dict[str, Any]) -> None:
    """The first line of a debug node gives its input and target. A debug node the tail
    saw first there kept its input only where it read another one; where this part's
    first line of the name read another tensor, the tail's graphs running it read the
    tail's."""
    first = set(parser.debug_inputs)
    for name in ("debug_targets", "debug_modes"):
        mine = getattr(parser, name)
        mine.update((k, v) for k, v in tail[name].items() if k not in first)
    theirs: dict[bytes, bytes] = tail["debug_inputs"]
    differ = {k for k, v in theirs.items() if parser.debug_inputs.get(k, v) != v}
    for k, v in theirs.items():
        parser.debug_inputs.setdefault(k, v)
    for context, nodes in tail["context_kernels"].items():
        own: dict[bytes, bytes] = tail["context_debug_inputs"].get(context, {})
        moved = _inputs_of_tail_graph(parser, theirs, differ.intersection(nodes), own)
        if moved:
            parser.context_debug_inputs.setdefault(context, {}).update(moved)


def _inputs_of_tail_graph(parser: LogParser, theirs: dict[bytes, bytes], differing: set[bytes],
                          own: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """The inputs a dump graph the tail ran keeps of its own: of its debug nodes whose
    first line there read another tensor than here (``differing``), the tail's, and the
    ones the tail kept for it where they are not the first line's."""
    moved = {k: theirs[k] for k in differing if k not in own}
    moved.update((k, v) for k, v in own.items() if parser.debug_inputs.get(k) != v)
    return moved
