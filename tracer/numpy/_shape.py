"""NumPy's shape functions (reshape, transpose, squeeze, broadcast_to, repeat, ...)
on the shape ops `reshape`, `transpose`, `broadcast_in_dim`, `slice`, `rev` and
`concatenate`; joining, splitting and rearranging live in `_rearrange`, `pad` in
`_pad`.

All shapes, axes, sections, repeats and shifts are static (Python ints), as in
JAX: they decide the result's shape. Index patterns known statically (`roll`,
`repeat` with per-element counts, `pad` modes reflect / symmetric / wrap) are cut
into runs of consecutive, reversed or repeated indices, each one `slice` (+ `rev`
or a broadcast), joined by one `concatenate` — no gather needed.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import ops
from ..errors import ShapeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from ._promotion import (as_result, asarray_like, broadcast_shapes as _broadcast_shapes,
                         broadcast_to_shape, desc, error, normalize_axes, normalize_axis)

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "moveaxis", "swapaxes", "expand_dims",
    "squeeze", "broadcast_to", "broadcast_arrays", "broadcast_shapes", "atleast_1d",
    "atleast_2d", "atleast_3d", "repeat", "shape", "ndim", "size",
]


# ------------------------------------------------------------------ helpers
def static_ints(value: Any, fname: str, what: str) -> tuple[int, ...]:
    """A static int or sequence of ints as a tuple (Tracers are rejected)."""
    seq = value if isinstance(value, (tuple, list, np.ndarray)) else (value,)
    try:
        if any(isinstance(v, Tracer) for v in seq):
            raise TypeError
        return tuple(operator.index(v) for v in seq)
    except TypeError:
        raise error(TracerTypeError, fname, f"{what} must be static ints, got "
                    f"{value!r}") from None


def slice_axis(x: Any, start: int, stop: int, axis: int) -> Any:
    shape = np.shape(x)
    if (start, stop) == (0, shape[axis]):
        return x
    starts = tuple(start if i == axis else 0 for i in range(len(shape)))
    limits = tuple(stop if i == axis else d for i, d in enumerate(shape))
    return ops.slice(x, starts, limits)


def _resize_axis(x: Any, axis: int, size: int) -> Any:
    """A size-1 `axis` broadcast to `size`."""
    shape = np.shape(x)
    target = tuple(size if i == axis else d for i, d in enumerate(shape))
    return ops.broadcast_in_dim(x, target, tuple(range(len(shape))))


def _runs(idx: Sequence[int]) -> list[tuple[int, int, int]]:
    """Cut an index list into (first, length, step) runs with step +1, -1 or 0."""
    runs, i = [], 0
    while i < len(idx):
        step = idx[i + 1] - idx[i] if i + 1 < len(idx) else 1
        step = step if step in (1, -1, 0) else 1
        j = i + 1
        while j < len(idx) and idx[j] - idx[j - 1] == step:
            j += 1
        runs.append((idx[i], j - i, step))
        i = j
    return runs


def take_static(x: Any, idx: Sequence[int], axis: int) -> Any:
    """x.take(idx, axis) for static in-range `idx`, from slices, revs and broadcasts."""
    idx = [int(i) for i in idx]
    if not idx:
        return slice_axis(x, 0, 0, axis)
    pieces = []
    for first, length, step in _runs(idx):
        if step == 1 or length == 1:
            pieces.append(slice_axis(x, first, first + length, axis))
        elif step == -1:
            pieces.append(ops.rev(slice_axis(x, first - length + 1, first + 1, axis), (axis,)))
        else:
            pieces.append(_resize_axis(slice_axis(x, first, first + 1, axis), axis, length))
    return pieces[0] if len(pieces) == 1 else ops.concatenate(pieces, axis)


# ------------------------------------------------------------------ reshape, transpose
def _infer_shape(shape: tuple[int, ...], size: int, x: Any, fname: str) -> tuple[int, ...]:
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise error(TracerValueError, fname, "can only specify one unknown dimension")
    if any(d < -1 for d in shape):
        raise error(TracerValueError, fname, f"negative dimensions not allowed in {shape}")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if unknown and known and size % known == 0:
        shape = tuple(size // known if d == -1 else d for d in shape)
    if -1 in shape or int(np.prod(shape, dtype=np.int64)) != size:
        raise error(ShapeError, fname, f"cannot reshape array of size {size} ({desc(x)}) "
                    f"into shape {shape}")
    return shape


def reshape(a: Any, /, shape: Any = None, order: str = "C", *, newshape: Any = None,
            copy: Any = None) -> Any:
    """The same data with a new shape; one dimension may be -1 (inferred).

    NumPy rule: sizes must match; only order='C' (row-major) is supported.

    reshape(arange(6), (2, -1)) -> [[0, 1, 2], [3, 4, 5]]
    """
    if (shape is None) == (newshape is None):
        raise error(TracerTypeError, "reshape", "give exactly one of shape and newshape")
    if order != "C":
        raise error(TracerValueError, "reshape", f"only order='C' is supported, got {order!r}")
    x = asarray_like(a, "reshape")
    target = static_ints(shape if newshape is None else newshape, "reshape", "shape")
    target = _infer_shape(target, int(np.prod(np.shape(x), dtype=np.int64)), x, "reshape")
    return as_result(x if target == np.shape(x) else ops.reshape(x, target))


def ravel(a: Any, order: str = "C") -> Any:
    """The elements as a 1-D array, row-major.

    NumPy rule: only order='C'.

    ravel([[1, 2], [3, 4]]) -> [1, 2, 3, 4]
    """
    return reshape(a, (-1,), order=order)


def _permutation(axes: Any, x: Any, fname: str) -> tuple[int, ...]:
    ndim = np.ndim(x)
    perm = tuple(normalize_axis(a, ndim, fname, of=x) for a in static_ints(axes, fname, "axes"))
    if sorted(perm) != list(range(ndim)):
        raise error(TracerValueError, fname, f"axes {tuple(axes)} don't match array of "
                    f"dimension {ndim} ({desc(x)})")
    return perm


def transpose(a: Any, axes: Any = None) -> Any:
    """Permute the dimensions (reverse them when axes is None).

    NumPy rule: axes is a permutation of range(ndim); negative axes allowed.

    transpose(ones((1, 2, 3)), (1, 0, 2)).shape -> (2, 1, 3)
    """
    x = asarray_like(a, "transpose")
    ndim = np.ndim(x)
    perm = tuple(reversed(range(ndim))) if axes is None else _permutation(axes, x, "transpose")
    return as_result(x if perm == tuple(range(ndim)) else ops.transpose(x, perm))


def permute_dims(a: Any, /, axes: Any = None) -> Any:
    """Array-API spelling of transpose.

    NumPy rule: as transpose.

    permute_dims(ones((2, 3)), (1, 0)).shape -> (3, 2)
    """
    return transpose(a, axes)


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """Move axes `source` to positions `destination`, keeping the others' order.

    NumPy rule: source and destination have equal lengths and no repeats.

    moveaxis(ones((3, 4, 5)), 0, -1).shape -> (4, 5, 3)
    """
    x = asarray_like(a, "moveaxis")
    ndim = np.ndim(x)
    src = normalize_axes_ordered(source, ndim, "moveaxis")
    dst = normalize_axes_ordered(destination, ndim, "moveaxis")
    if len(src) != len(dst):
        raise error(TracerValueError, "moveaxis", "`source` and `destination` arguments "
                    "must have the same number of elements")
    order = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(x, tuple(order))


def normalize_axes_ordered(axis: Any, ndim: int, fname: str) -> tuple[int, ...]:
    """Axes in the given order, normalized, no repeats."""
    axes = tuple(normalize_axis(a, ndim, fname) for a in static_ints(axis, fname, "axes"))
    if len(set(axes)) != len(axes):
        raise error(TracerValueError, fname, f"repeated axis in {axis!r}")
    return axes


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """Interchange two axes.

    NumPy rule: negative axes allowed.

    swapaxes(ones((2, 3)), 0, 1).shape -> (3, 2)
    """
    x = asarray_like(a, "swapaxes")
    ndim = np.ndim(x)
    i, j = (normalize_axis(a, ndim, "swapaxes", of=x) for a in (axis1, axis2))
    perm = list(range(ndim))
    perm[i], perm[j] = j, i
    return transpose(x, tuple(perm))


def expand_dims(a: Any, axis: Any) -> Any:
    """Insert size-1 dimensions at `axis` (an int or a tuple) of the result.

    NumPy rule: axes index the result (ndim + len(axis) dims); negatives allowed.

    expand_dims(ones((2, 3)), (0, -1)).shape -> (1, 2, 3, 1)
    """
    x = asarray_like(a, "expand_dims")
    out_ndim = np.ndim(x) + len(static_ints(axis, "expand_dims", "axis"))
    axes = normalize_axes_ordered(axis, out_ndim, "expand_dims")
    dims = iter(np.shape(x))
    return reshape(x, tuple(1 if i in axes else next(dims) for i in range(out_ndim)))


def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove size-1 dimensions (all of them, or those in `axis`).

    NumPy rule: squeezing an axis whose size is not 1 is a ValueError.

    squeeze(ones((1, 3, 1))).shape -> (3,)
    """
    x = asarray_like(a, "squeeze")
    shape = np.shape(x)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes(axis, len(shape), "squeeze", of=x)
    if any(shape[i] != 1 for i in axes):
        raise error(ShapeError, "squeeze", f"cannot select an axis to squeeze out which has "
                    f"size not equal to one ({desc(x)}, axis {axis})")
    return reshape(x, tuple(d for i, d in enumerate(shape) if i not in axes))


