"""Helpers of the RNG kernels (`cuda.emit.rng`): device functions and host functions.

The blocks themselves are the CPU backend's (`numba.lib.rng.threefry_block`,
`philox_block`: numba compiles them for the GPU), so the bits are the
reference's bit for bit. Here:

- `words` / `join`: a uint64 as its (low, high) uint32 words and back;
- `halves`: XLA's split of a shape for 32-bit three_fry bits, on the host;
- `stream_key`: the key of one draw of rng_uniform / rng_normal. The process
  stream is counter-based: a seed from OS entropy and a call counter, mixed by
  one Threefry block into the key of this call, whose element i uses counter i
  (so every execution draws new numbers, with no state on the device);
- `unit_open`, `unit_closed_open`, `standard_normal`: floats in (0, 1], [0, 1)
  and a Box-Muller normal from 64 random bits, in float64.
"""

from __future__ import annotations

import itertools
import math
import secrets

import numpy as np
from numba import cuda

from ....ops.rng_bits import split_dim
from ...numba.lib.rng import threefry_block
from .mathlib import cos_f64, log_f64, sqrt_f64

_device = cuda.jit(device=True)
_SEED = secrets.randbits(64)
_CALLS = itertools.count()
_MASK32 = (1 << 32) - 1


def stream_key() -> tuple[np.uint32, np.uint32]:
    """A fresh Threefry key for one execution of rng_uniform / rng_normal."""
    call = next(_CALLS)
    k0, k1 = threefry_block(np.uint32(_SEED & _MASK32), np.uint32(_SEED >> 32),
                            np.uint32(call >> 32), np.uint32(call & _MASK32))
    return np.uint32(k0), np.uint32(k1)


def halves(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(outer, d, inner) of XLA's 32-bit three_fry layout: `shape` (rank 0: (1,)) is split
    at its first even dim (else its largest), of size d, with `outer` elements before
    it and `inner` after it; block (o, h, q) gives positions 2h and 2h + 1."""
    full = shape or (1,)
    s = split_dim(full)
    return math.prod(full[:s]), full[s], math.prod(full[s + 1:])


@_device
def words(x):  # device function
    """The (low, high) uint32 words of uint64 `x`."""
    x = np.uint64(x)
    return np.uint32(x & np.uint64(0xFFFFFFFF)), np.uint32(x >> np.uint64(32))


@_device
def join(low, high):
    """The uint64 with words (low, high)."""
    return np.uint64(low) | (np.uint64(high) << np.uint64(32))


@_device
def bits_at(k0, k1, i):
    """64 random bits: the block of key (k0, k1) at 64-bit counter i."""
    low, high = words(i)
    y0, y1 = threefry_block(k0, k1, high, low)
    return join(y1, y0)


@_device
def unit_closed_open(bits):
    """A float64 in [0, 1) from the top 53 of 64 random bits."""
    return np.float64(bits >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@_device
def unit_open(bits):
    """A float64 in (0, 1] from the top 53 of 64 random bits (log never sees 0)."""
    return (np.float64(bits >> np.uint64(11)) + 1.0) * (1.0 / 9007199254740992.0)


@_device
def standard_normal(k0, k1, i):
    """Element i's N(0, 1) sample (Box-Muller over counters 2i and 2i + 1)."""
    u1 = unit_open(bits_at(k0, k1, np.uint64(2) * np.uint64(i)))
    u2 = unit_closed_open(bits_at(k0, k1, np.uint64(2) * np.uint64(i) + np.uint64(1)))
    return sqrt_f64(-2.0 * log_f64(u1)) * cos_f64(2.0 * math.pi * u2)
