"""`cpu.lib.cblas`'s last provider: its CBLAS interface over SciPy's BLAS, for a NumPy
without a bundled OpenBLAS (the route numba's own `np.dot` takes).

Each adapter is a `cfunc` with the signature of `cblas_?gemm_64` / `cblas_?trsm_64`
that calls SciPy's Fortran routine (column-major): gemm through numba's
`numba_xxgemm`, trsm through `scipy.linalg.cython_blas`'s address, registered under
`tracer_scipy_?trsm` (by name: the adapters stay valid in numba's disk cache). Row-major
storage read as column-major is the transpose: the product c = op(a) op(b) is
cᵀ = op(b)ᵀ op(a)ᵀ with the same transpose flags, and a solve from the left is one
from the right with the other triangle.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import ctypes

import numpy as np
from numba import cfunc, njit, types
from numba.np.linalg import ensure_blas

ensure_blas()  # numba_xxgemm forwards to SciPy's BLAS

_KINDS = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


@njit(cache=True)
def _flag(transpose):
    """CBLAS's NoTrans / Trans / ConjTrans as Fortran's 'N' / 'T' / 'C'."""
    return 110 if transpose == 111 else (116 if transpose == 112 else 99)


def _xxgemm() -> types.ExternalFunction:
    """numba_xxgemm(kind, transa, transb, m, n, k, alpha*, a*, lda, b*, ldb, beta*, c*,
    ldc)."""
    ptr = types.voidptr
    return types.ExternalFunction("numba_xxgemm", types.intc(
        types.char, types.char, types.char, types.intp, types.intp, types.intp,
        ptr, ptr, types.intp, ptr, types.intp, ptr, ptr, types.intp))


def _cblas_signature(dtype: types.Type) -> types.Type:
    scalar = dtype if isinstance(dtype, types.Float) else types.voidptr
    i32, i64, ptr = types.int32, types.int64, types.voidptr
    return types.void(i32, i32, i32, i64, i64, i64, scalar, ptr, i64, ptr, i64, scalar, ptr,
                      i64)


def _adapter(name: str):
    numba_type = getattr(types, name)
    call, kind, dtype = _xxgemm(), ord(_KINDS[name]), np.dtype(name)
    real = dtype.kind == "f"

    def gemm(layout, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        scalars = np.empty(2, dtype)
        if real:
            scalars[0], scalars[1] = alpha, beta
            call(kind, _flag(trans_b), _flag(trans_a), n, m, k, scalars[0:].ctypes, b, ldb,
                 a, lda, scalars[1:].ctypes, c, ldc)
        else:
            call(kind, _flag(trans_b), _flag(trans_a), n, m, k, alpha, b, ldb, a, lda,
                 beta, c, ldc)
    return cfunc(_cblas_signature(numba_type), cache=True)(gemm)


def _fortran_trsm(name: str) -> types.ExternalFunction:
    """SciPy's ?trsm(side*, uplo*, transa*, diag*, m*, n*, alpha*, a*, lda*, b*, ldb*)."""
    from llvmlite import binding
    from numba.extending import get_cython_function_address
    symbol = f"tracer_scipy_{_KINDS[name]}trsm"
    binding.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_blas",
                                                           f"{_KINDS[name]}trsm"))
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * 11))


def _trsm_signature(dtype: types.Type) -> types.Type:
    scalar = dtype if isinstance(dtype, types.Float) else types.voidptr
    i32, i64, ptr = types.int32, types.int64, types.voidptr
    return types.void(i32, i32, i32, i32, i32, i64, i64, scalar, ptr, i64, ptr, i64)


def _trsm_adapter(name: str):
    numba_type = getattr(types, name)
    call, dtype = _fortran_trsm(name), np.dtype(name)
    real = dtype.kind == "f"

    def trsm(layout, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb):
        flags = np.empty(4, np.uint8)  # side, uplo, transa, diag as Fortran's letters
        flags[0] = 82 if side == 141 else 76          # left <-> 'R', right <-> 'L'
        flags[1] = 85 if uplo == 122 else 76          # lower <-> 'U', upper <-> 'L'
        flags[2] = _flag(trans)
        flags[3] = 85 if diag == 132 else 78          # 'U'nit or 'N'on-unit
        sizes = np.empty(4, np.int32)
        sizes[0], sizes[1], sizes[2], sizes[3] = n, m, lda, ldb
        scalar = np.empty(1, dtype)
        if real:
            scalar[0] = alpha
        call(flags[0:].ctypes, flags[1:].ctypes, flags[2:].ctypes, flags[3:].ctypes,
             sizes[0:].ctypes, sizes[1:].ctypes, scalar.ctypes if real else alpha, a,
             sizes[2:].ctypes, b, sizes[3:].ctypes)
    return cfunc(_trsm_signature(numba_type), cache=True)(trsm)


def adapter_addresses() -> tuple[dict[str, int], dict[str, int]]:
    """The addresses of each dtype's gemm and trsm adapters (compiled, or loaded from
    numba's cache)."""
    return ({name: _adapter(name).address for name in _KINDS},
            {name: _trsm_adapter(name).address for name in _KINDS})


def thread_functions() -> tuple[int, int]:
    """The addresses of `openblas_set_num_threads_local` and `openblas_get_num_threads`
    in SciPy's BLAS, 0 where it has none (ctypes looks a symbol up in the module's
    dependencies too: the BLAS it links)."""
    from scipy.linalg import cython_blas
    blas = ctypes.CDLL(cython_blas.__file__)
    return tuple(next((ctypes.cast(getattr(blas, n), ctypes.c_void_p).value or 0
                       for n in names if hasattr(blas, n)), 0)
                 for names in (("openblas_set_num_threads_local",
                                "scipy_openblas_set_num_threads_local"),
                               ("openblas_get_num_threads", "scipy_openblas_get_num_threads")))
