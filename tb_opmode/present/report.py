"""A report to paste into an issue: one run's facts, kernel table and explanations.

In: one run of the summary contract (``contract.run_json``, with explanations), the
call sites of the op types it explains (``explain.call_sites``, per op type and mode),
the instruction sets the run's logs name, and a ``Redaction``. Out: Markdown
(``render_markdown``) or one self-contained HTML page (``render_html``: inline
CSS, no script, no external resource).

This is a present stage: it reads only that JSON-ready data, never the
readers' internals, so what it says is what ``tb-opmode summary --format json``
says. ``report_blocks`` turns it into a small document (headings, paragraphs, lists,
one table) whose text is already redacted but not yet escaped; each renderer
escapes every string taken from the files for its own format (a run directory
named ``<script>...`` stays text in both).

Redaction (on unless asked off) keeps an issue from leaking the reporter's
machine: the logdir becomes ``LOGDIR``, a path in the current project is shown
relative to it, any other path as ``<path>/file.py`` (base name and line kept:
they say which code, the directories only whose machine), host names as
``host1``, ``host2``... (also inside file names: tfdbg and the profiler name
their files after the host), so no home directory's user name is left either.
"""
from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .. import __version__
from ..analyze.eager_sites import DISPATCH_TIME
from ..errors import UnknownOpType, did_you_mean
from ..read.discover import display
from ..vocab import MODES, REMOVED, UNKNOWN
from .eager_text import site_figures
from .glance import folded, simplified

__all__ = ["Redaction", "Code", "Strong", "Inline", "Heading", "Para", "Bullets", "Table", "Block",
           "DEFAULT_FOCUS", "TOP_OP_TYPES", "MAX_ROWS", "focus_ops", "select_op_types",
           "kernels_differ", "report_blocks", "render_markdown", "render_html", "render", "FORMATS"]

FORMATS = ("md", "html")
# The seed question: is eager Transpose stock while graphs run _MklTranspose, and MatMul?
DEFAULT_FOCUS = ("Transpose", "MatMul")
TOP_OP_TYPES = 15       # busiest op types always in the table
MAX_ROWS = 30           # table rows at most: an issue is read, not scrolled
MAX_LIST = 10           # warnings, unknown kernels, XLA functions shown at most
MAX_SITES = 3           # call sites per op type and mode
MAX_FUNCTIONS = 5       # tf.functions named in the facts


# ---------------------------------------------------------------- redaction

# A host name that identifies nobody: left as it is.
_PUBLIC_HOSTS = frozenset(("", "localhost", "localhost.localdomain"))
# An absolute POSIX path (not a TF device name such as /job:localhost/..., nor the end of
# an HTML-like "</b>"), or a Windows one, inside free text; ':' ends it so that
# ``file.py:12`` keeps its line.
_ABS_PATH = re.compile(r"(?<![\w.~/<-])(?:/(?!job:)|[A-Za-z]:\\)[^\s'\"`<>|,;:()\[\]{}]+")
# A URL is no local path (its host part still goes through the host names).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")
# A path relative to the logdir that leaves it (a --log elsewhere): shown like any outside path.
_UP_PATH = re.compile(r"(?<![\w./-])\.\.[/\\][^\s'\"`<>|,;:()\[\]{}]+")
# Installed libraries are nobody's project, even inside a project's own venv.
_INSTALLED = re.compile(r"[/\\](site-packages|dist-packages)[/\\]")


