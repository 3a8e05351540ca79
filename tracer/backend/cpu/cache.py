"""The compile cache: generated modules, content-addressed, in memory and on disk.

A generated module is written to `<cache_dir>/cpu/tracer_<sha256>.py`, where the
hash covers the source, the njit options in it, and the versions of tracer,
numba, llvmlite, NumPy and of the helper libraries the module imports (directly
or through another library). A library's version is the hash of the very source
this process compiled it from, recorded as it is imported (so a library edited
while a process runs never pairs a key with other code). It is then
imported from that file, so `numba.njit(cache=True)` keeps the machine code
next to it (`__pycache__/*.nbi|nbc`) and a new process loads it instead of
compiling. In one process, a module is imported once and its compiled
dispatcher reused: a new batch size costs a trace but no compile.

Writes are atomic (a temporary file, then `os.replace`), so processes compiling the
same kernel at once cannot corrupt it. The cache is best-effort: an entry whose
content does not match its name, or that is not a regular file, is replaced; numba
cache files that fail to load are removed and the function compiled again
(`numba.numba_cache`); a directory that cannot be written leaves the module in
memory, with one `CacheWarning`. None of it ever fails a call.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import importlib.metadata
import os
import re
import sys
import threading
import types
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

import llvmlite
import numba
import numpy as np

from ..._version import __version__ as tracer_version
from ...config import config
from ...errors import CacheError
from ..numba import library_sources, numba_cache
from . import split, threads

_LOCK = threading.RLock()
_BACKEND = __package__.rsplit(".", 1)[0]  # tracer.backend


@dataclass
class CacheStats:
    """Counters for tests and `cache_info()`: real numba compiles vs. reuses."""

    compiles: int = 0      # numba compiled machine code
    disk_hits: int = 0     # numba loaded machine code from the cache directory
    memory_hits: int = 0   # the module was already compiled in this process


STATS = CacheStats()


@dataclass
class Entry:
    module: types.ModuleType
    path: str
    compiled: set[tuple]
    text: str  # the module's source (the file may be missing: an unwritable cache)


_MODULES: dict[str, Entry] = {}


@functools.cache
def _package_versions() -> str:
    return (f"tracer {tracer_version}, numba {numba.__version__}, llvmlite "
            f"{llvmlite.__version__}, numpy {np.__version__}, rocket-fft "
            f"{_version_of('rocket-fft')}")


def _versions(source: str) -> str:
    return f"{_package_versions()}, helpers {_helpers_digest(source)}"


def _version_of(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def module_key(source: str) -> str:
    return hashlib.sha256((_versions(source) + "\n" + source).encode()).hexdigest()


# ------------------------------------------------------------------ helper library sources

_IMPORT = re.compile(r"^from tracer\.backend\.([\w.]+) import", re.MULTILINE)


def _helpers_digest(source: str) -> str:
    """The hash of the helper libraries a generated module imports, directly or not."""
    return library_sources.closure_digest(f"{_BACKEND}.{m}" for m in _IMPORT.findall(source))


_ANY_IMPORT = re.compile(r"^from (tracer[\w.]*) import", re.MULTILINE)
# a library whose functions this process adds as it generates code (`publish`), and
# one that links against symbols only a job's processes load (MPI, the job's state)
_PROCESS_LOCAL = {f"{_BACKEND}.cpu.lib.custom_calls", f"{_BACKEND}.numba.lib.mpi"}


def portable(source: str) -> bool:
    """Whether another process can compile `source` to the same code: it imports only
    helper libraries, none of this process's registries (custom-call targets, the
    reference fallbacks' and host callbacks' table)."""
    return all(name in library_sources.LIBRARIES and name not in _PROCESS_LOCAL
               for name in _ANY_IMPORT.findall(source))


def in_memory(source: str, signature: Sequence[Any]) -> bool:
    """Whether this process already compiled module `source` for `signature`."""
    entry = _MODULES.get(module_key(source))
    return entry is not None and tuple(signature) in entry.compiled


def on_disk(source: str) -> bool:
    """Whether numba's cache directory holds machine code for module `source`'s host
    function (its last; a host's parts are written before it)."""
    stem = f"tracer_{module_key(source)[:40]}"
    host = source.rsplit("\ndef ", 1)[-1].split("(", 1)[0]
    return bool(glob.glob(os.path.join(cache_directory(), "__pycache__",
                                       f"{stem}.{host}-*.nbi")))


def cache_directory() -> str:
    return os.path.join(os.path.expanduser(config.cache_dir), "cpu")


def compile_module(source: str, function: str, signature: Sequence[Any]) -> tuple[Any, bool]:
    """The compiled host `function` of `source` for `signature`, and whether numba
    had to compile it (False: loaded from this process or from disk)."""
    key = module_key(source)
    with _LOCK:
        entry = _MODULES.get(key)
        if entry is None:
            entry = _MODULES[key] = _load(key, source)
        dispatcher = getattr(entry.module, function)
        sig = tuple(signature)
        if sig in entry.compiled:
            STATS.memory_hits += 1
            return dispatcher, False
        dispatcher, fresh = _compile(entry, dispatcher, sig)
        entry.compiled.add(sig)
        return dispatcher, fresh


def _load(key: str, source: str) -> Entry:
    """Write the module into the cache directory (best effort) and import it."""
    directory = cache_directory()
    name = f"tracer_{key[:40]}"
    path = os.path.join(directory, name + ".py")
    text = f"# tracer generated module; key: {key}\n# {_versions(source)}\n{source}"
    try:
        _make_directory(directory)
        _write(path, text)
    except OSError as e:  # read-only, full, under a file: compile from memory
        numba_cache.warn_unwritable(path, e)
    numba_cache.register_generated(path)
    return Entry(_import(name, path, text), path, set(), text)


def _make_directory(directory: str) -> None:
    """`directory`, made; a file or a dangling link in its place is removed first."""
    if not os.path.isdir(directory):
        numba_cache.remove_entry(directory)
    os.makedirs(directory, exist_ok=True)


def _write(path: str, text: str) -> None:
    """Make `path` hold `text`, atomically (a temporary file, then os.replace: readers
    see the old or the new file, never half of one). Anything else at `path` (stale or
    corrupt text, a directory, a link loop, a dangling link) is replaced; OSError when
    the directory cannot be written, with no temporary file left behind."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except (OSError, UnicodeDecodeError):
        pass
    if os.path.isdir(path) and not os.path.islink(path):
        numba_cache.remove_entry(path)  # (os.replace cannot replace a directory)
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)  # (replaces a link itself, never its target)
    finally:
        if os.path.lexists(tmp):
            numba_cache.remove_entry(tmp)


def _import(name: str, path: str, text: str) -> types.ModuleType:
    """Execute the module from its text (no .pyc involved, so nothing stale)."""
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(text, path, "exec"), module.__dict__)  # our generated code
    return module


def _compile(entry: Entry, dispatcher: Any, sig: tuple) -> tuple[Any, bool]:
    """numba compiles `sig`, or loads it from the cache directory (an unreadable or
    corrupt cache entry is a miss: `numba_cache` removes it)."""
    threads.start_pool()  # (before loading machine code from disk: numba #8578)
    try:
        if f"@{split.PART_DECORATOR}" in entry.text:
            split.register_parts(entry.module, entry.text, dispatcher.py_func.__name__, sig)
        dispatcher.compile(sig)
    except (numba.core.errors.TypingError, numba.core.errors.LoweringError) as e:
        e.add_note(f"(a tracer bug: numba rejected the generated module {entry.path})")
        raise
    hit = dispatcher.stats.cache_hits.get(sig, 0) > 0
    if hit and (unbound := split.unbound_parts(dispatcher, sig)):
        raise CacheError(f"the cached machine code of {entry.path} calls part functions this "
                         f"process did not bind ({', '.join(unbound)}): a tracer bug; "
                         f"removing that directory (or another TRACER_CACHE_DIR) compiles it again")
    if hit:
        STATS.disk_hits += 1
    else:
        STATS.compiles += 1
    return dispatcher, not hit


def clear_memory() -> None:
    """Forget compiled modules, also in `sys.modules` (the disk cache stays)."""
    with _LOCK:
        for entry in _MODULES.values():
            if sys.modules.get(entry.module.__name__) is entry.module:
                del sys.modules[entry.module.__name__]
        _MODULES.clear()
