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
The executable allocates every output and top-level buffer with NumPy (huge
pages, no allocation inside the kernel) and passes the sizes in an int64 array,
so one compiled kernel serves every batch size. `fresh_compile` says whether
numba really compiled (not loaded from this process or from disk).
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

import numba
import numpy as np

from ... import profiler
from ...core import Graph, subgraphs
from ..numba.fusion import INDEX_OPS
from ..numba.lower import lower
from ..numba.scalar import HALVES, SCALAR_EMITTERS, storage_dtype
from ..numba.source import SourceWriter
from . import blas, cache, strided, threads
from .emit.table import OP_EMITTERS
from .generate import Module, generate
from .options import thread_count


def _uses_blas(graph: Graph) -> bool:
    """Whether the graph calls BLAS anywhere (then no prange: the two thread pools fight)."""
    for eqn in graph.eqns:
        if eqn.op.name == "dot_general" or any(_uses_blas(g) for g in subgraphs(eqn.params)):
            return True
    return False


def _array_type(dtype: np.dtype, ndim: int, layout: str = "C") -> Any:
    return numba.types.Array(numba.from_dtype(storage_dtype(dtype)), ndim, layout)


_USES_THREADS = re.compile(r"parallel=True|\w_parallel\b")


class NumbaExecutable:
    """A compiled graph: call it with the graph's input arrays, get a list of outputs.

    `serial` builds the same graph without threads: what a module that uses the
    thread pool runs where the pool cannot be used (`threads`: a child forked from a
    GNU OpenMP process)."""

    def __init__(self, module: Module, host: Callable[..., Any], fresh_compile: bool,
                 n_inputs: int, serial: Callable[[], "NumbaExecutable"],
                 strided_host: strided.StridedHost):
        self.source = module.source
        self.fresh_compile = fresh_compile
        self._host = host
        self._dims = np.array(module.dims, np.int64)
        self.strided = strided_host  # what happened to non-contiguous inputs (counters)
        self._call = _launcher(module, host, self._dims, n_inputs, strided_host)
        self._threaded = bool(_USES_THREADS.search(module.source))
        self._serial: Callable[[], NumbaExecutable] | NumbaExecutable = serial

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        if self._threaded and not threads.SAFE:
            return self._guarded(args)
        return self._call(*args)

    def _guarded(self, args: tuple) -> list[np.ndarray]:
        if threads.forked_from_pool():
            if not isinstance(self._serial, NumbaExecutable):
                self._serial = self._serial()
            return self._serial(*args)
        with threads.LOCK:  # the workqueue layer: one parallel kernel at a time
            return self._call(*args)


def _launcher(module: Module, host: Callable[..., Any], dims: np.ndarray,
              n_inputs: int, strided_host: strided.StridedHost) -> Callable[..., list[np.ndarray]]:
    """A Python function specialized to this module's parameters, so a call does no
    more than check input layouts, allocate the buffers and call the host function."""
    env: dict[str, Any] = {"host": host, "dims": dims, "ndarray": np.ndarray, "empty": np.empty,
                           "uint16": np.uint16, "strided": strided_host, "asarray": np.asarray,
                           "array": np.array, "np": np}
    w = SourceWriter()
    names: list[str] = []
    with w.block(f"def launch({', '.join(f'a{k}' for k in range(n_inputs))})"):
        w.line("in_place = False")
        for p in module.params:
            names.append(_launch_param(w, env, p))
        if "parallel" in module.source:  # (numba's thread count is per calling thread)
            env["set_threads"], env["threads"] = numba.set_num_threads, thread_count()
            w.line("set_threads(threads)")
        w.line(f"(strided.host() if in_place else host)({', '.join(names + ['dims'])})")
        outs = []
        for k, (kind, payload) in enumerate(module.outputs):
            if kind == "param":
                p = module.params[payload]
                outs.append(f"{p.name}_f16" if p.value.dtype in HALVES else p.name)
            elif kind == "input":
                outs.append(f"asarray(a{payload})")
            else:
                env[f"literal{k}"] = payload
                outs.append(f"array(literal{k})")
        w.line(f"return [{', '.join(outs)}]")
    exec(compile(w.text(), "<tracer cpu launcher>", "exec"), env)
    return env["launch"]


