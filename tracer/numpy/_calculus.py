"""Signals, calculus and polynomials: convolve, correlate, interp, trapezoid, gradient,
unwrap, polyval, polyadd, polysub, polymul, polyder, polyint.

convolve / correlate are one gather (the sliding windows of the zero-padded longer
operand, as a static index array) and one dot with the shorter one, so the compiled
code is a BLAS matrix-vector product. interp locates each value with the same
binary search as digitize.
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
from ._accumulate import diff
from ._indexing import getitem
from ._linalg import dot
from ._promotion import (as_result, asarray_like, cast, constant, desc, dtype_of, error,
                         normalize_axis, promote, tracing)
from ._rearrange import concatenate
from ._shape import reshape, slice_axis
from ._stats import bisect

__all__ = ["convolve", "correlate", "interp", "trapezoid", "gradient", "unwrap", "polyval",
           "polyadd", "polysub", "polymul", "polyder", "polyint"]


# ------------------------------------------------------------------ convolve, correlate
def _vectors(a: Any, v: Any, fname: str) -> tuple[Any, Any]:
    a, v = promote(a, v, fname=fname)
    a, v = (cast(t, dtype_of(t)) for t in (a, v))
    for t, what in ((a, "a"), (v, "v")):
        if np.ndim(t) != 1:
            raise error(ShapeError, fname, f"object too deep for desired array: {what} must "
                        f"be 1-D, got {desc(t)}")
        if np.shape(t)[0] == 0:
            raise error(TracerValueError, fname, f"{what} cannot be empty")
    return a, v


def _full(a: Any, w: Any) -> Any:
    """z[k] = sum_j a[k + j - (m - 1)] * w[j] over the j where a is defined, k in
    [0, n + m - 1): the windows of the padded longer operand times the shorter one."""
    n, m = np.shape(a)[0], np.shape(w)[0]
    zero = np.zeros((), dtype_of(a))
    if m <= n:  # windows of a, length m
        padded = ops.pad(a, zero, ((m - 1, m - 1, 0),))
        idx = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
        return _window_dot(getitem(padded, idx), w, (idx >= m - 1) & (idx < n + m - 1))
    padded = ops.pad(w, zero, ((n - 1, n - 1, 0),))  # windows of w, length n
    idx = np.arange(n)[None, :] - np.arange(n + m - 1)[:, None] + (m + n - 2)
    return _window_dot(getitem(padded, idx), a, (idx >= n - 1) & (idx < n + m - 1))


def _window_dot(windows: Any, v: Any, inside: np.ndarray) -> Any:
    """Each window dotted with v. NumPy sums only the terms inside the data: for floats
    the padding's products are masked out, so inf or NaN in v never meets a pad zero."""
    if not dtypes.is_inexact(dtype_of(windows)):
        return dot(windows, v)
    terms = uf.where(inside, uf.multiply(windows, v), 0)
    return red.sum(terms, axis=1, dtype=dtype_of(windows))


def _cut(z: Any, mode: str, n: int, m: int, same_start: int, fname: str) -> Any:
    lo, hi = min(n, m), max(n, m)
    if mode == "full":
        return z
    if mode == "same":
        return ops.slice(z, (same_start,), (same_start + hi,))
    if mode == "valid":
        return ops.slice(z, (lo - 1,), (hi,))
    raise error(TracerValueError, fname, f"mode must be 'valid', 'same' or 'full', got "
                f"{mode!r}")


