"""`subtract_product`: c -= a @ b in place, one BLAS gemm on 2-D views, for the blocked
kernels of `cpu.lib.lu` and `cpu.lib.triangular`.

numba's `np.dot` takes contiguous operands (a view must be copied first) and returns a
new array that the caller then subtracts: two copies and a temporary per block. Here
the views go to BLAS as they are (a row stride is a leading dimension) with alpha -1
and beta 1, through `cpu.lib.cblas.gemm` (MKL or NumPy's OpenBLAS, resolved by name:
the machine code stays valid in numba's disk cache).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN202

from __future__ import annotations

import numpy as np
from numba import njit

from .cblas import NO_TRANS, gemm


@njit(cache=True, nogil=True, error_model="numpy")
def subtract_product(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """c -= a @ b in place; c (m, n), a (m, k), b (k, n) of one BLAS dtype, each row
    contiguous (any row stride)."""
    m, n, k = c.shape[0], c.shape[1], a.shape[1]
    if m == 0 or n == 0 or k == 0:
        return
    size = c.itemsize
    gemm(NO_TRANS, NO_TRANS, m, n, k, c.dtype.type(-1), a, a.strides[0] // size, b,
         b.strides[0] // size, c.dtype.type(1), c, c.strides[0] // size)
