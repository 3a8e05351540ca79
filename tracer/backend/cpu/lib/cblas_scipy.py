"""`cpu.lib.cblas`'s last provider: its CBLAS interface over SciPy's BLAS, for a NumPy
without a bundled OpenBLAS (the route numba's own `np.dot` takes).

Each adapter is a `cfunc` with the signature of `cblas_?gemm_64` that calls numba's
`numba_xxgemm` (column-major, Fortran's conventions): the row-major product
c = op(a) op(b) is the column-major cᵀ = op(b)ᵀ op(a)ᵀ, the operands' storage read
as it is, with the same transpose flags.
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


def adapter_addresses() -> dict[str, int]:
    """The address of each dtype's adapter (compiled, or loaded from numba's cache)."""
    return {name: _adapter(name).address for name in _KINDS}


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
