"""Samplers built on random bits, each JAX's derivation (`jax/_src/random/core.py`):
uniform, normal, bernoulli, randint, truncated_normal, exponential, gumbel and
categorical. Parameters broadcast against `shape` like NumPy arrays do.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..ops.ad_ops import stop_gradient
from .. import numpy as tnp
from ..errors import DTypeError, ShapeError, TracerIndexError
from ..ops.common import wrapper_error
from ..tracing import Tracer
from ._keys import UINT, aval, canonical_shape, check_key, nth, random_bits, split
from ._math import log, log1p
from ._special import BF16, F16, F32, F64, erf_inv, next_after

FLOATS = (F16, BF16, F32, F64)


def float_dtype(name: str, dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in FLOATS:
        raise wrapper_error(DTypeError, name,
                            f"dtype must be float16, bfloat16, float32 or float64, got "
                            f"{dt}")
    return dt


def as_dtype(x: Any, dtype: np.dtype) -> Any:
    """`x` (Python scalar, array or tracer) converted to `dtype`."""
    if isinstance(x, Tracer):
        return x if x.dtype == dtype else ops.convert_element_type(x, dtype)
    return np.asarray(x, dtype)


def check_param_shape(name: str, shape: tuple[int, ...], *params: Any) -> None:
    """Each parameter must broadcast to `shape` (JAX's `_check_shape`)."""
    for p in params:
        pshape = aval(p)[0]
        try:
            ok = np.broadcast_shapes(shape, pshape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise wrapper_error(ShapeError, name, f"parameter shape {pshape} does not "
                                f"broadcast to the sample shape {shape}")


def unit_floats(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Uniform floats in [0, 1): the top mantissa bits of the random bits, times 2**-nmant
    (exactly JAX's `bits >> (nbits - nmant) | bits(1.0)`, bitcast, minus 1; as JAX,
    bfloat16's 7 mantissa bits come from 8 random bits)."""
    finfo = dtypes.finfo(dtype)
    width = 8 if finfo.nmant < 8 else 8 * dtype.itemsize
    mantissa = ops.shift_right_logical(random_bits(key, width, shape),
                                       UINT[width].type(width - finfo.nmant))
    return ops.mul(ops.convert_element_type(mantissa, dtype),
                   np.asarray(2.0 ** -finfo.nmant, dtype))


def _affine(floats: Any, minval: Any, maxval: Any, dtype: np.dtype) -> Any:
    """floats * (maxval - minval) + minval; float32 rounds once, like the FMA XLA's CPU
    compiler emits; float16 computes in float32 and rounds once, bfloat16 rounds after
    each op, as XLA's CPU backend does (so results match JAX's bit for bit)."""
    span = tnp.subtract(maxval, minval)
    wider = {F32: F64, F16: F32}.get(dtype)
    if wider is None:
        return tnp.add(tnp.multiply(floats, span), minval)
    wide = [as_dtype(v, wider) for v in (floats, span, minval)]
    return as_dtype(tnp.add(tnp.multiply(wide[0], wide[1]), wide[2]), dtype)


def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = np.float64, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval) of `shape`, as `jax.random.uniform`."""
    key = check_key("uniform", key)
    dt = float_dtype("uniform", dtype)
    shape = canonical_shape("uniform", shape)
    minval, maxval = as_dtype(minval, dt), as_dtype(maxval, dt)
    check_param_shape("uniform", shape, minval, maxval)
    floats = unit_floats(key, shape, dt)
    if _is_unit_interval(minval, maxval):
        return floats  # floats * 1 + 0, at least 0: exactly the floats
    out = _affine(floats, minval, maxval, dt)
    return tnp.broadcast_to(tnp.maximum(minval, out), shape)


def _is_unit_interval(minval: Any, maxval: Any) -> bool:
    concrete = not isinstance(minval, Tracer) and not isinstance(maxval, Tracer)
    return concrete and not np.shape(minval) and not np.shape(maxval) \
        and float(minval) == 0.0 and float(maxval) == 1.0


def normal(key: Any, shape: Sequence[int] = (), dtype: Any = np.float64) -> Any:
    """Standard normal samples (float or complex dtype), as `jax.random.normal`:
    sqrt(2) * erf_inv(u) for u uniform in (-1, 1)."""
    key = check_key("normal", key)
    shape = canonical_shape("normal", shape)
    dt = np.dtype(dtype)
    if dt.kind == "c":
        real = np.dtype(dtypes.real_dtype(dt))
        keys = split(key)
        re, im = (normal_real(nth(keys, i), shape, real) for i in range(2))
        return ops.div(ops.complex(re, im), np.asarray(np.sqrt(2), dt))
    return normal_real(key, shape, float_dtype("normal", dt))


def normal_real(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    low = np.nextafter(dtype.type(-1), dtype.type(0))
    u = uniform(key, shape, dtype, low, 1.0)
    return ops.mul(np.asarray(np.sqrt(2), dtype), erf_inv(u))


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None) -> Any:
    """Booleans that are True with probability p (uniform(p.dtype) < p), as
    `jax.random.bernoulli`. A Python float p is float64, as JAX's with x64 enabled."""
    key = check_key("bernoulli", key)
    p = as_dtype(p, F64) if dtypes.is_python_scalar(p) else p
    pshape, dt = aval(p)
    if dt not in FLOATS:
        raise wrapper_error(DTypeError, "bernoulli", f"p must have a floating dtype, got {dt}")
    shape = pshape if shape is None else canonical_shape("bernoulli", shape)
    check_param_shape("bernoulli", shape, p)
    return tnp.less(uniform(key, shape, dt), p)


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = np.float64) -> Any:
    """Exponential(1) samples, -log1p(-u), as `jax.random.exponential`."""
    key = check_key("exponential", key)
    dt = float_dtype("exponential", dtype)
    u = uniform(key, canonical_shape("exponential", shape), dt)
    return ops.neg(log1p(ops.neg(u)))


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = np.float64) -> Any:
    """Standard Gumbel samples, -log(-log(u)) for u in [tiny, 1), as `jax.random.gumbel`."""
    key = check_key("gumbel", key)
    dt = float_dtype("gumbel", dtype)
    u = uniform(key, canonical_shape("gumbel", shape), dt, dtypes.finfo(dt).tiny, 1.0)
    return ops.neg(log(ops.neg(log(u))))


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = np.float64) -> Any:
    """Standard normal samples truncated to (lower, upper), as
    `jax.random.truncated_normal` (inverse CDF; clipped into the open interval)."""
    key = check_key("truncated_normal", key)
    dt = float_dtype("truncated_normal", dtype)
    lower, upper = as_dtype(lower, dt), as_dtype(upper, dt)
    shape = (np.broadcast_shapes(aval(lower)[0], aval(upper)[0]) if shape is None
             else canonical_shape("truncated_normal", shape))
    check_param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.asarray(np.sqrt(2), dt)
    a, b = (ops.erf(tnp.divide(v, sqrt2)) for v in (lower, upper))
    out = ops.mul(sqrt2, erf_inv(uniform(key, shape, dt, a, b)))
    low, high = (next_after(stop_gradient(v), up) for v, up in ((lower, True), (upper, False)))
    return tnp.clip(out, low, high)


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any,
            dtype: Any = np.int64) -> Any:
    """Integers in [minval, maxval), as `jax.random.randint` (two draws of the type's
    width, combined modulo the span; 8- and 16-bit types are sampled as int32)."""
    key = check_key("randint", key)
    dt = np.dtype(dtype)
    if dt.kind not in "iu" or dt.itemsize > 8:
        raise wrapper_error(DTypeError, "randint", f"dtype must be an integer type, got {dt}")
    shape = canonical_shape("randint", shape)
    minval, maxval = _int_bound(minval), _int_bound(maxval)
    check_param_shape("randint", shape, minval, maxval)
    if dt.itemsize >= 4:
        return _randint(key, minval, maxval, shape, dt)
    info, i32 = np.iinfo(dt), np.dtype(np.int32)
    low = tnp.clip(as_dtype(minval, i32), int(info.min), int(info.max))
    high = tnp.clip(as_dtype(maxval, i32), int(info.min), int(info.max) + 1)
    return as_dtype(_randint(key, low, high, shape, i32), dt)


