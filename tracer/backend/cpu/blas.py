"""Which BLAS the cpu backend's products call, and its threads.

`bind_fastest` points the products of compiled code (`cpu.lib.cblas`) at Intel MKL
where it is installed and `config.use_mkl` is on, else at NumPy's bundled OpenBLAS
(`cpu.lib.cblas` measures them); the backend calls it before it compiles or loads a
module, so a module calls the BLAS bound when it was linked.

Threads: a small model's call runs that BLAS on one thread (the rule and its
measurements: `tracer/backend/blas_threads.py`), and a large one too while the machine
is busier than its cores (`threads_while_idle`: a large product then ran 10x slower
on threads, measured under load: each waits for its slowest thread). SciPy's OpenBLAS,
behind numba's LAPACK calls (cholesky, qr, eigh, svd), follows the same rule once a
module has loaded it.

lu and triangular_solve call the bound library too (getrf, trsm, gemm: `cpu.lib.lu`,
`cpu.lib.triangular`), by the same rule with their own threshold on the flops of one
matrix (`solver_flops`, SOLVER_PARALLEL_MIN_FLOPS).
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from ...config import config
from ...core import Graph, subgraphs
from ..blas_threads import openblas_functions

if TYPE_CHECKING:
    from .lib.cblas import Provider

SCIPY_LIBS = "scipy.libs"
# From this many flops of one matrix's LU or triangular solve on (an LU of order ~290),
# MKL's threads: they did not pay at order 192 (LU 0.23 ms on two against 0.21 on one;
# triangular solve with as many right-hand sides 0.083 / 0.098), they did at 512 (LU
# 1.55 / 1.99 ms, solve 1.1 / 1.8); between them not measured on a quiet machine.
SOLVER_PARALLEL_MIN_FLOPS = 1 << 24
SOLVER_OPS = frozenset({"lu", "triangular_solve"})
BUSY_CHECK_SECONDS = 1.0  # how long one reading of the load average is trusted
_busy_reading = [0.0, False]  # (when read, whether busier than the cores)


def bind_fastest() -> str:
    """Bind the fastest BLAS present for the products compiled code links from now on
    (MKL if `config.use_mkl` and installed, else NumPy's OpenBLAS); its name."""
    from .lib import cblas
    use_mkl = bool(config.use_mkl)
    if _bound_for[0] != use_mkl:
        cblas.bind((use_mkl and _mkl_provider()) or cblas.default_provider())
        _bound_for[0] = use_mkl
    return cblas.provider().name


_bound_for: list[bool | None] = [None]  # config.use_mkl when the BLAS was last bound


def _mkl_provider() -> Provider | None:
    """MKL's functions where it is installed and loads, else None (also for an MKL
    older than its ILP64 `cblas_?gemm_64` symbols)."""
    from llvmlite import binding

    from .lib import cblas, mkl
    if not mkl.available():
        return None
    try:
        return cblas.mkl_provider(lambda name: binding.address_of_symbol(mkl.symbol(name)))
    except AttributeError:
        return None


def _scipy_openblas() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """(set_num_threads, get_num_threads) of SciPy's OpenBLAS once a module has loaded
    SciPy's LAPACK (before that nothing runs on it)."""
    if "scipy.linalg.cython_lapack" not in sys.modules:
        return None
    return openblas_functions(SCIPY_LIBS)


def single_threaded(call: Callable[..., Any]) -> Callable[..., Any]:
    """`call` with the products' BLAS, and SciPy's OpenBLAS if loaded, on one thread
    while it runs (unchanged where both already run one thread)."""
    return _on_threads(call, 1, scipy_too=True)


def _on_threads(call: Callable[..., Any], count: int, scipy_too: bool) -> Callable[..., Any]:
    """`call` with the products' BLAS on `count` threads for the calling thread (and
    SciPy's OpenBLAS, `scipy_too`), each put back after; unchanged where they are."""
    from .lib import cblas
    own = cblas.thread_functions()
    set_local = own[0] if own is not None and own[1]() != count else None
    scipy = (_scipy_openblas() if scipy_too and cblas.provider().name != "scipy-blas"
             else None)
    scipy_default = int(scipy[1]()) if scipy else count
    if set_local is None and scipy_default == count:
        return call

    def on_threads(*args: Any) -> Any:
        previous = set_local(min(count, cblas.thread_cap())) if set_local else 0
        if scipy_default != count:
            scipy[0](count)
        try:
            return call(*args)
        finally:
            if set_local:
                set_local(previous)
            if scipy_default != count:
                scipy[0](scipy_default)

    return on_threads


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
    """`call` with its BLAS on one thread while the machine is busier than its cores,
    on `cores` threads otherwise (MKL would take every physical core)."""
    one_thread = single_threaded(call)
    all_threads = _on_threads(call, cores, scipy_too=False)
    if one_thread is call and all_threads is call:  # (no such library)
        return call

    def blas_threads_if_idle(*args: Any) -> Any:
        return (one_thread if machine_busy(cores) else all_threads)(*args)

    return blas_threads_if_idle


def solver_flops(graph: Graph) -> float:
    """The flops of the largest single LU (2/3 n^3 for a square one) or triangular solve
    (n^2 per right-hand side) of an lu / triangular_solve eqn in `graph` (and its
    sub-graphs): what decides whether its LAPACK or BLAS call gets threads."""
    largest = 0.0
    for eqn in graph.eqns:
        if eqn.op.name == "lu":
            m, n = eqn.inputs[0].aval.shape[-2:]
            k = min(m, n)
            largest = max(largest, 2.0 * (m * n * k - (m + n) * k * k / 2 + k ** 3 / 3))
        elif eqn.op.name == "triangular_solve":
            a, b = eqn.inputs[0].aval, eqn.inputs[1].aval
            largest = max(largest, float(a.shape[-1]) * b.shape[-1] * b.shape[-2])
        for sub in subgraphs(eqn.params):
            largest = max(largest, solver_flops(sub))
    return largest


def imports_blas(source: str) -> bool:
    """Whether a generated module imports a library that calls `cpu.lib.cblas`."""
    return _BLAS_LIBRARIES.search(source) is not None


_BLAS_LIBRARIES = re.compile(
    r"^from tracer\.backend\.cpu\.lib\.(cblas|conv_entry|linalg|lu|triangular) import",
    re.MULTILINE)
