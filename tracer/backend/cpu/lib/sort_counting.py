"""Counting sort of contiguous integer rows whose values span a small range.

NumPy's SIMD quicksort (`sort_numpy`) takes 1-7 ns a key for int32 and int64 keys
drawn from a few hundred or thousand values, not much less than distinct keys cost it.
When a row's values lie in a span of a few consecutive integers (`countable`),
counting how often each occurs and writing the runs back costs two passes over the
row: 0.25-0.75x NumPy's time for 10^6 keys spanning 128 .. 2^16 values, 0.4-0.65x for
rows of 1000 keys spanning 32 (one thread, AVX-512 NumPy 2.4).

The span comes from the min and max that the copy into the output computes on the way
(the copy NumPy's in-place sort needs anyway; both are memory-bound), so the rows that
are not counted lose nothing and go on to NumPy. Arrays arrive as `sort_numpy`'s
(outer, n, 1) views: rows along axis 1, contiguous.

(A least-significant-digit radix sort of float keys, 3 or 4 byte passes, loses to
NumPy: each scatter pass costs about 1.2 ns a key even in L1, where NumPy's whole sort
of rows of 1000 float32 keys costs 1.9; docs/performance.md has the numbers.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .sort_keys import _SERIAL

# a row of n keys is counted when its span is at least SPAN_MIN (NumPy's sort of a few
# distinct values is quick: 0.45 ms for 10^6 int32 keys of 2 values, where counting
# waits on the store of the counter it increments next) and at most n / SPAN_DIVISOR and
# SPAN_MAX (the counts stay in L2; writing each value's run costs about as much as
# NumPy's sort of a few keys): the bounds where counting measured at most 0.92x NumPy
SPAN_MIN = 32
SPAN_DIVISOR = 16
SPAN_MAX = 1 << 16


@njit(**_SERIAL)
def countable(span, n) -> bool:
    """Whether a row of n keys spanning `span` values is sorted by counting (int32
    counts: n < 2^31)."""
    return SPAN_MIN <= span <= min(SPAN_MAX, n // SPAN_DIVISOR) and n < 2 ** 31


@njit(**_SERIAL)
def _copy_span(x, out, o):
    """out[o] = x[o]; returns the row's max - min, exact in uint64 arithmetic (max >=
    min), and its min."""
    lo = hi = x[o, 0, 0]
    for j in range(x.shape[1]):
        v = x[o, j, 0]
        out[o, j, 0] = v
        lo = min(lo, v)
        hi = max(hi, v)
    return np.uint64(hi) - np.uint64(lo), lo


@njit(**_SERIAL)
def _count_row(out, o, lo, span, counts):
    """Row o of out, its values lo .. lo + span - 1, sorted in place by counting."""
    counts[:span] = 0
    base = np.uint64(lo)
    for j in range(out.shape[1]):
        counts[np.uint64(out[o, j, 0]) - base] += 1  # (unsigned: no negative-index test)
    row = out[o, :, 0]
    p = 0
    for d in range(span):
        # (the value in uint64, cast back to the row's type by the store: exact, as
        # lo + d <= max)
        row[p:p + counts[d]] = base + np.uint64(d)
        p += counts[d]


@njit(**_SERIAL)
def copy_and_count(x, out, o0, o1) -> bool:
    """out[o0:o1] = x[o0:o1], then sorted by counting if every one of those rows is
    `countable`: returns whether it sorted them."""
    spans = np.empty(o1 - o0, np.int64)
    lows = np.empty(o1 - o0, x.dtype)
    small, widest = True, 0
    for o in range(o0, o1):
        extent, lo = _copy_span(x, out, o)
        # (extent + 1 would wrap to 0 for a row holding both ends of uint64)
        small &= extent < np.uint64(SPAN_MAX) and countable(np.int64(extent) + 1, x.shape[1])
        spans[o - o0] = np.int64(extent) + 1 if small else 0
        lows[o - o0] = lo
        widest = max(widest, spans[o - o0])  # (not spans.max(): a second to compile)
    if not small:
        return False
    counts = np.empty(widest, np.int32)
    for o in range(o0, o1):
        _count_row(out, o, lows[o - o0], spans[o - o0], counts)
    return True