def _launch_param(w: SourceWriter, env: dict[str, Any], p: Any) -> str:
    """Lines that produce host parameter `p`; returns the name to pass. An input that
    is not an aligned C-contiguous ndarray is copied, unless `strided` admits it: the
    host reads it element by element and its strides suit the loops (see `strided`)."""
    f16 = p.value.dtype in HALVES  # float16 / bfloat16: the kernel sees uint16 bits
    if p.kind == "const":  # (the host's C-layout code reads it: contiguous, once)
        value = np.ascontiguousarray(p.value)
        env[p.name] = value.view(np.uint16) if f16 else value
        return p.name
    if p.kind == "input":
        a = f"a{p.index}"
        flags = f"{a}.flags"  # (unaligned data: copied, as numba's code assumes aligned)
        with w.block(f"if type({a}) is not ndarray or not ({flags}.c_contiguous and "
                     f"{flags}.aligned)"):
            if p.value.ndim:
                with w.block(f"if type({a}) is ndarray and strided.admit({a}, {p.name!r})"):
                    w.line("in_place = True")
                with w.block("else"):
                    w.line(f"{a} = strided.copy({a})")
            else:
                w.line(f"{a} = strided.copy({a})")
        return f"{a}.view(uint16)" if f16 else a
    shape = tuple(p.value.shape)
    if f16:
        w.line(f"{p.name}_f16 = empty({shape!r}, {p.value.dtype.name!r})")
        w.line(f"{p.name} = {p.name}_f16.view(uint16)")
    else:
        w.line(f"{p.name} = empty({shape!r}, np.{p.value.dtype.name})")
    return p.name


@dataclass(frozen=True)
class Prepared:
    """A generated module and the argument types of its host function."""

    module: Module
    function: str
    signature: tuple
    n_inputs: int
    blas_flops: float  # of its largest BLAS product (0: none)
    graph: Graph       # the lowered graph (to build a serial version where threads cannot run)


class NumbaCpuBackend:
    """`backend="cpu"`: numba.njit code generated per graph structure."""

    name = "cpu"

    def __init__(self, fuse: bool = True):
        self.fuse = fuse  # False: one loop nest per op (to test fusion against)

    def compile(self, graph: Graph) -> NumbaExecutable:
        return self.load(self.prepare(graph))

    def prepare(self, graph: Graph) -> "Prepared":
        """Lower and generate the module (no numba compile): what a compile worker
        process compiles into the disk cache before `load` picks it up."""
        with profiler.span("codegen", "codegen"):
            graph = lower(graph)
            return self._generate(graph, thread_count() > 1 and not _uses_blas(graph))

    def _generate(self, graph: Graph, parallel_ok: bool) -> "Prepared":
        module = generate(graph, parallel_ok=parallel_ok, fuse=self.fuse)
        return Prepared(module, module.host, _signature(module), len(graph.inputs),
                        blas.largest_product_flops(graph), graph)

    def load(self, prepared: "Prepared") -> NumbaExecutable:
        """The executable of a prepared module: compiled now, or loaded from memory or
        from the disk cache."""
        host, fresh = _compiled_host(prepared, prepared.signature)
        module = prepared.module
        inputs = tuple((p.name, p.value.ndim) for p in module.params
                       if p.kind == "input" and p.value.ndim)
        variant = strided.StridedHost(
            module.source, module.host, inputs, functools.partial(_signature, module),
            lambda sig: _compiled_host(prepared, sig)[0],
            functools.partial(cache.in_memory, module.source))
        return NumbaExecutable(module, host, fresh, prepared.n_inputs,
                               functools.partial(self._serial, prepared.graph), variant)

    def _serial(self, graph: Graph) -> NumbaExecutable:
        """The same lowered graph compiled without threads (see NumbaExecutable)."""
        return self.load(self._generate(graph, parallel_ok=False))

    def clear_memory(self) -> None:
        """Forget compiled modules held in memory (the disk cache stays)."""
        cache.clear_memory()


def _signature(module: Module, strided_inputs: frozenset[str] = frozenset()) -> tuple:
    """The host function's argument types: `strided_inputs` in 'A' layout, the rest 'C'."""
    dims = numba.types.Array(numba.types.int64, 1, "C")
    return (*(_param_type(p, p.name in strided_inputs) for p in module.params), dims)


def _compiled_host(prepared: Prepared, signature: tuple) -> tuple[Any, bool]:
    """The host function compiled for `signature` (or loaded from memory or disk), and
    whether numba compiled it."""
    start = time.perf_counter_ns()
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
    host = dispatcher.overloads[signature].entry_point
    flops = prepared.blas_flops
    if flops and (flops < blas.BLAS_PARALLEL_MIN_FLOPS or thread_count() == 1):
        host = blas.single_threaded(host)
    return host, fresh


def _param_type(p: Any, strided_input: bool = False) -> Any:
    """Inputs and buffers hold a ShapedArray, constants the array itself; 'A' layout
    for an input read in place. (Typed writable: the entry point also takes read-only
    arrays, and kernels never write their inputs; read-only types would make numba
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
