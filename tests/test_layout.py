"""Imports run one way (docs/ARCHITECTURE.md): a room never imports a later room."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tracer"

LEVEL = {
    "errors": 0, "dtypes": 0, "config": 0, "tree_util": 0, "_version": 0, "tree": 0,
    "profiler": 0, "reprs": 0, "core": 1, "hlo_draw": 1, "hlo": 1, "dump": 1, "tracing": 2,
    "interpret": 3, "ops": 4, "numpy": 5, "passes": 5, "callbacks": 5, "debug": 5,
    "transforms": 5, "random": 6, "backend": 6, "ad_checkpoint": 6,
    "cache": 7, "stages": 7, "scipy": 7, "nn": 7, "test_util": 7, "progress": 7,
    "compile_worker": 7, "tiers": 7, "dispatch": 7, "guards": 7,
    "api": 8, "example_libraries": 8, "distributed": 8, "export": 8, "aot": 8,
    "__init__": 9, "__main__": 9,
}


def _room(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imported_rooms(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    depth = len(path.relative_to(ROOT).parts) - 1
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: climb to the package root, then the first name
                up = node.level - 1
                if up < depth:
                    continue  # inside the same room
                names = (node.module or "").split(".")
                target = names[0] if names[0] else (node.names[0].name)
                yield target, node.lineno
            elif node.module and node.module.startswith("tracer."):
                yield node.module.split(".")[1], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tracer."):
                    yield alias.name.split(".")[1], node.lineno


FILES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_imports_point_to_earlier_rooms(path):
    room = _room(path)
    for target, line in _imported_rooms(path):
        assert target in LEVEL, f"{path}:{line}: unknown room {target!r} (add it to LEVEL)"
        assert LEVEL[target] <= LEVEL[room], (
            f"{path.relative_to(ROOT)}:{line} ({room}) imports the later room {target}")


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_files_stay_small(path):
    assert len(path.read_text().splitlines()) <= 800, f"{path} is over 800 lines: split it"


# ------------------------------------------------------------------ inside tracer/backend

BACKEND = ROOT / "backend"


def _backend_module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(BACKEND).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _backend_imports(path: pathlib.Path):
    """(module below tracer.backend, line) for every import of a backend module, including
    names imported from a package (`from . import control` imports `emit.control`)."""
    module = _backend_module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package.split(".") if package else []
        if node.level - 1 > len(base):
            continue  # above the backend (tracer.core, ...)
        target = [*base[:len(base) - (node.level - 1)], *(node.module or "").split(".")]
        target = ".".join(p for p in target if p)
        yield target, node.lineno
        for alias in node.names:
            yield f"{target}.{alias.name}".lstrip("."), node.lineno


BACKEND_FILES = sorted(BACKEND.rglob("*.py"))
BACKEND_MODULES = {_backend_module(p) for p in BACKEND_FILES}


@pytest.mark.parametrize("path", BACKEND_FILES,
                         ids=[str(p.relative_to(BACKEND)) for p in BACKEND_FILES])
def test_backend_sub_rooms(path):
    """numba/ is what both numba backends share: it imports neither; a lib/ (code that
    generated modules import at run time) never imports the emitters that write code."""
    module = _backend_module(path)
    for target, line in _backend_imports(path):
        if module.startswith("numba"):
            assert not target.startswith(("cpu", "cuda")), f"{module}:{line} imports {target}"
        if ".lib" in f".{module}":
            assert ".emit" not in f".{target}", f"{module}:{line} imports {target}"


def test_no_import_circle_in_backend():
    graph = {_backend_module(p): {t for t, _ in _backend_imports(p)} & BACKEND_MODULES
             for p in BACKEND_FILES}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        assert module not in path, "import circle: " + " -> ".join([*path, module])
        if module in done:
            return
        for target in graph.get(module, ()):
            if target != module:
                visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


# ------------------------------------------------------------------ tests named by subject

TESTS = pathlib.Path(__file__).resolve().parent
# (tests/jax_examples/ holds JAX's example programs as JAX wrote them: not our tests)
TEST_FILES = sorted(p for p in TESTS.rglob("*.py") if "jax_examples" not in p.parts)
# When or how a test was written (a session or step: `s5a_`, `_s4`, `part3`; the "gaps"
# of an audit, the "regressions" of a bug hunt) says nothing about what it checks.
NOT_A_SUBJECT = re.compile(r"_s\d|s\d[a-z]?_|_gaps?\b|gaps?_|session|regression|part\d|step\d")
# in function names `_s32_` may be a dtype: there only a step with its letter (`_s5a_`)
NOT_A_TEST_SUBJECT = re.compile(r"(^|_)s\d[a-z](_|$)|_gaps?\b|session|regression")


def test_test_files_and_tests_are_named_by_subject():
    bad = [p.name for p in TEST_FILES if NOT_A_SUBJECT.search(p.stem)]
    for path in TEST_FILES:
        bad += [f"{path.name}:{node.lineno} {node.name}"
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
                and NOT_A_TEST_SUBJECT.search(node.name)]
    assert not bad, f"name these after what they test: {bad}"


def test_test_files_stay_small():
    long = [str(p.relative_to(TESTS)) for p in TEST_FILES if len(p.read_text().splitlines()) > 800]
    assert not long, f"over 800 lines, split by subject: {long}"


def test_backend_tests_mirror_the_backend_packages():
    """tests/backend/<package>/ for each package of tracer/backend (numba, cpu, cuda),
    and no test file directly in tests/backend/."""
    packages = {p.parent.name for p in BACKEND.glob("*/__init__.py")}
    assert packages <= {p.name for p in (TESTS / "backend").iterdir() if p.is_dir()}
    assert not list((TESTS / "backend").glob("test_*.py"))
