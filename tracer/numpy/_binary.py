"""NumPy's binary arithmetic, bitwise and two-argument math ufuncs on `tracer.ops`.

Where NumPy and XLA disagree the NumPy rule is rebuilt from ops: floor division
and `remainder` round toward -inf (ops.div / ops.rem truncate), integer
division by zero gives 0, `fmax` / `fmin` ignore NaN, bool `add` / `multiply`
are logical or / and.

Values NumPy can only reject at run time cannot raise under tracing: an integer
`power` with a negative exponent raises `TracerValueError` for a concrete
exponent (as NumPy does) and gives 0 (or ±1 for bases ±1) for a traced one, like
JAX.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import TracerValueError
from ..tracing import Tracer
from ._promotion import dtype_of, error, float_of
from ._smooth import as_arrays, logaddexp_with_rule, remainder_with_rule, select_with_rule
from ._ufunc_core import (ALL, INT, NUM, REAL, binary, bool_to_int8, same, select,
                          signbit_of, true_div)

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
    "mod", "fmod", "divmod", "power", "pow", "float_power", "arctan2", "atan2", "hypot",
    "maximum", "minimum", "fmax", "fmin", "copysign", "heaviside", "logaddexp", "logaddexp2",
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "bitwise_left_shift", "bitwise_right_shift",
]

_LN2 = math.log(2.0)


def _add(a: Any, b: Any) -> Any:
    return ops.bitwise_or(a, b) if dtype_of(a).kind == "b" else ops.add(a, b)


def _multiply(a: Any, b: Any) -> Any:
    return ops.bitwise_and(a, b) if dtype_of(a).kind == "b" else ops.mul(a, b)


def _int_divmod(a: Any, b: Any) -> tuple[Any, Any]:
    """Floor quotient and remainder (sign of the divisor); x // 0 and x % 0 are 0."""
    zero = ops.eq(b, 0)
    safe = select(zero, 1, b)
    q, r = ops.div(a, safe), ops.rem(a, safe)
    adjust = ops.bitwise_and(ops.ne(r, 0), ops.ne(ops.lt(r, 0), ops.lt(safe, 0)))
    q = ops.select(adjust, ops.sub(q, 1), q)
    r = ops.select(adjust, ops.add(r, safe), r)
    return select(zero, 0, q), select(zero, 0, r)


def _copysign_zero(v: Any) -> Any:
    """0.0 with the sign of v."""
    dt = dtype_of(v)
    return select(signbit_of(v), np.asarray(-0.0, dt), np.asarray(0.0, dt))


def _float_divmod(a: Any, b: Any) -> tuple[Any, Any]:
    """NumPy's npy_divmod: floor(a / b) and a - floor(a / b) * b, computed from fmod."""
    mod = ops.rem(a, b)
    div = ops.div(ops.sub(a, mod), b)
    adjust = ops.bitwise_and(ops.ne(mod, 0), ops.ne(ops.lt(b, 0), ops.lt(mod, 0)))
    was_zero = ops.eq(mod, 0)
    mod = ops.select(adjust, ops.add(mod, b), mod)
    mod = ops.select(was_zero, _copysign_zero(b), mod)
    div = ops.select(adjust, ops.sub(div, 1), div)
    floor = ops.floor(div)
    floor = select(ops.gt(ops.sub(div, floor), 0.5), ops.add(floor, 1), floor)
    quotient = ops.div(a, b)
    floor = ops.select(ops.eq(div, 0), _copysign_zero(quotient), floor)
    by_zero = ops.eq(b, 0)
    return ops.select(by_zero, quotient, floor), mod


def _divmod_pair(a: Any, b: Any) -> tuple[Any, Any]:
    return (_int_divmod if dtype_of(a).kind in "iu" else _float_divmod)(a, b)


def _float_remainder(a: Any, b: Any) -> Any:
    return _float_divmod(a, b)[1]


def _remainder(a: Any, b: Any) -> Any:
    if dtype_of(a).kind in "iu":
        return _int_divmod(a, b)[1]
    return remainder_with_rule(_float_remainder)(*as_arrays(a, b))


def _fmod(a: Any, b: Any) -> Any:
    if dtype_of(a).kind in "iu":
        return select(ops.eq(b, 0), 0, ops.rem(a, select(ops.eq(b, 0), 1, b)))
    return ops.rem(a, b)


def _power(a: Any, b: Any) -> Any:
    if dtype_of(b).kind == "i" and not isinstance(b, Tracer) and np.any(np.asarray(b) < 0):
        raise error(TracerValueError, "power", "Integers to negative integer powers are not "
                    "allowed.")
    return ops.pow(a, b)


def _float_power_dtype(dt: np.dtype) -> np.dtype:
    return dtypes.complex128 if dt.kind == "c" else dtypes.float64


def _hypot(a: Any, b: Any) -> Any:
    x, y = ops.abs(a), ops.abs(b)
    big, small = ops.max(x, y), ops.min(x, y)
    ratio = ops.div(small, select(ops.eq(big, 0), 1, big))
    r = ops.mul(big, ops.sqrt(ops.add(1, ops.mul(ratio, ratio))))
    infinite = ops.bitwise_or(ops.eq(x, math.inf), ops.eq(y, math.inf))
    return select(infinite, math.inf, r)


