"""Join dumps, profiles and logs into one model per run.

In: a logdir (and optional extra log files), or one run's ``RunSources``. Out:
``RunModel``s, one per run (``model``): per op type and mode, execution counts
and the kernels that ran, each with its evidence level. The JSON contract made
of them is ``present.contract``.

Counts come from the strongest source present (``_COUNT_SOURCES``): the tfdbg2
dump (eager ``execution`` records; graph ``graph_execution_trace`` records of the
lowest output slot traced per op, so an op with three traced outputs counts once per
run of its graph), else the text log, else the profile (those two booked to op types
by ``events``). Kernels come from the evidence in hand: the log (``Instantiating
kernel`` / ``Process node``) first, then the profile's ``<node>:<kernel>`` events.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

from ..errors import BadParameter, LogdirError, NoSuchRun, Problem
from ..model import BufferCut, KernelUse, ModeStats, RunModel
from ..read import forks, fs
from ..read.cache import prefetch_files
from ..read.discover import RunSources, discover, display, dump_location, relpath
from ..read.manifest import recorded_run
from ..read.partials import Partial, Unit, read_serial, units_of
from ..read.tasks import task_of
from ..read.textlog import LogFacts
from ..read.tfdbg import DumpSet
from ..vocab import is_function, is_onednn
from .events import (
    is_user_op,
    log_counts,
    logged_graph_kernels,
    op_times,
    profile_counts,
    profiled_graph_kernels,
    row_op,
)
from .kernels import assign_eager, assign_graph, detect_onednn
from .per_call import BASIS_EXACT_LOG, count_per_call
from .recording import note_recording
from .workers import breakdown

__all__ = ["build_run", "find_runs", "load", "row_op", "is_user_op"]


def _count_eager_records(model: RunModel, dump: DumpSet) -> None:
    for (op_type, graph_id), n in dump.executions.items():
        if graph_id or is_function(op_type):
            model.functions[op_type] += n
        else:
            model.row(op_type).eager.executions += n


def _count_graph_traces(model: RunModel, dump: DumpSet) -> int:
    """Adds each graph op's executions, the traces of its lowest traced output slot, to
    its row; returns the executions of ops the dump's graphs do not define."""
    lowest: dict[tuple[str, str], int] = {}
    for (graph_id, op_name, slot) in dump.traces:
        key = (graph_id, op_name)
        if key not in lowest or slot < lowest[key]:
            lowest[key] = slot
    unknown = 0
    for (graph_id, op_name, slot), n in dump.traces.items():
        if slot != lowest[(graph_id, op_name)]:
            continue
        graph = dump.graphs.get(graph_id)
        op = graph.ops.get(op_name) if graph else None
        if op is None:
            unknown += n
        else:
            model.row(op.op_type).graph.executions += n
    return unknown


def _dump_counts(model: RunModel) -> None:
    for dump in model.dumps:
        _count_eager_records(model, dump)
        unknown = _count_graph_traces(model, dump)
        model.uncounted_graph_executions += unknown
        if unknown:
            model.problems.append(Problem(
                dump.files.get("graph_execution_traces", dump.prefix), 0,
                f"{unknown} graph executions of ops the .graphs file does not define; not counted"))


# tfdbg's default circular_buffer_size: a dump made with it keeps only the last
# this many records of each kind (executions, graph execution traces).
DEFAULT_CIRCULAR_BUFFER = 1000


def _buffer_checks(model: RunModel) -> list[BufferCut]:
    """A dump whose record count of a kind is its circular buffer's size kept only
    the tail of the run: its counts are a lower bound."""
    sizes = {log.circular_buffer_size for log in model.logs if log.circular_buffer_size is not None}
    out = []
    for dump in model.dumps:
        for kind, n, path in (
                ("execution", sum(dump.executions.values()), dump.files.get("execution", dump.prefix)),
                ("graph_execution_trace", sum(dump.traces.values()),
                 dump.files.get("graph_execution_traces", dump.prefix))):
            limit = next((s for s in sizes if s > 0), DEFAULT_CIRCULAR_BUFFER)
            if n != limit or -1 in sizes:
                continue
            how = (f"the log shows its debug ops were built with circular_buffer_size={limit}"
                   if sizes else f"{limit} is tfdbg's default circular_buffer_size")
            out.append(BufferCut(path, kind, n, how, "dump with enable_dump_debug_info(..., "
                                 "circular_buffer_size=-1) to count every execution"))
    return out