@dataclass(frozen=True)
class Redaction:
    """How paths and host names are shown. ``logdir`` and ``project`` are absolute
    directories (``project`` "" for none); ``hosts`` the names to hide, in the order
    they are numbered (names sharing a first label, ``vm`` and ``vm.corp``, are one
    host). With ``enabled`` false everything is shown as it is."""

    logdir: str
    project: str = ""
    hosts: tuple[str, ...] = ()
    enabled: bool = True
    _numbers: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in self.hosts:
            label = name.split(".", 1)[0].lower()
            if name.lower() not in _PUBLIC_HOSTS and label not in self._numbers:
                self._numbers[label] = len(self._numbers) + 1

    def host(self, name: str) -> str:
        if not self.enabled or name.lower() in _PUBLIC_HOSTS:
            return name
        number = self._numbers.get(name.split(".", 1)[0].lower())
        return f"host{number}" if number else name

    def _hosts_in(self, text: str) -> str:
        # Longest first, so that vm.corp.example is replaced whole before vm.
        for name in sorted({h for h in self.hosts if h.lower() not in _PUBLIC_HOSTS},
                           key=len, reverse=True):
            text = re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])",
                          self.host(name), text, flags=re.IGNORECASE)
        return text

    def _project(self) -> str:
        # A project at the root or at (or above) the home directory would show a home
        # path as a relative one that still names the user: no project then.
        project = self.project.rstrip("/\\")
        home = os.path.expanduser("~").rstrip("/\\")
        if not project or os.path.dirname(project) == project or project == home \
                or _inside(home, project) or project in ("/home", "/Users", "/root"):
            return ""
        return project

    def path(self, path: str, base: str = "") -> str:
        """A file path as the report shows it; a relative ``path`` is taken relative to
        ``base`` (the logdir, for the contract's source lists)."""
        if not self.enabled:
            return path
        if not os.path.isabs(path) and not _WINDOWS.match(path):
            if not base:
                return self._hosts_in(path)
            path = os.path.normpath(os.path.join(base, path))
        return self._absolute_path(path)

    def _absolute_path(self, path: str) -> str:
        """An absolute path: under the logdir, in the project, or anywhere else."""
        logdir = self.logdir.rstrip("/\\")
        if path == logdir:
            return "LOGDIR"
        if logdir and _inside(path, logdir):
            return self._hosts_in("LOGDIR/" + path[len(logdir) + 1:].replace("\\", "/"))
        project = self._project()
        if project and _inside(path, project) and not _INSTALLED.search(path):
            return self._hosts_in(path[len(project) + 1:].replace("\\", "/"))
        return "<path>/" + self._hosts_in(re.split(r"[/\\]", path.rstrip("/\\"))[-1])

    def name(self, name: str) -> str:
        """A name (run, op, kernel, function, a source relative to the logdir): only its
        host names are redacted. A name is no path: a run named ``x<script>a</script>``
        must not have its ``/script>`` taken for one."""
        name = display(name)
        return self._hosts_in(name) if self.enabled else name

    def text(self, text: str) -> str:
        """Free text (a warning, a note, a name) with every path and host in it redacted."""
        text = display(text)
        if not self.enabled:
            return text
        pieces = _URL.split(text)
        urls = _URL.findall(text)
        out = []
        for i, piece in enumerate(pieces):
            piece = _ABS_PATH.sub(lambda m: self.path(m.group()), piece)
            out.append(_UP_PATH.sub(lambda m: self.path(m.group(), self.logdir), piece))
            if i < len(urls):
                out.append(urls[i])
        return self._hosts_in("".join(out))


_WINDOWS = re.compile(r"[A-Za-z]:\\")


