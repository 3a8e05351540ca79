"""The `cpu` backend: graphs compiled to numba machine code through generated Python.

    backend = NumbaCpuBackend()
    exe = backend.compile(graph)      # plan, generate, cache, numba-compile
    outs = exe(x, y)                  # NumPy arrays in, list of NumPy arrays out
    print(exe.source)                 # the generated module, for debugging

Pipeline: `cpu_fusion` plans loop nests, `cpu_codegen` / `cpu_loops` /
`cpu_emit_ops` write one module with a host function, `cpu_cache` imports it
from the content-addressed cache directory and compiles it for the exact
argument types. The executable allocates every output and top-level buffer
with NumPy (huge pages, no allocation inside the kernel) and passes the sizes
in an int64 array, so one compiled kernel serves every batch size.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numba
import numpy as np

from ..config import config
from ..core import Graph, subgraphs
from . import cpu_cache
from .cpu_codegen import Module, generate
from .cpu_scalar import F16, storage_dtype

_HOST = "main"


def _uses_blas(graph: Graph) -> bool:
    """Whether the graph calls BLAS anywhere (then no prange: the two thread pools fight)."""
    for eqn in graph.eqns:
        if eqn.op.name == "dot_general" or any(_uses_blas(g) for g in subgraphs(eqn.params)):
            return True
    return False


def _array_type(dtype: np.dtype, ndim: int) -> Any:
    return numba.types.Array(numba.from_dtype(storage_dtype(dtype)), ndim, "C")


class NumbaExecutable:
    """A compiled graph: call it with the graph's input arrays, get a list of outputs."""

    def __init__(self, module: Module, host: Callable[..., Any], fresh_compile: bool):
        self.source = module.source
        self.fresh_compile = fresh_compile
        self._host = host
        self._dims = np.array(module.dims, np.int64)
        self._params = module.params
        self._outputs = module.outputs

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        call_args: list[Any] = []
        filled: list[Any] = []
        for p in self._params:
            if p.kind == "input":
                value = _prepare(args[p.index])
            elif p.kind == "const":
                value = p.value
            else:
                value = np.empty(p.value.shape, p.value.dtype)
            filled.append(value)
            call_args.append(value.view(np.uint16) if value.dtype == F16 else value)
        self._host(*call_args, self._dims)
        return [_output(kind, payload, args, filled) for kind, payload in self._outputs]


def _prepare(x: Any) -> np.ndarray:
    """A C-contiguous, writeable array (the layout the kernel was compiled for)."""
    if type(x) is not np.ndarray or not (x.flags.c_contiguous and x.flags.writeable):
        x = np.array(x, order="C")
    return x


def _output(kind: str, payload: Any, args: Sequence[Any], filled: list[Any]) -> np.ndarray:
    if kind == "param":
        return filled[payload]
    if kind == "input":
        return np.asarray(args[payload])
    return np.array(payload)


class NumbaCpuBackend:
    """`backend="cpu"`: numba.njit code generated per graph structure."""

    name = "cpu"

    def __init__(self, fuse: bool = True):
        self.fuse = fuse  # False: one loop nest per op (to test fusion against)

    def compile(self, graph: Graph) -> NumbaExecutable:
        module = generate(graph, _HOST, parallel_ok=not _uses_blas(graph), fuse=self.fuse)
        if config.dump_dir:
            _dump(config.dump_dir, graph.name, module.source)
        signature = [_param_type(p) for p in module.params]
        signature.append(numba.types.Array(numba.types.int64, 1, "C"))
        host, fresh = cpu_cache.compile_module(module.source, _HOST, signature)
        return NumbaExecutable(module, host, fresh)


def _param_type(p: Any) -> Any:
    """Inputs and buffers hold a ShapedArray, constants the array itself."""
    return _array_type(p.value.dtype, p.value.ndim)


def _dump(directory: str, name: str, source: str) -> None:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"{name}.cpu.py"), "w", encoding="utf-8") as f:
        f.write(source)


def compile_count() -> int:
    """How many times numba really compiled (not loaded from memory or disk) a module."""
    return cpu_cache.STATS.compiles


def supported_ops() -> frozenset[str]:
    """Op names the cpu backend can compile (element-wise and index maps are fused)."""
    from .cpu_emit_ops import OP_EMITTERS
    from .cpu_fusion import INDEX_OPS
    from .cpu_scalar import SCALAR_EMITTERS
    return frozenset(SCALAR_EMITTERS) | INDEX_OPS | {"reduce"} | frozenset(OP_EMITTERS)
