"""`subtract_product`: c -= a @ b in place, one BLAS gemm on 2-D views, for the blocked
kernels of `cpu.lib.linalg` and `cpu.lib.triangular`.

numba's `np.dot` takes contiguous operands (a view must be copied first) and returns a
new array that the caller then subtracts: two copies and a temporary per block. Here
the views go to BLAS as they are (a row stride is a leading dimension) with alpha -1
and beta 1, through numba's own `numba_xxgemm` (SciPy's BLAS, resolved by name: the
machine code stays valid in numba's disk cache).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN202

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload
from numba.np.linalg import ensure_blas

ensure_blas()  # numba_xxgemm forwards to SciPy's BLAS


def _gemm_signature(dtype: types.Type) -> types.Type:
    """numba_xxgemm(kind, transa, transb, m, n, k, alpha*, a*, lda, b*, ldb, beta*, c*,
    ldc), column-major as BLAS."""
    ptr = types.CPointer(dtype)
    return types.intc(types.char, types.char, types.char, types.intp, types.intp, types.intp,
                      ptr, ptr, types.intp, ptr, types.intp, ptr, ptr, types.intp)


_XXGEMM = {t: (types.ExternalFunction("numba_xxgemm", _gemm_signature(t)), ord(kind))
           for t, kind in ((types.float32, "s"), (types.float64, "d"),
                           (types.complex64, "c"), (types.complex128, "z"))}


def subtract_product(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """c -= a @ b in place; c (m, n), a (m, k), b (k, n) of one BLAS dtype, each row
    contiguous (any row stride)."""


@overload(subtract_product, jit_options=dict(cache=True))
def _subtract_product(c, a, b):
    fn, kind = _XXGEMM[c.dtype]
    dtype = np.dtype(str(c.dtype))
    size = dtype.itemsize

    def gemm(c, a, b):  # row-major c = a b is column-major cᵀ = bᵀ aᵀ
        m, n, k = c.shape[0], c.shape[1], a.shape[1]
        if m == 0 or n == 0 or k == 0:
            return
        alpha, beta = np.full(1, -1, dtype), np.ones(1, dtype)
        fn(kind, 110, 110, n, m, k, alpha.ctypes, b.ctypes, b.strides[0] // size,
           a.ctypes, a.strides[0] // size, beta.ctypes, c.ctypes, c.strides[0] // size)
    return gemm
