"""NumPy's element-wise functions (ufuncs and friends) built from `tracer.ops`.

Each function promotes its inputs (NEP 50), computes in the dtype NumPy uses
(`sin` of int8 is float16, `floor` of ints is the ints themselves, ...),
broadcasts NumPy-style and calls one or a few ops (see `_ufunc_core`). The binary
arithmetic ufuncs live in `_binary` and the composite math formulas in `_math`;
the comparisons and logical functions in `_compare`; this module also holds
`clip`, `where`, `round`, `real` / `imag` / `angle` and `sinc`.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from . import _complex_special, _math
from ._smooth import sinc_maclaurin
from ._binary import *  # noqa: F401,F403
from ._binary import __all__ as _binary_all
from ._binary import add, bitwise_and, floor_divide, multiply, subtract
from ._compare import *  # noqa: F401,F403
from ._compare import equal, greater, logical_and, logical_or, not_equal
from ._compare import __all__ as _compare_all
from ._promotion import (as_result, asarray_like, broadcast_arrays, broadcast_shapes,
                         broadcast_to_shape, cast, check_out, constant, desc, dtype_of, error,
                         float_of, is_weak, promote, tracing)
from ._ufunc_core import (ALL, INT, NOVALUE, NUM, REAL, bool_to_int8, false_like, is_complex,
                          same, select, signbit_of, true_like, truth, unary)

__all__ = [
    *_binary_all, *_compare_all,
    "negative", "positive", "absolute", "abs", "fabs", "sign", "floor", "ceil", "trunc",
    "fix", "rint", "round", "around", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "cbrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "deg2rad", "rad2deg", "degrees", "radians", "isnan", "isinf",
    "isfinite", "isposinf", "isneginf", "signbit", "conjugate", "conj", "logical_not",
    "invert", "bitwise_not", "bitwise_invert", "clip", "where",
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
        return op(x) if dtypes.is_float(dtype_of(x)) else x
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
    return _complex_special.creciprocal(x) if is_complex(x) else ops.div(1, x)


def _isinf(x: Any) -> Any:
    kind = dtype_of(x).kind
    if kind == "c":
        return ops.bitwise_or(_isinf(ops.real(x)), _isinf(ops.imag(x)))
    return ops.eq(ops.abs(x), math.inf) if dtypes.is_float(dtype_of(x)) else false_like(x)


def _isfinite(x: Any) -> Any:
    kind = dtype_of(x).kind
    if kind == "c":
        return ops.bitwise_and(ops.is_finite(ops.real(x)), ops.is_finite(ops.imag(x)))
    return ops.is_finite(x) if dtypes.is_float(dtype_of(x)) else true_like(x)


def _isnan(x: Any) -> Any:
    return ops.ne(x, x) if dtypes.is_inexact(dtype_of(x)) else false_like(x)


def _is_value(value: float) -> Callable[[Any], Any]:
    def impl(x: Any) -> Any:
        return ops.eq(x, value) if dtypes.is_float(dtype_of(x)) else false_like(x)
    return impl


def _conjugate(x: Any) -> Any:
    return ops.complex(ops.real(x), ops.neg(ops.imag(x))) if is_complex(x) else x


def _scale(factor: float) -> Callable[[Any], Any]:
    return lambda x: ops.mul(x, factor)


def _log_base(base_log: float) -> Callable[[Any], Any]:
    def impl(x: Any) -> Any:
        out = ops.log(x)
        if not is_complex(out):
            return ops.div(out, base_log)
        # Part by part: a complex division would turn log(0) = -inf+0j into -inf+nanj.
        return ops.complex(ops.div(ops.real(out), base_log), ops.div(ops.imag(out), base_log))
    return impl


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
def _sign(x: Any) -> Any:
    out = ops.sign(x)
    if not dtypes.is_float(dtype_of(out)):
        return out
    # NumPy's float loop is `x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x`: sign(-0.0) is +0.0.
    return select(ops.eq(out, 0), 0, out)


sign = unary("sign", _sign, NUM, same,
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
exp2 = unary("exp2", lambda x: _complex_special.cexp2(x) if is_complex(x) else ops.pow(2, x),
              ALL, float_of,
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
fix = trunc


# ------------------------------------------------------------------ clip, where, round
def _bound(positional: Any, keyword: Any, which: str) -> Any:
    if positional is not NOVALUE and keyword is not NOVALUE:
        raise error(TracerValueError, "clip", f"passed both a_{which} and {which}; use one")
    value = keyword if positional is NOVALUE else positional
    return None if value is NOVALUE else value


def _useful_bounds(a: Any, lo: Any, hi: Any) -> tuple[Any, Any]:
    """With both bounds, a Python int below (above) an integer array's whole range is
    no bound at all (NumPy 2's clip); anything else promotes as usual."""
    if lo is None or hi is None or is_weak(a) or dtype_of(a).kind not in "iu":
        return lo, hi
    info = np.iinfo(dtype_of(a))
    if type(lo) is int and lo < info.min:
        lo = None
    if type(hi) is int and hi > info.max:
        hi = None
    return lo, hi


def clip(a: Any, a_min: Any = NOVALUE, a_max: Any = NOVALUE, out: None = None, *,
         min: Any = NOVALUE, max: Any = NOVALUE) -> Any:
    """Limit the values of `a` to [a_min, a_max] (min= / max= are NumPy 2 aliases).

    NumPy rule: NEP 50 promotion of a and the bounds, broadcasting; a bound of None is
    no bound; a_min > a_max gives a_max; NaN propagates.

    clip([-1, 5, 9], 0, 6) -> [0, 5, 6]
    """
    check_out(out, "clip")
    lo, hi = _useful_bounds(asarray_like(a, "clip"), _bound(a_min, min, "min"),
                            _bound(a_max, max, "max"))
    present = [v for v in (lo, hi) if v is not None]
    x, *bounds = promote(a, *present, fname="clip")
    shape = broadcast_shapes(*(np.shape(v) for v in (x, *bounds)), fname="clip")
    x = broadcast_to_shape(x, shape, "clip")
    bounds = [v if np.ndim(v) == 0 else broadcast_to_shape(v, shape, "clip") for v in bounds]
    # max then min, not clamp: at a tie (x == bound) the derivative splits like
    # jnp.clip's (maximum/minimum share it) where clamp's JVP would drop it
    if lo is not None:
        x = ops.max(x, bounds[0])
    if hi is not None:
        x = ops.min(x, bounds[-1])
    return as_result(x)


def _wrapped_int(value: Any, other: Any) -> Any:
    """np.where casts an out-of-range Python int unsafely (it wraps) instead of raising
    like a ufunc: `where(c, uint8_array, -1)` gives 255."""
    if type(value) is int and np.dtype(getattr(other, "dtype", object)).kind in "iu" \
            and not getattr(other, "weak_type", False):
        info = np.iinfo(other.dtype)
        if not info.min <= value <= info.max:
            return np.array(value).astype(other.dtype)
    return value


def where(condition: Any, x: Any = NOVALUE, y: Any = NOVALUE, /, *, size: Any = None,
          fill_value: Any = None) -> Any:
    """Elements of x where condition is true, else of y.

    NumPy rule: condition is truth-tested (nonzero); x and y promote (NEP 50); all
    three broadcast. where(condition) alone is nonzero(condition): its shape depends
    on the values, so inside a trace it needs a static size= (and fill_value=), as
    JAX's.

    where([True, False], [1, 2], [10, 20]) -> [1, 20]
    """
    if x is NOVALUE and y is NOVALUE:
        if size is None and (tracing() or isinstance(condition, Tracer)):
            raise error(TracerTypeError, "where", "where(condition) with one argument is "
                        "nonzero(condition), whose shape depends on the values; inside a "
                        "trace pass a static size= (and fill_value=), or use "
                        "where(condition, x, y)")
        from ._sorting import nonzero  # tracer.numpy's nonzero, static size= rules

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is NOVALUE or y is NOVALUE:
        raise error(TracerValueError, "where", "either both or neither of x and y should "
                    "be given")
    cond = truth(asarray_like(condition, "where"))
    x, y = promote(_wrapped_int(x, y), _wrapped_int(y, x), fname="where")
    return as_result(ops.select(*broadcast_arrays(cond, x, y, fname="where")))


def _round_float(x: Any, decimals: int) -> Any:
    if is_complex(x):
        return ops.complex(_round_float(ops.real(x), decimals),
                           _round_float(ops.imag(x), decimals))
    if decimals == 0:
        return ops.round_nearest_even(x)
    if decimals > 0:
        factor = 10.0 ** decimals
        return ops.div(ops.round_nearest_even(ops.mul(x, factor)), factor)
    factor = 10.0 ** -decimals
    return ops.mul(ops.round_nearest_even(ops.div(x, factor)), factor)


def _round_int(x: Any, decimals: int) -> Any:
    """To a multiple of 10**-decimals, ties to even, exactly in the integer dtype."""
    step = 10 ** -decimals
    if step > np.iinfo(dtype_of(x)).max:
        return constant(0, np.shape(x), dtype_of(x))
    q = floor_divide(x, step)
    r = subtract(x, multiply(q, step))
    rest = subtract(step, r)
    odd = not_equal(bitwise_and(q, 1), 0)
    up = logical_or(greater(r, rest), logical_and(equal(r, rest), odd))
    return multiply(add(q, cast(up, dtype_of(q))), step)


def round(a: Any, decimals: int = 0, out: None = None) -> Any:
    """Round to `decimals` decimal places, ties to even (NumPy's round / around).

    NumPy rule: floats compute rint(a * 10**d) / 10**d (a / 10**-d for d < 0); integers
    are unchanged for d >= 0 and round to multiples of 10**-d otherwise; bools give
    float16; complex rounds both parts.

    round([0.5, 1.5, 2.675], 2) -> [0.5, 1.5, 2.67]; round([15, 25], -1) -> [20, 20]
    """
    check_out(out, "round")
    if isinstance(decimals, Tracer) or not isinstance(decimals, (int, np.integer)):
        raise error(TracerTypeError, "round", f"decimals must be a static int, got "
                    f"{decimals!r}")
    x = asarray_like(a, "round")
    if dtype_of(x).kind == "b":
        if decimals:  # NumPy has no bool loop for the multiply / divide it would need
            raise error(DTypeError, "round", f"cannot round {desc(x)} to {decimals} decimals")
        x = cast(x, dtypes.float16, fname="round")
    if dtype_of(x).kind in "iu":
        return as_result(x if decimals >= 0 else _round_int(x, int(decimals)))
    return as_result(_round_float(x, int(decimals)))


around = round


# ------------------------------------------------------------------ complex parts, sinc
def real(val: Any) -> Any:
    """The real part (the array itself for real dtypes).

    NumPy rule: complex64 gives float32, complex128 float64.

    real([1+2j, 3]) -> [1.0, 3.0]
    """
    x = asarray_like(val, "real")
    return as_result(ops.real(x) if is_complex(x) else x)


def imag(val: Any) -> Any:
    """The imaginary part (zeros of the same dtype for real dtypes).

    NumPy rule: complex64 gives float32, complex128 float64.

    imag([1+2j, 3]) -> [2.0, 0.0]
    """
    x = asarray_like(val, "imag")
    return as_result(ops.imag(x) if is_complex(x) else constant(0, np.shape(x), dtype_of(x)))


def angle(z: Any, deg: bool = False) -> Any:
    """The counterclockwise angle from the positive real axis, arctan2(imag, real).

    NumPy rule: real input is arctan2(0, z) (pi for negatives); bools give float64,
    other integers follow arctan2's float rule (int8 -> float16).

    angle([1j, -1]) -> [1.5707963267948966, 3.141592653589793]
    """
    x = asarray_like(z, "angle")
    if is_complex(x):
        out = ops.atan2(ops.imag(x), ops.real(x))
    else:
        dt = dtype_of(x)
        x = cast(x, dtypes.float64 if dt.kind == "b" else float_of(dt), weak=is_weak(x))
        out = ops.atan2(constant(0, np.shape(x), dtype_of(x)), x)
    return as_result(ops.mul(out, 180 / math.pi) if deg else out)


def sinc(x: Any) -> Any:
    """The normalized sinc function sin(pi x) / (pi x), 1 at 0.

    NumPy rule: inexact dtypes are kept, everything else computes in float64; pi x = 0
    is replaced by eps (1e-20 for complex), as NumPy does.

    sinc([0.0, 0.5]) -> [1.0, 0.6366197723675814]
    """
    v = asarray_like(x, "sinc")
    dt = dtype_of(v)
    dt = dt if dtypes.is_inexact(dt) else dtypes.float64
    tiny = float(dtypes.finfo(dt).eps) if dtypes.is_float(dt) else 1.0e-20
    # NumPy's float16 loops (ml_dtypes' bfloat16 ones) compute in float32, but sinc is
    # `y = pi * x; sin(y) / y` in NumPy arrays of dt: pi * x and sin(y) round to dt
    # (float16 sinc(-7.25) is -0.03072, not -0.03105; sinc(65504) is NaN, as pi x overflows).
    work = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt

    def rounded(t: Any) -> Any:
        return t if work == dt else cast(cast(t, dt), work)
    pi = float(np.asarray(math.pi, dt)) if dtypes.is_float(dt) else math.pi
    y = rounded(ops.mul(pi, cast(v, work, weak=is_weak(v), fname="sinc")))
    nonzero = ops.ne(y, 0)
    safe = select(nonzero, y, tiny)
    # At 0 the value is 1 either way; the Maclaurin rule gives its derivatives (the
    # eps branch is constant there, so its second derivative would be 0, not -pi**2 / 3).
    out = ops.select(nonzero, ops.div(rounded(ops.sin(safe)), safe), sinc_maclaurin()(0, y))
    return as_result(cast(out, dt))
