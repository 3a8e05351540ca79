"""Element-wise ops (XLA's element-wise operations): binary arithmetic and bitwise ops,
comparisons, unary functions, `select`, `clamp` and `convert_element_type`.

Operands share a dtype (a Python scalar takes the other operand's dtype) and
broadcast by the seeds' rules (`tracer.ops.broadcasting`). Where the seeds say
"implementation-defined" (integer division by zero, shift amounts out of range,
float→int conversion) the reference implementations follow XLA's CPU/GPU
behaviour, and each op's doc says which choice it makes. No input makes them
raise or warn. Those reference kernels are in `elementwise_impl.py`; the JVP,
transpose and batching rules in `elementwise_rules.py`.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from .broadcasting import (ANY, INEXACT, INTEGER, NUMBER, broadcast_shape, check_kinds,
                           define_binary, define_unary, dims_param, expand_operands,
                           harmonize_for, quiet)
from .common import wrapper_error
from .elementwise_impl import (_clz, _complex, _erf, _imag, _int_div, _int_or, _int_pow,
                               _int_rem, _logistic, _population_count, _real,
                               _round_half_away, _shift, _sign, _signed)
from .registry import all_weak, define_op, same_dtypes


def _complex_result(dtype: np.dtype) -> np.dtype:
    if dtype not in (dtypes.float32, dtypes.float64):
        raise DTypeError(f"expects f32 or f64 parts, got {dtypes.hlo_name(dtype)}")
    return dtypes.complex_dtype(dtype)


_B = "\n\n"  # docs: summary, then the seed rule, then an example

add_p, add = define_binary(
    "add", "add", np.add, NUMBER, linear=True,
    doc=f"Element-wise sum `lhs + rhs` (integers wrap).{_B}Seed rule: shapes equal, a "
        f"scalar, degenerate (size-1) dims, or different ranks with broadcast_dimensions."
        f"{_B}add([[1,2,3],[4,5,6]], [7,8,9], broadcast_dimensions=[1]) -> "
        f"[[8,10,12],[11,13,15]]")
sub_p, sub = define_binary(
    "sub", "subtract", np.subtract, NUMBER, linear=True,
    doc=f"Element-wise difference `lhs - rhs` (integers wrap).{_B}Seed rule: as add."
        f"{_B}sub([5, 7], 2) -> [3, 5]")
mul_p, mul = define_binary(
    "mul", "multiply", np.multiply, NUMBER,
    doc=f"Element-wise product `lhs * rhs` (integers wrap).{_B}Seed rule: as add."
        f"{_B}mul([1, 2], [3, 4]) -> [3, 8]")
div_p, div = define_binary(
    "div", "divide", _int_or(_int_div, np.divide), NUMBER,
    doc=f"Element-wise quotient `lhs / rhs`.{_B}Seed rule: integers truncate toward zero "
        f"(C); x / 0 and INT_MIN / -1 are implementation-defined: here (as XLA) x / 0 is "
        f"-1 (all bits set, the max for unsigned) and INT_MIN / -1 is INT_MIN."
        f"{_B}div([-7, 7], [2, 0]) -> [-3, -1]")
rem_p, rem = define_binary(
    "rem", "remainder", _int_or(_int_rem, np.fmod), "iuf",
    doc=f"Element-wise remainder with the sign of the dividend (C fmod).{_B}Seed rule: "
        f"|result| < |rhs|; implementation-defined cases follow XLA: x rem 0 is x, "
        f"INT_MIN rem -1 is 0, float x rem 0 is NaN.{_B}rem(-7.5, 2.0) -> -1.5")
max_p, max = define_binary(
    "max", "maximum", np.maximum, ANY,
    doc=f"Element-wise maximum; a NaN operand gives NaN (complex: lexicographic)."
        f"{_B}Seed rule: as add (NaN handling unspecified; XLA propagates NaN)."
        f"{_B}max([1, 5], [3, 2]) -> [3, 5]")
min_p, min = define_binary(
    "min", "minimum", np.minimum, ANY,
    doc=f"Element-wise minimum; a NaN operand gives NaN (complex: lexicographic)."
        f"{_B}Seed rule: as max.{_B}min([1, 5], [3, 2]) -> [1, 2]")
pow_p, pow = define_binary(
    "pow", "power", _int_or(_int_pow, np.power), NUMBER,
    doc=f"Element-wise power `lhs ** rhs`.{_B}Seed rule: lhs^rhs. Integers: exact power "
        f"(wrapping); a negative exponent gives 0, except 1 for base 1 and ±1 for base "
        f"-1 (XLA).{_B}pow([2, 2, -1], [10, -1, -3]) -> [1024, 0, -1]")
atan2_p, atan2 = define_binary(
    "atan2", "atan2", np.arctan2, "f",
    doc=f"Element-wise two-argument arctangent atan2(lhs, rhs).{_B}Seed rule: as add; "
        f"floating-point only.{_B}atan2(1.0, 1.0) -> 0.7853982")
complex_p, complex = define_binary(
    "complex", "complex", _complex, "f", result=_complex_result, linear=True,
    doc=f"Complex number from a real (lhs) and an imaginary (rhs) part.{_B}Seed rule: "
        f"f32 parts give c64, f64 parts give c128.{_B}complex(1.0, 2.0) -> (1+2j)")
bitwise_and_p, bitwise_and = define_binary(
    "bitwise_and", "and", np.bitwise_and, "biu", differentiable=False,
    doc=f"Element-wise AND: logical on bool, bitwise on integers.{_B}Seed rule: And "
        f"(LogicalAnd). Floats are rejected.{_B}bitwise_and([12, 10], 6) -> [4, 2]")
bitwise_or_p, bitwise_or = define_binary(
    "bitwise_or", "or", np.bitwise_or, "biu", differentiable=False,
    doc=f"Element-wise OR: logical on bool, bitwise on integers.{_B}Seed rule: Or "
        f"(LogicalOr).{_B}bitwise_or([12, 10], 1) -> [13, 11]")
bitwise_xor_p, bitwise_xor = define_binary(
    "bitwise_xor", "xor", np.bitwise_xor, "biu", differentiable=False,
    doc=f"Element-wise XOR: logical on bool, bitwise on integers.{_B}Seed rule: Xor."
        f"{_B}bitwise_xor([True, True], [True, False]) -> [False, True]")
shift_left_p, shift_left = define_binary(
    "shift_left", "shift-left", _shift("left"), INTEGER, differentiable=False,
    doc=f"Element-wise `lhs << rhs` on the bit pattern.{_B}Seed rule: named only; as XLA, "
        f"an amount >= the bit width (or negative) gives 0.{_B}shift_left([1, 1], [3, 70]) "
        f"-> [8, 0]")
shift_right_arithmetic_p, shift_right_arithmetic = define_binary(
    "shift_right_arithmetic", "shift-right-arithmetic", _shift("arithmetic"), INTEGER,
    differentiable=False,
    doc=f"Element-wise sign-filling `lhs >> rhs`.{_B}Seed rule: named only; as XLA, the "
        f"sign is the top bit (also for unsigned types) and an amount >= the bit width "
        f"(or negative) gives 0 or -1.{_B}shift_right_arithmetic(int8 -16, 2) -> -4")
shift_right_logical_p, shift_right_logical = define_binary(
    "shift_right_logical", "shift-right-logical", _shift("logical"), INTEGER,
    differentiable=False,
    doc=f"Element-wise zero-filling `lhs >> rhs` (signed values shift as unsigned)."
        f"{_B}Seed rule: named only; an amount >= the bit width (or negative) gives 0."
        f"{_B}shift_right_logical(int8 -16, 2) -> 60")


# ---- comparisons: one `compare` op, with the direction as a param ----

_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
               "GT": np.greater, "LE": np.less_equal, "LT": np.less}


def _compare_shape(lhs: ShapedArray, rhs: ShapedArray, *, direction: str,
                   total_order: bool = False,
                   broadcast_dimensions: tuple[int, ...] | None = None) -> ShapedArray:
    if direction not in _DIRECTIONS:
        raise ParamError(f"direction must be one of {sorted(_DIRECTIONS)}, got {direction!r}")
    dtype = same_dtypes(lhs, rhs)
    check_kinds(dtype, ANY if direction in ("EQ", "NE") else "biuf")
    shape = broadcast_shape(lhs.shape, rhs.shape, broadcast_dimensions)
    return ShapedArray(shape, dtypes.bool_)


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered like -NaN < -Inf < -finite < -0 < +0 < ... < +NaN:
    the bit pattern as a signed int, with the magnitude bits flipped for negatives."""
    bits = np.array(x, order="C").view(_signed(x.dtype))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _compare_impl(x: np.ndarray, y: np.ndarray, *, direction: str, total_order: bool = False,
                  broadcast_dimensions: tuple[int, ...] | None = None) -> np.ndarray:
    x, y = expand_operands(x, y, broadcast_dimensions)
    if total_order and x.dtype.kind == "c":
        same = np.equal(_total_order_key(x.real), _total_order_key(y.real)) & \
            np.equal(_total_order_key(x.imag), _total_order_key(y.imag))
        return same if direction == "EQ" else ~same
    if total_order and dtypes.is_float(x.dtype):
        x, y = _total_order_key(x), _total_order_key(y)
    return _DIRECTIONS[direction](x, y)


