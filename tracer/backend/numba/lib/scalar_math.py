"""Scalar helpers called by the generated CPU kernels (numba `njit` functions).

Each helper reproduces one reference implementation's rule exactly (see
`tracer.ops.elementwise`) for the cases numba's own operators get wrong or leave
to Python semantics: C-style integer division with XLA's x/0 rule, fmod-style
remainder, wrapping integer power, shifts by out-of-range amounts, saturating
float -> int conversion, rounding half away from zero, NaN-propagating
max/min that keep NumPy's choice on ties (signed zeros), the float total order,
and float16 / bfloat16 storage (numba has neither: their values are held in
float32 registers, rounded after each op, and stored as their uint16 bits).

Integer helpers work on int64 / uint64; the call site casts operands up and the
result back to the op's dtype, which gives the wraparound of the narrow type.
Generated modules import these by name, and their source is part of the disk
cache key (`cpu.cache`), so editing this file invalidates cached kernels.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_jit = njit(cache=True, error_model="numpy")


# ---------------------------------------------------------------- bit casts

def _bitcast(src: types.Type, dst: types.Type, width: int, to_int: bool):
    def impl(typingctx, x):  # numba intrinsic protocol
        if x != src:
            return None
        target = ir.IntType(width) if to_int else (ir.FloatType() if width == 32
                                                   else ir.DoubleType())

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], target)
        return dst(src), codegen
    return intrinsic(impl)


f32_as_i32 = _bitcast(types.float32, types.int32, 32, True)
f64_as_i64 = _bitcast(types.float64, types.int64, 64, True)
i32_as_f32 = _bitcast(types.int32, types.float32, 32, False)
i64_as_f64 = _bitcast(types.int64, types.float64, 64, False)


@intrinsic
def popcount(typingctx, x):
    """Number of set bits of an unsigned integer (LLVM ctpop)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return x(x), codegen


