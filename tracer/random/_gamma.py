"""gamma and beta: Marsaglia and Tsang's rejection sampler, as `jax.random.gamma`.

Each element gets its own key (`split(key, size)`) and runs its own rejection loop
(`ops.while_loop`); the elements are mapped with `vmap`, exactly as JAX's lowering
does, so a batch of loops runs until every element has accepted. Shape
parameters below 1 are boosted: Gamma(a) = Gamma(a + 1) * U**(1/a) (in log space
for `beta`, which uses log-gamma samples to avoid underflow).

Gradients with respect to the shape parameters are JAX's implicit ones (the sample
moves with `a` so that its CDF value stays put; `_gamma_grad`), not the derivative of
the rejection loop, which would differ from JAX's (3.174 vs 3.158 for the sum of
three Gamma(2) samples) and be zero or one-sided where the boost selects.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

from .. import numpy as tnp
from .. import ops
from ..transforms import custom_jvp, vmap
from ._distributions import (as_dtype, check_param_shape, exponential, float_dtype, normal,
                             uniform)
from ._keys import aval, canonical_shape, check_key, nth, split
from ._gamma_grad import gamma_sample_grad
from ._math import exp, log, pow


def _gamma_one(key: Any, alpha: Any, log_space: bool) -> Any:
    """One Gamma(alpha) sample (a log-gamma sample if `log_space`), JAX's `_gamma_one`."""
    dt = aval(alpha)[1]
    zero, one, two, minus_one = (np.asarray(v, dt) for v in (0, 1, 2, -1))
    third = np.asarray(1 / 3, dt)
    boost_mask = ops.ge(alpha, one)
    alpha_orig = alpha
    alpha = ops.select(boost_mask, alpha, ops.add(alpha, one))
    d = ops.sub(alpha, third)
    c = ops.div(third, ops.sqrt(d))

    def rejected(state: tuple[Any, ...]) -> Any:
        _, x2, v, u = state
        squeeze = ops.ge(u, ops.sub(one, ops.mul(np.asarray(0.0331, dt), ops.mul(x2, x2))))
        bound = ops.add(ops.mul(x2, np.asarray(0.5, dt)),
                        ops.mul(d, ops.add(ops.sub(one, v), log(v))))
        return ops.bitwise_and(squeeze, ops.ge(log(u), bound))

    def propose(state: tuple[Any, ...]) -> tuple[Any, ...]:
        keys = split(state[0], 3)

        def next_x(kxv: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
            pair = split(kxv[0])
            x = normal(nth(pair, 1), (), dt)
            return nth(pair, 0), x, ops.add(one, ops.mul(x, c))

        _, x, v = ops.while_loop(lambda kxv: ops.le(kxv[2], zero), next_x,
                                 (nth(keys, 1), zero, minus_one))
        new = (nth(keys, 0), ops.mul(x, x), ops.mul(ops.mul(v, v), v),
               uniform(nth(keys, 2), (), dt))
        return (*new, rejected(new))

    # The state carries its own `rejected` flag: under vmap, the loop body selects with the
    # condition, and would otherwise evaluate the (long) rejection test a second time.
    pair = split(key)
    init = (nth(pair, 0), zero, one, two)
    _, _, v, _, _ = ops.while_loop(lambda state: state[4], propose, (*init, rejected(init)))
    subkey = nth(pair, 1)
    if log_space:
        log_samples = ops.neg(exponential(subkey, (), dt))
        skip = ops.bitwise_or(boost_mask, ops.eq(log_samples, zero))
        log_boost = ops.select(skip, zero, ops.mul(log_samples, ops.div(one, alpha_orig)))
        return ops.add(ops.add(log(d), log(v)), log_boost)
    samples = ops.sub(one, uniform(subkey, (), dt))
    boost = ops.select(boost_mask, one, pow(samples, ops.div(one, alpha_orig)))
    return ops.mul(ops.mul(d, v), boost)


def _gamma(key: Any, a: Any, shape: Sequence[int] | None, dtype: Any, log_space: bool,
           name: str = "gamma") -> Any:
    dt = float_dtype(name, dtype)
    a = as_dtype(a, dt)
    shape = aval(a)[0] if shape is None else canonical_shape(name, shape)
    check_param_shape(name, shape, a)
    n = math.prod(shape)
    if n == 0:
        return tnp.zeros(shape, dt)
    alphas = tnp.reshape(tnp.broadcast_to(a, shape), (n,))
    samples = _sampler(log_space)(split(key, n), alphas)
    return tnp.reshape(samples, shape)


@functools.cache
def _sampler(log_space: bool) -> Any:
    """`(keys, alphas) -> samples`, differentiated by the implicit rule."""
    fun = custom_jvp(lambda keys, alphas: vmap(
        lambda k, alpha: _gamma_one(k, alpha, log_space))(keys, alphas))

    @fun.defjvp
    def rule(primals: tuple[Any, Any], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
        keys, alphas = primals
        out = fun(keys, alphas)
        if not log_space:
            return out, ops.mul(tangents[1], gamma_sample_grad(alphas, out))
        # d log(x) = dx / x; exp(log x) may round to 0: read it as the smallest float
        x = tnp.maximum(exp(out), np.finfo(aval(out)[1]).tiny)
        return out, ops.mul(tangents[1], ops.div(gamma_sample_grad(alphas, x), x))
    return fun


def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = np.float64) -> Any:
    """Gamma(a, 1) samples (shape defaults to a's), as `jax.random.gamma`."""
    return _gamma(check_key("gamma", key), a, shape, dtype, log_space=False)


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None,
         dtype: Any = np.float64) -> Any:
    """Beta(a, b) samples from two log-gamma samples, as `jax.random.beta`."""
    key = check_key("beta", key)
    dt = float_dtype("beta", dtype)
    a, b = as_dtype(a, dt), as_dtype(b, dt)
    shape = (np.broadcast_shapes(aval(a)[0], aval(b)[0]) if shape is None
             else canonical_shape("beta", shape))
    check_param_shape("beta", shape, a, b)
    keys = split(key)
    log_a, log_b = (_gamma(nth(keys, i), tnp.broadcast_to(p, shape), shape, dt, True, "beta")
                    for i, p in enumerate((a, b)))
    log_max = tnp.maximum(log_a, log_b)
    scaled_a, scaled_b = exp(tnp.subtract(log_a, log_max)), exp(tnp.subtract(log_b, log_max))
    return tnp.divide(scaled_a, tnp.add(scaled_a, scaled_b))
