"""Scalar code for the element-wise ops: one Python expression per op, for numba.

Every expression is wrapped in an explicit cast to the op's result dtype, so
numba's own promotion (int8 + int8 -> int64, int + float32 -> float64) never
decides a dtype; integer results are cast back from int64/uint64 arithmetic,
which wraps exactly like the narrow type. The cast is left out where numba already
computes in the result dtype (`exact`: float32 * float32 is float32, int64 + int64
is int64), and float64 constants are bare Python floats (numba types them float64):
each cast is a call numba types and lowers, about 1 ms of compile time per line.
float16 and bfloat16 values live in float32 registers and are rounded after every op
(`f16_round` / `bf16_round`); arrays hold their uint16 bits (`HALVES` names the load /
store helpers).

`SCALAR_EMITTERS[op_name](ctx, eqn, args) -> str` gets the operands' scalar
expressions; `ctx.use(name)` imports a helper from `numba.lib.scalar_math`; complex math with
NumPy's special values comes from `numba.lib.complex_math`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ... import dtypes
from ...core import Eqn, Literal

# Aliases the generated module imports (`from numpy import float32 as f32, ...`).
DTYPE_ALIASES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "b1", np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128",
}
F16 = np.dtype(np.float16)
BF16 = dtypes.bfloat16


@dataclass(frozen=True)
class Half:
    """A 16-bit float numba cannot compute in: the `numba.lib.scalar_math` helpers that load its
    uint16 bits as a float32, store a value as its bits, round a float32 to it, and
    widen / narrow whole arrays for kernels that compute in float32."""

    load: str
    store: str
    round: str
    widen: str
    narrow: str


HALVES: dict[np.dtype, Half] = {
    F16: Half("f16_to_f32", "f16_bits", "f16_round", "widen_f16", "narrow_f16"),
    BF16: Half("bf16_to_f32", "bf16_bits", "bf16_round", "widen_bf16", "narrow_bf16")}


class ScalarContext(Protocol):
    def use(self, helper: str, module: str | None = None) -> str: ...


Emitter = Callable[[ScalarContext, Eqn, list[str]], str]


def storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype arrays are held in inside kernels (float16 / bfloat16 as uint16 bits)."""
    return np.dtype(np.uint16) if dtype in HALVES else dtype


def alias(dtype: np.dtype) -> str:
    """The numba scalar type of `dtype` in registers (16-bit floats compute in float32)."""
    return DTYPE_ALIASES[_register(np.dtype(dtype))]


def cast(ctx: ScalarContext, expr: str, dtype: np.dtype) -> str:
    if dtype in HALVES:
        return f"{ctx.use(HALVES[dtype].round)}({expr})"
    return f"{alias(dtype)}({expr})"


# numba computes +, -, * (and, for floats, / and the ufuncs) of two values of these
# dtypes in that dtype; narrower integers widen to int64, bools to int64
CLOSED = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                         np.complex128, np.int64, np.uint64))
# &, |, ^ keep bools bool too
CLOSED_BITWISE = CLOSED | {np.dtype(np.bool_)}


def exact(ctx: ScalarContext, eqn: Eqn, expr: str, closed: frozenset = CLOSED) -> str:
    """`expr` as the eqn's result: bare where numba computes it in the result dtype
    already (every operand of that dtype, one in `closed`), else cast."""
    out = _out(eqn)
    if out in closed and all(a.aval.dtype == out for a in eqn.inputs):
        return expr
    return cast(ctx, expr, out)


def literal(value: Any, dtype: np.dtype) -> str:
    """A scalar constant of `dtype` as source text (a float64 one as a bare float)."""
    value = np.asarray(value, dtype).item()
    if dtype.kind == "b":
        return repr(bool(value))
    if dtype.kind in "iu":
        return f"{alias(dtype)}({int(value)})"
    if dtype.kind == "c":
        return f"{alias(dtype)}(complex({_float(value.real)}, {_float(value.imag)}))"
    if dtype == np.float64:
        text = _float(value)
        return f"({text})" if text.startswith("-") else text  # (-2.0) ** x, not -(2.0 ** x)
    return f"{alias(dtype)}({_float(value)})"


