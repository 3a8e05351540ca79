"""Key sorts of 32- and 64-bit values (and 16-bit ones where NumPy sorts those with
SIMD: `ITEMSIZES`) by NumPy's own sort, called from compiled code.

NumPy 2 sorts these dtypes with SIMD quicksorts (x86-simd-sort on AVX-512, Highway's
vqsort or x86-simd-sort on AVX2), two to five times faster than the radix sort of
`cpu.lib.sort` on one thread. The kernels here copy each row of the operand into
the result and sort it there, while it is in the core's cache, with NumPy's C sort
function itself (`sort_numpy_abi.simd_sort`: no Python, no GIL, so the `_parallel`
kernels' threads sort their rows at once); strided rows (inner > 1) go through a
contiguous tile of rows (`_sort_tile`). One long row on several threads is sorted in
parts and merged (`sort_merge`). Then the kernels restore what NumPy does not keep of
the total order `ops.sort` asks for:

- NumPy puts every NaN last and writes them back as the default quiet NaN; under the
  total order NaNs with the sign bit set come first and NaNs order by their bits. A
  row whose sorted copy ends in NaN gets the operand's NaNs, sorted by key, at both
  ends (`_place_nans`).
- NumPy treats -0.0 and +0.0 as equal (its vector min/max may even swap their signs);
  the total order puts -0.0 first. A row with zeros gets as many -0.0 as the operand
  row has, then +0.0 (`_signed_zeros`).

Both repairs read the operand, and only rows whose copy met a zero or a NaN get them;
integers need no repair, and contiguous integer rows whose values span few integers
are counted instead (`sort_counting`). With `nan_keys` (a sort of NumPy-order keys,
`numba.lower.fold_nan_keys_into_sorts`: every NaN counts as +NaN) the NaN tail is
NumPy's order already and only gets the default +NaN written over it: `tnp.sort` then
costs what `np.sort` does, a copy and NumPy's sort. Arrays arrive as (outer, n,
inner) views, rows along axis 1. Not for compiled C libraries (`tracer.aot`): those
have no NumPy to call.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, types
from numba.extending import overload
from numpy._core import _multiarray_umath

from .sort import from_key, key_buffer, to_key
from .sort_counting import copy_and_count
from .sort_merge import sort_vector_parallel
from .pool_threads import pool_thread_count
from .sort_numpy_abi import DTYPES, simd_sort

_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)
_SERIAL = dict(_OPTIONS, no_cpython_wrapper=True, no_cfunc_wrapper=True)


def _simd_itemsizes() -> tuple[int, ...]:
    """The key widths whose NumPy sort beats `cpu.lib.sort`'s kernels here: 32 and 64
    bits, and 16 bits where NumPy was built with and runs x86-simd-sort's AVX-512 ICL
    or SPR kernels (2-3x faster than the sorting network on rows of 32 .. 4096 int16
    keys; elsewhere its 16-bit sort may be a scalar introsort, as its sort of bytes
    always is: the radix sort is 20x faster on 10^6 int8 keys)."""
    # (NumPy's private dispatch tables: read with defaults, so that a NumPy without them
    # only keeps 16-bit keys on tracer's kernels)
    dispatch = getattr(_multiarray_umath, "__cpu_dispatch__", ())
    features = getattr(_multiarray_umath, "__cpu_features__", {})
    icl = any(t in dispatch and features.get(t) for t in ("AVX512_ICL", "AVX512_SPR"))
    if not DTYPES:  # (a NumPy whose C ABI is not NumPy 2's: its sort is not reachable)
        return ()
    return (2, 4, 8) if icl else (4, 8)


ITEMSIZES = _simd_itemsizes()
MIN_LENGTH = 128  # shorter rows: `cpu.lib.sort`'s sorting network is faster (the emitter picks)
# one row of at least this many bytes is sorted in parts on numba's threads and merged
# (`numpy_sort_vector_parallel`; smaller, the merge and the threads' start cost more
# than the halved sort saves). 2 threads against one, back-to-back calls (the pool
# spinning, `cpu.threads`): float32 0.99x at 390 KiB, 0.93x at 590, 0.78x at 1 MiB;
# float64 0.83x at 512 KiB, 0.65x at 2 MiB. (A pool that fell asleep adds ~90 us.)
VECTOR_PARALLEL_MIN_BYTES = 1 << 19
CHUNK_BYTES = 1 << 19  # integer rows copied and counted at once: well inside a core's L2
# strided rows gathered at once: 4 cache lines of each position j (1 thread, 1000 x 1000
# float32 along axis 0: 2.55 ms, 2.6-2.7 at 64 or 128 bytes, 2.8 at 512, NumPy 3.5)
TILE_BYTES = 256


def _floats(x):
    """Whether x's elements are floats (a compile-time constant)."""


@overload(_floats, jit_options=_SERIAL)
def _floats_impl(x):
    result = isinstance(x.dtype, types.Float)
    return lambda x: result


