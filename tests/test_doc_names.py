"""Docstrings, comments and the docs name only modules that exist.

In: the source of this checkout: the docstrings and comments of every Python file under
``tb_opmode/``, ``bench/``, ``tests/`` and ``demo/`` (read with ``ast`` and ``tokenize``,
nothing imported), and the Markdown pages that describe the code as it is now (README,
CONTRIBUTING, ``docs/``, ``tests/matrix/README.md``; not the changelog nor
``bench/results/``, which record what was). Out: one failure listing every reference to a
module, package or file that is not in the repository, with where it was found.

What counts as a reference:
- a file name with a code extension, bare or with a relative path: ``tfrecord.py``,
  ``read/tfrecord.py``, ``tests/matrix/truth.py``, ``frontend/table.js`` (an absolute path or
  one under a placeholder, ``<path>/file.py``, is an example, not a reference);
- a dotted path from the package, ``tb_opmode.read.tfdbg`` (a last part that is no module
  must be a name its module's source defines or re-exports: ``tb_opmode.read.tfdbg.DumpSet``);
- a dotted path from a stage, ``analyze.kernels``, ``read.tfdbg.DumpSet`` (not in a file
  that uses the stage's name as a variable, as tests do with ``plugin``);
- in double backquotes, a dotted name such as ``kernels.assign_eager``: its first part must
  be a module or package of the repository, a name the same file binds (a variable, a
  parameter, an import), or one of ``EXTERNAL_PREFIXES`` (``tf.function``, ``np.uint8``);
  a file name in backquotes (``index.js``, ``reference.json``) is a file, not a module.
A file name must be a file: a module that became a package is named as a package
(``read.tfdbg``, ``read/tfdbg/``), not by the file it was.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("tb_opmode", "bench", "tests", "demo")
PAGES = ("README.md", "CONTRIBUTING.md", "docs", "tests/matrix/README.md")
STAGES = ("read", "analyze", "present", "plugin", "capture")

# Files named in our docs that are not ours, each with why it is named.
EXTERNAL_FILES = {
    # TensorFlow's C++ sources, cited for what the log's lines and the kernel rules come from
    "execute.cc": "TF eager dispatch: the log's 'Executing op' lines",
    "executor.cc": "TF's graph executor: the log's 'Process node' lines and cost estimates",
    "op_kernel.cc": "TF: the log's 'Instantiating kernel' lines",
    "process_function_library_runtime.cc": "TF: instantiating a function, its log lines",
    "mkl_layout_pass.cc": "TF's oneDNN graph rewrite: which op gets a _Mkl kernel",
    "mkl_eager_op_rewrite.cc": "TF's oneDNN eager rewrite list",
    "remapper.cc": "grappler's remapper: the fusions",
    "attr_value_util.cc": "TF: how the log shortens long string attributes (head...tail)",
    "captured_function.cc": "tf.data: runs a dataset's functions at negative step ids",
    "arithmetic_optimizer.cc": "grappler: Cast reordering, identity Transposes",
    "constant_folding.cc": "grappler: folded nodes, Tile by ones, broadcast gradients",
    "common_subgraph_elimination.cc": "grappler: identical ops merged",
    "dependency_optimizer.cc": "grappler: Identity nodes removed",
    "model_pruner.cc": "grappler: StopGradient removed",
    "op_types.cc": "grappler: IsExpensive and the op-type predicates",
    "cpu_feature_guard.cc": "TF's start-up line naming the CPU's instruction sets",
    "port.cc": "TF's 'oneDNN custom operations are on' banner",
    "xla_ops.cc": "TF's XLA launch lines",
    "traceme.h": "the profiler's TraceMe levels",
    "xplane_to_tf_functions.cc": "XProf: tf.function call stats in a profile",
    "file.cc": "the placeholder in rules.py's `file.cc@VERSION:LINE` citations",
    "xexecutor.cc": "textlog's example of another file its executor.cc pattern must not take",
    # TensorFlow's and protobuf's schemas and Python sources
    "debug_event.proto": "TF's tfdbg2 record schema (read/schema.py carries our copy)",
    "xplane.proto": "the profiler's XSpace schema",
    "types.proto": "TF's DataType enum",
    "dumping_callback.py": "TF's tfdbg2 dump writer",
    "debug_events_reader.py": "TF's DebugDataReader",
    "polymorphic_function.py": "TF's tf.function: its profile events",
    "tracing_compilation.py": "TF's tracing: the Python log line of a new trace",
    "summary_v2.py": "TF's summary ops, the eager call site of the demo's histograms",
    "script_ops.py": "TF's tf.py_function: its EagerFunc runs the function's ops eagerly in a graph",
    "dense.py": "Keras' Dense layer, a call site in examples",
    # Python's and the user's
    "sitecustomize.py": "Python's start-up hook, which a test puts on a worker's path",
    "file.py": "the placeholder of a redacted path in the report (`<path>/file.py`)",
    "train.py": "the user's training script in examples",
    "axe.min.js": "axe-core's browser build, installed under .tools/ by make axe",
}
# First parts of dotted literals (``tf.function``) that name other libraries' modules.
EXTERNAL_PREFIXES = {
    "tf", "tensorflow", "keras", "np", "numpy", "os", "sys", "re", "json", "time", "math",
    "pickle", "struct", "signal", "subprocess", "threading", "multiprocessing", "socket",
    "shutil", "tempfile", "pathlib", "functools", "itertools", "collections", "typing",
    "dataclasses", "urllib", "http", "html", "csv", "gc", "mmap", "zlib", "hashlib",
    "resource", "statistics", "argparse", "contextlib", "pytest", "hypothesis", "dask",
    "distributed", "fsspec", "s3fs", "botocore", "werkzeug", "tensorboard", "google",
    "protobuf", "upb", "playwright", "importlib", "tokenize", "ast", "io", "logging",
    "concurrent", "queue", "selectors", "errno", "stat", "select", "fcntl", "uuid", "base64",
    "datetime", "random", "string", "textwrap", "unicodedata", "heapq", "bisect", "array",
    "weakref", "copy", "enum", "abc", "types", "inspect", "traceback", "warnings", "atexit",
    "builtins", "codecs", "binascii", "operator", "platform", "getpass", "locale", "glob",
    "fnmatch", "tarfile", "zipfile", "lzma", "gzip", "site", "venv", "sysconfig", "ctypes",
    "crc32c", "google_crc32c",
    "vm",  # the host name of the machine that wrote the committed runs (``vm.corp``)
    "self", "cls",  # a method's own object, named in its class's docstring
    "context",  # TensorBoard's plugin context (``context.logdir``)
}

_FILE = re.compile(r"(?<![\w/.<>$~-])((?:[A-Za-z_][\w-]*/)*[A-Za-z_][\w-]*\.(?:py|js|cc|h|proto))(?![\w/])")
_PACKAGE_PATH = re.compile(r"(?<![\w.])tb_opmode((?:\.[A-Za-z_]\w*)+)")
_STAGE_PATH = re.compile(rf"(?<![\w./])({'|'.join(STAGES)})((?:\.[A-Za-z_]\w*)+)")
_LITERAL = re.compile(r"``([a-z_][a-z0-9_]*)\.([A-Za-z_][\w.]*)(?:\(\))?``")
# A literal ending so is a file name (``index.js``, ``tf_stderr.log``), not a module's name.
_FILE_SUFFIXES = {"py", "js", "cc", "h", "proto", "pb", "txt", "log", "json", "md", "html",
                  "css", "csv", "gz", "xz", "tar", "out", "err", "toml", "ini", "cfg", "yaml"}

# Stale names in modules other branches own and fix as they land (each branch fixes the
# names in its own files): listed here so that this test checks every other name today.
# An entry that is no longer stale fails the test: remove it.
KNOWN_STALE = {
}


def _python_files() -> list[Path]:
    return sorted(p for top in SCANNED for p in (ROOT / top).rglob("*.py")
                  if "__pycache__" not in p.parts and "cache" not in p.relative_to(ROOT).parts[:2])


def _pages() -> list[Path]:
    found: list[Path] = []
    for name in PAGES:
        path = ROOT / name
        found += sorted(path.rglob("*.md")) if path.is_dir() else [path] if path.exists() else []
    return found


def _repo_files() -> set[str]:
    """Every file and directory of the checkout, as paths relative to its root."""
    skip = {".git", "node_modules", "__pycache__", "cache", "artifacts"}
    out: set[str] = set()
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if rel.parts[0].startswith(".") or skip.intersection(rel.parts):
            continue
        out.add(rel.as_posix())
    return out


FILES = _repo_files()
BASENAMES = {p.rsplit("/", 1)[-1] for p in FILES}
MODULE_NAMES = {b[:-3] for b in BASENAMES if b.endswith(".py")} | {
    p.rsplit("/", 1)[-1] for p in FILES if p + "/__init__.py" in FILES}


def _module_path(dotted: str) -> str | None:
    """``tb_opmode.read.tfdbg`` -> its file or package directory, or None."""
    base = dotted.replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if candidate in FILES:
            return candidate
    return None


def _defines(module_file: str, name: str) -> bool:
    """Whether a module's source (a package: its ``__init__``) binds or re-exports ``name``."""
    return re.search(rf"\b{re.escape(name)}\b", (ROOT / module_file).read_text()) is not None


