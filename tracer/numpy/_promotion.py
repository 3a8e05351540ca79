"""NumPy 2 promotion (NEP 50) and broadcasting on top of the strict `tracer.ops`.

`tracer.ops` wants operands of one dtype and (mostly) one shape; `tracer.numpy`
gets whatever NumPy accepts. This module bridges the two:

- `asarray_like` turns an input into an ops operand: Tracers and NumPy arrays stay
  as they are, Python scalars stay Python scalars (they are *weak*: NEP 50), and
  lists / tuples / NumPy scalars become arrays (stacked with ops when they hold
  Tracers).
- `promote` gives operands the NEP 50 result dtype (`tracer.dtypes.result_type`):
  `int8_array + 1` is int8, `float32 * 2.0` is float32, `int64 + float32` is
  float64, and `uint8_array + -1` raises `PromotionOverflowError` (an
  `OverflowError`, like NumPy 2).
- `broadcast_arrays` / `broadcast_shapes` follow NumPy's rules and call
  `ops.broadcast_in_dim`; incompatible shapes raise `ShapeError` naming them.

Every public `tracer.numpy` function starts here, so the errors it raises for
bad input name the function and the operands (`f32[2,3]`) and the user's line.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..core import ShapedArray, reject_masked
from ..errors import (DTypeError, ShapeError, TracerError, TracerIndexError, TracerTypeError,
                      TracerValueError)
from ..tracing import Tracer, current_builder
from ..ops.common import wrapper_error as error

__all__ = ["PromotionOverflowError", "asarray_like", "promote", "broadcast_arrays",
           "broadcast_shapes", "promote_and_broadcast"]

# The Python type a weak value of each dtype kind is spelled with (NEP 50).
_PY_KIND = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


class PromotionOverflowError(TracerValueError, OverflowError):
    """A Python int does not fit the dtype it must take (NumPy 2: OverflowError)."""


def desc(x: Any) -> str:
    """`f32[2,3]` for arrays and tracers, `python int 3` for Python scalars."""
    if dtypes.is_python_scalar(x):
        return f"python {type(x).__name__} {x!r}"
    if isinstance(x, Tracer):
        return str(x.aval)
    arr = np.asarray(x)
    try:
        return str(ShapedArray(arr.shape, arr.dtype))
    except TracerError:
        return f"{arr.dtype}{list(arr.shape)}"


def check_out(out: Any, fname: str) -> None:
    """tracer arrays are immutable: `out=` is accepted only as None."""
    if out is not None:
        raise error(TracerTypeError, fname, "out= is not supported (arrays are immutable "
                    "under tracing); use the returned value")


def is_concrete(x: Any) -> bool:
    return not isinstance(x, Tracer)


def tracing() -> bool:
    return current_builder() is not None


def asarray_like(x: Any, fname: str = "asarray") -> Any:
    """An ops operand for `x`: a Tracer, a NumPy array of a supported dtype, or a
    Python scalar (kept, because it is weakly typed)."""
    if type(x) is not np.ndarray:
        reject_masked(x, fname)
    if isinstance(x, (Tracer, np.ndarray)) or dtypes.is_python_scalar(x):
        arr = x
    elif isinstance(x, (list, tuple)) and _holds_tracer(x):
        return _stack_nested(x, fname)
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise error(TracerTypeError, fname, f"cannot convert {type(x).__name__} to an "
                        f"array ({e})") from None
    if not dtypes.is_python_scalar(arr) and np.dtype(arr.dtype) not in dtypes.SUPPORTED:
        raise error(DTypeError, fname, f"dtype {arr.dtype} is not supported by tracer")
    return arr


def _holds_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    return isinstance(x, (list, tuple)) and any(_holds_tracer(v) for v in x)


def _stack_nested(x: Sequence[Any], fname: str) -> Any:
    """`[t0, t1, ...]` holding Tracers: promote, then stack along a new axis 0."""
    items = [asarray_like(v, fname) for v in x]
    items = promote(*items, fname=fname)
    shapes = {np.shape(v) for v in items}
    if len(shapes) != 1:
        raise error(ShapeError, fname, "setting an array element with a sequence: the "
                    f"nested elements have different shapes {', '.join(map(desc, items))}")
    shape = (len(items),) + shapes.pop()
    parts = [ops.broadcast_in_dim(v, (1,) + shape[1:], tuple(range(1, len(shape))))
             for v in items]
    return ops.concatenate(parts, 0) if len(parts) > 1 else parts[0]


def is_weak(x: Any) -> bool:
    return dtypes.is_python_scalar(x) or (isinstance(x, Tracer) and x.weak_type)


def dtype_of(x: Any) -> np.dtype:
    """The dtype `x` has on its own (a Python scalar: NumPy's default for its kind)."""
    if dtypes.is_python_scalar(x):
        return dtypes.weak_dtype(x)
    return np.dtype(x.dtype)


def cast(x: Any, dtype: np.dtype, weak: bool = False, fname: str = "astype") -> Any:
    """`x` as `dtype`; a Python scalar stays a (weak) Python scalar when `weak`."""
    if dtypes.is_python_scalar(x):
        py_type = _PY_KIND[dtypes.kind(dtype)]
        # Stay weak only where a Python scalar of that kind means `dtype` on its own.
        if weak and dtypes.weak_dtype(py_type(0)) == dtype:
            _check_int_range(x, dtype, fname)  # (a weak int must fit the int64 it stands for)
            return py_type(x)
        return _scalar_array(x, dtype, fname)
    if np.dtype(x.dtype) == dtype and not (isinstance(x, Tracer) and x.weak_type and not weak):
        return x
    if isinstance(x, Tracer):
        return ops.convert_element_type(x, dtype, weak_type=weak and x.weak_type)
    return ops.convert_element_type(np.asarray(x), dtype)


def _check_int_range(x: Any, dtype: np.dtype, fname: str) -> None:
    if isinstance(x, int) and not isinstance(x, bool) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise error(PromotionOverflowError, fname, f"Python integer {x} out of bounds "
                        f"for {dtype}")


def _scalar_array(x: Any, dtype: np.dtype, fname: str) -> np.ndarray:
    """A Python scalar as a strong 0-d array of `dtype`; out-of-range ints raise."""
    _check_int_range(x, dtype, fname)
    if isinstance(x, complex) and dtype.kind != "c":
        raise error(DTypeError, fname, f"cannot use complex {x!r} with {dtype} operands")
    try:
        if dtype == dtypes.bfloat16:  # (ml_dtypes takes no Python int beyond int64)
            x = float(x)
        with np.errstate(all="ignore"):
            return np.asarray(x, dtype=dtype)
    except OverflowError as e:
        raise error(PromotionOverflowError, fname, f"Python {type(x).__name__} {x!r} does "
                    f"not fit {dtype} ({e})") from None


def result_dtype(*xs: Any, fname: str = "result_type") -> tuple[np.dtype, bool]:
    """NEP 50 result of operands (Tracers, arrays, Python scalars) → (dtype, weak)."""
    try:
        return dtypes.result_type(*xs)
    except (TypeError, TracerError) as e:
        raise error(DTypeError, fname, f"cannot promote {', '.join(map(desc, xs))} "
                    f"({e})") from None


def promote(*xs: Any, fname: str = "promote", dtype: Any = None) -> list[Any]:
    """The operands converted to their NEP 50 result dtype (or to `dtype`).

    Weak operands (Python scalars, weak Tracers) take the strong operands' dtype;
    the result is weak only when every operand is weak, and then Python scalars
    stay Python scalars so the ops see them as weak literals.
    """
    xs = tuple(asarray_like(x, fname) for x in xs)
    if dtype is not None:
        target, weak = dtypes.canonicalize(dtype), False
    else:
        target, weak = result_dtype(*xs, fname=fname)
    return [cast(x, target, weak, fname) for x in xs]


def broadcast_shapes(*shapes: Sequence[int], fname: str = "broadcast_shapes",
                     operands: Sequence[Any] = ()) -> tuple[int, ...]:
    """NumPy's broadcast of static shapes; ShapeError naming every shape (and the
    `operands`' avals, when given) otherwise."""
    shapes = tuple(tuple(operator.index(d) for d in s) for s in shapes)
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, start=ndim - len(s)):
            if d != out[i] and out[i] != 1 and d != 1:
                shown = " ".join(f"({','.join(map(str, t))}{',' if len(t) == 1 else ''})"
                                 for t in shapes)
                avals = f" ({', '.join(map(desc, operands))})" if operands else ""
                raise error(ShapeError, fname, f"shape mismatch: objects cannot be broadcast "
                            f"to a single shape: {shown}{avals}")
            if out[i] == 1:
                out[i] = d
    return tuple(out)


