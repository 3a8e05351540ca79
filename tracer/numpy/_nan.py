"""NaN-ignoring reductions: nansum, nanprod, nanmean, nanvar, nanstd, nanmax, nanmin,
nanargmax, nanargmin, nancumsum, nancumprod.

Each replaces NaN by the identity of its reduction (0 for sums, 1 for products,
-inf / +inf for max / min) and calls the plain reduction, as NumPy does; integer
and bool inputs hold no NaN and go straight to it. An all-NaN slice gives NaN
(nanmax, nanmean, ...); nanargmax / nanargmin of an all-NaN slice raise ValueError
outside a trace and give -1 inside one (as JAX), since the values are unknown.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, TracerValueError
from ..tracing import Tracer
from . import _reductions as red
from . import _ufuncs as uf
from ._promotion import (as_result, asarray_like, cast, check_out, desc, dtype_of, error,
                         tracing)
from ._shape import reshape
from ._ufunc_core import NOVALUE

__all__ = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
           "nanargmax", "nanargmin", "nancumsum", "nancumprod"]


def _operand(a: Any, fname: str) -> Any:
    x = asarray_like(a, fname)
    return cast(x, dtype_of(x), fname=fname)


def _has_nan(x: Any) -> bool:
    return dtypes.is_inexact(dtype_of(x))


def _check_dtype(x: Any, dtype: Any, fname: str) -> None:
    """NumPy's nanmean / nanvar / nanstd refuse an integer dtype= for float input."""
    if dtype is not None and _has_nan(x) and not dtypes.is_inexact(dtypes.canonicalize(dtype)):
        raise error(DTypeError, fname, f"If a is inexact, then dtype must be inexact "
                    f"(a is {desc(x)}, dtype={np.dtype(dtype)})")


def _replace_nan(x: Any, value: Any) -> tuple[Any, Any]:
    """(x with NaN replaced by `value`, the NaN mask) for float / complex x."""
    mask = uf.isnan(x)
    fill = ops.broadcast_in_dim(np.asarray(value, dtype_of(x)), np.shape(x), ())
    return ops.select(mask, fill, x), mask


def _published(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn.__module__ = "tracer.numpy"
    return fn


@_published
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
           keepdims: bool = False, initial: Any = NOVALUE, where: Any = True) -> Any:
    """Sum treating NaN as zero.

    NumPy rule: as sum (small ints widen to int64); an all-NaN slice sums to 0.

    nansum([1.0, nan, 2.0]) -> 3.0
    """
    check_out(out, "nansum")
    x = _operand(a, "nansum")
    if _has_nan(x):
        x = _replace_nan(x, 0)[0]
    return red.sum(x, axis, dtype, keepdims=keepdims, initial=initial, where=where)


@_published
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = NOVALUE, where: Any = True) -> Any:
    """Product treating NaN as one.

    NumPy rule: as prod.

    nanprod([2.0, nan, 3.0]) -> 6.0
    """
    check_out(out, "nanprod")
    x = _operand(a, "nanprod")
    if _has_nan(x):
        x = _replace_nan(x, 1)[0]
    return red.prod(x, axis, dtype, keepdims=keepdims, initial=initial, where=where)


def _where_mask(where: Any, mask: Any) -> Any:
    """The elements a nan-statistic uses: not NaN, and in where= if given."""
    keep = ops.bitwise_not(mask)
    if where is True:
        return keep
    return uf.logical_and(keep, asarray_like(where, "where"))


def _count_kept(mask: Any, where: Any, axis: Any, keepdims: bool) -> Any:
    """How many non-NaN (and where=) elements each output averages, as int64."""
    return red.count_nonzero(_where_mask(where, mask), axis, keepdims=keepdims)


def _divide_by_count(total: Any, count: Any) -> Any:
    """NumPy's _divide_by_count: true division written back into total's dtype."""
    return cast(uf.divide(total, count), dtype_of(total))


@_published
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, *, where: Any = True) -> Any:
    """Mean of the non-NaN elements.

    NumPy rule: integers are mean (float64); floats are nansum / count in the sum's
    dtype (float16 sums as sum does); an all-NaN slice gives NaN.

    nanmean([1.0, nan, 3.0]) -> 2.0
    """
    check_out(out, "nanmean")
    x = _operand(a, "nanmean")
    _check_dtype(x, dtype, "nanmean")
    if not _has_nan(x):
        return red.mean(x, axis, dtype, keepdims=keepdims, where=where)
    arr, mask = _replace_nan(x, 0)
    total = red.sum(arr, axis, dtype, keepdims=keepdims, where=where)
    return as_result(_divide_by_count(total, _count_kept(mask, where, axis, keepdims)))


