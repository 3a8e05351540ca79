"""BLAS threads only where they pay: small products run on one thread.

numba's `np.dot` calls SciPy's OpenBLAS, which starts as many threads as there are
cores for every product. For the products of a small model (a 128x784 by 784x256
layer: 25 MFLOP) the threads save little on a quiet machine and cost 10x when another
process keeps the cores busy (measured: 60 ms against 4 ms on one thread, two cores
under load): each product waits for its slowest thread. An executable whose largest
product is below BLAS_PARALLEL_MIN_FLOPS sets SciPy's OpenBLAS to one thread around
its call and restores the process's setting after it; a larger one does the same
while the machine is busier than its cores (`threads_while_idle`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import time
from typing import Callable

from ...core import Graph, subgraphs

BLAS_PARALLEL_MIN_FLOPS = 1 << 27  # below this, BLAS threads cost more than they save
_SETTERS = ("scipy_openblas_set_num_threads", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads", "openblas_get_num_threads")


def largest_product_flops(graph: Graph) -> float:
    """2 * m * n * k of the largest `dot_general` in `graph` (and its sub-graphs)."""
    largest = 0.0
    for eqn in graph.eqns:
        if eqn.op.name == "dot_general":
            lhs = eqn.inputs[0].aval
            k = 1
            for d in eqn.params["lhs_contracting_dims"]:
                k *= lhs.shape[d]
            largest = max(largest, 2.0 * eqn.outputs[0].aval.size * k)
        for sub in subgraphs(eqn.params):
            largest = max(largest, largest_product_flops(sub))
    return largest


@functools.cache
def _scipy_openblas_functions() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set_num_threads, get_num_threads) of the OpenBLAS numba calls (SciPy's)."""
    import scipy.linalg.cython_blas  # noqa: F401 - loads the library numba calls
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = sorted({line.split()[-1] for line in f if "scipy.libs" in line
                            and "openblas" in line.lower()})
    except OSError:
        return None
    for path in paths:
        lib = ctypes.CDLL(path)
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            return setter, getter
    return None


@functools.cache
def _scipy_openblas() -> tuple[Callable[[int], None], int] | None:
    """(set_num_threads, the process's thread count) of SciPy's OpenBLAS."""
    found = _scipy_openblas_functions()
    return None if found is None else (found[0], int(found[1]()))


BUSY_CHECK_SECONDS = 1.0  # how long one reading of the load average is trusted
_busy_reading = [0.0, False]  # (when read, whether busier than the cores)


def machine_busy(cores: int) -> bool:
    """Whether more threads are runnable than `cores` (the 1-minute load average,
    read at most once per BUSY_CHECK_SECONDS): then BLAS threads wait on each other."""
    now = time.monotonic()
    if now - _busy_reading[0] > BUSY_CHECK_SECONDS:
        try:
            busy = os.getloadavg()[0] > cores
        except OSError:  # no load average on this system: assume idle
            busy = False
        _busy_reading[:] = [now, busy]
    return bool(_busy_reading[1])


def threads_while_idle(call: Callable[..., None], cores: int) -> Callable[..., None]:
    """`call` with SciPy's OpenBLAS on one thread while the machine is busier than its
    cores (a large product then ran 10x slower on threads, measured under load: each
    waits for its slowest thread), on the process's threads otherwise."""
    found = _scipy_openblas()
    if found is None or found[1] <= 1:
        return call
    one_thread = single_threaded(call)

    def blas_threads_if_idle(*args: object) -> None:
        (one_thread if machine_busy(cores) else call)(*args)

    return blas_threads_if_idle


def single_threaded(call: Callable[..., None]) -> Callable[..., None]:
    """`call` with SciPy's OpenBLAS on one thread while it runs (unchanged when that
    library is not found, or already runs one thread)."""
    found = _scipy_openblas()
    if found is None or found[1] <= 1:
        return call
    set_threads, default = found

    def one_blas_thread(*args: object) -> None:
        set_threads(1)
        try:
            call(*args)
        finally:
            set_threads(default)

    return one_blas_thread
