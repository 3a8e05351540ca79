"""Generated CUDA modules, content-addressed on disk and imported once per process.

A module is written to `<cache_dir>/cuda/tracer_<sha256>.py` (the hash covers
the source and the versions of tracer, numba, numba-cuda, NumPy, the helper
modules the source imports, directly or through each other, and whether the
simulator runs it) and imported from that file, so `@cuda.jit(cache=True)` keeps
each kernel's compiled code next to it and a new process loads it instead of
compiling. Writes are atomic (a temporary file,
then a rename), so processes compiling the same graph at once cannot corrupt it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import threading
import types
import uuid
from typing import Any, Callable

import numba
import numpy as np

from ..._version import __version__ as tracer_version
from ...config import config
from .lib.launch import SIMULATED

_LOCK = threading.Lock()
_MODULES: dict[str, types.ModuleType] = {}
_IMPORT = re.compile(r"^from tracer\.backend\.([\w.]+) import", re.MULTILINE)
_RELATIVE = re.compile(r"^from (\.+[\w.]*) import", re.MULTILINE)
_BACKEND = __package__.rsplit(".", 1)[0]  # tracer.backend
_BACKEND_DIR = os.path.dirname(os.path.dirname(__file__))
_ALWAYS = ("cuda.lib.arrays", "cuda.lib.launch")  # (imported as `rt` and `launch`)


@functools.cache
def _versions() -> str:
    try:
        numba_cuda = importlib.metadata.version("numba-cuda")
    except importlib.metadata.PackageNotFoundError:
        numba_cuda = "?"
    return (f"tracer {tracer_version}, numba {numba.__version__}, numba-cuda {numba_cuda}, "
            f"numpy {np.__version__}, simulator {SIMULATED}")


@functools.cache
def _helper_hash(module: str) -> str:
    """The hash of a helper module's source and of the backend modules it imports, directly
    or not (a kernel's machine code, cached next to the generated file, depends on the
    helpers it calls: `cuda.lib.mathlib`, `numba.lib.rng`, ...; names below `tracer.backend`)."""
    digest, seen, todo = hashlib.sha256(), set(), [module]
    while todo:
        name = todo.pop()
        path = os.path.join(_BACKEND_DIR, *name.split(".")) + ".py"
        if name in seen or not os.path.isfile(path):  # (a package, or outside the backend)
            continue
        seen.add(name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        digest.update(f"{name}\n{text}".encode())
        package = f"{_BACKEND}.{name}".rsplit(".", 1)[0]
        todo += [importlib.util.resolve_name(r, package).removeprefix(f"{_BACKEND}.")
                 for r in _RELATIVE.findall(text)]
    return digest.hexdigest()[:16]


def _header(source: str) -> str:
    """The versions and the hashes of the helper modules `source` imports."""
    helpers = sorted({*_ALWAYS, *_IMPORT.findall(source)})
    return f"{_versions()}, helpers {' '.join(f'{m}:{_helper_hash(m)}' for m in helpers)}"


def load(source: str, function: str) -> tuple[Callable[..., Any], bool]:
    """The host `function` of the module with `source`, and whether it was new to this
    process (its kernels compile, or load from disk, on their first launch)."""
    header = _header(source)
    key = hashlib.sha256((header + "\n" + source).encode()).hexdigest()
    with _LOCK:
        module = _MODULES.get(key)
        fresh = module is None
        if module is None:
            module = _MODULES[key] = _import(key, header, source)
    return getattr(module, function), fresh


def _import(key: str, header: str, source: str) -> types.ModuleType:
    directory = os.path.join(os.path.expanduser(config.cache_dir), "cuda")
    os.makedirs(directory, exist_ok=True)
    name = f"tracer_cuda_{key[:40]}"
    path = os.path.join(directory, name + ".py")
    text = f"# tracer generated module; key: {key}\n# {header}\n{source}"
    _write(path, text)
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(text, path, "exec"), module.__dict__)  # our generated code
    return module


def _write(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def clear_memory() -> None:
    """Forget imported modules (the files and the kernels' disk cache stay)."""
    with _LOCK:
        _MODULES.clear()
