"""NumPy reference of the counter-based bit generators behind the RNG ops.

Two block functions, written as vectorized uint32 arithmetic (the cpu backend's
`numba.lib.rng` has the same functions as numba kernels; tests check them bit for bit):

- Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as
  1, 2, 3", SC 2011; Random123 known-answer vectors hold): key (k0, k1), counter
  (x0, x1) -> two words. `jax.random` and XLA's ThreeFry use this exact block.
- Philox-4x32-10 (same paper): key (k0, k1), counter (c0..c3) -> four words.

On top of them, XLA's RngBitGenerator layouts (`xla/hlo/builder/lib/prng.cc` and
`xla/service/rng_bit_generator_expander.cc`), which fix how a u64 state becomes bits:

- three_fry, state u64[2] = [key, counter]: the 64-bit key and counters are split into
  (low, high) u32 words. 32-bit output: the shape is split into halves along its first
  even dimension (else its largest), each counter `counter + i` over the half shape
  yields the pair for positions 2h and 2h+1 of that dimension; the state's counter
  advances by the half shape's size. 64-bit output: one block per element, counter
  `counter + i`, bits `low | high << 32`; the counter advances by the size. Narrower
  outputs take the 32-bit layout and keep the low bits.
- philox, state u64[3] = [key, counter_low, counter_high] (a 128-bit counter), or
  u64[2] = [key, counter] where XLA reads the 128-bit counter as (low=state[1],
  high=state[0]) and keeps only the low word in the new state. Block v (counter +
  v, carried into the high word) gives elements 4v..4v+3 (32-bit; narrower keep the
  low bits) or 2v, 2v+1 (64-bit, words (0,1) and (2,3)); the counter advances by the
  number of blocks.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
THREEFRY_PARITY = 0x1BD11BDA
PHILOX_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
PHILOX_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
ALGORITHMS = ("three_fry", "philox")

U32 = np.dtype(np.uint32)
U64 = np.dtype(np.uint64)


def _u32(x: object) -> np.ndarray:
    return np.asarray(x, dtype=U32)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(k0: object, k1: object, x0: object, x1: object) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32, 20 rounds, on broadcast uint32 operands."""
    k0, k1, x0, x1 = (_u32(a) for a in (k0, k1, x0, x1))
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(THREEFRY_PARITY))
    with np.errstate(over="ignore"):  # uint32 addition wraps by design
        x0, x1 = x0 + ks[0], x1 + ks[1]
        for i in range(5):
            for r in THREEFRY_ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def philox4x32(counter: Sequence[object], key: Sequence[object]) -> list[np.ndarray]:
    """Philox-4x32-10 on broadcast uint32 counter words (4) and key words (2)."""
    c = [_u32(w) for w in counter]
    k0, k1 = (_u32(w) for w in key)
    m0, m1 = (np.uint64(m) for m in PHILOX_MULTIPLIERS)
    with np.errstate(over="ignore"):
        for _ in range(10):
            p0 = c[0].astype(U64) * m0
            p1 = c[2].astype(U64) * m1
            c = [_high(p1) ^ c[1] ^ k0, p1.astype(U32), _high(p0) ^ c[3] ^ k1, p0.astype(U32)]
            k0 = k0 + np.uint32(PHILOX_KEY_STEPS[0])
            k1 = k1 + np.uint32(PHILOX_KEY_STEPS[1])
    return c


def _high(x: np.ndarray) -> np.ndarray:
    return (x >> np.uint64(32)).astype(U32)


def _words(x: object) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) uint32 words of uint64 values."""
    x = np.asarray(x, U64)
    return x.astype(U32), _high(x)


def _join(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return low.astype(U64) | (high.astype(U64) << np.uint64(32))


def _counters(start: np.uint64, n: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return start + np.arange(n, dtype=U64)  # wraps modulo 2**64 like XLA's u64 adds


def split_dim(shape: tuple[int, ...]) -> int:
    """XLA's SplitShapeIntoHalves: the first even dimension, else the largest one."""
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return max(range(len(shape)), key=lambda i: (shape[i], -i))


def _finish(bits32: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """u32 (or u64) bits as `dtype`: narrower types keep the low bits; signed are a view."""
    unsigned = np.dtype(f"u{dtype.itemsize}")
    return bits32.astype(unsigned).view(dtype)


def threefry_bits(state: np.ndarray, shape: tuple[int, ...],
                  dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(new_state, bits) of RngBitGenerator three_fry; state is u64[2] = [key, counter]."""
    key, counter = np.asarray(state, U64)
    k0, k1 = _words(key)
    if dtype.itemsize == 8:
        n = math.prod(shape)
        y0, y1 = threefry2x32(k0, k1, *_words(_counters(counter, n)))
        bits = _join(y0, y1).reshape(shape)
    else:
        full = shape or (1,)
        s = split_dim(full)
        half = full[:s] + ((full[s] + 1) // 2,) + full[s + 1:]
        n = math.prod(half)
        y0, y1 = threefry2x32(k0, k1, *_words(_counters(counter, n)))
        pairs = np.stack([y0.reshape(half), y1.reshape(half)], axis=s + 1)
        merged = pairs.reshape(full[:s] + (2 * half[s],) + full[s + 1:])
        bits = np.take(merged, np.arange(full[s]), axis=s).reshape(shape)
    with np.errstate(over="ignore"):
        new_state = np.array([key, counter + np.uint64(n)], U64)
    return new_state, _finish(bits, dtype)


def _philox_state(state: np.ndarray) -> tuple[np.uint64, np.uint64, np.uint64]:
    """(key, counter_low, counter_high) the way XLA reads a u64[3] or u64[2] state."""
    s = np.asarray(state, U64)
    return (s[0], s[1], s[2]) if s.size == 3 else (s[0], s[1], s[0])


def philox_bits(state: np.ndarray, shape: tuple[int, ...],
                dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(new_state, bits) of RngBitGenerator philox; state is u64[3] (or XLA's u64[2])."""
    key, low, high = _philox_state(state)
    n = math.prod(shape)
    per_block = 2 if dtype.itemsize == 8 else 4
    blocks = -(-n // per_block)
    lows = _counters(low, blocks)
    with np.errstate(over="ignore"):
        highs = np.where(lows < low, high + np.uint64(1), high)  # carry into the high word
    words = philox4x32([*_words(lows), *_words(highs)], _words(key))
    if per_block == 2:
        words = [_join(words[0], words[1]), _join(words[2], words[3])]
    bits = np.stack(words, axis=1).reshape(-1)[:n].reshape(shape)
    with np.errstate(over="ignore"):
        new_low = low + np.uint64(blocks)
        new_high = high + np.uint64(1) if new_low < low else high
    kept = [key, new_low, new_high] if np.asarray(state).size == 3 else [key, new_low]
    return np.array(kept, U64), _finish(bits, dtype)


GENERATORS = {"three_fry": threefry_bits, "philox": philox_bits}
