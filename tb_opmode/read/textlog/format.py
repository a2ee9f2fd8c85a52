"""The lines of a TensorFlow text log that the reader takes, and how each is recognised.

In: nothing (constants, and small functions on one line's bytes). Out: the regexes
and message markers of every kind of line read, the problem kinds a log can show, and
the parsing of a line's prefix time, a node's ``{{node NAME}} = KERNEL[...]`` and a
wrapper function's name. ``looks_like_log`` asks whether a file's head holds such lines.
The other modules import this module (as log_format) and call the patterns through it,
not by a name imported from it: CPython 3.11 compiles a method call on an imported name
as an attribute lookup that makes a bound method at every call.

A log is the stderr (and stdout) of a run with ``TF_CPP_MAX_VLOG_LEVEL=2`` (or
``TF_CPP_VMODULE=execute=1,executor=1,op_kernel=1,process_function_library_runtime=1``)
and/or ``ONEDNN_VERBOSE=1``. Lines are matched on source file name and message, never
on line number, which changes between TF versions:

- prefix: TF 2.21 (absl) ``I0000 00:00:1795982351.947743    4020 execute.cc:1775] ``
  (epoch seconds, thread id, bare file name); TF 2.13
  ``2026-11-29 19:59:43.134075: I tensorflow/core/common_runtime/eager/execute.cc:1678] ``
  (local date-time, no thread id, path);
- ``execute.cc`` ``Executing op X in device D``: one eager dispatch of X (the name after
  the eager oneDNN rename, ``_MklMatMul``, but the stock name for ops rewritten only
  inside their wrapper, ``Transpose``);
- ``process_function_library_runtime.cc`` ``Running component function on device D from
  F with handle N`` and ``Component function execution succeeded.``: the eager op runs as
  the one-node function F = ``__wrapped__X..._device_D``;
- ``op_kernel.cc`` ``Instantiating kernel for node: {{node NAME}} = KERNEL[attrs](inputs)``:
  printed on a function's first run only. Inside a running wrapper of X the node named X
  is the op, and its kernel holds for the wrapper's later runs; any other is a graph node;
- ``executor.cc`` ``Process node: I step S {{node NAME}} = KERNEL[...](...) device: D``:
  one execution of a graph node at step S (eager wrappers print none); step -1 is
  grappler's constant folding, and `` is dead device: `` marks an untaken branch;
- ``constant_folding.cc`` ``Folded node: {{node X}} = ...``: grappler evaluated X once;
- ``xla_ops.cc`` ``XlaLocalLaunchOpBase::Compute F[...]``: one launch of an XLA function;
- ``port.cc`` ``oneDNN custom operations are on``: the start-up banner (TF 2.13 and 2.21
  print the same; with ``TF_ENABLE_ONEDNN_OPTS=0`` nothing, so no banner is unknown);
- ``cpu_feature_guard.cc`` ``This TensorFlow binary is optimized ...``, whose second line,
  ``To enable the following instructions: AVX2 FMA, ...``, has no prefix;
- ``onednn_verbose,v1,[timestamp,]primitive,exec,cpu,KIND,IMPL,PROP,...,TIME`` (oneDNN 3.x)
  and ``onednn_verbose,[timestamp,]exec,cpu,KIND,IMPL,PROP,...,TIME`` (oneDNN 2.x, TF 2.13;
  also ``dnnl_verbose``/``mkldnn_verbose``): the time is the last field. ``info``/``create``
  lines and oneDNN Graph API lines are not read.

Left out as plumbing: ``_Arg``/``_Retval`` (and ``_DeviceArg``/``_DeviceRetval``) kernels,
and the ``_SOURCE``/``_SINK`` nodes the executor adds to every graph. tfdbg's own debug
nodes (``DebugNumericSummaryV2``, ``DebugIdentityV2``) carry attrs naming the dump op they
read (``op_name``, ``tfdbg_context_id``, ``output_slot``, ``tensor_debug_mode``,
``tfdbg_run_id``, ``circular_buffer_size``).
"""
from __future__ import annotations

import datetime
import math
import re
import zlib
from typing import Callable, Optional

from .. import fs
from ..trace_log import TRACE_MARK