def _fmax(pick: Callable[[Any, Any], Any], wins: Callable[[Any, Any], Any]
          ) -> Callable[[Any, Any], Any]:
    """NumPy's fmax / fmin: `x1 if wins(x1, x2) or x1 == x2 or isnan(x2) else x2` (x1
    on ties, so fmax(-0.0, 0.0) is -0.0). Differentiated as JAX's (x2 gets the tangent
    on ties; see `_smooth`)."""
    def real(a: Any, b: Any) -> Any:
        return ops.select(ops.bitwise_or(ops.bitwise_or(wins(a, b), ops.eq(a, b)),
                                         ops.ne(b, b)), a, b)

    def impl(a: Any, b: Any) -> Any:
        if not dtypes.is_inexact(dtype_of(a)):
            return pick(a, b)
        if dtype_of(a).kind == "c":
            return ops.select(ops.ne(b, b), a, ops.select(ops.ne(a, a), b, pick(a, b)))
        return select_with_rule(real, wins)(*as_arrays(a, b))
    return impl


def _copysign(a: Any, b: Any) -> Any:
    mag = ops.abs(a)
    return ops.select(signbit_of(b), ops.neg(mag), mag)


def _heaviside(x: Any, h0: Any) -> Any:
    step = select(ops.lt(x, 0), 0, select(ops.gt(x, 0), 1, h0))
    return ops.select(ops.ne(x, x), x, step)


def _logaddexp(base2: bool) -> Callable[[Any, Any], Any]:
    """log(e**a + e**b) (or log2(2**a + 2**b)) without overflow; a == b (also ±inf)
    is a + log(2) (a + 1). Differentiated by JAX's rule (see `_smooth`): the pieces'
    kinks at a == b would give a one-sided derivative there."""
    def primal(a: Any, b: Any) -> Any:
        gap = ops.neg(ops.abs(ops.sub(a, b)))
        if base2:
            tail = ops.div(ops.log1p(ops.pow(2, gap)), _LN2)
        else:
            tail = ops.log1p(ops.exp(gap))
        return ops.select(ops.eq(a, b), ops.add(a, 1 if base2 else _LN2),
                          ops.add(ops.max(a, b), tail))

    def impl(a: Any, b: Any) -> Any:
        return logaddexp_with_rule(primal, base2)(*as_arrays(a, b))
    return impl


def _shift_right(a: Any, b: Any) -> Any:
    if dtype_of(a).kind == "i":
        return ops.shift_right_arithmetic(a, b)
    return ops.shift_right_logical(a, b)


_ARITH = "NumPy rule: NEP 50 promotion, NumPy broadcasting"

add = binary("add", _add, ALL, same, full=False, doc=(
    f"x1 + x2 element-wise.\n\n{_ARITH}; bool + bool is logical or.\n\n"
    "add(np.int8([1, 2]), 1) -> int8 [2, 3]"))
subtract = binary("subtract", ops.sub, NUM, same, full=False, doc=(
    f"x1 - x2 element-wise.\n\n{_ARITH}; bools are rejected (use logical_xor).\n\n"
    "subtract([5, 7], 2) -> [3, 5]"))
multiply = binary("multiply", _multiply, ALL, same, full=False, doc=(
    f"x1 * x2 element-wise.\n\n{_ARITH}; bool * bool is logical and.\n\n"
    "multiply(np.float32([1.5]), 2.0) -> float32 [3.0]"))
divide = binary("divide", ops.div, NUM + "b", true_div, full=False, doc=(
    f"True division x1 / x2.\n\n{_ARITH}; integers and bools divide in float64.\n\n"
    "divide([1, 3], 2) -> float64 [0.5, 1.5]"))
true_divide = divide
floor_divide = binary("floor_divide", lambda a, b: _divmod_pair(a, b)[0], REAL,
                       bool_to_int8, doc=(
    f"Floor division x1 // x2 (rounds toward -inf).\n\n{_ARITH}; integer x // 0 is 0; "
    "floats follow NumPy's divmod (x // 0.0 is x / 0.0).\n\nfloor_divide([7, -7], 2) -> [3, -4]"))
remainder = binary("remainder", _remainder, REAL, bool_to_int8,
                    doc=(
    f"Python-style remainder x1 % x2 (sign of the divisor).\n\n{_ARITH}; integer x % 0 is "
    "0; float x % 0.0 is NaN.\n\nremainder([7, -7], 3) -> [1, 2]"))
mod = remainder
fmod = binary("fmod", _fmod, REAL, bool_to_int8, doc=(
    f"C remainder (sign of the dividend).\n\n{_ARITH}; integer x fmod 0 is 0.\n\n"
    "fmod([-7, 7], 3) -> [-1, 1]"))
power = binary("power", _power, ALL, bool_to_int8, full=False, doc=(
    f"x1 ** x2 element-wise.\n\n{_ARITH}; bools compute in int8; integers to negative "
    "integer powers raise for concrete exponents and give 0 (±1 for bases ±1) when "
    "traced.\n\npower([2, 3], 2) -> [4, 9]"))
