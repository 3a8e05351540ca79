"""tracer.numpy.linalg against NumPy itself: values and result dtypes, eagerly and under
jit (cpu backend), on well-conditioned random stacks of matrices; gradients against
finite differences (float64); vmap against a loop; NumPy's errors."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.checks import raises_like_numpy
from tracer.errors import TracerError

L = tnp.linalg
DTYPES = [np.float64, np.float32, np.complex128, np.complex64, np.int64]
JIT_DTYPES = [np.float64, np.float32]
MODES = ["eager", "jit"]


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-3, 4, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def general(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Well-conditioned square matrices (diagonally dominant)."""
    return (rand(rng, shape, dtype) + 4 * shape[-1] * np.eye(shape[-1])).astype(dtype)


def spd(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    x = rand(rng, shape, dtype)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def leaves(x: Any) -> list[Any]:
    return [y for v in x for y in leaves(v)] if isinstance(x, tuple) else [x]


class Checks:
    """Comparisons with NumPy, run together: one by one eagerly, or as one jitted
    function (a single compile for all of them)."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.cases: list[tuple[Callable[..., Any], Any, tuple, float]] = []

    def add(self, fn: Callable[..., Any], want: Any, *args: Any, scale: float = 1.0) -> None:
        self.cases.append((fn, want, args, scale))

    def run(self, mode: str) -> list[Any]:
        flat = [a for _, _, args, _ in self.cases for a in args]

        def every(*xs: Any) -> list[Any]:
            it = iter(xs)
            return [fn(*[next(it) for _ in args]) for fn, _, args, _ in self.cases]

        results = (tr.jit(every) if mode == "jit" else every)(*flat)
        for (_, want, _, scale), got in zip(self.cases, results, strict=True):
            self._check(got, want, scale)
        return results

    def _check(self, got: Any, want: Any, scale: float) -> None:
        if isinstance(want, tuple):  # namedtuples as NumPy's (EighResult, ...), or a tuple
            assert type(got).__name__ == type(want).__name__
        single = self.dtype in (np.float32, np.complex64)
        tol = (2e-4 if single else 1e-9) * scale
        for g, w in zip(leaves(got), leaves(want), strict=True):
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape,
                                                               w.shape)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


batches = st.lists(st.integers(1, 2), max_size=1).map(tuple)


def draw(data: Any, mode: str) -> tuple[np.random.Generator, Any, tuple[int, ...], int]:
    dtype = data.draw(st.sampled_from(JIT_DTYPES if mode == "jit" else DTYPES))
    return (np.random.default_rng(data.draw(st.integers(0, 999))), dtype, data.draw(batches),
            data.draw(st.integers(1, 4)))


# --------------------------------------------------------------------------- solve and friends
def solve_inv_det_slogdet(data: Any, mode: str) -> None:
    rng, dtype, batch, n = draw(data, mode)
    a = general(rng, batch + (n, n), dtype)
    b = rand(rng, (n, 3), dtype if dtype != np.int64 else np.float32)
    v = rand(rng, (n,), dtype)
    c = Checks(dtype)
    c.add(L.solve, np.linalg.solve(a, b), a, b)
    c.add(L.solve, np.linalg.solve(a, v), a, v)
    c.add(L.inv, np.linalg.inv(a), a)
    c.add(L.det, np.linalg.det(a), a, scale=10)
    c.add(L.slogdet, np.linalg.slogdet(a), a)
    c.run(mode)


def test_det_and_slogdet_of_singular_and_empty_matrices():
    for mode in MODES:
        c = Checks(np.float64)
        for a in (np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((0, 0)),
                  np.array([[0, 1], [1, 0]])):
            c.add(L.det, np.linalg.det(a), a)
            c.add(L.slogdet, np.linalg.slogdet(a), a)
        c.run(mode)


def cholesky_and_matrix_power(data: Any, mode: str) -> None:
    rng, dtype, batch, n = draw(data, mode)
    s = spd(rng, batch + (n, n), dtype)
    c = Checks(dtype)
    c.add(L.cholesky, np.linalg.cholesky(s), s)
    c.add(lambda x: L.cholesky(x, upper=True), np.linalg.cholesky(s, upper=True), s)
    a = general(rng, batch + (n, n), dtype) / (4 * n)
    for p in (0, 1, 2, 5, -3):
        c.add(lambda x, p=p: L.matrix_power(x, p), np.linalg.matrix_power(a, p), a, scale=10)
    ints = rng.integers(-2, 3, (n, n))
    c.add(lambda x: L.matrix_power(x, 3), np.linalg.matrix_power(ints, 3), ints)
    c.run(mode)


# --------------------------------------------------------------------------- factorizations
def _unsign(v: np.ndarray) -> np.ndarray:
    """Eigenvectors with the phase of each one's largest entry removed."""
    big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    return v * (np.abs(big) / big)


def _reconstructs(u: Any, s: Any, vh: Any, a: np.ndarray) -> None:
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-3)


