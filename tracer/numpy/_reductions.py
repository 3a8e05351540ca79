"""NumPy reductions (sum, mean, max, argmax, all, cumsum, ...) on `ops.reduce`.

Every reduction is one `ops.reduce` whose computation is a single op (`add`,
`mul`, `max`, `min`, `bitwise_and`, `bitwise_or`) with its identity as the init
value, so the interpreter's ufunc fast path and the compiled backends recognise
it. `initial=` is applied after the reduction, and `where=` masks elements to the
identity first. argmax / argmin are two plain reductions: the extremum (NaN if any),
then the lowest index holding it (first occurrence, first NaN); complex inputs reduce
(value, index) pairs with a lexicographic comparator that breaks ties by index, so
the result does not depend on the order the reduction runs in.

cumsum / cumprod are one sequential `ops.scan` along the axis (`_accumulate.scan_axis`),
in NumPy's order. float16 follows NumPy's half loops: sums and products over trailing
axes accumulate in float32 and round once, over other axes they round every step;
mean accumulates in float32; var / std keep float16 arithmetic.

Dtypes follow NumPy: sum / prod / cumsum of bools and small integers give int64
(uint64 for unsigned), mean / var / std of integers give float64, var of complex
is real. Those dtype rules, the one `ops.reduce`, `keepdims` and `where=` masks are in
`_reduce_core.py`.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, TracerValueError
from . import _ufuncs as uf
from ._promotion import (as_result, asarray_like, cast, check_out, dtype_of, error,
                         normalize_axes, normalize_axis, promote)
from ._accumulate import scan_axis
from ._compare import lexicographic
from ._reduce_core import (_highest, _keep, _lowest, _mask, _masked, _mean_dtype, _monoid,
                           _operand, _reduce, _result_dtype, _sum_dtype, _ufunc_axes)
from ._shape import ravel, reshape
from ._ufunc_core import NOVALUE

__all__ = ["sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax",
           "argmin", "all", "any", "ptp", "cumsum", "cumprod", "count_nonzero"]

# ------------------------------------------------------------------ sum, prod, all, any
sum = _monoid("sum", ops.add, ops.bitwise_or, 0, uf.add)
sum.__doc__ = """Sum of elements over `axis` (None: all; an int or a tuple; negative ok).

NumPy rule: bools and integers narrower than 64 bits sum in int64 (uint64 if
unsigned) unless dtype= says otherwise; `initial` is added; `where` masks.

sum([[1, 2], [3, 4]], axis=0) -> [4, 6]
"""
prod = _monoid("prod", ops.mul, ops.bitwise_and, 1, uf.multiply)
prod.__doc__ = """Product of elements over `axis`.

NumPy rule: dtypes as sum; `initial` multiplies in; `where` masks.

prod([[1, 2], [3, 4]], axis=1) -> [2, 12]
"""


def _logical(fname: str, op: Callable[..., Any], identity: bool) -> Callable[..., Any]:
    def reduction(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
                  where: Any = True) -> Any:
        check_out(out, fname)
        x = uf.truth(_operand(a, fname))
        axes = _ufunc_axes(axis, x, fname)
        x = _masked(x, where, identity, fname)
        return as_result(_keep(_reduce(x, axes, op, identity), np.shape(x), axes, keepdims))
    reduction.__name__ = reduction.__qualname__ = fname
    reduction.__module__ = "tracer.numpy"
    return reduction


all = _logical("all", ops.bitwise_and, True)
all.__doc__ = """True if every element along `axis` is nonzero.

NumPy rule: bool result; an empty reduction is True; `where` masks.

all([[1, 0], [1, 1]], axis=1) -> [False, True]
"""
any = _logical("any", ops.bitwise_or, False)
any.__doc__ = """True if some element along `axis` is nonzero.

NumPy rule: bool result; an empty reduction is False; `where` masks.

any([[0, 0], [1, 0]], axis=1) -> [False, True]
"""


# ------------------------------------------------------------------ max, min, ptp
def _extremum(fname: str, ufunc_name: str, op: Callable[..., Any],
              identity: Callable[[np.dtype], Any], combine: Callable[..., Any]) -> Callable:
    def reduction(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
                  initial: Any = NOVALUE, where: Any = True) -> Any:
        check_out(out, fname)
        x = _operand(a, fname)
        shape = np.shape(x)
        axes = _ufunc_axes(axis, x, fname)
        if initial is NOVALUE and where is not True:
            raise error(TracerValueError, fname, f"reduction operation '{ufunc_name}' does "
                        "not have an identity, so to use a where mask one has to specify "
                        "'initial'")
        if initial is NOVALUE and builtins.any(shape[i] == 0 for i in axes):
            raise error(TracerValueError, fname, f"zero-size array to reduction operation "
                        f"{ufunc_name} which has no identity (shape {shape}, axis {axis})")
        x = _masked(x, where, identity(dtype_of(x)), fname)
        r = _reduce(x, axes, op, identity(dtype_of(x)))
        if initial is not NOVALUE:
            r = combine(r, promote(initial, dtype=dtype_of(x), fname=fname)[0])
        return as_result(_keep(r, shape, axes, keepdims))
    reduction.__name__ = reduction.__qualname__ = fname
    reduction.__module__ = "tracer.numpy"
    return reduction


max = _extremum("max", "maximum", ops.max, _lowest, uf.maximum)
max.__doc__ = """Largest element along `axis`; NaN propagates.

