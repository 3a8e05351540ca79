"""numba kernel of `triangular_solve` for the cpu backend (the reference:
`tracer.ops.decomp_impl.triangular_solve_impl`; only op(a)'s triangle is read, and
not its diagonal when it is a unit one).

Each problem is t x = rhs with t triangular. Left-side problems with a as it is (no
transpose, no conjugate: what `solve` and `cholesky` solves make) are solved on a[p]
itself, in the output's rows: no copy of the matrix. The others copy op(a) (or, for
x op(a) = b, op(a)ᵀ, with bᵀ) once per problem. The solve halves recursively (the
first half of the rows, then the rest less the first half's contribution as one BLAS
gemm, `subtract_product`) down to blocks of `BLOCK` rows solved by substitution,
written as a loop (`solve_in_place`). Measured with one BLAS thread, paired with
the kernel before this one (32-row blocked products on a copy), on a loaded machine:
512x512 with 512 right-hand sides 2x faster (7.9 -> 4.0 ms; torch's MKL trsm 2.9 ms),
with one right-hand side 9x (0.26 -> 0.03 ms: the copy of the matrix was the cost).
From order BLAS_MIN on, where the bound BLAS is MKL (`cpu.lib.cblas.trsm_pays`), its
trsm solves instead, on every side, transpose and conjugate transpose (conjugate alone
has no BLAS flag): 512x512 with 512 right-hand sides 3.3 -> 2.0 ms, one thread,
paired (torch's MKL 2.2); NumPy's OpenBLAS trsm is slower than this kernel on it.
Batches of small matrices (as many right-hand sides as rows, one thread): MKL's trsm
is faster from order 16 (5000 of 16: 4.6 -> 3.7 ms; 1000 of 32: 3.7 -> 2.2 ms, torch
2.1), the substitution below it (20000 of 4: 2.6-2.8 ms against 4.3 on MKL; 8: even).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .batches import batch_range, copy_matrix
from .cblas import NO_TRANS, TRANS, trsm, trsm_pays
from .gemm_update import subtract_product
from .pool_threads import pool_thread_count

BLOCK = 32   # rows of the blocks solved by substitution
NARROW = 8   # fewer right-hand sides than this: one column at a time
BLAS_MIN = 16  # from this order on, the BLAS's trsm where it pays (`cblas.trsm_pays`)
CONJ_TRANS = 113  # CBLAS's conjugate transpose

_JIT = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_JIT)
def _substitute(t, x, i0, i1, unit, upper):
    """Rows i0:i1 of x <- solved against the diagonal block t[i0:i1, i0:i1] (upper:
    backward, from the last row)."""
    k = x.shape[1]
    for step in range(i1 - i0):
        i = i1 - 1 - step if upper else i0 + step
        lo, hi = (i + 1, i1) if upper else (i0, i)
        xi = x[i]
        if k < NARROW:
            for c in range(k):
                s = xi[c]
                for j in range(lo, hi):
                    s -= t[i, j] * x[j, c]
                xi[c] = s if unit else s / t[i, i]
            continue
        j = lo
        while j + 4 <= hi:  # four rows per pass over xi: a quarter of its loads and
            # stores (1000 32x32 solves with 32 right-hand sides 1.3x faster)
            f0, f1, f2, f3 = t[i, j], t[i, j + 1], t[i, j + 2], t[i, j + 3]
            x0, x1, x2, x3 = x[j], x[j + 1], x[j + 2], x[j + 3]
            for c in range(k):  # (from 0: numba vectorizes it)
                xi[c] -= (f0 * x0[c] + f1 * x1[c]) + (f2 * x2[c] + f3 * x3[c])
            j += 4
        for jj in range(j, hi):
            f = t[i, jj]
            xj = x[jj]
            for c in range(k):
                xi[c] -= f * xj[c]
        if not unit:
            d = t[i, i]
            for c in range(k):
                xi[c] /= d


@njit(**_JIT)
def _rows(first: int, last: int, n: int, upper: bool) -> tuple[int, int]:
    """The rows of blocks first..last-1 in solve order (upper: counted from the end)."""
    if upper:
        return max(n - last * BLOCK, 0), n - first * BLOCK
    return first * BLOCK, min(last * BLOCK, n)


@njit(**_JIT)
def solve_in_place(t, x, unit, upper):
    """x <- t⁻¹ x, t lower (upper) triangular: only that triangle is read.

    The blocks are solved in order; after block q, the aligned run of s blocks it
    completes (s: the lowest set bit of q + 1) updates the next s blocks with one gemm.
    That is the recursive halving (solve the first half, subtract its contribution from
    the second with one product, solve the second) without recursion, which numba's
    disk cache cannot reload: every earlier block reaches every later one once, through
    the one run that holds the first and is followed by a run that holds the second."""
    n = x.shape[0]
    blocks = (n + BLOCK - 1) // BLOCK
    if x.shape[1] == 0:
        return
    for q in range(blocks):
        i0, i1 = _rows(q, q + 1, n, upper)
        _substitute(t, x, i0, i1, unit, upper)
        s = (q + 1) & -(q + 1)
        if q + 1 < blocks:
            d0, d1 = _rows(q + 1 - s, q + 1, n, upper)
            r0, r1 = _rows(q + 1, q + 1 + s, n, upper)
            subtract_product(x[r0:r1], t[r0:r1, d0:d1], x[d0:d1])


@njit(**_JIT)
def _blas_solve(a, b, out, p, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    """Problem p of triangular_solve_batch by the BLAS's trsm, in the output's rows (b
    copied in)."""
    trans = (CONJ_TRANS if conjugate_a else TRANS) if transpose_a else NO_TRANS
    rows, cols = b.shape[1], b.shape[2]
    x = out[p]
    for i in range(rows):  # (loops: an array assignment compiles an error path)
        for c in range(cols):
            x[i, c] = b[p, i, c]
    if rows and cols:
        trsm(left_side, lower, trans, unit_diagonal, rows, cols, a[p], a.shape[2], x, cols)


@njit(**_JIT)
def _copy_solve(a, b, out, p, t, x, left_side, lower, transpose_a, conjugate_a,
                unit_diagonal):
    """Problem p by substitution on a copy t of op(a) (or op(a)ᵀ, with bᵀ in x)."""
    n = a.shape[1]
    flip = transpose_a != (not left_side)      # t[i, j] reads a[j, i]
    k = x.shape[1]
    for i in range(n):
        for j in range(n):
            v = a[p, j, i] if flip else a[p, i, j]
            t[i, j] = np.conj(v) if conjugate_a else v
        for c in range(k):
            x[i, c] = b[p, i, c] if left_side else b[p, c, i]
    solve_in_place(t, x, unit_diagonal, lower == flip)
    for i in range(n):
        for c in range(k):
            if left_side:
                out[p, i, c] = x[i, c]
            else:
                out[p, c, i] = x[i, c]


@njit(**_JIT)
def _solve_range(a, b, out, first, last, left_side, lower, transpose_a, conjugate_a,
                 unit_diagonal):
    """triangular_solve_batch of problems first..last-1, with their own scratch."""
    if a.shape[1] >= BLAS_MIN and (transpose_a or not conjugate_a) and trsm_pays():
        for p in range(first, last):
            _blas_solve(a, b, out, p, left_side, lower, transpose_a, conjugate_a,
                        unit_diagonal)
        return
    if left_side and not transpose_a and not conjugate_a:
        for p in range(first, last):
            copy_matrix(b[p], out[p])
            solve_in_place(a[p], out[p], unit_diagonal, not lower)
        return
    n = a.shape[1]
    t = np.zeros((n, n), a.dtype)
    x = np.empty((n, b.shape[2] if left_side else b.shape[1]), b.dtype)
    for p in range(first, last):
        _copy_solve(a, b, out, p, t, x, left_side, lower, transpose_a, conjugate_a,
                    unit_diagonal)


@njit(**_JIT)
def triangular_solve_batch(a, b, out, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal):
    """out[i] = op(a[i])⁻¹ b[i] (left_side) or b[i] op(a[i])⁻¹."""
    _solve_range(a, b, out, np.int64(0), a.shape[0], bool(left_side), bool(lower),
                 bool(transpose_a), bool(conjugate_a), bool(unit_diagonal))  # (`batches`)


@njit(parallel=True, **_JIT)
def triangular_solve_batch_parallel(a, b, out, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
    """triangular_solve_batch with the batch split into one run of problems per thread
    (the emitter picks it for batches of several problems)."""
    parts = min(a.shape[0], pool_thread_count())
    for q in prange(parts):
        first, last = batch_range(a.shape[0], parts, np.int64(q))
        _solve_range(a, b, out, first, last, bool(left_side), bool(lower),
                     bool(transpose_a), bool(conjugate_a), bool(unit_diagonal))