def _dotted_exists(parts: list[str]) -> bool:
    """A dotted path of the package: a module, or a module and one name it defines."""
    for cut in range(len(parts), 0, -1):
        found = _module_path(".".join(parts[:cut]))
        if found is not None:
            rest = parts[cut:]
            return not rest or (len(rest) == 1 and _defines(found, rest[0]))
    return False


def _file_exists(ref: str) -> bool:
    if ref.rsplit("/", 1)[-1] in EXTERNAL_FILES:  # TF's own, with or without its path
        return True
    if "/" not in ref:  # a bare name: a file of that name anywhere in the checkout
        return ref in BASENAMES
    # a path: from the root, from the package, from the frontend, or the end of one
    return any(base + ref in FILES for base in ("", "tb_opmode/", "frontend/")) or any(
        p.endswith("/" + ref) for p in FILES)


class _Scopes(ast.NodeVisitor):
    """The names a file binds or uses (variables, parameters, imports, functions; not
    attributes: ``"".join`` makes no ``join``), at module level and in each function."""

    def __init__(self) -> None:
        self.module: set[str] = set()
        self.functions: list[tuple[int, int, set[str]]] = []
        self._stack = [self.module]

    def names_at(self, line: int) -> set[str]:
        """What a docstring or comment on ``line`` may name: the module's names and those
        of every function around it."""
        return self.module.union(*(names for first, last, names in self.functions
                                   if first <= line <= last))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._stack[-1].add(node.name)
        names: set[str] = set()
        self.functions.append((node.lineno, node.end_lineno or node.lineno, names))
        self._stack.append(names)
        self.generic_visit(node)
        self._stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._stack[-1].add(node.name)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self._stack[-1].add(node.id)

    def visit_arg(self, node: ast.arg) -> None:
        self._stack[-1].add(node.arg)

    def visit_alias(self, node: ast.alias) -> None:
        self._stack[-1].add((node.asname or node.name).split(".")[0])


