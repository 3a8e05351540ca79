"""log, log1p, exp and pow for the samplers, from IEEE basic operations only.

The backends' own `log` / `log1p` / `exp` are different approximations (NumPy's SIMD
loops, libm, the cpu backend's vectorized polynomials), a few ulp apart. Samplers
written with these functions instead give the same bits on every backend: they use
only +, -, *, /, floor, compares, selects and bit casts, which are exact (correctly
rounded) everywhere. Accuracy: 1-2 ulp (float16 and bfloat16 are computed in float32).

- log: x = m * 2**e with m in [sqrt(1/2), sqrt(2)]; log(m) = 2 atanh(s) for
  s = (m - 1) / (m + 1), a series in s**2; e * ln 2 in two parts (Cody-Waite).
- log1p(x) = log(u) * x / (u - 1) for u = 1 + x (Goldberg's trick: exact rounding
  errors of u cancel).
- exp: x = n ln 2 + r with |r| <= ln(2) / 2; a Taylor polynomial of exp(r), scaled by
  2**n as two exact powers of two (so subnormal results round once).

Their pieces (bit casts, floor, selects) have zero or one-sided derivatives, so each
function is differentiated by its calculus rule instead (`with_derivative`): gradients
through the samplers' parameters (truncated_normal's bounds) are the true ones.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..transforms.custom import custom_jvp
from ._keys import aval

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)

# Cody-Waite splits of ln 2: the high part has trailing zero bits, so n * hi is exact.
_LN2 = {F32: (0.693359375, -2.12194440e-4),
        F64: (6.93147180369123816490e-01, 1.90821492927058770002e-10)}
_SERIES_TERMS = {F32: 6, F64: 11}      # atanh series: 2 / (2k + 1), k < terms
_TAYLOR_DEGREE = {F32: 7, F64: 13}     # exp(r), |r| <= ln(2) / 2


def _c(value: float, dtype: np.dtype) -> np.ndarray:
    return np.asarray(value, dtype)


_HALVES = (F16, dtypes.bfloat16)


def _in_float32(fn: Any) -> Any:
    """`fn`, computed in float32 for float16 / bfloat16 `x` (rounded once at the end)."""
    def run(x: Any) -> Any:
        dtype = aval(x)[1]
        if dtype not in _HALVES:
            return fn(x)
        return ops.convert_element_type(fn(ops.convert_element_type(x, F32)), dtype)
    return run


def _int(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"i{dtype.itemsize}")


def _full(value: float, x: Any) -> Any:
    shape, dtype = aval(x)
    return ops.broadcast_in_dim(_c(value, dtype), shape, ())


def _frexp(x: Any) -> tuple[Any, Any]:
    """(m, e) with x = m * 2**e, m in [sqrt(1/2), sqrt(2)), for finite x > 0."""
    dtype = aval(x)[1]
    info, it = np.finfo(dtype), _int(dtype)
    nmant = info.nmant
    sub = ops.lt(x, _c(info.tiny, dtype))  # subnormal: scale into the normal range first
    x = ops.select(sub, ops.mul(x, _c(2.0 ** (nmant + 1), dtype)), x)
    bits = ops.bitcast_convert_type(x, it)
    biased = ops.shift_right_logical(bits, it.type(nmant))
    e = ops.sub(ops.select(sub, ops.sub(biased, it.type(nmant + 1)), biased),
                it.type(info.maxexp - 1))
    one_bits = np.asarray(1.0, dtype).view(it)
    m = ops.bitcast_convert_type(
        ops.bitwise_or(ops.bitwise_and(bits, it.type((1 << nmant) - 1)), one_bits), dtype)
    big = ops.gt(m, _c(np.sqrt(2.0), dtype))
    return (ops.select(big, ops.mul(m, _c(0.5, dtype)), m),
            ops.convert_element_type(ops.select(big, ops.add(e, it.type(1)), e), dtype))


def _log(x: Any) -> Any:
    dtype = aval(x)[1]
    m, e = _frexp(x)
    s = ops.div(ops.sub(m, _c(1.0, dtype)), ops.add(m, _c(1.0, dtype)))
    s2 = ops.mul(s, s)
    terms = _SERIES_TERMS[dtype]
    p: Any = _c(2.0 / (2 * terms - 1), dtype)
    for k in reversed(range(terms - 1)):
        p = ops.add(ops.mul(p, s2), _c(2.0 / (2 * k + 1), dtype))
    hi, lo = _LN2[dtype]
    r = ops.add(ops.mul(e, _c(hi, dtype)), ops.add(ops.mul(e, _c(lo, dtype)), ops.mul(s, p)))
    r = ops.select(ops.eq(x, _c(0.0, dtype)), _full(-np.inf, x), r)
    r = ops.select(ops.eq(x, _c(np.inf, dtype)), x, r)
    invalid = ops.bitwise_or(ops.lt(x, _c(0.0, dtype)), ops.ne(x, x))
    return ops.select(invalid, _full(np.nan, x), r)


def with_derivative(fn: Callable[[Any], Any], derivative: Callable[[Any, Any], Any]
                    ) -> Callable[[Any], Any]:
    """`fn`, differentiated as `t * derivative(x, fn(x))` (built from the backends' own
    ops, which differentiate again for higher orders)."""
    fun = custom_jvp(fn)

    @fun.defjvp
    def rule(primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
        y = fun(primals[0])
        return y, ops.mul(tangents[0], derivative(primals[0], y))
    return fun


@functools.partial(with_derivative, derivative=lambda x, y: ops.div(_one(x), x))
def log(x: Any) -> Any:
    """Natural logarithm (16-bit floats, float32, float64), the same bits on every
    backend."""
    return _in_float32(_log)(x)


def _one(x: Any) -> Any:
    return _full(1.0, x)


def _log1p(x: Any) -> Any:
    dtype = aval(x)[1]
    one = _c(1.0, dtype)
    u = ops.add(x, one)
    r = ops.mul(_log(u), ops.div(x, ops.sub(u, one)))
    exact = ops.bitwise_or(ops.eq(u, one), ops.eq(u, _c(np.inf, dtype)))
    return ops.select(exact, ops.select(ops.eq(u, one), x, u), r)


@functools.partial(with_derivative,
                   derivative=lambda x, y: ops.div(_one(x), ops.add(x, _one(x))))
def log1p(x: Any) -> Any:
    """log(1 + x), accurate near 0, the same bits on every backend."""
    return _in_float32(_log1p)(x)


def _pow2(n: Any, dtype: np.dtype) -> Any:
    """2**n for integer-valued float n in the normal exponent range."""
    it = _int(dtype)
    biased = ops.add(ops.convert_element_type(n, it), it.type(np.finfo(dtype).maxexp - 1))
    return ops.bitcast_convert_type(ops.shift_left(biased, it.type(np.finfo(dtype).nmant)),
                                    dtype)


def _exp(x: Any) -> Any:
    dtype = aval(x)[1]
    info = np.finfo(dtype)
    top = np.log(info.max)
    bottom = (info.minexp - info.nmant - 2) * np.log(2.0)  # below: rounds to 0
    xc = ops.clamp(_c(bottom, dtype), x, _c(top, dtype))
    n = ops.floor(ops.add(ops.mul(xc, _c(1 / np.log(2.0), dtype)), _c(0.5, dtype)))
    hi, lo = _LN2[dtype]
    r = ops.sub(ops.sub(xc, ops.mul(n, _c(hi, dtype))), ops.mul(n, _c(lo, dtype)))
    degree = _TAYLOR_DEGREE[dtype]
    p: Any = _c(1.0 / np.prod(np.arange(1.0, degree + 1)), dtype)
    for k in reversed(range(degree)):
        p = ops.add(ops.mul(p, r), _c(1.0 / np.prod(np.arange(1.0, k + 1)), dtype))
    half = ops.floor(ops.mul(n, _c(0.5, dtype)))
    out = ops.mul(ops.mul(p, _pow2(half, dtype)), _pow2(ops.sub(n, half), dtype))
    out = ops.select(ops.gt(x, _c(top, dtype)), _full(np.inf, x), out)
    out = ops.select(ops.lt(x, _c(bottom, dtype)), _full(0.0, x), out)
    return ops.select(ops.ne(x, x), x, out)


@functools.partial(with_derivative, derivative=lambda x, y: y)
def exp(x: Any) -> Any:
    """e**x, the same bits on every backend."""
    return _in_float32(_exp)(x)


def pow(x: Any, y: Any) -> Any:  # the math name
    """x**y for x > 0 (exp(y * log(x))); 0**y = 0 for y > 0."""
    dtype = aval(x)[1]
    out = exp(ops.mul(y, log(x)))
    return ops.select(ops.eq(x, _c(0.0, dtype)), _full(0.0, x), out)
