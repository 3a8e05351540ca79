"""Rules of cholesky, triangular_solve, lu, qr, eigh and svd (tracer/ops/decomp_rules.py):
JVPs against central finite differences in float64 (real, and complex with complex
tangents), triangular_solve's transpose (linear in b) through <ct, L(v)> = <Lᵀ(ct), v>,
batching against loop-and-stack (a shared triangular factor included), and gradients
through the whole transformation stack (grad, jit, vmap)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
import tracer.ops.decomp_rules  # noqa: F401  # installs the rules under test
from tests.test_rules_shape import bdims, check_batch, check_jvp, check_transpose, eqn_for, seeded
from tracer import ops
from tracer.errors import TracerTypeError
from tracer.ops.ad import UndefinedPrimal
from tracer.ops.decomp import triangular_solve_p

EXAMPLES = settings(max_examples=15)
batches = st.lists(st.integers(1, 2), max_size=2).map(tuple)


def spd(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def tri(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return 0.3 * rng.standard_normal(shape) + 2 * np.eye(shape[-1])


def distinct(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Symmetric matrices with well separated eigenvalues (eigh's JVP needs gaps)."""
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    w = np.arange(1, shape[-1] + 1) * 2.0
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2) + 0.05 * spd(rng, shape)


# --------------------------------------------------------------------------- cholesky
@EXAMPLES
@given(batches, st.integers(1, 4), st.booleans(), st.data())
def test_cholesky(batch, n, lower, data):
    rng = seeded(data)
    a = spd(rng, batch + (n, n))
    op, params = eqn_for("cholesky", lambda x: ops.cholesky(x, lower=lower), a)
    check_jvp(op, params, [a], {0}, rng)
    check_batch(op, params, lambda r: [spd(r, batch + (n, n))], bdims(data, [a]), rng)


# --------------------------------------------------------------------------- triangular_solve
flags = st.fixed_dictionaries({k: st.booleans() for k in (
    "left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")})


@EXAMPLES
@given(batches, st.integers(1, 4), st.integers(1, 3), flags, st.data())
def test_triangular_solve(batch, n, k, f, data):
    rng = seeded(data)
    shape_b = batch + ((n, k) if f["left_side"] else (k, n))
    a, b = tri(rng, batch + (n, n)), rng.standard_normal(shape_b)
    op, params = eqn_for("triangular_solve", lambda x, y: ops.triangular_solve(x, y, **f), a, b)
    check_jvp(op, params, [a, b], {0, 1}, rng)
    check_jvp(op, params, [a, b], {0}, rng)
    check_transpose(op, params, [a, b], {1}, rng)
    make = lambda r: [tri(r, batch + (n, n)), r.standard_normal(shape_b)]  # noqa: E731
    check_batch(op, params, make, bdims(data, [a, b]), rng)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_batches_a_shared_factor_as_more_right_hand_sides(left_side):
    rng = np.random.default_rng(0)
    a = tri(rng, (2, 4, 4))
    b = rng.standard_normal((2, 4, 3, 5) if left_side else (2, 5, 3, 4))
    axis = 2
    f = lambda y: ops.triangular_solve(a, y, left_side=left_side, lower=True)  # noqa: E731
    got = tr.vmap(f, in_axes=axis, out_axes=axis)(b)
    want = np.stack([f(np.take(b, i, axis)) for i in range(3)], axis)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    graph = tr.make_hlo(tr.vmap(f, in_axes=axis))(b)
    assert str(graph).count(" triangular-solve(") == 1 and "broadcast" not in str(graph)


def test_triangular_solve_is_not_transposable_in_a():
    b = np.ones((2, 2))
    with pytest.raises(TracerTypeError, match="not linear in a"):
        triangular_solve_p.transpose(b, UndefinedPrimal(tr.ShapedArray((2, 2), np.float64)), b,
                                     left_side=True, lower=True, transpose_a=False,
                                     conjugate_a=False, unit_diagonal=False)


# --------------------------------------------------------------------------- lu, qr, eigh, svd
@EXAMPLES
@given(batches, st.integers(1, 4), st.integers(1, 4), st.data())
def test_lu(batch, m, n, data):
    rng = seeded(data)
    a = rng.standard_normal(batch + (m, n))
    op, params = eqn_for("lu", ops.lu, a)
    check_jvp(op, params, [a], {0}, rng)
    check_batch(op, params, lambda r: [r.standard_normal(batch + (m, n))], bdims(data, [a]), rng)


@EXAMPLES
@given(batches, st.integers(1, 4), st.integers(1, 4), st.booleans(), st.data())
def test_qr(batch, m, n, full, data):
    rng = seeded(data)
    a = rng.standard_normal(batch + (m, n))
    op, params = eqn_for("qr", lambda x: ops.qr(x, full_matrices=full), a)
    check_jvp(op, params, [a], {0}, rng, rtol=1e-5, atol=1e-6)
    check_batch(op, params, lambda r: [r.standard_normal(batch + (m, n))], bdims(data, [a]), rng)


