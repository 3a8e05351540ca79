"""`tracer.numpy.linalg`: solving and factoring (solve, inv, det, slogdet, cholesky,
qr, eigh, eigvalsh, svd, svdvals, lstsq, pinv, matrix_rank, matrix_power, cond,
tensorsolve, tensorinv), on the decompositions of `tracer.ops`.

NumPy 2 rules: stacks of matrices broadcast like NumPy's gufuncs; dtypes follow
NumPy's linalg `_commonType` (bool / integers -> float64, float32 stays float32,
complex stays complex, float16 is rejected). Deliberate differences, because a
compiled function cannot raise on data: a singular matrix gives inf / NaN instead of
LinAlgError, cholesky of a non-positive-definite matrix gives NaNs, and float32 input
is computed in float32 (NumPy computes in float64 and rounds).
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from .. import dtypes, ops
from ..ops.decomp_util import diag_part
from ..errors import DTypeError, ShapeError, TracerTypeError, TracerValueError
from .. import numpy as tnp  # (bound by the time any function here runs)
from ._promotion import (asarray_like, broadcast_shapes, broadcast_to_shape, cast, error,
                         is_concrete, tracing)


class LinAlgError(ShapeError, np.linalg.LinAlgError):
    """NumPy's LinAlgError for the shape errors NumPy raises it for."""


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


# --------------------------------------------------------------------------- operands
def operand(a: Any, fname: str) -> Any:
    x = asarray_like(a, fname)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def common_type(*xs: Any, fname: str) -> np.dtype:
    """NumPy linalg's result type: float64 unless every operand is float32/complex64."""
    double = cplx = False
    for x in xs:
        dt = np.dtype(x.dtype)
        cplx = cplx or dt.kind == "c"
        if dtypes.is_inexact(dt) and dt.itemsize // (2 if dt.kind == "c" else 1) < 4:
            raise error(DTypeError, fname, f"array type {dt.name} is unsupported in linalg")
        double = double or not dtypes.is_inexact(dt) or dt in (np.float64, np.complex128)
    base = np.dtype(np.float64 if double else np.float32)
    return dtypes.complex_dtype(base) if cplx else base


def stacked(a: Any, fname: str, square: bool = False) -> Any:
    """A stack of matrices in its linalg dtype; LinAlgError for other shapes."""
    x = operand(a, fname)
    if x.ndim < 2:
        raise error(LinAlgError, fname, f"{x.ndim}-dimensional array given. Array must be "
                    f"at least two-dimensional")
    if square and x.shape[-1] != x.shape[-2]:
        raise error(LinAlgError, fname, "Last 2 dimensions of the array must be square")
    return cast(x, common_type(x, fname=fname), fname=fname)


def mT(x: Any) -> Any:
    return tnp.swapaxes(x, -1, -2)


def H(x: Any) -> Any:
    return tnp.conjugate(mT(x)) if dtypes.is_complex(x.dtype) else mT(x)


def _real(dtype: np.dtype) -> np.dtype:
    return dtypes.real_dtype(dtype)


# --------------------------------------------------------------------------- solve, inv, det
def lu_solve(a: Any, b: Any) -> Any:
    """a⁻¹ b for equal batch dims, on the LU of aᵀ: aᵀ[perm] = L U, so a = Uᵀ Lᵀ P, and
    Uᵀ y = b, Lᵀ z = y, x[perm] = z (LAPACK getrs' route with its transpose flag). The
    cpu backend factors aᵀ where a lies, by LAPACK's column-major getrf on a plain copy,
    and solves on that factor with no transposed copy of it (`lu`'s `transposed`)."""
    lu, _, perm = ops.lu(mT(a))
    return solve_transposed(lu, perm, b)


def solve_transposed(lu: Any, perm: Any, b: Any) -> Any:
    """x with mᵀ x = b from `ops.lu(m)`'s factor and permutation (m[perm] = L U, so
    mᵀ = Uᵀ Lᵀ P): Uᵀ y = b, Lᵀ z = y, x[perm] = z."""
    y = ops.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True)
    z = ops.triangular_solve(lu, y, left_side=True, lower=True, transpose_a=True,
                             unit_diagonal=True)
    return permute_rows(z, inverse_permutation(perm))


def inverse_permutation(perm: Any) -> Any:
    """inv with inv[..., perm[..., i]] = i: one scatter of an iota (batched), into perm
    itself: a permutation writes every position."""
    nb = perm.ndim - 1
    batch = tuple(range(nb))
    dn = ops.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(nb,),
                                     scatter_dims_to_operand_dims=(nb,),
                                     index_vector_dim=nb + 1, input_batching_dims=batch,
                                     scatter_indices_batching_dims=batch)
    iota = ops.iota(perm.dtype, perm.shape, nb)
    return ops.scatter(perm, ops.reshape(perm, tuple(perm.shape) + (1,)), iota, None, dn,
                       unique_indices=True)


