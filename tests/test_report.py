"""``tb-opmode report`` (the README's "A report to paste"), on the logdir real TensorFlow wrote.

In: the seed scenario (``bert_logdir``: a BERT-like Keras fit with dump, profile and
TF log), copies of it under hostile names, and hand-made run documents for what
that run does not have (XLA functions, unknown kernels, names full of markup).
Out: assertions that the Markdown and the HTML parse, that the report answers the
seed question, that nothing from the files becomes markup, and that with
redaction on no path of this machine, host name or home directory is left.
"""
from __future__ import annotations

import copy
import html.parser
import importlib.util
import io
import os
import re
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import pytest

from tb_opmode.analyze.assemble import load
from tb_opmode.cli import main
from tb_opmode.errors import UnknownOpType
from tb_opmode.present.contract import run_json
from tb_opmode.present.report import (
    MAX_ROWS,
    Redaction,
    focus_ops,
    render_html,
    render_markdown,
    report_blocks,
    select_op_types,
)

from .conftest import ROOT, link_tree

# The demo's eager transpose, found by its text so that editing the script above it
# moves the expected line with it.
TRANSPOSE_LINE = 1 + next(
    i for i, line in enumerate((ROOT / "demo" / "make_logdir.py").read_text().splitlines())
    if line.strip() == "y = tf.transpose(y)")

SCRIPT = "<script>alert(1)</script>"
# markdown-it-py comes with rich (TensorBoard's venv on 2.21 has it; 2.13's may not): the
# parse checks need it, the rest of a test does not.
HAVE_MARKDOWN_IT = importlib.util.find_spec("markdown_it") is not None


@contextmanager
def cwd(path: Path) -> Iterator[None]:
    """The report shows paths of the current project relative to it: pin which that is."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def cli(*args: str, at: Path = ROOT) -> tuple[int, str, str]:
    """``tb-opmode`` in this process, run from ``at``: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with cwd(at):
        try:
            code = main(list(args), stdout=out, stderr=err)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def md(bert_logdir: Path) -> str:
    code, out, err = cli("report", str(bert_logdir))
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def report_html(bert_logdir: Path) -> str:
    code, out, err = cli("report", str(bert_logdir), "--format", "html")
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def bert_run(bert_logdir: Path) -> dict[str, Any]:
    (model,) = load(str(bert_logdir))
    return run_json(model, str(bert_logdir))


# ---------------------------------------------------------------- parsing the output

def _cells(line: str) -> list[str]:
    """A GFM table row's cells: split at '|' not escaped by a backslash."""
    inner = line.strip()
    assert inner.startswith("|") and inner.endswith("|") and not inner.endswith("\\|"), line
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner[1:-1])]