pow = power
float_power = binary("float_power", ops.pow, ALL, _float_power_dtype, full=False, doc=(
    f"x1 ** x2 computed in float64 (complex128 for complex).\n\n{_ARITH}.\n\n"
    "float_power(2, -1) -> 0.5"))
arctan2 = binary("arctan2", ops.atan2, REAL, float_of, full=False, doc=(
    f"Quadrant-aware arctan(x1 / x2).\n\n{_ARITH}; real inputs, floats per NumPy's "
    "loops (int8 -> float16).\n\narctan2(1.0, -1.0) -> 2.356194490192345"))
atan2 = arctan2
hypot = binary("hypot", _hypot, REAL, float_of, doc=(
    f"sqrt(x1**2 + x2**2) without overflow.\n\n{_ARITH}; inf wins over NaN.\n\n"
    "hypot(3.0, 4.0) -> 5.0"))
maximum = binary("maximum", ops.max, ALL, same, full=False, doc=(
    f"Element-wise maximum; NaN propagates.\n\n{_ARITH}.\n\nmaximum([1, 5], [3, 2]) -> [3, 5]"))
minimum = binary("minimum", ops.min, ALL, same, full=False, doc=(
    f"Element-wise minimum; NaN propagates.\n\n{_ARITH}.\n\nminimum([1, 5], [3, 2]) -> [1, 2]"))
fmax = binary("fmax", _fmax(ops.max, ops.gt), ALL, same, doc=(
    f"Element-wise maximum ignoring NaN.\n\n{_ARITH}; NaN only if both are NaN.\n\n"
    "fmax([nan, 1.0], [2.0, nan]) -> [2.0, 1.0]"))
fmin = binary("fmin", _fmax(ops.min, ops.lt), ALL, same, doc=(
    f"Element-wise minimum ignoring NaN.\n\n{_ARITH}; NaN only if both are NaN.\n\n"
    "fmin([nan, 1.0], [2.0, nan]) -> [2.0, 1.0]"))
copysign = binary("copysign", _copysign, REAL, float_of, doc=(
    f"|x1| with the sign bit of x2.\n\n{_ARITH}; -0.0 counts as negative.\n\n"
    "copysign(1.0, -0.0) -> -1.0"))
heaviside = binary("heaviside", _heaviside, REAL, float_of, doc=(
    f"Step function: 0 for x1 < 0, x2 where x1 == 0, 1 for x1 > 0.\n\n{_ARITH}; NaN "
    "stays NaN.\n\nheaviside([-1.0, 0.0, 2.0], 0.5) -> [0.0, 0.5, 1.0]"))
logaddexp = binary("logaddexp", _logaddexp(False), REAL, float_of, doc=(
    f"log(exp(x1) + exp(x2)) without overflow.\n\n{_ARITH}.\n\n"
    "logaddexp(0.0, 0.0) -> 0.6931471805599453"))
logaddexp2 = binary("logaddexp2", _logaddexp(True), REAL, float_of, doc=(
    f"log2(2**x1 + 2**x2) without overflow.\n\n{_ARITH}.\n\nlogaddexp2(1.0, 1.0) -> 2.0"))
bitwise_and = binary("bitwise_and", ops.bitwise_and, INT, same, full=False, doc=(
    f"x1 & x2 element-wise (logical on bools).\n\n{_ARITH}; integer or bool only.\n\n"
    "bitwise_and([12, 10], 6) -> [4, 2]"))
bitwise_or = binary("bitwise_or", ops.bitwise_or, INT, same, full=False, doc=(
    f"x1 | x2 element-wise (logical on bools).\n\n{_ARITH}; integer or bool only.\n\n"
    "bitwise_or([12, 10], 1) -> [13, 11]"))
bitwise_xor = binary("bitwise_xor", ops.bitwise_xor, INT, same, full=False, doc=(
    f"x1 ^ x2 element-wise (logical on bools).\n\n{_ARITH}; integer or bool only.\n\n"
    "bitwise_xor([12, 10], 6) -> [10, 12]"))
left_shift = binary("left_shift", ops.shift_left, INT, bool_to_int8, full=False, doc=(
    f"x1 << x2.\n\n{_ARITH}; shifting by the bit width or more gives 0.\n\n"
    "left_shift(1, [1, 3]) -> [2, 8]"))
right_shift = binary("right_shift", _shift_right, INT, bool_to_int8, full=False, doc=(
    f"x1 >> x2 (arithmetic for signed types).\n\n{_ARITH}; shifting by the bit width or "
    "more gives 0 (-1 for negative x1).\n\nright_shift([-8, 8], 2) -> [-2, 2]"))
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def divmod(x1: Any, x2: Any, /, out: None = None, *, where: bool = True) -> tuple[Any, Any]:
    """(x1 // x2, x1 % x2) element-wise.

    NumPy rule: as floor_divide and remainder.

    divmod([7, -7], 2) -> ([3, -4], [1, 1])
    """
    return floor_divide(x1, x2, out=out, where=where), remainder(x1, x2, where=where)
