"""The package's layout, checked on its source: imports point one way, by stage, with
no cycle and no import inside a function; every module's ``__all__`` is pinned.

In: the AST of every ``tb_opmode/**/*.py`` (no module is run for the graph checks),
then each module imported for its ``__all__``. Out: assertions. Needs no TensorFlow.

Stages, earliest first (a module may import its own stage and earlier ones only):
0 ``errors``, ``vocab`` and the package's ``__init__`` (``__version__``); 1 ``read/``;
2 ``model``; 3 ``analyze/``; 4 ``present/``; 5 ``plugin/``, ``cli``, ``loadworker`` (the
plugin's load worker process, outside ``plugin/`` so that it imports no TensorBoard) and
``capture/`` (``tb-opmode record``; its ``inprocess`` runs inside the user's job and
imports nothing else of ours, nor anything outside the standard library).
An import inside a function is allowed only for a module of an optional extra
(``LAZY_ALLOWED``, each with why), and for the package's face (``FACE_LAZY``).
"""
from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "tb_opmode"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

STAGES = {"errors": 0, "vocab": 0, "read": 1, "model": 2, "analyze": 3, "present": 4,
          "plugin": 5, "cli": 5, "loadworker": 5, "capture": 5}

# Imports inside a function that are allowed, each with why; any other is a failure.
# Only optional extras: their module imports the extra at its top, and is imported only
# where the extra is chosen, so that without the extra installed everything else runs
# (and the CLI does not pay for importing it).
LAZY_ALLOWED: dict[tuple[str, str], str] = {
    # tb_opmode[dask]: only ``tb-opmode summary --dask ADDRESS`` needs dask.distributed.
    ("tb_opmode.cli", "tb_opmode.read.daskread"): "optional extra [dask]: only for --dask",
    # tb_opmode[s3]: fsspec only for a URL logdir, the first time one is read.
    ("tb_opmode.read.fs", "tb_opmode.read.objstore"): "optional extra [s3]: only for a URL",
}


