"""The decompositions of tracer.ops (cholesky, triangular_solve, lu, qr, eigh, svd):
semantics against NumPy / SciPy, what each op reads (one triangle, the unit
diagonal), the failure conventions (NaN for a failed matrix), shape / dtype errors,
and the numba cpu kernels against the references (blocked paths included)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu.lib.linalg import SMALL_CHOLESKY
from tests.checks import random_array
from tracer.errors import DTypeError, ParamError, ShapeError

EXAMPLES = settings(max_examples=25)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}




def spd(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    x = random_array(rng, shape, dtype)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def H(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def close(got: Any, want: Any, dtype: Any, scale: float = 1.0) -> None:
    np.testing.assert_allclose(got, want, rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)


batches = st.lists(st.integers(1, 3), max_size=2).map(tuple)


# --------------------------------------------------------------------------- cholesky
@EXAMPLES
@given(batches, st.integers(0, 6), st.sampled_from(DTYPES), st.booleans(), st.integers(0, 99))
def test_cholesky_reads_one_triangle_and_zeros_the_other(batch, n, dtype, lower, seed):
    rng = np.random.default_rng(seed)
    a = spd(rng, batch + (n, n), dtype)
    junk = a.copy()
    other = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    junk[..., other] = np.nan  # never read
    if dtype in (np.complex64, np.complex128):
        junk = junk + 1j * np.eye(n, dtype=dtype)  # imaginary part of the diagonal: ignored
    l = ops.cholesky(junk, lower=lower)
    assert l.shape == a.shape and l.dtype == a.dtype
    want = np.linalg.cholesky(a) if lower else H(np.linalg.cholesky(a))
    close(l, want, dtype)
    assert (l[..., other] == 0).all()


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan():
    good = np.array([[4.0, 2.0], [2.0, 5.0]])
    batch = np.stack([good, -good, np.array([[1.0, np.nan], [np.nan, 1.0]]), good])
    for run in (ops.cholesky, tr.jit(ops.cholesky)):
        out = run(batch)
        assert np.isnan(out[1:3]).all()
        np.testing.assert_allclose(out[[0, 3]], np.linalg.cholesky(good[None]).repeat(2, 0))


# --------------------------------------------------------------------------- triangular_solve
def op_of(a: np.ndarray, lower: bool, transpose_a: bool, conjugate_a: bool,
          unit: bool) -> np.ndarray:
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = np.where(np.eye(a.shape[-1], dtype=bool), np.ones((), a.dtype), t)
    t = np.swapaxes(t, -1, -2) if transpose_a else t
    return np.conj(t) if conjugate_a else t


flags = st.fixed_dictionaries({k: st.booleans() for k in (
    "left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")})


@EXAMPLES
@given(batches, st.integers(0, 5), st.integers(0, 4), st.sampled_from(DTYPES), flags,
       st.integers(0, 99))
def test_triangular_solve_every_flag(batch, n, k, dtype, f, seed):
    rng = np.random.default_rng(seed)
    a = (0.3 * random_array(rng, batch + (n, n), dtype) + 2 * np.eye(n)).astype(dtype)
    b = random_array(rng, batch + ((n, k) if f["left_side"] else (k, n)), dtype)
    junk = a.copy()
    ones = np.ones((n, n), bool)
    unread = np.triu(ones, 1) if f["lower"] else np.tril(ones, -1)
    if f["unit_diagonal"]:
        unread |= np.eye(n, dtype=bool)
    junk[..., unread] = np.nan
    x = ops.triangular_solve(junk, b, **f)
    assert x.shape == b.shape and x.dtype == b.dtype
    t = op_of(a, f["lower"], f["transpose_a"], f["conjugate_a"], f["unit_diagonal"])
    close(t @ x if f["left_side"] else x @ t, b, dtype, 10)


def test_triangular_solve_matches_scipy_and_a_zero_pivot_gives_inf():
    rng = np.random.default_rng(0)
    a, b = np.tril(rng.standard_normal((4, 4))) + 3 * np.eye(4), rng.standard_normal((4, 2))
    want = scipy.linalg.solve_triangular(a, b, lower=True, trans="T")
    np.testing.assert_allclose(ops.triangular_solve(a, b, left_side=True, lower=True,
                                                    transpose_a=True), want, rtol=1e-12)
    a[1, 1] = 0
    out = ops.triangular_solve(a, b, left_side=True, lower=True)
    assert np.isfinite(out[0]).all() and not np.isfinite(out[1:]).any()


# --------------------------------------------------------------------------- lu
@EXAMPLES
@given(batches, st.integers(0, 6), st.integers(0, 6), st.sampled_from(DTYPES),
       st.integers(0, 99))
def test_lu_reconstructs_with_partial_pivoting(batch, m, n, dtype, seed):
    a = random_array(np.random.default_rng(seed), batch + (m, n), dtype)
    lu, pivots, perm = ops.lu(a)
    k = min(m, n)
    assert pivots.shape == batch + (k,) and perm.shape == batch + (m,)
    assert pivots.dtype == perm.dtype == np.int32
    l = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
    u = np.triu(lu[..., :k, :])
    close(np.take_along_axis(a, perm[..., None].astype(np.int64), axis=-2), l @ u, dtype, 10)
    bound = np.sqrt(2) if np.dtype(dtype).kind == "c" else 1  # |re| + |im| pivots
    assert (np.abs(np.tril(lu[..., :, :k], -1)) <= bound + 1e-5).all()
    for idx in np.ndindex(*batch):  # pivots are the row swaps that give perm
        order = np.arange(m)
        for i, p in enumerate(pivots[idx]):
            order[[i, p]] = order[[p, i]]
        np.testing.assert_array_equal(order, perm[idx])


def test_lu_matches_lapack_getrf_and_its_pivot_rule():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5))
    lu, piv = scipy.linalg.lu_factor(a)
    got = ops.lu(a)
    np.testing.assert_allclose(got[0], lu, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got[1], piv)
    # The pivot is the largest |re| + |im| (not |z|), the first one on ties.
    c = np.array([[3 + 0j, 1], [2 + 2j, 1]])
    assert ops.lu(c)[1][0] == 1 == scipy.linalg.lu_factor(c)[1][0]
    assert ops.lu(np.array([[1.0, 0], [-1.0, 1]]))[1][0] == 0


def test_lu_of_a_singular_matrix_is_finite():
    a = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 6.0]])
    lu, _, perm = ops.lu(a)
    assert np.isfinite(lu).all()
    l, u = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    np.testing.assert_allclose(a[perm], l @ u)


# --------------------------------------------------------------------------- qr, eigh, svd
@EXAMPLES
@given(batches, st.integers(0, 5), st.integers(0, 5), st.sampled_from(DTYPES), st.booleans(),
       st.integers(0, 99))
def test_qr(batch, m, n, dtype, full, seed):
    a = random_array(np.random.default_rng(seed), batch + (m, n), dtype)
    q, r = ops.qr(a, full_matrices=full)
    kq = m if full else min(m, n)
    assert q.shape == batch + (m, kq) and r.shape == batch + (kq, n)
    close(q @ r, a, dtype, 10)
    close(H(q) @ q, np.broadcast_to(np.eye(kq), batch + (kq, kq)), dtype, 10)
    assert (np.tril(r, -1) == 0).all()
    want_q, want_r = np.linalg.qr(a, mode="complete" if full else "reduced")
    close(r, want_r, dtype, 10)  # same Householder algorithm: same signs


@EXAMPLES
@given(batches, st.integers(0, 5), st.sampled_from(DTYPES), st.booleans(), st.booleans(),
       st.integers(0, 99))
def test_eigh(batch, n, dtype, lower, symmetrize, seed):
    rng = np.random.default_rng(seed)
    a = random_array(rng, batch + (n, n), dtype)
    v, w = ops.eigh(a, lower=lower, symmetrize_input=symmetrize)
    assert v.dtype == dtype and w.dtype == np.real(a).dtype and w.shape == batch + (n,)
    h = (a + H(a)) / 2 if symmetrize else None
    if h is None:
        t = np.tril(a, -1) if lower else np.triu(a, 1)
        h = t + H(t) + np.real(np.diagonal(a, axis1=-2, axis2=-1))[..., None] * np.eye(n)
    close(w, np.linalg.eigvalsh(h), dtype, 10)
    close(h @ v, v * w[..., None, :], dtype, 10)
    assert (np.diff(w, axis=-1) >= 0).all()


@EXAMPLES
@given(batches, st.integers(0, 5), st.integers(0, 5), st.sampled_from(DTYPES), st.booleans(),
       st.booleans(), st.integers(0, 99))
def test_svd(batch, m, n, dtype, full, uv, seed):
    a = random_array(np.random.default_rng(seed), batch + (m, n), dtype)
    out = ops.svd(a, full_matrices=full, compute_uv=uv)
    k = min(m, n)
    s = out[1] if uv else out
    assert s.shape == batch + (k,) and s.dtype == np.real(a).dtype
    close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
    if uv:
        u, _, vh = out
        assert u.shape == batch + (m, m if full else k)
        assert vh.shape == batch + (n if full else k, n)
        close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)


def test_failed_matrices_are_nan_in_every_output():
    a = np.stack([np.eye(3), np.full((3, 3), np.inf)])
    for outs in (ops.qr(a), ops.eigh(a), ops.svd(a), tr.jit(ops.svd)(a), tr.jit(ops.eigh)(a)):
        for out in outs:
            assert np.isnan(out[1]).all() and np.isfinite(out[0]).all()


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call, cls, words", [
    (lambda: ops.cholesky(np.ones((2, 3))), ShapeError, "square"),
    (lambda: ops.cholesky(np.ones(3)), ShapeError, "rank >= 2"),
    (lambda: ops.cholesky(np.ones((2, 2), np.int32)), DTypeError, "float32"),
    (lambda: ops.cholesky(np.ones((2, 2), np.float16)), DTypeError, "f16"),
    (lambda: ops.cholesky(np.eye(2), lower=1), ParamError, "static bool"),
    (lambda: ops.triangular_solve(np.eye(2), np.ones((3, 2)), left_side=True), ShapeError,
     "2 rows"),
    (lambda: ops.triangular_solve(np.eye(2), np.ones((2, 3))), ShapeError, "2 columns"),
    (lambda: ops.triangular_solve(np.ones((2, 2, 2)), np.ones((3, 2, 2))), ShapeError,
     "batch dimensions"),
    (lambda: ops.triangular_solve(np.eye(2), np.ones((2, 2), np.float32)), DTypeError,
     "share a dtype"),
    (lambda: ops.lu(np.ones(4)), ShapeError, "rank >= 2"),
    (lambda: ops.eigh(np.ones((2, 3))), ShapeError, "square"),
    (lambda: ops.svd(np.ones((2, 2), bool)), DTypeError, "pred"),
])
def test_errors_name_the_op_and_the_operands(call, cls, words):
    with pytest.raises(cls, match=words):
        call()


# --------------------------------------------------------------------------- cpu kernels
def both(fn: Any, *args: Any) -> list[np.ndarray]:
    """fn compiled on the cpu backend, checked against the interpreter."""
    got = tr.jit(fn)(*args)
    want = tr.jit(fn, backend="interpreter")(*args)
    got, want = (list(x) if isinstance(x, (list, tuple)) else [x] for x in (got, want))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    return got


@pytest.mark.parametrize("k", [1, 3, 20])
def test_cpu_blocked_triangular_solve_and_lu(k):
    rng = np.random.default_rng(k)
    a = rng.standard_normal((130, 130)) / 10 + 3 * np.eye(130)
    b = rng.standard_normal((130, k))
    for f in ({"left_side": True, "lower": True}, {"left_side": True, "transpose_a": True},
              {"lower": True, "conjugate_a": True, "unit_diagonal": True}):
        rhs = b if f.get("left_side") else b.T
        both(lambda a, b: ops.triangular_solve(a, b, **f), a, np.ascontiguousarray(rhs))
    both(ops.lu, rng.standard_normal((2, 100, 70)))
    both(ops.lu, rng.standard_normal((70, 100)))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cpu_blocked_paths_of_other_blas_types(dtype):
    """The blocked LU and both triangular solves of `solve` (40 > BLOCK rows) update
    through BLAS gemm of the operands' own type (numba_xxgemm's s and c kinds besides
    float64's d, which the tests above run; z is c's twin)."""
    rng = np.random.default_rng(7)
    a = (random_array(rng, (2, 40, 40), dtype) / 10 + 3 * np.eye(40)).astype(dtype)
    b = random_array(rng, (2, 40, 9), dtype)
    got = tr.jit(tnp.linalg.solve)(a, b)
    want = tr.jit(tnp.linalg.solve, backend="interpreter")(a, b)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])


def test_cpu_cholesky_loop_and_lapack_paths_agree_with_the_reference():
    rng = np.random.default_rng(3)
    for n, lower in ((5, True), (5, False), (40, True), (40, False)):
        a = spd(rng, (3, n, n), np.float64)
        a[1] = -a[1]
        ones = np.ones((n, n), bool)
        unread = np.triu(ones, 1) if lower else np.tril(ones, -1)
        a[:, unread] = np.nan
        out = both(lambda a: ops.cholesky(a, lower=lower), a)[0]
        assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2]]).all()


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 3), st.integers(SMALL_CHOLESKY, 40), st.sampled_from(DTYPES), st.booleans(),
       st.integers(0, 99))
def test_cpu_cholesky_lapack_path_factors_in_place_like_numpy(batch, n, dtype, lower, seed):
    """Matrices of the size the cpu kernel hands to LAPACK potrf in the output's memory:
    the compiled factor matches NumPy's, reads one triangle (junk in the other and in the
    diagonal's imaginary part), zeros the other, and a failed matrix is NaN alone."""
    rng = np.random.default_rng(seed)
    a = spd(rng, (batch, n, n), dtype)
    a[0] = -a[0]  # not positive definite
    junk = a.copy()
    other = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    junk[:, other] = np.nan
    if np.dtype(dtype).kind == "c":
        junk = junk + 1j * np.eye(n, dtype=dtype)
    l = tr.jit(lambda x: ops.cholesky(x, lower=lower))(junk)
    assert l.shape == a.shape and l.dtype == a.dtype and np.isnan(l[0]).all()
    want = np.linalg.cholesky(a[1:]) if lower else H(np.linalg.cholesky(a[1:]))
    close(l[1:], want, dtype, scale=10)
    assert (l[1:, other] == 0).all()


