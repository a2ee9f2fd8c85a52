"""The ``tb-opmode`` command line: the same model as the tab, as text.

In: argv. Out: a table, JSON or CSV on stdout; warnings on stderr, one line
each; exit 0 on success (also when some input was damaged), 2 when there was
nothing to read or the arguments were wrong (one ``tb-opmode: error:`` line,
never a traceback), 3 on an unexpected error (a bug: one line too, unless
``TB_OPMODE_TRACEBACK=1`` asks for the traceback).
"""
from __future__ import annotations

import argparse
import ctypes
import io
import json
import os
import shlex
import shutil
import socket
import sys
import textwrap
from typing import Any, Callable, Optional, TextIO

# Before the readers below import numpy: its OpenBLAS starts a thread per core at import,
# which spin ~40 ms of CPU (on a 2-core machine, the core the log's reader then needs);
# the command does no linear algebra. A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from . import __version__
from .analyze.assemble import find_runs, load
from .analyze.explain import call_sites, explain
from .capture.command import USAGE as RECORD_USAGE
from .capture.command import record_main
from .errors import DaskError, LogdirError, PublicError, ReportOutputError, UnknownOpType, did_you_mean
from .model import RunModel
from .present.contract import run_json, run_warnings, summary
from .present.csv import render_csv
from .present.eager_text import render_hot_spots
from .present.glance import glance_lines
from .present.lead import lead
from .present.ledger import functions_line, functions_text
from .present.recording import recorded_nothing
from .present.report import DEFAULT_FOCUS, FORMATS, MAX_SITES, Redaction, focus_ops, render, report_blocks
from .present.tab import build_view
from .present.workers import render_workers
from .read import fs
from .read.cache import load_summary, store_summary
from .read.discover import RunSources, display
from .read.partials import Partial, Unit, read_pool, read_serial
from .vocab import MODES

__all__ = ["main", "render_table", "render_csv"]


def _kernel_text(kernels: list[dict[str, Any]]) -> str:
    # With several kernels in one mode, say how the executions split.
    counts = len(kernels) > 1
    return ", ".join(f"{display(k['name'])}" + (f" x{k['executions']}" if counts else "")
                     + f" ({k['evidence']})" for k in kernels) or "-"


def render_table(doc: dict[str, Any], rows: Optional[int] = None) -> str:
    """The summary as text for a terminal, each run's table cut to its first ``rows`` op
    types (None: all; the lines above it always speak of all of them). Every string taken
    from the files goes through ``display``: an op, kernel or function name holding an
    escape sequence or a bidi override must not recolour, erase or reorder what is shown."""
    out = io.StringIO()
    for run in doc["runs"]:
        out.write(_run_header(run))
        out.write(_op_table(run, rows))
        out.write(render_hot_spots(run))
        out.write(render_workers(run))
        out.write("\n")
    return out.getvalue()


def _run_header(run: dict[str, Any]) -> str:
    """The lines above a run's table: its versions and hosts, the answer in plain words,
    sources, functions, XLA."""
    onednn = {True: "on", False: "off", None: "unknown"}[run["onednn_enabled"]]
    why = f" ({display(run['onednn_source'])})" if run["onednn_source"] else ""
    lines = [f"run {display(run['run'])}  "
             f"TensorFlow {display(run['tensorflow_version']) or '?'}  "
             f"hosts {display(', '.join(run['hosts'])) or '?'}  oneDNN {onednn}{why}",
             *(display(line) for line in glance_lines(run["op_types"],
                                                      run["uncounted_graph_executions"])),
             f"  counts from: {run['counts_from'] or 'nothing'}; sources: "
             + "; ".join(f"{k} {len(v)}" for k, v in run["sources"].items())]
    lines += _recording_lines(run)
    grouped = functions_line(run)
    if grouped:
        lines += [display(line) for line in grouped]
    elif run["functions"]:
        lines.append("  tf.function calls: " + ", ".join(
            f"{display(f['name'])} x{f['calls']}" for f in run["functions"]))
    lines += [f"  XLA: {display(f['name'])} ({f['launches']} launches in the log): "
              f"{display(f['note'])}" for f in run.get("xla_functions", [])]
    return "".join(line + "\n" for line in lines)