# ------------------------------------------------------------------ broadcasting
def broadcast_shapes(*args: Any) -> tuple[int, ...]:
    """The shape NumPy broadcasting gives the given shapes (ints count as 1-D).

    NumPy rule: align trailing dimensions; each pair equal or one of them 1.

    broadcast_shapes((3, 1), (4,)) -> (3, 4)
    """
    shapes = [static_ints(s, "broadcast_shapes", "shapes") for s in args]
    return _broadcast_shapes(*shapes, fname="broadcast_shapes")


def broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
    """`array` broadcast to `shape` (NumPy rules).

    NumPy rule: trailing alignment; size-1 dims stretch; a mismatch is a ValueError.

    broadcast_to([1, 2], (2, 2)) -> [[1, 2], [1, 2]]
    """
    target = static_ints(shape, "broadcast_to", "shape")
    if any(d < 0 for d in target):
        raise error(TracerValueError, "broadcast_to", f"all elements of broadcast shape "
                    f"must be non-negative, got {target}")
    x = asarray_like(array, "broadcast_to")
    return as_result(broadcast_to_shape(x, target, "broadcast_to"))


def broadcast_arrays(*args: Any, subok: bool = False) -> tuple[Any, ...]:
    """The arguments broadcast to one shape (a tuple, as NumPy 2 returns).

    NumPy rule: as broadcast_shapes; dtypes are kept (no promotion).

    broadcast_arrays([1, 2], [[3], [4]]) -> ([[1, 2], [1, 2]], [[3, 3], [4, 4]])
    """
    xs = [asarray_like(a, "broadcast_arrays") for a in args]
    shape = _broadcast_shapes(*(np.shape(x) for x in xs), fname="broadcast_arrays")
    return tuple(as_result(broadcast_to_shape(x, shape, "broadcast_arrays")) for x in xs)


