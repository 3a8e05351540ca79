"""Batching rules of the RNG ops (`rng.py`). None of them is differentiable (as in
JAX): their outputs are bits, or draws whose parameters get no gradient.

- threefry2x32 is element-wise: batched operands get the batch axis first, and
  unbatched arrays (and batched scalars) are broadcast to the batched shape.
- threefry_random_bits over a batch of keys is threefry2x32 of the keys' words
  (broadcast) and the counters (`counters`, explicit), combined like the op does.
- rng_bit_generator maps over a batch of states with a `scan`: one generator call
  per state, exactly what the loop over the batch would give.
- rng_uniform / rng_normal draw the whole batch at once from the standard
  distribution (`rng_uniform(0, 1)`, `rng_normal(0, 1)`; for integers
  `rng_uniform(0, 2**64 - 1)` as raw bits) and apply each element's parameters with the
  same formula the op uses, so a degenerate draw (a == b, sigma == 0) is exactly
  what the unbatched op gives.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import elementwise as ew
from .. import dtypes
from .ad import aval_of_value
from .control import scan
from .rng import (rng_bit_generator_p, rng_normal_p, rng_uniform_p, threefry2x32_p,
                  threefry_random_bits_p)
from .shape import broadcast_in_dim, iota, reshape
from .shape import slice as slice_
from .shape_rules import batch_size, move_axis

Dims = Sequence[int | None]


def _threefry_b(args: Sequence[Any], dims: Dims) -> tuple[list[Any], list[int]]:
    size = batch_size(args, dims)
    avals = [aval_of_value(x) for x in args]
    shape = next((a.shape[:d] + a.shape[d + 1:] if d is not None else a.shape
                  for a, d in zip(avals, dims, strict=True)
                  if a.ndim - (d is not None) > 0), ())
    full = (size, *shape)
    operands = []
    for x, aval, d in zip(args, avals, dims, strict=True):
        if d is None:
            operands.append(x if aval.ndim == 0 else
                            broadcast_in_dim(x, full, tuple(range(1, aval.ndim + 1))))
        elif aval.ndim == 1 and shape:  # a batched scalar
            operands.append(broadcast_in_dim(x, full, (0,)))
        else:
            operands.append(move_axis(x, d, 0))
    return list(threefry2x32_p.bind(*operands)), [0, 0]


def _row_major(dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    """sum_d iota_d * stride_d: element-wise ops the cpu backend fuses into one loop."""
    index, stride = None, 1
    for d in reversed(range(len(shape))):
        term = iota(dtype, shape, d)
        term = term if stride == 1 else ew.mul(term, dtype.type(stride))
        index = term if index is None else ew.add(term, index)
        stride *= shape[d]
    return index


def counters(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """(hi, lo) u32 words of the row-major index of each element of `shape` (scalars
    when they are constant)."""
    u32, u64 = np.dtype(np.uint32), np.dtype(np.uint64)
    if math.prod(shape) >= 2 ** 32:
        index = _row_major(u64, shape)
        return (ew.convert_element_type(ew.shift_right_logical(index, np.uint64(32)), u32),
                ew.convert_element_type(index, u32))
    return np.uint32(0), (_row_major(u32, shape) if shape else np.uint32(0))


def _combine(y0: Any, y1: Any, bit_width: int) -> Any:
    """threefry_random_bits' combination of the two words, in ops."""
    if bit_width == 64:
        u64 = np.dtype(np.uint64)
        high = ew.shift_left(ew.convert_element_type(y0, u64), np.uint64(32))
        return ew.bitwise_or(high, ew.convert_element_type(y1, u64))
    bits = ew.bitwise_xor(y0, y1)
    return bits if bit_width == 32 else ew.convert_element_type(bits, f"u{bit_width // 8}")


def _random_bits_b(args: Sequence[Any], dims: Dims, *, bit_width: int,
                   shape: tuple[int, ...]) -> tuple[Any, int]:
    keys = move_axis(args[0], dims[0], 0)
    size = aval_of_value(keys).shape[0]
    full = (size, *shape)
    k0, k1 = (broadcast_in_dim(reshape(slice_(keys, (0, i), (size, i + 1)), (size,)), full, (0,))
              for i in range(2))
    hi, lo = (c if isinstance(c, np.generic) else
              broadcast_in_dim(c, full, tuple(range(1, len(full)))) for c in counters(shape))
    y0, y1 = threefry2x32_p.bind(k0, k1, hi, lo)
    return _combine(y0, y1, bit_width), 0


def _bit_generator_b(args: Sequence[Any], dims: Dims, **params: Any) -> tuple[list[Any], list[int]]:
    states = move_axis(args[0], dims[0], 0)

    def one(carry: tuple[()], state: Any) -> tuple[tuple[()], tuple[Any, Any]]:
        new_state, bits = rng_bit_generator_p.bind(state, **params)
        return carry, (new_state, bits)

    _, (new_states, bits) = scan(one, (), states)
    return [new_states, bits], [0, 0]


def _full(x: Any, d: int | None, full: tuple[int, ...]) -> Any:
    """A scalar parameter (batched: shape (B,) at axis d) broadcast to the batched draw."""
    return broadcast_in_dim(x, full, () if d is None else (0,))


def _uniform_b(args: Sequence[Any], dims: Dims, *, shape: tuple[int, ...]) -> tuple[Any, int]:
    full = (batch_size(args, dims), *shape)
    a, b = (_full(x, d, full) for x, d in zip(args, dims, strict=True))
    dt = aval_of_value(args[0]).dtype
    if dtypes.is_float(dt):
        u = rng_uniform_p.bind(np.zeros((), dt), np.ones((), dt), shape=full)
        r = ew.add(ew.mul(u, ew.sub(b, a)), a)
        return ew.select(ew.lt(r, b), r, a), 0
    unsigned, u64 = np.dtype(f"u{dt.itemsize}"), np.dtype(np.uint64)
    raw = rng_uniform_p.bind(np.zeros((), u64), np.array(2 ** 64 - 1, u64), shape=full)
    ua, ub = (ew.convert_element_type(v, unsigned) for v in (a, b))
    one = broadcast_in_dim(np.ones((), u64), full, ())
    span = ew.select(ew.gt(b, a), ew.convert_element_type(ew.sub(ub, ua), u64), one)
    low = ew.add(ew.convert_element_type(ua, u64), ew.rem(raw, span))
    return ew.convert_element_type(ew.convert_element_type(low, unsigned), dt), 0


def _normal_b(args: Sequence[Any], dims: Dims, *, shape: tuple[int, ...]) -> tuple[Any, int]:
    full = (batch_size(args, dims), *shape)
    mu, sigma = (_full(x, d, full) for x, d in zip(args, dims, strict=True))
    dt = aval_of_value(args[0]).dtype
    z = rng_normal_p.bind(np.zeros((), dt), np.ones((), dt), shape=full)
    return ew.add(mu, ew.mul(sigma, z)), 0


threefry2x32_p.batch = _threefry_b
threefry_random_bits_p.batch = _random_bits_b
rng_bit_generator_p.batch = _bit_generator_b
rng_uniform_p.batch = _uniform_b
rng_normal_p.batch = _normal_b
