"""numba kernels of the RNG ops, bit for bit the NumPy reference (`tracer.ops.rng_bits`).

- `threefry_block` / `philox_block`: Threefry-2x32 (20 rounds) and Philox-4x32-10 on
  uint32 words (numba computes in 64 bits; every step is cast back to uint32, which
  is the wraparound of the reference).
- `threefry2x32_fill`: the element-wise op; each operand is a scalar or an array
  of the output's shape (`_at` picks the element or the scalar at compile time).
- `threefry_random_bits_fill`: JAX's random bits, counters made in the loop.
- `threefry_generate` / `philox_generate`: RngBitGenerator's XLA layouts, writing
  the bits (flat, any integer dtype: the store keeps the low bits) and the new state.
- `stream_*`: rng_uniform / rng_normal from numba's per-thread generator (seeded
  from OS entropy). They follow the reference's rules, [a, b) and `a` when b <= a,
  `mu + sigma * z`, but their numbers are their own stream.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from .scalar_math import bf16_bits, bf16_round, f16_bits, f16_round

_jit = njit(cache=True, error_model="numpy")
# helpers called from compiled code only: no Python or C wrapper to generate
_internal = njit(cache=True, error_model="numpy", no_cpython_wrapper=True, no_cfunc_wrapper=True)
# small helpers typed in place: numba compiles a jit function called with a literal
# argument once per literal (8 rotations), each compile a fraction of a second
_inline = njit(cache=True, error_model="numpy", inline="always")

PARITY = np.uint32(0x1BD11BDA)
MUL_A, MUL_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
STEP_A, STEP_B = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
M32 = np.uint64(0xFFFFFFFF)
PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save


def _at(x, i):  # numba compiles the overload below
    """x[i] for an array operand, x itself for a scalar one."""
    return x[i] if isinstance(x, np.ndarray) else x


@overload(_at, inline="always")
def _at_overload(x, i):
    if isinstance(x, types.Array):
        return lambda x, i: x[i]
    return lambda x, i: x


def _flat(x):  # numba compiles the overload below
    """A 1-D view of a C-contiguous array operand; a scalar stays a scalar."""
    return x.reshape(x.size) if isinstance(x, np.ndarray) else x


@overload(_flat, inline="always")
def _flat_overload(x):
    if isinstance(x, types.Array):
        return lambda x: x.reshape(x.size)
    return lambda x: x


# ---------------------------------------------------------------- the blocks

@_inline
def _mix(x0, x1, r):
    x0 = np.uint32(x0 + x1)
    x1 = np.uint32((x1 << r) | (x1 >> (32 - r)))
    return x0, np.uint32(x1 ^ x0)


@_inline
def _four(x0, x1, r0, r1, r2, r3):
    x0, x1 = _mix(x0, x1, r0)
    x0, x1 = _mix(x0, x1, r1)
    x0, x1 = _mix(x0, x1, r2)
    return _mix(x0, x1, r3)


@_jit
def threefry_block(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds: key (k0, k1), counter (x0, x1) -> two uint32 words."""
    k0, k1 = np.uint32(k0), np.uint32(k1)
    k2 = np.uint32(k0 ^ k1 ^ PARITY)
    x0, x1 = np.uint32(x0 + k0), np.uint32(x1 + k1)
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0, x1 = np.uint32(x0 + k1), np.uint32(x1 + k2 + 1)
    x0, x1 = _four(x0, x1, 17, 29, 16, 24)
    x0, x1 = np.uint32(x0 + k2), np.uint32(x1 + k0 + 2)
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    x0, x1 = np.uint32(x0 + k0), np.uint32(x1 + k1 + 3)
    x0, x1 = _four(x0, x1, 17, 29, 16, 24)
    x0, x1 = np.uint32(x0 + k1), np.uint32(x1 + k2 + 4)
    x0, x1 = _four(x0, x1, 13, 15, 26, 6)
    return np.uint32(x0 + k2), np.uint32(x1 + k0 + 5)


