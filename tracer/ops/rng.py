"""Random number ops (XLA's RngBitGenerator, RngUniform, RngNormal): rng_bit_generator,
rng_uniform, rng_normal, and the two Threefry-2x32 ops `tracer.random` is built on (`threefry2x32`,
`threefry_random_bits`).

- `rng_bit_generator(state, shape, dtype, algorithm)` is a pure function of its u64
  state (XLA's layouts, see `rng_bits`): the same state gives the same bits on every
  backend. Not differentiable; not effectful (it may be merged or folded like any
  pure op).
- `threefry2x32(k0, k1, x0, x1)` applies the 20-round block element-wise (scalars
  broadcast). It is JAX's `threefry2x32` primitive: `tracer.random` derives JAX's
  keys with it.
- `threefry_random_bits(key, bit_width, shape)` is JAX's `threefry_random_bits` as
  one op (the block over the row-major counters, combined to the bit width), so
  the cpu backend makes bits in one pass without materializing counters.
- `rng_uniform` / `rng_normal` are the seeds' stateful ops: no state argument, each
  execution draws fresh numbers from a process-level stream of the backend that runs
  it (the interpreter: a NumPy Generator seeded from OS entropy; the cpu backend:
  numba's per-thread generator). They are effectful (never merged, folded or
  dropped) and their numbers are not reproducible, across runs or backends: use
  `tracer.random` for reproducible numbers. Not differentiable (as in JAX).
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from .common import static_ints, wrapper_error
from .registry import define_op, harmonize
from .rng_bits import ALGORITHMS, GENERATORS, U32, U64, threefry2x32 as _threefry_block

__all__ = ["rng_bit_generator", "rng_uniform", "rng_normal", "threefry2x32",
           "threefry_random_bits"]

# The bit generators' output types (XLA: every integral type; signed ones are a view).
BIT_DTYPES = frozenset(np.dtype(f"{k}{n}") for k in "ui" for n in (1, 2, 4, 8))
_ALIASES = {"default": "three_fry", "threefry": "three_fry", "rng_three_fry": "three_fry",
            "rng_philox": "philox", "rng_default": "three_fry"}


@functools.cache
def _stream() -> np.random.Generator:
    """The reference backend's process-level stream for rng_uniform / rng_normal (made on
    first use: `np.random` is a module `import tracer` need not load)."""
    return np.random.default_rng()


def _check_shape(shape: tuple[int, ...]) -> None:
    if any(d < 0 for d in shape):
        raise ShapeError(f"shape {shape} has a negative size")


# ------------------------------------------------------------------ threefry2x32
def _threefry_shape(*avals: ShapedArray) -> tuple[ShapedArray, ShapedArray]:
    if any(a.dtype != U32 for a in avals):
        raise DTypeError("threefry2x32 operands must all be u32, got "
                         + ", ".join(map(str, avals)))
    shapes = {a.shape for a in avals if a.ndim}
    if len(shapes) > 1:
        raise ShapeError("threefry2x32 operands must be scalars or share one shape, got "
                         + ", ".join(map(str, avals)))
    shape = shapes.pop() if shapes else ()
    return ShapedArray(shape, U32), ShapedArray(shape, U32)


def _threefry_impl(*args: np.ndarray) -> list[np.ndarray]:
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return [np.array(np.broadcast_to(y, shape)) for y in _threefry_block(*args)]


def threefry2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32 (20 rounds) of key (k0, k1) and counter (x0, x1), element-wise.

    All four are u32; each is a scalar or an array of the one common shape. Returns
    the two output words. It is Random123's threefry2x32_20 and JAX's threefry2x32
    primitive. Known answers: key (0, 0), counter (0, 0) -> (0x6b200159, 0x99ba4efe);
    key (0x13198a2e, 0x03707344), counter (0x243f6a88, 0x85a308d3) ->
    (0xc4923a9c, 0x483df7a0).
    """
    args = [np.asarray(a, U32) if dtypes.is_python_scalar(a) else a for a in (k0, k1, x0, x1)]
    y0, y1 = threefry2x32_p.bind(*args)
    return y0, y1


threefry2x32_p = define_op(
    "threefry2x32", shape=_threefry_shape, impl=_threefry_impl, hlo_name="threefry2x32",
    family="rng", multiple_results=True, differentiable=False,
    doc=inspect.cleandoc(threefry2x32.__doc__ or ""))


# ------------------------------------------------------------------ threefry_random_bits
BIT_WIDTHS = (8, 16, 32, 64)


def _random_bits_shape(key: ShapedArray, *, bit_width: int,
                       shape: tuple[int, ...]) -> ShapedArray:
    if key.dtype != U32 or key.shape != (2,):
        raise DTypeError(f"the key must be u32[2], got {key}")
    if bit_width not in BIT_WIDTHS:
        raise ParamError(f"bit_width must be one of {BIT_WIDTHS}, got {bit_width}")
    _check_shape(shape)
    return ShapedArray(shape, np.dtype(f"u{bit_width // 8}"))


