"""Imports run one way (docs/ARCHITECTURE.md): a room never imports a later room."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tracer"

LEVEL = {
    "errors": 0, "dtypes": 0, "config": 0, "tree_util": 0, "_version": 0,
    "core": 1, "hlo": 1, "tracing": 2, "interpret": 3, "ops": 4,
    "numpy": 5, "passes": 5, "transforms": 5, "random": 6, "backend": 6,
    "cache": 7, "stages": 7, "scipy": 7, "nn": 7, "test_util": 7, "tree": 0,
    "ad_checkpoint": 6,
    "api": 8, "__init__": 9, "__main__": 9,
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