compare_p = define_op(
    "compare", shape=_compare_shape, impl=quiet(_compare_impl), hlo_name="compare",
    family="compare", differentiable=False,
    doc=f"Element-wise comparison in `direction` (EQ NE GE GT LE LT), giving bool."
        f"{_B}Seed rule: IEEE 754 for floats (NaN compares false except NE); with "
        f"total_order: -NaN < -Inf < -finite < -0 < +0 < +finite < +Inf < +NaN (plain "
        f"comparison for non-floats; complex only EQ/NE).{_B}compare(-0.0, 0.0, "
        f"direction='LT', total_order=True) -> True")


def _comparison(direction: str, summary: str, example: str) -> Any:
    name = direction.lower()

    def wrapper(lhs: Any, rhs: Any, broadcast_dimensions: Any = None,
                total_order: bool = False) -> Any:
        lhs, rhs = harmonize_for(name, lhs, rhs)
        return compare_p.bind(lhs, rhs, direction=direction, total_order=bool(total_order),
                              broadcast_dimensions=dims_param(name, broadcast_dimensions))
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = "tracer.ops"
    wrapper.__doc__ = (f"Element-wise `{summary}` as a bool array (op `compare`, "
                       f"direction={direction}).{_B}Seed rule: IEEE 754, or the float "
                       f"total order with total_order=True; broadcasting as add.{_B}{example}")
    return wrapper