def md_tables(text: str) -> list[list[list[str]]]:
    """Each table (consecutive lines starting with '|') as rows of raw cells."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append(_cells(line))
        elif current:
            tables.append(current)
            current = []
    return tables


def md_rendered_rows(text: str) -> list[list[str]]:
    """With markdown-it-py (rich's dependency, when installed): the table's rows as the
    text of their cells, after parsing as CommonMark + GFM tables. Also checks that the
    parse made no raw HTML out of anything."""
    markdown_it = pytest.importorskip("markdown_it")
    parser = markdown_it.MarkdownIt("commonmark").enable("table")
    tokens = parser.parse(text)
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in (t.children or [])}
    assert not kinds & {"html_inline", "html_block"}, "text from the files became raw HTML"
    rows: list[list[str]] = []
    row: Optional[list[str]] = None
    for t in tokens:
        if t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append("".join(c.content for c in (t.children or [])))
        elif t.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
    return rows


class StrictHTML(html.parser.HTMLParser):
    """Fails on any tag closed out of order or left open, and records what a page must
    not have: scripts, anything fetched (src, href, @import, url())."""

    VOID = {"meta", "br", "hr", "img", "link", "input", "col", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, Optional[str]]] = []
        self.text: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: Optional[list[str]] = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse_html(page: str) -> StrictHTML:
    parser = StrictHTML()
    parser.feed(page)
    parser.close()
    assert parser.stack == [], f"left open: {parser.stack}"
    return parser


def row_of(rows: list[list[str]], op_type: str) -> list[str]:
    (row,) = [r for r in rows if r and r[0].split(" ")[0] == op_type]
    return row


# ---------------------------------------------------------------- Markdown

def test_markdown_tables_have_consistent_column_counts(md: str) -> None:
    (table,) = md_tables(md)
    assert table[0] == ["op type", "eager", "eager kernels (evidence)", "graph",
                        "graph kernels (evidence)"]
    assert all(len(row) == 5 for row in table), [r for r in table if len(r) != 5]
    assert set(table[1]) <= {"---", "---:"}


def test_markdown_parses_with_markdown_it(md: str) -> None:
    rows = md_rendered_rows(md)
    assert len(rows) > 10 and all(len(r) == 5 for r in rows)
    assert rows[0][0] == "op type"


def test_markdown_answers_the_seed_question(md: str) -> None:
    (table,) = md_tables(md)
    transpose, matmul = row_of(table, "`Transpose`"), row_of(table, "`MatMul`")
    # Eager Transpose runs _MklTranspose, as only the log's Instantiating line shows.
    assert transpose[2] == "`_MklTranspose` (log)"
    assert "`_MklTranspose`" in transpose[4]
    assert matmul[2] == "`_MklMatMul` (log)" and matmul[4] == "`_MklMatMul` (log)"
    if HAVE_MARKDOWN_IT:
        rows = md_rendered_rows(md)
        assert row_of(rows, "Transpose")[2] == "_MklTranspose (log)"
        assert row_of(rows, "MatMul")[4] == "_MklMatMul (log)"
    assert "### Why `Transpose` ran as it did" in md and "### Why `MatMul` ran as it did" in md
    assert "only the log's 'Instantiating kernel' line shows it" in md
    assert "when_multiple_values" in md   # the histogram callback's eager transposes
    assert "- oneDNN: on (start-up banner in the log)" in md
    assert "TensorFlow: `" in md and "Evidence: tfdbg dump 1" in md
    assert "profile 1" in md and "TF log 1" in md


def test_markdown_call_sites_of_the_project_are_relative(md: str) -> None:
    # Run from the project: its own file keeps its path; an installed library's only its name.
    assert f"`demo/make_logdir.py:{TRANSPOSE_LINE}` in `_eager_preprocessing`" in md
    assert "`<path>/summary_v2.py:271` in `when_multiple_values`" in md


def test_report_is_short_and_says_what_it_left_out(md: str, bert_run: dict[str, Any]) -> None:
    (table,) = md_tables(md)
    shown = len(table) - 2
    assert shown <= MAX_ROWS
    left = len(bert_run["op_types"]) - shown
    assert left > 0 and f" {left} more op type(s) with " in md
    assert len(md) < 20000
    # Every op type with a oneDNN kernel is in, and the 15 busiest.
    names = {row[0].strip("`").split("`")[0] for row in table[2:]}
    assert {r["op_type"] for r in bert_run["op_types"][:15]} <= names
    assert {r["op_type"] for r in bert_run["op_types"]
            if any(k["onednn"] for m in ("eager", "graph") for k in r[m]["kernels"])} <= names


def test_op_adds_its_row_and_explanation(bert_logdir: Path, bert_run: dict[str, Any]) -> None:
    shown, left = select_op_types(bert_run, [])
    quiet = left[-1]["op_type"]   # the least busy op type: never in the table by default
    code, out, err = cli("report", str(bert_logdir), "--op", quiet, "--op", "Transpose")
    assert code == 0, err
    assert any(row[0].startswith(f"`{quiet}`") for row in md_tables(out)[0])
    assert f"### Why `{quiet}` ran as it did" in out and "### Why `Transpose`" in out
    assert "### Why `MatMul`" not in out   # --op replaces the default focus


def test_bad_op_is_a_one_line_error(bert_logdir: Path) -> None:
    code, out, err = cli("report", str(bert_logdir), "--op", "Transposee")
    assert code == 2 and out == ""
    assert err == ("tb-opmode: error: run '.' has no op type 'Transposee'; "
                   "did you mean Transpose?\n")
    code, _out, err = cli("report", str(bert_logdir), "--op", "NoSuchOp")
    assert code == 2 and err.count("\n") == 1 and "'NoSuchOp'" in err


def test_output_writes_the_file(bert_logdir: Path, tmp_path: Path, md: str) -> None:
    target = tmp_path / "report.md"
    code, out, err = cli("report", str(bert_logdir), "--output", str(target))
    assert code == 0 and out == ""
    assert target.read_text(encoding="utf-8") == md
    assert err == f"tb-opmode: report written to {target}\n"
    page = tmp_path / "report.html"
    assert cli("report", str(bert_logdir), "--format", "html", "--output", str(page))[0] == 0
    parse_html(page.read_text(encoding="utf-8"))


def test_unwritable_output_is_a_one_line_error(bert_logdir: Path, tmp_path: Path) -> None:
    code, _out, err = cli("report", str(bert_logdir), "--output", str(tmp_path / "no" / "r.md"))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("tb-opmode: error: ") and "cannot write the report" in err


# ---------------------------------------------------------------- HTML

def test_html_parses_and_holds_the_table(report_html: str) -> None:
    page = parse_html(report_html)
    assert page.tags.count("table") == 1 and "style" in page.tags
    assert "script" not in page.tags and "link" not in page.tags
    assert not [a for a in page.attrs if a[0] in ("src", "href", "srcset", "action")]
    assert "url(" not in report_html and "@import" not in report_html
    assert page.rows[0] == ["op type", "eager", "eager kernels (evidence)", "graph",
                            "graph kernels (evidence)"]
    assert all(len(r) == 5 for r in page.rows)
    assert row_of(page.rows, "Transpose")[2] == "_MklTranspose (log)"
    assert row_of(page.rows, "MatMul")[4] == "_MklMatMul (log)"


@pytest.fixture(scope="module")
def script_logdir(bert_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed logdir as a run whose name is ``x<script>alert(1)</script>``: a directory
    name cannot hold '/', so the run is two directories, ``x<script>alert(1)<`` and, in
    it, ``script>`` (a run's name is its path relative to the logdir)."""
    top = tmp_path_factory.mktemp("script")
    link_tree(bert_logdir, top / "x<script>alert(1)<" / "script>")
    return top


def test_script_in_a_run_name_is_escaped_in_html(script_logdir: Path) -> None:
    code, out, err = cli("report", str(script_logdir), "--format", "html")
    assert code == 0, err
    page = parse_html(out)
    assert "script" not in page.tags
    assert f"<code>x{SCRIPT.replace('<', '&lt;').replace('>', '&gt;')}</code>" in out
    assert f"x{SCRIPT}" in "".join(page.text)   # shown as text, whole
    assert SCRIPT not in out


def test_script_in_a_run_name_is_text_in_markdown(script_logdir: Path) -> None:
    code, out, err = cli("report", str(script_logdir))
    assert code == 0, err
    assert f"Run: `x{SCRIPT}`" in out
    if HAVE_MARKDOWN_IT:
        md_rendered_rows(out)   # no raw HTML token anywhere


def _hostile_run(bert_run: dict[str, Any]) -> dict[str, Any]:
    """The seed run with names made of Markdown and HTML syntax, an XLA function and an
    unknown kernel: what no real run of the fixture has."""
    run = copy.deepcopy(bert_run)
    run["op_types"][0]["op_type"] = "a|b`c*d*_e_<img src=x onerror=alert(1)>"
    run["op_types"][0]["graph"]["kernels"][0]["name"] = "``k|`"
    run["op_types"][1]["graph"]["kernels"] = [{
        "name": "(unknown)", "executions": 3, "onednn": False, "evidence": "inferred",
        "notes": ["NO_TENSOR dump: no dtype; see /home/alice/proj/run.log"]}]
    run["xla_functions"] = [{"name": "__inference_jit_fn_7", "launches": 4, "calls_in_dump": 0,
                             "note": "compiled by XLA <b>really</b>"}]
    run["warnings"] = ["[x](http://evil.example) @someone #1 & <i>w</i>"]
    return run


def test_names_full_of_markup_stay_text(bert_run: dict[str, Any], tmp_path: Path) -> None:
    run = _hostile_run(bert_run)
    blocks = report_blocks(run, asked=[], call_sites={}, cpu_features=None,
                           redaction=Redaction(logdir=str(tmp_path)))
    text = render_markdown(blocks)
    (table,) = md_tables(text)
    assert all(len(row) == 5 for row in table)
    if HAVE_MARKDOWN_IT:
        rows = md_rendered_rows(text)
        assert rows[1][0] == "a|b`c*d*_e_<img src=x onerror=alert(1)>"
        assert rows[1][4] == "``k|` (log)"
    assert "### XLA functions" in text and "### Unknown kernels" in text
    assert "(graph, 3 executions): NO_TENSOR dump: no dtype; see \\<path\\>/run.log" in text
    assert "\\[x\\](http://evil.example) \\@someone \\#1 \\& \\<i\\>w\\</i\\>" in text
    page = parse_html(render_html(blocks))
    assert not set(page.tags) & {"img", "b", "i", "a", "script"}
    assert row_of(page.rows, "a|b`c*d*_e_<img")[0].startswith("a|b`c*d*_e_<img src=x")


# ---------------------------------------------------------------- privacy

def _leaks(text: str, logdir: Path) -> list[str]:
    host = socket.gethostname()
    found = [s for s in (str(logdir), str(logdir.resolve()), "/tmp/", str(ROOT), "/root",
                         "/home", sys.prefix) if s in text]
    for name in {host, host.split(".")[0]}:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text, re.IGNORECASE):
            found.append(f"host name {name!r}")
    return found


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_redaction_leaves_no_path_or_host(bert_logdir: Path, tmp_path: Path, fmt: str) -> None:
    for at in (ROOT, tmp_path):   # from the project, and from elsewhere
        code, out, err = cli("report", str(bert_logdir), "--format", fmt, at=at)
        assert code == 0, err
        assert _leaks(out, bert_logdir) == []
        assert "LOGDIR" in out and "host1" in out
    # From elsewhere the project's own file is an outside path too.
    assert f"<path>/make_logdir.py:{TRANSPOSE_LINE}" in out.replace("&lt;", "<").replace("&gt;", ">")