NumPy rule: same dtype; an empty reduction needs `initial` (ValueError otherwise);
`where` needs `initial`.

max([[1, 5], [3, 2]], axis=0) -> [3, 5]
"""
min = _extremum("min", "minimum", ops.min, _highest, uf.minimum)
min.__doc__ = """Smallest element along `axis`; NaN propagates.

NumPy rule: as max.

min([[1, 5], [3, 2]], axis=1) -> [1, 2]
"""
amax, amin = max, min


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Range (max - min) of values along `axis`.

    NumPy rule: same dtype (integers wrap); bools are rejected like subtract.

    ptp([[1, 5], [3, 2]], axis=0) -> [2, 3]
    """
    check_out(out, "ptp")
    return uf.subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


# ------------------------------------------------------------------ argmax, argmin
def _arg_computation(prefer: Callable[..., Any], dt: np.dtype) -> Callable[..., Any]:
    """(value, index) accumulator update: the preferred value, then NaN, then the lower
    index; ties broken by index make the result independent of the fold order."""
    def pick(acc_v: Any, acc_i: Any, x_v: Any, x_i: Any) -> tuple[Any, Any]:
        if dt.kind == "c":
            better = lexicographic(prefer.__name__, x_v, acc_v)
        else:
            better = prefer(x_v, acc_v)
        tie = ops.eq(x_v, acc_v)
        if dtypes.is_inexact(dt):
            x_nan, acc_nan = ops.ne(x_v, x_v), ops.ne(acc_v, acc_v)
            better = ops.bitwise_or(better, ops.bitwise_and(x_nan, ops.bitwise_not(acc_nan)))
            tie = ops.bitwise_or(tie, ops.bitwise_and(x_nan, acc_nan))
        take = ops.bitwise_or(better, ops.bitwise_and(tie, ops.lt(x_i, acc_i)))
        return ops.select(take, x_v, acc_v), ops.select(take, x_i, acc_i)
    return pick


def _first_extremum(x: Any, index: Any, ax: int, extremum: Callable[..., Any]) -> Any:
    """Two simple reductions instead of one over (value, index) pairs (several times
    faster compiled): the extremum m (NaN if any), then the first index holding m."""
    m = extremum(x, ax, keepdims=True)
    hit = ops.eq(x, ops.broadcast_in_dim(m, np.shape(x), tuple(range(np.ndim(x)))))
    if dtypes.is_float(dtype_of(x)):
        hit = ops.bitwise_or(hit, ops.bitwise_and(ops.ne(x, x), ops.ne(m, m)))
    big = ops.broadcast_in_dim(np.asarray(np.iinfo(np.int64).max, np.int64), np.shape(x), ())
    return _reduce(ops.select(hit, index, big), (ax,), ops.min, np.iinfo(np.int64).max)


def _arg_reduction(fname: str, prefer: Callable[..., Any],
                   start: Callable[[np.dtype], Any],
                   extremum: Callable[..., Any]) -> Callable[..., Any]:
    def reduction(a: Any, axis: Any = None, out: None = None, *, keepdims: bool = False) -> Any:
        check_out(out, fname)
        x = _operand(a, fname)
        shape = np.shape(x)
        if axis is None or not shape:  # NumPy ravels a 0-d array: axis 0 / -1 are valid
            x = ravel(x)
        ax = 0 if axis is None else normalize_axis(axis, np.ndim(x), fname, of=x)
        if np.shape(x)[ax] == 0:
            raise error(TracerValueError, fname, f"attempt to get {fname} of an empty "
                        f"sequence (shape {shape})")
        dt = dtype_of(x)
        index = ops.iota(dtypes.int64, np.shape(x), ax)
        if dt.kind != "c":
            r = _first_extremum(x, index, ax, extremum)
        else:
            inits = (np.asarray(start(dt), dt), np.asarray(np.iinfo(np.int64).max, np.int64))
            _, r = ops.reduce((x, index), inits, _arg_computation(prefer, dt), (ax,))
        if keepdims:
            r = reshape(r, tuple(1 if axis is None or i == ax else d for i, d in enumerate(shape)))
        return as_result(r)
    reduction.__name__ = reduction.__qualname__ = fname
    reduction.__module__ = "tracer.numpy"
    return reduction