def _cut_problem(cut: BufferCut) -> Problem:
    return Problem(cut.path, 0, (
        f"{cut.records} {cut.kind} records, exactly the circular buffer's size ({cut.how}): the "
        f"dump kept only the last {cut.records}, so its counts are a lower bound; {cut.fix}"))


def _add_kernel(stats: ModeStats, name: str, executions: int, evidence: str, note: str = "",
                fused_into: str = "") -> None:
    for k in stats.kernels:
        if k.name == name and k.evidence == evidence:
            k.executions += executions
            if note and note not in k.notes:
                k.notes.append(note)
            if fused_into and fused_into not in k.fused_into:
                k.fused_into.append(fused_into)
            return
    stats.kernels.append(KernelUse(name, executions, is_onednn(name), evidence,
                                   [note] if note else [], [fused_into] if fused_into else []))


def _apply_kernels(model: RunModel) -> None:
    model.graph_ops = assign_graph(model) if model.dumps else []
    for op in model.graph_ops:
        _add_kernel(model.row(op.op_type).graph, op.kernel, op.executions, op.evidence,
                    op.note, op.fused_into)
    if model.per_call_kernels:
        for op_type, kernel, n, evidence, note in model.per_call_kernels:
            _add_kernel(model.row(op_type).graph, kernel, n, evidence, note)
    elif not model.dumps:
        _graph_kernels_without_dump(model)
    model.eager_ops = assign_eager(model, model.graph_ops)
    for e in model.eager_ops:
        _add_kernel(model.row(e.op_type).eager, e.kernel, e.executions, e.evidence, e.note)


def _graph_kernels_without_dump(model: RunModel) -> None:
    """No dump: each kernel seen is its row's, with the executions its evidence counts
    (the log's Process node lines, else the profile's events)."""
    counted, evidence = logged_graph_kernels(model), "log"
    if not counted:
        counted, evidence = profiled_graph_kernels(model), "profile"
    for kernel, n in counted.items():
        row = model.op_types.get(row_op(kernel))
        if row is not None and row.graph.executions:
            _add_kernel(row.graph, kernel, n, evidence)
    for row in model.op_types.values():
        # Counts from one source, kernels from another (a log with executions, and a
        # profile's kernels besides): one kernel takes the row's count.
        if len(row.graph.kernels) == 1:
            row.graph.kernels[0].executions = row.graph.executions


# file_version values of tfdbg2 dumps this reader knows (TF 2.3 to 2.21 write "debug.Event:1").
_KNOWN_DUMP_VERSION = 1
_DUMP_VERSION_PREFIX = "debug.Event:"


def _dump_usable(dump: DumpSet) -> bool:
    """Whether anything at all was read from a dump set (a record of a kind we know)."""
    return bool(dump.tensorflow_version or dump.file_version or dump.run_id or dump.source_files
                or dump.stack_frames or dump.graphs or dump.devices or dump.executions
                or dump.traces)


