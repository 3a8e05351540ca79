"""JVPs of qr and svd (JAX's `qr_jvp_rule` and `_svd_jvp_rule`), split from
`decomp_rules`, which installs them and documents the conventions."""

from __future__ import annotations

from typing import Any, Sequence

from .. import dtypes
from . import elementwise as ew
from .ad import Zero, aval_of_value
from .decomp import lu_p, qr_p, svd_p, triangular_solve_p
from .decomp_util import (H, as_dtype, cols, cols_times, diag_embed, diag_part, dtype_of,
                          eye, eye_mask, full, hstack, matmul, mT, permutation_matrix,
                          real_part, rows, rows_times, shape_of, tril, vstack, zeros_like)


def tri_solve(a: Any, b: Any, **flags: bool) -> Any:
    """triangular_solve with JAX's defaults (right side, upper) for the unset flags."""
    params = dict(left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                  unit_diagonal=False)
    params.update(flags)
    return triangular_solve_p.bind(a, b, **params)


# --------------------------------------------------------------------------- qr
def qr_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
           full_matrices: bool) -> tuple[list, list]:
    (x,), (dx,) = primals, tangents
    q, r = outs = qr_p.bind(x, full_matrices=full_matrices)
    if isinstance(dx, Zero):
        return outs, [Zero(aval_of_value(o)) for o in outs]
    m, n = shape_of(x)[-2:]
    if m < n:  # wide: x = q [r1 r2] with q r1 the QR of the square x1; r2 = qᴴ x2
        dq, dr1 = _thin_qr_jvp(q, cols(r, 0, m), cols(dx, 0, m))
        dr2 = ew.add(matmul(H(dq), cols(x, m, n)), matmul(H(q), cols(dx, m, n)))
        return outs, [dq, hstack([dr1, dr2])]
    q_mn = cols(q, 0, n) if full_matrices else q
    r_nn = rows(r, 0, n) if full_matrices else r
    dq, dr = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return outs, [dq, dr]
    dq_mp = _complete_columns_jvp(q, q_mn, dq, n)
    return outs, [hstack([dq, dq_mp]), vstack([dr, full((*shape_of(dr)[:-2], m - n, n), 0,
                                                         dtype_of(dr))])]


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """JVP of the QR of [..., m, n] matrices with m >= n
    (j-towns.github.io/papers/qr-derivative.pdf)."""
    dx_rinv = tri_solve(r, dx)                     # dx r^-1
    qt_dx_rinv = matmul(H(q), dx_rinv)
    low = tril(qt_dx_rinv, -1)
    do = ew.sub(low, H(low))                    # skew-Hermitian
    if dtypes.is_complex(dtype_of(q)):          # the imaginary part of the diagonal
        imag_diag = ew.sub(qt_dx_rinv, real_part(qt_dx_rinv))
        do = ew.add(do, ew.select(eye_mask(shape_of(do)), imag_diag, zeros_like(do)))
    dq = ew.add(matmul(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = matmul(ew.sub(qt_dx_rinv, do), r)
    return dq, dr


def _complete_columns_jvp(q: Any, q_mn: Any, dq_mn: Any, n: int) -> Any:
    """Tangent of the last m - n columns of a complete Householder q (arXiv:2409.13374
    eqs. 32-33): Z = Q_pn (Q_nn - I)^-1, dQ_mp = dQ_mn Zᴴ - (Q_mn + Q_mp Z)(dQ_pn - Z dQ_nn)ᴴ."""
    m = shape_of(q)[-2]
    q_nn, q_pn, q_mp = rows(q_mn, 0, n), rows(q_mn, n, m), cols(q, n, m)
    dq_nn, dq_pn = rows(dq_mn, 0, n), rows(dq_mn, n, m)
    z_h = _solve_adjoint(ew.sub(q_nn, eye(shape_of(q_nn), dtype_of(q))), H(q_pn))
    z = H(z_h)
    first = matmul(dq_mn, z_h)
    second = matmul(ew.add(q_mn, matmul(q_mp, z)), H(ew.sub(dq_pn, matmul(z, dq_nn))))
    return ew.sub(first, second)


def _solve_adjoint(a: Any, b: Any) -> Any:
    """aᴴ⁻¹ b through lu(a): a[perm] = L U, so aᴴ = Uᴴ Lᴴ P and aᴴ⁻¹ b = Pᵀ L⁻ᴴ U⁻ᴴ b."""
    lu, _, perm = lu_p.bind(a, transposed=False)
    y = tri_solve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    y = tri_solve(lu, y, left_side=True, lower=True, transpose_a=True, conjugate_a=True,
               unit_diagonal=True)
    return matmul(mT(permutation_matrix(perm, dtype_of(a))), y)


# --------------------------------------------------------------------------- svd
def svd_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, full_matrices: bool,
            compute_uv: bool) -> tuple[list, list]:
    (a,), (da,) = primals, tangents
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    if not compute_uv:
        u, s, vh = svd_p.bind(a, full_matrices=False, compute_uv=True)
        outs = [s]
    else:
        outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=True)
        u, s, vh = cols(outs[0], 0, k), outs[1], rows(outs[2], 0, k)
    if isinstance(da, Zero):
        return outs, [Zero(aval_of_value(o)) for o in outs]
    ds_mat = matmul(matmul(H(u), da), H(vh))    # Uᴴ dA V
    ds = ew.real(diag_part(ds_mat)) if dtypes.is_complex(dtype_of(a)) else diag_part(ds_mat)
    if not compute_uv:
        return outs, [ds]
    du, dv = _singular_vectors_jvp(a, da, u, s, vh, ds_mat)
    if full_matrices and m > n:
        du = hstack([du, _turn_against(u, cols(outs[0], k, m), du)])
    if full_matrices and n > m:
        dv = hstack([dv, _turn_against(H(vh), H(rows(outs[2], k, n)), dv)])
    return outs, [du, ds, H(dv)]


