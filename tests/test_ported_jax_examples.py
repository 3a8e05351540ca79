"""Programs from JAX's `examples/` and docs (`tests/jax_ports.py`), ported by the
rename alone, against JAX in float64 (`jax_enable_x64`): the MNIST classifier from
scratch, ADVI, Newton's method with `hessian` on logistic regression (zero-initialised
weights sit on softplus's tie), a Gaussian-process marginal likelihood (softplus of
zero-initialised parameters). CI runs small sizes on the interpreter backend;
`-m slow_ports` runs larger ones on the cpu backend.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tests import jax_ports

jax = pytest.importorskip("jax")


def _compare(got, want, rtol: float) -> None:
    got_leaves, want_leaves = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        w = np.asarray(w)
        # JAX's mean of bools is float32 even with x64: compare at its precision
        tol = max(rtol, 1e-6) if w.dtype == np.float32 else rtol
        np.testing.assert_allclose(np.asarray(g, np.float64), w.astype(np.float64), rtol=tol,
                                   atol=tol)


def _run(fn, backend: str):
    old = tr.config.default_backend
    tr.config.update("default_backend", backend)
    try:
        got = fn(jax_ports.namespace("tracer"))
    finally:
        tr.config.update("default_backend", old)
    with jax.enable_x64(True):
        want = fn(jax_ports.namespace("jax"))
    return got, want


# ADVI's funnel objective amplifies differences ~100x a step: two steps stay at 1e-12.
FAST = {"mnist_classifier_fromscratch": (jax_ports.mnist_fromscratch, 1e-12),
        "advi": (lambda L: jax_ports.advi(L, steps=2), 1e-12),
        "newton_logistic_regression": (jax_ports.newton_logistic_regression, 1e-12),
        "gp_marginal_likelihood": (jax_ports.gp_marginal_likelihood, 1e-12)}


@pytest.mark.parametrize("name", sorted(FAST))
def test_example_matches_jax(name: str) -> None:
    fn, rtol = FAST[name]
    got, want = _run(fn, "interpreter")
    _compare(got, want, rtol)


def test_newton_hessian_at_the_softplus_tie_is_not_singular() -> None:
    got, _ = _run(jax_ports.newton_logistic_regression, "interpreter")
    hess = np.asarray(got[2])
    assert np.linalg.cond(hess) < 1e6


@pytest.mark.slow_ports
@pytest.mark.parametrize("name", sorted(FAST))
def test_example_matches_jax_on_the_cpu_backend(name: str) -> None:
    fn, rtol = FAST[name]
    got, want = _run(fn, "cpu")
    _compare(got, want, max(rtol, 1e-10))


@pytest.mark.slow_ports
def test_mnist_full_size_matches_jax() -> None:
    got, want = _run(lambda L: jax_ports.mnist_fromscratch(L, (784, 128, 128, 10), 5), "cpu")
    _compare(got, want, 1e-10)
