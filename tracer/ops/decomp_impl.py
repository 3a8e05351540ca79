"""NumPy references of the decompositions (the executable spec of `tracer.ops.decomp`).

Shared conventions, followed exactly by the cpu kernels (`backend/cpu/lib/linalg.py`,
`lu.py`):

- A Hermitian input is described by one triangle (`herm`): the other triangle and the
  imaginary part of the diagonal are not read, as LAPACK's potrf / heevd read them.
- A matrix whose factorization fails (not positive definite, a non-finite entry where
  the op reads, an SVD that does not converge) gives NaN in every output of that
  matrix; the other matrices of the batch are unaffected (JAX's CPU behaviour).
- LU picks as pivot the first row of largest |re| + |im| (LAPACK's i?amax; a NaN
  never wins unless it comes first) and skips the scaling of a zero pivot column.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np


def mT(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def herm(a: np.ndarray, lower: bool) -> np.ndarray:
    """The Hermitian matrices the `lower` (else upper) triangle of `a` describes."""
    strict = np.tril(a, -1) if lower else np.triu(a, 1)
    diag = np.real(np.diagonal(a, axis1=-2, axis2=-1))
    eye = np.eye(a.shape[-1], dtype=bool)
    return strict + np.conj(mT(strict)) + np.where(eye, diag[..., None], 0).astype(a.dtype)


def _nan_where(bad: np.ndarray, outs: list[np.ndarray]) -> list[np.ndarray]:
    """Every output of a failed matrix (`bad`, over the batch dims) becomes NaN."""
    res = []
    for out in outs:
        if out.dtype.kind in "fc":
            mask = bad.reshape(bad.shape + (1,) * (out.ndim - bad.ndim))
            out = np.where(mask, np.array(np.nan, out.dtype), out)
        res.append(out)
    return res


def _finite(x: np.ndarray, keep: int) -> np.ndarray:
    """Per matrix (the leading `keep` dims), whether every entry is finite."""
    return np.asarray(np.isfinite(x).all(axis=tuple(range(keep, x.ndim))))


def _guarded(fn: Callable[[np.ndarray], tuple], a: np.ndarray) -> list[np.ndarray]:
    """`fn` over the batch; non-finite matrices are replaced by zeros before (and NaN
    after), and a LinAlgError retries matrix by matrix so only the failing ones are NaN."""
    batch = a.shape[:-2]
    bad = ~_finite(a, len(batch))
    clean = np.where(bad[..., None, None], np.zeros((), a.dtype), a)
    with np.errstate(all="ignore"):
        try:
            outs = [np.asarray(o) for o in fn(clean)]
        except np.linalg.LinAlgError:
            return _one_by_one(fn, clean, bad)
    return _nan_where(bad, outs)


def _one_by_one(fn: Callable[[np.ndarray], tuple], a: np.ndarray,
                bad: np.ndarray) -> list[np.ndarray]:
    batch = a.shape[:-2]
    first = [np.asarray(o) for o in fn(np.eye(*a.shape[-2:], dtype=a.dtype))]  # any valid one
    outs = [np.empty(batch + o.shape, o.dtype) for o in first]
    bad = np.array(bad, copy=True)
    for idx in np.ndindex(*batch):
        try:
            for out, o in zip(outs, fn(a[idx]), strict=True):
                out[idx] = o
        except np.linalg.LinAlgError:
            bad[idx] = True
    return _nan_where(bad, outs)


# --------------------------------------------------------------------------- cholesky
def cholesky_impl(a: np.ndarray, *, lower: bool) -> np.ndarray:
    h = herm(a, lower)
    (l,) = _guarded(lambda x: (np.linalg.cholesky(x),), h)
    # A factor that overflowed or lost positivity on the way is a failure too.
    l = _nan_where(~_finite(l, l.ndim - 2), [l])[0]
    return l if lower else np.conj(mT(l))


# --------------------------------------------------------------------------- triangular_solve
def triangular_solve_impl(a: np.ndarray, b: np.ndarray, *, left_side: bool, lower: bool,
                          transpose_a: bool, conjugate_a: bool,
                          unit_diagonal: bool) -> np.ndarray:
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        t = np.where(np.eye(n, dtype=bool), np.ones((), a.dtype), t)
    if transpose_a:
        t, lower = mT(t), not lower
    if conjugate_a:
        t = np.conj(t)
    if not left_side:  # x op(a) = b  <=>  op(a)^T x^T = b^T
        t, b, lower = mT(t), mT(b), not lower
    x = substitute(t, b, lower)
    return x if left_side else mT(x)


def substitute(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """t^-1 b for triangular t (forward substitution if lower, else backward)."""
    n = t.shape[-1]
    x = np.array(b, dtype=b.dtype, copy=True)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = x[..., i, :] - np.matmul(t[..., i:i + 1, done], x[..., done, :])[..., 0, :]
            x[..., i, :] = acc / t[..., i, i][..., None]
    return x


# --------------------------------------------------------------------------- lu
def lu_impl(a: np.ndarray, transposed: bool = False) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    if transposed:
        factor, pivots, perm = lu_impl(np.swapaxes(a, -1, -2))
        return np.swapaxes(factor, -1, -2), pivots, perm
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    count = math.prod(batch)
    lu = np.array(a, copy=True).reshape((count, m, n))
    pivots = np.zeros((count, k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (count, 1))
    rows = np.arange(count)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + pivot_rows(lu[:, j:, j])
            pivots[:, j] = p
            lu[rows, j], lu[rows, p] = lu[rows, p], lu[rows, j].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
            d = lu[:, j, j]
            nonzero = (d != 0)[:, None]
            lu[:, j + 1:, j] = np.where(nonzero, lu[:, j + 1:, j] / np.where(
                nonzero, d[:, None], 1), lu[:, j + 1:, j])
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return (lu.reshape(a.shape), pivots.reshape(batch + (k,)),
            perm.reshape(batch + (m,)))


def pivot_rows(col: np.ndarray) -> np.ndarray:
    """Per row of `col`, LAPACK's i?amax: first index of the largest |re| + |im|."""
    mag = np.abs(col.real) + np.abs(col.imag) if col.dtype.kind == "c" else np.abs(col)
    nan = np.isnan(mag)
    best = np.argmax(np.where(nan, -np.inf, mag), axis=-1)
    return np.where(nan[:, 0], 0, best)