def _singular_vectors_jvp(a: Any, da: Any, u: Any, s: Any, vh: Any,
                          ds_mat: Any) -> tuple[Any, Any]:
    """(dU, dV) of the thin SVD (JAX's formula; distinct nonzero singular values)."""
    dtype = dtype_of(a)
    m, n = shape_of(a)[-2:]
    v = H(vh)
    sc = as_dtype(s, dtype)
    ones = full((*shape_of(s), shape_of(s)[-1]), 1, dtype_of(s))
    s_j, s_i = cols_times(ones, s), rows_times(ones, s)
    i = eye(shape_of(ones), dtype_of(s))
    f = as_dtype(ew.sub(ew.div(ones, ew.add(ew.mul(ew.add(s_j, s_i), ew.sub(s_j, s_i)), i)),
                        i), dtype)
    dss, sds = cols_times(ds_mat, sc), rows_times(ds_mat, sc)   # dS diag(s), diag(s) dS
    zero_s = as_dtype(ew.eq(s, full(shape_of(s), 0, dtype_of(s))), dtype_of(s))
    s_inv = as_dtype(ew.sub(ew.div(full(shape_of(s), 1, dtype_of(s)), ew.add(s, zero_s)),
                            zero_s), dtype)
    dudv_diag = ew.mul(ew.mul(ew.sub(ds_mat, H(ds_mat)), 0.5), diag_embed(s_inv))
    du = matmul(u, ew.add(ew.mul(f, ew.add(dss, H(dss))), dudv_diag))
    dv = matmul(v, ew.mul(f, ew.add(sds, H(sds))))
    if m > n:
        dav = matmul(da, v)
        du = ew.add(du, cols_times(ew.sub(dav, matmul(u, matmul(H(u), dav))), ew.div(1, sc)))
    if n > m:
        dahu = matmul(H(da), u)
        dv = ew.add(dv, cols_times(ew.sub(dahu, matmul(v, matmul(vh, dahu))), ew.div(1, sc)))
    return du, dv


def _turn_against(u1: Any, u2: Any, du1: Any) -> Any:
    """dU2 = -U1 (U2ᴴ dU1)ᴴ: keeps [U1 U2] unitary with U2ᴴ dU2 = 0."""
    return ew.neg(matmul(u1, H(matmul(H(u2), du1))))
