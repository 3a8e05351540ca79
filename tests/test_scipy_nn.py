"""`tracer.scipy` (special, linalg, stats) against SciPy, `tracer.nn` and its
initializers against `jax.nn` (x64), values and gradients. Eager: no compiles."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.special as ss
import scipy.stats as st

import tracer as tr
import tracer.nn as tnn
import tracer.numpy as tnp
import tracer.random as trr
import tracer.scipy.linalg as tl
import tracer.scipy.special as tsp
import tracer.scipy.stats as tst

X = np.array([-30.0, -7.5, -3.5, -0.7, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, 150.3])
P = np.array([1e-6, 0.01, 0.3, 0.5, 0.9, 0.999])


@pytest.mark.parametrize("name", ["gammaln", "digamma", "erf", "erfc", "expit", "ndtr",
                                  "log_ndtr"])
def test_special_functions_match_scipy(name: str) -> None:
    x = X[X > 0] if name == "digamma" else X
    got, want = getattr(tsp, name)(x), getattr(ss, name)(x)
    np.testing.assert_allclose(got, want, rtol=2e-13, atol=1e-15)  # (gammaln(1) is ~1e-16)


@pytest.mark.parametrize("name", ["ndtri", "logit", "erfinv"])
def test_inverse_special_functions_match_scipy(name: str) -> None:
    p = 2 * P - 1 if name == "erfinv" else P
    # erfinv is XLA's float64 polynomial (as JAX's): ~1e-12 relative in the far tail
    np.testing.assert_allclose(getattr(tsp, name)(p), getattr(ss, name)(p), rtol=2e-12)


def test_two_argument_special_functions_match_scipy() -> None:
    a, b = np.array([0.0, 0.5, 2.0, 0.0]), np.array([0.0, 3.0, 0.25, -3.0])
    np.testing.assert_allclose(tsp.xlogy(a, b), ss.xlogy(a, b))
    np.testing.assert_allclose(tsp.xlog1py(a, b), ss.xlog1py(a, b))
    np.testing.assert_allclose(tsp.betaln(2.5, 3.1), ss.betaln(2.5, 3.1), rtol=1e-13)
    m = X.reshape(3, 4)
    np.testing.assert_allclose(tsp.logsumexp(m, axis=1), ss.logsumexp(m, axis=1), rtol=1e-14)
    got = tsp.logsumexp(m, axis=0, b=np.array([1.0, -2.0, 1.0, 1.0]), return_sign=True)
    want = ss.logsumexp(m, axis=0, b=np.array([1.0, -2.0, 1.0, 1.0]), return_sign=True)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(tsp.softmax(m), ss.softmax(m), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(tsp.log_softmax(m, axis=1), ss.log_softmax(m, axis=1), rtol=1e-14)


def test_special_gradients_are_the_derivatives() -> None:
    x = np.array([0.3, 1.7, 5.0])
    np.testing.assert_allclose(tr.vmap(tr.grad(tsp.gammaln))(x), ss.digamma(x), rtol=1e-12)
    np.testing.assert_allclose(tr.vmap(tr.grad(tsp.ndtr))(x), st.norm.pdf(x), rtol=1e-13)
    g = tr.grad(lambda v: tsp.logsumexp(v))(np.array([1.0, 1.0, -np.inf]))
    np.testing.assert_allclose(g, [0.5, 0.5, 0.0])
    # x log(y) is smooth in x at x == 0: its x-derivative there is log(y) (JAX's too)
    assert float(tr.grad(tsp.xlogy)(0.0, 2.0)) == pytest.approx(np.log(2.0), rel=1e-15)
    assert float(tr.grad(tsp.xlog1py)(0.0, 2.0)) == pytest.approx(np.log(3.0), rel=1e-15)


def _spd(n: int, seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def test_linalg_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    a, spd, b = rng.normal(size=(4, 4)), _spd(4, 1), rng.normal(size=4)
    np.testing.assert_allclose(tl.cholesky(spd), sl.cholesky(spd), atol=1e-14)
    np.testing.assert_allclose(tl.cho_solve(tl.cho_factor(spd, lower=True), b),
                               sl.cho_solve(sl.cho_factor(spd, lower=True), b), atol=1e-14)
    for trans, lower in ((0, False), (1, True), ("C", False)):
        tri = np.tril(a) + 4 * np.eye(4) if lower else np.triu(a) + 4 * np.eye(4)
        np.testing.assert_allclose(tl.solve_triangular(tri, b, trans=trans, lower=lower),
                                   sl.solve_triangular(tri, b, trans=trans, lower=lower),
                                   atol=1e-14)
    for got, want in zip(tl.lu(a), sl.lu(a), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-14)
    lu_piv = tl.lu_factor(a)
    np.testing.assert_array_equal(lu_piv[1], sl.lu_factor(a)[1])
    for trans in (0, 1):
        np.testing.assert_allclose(tl.lu_solve(lu_piv, b, trans),
                                   sl.lu_solve(sl.lu_factor(a), b, trans), atol=1e-13)
    for m in (a, 10 * a):
        np.testing.assert_allclose(tl.expm(m), sl.expm(m), rtol=1e-12 * np.abs(sl.expm(m)).max())
    np.testing.assert_allclose(tl.det(a), sl.det(a), rtol=1e-13)
    np.testing.assert_allclose(tl.inv(a), sl.inv(a), atol=1e-13)
    np.testing.assert_allclose(tl.solve(spd, b, assume_a="pos"), sl.solve(spd, b), atol=1e-14)


def test_linalg_under_jit_and_grad() -> None:
    spd, b = _spd(3, 2), np.arange(3.0)
    fn = tr.jit(lambda m, v: tl.cho_solve(tl.cho_factor(m), v), backend="interpreter")
    np.testing.assert_allclose(fn(spd, b), np.linalg.solve(spd, b), atol=1e-14)
    g = tr.grad(lambda v: tnp.sum(tl.solve_triangular(np.triu(spd), v)))(b)
    np.testing.assert_allclose(g, np.linalg.solve(np.triu(spd).T, np.ones(3)), atol=1e-14)


def test_stats_match_scipy() -> None:
    x = np.array([-1.5, 0.2, 0.7, 3.0])
    for fn in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        np.testing.assert_allclose(getattr(tst.norm, fn)(x, 1.0, 2.0),
                                   getattr(st.norm, fn)(x, 1.0, 2.0), rtol=1e-14)
    np.testing.assert_allclose(tst.norm.ppf(P, 1.0, 2.0), st.norm.ppf(P, 1.0, 2.0), rtol=2e-12)
    np.testing.assert_allclose(tst.t.logpdf(x, 3.5, 0.5, 2.0), st.t.logpdf(x, 3.5, 0.5, 2.0),
                               rtol=1e-14)
    np.testing.assert_allclose(tst.gamma.logpdf(x, 2.5), st.gamma.logpdf(x, 2.5), rtol=1e-14)
    y = np.array([0.2, 0.7])
    np.testing.assert_allclose(tst.beta.logpdf(y, 2.0, 3.0), st.beta.logpdf(y, 2.0, 3.0),
                               rtol=1e-14)
    k = np.array([0, 1, 3, 7])
    np.testing.assert_allclose(tst.poisson.logpmf(k, 2.5), st.poisson.logpmf(k, 2.5), rtol=1e-14)
    np.testing.assert_allclose(tst.bernoulli.logpmf(np.array([0, 1]), 0.3),
                               st.bernoulli.logpmf(np.array([0, 1]), 0.3), rtol=1e-14)
    np.testing.assert_allclose(tst.uniform.logpdf(x, -2, 4), st.uniform.logpdf(x, -2, 4))
    cov, mean = _spd(3, 3), np.array([0.1, -0.2, 0.3])
    xs = np.random.default_rng(4).normal(size=(5, 3))
    np.testing.assert_allclose(tst.multivariate_normal.logpdf(xs, mean, cov),
                               st.multivariate_normal.logpdf(xs, mean, cov), rtol=1e-13)


jax = pytest.importorskip("jax")
NN = ["relu", "relu6", "gelu", "silu", "sigmoid", "softplus", "log_sigmoid", "softmax",
      "log_softmax", "standardize", "elu", "leaky_relu", "tanh"]


@pytest.mark.parametrize("name", NN)
def test_nn_activations_and_their_gradients_match_jax(name: str) -> None:
    x = np.array([-2.0, -0.5, 0.0, 0.3, 6.0, 7.0])
    weights = np.arange(6.0)
    got = getattr(tnn, name)(x)
    g = tr.grad(lambda v: tnp.sum(getattr(tnn, name)(v) * weights))(x)
    with jax.enable_x64(True):
        want = getattr(jax.nn, name)(x) if name != "tanh" else jax.numpy.tanh(x)
        wg = jax.grad(lambda v: jax.numpy.sum(
            (getattr(jax.nn, name) if name != "tanh" else jax.numpy.tanh)(v) * weights))(x)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(g, np.asarray(wg), rtol=1e-13, atol=1e-14)


def test_nn_one_hot_and_exact_gelu_match_jax() -> None:
    with jax.enable_x64(True):
        np.testing.assert_array_equal(tnn.one_hot(np.array([0, 2, 5]), 3),
                                      jax.nn.one_hot(np.array([0, 2, 5]), 3))
        x = np.linspace(-3, 3, 7)
        np.testing.assert_allclose(tnn.gelu(x, approximate=False),
                                   jax.nn.gelu(x, approximate=False), rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("name", ["glorot_normal", "glorot_uniform", "lecun_normal",
                                  "he_normal", "he_uniform", "normal", "uniform"])
def test_initializers_draw_jaxs_numbers(name: str) -> None:
    got = getattr(tnn.initializers, name)()(trr.key(0), (3, 4))
    with jax.enable_x64(True):
        want = getattr(jax.nn.initializers, name)()(jax.random.PRNGKey(0), (3, 4),
                                                    jax.numpy.float64)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-13)