def _inside(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/\\") + "/") or \
        path.startswith(directory.rstrip("/\\") + "\\")


# ---------------------------------------------------------------- the document

@dataclass(frozen=True)
class Code:
    """A name taken from the files (op, kernel, file, function): shown as code."""
    text: str


@dataclass(frozen=True)
class Strong:
    """A word of our own to stand out (the mode leading its paragraph)."""
    text: str


# Text (str), names (Code) and our own emphasis (Strong), in order. Markup is never
# written into a str: renderers escape every str whole, whatever it holds.
Inline = list[Union[str, Code, Strong]]


@dataclass
class Heading:
    level: int
    content: Inline


@dataclass
class Para:
    content: Inline


@dataclass
class Bullets:
    items: list[Inline]


@dataclass
class Table:
    header: list[str]
    rows: list[list[Inline]]
    right: frozenset[int] = frozenset()   # columns of numbers


Block = Union[Heading, Para, Bullets, Table]


def kernels_differ(row: dict[str, Any]) -> bool:
    """Whether the kernels that ran differ between the modes, as the tab's "kernel
    differs" filter has it: both modes ran, and the kernels that ran (not removed,
    constant-folded, replaced by an Identity or unknown) differ, or only one mode ran a oneDNN kernel."""
    if not row["eager"]["executions"] or not row["graph"]["executions"]:
        return False

    def ran(mode: str) -> set[str]:
        return {k["name"] for k in row[mode]["kernels"] if k["name"] not in (UNKNOWN, REMOVED, "")
                and not folded(row["op_type"], k["name"])
                and not simplified(row["op_type"], k["name"])}
    eager, graph = ran("eager"), ran("graph")
    if eager and graph and eager != graph:
        return True
    return any(k["onednn"] for k in row["eager"]["kernels"] if k["name"] in eager) != \
        any(k["onednn"] for k in row["graph"]["kernels"] if k["name"] in graph)


def _onednn(row: dict[str, Any]) -> bool:
    return any(k["onednn"] for mode in MODES for k in row[mode]["kernels"])


def _total(row: dict[str, Any]) -> int:
    return int(row["eager"]["executions"]) + int(row["graph"]["executions"])


def focus_ops(run: dict[str, Any], asked: list[str]) -> list[str]:
    """The op types to explain: those asked for (each must be in the run, else
    ``UnknownOpType`` naming it and the near names), or by default those of
    ``DEFAULT_FOCUS`` the run has."""
    names = [r["op_type"] for r in run["op_types"]]
    for op in asked:
        if op not in names:
            hint = did_you_mean(op, names)
            raise UnknownOpType(f"run {run['run']!r} has no op type {op!r}{hint}")
    if asked:
        return list(dict.fromkeys(asked))
    return [op for op in DEFAULT_FOCUS if op in names]


def select_op_types(run: dict[str, Any], asked: list[str], top: int = TOP_OP_TYPES,
                    max_rows: int = MAX_ROWS) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows shown, rows left out). Shown: the asked op types, then the ``top`` busiest,
    then every one whose kernel differs between modes or is oneDNN in a mode, busiest
    first, at most ``max_rows`` (asked ones always); in the contract's order."""
    rows = run["op_types"]   # busiest first (contract.run_json)
    wanted: list[str] = list(dict.fromkeys(asked))
    for i, row in enumerate(rows):
        if i < top or kernels_differ(row) or _onednn(row):
            if row["op_type"] not in wanted:
                wanted.append(row["op_type"])
    keep = set(wanted[:max(max_rows, len(set(asked)))])
    return ([r for r in rows if r["op_type"] in keep], [r for r in rows if r["op_type"] not in keep])


def _kernels_cell(mode: dict[str, Any], red: Redaction) -> Inline:
    out: Inline = []
    several = len(mode["kernels"]) > 1
    for i, k in enumerate(mode["kernels"]):
        if i:
            out.append(", ")
        out.append(Code(red.name(k["name"])) if k["name"] else "(none)")
        out.append((f" x{k['executions']}" if several else "") + f" ({k['evidence']})")
    return out or ["-"]


def _facts(run: dict[str, Any], cpu_features: Optional[list[str]], red: Redaction,
           other_runs: list[str]) -> list[Inline]:
    """The run's facts, one bullet each; those the run has nothing for are left out."""
    facts: list[Optional[Inline]] = [
        ["Run: ", Code(red.name(run["run"])), " in ", Code(red.path(red.logdir))],
        ["TensorFlow: ", Code(red.name(run["tensorflow_version"]) or "?")
         if run["tensorflow_version"] else "unknown (no tfdbg dump)"],
        _onednn_fact(run, red),
        _cpu_fact(cpu_features, red),
        ["Hosts: " + ", ".join(red.name(h) for h in run["hosts"])] if run["hosts"] else None,
        _evidence_fact(run, red),
        _functions_fact(run["functions"], red),
        _primitives_fact(run.get("onednn_verbose", {}).get("primitives", []), red),
        _other_runs_fact(other_runs, red),
        [f"Warnings: {len(run['warnings'])}"],
    ]
    return [fact for fact in facts if fact is not None]