argmax = _arg_reduction("argmax", ops.gt, _lowest, max)
argmax.__doc__ = """Index of the largest element along `axis` (of the flattened array if None).

NumPy rule: int64 result; the first occurrence wins; NaN counts as the largest
(the first NaN wins); an empty sequence raises ValueError.

argmax([[1, 5], [7, 2]], axis=1) -> [1, 0]
"""
argmin = _arg_reduction("argmin", ops.lt, _highest, min)
argmin.__doc__ = """Index of the smallest element along `axis` (of the flattened array if None).

NumPy rule: as argmax (NaN counts as the smallest).

argmin([3, 1, 1]) -> 1
"""


# ------------------------------------------------------------------ mean, var, std
def _count(x: Any, axes: tuple[int, ...], where: Any, dt: np.dtype, fname: str) -> Any:
    """How many elements each output averages: static, or the sum of the mask."""
    if where is True:
        n = 1
        for i in axes:
            n *= np.shape(x)[i]
        return float(n)
    mask = _mask(where, x, fname)
    return _reduce(ops.convert_element_type(mask, dtypes.real_dtype(dt)), axes, ops.add, 0)


def _mean(x: Any, axes: tuple[int, ...], where: Any, fname: str) -> Any:
    """Mean over `axes` with the reduced axes kept (x already in the accumulator dtype)."""
    total = _reduce(_masked(x, where, 0, fname), axes, ops.add, 0)
    if dtype_of(x).kind in "iu":
        # An integer dtype= (NumPy): the sum wraps in it, the float64 quotient truncates
        # back (mean([127, 32, 63, 0], dtype=int8) is -8, not 55).
        return _int_quotient(total, _count(x, axes, where, dtypes.float64, fname))
    count = _count(x, axes, where, dtype_of(x), fname)
    return ops.div(total, count if isinstance(count, float) else cast(count, dtype_of(x)))


def _int_quotient(total: Any, count: Any) -> Any:
    """NumPy's `true_divide(total, count, out=total, casting="unsafe")`."""
    return cast(ops.div(cast(total, dtypes.float64), count), dtype_of(total))


def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, *, where: Any = True) -> Any:
    """Arithmetic mean along `axis`.

    NumPy rule: integers and bools average in float64, float16 accumulates in float32
    and returns float16; dtype= sets the accumulator and result; an empty mean is NaN.

    mean([[1, 2], [3, 5]], axis=0) -> [2.0, 3.5]
    """
    check_out(out, "mean")
    x = asarray_like(a, "mean")
    result_dt = _result_dtype(dtype_of(x), dtype)
    x = _operand(x, "mean", result_dt if result_dt.kind in "iu" else _mean_dtype(result_dt))
    axes = normalize_axes(axis, np.ndim(x), "mean", of=x)
    r = cast(_mean(x, axes, where, "mean"), result_dt)
    return as_result(_keep(r, np.shape(x), axes, keepdims))


def _ddof(ddof: Any, correction: Any, fname: str) -> Any:
    if correction is NOVALUE:
        return ddof
    if ddof != 0:
        raise error(TracerValueError, fname, "ddof and correction can't be provided "
                    "simultaneously")
    return correction


def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
        keepdims: bool = False, *, where: Any = True, mean: Any = NOVALUE,
        correction: Any = NOVALUE) -> Any:
    """Variance: mean(|x - x.mean()|**2) * n / (n - ddof) along `axis`.

    NumPy rule: dtypes as mean, complex gives its real dtype; `correction` is an alias
    of ddof; `mean=` passes a precomputed mean (keepdims shape); n - ddof <= 0 gives
    inf or NaN.

    var([1, 2, 3, 4]) -> 1.25; var([1, 2, 3, 4], ddof=1) -> 1.6666666666666667
    """
    check_out(out, "var")
    ddof = _ddof(ddof, correction, "var")
    x = asarray_like(a, "var")
    result_dt = _result_dtype(dtype_of(x), dtype)
    if result_dt.kind in "iu":
        return as_result(_int_var(x, result_dt, axis, ddof, keepdims, where, mean))
    # NumPy's var keeps float16 arithmetic (its sums follow the float16 reduce rules).
    acc_dt = result_dt if result_dt == dtypes.float16 else _mean_dtype(result_dt)
    x = _operand(x, "var", acc_dt)
    axes = normalize_axes(axis, np.ndim(x), "var", of=x)
    m = _keep(_mean(x, axes, where, "var"), np.shape(x), axes, True) if mean is NOVALUE \
        else _operand(mean, "var", acc_dt)
    d = uf.subtract(x, m)
    sq = ops.add(ops.mul(ops.real(d), ops.real(d)), ops.mul(ops.imag(d), ops.imag(d))) \
        if acc_dt.kind == "c" else ops.mul(d, d)
    total = _reduce(_masked(sq, where, 0, "var"), axes, ops.add, 0)
    count = _count(x, axes, where, acc_dt, "var")
    denominator = builtins.max(count - ddof, 0) if isinstance(count, float) else \
        ops.max(ops.sub(cast(count, dtype_of(total)), ddof), 0)
    r = ops.div(total, denominator)
    # (complex input gives its real dtype; an explicit complex dtype= is kept, as NumPy)
    r = cast(r, result_dt if dtype is not None else dtypes.real_dtype(result_dt))
    return as_result(_keep(r, np.shape(x), axes, keepdims))