eq = _comparison("EQ", "lhs == rhs", "eq(nan, nan) -> False; with total_order=True -> True")
ne = _comparison("NE", "lhs != rhs", "ne([1, 2], 2) -> [True, False]")
ge = _comparison("GE", "lhs >= rhs", "ge([1, 2], 2) -> [False, True]")
gt = _comparison("GT", "lhs > rhs", "gt([1, 3], 2) -> [False, True]")
le = _comparison("LE", "lhs <= rhs", "le([1, 3], 2) -> [True, False]")
lt = _comparison("LT", "lhs < rhs", "lt(-0.0, 0.0) -> False; with total_order=True -> True")


# ---- unary ----

def _unary(name: str, hlo_name: str, kernel: Any, kinds: str, summary: str, rule: str,
           example: str, **fields: Any) -> tuple[Any, Any]:
    return define_unary(name, hlo_name, kernel, kinds, doc=f"{summary}{_B}Seed rule: {rule}"
                        f"{_B}{example}", **fields)


_FLOAT_ONLY = "floating-point operands only (XLA)."
_INEXACT_ONLY = "floating-point or complex operands only (XLA)."
_real_of = dtypes.real_dtype

abs_p, abs = _unary("abs", "abs", np.abs, NUMBER, "Element-wise |x|.",
                    "complex gives the real magnitude (c64 -> f32); INT_MIN stays INT_MIN.",
                    "abs([-2, 3]) -> [2, 3]", result=_real_of)
