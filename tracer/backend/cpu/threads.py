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

# How long an idle OpenMP thread spins before it sleeps (libgomp reads this when numba
# loads it, at the first parallel launch; a policy the user set stays). Waking a
# sleeping thread (OMP_WAIT_POLICY=PASSIVE) cost every parallel region ~90 us on a VM,
# more than the work of a region on 1-2 MB (a 2 MB row gather: 148 us passive, 52
# spinning, 110 serial); libgomp's default spin (~3 ms) takes the cores from other
# processes for long after tracer's last call. This one outlasts the gap between
# back-to-back calls (~100 us) and not much more.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "10000")

SAFE = True
LOCK = threading.Lock()  # serializes parallel kernels on the workqueue layer
_CHILD_OF_POOL = False   # forked after a fork-unsafe pool had started


@functools.cache
def start_pool() -> None:
    """Start numba's thread pool (launching the layer) and adapt to the layer it got.

    Also needed before machine code is loaded from disk: starting the pool registers
    its entry points with LLVM, and a cached host function that calls a `parallel=True`
    library function loads without starting it, so its first call would jump to a null
    address (numba #8578)."""
    global SAFE
    numba.get_num_threads()
    if layer() == "workqueue":
        SAFE = False


def layer() -> str:
    """The threading layer numba launched ('tbb', 'omp' or 'workqueue')."""
    return numba.threading_layer()


def _pool_started() -> bool:
    from numba.np.ufunc import parallel
    return bool(getattr(parallel, "_is_initialized", False))


def _fork_unsafe() -> bool:
    if layer() != "omp":
        return False
    from numba.np.ufunc import omppool
    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


def _after_fork_in_child() -> None:
    global SAFE, LOCK, _CHILD_OF_POOL
    LOCK = threading.Lock()  # (another thread may have held the parent's)
    if _pool_started() and _fork_unsafe():
        _CHILD_OF_POOL = True
        SAFE = False


def forked_from_pool() -> bool:
    """Whether this process was forked after a fork-unsafe pool had started (in it,
    parallel kernels would be terminated: run serial ones)."""
    return _CHILD_OF_POOL


os.register_at_fork(after_in_child=_after_fork_in_child)