@_published
def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
           keepdims: bool = False, *, where: Any = True, mean: Any = NOVALUE,
           correction: Any = NOVALUE) -> Any:
    """Variance of the non-NaN elements.

    NumPy rule: integers are var; floats compute in their own dtype (NumPy's
    algorithm: mean = sum / count, squared deviations summed, / (count - ddof));
    count - ddof <= 0 gives NaN.

    nanvar([1.0, nan, 3.0]) -> 1.0
    """
    check_out(out, "nanvar")
    x = _operand(a, "nanvar")
    _check_dtype(x, dtype, "nanvar")
    if not _has_nan(x):
        return red.var(x, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                       correction=correction)
    ddof = ddof if correction is NOVALUE else correction
    arr, mask = _replace_nan(x, 0)
    cnt = _count_kept(mask, where, axis, True)
    avg = _divide_by_count(red.sum(arr, axis, dtype, keepdims=True, where=where), cnt) \
        if mean is NOVALUE else asarray_like(mean, "nanvar")
    dev = cast(uf.subtract(arr, avg), dtype_of(arr))
    dev = uf.where(mask, 0, dev)
    sq = uf.real(uf.multiply(dev, uf.conjugate(dev))) if dtype_of(dev).kind == "c" \
        else uf.multiply(dev, dev)
    total = red.sum(sq, axis, dtype, keepdims=keepdims, where=where)
    dof = uf.subtract(cnt if keepdims else _squeeze_like(cnt, total), ddof)
    return as_result(uf.where(uf.less_equal(dof, 0), math.nan, _divide_by_count(total, dof)))


def _squeeze_like(cnt: Any, total: Any) -> Any:
    return reshape(cnt, np.shape(total))


@_published
def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
           keepdims: bool = False, *, where: Any = True, mean: Any = NOVALUE,
           correction: Any = NOVALUE) -> Any:
    """Standard deviation of the non-NaN elements: sqrt(nanvar(...)).

    NumPy rule: as nanvar.

    nanstd([1.0, nan, 3.0]) -> 1.0
    """
    check_out(out, "nanstd")
    if not _has_nan(_operand(a, "nanstd")):  # no NaN possible: std (its dtype= rules too)
        return red.std(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                       correction=correction)
    return uf.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                          correction=correction))


def _nan_extremum(fname: str, plain: Callable[..., Any], fill: float) -> Callable[..., Any]:
    def reduction(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
                  initial: Any = NOVALUE, where: Any = True) -> Any:
        check_out(out, fname)
        x = _operand(a, fname)
        if not _has_nan(x):
            return plain(x, axis, keepdims=keepdims, initial=initial, where=where)
        filled, mask = _replace_nan(x, fill)
        r = plain(filled, axis, keepdims=keepdims, initial=initial, where=where)
        all_nan = red.all(mask, axis, keepdims=keepdims)
        if initial is not NOVALUE:  # NumPy: initial takes part, so the slice is not empty
            return r
        return as_result(uf.where(all_nan, math.nan, r))
    reduction.__name__ = reduction.__qualname__ = fname
    reduction.__module__ = "tracer.numpy"
    return reduction


nanmax = _nan_extremum("nanmax", red.max, -math.inf)
nanmax.__doc__ = """Largest non-NaN element along `axis`.

NumPy rule: as max; an all-NaN slice gives NaN.

nanmax([1.0, nan, 3.0]) -> 3.0
"""
nanmin = _nan_extremum("nanmin", red.min, math.inf)
nanmin.__doc__ = """Smallest non-NaN element along `axis`.

NumPy rule: as min; an all-NaN slice gives NaN.

nanmin([1.0, nan, 3.0]) -> 1.0
"""


def _nan_arg(fname: str, plain: Callable[..., Any], fill: float) -> Callable[..., Any]:
    def reduction(a: Any, axis: Any = None, out: None = None, *,
                  keepdims: bool = False) -> Any:
        check_out(out, fname)
        x = _operand(a, fname)
        if not _has_nan(x):
            return plain(x, axis, keepdims=keepdims)
        filled, mask = _replace_nan(x, fill)
        r = plain(filled, axis, keepdims=keepdims)
        all_nan = red.all(mask, axis, keepdims=keepdims)
        if not tracing() and not isinstance(all_nan, Tracer) and np.any(all_nan):
            raise error(TracerValueError, fname, "All-NaN slice encountered")
        return as_result(uf.where(all_nan, -1, r))
    reduction.__name__ = reduction.__qualname__ = fname
    reduction.__module__ = "tracer.numpy"
    return reduction


nanargmax = _nan_arg("nanargmax", red.argmax, -math.inf)
nanargmax.__doc__ = """Index of the largest non-NaN element along `axis`.

NumPy rule: int64; the first occurrence wins; an all-NaN slice raises ValueError
(inside a trace it gives -1, as JAX does).

nanargmax([nan, 3.0, 1.0]) -> 1
"""
nanargmin = _nan_arg("nanargmin", red.argmin, math.inf)
nanargmin.__doc__ = """Index of the smallest non-NaN element along `axis`.

NumPy rule: as nanargmax.

nanargmin([nan, 3.0, 1.0]) -> 2
"""


@_published
def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum treating NaN as zero.

    NumPy rule: as cumsum; leading NaNs give zeros.

    nancumsum([1.0, nan, 2.0]) -> [1.0, 1.0, 3.0]
    """
    check_out(out, "nancumsum")
    x = _operand(a, "nancumsum")
    if _has_nan(x):
        x = _replace_nan(x, 0)[0]
    return red.cumsum(x, axis, dtype)


@_published
def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product treating NaN as one.

    NumPy rule: as cumprod.

    nancumprod([2.0, nan, 3.0]) -> [2.0, 2.0, 6.0]
    """
    check_out(out, "nancumprod")
    x = _operand(a, "nancumprod")
    if _has_nan(x):
        x = _replace_nan(x, 1)[0]
    return red.cumprod(x, axis, dtype)