def test_no_redact_shows_the_paths(bert_logdir: Path) -> None:
    code, out, err = cli("report", str(bert_logdir), "--no-redact")
    assert code == 0, err
    assert f"in `{bert_logdir}`" in out
    assert f"`{ROOT}/demo/make_logdir.py:{TRANSPOSE_LINE}`" in out
    assert "site-packages/tensorboard/plugins/histogram/summary_v2.py:271" in out
    assert "host1" not in out and "LOGDIR" not in out.replace("LOGDIR lists", "")
    assert "not redacted" in out


def test_redaction_rules(tmp_path: Path) -> None:
    logdir, project = "/home/alice/logs/fit", "/home/alice/proj"
    red = Redaction(logdir=logdir, project=project, hosts=("Gpu-Box.corp.example", "gpu-box",
                                                          "worker-2", "localhost"))
    assert red.path(logdir) == "LOGDIR"
    assert red.path(logdir + "/run1/tf_log.txt") == "LOGDIR/run1/tf_log.txt"
    assert red.path(project + "/train.py") == "train.py"
    assert red.path(project + "/.venv/lib/python3.11/site-packages/keras/x.py") == "<path>/x.py"
    assert red.path("/home/alice/other/y.py") == "<path>/y.py"
    assert red.path("C:\\Users\\alice\\z.py") == "<path>/z.py"
    assert red.path("../stderr/vlog.txt", logdir) == "<path>/vlog.txt"   # a --log elsewhere
    # One number per machine (the short and the full name), in the order given.
    assert red.name("tfdbg_events.1.gpu-box") == "tfdbg_events.1.host1"
    assert red.text("on Gpu-Box.corp.example and worker-2") == "on host1 and host2"
    assert red.text("/job:localhost/replica:0/task:0/device:CPU:0") == \
        "/job:localhost/replica:0/task:0/device:CPU:0"
    assert red.text("at /home/alice/proj/train.py:12, see /root/x.log") == \
        "at train.py:12, see <path>/x.log"
    assert red.text("link to ../../home/alice/secret.log: not followed") == \
        "link to <path>/secret.log: not followed"
    # A project at or above the home directory would keep the user's name in a relative path.
    home = os.path.expanduser("~")
    for wide in (Redaction(logdir=logdir, project=os.path.dirname(home)),
                 Redaction(logdir=logdir, project=home), Redaction(logdir=logdir, project="/")):
        assert wide.path(os.path.join(home, "a.py")) == "<path>/a.py"
    off = Redaction(logdir=logdir, project=project, hosts=("gpu-box",), enabled=False)
    assert off.text("/home/alice/x.py on gpu-box") == "/home/alice/x.py on gpu-box"


def test_focus_defaults_to_the_seed_ops(bert_run: dict[str, Any]) -> None:
    assert focus_ops(bert_run, []) == ["Transpose", "MatMul"]
    assert focus_ops(bert_run, ["Softmax", "Softmax"]) == ["Softmax"]
    with pytest.raises(UnknownOpType, match="'matmull'.*did you mean MatMul"):
        focus_ops(bert_run, ["matmull"])
    assert isinstance(UnknownOpType("x"), LookupError)
