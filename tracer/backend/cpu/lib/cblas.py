"""Matrix products for compiled code: one CBLAS gemm (row-major, 64-bit sizes), bound
in each process to the fastest BLAS it has.

Compiled code names only tracer's symbols, `tracer_cblas_sgemm` (d, c, z) with the
signature of CBLAS's ILP64 `cblas_sgemm_64`, `tracer_cblas_?trsm` (`cblas_?trsm_64`),
the LU `tracer_lapack_?getrf` (LAPACK's Fortran ILP64 `?getrf_64`) and
`tracer_blas_threads_local` (`openblas_set_num_threads_local`'s: set the count,
return the previous one); importing this module binds them
(`llvmlite.binding.add_symbol`) to the provider's functions. So numba's disk cache
holds one machine code whatever the provider (a symbol is resolved when the code is
loaded; a ctypes pointer would be baked in), and the provider can differ between the
process that compiled and the one that loads.

Providers, the first present wins:

- Intel MKL (`cpu.lib.mkl`, the `mkl` extra, unless `config.use_mkl` is off), bound
  by the cpu backend before it compiles or loads a module (`cpu.blas.bind_fastest`;
  this module does not import the loader, so ahead-of-time builds can copy it):
  `cblas_?gemm_64`, threads through `MKL_Set_Num_Threads_Local` (per calling thread);
- NumPy's bundled OpenBLAS (`numpy.libs/libscipy_openblas64_*.so`, in every NumPy
  wheel for Linux): `scipy_cblas_?gemm64_`;
- SciPy's BLAS through numba's `numba_xxgemm` (what numba's `np.dot` calls), for a
  NumPy built without its own OpenBLAS: small adapters here (`_ADAPTERS`).

Measured one thread each on a 2-core Sapphire Rapids Xeon under load, paired rounds
(milliseconds, SciPy's OpenBLAS 0.3.30 / NumPy's OpenBLAS 0.3.31 / MKL 2026.2 /
torch's MKL): sgemm 1024³ 28.7 / 27.6 / 24.5 / 24.6; dgemm 1024³ 58.7 / 58.9 / 51.4 /
51.3; 256x1024 by 1024x1024 (the MLP's) 8.2 / 7.5 / 6.5 / 6.7; 32 products 64x256 by
256x784 (a 1x1 convolution, image by image) 28.3 / 20.1 / 12.8 / 11.2.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from llvmlite import binding
from numba import cfunc, njit, types
from numba.extending import overload

TYPES = ("float32", "float64", "complex64", "complex128")
_LETTER = dict(zip(TYPES, "sdcz"))
GEMM_SYMBOLS = {t: f"tracer_cblas_{_LETTER[t]}gemm" for t in TYPES}
TRSM_SYMBOLS = {t: f"tracer_cblas_{_LETTER[t]}trsm" for t in TYPES}
GETRF_SYMBOLS = {t: f"tracer_lapack_{_LETTER[t]}getrf" for t in TYPES}
TRSM_PAYS_SYMBOL = "tracer_blas_trsm_pays"
GETRF_PAYS_SYMBOL = "tracer_lapack_getrf_pays"
THREADS_SYMBOL = "tracer_blas_threads_local"
_THREAD_SETTER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
_THREAD_GETTER = ctypes.CFUNCTYPE(ctypes.c_int)


@dataclass(frozen=True)
class Provider:
    """Where the symbols point: the library's name, its gemm and trsm addresses by dtype
    name, whether its trsm beats tracer's blocked triangular solve on its gemm
    (`cpu.lib.triangular`), the addresses of its `int set_threads_local(int)` (returns
    the previous count; 0: the library's default) and `int get_threads(void)`, 0 where
    it has none, its ILP64 Fortran getrf addresses and whether they beat tracer's
    blocked LU on large matrices (`cpu.lib.lu`); for a library whose thread pool
    does not survive a fork (MKL on GNU OpenMP: a threaded call in the child waits for
    it forever), its process-wide `void set_threads(int)`, which a forked child calls
    with 1."""

    name: str
    gemm: dict[str, int]
    trsm: dict[str, int]
    trsm_pays: bool
    threads_local: int
    get_threads: int
    getrf: dict[str, int]
    getrf_pays: bool
    fork_unsafe_threads: int = 0  # `void set_threads(int)` where threads die in a fork


def bundled_openblas() -> str | None:
    """The OpenBLAS shared library inside NumPy's installation, if it has one."""
    found = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                   "libscipy_openblas64_*.so"))
    return os.path.realpath(found[0]) if found else None


def _address(library: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(library, name), ctypes.c_void_p).value or 0