# ---------------------------------------------------------------- the total-order repairs

@njit(**_SERIAL)
def _negative(v) -> bool:
    return math.copysign(1.0, v) < 0


@njit(**_SERIAL)
def _first(row, end, above):
    """The first position of `row` before `end` (sorted: ascending) whose value is
    >= 0, or > 0 when `above`, or `end`."""
    lo, hi = 0, end
    while lo < hi:
        mid = (lo + hi) // 2
        v = row[mid]
        if v > 0 or (v == 0 and not above):
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(**_SERIAL)
def _nan_start(row):
    """Where `row`'s NaN tail starts (NumPy sorts NaNs last)."""
    lo, hi = 0, row.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        v = row[mid]
        if v != v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(**_SERIAL)
def _signed_zeros(x, out, o, i, lo, hi):
    """out[o, lo:hi, i] are the row's zeros: as many -0.0 as x's row has, then +0.0."""
    negative = 0
    for j in range(x.shape[1]):
        v = x[o, j, i]
        if v == 0 and _negative(v):
            negative += 1
    zero = abs(out[o, lo, i])
    for j in range(lo, hi):
        out[o, j, i] = -zero if j < lo + negative else zero


@njit(**_SERIAL)
def _place_nans(x, out, o, i, start):
    """Row (o, i) is sorted up to `start`, NaNs after: x's NaNs by key instead, the
    negative ones (keys below every number's) moved in front of the numbers."""
    n = x.shape[1]
    keys = key_buffer(n - start, x[o, 0, i])
    k = 0
    for j in range(n):
        v = x[o, j, i]
        if v != v:
            keys[k] = to_key(v)
            k += 1
    keys.sort()
    like = out[o, 0, i]
    negative = 0
    while negative < keys.shape[0] and _negative(from_key(keys[negative], like)):
        negative += 1
    for j in range(start - 1, -1, -1):
        out[o, j + negative, i] = out[o, j, i]
    for j in range(keys.shape[0]):
        at = j if j < negative else start + j
        out[o, at, i] = from_key(keys[j], like)


def _total_order_row(x, out, o, i, nan_keys):
    """Row (o, i) of out, sorted by NumPy, put in the total order (see the module);
    integer rows need no repair."""


@overload(_total_order_row, jit_options=_SERIAL)
def _total_order_row_impl(x, out, o, i, nan_keys):
    # (an overload, so that integer sorts do not compile the repairs, as both branches
    # of an `if` on `_floats` would: with the counting sort added, a first int64 sort
    # compiles in 2.9 s of CPU instead of 3.5. The float body is the implementation
    # itself: a wrapper calling it, jitted, cost float sorts 0.8 s more)
    if isinstance(x.dtype, types.Float):
        return _float_row_in_total_order
    return lambda x, out, o, i, nan_keys: None


def _float_row_in_total_order(x, out, o, i, nan_keys):
    row = out[o, :, i]
    n = row.shape[0]
    end = _nan_start(row) if row[n - 1] != row[n - 1] else n
    lo = _first(row, end, False)
    hi = _first(row, end, True)
    if hi > lo:
        _signed_zeros(x, out, o, i, lo, hi)
    if end < n and nan_keys:
        for j in range(end, n):
            out[o, j, i] = np.nan
    elif end < n:
        _place_nans(x, out, o, i, end)


# ---------------------------------------------------------------- kernels

@njit(**_SERIAL)
def _repair_if(x, out, o, i, nan_keys, special):
    if special:
        _total_order_row(x, out, o, i, nan_keys)


@njit(**_SERIAL)
def _sort_float_row(x, out, o, nan_keys):
    """Contiguous float row o: copied (noting a zero or a NaN: only those rows can
    need a repair; the copy streams memory, the test rides along), sorted while it is
    in cache, repaired."""
    special = False
    for j in range(x.shape[1]):
        v = x[o, j, 0]
        out[o, j, 0] = v
        special |= not abs(v) > 0
    simd_sort(out[o, :, 0])
    _repair_if(x, out, o, 0, nan_keys, special)


def _sort_int_rows(x, out, o0, o1):
    """Contiguous integer rows o0 .. o1 - 1: copied, then sorted by counting when all
    of them span few values (`sort_counting`), else by NumPy, row by row."""


@overload(_sort_int_rows, jit_options=_SERIAL)
def _sort_int_rows_impl(x, out, o0, o1):
    if isinstance(x.dtype, types.Float):
        # (never called for floats: an overload, so that float sorts do not compile
        # the counting sort, as both branches of an `if` on `_floats` would)
        return lambda x, out, o0, o1: None

    def impl(x, out, o0, o1):
        if not copy_and_count(x, out, o0, o1):
            for o in range(o0, o1):
                simd_sort(out[o, :, 0])
    return impl


def _copied_and_counted(x, out) -> bool:
    """out = x for one integer row ((1, n, 1) views), then sorted by counting if it
    spans few values: returns whether it counted it."""


