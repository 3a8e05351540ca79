"""Matrix decompositions: cholesky and triangular_solve (XLA's Cholesky,
TriangularSolve) and the ones `tracer.numpy.linalg` needs, named as in
`jax.lax.linalg`: lu, qr, eigh, svd.

Every op is batched over the leading dimensions ([..., m, n]: all but the minor two
are batch dims) and takes float32, float64, complex64 or complex128 matrices. Where
the seeds leave a result implementation-defined, tracer does what JAX does on CPU:
cholesky writes zeros in the other triangle and gives a matrix of NaNs for input that
is not positive definite; a singular triangular_solve gives inf / NaN (plain
substitution). The references live in `decomp_impl`, the rules in `decomp_rules`.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerError
from . import decomp_impl as impl
from .common import operand_aval, wrapper_error
from .decomp_util import symmetrize
from .registry import define_op, same_dtypes

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"]

_KINDS = "float32, float64, complex64 or complex128"


# --------------------------------------------------------------------------- shape helpers
def _inexact(aval: ShapedArray, what: str = "operand") -> None:
    if aval.dtype.kind not in "fc" or aval.dtype.itemsize < 4:
        raise DTypeError(f"{what} must be {_KINDS}, got {aval}")


def _matrices(aval: ShapedArray, what: str = "operand") -> tuple[int, int]:
    """(rows, cols) of a batch of matrices; ShapeError below rank 2."""
    _inexact(aval, what)
    if aval.ndim < 2:
        raise ShapeError(f"{what} must be a matrix or a batch of matrices (rank >= 2), "
                         f"got {aval}")
    return aval.shape[-2], aval.shape[-1]


def _square(aval: ShapedArray, what: str = "operand") -> int:
    m, n = _matrices(aval, what)
    if m != n:
        raise ShapeError(f"{what} must be a batch of square matrices [..., n, n], got {aval}")
    return n


def _like(aval: ShapedArray, shape: tuple[int, ...], dtype: Any = None) -> ShapedArray:
    return ShapedArray(aval.shape[:-2] + shape, aval.dtype if dtype is None else dtype)


def _flag(op: str, name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise wrapper_error(ParamError, op, f"{name} must be a static bool, got {value!r}")
    return bool(value)


# --------------------------------------------------------------------------- cholesky
def _cholesky_shape(a: ShapedArray, *, lower: bool) -> ShapedArray:
    _square(a)
    return ShapedArray(a.shape, a.dtype)


def cholesky(a: Any, lower: bool = True) -> Any:
    """Cholesky factor of (batches of) Hermitian positive-definite matrices.

    Seed rule: lower=True gives lower-triangular l with a = l·lᴴ, lower=False
    upper-triangular u with a = uᴴ·u; only the selected triangle of a is read (and
    the real part of its diagonal). tracer (as JAX): the other triangle of the
    result is zero; a matrix that is not positive definite gives all NaNs.

    cholesky([[4., 2.], [2., 5.]]) -> [[2., 0.], [1., 2.]]
    """
    return cholesky_p.bind(a, lower=_flag("cholesky", "lower", lower))


cholesky_p = define_op("cholesky", shape=_cholesky_shape, impl=impl.cholesky_impl,
                       family="decomp", doc=inspect.cleandoc(cholesky.__doc__ or ""))


# --------------------------------------------------------------------------- triangular_solve
def _triangular_solve_shape(a: ShapedArray, b: ShapedArray, *, left_side: bool, lower: bool,
                            transpose_a: bool, conjugate_a: bool,
                            unit_diagonal: bool) -> ShapedArray:
    n = _square(a, "a")
    _matrices(b, "b")
    same_dtypes(a, b)
    if a.shape[:-2] != b.shape[:-2] or a.ndim != b.ndim:
        raise ShapeError(f"a and b must have the same batch dimensions, got {a} and {b}")
    axis = -2 if left_side else -1
    if b.shape[axis] != n:
        side = "rows" if left_side else "columns"
        raise ShapeError(f"b must have {n} {side} to match a (left_side={left_side}), "
                         f"got {a} and {b}")
    return ShapedArray(b.shape, b.dtype)


def triangular_solve(a: Any, b: Any, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solve op(a)·x = b (left_side) or x·op(a) = b for x, a triangular.

    Seed rule: op(a) is a, aᵀ (transpose_a) or conj(a) / aᴴ (conjugate_a); only the
    `lower` (else upper) triangle of a is read, and not its diagonal when
    unit_diagonal (taken as ones). a is [..., m, m]; b is [..., m, k] (left_side) or
    [..., k, m] with the same batch dims; x has b's shape. A zero on the diagonal
    gives inf / NaN, as substitution does.

    triangular_solve([[2., 0.], [1., 1.]], [[2.], [3.]], left_side=True, lower=True)
    -> [[1.], [2.]]
    """
    flags = {name: _flag("triangular_solve", name, value) for name, value in (
        ("left_side", left_side), ("lower", lower), ("transpose_a", transpose_a),
        ("conjugate_a", conjugate_a), ("unit_diagonal", unit_diagonal))}
    return triangular_solve_p.bind(a, b, **flags)


triangular_solve_p = define_op("triangular_solve", shape=_triangular_solve_shape,
                               impl=impl.triangular_solve_impl, family="decomp",
                               doc=inspect.cleandoc(triangular_solve.__doc__ or ""))