__all__ = [
    "MAX_LINE", "TF221_STYLE", "TF213_STYLE", "PREFIX", "EMBEDDED_LINE_START", "SOURCE_LOCATION",
    "Handler", "Route", "ONEDNN_LINE_START", "ONEDNN_MARK", "T_ATTR", "KERNEL_END",
    "PLUMBING_KERNELS", "PLUMBING_NODES", "EXECUTING_OP", "EXITING_EAGER", "FUNCTION_PREFIX",
    "FUSED_OPS", "IN_DEVICE", "RUNNING_COMPONENT",
    "COMPONENT_SUCCEEDED", "INSTANTIATING_KERNEL", "PROCESS_NODE", "PROCESS_NODE_MARK", "FOLDING_STEP", "DEAD_NODE",
    "CPU_GUARD", "CPU_FEATURES", "CPU_LINE_BLOCKS", "FOLDED_NODE", "ONEDNN_BANNER", "XLA_LAUNCH",
    "WRAPPED", "DEBUG_OP_NAME", "DEBUG_CONTEXT", "DEBUG_SLOT", "DEBUG_MODE", "DEBUG_BUFFER",
    "DEBUG_RUN_ID", "DEBUG_KERNEL", "HANDLED_LINE", "PROCESS_NODE_LINE", "HANDLED_OR_PROCESS_LINE",
    "ODD_BYTE", "NON_UTF8", "BINARY", "GARBLED", "LONG_LINES", "NO_LAST_NEWLINE", "CUT_STREAM", "PROBLEM_KINDS",
    "as_text", "prefix_time", "first_input", "node_fields", "runs_eager_op", "looks_like_log",
    "GZIP_MAGIC", "gunzipped_head"]

# Lines longer than this are cut; only their head is parsed.
MAX_LINE = 1 << 20

# ``LogFacts.tf_format``: which prefix the log's first TF line has.
TF221_STYLE = "2.21-style"
TF213_STYLE = "2.13-style"

# Group 1: severity (absl); 2-5: month-day and time (absl); 6: thread id (absl);
# 7: local date-time (2.13); 9: source file base name.
PREFIX = re.compile(
    rb"(?:([IWEF])(\d{4}) (\d\d):(\d\d):(\d+(?:\.\d+)?) +(\d+) "
    rb"|(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?): ([IWEF]) )"
    rb"(?:[^\s:\]]*/)?([^\s/:\]]+):\d+\] ")
# The same, anywhere in a line: where a second line was written into this one.
EMBEDDED_LINE_START = re.compile(
    rb"[IWEF]\d{4} \d\d:\d\d:\d+(?:\.\d+)? +\d+ [^\s:\]]+:\d+\] "
    rb"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: [IWEF] [^\s:\]]+:\d+\] "
    rb"|(?:onednn|dnnl|mkldnn)_verbose,")
# The ``file:line`` before a line's first "] ": group 1 the file's base name.
SOURCE_LOCATION = re.compile(rb"(?:[^\s:\]]*/)?([^\s/:\]]+):\d+")
# A handler of a kind of TF line: (line, where its message starts, thread id or None,
# file offset, whether its tail was overwritten by another line).
Handler = Callable[[bytes, int, Optional[bytes], int, bool], None]
# What the lines of one source file are read by: (the message starts it prints that we
# read, the handler).
Route = tuple[tuple[bytes, ...], Handler]
ONEDNN_LINE_START = re.compile(rb"(?:onednn|dnnl|mkldnn)_verbose,")
# Bytes every oneDNN verbose line holds (whichever of its prefixes): where one may be.
ONEDNN_MARK = b"_verbose,"
# An attr value ends at "," or "]": a line cut short (the last line of a file still
# being written, or the head of an over-long line) does not yield a cut value. These
# patterns start with their literal and look behind for the separator: the regex engine
# then skips to the literal in C rather than trying the pattern at every byte.
T_ATTR = re.compile(rb"T=(?<=[\[ ]T=)(DT_[A-Z0-9_]+)[,\]]")
KERNEL_END = re.compile(rb"[\[(]")

PLUMBING_KERNELS = frozenset((b"_Arg", b"_Retval", b"_DeviceArg", b"_DeviceRetval"))
PLUMBING_NODES = frozenset((b"_SOURCE", b"_SINK"))