def _int_var(x: Any, dt: np.dtype, axis: Any, ddof: Any, keepdims: bool, where: Any,
             mean: Any) -> Any:
    """var with an integer dtype=, as NumPy computes it: the mean truncated to dt, the
    deviations and their squares in (x's dtype, dt)'s promotion, sums wrapping in dt and
    each quotient truncated back to dt."""
    if np.ndim(x) == 0:
        x = _operand(x, "var")
    axes = normalize_axes(axis, np.ndim(x), "var", of=x)
    m = _keep(_mean(_operand(x, "var", dt), axes, where, "var"), np.shape(x), axes, True) \
        if mean is NOVALUE else _operand(mean, "var")
    d = uf.subtract(x, m)
    total = _reduce(_masked(_operand(ops.mul(d, d), "var", dt), where, 0, "var"), axes,
                    ops.add, 0)
    count = _count(x, axes, where, dtypes.float64, "var")
    denominator = builtins.max(count - ddof, 0) if isinstance(count, float) else \
        ops.max(ops.sub(count, ddof), 0)
    return _keep(_int_quotient(total, denominator), np.shape(x), axes, keepdims)


def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
        keepdims: bool = False, *, where: Any = True, mean: Any = NOVALUE,
        correction: Any = NOVALUE) -> Any:
    """Standard deviation: sqrt(var(...)).

    NumPy rule: as var.

    std([1, 2, 3, 4]) -> 1.118033988749895
    """
    check_out(out, "std")
    v = var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
            correction=correction)
    if dtype_of(v).kind in "biu":
        # NumPy takes sqrt(out=var) for an array (no float -> int cast: TypeError) and
        # dt(sqrt(var)) for a scalar result.
        if np.ndim(v):
            raise error(DTypeError, "std", f"ufunc 'sqrt' output (typecode 'd') could not "
                        f"be coerced to the integer dtype {dtype_of(v)} of std(dtype=)")
        return as_result(cast(uf.sqrt(v), dtype_of(v)))
    return uf.sqrt(v)


# ------------------------------------------------------------------ cumsum, cumprod
def _cumulative(fname: str, op: Callable[..., Any], bool_op: Callable[..., Any]
                ) -> Callable[..., Any]:
    def scan(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
        check_out(out, fname)
        x = asarray_like(a, fname)
        x = _operand(x, fname, _sum_dtype(dtype_of(x)) if dtype is None else dtype)
        if axis is None or np.ndim(x) == 0:  # NumPy ravels a 0-d array (axis 0 / -1 valid)
            x = ravel(x)
        ax = 0 if axis is None else normalize_axis(axis, np.ndim(x), fname, of=x)
        return as_result(scan_axis(x, ax, bool_op if dtype_of(x).kind == "b" else op))
    scan.__name__ = scan.__qualname__ = fname
    scan.__module__ = "tracer.numpy"
    return scan


cumsum = _cumulative("cumsum", ops.add, ops.bitwise_or)
cumsum.__doc__ = """Cumulative sum along `axis` (of the flattened array if None).

NumPy rule: dtypes as sum (bools and small ints accumulate in int64); added in
NumPy's order (one sequential scan), so floats round exactly as NumPy's.

cumsum([[1, 2], [3, 4]], axis=1) -> [[1, 3], [3, 7]]
"""
cumprod = _cumulative("cumprod", ops.mul, ops.bitwise_and)
cumprod.__doc__ = """Cumulative product along `axis` (of the flattened array if None).

NumPy rule: dtypes as prod.

cumprod([1, 2, 3, 4]) -> [1, 2, 6, 24]
"""


# ------------------------------------------------------------------ counting
def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """Number of nonzero elements along `axis`.

    NumPy rule: int64 result (0-d for axis=None).

    count_nonzero([[0, 1], [2, 3]], axis=0) -> [1, 2]
    """
    x = uf.truth(_operand(a, "count_nonzero"))
    return sum(ops.convert_element_type(x, dtypes.int64), axis, keepdims=keepdims)
