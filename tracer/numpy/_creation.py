"""Array creation: array, asarray, zeros / ones / full / empty (and *_like), arange,
linspace, eye, identity.

Shapes and the numbers of arange / linspace / eye are static. Outside a trace the
constant functions return fresh, writeable ndarrays; inside one they emit one
broadcast of a scalar literal (or `iota` arithmetic for arange / eye), so a big
constant never bloats the graph. Values that are traced (`full(shape, t)`,
`array([t0, t1])`, `linspace(t0, t1)`) go through ops as usual.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import dtypes, ops
from ..errors import TracerTypeError, TracerValueError
from ..tracing import Tracer
from ._promotion import (PromotionOverflowError, _holds_tracer, as_result, asarray_like,
                         broadcast_to_shape, cast, constant, dtype_of, error, tracing)
from ._shape import moveaxis

__all__ = ["array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "eye", "identity"]


def _shape_arg(shape: Any, fname: str) -> tuple[int, ...]:
    seq = shape if isinstance(shape, (tuple, list)) else (shape,)
    try:
        if any(isinstance(d, Tracer) for d in seq):
            raise TypeError
        out = tuple(operator.index(d) for d in seq)
    except TypeError:
        raise error(TracerTypeError, fname, f"shape must be static ints, got {shape!r}") \
            from None
    if any(d < 0 for d in out):
        raise error(TracerValueError, fname, f"negative dimensions are not allowed: {out}")
    return out


def _order(order: Any, fname: str) -> None:
    if order not in ("C", "K", "A", None):
        raise error(TracerValueError, fname, f"only C order is supported, got {order!r}")


def _operand(obj: Any, dtype: Any, fname: str) -> Any:
    """`obj` as an array (strong) or tracer. Python numbers (a scalar, or lists without
    traced values) convert straight to an explicit dtype, as NumPy converts them: 10**30
    is inf as float16 (NumPy warns) and 1e30 as float32, not an int64 overflow;
    bfloat16 goes through float32, as ml_dtypes converts floats."""
    if dtype is not None and (dtypes.is_python_scalar(obj) or (
            isinstance(obj, (list, tuple)) and not _holds_tracer(obj))):
        dt = dtypes.canonicalize(dtype)
        try:
            via = np.asarray(obj, dtypes.float32 if dt == dtypes.bfloat16 else dt)
        except OverflowError as e:
            raise error(PromotionOverflowError, fname, f"{obj!r:.60} does not fit {dt} ({e})") \
                from None
        except (TypeError, ValueError) as e:
            raise error(TracerTypeError, fname, f"cannot convert {obj!r:.60} to {dt} ({e})") \
                from None
        return via.astype(dt)
    x = asarray_like(obj, fname)
    return cast(x, dtype_of(x), fname=fname) if dtypes.is_python_scalar(x) else x


def array(object: Any, dtype: Any = None, *, copy: Any = True, order: str = "K",
          subok: bool = False, ndmin: int = 0, like: Any = None) -> Any:
    """An array from any array-like (nested lists may hold traced values).

    NumPy rule: Python scalars get NumPy's default dtypes (int64, float64) and the
    result is strongly typed; dtype= converts; ndmin prepends size-1 axes.

    array([[1, 2], [3, 4]], dtype=np.float32) -> float32 [[1., 2.], [3., 4.]]
    """
    _order(order, "array")
    x = _operand(object, dtype, "array")
    x = cast(x, dtype_of(x) if dtype is None else dtypes.canonicalize(dtype), fname="array")
    if not isinstance(x, Tracer):
        x = np.array(x, copy=True)
    missing = operator.index(ndmin) - np.ndim(x)
    if missing > 0:
        x = ops.reshape(x, (1,) * missing + tuple(np.shape(x)))
    return as_result(x)


def asarray(a: Any, dtype: Any = None, order: Any = None, *, device: Any = None,
            copy: Any = None, like: Any = None) -> Any:
    """`a` as an array, without copying what is already one.

    NumPy rule: as array; a traced value is returned as it is (converted when dtype=
    differs).

    asarray([1.5, 2]) -> float64 [1.5, 2.0]
    """
    _order(order, "asarray")
    x = _operand(a, dtype, "asarray")
    if dtype is not None:
        x = cast(x, dtypes.canonicalize(dtype), fname="asarray")
    return as_result(x)


def _filled(shape: Any, value: Any, dtype: Any, fname: str) -> Any:
    dims = _shape_arg(shape, fname)
    return constant(value, dims, dtypes.float64 if dtype is None else dtype)


def zeros(shape: Any, dtype: Any = float, order: str = "C", *, device: Any = None,
          like: Any = None) -> Any:
    """An array of zeros.

    NumPy rule: the default dtype is float64; shape is an int or a tuple.

    zeros((2, 3), np.int32) -> int32 [[0, 0, 0], [0, 0, 0]]
    """
    _order(order, "zeros")
    return _filled(shape, 0, dtype, "zeros")


def ones(shape: Any, dtype: Any = None, order: str = "C", *, device: Any = None,
         like: Any = None) -> Any:
    """An array of ones.

    NumPy rule: the default dtype is float64.

    ones(3) -> [1.0, 1.0, 1.0]
    """
    _order(order, "ones")
    return _filled(shape, 1, dtype, "ones")


def empty(shape: Any, dtype: Any = float, order: str = "C", *, device: Any = None,
          like: Any = None) -> Any:
    """A new array (filled with zeros here: traced values cannot be uninitialized).

    NumPy rule: as zeros, with unspecified contents.

    empty(2).shape -> (2,)
    """
    _order(order, "empty")
    return _filled(shape, 0, dtype, "empty")


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", *,
         device: Any = None, like: Any = None) -> Any:
    """An array of `shape` filled with `fill_value` (which may be an array or traced).

    NumPy rule: the dtype defaults to fill_value's own (int64 for a Python int); an
    array fill_value broadcasts to shape.

    full((2, 2), 7) -> int64 [[7, 7], [7, 7]]
    """
    _order(order, "full")
    dims = _shape_arg(shape, "full")
    v = asarray_like(fill_value, "full")
    if dtypes.is_python_scalar(v):
        v = np.asarray(v)
    dt = dtype_of(v) if dtype is None else dtypes.canonicalize(dtype)
    _check_int_fill(fill_value, dt, "full")
    if not isinstance(v, Tracer) and np.ndim(v) == 0:
        return constant(v, dims, dt)
    return as_result(broadcast_to_shape(cast(v, dt, fname="full"), dims, "full"))


def _check_int_fill(fill_value: Any, dt: np.dtype, fname: str) -> None:
    """NumPy 2 refuses a Python int fill value outside an integer dtype's range (other
    fill values are cast unsafely, as NumPy does)."""
    if type(fill_value) is int and dt.kind in "iu":
        info = np.iinfo(dt)
        if not info.min <= fill_value <= info.max:
            raise error(PromotionOverflowError, fname, f"Python integer {fill_value} out of "
                        f"bounds for {dt}")


def _like(a: Any, dtype: Any, shape: Any, fname: str) -> tuple[tuple[int, ...], np.dtype]:
    x = asarray_like(a, fname)
    dims = tuple(np.shape(x)) if shape is None else _shape_arg(shape, fname)
    return dims, dtype_of(x) if dtype is None else dtypes.canonicalize(dtype)


def zeros_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: Any = None, *, device: Any = None) -> Any:
    """Zeros with the shape and dtype of `a` (or those given).

    NumPy rule: a Python scalar counts as its default dtype.

    zeros_like(np.ones((2,), np.int8)) -> int8 [0, 0]
    """
    return constant(0, *_like(a, dtype, shape, "zeros_like"))


def ones_like(a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
              shape: Any = None, *, device: Any = None) -> Any:
    """Ones with the shape and dtype of `a` (or those given).

    NumPy rule: as zeros_like.

    ones_like([1.5, 2.5]) -> [1.0, 1.0]
    """
    return constant(1, *_like(a, dtype, shape, "ones_like"))


def empty_like(prototype: Any, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: Any = None, *, device: Any = None) -> Any:
    """A new array like `prototype` (zeros here).

    NumPy rule: as zeros_like, with unspecified contents.

    empty_like([1, 2]).shape -> (2,)
    """
    return constant(0, *_like(prototype, dtype, shape, "empty_like"))


def full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K",
              subok: bool = True, shape: Any = None, *, device: Any = None) -> Any:
    """An array like `a` filled with `fill_value`.

    NumPy rule: the dtype is a's (fill_value is cast to it) unless dtype= is given.

    full_like([1, 2], 2.7) -> int64 [2, 2]
    """
    dims, dt = _like(a, dtype, shape, "full_like")
    _check_int_fill(fill_value, dt, "full_like")
    v = asarray_like(fill_value, "full_like")
    if not isinstance(v, Tracer) and np.ndim(v) == 0:
        with np.errstate(all="ignore"):
            return constant(np.asarray(v).astype(dt), dims, dt)
    return as_result(broadcast_to_shape(cast(v, dt, fname="full_like"), dims, "full_like"))


# ------------------------------------------------------------------ ranges
def _static_number(x: Any, fname: str, what: str) -> Any:
    if isinstance(x, Tracer):
        raise error(TracerTypeError, fname, f"{what} must be a static number (it decides the "
                    f"length), got traced {x.aval}")
    return x


def arange(start: Any = None, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None, like: Any = None) -> Any:
    """Evenly spaced values in [start, stop) with spacing `step` (static numbers).

    NumPy rule: arange(stop), arange(start, stop[, step]); length ceil((stop - start) /
    step); dtype from the arguments (int64 for ints, float64 if any is a float).
    Traced, the values are start + i * (v[1] - v[0]) from an iota, as NumPy fills them.

    arange(1, 2, 0.25) -> [1.0, 1.25, 1.5, 1.75]
    """
    if start is None and stop is None:
        raise error(TracerTypeError, "arange", "arange() requires stop to be specified")
    if stop is None:
        start, stop = 0, start
    args = [_static_number(v, "arange", name) for v, name in
            ((0 if start is None else start, "start"), (stop, "stop"), (1 if step is None
                                                                      else step, "step"))]
    try:
        ref = np.arange(*args, dtype=None if dtype is None else dtypes.canonicalize(dtype))
    except (TypeError, ValueError, ZeroDivisionError) as e:
        raise error(TracerValueError, "arange", f"{e} (start={args[0]!r}, stop={args[1]!r}, "
                    f"step={args[2]!r})") from None
    dt = dtypes.canonicalize(ref.dtype)
    if not tracing() or dtypes.kind(dt) not in "iuf" or ref.size < 2:
        return ref
    with np.errstate(all="ignore"):
        first, delta = ref[0], ref[1] - ref[0]
    return ops.add(ops.mul(ops.iota(dt, ref.shape, 0), delta), first)


def _linspace_dtype(start: Any, stop: Any) -> np.dtype:
    """result_type(start, stop), made inexact (ints -> float64), as NumPy's linspace."""
    dt, _ = dtypes.result_type(start, stop)
    return dt if dtypes.is_inexact(dt) else dtypes.float64


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Any:
    """`num` evenly spaced samples from start to stop (stop excluded if not endpoint).

    NumPy rule: step = (stop - start) / (num - 1) (or / num); samples are start + i * step
    with the last set to stop exactly; start / stop may be arrays (samples go along
    `axis`); an integer dtype floors; retstep also returns step (NaN if undefined).

    linspace(0, 1, 5) -> [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    num = operator.index(num)
    if num < 0:
        raise error(TracerValueError, "linspace", f"Number of samples, {num}, must be "
                    "non-negative.")
    s, e = asarray_like(start, "linspace"), asarray_like(stop, "linspace")
    dt = _linspace_dtype(s, e)
    s, e = (cast(v, dt, fname="linspace") for v in (s, e))
    if dt == dtypes.bfloat16:
        return _linspace_bfloat16(s, e, num, endpoint, retstep, dtype, axis)
    bshape = tuple(np.broadcast_shapes(np.shape(s), np.shape(e)))
    full_shape = (num, *bshape)
    s, e = (broadcast_to_shape(v, bshape, "linspace") for v in (s, e))
    delta = ops.sub(e, s)
    index = ops.convert_element_type(ops.iota(dtypes.real_dtype(dt), full_shape, 0), dt)
    spread = tuple(range(1, len(full_shape)))
    delta_b = ops.broadcast_in_dim(delta, full_shape, spread)
    div = num - 1 if endpoint else num
    if div > 0:
        step = ops.div(delta, div)
        by_step = ops.mul(index, ops.broadcast_in_dim(step, full_shape, spread))
        by_delta = ops.mul(ops.div(index, div), delta_b)  # NumPy's path when step == 0
        zero = ops.broadcast_in_dim(ops.eq(step, 0), full_shape, spread)
        y = ops.select(zero, by_delta, by_step)
    else:
        step = constant(math.nan, (), dt)
        y = ops.mul(index, delta_b)
    y = ops.add(y, ops.broadcast_in_dim(s, full_shape, spread))
    if endpoint and num > 1:
        last = ops.reshape(e, (1, *bshape))
        y = ops.concatenate([ops.slice(y, (0,) * len(full_shape), (num - 1, *bshape)), last], 0)
    y = _finish_linspace(y, axis, dtype, dt)
    return (as_result(y), as_result(step)) if retstep else as_result(y)


def _linspace_bfloat16(s: Any, e: Any, num: int, endpoint: bool, retstep: bool, dtype: Any,
                       axis: int) -> Any:
    """bfloat16 samples computed in float32 and rounded once (as XLA computes them)."""
    wide = linspace(cast(s, dtypes.float32), cast(e, dtypes.float32), num, endpoint, True)
    y, step = (cast(v, dtypes.bfloat16) for v in wide)
    y = _finish_linspace(y, axis, dtype, dtypes.bfloat16)
    return (as_result(y), as_result(step)) if retstep else as_result(y)


def _finish_linspace(y: Any, axis: int, dtype: Any, dt: np.dtype) -> Any:
    if operator.index(axis) != 0:
        y = moveaxis(y, 0, axis)
    if dtype is None:
        return y
    target = dtypes.canonicalize(dtype)
    if target.kind in "iu" and dtypes.is_float(dt):
        y = ops.floor(y)  # NumPy 2 floors toward -inf for integer dtypes
    return cast(y, target, fname="linspace")


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C", *,
        device: Any = None, like: Any = None) -> Any:
    """An N x M array with ones on the k-th diagonal and zeros elsewhere.

    NumPy rule: M defaults to N; k > 0 is above the main diagonal; dtype defaults to
    float64.

    eye(2, 3, k=1) -> [[0., 1., 0.], [0., 0., 1.]]
    """
    _order(order, "eye")
    rows = _shape_arg(N, "eye")[0]
    cols = rows if M is None else _shape_arg(M, "eye")[0]
    k = operator.index(_static_number(k, "eye", "k"))
    dt = dtypes.canonicalize(float if dtype is None else dtype)
    if not tracing():
        return np.eye(rows, cols, k, dtype=dt)
    offset = ops.sub(ops.iota(dtypes.int64, (rows, cols), 1),
                     ops.iota(dtypes.int64, (rows, cols), 0))
    return ops.convert_element_type(ops.eq(offset, k), dt)


def identity(n: int, dtype: Any = None, *, like: Any = None) -> Any:
    """The n x n identity matrix.

    NumPy rule: dtype defaults to float64.

    identity(2) -> [[1., 0.], [0., 1.]]
    """
    return eye(n, dtype=float if dtype is None else dtype)
