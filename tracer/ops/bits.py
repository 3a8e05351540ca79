"""ReducePrecision and BitcastConvertType (XLA's operations): ops on the bits of
floating-point and integer values.

reduce_precision follows XLA's algorithm on the integer bits: round the mantissa to
`mantissa_bits` (ties to even, by adding a bias and truncating), then, when
`exponent_bits` is narrower than the operand's, values above the narrow format's
largest finite one become +-inf and values below its smallest *normal* one become
+-0 (the narrow format's denormals are flushed, as XLA and jax.lax.reduce_precision
do; the seeds leave denormals unstated). NaN stays NaN (the input's payload kept).

bitcast_convert_type reinterprets the bytes (little-endian, as NumPy and XLA on CPU):
same width keeps the shape; a narrower type adds a minor-most dimension of
size B / B'; a wider one drops the last dimension, which must be B' / B.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from .common import static_int, wrapper_error
from .registry import define_op

__all__ = ["reduce_precision", "bitcast_convert_type"]

# float dtype -> (unsigned int of the same width, exponent bits, mantissa bits)
FLOAT_FORMATS: dict[np.dtype, tuple[np.dtype, int, int]] = {
    dtypes.float16: (dtypes.uint16, 5, 10),
    dtypes.bfloat16: (dtypes.uint16, 8, 7),
    dtypes.float32: (dtypes.uint32, 8, 23),
    dtypes.float64: (dtypes.uint64, 11, 52),
}


# ---------------------------------------------------------------- reduce_precision

def _reduce_precision_shape(x: ShapedArray, *, exponent_bits: int,
                            mantissa_bits: int) -> ShapedArray:
    if x.dtype not in FLOAT_FORMATS:
        raise DTypeError(f"reduce_precision needs a floating-point operand (f16, bf16, f32, "
                         f"f64), got {x}")
    if exponent_bits < 1:
        raise ParamError(f"exponent_bits must be >= 1 (to tell zero from infinity), "
                         f"got {exponent_bits}")
    if mantissa_bits < 0:
        raise ParamError(f"mantissa_bits must be >= 0, got {mantissa_bits}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _round_mantissa(bits: np.ndarray, src_mant: int, mantissa_bits: int) -> np.ndarray:
    """Round to nearest, ties to even: add 0111.. (+1 if the last kept bit is odd),
    then clear the dropped bits. A carry into the exponent is the correct rounding up
    (to the next binade, or to infinity)."""
    shift = src_mant - mantissa_bits
    last = np.uint64(1 << shift)
    bias = ((bits & last) >> np.uint64(shift)) + (last >> np.uint64(1)) - np.uint64(1)
    return (bits + bias) & ~(last - np.uint64(1))


def _clamp_exponent(bits: np.ndarray, nbits: int, src_exp: int, src_mant: int,
                    exponent_bits: int) -> np.ndarray:
    """Overflow -> signed infinity; below the narrow format's normal range -> signed 0."""
    exp_mask = np.uint64(((1 << src_exp) - 1) << src_mant)
    sign = bits & np.uint64(1 << (nbits - 1))
    bias, narrow_bias = (1 << (src_exp - 1)) - 1, (1 << (exponent_bits - 1)) - 1
    exponent = bits & exp_mask
    bits = np.where(exponent > np.uint64((bias + narrow_bias) << src_mant), sign | exp_mask, bits)
    return np.where(exponent <= np.uint64((bias - narrow_bias) << src_mant), sign, bits)


def _reduce_precision_impl(x: np.ndarray, *, exponent_bits: int,
                           mantissa_bits: int) -> np.ndarray:
    x = np.asarray(x)
    uint, src_exp, src_mant = FLOAT_FORMATS[x.dtype]
    with np.errstate(all="ignore"):  # (uint64 wraparound on NaN bits is dropped below)
        return _reduce_bits(x, uint, src_exp, src_mant, exponent_bits, mantissa_bits)


