"""Scalar helpers called by the generated CUDA kernels.

Most helpers are the CPU backend's own (`numba.lib.scalar_math`): numba compiles those
`njit` functions for the GPU when a kernel calls them, so integer division,
shifts, NaN-aware max/min, the float total order, clamped indices and complex
division follow exactly the same rules on both backends. This module adds the
ones that cannot be shared:

- math: CUDA's libdevice through `math.*` / `cmath.*` (and `libdevice.floorf`
  and friends where `math.floor` would return an integer);
- float16 storage: device arrays hold real float16 values, converted with one
  hardware rounding (the CPU backend stores uint16 bits and rounds in software;
  both round to nearest even, from float64 for float64 operands);
- conversions and rounding written without the NumPy ufuncs numba-cuda lacks.

Under the simulator (`cuda.lib.launch.SIMULATED`) kernels are plain Python, where
`math.exp(1000.0)` raises instead of returning inf and numba intrinsics cannot
be called, so the last block rebinds the platform primitives to NumPy; every
helper built on them is shared. The PTX test compiles the GPU versions.
"""

from __future__ import annotations

import cmath
import math

import numpy as np
from numba import cuda
from numba.cuda import libdevice

from ...numba.lib.scalar_math import (  # noqa: F401 - re-exported for generated kernels
    clamp_index,
    complex_divide,
    div_s64,
    div_u64,
    float_sign,
    index_i64,
    leading_zeros,
    maximum,
    minimum,
    popcount,
    pow_s64,
    pow_u64,
    rem_s64,
    rem_u64,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    total_order_f32,
    total_order_f64,
)
from .launch import SIMULATED

_device = cuda.jit(device=True)


# ---------------------------------------------------------------- real math (libdevice)

@_device
def exp_f32(x):  # the same device function serves f32 and f64
    return math.exp(x)


@_device
def log_f32(x):
    return math.log(x)


@_device
def tanh_f32(x):
    return math.tanh(x)


@_device
def expm1_f32(x):
    return math.expm1(x)


@_device
def log1p_f32(x):
    return math.log1p(x)


@_device
def sin_f32(x):
    return math.sin(x)


@_device
def cos_f32(x):
    return math.cos(x)


@_device
def tan_f32(x):
    return math.tan(x)


@_device
def sqrt_f32(x):
    return math.sqrt(x)


@_device
def fmod_f32(x, y):
    return math.fmod(x, y)


@_device
def isfinite_f32(x):
    return math.isfinite(x)


exp_f64, log_f64, tanh_f64, expm1_f64, log1p_f64 = exp_f32, log_f32, tanh_f32, expm1_f32, log1p_f32
sin_f64, cos_f64, tan_f64, sqrt_f64, fmod_f64 = sin_f32, cos_f32, tan_f32, sqrt_f32, fmod_f32
isfinite_f64 = isfinite_f32

# math.floor & co. return integers; libdevice keeps the float (inf, NaN, -0.0 included).
floor_f32, floor_f64 = libdevice.floorf, libdevice.floor
ceil_f32, ceil_f64 = libdevice.ceilf, libdevice.ceil
rint_f32, rint_f64 = libdevice.rintf, libdevice.rint
trunc_f32, trunc_f64 = libdevice.truncf, libdevice.trunc
cbrt_f32, cbrt_f64 = libdevice.cbrtf, libdevice.cbrt


# ------------------------------------- complex math (cmath; sin, cos, tan, tanh, exp
# of complex operands use `numba.lib.complex_math`, NumPy's special values)

@_device
def exp_complex(z):
    return cmath.exp(z)


@_device
def log_complex(z):
    return cmath.log(z)


@_device
def sqrt_complex(z):
    return cmath.sqrt(z)


# The dtype constructors generated kernels cast with (`f32(x)`, `i8(x)`, ...).
b1, i8, i16, i32, i64 = np.bool_, np.int8, np.int16, np.int32, np.int64
u8, u16, u32, u64 = np.uint8, np.uint16, np.uint32, np.uint64
f16, f32, f64, c64, c128 = np.float16, np.float32, np.float64, np.complex64, np.complex128


def _wrapping(dtype: type) -> object:
    """A constructor for the simulator that wraps out-of-range integers to `dtype`, as the
    compiled cast does (NumPy raises for a Python int out of range)."""
    bits = 8 * np.dtype(dtype).itemsize
    unsigned = np.dtype(f"u{bits // 8}")

    def convert(x):
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            return np.array(int(x) & ((1 << bits) - 1), unsigned).view(dtype)[()]
        return dtype(x)
    return convert