def _onednn_fact(run: dict[str, Any], red: Redaction) -> Inline:
    onednn = {True: "on", False: "off", None: "unknown"}[run["onednn_enabled"]]
    how = f" ({red.text(run['onednn_source'])})" if run["onednn_source"] else \
        " (nothing in this run says)"
    return [f"oneDNN: {onednn}{how}"]


def _cpu_fact(cpu_features: Optional[list[str]], red: Redaction) -> Inline:
    # Which oneDNN kernels a CPU gets (AVX512_FP16 for f16, AMX, BF16) follows its ISA.
    if not cpu_features:
        return ["CPU features: unknown (no TF start-up line in a log)"]
    return ["CPU features (TF's start-up line): " + ", ".join(red.name(f) for f in cpu_features)]


# The run's sources by kind, as the facts name them; the first few of each are named.
_SOURCE_KINDS = (("debugger", "tfdbg dump"), ("profile", "profile"), ("logs", "TF log"))
_SOURCES_NAMED = 3


def _evidence_fact(run: dict[str, Any], red: Redaction) -> Inline:
    """How many sources of each kind the run has, the first few named, and which kind
    its counts come from."""
    evidence: Inline = ["Evidence: "]
    for i, (key, label) in enumerate(_SOURCE_KINDS):
        names = run["sources"].get(key, [])
        evidence.append(("; " if i else "") + f"{label} {len(names)}")
        evidence += _source_names(names, red)
    evidence.append(f"; counts from: {run['counts_from'] or 'nothing'}")
    return evidence


def _source_names(names: list[str], red: Redaction) -> Inline:
    """`` (a, b, c, +N more)``: the first sources of a kind, or nothing when there are none.
    Source names are relative to the logdir; one that leaves it (a --log kept elsewhere)
    is an outside path."""
    if not names:
        return []
    out: Inline = []
    for j, name in enumerate(names[:_SOURCES_NAMED]):
        out += [" (" if j == 0 else ", ",
                Code(red.path(name, red.logdir) if name.startswith("..") else red.name(name))]
    more = len(names) - _SOURCES_NAMED
    out.append(f", +{more} more)" if more > 0 else ")")
    return out


def _functions_fact(functions: list[dict[str, Any]], red: Redaction) -> Optional[Inline]:
    if not functions:
        return None
    funcs: Inline = ["tf.function calls: "]
    for i, f in enumerate(functions[:MAX_FUNCTIONS]):
        funcs += [", " if i else "", Code(red.name(f["name"])), f" x{f['calls']}"]
    if len(functions) > MAX_FUNCTIONS:
        funcs.append(f", {len(functions) - MAX_FUNCTIONS} more")
    return funcs


