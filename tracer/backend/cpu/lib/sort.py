"""Sort kernels for the cpu backend: a sorting network for many short rows, a
stable LSD radix sort for the others, both on total-order keys.

The default comparator (ascending, float total order) on one key needs no
comparisons: each value maps to an unsigned integer of its width whose order is
the total order (`to_key`: floats flip all bits when negative and the sign bit
otherwise, so -NaN < -Inf < ... < -0 < +0 < ... < +NaN; signed ints flip the sign
bit; bools and unsigned ints are their own keys). `from_key` maps a sorted key
back to its value, so sorting one array never moves an index.

Many rows of at most NETWORK_MAX keys go through a bitonic sorting network, a tile
of rows at once: row t is lane t of one 64-byte vector per position, so each
compare-exchange is one vector min and max. Other rows get a least-significant-
digit radix sort on bytes: one counting pass builds every byte's histogram, then
one stable scatter pass per byte, skipping bytes where every key has the same
digit; short rows use insertion sort instead.

Arrays arrive as (outer, n, inner) views: rows are the n elements at one (outer,
inner) position, sorted independently; the `*_parallel` kernels run them on threads
(`prange`), for large arrays in graphs that do not call BLAS (the emitter picks). Strided rows
(inner > 1) go in tiles of adjacent rows, so their loads and stores share cache
lines. Several keys are a lexsort: stable re-sorts of a permutation by each key,
least significant first (`refine_rows`); riders follow it (`permute_rows`). float16
arrays are their uint16 bits (the backend's storage type): the `half` flag reads
those bits as an IEEE half. Generated modules import these functions by name.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)
# the kernels without a parallel loop are called from compiled code only: no Python or
# C wrapper to generate (a tenth of a second of compile time each)
_SERIAL = dict(_OPTIONS, no_cpython_wrapper=True, no_cfunc_wrapper=True)
_INLINED = dict(_SERIAL, inline="always")  # small helpers typed inside their callers
PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save
SMALL = 32  # rows up to this length use insertion sort
TILE = 16  # adjacent rows (inner positions) loaded and stored together
_MAX_U64 = np.uint64(0xFFFFFFFFFFFFFFFF)  # +max padding key (truncated for uint32 lanes)


# ---------------------------------------------------------------- keys

def _width(x: types.Type) -> int:
    return 8 if isinstance(x, types.Boolean) else x.bitwidth


def _key_codegen(width: int, kind: str, inverse: bool):
    """LLVM code mapping a value of `kind` ("f" float bits, "i", "u", "b") to its
    unsigned total-order key, or (inverse) a key back to the value's bits."""
    def codegen(context, builder, signature, args):
        ity = ir.IntType(width)
        sign, ones = ir.Constant(ity, 1 << (width - 1)), ir.Constant(ity, (1 << width) - 1)
        v = args[0]
        if not inverse:
            v = builder.bitcast(v, ity) if v.type != ity and kind == "f" else v
            v = builder.zext(v, ity) if kind == "b" else v
        if kind == "i":
            v = builder.xor(v, sign)
        elif kind == "f":
            # forward: negative bits flip all, others the sign; inverse: keys with the sign
            # bit set were non-negative (flip the sign), others negative (flip all)
            test = builder.icmp_signed(">=" if inverse else "<", v, ir.Constant(ity, 0))
            v = builder.xor(v, builder.select(test, ones, sign))
        if inverse:
            target = context.get_value_type(signature.return_type)
            if kind == "b":
                return builder.icmp_unsigned("!=", v, ir.Constant(ity, 0))
            return builder.bitcast(v, target) if target != ity else v
        return v
    return codegen


def _kind(x: types.Type, half: bool) -> str:
    if isinstance(x, types.Boolean):
        return "b"
    if half or isinstance(x, types.Float):
        return "f"
    return "i" if x.signed else "u"