def permute_rows(b: Any, perm: Any) -> Any:
    """b[..., perm, :]: one gather of whole rows (batched over the leading dims)."""
    nb = b.ndim - 2
    if not b.shape[-2]:
        return b
    batch = tuple(range(nb))
    dn = ops.GatherDimensionNumbers(offset_dims=(nb + 1,), collapsed_slice_dims=(nb,),
                                    start_index_map=(nb,), index_vector_dim=nb + 1,
                                    operand_batching_dims=batch,
                                    start_indices_batching_dims=batch)
    rows = ops.reshape(perm, tuple(perm.shape) + (1,))
    return ops.gather(b, rows, dn, (1,) * (nb + 1) + (b.shape[-1],))


def solve(a: Any, b: Any) -> Any:
    """Solve a x = b. NumPy 2 rule: b is a vector only when 1-D, otherwise a stack of
    [M, K] matrices; batch dims broadcast. Singular a gives inf/NaN (no LinAlgError)."""
    a, b = stacked(a, "solve", square=True), operand(b, "solve")
    dtype = common_type(a, b, fname="solve")
    a, b = cast(a, dtype), cast(b, dtype)
    vector = b.ndim == 1
    if vector:
        b = tnp.expand_dims(b, -1)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise error(ShapeError, "solve", f"b must be [..., {a.shape[-1]}, K] or "
                    f"[{a.shape[-1]}] for a of shape {a.shape}, got shape {np.shape(b)}")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], fname="solve")
    x = lu_solve(broadcast_to_shape(a, batch + a.shape[-2:], "solve"),
                 broadcast_to_shape(b, batch + b.shape[-2:], "solve"))
    return tnp.squeeze(x, -1) if vector else x


def inv(a: Any) -> Any:
    """Inverse of (stacks of) square matrices, as solve(a, I)."""
    a = stacked(a, "inv", square=True)
    n = a.shape[-1]
    return lu_solve(a, broadcast_to_shape(tnp.eye(n, dtype=a.dtype), a.shape, "inv"))


def _lu_parts(a: Any) -> tuple[Any, Any]:
    """(diagonal of U, ±1 parity of the row swaps) of lu(a)."""
    lu, pivots, _ = ops.lu(a)
    n = a.shape[-1]
    swaps = tnp.count_nonzero(tnp.not_equal(pivots, np.arange(n, dtype=np.int32)), axis=-1)
    parity = tnp.subtract(1, tnp.multiply(2, tnp.remainder(swaps, 2)))
    # A masked sum, not tnp.diagonal's strided slice: the cpu backend mis-indexes a
    # slice of a strided slice (reported), which prod's JVP would build here.
    return diag_part(lu), parity


def det(a: Any) -> Any:
    """Determinant of (stacks of) square matrices: ±prod(diag(U)) of the LU."""
    a = stacked(a, "det", square=True)
    diag, parity = _lu_parts(a)
    return tnp.multiply(tnp.prod(diag, axis=-1), cast(parity, a.dtype))


def slogdet(a: Any) -> SlogdetResult:
    """(sign, log|det|); sign is 0 and logabsdet -inf for a singular matrix."""
    a = stacked(a, "slogdet", square=True)
    diag, parity = _lu_parts(a)
    mag = tnp.absolute(diag)
    zero = tnp.equal(mag, 0)
    with np.errstate(divide="ignore"):  # log(0) = -inf: a singular matrix
        logabs = tnp.sum(tnp.log(mag), axis=-1)
    if dtypes.is_complex(a.dtype):
        phase = tnp.where(zero, 0, tnp.divide(diag, tnp.where(zero, 1, mag)))
    else:
        phase = tnp.sign(diag)
    sign = tnp.multiply(tnp.prod(phase, axis=-1), cast(parity, a.dtype))
    return SlogdetResult(sign, logabs)


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """Cholesky factor (lower, or upper with upper=True) reading only that triangle;
    a matrix that is not positive definite gives NaNs (NumPy raises LinAlgError)."""
    return ops.cholesky(stacked(a, "cholesky", square=True), lower=not bool(upper))


