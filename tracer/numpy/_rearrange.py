"""NumPy's joining, splitting and rearranging functions: concatenate, stack and the
*stack family, split / array_split, tile, flip, rot90, roll, tril / triu.

All sizes, sections and shifts are static. Joins convert Python scalars and lists
to arrays first (as NumPy does: `concatenate([int8_array, [1]])` is int64), then
promote every operand to one dtype and call one `ops.concatenate`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, ShapeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from ._promotion import (as_result, asarray_like, broadcast_to_shape, constant, desc, dtype_of,
                         error, normalize_axes, normalize_axis, promote, result_dtype)
from ._shape import (slice_axis, static_ints, atleast_1d, atleast_2d, atleast_3d,
                     expand_dims, ravel, reshape, transpose)

__all__ = [
    "concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack", "split",
    "array_split", "tile", "flip", "fliplr", "flipud", "rot90", "roll", "tril", "triu",
]


# ------------------------------------------------------------------ joining
def _operands(arrays: Any, fname: str, dtype: Any, casting: str = "same_kind") -> list[Any]:
    """The arrays to join: strong (Python scalars become arrays), one dtype; a dtype=
    must be reachable from every input under `casting`, as in NumPy."""
    if not hasattr(arrays, "__iter__"):
        raise error(TracerTypeError, fname, f"expects a sequence of arrays, got "
                    f"{type(arrays).__name__}")
    items = [asarray_like(a, fname) for a in arrays]
    if not items:
        raise error(TracerValueError, fname, "need at least one array to join")
    items = [np.asarray(x) if not isinstance(x, (Tracer, np.ndarray)) else x for x in items]
    target = result_dtype(*items, fname=fname)[0] if dtype is None else \
        dtypes.canonicalize(dtype)
    _check_casting(items, target, casting, fname)
    return promote(*items, fname=fname, dtype=dtype)


def _check_casting(items: list[Any], dt: np.dtype, casting: str, fname: str) -> None:
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise error(TracerValueError, fname, f"casting must be one of 'no', 'equiv', 'safe', "
                    f"'same_kind', or 'unsafe', got {casting!r}")
    for x in items:
        if not np.can_cast(dtype_of(x), dt, casting=casting):
            raise error(DTypeError, fname, f"Cannot cast array data from {desc(x)} to {dt} "
                        f"according to the rule {casting!r}")


def _check_joinable(items: list[Any], axis: int, fname: str) -> None:
    first = np.shape(items[0])
    for i, x in enumerate(items[1:], start=1):
        s = np.shape(x)
        if len(s) != len(first):
            raise error(ShapeError, fname, f"all the input arrays must have same number of "
                        f"dimensions, but the array at index 0 has {len(first)} dimension(s) "
                        f"and the array at index {i} has {len(s)} dimension(s) "
                        f"({desc(items[0])}, {desc(x)})")
        for d, (p, q) in enumerate(zip(first, s, strict=True)):
            if d != axis and p != q:
                raise error(ShapeError, fname, f"all the input array dimensions except for "
                            f"the concatenation axis must match exactly, but along dimension "
                            f"{d}, the array at index 0 has size {p} and the array at index "
                            f"{i} has size {q} ({desc(items[0])}, {desc(x)})")


def _join(items: list[Any], axis: Any, fname: str) -> Any:
    if axis is None:
        items, axis = [ravel(x) for x in items], 0
    if np.ndim(items[0]) == 0:
        raise error(ShapeError, fname, "zero-dimensional arrays cannot be concatenated")
    ax = normalize_axis(axis, np.ndim(items[0]), fname, of=items[0])
    _check_joinable(items, ax, fname)
    return as_result(items[0] if len(items) == 1 else ops.concatenate(items, ax))


def concatenate(arrays: Sequence[Any], /, axis: Any = 0, out: None = None, *,
                dtype: Any = None, casting: str = "same_kind") -> Any:
    """Join arrays along an existing axis (flattened first when axis is None).

    NumPy rule: same rank, equal sizes off the axis; dtypes promote (dtype= overrides).

    concatenate(([1, 2], [3])) -> [1, 2, 3]
    """
    _check_out(out, "concatenate")
    return _join(_operands(arrays, "concatenate", dtype, casting), axis, "concatenate")


def concat(arrays: Sequence[Any], /, axis: Any = 0, out: None = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    """Array-API spelling of concatenate.

    NumPy rule: as concatenate.

    concat(([1], [2])) -> [1, 2]
    """
    return concatenate(arrays, axis, out, dtype=dtype, casting=casting)


def _check_out(out: Any, fname: str) -> None:
    if out is not None:
        raise error(TracerTypeError, fname, "out= is not supported (arrays are immutable "
                    "under tracing); use the returned value")


def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, *, dtype: Any = None,
          casting: str = "same_kind") -> Any:
    """Join same-shaped arrays along a new axis.

    NumPy rule: all shapes equal; the new axis indexes the result (negatives ok).

    stack(([1, 2], [3, 4]), axis=1) -> [[1, 3], [2, 4]]
    """
    _check_out(out, "stack")
    items = _operands(arrays, "stack", dtype, casting)
    if len({np.shape(x) for x in items}) != 1:
        raise error(ShapeError, "stack", "all input arrays must have the same shape, got "
                    + ", ".join(map(desc, items)))
    ax = normalize_axis(axis, np.ndim(items[0]) + 1, "stack", of=items[0])
    return _join([expand_dims(x, ax) for x in items], ax, "stack")


def hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Join column-wise: along axis 1 (axis 0 for 1-D inputs).

    NumPy rule: inputs become at least 1-D.

    hstack(([1, 2], [3])) -> [1, 2, 3]
    """
    items = [atleast_1d(x) for x in _operands(tup, "hstack", dtype, casting)]
    return _join(items, 0 if np.ndim(items[0]) == 1 else 1, "hstack")


def vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Join row-wise (along axis 0 of the inputs made at least 2-D).

    NumPy rule: (n,) inputs become (1, n).

    vstack(([1, 2], [3, 4])) -> [[1, 2], [3, 4]]
    """
    return _join([atleast_2d(x) for x in _operands(tup, "vstack", dtype, casting)], 0, "vstack")


def dstack(tup: Sequence[Any]) -> Any:
    """Join depth-wise (along axis 2 of the inputs made at least 3-D).

    NumPy rule: (n,) -> (1, n, 1), (m, n) -> (m, n, 1).

    dstack(([1, 2], [3, 4])).shape -> (1, 2, 2)
    """
    return _join([atleast_3d(x) for x in _operands(tup, "dstack", None)], 2, "dstack")


def column_stack(tup: Sequence[Any]) -> Any:
    """Stack 1-D arrays as columns of a 2-D array (2-D inputs join as they are).

    NumPy rule: inputs with ndim < 2 become columns (n, 1).

    column_stack(([1, 2], [3, 4])) -> [[1, 3], [2, 4]]
    """
    items = [transpose(atleast_2d(x)) if np.ndim(x) < 2 else x
             for x in _operands(tup, "column_stack", None)]
    return _join(items, 1, "column_stack")


# ------------------------------------------------------------------ splitting
def _split_bounds(spec: Any, n: int, fname: str) -> list[tuple[int, int]]:
    if isinstance(spec, (tuple, list, np.ndarray)):
        cuts = [0, *static_ints(spec, fname, "indices"), n]
        bounds = []
        for a, b in zip(cuts, cuts[1:]):
            start, stop, _ = slice(a, b).indices(n)  # Python slice semantics, as NumPy
            bounds.append((start, max(start, stop)))
        return bounds
    (sections,) = static_ints(spec, fname, "indices_or_sections")
    if sections <= 0:
        raise error(TracerValueError, fname, "number sections must be larger than 0.")
    each, extra = divmod(n, sections)
    sizes = [each + 1] * extra + [each] * (sections - extra)
    starts = np.cumsum([0] + sizes)
    return [(int(s), int(e)) for s, e in zip(starts[:-1], starts[1:])]


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Split into sub-arrays: N nearly equal parts, or at the given indices.

    NumPy rule: with N sections the first n % N parts get one extra element; indices
    follow slice rules (past-the-end gives empty parts).

    array_split([1, 2, 3, 4, 5], 2) -> [[1, 2, 3], [4, 5]]
    """
    x = asarray_like(ary, "array_split")
    ax = normalize_axis(axis, np.ndim(x), "array_split", of=x)
    bounds = _split_bounds(indices_or_sections, np.shape(x)[ax], "array_split")
    return [as_result(slice_axis(x, s, e, ax)) for s, e in bounds]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """Split into equal sections, or at the given indices.

    NumPy rule: N sections must divide the axis length exactly (ValueError otherwise).

    split([1, 2, 3, 4], 2) -> [[1, 2], [3, 4]]
    """
    x = asarray_like(ary, "split")
    ax = normalize_axis(axis, np.ndim(x), "split", of=x)
    if not isinstance(indices_or_sections, (tuple, list, np.ndarray)):
        (sections,) = static_ints(indices_or_sections, "split", "indices_or_sections")
        if sections > 0 and np.shape(x)[ax] % sections:
            raise error(ShapeError, "split", f"array split does not result in an equal "
                        f"division ({desc(x)} into {sections} along axis {ax})")
    return array_split(x, indices_or_sections, ax)