def _with_bool(a: Any, w: Any, fn: Any) -> Any:
    """Bools correlate as integers, then test for nonzero (NumPy's bool loop: or of ands)."""
    if dtype_of(a).kind != "b":
        return fn(a, w)
    r = fn(*(ops.convert_element_type(t, dtypes.int64) for t in (a, w)))
    return ops.ne(r, np.zeros((), dtypes.int64))


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """Cross-correlation of two 1-D sequences: z[k] = sum_n a[n + k] * conj(v[n]).

    NumPy rule: NEP 50 promotion; mode "valid" (default), "same" (length max(n, m))
    or "full" (n + m - 1).

    correlate([1, 2, 3], [0, 1, 0.5]) -> [3.5]
    """
    a, v = _vectors(a, v, "correlate")
    n, m = np.shape(a)[0], np.shape(v)[0]
    w = uf.conjugate(v) if dtype_of(v).kind == "c" else v
    z = _with_bool(a, w, _full)
    start = (min(n, m) - 1) // 2 if n >= m else min(n, m) // 2
    return as_result(_cut(z, mode, n, m, start, "correlate"))


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """Discrete linear convolution of two 1-D sequences: z[k] = sum_j a[j] v[k - j].

    NumPy rule: NEP 50 promotion; mode "full" (default, n + m - 1), "same" (length
    max(n, m)) or "valid".

    convolve([1, 2, 3], [0, 1, 0.5]) -> [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    a, v = _vectors(a, v, "convolve")
    if np.shape(v)[0] > np.shape(a)[0]:
        a, v = v, a
    n, m = np.shape(a)[0], np.shape(v)[0]
    z = _with_bool(a, ops.rev(v, (0,)), _full)
    return as_result(_cut(z, mode, n, m, (m - 1) // 2, "convolve"))


# ------------------------------------------------------------------ interp
def _period_points(xp: Any, fp: Any, period: Any) -> tuple[Any, Any]:
    """NumPy's periodic interp: xp modulo period, sorted, extended one point each way."""
    if isinstance(period, Tracer):
        raise error(TracerTypeError, "interp", "period must be a static number")
    if period == 0:
        raise error(TracerValueError, "interp", "period must be a non-zero value")
    period = abs(float(period))
    if isinstance(xp, Tracer):
        from . import _sorting  # traced sample points are sorted by tracer.numpy.argsort

        if not hasattr(_sorting, "argsort"):
            raise error(TracerTypeError, "interp", "period= with traced sample points xp "
                        "needs tracer.numpy.argsort; pass xp as a static array")
        xp = uf.remainder(xp, period)
        order = _sorting.argsort(xp)
    else:
        xp = np.remainder(xp, period)
        order = np.argsort(xp)  # NumPy's own (unstable) order, so ties match
    xp, fp = getitem(xp, order), getitem(fp, order)
    n = np.shape(xp)[0]
    xp = concatenate([uf.subtract(getitem(xp, slice(n - 1, n)), period), xp,
                      uf.add(getitem(xp, slice(0, 1)), period)])
    fp = concatenate([getitem(fp, slice(n - 1, n)), fp, getitem(fp, slice(0, 1))])
    return xp, fp


def _interp_real(x: Any, xp: Any, fp: Any, left: Any, right: Any) -> Any:
    n = np.shape(xp)[0]
    j = ops.sub(bisect(xp, x, right=True), np.asarray(1, dtypes.int64))
    j = ops.clamp(np.asarray(0, dtypes.int64), j, np.asarray(max(n - 2, 0), dtypes.int64))
    x0, x1 = getitem(xp, j), getitem(xp, ops.min(ops.add(j, np.asarray(1, dtypes.int64)),
                                                  np.asarray(n - 1, dtypes.int64)))
    y0, y1 = getitem(fp, j), getitem(fp, ops.min(ops.add(j, np.asarray(1, dtypes.int64)),
                                                  np.asarray(n - 1, dtypes.int64)))
    slope = ops.div(ops.sub(y1, y0), ops.sub(x1, x0))
    y = ops.add(ops.mul(slope, ops.sub(x, x0)), y0)
    # NumPy: if NaN (inf slopes), try from the right end, then the equal value.
    y = uf.where(uf.isnan(y), ops.add(ops.mul(slope, ops.sub(x, x1)), y1), y)
    y = uf.where(uf.logical_and(uf.isnan(y), uf.equal(y0, y1)), y0, y)
    last = getitem(fp, n - 1)
    y = uf.where(uf.equal(x, getitem(xp, n - 1)), last, y)
    y = uf.where(uf.less(x, getitem(xp, 0)), getitem(fp, 0) if left is None else left, y)
    y = uf.where(uf.greater(x, getitem(xp, n - 1)), last if right is None else right, y)
    if n == 1:  # NumPy's single-point branch: neither below nor above gives fp[0], NaN too
        return y
    return uf.where(uf.isnan(x), x, y)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points (xp, fp) at x.

    NumPy rule: float64 result (complex128 for complex fp); xp increasing; below xp[0]
    gives left (default fp[0]), above xp[-1] right (default fp[-1]); period= wraps.

    interp([0.5, 2.5, 9], [0, 1, 2], [0, 10, 20]) -> [5.0, 20.0, 20.0]
    """
    f64 = dtypes.float64
    xv = cast(asarray_like(x, "interp"), f64, fname="interp")
    xpv = cast(asarray_like(xp, "interp"), f64, fname="interp")
    fpv = asarray_like(fp, "interp")
    out = dtypes.complex128 if dtype_of(fpv).kind == "c" else f64
    fpv = cast(fpv, out, fname="interp")
    if np.ndim(xpv) != 1 or np.shape(xpv) != np.shape(fpv):
        raise error(ShapeError, "interp", f"fp and xp are not of the same length: "
                    f"{desc(xpv)}, {desc(fpv)}")
    if np.shape(xpv)[0] == 0:
        raise error(TracerValueError, "interp", "array of sample points is empty")
    if period is not None:
        xv = uf.remainder(xv, abs(float(period)))
        xpv, fpv = _period_points(xpv, fpv, period)
        left = right = None
    if out.kind == "c":
        parts = [_interp_real(xv, xpv, getattr(uf, p)(fpv), _part(left, p), _part(right, p))
                 for p in ("real", "imag")]
        return as_result(ops.complex(*parts))
    return as_result(_interp_real(xv, xpv, fpv, left, right))


def _part(value: Any, which: str) -> Any:
    return None if value is None else getattr(uf, which)(value)


# ------------------------------------------------------------------ trapezoid, gradient
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral along `axis` by the trapezoidal rule: sum(d * (y[1:] + y[:-1]) / 2).

    NumPy rule: d = diff(x) (1-D x lies along axis) or the scalar dx; dtypes follow the
    arithmetic (integers give float64).

    trapezoid([1, 2, 3]) -> 4.0; trapezoid([1, 2, 3], x=[0, 1, 3]) -> 6.5
    """
    yv = asarray_like(y, "trapezoid")
    yv = cast(yv, dtype_of(yv))
    ax = normalize_axis(axis, np.ndim(yv), "trapezoid", of=yv)
    if x is None:
        d = dx
    else:
        xv = asarray_like(x, "trapezoid")
        if np.ndim(xv) == 1:
            d = diff(xv)
            shape = [1] * np.ndim(yv)
            shape[ax] = np.shape(d)[0]
            d = reshape(d, tuple(shape))
        else:
            d = diff(xv, axis=ax)
    n = np.shape(yv)[ax]
    avg = uf.divide(uf.multiply(d, uf.add(slice_axis(yv, 1, n, ax),
                                          slice_axis(yv, 0, max(n - 1, 0), ax))), 2.0)
    return red.sum(avg, axis=ax)


