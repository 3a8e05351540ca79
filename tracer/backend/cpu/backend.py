"""The `cpu` backend: graphs compiled to numba machine code through generated Python.

    backend = NumbaCpuBackend()
    exe = backend.compile(graph)      # plan, generate, cache, numba-compile
    outs = exe(x, y)                  # NumPy arrays in, list of NumPy arrays out
    print(exe.source)                 # the generated module, for debugging

Pipeline: `numba.lower` rewrites the graph; `numba.fusion` plans loop nests and row
groups; `generate` writes one module with a host function, loops from `nests` /
`numba.loops` (scalar code from `numba.scalar`, helpers in `numba.lib.scalar_math` /
`lib.fastmath`) and the other ops from the emitter table `emit.table` (an op with no
emitter runs its NumPy reference through `numba.fallback`); `cache` imports the
module from the content-addressed cache directory and compiles it for the exact
argument types.
The executable's launcher (`launch`) allocates every output and top-level buffer
with NumPy (huge pages, no allocation inside the kernel; large ones kept warm in a
pool while no one references them), writes outputs into donated inputs where the
module says it may, and passes the sizes in an int64 array, so one compiled kernel
serves every batch size. `fresh_compile` says whether
numba really compiled (not loaded from this process or from disk).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable

import numba
import numpy as np

from ... import profiler
from ...core import Graph, subgraphs
from ..numba.fusion import INDEX_OPS
from ..numba.lower import lower
from ..blas_threads import BLAS_PARALLEL_MIN_FLOPS, largest_product_flops
from ..numba.scalar import SCALAR_EMITTERS, storage_dtype
from . import blas, cache, strided, threads
from .emit.table import OP_EMITTERS
from .generate import Module, generate
from .launch import launcher
from .lib import mkl
from .options import thread_count


def uses_blas(graph: Graph) -> bool:
    """Whether the graph calls BLAS anywhere (products, LU and triangular solves)."""
    for eqn in graph.eqns:
        if eqn.op.name == "dot_general" or eqn.op.name in blas.SOLVER_OPS or \
                any(uses_blas(g) for g in subgraphs(eqn.params)):
            return True
    return False


def _threads_ok(graph: Graph) -> bool:
    """Whether the module's loops may run on numba's thread pool: there is more than one
    thread, and the graph calls no BLAS unless BLAS runs on that same pool (MKL on GNU
    OpenMP beside numba's `omp` layer). Two pools on the same cores fight: each spins
    while the other works. (The MLP forward of bench_cpu, two MKL products with GELU
    and a softmax between them: 4.15 -> 3.79 ms on two cores with its loops threaded.)"""
    if thread_count() < 2:
        return False
    if not uses_blas(graph):
        return True
    if blas.bind_fastest() != "mkl" or not mkl.on_gnu_openmp():
        return False
    threads.start_pool()
    return threads.layer() == "omp"


def _array_type(dtype: np.dtype, ndim: int, layout: str = "C") -> Any:
    return numba.types.Array(numba.from_dtype(storage_dtype(dtype)), ndim, layout)


class NumbaExecutable:
    """A compiled graph: call it with the graph's input arrays, get a list of outputs.

    `serial` builds the same graph without threads: what a module that uses the
    thread pool runs where the pool cannot be used (`threads`: a child forked from a
    GNU OpenMP process)."""

    def __init__(self, module: Module, host: Callable[..., Any], fresh_compile: bool,
                 n_inputs: int, serial: Callable[[], "NumbaExecutable"],
                 strided_host: strided.StridedHost):
        self.source = module.source
        self.module = module  # (its parameters and outputs: what a C guard calls)
        # numba's compile result of `host` when a C guard may call its native code
        self.native: Any = None
        self.fresh_compile = fresh_compile
        self.donors = module.donors  # inputs an output is written into
        self._host = host
        self._dims = np.array(module.dims, np.int64)
        self.strided = strided_host  # what happened to non-contiguous inputs (counters)
        self._call, self._direct, trusted = launcher(module, host, self._dims, n_inputs,
                                                     strided_host)
        self.threaded = module.threaded
        self._serial: Callable[[], NumbaExecutable] | NumbaExecutable = serial
        # What jit's hot path calls (`tracer.dispatch`): ndarrays or EagerArrays in, the
        # outputs as EagerArrays out (the array itself when there is one); the launcher
        # itself when no thread guard can be needed.
        self.direct_call = self._direct_guarded if self.threaded else self._direct
        # `direct_call` for inputs whose layout the caller checked (`launch.TrustedLaunch`;
        # its source too where no thread guard is needed)
        self.trusted_call = self._direct_guarded if self.threaded else trusted.call
        self.trusted_launch = None if self.threaded else trusted
        self.launch_env = trusted.env  # (the constants a C guard passes)

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        if self.threaded and not threads.SAFE:
            if threads.forked_from_pool():
                return self._serial_version()(*args)
            with threads.LOCK:  # the workqueue layer: one parallel kernel at a time
                return self._call(*args)
        return self._call(*args)

    def _direct_guarded(self, *args: np.ndarray) -> Any:
        if threads.SAFE:
            return self._direct(*args)
        if threads.forked_from_pool():
            return self._serial_version().direct_call(*args)
        with threads.LOCK:
            return self._direct(*args)

    def _serial_version(self) -> "NumbaExecutable":
        if not isinstance(self._serial, NumbaExecutable):
            self._serial = self._serial()
        return self._serial


@dataclass(frozen=True)
class Prepared:
    """A generated module and the argument types of its host function."""

    module: Module
    function: str
    signature: tuple
    n_inputs: int
    blas_flops: float  # of its largest BLAS product (0: none)
    solver_flops: float  # of its largest single LU or triangular solve (0: none)
    graph: Graph       # the lowered graph (to build a serial version where threads cannot run)


class NumbaCpuBackend:
    """`backend="cpu"`: numba.njit code generated per graph structure."""

    name = "cpu"

    def __init__(self, fuse: bool = True):
        self.fuse = fuse  # False: one loop nest per op (to test fusion against)

    def compile(self, graph: Graph, donated: tuple[int, ...] = ()) -> NumbaExecutable:
        return self.load(self.prepare(graph, donated))

    def prepare(self, graph: Graph, donated: tuple[int, ...] = ()) -> "Prepared":
        """Lower and generate the module (no numba compile): what a compile worker
        process compiles into the disk cache before `load` picks it up. `donated`:
        positions of inputs whose buffers outputs may be written into."""
        with profiler.span("codegen", "codegen"):
            graph = lower(graph)
            return self._generate(graph, _threads_ok(graph), donated)

    def _generate(self, graph: Graph, parallel_ok: bool,
                  donated: tuple[int, ...] = ()) -> "Prepared":
        module = generate(graph, parallel_ok=parallel_ok, fuse=self.fuse, donated=donated)
        return Prepared(module, module.host, _signature(module), len(graph.inputs),
                        largest_product_flops(graph), blas.solver_flops(graph), graph)

    def load(self, prepared: "Prepared") -> NumbaExecutable:
        """The executable of a prepared module: compiled now, or loaded from memory or
        from the disk cache."""
        host, fresh, native = _compiled_host(prepared, prepared.signature)
        module = prepared.module
        inputs = tuple((p.name, p.value.ndim) for p in module.params
                       if p.kind == "input" and p.value.ndim and p.index not in module.donors)
        variant = strided.StridedHost(
            module.source, module.host, inputs, functools.partial(_signature, module),
            lambda sig: _compiled_host(prepared, sig)[0],
            functools.partial(cache.in_memory, module.source))
        executable = NumbaExecutable(module, host, fresh, prepared.n_inputs,
                                     functools.partial(self._serial, prepared.graph,
                                                       tuple(sorted(module.donors))), variant)
        executable.native = native
        return executable

    def _serial(self, graph: Graph, donated: tuple[int, ...]) -> NumbaExecutable:
        """The same lowered graph compiled without threads (see NumbaExecutable)."""
        return self.load(self._generate(graph, parallel_ok=False, donated=donated))

    def clear_memory(self) -> None:
        """Forget compiled modules held in memory (the disk cache stays)."""
        cache.clear_memory()


def _signature(module: Module, strided_inputs: frozenset[str] = frozenset()) -> tuple:
    """The host function's argument types: `strided_inputs` in 'A' layout, the rest 'C'."""
    dims = numba.types.Array(numba.types.int64, 1, "C")
    return (*(_param_type(p, p.name in strided_inputs) for p in module.params), dims)


def _compiled_host(prepared: Prepared, signature: tuple) -> tuple[Any, bool, Any]:
    """The host function compiled for `signature` (or loaded from memory or disk),
    whether numba compiled it, and numba's compile result when the host is its bare
    entry point (a C guard may call its native code: `c_guard`), else None."""
    start = time.perf_counter_ns()
    if blas.imports_blas(prepared.module.source):  # (they link against the BLAS bound now)
        blas.bind_fastest()
    dispatcher, fresh = cache.compile_module(prepared.module.source, prepared.function,
                                             signature)
    profiler.record("numba compile" if fresh else "cache load", "compile", start,
                    time.perf_counter_ns())
    # The machine code for exactly `signature`, called without numba's dispatch: the
    # launcher picks the version (and makes inputs C-contiguous for the first), where
    # the dispatcher would compile again for a read-only array or a call mixing layouts
    # (it converts types only once compiling is disabled, and then finds the two
    # versions ambiguous). Its wrapper checks each array's dtype, not its layout or rank:
    # the launcher's checks and the jit cache's keys guarantee those.
    native = dispatcher.overloads[signature]
    host = native.entry_point
    threads = _blas_threads(prepared)
    if threads == 1:
        host, native = blas.single_threaded(host), None
    elif threads:
        host, native = blas.threads_while_idle(host, threads), None
    return host, fresh, native


def _blas_threads(prepared: Prepared) -> int:
    """The BLAS threads a host's calls get: 0 (no BLAS call: left as it is), 1 where its
    largest product and its largest LU or triangular solve are all too small for
    threads to pay, else tracer's thread count (while the machine is idle)."""
    flops, solver = prepared.blas_flops, prepared.solver_flops
    if not (flops or solver):
        return 0
    if thread_count() == 1 or (flops < BLAS_PARALLEL_MIN_FLOPS and
                               solver < blas.SOLVER_PARALLEL_MIN_FLOPS):
        return 1
    return thread_count()


def _param_type(p: Any, strided_input: bool = False) -> Any:
    """Inputs and buffers hold a ShapedArray, constants the array itself; 'A' layout
    for an input read in place. (Typed writable: the entry point also takes read-only
    arrays, and kernels write only donated inputs, which the launcher makes writable;
    read-only types would make numba
    specialize the library kernels, such as np.dot, that take inputs and buffers both.)"""
    return _array_type(p.value.dtype, p.value.ndim, "A" if strided_input else "C")


def compile_count() -> int:
    """How many times numba really compiled (not loaded from memory or disk) a module."""
    return cache.STATS.compiles


# Ops whose meaning is a Python callback, run through their NumPy reference in numba
# object mode (numba.fallback): a custom_vjp function's tangent map (forward mode only).
FALLBACK_OPS = frozenset({"custom_lin"})


def supported_ops() -> frozenset[str]:
    """Op names the cpu backend emits code for (element-wise and index maps are fused);
    any other op runs through its reference (see FALLBACK_OPS)."""
    return frozenset(SCALAR_EMITTERS) | INDEX_OPS | {"reduce"} | frozenset(OP_EMITTERS)