def _atleast(arys: tuple[Any, ...], fname: str, place: Any) -> Any:
    out = []
    for a in arys:
        x = asarray_like(a, fname)
        out.append(as_result(reshape(x, place(np.shape(x)))))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys: Any) -> Any:
    """Inputs viewed with at least one dimension (a tuple when several).

    NumPy rule: 0-d becomes (1,).

    atleast_1d(3.0) -> [3.0]
    """
    return _atleast(arys, "atleast_1d", lambda s: s if len(s) >= 1 else (1,))


def atleast_2d(*arys: Any) -> Any:
    """Inputs viewed with at least two dimensions.

    NumPy rule: 0-d becomes (1, 1), (n,) becomes (1, n).

    atleast_2d([1, 2]).shape -> (1, 2)
    """
    return _atleast(arys, "atleast_2d", lambda s: s if len(s) >= 2 else (1,) * (2 - len(s)) + s)


def atleast_3d(*arys: Any) -> Any:
    """Inputs viewed with at least three dimensions.

    NumPy rule: 0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1).

    atleast_3d([1, 2]).shape -> (1, 2, 1)
    """
    def place(s: tuple[int, ...]) -> tuple[int, ...]:
        return {0: (1, 1, 1), 1: (1, *s, 1), 2: (*s, 1)}.get(len(s), s)
    return _atleast(arys, "atleast_3d", place)


