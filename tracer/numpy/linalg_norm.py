"""`tracer.numpy.linalg`: norm, vector_norm, matrix_norm, cond (NumPy 2's code paths:
integer input is computed in float64, float16 stays float16)."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import dtypes
from .. import numpy as tnp  # (bound by the time any function here runs)
from ..errors import TracerTypeError, TracerValueError
from ._promotion import cast, error, normalize_axis
from .linalg_solve import LinAlgError, inv, operand, svd

_FRO = ("f", "fro")


def _inexact(x: Any, fname: str) -> Any:
    x = operand(x, fname)
    return x if dtypes.is_inexact(x.dtype) else cast(x, np.dtype(np.float64))


def _is(ord: Any, *values: Any) -> bool:
    """ord == one of values, without comparing strings with numbers."""
    return any(type(ord) is type(v) and ord == v if isinstance(v, str) or isinstance(ord, str)
               else ord == v for v in values)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Matrix or vector norm (NumPy's rules for ord, axis and keepdims); bfloat16 is
    computed in float32 and rounded once (JAX keeps bfloat16)."""
    x = _inexact(x, "norm")
    if x.dtype == dtypes.bfloat16:
        return cast(norm(cast(x, dtypes.float32), ord, axis, keepdims), dtypes.bfloat16)
    nd = x.ndim
    if axis is None and (ord is None or (_is(ord, *_FRO) and nd == 2) or
                         (_is(ord, 2) and nd == 1)):
        ret = tnp.sqrt(tnp.sum(_abs2(x)))
        return tnp.reshape(ret, (1,) * nd) if keepdims else ret
    axes = _axes(axis, nd)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise error(TracerValueError, "norm", "Improper number of dimensions to norm.")


def _axes(axis: Any, nd: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, tuple):
        return axis
    try:
        return (operator.index(axis),)
    except TypeError:
        raise error(TracerTypeError, "norm", "'axis' must be None, an integer or a tuple of "
                    "integers") from None


def _abs2(x: Any) -> Any:
    return tnp.real(tnp.multiply(tnp.conjugate(x), x)) if dtypes.is_complex(x.dtype) \
        else tnp.multiply(x, x)


def _vector_norm(x: Any, ord: Any, axis: int, keepdims: bool) -> Any:
    if isinstance(ord, str):
        raise error(TracerValueError, "norm", f"Invalid norm order '{ord}' for vectors")
    absx = tnp.abs(x)
    if ord is None or _is(ord, 2):
        return tnp.sqrt(tnp.sum(_abs2(x), axis=axis, keepdims=keepdims))
    if ord == math.inf:
        return tnp.max(absx, axis=axis, keepdims=keepdims, initial=0)
    if ord == -math.inf:
        return tnp.min(absx, axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = cast(tnp.not_equal(x, 0), absx.dtype)
        return tnp.sum(nonzero, axis=axis, keepdims=keepdims)
    if ord == 1:
        return tnp.sum(absx, axis=axis, keepdims=keepdims)
    total = tnp.sum(tnp.power(absx, ord), axis=axis, keepdims=keepdims)
    return tnp.power(total, tnp.reciprocal(np.asarray(ord, total.dtype)))


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    nd = x.ndim
    row, col = (normalize_axis(a, nd, "norm", x) for a in axes)
    if row == col:
        raise error(TracerValueError, "norm", "Duplicate axes given.")
    if _is(ord, 2, -2, "nuc"):
        s = svd(tnp.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        ret = (tnp.max(s, axis=-1, initial=0) if _is(ord, 2) else
               tnp.min(s, axis=-1) if _is(ord, -2) else tnp.sum(s, axis=-1))
    elif _is(ord, 1, -1):
        pick = tnp.max if ord == 1 else tnp.min
        sums = tnp.sum(tnp.abs(x), axis=row)
        ret = pick(sums, axis=col - (col > row), **({"initial": 0} if ord == 1 else {}))
    elif _is(ord, math.inf, -math.inf):
        pick = tnp.max if ord == math.inf else tnp.min
        sums = tnp.sum(tnp.abs(x), axis=col)
        ret = pick(sums, axis=row - (row > col), **({"initial": 0} if ord > 0 else {}))
    elif ord is None or _is(ord, *_FRO):
        ret = tnp.sqrt(tnp.sum(_abs2(x), axis=(row, col)))
    else:
        raise error(TracerValueError, "norm", "Invalid norm order for matrices.")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        ret = tnp.reshape(ret, tuple(shape))
    return ret


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """Vector norm over one axis, several axes (flattened together) or all."""
    x = _inexact(x, "vector_norm")
    shape = list(x.shape)
    if axis is None:
        flat, over = tnp.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = tuple(normalize_axis(a, x.ndim, "vector_norm", x) for a in axis)
        rest = tuple(i for i in range(x.ndim) if i not in axes)
        moved = tnp.transpose(x, axes + rest)
        flat = tnp.reshape(moved, (int(np.prod([shape[i] for i in axes])),
                                   *[shape[i] for i in rest]))
        over = 0
    else:
        flat, over = x, axis
    res = norm(flat, axis=over, ord=ord)
    if keepdims:
        kept = range(len(shape)) if axis is None else (
            axis if isinstance(axis, tuple) else (axis,))
        for i in kept:
            shape[normalize_axis(i, len(shape), "vector_norm")] = 1
        res = tnp.reshape(res, tuple(shape))
    return res


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """Matrix norm over the last two axes."""
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


def cond(x: Any, p: Any = None) -> Any:
    """Condition number: s_max / s_min (p None, 2, -2: inverted) or
    norm(x, p) * norm(inv(x), p); inf where NumPy's result would be NaN from a
    singular (but NaN-free) matrix."""
    x = operand(x, "cond")
    if x.size == 0 and x.ndim >= 2 and x.shape[-1] * x.shape[-2] == 0:
        raise error(LinAlgError, "cond", "cond is not defined on empty arrays")
    if p is None or _is(p, 2, -2):
        s = svd(x, compute_uv=False)
        with np.errstate(all="ignore"):
            r = (tnp.divide(s[..., -1], s[..., 0]) if _is(p, -2)
                 else tnp.divide(s[..., 0], s[..., -1]))
    else:
        with np.errstate(all="ignore"):
            r = tnp.multiply(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))
    has_nan = tnp.any(tnp.isnan(x), axis=(-2, -1))
    return tnp.where(tnp.logical_and(tnp.isnan(r), tnp.logical_not(has_nan)), math.inf, r)