def test_cpu_cholesky_fails_exactly_where_the_reference_does():
    """One inf, NaN or overflowing value at each position of the lower triangle of a
    4x4 (the loop's only finiteness check is on the pivots): NaN factors exactly where
    the reference's LAPACK factor fails or is not finite, equal factors elsewhere."""
    base = spd(np.random.default_rng(5), (4, 4), np.float64)
    batch = []
    for value in (np.inf, -np.inf, np.nan, 1e200, -1e200, 1e-300):
        for i, j in zip(*np.tril_indices(4)):
            m = base.copy()
            m[i, j] = value
            batch.append(m)
    out = both(ops.cholesky, np.stack(batch))[0]
    assert np.isnan(out).all(axis=(1, 2)).any() and np.isfinite(out).all(axis=(1, 2)).any()


def test_cpu_source_calls_the_kernel_with_sizes_from_dims():
    source = tr.jit(lambda a, b: ops.triangular_solve(a, b, left_side=True)).lower(
        np.eye(17), np.ones((17, 11))).compile().source
    assert "triangular_solve_batch(" in source and "left_side=bool(True)" in source
    assert not re.search(r"\b(17|11)\b", source)  # one compile serves every shape


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0), (2, 0, 0), (0, 2, 2)])
def test_cpu_empty_matrices(shape):
    z = np.zeros(shape)
    for fn in (ops.lu, ops.qr, lambda a: ops.qr(a, full_matrices=False), ops.svd,
               lambda a: ops.svd(a, full_matrices=False), lambda a: ops.svd(a, compute_uv=False)):
        both(fn, z)
    if shape[-1] == shape[-2]:
        for fn in (ops.cholesky, ops.eigh, lambda a: ops.triangular_solve(a, a)):
            both(fn, z)
