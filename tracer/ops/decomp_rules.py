"""JVP / transpose / batching rules of cholesky, triangular_solve, lu, qr, eigh and svd.

The JVPs are JAX's (`jax/_src/lax/linalg.py`), written with the batched helpers of
`decomp_util`: cholesky (Murray, arXiv:1602.07527), triangular_solve (nonlinear in
a, linear in b, transposed by solving with op(a)ᵀ), lu (de Hoog, Anderssen & Lukas),
qr (thin, wide and full-matrices cases, arXiv:2409.13374), eigh and svd (distinct
eigen / singular values). A decomposition that reads one triangle of its input (the
Hermitian matrix `herm(a)`) differentiates through the same map: da -> herm(da).

svd with full_matrices and m != n: the extra columns U2 of u (or V2 of v) are a basis
of the complement that a does not determine; their tangent is the one that keeps u
unitary and turns U2 only against U1 (U2ᴴ dU2 = 0): dU2 = -U1 (U2ᴴ dU1)ᴴ.

Batching: every op is batched over its leading dims, so the mapped dim moves to the
front. A triangular_solve whose a is unmapped folds the mapped dim of b into its
right-hand sides instead (one factor, many columns).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..errors import TracerTypeError
from . import elementwise as ew
from .ad import UndefinedPrimal, Zero, add_tangents, aval_of_value
from .decomp import cholesky_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve_p
from .decomp_rules_factor import qr_jvp, svd_jvp, tri_solve
from .decomp_util import (H, as_dtype, cols, cols_times, conj, diag_part, dtype_of, eye,
                          eye_mask, full, herm, matmul, mT, permutation_matrix, rows,
                          rows_times, shape_of, tril, triu)
from .shape import broadcast_in_dim, pad, reshape
from .shape_rules import at_front, batch_size, move_axis


def _zeros_for(outs: Sequence[Any]) -> list[Zero]:
    return [Zero(aval_of_value(o)) for o in outs]


# --------------------------------------------------------------------------- cholesky
def _cholesky_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
                  lower: bool) -> tuple[Any, Any]:
    (a,), (da,) = primals, tangents
    out = cholesky_p.bind(a, lower=lower)
    if isinstance(da, Zero):
        return out, Zero(aval_of_value(out))
    l = out if lower else H(out)
    sigma = herm(da, lower)
    tmp = tri_solve(l, sigma, lower=True, transpose_a=True, conjugate_a=True)  # sigma L^-H
    inner = tri_solve(l, tmp, left_side=True, lower=True)                     # L^-1 sigma L^-H
    half_diag = ew.select(eye_mask(shape_of(inner)), ew.mul(inner, 0.5), inner)
    dl = matmul(l, tril(half_diag))
    return out, dl if lower else H(dl)


# --------------------------------------------------------------------------- triangular_solve
def _triangular_solve_jvp(primals: Sequence[Any], tangents: Sequence[Any],
                          **p: bool) -> tuple[Any, Any]:
    (a, b), (da, db) = primals, tangents
    x = triangular_solve_p.bind(a, b, **p)
    out: Any = Zero(aval_of_value(x))
    if not isinstance(db, Zero):
        out = triangular_solve_p.bind(a, db, **p)
    if not isinstance(da, Zero):
        out = add_tangents(out, _jvp_a(da, x, a, **p))
    return x, out


def _jvp_a(da: Any, x: Any, a: Any, *, left_side: bool, lower: bool, transpose_a: bool,
           conjugate_a: bool, unit_diagonal: bool) -> Any:
    """-op(a)^-1 op(da) x (left) or -x op(da) op(a)^-1: the solve on the cheaper side."""
    k = 1 if unit_diagonal else 0
    g = ew.neg(tril(da, -k) if lower else triu(da, k))
    g = mT(g) if transpose_a else g
    g = conj(g) if conjugate_a else g
    p = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
             conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    m, n = shape_of(x)[-2:]
    if left_side:
        return (triangular_solve_p.bind(a, matmul(g, x), **p) if m > n
                else matmul(triangular_solve_p.bind(a, g, **p), x))
    return (triangular_solve_p.bind(a, matmul(x, g), **p) if m < n
            else matmul(x, triangular_solve_p.bind(a, g, **p)))


def _triangular_solve_t(ct: Any, a: Any, b: Any, **p: bool) -> list[Any]:
    if isinstance(a, UndefinedPrimal):
        raise TracerTypeError("triangular_solve is not linear in a: it cannot be transposed "
                              "with respect to a")
    if isinstance(ct, Zero):
        return [None, Zero(b.aval)]
    return [None, triangular_solve_p.bind(a, ct, **{**p, "transpose_a": not p["transpose_a"]})]


def _triangular_solve_b(args: Sequence[Any], dims: Sequence[int | None],
                        **p: bool) -> tuple[Any, int]:
    (a, b), (ad, bd) = args, dims
    if ad is not None:
        size = batch_size(args, dims)
        return triangular_solve_p.bind(at_front(a, ad, size), at_front(b, bd, size), **p), 0
    nd = len(shape_of(b))
    # a shared: the mapped dim of b becomes more right-hand sides (columns or rows).
    to = nd - 1 if p["left_side"] else nd - 2
    moved = move_axis(b, bd, to)
    s = shape_of(moved)
    flat = ((*s[:-2], s[-2] * s[-1]) if p["left_side"]
            else (*s[:-3], s[-3] * s[-2], s[-1]))  # [..., m, k*B] or [..., k*B, m]
    out = triangular_solve_p.bind(a, reshape(moved, flat), **p)
    return reshape(out, s), to


# --------------------------------------------------------------------------- lu
def _lu_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
            transposed: bool = False) -> tuple[list, list]:
    (a,), (da,) = primals, tangents
    if transposed:  # (the lu of aᵀ, its factor transposed back)
        outs, douts = _lu_jvp([mT(a)], [da if isinstance(da, Zero) else mT(da)])
        factor, dfactor = mT(outs[0]), douts[0]
        dfactor = Zero(aval_of_value(factor)) if isinstance(dfactor, Zero) else mT(dfactor)
        return [factor, *outs[1:]], [dfactor, *douts[1:]]
    outs = lu_p.bind(a, transposed=False)
    if isinstance(da, Zero):
        return outs, _zeros_for(outs)
    lu, _, perm = outs
    dtype = dtype_of(a)
    *batch, m, n = shape_of(a)
    k = min(m, n)
    nd = len(batch) + 2
    pad_cols = [(0, 0, 0)] * (nd - 1) + [(0, m - k, 0)]
    l = ew.add(pad(tril(cols(lu, 0, k), -1), 0, pad_cols), eye((*batch, m, m), dtype))
    pad_rows = [(0, 0, 0)] * (nd - 2) + [(0, n - k, 0), (0, 0, 0)]
    corner = np.diag(np.r_[np.zeros(k), np.ones(n - k)]).astype(dtype)  # eye below row k
    u = ew.add(pad(triu(rows(lu, 0, k)), 0, pad_rows), _broadcast_const(corner, (*batch, n, n)))
    x = matmul(permutation_matrix(perm, dtype), da)  # da[..., perm, :]
    la = tri_solve(l, x, left_side=True, lower=True, unit_diagonal=True)
    lau = tri_solve(u, la)
    dlu = ew.add(matmul(l, tril(lau, -1)), matmul(triu(lau), u))
    return outs, [dlu, *_zeros_for(outs[1:])]


def _broadcast_const(value: np.ndarray, shape: tuple[int, ...]) -> Any:
    nd = len(shape)
    return broadcast_in_dim(value, shape, tuple(range(nd - value.ndim, nd)))


# --------------------------------------------------------------------------- eigh
def _eigh_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
              lower: bool) -> tuple[list, list]:
    (a,), (da,) = primals, tangents
    v, w = outs = eigh_p.bind(a, lower=lower)
    if isinstance(da, Zero):
        return outs, _zeros_for(outs)
    dtype = dtype_of(a)
    wc = as_dtype(w, dtype)
    vh_da_v = matmul(matmul(H(v), herm(da, lower)), v)
    dv = matmul(v, ew.mul(_reciprocal_gaps(wc), vh_da_v))
    dw = ew.real(diag_part(vh_da_v)) if dtypes.is_complex(dtype) else diag_part(vh_da_v)
    return outs, [dv, dw]


def _reciprocal_gaps(w: Any) -> Any:
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it."""
    n = shape_of(w)[-1]
    ones = full((*shape_of(w)[:-1], n, n), 1, dtype_of(w))
    wj, wi = cols_times(ones, w), rows_times(ones, w)
    i = eye(shape_of(ones), dtype_of(w))
    return ew.sub(ew.div(ones, ew.add(i, ew.sub(wj, wi))), i)


def _register() -> None:
    cholesky_p.jvp = _cholesky_jvp
    triangular_solve_p.jvp = _triangular_solve_jvp
    triangular_solve_p.transpose = _triangular_solve_t
    triangular_solve_p.batch = _triangular_solve_b
    lu_p.jvp = _lu_jvp
    eigh_p.jvp = _eigh_jvp
    qr_p.jvp = qr_jvp
    svd_p.jvp = svd_jvp
    for op in (cholesky_p, lu_p, qr_p, eigh_p, svd_p):
        op.batch = _at_front(op)


def _at_front(op: Any) -> Callable[..., tuple[Any, Any]]:
    """Batching of an op batched over its leading dims: the mapped dim goes first."""
    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any) -> tuple[Any, Any]:
        size = batch_size(args, dims)
        out = op.bind(*[at_front(x, d, size) for x, d in zip(args, dims, strict=True)],
                      **params)
        return (out, [0] * len(out)) if op.multiple_results else (out, 0)
    return rule


_register()