def broadcast_to_shape(x: Any, shape: tuple[int, ...], fname: str = "broadcast_to") -> Any:
    """`x` broadcast (NumPy rules, trailing alignment) to exactly `shape`."""
    xshape = tuple(np.shape(x))
    if xshape == shape:
        return x
    lead = len(shape) - len(xshape)
    if lead < 0 or any(d not in (1, t) for d, t in zip(xshape, shape[lead:], strict=True)):
        raise error(ShapeError, fname, f"cannot broadcast {desc(x)} to shape {shape}")
    # broadcast_in_dim grows size-1 operand dims itself (degenerate broadcasting).
    return ops.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def broadcast_arrays(*xs: Any, fname: str = "broadcast_arrays",
                     keep_scalars: bool = False) -> list[Any]:
    """The operands broadcast to their common NumPy shape.

    With `keep_scalars`, 0-d operands are left alone: the element-wise ops
    broadcast scalars themselves, so the graph stays smaller.
    """
    shape = broadcast_shapes(*(np.shape(x) for x in xs), fname=fname, operands=xs)
    return [x if keep_scalars and np.ndim(x) == 0 else broadcast_to_shape(x, shape, fname)
            for x in xs]


def promote_and_broadcast(*xs: Any, fname: str = "promote_and_broadcast",
                          keep_scalars: bool = True) -> list[Any]:
    """`promote` then `broadcast_arrays` (0-d operands kept unless told otherwise)."""
    return broadcast_arrays(*promote(*xs, fname=fname), fname=fname, keep_scalars=keep_scalars)