ceil_p, ceil = _unary("ceil", "ceil", np.ceil, "f", "Element-wise ceiling.", _FLOAT_ONLY,
                      "ceil([-1.5, 1.2]) -> [-1.0, 2.0]", differentiable=False)
floor_p, floor = _unary("floor", "floor", np.floor, "f", "Element-wise floor.", _FLOAT_ONLY,
                        "floor([-1.5, 1.2]) -> [-2.0, 1.0]", differentiable=False)
round_p, round = _unary(
    "round", "round-nearest-afz", _round_half_away, "f",
    "Element-wise rounding, ties away from zero.", "Round: ties away from zero; -0.0 kept.",
    "round([0.5, 1.5, 2.5, -0.5, -2.5]) -> [1.0, 2.0, 3.0, -1.0, -3.0]",
    differentiable=False)
round_nearest_even_p, round_nearest_even = _unary(
    "round_nearest_even", "round-nearest-even", np.rint, "f",
    "Element-wise rounding, ties to even.", "RoundNearestEven: ties to nearest even.",
    "round_nearest_even([0.5, 1.5, 2.5, -0.5]) -> [0.0, 2.0, 2.0, -0.0]",
    differentiable=False)
exp_p, exp = _unary("exp", "exponential", np.exp, INEXACT, "Element-wise e**x.",
                    _INEXACT_ONLY, "exp(0.0) -> 1.0")
expm1_p, expm1 = _unary("expm1", "exponential-minus-one", np.expm1, INEXACT,
                        "Element-wise e**x - 1, accurate near 0.", _INEXACT_ONLY,
                        "expm1(1e-10) -> 1e-10")
log_p, log = _unary("log", "log", np.log, INEXACT, "Element-wise natural logarithm.",
                    _INEXACT_ONLY + " log(0) is -inf, log(-1) NaN.", "log(1.0) -> 0.0")
log1p_p, log1p = _unary("log1p", "log-plus-one", np.log1p, INEXACT,
                        "Element-wise ln(1 + x), accurate near 0.", _INEXACT_ONLY,
                        "log1p(1e-10) -> 1e-10")
logistic_p, logistic = _unary(
    "logistic", "logistic", _logistic, INEXACT, "Element-wise 1 / (1 + e**-x).",
    _INEXACT_ONLY + " Evaluated without overflow for large |x|.",
    "logistic([0.0, -1000.0]) -> [0.5, 0.0]")
neg_p, neg = _unary("neg", "negate", np.negative, NUMBER, "Element-wise -x.",
                    "integers wrap (unsigned too).", "neg([1, -2]) -> [-1, 2]", linear=True)
bitwise_not_p, bitwise_not = _unary(
    "bitwise_not", "not", np.invert, "biu", "Element-wise NOT: logical on bool, bitwise on "
    "integers.", "Not (LogicalNot): x -> !x.", "bitwise_not([True, False]) -> [False, True]",
    differentiable=False)
sign_p, sign = _unary(
    "sign", "sign", _sign, NUMBER, "Element-wise sgn(x).",
    "-1 / 0 / 1; floats keep -0.0 and NaN; complex x / |x| (0 for 0).",
    "sign([-3.0, -0.0, 0.0, 5.0, nan]) -> [-1.0, -0.0, 0.0, 1.0, nan]",
    differentiable=False)
sin_p, sin = _unary("sin", "sine", np.sin, INEXACT, "Element-wise sine.", _INEXACT_ONLY,
                    "sin(0.0) -> 0.0")
cos_p, cos = _unary("cos", "cosine", np.cos, INEXACT, "Element-wise cosine.",
                    _INEXACT_ONLY, "cos(0.0) -> 1.0")
