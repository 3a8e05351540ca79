"""JAX's `mode=` of `x.at[idx].get()` and the `.at[idx]` updates, for out-of-bounds
integer indices (static or traced):

- `"fill"` (get): such an index reads `fill_value` (JAX's default: NaN for inexact
  dtypes, the most negative value of signed integers, the largest unsigned, True);
- `"clip"`: it is clamped into bounds (after negative indices count from the end);
- `"drop"` (updates): its update is skipped;
- `"promise_in_bounds"` / None: tracer's plain indexing (a static index out of bounds
  raises IndexError as NumPy; a traced one clamps on get and is dropped on update).

"fill" and "drop" index a copy of `x` with one extra slot at the end of every axis an
integer index selects from (holding `fill_value` for a get), and send the out-of-bounds
indices there, so the result has the layout plain indexing gives.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..errors import ParamError
from ..tracing import Tracer
from ._promotion import error

_GET_MODES = (None, "promise_in_bounds", "clip", "fill")
_UPDATE_MODES = (None, "promise_in_bounds", "clip", "drop")


def _is_integer_index(item: Any) -> bool:
    if isinstance(item, bool) or item is None or item is Ellipsis or isinstance(item, slice):
        return False
    if isinstance(item, (int, np.integer)):
        return True
    dtype = getattr(item, "dtype", None)
    if dtype is None and isinstance(item, (list, tuple)):
        dtype = np.asarray(item).dtype
    return dtype is not None and np.dtype(dtype).kind in "iu"


def _index_axes(index: tuple, ndim: int) -> list[int | None]:
    """The axis of `x` each entry of `index` selects from (None: no axis, or not an
    integer index)."""
    consumed = sum(0 if i is None or i is Ellipsis else np.ndim(i) if _is_bool(i) else 1
                   for i in index)
    axes: list[int | None] = []
    axis = 0
    for item in index:
        if item is Ellipsis:
            axis += ndim - consumed
            axes.append(None)
        elif item is None:
            axes.append(None)
        else:
            axes.append(axis if _is_integer_index(item) else None)
            axis += np.ndim(item) if _is_bool(item) else 1
    return axes


def _is_bool(item: Any) -> bool:
    return getattr(item, "dtype", None) is not None and np.dtype(item.dtype) == np.bool_


def _remap(item: Any, size: int, mode: str) -> Any:
    """An integer index with negatives counted from the end, then clamped into
    [0, size) ("clip") or sent to `size`, the extra slot, when out of bounds."""
    from . import clip, where
    if isinstance(item, Tracer):
        norm = where(item < 0, item + size, item)
        if mode == "clip":
            return clip(norm, 0, size - 1)
        return where((norm < 0) | (norm >= size), size, norm)
    arr = np.asarray(item, dtype=np.int64)
    norm = np.where(arr < 0, arr + size, arr)
    out = np.clip(norm, 0, size - 1) if mode == "clip" else \
        np.where((norm < 0) | (norm >= size), size, norm)
    return int(out) if np.ndim(item) == 0 else out


def default_fill(dtype: np.dtype) -> Any:
    """JAX's fill value of `.at[].get(mode="fill")` for `dtype`."""
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtype == np.bool_:
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def _padded(x: Any, axes: list[int], fill: Any) -> Any:
    from . import pad
    widths = [(0, 1) if a in axes else (0, 0) for a in range(np.ndim(x))]
    return pad(x, widths, constant_values=fill)


def _remapped(x: Any, index: Any, mode: str) -> tuple[tuple, list[int]]:
    index = index if isinstance(index, tuple) else (index,)
    axes = _index_axes(index, np.ndim(x))
    shape = np.shape(x)
    new = tuple(item if a is None else _remap(item, shape[a], mode)
                for item, a in zip(index, axes, strict=True))
    return new, sorted({a for a in axes if a is not None})


def _check(what: str, mode: Any, allowed: tuple) -> None:
    if mode not in allowed:
        raise error(ParamError, what, f"mode must be one of "
                    f"{', '.join(repr(m) for m in allowed if m)}, got {mode!r}")


def get_with_mode(x: Any, index: Any, getitem: Callable[[Any, Any], Any], mode: Any,
                  fill_value: Any) -> Any:
    """`x.at[index].get(mode=mode, fill_value=fill_value)`."""
    _check(".at[].get", mode, _GET_MODES)
    if mode in (None, "promise_in_bounds"):
        return getitem(x, index)
    new, axes = _remapped(x, index, mode)
    if mode == "clip":
        return getitem(x, new)
    fill = default_fill(np.dtype(x.dtype)) if fill_value is None else fill_value
    return getitem(_padded(x, axes, fill), new)


def update_with_mode(x: Any, index: Any, values: Any, method: str,
                     index_update: Callable[..., Any], mode: Any) -> Any:
    """`x.at[index].<method>(values, mode=mode)`."""
    _check(f".at[].{method}", mode, _UPDATE_MODES)
    if mode in (None, "promise_in_bounds"):
        return index_update(x, index, values, method)
    new, axes = _remapped(x, index, mode)
    if mode == "clip":
        return index_update(x, new, values, method)
    out = index_update(_padded(x, axes, 0), new, values, method)
    return out[tuple(slice(0, n) for n in np.shape(x))]