def qr_eigh_svd(data: Any, mode: str) -> None:
    rng, dtype, batch, n = draw(data, mode)
    m = data.draw(st.integers(1, 4))
    a = rand(rng, batch + (m, n), dtype)
    sym = spd(rng, batch + (n, n), dtype) - 2 * n * np.eye(n).astype(dtype)  # mixed signs
    h = sym + rng.standard_normal(sym.shape).astype(dtype) * np.tril(np.ones((n, n)), -1)
    c = Checks(dtype)
    for q_mode in ("reduced", "complete", "r"):
        c.add(lambda x, q=q_mode: L.qr(x, q), np.linalg.qr(a, q_mode), a, scale=10)
    for uplo in ("L", "U"):
        c.add(lambda x, u=uplo: L.eigvalsh(x, u), np.linalg.eigvalsh(h, uplo), h)
    c.add(L.svdvals, np.linalg.svdvals(a), a, scale=10)
    c.add(lambda x: L.svd(x, compute_uv=False), np.linalg.svd(a, compute_uv=False), a,
          scale=10)
    c.add(lambda x: L.svd(x, compute_uv=False, hermitian=True),
          np.linalg.svd(sym, compute_uv=False, hermitian=True), sym, scale=10)
    c.run(mode)
    # Vectors: up to sign / phase (eigh), by reconstruction (svd); shapes and dtypes as NumPy.
    def vectors(x: Any, y: Any, z: Any) -> tuple:
        return L.eigh(x, "U"), L.svd(y), L.svd(y, False), L.svd(z, hermitian=True)

    eig, full, thin, herm = (tr.jit(vectors) if mode == "jit" else vectors)(h, a, sym)
    want = np.linalg.eigh(h, "U")  # h's upper triangle: sym's
    assert type(eig).__name__ == "EighResult" and eig[1].dtype == want[1].dtype
    np.testing.assert_allclose(_unsign(eig[1]), _unsign(want.eigenvectors), atol=1e-3)
    for got, ref, x in ((full, np.linalg.svd(a), a), (thin, np.linalg.svd(a, False), a),
                        (herm, np.linalg.svd(sym, hermitian=True), sym)):
        assert [(g.shape, g.dtype) for g in got] == [(r.shape, r.dtype) for r in ref]
        _reconstructs(*got, x)


def lstsq_pinv_matrix_rank(data: Any, mode: str) -> None:
    rng, dtype, _, n = draw(data, mode)
    m = n + data.draw(st.integers(0, 3))
    a = rand(rng, (m, n), dtype)
    h = spd(rng, (n, n), dtype) - 2 * n * np.eye(n).astype(dtype)  # mixed signs
    deficient = np.concatenate([a, a[:, :1] * 2], axis=1)  # rank n of n + 1 columns
    c = Checks(dtype)
    for b in (rand(rng, (m,), dtype), rand(rng, (m, 2), dtype)):
        c.add(L.lstsq, np.linalg.lstsq(a, b), a, b, scale=100)
    c.add(L.pinv, np.linalg.pinv(a), a, scale=10)
    c.add(lambda x: L.pinv(x, hermitian=True), np.linalg.pinv(h, hermitian=True), h,
          scale=10)
    c.add(L.matrix_rank, np.linalg.matrix_rank(deficient), deficient)
    c.add(L.matrix_rank, np.linalg.matrix_rank(a), a)
    c.run(mode)


def test_lstsq_residuals_of_a_rank_deficient_system():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.array([1.0, 0.0, 1.0])
    c = Checks(np.float64)
    c.add(L.lstsq, np.linalg.lstsq(a, b), a, b)
    c.run("eager")
    x, resid, rank, s = tr.jit(L.lstsq)(a, b)  # traced: the residual is returned anyway
    assert int(rank) == 1 and resid.shape == (1,)
    np.testing.assert_allclose(resid, np.sum((b - a @ x) ** 2, keepdims=True))