def _prose(source: str) -> tuple[list[tuple[int, str]], _Scopes]:
    """(line, text) of a Python file's docstrings (and other bare strings, line by line) and
    comments, and the names its scopes bind."""
    tree = ast.parse(source)
    prose = [(node.lineno + i, text) for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)
             for i, text in enumerate(node.value.value.splitlines())]
    prose += [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
              if tok.type == tokenize.COMMENT]
    scopes = _Scopes()
    scopes.visit(tree)
    return prose, scopes


def _missing_files(text: str, bound: set[str]) -> Iterator[str]:
    yield from (ref for ref in _FILE.findall(text) if not _file_exists(ref))


def _missing_package_paths(text: str, bound: set[str]) -> Iterator[str]:
    for rest in _PACKAGE_PATH.findall(text):
        if not _dotted_exists(["tb_opmode", *rest.strip(".").split(".")]):
            yield "tb_opmode" + rest.rstrip(".")


def _missing_stage_paths(text: str, bound: set[str]) -> Iterator[str]:
    for stage, rest in _STAGE_PATH.findall(text):
        if stage not in bound and not _dotted_exists(["tb_opmode", stage, *rest.strip(".").split(".")]):
            yield stage + rest


def _missing_literals(text: str, bound: set[str]) -> Iterator[str]:
    for first, rest in _LITERAL.findall(text):
        known = first in MODULE_NAMES or first in bound or first in EXTERNAL_PREFIXES
        if not known and rest.rsplit(".", 1)[-1] not in _FILE_SUFFIXES:
            yield f"``{first}.``"