EXECUTING_OP = b"Executing op "
# The end of an eager function's (or op's) execution on its thread (TF 2.21; execute.cc):
# the kernels instantiated after it are no longer that function's.
EXITING_EAGER = b"Exiting eager executing local operation "
FUNCTION_PREFIX = b"__inference_"
# The ops a fused kernel's node stands for besides its first: fused_ops=["BiasAdd", "Relu"]
FUSED_OPS = re.compile(rb'[ \[]fused_ops=\[([^\]]*)\]')
IN_DEVICE = b" in device "
RUNNING_COMPONENT = b"Running component function on device "
COMPONENT_SUCCEEDED = b"Component function execution succeeded"
INSTANTIATING_KERNEL = b"Instantiating kernel for node: "
PROCESS_NODE = b"Process node: "
# A Process node message where a line's location ends.
PROCESS_NODE_MARK = b"] " + PROCESS_NODE
FOLDING_STEP = b" step -1 "
# executor.cc appends this to a node of an untaken cond branch: it ran no kernel.
DEAD_NODE = b" is dead device: "
# cpu_feature_guard.cc's start-up message, whose second line has no prefix.
CPU_GUARD = b"This TensorFlow binary is optimized"
CPU_FEATURES = b"To enable the following instructions: "
# Blocks searched for that second line from the one with the first line on.
CPU_LINE_BLOCKS = 3
FOLDED_NODE = b"Folded node: "
ONEDNN_BANNER = b"oneDNN custom operations are "
XLA_LAUNCH = b"XlaLocalLaunchOpBase::Compute "
WRAPPED = b"__wrapped__"
DEBUG_OP_NAME = re.compile(rb'op_name="(?<=[ \[]op_name=")([^"]*)"')
DEBUG_CONTEXT = re.compile(rb'tfdbg_context_id="(?<=[ \[]tfdbg_context_id=")([^"]*)"')
DEBUG_SLOT = re.compile(rb"output_slot=(?<=[ \[]output_slot=)(\d+)[,\]]")
DEBUG_MODE = re.compile(rb"tensor_debug_mode=(?<=[ \[]tensor_debug_mode=)(\d+)[,\]]")
DEBUG_BUFFER = re.compile(rb"circular_buffer_size=(?<=[ \[]circular_buffer_size=)(-?\d+)[,\]]")
DEBUG_RUN_ID = re.compile(rb'tfdbg_run_id="(?<=[ \[]tfdbg_run_id=")([^"]*)"')
DEBUG_KERNEL = b"Debug"  # DebugNumericSummaryV2, DebugIdentityV2: tfdbg's instrumentation

# Whole-block searches (each a literal first, which the regex engine skips to in C).
# The messages a handler reads one by one (all but Process node; the CPU line, which has
# no prefix, is searched for only near cpu_feature_guard's line):
_HANDLED_MESSAGES = rb"|".join(re.escape(m) for m in (
    EXECUTING_OP, RUNNING_COMPONENT, COMPONENT_SUCCEEDED, INSTANTIATING_KERNEL, ONEDNN_BANNER,
    XLA_LAUNCH, FOLDED_NODE, CPU_GUARD, EXITING_EAGER))
HANDLED_LINE = re.compile(rb"\] (?:" + _HANDLED_MESSAGES + rb")")
# Every Process node line at once: (step id, "{{node NAME}} = KERNEL[..." to the end of
# the line), or ("", rest of the line) when it is not laid out so (read as a lone line).
# The look-behind (after the literal, so that it stays the literal) keeps the file name
# whole: "xexecutor.cc" is another file.
PROCESS_NODE_LINE = re.compile(
    rb"executor\.cc:(?<=[/ ]executor\.cc:)\d+\] Process node: "
    rb"(?:\d+ step (-?\d+) (\{\{node [^ \n}]+\}\} = [^\[( \n]+[\[(][^\n]*)|[^\n]*)")
# Both at once, in one scan: (step id, text, "") for a Process node line laid out as
# above, ("", "", marker to the end of the line) for a line ``HANDLED_LINE`` finds, and
# ("", "", "") for anything else (a Process node line not laid out so, or not
# executor.cc's), which sends the block to the two scans. A look-behind is of fixed
# width, hence one per width of executor.cc's line number.
HANDLED_OR_PROCESS_LINE = re.compile(
    rb"\] (?:Process node: (?:(?:" + rb"|".join(
        rb"(?<=[/ ]executor\.cc:" + rb"\d" * n + rb"\] Process node: )" for n in (3, 4, 2, 1, 5, 6, 7, 8, 9))
    + rb")(?:\d+ step (-?\d+) (\{\{node [^ \n}]+\}\} = [^\[( \n]+[\[(][^\n]*)|[^\n]*)|)"
    rb"|((?:" + _HANDLED_MESSAGES + rb")[^\n]*))")
ODD_BYTE = re.compile(rb"[\x00\x80-\xff]")

