"""Counting and statistics: bincount, digitize, histogram, histogram_bin_edges,
average, cov, corrcoef.

Sizes that NumPy reads from the data (bincount's max(x) + 1) must be static under
tracing: bincount takes `length=` as JAX does. Locating values among sorted edges
(`digitize`, histogram with explicit edges, `interp`) is a vectorized binary search
(`bisect`): ceil(log2(n + 1)) rounds of gather + compare + select over all values.
Bin counts are one scatter-add.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, ShapeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from . import _reductions as red
from . import _ufuncs as uf
from ._creation import linspace
from ._indexing import getitem, index_update
from ._linalg import diagonal, dot
from ._promotion import (as_result, asarray_like, broadcast_to_shape, cast, constant, desc,
                         dtype_of, error, normalize_axis)
from ._shape import ravel, reshape

__all__ = ["bincount", "digitize", "histogram", "histogram_bin_edges", "average", "cov",
           "corrcoef"]

_INDEX = dtypes.int64


class WeightsSumToZeroError(TracerValueError, ZeroDivisionError):
    """average(): the weights along an axis sum to zero (NumPy: ZeroDivisionError)."""


def _concrete(x: Any) -> bool:
    """A value known now (a NumPy array, also inside a trace)."""
    return not isinstance(x, Tracer)


def bisect(edges: Any, values: Any, right: bool) -> Any:
    """For 1-D ascending `edges`, how many edges are <= each value (right) or < it
    (left): NumPy's searchsorted, NaN values sorting last. A static, unrolled binary
    search: each round gathers one edge per value."""
    n = np.shape(edges)[0]
    lo = constant(0, np.shape(values), _INDEX)
    hi = constant(n, np.shape(values), _INDEX)
    for _ in range(max(n, 1).bit_length()):
        mid = ops.div(ops.add(lo, hi), np.asarray(2, _INDEX))
        edge = getitem(edges, ops.min(mid, np.asarray(max(n - 1, 0), _INDEX)))
        # `not (value < edge)` is `edge <= value` that also sends NaN values right.
        above = uf.logical_not(uf.less(values, edge) if right else uf.less_equal(values, edge))
        above = ops.bitwise_and(above, ops.lt(lo, hi))
        lo = ops.select(above, ops.add(mid, np.asarray(1, _INDEX)), lo)
        hi = ops.select(above, hi, ops.min(hi, mid))
    return lo


# ------------------------------------------------------------------ bincount
def _bincount_length(x: Any, minlength: int, length: Any) -> int:
    if length is not None:
        return operator.index(length)
    if not _concrete(x):
        raise error(TracerTypeError, "bincount", f"the result length max(x) + 1 of traced "
                    f"{desc(x)} is unknown while tracing; pass a static length= (values "
                    "outside [0, length) are dropped)")
    x = np.asarray(x)
    if x.size and x.min() < 0:
        raise error(TracerValueError, "bincount", "'list' argument must have no negative "
                    "elements")
    return max(minlength, int(x.max()) + 1 if x.size else 0)


def bincount(x: Any, /, weights: Any = None, minlength: int = 0, *,
             length: int | None = None) -> Any:
    """Number of occurrences (or summed weights) of each value in a 1-D int array.

    NumPy rule: int64 counts; float64 sums with weights (int64 zeros for empty x); the
    length is
    max(max(x) + 1, minlength) — under tracing pass a static `length=` (JAX), values
    outside [0, length) are then dropped.

    bincount([0, 1, 1, 3]) -> [1, 2, 0, 1]
    """
    v = asarray_like(x, "bincount")
    if np.ndim(v) != 1 or dtype_of(v).kind not in "biu":
        raise error(TracerTypeError, "bincount", f"x must be a 1-D array of non-negative "
                    f"ints, got {desc(v)}")
    size = _bincount_length(v, operator.index(minlength), length)
    if weights is None or np.shape(v)[0] == 0:  # NumPy: no data gives int64 counts
        w, dt = np.asarray(1, _INDEX), _INDEX
    else:
        w = asarray_like(weights, "bincount")
        if np.shape(w) != np.shape(v):
            raise error(ShapeError, "bincount", f"weights {desc(w)} and x {desc(v)} must "
                        "have the same length")
        if not np.can_cast(dtype_of(w), np.float64):
            raise error(DTypeError, "bincount", f"cannot cast weights {desc(w)} to float64")
        w, dt = cast(w, dtypes.float64), dtypes.float64
    return _scatter_counts(cast(v, _INDEX), w, size, dt)


def _scatter_counts(idx: Any, w: Any, size: int, dt: np.dtype) -> Any:
    """zeros(size).at[idx].add(w), dropping indices outside [0, size)."""
    valid = ops.bitwise_and(ops.ge(idx, np.asarray(0, _INDEX)),
                            ops.lt(idx, np.asarray(size, _INDEX)))
    # Invalid entries land in an extra slot that is cut off afterwards.
    idx = ops.select(valid, idx, constant(size, np.shape(idx), _INDEX))
    counts = index_update(constant(0, (size + 1,), dt), idx, w, "add")
    return as_result(ops.slice(counts, (0,), (size,)))


# ------------------------------------------------------------------ digitize
def digitize(x: Any, bins: Any, right: bool = False) -> Any:
    """Index of the bin each value falls in: bins[i-1] <= x < bins[i] (right=False).

    NumPy rule: int64; bins is 1-D and monotonic (increasing or decreasing, decided
    from its ends); values below the first edge give 0, above the last len(bins);
    NaN goes past the last edge.

    digitize([0.5, 1.0, 2.5], [0, 1, 2]) -> [1, 2, 3]
    """
    v = asarray_like(x, "digitize")
    b = asarray_like(bins, "digitize")
    if np.ndim(b) != 1:
        raise error(ShapeError, "digitize", f"bins must be 1-dimensional, got {desc(b)}")
    if dtype_of(v).kind == "c" or dtype_of(b).kind == "c":
        raise error(DTypeError, "digitize", "x may not be complex")
    v, b = (cast(t, dtype_of(t)) for t in (v, b))
    n = np.shape(b)[0]
    if n == 0:
        return as_result(constant(0, np.shape(v), _INDEX))
    if _concrete(b):  # static edges: one search, in the direction they run
        if b[-1] >= b[0]:
            return as_result(bisect(b, v, right=not right))
        return as_result(ops.sub(np.asarray(n, _INDEX), bisect(b[::-1], v, right=not right)))
    increasing = bisect(b, v, right=not right)
    decreasing = ops.sub(np.asarray(n, _INDEX), bisect(ops.rev(b, (0,)), v, right=not right))
    last_ge_first = uf.greater_equal(getitem(b, n - 1), getitem(b, 0))
    return as_result(uf.where(last_ge_first, increasing, decreasing))


# ------------------------------------------------------------------ histogram
def _edge_dtype(a: Any, first: Any, last: Any) -> np.dtype:
    dt = np.result_type(dtype_of(a), *(np.asarray(e).dtype for e in (first, last)
                                       if not isinstance(e, (Tracer, float, int))))
    return np.dtype(np.result_type(dt, float)) if dt.kind in "biu" else np.dtype(dt)


def _outer_edges(a: Any, range_: Any) -> tuple[Any, Any]:
    """NumPy's _get_outer_edges: the range (or the data's min / max), widened by 0.5 each
    way when empty."""
    if range_ is not None:
        first, last = range_
        if isinstance(first, Tracer) or isinstance(last, Tracer):
            raise error(TracerTypeError, "histogram", "range= must be static numbers")
        if first > last:
            raise error(TracerValueError, "histogram", "max must be larger than min in "
                        "range parameter.")
        if not (math.isfinite(first) and math.isfinite(last)):
            raise error(TracerValueError, "histogram", f"supplied range of [{first}, "
                        f"{last}] is not finite")
    elif np.size(a) == 0:
        first, last = 0, 1
    elif _concrete(a):
        first, last = np.asarray(a).min(), np.asarray(a).max()
        if not (np.isfinite(first) and np.isfinite(last)):
            raise error(TracerValueError, "histogram", f"autodetected range of [{first}, "
                        f"{last}] is not finite")
    else:
        first, last = red.min(a), red.max(a)
        same = uf.equal(first, last)
        return uf.where(same, uf.subtract(first, 0.5), first), \
            uf.where(same, uf.add(last, 0.5), last)
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _bins_arg(bins: Any, fname: str) -> Any:
    if isinstance(bins, str):
        raise error(TracerTypeError, fname, f"bins={bins!r} estimates the bin count from "
                    "the data; pass a static int or an array of edges")
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise error(TracerValueError, fname, "`bins` must be positive, when an integer")
        return int(bins)
    edges = asarray_like(bins, fname)
    if np.ndim(edges) != 1:
        raise error(ShapeError, fname, f"`bins` must be 1d, when an array, got "
                    f"{desc(edges)}")
    if _concrete(edges) and np.any(np.diff(np.asarray(edges)) < 0):
        raise error(TracerValueError, fname, "`bins` must increase monotonically, when an "
                    "array")
    return cast(edges, dtype_of(edges))


def _uniform(a: Any, bins: int, range_: Any) -> tuple[Any, Any, Any]:
    """(edges, first, last) for `bins` equal bins."""
    first, last = _outer_edges(a, range_)
    dt = _edge_dtype(a, first, last)
    if isinstance(first, Tracer):
        first, last = cast(first, dt), cast(last, dt)
        # NumPy's linspace: i * (delta / bins), or (i / bins) * delta when that step
        # underflows to zero; the rounding differs, and density divides by the widths.
        i, delta = ops.iota(dt, (bins + 1,), 0), ops.sub(last, first)
        step = ops.div(delta, np.asarray(bins, dt))
        scaled = ops.select(ops.eq(step, np.asarray(0, dt)),
                            ops.mul(ops.div(i, np.asarray(bins, dt)), delta), ops.mul(i, step))
        edges = ops.add(scaled, first)
        edges = ops.concatenate([ops.slice(edges, (0,), (bins,)), ops.reshape(last, (1,))], 0)
        return edges, first, last
    edges = linspace(first, last, bins + 1, dtype=dt)
    return edges, np.asarray(first, dt), np.asarray(last, dt)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                        weights: Any = None) -> Any:
    """The edges `histogram` would use.

    NumPy rule: an int gives bins + 1 equal edges over `range` (or the data's min / max,
    widened by 0.5 when equal) in a float dtype (float64 for ints); an array is returned
    as it is.

    histogram_bin_edges([1, 2, 5], bins=2) -> [1.0, 3.0, 5.0]
    """
    x = ravel(asarray_like(a, "histogram_bin_edges"))
    b = _bins_arg(bins, "histogram_bin_edges")
    return as_result(_uniform(x, b, range)[0] if isinstance(b, int) else b)


def _uniform_index(x: Any, edges: Any, first: Any, last: Any, bins: int) -> Any:
    """NumPy's bin of each value for equal bins: scale, truncate, then fix the value
    within an ulp of an edge; values outside [first, last] get -1."""
    dt = dtype_of(edges)
    x = cast(x, dt)
    f = ops.mul(ops.div(ops.sub(x, first), ops.sub(last, first)), np.asarray(bins, dt))
    keep = ops.bitwise_and(ops.ge(x, first), ops.le(x, last))
    idx = ops.convert_element_type(ops.select(keep, f, ops.broadcast_in_dim(
        np.zeros((), dt), np.shape(f), ())), _INDEX)
    idx = ops.min(idx, np.asarray(bins - 1, _INDEX))
    below = ops.lt(x, getitem(edges, idx))
    idx = ops.select(ops.bitwise_and(below, ops.gt(idx, np.asarray(0, _INDEX))),
                     ops.sub(idx, np.asarray(1, _INDEX)), idx)
    nxt = ops.min(ops.add(idx, np.asarray(1, _INDEX)), np.asarray(bins, _INDEX))
    up = ops.bitwise_and(ops.ge(x, getitem(edges, nxt)),
                         ops.ne(idx, np.asarray(bins - 1, _INDEX)))
    idx = ops.select(up, ops.add(idx, np.asarray(1, _INDEX)), idx)
    return ops.select(keep, idx, constant(-1, np.shape(idx), _INDEX))


def _edges_index(x: Any, edges: Any) -> Any:
    """Bin of each value for explicit edges: [e_i, e_i+1), the last bin closed."""
    n = np.shape(edges)[0]
    idx = ops.sub(bisect(edges, x, right=True), np.asarray(1, _INDEX))
    on_last = uf.equal(x, getitem(edges, n - 1))
    return ops.select(on_last, constant(n - 2, np.shape(idx), _INDEX), idx)


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,
              weights: Any = None) -> tuple[Any, Any]:
    """(counts, edges) of the flattened `a` over `bins` (static int or edges array).

    NumPy rule: int64 counts (weights' dtype with weights); the last bin includes its
    right edge; values outside the range are ignored; density=True divides by the total
    and the bin widths (float64). bins as a string is not supported.

    histogram([1, 2, 2, 5], bins=2) -> ([3, 1], [1.0, 3.0, 5.0])
    """
    x = ravel(asarray_like(a, "histogram"))
    b = _bins_arg(bins, "histogram")
    if isinstance(b, int):
        edges, first, last = _uniform(x, b, range)
        idx = _uniform_index(x, edges, first, last, b)
    else:
        edges = b
        idx = _edges_index(x, edges)
    nbins = np.shape(edges)[0] - 1
    if weights is None:
        w, dt = np.asarray(1, _INDEX), _INDEX
    else:
        w = ravel(asarray_like(weights, "histogram"))
        if np.shape(w) != np.shape(x):
            raise error(ShapeError, "histogram", f"weights {desc(w)} should have the same "
                        f"shape as a {desc(x)}")
        w = cast(w, dtype_of(w))
        dt = dtype_of(w)
    counts = _scatter_counts(idx, w, nbins, dt)
    if density:
        widths = cast(uf.subtract(ops.slice(edges, (1,), (nbins + 1,)),
                                  ops.slice(edges, (0,), (nbins,))), dtypes.float64)
        counts = uf.divide(uf.divide(counts, widths), red.sum(counts))
    return as_result(counts), as_result(edges)


# ------------------------------------------------------------------ average, cov, corrcoef
def _align_weights(w: Any, shape: tuple[int, ...], axis: Any) -> Any:
    """1-D weights for one axis, placed along that axis (NumPy's average)."""
    if np.shape(w) == shape:
        return w
    if axis is None:
        raise error(TracerTypeError, "average", "Axis must be specified when shapes of a "
                    f"{shape} and weights {np.shape(w)} differ.")
    if np.ndim(w) != 1 or isinstance(axis, (tuple, list)):
        raise error(TracerTypeError, "average", "1D weights expected when shapes of a "
                    f"{shape} and weights {np.shape(w)} differ.")
    ax = normalize_axis(axis, len(shape), "average")
    if np.shape(w)[0] != shape[ax]:
        raise error(ShapeError, "average", f"Length of weights {np.shape(w)} not compatible "
                    f"with specified axis {axis} of a {shape}.")
    return ops.broadcast_in_dim(w, shape, (ax,))


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """Weighted average along `axis`: sum(a * w) / sum(w).

    NumPy rule: without weights it is mean; integer/bool a computes in at least
    float64; 1-D weights need an int axis; weights summing to zero raise
    ZeroDivisionError (checked outside a trace only). `returned` also gives sum(w).

    average([1, 2, 4], weights=[1, 1, 2]) -> 2.75
    """
    x = _strong(a, "average")
    if weights is None:
        avg = red.mean(x, axis, keepdims=keepdims)
        scale = math.prod(np.shape(x)) / max(math.prod(np.shape(avg)), 1)
        scl = ops.broadcast_in_dim(np.asarray(scale, dtype_of(avg)), np.shape(avg), ())
        return (avg, as_result(scl)) if returned else avg
    w = _strong(weights, "average")
    extra = (dtypes.float64,) if dtype_of(x).kind in "biu" else ()
    rdt = dtypes.canonicalize(np.result_type(dtype_of(x), dtype_of(w), *extra))
    w = _align_weights(cast(w, rdt), np.shape(x), axis)
    scl = red.sum(w, axis, keepdims=keepdims)
    if _concrete(scl) and np.any(scl == 0):
        raise error(WeightsSumToZeroError, "average", "Weights sum to zero, can't be "
                    "normalized")
    avg = uf.divide(red.sum(uf.multiply(cast(x, rdt), w), axis, keepdims=keepdims), scl)
    return (avg, as_result(broadcast_to_shape(scl, np.shape(avg), "average"))) \
        if returned else avg


def _strong(x: Any, fname: str) -> Any:
    """x as an array operand (a Python scalar becomes a strong 0-d array)."""
    v = asarray_like(x, fname)
    return cast(v, dtype_of(v), fname=fname)


def _observations(m: Any, rowvar: bool, dt: np.dtype, of_y: bool) -> Any:
    v = asarray_like(m, "cov")
    if np.ndim(v) > 2:
        raise error(ShapeError, "cov", f"{'y' if of_y else 'm'} has more than 2 dimensions: "
                    f"{desc(v)}")
    x = cast(v, dt)
    x = reshape(x, (1, -1)) if np.ndim(x) < 2 else x
    # NumPy transposes m unless it is 1-D, y unless it is a single row.
    flip = np.ndim(v) != 1 if not of_y else np.shape(x)[0] != 1
    return ops.transpose(x, (1, 0)) if not rowvar and flip else x


def _cov_weights(fweights: Any, aweights: Any, n: int) -> Any:
    w = None
    for given, what in ((fweights, "fweights"), (aweights, "aweights")):
        if given is None:
            continue
        g = cast(asarray_like(given, "cov"), dtypes.float64)
        if np.ndim(g) != 1 or np.shape(g)[0] != n:
            raise error(ShapeError, "cov", f"{what} must be 1-D with {n} entries, got "
                        f"{desc(g)}")
        w = g if w is None else uf.multiply(w, g)
    return w


def _cov_factor(n: int, ddof: int, w: Any, aweights: Any) -> Any:
    """NumPy's normalization: n - ddof, or the weighted forms; <= 0 becomes 0."""
    if w is None:
        return float(max(n - ddof, 0))
    w_sum = red.sum(w)
    if ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = uf.subtract(w_sum, ddof)
    else:
        a = cast(asarray_like(aweights, "cov"), dtypes.float64)
        fact = uf.subtract(w_sum, uf.divide(uf.multiply(ddof, red.sum(uf.multiply(w, a))),
                                            w_sum))
    return uf.maximum(fact, 0.0)


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """Covariance matrix of the variables (rows, or columns with rowvar=False).

    NumPy rule: computes in result_type(m, y, float64) (dtype= overrides); ddof
    defaults to 1 (0 with bias=True); fweights / aweights as NumPy; the result is
    squeezed (one variable gives a 0-d result).

    cov([[0, 1, 2], [2, 1, 0]]) -> [[1.0, -1.0], [-1.0, 1.0]]
    """
    parts = [m] if y is None else [m, y]
    dt = dtypes.canonicalize(dtype) if dtype is not None else np.dtype(np.result_type(
        *(dtype_of(asarray_like(p, "cov")) for p in parts), np.float64))
    x = _observations(m, rowvar, dt, False)
    if np.shape(x)[0] == 0:
        return as_result(constant(0, (0, 0), dtypes.float64))
    if y is not None:
        x = ops.concatenate([x, _observations(y, rowvar, dt, True)], 0)
    n = np.shape(x)[1]
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    w = _cov_weights(fweights, aweights, n)
    if w is None:
        avg = red.mean(x, axis=1, keepdims=True)
    else:
        w = cast(w, dtypes.real_dtype(dt))
        avg = uf.divide(red.sum(uf.multiply(x, w), axis=1, keepdims=True), red.sum(w))
    d = cast(uf.subtract(x, avg), dt)
    dw = d if w is None else uf.multiply(d, w)
    c = dot(d, uf.conjugate(ops.transpose(dw, (1, 0))))
    # NumPy multiplies by 1 / fact (not a division: the rounding differs).
    c = cast(uf.multiply(c, uf.divide(1, _cov_factor(n, ddof, w, aweights))), dt)
    return as_result(reshape(c, tuple(d for d in np.shape(c) if d != 1)))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """Pearson correlation coefficients: cov / outer(std, std), clipped to [-1, 1].

    NumPy rule: as cov (float64 at least); complex inputs clip real and imaginary parts.

    corrcoef([[0, 1, 2], [2, 1, 0]]) -> [[1.0, -1.0], [-1.0, 1.0]]
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 0:
        return uf.divide(c, c)
    std = uf.sqrt(uf.real(diagonal(c)))
    c = uf.divide(uf.divide(c, std[:, None]), std[None, :])
    if dtype_of(c).kind == "c":
        return as_result(ops.complex(uf.clip(uf.real(c), -1, 1), uf.clip(uf.imag(c), -1, 1)))
    return uf.clip(c, -1, 1)

