"""numba's on-disk cache for tracer's own code, best-effort and inside TRACER_CACHE_DIR.

Two kinds of files are compiled with `cache=True`: the generated modules (written
under `<cache_dir>/cpu/`) and the njit libraries they import (`numba/lib/`,
`cpu/lib/`, part of the installed package). numba would keep the machine code of
the libraries in the package's `__pycache__` (or, when that is read-only, in
`~/.cache/numba`), and any unreadable or corrupt cache file fails every call with a
raw `OSError` or `UnpicklingError`. `TracerLocator`, put first in numba's list,
claims exactly these files:

- a generated module's machine code lives next to it (`cpu/__pycache__`), stamped
  with its content-addressed name (no file needs to exist: a module that could not
  be written is compiled from memory);
- a library's lives in `<cache_dir>/lib/<module>/`, stamped with the hash of its
  source and of the libraries it imports, directly or not (numba links their machine
  code into its own: `library_sources.closure_digest`).

For these files only, `Cache.load_overload` and `save_overload` are wrapped: a
cache entry that cannot be read or rebuilt is removed and counts as a miss; one
that cannot be written is skipped, with one `CacheWarning` per process (the code
stays compiled in memory). numba's handling of every other function is unchanged.
"""

from __future__ import annotations

import glob
import os
import shutil
import threading
import warnings
from typing import Any

from numba.core import caching

from ...config import config
from . import library_sources

_BACKEND_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = (os.path.join(_BACKEND_DIR, "numba", "lib"),
                 os.path.join(_BACKEND_DIR, "cpu", "lib"))
_GENERATED: set[str] = set()  # paths of generated modules (on disk or not)
_WARNED = threading.Event()


class CacheWarning(UserWarning):
    """The compile cache directory cannot be written: compiled code stays in memory."""


def warn_unwritable(what: str, error: BaseException) -> None:
    """One warning per process, however many writes fail."""
    if not _WARNED.is_set():
        _WARNED.set()
        warnings.warn(f"tracer: cannot write the compile cache ({what}: {error}); "
                      f"compiled code is kept in memory for this process. Set "
                      f"TRACER_CACHE_DIR to a writable directory to keep it across runs",
                      CacheWarning, stacklevel=3)


def register_generated(path: str) -> None:
    """Mark `path` (a generated module, content-addressed) as tracer's before its
    functions are decorated."""
    _GENERATED.add(os.path.abspath(path))


def remove_entry(path: str) -> None:
    """Remove whatever is at `path` (file, link, directory); a failure is ignored."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
    except OSError:
        pass


class TracerLocator(caching._CacheLocator):
    """Where numba keeps the machine code of tracer's generated modules and libraries."""

    def __init__(self, py_func: Any, py_file: str, cache_path: str, stamp: str):
        self._lineno = py_func.__code__.co_firstlineno
        self._py_file = py_file
        self._cache_path = cache_path
        self._stamp = stamp

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> "TracerLocator | None":
        path = os.path.abspath(py_file)
        if path in _GENERATED:
            return cls(py_func, path, os.path.join(os.path.dirname(path), "__pycache__"),
                       os.path.basename(path))
        module = py_func.__module__
        if os.path.dirname(path) in _LIBRARY_DIRS and module in library_sources.LIBRARIES:
            cache = os.path.join(os.path.expanduser(config.cache_dir), "lib", module)
            return cls(py_func, path, cache, library_sources.closure_digest([module]))
        return None

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return self._stamp

    def get_disambiguator(self) -> str:
        return str(self._lineno)  # (two lambdas of one function share a name)


def _ours(cache: Any) -> bool:
    impl = getattr(cache, "_impl", None)
    return impl is not None and isinstance(impl.locator, TracerLocator)


def _entry_files(cache: Any) -> list[str]:
    """The index and data files of one function's cache."""
    index = cache._cache_file._index_path
    return [index, *glob.glob(index[:-len(".nbi")] + ".*.nbc")]


def _clear_the_way(cache: Any) -> None:
    """Remove this function's cache files, and a file where its folder should be."""
    for path in _entry_files(cache):
        remove_entry(path)
    if not os.path.isdir(cache._cache_path):
        remove_entry(cache._cache_path)


# (numba's own methods, also when this module is imported again)
_ORIGINAL_LOAD = getattr(caching.Cache, "_tracer_original_load", caching.Cache.load_overload)
_ORIGINAL_SAVE = getattr(caching.Cache, "_tracer_original_save", caching.Cache.save_overload)


def _load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    if not _ours(self):
        return _ORIGINAL_LOAD(self, sig, target_context)
    try:
        return _ORIGINAL_LOAD(self, sig, target_context)
    except Exception:  # unreadable, not a file, corrupt, not rebuildable: a miss
        _clear_the_way(self)
        return None


def _save_overload(self: Any, sig: Any, data: Any) -> None:
    if not _ours(self):
        return _ORIGINAL_SAVE(self, sig, data)
    try:
        return _ORIGINAL_SAVE(self, sig, data)
    except Exception:  # something in the way (a directory, a link loop): remove, retry
        _clear_the_way(self)
    try:
        return _ORIGINAL_SAVE(self, sig, data)
    except Exception as e:  # unwritable (read-only, full, under a file): memory only
        warn_unwritable(self._cache_path, e)
        return None


def install() -> None:
    """Put TracerLocator first and wrap the cache's load/save (idempotent)."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # (older numba)
    classes = impl._locator_classes
    classes[:] = [c for c in classes if c.__name__ != "TracerLocator"]
    classes.insert(0, TracerLocator)
    caching.Cache._tracer_original_load = _ORIGINAL_LOAD
    caching.Cache._tracer_original_save = _ORIGINAL_SAVE
    caching.Cache.load_overload = _load_overload
    caching.Cache.save_overload = _save_overload


install()