@EXAMPLES
@given(batches, st.integers(1, 4), st.booleans(), st.booleans(), st.data())
def test_eigh(batch, n, lower, symmetrize, data):
    rng = seeded(data)
    a = distinct(rng, batch + (n, n))
    a = a if symmetrize else a + (np.triu if lower else np.tril)(rng.standard_normal(a.shape))
    op, params = eqn_for("eigh", lambda x: ops.eigh(x, lower=lower,
                                                    symmetrize_input=symmetrize), a)
    check_jvp(op, params, [a], {0}, rng, rtol=1e-5, atol=1e-6)
    check_batch(op, params, lambda r: [distinct(r, batch + (n, n))], bdims(data, [a]), rng)


@EXAMPLES
@given(batches, st.integers(1, 4), st.integers(1, 4), st.data())
def test_svd_thin_and_values(batch, m, n, data):
    rng = seeded(data)
    a = rng.standard_normal(batch + (m, n))
    for uv in (False, True):
        op, params = eqn_for("svd", lambda x: ops.svd(x, full_matrices=False, compute_uv=uv), a)
        check_jvp(op, params, [a], {0}, rng, rtol=1e-5, atol=1e-6)
        check_batch(op, params, lambda r: [r.standard_normal(batch + (m, n))],
                    bdims(data, [a]), rng)


def test_svd_full_matrices_tangent_keeps_u_unitary():
    """The extra columns are not determined by a: their tangent turns them only
    against the determined ones; s and the first min(m, n) columns are exact."""
    rng = np.random.default_rng(5)
    for shape in ((5, 3), (3, 5)):
        a, da = rng.standard_normal(shape), rng.standard_normal(shape)
        (u, s, vh), (du, ds, dvh) = tr.jvp(ops.svd, (a,), (da,))
        for q, dq in ((u, du), (vh.T, dvh.T)):
            skew = q.T @ dq
            np.testing.assert_allclose(skew, -skew.T, atol=1e-10)
        k = min(shape)
        (u2, s2, _), (du2, ds2, _) = tr.jvp(lambda x: ops.svd(x, full_matrices=False), (a,), (da,))
        np.testing.assert_allclose(du[:, :k], du2, atol=1e-12)
        np.testing.assert_allclose(ds, ds2, atol=1e-12)


# --------------------------------------------------------------------------- complex JVPs
def _fd_check(fn: Callable[[Any], list[Any]], x: np.ndarray, rng: np.random.Generator,
              tol: float = 1e-6) -> None:
    dx = rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    _, tangents = tr.jvp(lambda y: fn(y), (x,), (dx,))
    eps = 1e-6
    plus, minus = fn(x + eps * dx), fn(x - eps * dx)
    for t, p, m in zip(tangents, plus, minus, strict=True):
        np.testing.assert_allclose(t, (p - m) / (2 * eps), rtol=tol, atol=tol)


def test_complex_jvps_against_finite_differences():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    h = x @ np.conj(np.swapaxes(x, -1, -2)) + 4 * np.eye(4)
    t = 0.3 * x + 2 * np.eye(4)
    _fd_check(lambda y: [ops.cholesky(y), ops.cholesky(y, lower=False)], h, rng)
    _fd_check(lambda y: [ops.triangular_solve(y, x, left_side=True, transpose_a=True,
                                              conjugate_a=True)], t, rng)
    _fd_check(lambda y: [ops.lu(y)[0]], x, rng)
    _fd_check(lambda y: list(ops.qr(y[..., :3])), x, rng)
    _fd_check(lambda y: [ops.eigh(y)[1], ops.svd(y, compute_uv=False)], h, rng, 1e-5)


# --------------------------------------------------------------------------- transformations
def test_grad_through_jit_and_vmap_of_the_decompositions():
    rng = np.random.default_rng(8)
    a = spd(rng, (3, 4, 4))

    def scalar(x):
        l = ops.cholesky(x)
        y = ops.triangular_solve(l, x, left_side=True, lower=True)
        lu = ops.lu(x)[0]
        return tnp.sum(y * y) + tnp.sum(l * lu) + tnp.sum(ops.eigh(x)[1] ** 2)

    grads = tr.jit(tr.vmap(tr.grad(scalar)))(a)
    eps = 1e-6
    for i in range(3):
        d = rng.standard_normal((4, 4))
        fd = (scalar(a[i] + eps * d) - scalar(a[i] - eps * d)) / (2 * eps)
        np.testing.assert_allclose(np.sum(grads[i] * d), fd, rtol=1e-6, atol=1e-8)
