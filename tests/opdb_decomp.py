"""Op-table cases for the decompositions (XLA's Cholesky, TriangularSolve;
lu, qr, eigh, svd as in jax.lax.linalg). The seeds give no example values; the golden
cases are small hand-checked factorizations. Matrices are well conditioned, so the
cpu kernels agree with the references to the backend test's tolerances."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

R = np.random.default_rng(11)


def _complex(shape, dtype=np.complex128):
    return (R.standard_normal(shape) + 1j * R.standard_normal(shape)).astype(dtype)


def _spd(shape, dtype=np.float64):
    """Hermitian positive-definite matrices [..., n, n] (well conditioned)."""
    n = shape[-1]
    x = _complex(shape) if np.dtype(dtype).kind == "c" else R.standard_normal(shape)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _tri(shape, dtype=np.float64):
    """Matrices whose triangles are both well-conditioned triangular factors."""
    n = shape[-1]
    x = _complex(shape) if np.dtype(dtype).kind == "c" else R.standard_normal(shape)
    return (0.3 * x + 2 * np.eye(n)).astype(dtype)


def _ts(**flags):
    return lambda a, b: ops.triangular_solve(a, b, **flags)


SPD2 = np.array([[4.0, 2.0], [2.0, 5.0]])
NOT_PD = np.stack([SPD2, np.array([[1.0, 2.0], [2.0, 1.0]])])

CASES: list[OpCase] = [
    # cholesky: lower l (a = l lᴴ) or upper u = lᴴ; zeros in the other triangle.
    OpCase("cholesky:golden", lambda a: ops.cholesky(a), (SPD2,),
           expected=np.array([[2.0, 0.0], [1.0, 2.0]])),
    OpCase("cholesky:golden_upper", lambda a: ops.cholesky(a, lower=False), (SPD2,),
           expected=np.array([[2.0, 1.0], [0.0, 2.0]])),
    OpCase("cholesky:not_positive_definite_is_nan", lambda a: ops.cholesky(a), (NOT_PD,),
           expected=np.stack([[[2.0, 0.0], [1.0, 2.0]], np.full((2, 2), np.nan)])),
    OpCase("cholesky:batched_f32", lambda a: ops.cholesky(a), (_spd((2, 3, 4, 4), np.float32),),
           atol=1e-5),
    OpCase("cholesky:upper_c128", lambda a: ops.cholesky(a, lower=False),
           (_spd((2, 5, 5), np.complex128),), atol=1e-12),
    OpCase("cholesky:large_lapack_path", lambda a: ops.cholesky(a), (_spd((30, 30)),),
           atol=1e-12),
    # triangular_solve: every flag, both sides, real and complex.
    OpCase("triangular_solve:golden", _ts(left_side=True, lower=True),
           (np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[2.0], [3.0]])),
           expected=np.array([[1.0], [2.0]])),
    OpCase("triangular_solve:left_lower", _ts(left_side=True, lower=True),
           (_tri((2, 4, 4)), R.standard_normal((2, 4, 3))), atol=1e-12),
    OpCase("triangular_solve:right_upper_transpose_f32",
           _ts(left_side=False, lower=False, transpose_a=True),
           (_tri((3, 4, 4), np.float32), R.standard_normal((3, 2, 4)).astype(np.float32)),
           atol=1e-5),
    OpCase("triangular_solve:left_upper_adjoint_unit_c128",
           _ts(left_side=True, lower=False, transpose_a=True, conjugate_a=True,
               unit_diagonal=True),
           (_tri((5, 5), np.complex128), _complex((5, 9))), atol=1e-12),
    OpCase("triangular_solve:right_lower_conj_c64",
           _ts(left_side=False, lower=True, conjugate_a=True),
           (_tri((2, 3, 3), np.complex64), _complex((2, 4, 3), np.complex64)), atol=1e-5),
    # lu: partial pivoting, a[perm] = L U, pivots as row swaps.
    OpCase("lu:golden", lambda a: ops.lu(a), (np.array([[1.0, 2.0], [3.0, 4.0]]),),
           expected=(np.array([[3.0, 4.0], [1 / 3, 2 / 3]]), np.int32([1, 1]),
                     np.int32([1, 0]))),
    OpCase("lu:batched", lambda a: ops.lu(a), (R.standard_normal((2, 3, 5, 5)),), atol=1e-12),
    OpCase("lu:wide_f32", lambda a: ops.lu(a), (R.standard_normal((3, 6)).astype(np.float32),),
           atol=1e-5),
    OpCase("lu:tall_c128", lambda a: ops.lu(a), (_complex((2, 6, 3)),), atol=1e-12),
    # qr, eigh, svd (SciPy's LAPACK in the reference, the same as the cpu kernels).
    OpCase("qr:golden", lambda a: ops.qr(a, full_matrices=False), (np.array([[3.0], [4.0]]),),
           expected=(np.array([[-0.6], [-0.8]]), np.array([[-5.0]]))),
    OpCase("qr:full_tall", lambda a: ops.qr(a), (R.standard_normal((2, 5, 3)),), atol=1e-12),
    OpCase("qr:reduced_wide_c128", lambda a: ops.qr(a, full_matrices=False),
           (_complex((3, 5)),), atol=1e-12),
    OpCase("eigh:golden_eigenvalues", lambda a: ops.eigh(a)[1],
           (np.array([[2.0, 1.0], [1.0, 2.0]]),), expected=np.array([1.0, 3.0]), ops=("eigh",)),
    OpCase("eigh:batched", lambda a: ops.eigh(a), (_spd((2, 4, 4)),), atol=1e-12),
    OpCase("eigh:upper_no_symmetrize_c64",
           lambda a: ops.eigh(a, lower=False, symmetrize_input=False),
           (_spd((3, 3), np.complex64),), atol=1e-5),
    OpCase("svd:golden_values", lambda a: ops.svd(a, compute_uv=False),
           (np.array([[3.0, 0.0], [0.0, 4.0]]),), expected=np.array([4.0, 3.0])),
    OpCase("svd:full_tall", lambda a: ops.svd(a), (R.standard_normal((2, 5, 3)),), atol=1e-12),
    OpCase("svd:reduced_wide_c128", lambda a: ops.svd(a, full_matrices=False),
           (_complex((3, 6)),), atol=1e-12),
    OpCase("svd:values_f32", lambda a: ops.svd(a, compute_uv=False),
           (R.standard_normal((2, 4, 4)).astype(np.float32),), atol=1e-5),
]