# ------------------------------------------------------------------ tile, flip, rot90, roll
def tile(A: Any, reps: Any) -> Any:
    """Repeat the whole array `reps` times along each axis.

    NumPy rule: reps and the shape are left-padded with 1s to the same length.

    tile([1, 2], (2, 2)) -> [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    x = asarray_like(A, "tile")
    reps = static_ints(reps, "tile", "reps")
    if any(r < 0 for r in reps):
        raise error(TracerValueError, "tile", f"negative dimensions are not allowed: {reps}")
    nd = max(len(reps), np.ndim(x))
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - np.ndim(x)) + tuple(np.shape(x))
    x = reshape(x, shape)
    grown = tuple(d for pair in zip(reps, shape, strict=True) for d in pair)
    tiled = ops.broadcast_in_dim(x, grown, tuple(range(1, 2 * nd, 2)))
    return as_result(ops.reshape(tiled, tuple(r * s for r, s in zip(reps, shape, strict=True))))


def flip(m: Any, axis: Any = None) -> Any:
    """Reverse the order of elements along `axis` (all axes when None).

    NumPy rule: axis is an int or a tuple; negatives allowed.

    flip([[1, 2], [3, 4]], 1) -> [[2, 1], [4, 3]]
    """
    x = asarray_like(m, "flip")
    axes = normalize_axes(axis, np.ndim(x), "flip", of=x)
    return as_result(ops.rev(x, axes) if axes else x)


def fliplr(m: Any) -> Any:
    """Reverse the columns (axis 1).

    NumPy rule: the input must be at least 2-D.

    fliplr([[1, 2]]) -> [[2, 1]]
    """
    x = asarray_like(m, "fliplr")
    if np.ndim(x) < 2:
        raise error(ShapeError, "fliplr", f"Input must be >= 2-d, got {desc(x)}")
    return flip(x, 1)


def flipud(m: Any) -> Any:
    """Reverse the rows (axis 0).

    NumPy rule: the input must be at least 1-D.

    flipud([1, 2]) -> [2, 1]
    """
    x = asarray_like(m, "flipud")
    if np.ndim(x) < 1:
        raise error(ShapeError, "flipud", f"Input must be >= 1-d, got {desc(x)}")
    return flip(x, 0)


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Any:
    """Rotate by 90 degrees k times in the plane of `axes` (from the first toward the
    second axis).

    NumPy rule: two different in-range axes; k may be negative.

    rot90([[1, 2], [3, 4]]) -> [[2, 4], [1, 3]]
    """
    x = asarray_like(m, "rot90")
    nd = np.ndim(x)
    axes = static_ints(axes, "rot90", "axes")
    if len(axes) != 2:
        raise error(TracerValueError, "rot90", f"len(axes) must be 2, got {axes}")
    a0, a1 = (normalize_axis(a, nd, "rot90", of=x) for a in axes)
    if a0 == a1:
        raise error(TracerValueError, "rot90", f"Axes must be different, got {axes}")
    (k,) = static_ints(k, "rot90", "k")
    k %= 4
    if k == 0:
        return as_result(x)
    if k == 2:
        return flip(x, (a0, a1))
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(x, a1), perm) if k == 1 else flip(transpose(x, perm), a1)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Shift elements cyclically along `axis` (of the flattened array when None).

    NumPy rule: shift and axis are ints or equal-length tuples (a scalar pairs with
    every entry); shifts on one axis add up.

    roll([1, 2, 3, 4], 1) -> [4, 1, 2, 3]
    """
    x = asarray_like(a, "roll")
    shifts = static_ints(shift, "roll", "shift")
    if axis is None:
        # NumPy pairs every shift with the one flat axis: they add up.
        return reshape(roll(ravel(x), sum(shifts), 0), np.shape(x))
    axes = static_ints(axis, "roll", "axis")
    if len(shifts) == 1 or len(axes) == 1:
        count = max(len(shifts), len(axes))
        shifts, axes = shifts * (count // len(shifts)), axes * (count // len(axes))
    if len(shifts) != len(axes):
        raise error(TracerValueError, "roll", f"'shift' {shifts} and 'axis' {axes} should be "
                    "scalars or 1D sequences of the same length")
    total: dict[int, int] = {}
    for s, ax in zip(shifts, axes, strict=True):
        ax = normalize_axis(ax, np.ndim(x), "roll", of=x)
        total[ax] = total.get(ax, 0) + s
    for ax, s in total.items():
        n = np.shape(x)[ax]
        if n and s % n:
            # A window of [x, x]: every roll of x along ax shares the one concatenate
            # (CSE), and the slice fuses into whatever consumes it.
            start = n - s % n
            x = slice_axis(ops.concatenate([x, x], ax), start, start + n, ax)
    return as_result(x)


# ------------------------------------------------------------------ tril, triu
def _triangle(fname: str, m: Any, k: Any, lower: bool) -> Any:
    x = asarray_like(m, fname)
    if np.ndim(x) == 0:
        raise error(ShapeError, fname, f"input must be at least 1-d, got {desc(x)}")
    if np.ndim(x) == 1:  # NumPy treats a vector as the rows of a square matrix
        x = broadcast_to_shape(x, np.shape(x) * 2, fname)
    (k,) = static_ints(k, fname, "k")
    shape = np.shape(x)
    rows = ops.iota(dtypes.int64, shape[-2:], 0)
    cols = ops.iota(dtypes.int64, shape[-2:], 1)
    offset = ops.sub(cols, rows)
    mask = ops.le(offset, k) if lower else ops.ge(offset, k)
    mask = broadcast_to_shape(mask, shape, fname)
    return as_result(ops.select(mask, x, constant(0, shape, dtype_of(x))))


def tril(m: Any, k: int = 0) -> Any:
    """Lower triangle: elements above the k-th diagonal set to 0.

    NumPy rule: applies to the last two axes; a 1-D input is broadcast to a square.

    tril([[1, 2], [3, 4]]) -> [[1, 0], [3, 4]]
    """
    return _triangle("tril", m, k, lower=True)


def triu(m: Any, k: int = 0) -> Any:
    """Upper triangle: elements below the k-th diagonal set to 0.

    NumPy rule: as tril.

    triu([[1, 2], [3, 4]]) -> [[1, 2], [0, 4]]
    """
    return _triangle("triu", m, k, lower=False)
