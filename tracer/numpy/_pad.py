"""`tracer.numpy.pad`: NumPy's pad for the modes constant, edge, reflect, symmetric,
wrap (and empty, which pads with zeros here).

`constant` is `ops.pad` (one op when every side uses the same value, else two per
axis). The other modes are static index maps along each axis — edge clamps,
wrap is periodic with period n, symmetric with 2n, reflect with 2(n - 1) — so
pads wider than the array repeat the pattern exactly like NumPy; each map is cut
into slices by `take_static`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..errors import ShapeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from ._promotion import as_result, asarray_like, cast, desc, dtype_of, error
from ._shape import take_static

__all__ = ["pad"]

# Keyword arguments each supported mode accepts.
_MODES: dict[str, frozenset[str]] = {
    "constant": frozenset({"constant_values"}), "empty": frozenset(),
    "edge": frozenset(), "wrap": frozenset(),
    "reflect": frozenset({"reflect_type"}), "symmetric": frozenset({"reflect_type"}),
}


def _pairs(value: Any, ndim: int, what: str) -> np.ndarray:
    """A static scalar / (before, after) / per-axis pairs spec as an (ndim, 2) array."""
    arr = np.asarray(value)
    try:
        return np.broadcast_to(arr, (ndim, 2)) if arr.ndim <= 2 else _bad_pairs(arr, ndim, what)
    except ValueError:
        return _bad_pairs(arr, ndim, what)


def _bad_pairs(arr: np.ndarray, ndim: int, what: str) -> np.ndarray:
    raise error(ShapeError, "pad", f"{what} of shape {arr.shape} cannot be broadcast to "
                f"({ndim}, 2) (one (before, after) pair per axis)")


def _widths(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    if isinstance(pad_width, Tracer):
        raise error(TracerTypeError, "pad", "pad_width must be static ints, got a traced value")
    arr = np.asarray(pad_width)
    if arr.dtype.kind not in "iu":
        raise error(TracerTypeError, "pad", f"`pad_width` must be of integral type, got "
                    f"{pad_width!r}")
    pairs = _pairs(arr.astype(np.int64), ndim, "pad_width")
    if (pairs < 0).any():
        raise error(TracerValueError, "pad", f"index can't contain negative values: "
                    f"{pad_width!r}")
    return [(int(b), int(a)) for b, a in pairs]


def _fill(value: Any, dtype: np.dtype) -> Any:
    """A padding value as a 0-d operand of the array's dtype (cast like assignment)."""
    if isinstance(value, Tracer):
        if value.ndim:
            raise error(TracerTypeError, "pad", f"a traced constant_values must be a "
                        f"scalar, got {value.aval}")
        return cast(value, dtype)
    v = np.asarray(value)
    with np.errstate(all="ignore"):
        return (v if dtype.kind == "c" else v.real).astype(dtype)


def _pad_constant(x: Any, widths: list[tuple[int, int]], values: Any) -> Any:
    dt = dtype_of(x)
    if isinstance(values, Tracer) or np.ndim(values) == 0:
        config = tuple((b, a, 0) for b, a in widths)
        return ops.pad(x, _fill(values, dt), config)
    pairs = _pairs(values, len(widths), "constant_values")
    for axis, ((b, a), (vb, va)) in enumerate(zip(widths, pairs, strict=True)):
        for side, width, value in ((0, b, vb), (1, a, va)):
            if width:
                config = tuple((0, 0, 0) if i != axis else
                               ((width, 0, 0) if side == 0 else (0, width, 0))
                               for i in range(len(widths)))
                x = ops.pad(x, _fill(value, dt), config)
    return x


def _index_map(mode: str, n: int, before: int, after: int) -> np.ndarray:
    """Source index along one axis for every output position (static)."""
    j = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(j, 0, n - 1)
    if mode == "wrap":
        return j % n
    if mode == "symmetric":
        m = j % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if n == 1:  # reflect about a single element repeats it
        return np.zeros_like(j)
    period = 2 * (n - 1)
    m = j % period
    return np.where(m < n, m, period - m)


def _check_kwargs(mode: Any, kwargs: dict[str, Any]) -> None:
    if not isinstance(mode, str) or mode not in _MODES:
        raise error(TracerValueError, "pad", f"mode {mode!r} is not supported; use one of "
                    f"{sorted(_MODES)}")
    extra = set(kwargs) - _MODES[mode]
    if extra:
        raise error(TracerValueError, "pad", f"unsupported keyword arguments for mode "
                    f"'{mode}': {sorted(extra)}")
    if kwargs.get("reflect_type", "even") != "even":
        raise error(TracerValueError, "pad", "only reflect_type='even' is supported")


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """Pad an array: `pad_width` is n, (before, after) or one pair per axis.

    NumPy rule: constant pads with constant_values (default 0, per side/axis allowed);
    edge repeats the edge values; reflect mirrors without the edge, symmetric with
    it; wrap repeats the array; wide pads repeat the pattern. Non-constant modes
    cannot extend an empty axis.

    pad([1, 2, 3], (2, 1), mode="reflect") -> [3, 2, 1, 2, 3, 2]
    """
    _check_kwargs(mode, kwargs)
    x = asarray_like(array, "pad")
    widths = _widths(pad_width, np.ndim(x))
    if not any(b or a for b, a in widths):
        return as_result(x)
    if mode in ("constant", "empty"):
        return as_result(_pad_constant(x, widths, kwargs.get("constant_values", 0)))
    for axis, (b, a) in enumerate(widths):
        n = np.shape(x)[axis]
        if (b or a) and n == 0:
            raise error(TracerValueError, "pad", f"can't extend empty axis {axis} of "
                        f"{desc(x)} using modes other than 'constant' or 'empty'")
        if b or a:
            x = take_static(x, _index_map(mode, n, b, a), axis)
    return as_result(x)
