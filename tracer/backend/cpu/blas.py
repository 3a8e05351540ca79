"""The OpenBLAS numba's `np.dot` calls (SciPy's) on one thread around a small model's
call (the rule and its measurements: `tracer/backend/blas_threads.py`), and around a
large one while the machine is busier than its cores (`threads_while_idle`: a large
product then ran 10x slower on threads, measured under load: each waits for its slowest
thread)."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from ..blas_threads import openblas_functions
from ..blas_threads import single_threaded as single_threaded_in

SCIPY_LIBS = "scipy.libs"
BUSY_CHECK_SECONDS = 1.0  # how long one reading of the load average is trusted
_busy_reading = [0.0, False]  # (when read, whether busier than the cores)


def scipy_openblas_functions() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set_num_threads, get_num_threads) of SciPy's OpenBLAS, loaded first."""
    import scipy.linalg.cython_blas  # noqa: F401 - loads the library numba calls
    return openblas_functions(SCIPY_LIBS)


def single_threaded(call: Callable[..., Any]) -> Callable[..., Any]:
    """`call` with SciPy's OpenBLAS on one thread while it runs."""
    scipy_openblas_functions()
    return single_threaded_in(call, SCIPY_LIBS)


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


def threads_while_idle(call: Callable[..., Any], cores: int) -> Callable[..., Any]:
    """`call` with SciPy's OpenBLAS on one thread while the machine is busier than its
    cores, on the process's threads otherwise."""
    one_thread = single_threaded(call)
    if one_thread is call:  # (no such library, or it already runs one thread)
        return call

    def blas_threads_if_idle(*args: Any) -> Any:
        return (one_thread if machine_busy(cores) else call)(*args)

    return blas_threads_if_idle