def _recording_lines(run: dict[str, Any]) -> list[str]:
    """How the run was recorded, how its counts were made, and a note where a dump that
    reads tensors changed its kernels."""
    lines = []
    recording = run.get("recording")
    if recording and recording["evidence"]:
        dump = recording["dump_mode"] or "no dump"
        lines.append(f"  recorded with: tb-opmode record --evidence {display(recording['evidence'])} "
                     f"({display(dump)})")
    if recording and recording["command"]:
        ended = recording.get("ended") or "ended without an exit status in its manifest"
        lines.append(f"  command: {display(shlex.join(recording['command']))} ({display(ended)})")
    basis = run.get("count_basis") or {}
    if basis.get("graph", "").startswith("per call"):
        lines.append(f"  counts: eager ops and tf.function calls {display(basis.get('eager', ''))}; "
                     f"graph ops {display(basis['graph'])}")
    if recording and recording["note"]:
        lines.append(f"  note: {display(recording['note'])}")
    return lines


_TABLE_HEADER = ["op type", "eager", "eager kernels", "graph", "graph kernels"]
_RIGHT_ALIGNED = {1, 3}   # the columns of numbers


def _op_table(run: dict[str, Any], first: Optional[int] = None) -> str:
    """A run's op types as a table: executions and kernels per mode (the ``first`` ones
    only, where given: they come busiest first)."""
    rows = [[display(r["op_type"]), str(r["eager"]["executions"]),
             _kernel_text(r["eager"]["kernels"]),
             str(r["graph"]["executions"]), _kernel_text(r["graph"]["kernels"])]
            for r in run["op_types"][:first]]
    widths = [max(len(x) for x in col) for col in zip(_TABLE_HEADER, *rows)]
    out = []
    for line in [_TABLE_HEADER, ["-" * w for w in widths], *rows]:
        cells = [c.rjust(w) if i in _RIGHT_ALIGNED else c.ljust(w)
                 for i, (c, w) in enumerate(zip(line, widths))]
        out.append("  " + "  ".join(cells).rstrip() + "\n")
    return "".join(out)


def _nothing_readable(logdir: str, models: list[RunModel]) -> LogdirError:
    """The one-line error for a logdir whose files hold nothing we could read: for a run
    ``record`` made whose job never ran TensorFlow, that run and why."""
    recorded = [text for text in map(recorded_nothing, models) if text]
    if recorded and len(recorded) == len(models):
        more = f" (and {len(recorded) - 1} more run(s) like it)" if len(recorded) > 1 else ""
        return LogdirError(recorded[0] + more)
    problems = [p for m in models for p in m.problems]
    # "missing: ..." only says which files a dump set lacks; the others say what was wrong.
    telling = [p for p in problems if not p.message.startswith("missing:")] or problems
    files = sum(len(m.sources.get(k, [])) for m in models for k in ("debugger", "profile", "logs"))
    text = f"{display(logdir)}: nothing readable in the {files} source(s) found"
    if telling:
        first = telling[0]
        text += f"; {display(first.path)}: byte {first.offset}: {display(first.message)}"
        if len(problems) > 1:
            text += f" (and {len(problems) - 1} more problem(s))"
    return LogdirError(text)


def _run_name(run: str | None) -> str | None:
    """``--run`` as the run's name: names are display text (see ``discover.display``), and
    ``display`` leaves display text as it is, so both the name as printed and the
    directory's raw name (a newline, a bidi control, undecodable bytes) select it."""
    return None if run is None else display(run)


