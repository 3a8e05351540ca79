"""The bitonic sorting network of the cpu backend's sort (`cpu.lib.sort` calls it).

Many rows of at most NETWORK_MAX keys go through a bitonic sorting network, a tile
of rows at once: row t is lane t of one 64-byte vector per position, so each
compare-exchange is one vector min and max. The keys are `sort_keys`' total-order
keys; with an index alongside, a lane packs the key with its position.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .sort_keys import _SERIAL, _width, from_key, half_from_key, half_key, to_key

_MAX_U64 = np.uint64(0xFFFFFFFFFFFFFFFF)  # +max padding key (truncated for uint32 lanes)
LANE_BYTES = 64  # one AVX-512 register (two AVX2 ones): the network's lanes
NETWORK_MAX = 4096  # longer rows: the radix sort (the network does n log2(n)^2 work)
NETWORK_MIN_ROWS = 4  # with fewer rows most lanes would idle
BLOCK = 16  # positions whose exchanges run in registers (16 vectors)


def _exchanges(pairs: list[tuple[int, int]], offsets):
    """LLVM code loading the vectors of LANE_BYTES at element `offsets(builder, args,
    lanes)` of the array args[0], running the compare-exchanges `pairs` on them in
    registers (unsigned min to the first, max to the second) and storing them back:
    numba's own indexing, with its negative-index checks, does not vectorize."""
    def codegen(context, builder, signature, args):
        dtype = signature.args[0].dtype
        width = dtype.bitwidth // 8
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        vector = ir.VectorType(context.get_value_type(dtype), LANE_BYTES // width)
        at = [builder.bitcast(cgutils.gep(builder, data, k), vector.as_pointer())
              for k in offsets(builder, args, LANE_BYTES // width)]
        v = [builder.load(p, align=width) for p in at]
        for i, j in pairs:
            less = builder.icmp_unsigned("<", v[i], v[j])
            v[i], v[j] = builder.select(less, v[i], v[j]), builder.select(less, v[j], v[i])
        for p, value in zip(at, v):
            builder.store(value, p, align=width)
        return context.get_dummy_value()
    return codegen


@intrinsic
def _exchange(typingctx, buf, i, j):
    """One compare-exchange of the network in every lane: positions at elements i, j."""
    return types.void(buf, i, j), _exchanges([(0, 1)], lambda builder, args, lanes: args[1:])


def _block_pairs(sizes: tuple[int, ...]) -> list[tuple[int, int]]:
    """The exchanges of the merges of `sizes` within one block (size 0: only the
    half-cleaners of steps BLOCK/2 .. 1, the end of every longer merge)."""
    pairs = []
    for size in sizes:
        for b in range(0, BLOCK, size or BLOCK):
            pairs += [(b + t, b + size - 1 - t) for t in range(size // 2)]
        step = size // 4 if size else BLOCK // 2
        while step:
            pairs += [(i, i + step) for i in range(BLOCK) if not i & step]
            step //= 2
    return pairs


def _block_intrinsic(pairs: list[tuple[int, int]]):
    """An intrinsic running `pairs` on the BLOCK positions from element `start`."""
    def offsets(builder, args, lanes):
        return [builder.add(args[1], ir.Constant(args[1].type, k * lanes)) for k in range(BLOCK)]

    def impl(typingctx, buf, start):
        return types.void(buf, start), _exchanges(pairs, offsets)
    return intrinsic(impl)


_sort_block = _block_intrinsic(_block_pairs((2, 4, 8, 16)))
_clean_block = _block_intrinsic(_block_pairs((0,)))


@njit(**_SERIAL)
def _network(buf, n):
    """Sort every column of `buf` seen as (n, lanes), n a multiple of BLOCK: Batcher's
    bitonic sort in the form whose exchanges all put the smaller key first (each merge
    starts by comparing mirrored positions), so exchanges with virtual positions >= n
    (+max keys) change nothing and are skipped: n need not be a power of 2. Work that
    stays inside a block of BLOCK positions runs in registers."""
    lanes = LANE_BYTES // buf.itemsize
    for b in range(0, n, BLOCK):
        _sort_block(buf, b * lanes)
    size = 2 * BLOCK
    while size < 2 * n:
        _merge_steps(buf, n, size)
        for b in range(0, n, BLOCK):
            _clean_block(buf, b * lanes)
        size *= 2


@njit(**_SERIAL)
def _merge_steps(buf, n, size):
    """The merge of sorted runs of size/2 into runs of `size`, down to the step BLOCK:
    the mirrored exchanges, then the half-cleaners (i against i + step, i // step even)."""
    lanes = LANE_BYTES // buf.itemsize
    for b in range(0, n, size):
        for t in range(max(0, b + size - n), size // 2):
            _exchange(buf, (b + t) * lanes, (b + size - 1 - t) * lanes)
    step = size // 4
    while step >= BLOCK:
        for b in range(0, n - step, 2 * step):
            for i in range(b, min(b + step, n - step)):
                _exchange(buf, i * lanes, (i + step) * lanes)
        step //= 2


@njit(**_SERIAL)
def _lanes(x, with_idx):
    """Rows per network tile: keys up to 32 bits go in uint32 lanes; 64-bit keys, and
    keys packed with their position, in uint64 lanes."""
    return LANE_BYTES // (8 if with_idx or x.itemsize > 4 else 4)


@njit(**_SERIAL)
def _use_network(x, with_idx):
    outer, n, inner = x.shape
    return outer * inner >= NETWORK_MIN_ROWS and 2 <= n <= NETWORK_MAX and \
        not (with_idx and x.itemsize > 4)


def _lane_buffer(n, like):
    """An uninitialised (n * lanes) buffer of uint32 keys (uint64 for 64-bit values)."""


@overload(_lane_buffer, jit_options=_SERIAL)
def _lane_buffer_impl(n, like):
    dtype = np.uint64 if _width(like) > 32 else np.uint32
    lanes = LANE_BYTES // np.dtype(dtype).itemsize
    return lambda n, like: np.empty(n * lanes, dtype)


def _narrow(key, like):
    """A widened key back at the width of values like `like` (for from_key)."""


@overload(_narrow, jit_options=_SERIAL)
def _narrow_impl(key, like):
    narrow = getattr(np, f"uint{_width(like)}")
    return lambda key, like: narrow(key)


@njit(**_SERIAL)
def _network_tile(x, out, perm, r0, half, with_idx, buf):
    """Rows r0 .. r0 + lanes - 1 (row r is (r // inner, r % inner)) sorted together:
    their keys are the lanes of `buf` seen as (positions, lanes), +max keys from
    position n on and in rows past the end. with_idx (uint64 lanes): a lane holds
    (key << 32) | position, so ties keep their order (the stable order) and the
    position rides along into perm."""
    outer, n, inner = x.shape
    lanes = LANE_BYTES // buf.itemsize
    buf[n * lanes:] = _MAX_U64
    m = min(lanes, outer * inner - r0)
    for t in range(lanes):
        o, i = (r0 + t) // inner, (r0 + t) % inner
        for j in range(n):
            if t < m:
                k = half_key(x[o, j, i]) if half else to_key(x[o, j, i])
                buf[j * lanes + t] = (np.uint64(k) << np.uint64(32)) | np.uint64(j) \
                    if with_idx else k
            else:
                buf[j * lanes + t] = _MAX_U64
    _network(buf, buf.size // lanes)
    like = out[0, 0, 0]
    for t in range(m):
        o, i = (r0 + t) // inner, (r0 + t) % inner
        for j in range(n):
            v = buf[j * lanes + t]
            k = _narrow(v >> np.uint64(32) if with_idx else v, like)
            out[o, j, i] = half_from_key(k, like) if half else from_key(k, like)
            if with_idx:
                perm[o, j, i] = np.int64(v & np.uint64(0xFFFFFFFF))