def _dump_checks(dump: DumpSet) -> list[Problem]:
    """Problems of a dump set that its reader does not report: empty files, a file version
    newer than the one we know."""
    out = []
    for kind, path in sorted(dump.files.items()):
        try:
            empty = fs.stat(path).st_size == 0
        except OSError:
            continue  # the reader reported it
        # A job that built no tf.function graph (all eager) traces no graph execution: its
        # empty traces file is the whole answer, not a file still being written.
        if empty and not (kind == "graph_execution_traces" and not dump.graphs):
            out.append(Problem(path, 0, f"empty file: no .{kind} records written (yet)"))
    version = dump.file_version
    if version:
        number = version[len(_DUMP_VERSION_PREFIX):] if version.startswith(_DUMP_VERSION_PREFIX) else ""
        path = dump.files.get("metadata", dump.prefix)
        if not number.isdigit():
            out.append(Problem(path, 0, f"unknown file_version {version!r}: read as "
                                        f"{_DUMP_VERSION_PREFIX}{_KNOWN_DUMP_VERSION}"))
        elif int(number) > _KNOWN_DUMP_VERSION:
            out.append(Problem(path, 0, f"file_version {version!r} is newer than "
                                        f"{_DUMP_VERSION_PREFIX}{_KNOWN_DUMP_VERSION}, the newest "
                                        "this reader knows: fields added since are ignored"))
    return out


def _shared_directory_checks(dumps: list[DumpSet]) -> list[Problem]:
    """Dump sets of one task in one directory. Each process writes its own set, so two
    of one task there (a script run twice with one ``dump_root``) are two runs, which
    this run sums as if they were the workers of one job (TF's ``DebugDataReader``
    refuses such a directory); said, naming the sets, so that nobody takes the sum for
    one run's counts. A job's workers write in directories of their own, or name tasks
    of their own."""
    by_directory: dict[str, list[DumpSet]] = {}
    for dump in dumps:
        by_directory.setdefault(dump.directory, []).append(dump)
    out = []
    for directory, sets in sorted(by_directory.items()):
        tasks = Counter(t for d in sets for t in {task_of(name) for name in d.devices.values()} if t)
        shared = sorted(t for t, n in tasks.items() if n > 1)
        if shared:
            names = ", ".join(sorted(d.prefix for d in sets))
            out.append(Problem(directory, 0, (
                f"{len(sets)} dumps of the same task ({', '.join(shared)}) in one directory "
                f"({names}): each was written by a process of its own (a script run twice "
                f"into one dump root?), and their counts are summed here as one run; give "
                f"each run a directory of its own")))
    return out


def _read_logs(paths: list[str], problems: list[Problem], parts: Partial) -> list[LogFacts]:
    logs = []
    for path in paths:
        try:
            logs.append(parts.log(path))
        except OSError as err:  # vanished or unreadable since discovery
            problems.append(Problem(path, 0, f"cannot read: {err.strerror or err}"))
    return logs


def _log_run_checks(model: RunModel) -> list[Problem]:
    """A log of this run (in its directory, or given with --log --run) whose debug nodes
    name only other dumps' tfdbg run ids is most likely another run's log: its banner
    and kernels are used here all the same, so say so."""
    ours = {d.run_id for d in model.dumps if d.run_id}
    if not ours:
        return []
    out = []
    for log in model.logs:
        if log.tfdbg_run_ids and not log.tfdbg_run_ids & ours:
            out.append(Problem(log.path, 0, (
                f"its debug nodes name tfdbg run id {', '.join(sorted(log.tfdbg_run_ids))}, "
                f"but this run's dump is {', '.join(sorted(ours))}: the log is probably "
                "another run's, and is read as this run's all the same")))
    return out


def _read_sources(model: RunModel, sources: RunSources,
                  parts: Partial) -> tuple[list[DumpSet], list[Problem]]:
    """Reads the run's profiles and logs into the model, and its dump sets: returns every
    dump set (the model keeps those something was read from) and the logs' read errors."""
    prefetch_files(sources.profiles, sources.logs)  # remote only: in parallel
    # A job's run holds its workers' dumps from sub-directories (key "worker0/<prefix>").
    dumps = [parts.dump(*dump_location(sources, key), files)
             for key, files in sorted(sources.dump_sets.items())]
    model.profiles = [parts.profile(p) for p in sources.profiles]
    read_problems: list[Problem] = []
    model.logs = _read_logs(sources.logs, read_problems, parts)
    model.trace_lines = [line for log in model.logs for line in log.trace_lines]
    # A dump set of which nothing could be read (all damaged, or files named like a
    # dump holding something else) counts nothing: its problems say why.
    model.dumps = [d for d in dumps if _dump_usable(d)]
    return dumps, read_problems