@intrinsic
def leading_zeros(typingctx, x):
    """Leading zero bits of an unsigned integer, counted over its width (LLVM ctlz)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))
    return x(x), codegen


# ---------------------------------------------------------------- float16 storage

@_jit
def f16_to_f32(h):
    """The float32 value of float16 bits `h` (exact)."""
    bits = np.int32(h)
    sign = (bits >> 15) & 1
    exponent = (bits >> 10) & 0x1F
    mantissa = bits & 0x3FF
    if exponent == 0:  # zero or subnormal: mantissa * 2**-24
        value = np.float32(mantissa) * np.float32(5.960464477539063e-08)
        return -value if sign else value
    if exponent == 31:
        out = (sign << 31) | 0x7F800000 | (mantissa << 13)
    else:
        out = (sign << 31) | ((exponent + 112) << 23) | (mantissa << 13)
    return i32_as_f32(np.int32(out))


@_jit
def f16_bits(x):
    """float16 bits of `x`, rounded to nearest even from its float64 value (as NumPy)."""
    x = np.float64(x)
    b = f64_as_i64(x)
    sign = np.uint16(0x8000) if b < 0 else np.uint16(0)
    a = abs(x)
    if a != a:
        return np.uint16(sign | 0x7E00)
    if a >= 65520.0:  # halfway between 65504 and 65536 rounds (to even) up to inf
        return np.uint16(sign | 0x7C00)
    if a < 6.103515625e-05:  # subnormal f16 (or zero): an integer count of 2**-24
        return np.uint16(sign | np.uint16(np.rint(a * 16777216.0)))
    rest = b & 0x7FFFFFFFFFFFFFFF
    mantissa = rest & 0xFFFFFFFFFFFFF
    h = (((rest >> 52) - 1008) << 10) + (mantissa >> 42)
    dropped = mantissa & 0x3FFFFFFFFFF
    if dropped > 0x20000000000 or (dropped == 0x20000000000 and (h & 1) == 1):
        h += 1
    return np.uint16(sign | np.uint16(h))


@_jit
def f16_round(x):
    """`x` rounded to float16, as a float32 (how f16 values live in registers)."""
    return f16_to_f32(f16_bits(x))


@_jit
def widen_f16(bits):
    """A float32 copy of a float16 array held as uint16 bits (C-contiguous), for kernels
    that compute in float32 (convolution, batch norm)."""
    out = np.empty(bits.shape, np.float32)
    src, dst = bits.reshape(bits.size), out.reshape(out.size)
    for k in range(src.size):
        dst[k] = f16_to_f32(src[k])
    return out


@_jit
def narrow_f16(values, out):
    """Store float32 `values` rounded to float16 into `out` (uint16 bits, same shape)."""
    src, dst = values.reshape(values.size), out.reshape(out.size)
    for k in range(src.size):
        dst[k] = f16_bits(src[k])


# ---------------------------------------------------------------- bfloat16 storage

@_jit
def bf16_to_f32(h):
    """The float32 value of bfloat16 bits `h` (exact: the top half of its bits)."""
    return i32_as_f32(np.int32(np.int64(h) << 16))


@_jit
def bf16_bits(x):
    """bfloat16 bits of `x`: rounded to float32 first, then to nearest even (as ml_dtypes
    and XLA convert, so float64 and int64 round twice); NaN becomes the quiet NaN of
    its sign (0x7FC0 / 0xFFC0), as ml_dtypes gives."""
    b = np.int64(f32_as_i32(np.float32(x))) & 0xFFFFFFFF
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return np.uint16(((b >> 16) & 0x8000) | 0x7FC0)
    return np.uint16((b + 0x7FFF + ((b >> 16) & 1)) >> 16)


@_jit
def bf16_round(x):
    """`x` rounded to bfloat16, as a float32 (how bf16 values live in registers)."""
    return bf16_to_f32(bf16_bits(x))


@_jit
def widen_bf16(bits):
    """A float32 copy of a bfloat16 array held as uint16 bits (C-contiguous), for kernels
    that compute in float32 (convolution, batch norm)."""
    out = np.empty(bits.shape, np.float32)
    src, dst = bits.reshape(bits.size), out.reshape(out.size)
    for k in range(src.size):
        dst[k] = bf16_to_f32(src[k])
    return out


@_jit
def narrow_bf16(values, out):
    """Store float32 `values` rounded to bfloat16 into `out` (uint16 bits, same shape)."""
    src, dst = values.reshape(values.size), out.reshape(out.size)
    for k in range(src.size):
        dst[k] = bf16_bits(src[k])


# ---------------------------------------------------------------- integers

@_jit
def div_s64(x, y):
    """C division of int64s; x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN."""
    if y == 0:
        return np.int64(-1)
    if y == -1:
        return np.int64(0) - x  # wraps for INT64_MIN, as two's complement does
    q = x // y
    if q * y != x and (x < 0) != (y < 0):
        q += 1  # floor -> truncation toward zero
    return q


@_jit
def div_u64(x, y):
    """Unsigned division; x / 0 = all bits set."""
    if y == 0:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return x // y


@_jit
def rem_s64(x, y):
    """C remainder (sign of the dividend); x rem 0 = x, INT_MIN rem -1 = 0."""
    if y == 0:
        return x
    if y == -1:
        return np.int64(0)
    return x - div_s64(x, y) * y


@_jit
def rem_u64(x, y):
    if y == 0:
        return x
    return x % y


@_jit
def pow_s64(x, y):
    """Wrapping x**y; y < 0 gives 0 except 1 for x == 1 and +-1 for x == -1 (XLA)."""
    if y < 0:
        if x == 1:
            return np.int64(1)
        if x == -1:
            return np.int64(-1) if y & 1 else np.int64(1)
        return np.int64(0)
    return np.int64(pow_u64(np.uint64(x), np.uint64(y)))


@_jit
def pow_u64(x, y):
    acc = np.uint64(1)
    base = x
    e = y
    while e:
        if e & np.uint64(1):
            acc = acc * base
        base = base * base
        e = e >> np.uint64(1)
    return acc


@_jit
def shift_left(x, amount, bits):
    """x << amount on a `bits`-wide pattern held in a uint64; 0 when amount >= bits."""
    if amount >= bits:
        return np.uint64(0)
    return x << amount


@_jit
def shift_right_logical(x, amount, bits):
    """Zero-filling shift of a `bits`-wide pattern (zero-extended into a uint64)."""
    if amount >= bits:
        return np.uint64(0)
    return x >> amount


@_jit
def shift_right_arithmetic(x, amount, bits):
    """Sign-filling shift of a `bits`-wide pattern (sign-extended into an int64)."""
    if amount >= bits:
        return np.int64(-1) if x < 0 else np.int64(0)
    return x >> np.int64(amount)


@_jit
def float_to_signed(x, low, high):
    """Truncate float64 `x` toward zero, saturating to [low, high]; NaN -> 0."""
    t = np.trunc(x)
    if t != t:
        return np.int64(0)
    if t >= np.float64(high):
        return np.int64(high)
    if t <= np.float64(low):
        return np.int64(low)
    return np.int64(t)


@_jit
def float_to_unsigned(x, high):
    """Truncate float64 `x` toward zero, saturating to [0, high]; NaN -> 0."""
    t = np.trunc(x)
    if t != t or t <= 0.0:
        return np.uint64(0)
    if t >= np.float64(high):
        return np.uint64(high)
    return np.uint64(t)


# ---------------------------------------------------------------- floats

@_jit
def maximum(a, b):
    """NumPy's maximum: a NaN operand wins, ties (-0.0 vs 0.0) give `b`."""
    return a if (a > b or a != a) else b


