"""The cpu backend's generated module for one exported program, made standalone.

`generate_module` runs the cpu backend's own lowering and code generation (the
module `tr.jit` would compile) and rewrites its `from tracer.backend.<lib> import`
lines to a private package `<NAME>_lib` next to it: `vendor_libraries` copies
those helper libraries (they import only NumPy, numba and each other) there.
Programs that need tracer itself at run time (an op run by its NumPy reference,
a registered custom call, bfloat16 which needs ml_dtypes) are refused here.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass

import numpy as np

from .. import backend
from ..backend.cpu.backend import uses_blas
from ..backend.cpu.generate import Module, generate
from ..backend.numba.lower import lower
from ..core import Graph, subgraphs
from ..dtypes import hlo_name
from ..errors import UnsupportedOpError

_BACKEND_DIR = os.path.dirname(backend.__file__)
_IMPORT = re.compile(r"^from tracer\.backend\.([\w.]+) import", re.MULTILINE)
_RELATIVE = re.compile(r"^\s*from (\.+)([\w.]*) import (\w+)", re.MULTILINE)


@dataclass
class Kernel:
    """The generated module for one program: source, host parameters, libraries used."""

    module: Module
    source: str                  # imports rewritten to `<package>.<lib>`
    libraries: tuple[str, ...]   # backend helper modules to vendor, dependencies included


def generate_module(graph: Graph, name: str, package: str) -> Kernel:
    """The cpu backend's module for `graph`, importing its helpers from `package`."""
    _check_standalone(graph, name)
    # (named "kernel", so the user's function name stays free for NAME.py's `run` alias)
    lowered = dataclasses.replace(lower(graph), name="kernel")
    # (no MKL here, and a BLAS with threads of its own would fight numba's pool: a graph
    # with products keeps its loops serial, as the backend's `_threads_ok` rules)
    module = generate(lowered, parallel_ok=not uses_blas(lowered), parts=False, mkl_ok=False)
    if "import fallback" in module.source:
        raise UnsupportedOpError(f"aot {name}: an op of this program runs through tracer's "
                                 f"NumPy reference on the cpu backend, so it needs tracer at "
                                 f"run time")
    libraries = _closure(_IMPORT.findall(module.source))
    source = _IMPORT.sub(lambda m: f"from {package}.{m.group(1)} import", module.source)
    return Kernel(module, source, libraries)


def _check_standalone(graph: Graph, name: str) -> None:
    for eqn in graph.eqns:
        if eqn.op.name in ("custom_call", "custom_lin"):
            raise UnsupportedOpError(f"aot {name}: {eqn.op.name} calls a function registered "
                                     f"in this Python process ({eqn.source}); it cannot run "
                                     f"without tracer")
        for v in list(eqn.inputs) + list(eqn.outputs):
            if hlo_name(v.aval.dtype) == "bf16":
                raise UnsupportedOpError(f"aot {name}: bfloat16 values ({eqn.op.name} at "
                                         f"{eqn.source}) need ml_dtypes; use float16 or float32")
        for sub in subgraphs(eqn.params):
            _check_standalone(sub, name)


def _closure(names: list[str]) -> tuple[str, ...]:
    """`names` (dotted, under tracer.backend) and every module they import relatively."""
    seen: list[str] = []
    todo = list(names)
    while todo:
        lib = todo.pop()
        if lib in seen:
            continue
        seen.append(lib)
        with open(_path(lib), encoding="utf-8") as f:
            text = f.read()
        package = lib.split(".")[:-1]
        for dots, module, first in _RELATIVE.findall(text):
            base = package[:len(package) - (len(dots) - 1)]
            todo.append(".".join(base + (module.split(".") if module else [first])))
    return tuple(sorted(seen))


def _path(lib: str) -> str:
    return os.path.join(_BACKEND_DIR, *lib.split(".")) + ".py"


def vendor_libraries(libraries: tuple[str, ...], package_dir: str) -> None:
    """Copy the helper libraries into `package_dir`, which stands in for tracer.backend
    (same sub-packages, so their relative imports hold; each `__init__.py` is empty)."""
    for lib in libraries:
        parts = lib.split(".")
        for depth in range(len(parts)):
            folder = os.path.join(package_dir, *parts[:depth])
            os.makedirs(folder, exist_ok=True)
            init = os.path.join(folder, "__init__.py")
            if not os.path.exists(init):
                with open(init, "w", encoding="utf-8") as f:
                    f.write('"""Helpers of tracer\'s cpu backend, copied by tracer.aot."""\n')
        with open(_path(lib), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(package_dir, *parts) + ".py", "w", encoding="utf-8") as f:
            f.write(text)


def dims_array(module: Module) -> np.ndarray:
    return np.array(module.dims, np.int64)