def _random_bits_impl(key: np.ndarray, *, bit_width: int, shape: tuple[int, ...]) -> np.ndarray:
    index = np.arange(math.prod(shape), dtype=U64)
    y0, y1 = _threefry_block(key[0], key[1], (index >> np.uint64(32)).astype(U32),
                             index.astype(U32))
    return _combine_words(y0, y1, bit_width).reshape(shape)


def _combine_words(y0: np.ndarray, y1: np.ndarray, bit_width: int) -> np.ndarray:
    """JAX's bits from a block's two words: y0 ^ y1 (its low bits below 32), or
    (y0 << 32) | y1 for 64 bits."""
    if bit_width == 64:
        return (y0.astype(U64) << np.uint64(32)) | y1.astype(U64)
    return (y0 ^ y1).astype(np.dtype(f"u{bit_width // 8}"))


def threefry_random_bits(key: Any, bit_width: int, shape: Sequence[int]) -> Any:
    """Random bits of `shape` from a Threefry key, JAX's `threefry_random_bits`.

    key is u32[2] = (k0, k1). Element i (row-major) is the block of the key at
    counter (i >> 32, i & 0xFFFFFFFF), giving words (y0, y1); its bits are y0 ^ y1
    (8 and 16 bits: the low bits of that) or (y0 << 32) | y1 for 64 bits. Output
    dtype uint{bit_width}. Example: threefry_random_bits([0, 0], 32, (1,)) ->
    [0x6b200159 ^ 0x99ba4efe] = [0xf29a4fa7].
    """
    if bit_width not in BIT_WIDTHS:
        raise wrapper_error(ParamError, "threefry_random_bits",
                            f"bit_width must be one of {BIT_WIDTHS}, got {bit_width!r}")
    return threefry_random_bits_p.bind(
        key, bit_width=int(bit_width), shape=static_ints("threefry_random_bits", "shape", shape))


threefry_random_bits_p = define_op(
    "threefry_random_bits", shape=_random_bits_shape, impl=_random_bits_impl,
    hlo_name="threefry-random-bits", family="rng", differentiable=False,
    doc=inspect.cleandoc(threefry_random_bits.__doc__ or ""))


# ------------------------------------------------------------------ rng_bit_generator
def _state_sizes(algorithm: str) -> tuple[int, ...]:
    return (2,) if algorithm == "three_fry" else (2, 3)


def _bit_generator_shape(state: ShapedArray, *, shape: tuple[int, ...], dtype: np.dtype,
                         algorithm: str) -> tuple[ShapedArray, ShapedArray]:
    if algorithm not in ALGORITHMS:
        raise ParamError(f"algorithm must be one of {ALGORITHMS} (or 'default'), "
                         f"got {algorithm!r}")
    sizes = _state_sizes(algorithm)
    if state.dtype != U64 or state.ndim != 1 or state.shape[0] not in sizes:
        want = " or ".join(f"u64[{n}]" for n in sizes)
        raise DTypeError(f"the {algorithm} state must be {want}, got {state}")
    if dtype not in BIT_DTYPES:
        raise DTypeError(f"bits must have an integer dtype, got {dtype}")
    _check_shape(shape)
    return ShapedArray(state.shape, U64), ShapedArray(shape, dtype)


def _bit_generator_impl(state: np.ndarray, *, shape: tuple[int, ...], dtype: np.dtype,
                        algorithm: str) -> list[np.ndarray]:
    return list(GENERATORS[algorithm](state, shape, dtype))


def canonical_algorithm(algorithm: Any) -> str:
    """"three_fry" or "philox" for the accepted spellings ("default" is three_fry)."""
    name = str(getattr(algorithm, "name", algorithm)).lower()
    name = _ALIASES.get(name, name)
    if name not in ALGORITHMS:
        raise wrapper_error(ParamError, "rng_bit_generator", f"unknown algorithm "
                            f"{algorithm!r}: use 'three_fry', 'philox' or 'default'")
    return name


def rng_bit_generator(initial_state: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: Any = "three_fry") -> tuple[Any, Any]:
    """(new_state, bits): `shape` uniform random bits from an explicit PRNG state.

    Seed rule: RngBitGenerator(algorithm, initial_state, shape) returns the updated
    state (same shape as the initial one) and the bits; the output is a
    deterministic function of the state. Algorithms (XLA's): "three_fry"
    (Threefry-2x32, 20 rounds; state u64[2] = [key, counter]) and "philox"
    (Philox-4x32-10; state u64[3] = [key, counter_low, counter_high], or XLA's u64[2]
    form); "default" is three_fry here. dtype: any integer type (u8..u64, s8..s64;
    signed ones are the bits' two's-complement view). Example:
    rng_bit_generator(np.array([0, 0], np.uint64), (2,)) -> ([0, 1], [0x6b200159,
    0x99ba4efe]) -- the Threefry block of key 0 at counter 0.
    """
    alg = canonical_algorithm(algorithm)
    try:
        dt = dtypes.canonicalize(dtype)
    except DTypeError as e:
        raise wrapper_error(DTypeError, "rng_bit_generator", str(e)) from None
    new_state, bits = rng_bit_generator_p.bind(
        initial_state, shape=static_ints("rng_bit_generator", "shape", shape), dtype=dt,
        algorithm=alg)
    return new_state, bits


