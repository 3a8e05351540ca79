"""numba kernels of the decompositions (cholesky, lu, qr, eigh, svd; triangular_solve's
is `cpu.lib.triangular`).

Every kernel takes C-contiguous batches of matrices (batch, m, n), loops over the
batch and writes preallocated outputs; it follows the reference conventions of
`tracer.ops.decomp_impl` (one triangle read; a failed matrix -> NaN in all its
outputs; LAPACK's pivot rule).

- lu is written here: partial-pivoting LU on panels of `BLOCK` columns, the trailing
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
- `lu_batch_parallel` (and `triangular_solve_batch_parallel`): the batch in one run of
  matrices per thread of numba's pool (`cpu.lib.batches`), where the emitter allows
  threads (`cpu.emit.decomp`).
- cholesky: small matrices by the textbook loop (no LAPACK call overhead), larger
  ones by LAPACK potrf in place in the output (numba's binding of it); qr, eigh and svd through
  numba's `np.linalg` (geqrf + orgqr, heevd, gesdd). Their exceptions (non-finite
  input, no convergence, not positive definite) become NaN.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.extending import overload
from numba.np.linalg import _LAPACK, ensure_lapack, get_blas_kind

from .batches import batch_range, copy_matrix
from .cblas import getrf, getrf_pays
from .gemm_update import subtract_product
from .pool_threads import pool_thread_count

BLOCK = 32        # columns per panel of the blocked LU
LAPACK_MIN = 192  # from this order on, the bound library's getrf where it pays (docstring)
TILE = 16         # rows per strip of the transposes around getrf
SMALL_CHOLESKY = 26  # below this size the loop beats potrf (24: 1.22 vs 1.45 ms for 1000; 32: even)

_JIT = dict(cache=True, error_model="numpy", nogil=True)

# --------------------------------------------------------------------------- helpers
@njit(**_JIT)
def _all_finite(x: np.ndarray) -> bool:
    for v in x.ravel():
        if not np.isfinite(v):
            return False
    return True


@njit(**_JIT)
def _lower_hermitian(a: np.ndarray, lower: bool, out: np.ndarray) -> None:
    """out = the Hermitian matrix described by one triangle of a (diagonal: real part)."""
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            v = a[i, j] if lower else np.conj(a[j, i])
            out[i, j] = v
            out[j, i] = np.conj(v)
        out[i, i] = a[i, i].real


@njit(**_JIT)
def _conj_transpose(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[j, i] = np.conj(x[i, j])


# --------------------------------------------------------------------------- cholesky
@njit(**_JIT)
def _cholesky_loop(h: np.ndarray, p: int, l: np.ndarray) -> bool:
    """l[p] = the lower Cholesky factor (zeros above) of the Hermitian matrix the lower
    triangle of h[p] describes; False if it is not positive definite or the factor is
    not finite. Indexing the batch in place (no per-matrix views, no separate zero
    fill or finiteness pass) made 10000 4x4 factors 3.4x faster (0.31 ms; NumPy's
    batched LAPACK: 1.05 ms).

    Checking each pivot for 0 < d < inf is the whole finiteness check: an inf or NaN
    below the diagonal (read or produced) enters the pivot of its row as |v|^2, which
    makes that pivot NaN or -inf, so it fails there."""
    n = h.shape[1]
    for j in range(n):
        d = h[p, j, j].real
        for k in range(j):
            v = l[p, j, k]
            d -= (v * np.conj(v)).real
        if not 0 < d < np.inf:
            return False
        root = np.sqrt(d)
        l[p, j, j] = root
        for i in range(j + 1, n):
            t = h[p, i, j]
            for k in range(j):
                t -= l[p, i, k] * np.conj(l[p, j, k])
            l[p, i, j] = t / root
            l[p, j, i] = 0
    return True


def _potrf_in_place(m):  # noqa: ANN001, ANN202
    """LAPACK potrf on the C-contiguous square m, in place; its `info` (0: success)."""


@overload(_potrf_in_place, jit_options=_JIT)
def _potrf_in_place_overload(m):  # noqa: ANN001, ANN202
    """numba's own potrf binding (the one its np.linalg.cholesky calls). A C-order
    buffer holding the lower triangle of h is, read in Fortran order, the upper
    triangle of conj(h) = (lᵀ)ᴴ lᵀ, so 'U' factors it in place into l (row-major)."""
    ensure_lapack()
    potrf = _LAPACK().numba_xxpotrf(m.dtype)
    kind = ord(get_blas_kind(m.dtype, "cholesky"))
    upper = ord("U")

    def factor(m):  # noqa: ANN001, ANN202
        return potrf(kind, upper, m.shape[0], m.ctypes, m.shape[0])
    return factor


@njit(**_JIT)
def _cholesky_lapack(h: np.ndarray, p: int, l: np.ndarray) -> bool:
    """_cholesky_loop by LAPACK potrf, for larger matrices: the lower triangle copied
    into l[p] (zeros above) and factored there. numba's np.linalg.cholesky allocated
    and copied the matrix twice and zeroed by columns: 1000 32x32 factors 2.59 ->
    2.33 ms, paired (NumPy's batched potrf: 2.46)."""
    lp = l[p]
    hp = h[p]
    n = hp.shape[0]
    for i in range(n):
        for j in range(i):
            lp[i, j] = hp[i, j]
        lp[i, i] = hp[i, i].real
        for j in range(i + 1, n):
            lp[i, j] = 0
    return _potrf_in_place(lp) == 0 and _all_finite(lp)


@njit(**_JIT)
def _cholesky_all(h: np.ndarray, l: np.ndarray) -> None:
    """l[p] = cholesky(h[p]) (lower) for every p, all NaN where that fails."""
    small = h.shape[1] < SMALL_CHOLESKY
    for p in range(h.shape[0]):
        if not (_cholesky_loop(h, p, l) if small else _cholesky_lapack(h, p, l)):
            l[p] = np.nan


@njit(**_JIT)
def cholesky_batch(a: np.ndarray, out: np.ndarray, lower: bool) -> None:
    """out[b] = cholesky(a[b]): lower l (a = l lᴴ) or upper u = lᴴ, zeros elsewhere.
    Both paths read only the lower triangle (and the real part of its diagonal), so an
    upper factor is the conjugate transpose of the one of a[b]ᴴ."""
    if lower:
        _cholesky_all(a, out)
        return
    n = a.shape[1]
    h = np.empty((1, n, n), a.dtype)
    l = np.empty((1, n, n), a.dtype)
    for b in range(a.shape[0]):
        _conj_transpose(a[b], h[0])
        _cholesky_all(h, l)
        _conj_transpose(l[0], out[b])


# --------------------------------------------------------------------------- lu
@njit(**_JIT)
def _magnitude(v: complex) -> float:
    return abs(v.real) + abs(v.imag)


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
        p, best = jj, _magnitude(col[jj])
        for r in range(jj + 1, h):  # LAPACK i?amax: the first strictly larger one
            v = _magnitude(col[r])
            if v > best:
                best, p = v, r
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
    for i in range(m):
        perm[i] = i
    for j in range(ipiv.shape[0]):
        p = ipiv[j] - 1
        piv[j] = p
        perm[j], perm[p] = perm[p], perm[j]
    return True


@njit(**_JIT)
def _lu_range(a: np.ndarray, lu: np.ndarray, piv: np.ndarray, perm: np.ndarray,
              first: int, last: int) -> None:
    """lu_batch of the matrices first..last-1, with their own scratch buffers."""
    m, n = a.shape[1], a.shape[2]
    lapack = min(m, n) >= LAPACK_MIN and getrf_pays()
    # (a panel of all rows, transposed; or the whole matrix for LAPACK)
    work = np.empty(m * n if lapack else BLOCK * m, a.dtype)
    ipiv = np.empty(min(m, n), np.int64)
    for b in range(first, last):
        if lapack and _lu_lapack(a[b], lu[b], piv[b], perm[b], work, ipiv):
            continue
        copy_matrix(a[b], lu[b])
        _lu_one(lu[b], piv[b], perm[b], work)


@njit(**_JIT)
def lu_batch(a: np.ndarray, lu: np.ndarray, piv: np.ndarray, perm: np.ndarray) -> None:
    """lu[b], piv[b], perm[b] = the partial-pivoting LU of a[b] (see ops.lu)."""
    _lu_range(a, lu, piv, perm, np.int64(0), a.shape[0])  # (batches: one compile)


@njit(parallel=True, **_JIT)
def lu_batch_parallel(a: np.ndarray, lu: np.ndarray, piv: np.ndarray,
                      perm: np.ndarray) -> None:
    """lu_batch with the batch split into one run of matrices per thread (the emitter
    picks it for batches of several matrices; see the module docstring)."""
    parts = min(a.shape[0], pool_thread_count())
    for q in prange(parts):
        first, last = batch_range(a.shape[0], parts, np.int64(q))
        _lu_range(a, lu, piv, perm, first, last)


# --------------------------------------------------------------------------- qr, eigh, svd
@njit(**_JIT)
def _qr_one(a: np.ndarray, q: np.ndarray, r: np.ndarray, full: bool) -> None:
    m, n = a.shape
    if m == 0 or n == 0:  # as NumPy: q is an identity, r empty or zero
        q[...] = 0
        for i in range(min(q.shape[0], q.shape[1])):
            q[i, i] = 1
        r[...] = 0
        return
    if full and m > n:
        # A complete q is geqrf + orgqr of a padded with zero columns: their reflectors
        # are identities (tau = 0), so q and r[:, :n] are a's complete QR.
        padded = np.zeros((m, m), a.dtype)
        padded[:, :n] = a
        qq, rr = np.linalg.qr(padded)
        q[...] = qq
        r[...] = rr[:, :n]
    else:
        qq, rr = np.linalg.qr(a)
        q[...] = qq
        r[...] = rr


@njit(**_JIT)
def qr_batch(a: np.ndarray, q: np.ndarray, r: np.ndarray, full_matrices: bool) -> None:
    for b in range(a.shape[0]):
        try:
            _qr_one(a[b], q[b], r[b], full_matrices)
        except Exception:  # non-finite input
            q[b] = np.nan
            r[b] = np.nan


@njit(**_JIT)
def eigh_batch(a: np.ndarray, v: np.ndarray, w: np.ndarray, lower: bool) -> None:
    n = a.shape[1]
    h = np.empty((n, n), a.dtype)
    for b in range(a.shape[0]):
        if n == 0:
            continue
        _lower_hermitian(a[b], lower, h)
        try:
            vals, vecs = np.linalg.eigh(h)
            w[b] = vals
            v[b] = vecs
        except Exception:  # non-finite input, no convergence
            w[b] = np.nan
            v[b] = np.nan


@njit(**_JIT)
def svd_batch(a: np.ndarray, u: np.ndarray, s: np.ndarray, vh: np.ndarray,
              full_matrices: bool) -> None:
    m, n = a.shape[1], a.shape[2]
    for b in range(a.shape[0]):
        if m == 0 or n == 0:  # no singular values; full u and vh are identities
            if full_matrices:
                u[b] = np.eye(m, dtype=u.dtype)
                vh[b] = np.eye(n, dtype=vh.dtype)
            continue
        try:
            uu, ss, vv = np.linalg.svd(a[b], full_matrices=full_matrices)
            u[b] = uu
            s[b] = ss
            vh[b] = vv
        except Exception:  # non-finite input, no convergence
            u[b] = np.nan
            s[b] = np.nan
            vh[b] = np.nan


@njit(**_JIT)
def svdvals_batch(a: np.ndarray, s: np.ndarray) -> None:
    m, n = a.shape[1], a.shape[2]
    for b in range(a.shape[0]):
        if m == 0 or n == 0:
            continue
        try:
            s[b] = np.linalg.svd(a[b], full_matrices=False)[1]
        except Exception:  # non-finite input, no convergence
            s[b] = np.nan
