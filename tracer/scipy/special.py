"""`tracer.scipy.special`: SciPy's special functions JAX users call daily, as
composites of `tracer.numpy` (so they run eagerly, under `jit`, `grad` and `vmap`).

- gammaln: Lanczos (g = 7, 9 terms) for x >= 1/2, the reflection formula below;
  log|Gamma(x)| like SciPy. digamma: shifted by the recurrence to x + 10, then the
  asymptotic series; reflection for x < 1/2.
- erfc is `1 - erf` for |x| < 2 and Laplace's continued fraction beyond (accurate in
  the tails; log_ndtr uses its logarithm); erfinv is XLA's polynomial (`tracer.random`'s,
  differentiated by calculus).
- logsumexp / softmax / log_softmax follow SciPy's signatures (axis=None: all axes).
"""

from __future__ import annotations

import math
from typing import Any

from .. import numpy as tnp
from .. import ops
from ..ops.ad_ops import stop_gradient
from ..random._gamma_grad import lgamma as _lgamma_right  # Lanczos, x >= 1/2
from ..random._special import erf_inv

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "gammaln", "digamma", "betaln", "xlogy",
           "xlog1py", "expit", "logit", "ndtr", "ndtri", "log_ndtr", "softmax", "log_softmax"]

def _float(x: Any) -> Any:
    x = tnp.asarray(x)
    return x if tnp.issubdtype(x.dtype, tnp.inexact) else tnp.asarray(x, tnp.float64)


def erf(x: Any) -> Any:
    """The error function."""
    x = _float(x)
    return ops.erf(x)


def _erfcx_tail(z: Any) -> Any:
    """exp(z**2) * erfc(z) for z >= 2: Laplace's continued fraction
    1 / sqrt(pi) / (z + (1/2) / (z + 1 / (z + (3/2) / (z + ...)))), 60 terms from the
    back (converged to double precision from z = 2 on)."""
    acc = z
    for k in range(60, 0, -1):
        acc = z + (k / 2) / acc
    return 1.0 / (math.sqrt(math.pi) * acc)


def erfc(x: Any) -> Any:
    """1 - erf(x), accurate in the tails (a continued fraction for |x| >= 2)."""
    x = _float(x)
    z = tnp.where(tnp.abs(x) >= 2.0, tnp.abs(x), 2.0)
    tail = tnp.exp(-z * z) * _erfcx_tail(z)
    tail = tnp.where(x < 0, 2.0 - tail, tail)
    return tnp.where(tnp.abs(x) >= 2.0, tail, 1.0 - erf(x))


def erfinv(x: Any) -> Any:
    """The inverse error function (XLA's polynomial, as JAX)."""
    return erf_inv(_float(x))


def gammaln(x: Any) -> Any:
    """log|Gamma(x)| (SciPy's gammaln); +inf at the poles 0, -1, -2, ..."""
    x = _float(x)
    left = x < 0.5
    right = _lgamma_right(tnp.where(left, 1.0 - x, x))
    sin = tnp.abs(tnp.sin(math.pi * tnp.where(left, x, 0.5)))
    reflected = math.log(math.pi) - tnp.log(sin) - right
    pole = (x <= 0) & (x == tnp.floor(x))
    return tnp.where(pole, tnp.inf, tnp.where(left, reflected, right))


def digamma(x: Any) -> Any:
    """The logarithmic derivative of Gamma; NaN at the poles 0, -1, ... (SciPy: -inf
    at 0 from the right is not distinguished)."""
    x = _float(x)
    left = x < 0.5
    y = tnp.where(left, 1.0 - x, x)
    shift = 0.0 * y
    for k in range(10):
        shift = shift + 1.0 / (y + k)
    z = y + 10.0
    inv2 = 1.0 / (z * z)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132)))))
    right = tnp.log(z) - 0.5 / z - series - shift
    reflected = right - math.pi / tnp.tan(math.pi * tnp.where(left, x, 0.25))
    pole = (x <= 0) & (x == tnp.floor(x))
    return tnp.where(pole, tnp.nan, tnp.where(left, reflected, right))


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    return gammaln(a) + gammaln(b) - gammaln(tnp.add(a, b))


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), 0 where x == 0 (any y but NaN, as SciPy); d/dx is log(y) at x == 0 too."""
    x, y = _float(x), _float(y)
    safe = tnp.where((x == 0) & (y <= 0), 1.0, y)
    return x * tnp.log(safe)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), 0 where x == 0 (any y but NaN); d/dx is log1p(y) at x == 0."""
    x, y = _float(x), _float(y)
    safe = tnp.where((x == 0) & (y <= -1), 0.0, y)
    return x * tnp.log1p(safe)


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x))."""
    return ops.logistic(_float(x))


def logit(p: Any) -> Any:
    """log(p / (1 - p))."""
    p = _float(p)
    return tnp.log(p / (1.0 - p))


def ndtr(x: Any) -> Any:
    """The standard normal CDF."""
    x = _float(x)
    return 0.5 * erfc(-x / math.sqrt(2.0))


def log_ndtr(x: Any) -> Any:
    """log(ndtr(x)), without underflow in the lower tail (x < -3: log of the
    continued fraction, so log_ndtr(-40) is finite)."""
    x = _float(x)
    lower = x < -3.0
    z = -tnp.where(lower, x, -3.0) / math.sqrt(2.0)
    tail = -z * z + tnp.log(0.5 * _erfcx_tail(z))
    middle = tnp.where(lower | (x > 0), 0.0, x)
    upper = tnp.log1p(-ndtr(-tnp.where(x > 0, x, 0.0)))  # ndtr(x) near 1: log1p keeps it
    return tnp.where(lower, tail, tnp.where(x > 0, upper, tnp.log(ndtr(middle))))


def ndtri(p: Any) -> Any:
    """The inverse of ndtr (the standard normal quantile)."""
    return math.sqrt(2.0) * erfinv(2.0 * _float(p) - 1.0)


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Any:
    """log(sum(b * exp(a))) over `axis`, without overflow (SciPy's signature)."""
    a = _float(a)
    top = tnp.max(a, axis=axis, keepdims=True)
    top = stop_gradient(tnp.where(tnp.isfinite(top), top, 0.0))
    e = tnp.exp(a - top)
    if b is not None:
        e = e * b
    total = tnp.sum(e, axis=axis, keepdims=True)
    sign = tnp.sign(total)
    out = tnp.log(tnp.abs(total)) + top
    if not keepdims:
        out = tnp.squeeze(out, axis=axis)
        sign = tnp.squeeze(sign, axis=axis)
    return (out, sign) if return_sign else out


def softmax(x: Any, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over `axis` (SciPy's default: all axes)."""
    return tnp.exp(log_softmax(x, axis))


def log_softmax(x: Any, axis: Any = None) -> Any:
    """x - logsumexp(x) over `axis`."""
    x = _float(x)
    return x - logsumexp(x, axis=axis, keepdims=True)
