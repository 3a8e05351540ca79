"""NumPy reference kernels of the element-wise ops (`elementwise.py` defines the ops):
XLA's choices where the seeds say "implementation-defined" (integer division and
remainder by zero, INT_MIN / -1, integer powers, shift amounts out of range) and the
unary functions NumPy spells differently (round half away from zero, logistic,
sign keeping -0.0, erf, clz, population_count). None raises or warns.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes

_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _signed(dtype: np.dtype) -> np.dtype:
    return np.dtype(_SIGNED[dtype.itemsize])


def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(_UNSIGNED[dtype.itemsize])


def _int_or(int_kernel: Any, float_kernel: Any) -> Any:
    def kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return (int_kernel if x.dtype.kind in "iu" else float_kernel)(x, y)
    kernel.__name__ = int_kernel.__name__.removeprefix("_int_")
    return kernel


def _safe_divisor(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y == 0, y with 1 where it is 0 or where INT_MIN / -1 would overflow)."""
    zero = y == 0
    bad = zero
    if x.dtype.kind == "i":
        bad = zero | ((x == np.iinfo(x.dtype).min) & (y == -1))
    return zero, np.where(bad, 1, y)


def _int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    zero, safe = _safe_divisor(x, y)
    rem = np.fmod(x, safe)
    quotient = (x - rem) // safe  # exact, so this is C's truncating division
    return np.where(zero, np.invert(np.zeros((), x.dtype)), quotient)


def _int_rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    zero, safe = _safe_divisor(x, y)
    return np.where(zero, x, np.fmod(x, safe))


def _int_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact x**y by repeated squaring (wrapping like the hardware multiply)."""
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = np.broadcast_to(x, shape), np.broadcast_to(y, shape)
    negative = y < 0 if x.dtype.kind == "i" else np.zeros(shape, bool)
    exponent = np.where(negative, 0, y).astype(_unsigned(x.dtype))
    acc, base = np.ones(shape, x.dtype), np.array(x)
    while np.any(exponent):
        acc = np.where((exponent & 1) != 0, acc * base, acc)
        base = base * base
        exponent = exponent >> 1
    if x.dtype.kind == "i":
        # x**-n: 1 for x == 1, ±1 for x == -1 (by parity), 0 otherwise (XLA).
        odd = (y & 1) != 0
        inverse = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0))
        acc = np.where(negative, inverse.astype(x.dtype), acc)
    return np.asarray(acc, x.dtype)


def _complex(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtypes.complex_dtype(x.dtype))
    out.real, out.imag = x, y  # not x + 1j*y, which turns inf*1j into a NaN real part
    return out



def _shift(direction: str) -> Any:
    """Shifts on the bit pattern; amounts >= the bit width (or negative, which as
    unsigned are huge) give 0, or the sign fill for the arithmetic right shift."""
    def kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        unsigned = _unsigned(x.dtype)
        amount = y.astype(unsigned)
        too_big = amount >= 8 * x.dtype.itemsize
        amount = np.where(too_big, 0, amount)
        if direction == "left":
            out, fill = x.astype(unsigned) << amount, np.zeros((), x.dtype)
        elif direction == "logical":
            out, fill = x.astype(unsigned) >> amount, np.zeros((), x.dtype)
        else:
            signed = x.astype(_signed(x.dtype))
            out = signed >> amount.astype(signed.dtype)
            fill = np.where(signed < 0, -1, 0)
        return np.where(too_big, fill.astype(x.dtype), out.astype(x.dtype))
    kernel.__name__ = f"_shift_{direction}"
    return kernel


def _round_half_away(x: np.ndarray) -> np.ndarray:
    # trunc + |fraction| >= 0.5, not floor(x + 0.5): 0.49999999999999994 + 0.5 rounds up
    whole = np.trunc(x)
    step = np.where(np.abs(x - whole) >= 0.5, np.copysign(np.ones_like(x), x), 0)
    return np.copysign(whole + step, x)  # keeps -0.0 for -0.3


def _logistic(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sign(x: np.ndarray) -> np.ndarray:
    if dtypes.is_float(x.dtype):
        return np.where(x == 0, x, np.sign(x))  # keeps -0.0 (np.sign gives +0.0)
    return np.sign(x)  # complex: x / |x|, 0 for 0


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x: np.ndarray) -> np.ndarray:
    return _erf64(x.astype(np.float64)).astype(x.dtype)


def _real(x: np.ndarray) -> np.ndarray:
    return np.array(x.real)


def _imag(x: np.ndarray) -> np.ndarray:
    return np.array(x.imag) if x.dtype.kind == "c" else np.zeros_like(x)


def _clz(x: np.ndarray) -> np.ndarray:
    bits = 8 * x.dtype.itemsize
    v = x.astype(_unsigned(x.dtype))
    length = np.zeros(x.shape, np.int64)
    for step in (32, 16, 8, 4, 2, 1):  # binary search for the highest set bit
        if step < bits:
            high = (v >> step) != 0
            v = np.where(high, v >> step, v)
            length += np.where(high, step, 0)
    return (bits - length - v.astype(np.int64)).astype(x.dtype)


def _population_count(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x.astype(_unsigned(x.dtype))).astype(x.dtype)
