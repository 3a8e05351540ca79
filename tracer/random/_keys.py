"""Keys and raw bits: `key`, `split`, `fold_in`, `bits` and the helpers every sampler
uses, with JAX's Threefry derivation (`jax/_src/random/threefry2x32.py`, partitionable
mode, JAX's default since 0.5):

- a key is a uint32[2] array (k0, k1); `key(seed)` is (seed >> 32, seed & 0xFFFFFFFF);
- the counters of an array of `shape` are the 64-bit row-major indices i, as the two
  words (i >> 32, i & 0xFFFFFFFF), and each element's block is
  threefry2x32(k0, k1, hi(i), lo(i)) -> (y0, y1);
- `split(key, shape)` stacks (y0, y1) as the new keys; `fold_in(key, d)` is the block
  at counter (0, d); 32-bit `bits` are y0 ^ y1 (8 / 16 bits: their low bits), 64-bit
  ones (y0 << 32) | y1.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import ConcretizationError, DTypeError, ShapeError, TracerTypeError
from ..ops.rng_rules import counters
from ..ops.common import wrapper_error
from ..tracing import Tracer

U32, U64 = np.dtype(np.uint32), np.dtype(np.uint64)
UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: U32, 64: U64}


def aval(x: Any) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of an array, tracer or Python scalar."""
    if isinstance(x, Tracer):
        return x.aval.shape, x.aval.dtype
    a = np.asarray(x)
    return a.shape, a.dtype


def check_key(name: str, key: Any) -> Any:
    """`key` as an array or tracer, if it is a uint32[2] key; TracerTypeError otherwise."""
    key = key if isinstance(key, Tracer) else np.asarray(key)
    shape, dtype = aval(key)
    if shape != (2,) or dtype != U32:
        hint = (" (a batch of keys: map over it with tracer.vmap)"
                if dtype == U32 and shape[-1:] == (2,) else "")
        raise wrapper_error(TracerTypeError, name, f"the key must be a uint32[2] array from "
                            f"tracer.random.key, got {dtypes.hlo_name(dtype)}"
                            f"{list(shape)}{hint}")
    return key


def canonical_shape(name: str, shape: Any) -> tuple[int, ...]:
    """A static shape as a tuple of non-negative ints (an int is a 1-D shape)."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else \
            tuple(operator.index(d) for d in shape)
    except ConcretizationError:
        raise
    except TypeError:
        raise wrapper_error(TracerTypeError, name, f"shape must be a tuple of static ints, "
                            f"got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise wrapper_error(ShapeError, name, f"shape {dims} has a negative size")
    return dims


def words(key: Any) -> tuple[Any, Any]:
    """The key's two u32 scalars (k0, k1)."""
    return tuple(ops.reshape(ops.slice(key, (i,), (i + 1,)), ()) for i in range(2))


def nth(keys: Any, i: int) -> Any:
    """Key i of a (n, 2) array of keys, as a uint32[2] key."""
    return ops.reshape(ops.slice(keys, (i, 0), (i + 1, 2)), (2,))


def blocks(key: Any, shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The two Threefry words of every element of `shape` under `key`."""
    k0, k1 = words(key)
    return ops.threefry2x32(k0, k1, *counters(shape))


def stack_last(a: Any, b: Any) -> Any:
    """Stack two same-shaped arrays along a new last axis."""
    shape = aval(a)[0]
    dims = tuple(range(len(shape)))
    parts = [ops.broadcast_in_dim(x, (*shape, 1), dims) for x in (a, b)]
    return ops.concatenate(parts, len(shape))


def random_bits(key: Any, width: int, shape: tuple[int, ...]) -> Any:
    """JAX's `threefry_random_bits`: uint{width} bits of `shape`."""
    return ops.threefry_random_bits(key, width, shape)


# ------------------------------------------------------------------ the public functions
def key(seed: Any) -> Any:
    """A key (uint32[2]) from an integer seed: (seed >> 32, seed & 0xFFFFFFFF).

    Seeds in [0, 2**32) give `jax.random.PRNGKey(seed)`; other 64-bit seeds give
    what JAX gives with `jax_enable_x64` (JAX's default 32-bit mode drops the high
    word). A traced seed works too (e.g. under `vmap`)."""
    if dtypes.is_python_scalar(seed) and not isinstance(seed, (bool, float, complex)):
        if not -2 ** 63 <= seed < 2 ** 64:
            raise wrapper_error(DTypeError, "key", f"seed {seed} does not fit in 64 bits")
        return np.array([(seed >> 32) & 0xFFFFFFFF, seed & 0xFFFFFFFF], U32)
    shape, dtype = aval(seed)
    if shape or dtype.kind not in "iu":
        raise wrapper_error(TracerTypeError, "key", f"the seed must be an integer scalar, got "
                            f"{dtypes.hlo_name(dtype)}{list(shape)}")
    low = ops.convert_element_type(seed, U32)  # wraps: the low word's bits
    high = (ops.convert_element_type(ops.shift_right_logical(seed, dtype.type(32)), U32)
            if dtype.itemsize == 8 else np.zeros((), U32))
    return stack_last(high, low)


PRNGKey = key


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """`num` new keys (an int, or a shape: keys of shape (*num, 2)), as `jax.random.split`."""
    key = check_key("split", key)
    return stack_last(*blocks(key, canonical_shape("split", num)))


def fold_in(key: Any, data: Any) -> Any:
    """A new key from `key` and an integer scalar `data` (taken modulo 2**32), as
    `jax.random.fold_in`: the Threefry block at counter (0, data)."""
    key = check_key("fold_in", key)
    if dtypes.is_python_scalar(data) and not isinstance(data, (bool, float, complex)):
        d: Any = np.uint32(data % 2 ** 32)
    else:
        shape, dtype = aval(data)
        if shape or dtype.kind not in "iu":
            raise wrapper_error(TracerTypeError, "fold_in", f"data must be an integer scalar, "
                                f"got {dtypes.hlo_name(dtype)}{list(shape)} (map over "
                                f"arrays with tracer.vmap)")
        d = ops.convert_element_type(data, U32)
    k0, k1 = words(key)
    return stack_last(*ops.threefry2x32(k0, k1, np.uint32(0), d))


def bits(key: Any, shape: Sequence[int] = (), dtype: Any = np.uint64) -> Any:
    """Uniform random bits of an unsigned dtype (uint8..uint64), as `jax.random.bits`."""
    key = check_key("bits", key)
    dt = np.dtype(dtype)
    if dt.kind != "u":
        raise wrapper_error(DTypeError, "bits",
                            f"dtype must be an unsigned integer type, got {dt}")
    return random_bits(key, 8 * dt.itemsize, canonical_shape("bits", shape))