def _spacing(arg: Any, n: int, fname: str) -> Any:
    """One axis' spacing: a scalar, or the differences of a 1-D coordinate array (a
    scalar again when they are static and all equal, as NumPy decides)."""
    v = asarray_like(arg, fname)
    if np.ndim(v) == 0:
        return arg if not isinstance(v, np.ndarray) else v[()]
    if np.ndim(v) != 1 or np.shape(v)[0] != n:
        raise error(ShapeError, fname, f"when 1d, distances must match the length of the "
                    f"corresponding dimension ({desc(v)} vs {n})")
    if dtype_of(v).kind in "biu":
        v = cast(v, dtypes.float64)
    d = diff(v)
    if not isinstance(d, Tracer) and not tracing():
        d = np.asarray(d)
        if (d == d[0]).all():
            return d[0]
    return d


def _gradient_axis(f: Any, h: Any, ax: int, edge_order: int) -> Any:
    n = np.shape(f)[ax]

    def take(lo: int, hi: int) -> Any:
        return slice_axis(f, lo, hi, ax)

    uniform = np.ndim(h) == 0
    if uniform:
        inner = uf.divide(uf.subtract(take(2, n), take(0, n - 2)), uf.multiply(2.0, h))
    else:
        h1, h2 = (_along(t, ax, np.ndim(f)) for t in (slice_axis(h, 0, n - 2, 0),
                                                       slice_axis(h, 1, n - 1, 0)))
        inner = _three(take(0, n - 2), take(1, n - 1), take(2, n), *_weights_mid(h1, h2))
    if edge_order == 1:
        first = uf.divide(uf.subtract(take(1, 2), take(0, 1)), h if uniform else h[0])
        last = uf.divide(uf.subtract(take(n - 1, n), take(n - 2, n - 1)),
                         h if uniform else h[-1])
    else:
        w0 = (-1.5 / h, 2.0 / h, -0.5 / h) if uniform else _weights_first(h[0], h[1])
        wn = (0.5 / h, -2.0 / h, 1.5 / h) if uniform else _weights_last(h[-2], h[-1])
        first = _three(take(0, 1), take(1, 2), take(2, 3), *w0)
        last = _three(take(n - 3, n - 2), take(n - 2, n - 1), take(n - 1, n), *wn)
    return concatenate([first, inner, last], axis=ax)


def _along(h: Any, ax: int, ndim: int) -> Any:
    return reshape(h, tuple(-1 if i == ax else 1 for i in range(ndim)))


