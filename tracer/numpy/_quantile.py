"""Order statistics: median, quantile, percentile and their NaN-ignoring forms.

NumPy partitions; here the axis is sorted once (tracer.numpy.sort, NaN last) and the
needed neighbours are gathered, which gives the same values. The virtual index of
each quantile, its neighbours and the interpolation weight follow NumPy's
`_quantile` for all thirteen methods, in the dtype NumPy (2.4) uses: q's own (a Python
float q is float64), with a Python float / int q's weight rounded to the data's dtype.
The NaN-ignoring forms count the non-NaN values of each slice and index within them, so
their indices are traced values (one gather).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..errors import DTypeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from . import _reductions as red
from . import _ufuncs as uf
from ._take import take_along_axis
from ._promotion import (as_result, asarray_like, cast, check_out, constant, desc, dtype_of,
                         error, normalize_axes)
from ._rearrange import concatenate
from ._shape import broadcast_to, moveaxis, reshape
from ._sorting import sort

__all__ = ["median", "quantile", "percentile", "nanmedian", "nanquantile", "nanpercentile"]

_INDEX = dtypes.int64


def _virtual(alpha: float, beta: float) -> Callable[[Any, Any], Any]:
    """Hyndman & Fan's continuous index n q + alpha + q (1 - alpha - beta) - 1."""
    def index(n: Any, q: Any) -> Any:
        return uf.subtract(uf.add(uf.multiply(n, q), uf.add(alpha, uf.multiply(
            q, 1 - alpha - beta))), 1)
    return index


def _discrete(shift: float, odd_rule: bool) -> Callable[[Any, Any], Any]:
    """NumPy's _discrete_interpolation_to_boundaries: floor, or the next index unless
    the fraction is 0 (and, for closest_observation, the floor is odd)."""
    def index(n: Any, q: Any) -> Any:
        v = uf.subtract(uf.multiply(n, q), shift)
        low = uf.floor(v)
        keep = uf.equal(uf.subtract(v, low), 0)
        if odd_rule:
            keep = uf.logical_and(keep, uf.equal(uf.remainder(low, 2), 1))
        return uf.maximum(uf.where(keep, low, uf.add(low, 1)), 0)
    return index


def _minus_one(n: Any) -> Any:
    """n - 1, staying a (weak) Python int for a static count."""
    return n - 1 if isinstance(n, int) else uf.subtract(n, 1)


def _linear(n: Any, q: Any) -> Any:
    return uf.multiply(_minus_one(n), q)


def _midpoint(n: Any, q: Any) -> Any:
    v = _linear(n, q)
    return uf.multiply(0.5, uf.add(uf.floor(v), uf.ceil(v)))


# method -> (virtual index of (n, q), gamma rule: None for the discrete methods)
_METHODS: dict[str, tuple[Callable[[Any, Any], Any], Any]] = {
    "inverted_cdf": (_discrete(1.0, False), None),
    "averaged_inverted_cdf": (lambda n, q: uf.subtract(uf.multiply(n, q), 1),
                              lambda g, v: uf.where(uf.equal(g, 0), 0.5, 1.0)),
    "closest_observation": (_discrete(1.5, True), None),
    "interpolated_inverted_cdf": (_virtual(0, 1), "keep"),
    "hazen": (_virtual(0.5, 0.5), "keep"),
    "weibull": (_virtual(0, 0), "keep"),
    "linear": (_linear, "keep"),
    "median_unbiased": (_virtual(1 / 3.0, 1 / 3.0), "keep"),
    "normal_unbiased": (_virtual(3 / 8.0, 3 / 8.0), "keep"),
    "lower": (lambda n, q: uf.floor(_linear(n, q)), None),
    "higher": (lambda n, q: uf.ceil(_linear(n, q)), None),
    "midpoint": (_midpoint, lambda g, v: uf.where(uf.equal(uf.remainder(v, 1), 0), 0.0, 0.5)),
    "nearest": (lambda n, q: uf.round(_linear(n, q)), None),
}


