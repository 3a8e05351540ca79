"""Device kernels of the RNG ops.

- `threefry2x32`, `threefry_random_bits` and `rng_bit_generator` (three_fry and
  philox) call the CPU backend's blocks (`numba.lib.rng.threefry_block`,
  `philox_block`, which numba compiles for the GPU) in XLA's layouts, one
  thread per block: the bits are the reference's and the CPU backend's, bit for
  bit. The new state is written by thread 0 of the same kernel.
- `rng_uniform` / `rng_normal` draw from the device's counter-based process
  stream (`cuda.lib.rng.stream_key`: a fresh key per execution, counter = the
  element's index) with the reference's rules: [a, b) and `a` when b <= a
  (integers: `a + bits % (b - a)` in a's width), `mu + sigma * z`, rounded once
  to the output dtype. Their numbers are their own, as on every backend.
"""

from __future__ import annotations

from typing import Callable

import numba
import numpy as np

from .... import dtypes
from ....core import Eqn, Var
from ...numba.scalar import alias, cast
from ..emitter import DeviceGraphEmitter, Kernel
from ..nests import product
from .index import kernel_scalar, launch_over, over_elements, read, write

LIB = "cuda.lib.rng"


def _threefry2x32(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    outs = [ge.new_ref(v) for v in eqn.outputs]
    k = Kernel(ge, "threefry")
    block = k.mod.use("threefry_block", "numba.lib.rng")
    with over_elements(k, eqn.outputs[0]) as (index, _):
        args = [kernel_scalar(k, a) if not a.aval.ndim else read(k, ge.ref(a), index)
                for a in eqn.inputs]
        y0, y1 = k.fresh("word"), k.fresh("word")
        k.w.line(f"{y0}, {y1} = {block}({', '.join(args)})")
        write(k, outs[0], index, y0)
        write(k, outs[1], index, y1)
    launch_over(k, eqn.outputs[0], "threefry2x32: the block at every element")


def _threefry_random_bits(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """Element i: the block of the key at counter (i >> 32, i & 0xFFFFFFFF), its words
    combined as `(y0 << 32) | y1` for 64 bits, else `y0 ^ y1` (low bits kept)."""
    out = eqn.outputs[0]
    result = ge.new_ref(out)
    key = ge.ref(eqn.inputs[0])
    k = Kernel(ge, "random_bits")
    block = k.mod.use("threefry_block", "numba.lib.rng")
    k.outer(key.name)
    width = eqn.params["bit_width"]
    with over_elements(k, out) as (index, flat):
        y0, y1 = k.fresh("word"), k.fresh("word")
        k.w.line(f"{y0}, {y1} = {block}({key.name}[0], {key.name}[1], "
                 f"u32(u64({flat}) >> u64(32)), u32(u64({flat}) & u64(0xFFFFFFFF)))")
        bits = f"(u64({y0}) << u64(32)) | u64({y1})" if width == 64 else \
            f"u{width}({y0} ^ {y1})"
        write(k, result, index, bits)
    launch_over(k, out, f"threefry_random_bits: {width}-bit words of the block per element")


# ------------------------------------------------------------------ rng_bit_generator

class _Arrays:
    """One rng_bit_generator's state, new state and a 1-D view of its bits (with their
    dtype and, on the host, their size)."""

    def __init__(self, state: str, new_state: str, bits: str, dtype: np.dtype, total: str):
        self.state, self.new_state, self.bits = state, new_state, bits
        self.dtype, self.total = dtype, total

    def store(self, k: Kernel, index: str, value: str) -> None:
        """bits[index] = the low bits of unsigned `value` (two's complement if signed)."""
        k.w.line(f"{k.outer(self.bits)}[{index}] = {alias(self.dtype)}({value})")


def _rng_bit_generator(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    new_state, bits = eqn.outputs
    arrays = _Arrays(ge.array_of(ge.ref(eqn.inputs[0])), ge.new_ref(new_state).name,
                     *_flat_bits(ge, bits))
    if eqn.params["algorithm"] == "philox":
        _philox(ge, arrays, eqn.inputs[0].aval.shape[0] == 3)
    elif bits.aval.dtype.itemsize == 8:
        _threefry_64(ge, arrays)
    else:
        _threefry_32(ge, arrays, ge.shape_tuple(bits))


def _flat_bits(ge: DeviceGraphEmitter, var: Var) -> tuple[str, np.dtype, str]:
    """(a 1-D host view of the bits' device array, their dtype, their size on the host)."""
    array = ge.array_of(ge.new_ref(var))
    total = product([ge.dim(var, d) for d in range(var.aval.ndim)])
    view = ge.view(f"{array}.reshape(({total},))", var.aval.update(shape=(1,)), "bits")
    return view.name, var.aval.dtype, total


def _state_words(k: Kernel, state: str, high_word: bool = False) -> list[str]:
    """Names of the state's key, counter (philox: and the counter's high word) and the
    key's two words, read in the kernel."""
    key, counter, high, k0, k1 = (k.fresh(n) for n in ("key", "counter", "high", "k0", "k1"))
    k.outer(state)
    k.w.line(f"{key}, {counter} = u64({state}[0]), u64({state}[1])")
    if high_word:  # (u64[2]: XLA reads the key as the counter's high word)
        k.w.line(f"{high} = u64({state}[2]) if {state}.size == 3 else {key}")
    k.w.line(f"{k0}, {k1} = {k.mod.use('words', LIB)}({key})")
    return [key, counter, high, k0, k1]


def _new_state(k: Kernel, a: _Arrays, key: str, counter: str, blocks: str) -> None:
    """Thread 0 writes [key, counter + blocks]."""
    k.outer(a.new_state)
    with k.w.block("if cuda.grid(1) == 0"):
        k.w.line(f"{a.new_state}[0] = {key}")
        k.w.line(f"{a.new_state}[1] = {counter} + u64({blocks})")


def _helpers(k: Kernel) -> tuple[str, str, str]:
    return (k.mod.use("threefry_block", "numba.lib.rng"), k.mod.use("words", LIB),
            k.mod.use("join", LIB))


def _threefry_64(ge: DeviceGraphEmitter, a: _Arrays) -> None:
    """64-bit three_fry: element i is the block at counter + i, words (low, high)."""
    k = Kernel(ge, "threefry_bits")
    key, counter, _, k0, k1 = _state_words(k, a.state)
    block, words, join = _helpers(k)
    size, i, y0, y1 = (k.fresh(n) for n in ("size", "i", "y0", "y1"))
    k.w.line(f"{size} = {k.outer(a.bits)}.size")
    with k.w.block(f"for {i} in range(cuda.grid(1), {size}, cuda.gridsize(1))"):
        k.w.line(f"{y0}, {y1} = {block}({k0}, {k1}, *{words}({counter} + u64({i})))")
        a.store(k, i, f"{join}({y0}, {y1})")
    _new_state(k, a, key, counter, size)
    k.launch(f"launch.grid({a.total})", "launch.CONFIG.block",
             "rng_bit_generator three_fry, 64 bits: the block at counter + i per element")


def _threefry_32(ge: DeviceGraphEmitter, a: _Arrays, shape: str) -> None:
    """32 bits or fewer: the shape split at one dim into (outer, d, inner); block
    (o, h, q), at counter + its row-major index, gives positions 2h and 2h + 1 of d."""
    split = [ge.fresh(n) for n in ("outer", "split", "inner")]
    ge.w.line(f"{', '.join(split)} = {ge.mod.use('halves', LIB)}({shape})")
    for name in split:
        ge.mod.types[name] = numba.types.int64
    k = Kernel(ge, "threefry_bits")
    outer, d, inner = (k.outer(n) for n in split)
    key, counter, _, k0, k1 = _state_words(k, a.state)
    block, words, _ = _helpers(k)
    half, blocks, j, o, h, q, y0, y1, at = (k.fresh(n) for n in (
        "half", "blocks", "j", "o", "h", "q", "y0", "y1", "at"))
    k.w.line(f"{half} = ({d} + 1) // 2")
    k.w.line(f"{blocks} = {outer} * {half} * {inner}")
    with k.w.block(f"for {j} in range(cuda.grid(1), {blocks}, cuda.gridsize(1))"):
        k.w.line(f"{q}, {h}, {o} = {j} % {inner}, {j} // {inner} % {half}, "
                 f"{j} // {inner} // {half}")
        k.w.line(f"{y0}, {y1} = {block}({k0}, {k1}, *{words}({counter} + u64({j})))")
        k.w.line(f"{at} = ({o} * {d} + 2 * {h}) * {inner} + {q}")
        a.store(k, at, y0)
        with k.w.block(f"if 2 * {h} + 1 < {d}"):
            a.store(k, f"{at} + {inner}", y1)
    _new_state(k, a, key, counter, blocks)
    k.launch(f"launch.grid({split[0]} * (({split[1]} + 1) // 2) * {split[2]})",
             "launch.CONFIG.block", "rng_bit_generator three_fry, 32 bits: pairs along a dim")


def _philox(ge: DeviceGraphEmitter, a: _Arrays, three_words: bool) -> None:
    """philox: block v (counter + v, carried into the high word) gives elements 4v..4v+3
    (32 bits or fewer) or 2v, 2v + 1 (64 bits: words (0, 1) and (2, 3))."""
    per = 2 if a.dtype.itemsize == 8 else 4
    k = Kernel(ge, "philox_bits")
    key, low, high, k0, k1 = _state_words(k, a.state, high_word=True)
    _, words, join = _helpers(k)
    block = k.mod.use("philox_block", "numba.lib.rng")
    size, blocks, v, c_low, c_high, base = (k.fresh(n) for n in (
        "size", "blocks", "v", "c_low", "c_high", "base"))
    w = [k.fresh(f"w{j}") for j in range(4)]
    k.w.line(f"{size} = {k.outer(a.bits)}.size")
    k.w.line(f"{blocks} = ({size} + {per - 1}) // {per}")
    with k.w.block(f"for {v} in range(cuda.grid(1), {blocks}, cuda.gridsize(1))"):
        k.w.line(f"{c_low} = {low} + u64({v})")
        k.w.line(f"{c_high} = {high} + u64(1) if {c_low} < {low} else {high}")
        k.w.line(f"{', '.join(w)} = {block}(*{words}({c_low}), *{words}({c_high}), {k0}, {k1})")
        k.w.line(f"{base} = {per} * {v}")
        values = w if per == 4 else [f"{join}({w[0]}, {w[1]})", f"{join}({w[2]}, {w[3]})"]
        a.store(k, base, values[0])
        for j, value in enumerate(values[1:], 1):
            with k.w.block(f"if {base} + {j} < {size}"):
                a.store(k, f"{base} + {j}", value)
    _new_state(k, a, key, low, blocks)
    if three_words:  # the carry of the counter's low word into its high word
        with k.w.block("if cuda.grid(1) == 0"):
            k.w.line(f"{a.new_state}[2] = {high} + u64(1) if {low} + u64({blocks}) < {low} "
                     f"else {high}")
    k.launch(f"launch.grid(({a.total} + {per - 1}) // {per})", "launch.CONFIG.block",
             f"rng_bit_generator philox: {per} elements per block")


# ------------------------------------------------------------------ the process stream

Sample = Callable[[Kernel, tuple[str, str], str, list[str], np.dtype], str]


def _stream(sample: Sample, what: str) -> Callable[[DeviceGraphEmitter, Eqn], None]:
    """An emitter: a key for this execution on the host, then out[i] = sample(kernel,
    key, i, parameters, dtype) per element."""
    def emit(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
        out = eqn.outputs[0]
        result = ge.new_ref(out)
        keys = [ge.fresh("key"), ge.fresh("key")]
        ge.w.line(f"{', '.join(keys)} = {ge.mod.use('stream_key', LIB)}()  # a new draw")
        for name in keys:
            ge.mod.types[name] = numba.types.uint32
        k = Kernel(ge, eqn.op.name)
        key = (k.outer(keys[0]), k.outer(keys[1]))
        params = [kernel_scalar(k, a) for a in eqn.inputs]
        with over_elements(k, out) as (index, flat):
            write(k, result, index, sample(k, key, flat, params, out.aval.dtype))
        launch_over(k, out, f"{eqn.op.name}: {what}")
    return emit


def _uniform(k: Kernel, key: tuple[str, str], flat: str, params: list[str],
             dtype: np.dtype) -> str:
    a, b = params
    raw = k.fresh("raw")
    k.w.line(f"{raw} = {k.mod.use('bits_at', LIB)}({key[0]}, {key[1]}, u64({flat}))")
    if dtypes.is_float(dtype):  # nmant random bits, exact in the dtype; then [a, b) or a
        nmant = int(dtypes.finfo(dtype).nmant)
        r = k.fresh("r")
        u = f"f64({raw} >> u64({64 - nmant})) * {2.0 ** -nmant!r}"
        k.w.line(f"{r} = {cast(k.mod, f'{u} * (f64({b}) - f64({a})) + f64({a})', dtype)}")
        return f"{r} if {r} < {b} else {a}"
    mask = (1 << (8 * dtype.itemsize)) - 1  # (a's width, on its two's-complement bits)
    ua, ub, span = k.fresh("ua"), k.fresh("ub"), k.fresh("span")
    k.w.line(f"{ua}, {ub} = u64({a}), u64({b})")
    k.w.line(f"{span} = ({ub} - {ua}) & u64({mask}) if {b} > {a} else u64(1)")
    return f"{alias(dtype)}(({ua} + {raw} % {span}) & u64({mask}))"


def _normal(k: Kernel, key: tuple[str, str], flat: str, params: list[str],
            dtype: np.dtype) -> str:
    mu, sigma = params
    z = k.fresh("z")
    k.w.line(f"{z} = {k.mod.use('standard_normal', LIB)}({key[0]}, {key[1]}, u64({flat}))")
    return cast(k.mod, f"f64({mu}) + f64({sigma}) * {z}", dtype)


EMITTERS = {
    "threefry2x32": _threefry2x32, "threefry_random_bits": _threefry_random_bits,
    "rng_bit_generator": _rng_bit_generator,
    "rng_uniform": _stream(_uniform, "uniform in [a, b) from this run's key"),
    "rng_normal": _stream(_normal, "mu + sigma * z, z a Box-Muller normal"),
}