# --------------------------------------------------------------------------- norms
VECTOR_ORDS = [None, 2, 1, 0, 3, 0.5, np.inf, -np.inf]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def norms(data: Any, mode: str) -> None:
    rng, dtype, _, n = draw(data, mode)
    x = rand(rng, (2, n, 3), dtype)
    sq = general(rng, (2, n, n), dtype)
    keep = data.draw(st.booleans())
    c = Checks(dtype)
    o = data.draw(st.sampled_from(VECTOR_ORDS))
    axis = data.draw(st.sampled_from([0, 1, -1]))
    c.add(lambda y, o=o: L.norm(y, o, axis, keep), np.linalg.norm(x, o, axis, keep), x)
    o = data.draw(st.sampled_from(MATRIX_ORDS))
    axes = data.draw(st.sampled_from([(1, 2), (2, 0), (-1, -2)]))
    c.add(lambda y: L.norm(y, o, axes, keep), np.linalg.norm(x, o, axes, keep), x)
    c.add(lambda y: L.matrix_norm(y, ord=o, keepdims=keep),
          np.linalg.matrix_norm(x, ord=o, keepdims=keep), x)
    c.add(lambda y: L.norm(y, keepdims=keep), np.linalg.norm(x, keepdims=keep), x)
    for ax in (None, 1, (0, 2)):
        c.add(lambda y, ax=ax: L.vector_norm(y, axis=ax, keepdims=keep, ord=3),
              np.linalg.vector_norm(x, axis=ax, keepdims=keep, ord=3), x)
    for p in (None, 1, -np.inf, "fro"):
        c.add(lambda y, p=p: L.cond(y, p), np.linalg.cond(sq, p), sq, scale=10)
    c.run(mode)


# Each group runs eagerly on many examples and every dtype NumPy's linalg takes, and
# jitted (cpu backend) on a few: every example of those is one compile.
EAGER, JIT = settings(max_examples=10), settings(max_examples=2)
GROUPS = [solve_inv_det_slogdet, cholesky_and_matrix_power, qr_eigh_svd,
          lstsq_pinv_matrix_rank, norms]


@pytest.mark.parametrize("group", GROUPS, ids=[g.__name__ for g in GROUPS])
@EAGER
@given(data=st.data())
def test_against_numpy_eagerly(group, data):
    group(data, "eager")


@pytest.mark.parametrize("group", GROUPS, ids=[g.__name__ for g in GROUPS])
@JIT
@given(data=st.data())
def test_against_numpy_under_jit(group, data):
    group(data, "jit")


# --------------------------------------------------------------------------- products
@pytest.mark.parametrize("mode", MODES)
def test_products_and_views(mode):
    rng = np.random.default_rng(3)
    a, b = rand(rng, (2, 3, 3), np.float64), rand(rng, (3, 3), np.int32)
    v, w = rand(rng, (4, 3), np.float32), rand(rng, (3,), np.int64)
    chain = [rand(rng, s, np.float64) for s in ((5,), (5, 2), (2, 7), (7, 3), (3,))]
    cases = [
        (L.cross, np.linalg.cross, (v, w)),
        (lambda x, y: L.cross(x, y, axis=0), lambda x, y: np.linalg.cross(x, y, axis=0),
         (a[0], b)),
        (L.outer, np.linalg.outer, (w, v[0])),
        (L.matmul, np.linalg.matmul, (a, b)),
        (lambda x, y: L.tensordot(x, y, axes=1), lambda x, y: np.linalg.tensordot(x, y, axes=1),
         (a, b)),
        (L.trace, np.linalg.trace, (a,)),
        (lambda x: L.trace(x, offset=1), lambda x: np.linalg.trace(x, offset=1), (a,)),
        (L.diagonal, np.linalg.diagonal, (a,)),
        (L.vecdot, np.linalg.vecdot, (a, b)),
        (L.matrix_transpose, np.linalg.matrix_transpose, (a,)),
        (lambda *xs: L.multi_dot(xs), lambda *xs: np.linalg.multi_dot(xs), tuple(chain)),
        (lambda *xs: L.multi_dot(xs), lambda *xs: np.linalg.multi_dot(xs), tuple(chain[1:4])),
        (lambda x: L.tensorinv(x, 1), lambda x: np.linalg.tensorinv(x, 1),
         (general(rng, (4, 4), np.float64),)),
        (L.tensorsolve, np.linalg.tensorsolve,
         (general(rng, (6, 6), np.float64).reshape(2, 3, 6), rand(rng, (2, 3), np.float64))),
    ]
    c = Checks(np.float64)
    for fn, ref, args in cases:
        c.add(fn, ref(*args), *args)
    c.run(mode)


def test_numpy_functions_on_traced_arrays_run_tracer_numpy_linalg():
    a = general(np.random.default_rng(4), (3, 3), np.float64)
    f = tr.jit(lambda x: (np.linalg.det(x), np.linalg.norm(x, 2), np.linalg.inv(x)))
    for got, want in zip(f(a), (np.linalg.det(a), np.linalg.norm(a, 2), np.linalg.inv(a))):
        np.testing.assert_allclose(got, want, rtol=1e-10)


