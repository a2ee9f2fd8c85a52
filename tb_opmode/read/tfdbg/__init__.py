"""Read tfdbg2 (Debugger V2) dumps without TensorFlow.

In: a directory. Out: one ``DumpSet`` per file set found in it (a file set is
the six ``tfdbg_events.<timestamp>.<host>.<kind>`` files of one host and
process), each holding aggregated facts rather than one object per record:

- metadata (TF version, file version, tfdbg run id);
- source files and stack frames, to resolve Python call sites;
- graphs: every op created in every graph (type, name, device, call site) and
  each graph's outer graph;
- eager executions, counted per (op type, graph id) and per call site;
- graph execution traces, counted per (graph id, op name, output slot).

Damaged records become ``Problem``s; everything intact is kept.

The other files are read record by record, but cheaply: a file of up to 16 MB that is
intact is read at once and its CRCs checked in one pass (``tfrecord.frame_whole``; any
damage and ``RecordReader`` reads it, reporting each problem); events are decoded with
``DebugEventRawStacks``, whose op creations and executions leave their call stack
serialized, so each distinct stack (a few hundred in a dump of thousands of records, most
of a ``.graphs`` file's bytes) is decoded once (``events._Stacks``); a local dump's source
lines stay in their file until a line is asked for (``SourceLines.in_file``).

Each file is read into a ``FileState`` (the fields of ``DumpSet`` that file
fills, its problems, and the offset to resume from); ``assemble_dump_set``
joins the states of a set into the ``DumpSet``. ``read_file_states`` reuses
unchanged states and resumes grown files from their saved offset, so a cache
(``cache.py``) can keep the states between runs.

The ``.graph_execution_traces`` file is most of a dump (a million records per
thousand steps of a small model) and its records repeat: per (context id, op
name, output slot) they differ only in wall time and health values. A big one
is read by ``tracejob._TraceJob`` without decoding each record: records are framed by
hand, keyed by the bytes between the wall time and the tensor proto, their
CRCs checked a chunk at a time (``tfrecord.ChunkVerifier``), and only the first
record of each key is decoded and checked to have the expected layout. The
framing and keying work on 8 MB windows at once with numpy (``framing._Window``,
``keytable._KeyTable``), and follow the cycle of keys a training loop repeats, checked
word for word. One forked worker reads the end of the file while this process
reads the other files, then the start of the traces file. Whatever does not fit
(damage, another layout) is read record by record with the same results as the
plain reader.

The package, in reading order: ``health`` (what a debug tensor says: dtype, digest,
rank), ``sourcelines`` (a source file's lines, made when first read), ``dumpset`` (the
model: ``DumpSet``, its graphs and ops, ``FileState``), ``events`` (a file's records
decoded, each call stack once), ``fold`` (each kind of file's events into its fields),
``traceparts`` (a stretch of the traces file read record by record), ``framing`` and
``keytable`` (the fast reader's numpy framing and keying of a window), ``fastread`` (a
range of the traces file read fast), ``tracejob`` (the traces file, split between this
process and a forked worker), ``readset`` (the files of a set read, reused or resumed,
and joined).
"""
from __future__ import annotations

from .dumpset import DUMP_FILE_RE, DumpSet, FileState, GraphInfo, OpCreation, file_identity, find_dump_sets
from .fastread import _CHUNK as _CHUNK
from .fastread import _fast_range as _fast_range
from .fastread import _first_payload as _first_payload
from .framing import _trace_tail as _trace_tail
from .health import (
    CONCISE_HEALTH,
    CURT_HEALTH,
    DEBUG_MODE_NAMES,
    DTYPE_NAMES,
    DTYPE_SOME_FLOAT,
    DTYPE_UNKNOWN,
    FULL_HEALTH,
    FULL_TENSOR,
    NO_TENSOR,
    SHAPE,
    HealthSpec,
    digest_all_zeros,
    digest_rank,
    health_digest,
    health_dtype,
    health_spec,
)
from .keytable import _KeyTable as _KeyTable
from .readset import assemble_dump_set, read_dump_set, read_file_states
from .sourcelines import SourceLines
from .tracejob import FAST_MIN_BYTES as FAST_MIN_BYTES
from .tracejob import _apply as _apply
from .traceparts import _exact_part as _exact_part

__all__ = ["NO_TENSOR", "CURT_HEALTH", "CONCISE_HEALTH", "FULL_HEALTH", "SHAPE",
           "FULL_TENSOR", "DEBUG_MODE_NAMES", "OpCreation", "GraphInfo", "DumpSet",
           "SourceLines", "FileState", "find_dump_sets", "read_dump_set",
           "read_file_states", "assemble_dump_set", "file_identity", "DUMP_FILE_RE",
           "DTYPE_NAMES", "DTYPE_UNKNOWN", "DTYPE_SOME_FLOAT", "health_dtype", "health_digest", "digest_rank",
           "digest_all_zeros", "health_spec", "HealthSpec"]