def matrix_power(a: Any, n: Any) -> Any:
    """a to the integer power n by repeated squaring (n < 0: of inv(a))."""
    x = operand(a, "matrix_power")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        stacked(x, "matrix_power", square=True)  # raises NumPy's LinAlgError
    try:
        n = operator.index(n)
    except TypeError:
        raise error(TracerTypeError, "matrix_power", "exponent must be an integer") from None
    if n == 0:
        return broadcast_to_shape(tnp.eye(x.shape[-1], dtype=x.dtype), x.shape, "matrix_power")
    if n < 0:
        x, n = inv(x), -n
    result, z = None, None
    while n > 0:
        z = x if z is None else tnp.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else tnp.matmul(result, z)
    return result


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """x with tensordot(a, x, x.ndim) == b (NumPy's reshape to one square solve)."""
    a, b = operand(a, "tensorsolve"), operand(b, "tensorsolve")
    if axes is not None:
        order = [k for k in range(a.ndim) if k not in [x % a.ndim for x in axes]]
        a = tnp.transpose(a, order + [x % a.ndim for x in axes])
    old = a.shape[b.ndim:]
    size = int(np.prod(old))
    if int(np.prod(a.shape)) != size ** 2:
        raise error(LinAlgError, "tensorsolve", "Input arrays must satisfy the requirement "
                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x = solve(tnp.reshape(a, (size, size)), tnp.reshape(b, (size,)))
    return tnp.reshape(x, old)


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of a tensor for tensordot(., ., ind) (NumPy's reshape to one inv)."""
    a = operand(a, "tensorinv")
    if ind <= 0:
        raise error(TracerValueError, "tensorinv", "Invalid ind argument.")
    rows = int(np.prod(a.shape[ind:]))
    inverse = inv(tnp.reshape(a, (rows, -1)))
    return tnp.reshape(inverse, a.shape[ind:] + a.shape[:ind])


# --------------------------------------------------------------------------- factorizations
def qr(a: Any, mode: str = "reduced") -> Any:
    """QR of stacks of matrices; mode "reduced", "complete" or "r" (R alone)."""
    if mode not in ("reduced", "complete", "r"):
        raise error(TracerValueError, "qr", f"Unrecognized mode '{mode}' (tracer supports "
                    f"'reduced', 'complete' and 'r')")
    x = stacked(a, "qr")
    q, r = ops.qr(x, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _uplo(UPLO: Any, fname: str) -> bool:
    if UPLO not in ("L", "U"):
        raise error(TracerValueError, fname, "UPLO argument must be 'L' or 'U'")
    return UPLO == "L"


def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices, reading only
    the UPLO triangle."""
    lower = _uplo(UPLO, "eigh")
    v, w = ops.eigh(stacked(a, "eigh", square=True), lower=lower, symmetrize_input=False)
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str = "L") -> Any:
    """Eigenvalues (ascending) of Hermitian matrices."""
    return eigh(a, UPLO).eigenvalues


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> Any:
    """SVD of stacks of matrices: SVDResult(U, S, Vh), or S when not compute_uv;
    hermitian=True goes through eigh, as NumPy."""
    x = stacked(a, "svd", square=bool(hermitian))
    if hermitian:
        return _hermitian_svd(x, bool(compute_uv))
    if not compute_uv:
        return ops.svd(x, compute_uv=False)
    return SVDResult(*ops.svd(x, full_matrices=bool(full_matrices)))


def _hermitian_svd(x: Any, compute_uv: bool) -> Any:
    w, v = eigh(x)
    s = tnp.absolute(w)
    order = _descending(s)  # [..., n, n] one-hot: row r picks the r-th largest
    s_sorted = tnp.matmul(order, tnp.expand_dims(s, -1))[..., 0]
    if not compute_uv:
        return s_sorted
    sgn = tnp.copysign(np.ones((), s.dtype), w)
    u = tnp.matmul(v, cast(mT(order), v.dtype))
    signs = tnp.matmul(order, tnp.expand_dims(sgn, -1))[..., 0]
    vh = H(tnp.multiply(u, cast(tnp.expand_dims(signs, -2), u.dtype)))
    return SVDResult(u, s_sorted, vh)


def _descending(s: Any) -> Any:
    """The permutation matrix sorting s descending (ties: later index first, as
    NumPy's argsort(s)[..., ::-1]): rank_i = #{j: s_j > s_i} + #{j > i: s_j == s_i}."""
    n = s.shape[-1]
    si, sj = tnp.expand_dims(s, -1), tnp.expand_dims(s, -2)
    later = np.arange(n)[None, :] > np.arange(n)[:, None]
    before = tnp.logical_or(tnp.greater(sj, si), tnp.logical_and(tnp.equal(sj, si), later))
    rank = tnp.count_nonzero(before, axis=-1)
    one_hot = tnp.equal(tnp.expand_dims(rank, -2), np.arange(n)[:, None])
    return cast(one_hot, s.dtype)


def svdvals(x: Any, /) -> Any:
    """Singular values (descending) of stacks of matrices."""
    return ops.svd(stacked(x, "svdvals"), compute_uv=False)


def _large(s: Any, cutoff: Any) -> tuple[Any, Any]:
    """(s > cutoff, 1/s there and 0 elsewhere)."""
    large = tnp.greater(s, cutoff)
    return large, tnp.where(large, tnp.divide(1, tnp.where(large, s, 1)), 0)


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Any, Any, Any, Any]:
    """Least squares x minimizing |b - a x| (NumPy: (x, residuals, rank, s)).

    Computed by SVD in the operands' precision (NumPy: float64); rcond defaults to
    eps * max(M, N) of that precision. residuals: NumPy returns an empty array unless
    rank == N < M; traced, the rank is unknown, so for M > N they are always returned."""
    a, b = operand(a, "lstsq"), operand(b, "lstsq")
    vector = b.ndim == 1
    b = tnp.expand_dims(b, -1) if vector else b
    if a.ndim != 2 or b.ndim != 2:
        raise error(LinAlgError, "lstsq", f"{a.ndim if a.ndim != 2 else b.ndim}-dimensional "
                    f"array given. Array must be two-dimensional")
    m, n = a.shape
    if b.shape[0] != m:
        raise error(LinAlgError, "lstsq", "Incompatible dimensions")
    dtype = common_type(a, b, fname="lstsq")
    a, b = cast(a, dtype), cast(b, dtype)
    if rcond is None:
        rcond = np.finfo(dtype).eps * max(m, n)
    u, s, vh = ops.svd(a, full_matrices=False)
    top = tnp.max(s, axis=-1, initial=0)
    large, s_inv = _large(s, tnp.multiply(rcond, top))
    x = tnp.matmul(H(vh), tnp.multiply(cast(tnp.expand_dims(s_inv, -1), dtype),
                                      tnp.matmul(H(u), b)))
    rank = cast(tnp.count_nonzero(large), np.dtype(np.int32))
    resid = tnp.sum(tnp.square(tnp.absolute(tnp.subtract(b, tnp.matmul(a, x)))), axis=0)
    if m <= n or (is_concrete(rank) and int(rank) != n):
        resid = np.zeros((0,), _real(dtype))
    return (tnp.squeeze(x, -1) if vector else x), resid, rank, s


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = np._NoValue) -> Any:
    """Moore-Penrose pseudo-inverse by SVD, singular values <= rcond * max(s) dropped
    (NumPy 2 defaults: rcond 1e-15, or rtol)."""
    x = stacked(a, "pinv")
    if rcond is None:
        rcond = (1e-15 if rtol is np._NoValue else
                 max(x.shape[-2:]) * np.finfo(x.dtype).eps if rtol is None else rtol)
    elif rtol is not np._NoValue:
        raise error(TracerValueError, "pinv", "`rtol` and `rcond` can't be both set.")
    m, n = x.shape[-2:]
    if m * n == 0:
        return np.zeros(x.shape[:-2] + (n, m), x.dtype) if not tracing() else \
            ops.broadcast_in_dim(np.zeros((), x.dtype), x.shape[:-2] + (n, m), ())
    u, s, vh = svd(tnp.conjugate(x), full_matrices=False, hermitian=hermitian)
    cutoff = tnp.multiply(tnp.expand_dims(operand(rcond, "pinv"), -1),
                         tnp.max(s, axis=-1, keepdims=True))
    _, s_inv = _large(s, cutoff)
    return tnp.matmul(mT(vh), tnp.multiply(cast(tnp.expand_dims(s_inv, -1), x.dtype), mT(u)))


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    """Number of singular values above tol (default: max(s) * max(M, N) * eps)."""
    x = operand(A, "matrix_rank")
    if x.ndim < 2:
        return cast(tnp.any(tnp.not_equal(x, 0)), np.dtype(np.int64))
    s = svd(x, compute_uv=False, hermitian=hermitian)
    if tol is None:
        rtol = (max(x.shape[-2:]) * np.finfo(s.dtype).eps if rtol is None
                else tnp.expand_dims(operand(rtol, "matrix_rank"), -1))
        tol = tnp.multiply(tnp.max(s, axis=-1, keepdims=True, initial=0), rtol)
    else:
        tol = tnp.expand_dims(operand(tol, "matrix_rank"), -1)
    return tnp.count_nonzero(tnp.greater(s, tol), axis=-1)
