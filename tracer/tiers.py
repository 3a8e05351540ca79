"""Tiered compilation: the first calls run on the reference interpreter while numba
compiles in a worker process; the machine code is swapped in when it is ready.

    compiled = tiers.compile_tiered(lowered, stats, known)   # returns at once
    compiled.executable(*arrays)   # TieredExecutable: interpreter, until the swap
    compiled.executable.wait()     # block until the compiled tier serves (or raise)

The background job runs in a daemon thread of this process, started after the first
call returned (so the first call has the interpreter to itself): it generates the
module (`NumbaCpuBackend.prepare`), has the compile worker compile it into the disk
cache unless numba's code is already there (or the module imports a registry of
this process, such as custom-call targets: then it compiles here, in the thread),
loads it (`load`: a disk-cache hit) and assigns `compiled.executable`. Each call runs
exactly one tier, so effects and RNG happen once; the tiers agree to the tolerance
the tests use between backends. A job that fails (or whose worker dies) makes the
next call compile synchronously, which raises the very error a synchronous compile
raises, or succeeds: no hang, no interpreter forever.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from . import progress
from .backend import get_backend
from .backend.interpreter import InterpretedExecutable
from .cache import CacheStats
from .config import config
from .core import Graph
from .dump import dump_source
from .stages import Compiled, Lowered


class BackgroundCompile:
    """One signature's compile: generated, compiled by the worker, loaded, swapped in."""

    def __init__(self, compiled: Compiled, graph: Graph, stats: CacheStats,
                 prepared: Any = None):
        self.compiled = compiled
        self.graph = graph
        self.prepared = prepared  # the generated module, when the caller already made it
        self.stats = stats
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name=f"tracer compile {self.graph.name}")
                self._thread.start()

    def _run(self) -> None:
        try:
            with progress.shown(f"compiling {self.compiled.lowered.name}", background=True):
                options = self.compiled.lowered.backend_options()
                executable = _compile_off_thread(self.prepared or
                                                 get_backend("cpu").prepare(self.graph, **options))
            self.stats.compiles += int(getattr(executable, "fresh_compile", True))
            lowered = self.compiled.lowered
            if config.dump_dir:
                dump_source(config.dump_dir, lowered.name, lowered.backend, executable.source)
            self.compiled.executable = executable
        except BaseException as e:  # noqa: BLE001 - the next call recompiles and raises it
            self.error = e
        finally:
            self.done.set()


def _compile_off_thread(prepared: Any) -> Any:
    """Compile the generated module in the worker process (or here when it cannot leave
    this process), then load the machine code from the disk cache."""
    from .backend.cpu import cache as cpu_cache
    from .compile_worker import shared
    backend = get_backend("cpu")
    source = prepared.module.source
    fresh = False
    if cpu_cache.portable(source) and not cpu_cache.on_disk(source):
        fresh = shared().compile(source, prepared.function, prepared.signature,
                                 config.cache_dir)
    executable = backend.load(prepared)
    executable.fresh_compile = executable.fresh_compile or fresh
    return executable


class TieredExecutable:
    """The interpreter tier of a signature whose numba code is still compiling."""

    fresh_compile = False  # the background job counts the compile when it happens

    def __init__(self, job: BackgroundCompile, backend: str):
        self.job = job
        self.backend = backend
        self._interpreted = InterpretedExecutable(job.graph)
        self.source = self._interpreted.source

    def __call__(self, *args: Any) -> list[Any]:
        job = self.job
        if job.done.is_set():  # (the swap happened after this call's lookup, or failed)
            return self._compiled_now()(*args)
        job.stats.interpreted += 1
        outs = self._interpreted(*args)
        job.start()
        return outs

    def wait(self) -> None:
        """Block until the compiled tier serves this signature (raising its compile
        error, as a synchronous compile would)."""
        self.job.start()
        self.job.done.wait()
        self._compiled_now()

    def _compiled_now(self) -> Any:
        compiled = self.job.compiled
        if compiled.executable is self:  # the background compile failed: compile here
            executable = get_backend(self.backend).compile(
                self.job.graph, **compiled.lowered.backend_options())
            self.job.stats.compiles += int(getattr(executable, "fresh_compile", True))
            compiled.executable = executable
        return compiled.executable


def compile_tiered(lowered: Lowered, stats: CacheStats, known: bool) -> Compiled:
    """`lowered` optimized, served by the interpreter until numba's code is ready.
    `known`: the function compiled other signatures, so this may be a new size of a
    structure whose machine code this process has: then that code serves at once."""
    optimized = lowered.optimize()
    prepared = _prepared_if_loaded(optimized, lowered) if known else None
    if prepared is not None:
        from .backend.cpu import cache as cpu_cache
        if cpu_cache.in_memory(prepared.module.source, prepared.signature):
            return Compiled(lowered, optimized, get_backend("cpu").load(prepared))
    compiled = Compiled(lowered, optimized, None)
    job = BackgroundCompile(compiled, optimized, stats, prepared)
    compiled.executable = TieredExecutable(job, lowered.backend)
    return compiled


def _prepared_if_loaded(graph: Graph, lowered: Lowered) -> Any:
    """The generated module of `graph` when the cpu backend is loaded (never imports
    numba to find out), else None."""
    if "tracer.backend.cpu.backend" not in sys.modules:
        return None
    try:
        return get_backend("cpu").prepare(graph, **lowered.backend_options())
    except Exception:  # noqa: BLE001 - the background job meets it again and reports it
        return None


def tiered(backend: str) -> bool:
    """Whether a jit miss on `backend` compiles in the background (config.compile_mode)."""
    return config.compile_mode == "async" and backend == "cpu"
