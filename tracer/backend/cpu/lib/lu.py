"""numba kernels of `lu` (`tracer.ops.lu`, the reference `tracer.ops.decomp_impl.lu_impl`:
LAPACK's pivot rule, the first row of largest |re| + |im|), on C-contiguous batches of
matrices (batch, m, n) into preallocated outputs.

- The blocked LU: partial pivoting on panels of `BLOCK` columns, the trailing
  update one in-place BLAS gemm (`cpu.lib.gemm_update`). Its inner loops run over
  views from index 0: numba vectorizes `for c in range(w)` but not
  `for c in range(c0, c1)` (a start it cannot prove non-negative keeps the
  negative-index wraparound in the loop). Measured with one BLAS thread: 1000 32x32
  LUs 2x, a 512x512 one 2.4x faster than with scalar loops and np.dot; the 512x512
  one is then on par with LAPACK getrf (2.9 ms; SciPy's OpenBLAS 3.0, torch's MKL
  3.0, paired); 64- or 96-column panels were slower (3.8, 4.4 ms).
  From order LAPACK_MIN on, where the bound library's getrf pays (MKL:
  `cpu.lib.cblas.getrf_pays`), a finite matrix is factored by LAPACK's getrf instead,
  on its transpose (LAPACK's column-major storage of it; strips of TILE rows each way,
  the finiteness check folded into the first): MKL threads its panels, the blocked LU
  only its updates. 512x512, one thread: 1.99 ms (LAPACKE's row-major getrf 2.02, the
  blocked LU 2.27, MKL's getrf alone 1.51); two threads 1.55 (torch 1.20: it
  transposes once and keeps the factor column-major). One thread, 64-256: the blocked
  LU 18 / 74 / 433 us, LAPACKE 22 / 89 / 389.
- `transposed` (what the lowering makes of `solve`'s LU of aᵀ, `numba/lower_lu.py`):
  the LU of aᵀ with its factor stored transposed. getrf runs on a plain copy of a (a's
  row-major memory is the column-major aᵀ) and its result is the output as it stands;
  small ones (`_lu_small_transposed`) factor in place along b's rows; between them the
  blocked LU runs on a transposed copy. `solve` 512x512, both cores, interleaved with
  torch: 1.91 -> 1.58 ms (torch 1.71).
- `lu_batch_parallel` (and `triangular_solve_batch_parallel`): the batch in one run of
  matrices per thread of numba's pool (`cpu.lib.batches`), where the emitter allows
  threads (`cpu.emit.decomp`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .batches import batch_range, copy_matrix
from .cblas import getrf, getrf_pays
from .gemm_update import subtract_product
from .pool_threads import pool_thread_count

BLOCK = 32        # columns per panel of the blocked LU
LAPACK_MIN = 192  # from this order on, the bound library's getrf where it pays (docstring)
TILE = 16         # rows per strip of the transposes around getrf

_JIT = dict(cache=True, error_model="numpy", nogil=True)


@njit(**_JIT)
def _magnitude(v: complex) -> float:
    return abs(v.real) + abs(v.imag)


@njit(**_JIT)
def _pivot(v: np.ndarray, start: int) -> int:
    """LAPACK's i?amax over v[start:] (contiguous): the first index of the largest
    |re| + |im|, only a strictly larger one moving it (a NaN never does)."""
    p, best = start, _magnitude(v[start])
    for i in range(start + 1, v.shape[0]):
        x = _magnitude(v[i])
        if x > best:
            best, p = x, i
    return p


@njit(**_JIT)
def _lu_panel(a: np.ndarray, piv: np.ndarray, perm: np.ndarray, j0: int, j1: int,
              work: np.ndarray) -> None:
    """Unblocked LU of columns j0:j1 (rows j0:), done on a transposed copy so that the
    pivot search and the updates run along contiguous memory; the swaps then move
    whole rows of a, and the factored panel is copied back over them."""
    m = a.shape[0]
    w, h = j1 - j0, m - j0
    p_t = work[:w * h].reshape((w, h))  # contiguous rows: unit-stride inner loops
    for r in range(h):
        for c in range(w):
            p_t[c, r] = a[j0 + r, j0 + c]
    for jj in range(w):
        col = p_t[jj]
        p = _pivot(col, jj)
        piv[j0 + jj] = j0 + p
        if p != jj:
            for c in range(w):
                p_t[c, jj], p_t[c, p] = p_t[c, p], p_t[c, jj]
            _swap_rows(a, perm, j0 + jj, j0 + p)
        below = col[jj + 1:]
        d = col[jj]
        if d != 0:
            for r in range(h - jj - 1):
                below[r] /= d
        for c in range(jj + 1, w):
            f = p_t[c, jj]
            other = p_t[c, jj + 1:]
            for r in range(h - jj - 1):
                other[r] -= f * below[r]
    for r in range(h):
        for c in range(w):
            a[j0 + r, j0 + c] = p_t[c, r]


@njit(**_JIT)
def _swap_rows(a: np.ndarray, perm: np.ndarray, i: int, j: int) -> None:
    for c in range(a.shape[1]):
        a[i, c], a[j, c] = a[j, c], a[i, c]
    perm[i], perm[j] = perm[j], perm[i]


@njit(**_JIT)
def _update_rows(a: np.ndarray, j: int, i0: int, i1: int, c0: int, c1: int) -> None:
    """a[i, c0:c1] -= a[i, j] * a[j, c0:c1] for rows i0 <= i < i1 (over views, from
    index 0: see the module docstring)."""
    w = c1 - c0
    src = a[j, c0:c1]
    for i in range(i0, i1):
        f = a[i, j]
        dst = a[i, c0:c1]
        for c in range(w):
            dst[c] -= f * src[c]


@njit(**_JIT)
def _lu_small(a: np.ndarray, piv: np.ndarray, perm: np.ndarray) -> None:
    """Unblocked right-looking LU in place, for matrices of at most BLOCK columns (in
    cache: the strided pivot search costs less than _lu_panel's copies)."""
    m, n = a.shape
    for j in range(min(m, n)):
        p, best = j, _magnitude(a[j, j])
        for i in range(j + 1, m):  # LAPACK i?amax: the first strictly larger one
            v = _magnitude(a[i, j])
            if v > best:
                best, p = v, i
        piv[j] = p
        if p != j:
            _swap_rows(a, perm, j, p)
        d = a[j, j]
        if d != 0:
            for i in range(j + 1, m):
                a[i, j] /= d
        _update_rows(a, j, j + 1, m, j + 1, n)


@njit(**_JIT)
def _lu_small_transposed(b: np.ndarray, piv: np.ndarray, perm: np.ndarray) -> None:
    """`_lu_small` of bᵀ, in b: its factor stays transposed. The pivot search and the
    scaling run along a row of b, a row swap of bᵀ swaps two columns of b, and the
    trailing update is `_update_rows` of b itself (for bᵀ's at most BLOCK columns: no
    transposed copies of a batch of small matrices)."""
    m, n = b.shape  # (bᵀ is n x m)
    for i in range(n):
        perm[i] = i
    for j in range(min(m, n)):
        row = b[j]
        p = _pivot(row, j)
        piv[j] = p
        if p != j:
            for c in range(m):
                b[c, j], b[c, p] = b[c, p], b[c, j]
            perm[j], perm[p] = perm[p], perm[j]
        d = row[j]
        if d != 0:
            for i in range(j + 1, n):
                row[i] /= d
        _update_rows(b, j, j + 1, m, j + 1, n)


@njit(**_JIT)
def _lu_one(a: np.ndarray, piv: np.ndarray, perm: np.ndarray, work: np.ndarray) -> None:
    """Right-looking blocked LU in place: panel, U12 = L11⁻¹ A12, A22 -= L21 U12."""
    m, n = a.shape
    for i in range(m):
        perm[i] = i
    if n <= BLOCK:
        _lu_small(a, piv, perm)
        return
    for j0 in range(0, min(m, n), BLOCK):
        j1 = min(j0 + BLOCK, min(m, n))
        _lu_panel(a, piv, perm, j0, j1, work)
        if j1 >= n:
            continue
        for j in range(j0, j1):  # U12 = L11⁻¹ A12, by rows
            _update_rows(a, j, j + 1, j1, j1, n)
        if j1 < m:
            subtract_product(a[j1:, j1:], a[j1:, j0:j1], a[j0:j1, j1:])


@njit(**_JIT)
def _transpose_finite(src: np.ndarray, dst: np.ndarray) -> bool:
    """dst = srcᵀ (2-D) by strips of TILE rows (each row of dst written in runs); whether
    every element is finite (v - v is 0 for a finite v, NaN for inf and NaN: a flag
    without branches)."""
    rows, cols = src.shape
    bad = False
    for i0 in range(0, rows, TILE):
        i1 = min(i0 + TILE, rows)
        for j in range(cols):
            d = dst[j]
            for i in range(i0, i1):
                v = src[i, j]
                d[i] = v
                bad |= (v - v) != 0
    return not bad


@njit(**_JIT)
def _transpose(src: np.ndarray, dst: np.ndarray) -> None:
    """dst = srcᵀ as `_transpose_finite`, without the check (512x512: 0.24 ms, 0.30
    with it; a copy takes 0.14)."""
    rows, cols = src.shape
    for i0 in range(0, rows, TILE):
        i1 = min(i0 + TILE, rows)
        for j in range(cols):
            d = dst[j]
            for i in range(i0, i1):
                d[i] = src[i, j]


@njit(**_JIT)
def _lu_lapack(a: np.ndarray, lu: np.ndarray, piv: np.ndarray, perm: np.ndarray,
               work: np.ndarray, ipiv: np.ndarray) -> bool:
    """lu, piv, perm = the LU of the finite matrix a by the bound library's getrf, on
    aᵀ in `work` (LAPACK's column-major a); False, with nothing factored, where a has
    an inf or NaN (LAPACK's pivot search need not skip NaNs as the reference does)."""
    m, n = a.shape
    at = work[:m * n].reshape((n, m))
    if not _transpose_finite(a, at):
        return False
    getrf(at, ipiv)  # (info > 0, an exactly singular U, is a result like any other)
    _transpose(at, lu)
    _pivots(ipiv, piv, perm)
    return True


@njit(**_JIT)
def _copy_finite(src: np.ndarray, dst: np.ndarray) -> bool:
    """dst[...] = src (2-D, one shape); whether every element is finite (as
    `_transpose_finite`)."""
    bad = False
    for i in range(src.shape[0]):
        d = dst[i]
        for j in range(src.shape[1]):
            v = src[i, j]
            d[j] = v
            bad |= (v - v) != 0
    return not bad


@njit(**_JIT)
def _lu_lapack_transposed(a: np.ndarray, lu: np.ndarray, piv: np.ndarray,
                          perm: np.ndarray, ipiv: np.ndarray) -> bool:
    """lu, piv, perm = the LU of the finite matrix aᵀ, its factor stored transposed,
    by getrf in place in `lu`: a's row-major memory is LAPACK's column-major aᵀ, so
    a plain copy feeds it and its factor is the output as it stands (no transposes);
    False, with nothing factored, where a has an inf or NaN."""
    if not _copy_finite(a, lu):
        return False
    getrf(lu, ipiv)
    _pivots(ipiv, piv, perm)
    return True


@njit(**_JIT)
def _pivots(ipiv: np.ndarray, piv: np.ndarray, perm: np.ndarray) -> None:
    """piv and perm of LAPACK's 1-based row interchanges ipiv."""
    for i in range(perm.shape[0]):
        perm[i] = i
    for j in range(ipiv.shape[0]):
        p = ipiv[j] - 1
        piv[j] = p
        perm[j], perm[p] = perm[p], perm[j]


@njit(**_JIT)
def _lu_one_transposed(a: np.ndarray, lu: np.ndarray, piv: np.ndarray, perm: np.ndarray,
                       t: np.ndarray, work: np.ndarray) -> None:
    """The blocked LU of aᵀ (in t, aᵀ's shape), its factor transposed into lu."""
    _transpose(a, t)
    _lu_one(t, piv, perm, work)
    _transpose(t, lu)


@njit(**_JIT)
def _lu_range(a: np.ndarray, lu: np.ndarray, piv: np.ndarray, perm: np.ndarray,
              first: int, last: int, transposed: bool) -> None:
    """lu_batch of the matrices first..last-1, with their own scratch buffers."""
    m, n = a.shape[1], a.shape[2]
    rows = n if transposed else m  # of the matrix factored
    lapack = min(m, n) >= LAPACK_MIN and getrf_pays()
    # (a panel of all rows, transposed; or the whole matrix for LAPACK on aᵀ, where
    # getrf of a itself runs in lu[b] and the panel serves the non-finite fallback)
    work = np.empty(m * n if lapack and not transposed else BLOCK * rows, a.dtype)
    t = np.empty((0, 0), a.dtype)  # aᵀ for the blocked LU of it, made when first needed
    ipiv = np.empty(min(m, n), np.int64)
    for b in range(first, last):
        if lapack and (_lu_lapack_transposed(a[b], lu[b], piv[b], perm[b], ipiv)
                       if transposed else
                       _lu_lapack(a[b], lu[b], piv[b], perm[b], work, ipiv)):
            continue
        if transposed and m <= BLOCK:
            copy_matrix(a[b], lu[b])
            _lu_small_transposed(lu[b], piv[b], perm[b])
        elif transposed:
            if t.size == 0:
                t = np.empty((n, m), a.dtype)
            _lu_one_transposed(a[b], lu[b], piv[b], perm[b], t, work)
        else:
            copy_matrix(a[b], lu[b])
            _lu_one(lu[b], piv[b], perm[b], work)


@njit(**_JIT)
def lu_batch(a: np.ndarray, lu: np.ndarray, piv: np.ndarray, perm: np.ndarray,
             transposed: bool) -> None:
    """lu[b], piv[b], perm[b] = the partial-pivoting LU of a[b] (see ops.lu; with
    `transposed`, of a[b]ᵀ, its factor stored transposed)."""
    _lu_range(a, lu, piv, perm, np.int64(0), a.shape[0], bool(transposed))  # (`batches`)


@njit(parallel=True, **_JIT)
def lu_batch_parallel(a: np.ndarray, lu: np.ndarray, piv: np.ndarray,
                      perm: np.ndarray, transposed: bool) -> None:
    """lu_batch with the batch split into one run of matrices per thread (the emitter
    picks it for batches of several matrices; see the module docstring)."""
    parts = min(a.shape[0], pool_thread_count())
    for q in prange(parts):
        first, last = batch_range(a.shape[0], parts, np.int64(q))
        _lu_range(a, lu, piv, perm, first, last, bool(transposed))
