"""Op-table cases for the RNG ops (XLA's RNG operations and JAX's Threefry primitives).

Golden values: Random123's known answers for the Threefry-2x32-20 and Philox-4x32-10
blocks, and what `jax.lax.rng_bit_generator` / `jax.random.bits` return (XLA's CPU
backend), recorded here so the tests need no JAX. rng_uniform and rng_normal draw
from a process stream, so their cases are the degenerate draws whose value is
fixed: [a, a) gives a, and sigma = 0 gives mu.
"""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

U32, U64 = np.uint32, np.uint64

# Random123 kat_vectors: threefry2x32_20 (zeros, ones, pi digits).
TF_KEY0 = np.array([0, 0xFFFFFFFF, 0x13198A2E], U32)
TF_KEY1 = np.array([0, 0xFFFFFFFF, 0x03707344], U32)
TF_CTR0 = np.array([0, 0xFFFFFFFF, 0x243F6A88], U32)
TF_CTR1 = np.array([0, 0xFFFFFFFF, 0x85A308D3], U32)
TF_OUT = (np.array([0x6B200159, 0x1CB996FC, 0xC4923A9C], U32),
          np.array([0x99BA4EFE, 0xBB002BE7, 0x483DF7A0], U32))

JAX_KEY0 = np.zeros(2, U32)      # jax.random.PRNGKey(0)
JAX_KEY42 = np.array([0, 42], U32)
XLA_STATE = np.array([7, 5], U64)  # u32[4] [7, 0, 5, 0] as JAX passes it to XLA


def _tf(k0, k1, x0, x1):
    return ops.threefry2x32(k0, k1, x0, x1)


def _bits(width, shape):
    return lambda key: ops.threefry_random_bits(key, width, shape)


def _rbg(shape, dtype=np.uint32, algorithm="three_fry"):
    return lambda state: ops.rng_bit_generator(state, shape, dtype, algorithm)


CASES = [
    OpCase("threefry2x32:kat", _tf, (TF_KEY0, TF_KEY1, TF_CTR0, TF_CTR1), expected=TF_OUT),
    OpCase("threefry2x32:scalar_key", lambda k0, k1, x: _tf(k0, k1, np.uint32(0), x),
           (U32(0), U32(0), np.arange(2, dtype=U32)),
           expected=(np.array([0x6B200159, 0x375F238F], U32),
                     np.array([0x99BA4EFE, 0xCDDB151D], U32))),
    OpCase("threefry2x32:scalars", _tf, (U32(0x13198A2E), U32(0x03707344), U32(0x243F6A88),
                                         U32(0x85A308D3)),
           expected=(U32(0xC4923A9C), U32(0x483DF7A0))),
    OpCase("threefry_random_bits:u32", _bits(32, (4,)), (JAX_KEY0,),
           expected=np.array([4070199207, 4202968722, 1427181096, 2012915765], U32)),
    OpCase("threefry_random_bits:u8_2d", _bits(8, (2, 3)), (JAX_KEY42,),
           expected=np.array([[162, 217, 249], [215, 21, 216]], np.uint8)),
    OpCase("threefry_random_bits:u64", _bits(64, (3,)), (JAX_KEY42,)),
    OpCase("threefry_random_bits:scalar", _bits(16, ()), (JAX_KEY42,)),
    OpCase("rng_bit_generator:three_fry", _rbg((5,)), (XLA_STATE,),
           expected=(np.array([7, 8], U64),
                     np.array([1271531411, 2450972709, 4036977864, 125766773, 2136903383],
                              U32))),
    OpCase("rng_bit_generator:three_fry_2d", _rbg((2, 3)), (XLA_STATE,),
           expected=(np.array([7, 8], U64),
                     np.array([[1271531411, 4036977864, 2136903383],
                               [2450972709, 125766773, 2095082612]], U32))),
    OpCase("rng_bit_generator:three_fry_u8", _rbg((3,), np.uint8), (XLA_STATE,),
           expected=(np.array([7, 7], U64), np.array([147, 37, 200], np.uint8))),
    OpCase("rng_bit_generator:three_fry_s64_scalar", _rbg((), np.int64), (XLA_STATE,)),
    OpCase("rng_bit_generator:philox_u64x2", _rbg((5,), algorithm="philox"), (XLA_STATE,),
           expected=(np.array([7, 7], U64),
                     np.array([71630834, 1308288064, 569451782, 3128905335, 3152363103],
                              U32))),
    # Random123 kat_vectors philox4x32_10 (zeros): key 0, counter 0.
    OpCase("rng_bit_generator:philox_kat", _rbg((4,), algorithm="philox"),
           (np.zeros(3, U64),),
           expected=(np.array([0, 1, 0], U64),
                     np.array([0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8], U32))),
    OpCase("rng_bit_generator:philox_u64_odd", _rbg((3, 1), np.uint64, "philox"),
           (np.array([1, 2 ** 64 - 1, 4], U64),)),
    OpCase("rng_uniform:degenerate_f32", lambda a: ops.rng_uniform(a, a, (2, 3)),
           (np.float32(1.5),), expected=np.full((2, 3), 1.5, np.float32)),
    OpCase("rng_uniform:degenerate_s32", lambda a: ops.rng_uniform(a, a, (4,)),
           (np.int32(-7),), expected=np.full(4, -7, np.int32)),
    OpCase("rng_uniform:empty_interval_u8", lambda a: ops.rng_uniform(a, np.uint8(3), (3,)),
           (np.uint8(9),), expected=np.full(3, 9, np.uint8)),
    OpCase("rng_normal:zero_sigma", lambda mu: ops.rng_normal(mu, 0.0, (3,)),
           (np.float64(-2.0),), expected=np.full(3, -2.0)),
    OpCase("rng_normal:zero_sigma_f16", lambda mu: ops.rng_normal(mu, 0.0, ()),
           (np.float16(0.25),), expected=np.float16(0.25)),
]
