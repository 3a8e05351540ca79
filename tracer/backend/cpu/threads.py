"""numba's threading layer, made safe for Python threads and forked processes.

Generated modules with `prange` nests (and the `_parallel` library kernels) run on
numba's thread pool, whose layer numba picks once per process: `tbb` if it is
installed, else `omp`, else `workqueue`. tracer keeps that choice (pinned by the user
with NUMBA_THREADING_LAYER, or numba's order above) and works around what the layer
cannot do (numba's "threading layer" documentation):

- `workqueue` is not thread-safe: two Python threads launching a parallel kernel at
  once abort the process. Parallel kernels are then serialized by one lock.
- GNU OpenMP (`omp` with libgomp) is not fork-safe: a child forked after the pool ran
  is terminated by numba as soon as it launches a parallel kernel (and a
  `multiprocessing.Pool` hangs). In such a child every executable runs a serial
  version of its module instead (compiled once, on first use there).
- `tbb` (and Intel OpenMP) allow both: nothing changes.

`SAFE` is what the hot path reads: True while parallel kernels can be called as they
are.
"""

from __future__ import annotations

import functools
import os
import threading

import numba

SAFE = True
LOCK = threading.Lock()  # serializes parallel kernels on the workqueue layer
_POOL_PID: int | None = None  # the process that started numba's thread pool


@functools.cache
def start_pool() -> None:
    """Start numba's thread pool (launching the layer) and adapt to the layer it got.

    Also needed before machine code is loaded from disk: starting the pool registers
    its entry points with LLVM, and a cached host function that calls a `parallel=True`
    library function loads without starting it, so its first call would jump to a null
    address (numba #8578)."""
    global SAFE, _POOL_PID
    numba.get_num_threads()
    _POOL_PID = os.getpid()
    if layer() == "workqueue":
        SAFE = False


def layer() -> str:
    """The threading layer numba launched ('tbb', 'omp' or 'workqueue')."""
    return numba.threading_layer()


def serialize_calls() -> bool:
    """Whether parallel kernels must not run from two threads at once."""
    return layer() == "workqueue"


def _fork_unsafe() -> bool:
    if layer() != "omp":
        return False
    from numba.np.ufunc import omppool
    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


def _after_fork_in_child() -> None:
    global SAFE, LOCK
    LOCK = threading.Lock()  # (another thread may have held the parent's)
    if _POOL_PID is not None and _fork_unsafe():
        SAFE = False


def forked_from_pool() -> bool:
    """Whether this process is a child forked after a fork-unsafe pool had started."""
    return _POOL_PID is not None and os.getpid() != _POOL_PID and _fork_unsafe()


os.register_at_fork(after_in_child=_after_fork_in_child)
