"""The `cuda` backend: graphs compiled to numba.cuda kernels launched from Python.

    backend = NumbaCudaBackend()
    exe = backend.compile(graph)      # plan, generate, import (kernels compile on launch)
    outs = exe(x, y)                  # NumPy in -> NumPy out; device arrays in -> device out
    print(exe.source)                 # the generated module, for debugging

Pipeline: the CPU backend's fusion plan (`numba.fusion`) decides the steps;
`cuda.generate` writes a module whose host function launches one kernel per
loop nest (`cuda.nests`, `cuda.reductions`) or op (`cuda.emit.table`,
`cuda.emit.index`, `cuda.emit.gemm`) on device arrays, with no copy to the host in
between (except a loop predicate or branch index, and the `HOST_OPS`); device
arrays in give device arrays out, with nothing copied through the host;
`cuda.cache` imports it from the content-addressed cache directory. Launch
configurations come from the static shapes (`cuda.lib.launch`).

Without a GPU, numba's CUDA simulator runs the same kernels as Python
(`NUMBA_ENABLE_CUDASIM=1`, set before numba is imported): the tests do that.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
from numba import cuda

from ... import profiler
from ...core import Graph
from ...errors import TracerValueError
from ..numba.fusion import INDEX_OPS
from . import cache
from .emit.host import HOST_FALLBACKS, HOST_OPS
from .emit.table import DEVICE_EMITTERS
from .emitter import CudaModule
from .generate import generate
from .lib.arrays import as_output, copy, device_put, is_device_array, to_device, to_host
from .scalar import CUDA_SCALAR_EMITTERS


class CudaExecutable:
    """A compiled graph. NumPy (or scalar) arguments are copied to the device and the
    results copied back; if any argument is a device array, every result is a device
    array and nothing is copied through the host (rank-0 and strided arguments are
    converted by kernels, see `cuda.lib.arrays.to_device`)."""

    def __init__(self, module: CudaModule, host: Callable[..., list[Any]], graph: Graph,
                 fresh_compile: bool):
        self.source = module.source
        self.kernels = module.kernels
        self.fresh_compile = fresh_compile
        self._host = host
        self._in_avals = list(graph.in_avals)
        self._out_avals = list(graph.out_avals)
        self._outputs = module.outputs
        self._dims = list(module.dims)
        self._d_dims = cuda.to_device(np.array(module.dims or [0], np.int64))
        self._consts = [cuda.to_device(c) for c in module.consts]
        self._host_ops = module.host_ops
        # Literal results, uploaded once; each call returns a copy made on the device.
        self._literals = {k: cuda.to_device(np.array(payload, aval.dtype))
                          for k, ((kind, payload), aval) in
                          enumerate(zip(module.outputs, self._out_avals, strict=True))
                          if kind == "literal"}

    def __call__(self, *args: Any) -> list[Any]:
        on_device = any(map(is_device_array, args))
        ins = [to_device(a, v) for a, v in zip(args, self._in_avals, strict=True)]
        values = self._host(*ins, *self._consts, self._dims, self._d_dims, self._host_ops)
        outs = []
        for k, ((kind, payload), aval) in enumerate(zip(self._outputs, self._out_avals,
                                                        strict=True)):
            if kind == "literal":
                outs.append(copy(self._literals[k]) if on_device else np.array(payload,
                                                                               aval.dtype))
                continue
            x = values[payload] if kind == "value" else ins[payload]
            if any(x is c for c in self._consts):  # (never hand out this executable's own)
                x = copy(x)
            outs.append(as_output(x, aval) if on_device else to_host(x, aval))
        return outs


class NumbaCudaBackend:
    """`backend="cuda"`: numba.cuda kernels generated per graph structure."""

    name = "cuda"

    def __init__(self, fuse: bool = True):
        if not cuda.is_available():
            raise TracerValueError(
                "backend 'cuda': numba.cuda finds no CUDA GPU here (run with "
                "NUMBA_ENABLE_CUDASIM=1, set before numba is imported, to use numba's CUDA "
                "simulator instead)")
        self.fuse = fuse  # False: one kernel per op (to test fusion against)

    def compile(self, graph: Graph) -> CudaExecutable:
        with profiler.span("codegen", "codegen"):
            module = generate(graph, fuse=self.fuse)
        start = time.perf_counter_ns()
        host, fresh = cache.load(module.source, module.host)
        profiler.record("import module" if fresh else "module in memory", "compile", start,
                        time.perf_counter_ns())
        return CudaExecutable(module, host, graph, fresh)

    def clear_memory(self) -> None:
        """Forget imported modules (the disk cache stays)."""
        cache.clear_memory()


def device_ops() -> frozenset[str]:
    """Op names that run on the device: fused into loop-nest kernels or with a kernel of
    their own (the rest are `HOST_OPS`)."""
    return frozenset(CUDA_SCALAR_EMITTERS) | INDEX_OPS | {"reduce"} | frozenset(DEVICE_EMITTERS)


__all__ = ["HOST_FALLBACKS", "HOST_OPS", "CudaExecutable", "NumbaCudaBackend", "device_ops",
           "device_put", "is_device_array"]