def _reader(args: argparse.Namespace) -> Callable[[list[Unit]], Partial]:
    """How ``summary`` reads the sources: here, on ``--workers N`` local processes, or on
    the Dask cluster at ``--dask ADDRESS`` (all through ``partials.read_unit``)."""
    if args.dask:
        def on_dask(units: list[Unit]) -> Partial:
            # The optional extra is imported here, where --dask chose it: the CLI runs
            # (and starts fast) without dask.distributed installed.
            try:
                from .read.daskread import read_dask
            except ImportError as err:
                raise DaskError(f"--dask needs dask.distributed ({err}); pip install "
                                "'tb_opmode[dask]'") from None
            try:
                return read_dask(units, args.dask)
            except OSError as err:  # the scheduler is not there (distributed's timeouts are OSErrors)
                raise DaskError(f"--dask {args.dask}: cannot reach the scheduler: {err}") from None
        return on_dask
    if args.workers:
        return lambda units: read_pool(units, args.workers)
    return read_serial


def _signature(found: list[RunSources]) -> tuple[str, tuple[tuple[str, Any], ...]] | None:
    """What a summary of these runs is made from: the runs as discovery found them (their
    names, files, warnings) and, of every file read, its identity (size, mtime, inode,
    device) and its ctime and mode (a file made unreadable since reads differently); None
    when a file cannot be stat'ed (then nothing is kept)."""
    paths = sorted({p for r in found for files in r.dump_sets.values() for p in files.values()}
                   | {p for r in found for p in (*r.profiles, *r.logs)})
    ids = []
    for p in paths:
        try:
            st = os.stat(p)  # local files only (see _summary)
        except OSError:
            return None
        ids.append((p, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev,
                        st.st_mode)))
    return repr(found), tuple(ids)


