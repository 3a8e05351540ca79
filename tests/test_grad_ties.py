"""Derivatives at ties and kinks: composites that select between branches
(`logaddexp` at equal operands, `sinc` at 0, `fmax` on ties, `remainder` at exact
multiples, the samplers' own log / exp / erfinv) against JAX's derivative conventions
(first and second order, float64) and finite differences of both one-sided limits.

Eager `grad` only (no compile), so the whole file is cheap.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
import tracer.random as trr

jax = pytest.importorskip("jax")
jnp = jax.numpy

# name -> (function of the module `m` (tnp or jnp), points)
CASES: dict[str, tuple[Callable[[Any], Callable[[Any], Any]], list[float]]] = {
    "logaddexp": (lambda m: lambda x: m.logaddexp(x, 0.0), [0.0, 1.0, math.inf, -math.inf]),
    "logaddexp_second": (lambda m: lambda x: m.logaddexp(0.0, x), [0.0]),
    "logaddexp_same": (lambda m: lambda x: m.logaddexp(x, x), [0.0, 2.0]),
    "logaddexp_minus_inf": (lambda m: lambda x: m.logaddexp(x, -math.inf), [0.0]),
    "logaddexp2": (lambda m: lambda x: m.logaddexp2(x, 0.0), [0.0, -3.0]),
    "logaddexp2_second": (lambda m: lambda x: m.logaddexp2(1.0, x), [1.0]),
    "softplus": (lambda m: lambda x: m.sum(m.logaddexp(x * m.arange(3.0), 0.0)), [0.0]),
    "maximum": (lambda m: lambda x: m.maximum(x, 0.0), [0.0]),
    "minimum": (lambda m: lambda x: m.minimum(0.0, x), [0.0]),
    "fmax": (lambda m: lambda x: m.fmax(x, 0.0), [0.0, 1.0]),
    "fmax_second": (lambda m: lambda x: m.fmax(0.0, x), [0.0]),
    "fmin": (lambda m: lambda x: m.fmin(x, 0.0), [0.0]),
    "abs": (lambda m: lambda x: m.abs(x), [0.0]),
    "clip": (lambda m: lambda x: m.clip(x, 0.0, 1.0), [0.0, 1.0]),
    "clip_bound": (lambda m: lambda x: m.clip(0.5, x, 1.0), [0.5]),
    "hypot": (lambda m: lambda x: m.hypot(x, 1.0), [0.0]),
    "sinc": (lambda m: lambda x: m.sinc(x), [0.0, 0.5]),
    "cbrt": (lambda m: lambda x: m.cbrt(x), [0.0, 8.0]),
    "remainder": (lambda m: lambda x: m.remainder(x, 1.0), [1.0, 0.5, -2.0]),
    "remainder_divisor": (lambda m: lambda x: m.remainder(3.0, x), [1.5, 1.0]),
    "fmod": (lambda m: lambda x: m.fmod(x, 1.0), [1.0]),
    "sqrt": (lambda m: lambda x: m.sqrt(x), [0.0]),
    "max_reduction": (lambda m: lambda x: m.max(m.stack([x, 1.0 + 0 * x, x])), [1.0]),
    "sort": (lambda m: lambda x: m.sort(m.stack([x, 1.0 + 0 * x]))[0], [1.0]),
    "median": (lambda m: lambda x: m.median(m.stack([x, 1.0 + 0 * x, 2.0 + 0 * x])), [1.0]),
    "norm": (lambda m: lambda x: m.linalg.norm(m.stack([x, 1.0 + 0 * x]), m.inf), [1.0]),
    "arctan2": (lambda m: lambda x: m.arctan2(x, 1.0), [0.0]),
    "power": (lambda m: lambda x: m.power(x, 2.0), [0.0]),
}


def _grads(lib: Any, f: Callable[[Any], Any], x: float) -> tuple[float, float]:
    return float(lib.grad(f)(x)), float(lib.grad(lib.grad(f))(x))


def _points() -> list[tuple[str, float]]:
    return [(name, p) for name, (_, pts) in CASES.items() for p in pts]


@pytest.mark.parametrize("name,x", _points())
def test_first_and_second_derivatives_match_jax(name: str, x: float) -> None:
    make = CASES[name][0]
    got = _grads(tr, make(tnp), np.float64(x))
    with jax.enable_x64(True):  # scoped: a global switch leaks into later tests
        want = _grads(jax, make(jnp), jnp.float64(x))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name} at {x}")


def _one_sided(f: Callable[[float], float], x: float, h: float = 1e-6) -> tuple[float, float]:
    """Finite differences from the left and from the right, from points strictly on
    each side (so a jump at x, as remainder's, does not enter them)."""
    left = (f(x - h) - f(x - 3 * h)) / (2 * h)
    right = (f(x + 3 * h) - f(x + h)) / (2 * h)
    return left, right


# Smooth at the point although the composite branches there: both one-sided limits
# agree, for the first and the second derivative.
SMOOTH = [("logaddexp", 0.0), ("logaddexp_second", 0.0), ("logaddexp_same", 0.0),
          ("logaddexp2", 0.0), ("logaddexp2_second", 1.0), ("softplus", 0.0), ("sinc", 0.0),
          ("remainder", 1.0), ("remainder", -2.0)]


@pytest.mark.parametrize("name,x", SMOOTH)
def test_smooth_composites_have_the_derivative_of_both_sides(name: str, x: float) -> None:
    f = CASES[name][0](np)
    df = tr.grad(CASES[name][0](tnp))
    for order, fun, grad in ((1, lambda v: float(f(v)), df),
                             (2, lambda v: float(df(np.float64(v))), tr.grad(df))):
        left, right = _one_sided(fun, x)
        got = float(grad(np.float64(x)))
        assert left == pytest.approx(right, abs=1e-4), (name, order, left, right)
        assert got == pytest.approx((left + right) / 2, abs=1e-4), (name, order, got)


KINKS = [("maximum", 0.0), ("minimum", 0.0), ("fmax", 0.0), ("fmin", 0.0), ("abs", 0.0),
         ("clip", 0.0), ("clip", 1.0), ("max_reduction", 1.0), ("sort", 1.0)]


@pytest.mark.parametrize("name,x", KINKS)
def test_derivative_at_a_kink_lies_between_the_one_sided_limits(name: str, x: float) -> None:
    left, right = _one_sided(lambda v: float(CASES[name][0](np)(v)), x)
    got = float(tr.grad(CASES[name][0](tnp))(np.float64(x)))
    assert min(left, right) - 1e-6 <= got <= max(left, right) + 1e-6, (name, left, right, got)


def test_logaddexp_rule_composes_with_vmap_and_jit() -> None:
    x = np.array([-1.0, 0.0, 0.0, 3.0])
    y = np.array([0.0, 0.0, 2.0, 3.0])
    want = 1 / (1 + np.exp(y - x))  # d/dx log(e^x + e^y) = sigmoid(x - y)
    f = tr.vmap(tr.grad(tnp.logaddexp))
    np.testing.assert_allclose(f(x, y), want, rtol=1e-15)
    np.testing.assert_allclose(tr.jit(f, backend="interpreter")(x, y), want, rtol=1e-15)
    np.testing.assert_array_equal(tnp.logaddexp(x, y), np.logaddexp(x, y))


def test_fmax_keeps_numpys_values_on_signed_zeros() -> None:
    for a, b in ((-0.0, 0.0), (0.0, -0.0), (math.nan, 1.0), (1.0, math.nan)):
        for fn in ("fmax", "fmin"):
            got, want = getattr(tnp, fn)(a, b), getattr(np, fn)(a, b)
            assert np.array_equal(np.signbit(got), np.signbit(want)) and got == want or \
                (math.isnan(got) and math.isnan(want)), (fn, a, b)


# The samplers compute log / exp / erfinv from bit operations (the same bits on every
# backend); their parameters must still get the true gradients.
SAMPLER_GRADS = {
    "truncated_normal_lower": lambda r, k, x: r.truncated_normal(k, x, np.float32(2.0), (5,),
                                                                 np.float32),
    "truncated_normal_upper": lambda r, k, x: r.truncated_normal(k, np.float32(-1.0), x, (5,),
                                                                 np.float32),
    "normal_scale": lambda r, k, x: x * r.normal(k, (5,), np.float32),
    "exponential_scale": lambda r, k, x: x * r.exponential(k, (5,), np.float32),
    # JAX's implicit gradient through the gamma CDF (not the rejection loop's path)
    "gamma_small_shape": lambda r, k, x: r.gamma(k, x * 0.5, (5,), np.float32),
    "gamma_shape": lambda r, k, x: r.gamma(k, x * 2.0, (5,), np.float32),
    "beta_shape": lambda r, k, x: r.beta(k, x, np.float32(2.0), (5,), np.float32),
}


@pytest.mark.parametrize("name", sorted(SAMPLER_GRADS))
def test_sampler_parameter_gradients_match_jax(name: str) -> None:
    fn = SAMPLER_GRADS[name]
    x = np.float32(-0.5 if name.endswith("lower") else 1.5)
    got = tr.grad(lambda v: tnp.sum(fn(trr, trr.key(3), v)))(x)
    want = jax.grad(lambda v: jnp.sum(fn(jax.random, jax.random.PRNGKey(3), v)))(x)
    np.testing.assert_allclose(got, np.asarray(want), rtol=2e-5)


def test_gamma_gradient_in_float64_under_jit_matches_jax() -> None:
    alpha = np.array([0.3, 1.0, 4.5])
    fn = tr.jit(tr.grad(lambda a: tnp.sum(trr.gamma(trr.key(5), a))), backend="interpreter")
    with jax.enable_x64(True):
        want = jax.grad(lambda a: jnp.sum(jax.random.gamma(jax.random.PRNGKey(5), a)))(alpha)
    np.testing.assert_allclose(fn(alpha), np.asarray(want), rtol=1e-9)