def _optional(library: ctypes.CDLL, *names: str) -> int:
    """The address of the first of `names` that `library` has, 0 if none."""
    return next((_address(library, n) for n in names if hasattr(library, n)), 0)


def mkl_provider(address_of: Callable[[str], int]) -> Provider:
    """MKL's functions, given the address of each by name in the loaded libmkl_rt."""
    gemm = {t: address_of(f"cblas_{_LETTER[t]}gemm_64") for t in TYPES}
    trsm = {t: address_of(f"cblas_{_LETTER[t]}trsm_64") for t in TYPES}
    getrf = {t: address_of(f"{_LETTER[t]}getrf_64") for t in TYPES}
    return Provider("mkl", gemm, trsm, True, address_of("MKL_Set_Num_Threads_Local"),
                    address_of("MKL_Get_Max_Threads"), getrf, True,
                    address_of("MKL_Set_Num_Threads"))


def _numpy_openblas() -> Provider | None:
    path = bundled_openblas()
    if path is None:
        return None
    library = ctypes.CDLL(path)
    try:
        gemm = {t: _address(library, f"scipy_cblas_{_LETTER[t]}gemm64_") for t in TYPES}
        trsm = {t: _address(library, f"scipy_cblas_{_LETTER[t]}trsm64_") for t in TYPES}
        getrf = {t: _address(library, f"scipy_{_LETTER[t]}getrf_64_") for t in TYPES}
    except AttributeError:  # another build of it: not the interface bound here
        return None
    # (its getrf: 3.0 ms on a 512x512 matrix, one thread, against 2.9 for tracer's LU)
    return Provider("numpy-openblas", gemm, trsm, False,
                    _optional(library, "openblas_set_num_threads_local"),
                    _optional(library, "scipy_openblas_get_num_threads64_"), getrf, False)


def _scipy_blas() -> Provider:
    from . import cblas_scipy  # (compiles or loads the adapters: only where needed)
    no_getrf = dict.fromkeys(TYPES, _no_getrf().address)
    return Provider("scipy-blas", *cblas_scipy.adapter_addresses(), False,
                    *cblas_scipy.thread_functions(), no_getrf, False)


_bound: list[Provider] = []


def bind(found: Provider) -> None:
    """Point tracer's symbols at `found`'s functions: code linked from then on calls it
    (code loaded earlier keeps the addresses it was linked with)."""
    for dtype in TYPES:
        binding.add_symbol(GEMM_SYMBOLS[dtype], found.gemm[dtype])
        binding.add_symbol(TRSM_SYMBOLS[dtype], found.trsm[dtype])
        binding.add_symbol(GETRF_SYMBOLS[dtype], found.getrf[dtype])
    binding.add_symbol(TRSM_PAYS_SYMBOL, _constant(int(found.trsm_pays)).address)
    binding.add_symbol(GETRF_PAYS_SYMBOL, _constant(int(found.getrf_pays)).address)
    binding.add_symbol(THREADS_SYMBOL, found.threads_local or _keep_threads().address)
    _bound[:] = [found]


@functools.cache
def _keep_threads() -> Any:
    """Stands in for the thread setter of a BLAS that has none (compiled only there)."""
    return cfunc(types.intc(types.intc), cache=True)(_no_thread_setter)


def _no_thread_setter(count: int) -> int:
    return 0


@functools.cache
def _no_getrf() -> Any:
    """Stands in for the getrf of a BLAS that does not export one (its `getrf_pays` is
    False, so compiled code never calls it): it factors nothing."""
    return cfunc(_GETRF_SIGNATURE, cache=True)(_factor_nothing)


def _factor_nothing(m: int, n: int, a: int, lda: int, ipiv: int, info: int) -> None:
    return None


@functools.cache
def _constant(value: int) -> Any:
    """A C function returning `value` (0 or 1): a fact about the bound provider that
    compiled code reads at run time."""
    return cfunc(types.int32(), cache=True)(_one if value else _zero)


def _one() -> int:
    return 1


def _zero() -> int:
    return 0



def default_provider() -> Provider:
    """NumPy's OpenBLAS, else SciPy's BLAS."""
    return _numpy_openblas() or _scipy_blas()


def provider() -> Provider:
    """The provider tracer's symbols point at: the default one until the cpu backend
    binds MKL (`cpu.blas.bind_fastest`)."""
    if not _bound:
        bind(default_provider())
    return _bound[0]


def thread_cap() -> int:
    """The most BLAS threads a call may ask for: 1 in a child forked where the bound
    library's threads do not survive a fork, unlimited otherwise."""
    return _thread_cap[0]