@overload(_copied_and_counted, jit_options=_SERIAL)
def _copied_and_counted_impl(x, out):
    if isinstance(x.dtype, types.Float):
        return lambda x, out: False  # (never called for floats; see _sort_int_rows)
    return lambda x, out: copy_and_count(x, out, 0, 1)


@njit(**_SERIAL)
def _int_chunk(x) -> int:
    """Integer rows counted (or sorted) at once: about CHUNK_BYTES."""
    return max(1, CHUNK_BYTES // max(1, x.shape[1] * x.itemsize))


@njit(**_SERIAL)
def _tile_width(x) -> int:
    """Strided rows gathered at once: TILE_BYTES of each position."""
    return max(1, TILE_BYTES // x.itemsize)


@njit(**_SERIAL)
def _holds_zero_or_nan(row) -> bool:
    """Whether the sorted contiguous row (NumPy's order: NaNs last) holds a zero or a
    NaN: only such rows can need a repair."""
    n = row.shape[0]
    if n == 0 or row[n - 1] != row[n - 1]:
        return n > 0
    lo = _first(row, n, False)
    return lo < n and row[lo] == 0


@njit(**_SERIAL)
def _sort_tile(x, out, o, i0, i1, nan_keys):
    """Strided rows (o, i0 .. i1 - 1): gathered into contiguous rows (each position j
    a few whole cache lines of x for all of them), sorted, scattered back; those
    holding a zero or a NaN repaired."""
    n, width = x.shape[1], i1 - i0
    rows = np.empty((width, n), x.dtype)
    for j in range(n):
        for t in range(width):
            rows[t, j] = x[o, j, i0 + t]
    special = np.zeros(width, np.bool_)
    for t in range(width):
        simd_sort(rows[t])
        special[t] = _floats(x) and _holds_zero_or_nan(rows[t])
    for j in range(n):
        for t in range(width):
            out[o, j, i0 + t] = rows[t, j]
    for t in range(width):
        _repair_if(x, out, o, i0 + t, nan_keys, special[t])


@njit(**_SERIAL)
def _units(x) -> int:
    """The units of work of a sort of x's rows: tiles of strided rows, contiguous float
    rows one by one, integer rows in chunks (`_sort_unit`)."""
    outer, n, inner = x.shape
    if inner > 1:
        return outer * ((inner + _tile_width(x) - 1) // _tile_width(x))
    if _floats(x):
        return outer
    return (outer + _int_chunk(x) - 1) // _int_chunk(x)


@njit(**_SERIAL)
def _sort_unit(x, out, k, nan_keys):
    """Unit k of `_units(x)`: copied, sorted and repaired."""
    outer, n, inner = x.shape
    if inner > 1:
        tile = _tile_width(x)
        tiles = (inner + tile - 1) // tile
        o, i0 = k // tiles, k % tiles * tile
        _sort_tile(x, out, o, i0, min(i0 + tile, inner), nan_keys)
    elif _floats(x):
        _sort_float_row(x, out, k, nan_keys)
    else:
        step = _int_chunk(x)
        _sort_int_rows(x, out, k * step, min(k * step + step, outer))


@njit(**_SERIAL)
def numpy_sort_rows(x, out, nan_keys):
    """out = x sorted along axis 1 of its (outer, n, inner) view in the total order,
    by NumPy's sort; `nan_keys`: every NaN of x counts (and is written) as +NaN."""
    if x.shape[1] > 0:
        for k in range(_units(x)):
            _sort_unit(x, out, k, nan_keys)


@njit(parallel=True, **_OPTIONS)
def numpy_sort_rows_parallel(x, out, nan_keys):
    """`numpy_sort_rows` with the rows (contiguous float rows one by one, integer
    ones in chunks, strided ones in tiles) on numba's threads."""
    if x.shape[1] > 0:
        for k in prange(_units(x)):
            _sort_unit(x, out, np.int64(k), nan_keys)


@njit(**_OPTIONS)  # (its threads are sort_vector_parallel's)
def numpy_sort_vector_parallel(x, out, nan_keys):
    """`numpy_sort_rows` of one long row ((1, n, 1) views): on more than one thread,
    sorted in one part per thread and merged (`sort_merge`), then repaired. Integer
    rows of few values are counted first, as on one thread."""
    n, threads = x.shape[1], pool_thread_count()
    if n == 0:
        return
    serial = n * x.itemsize < VECTOR_PARALLEL_MIN_BYTES or threads == 1
    row = out.reshape(n)
    if _floats(x) and serial:
        _sort_float_row(x, out, 0, nan_keys)
    elif _floats(x):
        special = sort_vector_parallel(x.reshape(n), row, threads)
        _repair_if(x, out, 0, 0, nan_keys, special)
    elif not _copied_and_counted(x, out):
        if serial:
            simd_sort(row)
        else:
            sort_vector_parallel(row, row, threads)