if SIMULATED:  # Python semantics would raise where the GPU returns inf or NaN: use NumPy
    i8, i16, i32, i64 = (_wrapping(t) for t in (np.int8, np.int16, np.int32, np.int64))
    u8, u16, u32, u64 = (_wrapping(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
    exp_f32 = exp_f64 = exp_complex = np.exp
    log_f32 = log_f64 = log_complex = np.log
    tanh_f32 = tanh_f64 = np.tanh
    expm1_f32, expm1_f64, log1p_f32, log1p_f64 = np.expm1, np.expm1, np.log1p, np.log1p
    sin_f32 = sin_f64 = np.sin
    cos_f32 = cos_f64 = np.cos
    tan_f32 = tan_f64 = np.tan
    sqrt_f32 = sqrt_f64 = sqrt_complex = np.sqrt
    fmod_f32 = fmod_f64 = np.fmod
    isfinite_f32 = isfinite_f64 = np.isfinite
    floor_f32 = floor_f64 = np.floor
    ceil_f32 = ceil_f64 = np.ceil
    rint_f32 = rint_f64 = np.rint
    trunc_f32 = trunc_f64 = np.trunc
    cbrt_f32 = cbrt_f64 = np.cbrt

    def popcount(x):  # noqa: F811 - the intrinsic only runs compiled
        return type(x)(bin(int(x)).count("1"))

    def leading_zeros(x):  # noqa: F811
        return type(x)(8 * np.dtype(type(x)).itemsize - int(x).bit_length())


@_device
def expm1_complex(z):  # (cmath has no expm1 / log1p)
    return exp_complex(z) - 1


@_device
def log1p_complex(z):
    return log_complex(z + 1)


# ---------------------------------------------------------------- logistic

@_device
def logistic_fast_f32(x):  # (f32 or f64: one device function)
    """1 / (1 + e**-x) without overflow."""
    e = exp_f32(-abs(x))
    return 1 / (1 + e) if x >= 0 else e / (1 + e)


logistic_fast_f64 = logistic_fast_f32


# ---------------------------------------------------------------- float16 storage

@_device
def f16_to_f32(h):
    """The float32 value of a stored float16 (exact)."""
    return np.float32(h)


@_device
def f16_bits(x):  # (the cpu backend's name: the value to store)
    """`x` rounded to float16 for storing (one rounding to nearest even)."""
    return np.float16(x)


@_device
def f16_round(x):
    """`x` rounded to float16, as a float32 (how float16 values live in registers)."""
    return np.float32(np.float16(x))


# ---------------------------------------------------------------- conversions, rounding

@_device
def float_to_signed(x, low, high):
    """Truncate float64 `x` toward zero, saturating to [low, high]; NaN -> 0."""
    if x != x:
        return np.int64(0)
    if x >= np.float64(high):
        return np.int64(high)
    if x <= np.float64(low):
        return np.int64(low)
    return np.int64(x)


@_device
def float_to_unsigned(x, high):
    """Truncate float64 `x` toward zero, saturating to [0, high]; NaN -> 0."""
    if x != x or x < 1.0:
        return np.uint64(0)
    if x >= np.float64(high):
        return np.uint64(high)
    return np.uint64(x)


@_device
def round_half_away(x):
    """Round to nearest, ties away from zero, keeping -0.0 (as a float64)."""
    v = np.float64(x)
    whole = trunc_f64(v)
    if abs(v - whole) >= 0.5:
        whole += math.copysign(1.0, v)
    return math.copysign(whole, v)


__all__ = [  # what generated kernels import (the cpu helpers are re-exported)
    "b1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64", "c64",
    "c128", "clamp_index", "complex_divide", "div_s64", "div_u64", "float_sign", "index_i64",
    "leading_zeros", "maximum", "minimum", "popcount", "pow_s64", "pow_u64", "rem_s64",
    "rem_u64", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "total_order_f32", "total_order_f64",
    *(f"{fn}_{kind}" for fn in ("exp", "log", "tanh", "expm1", "log1p", "sin", "cos", "tan",
                                "sqrt") for kind in ("f32", "f64")),
    *(f"{fn}_complex" for fn in ("exp", "log", "expm1", "log1p", "sqrt")),
    *(f"{fn}_{kind}" for fn in ("fmod", "isfinite", "floor", "ceil", "rint", "trunc", "cbrt",
                                "logistic_fast") for kind in ("f32", "f64")),
    "f16_to_f32", "f16_bits", "f16_round", "float_to_signed", "float_to_unsigned",
    "round_half_away",
]