tan_p, tan = _unary("tan", "tan", np.tan, INEXACT, "Element-wise tangent.", _INEXACT_ONLY,
                    "tan(0.0) -> 0.0")
tanh_p, tanh = _unary("tanh", "tanh", np.tanh, INEXACT, "Element-wise hyperbolic tangent.",
                      _INEXACT_ONLY, "tanh(0.0) -> 0.0")
sqrt_p, sqrt = _unary("sqrt", "sqrt", np.sqrt, INEXACT, "Element-wise square root.",
                      _INEXACT_ONLY + " sqrt(-1.0) is NaN.", "sqrt(4.0) -> 2.0")
rsqrt_p, rsqrt = _unary("rsqrt", "rsqrt", lambda x: 1 / np.sqrt(x), INEXACT,
                        "Element-wise 1 / sqrt(x).", _INEXACT_ONLY + " rsqrt(0.0) is inf.",
                        "rsqrt(4.0) -> 0.5")
cbrt_p, cbrt = _unary("cbrt", "cbrt", np.cbrt, "f", "Element-wise real cube root.",
                      _FLOAT_ONLY + " cbrt(-8.0) is -2.0.", "cbrt(-8.0) -> -2.0")
erf_p, erf = _unary("erf", "erf", _erf, "f", "Element-wise error function.",
                    "erf(x) = 2/sqrt(pi) * integral_0^x e**(-t**2) dt; " + _FLOAT_ONLY,
                    "erf(0.0) -> 0.0")
is_finite_p, is_finite = _unary(
    "is_finite", "is-finite", np.isfinite, "f", "Element-wise test for finite values.",
    "bool, true iff not +-inf and not NaN; " + _FLOAT_ONLY,
    "is_finite([1.0, inf, -inf, nan]) -> [True, False, False, False]",
    result=lambda d: dtypes.bool_, weak=False, differentiable=False)
real_p, real = _unary("real", "real", _real, INEXACT, "Element-wise real part.",
                      "complex gives its real dtype (c64 -> f32); identity for floats.",
                      "real(1+2j) -> 1.0", result=_real_of, linear=True)
imag_p, imag = _unary("imag", "imag", _imag, INEXACT, "Element-wise imaginary part.",
                      "complex gives its real dtype (c64 -> f32); 0 for floats.",
                      "imag(1+2j) -> 2.0", result=_real_of, linear=True)
clz_p, clz = _unary("clz", "count-leading-zeros", _clz, INTEGER,
                    "Element-wise count of leading zero bits.",
                    "integers only, counted over the type's bit width.",
                    "clz(int32 1) -> 31", differentiable=False)
population_count_p, population_count = _unary(
    "population_count", "popcnt", _population_count, INTEGER,
    "Element-wise number of set bits.", "integers only (signed: of the bit pattern).",
    "population_count(int8 -1) -> 8", differentiable=False)


# ---- select, clamp, convert_element_type ----