def _primitives_fact(prims: list[dict[str, Any]], red: Redaction) -> Optional[Inline]:
    """ONEDNN_VERBOSE's primitives by kind, the most created first."""
    if not prims:
        return None
    kinds: dict[str, int] = {}
    for p in prims:
        kinds[p["kind"]] = kinds.get(p["kind"], 0) + int(p["count"])
    return ["ONEDNN_VERBOSE primitives: " + ", ".join(
        f"{red.name(k)} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))]


_OTHER_RUNS_NAMED = 5


def _other_runs_fact(other_runs: list[str], red: Redaction) -> Optional[Inline]:
    if not other_runs:
        return None
    return [f"{len(other_runs)} other run(s) in the logdir, not in this report: "
            + ", ".join(red.name(r) for r in other_runs[:_OTHER_RUNS_NAMED])
            + (" ..." if len(other_runs) > _OTHER_RUNS_NAMED else "") + " (choose one with --run)"]


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _capped(items: list[Inline], total: int, what: str) -> list[Inline]:
    if total > len(items):
        items.append([f"... and {total - len(items)} more {what} (not shown)"])
    return items


def _site(site: dict[str, Any], red: Redaction) -> Inline:
    out: Inline = [f"x{site['count']} ", Code(f"{red.path(site['file'])}:{site['line']}"),
                   " in ", Code(red.name(site["function"]))]
    if site.get("ops"):
        out.append(f" ({_n(site['ops'], 'graph op')})")
    user = site.get("user_code")
    if user:
        out += [", from ", Code(f"{red.path(user['file'])}:{user['line']}"), " in ",
                Code(red.name(user["function"]))]
    return out


def _explanations(run: dict[str, Any], focus: list[str],
                  sites: dict[str, dict[str, list[dict[str, Any]]]],
                  red: Redaction) -> list[Block]:
    rows = {r["op_type"]: r for r in run["op_types"]}
    out: list[Block] = []
    for op in focus:
        row = rows[op]
        out.append(Heading(3, ["Why ", Code(red.name(op)), " ran as it did"]))
        for mode in MODES:
            stats = row[mode]
            if not stats["executions"]:
                out.append(Para([Strong(mode), f": did not run in {mode} mode."]))
                continue
            out.append(Para([Strong(mode), f" ({_n(stats['executions'], 'execution')}; kernel ",
                             *_kernels_cell(stats, red), "): ",
                             red.text(stats.get("explanation", "")) or "no explanation"]))
            mode_sites = sites.get(op, {}).get(mode, [])[:MAX_SITES]
            if mode_sites:
                out.append(Para(["Call sites" + (" (where the graph ops were traced)"
                                                 if mode == "graph" else "") + ":"]))
                out.append(Bullets([_site(s, red) for s in mode_sites]))
    return out


def report_blocks(run: dict[str, Any], *, asked: list[str],
                  call_sites: dict[str, dict[str, list[dict[str, Any]]]],
                  cpu_features: Optional[list[str]], redaction: Redaction,
                  other_runs: Optional[list[str]] = None) -> list[Block]:
    """The report of one run (``contract.run_json`` with explanations) as blocks.
    ``asked``: the ``--op`` op types (checked with ``focus_ops``); ``call_sites``: op
    type -> mode -> ``explain.call_sites`` of the op types explained; ``cpu_features``: the
    logs' instruction sets (None: no start-up line)."""
    red = redaction
    focus = focus_ops(run, asked)
    shown, left = select_op_types(run, asked)
    return [
        Heading(2, ["tb-opmode report"]),
        Para([f"Made by tb-opmode {__version__} (", Code("tb-opmode report"), ")"
              + (", paths and host names redacted." if red.enabled else ", not redacted.")]),
        Bullets(_facts(run, cpu_features, red, other_runs or [])),
        Heading(3, ["Kernels per mode"]),
        _kernel_table(shown, red),
        Para([_table_note(left)]),
        *_explanations(run, focus, call_sites, red),
        *_eager_site_blocks(run.get("eager_sites", []), red),
        *_function_blocks(run.get("tf_functions", []), red),
        *_xla_blocks(run.get("xla_functions", []), red),
        *_unknown_kernel_blocks(run, red),
        *_warning_blocks(run["warnings"], red),
    ]


def _kernel_table(shown: list[dict[str, Any]], red: Redaction) -> Table:
    table_rows: list[list[Inline]] = []
    for row in shown:
        name: Inline = [Code(red.name(row["op_type"]))]
        if kernels_differ(row):
            name.append(" (differs)")
        table_rows.append([name, [str(row["eager"]["executions"])],
                           _kernels_cell(row["eager"], red),
                           [str(row["graph"]["executions"])], _kernels_cell(row["graph"], red)])
    return Table(["op type", "eager", "eager kernels (evidence)", "graph",
                  "graph kernels (evidence)"], table_rows, frozenset((1, 3)))


def _table_note(left: list[dict[str, Any]]) -> str:
    """What the table shows, and what it leaves out."""
    note = ("Shown: the asked op types, the busiest, and every one with a oneDNN kernel or "
            "whose kernels differ between the modes (marked \"differs\"). Evidence: log = seen "
            "in the TF log, profile = in the profiler's events, inferred = not observed.")
    if left:
        note += (f" {len(left)} more op type(s) with {sum(_total(r) for r in left)} executions "
                 f"are left out; tb-opmode summary LOGDIR lists them all.")
    return note


def _eager_site_blocks(sites: list[dict[str, Any]], red: Redaction) -> list[Block]:
    """The first eager hot spots: the user's lines, their figures, op types, advice."""
    items: list[Inline] = []
    for site in sites[:MAX_LIST]:
        where = site["user_location"].rpartition(":")
        item: Inline = [Code(f"{red.path(where[0])}:{where[2]}") if site["user_location"]
                        else "(no line of your code)", " in ", Code(red.name(site["user_scope"])),
                        f": {site_figures(site)}; ",
                        ", ".join(f"{red.name(op)} x{n}" for op, n in list(site["op_types"].items())[:6])]
        if site["location"] != site["user_location"]:
            item += ["; issued by ", Code(red.name(site["location_function"]))]
        item += [". " + " ".join(red.text(a) for a in site["advice"])] if site["advice"] else []
        items.append(item)
    if not items:
        return []
    dispatched = any(s.get("time_source") == DISPATCH_TIME for s in sites)
    order = ("by eager time, as the recording job timed each dispatch." if dispatched else
             "by profiled eager time where a profile covers them, then by executions.")
    return [Heading(3, ["Eager hot spots"]),
            Para([f"The lines of the program that issued eager ops, {order}"]),
            Bullets(_capped(items, len(sites), "lines"))]
def _function_item(f: dict[str, Any], red: Redaction) -> Inline:
    """One Python function of the trace ledger: traces, calls, tracing time, causes, advice."""
    path, _, line = f["location"].rpartition(":")
    tracing = "tracing time not recorded" if f["tracing_s"] is None else (
        f"tracing {'at least ' if f['tracing_from'] == 'op_creations' else ''}{f['tracing_s'] * 1e3:.1f} ms")
    # A function known from TF's log alone has no def line: none shown (as `functions`).
    where: Inline = [" (", Code(f"{red.path(path)}:{line}"), ")"] if path else []
    out: Inline = [Code(red.name(f["name"])), *where,
                   f": {_n(f['traces'], 'trace')}, {_n(f['calls'], 'call')}, {tracing}"]
    if f["causes"]:
        out.append("; traced again for: " + ", ".join(f"{k} x{n}" for k, n in f["causes"].items()))
    if f["advice"]:
        out.append(". " + red.text("; ".join(f["advice"])))
    return out


def _function_blocks(functions: list[dict[str, Any]], red: Redaction) -> list[Block]:
    """The trace ledger (``tb-opmode functions`` has each trace)."""
    shown = [f for f in functions if not f.get("nested")]
    if not shown:
        return []
    return [Heading(3, ["Functions (tf.function traces)"]),
            Bullets(_capped([_function_item(f, red) for f in shown[:MAX_LIST]], len(shown),
                            "functions"))]


def _xla_blocks(xla: list[dict[str, Any]], red: Redaction) -> list[Block]:
    if not xla:
        return []
    return [Heading(3, ["XLA functions"]),
            Bullets(_capped([[Code(red.name(f["name"])), f": {f['launches']} launches in the log; ",
                              red.text(f["note"])] for f in xla[:MAX_LIST]],
                            len(xla), "XLA functions"))]


def _unknown_kernel_blocks(run: dict[str, Any], red: Redaction) -> list[Block]:
    unknown = [(row, mode, k) for row in run["op_types"] for mode in MODES
               for k in row[mode]["kernels"] if k["name"] == UNKNOWN]
    if not unknown:
        return []
    return [Heading(3, ["Unknown kernels"]),
            Bullets(_capped(
                [[Code(red.name(row["op_type"])), f" ({mode}, {_n(k['executions'], 'execution')}): ",
                  red.text("; ".join(k.get("notes", [])) or "no note")]
                 for row, mode, k in unknown[:MAX_LIST]], len(unknown), "op types with unknown kernels"))]


def _warning_blocks(warnings: list[str], red: Redaction) -> list[Block]:
    if not warnings:
        return []
    return [Heading(3, ["Warnings"]),
            Bullets(_capped([[red.text(w)] for w in warnings[:MAX_LIST]], len(warnings), "warnings"))]


# ---------------------------------------------------------------- Markdown

# Backslash-escaped in prose: CommonMark's emphasis, code, link, HTML and table
# characters, GitHub's ~strike~, @mention and #issue references, and '&' (an entity).
# An underscore inside a word (when_multiple_values) emphasises nothing in GFM: left
# alone, so that the pasted source stays readable.
_MD_SPECIAL = re.compile(r"[\\`*\[\]<>|&~@#!]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _md_code(text: str) -> str:
    # A code span needs a fence longer than any run of backticks inside; a '|' ends a
    # table cell even inside code, so it is escaped (GFM removes the backslash).
    text = text.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_text(text: str) -> str:
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(), display(text))


def render_markdown(blocks: list[Block]) -> str:
    """Markdown (CommonMark + GitHub tables) of the report."""
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + _md_line(block.content), ""]
        elif isinstance(block, Para):
            lines += [_md_line(block.content), ""]
        elif isinstance(block, Bullets):
            lines += ["- " + _md_line(item) for item in block.items] + [""]
        else:
            lines.append("| " + " | ".join(block.header) + " |")
            lines.append("|" + "|".join("---:" if i in block.right else "---"
                                        for i in range(len(block.header))) + "|")
            lines += ["| " + " | ".join(_md_line(cell) for cell in row) + " |" for row in block.rows]
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_line(content: Inline) -> str:
    """One line of Markdown: every string escaped, names as code spans."""
    out = []
    for part in content:
        if isinstance(part, Code):
            out.append(_md_code(display(part.text)))
        elif isinstance(part, Strong):
            out.append(f"**{_md_text(part.text)}**")
        else:
            out.append(_md_text(part))
    return "".join(out)


# ---------------------------------------------------------------- HTML

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:72em;
color:#1b1b1b;background:#fff;padding:0 1em}
h2{font-size:1.4em;margin:0 0 .4em}h3{font-size:1.1em;margin:1.4em 0 .4em}
code{font:12.5px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f2f2f2;
padding:0 .25em;border-radius:3px;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f6f6f6}td.n{text-align:right}
ul{padding-left:1.4em}li{margin:.15em 0}
@media (prefers-color-scheme:dark){body{color:#e6e6e6;background:#1e1e1e}
code{background:#333}th{background:#2a2a2a}th,td{border-color:#555}}
"""


def _html_inline(content: Inline) -> str:
    out = []
    for part in content:
        text = html.escape(display(part if isinstance(part, str) else part.text))
        if isinstance(part, Code):
            out.append(f"<code>{text}</code>")
        elif isinstance(part, Strong):
            out.append(f"<strong>{text}</strong>")
        else:
            out.append(text)
    return "".join(out)


def render_html(blocks: list[Block]) -> str:
    """One self-contained HTML page of the report: inline CSS, no script, nothing fetched."""
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{_html_inline(block.content)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f"<p>{_html_inline(block.content)}</p>")
        elif isinstance(block, Bullets):
            body.append("<ul>" + "".join(f"<li>{_html_inline(i)}</li>" for i in block.items)
                        + "</ul>")
        else:
            head = "".join(f"<th>{html.escape(h)}</th>" for h in block.header)
            rows = "".join("<tr>" + "".join(
                ("<td class=\"n\">" if i in block.right else "<td>") + _html_inline(c) + "</td>"
                for i, c in enumerate(row)) + "</tr>" for row in block.rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>tb-opmode report</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def render(blocks: list[Block], fmt: str) -> str:
    """``fmt`` is one of ``FORMATS``."""
    return render_html(blocks) if fmt == "html" else render_markdown(blocks)
