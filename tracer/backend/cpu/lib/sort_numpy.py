"""Key sorts of 32- and 64-bit values (and 16-bit ones where NumPy sorts those with
SIMD: `ITEMSIZES`) by NumPy's own sort, called from compiled code.

NumPy 2 sorts these dtypes with SIMD quicksorts (x86-simd-sort on AVX-512, Highway's
vqsort or x86-simd-sort on AVX2), two to five times faster than the radix sort of
`cpu.lib.sort` on one thread. The kernels here copy the operand into the result and
sort it there with `ndarray.sort` inside `numba.objmode` (NumPy releases the GIL
while it sorts, so the `_parallel` kernel's threads each sort their block of rows at
once), then restore what NumPy does not keep of the total order `ops.sort` asks for:

- NumPy puts every NaN last and writes them back as the default quiet NaN; under the
  total order NaNs with the sign bit set come first and NaNs order by their bits. A
  row whose sorted copy ends in NaN gets the operand's NaNs, sorted by key, at both
  ends (`_place_nans`).
- NumPy treats -0.0 and +0.0 as equal (its vector min/max may even swap their signs);
  the total order puts -0.0 first. A row with zeros gets as many -0.0 as the operand
  row has, then +0.0 (`_signed_zeros`).

Both repairs read the operand; integers need no repair, and contiguous integer rows
whose values span few integers are counted instead (`sort_counting`). With `nan_keys`
(a sort of NumPy-order keys, `numba.lower.fold_nan_keys_into_sorts`: every NaN counts
as +NaN) the NaN tail is NumPy's order already and only gets the default +NaN written
over it: `tnp.sort` then costs what `np.sort` does, a copy and NumPy's sort. Arrays arrive as
(outer, n, inner) views, rows along axis 1. Not for compiled C libraries
(`tracer.aot`): those have no Python to call.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange, types
from numba.extending import overload
from numpy._core import _multiarray_umath

from .sort import from_key, key_buffer, to_key
from .sort_counting import copy_and_count

_OPTIONS = dict(cache=True, error_model="numpy", nogil=True)
_SERIAL = dict(_OPTIONS, no_cpython_wrapper=True, no_cfunc_wrapper=True)
# (an object-mode block compiled with nogil=True warns that it cannot run in parallel:
# it takes the GIL whatever the flag says, and NumPy releases it while sorting)
_HOLDS_GIL = dict(_SERIAL, nogil=False)


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
    return (2, 4, 8) if icl else (4, 8)


ITEMSIZES = _simd_itemsizes()
MIN_LENGTH = 128  # shorter rows: `cpu.lib.sort`'s sorting network is faster (the emitter picks)
# blocks of rows the `_parallel` kernel hands its threads (numba.get_num_threads would
# keep the kernel out of numba's disk cache: a ctypes pointer)
BLOCKS = 32
CHUNK_BYTES = 1 << 19  # rows copied and sorted at once: well inside a core's L2


def _sort_in_numpy(x: np.ndarray, out: np.ndarray) -> None:
    """(object mode) out = x sorted along axis 1 by NumPy. Strided rows (inner > 1)
    are sorted in a transposed copy: NumPy would gather each row into a buffer on its
    own, a cache miss per element."""
    if x.shape[2] > 1:
        rows = np.ascontiguousarray(x.transpose(0, 2, 1))
        rows.sort(axis=2)
        out[...] = rows.transpose(0, 2, 1)
        return
    np.copyto(out, x)
    out.sort(axis=1)


@njit(**_HOLDS_GIL)
def _numpy_sort(x, out):
    with numba.objmode():
        _sort_in_numpy(x, out)


@njit(**_HOLDS_GIL)
def _numpy_sort_in_place(out):
    with numba.objmode():
        out.sort(axis=1)


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
def _first(out, o, i, end, above):
    """The first position of row (o, i) before `end` (sorted: ascending) whose value
    is >= 0, or > 0 when `above`, or `end`."""
    lo, hi = 0, end
    while lo < hi:
        mid = (lo + hi) // 2
        v = out[o, mid, i]
        if v > 0 or (v == 0 and not above):
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(**_SERIAL)
def _nan_start(out, o, i):
    """Where row (o, i)'s NaN tail starts (NumPy sorts NaNs last)."""
    lo, hi = 0, out.shape[1]
    while lo < hi:
        mid = (lo + hi) // 2
        v = out[o, mid, i]
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
    n = out.shape[1]
    last = out[o, n - 1, i]
    end = _nan_start(out, o, i) if last != last else n
    lo = _first(out, o, i, end, False)
    hi = _first(out, o, i, end, True)
    if hi > lo:
        _signed_zeros(x, out, o, i, lo, hi)
    if end < n and nan_keys:
        for j in range(end, n):
            out[o, j, i] = np.nan
    elif end < n:
        _place_nans(x, out, o, i, end)