def _key_intrinsic(half: bool):
    def impl(typingctx, x):  # numba intrinsic protocol
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)):
            return None
        width = _width(x)
        return getattr(types, f"uint{width}")(x), _key_codegen(width, _kind(x, half), False)
    return intrinsic(impl)


def _value_intrinsic(half: bool):
    def impl(typingctx, key, like):
        if not isinstance(like, (types.Float, types.Integer, types.Boolean)):
            return None
        return like(key, like), _key_codegen(_width(like), _kind(like, half), True)
    return intrinsic(impl)


to_key, half_key = _key_intrinsic(False), _key_intrinsic(True)
from_key, half_from_key = _value_intrinsic(False), _value_intrinsic(True)


def key_buffer(shape, like):
    """An uninitialised array of keys for values like `like` (unsigned, same width)."""


@overload(key_buffer, jit_options=_SERIAL)
def _key_buffer(shape, like):
    dtype = getattr(np, f"uint{_width(like)}")
    return lambda shape, like: np.empty(shape, dtype)


# ---------------------------------------------------------------- one row

@njit(**_SERIAL)
def _insertion(keys, idx, with_idx):
    """Stable insertion sort of keys (and idx alongside), in place."""
    for j in range(1, keys.shape[0]):
        k = keys[j]
        p = idx[j] if with_idx else 0
        i = j - 1
        while i >= 0 and keys[i] > k:
            keys[i + 1] = keys[i]
            if with_idx:
                idx[i + 1] = idx[i]
            i -= 1
        keys[i + 1] = k
        if with_idx:
            idx[i + 1] = p


@njit(**_SERIAL)
def _scatter_pass(src, dst, src_idx, dst_idx, offsets, byte, with_idx):
    for j in range(src.shape[0]):
        k = src[j]
        d = _digit(k, byte)
        p = offsets[d]
        offsets[d] = p + 1
        dst[p] = k
        if with_idx:
            dst_idx[p] = src_idx[j]


@njit(**_INLINED)  # (typed in place: not compiled once per literal byte)
def _digit(key, byte):
    return np.intp((np.uint64(key) >> np.uint64(8 * byte)) & np.uint64(255))


@njit(**_SERIAL)
def _histograms(keys, counts):
    """counts[b, d] = how many keys have digit d in byte b. The bytes are spelled out
    (the width is a compile-time constant): a loop over them runs 6x slower."""
    counts[:] = 0
    nbytes = keys.itemsize
    for j in range(keys.shape[0]):
        k = keys[j]
        counts[0, _digit(k, 0)] += 1
        if nbytes > 1:
            counts[1, _digit(k, 1)] += 1
        if nbytes > 2:
            counts[2, _digit(k, 2)] += 1
            counts[3, _digit(k, 3)] += 1
        if nbytes > 4:
            counts[4, _digit(k, 4)] += 1
            counts[5, _digit(k, 5)] += 1
            counts[6, _digit(k, 6)] += 1
            counts[7, _digit(k, 7)] += 1


@njit(**_SERIAL)
def _radix(keys, idx, counts, spare, spare_idx, with_idx):
    """Sort keys (idx alongside) stably: returns the buffers holding the result, (keys,
    idx) or the spares after an odd number of passes."""
    n = keys.shape[0]
    if n <= SMALL:
        _insertion(keys, idx, with_idx)
        return keys, idx
    _histograms(keys, counts)
    src, dst, src_idx, dst_idx = keys, spare, idx, spare_idx
    offsets = np.empty(256, np.int64)
    for b in range(keys.itemsize):
        if counts[b, _digit(keys[0], b)] == n:
            continue  # every key has this digit: the pass would not move anything
        total = 0
        for d in range(256):
            offsets[d] = total
            total += counts[b, d]
        _scatter_pass(src, dst, src_idx, dst_idx, offsets, b, with_idx)
        src, dst, src_idx, dst_idx = dst, src, dst_idx, src_idx
    return src, src_idx