def _float(x: float) -> str:
    if math.isnan(x):
        return "np.nan"
    if math.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(float(x))


def _unsigned(dtype: np.dtype) -> str:
    return DTYPE_ALIASES[np.dtype(f"u{dtype.itemsize}")]


def _signed(dtype: np.dtype) -> str:
    return DTYPE_ALIASES[np.dtype(f"i{dtype.itemsize}")]


def _in(eqn: Eqn, k: int = 0) -> np.dtype:
    return eqn.inputs[k].aval.dtype


def _out(eqn: Eqn) -> np.dtype:
    return eqn.outputs[0].aval.dtype


COMPLEX_LIB = "numba.lib.complex_math"


def _use_complex(ctx: ScalarContext, helper: str) -> str:
    """`helper`, imported from `numba.lib.complex_math`."""
    return ctx.use(helper, COMPLEX_LIB)


def _complex_lib(helper: str, other: Emitter) -> Emitter:
    """`helper` (from `numba.lib.complex_math`: NumPy's special values, signed zeros and
    infinities) for complex operands; `other` for the rest."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        if _in(eqn).kind == "c":
            return cast(ctx, f"{_use_complex(ctx, helper)}({', '.join(a)})", _out(eqn))
        return other(ctx, eqn, a)
    return emit


# ---------------------------------------------------------------- binary arithmetic

def _arith(symbol: str) -> Emitter:
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        return exact(ctx, eqn, f"{a[0]} {symbol} {a[1]}")
    return emit


def _int_helper(signed: str, unsigned: str, float_expr: str | None) -> Emitter:
    """Integer ops through int64/uint64 helpers; floats through `float_expr`."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        dt = _in(eqn)
        if dt.kind == "i":
            return cast(ctx, f"{ctx.use(signed)}(i64({a[0]}), i64({a[1]}))", dt)
        if dt.kind == "u":
            return cast(ctx, f"{ctx.use(unsigned)}(u64({a[0]}), u64({a[1]}))", dt)
        assert float_expr is not None
        return exact(ctx, eqn, float_expr.format(*a))
    return emit


