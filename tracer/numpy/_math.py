"""Math functions XLA has no op for, written with `tracer.ops` (helpers of `_ufuncs`).

Each takes an operand already in its compute dtype (float or complex; Python
scalars allowed) and returns the value NumPy gives, through identities chosen to
stay accurate near 0 and not to overflow early:

- arcsin(x) = atan2(x, sqrt((1-x)(1+x))), arccos(x) = 2 atan2(sqrt((1-x)(1+x)), 1+x),
  arctan(x) = atan2(x, 1);
- sinh / cosh from expm1 near 0 and exp(|x| - ln 2) beyond (so they overflow where
  the true value does, not at ln(max) like exp);
- arcsinh / arccosh from log1p, switching to log(x) + ln 2 past 1/sqrt(eps);
  arctanh(x) = log1p(2x / (1 - x)) / 2;
- complex operands follow NumPy's C99 Annex G functions (`_complex_special`).
"""

from __future__ import annotations

import math
from typing import Any


from .. import dtypes, ops
from . import _complex_special
from ._promotion import dtype_of
from ._ufunc_core import is_complex, select, signbit_of

_LN2 = math.log(2.0)


def _with_sign_of(x: Any, magnitude: Any) -> Any:
    return ops.select(signbit_of(x), ops.neg(magnitude), magnitude)


def _large(x: Any) -> float:
    """Past this magnitude t*t may overflow and sqrt(t*t + 1) == t anyway."""
    return float(dtypes.finfo(dtype_of(x)).eps) ** -0.5


def _sqrt_one_minus_sq(x: Any) -> Any:
    return ops.sqrt(ops.mul(ops.sub(1, x), ops.add(1, x)))


def arcsin(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.casin(x)
    return ops.atan2(x, _sqrt_one_minus_sq(x))


def arccos(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.cacos(x)
    angle = ops.mul(2, ops.atan2(_sqrt_one_minus_sq(x), ops.add(1, x)))
    return select(ops.eq(x, -1), math.pi, angle)  # atan2(0, 0) would give 0 at x = -1


def arctan(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.catan(x)
    return ops.atan2(x, 1)


def _half_exp(t: Any) -> Any:
    """e**t / 2, finite up to the largest t whose sinh / cosh is finite. (Not
    exp(t - ln 2): rounding t - ln 2 costs hundreds of ulps at t ~ 700.)"""
    limit = math.floor(math.log(float(dtypes.finfo(dtype_of(t)).max)))  # 709 for float64
    root = ops.exp(ops.mul(0.5, t))  # past it e**t overflows: (e**(t/2) / 2) e**(t/2)
    return select(ops.gt(t, limit), ops.mul(ops.mul(0.5, root), root), ops.mul(0.5, ops.exp(t)))


def sinh(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.csinh(x)
    t = ops.abs(x)
    a = ops.expm1(t)  # sinh t = (a + a / (a + 1)) / 2 with a = e**t - 1: exact near 0
    small = ops.mul(0.5, ops.add(a, ops.div(a, ops.add(a, 1))))
    half = _half_exp(t)
    big = ops.sub(half, ops.div(0.25, half))
    return _with_sign_of(x, select(ops.lt(t, 1), small, big))


def cosh(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.ccosh(x)
    half = _half_exp(ops.abs(x))
    return ops.add(half, ops.div(0.25, half))


def arcsinh(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.casinh(x)
    t = ops.abs(x)
    tt = ops.mul(t, t)
    small = ops.log1p(ops.add(t, ops.div(tt, ops.add(1, ops.sqrt(ops.add(1, tt))))))
    big = ops.add(ops.log(t), _LN2)
    return _with_sign_of(x, select(ops.gt(t, _large(x)), big, small))


def arccosh(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.cacosh(x)
    y = ops.sub(x, 1)
    small = ops.log1p(ops.add(y, ops.sqrt(ops.mul(y, ops.add(y, 2)))))
    big = ops.add(ops.log(x), _LN2)
    # Below 1 there is no real arccosh; y * (y + 2) turns positive again for x < -1.
    return select(ops.lt(x, 1), math.nan, select(ops.gt(x, _large(x)), big, small))


def arctanh(x: Any) -> Any:
    if is_complex(x):
        return _complex_special.catanh(x)
    return ops.mul(0.5, ops.log1p(ops.div(ops.mul(2, x), ops.sub(1, x))))