def _prepare(a: Any, q: Any, fname: str, percent: bool) -> tuple[Any, Any, bool, bool]:
    """(a, q as NumPy computes with them, whether the result rounds to bfloat16, whether
    q is weak): a bfloat16 `a` computes in float32, rounded once at the end where its
    promotion with q keeps bfloat16 (JAX's dtype; XLA keeps the float32 intermediates)."""
    x = asarray_like(a, fname)
    x = cast(x, dtype_of(x))
    if dtype_of(x).kind == "c":
        raise error(DTypeError, fname, "a must be an array of real numbers")
    narrow = dtype_of(x) == dtypes.bfloat16
    if narrow:
        probe = q if dtypes.is_python_scalar(q) or isinstance(q, Tracer) else np.asarray(q)
        narrow = dtypes.result_type(x, probe)[0] == dtypes.bfloat16
        x = cast(x, dtypes.float32)
    # NumPy 2.4 indexes with q as an array (a Python float is float64: quantile([0, 1],
    # 0.9999999999999999, method="lower") is 0 for float16 data too); percentiles are
    # divided by a weak 100.
    qv = asarray_like(q, fname)
    if not isinstance(qv, Tracer):  # (checked before the division, which traces it)
        concrete = np.asarray(qv) / 100 if percent else np.asarray(qv)
        if not np.all((concrete >= 0) & (concrete <= 1)):
            raise error(TracerValueError, fname, "Percentiles must be in the range [0, 100]"
                        if percent else "Quantiles must be in the range [0, 1]")
    qv = cast(qv, dtype_of(qv))
    if percent:
        qv = uf.divide(qv, 100)
    return x, qv, narrow, type(q) in (int, float)


def _lerp(a: Any, b: Any, t: Any, weak: bool) -> Any:
    """NumPy's _lerp: a + (b - a) t, or b - (b - a)(1 - t) where t >= 0.5. A weak q
    makes t a Python float, so t and 1 - t round to float data's dtype."""
    d = uf.subtract(b, a)
    t_low, t_high = t, uf.subtract(1, t)
    if weak:  # a Python float: the data's float dtype, or float64 with integer data
        dt = dtype_of(a) if dtypes.is_float(dtype_of(a)) else dtypes.float64
        t_low, t_high = cast(t_low, dt), cast(t_high, dt)
    low = uf.add(a, uf.multiply(d, t_low))
    return uf.where(uf.greater_equal(t, 0.5), uf.subtract(b, uf.multiply(d, t_high)), low)


def _gather(s: Any, idx: Any, qshape: tuple[int, ...]) -> Any:
    """out[k..., r...] = s[idx[k..., (r...)], r...]: idx has the quantiles' shape, or
    that and the slice shape (the NaN-ignoring forms)."""
    rest = tuple(np.shape(s)[1:])
    idx = cast(idx, _INDEX)
    if np.ndim(idx) == len(qshape):
        idx = reshape(idx, qshape + (1,) * len(rest))
    idx = broadcast_to(idx, qshape + rest)
    m = int(np.prod(qshape, dtype=np.int64))
    return reshape(take_along_axis(s, reshape(idx, (m,) + rest), 0), qshape + rest)


def _sorted_front(x: Any, axis: Any, fname: str) -> tuple[Any, tuple[int, ...]]:
    """x sorted along its reduced axes, flattened into one leading axis; and the axes."""
    nd = np.ndim(x)
    axes = normalize_axes(axis, nd, fname, of=x)
    moved = moveaxis(x, axes, tuple(range(len(axes)))) if axes else x
    rest = tuple(np.shape(moved)[len(axes):])
    # The leading size spelled out: -1 is ambiguous for an empty array (rest may hold 0).
    lead = int(np.prod([np.shape(x)[i] for i in axes], dtype=np.int64))
    return sort(reshape(moved, (lead,) + rest), axis=0), axes


def _nan_row_if_empty(s: Any) -> Any:
    """For the NaN-ignoring forms: an empty sorted axis becomes one NaN row, so every
    slice counts 0 values (giving NaN, as NumPy) and the gathers have a row to read."""
    if np.shape(s)[0]:
        return s
    return constant(np.nan, (1,) + tuple(np.shape(s)[1:]), dtype_of(s))


def _keep(r: Any, shape: tuple[int, ...], axes: tuple[int, ...], lead: int,
          keepdims: bool) -> Any:
    if not keepdims:
        return r
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return reshape(r, tuple(np.shape(r)[:lead]) + kept)