_thread_cap = [1 << 30]


def _after_fork_in_child() -> None:
    setter = _bound[0].fork_unsafe_threads if _bound else 0
    if setter:
        ctypes.CFUNCTYPE(None, ctypes.c_int)(setter)(1)
        _thread_cap[0] = 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def thread_functions() -> tuple[Callable[[int], int], Callable[[], int]] | None:
    """The provider's (set_threads_local(count) -> previous, get_threads()) for Python
    callers (the cpu backend's thread rule), None where it lacks either."""
    found = provider()
    if not (found.threads_local and found.get_threads):
        return None
    return _THREAD_SETTER(found.threads_local), _THREAD_GETTER(found.get_threads)


# --------------------------------------------------------------------------- kernels
# (numba kernels: their argument types come from the call, so no annotations)
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_JIT = dict(cache=True, nogil=True, error_model="numpy")


def _gemm_signature(dtype: types.Type) -> types.Type:
    """CBLAS's ILP64 gemm: layout and transposes as C ints, sizes int64; alpha and beta
    by value for real dtypes, by pointer for complex ones."""
    scalar = dtype if isinstance(dtype, types.Float) else types.voidptr
    i32, i64, ptr = types.int32, types.int64, types.voidptr
    return types.void(i32, i32, i32, i64, i64, i64, scalar, ptr, i64, ptr, i64, scalar, ptr,
                      i64)


_GEMM = {t: types.ExternalFunction(GEMM_SYMBOLS[t], _gemm_signature(getattr(types, t)))
         for t in TYPES}
_set_threads_local = types.ExternalFunction(THREADS_SYMBOL, types.intc(types.intc))


def _trsm_signature(dtype: types.Type) -> types.Type:
    """CBLAS's ILP64 trsm: layout, side, uplo, transpose and diag as C ints, sizes int64;
    alpha by value for real dtypes, by pointer for complex ones."""
    scalar = dtype if isinstance(dtype, types.Float) else types.voidptr
    i32, i64, ptr = types.int32, types.int64, types.voidptr
    return types.void(i32, i32, i32, i32, i32, i64, i64, scalar, ptr, i64, ptr, i64)


_TRSM = {t: types.ExternalFunction(TRSM_SYMBOLS[t], _trsm_signature(getattr(types, t)))
         for t in TYPES}
_trsm_pays = types.ExternalFunction(TRSM_PAYS_SYMBOL, types.int32())
# LAPACK's Fortran ILP64 getrf (m*, n*, a*, lda*, ipiv*, info*): the same for every dtype
_GETRF_SIGNATURE = types.void(*[types.voidptr] * 6)
_GETRF = {t: types.ExternalFunction(GETRF_SYMBOLS[t], _GETRF_SIGNATURE) for t in TYPES}
_getrf_pays = types.ExternalFunction(GETRF_PAYS_SYMBOL, types.int32())
LEFT, RIGHT, UPPER, LOWER, NON_UNIT, UNIT = 141, 142, 121, 122, 131, 132


def gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):  # noqa: ANN001, ANN201
    """c = alpha op(a) op(b) + beta c, row-major: CBLAS gemm on the arrays' first
    elements (`x[offset:]` for a block of a flat array), BLAS dtypes only."""


