"""Parallel sort of one long row: NumPy's SIMD sort (`sort_numpy_abi.simd_sort`) of one
part per thread at once, then rounds of pairwise merges of the sorted runs, each
round's output split evenly over the threads.

Each thread writes its own range of a merge's output: a "merge path" binary search
(`_split`) finds how many of the values before a given output position come from
each run. A thread splits its range in two halves the same way and merges both from
both ends at once (the smallest values forward, the largest backward): four
independent chains of compare and select, each loading its runs' next values a step
ahead, so that none waits on a load (1.0 ns a float32 value on one core, where two
such chains took 1.5, one 2.5 and a branchy merge 5).

The order is the one NumPy's sort leaves (`_before`: NaNs last, every NaN alike,
-0.0 equal to +0.0); the total order `ops.sort` asks for is restored afterwards by
the caller (`sort_numpy`), which gets back whether the row holds a zero or a NaN.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .sort_keys import _INLINED, _OPTIONS, _SERIAL
from .sort_numpy_abi import simd_sort

_U = np.uint64  # (unsigned indices: numba adds no negative-index wraparound to them)


@njit(**_INLINED)
def _before(b, a) -> bool:
    """Whether b goes before a in NumPy's sort order (NaN last; for ints b < a)."""
    return (b < a) | (a != a)