@_jit
def minimum(a, b):
    return a if (a < b or a != a) else b


# Reduction updates LLVM can vectorize: reassociation for sums and products; for
# max/min, no-NaN and no-signed-zero (the caller tracks NaNs itself). The flags
# live on these instructions only, even after inlining.

@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def add_reassoc(a, b):
    return a + b


@njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def mul_reassoc(a, b):
    return a * b


@njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def fma_reassoc(acc, x, y):
    """acc + x * y, fused into one multiply-add (one rounding) in a summing loop."""
    return acc + x * y


def _min_max(name: str):
    """LLVM's maxnum/minnum flagged no-NaN, no-signed-zero: the form LLVM vectorizes as
    a reduction. A NaN operand gives an unspecified value (callers track NaNs)."""
    def impl(typingctx, a, b):  # numba intrinsic protocol
        if not isinstance(a, types.Float) or a != b:
            return None

        def codegen(context, builder, signature, args):
            ty = args[0].type
            fn = builder.module.declare_intrinsic(name, [ty], ir.FunctionType(ty, [ty, ty]))
            return builder.call(fn, args, fastmath=("nnan", "nsz"))
        return a(a, b), codegen
    return intrinsic(impl)


max_nonan = _min_max("llvm.maxnum")
min_nonan = _min_max("llvm.minnum")


@_jit
def complex_divide(a, b):
    """NumPy's complex division (Smith's method); x / 0 gives inf/nan, never raises."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abs_br, abs_bi = abs(br), abs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0 and abs_bi == 0:
            return complex(ar / abs_br, ai / abs_br)
        rat = bi / br
        scale = 1.0 / (br + bi * rat)
        return complex((ar + ai * rat) * scale, (ai - ar * rat) * scale)
    rat = br / bi
    scale = 1.0 / (bi + br * rat)
    return complex((ar * rat + ai) * scale, (ai * rat - ar) * scale)


@_jit
def round_half_away(x):
    """Round to nearest, ties away from zero, keeping -0.0 (as a float64)."""
    whole = np.trunc(np.float64(x))
    if abs(np.float64(x) - whole) >= 0.5:
        whole += np.copysign(1.0, np.float64(x))
    return np.copysign(whole, np.float64(x))


@_jit
def float_sign(x):
    """-1, 1, or x itself for +-0.0 and NaN (as a float64)."""
    if x == 0 or x != x:
        return np.float64(x)
    return 1.0 if x > 0 else -1.0


@_jit
def total_order_f32(x):
    """An int32 key ordered -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN."""
    b = f32_as_i32(x)
    return b ^ np.int32(0x7FFFFFFF) if b < 0 else b


@_jit
def total_order_f64(x):
    b = f64_as_i64(x)
    return b ^ np.int64(0x7FFFFFFFFFFFFFFF) if b < 0 else b


@_jit
def index_i64(i):
    """An integer index as int64, saturated at +-2**62 (so start + size never wraps)."""
    if i > 4611686018427387904:
        return np.int64(4611686018427387904)
    if i < -4611686018427387904:
        return np.int64(-4611686018427387904)
    return np.int64(i)


@_jit
def clamp_index(i, high):
    """The seeds' clamp of a start index: min(max(i, 0), high)."""
    return min(max(index_i64(i), np.int64(0)), np.int64(high))
