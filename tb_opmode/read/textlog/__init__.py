"""Facts about op execution from a TensorFlow text log (the stderr and stdout of a run).

In: a log file (``read_log``; local or a URL) or lines of bytes (``parse_lines``), as a
run with VLOG and/or ``ONEDNN_VERBOSE`` writes them. Out: ``LogFacts``: eager dispatches
and the kernels their wrappers ran, graph nodes' kernels and executions (in all and per
dump graph), tfdbg's debug nodes, oneDNN primitives and their times, the start-up
banner and CPU line, the time span, and the ``Problem``s met (undecodable bytes,
garbled lines, ...), one per kind with its first offset. ``looks_like_log`` tells a log
by its head.

The package, in reading order: ``format`` (the lines read, and how each is told),
``state`` (what is kept between lines), ``steps`` (Process node lines counted and filed
per step), ``handlers`` (one per kind of line), ``lines`` (which handler a line goes
to), ``scan`` (a file in chunks, a block in one regex pass), ``facts`` (the answer),
``split`` (``read_log``: a big file in two halves at once).
"""
from __future__ import annotations

from .facts import EagerKernel, LogFacts
from .format import MAX_LINE, looks_like_log
from .scan import parse_lines
from .split import SPLIT_BYTES, read_log

__all__ = ["EagerKernel", "LogFacts", "looks_like_log", "read_log", "parse_lines", "MAX_LINE",
           "SPLIT_BYTES"]