@overload(gemm, jit_options=_JIT)
def _gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):  # noqa: ANN001, ANN202
    call = _GEMM[str(c.dtype)]
    dtype = np.dtype(str(c.dtype))
    if dtype.kind == "f":
        def real(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
            call(ROW_MAJOR, trans_a, trans_b, m, n, k, alpha, a.ctypes, lda, b.ctypes, ldb,
                 beta, c.ctypes, ldc)
        return real

    def complex_(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        scalars = np.empty(2, dtype)
        scalars[0], scalars[1] = alpha, beta
        call(ROW_MAJOR, trans_a, trans_b, m, n, k, scalars[0:].ctypes, a.ctypes, lda,
             b.ctypes, ldb, scalars[1:].ctypes, c.ctypes, ldc)
    return complex_


def trsm(left, lower, trans, unit, m, n, a, lda, b, ldb):  # noqa: ANN001, ANN201
    """b (m, n) <- op(a)⁻¹ b (`left`) or b op(a)⁻¹, row-major, with a the lower (upper)
    triangle of an (m, m) or (n, n) matrix; op: `trans` (NO_TRANS, TRANS, or 113 for
    the conjugate transpose); `unit`: a unit diagonal (not read)."""


@overload(trsm, jit_options=_JIT)
def _trsm(left, lower, trans, unit, m, n, a, lda, b, ldb):  # noqa: ANN001, ANN202
    call = _TRSM[str(b.dtype)]
    dtype = np.dtype(str(b.dtype))

    if dtype.kind == "f":
        def real(left, lower, trans, unit, m, n, a, lda, b, ldb):
            call(ROW_MAJOR, LEFT if left else RIGHT, LOWER if lower else UPPER, trans,
                 UNIT if unit else NON_UNIT, m, n, b.dtype.type(1), a.ctypes, lda, b.ctypes,
                 ldb)
        return real

    def complex_(left, lower, trans, unit, m, n, a, lda, b, ldb):
        one = np.ones(1, dtype)
        call(ROW_MAJOR, LEFT if left else RIGHT, LOWER if lower else UPPER, trans,
             UNIT if unit else NON_UNIT, m, n, one.ctypes, a.ctypes, lda, b.ctypes, ldb)
    return complex_


@njit(**_JIT)
def trsm_pays():  # noqa: ANN201
    """Whether the bound BLAS's trsm beats tracer's own triangular solve (`Provider`)."""
    return _trsm_pays() != 0


def getrf(at, ipiv):  # noqa: ANN001, ANN201
    """LAPACK's partial-pivoting LU, in place, of the (m, n) matrix whose transpose is
    the C-contiguous (n, m) array `at` (LAPACK's column-major storage: no copy); ipiv
    (int64, min(m, n)) gets its 1-based row swaps. LAPACK's info (> 0: that diagonal
    of U is exactly zero)."""


@overload(getrf, jit_options=_JIT)
def _getrf(at, ipiv):  # noqa: ANN001, ANN202
    call = _GETRF[str(at.dtype)]

    def factor(at, ipiv):  # noqa: ANN001, ANN202
        sizes = np.empty(4, np.int64)  # m, n, lda, info (Fortran: by reference)
        sizes[0], sizes[1], sizes[2], sizes[3] = at.shape[1], at.shape[0], max(
            at.shape[1], 1), 0
        call(sizes[0:].ctypes, sizes[1:].ctypes, at.ctypes, sizes[2:].ctypes, ipiv.ctypes,
             sizes[3:].ctypes)
        return sizes[3]
    return factor


@njit(**_JIT)
def getrf_pays():  # noqa: ANN201
    """Whether the bound library's getrf beats tracer's own LU on large matrices."""
    return _getrf_pays() != 0


@njit(**_JIT)
def blas_threads(count):  # noqa: ANN001, ANN201
    """Set the BLAS thread count of the calling thread; the previous one. 0 drops the
    thread's own count (the library's global count applies again), so
    `blas_threads(blas_threads(n))` restores whatever was there, a 0 included: read as
    "keep", it once left MKL on one thread for every later call of the thread."""
    return _set_threads_local(max(count, 0))


@njit(**_JIT)
def _layout(x):  # noqa: ANN001, ANN202
    """(NO_TRANS or TRANS, leading dimension) of a 2-D array as BLAS reads it, or (0, 0)
    when no leading dimension describes it."""
    rows, cols = x.shape
    size = x.itemsize
    s0, s1 = x.strides
    if (cols <= 1 or s1 == size) and s0 % size == 0:
        ld = s0 // size if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return NO_TRANS, ld
    if (rows <= 1 or s0 == size) and s1 % size == 0:
        ld = s1 // size if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return TRANS, ld
    return 0, 0


@njit(**_JIT)
def blas_matmul(a, b, out):  # noqa: ANN001, ANN201
    """out = a @ b for 2-D arrays of one BLAS dtype (`np.dot(a, b, out)`): a and b in
    any layout (copied first when no leading dimension describes them), out rows with
    unit stride (else the product goes through a temporary)."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:  # (loops: an array assignment compiles a shape check's error path)
        for i in range(m):
            for j in range(n):
                out[i, j] = 0
        return
    ta, lda = _layout(a)
    if ta == 0:
        a = np.ascontiguousarray(a)
        ta, lda = NO_TRANS, k
    tb, ldb = _layout(b)
    if tb == 0:
        b = np.ascontiguousarray(b)
        tb, ldb = NO_TRANS, n
    to, ldo = _layout(out)
    one, zero = out.dtype.type(1), out.dtype.type(0)
    if to == NO_TRANS:
        gemm(ta, tb, m, n, k, one, a, lda, b, ldb, zero, out, ldo)
        return
    result = np.empty((m, n), out.dtype)
    gemm(ta, tb, m, n, k, one, a, lda, b, ldb, zero, result, n)
    for i in range(m):
        for j in range(n):
            out[i, j] = result[i, j]


provider()  # the symbols bound before any machine code naming them is loaded