# ------------------------------------------------------------------ repeat, shape queries
def _uniform_repeat(x: Any, count: int, axis: int) -> Any:
    """Each element `count` times: broadcast into a new axis after `axis`, then merge."""
    shape = np.shape(x)
    grown = shape[:axis + 1] + (count,) + shape[axis + 1:]
    dims = tuple(i if i <= axis else i + 1 for i in range(len(shape)))
    merged = shape[:axis] + (shape[axis] * count,) + shape[axis + 1:]
    return ops.reshape(ops.broadcast_in_dim(x, grown, dims), merged)


def repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    """Repeat each element `repeats` times along `axis` (the flattened array if None).

    NumPy rule: repeats is a static int, or one static count per element along axis;
    counts must be non-negative.

    repeat([1, 2], [1, 3]) -> [1, 2, 2, 2]
    """
    x = asarray_like(a, "repeat")
    if axis is None:
        x, ax = ravel(x), 0
    else:
        ax = normalize_axis(axis, np.ndim(x), "repeat", of=x)
    counts = static_ints(repeats, "repeat", "repeats")
    if any(c < 0 for c in counts):
        raise error(TracerValueError, "repeat", f"repeats may not contain negative values, "
                    f"got {counts}")
    n = np.shape(x)[ax]
    if len(counts) == 1:
        return as_result(_uniform_repeat(x, counts[0], ax))
    if len(counts) != n:
        raise error(ShapeError, "repeat", f"operands could not be broadcast together with "
                    f"shape ({n},) ({len(counts)},) ({desc(x)}, axis {ax})")
    return as_result(take_static(x, [i for i, c in enumerate(counts) for _ in range(c)], ax))


def shape(a: Any) -> tuple[int, ...]:
    """The shape of `a` as a tuple of ints (static, also for traced arrays).

    NumPy rule: a Python scalar has shape ().

    shape([[1, 2, 3]]) -> (1, 3)
    """
    return tuple(np.shape(a) if isinstance(a, (Tracer, np.ndarray)) else
                 np.shape(asarray_like(a, "shape")))


def ndim(a: Any) -> int:
    """The number of dimensions of `a`.

    NumPy rule: len(shape(a)).

    ndim([[1, 2, 3]]) -> 2
    """
    return len(shape(a))


def size(a: Any, axis: Any = None) -> int:
    """The number of elements of `a` (along `axis` if given).

    NumPy rule: the product of the shape; axis may be negative.

    size([[1, 2, 3]]) -> 3; size([[1, 2, 3]], 0) -> 1
    """
    s = shape(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    return s[normalize_axis(axis, len(s), "size")]
