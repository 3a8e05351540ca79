"""Sort kernels for the cpu backend: a sorting network for many short rows, a
stable LSD radix sort for the others, both on total-order keys.

The keys (`to_key` / `from_key`, one unsigned integer per value whose order is the
total order) are in `sort_keys`, the sorting network that many rows of at most
NETWORK_MAX keys go through, a tile of rows at once, in `sort_network`. Other rows
get a least-significant-digit radix sort on bytes here: one counting pass builds
every byte's histogram, then one stable scatter pass per byte, skipping bytes where
every key has the same digit; short rows use insertion sort instead.

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
from numba import njit, prange

from .sort_keys import _INLINED, _OPTIONS, _SERIAL, from_key, half_from_key, half_key
from .sort_keys import key_buffer, to_key
from .sort_network import BLOCK, LANE_BYTES, _lane_buffer, _lanes, _network_tile, _use_network

PARALLEL_MIN_ELEMENTS = 1 << 15  # below this, threads cost more than they save
SMALL = 32  # rows up to this length use insertion sort
TILE = 16  # adjacent rows (inner positions) loaded and stored together


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