@njit(**_SERIAL)
def _split(src, s, m, e, d):
    """Merge path: how many of the first d values of the merge of the sorted runs
    src[s:m] and src[m:e] (the first run's first among equal values) come from the
    first run."""
    lo, hi = max(0, d - (e - m)), min(d, m - s)
    while lo < hi:
        mid = (lo + hi) // 2
        if _before(src[m + d - mid - 1], src[s + mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(**_SERIAL)
def _merge_both_ends(src, i, ie, j, je, dst, k, ke):
    """Merges the runs src[i..ie] and src[j..je] (inclusive) into dst[k..ke] from both
    ends while each run keeps three values or more; returns the bounds left."""
    i, ie, j, je, k, ke = _U(i), _U(ie), _U(j), _U(je), _U(k), _U(ke)
    one = _U(1)
    va, vb, wa, wb = src[i], src[j], src[ie], src[je]
    while i + one < ie and j + one < je:
        next_a, next_b = src[i + one], src[j + one]
        prev_a, prev_b = src[ie - one], src[je - one]
        front = _before(vb, va)  # b's head first
        dst[k] = vb if front else va
        step = _U(front)
        j += step
        i += one - step
        k += one
        va = va if front else next_a
        vb = next_b if front else vb
        back = _before(wb, wa)  # a's tail last
        dst[ke] = wa if back else wb
        step = _U(back)
        ie -= step
        je -= one - step
        ke -= one
        wa = prev_a if back else wa
        wb = wb if back else prev_b
    return np.int64(i), np.int64(ie), np.int64(j), np.int64(je), np.int64(k)


@njit(**_SERIAL)
def _merge_segment(src, i, i1, j, j1, dst, k):
    """dst[k:k + (i1 - i) + (j1 - j)] = the merge of the sorted runs src[i:i1] and
    src[j:j1]: from both ends, then one chain over what is left."""
    if i1 - i >= 3 and j1 - j >= 3:
        i, ie, j, je, k = _merge_both_ends(src, i, i1 - 1, j, j1 - 1, dst, k,
                                           k + (i1 - i) + (j1 - j) - 1)
        i1, j1 = ie + 1, je + 1
    while i < i1 and j < j1:
        if _before(src[j], src[i]):
            dst[k] = src[j]
            j += 1
        else:
            dst[k] = src[i]
            i += 1
        k += 1
    for p in range(i, i1):
        dst[k + p - i] = src[p]
    k += i1 - i
    for p in range(j, j1):
        dst[k + p - j] = src[p]


@njit(**_SERIAL)
def _merge_four_ends(src, first, second, dst):
    """`_merge_both_ends` of two segments, `first` and `second` (each (i, ie, j, je,
    k, ke): runs src[i..ie] and src[j..je] into dst[k..ke]), in one loop: four
    independent chains, while every run keeps three values or more. Returns both
    segments' bounds left."""
    i, ie, j, je, k, ke = _U(first[0]), _U(first[1]), _U(first[2]), _U(first[3]), \
        _U(first[4]), _U(first[5])
    p, pe, q, qe, r, re = _U(second[0]), _U(second[1]), _U(second[2]), _U(second[3]), \
        _U(second[4]), _U(second[5])
    one = _U(1)
    va, vb, wa, wb = src[i], src[j], src[ie], src[je]
    vp, vq, wp, wq = src[p], src[q], src[pe], src[qe]
    while i + one < ie and j + one < je and p + one < pe and q + one < qe:
        next_a, next_b, prev_a, prev_b = src[i + one], src[j + one], src[ie - one], src[je - one]
        next_p, next_q, prev_p, prev_q = src[p + one], src[q + one], src[pe - one], src[qe - one]
        front, back = _before(vb, va), _before(wb, wa)
        front2, back2 = _before(vq, vp), _before(wq, wp)
        dst[k], dst[ke] = (vb if front else va), (wa if back else wb)
        dst[r], dst[re] = (vq if front2 else vp), (wp if back2 else wq)
        j, i, k = j + _U(front), i + one - _U(front), k + one
        ie, je, ke = ie - _U(back), je - one + _U(back), ke - one
        q, p, r = q + _U(front2), p + one - _U(front2), r + one
        pe, qe, re = pe - _U(back2), qe - one + _U(back2), re - one
        va, vb = (va if front else next_a), (next_b if front else vb)
        wa, wb = (prev_a if back else wa), (wb if back else prev_b)
        vp, vq = (vp if front2 else next_p), (next_q if front2 else vq)
        wp, wq = (prev_p if back2 else wp), (wq if back2 else prev_q)
    return ((np.int64(i), np.int64(ie), np.int64(j), np.int64(je), np.int64(k), np.int64(ke)),
            (np.int64(p), np.int64(pe), np.int64(q), np.int64(qe), np.int64(r), np.int64(re)))


@njit(**_SERIAL)
def _segment(s, m, lo, hi, a_lo, a_hi):
    """(i, ie, j, je, k, ke) of the outputs lo .. hi - 1 of the merge of the runs
    src[s:m] and src[m:...], a_lo and a_hi of them from the first run (`_split`)."""
    b_lo, b_hi = lo - s - a_lo, hi - s - a_hi
    return s + a_lo, s + a_hi - 1, m + b_lo, m + b_hi - 1, lo, hi - 1


@njit(**_SERIAL)
def _merge_output_range(src, dst, bounds, width, k0, k1):
    """dst[k0:k1] of one merge round: runs of `width` parts (part p is
    src[bounds[p]:bounds[p + 1]]) merged pairwise, a last run without a partner
    copied. The range goes in two halves merged in one loop (`_merge_four_ends`)."""
    parts = bounds.shape[0] - 1
    for first in range(0, parts, 2 * width):
        s, m = bounds[first], bounds[min(first + width, parts)]
        e = bounds[min(first + 2 * width, parts)]
        lo, hi = max(k0, s), min(k1, e)
        if lo >= hi:
            continue
        mid = (lo + hi) // 2
        a_mid = _split(src, s, m, e, mid - s)
        first = _segment(s, m, lo, mid, _split(src, s, m, e, lo - s), a_mid)
        second = _segment(s, m, mid, hi, a_mid, _split(src, s, m, e, hi - s))
        if min(first[1] - first[0], first[3] - first[2], second[1] - second[0],
               second[3] - second[2]) >= 2:
            first, second = _merge_four_ends(src, first, second, dst)
        _merge_segment(src, first[0], first[1] + 1, first[2], first[3] + 1, dst, first[4])
        _merge_segment(src, second[0], second[1] + 1, second[2], second[3] + 1, dst, second[4])


@njit(**_SERIAL)
def _copy_flagging(x, buf, a, b) -> bool:
    """buf[a:b] = x[a:b]; whether a value there is zero or NaN (not |v| > 0)."""
    special = False
    for j in range(a, b):
        v = x[j]
        buf[j] = v
        special |= not abs(v) > 0
    return special


@njit(parallel=True, **_OPTIONS)
def sort_vector_parallel(x, out, parts) -> bool:
    """out = x (1-D, contiguous; out may be x) sorted in NumPy's order: `parts` runs
    sorted at once, then ceil(log2(parts)) merge rounds, alternating between out and
    a scratch buffer so that the last lands in out. Returns whether x holds a zero or
    a NaN (only then may the total order need a repair)."""
    n = x.shape[0]
    bounds = np.arange(parts + 1) * n // parts
    rounds = 0
    while (1 << rounds) < parts:
        rounds += 1
    src = out if rounds % 2 == 0 else np.empty_like(out)
    dst = np.empty_like(out) if rounds % 2 == 0 and rounds > 0 else out
    flags = np.zeros(parts, np.bool_)
    for p in prange(parts):
        flags[p] = _copy_flagging(x, src, bounds[p], bounds[p + 1])
        simd_sort(src[bounds[p]:bounds[p + 1]])
    width = 1
    while width < parts:
        for q in prange(parts):
            _merge_output_range(src, dst, bounds, width, bounds[q], bounds[q + 1])
        src, dst = dst, src
        width *= 2
    special = False
    for p in range(parts):  # (not flags.any(): a reduction costs compile time)
        special |= flags[p]
    return special