# ---------------------------------------------------------------- the sorting network

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


# ---------------------------------------------------------------- tiles of (outer, n, inner) views

@njit(**_SERIAL)
def _sort_row(x, out, perm, o, i, half, with_idx):
    """Row (o, i) on its own (used when inner == 1: the row is contiguous)."""
    n = x.shape[1]
    keys = key_buffer(n, x[o, 0, i])
    for j in range(n):
        keys[j] = half_key(x[o, j, i]) if half else to_key(x[o, j, i])
    idx = np.arange(n) if with_idx else np.empty(0, np.int64)
    counts = np.empty((keys.itemsize, 256), np.int64)
    keys, idx = _radix(keys, idx, counts, np.empty_like(keys), np.empty_like(idx), with_idx)
    like = out[o, 0, i]
    for j in range(n):
        out[o, j, i] = half_from_key(keys[j], like) if half else from_key(keys[j], like)
    if with_idx:
        for j in range(n):
            perm[o, j, i] = idx[j]


@njit(**_SERIAL)
def _sort_tile(x, out, perm, o, i0, rows, half, with_idx):
    """Rows (o, i0 .. i0 + rows - 1) of a strided view together: the cache lines each
    row's loads and stores touch stay in cache for the tile's other rows."""
    n = x.shape[1]
    keys = key_buffer((rows, n), x[o, 0, i0])
    for t in range(rows):
        row = keys[t]
        for j in range(n):
            row[j] = half_key(x[o, j, i0 + t]) if half else to_key(x[o, j, i0 + t])
    idx = np.empty((rows, n if with_idx else 0), np.int64)
    counts = np.empty((keys.itemsize, 256), np.int64)
    spare, spare_idx = np.empty_like(keys[0]), np.empty_like(idx[0])
    like = out[o, 0, i0]
    for t in range(rows):
        if with_idx:
            for j in range(n):  # (not idx[t] = np.arange(n): its shape check compiles slowly)
                idx[t, j] = j
        done, done_idx = _radix(keys[t], idx[t], counts, spare, spare_idx, with_idx)
        for j in range(n):
            k = done[j]
            out[o, j, i0 + t] = half_from_key(k, like) if half else from_key(k, like)
        if with_idx:
            for j in range(n):
                perm[o, j, i0 + t] = done_idx[j]


