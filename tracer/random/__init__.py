"""`tracer.random`: JAX-style functional random numbers.

A key is a plain uint32[2] array, as `jax.random.PRNGKey` returns (there are no
typed key arrays): `key(seed)`, then `split` / `fold_in` to derive new keys, and
samplers that take a key and return arrays. Everything is built on `tracer.ops`
(`threefry2x32`, the Threefry-2x32 block, plus ordinary ops), so it works eagerly,
under `jit`, `vmap` (map over a batch of keys), `grad` (through the parameters,
with a fixed key) and on every backend.

What is guaranteed:

- Determinism: the same key and arguments give the same numbers, eagerly, under
  `jit` and `vmap`, bit for bit on the interpreter and cpu backends. Every sampler
  is built from ops whose backends agree exactly: integer and bit ops, IEEE basic
  arithmetic (+ - * / sqrt, exactly rounded everywhere), `erf` (libm's, in float64,
  on both), sort, and this module's own `log` / `log1p` / `exp` (`_math`, written
  with those ops) instead of the backends' transcendental functions, which are
  different approximations a few ulp apart.
- JAX compatibility (`jax_threefry_partitionable=True`, JAX's default since 0.5):
  `key`, `split`, `fold_in`, `bits`, `uniform`, `randint`, `bernoulli`,
  `permutation` and `choice` without weights equal `jax.random`'s bit for bit
  (float32 `uniform` with bounds other than [0, 1) included: its scale-and-shift
  is rounded once, like the fused multiply-add XLA's CPU compiler emits; float64
  with such bounds may differ by an ulp). `normal` uses XLA's erf_inv and is ~98%
  bit-identical (at most 2 ulp off: XLA's log1p is its own approximation);
  `truncated_normal`, `exponential`, `gumbel`, `gamma`, `beta`, `categorical` and
  weighted `choice` follow JAX's algorithms and agree to a few ulp (so an
  accept/reject, argmax or search decision on a near-tie may differ). Seeds
  outside [0, 2**32) give JAX's keys of 64-bit mode (`jax_enable_x64`). Dtypes
  default to float64 / int64, as `tracer.numpy` follows NumPy: the numbers are
  `jax.random`'s with `jax_enable_x64` on (pass `dtype=np.float32` for JAX's default
  mode's); float16 and bfloat16 samplers follow JAX's
  derivations too (a bfloat16 uniform takes 8 random bits, as JAX's), their
  transcendental steps computed in float32 and rounded once.
"""

from ._distributions import (bernoulli, categorical, exponential, gumbel, normal, randint,
                             truncated_normal, uniform)
from ._gamma import beta, gamma
from ._keys import PRNGKey, bits, fold_in, key, split
from ._permute import choice, permutation

__all__ = ["key", "PRNGKey", "split", "fold_in", "bits", "uniform", "normal", "bernoulli",
           "randint", "permutation", "choice", "categorical", "truncated_normal", "gamma",
           "beta", "exponential", "gumbel"]
