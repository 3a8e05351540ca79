"""`take` and `take_along_axis` over `tracer.ops.gather`, with NumPy's index modes
(static out-of-range indices raise, traced ones clamp or wrap as `mode` says)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, ops
from ..errors import ParamError, ShapeError, TracerIndexError, TracerTypeError
from ..tracing import Tracer
from ._indexing import _INDEX, _check_array, _dim_size, _wrap, as_index, getitem
from ._linalg import as_operand, broadcast_to, reshape
from ._promotion import desc, error, normalize_axis

__all__ = ["take", "take_along_axis"]


def take(a: Any, indices: Any, axis: int | None = None, mode: str | None = None) -> Any:
    """Elements of `a` at `indices` along `axis` (of the flattened array if None).

    `mode`: None/"raise" (static out-of-range indices raise, traced ones clamp),
    "clip" (clamp to [0, n-1]) or "wrap" (modulo n).
    Example: `take([4, 5, 6], [[0, 2]])` → `[[4, 6]]`.
    """
    a = as_operand(a, "take")
    if axis is None:
        a, axis = reshape(a, (a.size,)), 0
    axis = normalize_axis(axis, a.ndim, "take")
    if not isinstance(indices, Tracer):
        indices = np.asarray(indices)
        if indices.size == 0:  # `take(x, [])`: NumPy reads an empty list as int indices
            indices = indices.astype(_INDEX)
    if np.dtype(indices.dtype).kind not in "biu":
        raise error(TracerIndexError if isinstance(indices, Tracer) else TracerTypeError,
                    "take", f"indices must be integers, got {desc(indices)}")
    if dtypes.is_bool(indices.dtype):  # NumPy's take reads bools as 0/1
        indices = as_index(indices)
    n = a.shape[axis]
    if n == 0 and indices.size:
        raise error(
            TracerIndexError, "take", f"cannot do a non-empty take from an empty axis {axis} of "
            f"{desc(a)}")
    return getitem(a, (slice(None),) * axis + (_apply_mode(indices, a, axis, mode),))


def _apply_mode(indices: Any, a: Any, axis: int, mode: str | None) -> Any:
    """`take`'s mode: "clip" clamps to [0, n-1], "wrap" takes indices modulo n."""
    n = a.shape[axis]
    static = isinstance(indices, np.ndarray)
    if mode == "clip":
        return np.clip(indices, 0, n - 1) if static else ops.clamp(
            np.zeros((), _INDEX), as_index(indices), ops.sub(_dim_size(a, axis),
                                                              np.ones((), _INDEX)))
    if mode == "wrap":  # (a remainder of either sign: getitem wraps negatives once)
        if static:
            return np.mod(indices, n)
        if dtypes.is_signed(indices.dtype):
            return ops.rem(as_index(indices), _dim_size(a, axis))
        # unsigned: the remainder in uint64 (values past int64's range included)
        u64 = np.dtype(np.uint64)
        return as_index(ops.rem(ops.convert_element_type(indices, u64),
                                ops.convert_element_type(_dim_size(a, axis), u64)))
    if mode not in (None, "raise"):
        raise error(
            ParamError, "take", f"mode must be None, 'raise', 'clip' or 'wrap', got {mode!r}")
    return indices


def take_along_axis(arr: Any, indices: Any, axis: int | None) -> Any:
    """`out[..., j, ...] = arr[..., indices[..., j, ...], ...]` along `axis`; the other
    dims of `arr` and `indices` broadcast. Pairs with `argsort`.
    Example: `take_along_axis([[10, 20], [30, 40]], [[1], [0]], 1)` → `[[20], [30]]`.
    """
    arr = as_operand(arr, "take_along_axis")
    if not isinstance(indices, Tracer):
        indices = np.asarray(indices)
    if axis is None:
        arr, axis = reshape(arr, (arr.size,)), 0
    if indices.ndim != arr.ndim or not dtypes.is_integer(indices.dtype):
        raise error(
            ShapeError, "take_along_axis", f"indices {desc(indices)} must be an integer array "
            f"with as many dimensions as arr {desc(arr)}")
    axis = normalize_axis(axis, arr.ndim, "take_along_axis")
    shape = []
    for d, (n, m) in enumerate(zip(arr.shape, indices.shape, strict=True)):
        if d != axis and n != m and 1 not in (n, m):
            raise error(
                ShapeError, "take_along_axis", f"dimension {d} of indices {desc(indices)} and "
                f"arr {desc(arr)} cannot broadcast")
        shape.append(m if d == axis else max(n, m))
    if 0 in shape:
        return broadcast_to(np.zeros((), arr.dtype), shape)
    arr = broadcast_to(arr, [arr.shape[axis] if d == axis else n for d, n in enumerate(shape)])
    return _take_along(arr, _along_indices(indices, tuple(shape), arr, axis), axis)


def _along_indices(indices: Any, shape: tuple[int, ...], arr: Any, axis: int) -> Any:
    """take_along_axis's indices broadcast to `shape`, negatives wrapped (static ones
    checked)."""
    if isinstance(indices, np.ndarray):
        return _check_array(np.broadcast_to(indices, shape), axis, arr.shape[axis],
                            "take_along_axis", desc(arr))
    if not arr.shape[axis]:
        raise error(TracerIndexError, "take_along_axis", f"cannot do a non-empty take from "
                    f"an empty axis {axis} of {desc(arr)}")
    i = as_index(broadcast_to(indices, shape))
    return _wrap(i, arr, axis) if dtypes.is_signed(indices.dtype) else i


def _take_along(arr: Any, indices: Any, axis: int) -> Any:
    """arr[..., indices[..., j, ...], ...] for indices of arr's shape but along `axis`:
    one gather whose other dims are batching dims (no index arrays for them)."""
    others = tuple(d for d in range(arr.ndim) if d != axis)
    dnums = ops.GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
        index_vector_dim=arr.ndim, operand_batching_dims=others,
        start_indices_batching_dims=others)
    return ops.gather(arr, indices, dnums, (1,) * arr.ndim)