def _order_statistic(s: Any, q: Any, method: str, count: Any, weak: bool) -> Any:
    """NumPy's _quantile on the sorted leading axis of s: count is the number of values
    per slice (an int, or an array of the slice shape when NaNs are ignored)."""
    if method not in _METHODS:
        raise error(TracerValueError, "quantile", f"{method!r} is not a valid method. Use "
                    f"one of: {', '.join(_METHODS)}")
    index, fix = _METHODS[method]
    qshape = tuple(np.shape(q))
    rest = tuple(np.shape(s)[1:])
    n = count
    if not isinstance(count, int):  # per slice: put the quantiles' axes first
        q = reshape(q, qshape + (1,) * len(rest))
        n = cast(count, dtype_of(q) if dtypes.is_float(dtype_of(q)) else dtypes.float64)
    v = index(n, q)
    # Discrete, or integral "linear" indices (other methods interpolate even then).
    if fix is None or (method == "linear" and dtype_of(v).kind in "iu"):
        last = uf.maximum(_minus_one(count), 0)
        return _gather(s, uf.minimum(uf.maximum(v, 0), last), qshape)
    prev = uf.floor(v)
    above, below = uf.greater_equal(v, _minus_one(n)), uf.less(v, 0)
    last = uf.maximum(_minus_one(count), 0)
    prev = uf.where(above, -1, uf.where(below, 0, prev))  # NumPy's marks, used by gamma
    nxt = uf.where(above, -1, uf.where(below, 0, uf.add(prev, 1)))
    gamma = uf.subtract(v, prev)
    gamma = cast(gamma if fix == "keep" else fix(gamma, v), dtype_of(v))
    a = _gather(s, uf.where(uf.equal(prev, -1), last, prev), qshape)
    b = _gather(s, uf.where(uf.equal(nxt, -1), last, nxt), qshape)
    t = reshape(gamma, tuple(np.shape(gamma)) + (1,) * (len(qshape) + len(rest) -
                                                        np.ndim(gamma)))
    return _lerp(a, b, t, weak)


def _with_nan_rule(r: Any, s: Any, qshape: tuple[int, ...]) -> Any:
    """NumPy: a slice holding NaN (sorted last) gives NaN."""
    if not dtypes.is_float(dtype_of(s)) or np.shape(s)[0] == 0:
        return r
    tail = s[-1]
    return uf.where(uf.isnan(tail), tail, r)


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None,
             interpolation: Any = None) -> Any:
    """The q-th quantiles of the data along axis (q in [0, 1], scalar or array).

    NumPy rule: all of NumPy's 13 methods ("linear" default); a Python float q keeps a
    float array's dtype (indexed in float64); integer data gives float64 (integer q with
    "linear" indexes exactly); a slice with NaN gives NaN; the output is q's shape + the
    kept shape.

    quantile([1, 2, 3, 4], 0.5) -> 2.5; quantile([1, 2, 3, 4], [0.25, 1]) -> [1.75, 4.0]
    """
    return _quantile_impl(a, q, axis, out, method, keepdims, weights, interpolation,
                          "quantile", False, False)


def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear", keepdims: bool = False,
               *, weights: Any = None, interpolation: Any = None) -> Any:
    """The q-th percentiles (q in [0, 100]): quantile(a, q / 100).

    percentile([1, 2, 3, 4], 50) -> 2.5
    """
    return _quantile_impl(a, q, axis, out, method, keepdims, weights, interpolation,
                          "percentile", True, False)


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None,
                interpolation: Any = None) -> Any:
    """quantile of the non-NaN values of each slice (an all-NaN slice gives NaN).

    nanquantile([1.0, nan, 3.0], 0.5) -> 2.0
    """
    return _quantile_impl(a, q, axis, out, method, keepdims, weights, interpolation,
                          "nanquantile", False, True)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None,
                  interpolation: Any = None) -> Any:
    """percentile of the non-NaN values of each slice.

    nanpercentile([1.0, nan, 3.0], 50) -> 2.0
    """
    return _quantile_impl(a, q, axis, out, method, keepdims, weights, interpolation,
                          "nanpercentile", True, True)