# ---------------------------------------------------------------- kernels

@njit(**_SERIAL)
def _copy_marking_repairs(x, out, o0, o1):
    """out = x for contiguous rows o0 .. o1 - 1 (inner 1), and which of them hold a
    zero or a NaN: only those can need a repair. (The copy streams memory; the test
    rides along, where a search of every sorted row would miss the caches.)"""
    marked = np.zeros((o1 - o0, 1), np.bool_)
    for o in range(o0, o1):
        special = False
        for j in range(x.shape[1]):
            v = x[o, j, 0]
            out[o, j, 0] = v
            special |= not abs(v) > 0
        marked[o - o0, 0] = special
    return marked


@njit(**_SERIAL)
def _repair_rows(x, out, o0, o1, i0, i1, nan_keys, marked):
    for o in range(o0, o1):
        for i in range(i0, i1):
            if marked[o - o0, i - i0]:
                _total_order_row(x, out, o, i, nan_keys)


def _sort_int_rows(x, out, o0, o1):
    """Contiguous integer rows o0 .. o1 - 1 in chunks of about CHUNK_BYTES: each
    copied, then sorted by counting when all its rows span few values
    (`sort_counting`), else by NumPy."""


@overload(_sort_int_rows, jit_options=_SERIAL)
def _sort_int_rows_impl(x, out, o0, o1):
    if isinstance(x.dtype, types.Float):
        # (never called for floats: an overload, so that float sorts do not compile
        # the counting sort, as both branches of an `if` on `_floats` would)
        return lambda x, out, o0, o1: None

    def impl(x, out, o0, o1):
        step = max(1, CHUNK_BYTES // (x.shape[1] * x.itemsize))
        for c0 in range(o0, o1, step):
            c1 = min(c0 + step, o1)
            if not copy_and_count(x, out, c0, c1):
                _numpy_sort_in_place(out[c0:c1])
    return impl


@njit(**_SERIAL)
def _sort_block(x, out, o0, o1, i0, i1, nan_keys):
    """Rows (o0 .. o1 - 1, i0 .. i1 - 1): NumPy's sort, then the repairs of the rows
    that may need one. Contiguous float rows go in chunks of about CHUNK_BYTES, each
    copied, sorted and repaired while it is in the core's cache (np.sort copies the
    whole array first, then reads it back from farther away to sort it)."""
    if not _floats(x) and x.shape[2] == 1:
        _sort_int_rows(x, out, o0, o1)
    elif not _floats(x):
        _numpy_sort(x[o0:o1, :, i0:i1], out[o0:o1, :, i0:i1])
    elif x.shape[2] > 1:
        _numpy_sort(x[o0:o1, :, i0:i1], out[o0:o1, :, i0:i1])
        marked = np.ones((o1 - o0, i1 - i0), np.bool_)
        _repair_rows(x, out, o0, o1, i0, i1, nan_keys, marked)
    else:
        step = max(1, CHUNK_BYTES // (x.shape[1] * x.itemsize))
        for c0 in range(o0, o1, step):
            c1 = min(c0 + step, o1)
            marked = _copy_marking_repairs(x, out, c0, c1)
            _numpy_sort_in_place(out[c0:c1])
            _repair_rows(x, out, c0, c1, 0, 1, nan_keys, marked)


@njit(**_SERIAL)
def numpy_sort_rows(x, out, nan_keys):
    """out = x sorted along axis 1 of its (outer, n, inner) view in the total order,
    by NumPy's sort; `nan_keys`: every NaN of x counts (and is written) as +NaN."""
    if x.shape[1] > 0:
        _sort_block(x, out, 0, x.shape[0], 0, x.shape[2], nan_keys)


@njit(**_SERIAL)
def _sort_part(x, out, p, parts, nan_keys):
    """Block p of `parts`: a range of outer positions, or of inner ones when outer == 1."""
    outer, n, inner = x.shape
    if outer > 1:
        _sort_block(x, out, p * outer // parts, (p + 1) * outer // parts, 0, inner, nan_keys)
    else:
        _sort_block(x, out, 0, 1, p * inner // parts, (p + 1) * inner // parts, nan_keys)


@njit(parallel=True, **_OPTIONS)
def numpy_sort_rows_parallel(x, out, nan_keys):
    """`numpy_sort_rows` with up to BLOCKS blocks of rows on numba's threads."""
    outer, n, inner = x.shape
    if n == 0:
        return
    parts = min(BLOCKS, outer if outer > 1 else inner)
    for p in prange(parts):
        _sort_part(x, out, np.int64(p), parts, nan_keys)