# Problem kinds, each reported once with its count and first offset.
NON_UTF8 = "non-UTF-8 bytes"
BINARY = "binary (NUL) bytes"
GARBLED = "garbled lines (another line written into them, or cut short)"
LONG_LINES = f"lines longer than {MAX_LINE} bytes (only their head read)"
NO_LAST_NEWLINE = "last line has no newline (file still being written, or cut)"
CUT_STREAM = ("gzip stream ends early (a file still being written, or damaged): its text read "
              "up to there")
PROBLEM_KINDS = (NON_UTF8, BINARY, GARBLED, LONG_LINES, NO_LAST_NEWLINE, CUT_STREAM)  # in report order


def as_text(b: bytes) -> str:
    """Bytes of a log as text: undecodable bytes become U+FFFD (they are Problems already)."""
    return b.decode("utf-8", "replace")


def prefix_time(m: re.Match[bytes]) -> Optional[float]:
    """Epoch seconds of a ``PREFIX`` match: absl's before ``InitializeLog`` (month-day
    ``0000``), or a 2.13 local date-time read in this process's time zone (the writer's
    is not recorded). None for an absl line with a real month-day (no year) or a date
    that cannot be."""
    if m.group(1) is not None:
        if m.group(2) == b"0000" and m.group(3) == b"00" and m.group(4) == b"00":
            t = float(m.group(5))
            return t if math.isfinite(t) else None  # hundreds of digits of garbage read as inf
        return None
    text = m.group(7).decode("ascii")
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    try:
        return datetime.datetime.strptime(text, fmt).timestamp()  # local time zone
    except (ValueError, OverflowError, OSError):  # no such date, or out of the platform's range
        return None


def first_input(line: bytes) -> tuple[int, bytes]:
    """Where a node line's input list opens and its first input: ``...](input, ...)``
    ((-1, b"") if the line has none)."""
    end = line.rfind(b") device: ")
    if end < 0:
        end = line.rstrip().rfind(b")")
    start = line.rfind(b"(", 0, end)
    if start < 0 or end < 0:
        return -1, b""
    return start, line[start + 1:end].split(b",", 1)[0].strip()


def node_fields(line: bytes, at: int) -> Optional[tuple[bytes, bytes, bytes]]:
    """(name, kernel, dtype) from ``{{node NAME}} = KERNEL[attrs](inputs)`` at or after
    ``at``; None when the line does not hold one whole."""
    i = line.find(b"{{node ", at)
    if i < 0:
        return None
    j = line.find(b"}} = ", i)
    if j < 0:
        return None
    k = KERNEL_END.search(line, j + 5)
    if k is None:
        return None
    name = line[i + 7:j]
    kernel = line[j + 5:k.start()]
    if not name or not kernel or b" " in kernel:
        return None
    t = T_ATTR.search(line, k.start())
    return name, kernel, (t.group(1) if t is not None else b"")


def runs_eager_op(fn: bytes, dispatch: bytes) -> bool:
    """Whether component function ``fn`` is the one that runs eager op ``dispatch``:
    itself (a tf.function call) or its wrapper ``__wrapped__<op>[_<attrs>]_device_<dev>``,
    where an op name's leading underscores are doubled (``__wrapped____MklMatMul``)."""
    if not fn.startswith(WRAPPED):
        return fn == dispatch
    return fn[len(WRAPPED):].lstrip(b"_").startswith(dispatch.lstrip(b"_") + b"_")


GZIP_MAGIC = b"\x1f\x8b"


def gunzipped_head(head: bytes) -> bytes:
    """The text at the start of a file's first bytes: as they are, or, for a gzip stream,
    as much of its text as they hold (b"" if they are not a gzip stream after all)."""
    if not head.startswith(GZIP_MAGIC):
        return head
    try:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(head)
    except zlib.error:
        return b""


def looks_like_log(path: str, head_bytes: int = 65536) -> bool:
    """Whether the first ``head_bytes`` of ``path`` hold a TF log or oneDNN verbose line,
    or TF's Python line for a new trace (a file of those alone, as ``tb-opmode record``
    writes beside the C++ log, is a log of the run's traces)."""
    try:
        head = gunzipped_head(fs.head(path, head_bytes))
    except OSError:
        return False
    if TRACE_MARK in head:
        return True
    for line in head.split(b"\n"):
        if PREFIX.match(line) or ONEDNN_LINE_START.match(line):
            return True
    return False
