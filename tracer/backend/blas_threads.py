"""BLAS threads only where they pay: small products run on one BLAS thread.

Several BLAS libraries can be loaded in one process: NumPy's OpenBLAS (`numpy.libs`,
behind `np.matmul` and so behind the interpreter tier), the one compiled products call
(MKL, else NumPy's OpenBLAS: `cpu/blas.py`) and SciPy's OpenBLAS (`scipy.libs`, behind
numba's LAPACK calls). Each starts as many threads as there are cores for every
product. For the products of a small model (a 128x784 by 784x256 layer: 25 MFLOP) the
threads save little on a quiet machine and cost 10x when another process keeps the
cores busy (measured: 60 ms against 4 ms on one thread, two cores under load; the
interpreter's transformer step: 0.27 s against 0.04 s): each product waits for its
slowest thread, and during an async compile the worker process is that other process.
An executable whose largest product is below BLAS_PARALLEL_MIN_FLOPS sets the library
to one thread around its call and restores the process's setting after it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..core import Graph, subgraphs

BLAS_PARALLEL_MIN_FLOPS = 1 << 27  # below this, BLAS threads cost more than they save
# (the 64-bit-integer builds NumPy bundles suffix their symbols with 64_)
_SETTERS = ("scipy_openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
            "openblas_set_num_threads", "openblas_set_num_threads64_")
_GETTERS = ("scipy_openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
            "openblas_get_num_threads", "openblas_get_num_threads64_")


def largest_product_flops(graph: Graph) -> float:
    """2 * m * n * k of the largest matrix product of a `dot_general` in `graph` (and
    its sub-graphs): one BLAS call, one matrix of a batched product (a batched product
    is one call per matrix, so what decides threads is the size of one call)."""
    largest = 0.0
    for eqn in graph.eqns:
        if eqn.op.name == "dot_general":
            lhs = eqn.inputs[0].aval
            k = batch = 1
            for d in eqn.params["lhs_contracting_dims"]:
                k *= lhs.shape[d]
            for d in eqn.params["lhs_batch_dims"]:
                batch *= lhs.shape[d]
            largest = max(largest, 2.0 * eqn.outputs[0].aval.size * k / max(batch, 1))
        for sub in subgraphs(eqn.params):
            largest = max(largest, largest_product_flops(sub))
    return largest


@functools.cache
def openblas_functions(libs_dir: str) -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set_num_threads, get_num_threads) of the OpenBLAS loaded from the wheel folder
    `libs_dir` ("numpy.libs", "scipy.libs"), or None when this process has none."""
    import ctypes  # (here: `import tracer` does not pay for it)
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = sorted({line.split()[-1] for line in f if libs_dir in line
                            and "openblas" in line.lower()})
    except OSError:
        return None
    for path in paths:
        lib = ctypes.CDLL(path)
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes = [ctypes.c_int]
            return setter, getter
    return None


@functools.cache
def _process_setting(libs_dir: str) -> tuple[Callable[[int], None], int] | None:
    """(set_num_threads, the process's thread count) of that OpenBLAS."""
    found = openblas_functions(libs_dir)
    return None if found is None else (found[0], int(found[1]()))


def single_threaded(call: Callable[..., Any], libs_dir: str) -> Callable[..., Any]:
    """`call` with the OpenBLAS of `libs_dir` on one thread while it runs (unchanged
    when that library is not found, or already runs one thread)."""
    found = _process_setting(libs_dir)
    if found is None or found[1] <= 1:
        return call
    set_threads, default = found

    def one_blas_thread(*args: Any) -> Any:
        set_threads(1)
        try:
            return call(*args)
        finally:
            set_threads(default)

    return one_blas_thread
