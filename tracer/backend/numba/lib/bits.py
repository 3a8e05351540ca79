"""Bit-level helpers of the generated CPU kernels: reduce_precision on a float's
integer bits, and float16 arrays widened to / narrowed from float32 (for kernels
that compute in float32 registers; float16 arrays are held as their uint16 bits).

reduce_precision works on the unsigned-integer view of the operand (no float bit
casts): round the mantissa to nearest even by adding a bias and truncating, then
overflow -> signed infinity and below the narrow format's normal range -> signed
zero, exactly as `tracer.ops.bits` (XLA's algorithm). NaN inputs are returned
unchanged. Every integer here is uint64: numba would turn uint64 mixed with int64
into float64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_jit = njit(cache=True, error_model="numpy")
_ONE = np.uint64(1)


@_jit
def _round_mantissa(bits, src_mant, mantissa_bits):
    shift = np.uint64(src_mant - mantissa_bits)
    last = _ONE << shift
    bias = ((bits & last) >> shift) + (last >> _ONE) - _ONE
    return (bits + bias) & ~(last - _ONE)


@_jit
def _clamp_exponent(bits, nbits, src_exp, src_mant, exponent_bits):
    mant = np.uint64(src_mant)
    exp_mask = ((_ONE << np.uint64(src_exp)) - _ONE) << mant
    sign = bits & (_ONE << np.uint64(nbits - 1))
    bias = (_ONE << np.uint64(src_exp - 1)) - _ONE
    narrow_bias = (_ONE << np.uint64(exponent_bits - 1)) - _ONE
    exponent = bits & exp_mask
    if exponent > ((bias + narrow_bias) << mant):
        return sign | exp_mask
    if exponent <= ((bias - narrow_bias) << mant):
        return sign
    return bits


@_jit
def _reduce_precision(bits, nbits, src_exp, src_mant, exponent_bits,
                      mantissa_bits):
    """`bits` (uint64 holding an nbits-wide float) rounded to the narrow format."""
    exp_mask = ((_ONE << np.uint64(src_exp)) - _ONE) << np.uint64(src_mant)
    if (bits & exp_mask) == exp_mask and (bits & ((_ONE << np.uint64(src_mant)) - _ONE)):
        return bits  # NaN stays NaN (payload kept)
    if mantissa_bits < src_mant:
        bits = _round_mantissa(bits, src_mant, mantissa_bits)
    if exponent_bits < src_exp:
        bits = _clamp_exponent(bits, nbits, src_exp, src_mant, exponent_bits)
    return bits


@_jit
def reduce_precision_16(bits, exponent_bits, mantissa_bits):
    """reduce_precision of float16 bits (uint16)."""
    return np.uint16(_reduce_precision(np.uint64(bits), 16, 5, 10, exponent_bits,
                                       mantissa_bits))


@_jit
def reduce_precision_32(bits, exponent_bits, mantissa_bits):
    """reduce_precision of float32 bits (uint32)."""
    return np.uint32(_reduce_precision(np.uint64(bits), 32, 8, 23, exponent_bits,
                                       mantissa_bits))


@_jit
def reduce_precision_64(bits, exponent_bits, mantissa_bits):
    """reduce_precision of float64 bits (uint64)."""
    return _reduce_precision(np.uint64(bits), 64, 11, 52, exponent_bits, mantissa_bits)