# Each kind of reference, in the order the module docstring lists them.
_CHECKS = (_missing_files, _missing_package_paths, _missing_stage_paths, _missing_literals)


def _missing_in(text: str, bound: set[str]) -> Iterator[str]:
    """The names in ``text`` that do not exist; ``bound``: the names its place in a file
    binds or uses (a stage's name among them is a variable there, not the stage)."""
    for check in _CHECKS:
        yield from check(text, bound)


def _missing_in_python(path: Path) -> list[tuple[str, int, str]]:
    """The whole source is searched first (cheap): only a file where something may be
    missing is parsed, and then its docstrings and comments alone are searched."""
    source = path.read_text()
    if not any(_missing_in(source, set())):
        return []
    prose, scopes = _prose(source)
    where = path.relative_to(ROOT).as_posix()
    return [(where, n, ref) for n, text in prose for ref in _missing_in(text, scopes.names_at(n))]


def _missing() -> list[tuple[str, int, str]]:
    """(file, line, name) of every reference to what does not exist."""
    found: list[tuple[str, int, str]] = []
    for path in _python_files():
        found += _missing_in_python(path)
    for page in _pages():
        for line, text in enumerate(page.read_text().splitlines(), 1):
            found += [(page.relative_to(ROOT).as_posix(), line, ref) for ref in _missing_in(text, set())]
    return sorted(set(found))


def test_docstrings_comments_and_docs_name_modules_that_exist() -> None:
    missing = _missing()
    new = [f"{path}:{line}: {ref}" for path, line, ref in missing if (path, ref) not in KNOWN_STALE]
    fixed = sorted(set(KNOWN_STALE) - {(path, ref) for path, _, ref in missing})
    assert not new, "names of modules or files that do not exist:\n" + "\n".join(new)
    assert not fixed, "no longer stale, remove from KNOWN_STALE: " + ", ".join(map(str, fixed))


@pytest.mark.parametrize("text, stale", [
    ("strings for the routes in ``plugin.py``", "plugin.py"),
    ("a run from ``join.build_run``", "``join.``"),
    ("see read/nothing_here.py", "read/nothing_here.py"),
    ("``tb_opmode.read.no_such_module``", "tb_opmode.read.no_such_module"),
    ("as analyze.no_such_stage_module says", "analyze.no_such_stage_module"),
    ("``tb_opmode.read.tfrecord.NoSuchName``", "tb_opmode.read.tfrecord.NoSuchName"),
])
def test_a_stale_name_is_found(text: str, stale: str) -> None:
    assert stale in list(_missing_in(text, set()))


@pytest.mark.parametrize("text", [
    "read by ``tfrecord.py`` and read/tfrecord.py, from tests/matrix/truth.py",
    "``tb_opmode.read.tfrecord.RecordReader`` and analyze.kernels",
    "TF's mkl_layout_pass.cc renames it; frontend's table.js shows it",
    "a path such as /home/u/model.py or <path>/file.py is an example",
    "``tf.function`` and ``np.uint8`` are not ours",
])
def test_a_name_that_exists_passes(text: str) -> None:
    assert list(_missing_in(text, set())) == []
