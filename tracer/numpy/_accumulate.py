"""Running and pairwise-difference functions: the sequential scan behind cumsum /
cumprod / `np.<ufunc>.accumulate`, the generic `np.<ufunc>.reduce`, `diff`,
`ediff1d` and the array API's `cumulative_sum` / `cumulative_prod`.

A running combine is one `ops.scan` along the axis (moved to the front): it adds
in NumPy's order, so results round exactly as NumPy's (float16 too: each step is
computed in float32 and rounded, as NumPy's half loops do), and the compiled
backends run it as one loop.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, TracerTypeError, TracerValueError
from . import _ufuncs as uf
from ._promotion import (as_result, asarray_like, cast, check_out, desc, dtype_of, error,
                         normalize_axes, normalize_axis, promote)
from ._rearrange import concatenate
from ._shape import broadcast_to, ravel, reshape, slice_axis
from ._ufunc_core import NOVALUE

__all__ = ["diff", "ediff1d", "cumulative_sum", "cumulative_prod"]


def _to_front(x: Any, axis: int) -> Any:
    perm = (axis,) + tuple(i for i in range(np.ndim(x)) if i != axis)
    return x if axis == 0 else ops.transpose(x, perm)


def _from_front(x: Any, axis: int) -> Any:
    if axis == 0:
        return x
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, np.ndim(x)))
    return ops.transpose(x, perm)


def scan_axis(x: Any, axis: int, combine: Callable[[Any, Any], Any]) -> Any:
    """Inclusive running `combine` along `axis`: out[0] = x[0], out[i] = combine(out[i-1],
    x[i]), computed sequentially (one `ops.scan`)."""
    n = np.shape(x)[axis]
    if n <= 1:
        return x
    front = _to_front(x, axis)
    rest_shape = tuple(np.shape(front)[1:])
    first = ops.reshape(ops.slice(front, (0,) * np.ndim(x), (1,) + rest_shape), rest_shape)

    def step(carry: Any, item: Any) -> tuple[Any, Any]:
        out = combine(carry, item)
        return out, out

    _, ys = ops.scan(step, first, slice_axis(front, 1, n, 0))
    head = ops.reshape(first, (1,) + rest_shape)
    return _from_front(ops.concatenate([head, ys], 0), axis)


# ------------------------------------------------------------------ ufunc methods
def _ufunc(name: str) -> Callable[..., Any]:
    fn = getattr(uf, name, None)
    if fn is None:
        raise error(TracerTypeError, name, f"numpy.{name} is not a ufunc tracer.numpy has")
    return fn


def _loop_dtype(name: str, fn: Callable[..., Any], dt: np.dtype) -> np.dtype:
    """The dtype `fn(x, x)` gives for operands of dtype `dt` (its running value's dtype)."""
    probe = np.zeros((), dt)
    out = dtype_of(fn(probe, probe))
    if dtype_of(fn(np.zeros((), out), np.zeros((), out))) != out:
        raise error(DTypeError, name, f"{name}.accumulate has no loop that keeps {out}")
    return out


def running(name: str, array: Any, axis: int = 0, dtype: Any = None) -> Any:
    """`np.<name>.accumulate(array, axis, dtype)` for any binary ufunc (maximum, minimum,
    logical_and, bitwise_xor, subtract, ...): out[i] = name(out[i-1], array[i])."""
    fn = _ufunc(name)
    x = asarray_like(array, name)
    if np.ndim(x) == 0:
        raise error(TracerValueError, name, f"{name}.accumulate needs at least 1 dimension, "
                    f"got {desc(x)}")
    dt = dtypes.canonicalize(dtype) if dtype is not None else dtype_of(x)
    out_dt = _loop_dtype(name, fn, dt)
    x = cast(cast(x, dt, fname=name), out_dt, fname=name)
    ax = normalize_axis(axis, np.ndim(x), name, of=x)
    return as_result(scan_axis(x, ax, lambda a, b: cast(fn(a, b), out_dt)))


def _identity(name: str, dt: np.dtype) -> Any:
    """The identity NumPy's reduce of `name` starts from (None: it has none)."""
    if name in ("bitwise_or", "bitwise_xor", "logical_or", "logical_xor"):
        return False if dt.kind == "b" else 0
    if name == "bitwise_and":
        return True if dt.kind == "b" else -1 if dt.kind == "i" else int(np.iinfo(dt).max)
    if name == "logical_and":
        return True
    return None


def _reduce_init(name: str, dt: np.dtype) -> Any:
    """A start value that leaves every element unchanged (fmax / fmin: NaN or the range
    end, which those ufuncs ignore)."""
    identity = _identity(name, dt)
    if identity is not None:
        return identity
    if dtypes.kind(dt) == "f":
        return math.nan
    info = np.iinfo(dt) if dt.kind in "iu" else None
    if info is None:
        return dt.kind == "b" and name == "fmin"
    return int(info.min) if name == "fmax" else int(info.max)


_MONOIDS = ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
            "logical_xor", "fmax", "fmin")


