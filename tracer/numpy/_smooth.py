"""Derivative rules for composites whose pieces have kinks where the function has none.

`logaddexp(x, 0)` is smooth at `x == 0`, but it is computed as `max(a, b) +
log1p(exp(-|a - b|))`: differentiating those pieces gives the right first derivative
only through max's tie convention, and a zero second derivative (abs has a kink at
0). `sinc` replaces 0 by eps (NumPy's trick), which kills its even derivatives at 0.
These functions get their derivatives from rules instead, as JAX defines them:

- logaddexp: `t1 * exp(x1 - out) + t2 * exp(x2 - out)` (`+inf` read as 0, so
  `logaddexp(inf, inf)` has finite tangents); logaddexp2 the same in base 2;
- sinc: the Maclaurin coefficients of sin(y) / y at 0, to any order;
- remainder: `t1 - t2 * floor(x1 / x2)`, also where the result is a (signed) zero;
- fmax / fmin: NumPy's value (x1 on ties), JAX's tangent (x2's on ties).

The rules are `tracer.custom_jvp` functions, made on first use: `tracer.transforms`
sits at this package's level and imports its methods. Outside a trace the primal
just runs.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from .. import ops


def as_arrays(a: Any, b: Any) -> tuple[Any, Any]:
    """Operands as arrays of one dtype: a custom rule sees its primals as given, and a
    weak Python scalar has no dtype or shape."""
    dt = next((np.dtype(x.dtype) for x in (a, b) if hasattr(x, "dtype")), np.dtype(np.float64))
    return tuple(x if hasattr(x, "dtype") else np.asarray(x, dt) for x in (a, b))


def _replace_inf(x: Any) -> Any:
    """+inf read as 0, as in JAX's logaddexp rule (inf - inf would give NaN)."""
    zero = ops.broadcast_in_dim(np.zeros((), x.dtype), x.shape, ())
    return ops.select(ops.eq(x, math.inf), zero, x)


def _custom(primal: Callable[..., Any], rule: Callable[..., Any],
            nondiff_argnums: tuple[int, ...] = ()) -> Any:
    from ..transforms.custom import custom_jvp  # see the module docstring

    fun = custom_jvp(primal, nondiff_argnums=nondiff_argnums)
    fun.defjvp(rule)
    return fun


@functools.cache
def logaddexp_with_rule(primal: Callable[[Any, Any], Any], base2: bool) -> Any:
    """`primal` (log(e**a + e**b), or base 2) with JAX's derivative rule."""
    def power(x: Any) -> Any:
        return ops.pow(np.asarray(2.0, x.dtype), x) if base2 else ops.exp(x)

    def rule(primals: tuple[Any, Any], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
        (a, b), (ta, tb) = primals, tangents
        out = fun(a, b)
        top = _replace_inf(out)
        return out, ops.add(ops.mul(ta, power(ops.sub(_replace_inf(a), top))),
                            ops.mul(tb, power(ops.sub(_replace_inf(b), top))))

    fun = _custom(primal, rule)
    return fun


def _maclaurin_value(k: int, y: Any) -> Any:
    """The k-th derivative of sin(y) / y at 0 (`y * 0 +` keeps y's shape and dtype)."""
    coefficient = 0.0 if k % 2 else (-1.0) ** (k // 2) / (k + 1)
    return ops.add(ops.mul(y, 0), np.asarray(coefficient, y.dtype))


def _maclaurin_rule(k: int, primals: tuple[Any], tangents: tuple[Any]) -> tuple[Any, Any]:
    return sinc_maclaurin()(k, primals[0]), ops.mul(sinc_maclaurin()(k + 1, primals[0]),
                                                    tangents[0])


@functools.cache
def sinc_maclaurin() -> Any:
    """`f(k, y)`: sin(y) / y's k-th derivative at 0, whose derivative is the (k+1)-th:
    the value sinc takes at 0, differentiable to any order (JAX's `_sinc_maclaurin`)."""
    return _custom(_maclaurin_value, _maclaurin_rule, nondiff_argnums=(0,))


@functools.cache
def remainder_with_rule(primal: Callable[[Any, Any], Any]) -> Any:
    """`primal` (NumPy's float remainder) with derivative `t1 - t2 * floor(x1 / x2)`:
    its select of a signed zero at exact multiples must not stop the tangent."""
    def rule(primals: tuple[Any, Any], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
        (a, b), (ta, tb) = primals, tangents
        out = fun(a, b)
        quotient = ops.div(ops.sub(a, out), b)  # exact: a - out is a multiple of b
        return out, ops.sub(ta, ops.mul(tb, ops.round_nearest_even(quotient)))

    fun = _custom(primal, rule)
    return fun


@functools.cache
def select_with_rule(primal: Callable[[Any, Any], Any], wins: Callable[[Any, Any], Any]
                     ) -> Any:
    """`primal(a, b)` (a or b), whose tangent is `ta` where `wins(a, b) or isnan(b)`,
    else `tb` (JAX's fmax / fmin)."""
    def rule(primals: tuple[Any, Any], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
        (a, b), (ta, tb) = primals, tangents
        first = ops.bitwise_or(wins(a, b), ops.ne(b, b))
        return fun(a, b), ops.select(first, ta, tb)

    fun = _custom(primal, rule)
    return fun