def power(products: Sequence[int]) -> Emitter:
    """pow, where real floats raised to a literal scalar exponent n in `products` are
    n - 1 products (`x * x`): no libm call in the loop. n = 2 is the exactly rounded
    square, as NumPy's `np.square` (what an AD graph's `x ** 2` needs); a backend whose
    pow is a long log/exp path may allow more (cuda: 3, within 2 ulp)."""
    def real(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        y = eqn.inputs[1]
        if _in(eqn).kind == "f" and isinstance(y, Literal) and y.aval.size == 1:
            n = float(np.ravel(y.value)[0])
            if n in products:
                return cast(ctx, " * ".join([a[0]] * int(n)), _out(eqn))
        return _int_helper("pow_s64", "pow_u64", "{0} ** {1}")(ctx, eqn, a)
    return _complex_lib("complex_pow", real)


def _divide(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    if _in(eqn).kind == "c":  # numba's own complex division raises on zero
        return cast(ctx, f"{ctx.use('complex_divide')}({a[0]}, {a[1]})", _out(eqn))
    return _int_helper("div_s64", "div_u64", "{0} / {1}")(ctx, eqn, a)


def _extremum(real: str, complex_: str) -> Emitter:
    """`real` (from `numba.lib.scalar_math`) or, for complex operands, `complex_` (from
    `numba.lib.complex_math`)."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        fn = _use_complex(ctx, complex_) if _in(eqn).kind == "c" else ctx.use(real)
        return cast(ctx, f"{fn}({a[0]}, {a[1]})", _out(eqn))
    return emit


def _bitwise(symbol: str) -> Emitter:
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        return exact(ctx, eqn, f"{a[0]} {symbol} {a[1]}", CLOSED_BITWISE)
    return emit


def _shift(helper: str) -> Emitter:
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        dt = _in(eqn)
        bits = 8 * dt.itemsize
        u = _unsigned(dt)
        value = (f"i64({_signed(dt)}({a[0]}))" if helper == "shift_right_arithmetic"
                 else f"u64({u}({a[0]}))")
        return cast(ctx, f"{ctx.use(helper)}({value}, u64({u}({a[1]})), {bits})", dt)
    return emit


def _complex(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return cast(ctx, f"complex({a[0]}, {a[1]})", _out(eqn))


def _atan2(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return exact(ctx, eqn, f"np.arctan2({a[0]}, {a[1]})")


_OPERATORS = {"EQ": "==", "NE": "!=", "GE": ">=", "GT": ">", "LE": "<=", "LT": "<"}


def _compare(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    symbol = _OPERATORS[eqn.params["direction"]]
    dt = _in(eqn)
    if eqn.params.get("total_order") and dtypes.is_float(dt):  # (16-bit: float32 keys)
        key = ctx.use("total_order_f64" if dt == np.float64 else "total_order_f32")
        return f"{key}({a[0]}) {symbol} {key}({a[1]})"
    if eqn.params.get("total_order") and dt.kind == "c":
        key = ctx.use("total_order_f64" if dt == np.complex128 else "total_order_f32")
        same = (f"({key}({a[0]}.real) == {key}({a[1]}.real) and "
                f"{key}({a[0]}.imag) == {key}({a[1]}.imag))")
        return same if symbol == "==" else f"not {same}"
    return f"{a[0]} {symbol} {a[1]}"


# ---------------------------------------------------------------- unary

def _call(fn: str) -> Emitter:
    """`fn(x)` as the result dtype (`fn` a NumPy ufunc numba knows)."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        return exact(ctx, eqn, f"{fn}({a[0]})")
    return emit


def _fast(name: str, libm: str) -> Emitter:
    """A vectorizable `cpu.lib.fastmath` helper for real floats; for complex, NumPy's ufunc
    (`np.<name>`) or a `numba.lib.complex_math` helper (another name)."""
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        dt = _in(eqn)
        if dt.kind == "c":
            fn = libm if libm.startswith("np.") else _use_complex(ctx, libm)
            return cast(ctx, f"{fn}({a[0]})", dt)
        helper = ctx.use(f"{name}_f64" if dt == np.float64 else f"{name}_f32")
        return cast(ctx, f"{helper}({a[0]})", dt)
    return emit


def _helper(name: str) -> Emitter:
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        return cast(ctx, f"{ctx.use(name)}({a[0]})", _out(eqn))
    return emit


def _abs(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    if _in(eqn).kind == "u":
        return a[0]
    return cast(ctx, f"abs({a[0]})", _out(eqn))


def _neg(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    dt = _in(eqn)
    if dt.kind == "u":
        return exact(ctx, eqn, f"{alias(dt)}(0) - {a[0]}")
    return exact(ctx, eqn, f"-{a[0]}")


def _not(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return f"not {a[0]}" if _in(eqn).kind == "b" else cast(ctx, f"~{a[0]}", _in(eqn))


def _sign(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    dt = _in(eqn)
    if dtypes.is_float(dt):
        return cast(ctx, f"{ctx.use('float_sign')}({a[0]})", dt)
    if dt.kind == "c":
        return cast(ctx, f"{_use_complex(ctx, 'complex_sign')}({a[0]})", dt)
    if dt.kind == "u":
        return cast(ctx, f"{a[0]} > 0", dt)
    return cast(ctx, f"i64({a[0]} > 0) - i64({a[0]} < 0)", dt)


def _logistic(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    dt = _in(eqn)
    if dt.kind == "c":
        one = literal(1, dt)
        return cast(ctx, f"{ctx.use('complex_divide')}({one}, {one} + np.exp(-{a[0]}))", dt)
    helper = "logistic_fast_f64" if dt == np.float64 else "logistic_fast_f32"
    return cast(ctx, f"{ctx.use(helper)}({a[0]})", dt)


def _rsqrt(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    one = literal(1, _register(_in(eqn)))
    if _in(eqn).kind == "c":
        return cast(ctx, f"{ctx.use('complex_divide')}({one}, np.sqrt({a[0]}))", _out(eqn))
    return cast(ctx, f"{one} / np.sqrt({a[0]})", _out(eqn))


def _register(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dt in HALVES else dt


def _erf(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return cast(ctx, f"math.erf(f64({a[0]}))", _out(eqn))


def _real(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return cast(ctx, f"{a[0]}.real", _out(eqn)) if _in(eqn).kind == "c" else a[0]


def _imag(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    if _in(eqn).kind == "c":
        return cast(ctx, f"{a[0]}.imag", _out(eqn))
    return literal(0, _out(eqn))


def _bit_count(helper: str) -> Emitter:
    def emit(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
        dt = _in(eqn)
        return cast(ctx, f"{ctx.use(helper)}({_unsigned(dt)}({a[0]}))", dt)
    return emit


# ---------------------------------------------------------------- ternary, convert

def _select(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    return f"{a[1]} if {a[0]} else {a[2]}"


def _clamp(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    lo, x, hi = a
    return cast(ctx, f"{ctx.use('minimum')}({ctx.use('maximum')}({lo}, {x}), {hi})", _out(eqn))


def _convert(ctx: ScalarContext, eqn: Eqn, a: list[str]) -> str:
    src, dst = _in(eqn), _out(eqn)
    x = a[0]
    if dst.kind == "b":
        return f"{x} != 0"
    if src.kind == "c" and dst.kind != "c":
        x, src = f"{x}.real", dtypes.real_dtype(src)
    if dtypes.is_float(src) and dst.kind == "i":
        info = np.iinfo(dst)
        return cast(ctx, f"{ctx.use('float_to_signed')}(f64({x}), {info.min}, {info.max})", dst)
    if dtypes.is_float(src) and dst.kind == "u":
        helper = ctx.use("float_to_unsigned")
        return cast(ctx, f"{helper}(f64({x}), u64({np.iinfo(dst).max}))", dst)
    if dst == F16 and src.kind in "iub":
        return cast(ctx, f"f64({x})", dst)  # one rounding, from the exact float64 value
    if src.kind == "b" and dst.kind == "c":
        return cast(ctx, f"f64({x})", dst)
    return cast(ctx, x, dst)


SCALAR_EMITTERS: dict[str, Emitter] = {
    "add": _arith("+"), "sub": _arith("-"),
    "mul": _complex_lib("complex_multiply", _arith("*")),
    "div": _divide,
    "rem": _int_helper("rem_s64", "rem_u64", "np.fmod({0}, {1})"),
    "pow": power((2,)),
    "max": _extremum("maximum", "complex_maximum"),
    "min": _extremum("minimum", "complex_minimum"),
    "atan2": _atan2, "complex": _complex,
    "bitwise_and": _bitwise("&"), "bitwise_or": _bitwise("|"), "bitwise_xor": _bitwise("^"),
    "shift_left": _shift("shift_left"),
    "shift_right_logical": _shift("shift_right_logical"),
    "shift_right_arithmetic": _shift("shift_right_arithmetic"),
    "compare": _compare,
    "abs": _abs, "neg": _neg, "bitwise_not": _not, "sign": _sign,
    "ceil": _call("np.ceil"), "floor": _call("np.floor"),
    "round": _helper("round_half_away"), "round_nearest_even": _call("np.rint"),
    "exp": _fast("exp", "complex_exp"),
    "expm1": _complex_lib("complex_expm1", _call("np.expm1")),
    "log": _fast("log", "np.log"), "log1p": _call("np.log1p"),
    "sin": _complex_lib("complex_sin", _call("np.sin")),
    "cos": _complex_lib("complex_cos", _call("np.cos")),
    "tan": _complex_lib("complex_tan", _call("np.tan")),
    "tanh": _fast("tanh", "complex_tanh"), "sqrt": _call("np.sqrt"),
    "cbrt": _call("np.cbrt"), "logistic": _logistic, "rsqrt": _rsqrt, "erf": _erf,
    "is_finite": lambda ctx, eqn, a: f"np.isfinite({a[0]})",
    "real": _real, "imag": _imag,
    "clz": _bit_count("leading_zeros"), "population_count": _bit_count("popcount"),
    "select": _select, "clamp": _clamp, "convert_element_type": _convert,
}