def monoid_reduce(name: str, array: Any, axis: Any = 0, dtype: Any = None,
                  keepdims: bool = False, initial: Any = NOVALUE, where: Any = True) -> Any:
    """`np.<name>.reduce` for the associative ufuncs beyond sum / prod / max / min / all
    / any (bitwise_*, logical_xor, fmax, fmin)."""
    if name not in _MONOIDS:
        raise error(TracerTypeError, name, f"numpy.{name}.reduce is not supported on "
                    f"traced arrays (supported: add, multiply, maximum, minimum, "
                    f"{', '.join(_MONOIDS)})")
    if where is not True:
        raise error(TracerTypeError, name, f"{name}.reduce(where=...) is not supported; "
                    "mask with tracer.numpy.where first")
    fn = _ufunc(name)
    x = asarray_like(array, name)
    if dtype is not None:
        x = cast(x, dtypes.canonicalize(dtype), fname=name)
    x = cast(x, dtype_of(x), fname=name)  # a Python scalar becomes a 0-d array
    out_dt = _loop_dtype(name, fn, dtype_of(x))
    x = cast(x, out_dt, fname=name)
    axes = normalize_axes(axis, np.ndim(x), name, of=x)
    if initial is NOVALUE and _identity(name, out_dt) is None and \
            any(np.shape(x)[i] == 0 for i in axes):
        raise error(TracerValueError, name, f"zero-size array to reduction operation {name} "
                    "which has no identity")
    init = np.asarray(_reduce_init(name, out_dt)).astype(out_dt)
    r = ops.reduce(x, init, lambda a, b: cast(fn(a, b), out_dt), axes) if axes else x
    if initial is not NOVALUE:
        r = cast(fn(r, promote(initial, dtype=out_dt, fname=name)[0]), out_dt)
    if keepdims:
        r = reshape(r, tuple(1 if i in axes else d for i, d in enumerate(np.shape(x))))
    return as_result(r)


# ------------------------------------------------------------------ diff, ediff1d
def _edge(value: Any, x: Any, axis: int, fname: str) -> Any:
    """prepend= / append=: a scalar is broadcast to x's shape with `axis` of size 1."""
    v = asarray_like(value, fname)
    if np.ndim(v) == 0:
        shape = tuple(1 if i == axis else d for i, d in enumerate(np.shape(x)))
        v = broadcast_to(cast(v, dtype_of(v)), shape)
    return v


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = NOVALUE,
         append: Any = NOVALUE) -> Any:
    """The n-th discrete difference along `axis`: out[i] = a[i+1] - a[i], n times.

    NumPy rule: same dtype as `a` (integers wrap); bools use not_equal; prepend= and
    append= are joined to `a` first (scalars broadcast, as strong arrays); n = 0
    returns `a`.

    diff([1, 2, 4, 7, 0]) -> [1, 2, 3, -7]; diff([[1, 3], [4, 9]], axis=0) -> [[3, 6]]
    """
    x = asarray_like(a, "diff")
    n = int(n)
    if n == 0:  # NumPy returns `a` itself, before any check (0-d, axis, prepend / append)
        return as_result(cast(x, dtype_of(x), fname="diff"))
    if n < 0:
        raise error(TracerValueError, "diff", f"order must be non-negative but got {n}")
    if np.ndim(x) == 0:
        raise error(TracerValueError, "diff", "diff requires input that is at least one "
                    f"dimensional, got {desc(x)}")
    x = cast(x, dtype_of(x), fname="diff")
    ax = normalize_axis(axis, np.ndim(x), "diff", of=x)
    parts = [_edge(prepend, x, ax, "diff")] if prepend is not NOVALUE else []
    parts.append(x)
    if append is not NOVALUE:
        parts.append(_edge(append, x, ax, "diff"))
    if len(parts) > 1:
        x = concatenate(parts, axis=ax)
    sub = uf.not_equal if dtype_of(x).kind == "b" else uf.subtract
    for _ in range(n):
        size = np.shape(x)[ax]
        if size == 0:
            break
        x = sub(slice_axis(x, 1, size, ax), slice_axis(x, 0, size - 1, ax))
    return as_result(x)