# --------------------------------------------------------------------------- gradients
def check_grads(cases: list[tuple[Callable[[Any], Any], np.ndarray]], jit: bool = True) -> None:
    """grad of <weights, fn(x)> (every output leaf) against central differences, for
    every (fn, x); all the gradients under one jit (one compile)."""
    rng = np.random.default_rng(0)
    scalars = []
    for fn, x in cases:
        weights = [rng.standard_normal(np.shape(o)) for o in leaves(fn(x))]
        scalars.append(lambda y, fn=fn, w=weights: sum(
            tnp.sum(o * wt) for o, wt in zip(leaves(fn(y)), w, strict=True)))
    every = lambda *xs: [tr.grad(f)(x) for f, x in zip(scalars, xs, strict=True)]  # noqa
    grads = (tr.jit(every) if jit else every)(*[x for _, x in cases])
    eps = 1e-6
    for f, (_, x), g in zip(scalars, cases, grads, strict=True):
        d = rng.standard_normal(x.shape)
        fd = (f(x + eps * d) - f(x - eps * d)) / (2 * eps)
        np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6, atol=1e-8)


def test_gradients_against_finite_differences():
    rng = np.random.default_rng(6)
    a, s = general(rng, (2, 4, 4), np.float64), spd(rng, (4, 4), np.float64)
    b, t, y = rand(rng, (4, 2), np.float64), rand(rng, (5, 3), np.float64), rand(rng, (5,),
                                                                                  np.float64)
    check_grads([
        (lambda x: L.solve(x, b), a), (lambda y: L.solve(a, y), b), (L.inv, a), (L.det, a),
        (lambda x: L.slogdet(x).logabsdet, a), (L.cholesky, s), (L.eigvalsh, s),
        (L.svdvals, t), (lambda x: tuple(L.qr(x)), t), (lambda x: L.qr(x, "complete").R, t),
        (lambda x: L.norm(x, 2), t), (L.pinv, t), (lambda x: L.lstsq(x, y)[0], t)],
        jit=False)
    # The same rules compiled (one compile for the three).
    check_grads([(lambda x: L.solve(x, b), a), (lambda x: L.slogdet(x).logabsdet, a),
                 (lambda x: tuple(L.qr(x)), t)])


def test_pinv_gradient_under_jit():
    t = rand(np.random.default_rng(6), (5, 3), np.float64)
    check_grads([(L.pinv, t)])


def test_gradient_of_logdet_is_the_inverse_transpose():
    a = general(np.random.default_rng(7), (5, 5), np.float64)
    g = tr.grad(lambda x: L.slogdet(x).logabsdet)(a)
    np.testing.assert_allclose(g, np.linalg.inv(a).T, rtol=1e-10)


def test_vmap_matches_a_loop():
    rng = np.random.default_rng(8)
    a, b = general(rng, (5, 3, 3), np.float64), rand(rng, (5, 3), np.float64)
    for fn in (L.solve, lambda x, y: L.det(x) * y, lambda x, y: L.norm(x @ y)):
        got = tr.jit(tr.vmap(fn))(a, b)
        np.testing.assert_allclose(got, np.stack([fn(x, y) for x, y in zip(a, b)]),
                                   rtol=1e-10)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call, cls", [
    (lambda: L.inv(np.ones((2, 3))), np.linalg.LinAlgError),
    (lambda: L.det(np.ones(3)), np.linalg.LinAlgError),
    (lambda: L.solve(np.eye(2, dtype=np.float16), np.ones(2)), TypeError),
    (lambda: L.qr(np.eye(2), "raw"), ValueError),
    (lambda: L.eigh(np.eye(2), "X"), ValueError),
    (lambda: L.outer(np.ones((2, 2)), np.ones(2)), ValueError),
    (lambda: L.cross(np.ones(2), np.ones(3)), ValueError),
    (lambda: L.matrix_power(np.eye(2), 1.5), TypeError),
    (lambda: L.multi_dot([np.eye(2)]), ValueError),
    (lambda: L.norm(np.ones(3), "fro", 0), ValueError),
    (lambda: L.norm(np.ones((2, 2, 2)), axis=(0, 1, 2)), ValueError),
    (lambda: L.lstsq(np.ones((3, 2)), np.ones(4)), np.linalg.LinAlgError),
    (lambda: L.solve(np.eye(3), np.ones((2, 1))), ValueError),
])
def test_errors_are_numpys_and_tracers(call, cls):
    with pytest.raises(cls) as info:
        call()
    assert isinstance(info.value, TracerError)


def test_cross_of_a_zero_d_array_is_a_value_error():
    raises_like_numpy(tnp.cross, np.cross, np.array(3.0), np.ones((3, 2)))