def _describe_sources(model: RunModel, dumps: list[DumpSet], sources: RunSources,
                      logdir: str) -> None:
    """The model's TF version, hosts and source paths."""
    versions = sorted({d.tensorflow_version for d in model.dumps if d.tensorflow_version})
    model.tensorflow_version = ", ".join(versions)
    model.hosts = sorted({display(d.host) for d in model.dumps}
                         | {display(p.host) for p in model.profiles if p.time_source})
    model.sources = {
        "debugger": [relpath(os.path.join(d.directory, d.prefix), logdir) for d in dumps],
        "profile": [relpath(p, logdir) for p in sources.profiles],
        "logs": [relpath(p, logdir) for p in sources.logs],
    }


def _source_problems(model: RunModel, dumps: list[DumpSet], sources: RunSources,
                     read_problems: list[Problem]) -> list[Problem]:
    """What discovery and the readers met, and what the sources say of each other."""
    out = [Problem(path, 0, f"{why}, not a regular file: not read")
           for path, why in sources.skipped]
    # What discovery could not read (or would not follow) changes the answer: say so,
    # here, so that the tab (which builds runs itself) says it too.
    out.extend(Problem(path, 0, message) for path, message in sources.warnings)
    for dump in dumps:
        out.extend(dump.problems)
        out.extend(_dump_checks(dump))
    out.extend(_shared_directory_checks(dumps))
    for prof in model.profiles:
        out.extend(prof.problems)
    for log in model.logs:
        out.extend(log.problems)
    out.extend(read_problems)
    out.extend(_log_run_checks(model))
    return out


def _count_from_dumps(model: RunModel) -> None:
    _dump_counts(model)
    model.buffer_cuts = _buffer_checks(model)
    model.problems.extend(_cut_problem(cut) for cut in model.buffer_cuts)


def _has_dump(model: RunModel) -> bool:
    return bool(model.dumps)


def _has_logged_executions(model: RunModel) -> bool:
    return any(log.eager_dispatch or log.graph_executions for log in model.logs)


def _has_host_plane(model: RunModel) -> bool:
    return any(p.time_source for p in model.profiles)


def _count_from_logs(model: RunModel) -> None:
    """The log's counts; graph counts per call x calls where the log has no line per
    node execution (only ``execute`` and ``op_kernel``) and a profile saw calls."""
    log_counts(model)
    model.count_basis.update(eager=BASIS_EXACT_LOG, functions=BASIS_EXACT_LOG)
    if any(log.kernel_executions for log in model.logs):
        model.count_basis["graph"] = "exact: one Process node line per node execution in the log"
    else:
        model.per_call_kernels = count_per_call(model)


def _count_from_profiles(model: RunModel) -> None:
    profile_counts(model)
    model.count_basis.update(dict.fromkeys(("eager", "graph", "functions"),
                                           "the profiled window only"))


def _count_dumped(model: RunModel) -> None:
    _count_from_dumps(model)
    model.count_basis.update(eager="exact: one execution record per op in the dump",
                             graph="exact: one trace per op execution in the dump",
                             functions="exact: one execution record per call in the dump")


# Where a run's counts come from: the strongest source present, in this order.
_COUNT_SOURCES: tuple[tuple[str, Callable[[RunModel], bool], Callable[[RunModel], None]],
                      ...] = (
    ("debugger", _has_dump, _count_dumped),
    ("log", _has_logged_executions, _count_from_logs),
    ("profile", _has_host_plane, _count_from_profiles),
)


def _count(model: RunModel) -> None:
    for name, present, count in _COUNT_SOURCES:
        if present(model):
            model.counts_from = name
            count(model)
            return


