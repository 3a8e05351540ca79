"""How the cpu backend compiles its generated functions, and when they use threads."""

from __future__ import annotations

import functools
import os

from ...config import config

PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save
# numba options of every generated function: machine code cached on disk, no C-callable
# wrapper (nothing takes a generated function's address; the wrapper of a host with
# hundreds of array parameters cost a fifth of its compile), IEEE division (x / 0 is
# inf, not an exception), and the GIL released while it runs.
NJIT_OPTIONS = 'cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True'


def thread_count() -> int:
    """Threads for parallel loops: `config.num_threads` (TRACER_NUM_THREADS), else the
    cores this process may run on (os.sched_getaffinity: `taskset`, an MPI rank bound
    to its core), at most numba's pool (NUMBA_NUM_THREADS). At 1, no code is parallel."""
    return _thread_count(config.num_threads)


@functools.lru_cache(maxsize=8)
def _thread_count(setting: int | None) -> int:
    import numba
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(setting or cores or 1, numba.config.NUMBA_NUM_THREADS))