def normalize_axis(axis: Any, ndim: int, fname: str, of: Any = None) -> int:
    """`axis` in [-ndim, ndim) as a non-negative int (NumPy's AxisError otherwise);
    `of` is the array, named in the message."""
    if isinstance(axis, Tracer):
        raise error(TracerTypeError, fname, f"axis must be a static int, got traced "
                    f"{axis.aval}")
    try:
        a = operator.index(axis)
    except TypeError:
        raise error(TracerTypeError, fname, f"axis must be an int, got {axis!r}") from None
    if not -ndim <= a < ndim:
        shown = "" if of is None else f" ({desc(of)})"
        raise error(TracerIndexError, fname, f"axis {a} is out of bounds for array of "
                    f"dimension {ndim}{shown}")
    return a % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, fname: str, of: Any = None) -> tuple[int, ...]:
    """`axis` (None = all, int, or tuple) as sorted distinct non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    seq = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = tuple(normalize_axis(a, ndim, fname, of) for a in seq)
    if len(set(axes)) != len(axes):
        raise error(TracerValueError, fname, f"duplicate value in 'axis': {seq}")
    return tuple(sorted(axes))


def as_result(x: Any) -> Any:
    """Outside a trace every result is an ndarray (a Python scalar becomes 0-d)."""
    return x if isinstance(x, Tracer) else np.asarray(x)


def constant(value: Any, shape: Sequence[int], dtype: Any) -> Any:
    """An array of `shape` filled with the static `value`: a fresh writeable ndarray
    outside a trace, a broadcast literal (one cheap op) inside one."""
    dtype = dtypes.canonicalize(dtype)
    shape = tuple(int(d) for d in shape)
    with np.errstate(all="ignore"):
        scalar = np.asarray(value, dtype=dtype)
    if not tracing():
        return np.full(shape, scalar, dtype=dtype)
    return ops.broadcast_in_dim(scalar, shape, ())


def float_of(dtype: np.dtype) -> np.dtype:
    """The dtype NumPy computes a float-only function in: inexact (bfloat16 too) stays,
    otherwise the smallest float that holds the type (bool/int8/uint8 -> f16, 16-bit ->
    f32, else f64)."""
    dtype = np.dtype(dtype)
    return dtype if dtypes.is_inexact(dtype) else np.dtype(np.promote_types(dtype, np.float16))