def _ediff_edge(value: Any, dt: np.dtype, what: str) -> Any:
    v = ravel(asarray_like(value, "ediff1d"))
    if not np.can_cast(dtype_of(v), dt, casting="same_kind"):
        raise error(DTypeError, "ediff1d", f"dtype of `{what}` must be compatible with input "
                    f"`ary` under the `same_kind` rule ({dtype_of(v)} vs {dt})")
    return cast(v, dt, fname="ediff1d")


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences between consecutive elements of the flattened array.

    NumPy rule: result has ary's dtype; to_begin / to_end are flattened and must
    cast to it under 'same_kind'.

    ediff1d([1, 2, 4, 7], to_begin=-99) -> [-99, 1, 2, 3]
    """
    x = ravel(asarray_like(ary, "ediff1d"))
    dt = dtype_of(x)
    n = np.shape(x)[0]
    # subtract, as NumPy: bools raise (there is no bool subtract loop).
    d = uf.subtract(slice_axis(x, 1, n, 0), slice_axis(x, 0, n - 1, 0)) if n else x
    parts = [_ediff_edge(to_begin, dt, "to_begin")] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(_ediff_edge(to_end, dt, "to_end"))
    return as_result(concatenate(parts) if len(parts) > 1 else d)


# ------------------------------------------------------------------ array API cumulatives
def _cumulative(fname: str, reduction_name: str, identity: int) -> Callable[..., Any]:
    def cumulative(x: Any, /, *, axis: int | None = None, dtype: Any = None,
                   out: None = None, include_initial: bool = False) -> Any:
        from . import _reductions

        check_out(out, fname)
        v = asarray_like(x, fname)
        if axis is None:
            if np.ndim(v) > 1:
                raise error(TracerValueError, fname, f"axis must be specified for "
                            f"multi-dimensional arrays, got {desc(v)}")
            axis = 0
        if np.ndim(v) == 0:  # NumPy takes a 0-d array as one element
            v = ravel(v)
        r = getattr(_reductions, reduction_name)(v, axis=axis, dtype=dtype)
        if not include_initial:
            return r
        ax = normalize_axis(axis, np.ndim(r), fname, of=v)
        shape = tuple(1 if i == ax else d for i, d in enumerate(np.shape(r)))
        init = ops.broadcast_in_dim(np.asarray(identity, dtype_of(r)), shape, ())
        return as_result(concatenate([init, r], axis=ax))
    cumulative.__name__ = cumulative.__qualname__ = fname
    cumulative.__module__ = "tracer.numpy"
    return cumulative


cumulative_sum = _cumulative("cumulative_sum", "cumsum", 0)
cumulative_sum.__doc__ = """Cumulative sum (array API / NumPy 2.1 form of cumsum).

NumPy rule: dtypes as cumsum; axis may be None only for 0-d/1-d input;
include_initial=True prepends the zero, so the axis grows by one.

cumulative_sum([1, 2, 3], include_initial=True) -> [0, 1, 3, 6]
"""
cumulative_prod = _cumulative("cumulative_prod", "cumprod", 1)
cumulative_prod.__doc__ = """Cumulative product (array API / NumPy 2.1 form of cumprod).

NumPy rule: as cumulative_sum, with a leading one for include_initial.

cumulative_prod([1, 2, 3]) -> [1, 2, 6]
"""