def _int_bound(x: Any) -> Any:
    if dtypes.is_python_scalar(x) or not isinstance(x, Tracer):
        x = np.asarray(x)
        return x if x.dtype.kind in "iu" else x.astype(np.int64)
    return x if x.dtype.kind in "iu" else ops.convert_element_type(x, np.int64)


def _convert_and_clip(x: Any, dtype: np.dtype) -> Any:
    """`x` as `dtype`, clipped to the values both types hold (not wrapped)."""
    src = np.iinfo(aval(x)[1])
    dst = np.iinfo(dtype)
    return as_dtype(tnp.clip(x, max(int(src.min), int(dst.min)),
                             min(int(src.max), int(dst.max))), dtype)


def _randint(key: Any, minval: Any, maxval: Any, shape: tuple[int, ...], dt: np.dtype) -> Any:
    nbits = 8 * dt.itemsize
    unsigned = UINT[nbits]
    top = _convert_and_clip(np.asarray(np.iinfo(dt).max, dt), aval(maxval)[1])
    out_of_range = tnp.greater(maxval, top)
    minval, maxval = _convert_and_clip(minval, dt), _convert_and_clip(maxval, dt)
    keys = split(key)
    high_bits, low_bits = (random_bits(nth(keys, i), nbits, shape) for i in range(2))
    span = as_dtype(tnp.subtract(maxval, minval), unsigned)
    span = tnp.where(tnp.less_equal(maxval, minval), unsigned.type(1), span)
    span = tnp.where(tnp.logical_and(out_of_range, tnp.greater(maxval, minval)),
                     tnp.add(span, unsigned.type(1)), span)
    multiplier = tnp.remainder(unsigned.type(2 ** (nbits // 2)), span)
    multiplier = tnp.remainder(tnp.multiply(multiplier, multiplier), span)
    offset = tnp.add(tnp.multiply(tnp.remainder(high_bits, span), multiplier),
                     tnp.remainder(low_bits, span))
    offset = tnp.remainder(offset, span)
    return tnp.broadcast_to(tnp.add(minval, as_dtype(offset, dt)), shape)


def categorical(key: Any, logits: Any, axis: int = -1,
                shape: Sequence[int] | None = None) -> Any:
    """Samples of the categorical distributions softmax(logits, axis) (int64 indices),
    with the Gumbel-max trick, as `jax.random.categorical`."""
    key = check_key("categorical", key)
    logits = logits if isinstance(logits, Tracer) else np.asarray(logits)
    lshape, dt = aval(logits)
    if dt not in FLOATS:
        raise wrapper_error(DTypeError, "categorical", f"logits must be floats, got {dt}")
    if not -len(lshape) <= axis < len(lshape):
        raise wrapper_error(TracerIndexError, "categorical", f"axis {axis} is out of range for "
                            f"logits of shape {lshape}")
    axis = axis - len(lshape) if axis >= 0 else axis
    batch = tuple(np.delete(np.array(lshape, dtype=np.int64), axis).tolist())
    shape = batch if shape is None else canonical_shape("categorical", shape)
    check_param_shape("categorical", shape, np.zeros(batch, np.int8))
    prefix = shape[:len(shape) - len(batch)]
    sample = list(shape[len(shape) - len(batch):])
    sample.insert(axis % len(lshape), lshape[axis])
    noise = gumbel(key, (*prefix, *sample), dt)
    expanded = tnp.expand_dims(logits, tuple(range(len(prefix)))) if prefix else logits
    return as_dtype(tnp.argmax(tnp.add(noise, expanded), axis=axis), np.dtype(np.int64))


__all__ = ["uniform", "normal", "bernoulli", "randint", "truncated_normal", "exponential",
           "gumbel", "categorical"]
