"""The OpenBLAS numba's `np.dot` calls (SciPy's) on one thread around a small
model's call (the rule and its measurements: `tracer/backend/blas_threads.py`)."""

from __future__ import annotations

from typing import Any, Callable

from ..blas_threads import openblas_functions
from ..blas_threads import single_threaded as single_threaded_in

SCIPY_LIBS = "scipy.libs"


def scipy_openblas_functions() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set_num_threads, get_num_threads) of SciPy's OpenBLAS, loaded first."""
    import scipy.linalg.cython_blas  # noqa: F401 - loads the library numba calls
    return openblas_functions(SCIPY_LIBS)


def single_threaded(call: Callable[..., Any]) -> Callable[..., Any]:
    """`call` with SciPy's OpenBLAS on one thread while it runs."""
    scipy_openblas_functions()
    return single_threaded_in(call, SCIPY_LIBS)