def _quantile_impl(a: Any, q: Any, axis: Any, out: Any, method: str, keepdims: bool,
                   weights: Any, interpolation: Any, fname: str, percent: bool,
                   ignore_nan: bool) -> Any:
    check_out(out, fname)
    if weights is not None or interpolation is not None:
        raise error(TracerTypeError, fname, "weights= and the deprecated interpolation= are "
                    "not supported; use method=")
    x, qv, narrow, weak = _prepare(a, q, fname, percent)
    traced_q = isinstance(q, Tracer) or (isinstance(q, (list, tuple)) and
                                         isinstance(asarray_like(q, fname), Tracer))
    s, axes = _sorted_front(x, axis, fname)
    qshape = tuple(np.shape(qv))
    if ignore_nan and dtypes.is_float(dtype_of(x)):
        s = _nan_row_if_empty(s)
        count = red.count_nonzero(uf.logical_not(uf.isnan(s)), axis=0)
        r = _order_statistic(s, qv, method, count, weak)
        r = uf.where(uf.equal(count, 0), np.nan, r)
    else:
        r = _with_nan_rule(_order_statistic(s, qv, method, np.shape(s)[0], weak), s,
                           qshape)
    if traced_q:
        r = _nan_if_q_outside(r, qv, fname, percent)
    r = _keep(r, np.shape(x), axes, len(qshape), keepdims)
    return as_result(cast(r, dtypes.bfloat16) if narrow else r)


def _nan_if_q_outside(r: Any, qv: Any, fname: str, percent: bool) -> Any:
    """A traced q cannot raise NumPy's ValueError for a value outside [0, 1]; the
    quantiles it selects become NaN instead (never a clamped, plausible value). An
    integer result (a discrete method on integer data) has no NaN: q must be concrete."""
    if not dtypes.is_inexact(dtype_of(r)):
        raise error(TracerTypeError, fname, f"q is traced ({desc(qv)}) and the result "
                    f"{desc(r)} is an integer array, which cannot mark a q outside "
                    f"[0, {100 if percent else 1}] as NaN. Pass q as a concrete value "
                    f"(static_argnums) or the data as floats")
    inside = uf.logical_and(uf.greater_equal(qv, 0), uf.less_equal(qv, 1))
    inside = reshape(inside, tuple(np.shape(qv)) + (1,) * (np.ndim(r) - np.ndim(qv)))
    return uf.where(inside, r, np.nan)


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The median along axis: the middle value, or the mean of the middle two.

    NumPy rule: dtypes as mean (integers give float64, float16 stays); a slice with
    NaN gives NaN.

    median([[1, 5, 2], [4, 3, 6]], axis=1) -> [2.0, 4.0]
    """
    check_out(out, "median")
    x = asarray_like(a, "median")
    x = cast(x, dtype_of(x))
    s, axes = _sorted_front(x, axis, "median")
    n = np.shape(s)[0]
    mid = s[n // 2:n // 2 + 1] if n % 2 else s[max(n // 2 - 1, 0):n // 2 + 1]
    r = _with_nan_rule(red.mean(mid, axis=0), s, ())
    return as_result(_keep(r, np.shape(x), axes, 0, keepdims))


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """The median of the non-NaN values of each slice (an all-NaN slice gives NaN).

    NumPy rule: as median on each slice's non-NaN values.

    nanmedian([1.0, nan, 3.0, 4.0]) -> 3.0
    """
    check_out(out, "nanmedian")
    x = asarray_like(a, "nanmedian")
    x = cast(x, dtype_of(x))
    if not dtypes.is_float(dtype_of(x)):
        return median(x, axis, keepdims=keepdims)
    s, axes = _sorted_front(x, axis, "nanmedian")
    s = _nan_row_if_empty(s)
    count = red.count_nonzero(uf.logical_not(uf.isnan(s)), axis=0)
    lo = _gather(s, uf.maximum(uf.floor_divide(uf.subtract(count, 1), 2), 0), ())
    hi = _gather(s, uf.floor_divide(count, 2), ()) if np.shape(s)[0] else lo
    two = red.mean(stack_pair(lo, hi), axis=0)
    r = uf.where(uf.equal(uf.remainder(count, 2), 1), lo, two)
    r = uf.where(uf.equal(count, 0), np.nan, r)
    return as_result(_keep(cast(r, dtype_of(two)), np.shape(x), axes, 0, keepdims))


def stack_pair(a: Any, b: Any) -> Any:
    """[a, b] along a new leading axis (the two middle values, averaged as NumPy does)."""
    shape = (1,) + tuple(np.shape(a))
    return concatenate([reshape(a, shape), reshape(b, shape)])