# The package's face loads ``tb_opmode.record`` when first asked for (module __getattr__):
# the one import from stage 0 of a later stage, inside a function, so that importing any
# module of the package does not load the recording (nor the readers it then loads).
FACE_LAZY: dict[tuple[str, str], str] = {
    ("tb_opmode", "tb_opmode.capture.api"): "tb_opmode.record, loaded when first asked for",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _stage(name: str) -> int:
    parts = name.split(".")
    return 0 if len(parts) == 1 else STAGES[parts[1]]


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement imports (of the package, or third-party tops)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        base = node.module or ""
    else:
        package = module if _is_package(module) else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{node.module}" if node.module else package
    if not base.startswith(PACKAGE):
        return [base]
    # ``from . import tab``: the submodule; ``from .x import name``: the module x.
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
    return subs or [base]


def _imports(module: str) -> tuple[list[str], list[tuple[str, int]]]:
    """(modules imported at module level, (module, line) imported inside a def)."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    top: list[str] = []
    lazy: list[tuple[str, int]] = []

    def visit(node: ast.AST, in_def: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, child):
                    if in_def:
                        lazy.append((target, child.lineno))
                    else:
                        top.append(target)
            visit(child, in_def or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda)))

    visit(tree, False)
    return top, lazy


GRAPH = {m: _imports(m) for m in MODULES}


def _ours(name: str) -> str | None:
    """The package module ``name`` is, or the package module it is an attribute of."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def test_every_module_is_in_a_stage() -> None:
    for module in MODULES:
        assert _stage(module) in range(6), module


def test_no_import_from_a_later_stage() -> None:
    wrong = []
    for module, (top, lazy) in GRAPH.items():
        for target in top + [t for t, _ in lazy if (module, t) not in FACE_LAZY]:
            ours = _ours(target)
            if ours is not None and _stage(ours) > _stage(module):
                wrong.append(f"{module} (stage {_stage(module)}) imports {ours} "
                             f"(stage {_stage(ours)})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle() -> None:
    edges = {m: sorted({o for t in top if (o := _ours(t)) is not None and o != m})
             for m, (top, _lazy) in GRAPH.items()}
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        if module in path:
            cycle = path[path.index(module):] + [module]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for target in edges[module]:
            walk(target, path + [module])
        done.add(module)

    for module in edges:
        walk(module, [])


def test_no_import_inside_a_function_but_the_listed_ones() -> None:
    found = {(m, _ours(t) or t.split(".")[0]): line
             for m, (_top, lazy) in GRAPH.items() for t, line in lazy}
    unlisted = sorted(f"{MODULES[m]}:{line}: imports {t} inside a function"
                      for (m, t), line in found.items() if (m, t) not in LAZY_ALLOWED | FACE_LAZY)
    assert not unlisted, "\n".join(unlisted)
    stale = sorted(str(key) for key in LAZY_ALLOWED | FACE_LAZY if key not in found)
    assert not stale, f"listed but no longer imported lazily: {stale}"


# The third-party packages of the optional extras (setup.py's extras_require), by extra.
OPTIONAL = {"distributed": "dask", "fsspec": "s3"}
_EXTRA_MODULES = {target for _module, target in LAZY_ALLOWED}


def _import(module: str) -> object:
    """The module, imported; a module of an optional extra that is not installed in this
    venv (the no-TF tier has no dask) skips, naming what is missing."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if module not in _EXTRA_MODULES or (err.name or "").startswith(PACKAGE):
            raise
        pytest.skip(f"{module} needs the optional {err.name}, not installed here")


def test_the_lazy_imports_are_modules_of_an_extra() -> None:
    """Each module imported inside a function imports, at its top, a package that only an
    optional extra installs: else there is no reason to import it late."""
    for target in _EXTRA_MODULES:
        third = {t.split(".")[0] for t in GRAPH[target][0] if not t.startswith(PACKAGE)}
        assert third & OPTIONAL.keys(), f"{target} imports no optional extra at its top: {third}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_all_is_pinned(module: str) -> None:
    """Each module says what it exports, and each name it lists exists and is listed once."""
    names = _import(module).__dict__.get("__all__")
    assert isinstance(names, list), f"{module} has no __all__ list"
    assert all(isinstance(n, str) for n in names), module
    assert len(set(names)) == len(names), f"{module}: __all__ lists a name twice"
    mod = _import(module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not _is_package(m)))
def test_public_definitions_are_in_all(module: str) -> None:
    """A public function or class defined in a module is in its ``__all__`` (or private)."""
    tree = ast.parse(MODULES[module].read_text())
    defined = [n.name for n in tree.body
               if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]
    names = _import(module).__dict__.get("__all__", [])
    assert sorted(set(defined) - set(names)) == [], module


def test_the_load_worker_imports_no_tensorboard() -> None:
    """A load worker (``python -m tb_opmode.loadworker``, one per core while runs load)
    imports neither TensorBoard nor werkzeug: only the plugin's routes need them, and
    importing them cost each worker ~90 ms of the cores the runs load on."""
    # What ``python -m tb_opmode.loadworker`` imports before its main loop starts.
    code = ("import sys, tb_opmode.loadworker\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'tensorboard', 'werkzeug'}))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, stdin=subprocess.DEVNULL)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


# Modules that run inside the user's job: the standard library only, nothing of ours (the
# job's Python may not even have tb_opmode installed; the sitecustomize loads inprocess by
# its path).
IN_THE_JOB = ("tb_opmode.capture.inprocess", "tb_opmode.capture.boot.sitecustomize")


@pytest.mark.parametrize("module", IN_THE_JOB)
def test_what_runs_in_the_job_imports_only_the_standard_library(module: str) -> None:
    top, lazy = GRAPH[module]
    imported = {t.split(".")[0] for t in top + [t for t, _ in lazy]}
    outside = sorted(imported - set(sys.stdlib_module_names) - {"__future__"})
    assert not outside, f"{module} imports {outside}: it runs inside the user's job"


def test_importing_the_package_does_not_load_the_recording() -> None:
    """``import tb_opmode.read...`` (the plugin, a load worker) loads no ``capture`` module;
    ``tb_opmode.record`` loads it when asked for."""
    code = ("import sys, tb_opmode.read.discover\n"
            "print(sorted(m for m in sys.modules if m.startswith('tb_opmode.capture')))\n"
            "import tb_opmode\n"
            "print(tb_opmode.record.__module__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, stdin=subprocess.DEVNULL)
    assert out.stdout.split("\n")[:2] == ["[]", "tb_opmode.capture.api"], out.stdout + out.stderr
