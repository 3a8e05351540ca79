"""Sort kernels for the cpu backend: a stable LSD radix sort on total-order keys.

The default comparator (ascending, float total order) on one key needs no
comparisons: each value maps to an unsigned integer of its width whose order is
the total order (`to_key`: floats flip all bits when negative and the sign bit
otherwise, so -NaN < -Inf < ... < -0 < +0 < ... < +NaN; signed ints flip the sign
bit; bools and unsigned ints are their own keys). Those keys are sorted with a
least-significant-digit radix sort on bytes: one counting pass builds every byte's
histogram, then one stable scatter pass per byte, skipping bytes where every key
has the same digit. Short rows use insertion sort instead. `from_key` maps a
sorted key back to its value, so sorting one array never moves an index.

Arrays arrive as (outer, n, inner) views: rows are the n elements at one (outer,
inner) position, sorted independently, in parallel (`prange`) when the caller allows
it (`parallel`: false in graphs that call BLAS) and the array is large. Strided rows
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
from numba.extending import intrinsic, overload

_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)
PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save
SMALL = 32  # rows up to this length use insertion sort
TILE = 16  # adjacent rows (inner positions) loaded and stored together


# ---------------------------------------------------------------- keys

def _width(x: types.Type) -> int:
    return 8 if isinstance(x, types.Boolean) else x.bitwidth


def _key_codegen(width: int, kind: str, inverse: bool):  # noqa: ANN202
    """LLVM code mapping a value of `kind` ("f" float bits, "i", "u", "b") to its
    unsigned total-order key, or (inverse) a key back to the value's bits."""
    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202
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


def _key_intrinsic(half: bool):  # noqa: ANN202
    def impl(typingctx, x):  # noqa: ANN001, ANN202 - numba intrinsic protocol
        if not isinstance(x, (types.Float, types.Integer, types.Boolean)):
            return None
        width = _width(x)
        return getattr(types, f"uint{width}")(x), _key_codegen(width, _kind(x, half), False)
    return intrinsic(impl)


def _value_intrinsic(half: bool):  # noqa: ANN202
    def impl(typingctx, key, like):  # noqa: ANN001, ANN202
        if not isinstance(like, (types.Float, types.Integer, types.Boolean)):
            return None
        return like(key, like), _key_codegen(_width(like), _kind(like, half), True)
    return intrinsic(impl)


to_key, half_key = _key_intrinsic(False), _key_intrinsic(True)
from_key, half_from_key = _value_intrinsic(False), _value_intrinsic(True)


def key_buffer(shape, like):  # noqa: ANN001, ANN201
    """An uninitialised array of keys for values like `like` (unsigned, same width)."""


@overload(key_buffer)
def _key_buffer(shape, like):  # noqa: ANN001, ANN202
    dtype = getattr(np, f"uint{_width(like)}")
    return lambda shape, like: np.empty(shape, dtype)


# ---------------------------------------------------------------- one row

@njit(**_OPTIONS)
def _insertion(keys, idx, with_idx):  # noqa: ANN001, ANN202
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


@njit(**_OPTIONS)
def _scatter_pass(src, dst, src_idx, dst_idx, offsets, byte, with_idx):  # noqa: ANN001, ANN202
    for j in range(src.shape[0]):
        k = src[j]
        d = _digit(k, byte)
        p = offsets[d]
        offsets[d] = p + 1
        dst[p] = k
        if with_idx:
            dst_idx[p] = src_idx[j]


@njit(**_OPTIONS)
def _digit(key, byte):  # noqa: ANN001, ANN202
    return np.intp((np.uint64(key) >> np.uint64(8 * byte)) & np.uint64(255))


@njit(**_OPTIONS)
def _histograms(keys, counts):  # noqa: ANN001, ANN202
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


@njit(**_OPTIONS)
def _radix(keys, idx, counts, spare, spare_idx, with_idx):  # noqa: ANN001, ANN202
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


# ---------------------------------------------------------------- tiles of (outer, n, inner) views

@njit(**_OPTIONS)
def _sort_row(x, out, perm, o, i, half, with_idx):  # noqa: ANN001, ANN202
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


@njit(**_OPTIONS)
def _sort_tile(x, out, perm, o, i0, rows, half, with_idx):  # noqa: ANN001, ANN202
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
            idx[t] = np.arange(n)
        done, done_idx = _radix(keys[t], idx[t], counts, spare, spare_idx, with_idx)
        for j in range(n):
            k = done[j]
            out[o, j, i0 + t] = half_from_key(k, like) if half else from_key(k, like)
        if with_idx:
            for j in range(n):
                perm[o, j, i0 + t] = done_idx[j]


@njit(**_OPTIONS)
def _sort_part(x, out, perm, r, half, with_idx):  # noqa: ANN001, ANN202
    """Part r of sort_rows: one row when inner == 1, else one tile of rows."""
    outer, n, inner = x.shape
    if inner == 1:
        _sort_row(x, out, perm, r, 0, half, with_idx)
        return
    tiles = (inner + TILE - 1) // TILE
    o, i0 = r // tiles, (r % tiles) * TILE
    _sort_tile(x, out, perm, o, i0, min(TILE, inner - i0), half, with_idx)


@njit(parallel=True, **_OPTIONS)
def sort_rows(x, out, perm, half, with_idx, parallel):  # noqa: ANN001, ANN201
    """out = x sorted along axis 1 of its (outer, n, inner) view with the default
    comparator; with_idx: perm[o, j, i] = where out[o, j, i] came from. Rows (or
    tiles) run in parallel when `parallel` and the array is large enough."""
    outer, n, inner = x.shape
    if n == 0:
        return
    parts = outer * ((inner + TILE - 1) // TILE if inner > 1 else 1)
    if parallel and parts > 1 and x.size >= PARALLEL_MIN_ELEMENTS:
        for r in prange(parts):
            _sort_part(x, out, perm, r, half, with_idx)
    else:
        for r in range(parts):
            _sort_part(x, out, perm, r, half, with_idx)


@njit(**_OPTIONS)
def _refine_row(x, perm, o, i, half, first):  # noqa: ANN001, ANN202
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


@njit(parallel=True, **_OPTIONS)
def refine_rows(x, perm, half, first, parallel):  # noqa: ANN001, ANN201
    """One step of a least-significant-key-first lexsort: each row's positions
    perm[o, :, i] stably re-sorted by x at those positions (first: perm starts as
    0, 1, ..., n-1 and is not read)."""
    outer, n, inner = x.shape
    if n == 0:
        return
    if parallel and outer * inner > 1 and x.size >= PARALLEL_MIN_ELEMENTS:
        for r in prange(outer * inner):
            _refine_row(x, perm, r // inner, r % inner, half, first)
    else:
        for r in range(outer * inner):
            _refine_row(x, perm, r // inner, r % inner, half, first)


@njit(**_OPTIONS)
def _permute_row(x, perm, out, o):  # noqa: ANN001, ANN202
    for j in range(x.shape[1]):
        for i in range(x.shape[2]):
            out[o, j, i] = x[o, perm[o, j, i], i]


@njit(parallel=True, **_OPTIONS)
def permute_rows(x, perm, out, parallel):  # noqa: ANN001, ANN201
    """out[o, j, i] = x[o, perm[o, j, i], i] (perm holds positions in [0, n))."""
    if parallel and x.shape[0] > 1 and x.size >= PARALLEL_MIN_ELEMENTS:
        for o in prange(x.shape[0]):
            _permute_row(x, perm, out, o)
    else:
        for o in range(x.shape[0]):
            _permute_row(x, perm, out, o)