def _select_shape(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray) -> ShapedArray:
    if pred.dtype != dtypes.bool_:
        raise DTypeError(f"pred must be bool (pred), got {pred}")
    dtype = same_dtypes(on_true, on_false)
    if on_true.shape != on_false.shape:
        raise ShapeError(f"on_true {on_true} and on_false {on_false} must have the same shape")
    if pred.shape not in ((), on_true.shape):
        raise ShapeError(f"pred {pred} must be a scalar or have the branches' shape "
                         f"{on_true.shape}")
    return ShapedArray(on_true.shape, dtype, weak_type=all_weak(on_true, on_false))


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Element-wise choice: on_true where pred, else on_false.

    Seed rule: branches have one shape and dtype (the result's); pred is bool with
    that shape, or a scalar choosing a whole branch. No other broadcasting.

    select([True, False], [1, 2], [100, 200]) -> [1, 200]
    """
    on_true, on_false = harmonize_for("select", on_true, on_false)
    return select_p.bind(pred, on_true, on_false)


select_p = define_op("select", shape=_select_shape, impl=quiet(np.where), hlo_name="select",
                     family="ternary", doc=inspect.cleandoc(select.__doc__ or ""))


def _clamp_shape(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    dtype = same_dtypes(lo, x, hi)
    check_kinds(dtype, "biuf")
    for bound, which in ((lo, "min"), (hi, "max")):
        if bound.shape not in ((), x.shape):
            raise ShapeError(f"{which} {bound} must be a scalar or have the operand's "
                             f"shape {x.shape}")
    return ShapedArray(x.shape, dtype, weak_type=all_weak(lo, x, hi))


def _clamp_impl(lo: np.ndarray, x: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(lo, x), hi)


def clamp(min: Any, operand: Any, max: Any) -> Any:
    """Element-wise min(max(min, operand), max).

    Seed rule: argument order (min, operand, max); min and max have the operand's
    shape or are scalars, all one dtype; min > max gives max; NaN propagates.

    clamp(0, [-1, 5, 9], 6) -> [0, 5, 6]
    """
    operand, min, max = harmonize_for("clamp", operand, min, max)
    return clamp_p.bind(min, operand, max)


clamp_p = define_op("clamp", shape=_clamp_shape, impl=quiet(_clamp_impl), hlo_name="clamp",
                    family="ternary", doc=inspect.cleandoc(clamp.__doc__ or ""))


def _convert_shape(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    return ShapedArray(x.shape, dtypes.canonicalize(new_dtype), weak_type)


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturate to dtype's range, NaN -> 0 (no NumPy warnings)."""
    x = np.trunc(x.astype(np.float64))  # float64 holds every f16/f32 value and bound
    info = np.iinfo(dtype)
    above, below = x >= float(info.max), x <= float(info.min)
    inside = np.where(above | below | np.isnan(x), 0, x).astype(dtype)
    return np.where(above, info.max, np.where(below, info.min, inside)).astype(dtype)


def _convert_impl(x: np.ndarray, *, new_dtype: np.dtype, weak_type: bool = False) -> np.ndarray:
    if new_dtype == dtypes.bool_:
        return x != 0
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = x.real
    if dtypes.is_float(x.dtype) and new_dtype.kind in "iu":
        return _float_to_int(x, new_dtype)
    return x.astype(new_dtype)


def convert_element_type(operand: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Element-wise conversion to new_dtype, like C++ static_cast.

    Seed rule: shape kept; int -> float rounds to nearest even. Unspecified by the
    seeds, chosen here: float -> int truncates toward zero and saturates, NaN -> 0;
    int -> int wraps; complex -> real takes the real part; -> bool is x != 0. The
    result is weakly typed only when `weak_type=True` (tracer.numpy uses that when
    a Python-scalar value changes kind, as JAX does).

    convert_element_type(np.array([0, 1, 2], np.int32), np.float32) -> [0.0, 1.0, 2.0]
    """
    try:
        dtype = np.dtype(new_dtype)
    except TypeError:
        raise wrapper_error(DTypeError, "convert_element_type",
                            f"new_dtype {new_dtype!r} is not a dtype") from None
    return convert_element_type_p.bind(operand, new_dtype=dtype, weak_type=bool(weak_type))


convert_element_type_p = define_op(
    "convert_element_type", shape=_convert_shape, impl=quiet(_convert_impl),
    hlo_name="convert", family="unary", linear=True,
    doc=inspect.cleandoc(convert_element_type.__doc__ or ""))


__all__ = [
    "add", "sub", "mul", "div", "rem", "max", "min", "pow", "atan2", "complex",
    "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right_arithmetic",
    "shift_right_logical", "eq", "ne", "ge", "gt", "le", "lt",
    "abs", "ceil", "floor", "round", "round_nearest_even", "exp", "expm1", "log", "log1p",
    "logistic", "neg", "bitwise_not", "sign", "sin", "cos", "tan", "tanh", "sqrt", "rsqrt",
    "cbrt", "erf", "is_finite", "real", "imag", "clz", "population_count",
    "select", "clamp", "convert_element_type",
]
