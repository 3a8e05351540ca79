"""The machinery behind `tracer.numpy`'s reductions (`_reductions.py`): NumPy's
accumulator and result dtypes, the identities of max / min, one `ops.reduce` with the
float16 / bfloat16 accumulation NumPy and JAX use, `keepdims`, `where=` masks, and the
factory of the monoid reductions (sum, prod).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError
from ._promotion import (as_result, asarray_like, broadcast_to_shape, cast, check_out, desc,
                         dtype_of, error, normalize_axes, promote)
from ._shape import reshape
from ._ufunc_core import NOVALUE


def _ufunc_axes(axis: Any, x: Any, fname: str) -> tuple[int, ...]:
    """`normalize_axes`, plus NumPy's ufunc-reduction leniency: on a 0-d array an int
    axis 0 or -1 (not a tuple) means the whole (one-element) array."""
    if np.ndim(x) == 0 and isinstance(axis, (int, np.integer)) and axis in (0, -1):
        return ()
    return normalize_axes(axis, np.ndim(x), fname, of=x)

def _operand(a: Any, fname: str, dtype: Any = None) -> Any:
    """`a` as a strong array operand (a Python scalar becomes a 0-d array)."""
    x = asarray_like(a, fname)
    dt = dtype_of(x) if dtype is None else dtypes.canonicalize(dtype)
    return cast(x, dt, weak=False, fname=fname)


def _sum_dtype(dt: np.dtype) -> np.dtype:
    """NumPy's accumulator for sum / prod: bools and small ints widen to 64 bits."""
    if dt.kind == "b" or (dt.kind == "i" and dt.itemsize < 8):
        return dtypes.int64
    if dt.kind == "u" and dt.itemsize < 8:
        return dtypes.uint64
    return dt


def _mean_dtype(dt: np.dtype) -> np.dtype:
    """mean / var accumulate integers in float64 and float16 / bfloat16 in float32."""
    if dt.kind in "biu":
        return dtypes.float64
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _result_dtype(in_dt: np.dtype, dtype: Any) -> np.dtype:
    """mean / var result: dtype= if given, 16-bit floats kept, else the accumulator dtype."""
    if dtype is not None:
        return dtypes.canonicalize(dtype)
    return in_dt if in_dt in (dtypes.float16, dtypes.bfloat16) else _mean_dtype(in_dt)


def _lowest(dt: np.dtype) -> Any:
    if dt.kind == "b":
        return False
    if dt.kind in "iu":
        return int(np.iinfo(dt).min)
    return complex(-math.inf, -math.inf) if dt.kind == "c" else -math.inf


def _highest(dt: np.dtype) -> Any:
    if dt.kind == "b":
        return True
    if dt.kind in "iu":
        return int(np.iinfo(dt).max)
    return complex(math.inf, math.inf) if dt.kind == "c" else math.inf


def _reduce(x: Any, axes: tuple[int, ...], op: Callable[..., Any], init: Any) -> Any:
    if not axes:
        return x
    dt = dtype_of(x)
    # NumPy reduces trailing (contiguous) float16 axes in float32 and rounds once; over
    # other axes it adds row by row, rounding each step (the plain f16 reduce).
    # bfloat16 always accumulates in float32, as JAX does.
    trailing = axes == tuple(range(np.ndim(x) - len(axes), np.ndim(x)))
    wide = dt == dtypes.bfloat16 or (dt == dtypes.float16 and trailing)
    if wide and op in (ops.add, ops.mul):
        r = ops.reduce(ops.convert_element_type(x, dtypes.float32),
                       np.asarray(init, dtypes.float32), op, axes)
        return ops.convert_element_type(r, dt)
    return ops.reduce(x, np.asarray(init, dt), op, axes)


def _keep(result: Any, shape: Sequence[int], axes: tuple[int, ...], keepdims: bool) -> Any:
    """Put back the reduced axes as size-1 dimensions when `keepdims`."""
    if not keepdims:
        return result
    return reshape(result, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _mask(where: Any, x: Any, fname: str) -> Any:
    """The where= mask broadcast to x's shape; like NumPy it must be boolean."""
    mask = asarray_like(where, fname)
    if dtype_of(mask).kind != "b":
        raise error(DTypeError, fname, f"where= must be a bool array, got {desc(mask)}")
    return broadcast_to_shape(mask, np.shape(x), fname)


def _masked(x: Any, where: Any, fill: Any, fname: str) -> Any:
    """`x` with the elements where `where` is false replaced by `fill`."""
    if where is True:
        return x
    mask = _mask(where, x, fname)
    fill = ops.broadcast_in_dim(np.asarray(fill, dtype_of(x)), np.shape(x), ())
    return ops.select(mask, x, fill)


def _monoid(fname: str, op: Callable[..., Any], bool_op: Callable[..., Any], identity: int,
            combine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def reduction(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
                  keepdims: bool = False, initial: Any = NOVALUE, where: Any = True) -> Any:
        check_out(out, fname)
        x = asarray_like(a, fname)
        x = _operand(x, fname, _sum_dtype(dtype_of(x)) if dtype is None else dtype)
        axes = _ufunc_axes(axis, x, fname)
        is_bool = dtype_of(x).kind == "b"
        x = _masked(x, where, bool(identity) if is_bool else identity, fname)
        r = _reduce(x, axes, bool_op if is_bool else op, bool(identity) if is_bool else identity)
        if initial is not NOVALUE:
            r = combine(r, promote(initial, dtype=dtype_of(x), fname=fname)[0])
        return as_result(_keep(r, np.shape(x), axes, keepdims))
    reduction.__name__ = reduction.__qualname__ = fname
    reduction.__module__ = "tracer.numpy"
    return reduction