def _summary(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    doc = _summary_doc(args)
    for warning in doc["warnings"]:
        stderr.write(f"tb-opmode: warning: {warning}\n")
    if args.format == "json":
        json.dump(doc, stdout, indent=1)
        stdout.write("\n")
    elif args.format == "csv":
        stdout.write(render_csv(doc))
    else:
        stdout.write(render_table(doc))
    return 0


def _functions(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``tb-opmode functions``: the trace ledger of each run, as text or the contract's JSON."""
    doc = _summary_doc(args)
    for warning in doc["warnings"]:
        stderr.write(f"tb-opmode: warning: {warning}\n")
    if args.format == "json":  # the summary's envelope, each run's ledger only
        json.dump({"version": doc["version"], "warnings": doc["warnings"],
                   "runs": [{"run": r["run"], "tf_functions": r.get("tf_functions", [])}
                            for r in doc["runs"]]}, stdout, indent=1)
        stdout.write("\n")
        return 0
    for run in doc["runs"]:
        stdout.write("\n".join(display(line) for line in functions_text(run).splitlines()) + "\n")
    return 0


def _keeps_summary(args: argparse.Namespace) -> bool:
    """Whether the whole document is kept in the cache: for a run of the program on a
    local logdir read here; not for main(argv) called from Python (the caller may have
    patched what reads the files, which the cache's code fingerprint cannot see), nor
    for --workers/--dask (whose reading is then not exercised), nor remotely (a stat per
    object)."""
    return bool(args.program and not (args.workers or args.dask)
                and not any(map(fs.is_remote, (args.logdir, *args.log))))


def _summary_doc(args: argparse.Namespace) -> dict[str, Any]:
    """The summary of the logdir: kept from a previous run of the program on the same
    files, or read now (and kept if its files did not change while they were read)."""
    run = _run_name(args.run)
    found = find_runs(args.logdir, run, tuple(args.log))
    cache_args = ("" if run is None else run, *map(fs.absolute, args.log))
    before = _signature(found) if _keeps_summary(args) else None
    kept: dict[str, Any] | None = (load_summary(args.logdir, cache_args, before)
                                   if before is not None else None)
    if kept is not None:
        return kept
    models = load(args.logdir, run, tuple(args.log), read=_reader(args), found=found)
    if not any(m.counts_from for m in models):
        raise _nothing_readable(args.logdir, models)
    doc = summary(models, args.logdir)
    if before is not None and _signature(found) == before:
        store_summary(args.logdir, cache_args, before, doc, [p for p, _i in before[1]])
    return doc


def _readable_models(args: argparse.Namespace) -> list[RunModel]:
    """The runs ``--run`` selects that have something to count, or the error saying why
    there are none."""
    loaded = load(args.logdir, _run_name(args.run), tuple(args.log))
    models = [m for m in loaded if m.counts_from]
    if not models:
        raise _nothing_readable(args.logdir, loaded)
    return models


def _explain(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    models = _readable_models(args)
    if args.run is None and len(models) > 1:
        with_op = [m for m in models if args.op_type in m.op_types]
        models = with_op[:1] or models[:1]
        stderr.write(f"tb-opmode: several runs; explaining run {models[0].run!r} "
                     f"(choose one with --run)\n")
    model = models[0]
    if args.op_type not in model.op_types:
        hint = did_you_mean(args.op_type, model.op_types)
        raise UnknownOpType(f"run {model.run!r} has no op type {args.op_type!r}{hint}")
    # Its counts are the summary's: what they leave out (a cut file) is said here too.
    for warning in run_warnings(model, fs.absolute(args.logdir)):
        stderr.write(f"tb-opmode: warning: {display(model.run)}: {warning}\n")
    stdout.write(f"{display(args.op_type)} in run {display(model.run)} "
                 f"(TensorFlow {display(model.tensorflow_version) or '?'})\n\n")
    _write_lead(model, args.logdir, args.op_type, stdout)
    stdout.write("How TF decided, and the evidence:\n")
    _write_explanation(model, args.op_type, args.top, stdout)
    return 0


def _width() -> int:
    """The terminal's width, within reason (80 when output is not a terminal)."""
    return max(60, min(shutil.get_terminal_size((80, 24)).columns, 140))


def _write_lead(model: RunModel, logdir: str, op_type: str, stdout: TextIO) -> None:
    """The answer first, in the tab's words (``lead``): a sentence per mode, one on kernels."""
    row = build_view(model, logdir, timeline=False).rows[op_type]
    sentences = lead(model, row)
    for text in (sentences["eager"], sentences["graph"], sentences["kernel"]):
        stdout.write(textwrap.fill(display(text), width=_width(), subsequent_indent="  ") + "\n")
    stdout.write("\n")


def _write_explanation(model: RunModel, op_type: str, top: int, stdout: TextIO) -> None:
    """``explain`` as text. Names, file paths and reasons come from the dump (a source
    file's path is whatever the user's program was called): all go through ``display``."""
    row = model.op_types[op_type]
    why = explain(model, op_type)
    for mode in MODES:
        stats = row.mode(mode)
        stdout.write(f"\n{mode}: {_plural(stats.executions, 'execution')}\n")
        for k in sorted(stats.kernels, key=lambda k: -k.executions):
            stdout.write(f"  kernel {display(k.name)}  x{k.executions}  [{k.evidence}]"
                         + ("  oneDNN" if k.onednn else "") + "\n")
        for reason in why[mode]["reasons"]:
            stdout.write(textwrap.fill(display(reason["text"]), width=_width(), initial_indent="  - ",
                                       subsequent_indent="    ") + "\n")
        if stats.executions:
            sites = call_sites(model, op_type, mode, limit=None, snippets=False)
            _write_call_sites(sites[:top], mode, stdout)
            if len(sites) > top:
                stdout.write(f"    ... and {_plural(len(sites) - top, 'more call site')} "
                             f"(--top {len(sites)} lists them all)\n")


def _plural(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


def _write_call_sites(sites: list[dict[str, Any]], mode: str, stdout: TextIO) -> None:
    """The call sites of an op type in one mode, with the user's code that led there."""
    if sites:
        stdout.write("  call sites" + (" (the Python lines that built its graph ops; counts are "
                                       "their executions)" if mode == "graph" else "") + ":\n")
    for site in sites:
        stdout.write(f"    {site['count']:>7}  {display(site['file'])}:{site['line']}  "
                     f"{display(site['function'])}\n")
        user = site.get("user_code")
        if user:
            stdout.write(f"             from {display(user['file'])}:{user['line']}  "
                         f"{display(user['function'])}\n")


def _report(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """``report``: one run as Markdown or HTML to paste into an issue (``report.py`` writes
    it from the run's summary JSON; here only what that JSON lacks is gathered: call
    sites, the logs' CPU features, this machine's host name to hide)."""
    models = _readable_models(args)
    model = _report_model(args, models, stderr)
    logdir = fs.absolute(args.logdir)
    doc = run_json(model, logdir)
    sites = _focus_call_sites(model, focus_ops(doc, args.op))  # an unknown --op fails here
    for warning in doc["warnings"]:
        stderr.write(f"tb-opmode: warning: {display(model.run)}: {warning}\n")
    # This machine's name too: a profile or log may name it where the dump does not.
    redaction = Redaction(logdir=logdir, project=os.getcwd(),
                          hosts=(*doc["hosts"], socket.gethostname()), enabled=not args.no_redact)
    blocks = report_blocks(doc, asked=args.op, call_sites=sites, cpu_features=_cpu_features(model),
                           redaction=redaction, other_runs=[m.run for m in models if m is not model])
    _write_report(render(blocks, args.format), args.output, stdout, stderr)
    return 0


def _report_model(args: argparse.Namespace, models: list[RunModel], stderr: TextIO) -> RunModel:
    """The run to report: the first, or without ``--run`` the first that has every op
    asked for (as ``explain`` picks the one with its op), saying so when there are several."""
    model = models[0]
    if args.run is None and len(models) > 1:
        model = next((m for m in models if all(op in m.op_types for op in args.op)), model)
        stderr.write(f"tb-opmode: several runs; reporting run {model.run!r} "
                     f"(choose one with --run)\n")
    return model


def _focus_call_sites(model: RunModel, focus: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Op type -> mode -> its first call sites, for the op types the report explains."""
    return {op: {mode: call_sites(model, op, mode, limit=MAX_SITES, snippets=False)
                 for mode in MODES} for op in focus}


def _cpu_features(model: RunModel) -> list[str] | None:
    """The instruction sets the run's logs name, or None when no log has TF's start-up line."""
    features = sorted(set().union(*(log.cpu_features for log in model.logs
                                    if log.cpu_features is not None)))
    return features or None


def _write_report(text: str, output: str | None, stdout: TextIO, stderr: TextIO) -> None:
    """The report to ``output`` (saying where it went), or to stdout."""
    if output is None:
        stdout.write(text)
        return
    try:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as err:
        raise ReportOutputError(f"{output}: cannot write the report: "
                                f"{err.strerror or err}") from None
    stderr.write(f"tb-opmode: report written to {display(output)}\n")


def _positive_int(text: str) -> int:
    """``--top N``: a slice bound of -1 would silently drop the last call site."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {value}")
    return value


_LOGDIR_HELP = "TensorBoard logdir (or s3:// URL) holding tfdbg2 dumps, profiles or TF logs"
_LOG_HELP = ("a TF log kept elsewhere, attached to its run by its content, or to --run RUN "
             "(repeatable)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tb-opmode",
        description="Which TensorFlow ops ran eagerly or in graphs, and which kernel ran them.")
    parser.add_argument("--version", action="version", version=f"tb-opmode {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("summary", help="per op type: executions and kernels in each mode")
    p.add_argument("logdir", metavar="LOGDIR", help=_LOGDIR_HELP)
    p.add_argument("--run", help="only this run (its path relative to LOGDIR, '.' for LOGDIR)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="table (default); json: the stable contract; csv: a row per run, op "
                        "type, mode and kernel")
    p.add_argument("--log", action="append", default=[], metavar="FILE", help=_LOG_HELP)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_positive_int, metavar="N",
                       help="read the sources (dumps, profiles, logs) on N local processes")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="read the sources on the Dask cluster whose scheduler is ADDRESS "
                            "(tcp://host:port); its workers must see LOGDIR at the same path")
    p.set_defaults(func=_summary, command_parser=p)
    f = sub.add_parser("functions", help="per Python function run as a tf.function: its traces, "
                                         "calls, tracing time, why it traced again, what to change")
    f.add_argument("logdir", metavar="LOGDIR", help=_LOGDIR_HELP)
    f.add_argument("--run", help="only this run (its path relative to LOGDIR, '.' for LOGDIR)")
    f.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default) or json")
    f.add_argument("--log", action="append", default=[], metavar="FILE", help=_LOG_HELP)
    f.set_defaults(func=_functions, workers=None, dask=None, command_parser=f)
    e = sub.add_parser("explain", help="why an op type ran in each mode with its kernel")
    e.add_argument("logdir", metavar="LOGDIR", help=_LOGDIR_HELP)
    e.add_argument("op_type", metavar="OP_TYPE", help="op type as the dump names it, e.g. Transpose")
    e.add_argument("--run", help="the run (default: the first that has the op type)")
    e.add_argument("--top", type=_positive_int, default=5, metavar="N",
                   help="call sites to show per mode (at least 1; default 5)")
    e.add_argument("--log", action="append", default=[], metavar="FILE", help=_LOG_HELP)
    e.set_defaults(func=_explain, command_parser=e)
    r = sub.add_parser("report", help="one run as Markdown or HTML to paste into an issue")
    r.add_argument("logdir", metavar="LOGDIR", help=_LOGDIR_HELP)
    r.add_argument("--run", help="the run (default: the first, or the first with every --op)")
    r.add_argument("--op", action="append", default=[], metavar="OP",
                   help="op type to explain, always in the table (repeatable; "
                        f"default: {', '.join(DEFAULT_FOCUS)} when present)")
    r.add_argument("--format", choices=FORMATS, default="md",
                   help="md: Markdown (default); html: one page, its CSS inline")
    r.add_argument("--output", metavar="FILE", help="write the report to FILE, not stdout")
    r.add_argument("--no-redact", action="store_true",
                   help="keep paths and host names (by default: LOGDIR, <path>/file.py, host1)")
    r.add_argument("--log", action="append", default=[], metavar="FILE", help=_LOG_HELP)
    r.set_defaults(func=_report, command_parser=r)
    # Listed for --help only: main() hands `record ...` to capture.command before this parser
    # (everything after its `--` is the user's command, which argparse would parse).
    sub.add_parser("record", help="run a command with TensorFlow's evidence switched on, then "
                                  "summarise it", usage=RECORD_USAGE)
    return parser


# glibc's mallopt parameters (M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD) and what the
# command sets them to.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
_MALLOC_TUNING = ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, 512 << 20), (_M_TOP_PAD, 64 << 20))


def _keep_freed_memory() -> None:
    """Let glibc's malloc keep what the readers free for their next window, rather than
    hand it back to the kernel and fault it in again: a window's numpy arrays are a few
    MB, each above malloc's default mmap threshold, so every window's were fresh pages
    (the kernel's page-fault time was a third of a profile's read). For the command's
    short life only: a long-lived process (TensorBoard) keeps malloc's defaults. Nothing
    happens where the C library is not glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    for param, value in _MALLOC_TUNING:
        mallopt(param, value)


def main(argv: list[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    if argv is None:  # the command itself, not a call from Python
        _keep_freed_memory()
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["record"]:
        args = argparse.Namespace(func=lambda _args, out, err: record_main(given[1:], out, err, render_table))
    else:
        args, extra = _parser().parse_known_args(argv)
        if extra:  # said with the usage of the command they were given to
            args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.program = argv is None  # run as the program (the command line), not called from Python
    try:
        status: int = args.func(args, stdout, stderr)
        return status
    except PublicError as err:  # errors.py: each a message for the user
        stderr.write(f"tb-opmode: error: {display(str(err))}\n")
        return 2
    except BrokenPipeError:  # `tb-opmode summary ... | head`
        return 0
    except Exception as err:  # a bug; still one line for the person at the terminal
        if os.environ.get("TB_OPMODE_TRACEBACK"):
            raise
        stderr.write(f"tb-opmode: error: unexpected {type(err).__name__}: {display(str(err))[:500]} "
                     "(a bug in tb-opmode; TB_OPMODE_TRACEBACK=1 shows where)\n")
        return 3


if __name__ == "__main__":
    sys.exit(main())