rng_bit_generator_p = define_op(
    "rng_bit_generator", shape=_bit_generator_shape, impl=_bit_generator_impl,
    hlo_name="rng-bit-generator", family="rng", multiple_results=True,
    differentiable=False, doc=inspect.cleandoc(rng_bit_generator.__doc__ or ""))


# ------------------------------------------------------------------ rng_uniform / rng_normal
def _scalar_params(op: str, kinds: str, *avals: ShapedArray) -> np.dtype:
    if any(a.ndim for a in avals):
        raise ShapeError(f"{op} parameters must be scalars, got "
                         + ", ".join(map(str, avals)))
    if avals[0].dtype != avals[1].dtype:
        raise DTypeError(f"{op} parameters must share a dtype, got {avals[0]}, {avals[1]}")
    dt = avals[0].dtype
    if dtypes.kind(dt) not in kinds or dt.itemsize > 8:
        raise DTypeError(f"{op} needs {'integer or ' * ('i' in kinds)}floating-point "
                         f"parameters, got {avals[0]}")
    return dt


def _uniform_shape(a: ShapedArray, b: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    dt = _scalar_params("rng_uniform", "fiu", a, b)
    _check_shape(shape)
    return ShapedArray(shape, dt)


def _uniform_impl(a: np.ndarray, b: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    dt = a.dtype
    if dtypes.is_float(dt):
        nmant = dtypes.finfo(dt).nmant
        u = _stream().integers(0, 1 << nmant, size=shape).astype(dt) * dt.type(2.0 ** -nmant)
        with np.errstate(all="ignore"):
            r = u * (b - a) + a
            return np.where(r < b, r, a).astype(dt)  # [a, b); b <= a gives a
    raw = _stream().integers(0, 2 ** 64 - 1, size=shape, dtype=U64, endpoint=True)
    return uniform_int(raw, a, b)


def uniform_int(raw: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a + raw % (b - a)` for u64 `raw`, wrapping in a's width; `a` when b <= a. (A
    64-bit draw keeps the modulo bias of narrow types below 2**-32.)"""
    dt = np.asarray(a).dtype
    unsigned = np.dtype(f"u{dt.itemsize}")
    ua, ub = (np.asarray(v, dt).view(unsigned) for v in (a, b))
    with np.errstate(over="ignore"):
        span = (ub - ua).astype(U64) if b > a else np.uint64(1)
        return (ua.astype(U64) + raw % span).astype(unsigned).view(dt)


def rng_uniform(a: Any, b: Any, shape: Sequence[int]) -> Any:
    """Uniform samples in [a, b) of `shape`, drawn from the backend's process stream.

    Seed rule: RngUniform(a, b, shape) with scalar a, b of one type T (float or
    integer) gives T[shape] uniform over [a, b); b <= a is implementation-defined
    (here: every sample is a). Stateful: each run draws new numbers, not
    reproducible across runs or backends (use `tracer.random` for that). Example:
    rng_uniform(np.float32(0), np.float32(1), (2,)) -> e.g. [0.37, 0.91].
    """
    a, b = harmonize(a, b)
    return rng_uniform_p.bind(a, b, shape=static_ints("rng_uniform", "shape", shape))


rng_uniform_p = define_op(
    "rng_uniform", shape=_uniform_shape, impl=_uniform_impl, hlo_name="rng-uniform",
    family="rng", differentiable=False, effectful=True,
    doc=inspect.cleandoc(rng_uniform.__doc__ or ""))


def _normal_shape(mu: ShapedArray, sigma: ShapedArray, *, shape: tuple[int, ...]) -> ShapedArray:
    dt = _scalar_params("rng_normal", "f", mu, sigma)
    _check_shape(shape)
    return ShapedArray(shape, dt)


def _normal_impl(mu: np.ndarray, sigma: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    z = _stream().standard_normal(size=shape).astype(mu.dtype)
    with np.errstate(all="ignore"):
        return (mu + sigma * z).astype(mu.dtype)


def rng_normal(mu: Any, sigma: Any, shape: Sequence[int]) -> Any:
    """Normal N(mu, sigma) samples of `shape`, drawn from the backend's process stream.

    Seed rule: RngNormal(mu, sigma, shape) with scalar mu, sigma of one floating
    type T gives T[shape] samples of N(mu, sigma) (computed as mu + sigma * z).
    Stateful like rng_uniform: not reproducible across runs or backends. Example:
    rng_normal(np.float32(0), np.float32(1), (2,)) -> e.g. [-0.41, 1.37].
    """
    mu, sigma = harmonize(mu, sigma)
    return rng_normal_p.bind(mu, sigma, shape=static_ints("rng_normal", "shape", shape))


rng_normal_p = define_op(
    "rng_normal", shape=_normal_shape, impl=_normal_impl, hlo_name="rng-normal",
    family="rng", differentiable=False, effectful=True,
    doc=inspect.cleandoc(rng_normal.__doc__ or ""))

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import rng_rules  # noqa: E402,F401