# --------------------------------------------------------------------------- lu
def _lu_shape(a: ShapedArray, *, transposed: bool) -> tuple[ShapedArray, ...]:
    m, n = _matrices(a)
    if transposed:  # the LU of aᵀ: its factor, stored transposed, has a's shape
        m, n = n, m
    i32 = np.dtype(np.int32)
    return (ShapedArray(a.shape, a.dtype), _like(a, (min(m, n),), i32), _like(a, (m,), i32))


def lu(a: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting: (lu, pivots, permutation).

    As jax.lax.linalg.lu: a[..., permutation, :] = L·U with L unit lower-triangular
    (below the diagonal of lu) and U upper-triangular (on and above it); pivots
    (int32, [..., min(m, n)]) are the row swaps: row i was swapped with pivots[i];
    permutation is int32 [..., m]. The pivot is the first row of largest |re|+|im|.

    lu([[1., 2.], [3., 4.]]) -> ([[3., 4.], [1/3, 2/3]], [1, 1], [1, 0])
    """
    return tuple(lu_p.bind(a, transposed=False))  # type: ignore[return-value]


_LU_TRANSPOSED_DOC = """

Param `transposed` (False from `lu`; only the cpu backend's lowering sets it,
`backend/numba/lower_lu.py`):
the LU of aᵀ, its factor stored transposed (a's shape: LAPACK's column-major factor of
aᵀ is a's own row-major memory, so no transpose is copied), its pivots and permutation
as they are."""

lu_p = define_op("lu", shape=_lu_shape, impl=impl.lu_impl, family="decomp",
                 multiple_results=True,
                 doc=inspect.cleandoc(lu.__doc__ or "") + _LU_TRANSPOSED_DOC)


# --------------------------------------------------------------------------- qr
def _qr_shape(a: ShapedArray, *, full_matrices: bool) -> tuple[ShapedArray, ...]:
    m, n = _matrices(a)
    k = m if full_matrices else min(m, n)
    return _like(a, (m, k)), _like(a, (k, n))


def qr(a: Any, full_matrices: bool = True) -> tuple[Any, Any]:
    """QR decomposition (Householder, as LAPACK geqrf + orgqr): a = q·r.

    q has orthonormal columns, r is upper-triangular (its diagonal may be negative).
    full_matrices: q [..., m, m], r [..., m, n]; else q [..., m, k], r [..., k, n]
    with k = min(m, n).

    qr([[3.], [4.]], full_matrices=False) -> ([[-0.6], [-0.8]], [[-5.]])
    """
    return tuple(qr_p.bind(a, full_matrices=_flag("qr", "full_matrices",  # type: ignore
                                                    full_matrices)))


qr_p = define_op("qr", shape=_qr_shape, impl=impl.qr_impl, family="decomp",
                 multiple_results=True, doc=inspect.cleandoc(qr.__doc__ or ""))


# --------------------------------------------------------------------------- eigh
def _eigh_shape(a: ShapedArray, *, lower: bool) -> tuple[ShapedArray, ...]:
    n = _square(a)
    return ShapedArray(a.shape, a.dtype), _like(a, (n,), dtypes.real_dtype(a.dtype))


def eigh(a: Any, lower: bool = True, symmetrize_input: bool = True) -> tuple[Any, Any]:
    """Eigenvectors and eigenvalues of Hermitian matrices: (v, w), as jax.lax.linalg.

    w (real, [..., n]) ascending; v[..., :, i] the unit eigenvector of w[..., i]
    (LAPACK heevd's sign). symmetrize_input first replaces a by (a + aᴴ)/2; then only
    the `lower` (else upper) triangle is read.

    eigh([[2., 1.], [1., 2.]]) -> (v, [1., 3.])
    """
    lower = _flag("eigh", "lower", lower)
    if _flag("eigh", "symmetrize_input", symmetrize_input):
        try:  # check a before the symmetrization's ops see it
            _eigh_shape(operand_aval(a), lower=lower)
        except TracerError as e:
            raise wrapper_error(type(e), "eigh", str(e)) from None
        a = symmetrize(a)
    return tuple(eigh_p.bind(a, lower=lower))  # type: ignore[return-value]


eigh_p = define_op("eigh", shape=_eigh_shape, impl=impl.eigh_impl, family="decomp",
                   multiple_results=True, doc=inspect.cleandoc(eigh.__doc__ or ""))


# --------------------------------------------------------------------------- svd
def _svd_shape(a: ShapedArray, *, full_matrices: bool,
               compute_uv: bool) -> tuple[ShapedArray, ...]:
    m, n = _matrices(a)
    k = min(m, n)
    s = _like(a, (k,), dtypes.real_dtype(a.dtype))
    if not compute_uv:
        return (s,)
    return (_like(a, (m, m if full_matrices else k)), s,
            _like(a, (n if full_matrices else k, n)))


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular value decomposition a = u·diag(s)·vh (LAPACK gesdd), as jax.lax.linalg.

    s (real, [..., k], k = min(m, n)) descending. compute_uv: returns (u, s, vh) with
    u [..., m, m] and vh [..., n, n] (full_matrices) or [..., m, k] and [..., k, n];
    else s alone.

    svd([[3., 0.], [0., 4.]], compute_uv=False) -> [4., 3.]
    """
    outs = svd_p.bind(a, full_matrices=_flag("svd", "full_matrices", full_matrices),
                      compute_uv=_flag("svd", "compute_uv", compute_uv))
    return tuple(outs) if len(outs) == 3 else outs[0]


svd_p = define_op("svd", shape=_svd_shape, impl=impl.svd_impl, family="decomp",
                  multiple_results=True, doc=inspect.cleandoc(svd.__doc__ or ""))

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import decomp_rules  # noqa: E402,F401
