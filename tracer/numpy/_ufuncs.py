"""NumPy's element-wise functions (ufuncs and friends) built from `tracer.ops`.

Each function promotes its inputs (NEP 50), computes in the dtype NumPy uses
(`sin` of int8 is float16, `floor` of ints is the ints themselves, ...),
broadcasts NumPy-style and calls one or a few ops (see `_ufunc_core`). The binary
arithmetic ufuncs live in `_binary` and the composite math formulas in `_math`;
this module also holds the comparisons (complex ones lexicographic, Python ints
out of an integer array's range compared exactly, as NumPy 2 does), the logical
functions, `clip`, `where`, `round`, `real` / `imag` / `angle` and `sinc`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import TracerTypeError, TracerValueError
from ..tracing import Tracer
from . import _math
from ._binary import *  # noqa: F401,F403
from ._binary import __all__ as _binary_all
from ._promotion import (as_result, asarray_like, broadcast_shapes, broadcast_to_shape, cast,
                         check_out, constant, desc, dtype_of, error, float_of, is_weak,
                         promote, tracing)
from ._ufunc_core import (ALL, INT, NOVALUE, NUM, REAL, binary, bool_to_int8, check_call,
                          false_like, is_complex, publish, same, select, signbit_of, true_like,
                          truth, unary)

__all__ = [
    *_binary_all,
    "negative", "positive", "absolute", "abs", "fabs", "sign", "floor", "ceil", "trunc",
    "fix", "rint", "round", "around", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "cbrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "deg2rad", "rad2deg", "degrees", "radians", "isnan", "isinf",
    "isfinite", "isposinf", "isneginf", "signbit", "conjugate", "conj", "logical_not",
    "invert", "bitwise_not", "bitwise_invert", "logical_and", "logical_or", "logical_xor",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "clip", "where",
    "real", "imag", "angle", "sinc",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _identity(x: Any) -> Any:
    return x


def _absolute(x: Any) -> Any:
    return x if dtype_of(x).kind == "b" else ops.abs(x)


def _rounding(op: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """floor / ceil / trunc: integers and bools are returned unchanged (NumPy 2)."""
    def impl(x: Any) -> Any:
        return op(x) if dtype_of(x).kind == "f" else x
    return impl


def _trunc(x: Any) -> Any:
    return ops.select(signbit_of(x), ops.ceil(x), ops.floor(x))


def _rint(x: Any) -> Any:
    if is_complex(x):
        return ops.complex(ops.round_nearest_even(ops.real(x)),
                           ops.round_nearest_even(ops.imag(x)))
    return ops.round_nearest_even(x)


def _reciprocal(x: Any) -> Any:
    if dtype_of(x).kind in "iu":  # integer 1 // x (C truncation); 1 / 0 gives 0
        zero = ops.eq(x, 0)
        return select(zero, 0, ops.div(1, select(zero, 1, x)))
    return ops.div(1, x)


def _isinf(x: Any) -> Any:
    kind = dtype_of(x).kind
    if kind == "c":
        return ops.bitwise_or(_isinf(ops.real(x)), _isinf(ops.imag(x)))
    return ops.eq(ops.abs(x), math.inf) if kind == "f" else false_like(x)


def _isfinite(x: Any) -> Any:
    kind = dtype_of(x).kind
    if kind == "c":
        return ops.bitwise_and(ops.is_finite(ops.real(x)), ops.is_finite(ops.imag(x)))
    return ops.is_finite(x) if kind == "f" else true_like(x)


def _isnan(x: Any) -> Any:
    return ops.ne(x, x) if dtype_of(x).kind in "fc" else false_like(x)


def _is_value(value: float) -> Callable[[Any], Any]:
    def impl(x: Any) -> Any:
        return ops.eq(x, value) if dtype_of(x).kind == "f" else false_like(x)
    return impl


def _conjugate(x: Any) -> Any:
    return ops.complex(ops.real(x), ops.neg(ops.imag(x))) if is_complex(x) else x


def _scale(factor: float) -> Callable[[Any], Any]:
    return lambda x: ops.mul(x, factor)


def _log_base(base_log: float) -> Callable[[Any], Any]:
    return lambda x: ops.div(ops.log(x), base_log)


_U = "NumPy rule: same shape"
_FLOATS = "integers and bools compute in the smallest float that holds them (int8 -> float16)"

negative = unary("negative", ops.neg, NUM, same,
                  f"-x element-wise.\n\n{_U}; bools are rejected.\n\nnegative([1, -2]) -> [-1, 2]")
positive = unary("positive", _identity, NUM, same,
                  f"+x (a copy).\n\n{_U}; bools are rejected.\n\npositive([1, -2]) -> [1, -2]")
absolute = unary("absolute", _absolute, ALL, same,
                  f"|x| element-wise.\n\n{_U}; complex gives its real dtype.\n\n"
                  "absolute([-1.5, 2.0]) -> [1.5, 2.0]")
abs = absolute
fabs = unary("fabs", ops.abs, REAL, float_of,
              f"|x| as a float.\n\n{_U}; {_FLOATS}; no complex.\n\nfabs(-2) -> 2.0")
sign = unary("sign", ops.sign, NUM, same,
              f"-1, 0 or 1 (x / |x| for complex, NumPy 2).\n\n{_U}; NaN stays NaN.\n\n"
              "sign([-3, 0, 5]) -> [-1, 0, 1]")
floor = unary("floor", _rounding(ops.floor), REAL, same,
               f"Largest integer <= x.\n\n{_U}; integers are returned unchanged (NumPy 2)."
               "\n\nfloor([-1.5, 1.5]) -> [-2.0, 1.0]")
ceil = unary("ceil", _rounding(ops.ceil), REAL, same,
              f"Smallest integer >= x.\n\n{_U}; integers are returned unchanged.\n\n"
              "ceil([-1.5, 1.5]) -> [-1.0, 2.0]")
trunc = unary("trunc", _rounding(_trunc), REAL, same,
               f"x rounded toward 0.\n\n{_U}; integers are returned unchanged.\n\n"
               "trunc([-1.5, 1.5]) -> [-1.0, 1.0]")
rint = unary("rint", _rint, ALL, float_of,
              f"Round to the nearest integer, ties to even.\n\n{_U}; {_FLOATS}.\n\n"
              "rint([0.5, 1.5, 2.5]) -> [0.0, 2.0, 2.0]")
exp = unary("exp", ops.exp, ALL, float_of, f"e**x.\n\n{_U}; {_FLOATS}.\n\nexp(0.0) -> 1.0")
exp2 = unary("exp2", lambda x: ops.pow(2, x), ALL, float_of,
              f"2**x.\n\n{_U}; {_FLOATS}.\n\nexp2(3.0) -> 8.0")
expm1 = unary("expm1", ops.expm1, ALL, float_of,
               f"e**x - 1, accurate near 0.\n\n{_U}; {_FLOATS}.\n\nexpm1(1e-10) -> 1e-10")
log = unary("log", ops.log, ALL, float_of,
             f"Natural logarithm.\n\n{_U}; {_FLOATS}; log(0) = -inf, log(-1) = NaN.\n\n"
             "log(1.0) -> 0.0")
log2 = unary("log2", _log_base(_LN2), ALL, float_of,
              f"Base-2 logarithm (log(x) / log(2)).\n\n{_U}; {_FLOATS}.\n\nlog2(8.0) -> 3.0")
log10 = unary("log10", _log_base(_LN10), ALL, float_of,
               f"Base-10 logarithm (log(x) / log(10)).\n\n{_U}; {_FLOATS}.\n\n"
               "log10(100.0) -> 2.0")
log1p = unary("log1p", ops.log1p, ALL, float_of,
               f"log(1 + x), accurate near 0.\n\n{_U}; {_FLOATS}.\n\nlog1p(1e-10) -> 1e-10")
sqrt = unary("sqrt", ops.sqrt, ALL, float_of,
              f"Square root.\n\n{_U}; {_FLOATS}; sqrt(-1.0) = NaN.\n\nsqrt(4) -> 2.0")
cbrt = unary("cbrt", ops.cbrt, REAL, float_of,
              f"Real cube root.\n\n{_U}; {_FLOATS}; no complex.\n\ncbrt(-8.0) -> -2.0")
square = unary("square", lambda x: ops.mul(x, x), NUM + "b", bool_to_int8,
                f"x * x.\n\n{_U}; bools compute in int8.\n\nsquare([2, -3]) -> [4, 9]")
reciprocal = unary("reciprocal", _reciprocal, NUM + "b", bool_to_int8,
                    f"1 / x.\n\n{_U}; integers divide like C (1 / 2 = 0); integer 1 / 0 "
                    "gives 0 here.\n\nreciprocal([2.0, 4.0]) -> [0.5, 0.25]")
sin = unary("sin", ops.sin, ALL, float_of, f"Sine.\n\n{_U}; {_FLOATS}.\n\nsin(0.0) -> 0.0")
cos = unary("cos", ops.cos, ALL, float_of, f"Cosine.\n\n{_U}; {_FLOATS}.\n\ncos(0.0) -> 1.0")
tan = unary("tan", ops.tan, ALL, float_of, f"Tangent.\n\n{_U}; {_FLOATS}.\n\ntan(0.0) -> 0.0")
arcsin = unary("arcsin", _math.arcsin, ALL, float_of,
                f"Inverse sine in [-pi/2, pi/2].\n\n{_U}; {_FLOATS}; |x| > 1 gives NaN.\n\n"
                "arcsin(1.0) -> 1.5707963267948966")
arccos = unary("arccos", _math.arccos, ALL, float_of,
                f"Inverse cosine in [0, pi].\n\n{_U}; {_FLOATS}; |x| > 1 gives NaN.\n\n"
                "arccos(-1.0) -> 3.141592653589793")
arctan = unary("arctan", _math.arctan, ALL, float_of,
                f"Inverse tangent in (-pi/2, pi/2).\n\n{_U}; {_FLOATS}.\n\n"
                "arctan(1.0) -> 0.7853981633974483")
sinh = unary("sinh", _math.sinh, ALL, float_of,
              f"Hyperbolic sine.\n\n{_U}; {_FLOATS}.\n\nsinh(0.0) -> 0.0")
cosh = unary("cosh", _math.cosh, ALL, float_of,
              f"Hyperbolic cosine.\n\n{_U}; {_FLOATS}.\n\ncosh(0.0) -> 1.0")
tanh = unary("tanh", ops.tanh, ALL, float_of,
              f"Hyperbolic tangent.\n\n{_U}; {_FLOATS}.\n\ntanh(0.0) -> 0.0")
arcsinh = unary("arcsinh", _math.arcsinh, ALL, float_of,
                 f"Inverse hyperbolic sine.\n\n{_U}; {_FLOATS}.\n\narcsinh(0.0) -> 0.0")
arccosh = unary("arccosh", _math.arccosh, ALL, float_of,
                 f"Inverse hyperbolic cosine.\n\n{_U}; {_FLOATS}; x < 1 gives NaN.\n\n"
                 "arccosh(1.0) -> 0.0")
arctanh = unary("arctanh", _math.arctanh, ALL, float_of,
                 f"Inverse hyperbolic tangent.\n\n{_U}; {_FLOATS}; arctanh(1) = inf.\n\n"
                 "arctanh(0.0) -> 0.0")
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
deg2rad = unary("deg2rad", _scale(math.pi / 180), REAL, float_of,
                 f"Degrees to radians.\n\n{_U}; {_FLOATS}.\n\ndeg2rad(180.0) -> 3.141592653589793")
rad2deg = unary("rad2deg", _scale(180 / math.pi), REAL, float_of,
                 f"Radians to degrees.\n\n{_U}; {_FLOATS}.\n\nrad2deg(3.141592653589793) -> 180.0")
radians, degrees = deg2rad, rad2deg
isnan = unary("isnan", _isnan, ALL, same,
               f"True where x is NaN.\n\n{_U}; bool result; complex: either part NaN.\n\n"
               "isnan([1.0, nan]) -> [False, True]")
isinf = unary("isinf", _isinf, ALL, same,
               f"True where x is +inf or -inf.\n\n{_U}; bool result.\n\n"
               "isinf([1.0, -inf]) -> [False, True]")
isfinite = unary("isfinite", _isfinite, ALL, same,
                  f"True where x is neither inf nor NaN.\n\n{_U}; bool result.\n\n"
                  "isfinite([1.0, inf, nan]) -> [True, False, False]")
isposinf = unary("isposinf", _is_value(math.inf), REAL, same,
                  f"True where x is +inf.\n\n{_U}; bool result; no complex.\n\n"
                  "isposinf([inf, -inf]) -> [True, False]")
isneginf = unary("isneginf", _is_value(-math.inf), REAL, same,
                  f"True where x is -inf.\n\n{_U}; bool result; no complex.\n\n"
                  "isneginf([inf, -inf]) -> [False, True]")
signbit = unary("signbit", signbit_of, REAL, same,
                 f"True where the sign bit is set (also -0.0 and -NaN).\n\n{_U}; bool result."
                 "\n\nsignbit([-0.0, 0.0, -2.0]) -> [True, False, True]")
conjugate = unary("conjugate", _conjugate, ALL, bool_to_int8,
                   f"Complex conjugate (real values unchanged).\n\n{_U}; bools compute in "
                   "int8.\n\nconjugate(1+2j) -> (1-2j)")
conj = conjugate
logical_not = unary("logical_not", lambda x: ops.bitwise_not(truth(x)), ALL, same,
                     f"not x as bool.\n\n{_U}; x != 0 is true.\n\n"
                     "logical_not([0, 2]) -> [True, False]")
invert = unary("invert", ops.bitwise_not, INT, same,
                f"~x: bitwise not (logical not on bools).\n\n{_U}; integer or bool only.\n\n"
                "invert(np.uint8(0)) -> 255")
bitwise_not = bitwise_invert = invert