@_jit
def philox_block(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10: counter words c0..c3, key (k0, k1) -> four uint32 words."""
    k0, k1 = np.uint32(k0), np.uint32(k1)
    for _ in range(10):
        p0 = np.uint64(c0) * MUL_A
        p1 = np.uint64(c2) * MUL_B
        c0, c1, c2, c3 = (np.uint32((p1 >> 32) ^ c1 ^ k0), np.uint32(p1 & M32),
                          np.uint32((p0 >> 32) ^ c3 ^ k1), np.uint32(p0 & M32))
        k0, k1 = np.uint32(k0 + STEP_A), np.uint32(k1 + STEP_B)
    return c0, c1, c2, c3


# ---------------------------------------------------------------- the element-wise op

@_internal
def _fill_serial(a, b, c, d, out0, out1):
    for i in range(out0.size):
        out0[i], out1[i] = threefry_block(_at(a, i), _at(b, i), _at(c, i), _at(d, i))


@njit(cache=True, error_model="numpy", parallel=True)
def _fill_parallel(a, b, c, d, out0, out1):
    for i in prange(out0.size):
        out0[i], out1[i] = threefry_block(_at(a, i), _at(b, i), _at(c, i), _at(d, i))


@_jit
def threefry2x32_fill(k0, k1, x0, x1, y0, y1):
    """y0, y1 (C-contiguous, one shape) = the block of each element's operands."""
    _fill_serial(_flat(k0), _flat(k1), _flat(x0), _flat(x1), y0.reshape(y0.size),
                 y1.reshape(y1.size))


@_jit
def threefry2x32_fill_parallel(k0, k1, x0, x1, y0, y1):
    """`threefry2x32_fill` on threads: for outputs of at least PARALLEL_MIN_ELEMENTS in
    graphs without BLAS (the emitter picks it: numba takes seconds to compile a
    parallel loop, so small outputs never do)."""
    _fill_parallel(_flat(k0), _flat(k1), _flat(x0), _flat(x1), y0.reshape(y0.size),
                   y1.reshape(y1.size))


@_internal
def _bits_at(k0, k1, i, width):
    """JAX's random bits of element i: the block at counter (i >> 32, i & 0xFFFFFFFF)."""
    low, high = _words(np.uint64(i))
    y0, y1 = threefry_block(k0, k1, high, low)
    if width == 64:
        return _join(y1, y0)
    return np.uint64(y0 ^ y1)


@_internal
def _bits_serial(k0, k1, out, width):
    for i in range(out.size):
        out[i] = _bits_at(k0, k1, i, width)


@njit(cache=True, error_model="numpy", parallel=True)
def _bits_parallel(k0, k1, out, width):
    for i in prange(out.size):
        out[i] = _bits_at(k0, k1, i, width)


@_jit
def threefry_random_bits_fill(key, bits, width):
    """bits (C-contiguous, uint{width}) = JAX's threefry random bits of `key`; the
    store keeps the low bits for 8 and 16."""
    _bits_serial(key[0], key[1], bits.reshape(bits.size), width)


@_jit
def threefry_random_bits_fill_parallel(key, bits, width):
    """`threefry_random_bits_fill` on threads (as `threefry2x32_fill_parallel`)."""
    _bits_parallel(key[0], key[1], bits.reshape(bits.size), width)


# ---------------------------------------------------------------- RngBitGenerator

@_jit
def split_dim(shape):
    """XLA's SplitShapeIntoHalves: the first even dimension, else the first largest."""
    for i in range(len(shape)):
        if shape[i] % 2 == 0:
            return i
    best = 0
    for i in range(len(shape)):
        if shape[i] > shape[best]:
            best = i
    return best


@_inline
def _words(x):
    x = np.uint64(x)
    return np.uint32(x & M32), np.uint32(x >> 32)


@_inline
def _join(low, high):
    return np.uint64(low) | (np.uint64(high) << 32)


@_jit
def threefry_generate(state, new_state, bits, shape):
    """three_fry bits of `shape` (a rank-0 result: (1,)) into the C-contiguous `bits`;
    state u64[2] = [key, counter]."""
    key, counter = np.uint64(state[0]), np.uint64(state[1])
    k0, k1 = _words(key)
    out = bits.reshape(bits.size)
    n = out.size
    if out.itemsize == 8:
        for i in range(n):
            y0, y1 = threefry_block(k0, k1, *_words(counter + np.uint64(i)))
            out[i] = _join(y0, y1)
    else:
        s = split_dim(shape)
        d = shape[s]
        half = (d + 1) // 2
        outer, inner = 1, 1
        for j in range(s):
            outer *= shape[j]
        for j in range(s + 1, len(shape)):
            inner *= shape[j]
        for o in range(outer):
            for h in range(half):
                for q in range(inner):
                    c = counter + np.uint64((o * half + h) * inner + q)
                    y0, y1 = threefry_block(k0, k1, *_words(c))
                    out[(o * d + 2 * h) * inner + q] = y0
                    if 2 * h + 1 < d:
                        out[(o * d + 2 * h + 1) * inner + q] = y1
        n = outer * half * inner
    new_state[0] = key
    new_state[1] = counter + np.uint64(n)


@_jit
def philox_generate(state, new_state, bits):
    """philox bits into the C-contiguous `bits`; state u64[3] = [key, low, high] or
    XLA's u64[2] = [key, low] (the high word is then the key)."""
    key, low = np.uint64(state[0]), np.uint64(state[1])
    high = np.uint64(state[2]) if state.size == 3 else key
    k0, k1 = _words(key)
    out = bits.reshape(bits.size)
    n = out.size
    per_block = 2 if out.itemsize == 8 else 4
    blocks = (n + per_block - 1) // per_block
    for v in range(blocks):
        c_low = low + np.uint64(v)
        c_high = high + np.uint64(1) if c_low < low else high
        w = philox_block(*_words(c_low), *_words(c_high), k0, k1)
        if per_block == 2:
            out[2 * v] = _join(w[0], w[1])
            if 2 * v + 1 < n:
                out[2 * v + 1] = _join(w[2], w[3])
        else:
            for j in range(min(4, n - 4 * v)):
                out[4 * v + j] = w[j]
    new_low = low + np.uint64(blocks)
    new_state[0] = key
    new_state[1] = new_low
    if state.size == 3:
        new_state[2] = high + np.uint64(1) if new_low < low else high


# ---------------------------------------------------------------- the process stream

@_internal
def _mantissa_draw(nmant):
    """Uniform in [0, 1) with `nmant` random bits, exact in any float type."""
    return np.float64(np.random.randint(0, 1 << nmant)) * 2.0 ** -nmant


@_internal
def _rounded(x, nmant):
    """float64 `x` rounded to the output type (7: bfloat16, 10: float16, 23: float32,
    52: float64)."""
    if nmant == 7:
        return np.float64(bf16_round(np.float32(x)))
    if nmant == 10:
        return np.float64(f16_round(np.float32(x)))
    if nmant == 23:
        return np.float64(np.float32(x))
    return x


@_internal
def _store(out, i, value, nmant):
    if nmant == 7:
        out[i] = bf16_bits(value)  # half-precision arrays hold their bits
    elif nmant == 10:
        out[i] = f16_bits(value)
    else:
        out[i] = value


@_jit
def stream_uniform_float(a, b, out, nmant):
    """rng_uniform of a float type: [a, b); a when b <= a (a, b as float64)."""
    flat = out.reshape(out.size)
    for i in range(flat.size):
        r = _rounded(_mantissa_draw(nmant) * (b - a) + a, nmant)
        _store(flat, i, r if r < b else a, nmant)


@_jit
def stream_uniform_int(ua, ub, greater, out, bits):
    """rng_uniform of an integer type: ua + raw % (ub - ua) in `bits`-bit unsigned
    arithmetic (ua, ub: the bounds' two's-complement bits as uint64); ua if not b > a."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - bits)
    span = np.uint64((ub - ua) & mask) if greater else np.uint64(1)
    flat = out.reshape(out.size)
    for i in range(flat.size):  # a 64-bit draw: the modulo bias stays below 2**-32
        raw = _join(np.random.randint(0, 1 << 32), np.random.randint(0, 1 << 32))
        flat[i] = (ua + raw % span) & mask


@_jit
def stream_normal(mu, sigma, out, nmant):
    """rng_normal: mu + sigma * z, z standard normal (mu, sigma as float64)."""
    flat = out.reshape(out.size)
    for i in range(flat.size):
        _store(flat, i, _rounded(mu + sigma * np.random.standard_normal(), nmant), nmant)