# --------------------------------------------------------------------------- qr, eigh, svd
# SciPy's LAPACK, the one numba's np.linalg (the cpu backend) and JAX call: the same
# routines in the same build give the same signs of eigen- and singular vectors.
def _scipy_linalg():
    """scipy.linalg, imported on first use (it is most of `import tracer`'s time)."""
    import scipy.linalg
    return scipy.linalg


def qr_impl(a: np.ndarray, *, full_matrices: bool) -> tuple[np.ndarray, np.ndarray]:
    mode = "full" if full_matrices else "economic"
    q, r = _guarded(lambda x: tuple(_batched(_scipy_linalg().qr, x, mode=mode)), a)
    return q, r


def eigh_impl(a: np.ndarray, *, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    w, v = _guarded(lambda x: tuple(_batched(_scipy_linalg().eigh, x, driver="evd")),
                    herm(a, lower))
    return v, w


def svd_impl(a: np.ndarray, *, full_matrices: bool, compute_uv: bool) -> tuple[np.ndarray, ...]:
    # Singular values alone come from the same gesdd call (jobz="S") as with vectors, so
    # they do not depend on compute_uv.
    full = full_matrices and compute_uv
    u, s, vh = _guarded(lambda x: tuple(_batched(_scipy_linalg().svd, x, full_matrices=full,
                                                 lapack_driver="gesdd")), a)
    return (u, s, vh) if compute_uv else (s,)


def _batched(fn: Callable[..., object], x: np.ndarray, **kwargs: object) -> object:
    """A SciPy decomposition on a batch (SciPy loops over the leading dims itself)."""
    if x.size == 0 and x.ndim > 2 and 0 in x.shape[:-2]:  # an empty batch: shapes only
        probe = fn(np.eye(*x.shape[-2:], dtype=x.dtype), check_finite=False, **kwargs)
        parts = probe if isinstance(probe, tuple) else (probe,)
        empty = tuple(np.empty(x.shape[:-2] + np.shape(p), np.asarray(p).dtype) for p in parts)
        return empty if isinstance(probe, tuple) else empty[0]
    return fn(x, check_finite=False, **kwargs)
