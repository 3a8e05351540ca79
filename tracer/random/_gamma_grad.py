"""The implicit derivative of a Gamma(a) sample with respect to `a`, as
`jax.random.gamma` defines it: the sample x moves with `a` so that its CDF value
P(a, x) (the regularized lower incomplete gamma function) stays put:

    dx/da = -(dP/da)(a, x) / p(x; a),   p(x; a) = x**(a-1) exp(-x) / Gamma(a).

P is computed in float64 by its series (x < a + 1) or by Legendre's continued fraction
for 1 - P (200 terms each, Numerical Recipes' `gser` / `gcf`), and dP/da by forward-mode
differentiation of that computation (through the loop); log Gamma by Lanczos (g = 7).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import numpy as tnp
from .. import ops
from ..transforms import jvp

_TERMS = 200
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028,
            771.32342877765313, -176.61502916214059, 12.507343278686905,
            -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def lgamma(a: Any) -> Any:
    """log Gamma(a) for a > 0 (float64)."""
    z = a - 1.0
    acc = _LANCZOS[0] + 0.0 * z
    for k, c in enumerate(_LANCZOS[1:], start=1):
        acc = acc + c / (z + k)
    t = z + 7.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * tnp.log(t) - t + tnp.log(acc)


def _series(a: Any, x: Any) -> Any:
    """P(a, x) = x**a e**-x / Gamma(a) * sum_n x**n / (a (a+1) ... (a+n))."""
    def body(n: Any, state: tuple[Any, Any]) -> tuple[Any, Any]:
        term, total = state
        term = term * x / (a + n.astype(a.dtype))
        return term, total + term

    first = 1.0 / a
    _, total = ops.fori_loop(1, _TERMS, body, (first, first))
    return total * tnp.exp(a * tnp.log(x) - x - lgamma(a))


def _continued_fraction(a: Any, x: Any) -> Any:
    """1 - Q(a, x), Q by the modified Lentz evaluation of Legendre's fraction."""
    tiny = 1e-300

    def body(i: Any, state: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, Any, Any]:
        b, c, d, h = state
        fi = i.astype(a.dtype)
        an = -fi * (fi - a)
        b = b + 2.0
        d = an * d + b
        d = tnp.where(tnp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = tnp.where(tnp.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        return b, c, d, h * d * c

    b = x + 1.0 - a
    d = 1.0 / b
    _, _, _, h = ops.fori_loop(1, _TERMS, body, (b, 0.0 * b + 1.0 / tiny, d, d))
    return 1.0 - h * tnp.exp(a * tnp.log(x) - x - lgamma(a))


def _lower_regularized(a: Any, x: Any) -> Any:
    small = x < a + 1.0
    xs = tnp.where(small, x, tnp.minimum(a + 1.0, x))
    xl = tnp.where(small, tnp.maximum(a + 1.0, x), x)
    return tnp.where(small, _series(a, xs), _continued_fraction(a, xl))


def gamma_sample_grad(a: Any, x: Any) -> Any:
    """dx/da for Gamma(a) samples x (computed in float64, returned in x's dtype)."""
    dt = x.dtype
    a64, x64 = (ops.convert_element_type(v, np.float64) for v in (a, x))
    x64 = tnp.maximum(x64, np.finfo(np.float64).tiny)
    _, dp_da = jvp(lambda s: _lower_regularized(s, x64), (a64,), (tnp.ones_like(a64),))
    log_density = (a64 - 1.0) * tnp.log(x64) - x64 - lgamma(a64)
    return ops.convert_element_type(-dp_da / tnp.exp(log_density), dt)
