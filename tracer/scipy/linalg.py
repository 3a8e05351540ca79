"""`tracer.scipy.linalg`: SciPy's linear-algebra signatures (`lower=False` upper
factors by default, `cho_factor` / `cho_solve` pairs, `solve_triangular`'s `trans`)
on `tracer.ops`' decompositions and `tracer.numpy.linalg`."""

from __future__ import annotations

from typing import Any

from .. import numpy as tnp
from .. import ops
from ..errors import TracerValueError
from ..numpy.linalg_solve import solve_transposed

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "lu", "lu_factor",
           "lu_solve", "qr", "eigh", "svd", "inv", "det", "solve", "expm"]


def _float(a: Any) -> Any:
    a = tnp.asarray(a)
    return a if tnp.issubdtype(a.dtype, tnp.inexact) else tnp.asarray(a, tnp.float64)


def _mT(a: Any) -> Any:
    return tnp.swapaxes(a, -1, -2)


def cholesky(a: Any, lower: bool = False) -> Any:
    """The Cholesky factor of a Hermitian positive-definite `a` (upper by default,
    as SciPy)."""
    low = ops.cholesky(_float(a), lower=True)
    return low if lower else tnp.conj(_mT(low))


def cho_factor(a: Any, lower: bool = False) -> tuple[Any, bool]:
    """`(c, lower)` for `cho_solve`."""
    return cholesky(a, lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any) -> Any:
    """x with a @ x = b, from `cho_factor(a)`."""
    c, lower = c_and_lower
    low = c if lower else tnp.conj(_mT(c))
    b = _float(b)
    vector = b.ndim == c.ndim - 1
    rhs = b[..., None] if vector else b
    y = ops.triangular_solve(low, rhs, left_side=True, lower=True)
    x = ops.triangular_solve(low, y, left_side=True, lower=True, transpose_a=True,
                             conjugate_a=True)
    return x[..., 0] if vector else x


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """x with op(a) @ x = b for triangular `a`; trans 0/'N', 1/'T', 2/'C'."""
    kinds = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in kinds:
        raise TracerValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', "
                               f"got {trans!r}")
    a, b = _float(a), _float(b)
    vector = b.ndim == a.ndim - 1
    rhs = b[..., None] if vector else b
    transpose, conjugate = kinds[trans]
    x = ops.triangular_solve(a, rhs, left_side=True, lower=lower, transpose_a=transpose,
                             conjugate_a=conjugate, unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


def lu_factor(a: Any) -> tuple[Any, Any]:
    """`(lu, piv)`: the packed factors and LAPACK's row interchanges (0-based)."""
    lu_, pivots, _ = ops.lu(_float(a))
    return lu_, pivots


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0) -> Any:
    """x with a @ x = b (trans=0) or a.T @ x = b (trans=1), from `lu_factor(a)`."""
    lu_, piv = lu_and_piv
    n = lu_.shape[-1]
    index = tnp.arange(n)
    perm = index
    for i in range(n):  # LAPACK's row interchanges, applied in order
        pi, pj = perm[i], perm[piv[..., i]]
        perm = tnp.where(index == i, pj, tnp.where(index == piv[..., i], pi, perm))
    b = _float(b)
    vector = b.ndim == 1
    rhs = b[:, None] if vector else b
    if trans == 0:
        y = ops.triangular_solve(lu_, rhs[perm], left_side=True, lower=True, unit_diagonal=True)
        x = ops.triangular_solve(lu_, y, left_side=True, lower=False)
    else:
        x = solve_transposed(lu_, perm, rhs)
    return x[:, 0] if vector else x


def lu(a: Any, permute_l: bool = False) -> Any:
    """SciPy's `(p, l, u)` with a = p @ l @ u (or `(p @ l, u)` with permute_l)."""
    a = _float(a)
    lu_, _, perm = ops.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    low = tnp.tril(lu_[..., :, :k], -1) + tnp.eye(m, k, dtype=a.dtype)
    up = tnp.triu(lu_[..., :k, :])
    p = _mT(tnp.eye(m, dtype=a.dtype)[perm])
    return (p @ low, up) if permute_l else (p, low, up)


def qr(a: Any, mode: str = "full") -> Any:
    """SciPy's qr: mode "full", "economic" or "r"."""
    q, r = ops.qr(_float(a), full_matrices=(mode != "economic"))
    return (r,) if mode == "r" else (q, r)


def eigh(a: Any, lower: bool = True, eigvals_only: bool = False) -> Any:
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix."""
    vecs, vals = ops.eigh(_float(a), lower=lower)
    return vals if eigvals_only else (vals, vecs)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """`(u, s, vh)` or the singular values."""
    return tnp.linalg.svd(_float(a), full_matrices=full_matrices, compute_uv=compute_uv)


def inv(a: Any) -> Any:
    return tnp.linalg.inv(_float(a))


def det(a: Any) -> Any:
    return tnp.linalg.det(_float(a))


def solve(a: Any, b: Any, assume_a: str = "gen", lower: bool = False) -> Any:
    """x with a @ x = b; assume_a="pos" solves by Cholesky."""
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower), b)
    return tnp.linalg.solve(_float(a), _float(b))


_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)


def expm(a: Any) -> Any:
    """The matrix exponential: Pade (13, 13) after scaling by a power of two that
    brings the 1-norm under 5.37 (Higham 2005), then squaring."""
    a = _float(a)
    norm = tnp.max(tnp.sum(tnp.abs(a), axis=-2), axis=-1)
    s = tnp.maximum(0.0, tnp.ceil(tnp.log2(norm / 5.371920351148152)))
    s = tnp.where(tnp.isfinite(s), s, 0.0)
    scaled = a / (2.0 ** s)[..., None, None]
    n = a.shape[-1]
    eye = tnp.eye(n, dtype=a.dtype)
    a2 = scaled @ scaled
    a4 = a2 @ a2
    a6 = a4 @ a2
    b = _PADE13
    u = scaled @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4
                  + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * eye
    r = tnp.linalg.solve(v - u, v + u)
    return ops.fori_loop(0, tnp.max(s).astype(tnp.int64), lambda i, m: m @ m, r)
