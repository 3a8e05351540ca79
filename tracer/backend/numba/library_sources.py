"""The sources tracer's helper libraries were compiled from, and what they import.

The njit libraries (`numba/lib/`, `cpu/lib/`) are imported through `_RecordingLoader`,
which compiles each from its source file (never a .pyc) and records the SHA-256 of
exactly the bytes it compiled and the helper libraries the source imports
(`from .x import ...`). numba links a callee's machine code into its caller's, so a
cache key of compiled code covers the libraries it reaches, directly or through
another library: `closure_digest`. Two caches use it: a generated module's key
(`cpu.cache.module_key`) and a library function's own numba cache stamp
(`numba_cache.TracerLocator`), so editing `conv_core.py` invalidates the cached
`conv.py` entry points that call it.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
import types
from dataclasses import dataclass
from typing import Any, Iterable

_BACKEND_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_BACKEND = __package__.rsplit(".", 1)[0]  # tracer.backend
_RELATIVE = re.compile(r"^from (\.+[\w.]*) import ([\w, ]*)", re.MULTILINE)


def helper_library_files() -> dict[str, str]:
    """The njit libraries generated modules import (`numba/lib/`, `cpu/lib/`): module name
    -> file."""
    files = {}
    for folder in ("numba/lib", "cpu/lib"):
        for path in sorted(glob.glob(os.path.join(_BACKEND_DIR, folder, "*.py"))):
            name = os.path.basename(path)[:-3]
            if name != "__init__":
                files[f"{_BACKEND}.{folder.replace('/', '.')}.{name}"] = path
    return files


LIBRARIES = helper_library_files()


@dataclass(frozen=True)
class LibrarySource:
    digest: str                # sha256 of the source the module was compiled from
    imports: tuple[str, ...]   # the helper libraries it imports (module names)


SOURCES: dict[str, LibrarySource] = {}


def record(name: str, source: bytes) -> None:
    """Note that library `name` is compiled from `source`."""
    package, imports = name.rsplit(".", 1)[0], set()
    for module, names in _RELATIVE.findall(source.decode()):
        base = importlib.util.resolve_name(module, package)
        imports |= {base, *(f"{base}.{n.strip()}" for n in names.split(",") if n.strip())}
    SOURCES[name] = LibrarySource(hashlib.sha256(source).hexdigest(),
                                  tuple(sorted(imports & set(LIBRARIES))))


class _RecordingLoader(importlib.machinery.SourceFileLoader):
    """Compiles a helper library from its source file (never a .pyc), recording the
    hash of exactly the bytes it compiled."""

    def get_code(self, fullname: str) -> types.CodeType:
        source = self.get_data(self.path)
        record(fullname, source)
        return self.source_to_code(source, self.path)


class _LibraryFinder(importlib.abc.MetaPathFinder):
    """Imports the helper libraries through `_RecordingLoader` (other modules: not ours)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        file = LIBRARIES.get(fullname)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(fullname, file,
                                                      loader=_RecordingLoader(fullname, file))


# (one finder, this module's, also when the module is reloaded)
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_LibraryFinder"]
sys.meta_path.insert(0, _LibraryFinder())


def library_source(name: str) -> LibrarySource:
    """What helper library `name` (`tracer.backend.numba.lib.scalar_math`) was compiled
    from in this process; importing it now if it is not loaded yet."""
    if name not in SOURCES:
        try:
            importlib.import_module(name)
        except ImportError:  # (a generated module that imports it fails the same way)
            pass
        if name not in SOURCES:  # loaded before this module installed its finder
            with open(LIBRARIES[name], "rb") as f:
                record(name, f.read())
    return SOURCES[name]


def closure_digest(names: Iterable[str]) -> str:
    """The hash of the helper libraries among `names` and those they import, directly
    or not."""
    todo = list(names)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in LIBRARIES and name not in seen:
            seen.add(name)
            todo += library_source(name).imports
    digest = hashlib.sha256()
    for name in sorted(seen):
        digest.update(f"{name} {library_source(name).digest}\n".encode())
    return digest.hexdigest()[:16]
