"""Counting sort of contiguous integer rows whose values span a small range.

NumPy's SIMD quicksort (`sort_numpy`) takes 3-6 ns a key for 10^6 int32 or int64 keys
drawn from a few thousand values, about what distinct keys cost it. When every value
of a row lies in a span of at most `span_limit(n)` consecutive integers, counting how
often each occurs and writing the runs back costs two passes over the row: 0.3-0.6x
NumPy's time for 10^6 keys spanning 2^8 .. 2^16 values, 0.4-0.6x for rows of 1000 keys
spanning 16 (measured on one thread, AVX-512 NumPy 2.4).

The span comes from the min and max that the copy into the output computes on the way
(the copy NumPy's in-place sort needs anyway; both are memory-bound), so rows of wider
spans lose nothing and go on to NumPy. Arrays arrive as `sort_numpy`'s
(outer, n, 1) views: rows along axis 1, contiguous.

(A least-significant-digit radix sort of float keys, 3 or 4 passes, loses to NumPy
here: each scatter pass costs about 1.2 ns a key even in L1, where NumPy's whole sort
of 1000-key rows costs 1.9; docs/performance.md has the numbers.)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .sort_keys import _SERIAL

SPAN_DIVISOR = 16  # a row of n keys is counted when its span is at most n / 16 ...
SPAN_MAX = 1 << 16  # ... and at most this many values (the counts stay in L2)
# spans up to this many values count into LANES interleaved tables: equal keys in a row
# then increment different counters instead of waiting on one counter's last store
LANES_SPAN = 1024
LANES = 4


@njit(**_SERIAL)
def span_limit(n):
    """The widest span (max - min + 1) a row of n keys is counted with."""
    return min(SPAN_MAX, n // SPAN_DIVISOR) if n < 2 ** 31 else 0  # (int32 counts)


@njit(**_SERIAL)
def _copy_span(x, out, o):
    """out[o] = x[o]; returns max - min, exact in uint64 arithmetic (max >= min; the
    span, one more, would wrap to 0 for a row holding both ends of uint64), and min."""
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
    lanes = LANES if span <= LANES_SPAN else 1
    counts[:span * lanes] = 0
    base = np.uint64(lo)
    for j in range(out.shape[1]):
        d = np.int64(np.uint64(out[o, j, 0]) - base)
        counts[d * lanes + (j & (lanes - 1))] += 1
    p = 0
    for d in range(span):
        k = 0
        for lane in range(lanes):
            k += counts[d * lanes + lane]
        # (the value in uint64, cast back to the row's type on the store: exact, as
        # lo + d <= max)
        v = base + np.uint64(d)
        for t in range(p, p + k):
            out[o, t, 0] = v
        p += k


@njit(**_SERIAL)
def copy_and_count(x, out, o0, o1) -> bool:
    """out[o0:o1] = x[o0:o1], then sorted by counting if every one of those rows spans
    at most `span_limit` values: returns whether it sorted them."""
    limit = np.uint64(span_limit(x.shape[1]))
    spans = np.empty(o1 - o0, np.int64)
    lows = np.empty(o1 - o0, x.dtype)
    small = True
    for o in range(o0, o1):
        extent, lo = _copy_span(x, out, o)
        small &= extent < limit
        spans[o - o0] = np.int64(extent) + 1 if small else 0
        lows[o - o0] = lo
    if not small:
        return False
    counts = np.empty(spans.max() * LANES, np.int32)
    for o in range(o0, o1):
        _count_row(out, o, lows[o - o0], spans[o - o0], counts)
    return True