@njit(**_SERIAL)
def _sort_part(x, out, perm, r, half, with_idx, network):
    """Part r of sort_rows: one tile of rows for the network, else one row when
    inner == 1 or one tile of strided rows."""
    outer, n, inner = x.shape
    if network:
        padded, r0 = (n + BLOCK - 1) // BLOCK * BLOCK, r * _lanes(x, with_idx)
        if with_idx:
            packed = np.empty(padded * (LANE_BYTES // 8), np.uint64)
            _network_tile(x, out, perm, r0, half, True, packed)
        else:
            _network_tile(x, out, perm, r0, half, False, _lane_buffer(padded, x[0, 0, 0]))
        return
    if inner == 1:
        _sort_row(x, out, perm, r, 0, half, with_idx)
        return
    tiles = (inner + TILE - 1) // TILE
    o, i0 = r // tiles, (r % tiles) * TILE
    _sort_tile(x, out, perm, o, i0, min(TILE, inner - i0), half, with_idx)


@njit(**_SERIAL)
def _parts(x, with_idx):
    """(whether the rows go through the network, the number of parts of sort_rows)."""
    outer, n, inner = x.shape
    network = _use_network(x, with_idx)
    if network:
        return network, (outer * inner + _lanes(x, with_idx) - 1) // _lanes(x, with_idx)
    return network, outer * ((inner + TILE - 1) // TILE if inner > 1 else 1)


@njit(**_SERIAL)
def canonical_nans(x, out):
    """out = x with every NaN the default +NaN: the keys of a sort in NumPy's order
    (`nan_keys`: NaNs last) for the kernels here, which order NaNs by their bits."""
    outer, n, inner = x.shape
    for o in range(outer):
        for j in range(n):
            for i in range(inner):
                v = x[o, j, i]
                out[o, j, i] = np.nan if v != v else v


@njit(**_SERIAL)
def sort_rows(x, out, perm, half, with_idx):
    """out = x sorted along axis 1 of its (outer, n, inner) view with the default
    comparator; with_idx: perm[o, j, i] = where out[o, j, i] came from. Many short
    rows go through the sorting network, the others through the radix sort."""
    if x.shape[1] == 0:
        return
    network, parts = _parts(x, with_idx)
    for r in range(parts):
        _sort_part(x, out, perm, r, half, with_idx, network)


@njit(**_SERIAL)
def sort_vector(x, out, perm, half, with_idx):
    """`sort_rows` of a (1, n, 1) view (a rank-1 operand): its one row on its own,
    without compiling the network and the strided tiles it never runs."""
    if x.shape[1] > 0:
        _sort_row(x, out, perm, 0, 0, half, with_idx)


@njit(parallel=True, **_OPTIONS)
def sort_rows_parallel(x, out, perm, half, with_idx):
    """`sort_rows` with its rows (or tiles) on threads: for arrays of at least
    PARALLEL_MIN_ELEMENTS (the emitter picks it; numba takes seconds to compile a
    parallel loop, so small arrays never do)."""
    if x.shape[1] == 0:
        return
    network, parts = _parts(x, with_idx)
    for r in prange(parts):  # (prange counts in uint64: one specialization, int64)
        _sort_part(x, out, perm, np.int64(r), half, with_idx, network)


@njit(**_SERIAL)
def _refine_row(x, perm, o, i, half, first):
    n = x.shape[1]
    keys = key_buffer(n, x[o, 0, i])
    idx = np.arange(n)
    if not first:
        for j in range(n):
            idx[j] = perm[o, j, i]
    for j in range(n):
        keys[j] = half_key(x[o, idx[j], i]) if half else to_key(x[o, idx[j], i])
    counts = np.empty((keys.itemsize, 256), np.int64)
    keys, idx = _radix(keys, idx, counts, np.empty_like(keys), np.empty_like(idx), True)
    for j in range(n):
        perm[o, j, i] = idx[j]


@njit(**_SERIAL)
def refine_rows(x, perm, half, first):
    """One step of a least-significant-key-first lexsort: each row's positions
    perm[o, :, i] stably re-sorted by x at those positions (first: perm starts as
    0, 1, ..., n-1 and is not read)."""
    outer, n, inner = x.shape
    if n == 0:
        return
    for r in range(outer * inner):
        _refine_row(x, perm, r // inner, r % inner, half, first)


@njit(parallel=True, **_OPTIONS)
def refine_rows_parallel(x, perm, half, first):
    """`refine_rows` with its rows on threads (as `sort_rows_parallel`)."""
    outer, n, inner = x.shape
    if n == 0:
        return
    for r in prange(outer * inner):
        _refine_row(x, perm, np.int64(r) // inner, np.int64(r) % inner, half, first)


@njit(**_SERIAL)
def _permute_row(x, perm, out, o):
    for j in range(x.shape[1]):
        for i in range(x.shape[2]):
            out[o, j, i] = x[o, perm[o, j, i], i]


@njit(**_SERIAL)
def permute_rows(x, perm, out):
    """out[o, j, i] = x[o, perm[o, j, i], i] (perm holds positions in [0, n))."""
    for o in range(x.shape[0]):
        _permute_row(x, perm, out, o)


@njit(parallel=True, **_OPTIONS)
def permute_rows_parallel(x, perm, out):
    """`permute_rows` with its outer positions on threads (as `sort_rows_parallel`)."""
    for o in prange(x.shape[0]):
        _permute_row(x, perm, out, np.int64(o))