def _three(f0: Any, f1: Any, f2: Any, a: Any, b: Any, c: Any) -> Any:
    return uf.add(uf.add(uf.multiply(a, f0), uf.multiply(b, f1)), uf.multiply(c, f2))


def _weights_mid(h1: Any, h2: Any) -> tuple[Any, Any, Any]:
    s = uf.add(h1, h2)
    return (uf.divide(uf.negative(h2), uf.multiply(h1, s)),
            uf.divide(uf.subtract(h2, h1), uf.multiply(h1, h2)),
            uf.divide(h1, uf.multiply(h2, s)))


def _weights_first(h1: Any, h2: Any) -> tuple[Any, Any, Any]:
    s = uf.add(h1, h2)
    return (uf.divide(uf.negative(uf.add(uf.multiply(2.0, h1), h2)), uf.multiply(h1, s)),
            uf.divide(s, uf.multiply(h1, h2)), uf.divide(uf.negative(h1), uf.multiply(h2, s)))


def _weights_last(h1: Any, h2: Any) -> tuple[Any, Any, Any]:
    s = uf.add(h1, h2)
    return (uf.divide(h2, uf.multiply(h1, s)), uf.divide(uf.negative(s), uf.multiply(h1, h2)),
            uf.divide(uf.add(uf.multiply(2.0, h2), h1), uf.multiply(h2, s)))


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """Second-order central differences inside, one-sided (edge_order 1 or 2) at the
    ends, along each axis; one array per axis (a tuple when several).

    NumPy rule: spacing is one scalar, one per axis, or 1-D coordinate arrays; integer
    input gives float64, inexact dtypes are kept.

    gradient([1, 2, 4, 7, 11]) -> [1.0, 1.5, 2.5, 3.5, 4.0]
    """
    fv = asarray_like(f, "gradient")
    fv = cast(fv, dtype_of(fv))
    if dtype_of(fv) == dtypes.bool_:  # (NumPy's boolean subtract raises)
        raise error(DTypeError, "gradient", "boolean input is not supported (numpy boolean "
                    "subtract); convert it first, e.g. f.astype(int)")
    nd = np.ndim(fv)
    axes = tuple(range(nd)) if axis is None else tuple(
        normalize_axis(a, nd, "gradient", of=fv)
        for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(varargs) not in (0, 1, len(axes)):
        raise error(TracerTypeError, "gradient", "invalid number of arguments")
    spacing = [1.0] * len(axes) if not varargs else list(varargs) * (
        len(axes) if len(varargs) == 1 else 1)
    if edge_order not in (1, 2):
        raise error(TracerValueError, "gradient", "'edge_order' greater than 2 not supported")
    out_dt = dtype_of(fv) if dtypes.is_inexact(dtype_of(fv)) else dtypes.float64
    fv = cast(fv, out_dt)
    outs = []
    for ax, h in zip(axes, spacing, strict=True):
        n = np.shape(fv)[ax]
        if n < edge_order + 1:
            raise error(TracerValueError, "gradient", "Shape of array too small to calculate "
                        "a numerical gradient, at least (edge_order + 1) elements are "
                        "required.")
        outs.append(cast(_gradient_axis(fv, _spacing(h, n, "gradient"), ax, edge_order),
                         out_dt))
    outs = [as_result(o) for o in outs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> Any:
    """Unwrap a phase: replace jumps larger than discont by their period complement.

    NumPy rule: result_type(diff(p), period); discont defaults to period / 2.

    unwrap([0.0, 6.0, 12.5]) -> [0.0, -0.28318530717958623, -0.06637061435917246]
    """
    pv = asarray_like(p, "unwrap")
    pv = cast(pv, dtype_of(pv))
    ax = normalize_axis(axis, np.ndim(pv), "unwrap", of=pv)
    dd = diff(pv, axis=ax)
    discont = period / 2 if discont is None else discont
    dt = dtypes.result_type(dtype_of(dd), period)[0]
    if dt == dtypes.bfloat16:  # computed in float32, rounded once (as XLA computes it)
        wide = unwrap(cast(pv, dtypes.float32), discont, ax, period=period)
        return as_result(cast(wide, dt))
    if dt.kind in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    ddmod = uf.add(uf.remainder(uf.subtract(dd, -high), period), -high)
    if ambiguous:
        ddmod = uf.where(uf.logical_and(uf.equal(ddmod, -high), uf.greater(dd, 0)), high,
                         ddmod)
    correct = uf.where(uf.less(uf.absolute(dd), discont), 0, uf.subtract(ddmod, dd))
    n = np.shape(pv)[ax]
    pv = cast(pv, np.dtype(dt))
    rest = uf.add(slice_axis(pv, 1, n, ax), red.cumsum(correct, axis=ax))
    return as_result(concatenate([slice_axis(pv, 0, min(n, 1), ax), cast(rest, np.dtype(dt))],
                                 axis=ax))


# ------------------------------------------------------------------ polynomials
def polyval(p: Any, x: Any) -> Any:
    """The polynomial with coefficients p (highest power first) at x, by Horner's rule.

    NumPy rule: y = zeros_like(x); y = y * x + c for each c; dtypes follow.

    polyval([3, 0, 1], 5) -> 76
    """
    pv = asarray_like(p, "polyval")
    xv = asarray_like(x, "polyval")
    xv = cast(xv, dtype_of(xv))
    y = constant(0, np.shape(xv), dtype_of(xv))
    for i in range(np.shape(pv)[0] if np.ndim(pv) else 0):
        y = uf.add(uf.multiply(y, xv), getitem(pv, i))
    return as_result(y)


def _poly_pair(a1: Any, a2: Any, fname: str) -> tuple[Any, Any]:
    a, b = (reshape(asarray_like(t, fname), (-1,)) for t in (a1, a2))
    diff_len = np.shape(a)[0] - np.shape(b)[0]
    zero = lambda t, k: constant(0, (k,), dtype_of(t))  # noqa: E731
    if diff_len > 0:
        b = concatenate([zero(b, diff_len), b])
    elif diff_len < 0:
        a = concatenate([zero(a, -diff_len), a])
    return a, b


def polyadd(a1: Any, a2: Any) -> Any:
    """Sum of two polynomials (coefficients highest power first).

    polyadd([1, 2], [9, 5, 4]) -> [9, 6, 6]
    """
    return uf.add(*_poly_pair(a1, a2, "polyadd"))


def polysub(a1: Any, a2: Any) -> Any:
    """Difference of two polynomials.

    polysub([2, 10, -2], [3, 10, -4]) -> [-1, 0, 2]
    """
    return uf.subtract(*_poly_pair(a1, a2, "polysub"))


def _poly1d_coefficients(a: Any) -> Any:
    """NumPy's poly1d(a).coeffs: leading zeros dropped (static input only: the length
    would depend on traced values)."""
    v = asarray_like(a, "polymul")
    if isinstance(v, Tracer):
        return v
    v = np.atleast_1d(np.asarray(v))
    trimmed = np.trim_zeros(v, trim="f")
    return trimmed if trimmed.size else np.zeros(1, v.dtype)


def polymul(a1: Any, a2: Any) -> Any:
    """Product of two polynomials: the convolution of their coefficients.

    NumPy rule: static coefficients lose their leading zeros first (poly1d); traced
    ones are convolved as they are.

    polymul([1, 2, 3], [9, 5, 1]) -> [9, 23, 38, 17, 3]
    """
    return convolve(_poly1d_coefficients(a1), _poly1d_coefficients(a2))


def polyder(p: Any, m: int = 1) -> Any:
    """m-th derivative of a polynomial.

    NumPy rule: m >= 0; the coefficients are multiplied by their powers.

    polyder([1, 1, 1, 1]) -> [3, 2, 1]
    """
    m = operator.index(m)
    if m < 0:
        raise error(TracerValueError, "polyder", "Order of derivative must be positive "
                    "(see polyint)")
    y = asarray_like(p, "polyder")
    y = cast(y, dtype_of(y))
    for _ in range(m):
        n = max(np.shape(y)[0] - 1, 0)
        y = uf.multiply(slice_axis(y, 0, n, 0), np.arange(n, 0, -1))
    return as_result(y)


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """m-th antiderivative of a polynomial; k gives the integration constants.

    NumPy rule: float results; k a scalar or m values (default zeros).

    polyint([3, 2, 1]) -> [1.0, 1.0, 1.0, 0.0]
    """
    m = operator.index(m)
    if m < 0:
        raise error(TracerValueError, "polyint", "Order of integral must be positive "
                    "(see polyder)")
    ks = [0] * m if k is None else (list(k) if isinstance(k, (list, tuple, np.ndarray))
                                     else [k] * m)
    if len(ks) != m:
        raise error(TracerValueError, "polyint", "k must be a scalar or a rank-1 array of "
                    "length 1 or >m.")
    y = asarray_like(p, "polyint")
    for constant_term in ks:
        n = np.shape(y)[0]
        y = uf.divide(y, np.arange(n, 0, -1))
        y = concatenate([y, reshape(asarray_like(constant_term, "polyint"), (1,))])
    return as_result(y)