def _reduce_bits(x: np.ndarray, uint: np.dtype, src_exp: int, src_mant: int,
                 exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    bits = np.asarray(x, order="C").view(uint).astype(np.uint64)
    if mantissa_bits < src_mant:
        bits = _round_mantissa(bits, src_mant, mantissa_bits)
    if exponent_bits < src_exp:
        bits = _clamp_exponent(bits, 8 * x.dtype.itemsize, src_exp, src_mant, exponent_bits)
    # (the astype drops a carry out of the top bit, which only a NaN's rounding makes)
    out = np.asarray(bits.astype(uint)).view(x.dtype).reshape(x.shape)
    return np.where(np.isnan(x), x, out)


def reduce_precision(operand: Any, exponent_bits: Any, mantissa_bits: Any) -> Any:
    """Round floats as if converted to a format with `exponent_bits` exponent bits and
    `mantissa_bits` mantissa bits, and back.

    Seed rule: round to nearest with ties to even; values beyond the narrow format's
    range become +-inf; NaN stays NaN; a count at least the operand's own makes that
    part a no-op; exponent_bits >= 1, mantissa_bits >= 0. As XLA: values below the
    narrow format's smallest normal number become +-0 (its denormals are flushed).
    (8, 7) rounds float32 to bfloat16 (denormals kept: the exponent is float32's).

    reduce_precision(np.float32([1.0009765, 70000.0]), 5, 10) -> [1.0009766, inf]
    """
    e = static_int("reduce_precision", "exponent_bits", exponent_bits)
    m = static_int("reduce_precision", "mantissa_bits", mantissa_bits)
    return reduce_precision_p.bind(operand, exponent_bits=e, mantissa_bits=m)


reduce_precision_p = define_op(
    "reduce_precision", shape=_reduce_precision_shape, impl=_reduce_precision_impl,
    family="bits", linear=True, doc=inspect.cleandoc(reduce_precision.__doc__ or ""))


# ---------------------------------------------------------------- bitcast_convert_type

def bitcast_shape(shape: tuple[int, ...], old: np.dtype, new: np.dtype) -> tuple[int, ...]:
    """The seed rule's shape change (the operand's last dim is already checked)."""
    if old.itemsize > new.itemsize:
        return shape + (old.itemsize // new.itemsize,)
    if old.itemsize < new.itemsize:
        return shape[:-1]
    return shape


def _bitcast_shape(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    old, new = x.dtype, new_dtype
    if dtypes.is_bool(old) or dtypes.is_bool(new):
        raise DTypeError(f"bitcast_convert_type does not convert from or to pred "
                         f"({x} -> {dtypes.hlo_name(new)}), as XLA")
    if dtypes.is_complex(old) != dtypes.is_complex(new):
        raise DTypeError(f"bitcast_convert_type does not convert between complex and "
                         f"real types ({x} -> {dtypes.hlo_name(new)}), as XLA")
    if old.itemsize < new.itemsize:
        ratio = new.itemsize // old.itemsize
        if not x.ndim or x.shape[-1] != ratio:
            raise ShapeError(f"bitcast_convert_type to the wider {dtypes.hlo_name(new)} needs "
                             f"a last dimension of size {ratio} (= {new.itemsize} / "
                             f"{old.itemsize} bytes), got {x}")
    return ShapedArray(bitcast_shape(x.shape, old, new), new)


def _bitcast_impl(x: np.ndarray, *, new_dtype: np.dtype) -> np.ndarray:
    x = np.asarray(x, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    shape = bitcast_shape(x.shape, x.dtype, new_dtype)
    if x.dtype.itemsize > new_dtype.itemsize:
        x = x.reshape(x.shape + (1,))  # the view then splits the new size-1 minor dim
    return x.view(new_dtype).reshape(shape)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterpret the bits of each element as `new_dtype` (like tf.bitcast).

    Seed rule: same bit width: element-wise, shape kept; a narrower type (B > B'
    bytes) adds a minor-most dimension of size B / B'; a wider one needs the last
    dimension to be B' / B and drops it. Bytes are little-endian; pred and
    complex <-> real conversions are rejected, as XLA.

    bitcast_convert_type(f32[10], np.float16) -> f16[10,2]; f32[] -> f16[2];
    bitcast_convert_type(np.float32(1.0), np.int32) -> 1065353216
    """
    try:
        dtype = dtypes.canonicalize(new_dtype)
    except DTypeError as e:
        raise wrapper_error(DTypeError, "bitcast_convert_type", str(e)) from None
    return bitcast_convert_type_p.bind(operand, new_dtype=dtype)


bitcast_convert_type_p = define_op(
    "bitcast_convert_type", shape=_bitcast_shape, impl=_bitcast_impl, family="bits",
    hlo_name="bitcast-convert", differentiable=False,
    doc=inspect.cleandoc(bitcast_convert_type.__doc__ or ""))

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import numerics_rules  # noqa: E402,F401