def build_run(sources: RunSources, logdir: str, parts: Partial | None = None) -> RunModel:
    """The model of one run. ``parts``: what reading its sources gave (``partials``: read
    ahead on a pool or a cluster); a source it lacks is read here, by the same code."""
    model = RunModel(run=sources.name, directory=sources.directory)
    dumps, read_problems = _read_sources(model, sources,
                                         parts if parts is not None else Partial())
    _describe_sources(model, dumps, sources, logdir)
    model.problems.extend(_source_problems(model, dumps, sources, read_problems))
    _count(model)
    model.recorded = recorded_run(sources.directory)
    note_recording(model)
    model.onednn_enabled, model.onednn_source = detect_onednn(model)
    _apply_kernels(model)
    model.times = op_times(model)
    model.workers = breakdown(model, dumps, sources.missing_workers, logdir)
    return model


def _not_a_directory(logdir: str) -> str:
    """Why ``logdir`` is no logdir, in one line: a local file (a log or a dump file given
    for its directory) is told apart from nothing there."""
    if not fs.is_remote(logdir) and os.path.isfile(logdir):
        return (f"{logdir}: a file, not a directory: give the directory that holds it "
                f"(or --log FILE with its run's directory)")
    return f"{logdir}: no such directory"


def _check_given_logs(extra_logs: tuple[str, ...]) -> None:
    """A ``--log`` naming nothing is a typo to say before anything is read (BadParameter);
    one that exists but cannot be read is a warning of the run, as unreadable parts are."""
    for path in extra_logs:
        try:
            fs.stat(path)
        except FileNotFoundError:
            raise BadParameter(f"--log {path}: no such file") from None
        except OSError:
            pass  # said as the run's warning when it is read


def find_runs(logdir: str, run: str | None = None,
              extra_logs: tuple[str, ...] = ()) -> list[RunSources]:
    """The runs under ``logdir`` (or only ``run``), with their sources, read by nothing yet.
    Raises ``LogdirError`` (no such directory, nothing found) or ``NoSuchRun``."""
    try:
        is_dir = fs.isdir(logdir)
    except OSError as err:  # remote: no credentials, endpoint down, no such bucket
        text = f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
        raise LogdirError(text) from err
    if not is_dir:
        raise LogdirError(_not_a_directory(logdir))
    _check_given_logs(extra_logs)
    # --log FILE --run RUN: the user says which run the log is for.
    found = discover(logdir, extra_logs, log_run=run)
    if not found:
        raise LogdirError(
            f"{logdir}: no tfdbg2 dump (tfdbg_events.*), profile (plugins/profile/*/*.xplane.pb) "
            f"or TensorFlow log (*.txt, *.log, *.out, *.err) found")
    if run is not None:
        found = [r for r in found if r.name == run]
        if not found:
            raise NoSuchRun(f"{logdir}: no run named {run!r}")
    return found


def load(logdir: str, run: str | None = None, extra_logs: tuple[str, ...] = (),
         read: Callable[[list[Unit]], Partial] = read_serial,
         found: list[RunSources] | None = None) -> list[RunModel]:
    """Read every run under ``logdir`` (or only ``run``). ``read`` reads the runs' sources
    (``partials.read_serial`` or ``read_pool``, ``daskread.read_dask``), all before any run
    is built. ``found``: the runs ``find_runs`` gave for these arguments (not looked for again)."""
    if found is None:
        found = find_runs(logdir, run, extra_logs)
    if fs.is_remote(logdir):
        # Every run's small objects in one batch of parallel requests, not run by run.
        prefetch_files([p for r in found for p in r.profiles], [p for r in found for p in r.logs],
                       tuple((*dump_location(r, key), files) for r in found
                             for key, files in r.dump_sets.items()))
    parts = read(units_of(found))
    try:
        return [build_run(sources, fs.absolute(logdir), parts) for sources in found]
    finally:
        forks.reap_deferred()  # a log's reader writing the cache meanwhile
