"""Editing arrays functionally: append, insert, delete, resize, put, put_along_axis,
fill_diagonal, select, piecewise, choose, compress, extract, cross, and the split /
axis helpers hsplit, vsplit, dsplit, unstack, rollaxis.

NumPy's in-place functions (put, put_along_axis, fill_diagonal) take
`inplace=False` and return the new array, as JAX's do: traced arrays are
immutable, and calling them through `np.put(...)` on a traced array must not
silently do nothing. Positions that decide the result's shape (insert / delete
indices, compress masks) must be static.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError, TracerIndexError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from . import _ufuncs as uf
from ._indexing import getitem, index_update
from ._promotion import (as_result, asarray_like, broadcast_arrays, broadcast_to_shape, cast,
                         constant, desc, dtype_of, error, normalize_axis, promote,
                         result_dtype)
from ._rearrange import array_split, concatenate, split, stack
from ._shape import moveaxis, ravel, reshape, slice_axis, take_static

__all__ = ["append", "insert", "delete", "resize", "put", "put_along_axis", "fill_diagonal",
           "select", "piecewise", "choose", "compress", "extract", "cross", "hsplit",
           "vsplit", "dsplit", "unstack", "rollaxis"]


def _operand(x: Any, fname: str) -> Any:
    v = asarray_like(x, fname)
    return cast(v, dtype_of(v), fname=fname)


def _no_inplace(inplace: bool, fname: str) -> None:
    if inplace:
        raise error(TracerTypeError, fname, f"numpy.{fname} modifies its argument in place, "
                    f"which arrays cannot do under tracing; call tracer.numpy.{fname}(..., "
                    "inplace=False) and use the returned array")


def _static(value: Any, fname: str, what: str) -> np.ndarray:
    if isinstance(value, Tracer):
        raise error(TracerTypeError, fname, f"{what} decides the result's shape and must be "
                    f"static, got traced {value.aval}")
    return np.asarray(value)


# ------------------------------------------------------------------ append, insert, delete
def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """`arr` with `values` joined at the end (both flattened when axis is None).

    NumPy rule: NEP 50 promotion of concatenate.

    append([1, 2], [[3], [4]]) -> [1, 2, 3, 4]
    """
    a, v = _operand(arr, "append"), _operand(values, "append")
    if axis is None:
        return concatenate([ravel(a), ravel(v)])
    return concatenate([a, v], axis=axis)


def _flat_axis(a: Any, axis: Any, fname: str) -> tuple[Any, int]:
    if axis is None:
        return ravel(a), 0
    return a, normalize_axis(axis, np.ndim(a), fname, of=a)


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """`arr` with `values` inserted before the static index / indices `obj` along axis.

    NumPy rule: values take arr's dtype; an int index inserts the whole block of
    values; a sequence (or slice) inserts one value before each index; negative
    indices count from the end; arr is flattened when axis is None.

    insert([1, 2, 3], 1, [8, 9]) -> [1, 8, 9, 2, 3]; insert([1, 2, 3], [0, 2], 0) -> [0, 1, 2, 0, 3]
    """
    a, ax = _flat_axis(_operand(arr, "insert"), axis, "insert")
    n = np.shape(a)[ax]
    idx = np.arange(n)[obj] if isinstance(obj, slice) else _static(obj, "insert", "obj")
    if idx.dtype.kind == "b" or (idx.size and idx.dtype.kind not in "iu"):
        raise error(TracerIndexError, "insert", "index array argument obj to insert must be "
                    "one dimensional or scalar integers")
    if np.any((idx < -n) | (idx > n)):
        raise error(TracerIndexError, "insert", f"index {obj} is out of bounds for axis {ax} "
                    f"with size {n}")
    idx = np.where(idx < 0, idx + n, idx).astype(np.int64)
    v = cast(asarray_like(values, "insert"), dtype_of(a), fname="insert")
    rest = tuple(d for i, d in enumerate(np.shape(a)) if i != ax)
    if idx.ndim == 0:
        v = reshape(v, (1,) * (np.ndim(a) - np.ndim(v)) + tuple(np.shape(v)))
        v = moveaxis(v, 0, ax) if np.ndim(v) else v
        k = np.shape(v)[ax]
        block = broadcast_to_shape(v, _with_axis(rest, ax, k), "insert")
        return as_result(concatenate([slice_axis(a, 0, int(idx), ax), block,
                                      slice_axis(a, int(idx), n, ax)], axis=ax))
    k = idx.size
    # NumPy assigns the values (ndmin=arr.ndim, not moved) to new[..., indices, ...].
    vals = broadcast_to_shape(v, _with_axis(rest, ax, k), "insert")
    order = np.argsort(idx, kind="stable")
    new_pos = np.empty(k, np.int64)
    new_pos[order] = idx[order] + np.arange(k)
    src = np.empty(n + k, np.int64)
    is_new = np.zeros(n + k, bool)
    is_new[new_pos] = True
    src[new_pos] = n + np.arange(k)
    src[~is_new] = np.arange(n)
    return as_result(take_static(concatenate([a, vals], axis=ax), src.tolist(), ax))


def _with_axis(rest: tuple[int, ...], ax: int, size: int) -> tuple[int, ...]:
    return rest[:ax] + (size,) + rest[ax:]


def delete(arr: Any, obj: Any, axis: int | None = None) -> Any:
    """`arr` without the entries at the static index / indices / slice / mask `obj`.

    NumPy rule: negative indices count from the end; out-of-range indices raise; a
    bool mask must have the axis' length; arr is flattened when axis is None.

    delete([1, 2, 3, 4], [0, 2]) -> [2, 4]
    """
    a, ax = _flat_axis(_operand(arr, "delete"), axis, "delete")
    n = np.shape(a)[ax]
    keep = np.ones(n, bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        idx = _static(obj, "delete", "obj")
        if idx.dtype.kind == "b":
            if idx.shape != (n,):
                raise error(TracerValueError, "delete", f"boolean array argument obj to "
                            f"delete must be one dimensional and match the axis length of {n}")
            keep = ~idx
        else:
            idx = idx.astype(np.int64)
            if np.any((idx < -n) | (idx >= n)):
                raise error(TracerIndexError, "delete", f"index {obj} is out of bounds for "
                            f"axis {ax} with size {n}")
            keep[idx] = False
    return as_result(take_static(a, np.nonzero(keep)[0].tolist(), ax))


def resize(a: Any, new_shape: Any) -> Any:
    """An array of `new_shape` filled with the flattened `a` repeated as needed.

    NumPy rule: an empty input gives zeros; dtype kept.

    resize([1, 2, 3], (2, 4)) -> [[1, 2, 3, 1], [2, 3, 1, 2]]
    """
    x = ravel(_operand(a, "resize"))
    shape = (operator.index(new_shape),) if not isinstance(new_shape, (tuple, list)) else \
        tuple(operator.index(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise error(TracerValueError, "resize", "all elements of `new_shape` must be "
                    "non-negative")
    size, n = int(np.prod(shape, dtype=np.int64)), np.shape(x)[0]
    if n == 0 or size == 0:
        return as_result(constant(0, shape, dtype_of(x)))
    return as_result(reshape(take_static(x, (np.arange(size) % n).tolist(), 0), shape))


# ------------------------------------------------------------------ put, put_along_axis
def put(a: Any, ind: Any, v: Any, mode: str = "raise", *, inplace: bool = True) -> Any:
    """`a` with the flat positions `ind` set to `v` (v repeats cyclically); pass
    inplace=False (JAX's rule: arrays are immutable).

    NumPy rule: mode "raise" (static indices checked; traced ones clamp), "wrap" or
    "clip"; v takes a's dtype.

    put([1, 2, 3], [0, 2], [7, 9], inplace=False) -> [7, 2, 9]
    """
    _no_inplace(inplace, "put")
    x = _operand(a, "put")
    flat = ravel(x)
    n = np.shape(flat)[0]
    idx = ravel(_operand(ind, "put"))
    k = np.shape(idx)[0]
    vals = ravel(cast(asarray_like(v, "put"), dtype_of(x), fname="put"))
    if k and np.shape(vals)[0] == 0:
        return as_result(x)
    vals = take_static(vals, (np.arange(k) % max(np.shape(vals)[0], 1)).tolist(), 0)
    if mode == "wrap":
        idx = uf.remainder(idx, n)
    elif mode == "clip":
        idx = uf.clip(idx, 0, n - 1)
    elif not isinstance(idx, Tracer) and np.any((idx < -n) | (idx >= n)):
        raise error(TracerIndexError, "put", f"index out of range for array of size {n}")
    return as_result(reshape(index_update(flat, idx, vals, "set"), np.shape(x)))


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None,
                   inplace: bool = True, *, mode: Any = None) -> Any:
    """`arr` with the elements `take_along_axis(arr, indices, axis)` would pick set to
    `values`; pass inplace=False (JAX's rule: arrays are immutable).

    NumPy rule: indices has arr's ndim (the other dims broadcast); values broadcast to
    the indices' shape and take arr's dtype; axis None works on the flattened array.

    put_along_axis([[10, 30], [40, 20]], [[1], [0]], 0, 1, inplace=False) -> [[10, 0], [0, 20]]
    """
    _no_inplace(inplace, "put_along_axis")
    x = _operand(arr, "put_along_axis")
    shape = np.shape(x)
    flat = axis is None
    if flat:
        x, axis = ravel(x), 0
    idx = _operand(indices, "put_along_axis")
    if np.ndim(idx) != np.ndim(x) or dtype_of(idx).kind not in "iu":
        raise error(ShapeError, "put_along_axis", f"indices {desc(idx)} must be an integer "
                    f"array with as many dimensions as arr {desc(x)}")
    ax = normalize_axis(axis, np.ndim(x), "put_along_axis", of=x)
    full = []
    for d, n in enumerate(np.shape(x)):
        full.append(idx if d == ax else np.arange(n).reshape(
            [n if k == d else 1 for k in range(np.ndim(x))]))
    out = index_update(x, tuple(full), values, "set")
    return as_result(reshape(out, shape) if flat else out)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """`a` with its main diagonal set to `val` (repeated cyclically); pass
    inplace=False (JAX's rule: arrays are immutable).

    NumPy rule: 2-D arrays, or N-D with all dimensions equal; wrap=True continues the
    diagonal below a tall matrix, as NumPy's flat stepping does.

    fill_diagonal(zeros((2, 2)), 5, inplace=False) -> [[5, 0], [0, 5]]
    """
    _no_inplace(inplace, "fill_diagonal")
    x = _operand(a, "fill_diagonal")
    shape = np.shape(x)
    if len(shape) < 2:
        raise error(ShapeError, "fill_diagonal", "array must be at least 2-d")
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise error(ShapeError, "fill_diagonal", "All dimensions of input must be of "
                        "equal length")
        step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
    pos = np.arange(int(np.prod(shape)))[:end:step]
    vals = ravel(cast(asarray_like(val, "fill_diagonal"), dtype_of(x), fname="fill_diagonal"))
    m = np.shape(vals)[0]
    vals = take_static(vals, (np.arange(pos.size) % max(m, 1)).tolist(), 0) if m else vals
    return as_result(reshape(index_update(ravel(x), pos, vals, "set"), shape))


# ------------------------------------------------------------------ select, piecewise, choose
def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elements from the first choice whose condition holds, else `default`.

    NumPy rule: conditions must be bool arrays; choices and default promote (NEP 50,
    Python ints wrap into an integer result); everything broadcasts.

    select([x < 0, x > 1], [-x, x ** 2], 0.5)
    """
    if len(condlist) != len(choicelist):
        raise error(TracerValueError, "select", "list of cases must be same length as list "
                    "of conditions")
    if not condlist:
        raise error(TracerValueError, "select", "select with an empty condition list is "
                    "not possible")
    conds = [asarray_like(c, "select") for c in condlist]
    for i, c in enumerate(conds):
        if dtypes.is_python_scalar(c) and isinstance(c, bool):
            continue
        if dtype_of(c).kind != "b":
            raise error(DTypeError, "select", f"invalid entry {i} in condlist: should be "
                        f"boolean ndarray, got {desc(c)}")
    values = [asarray_like(c, "select") for c in (*choicelist, default)]
    dt = result_dtype(*values, fname="select")[0]
    # NumPy takes the weak Python scalars' dtype from the arrays and casts them unsafely.
    values = [np.array(v).astype(dt) if type(v) is int and dt.kind in "iu" else v
              for v in values]
    *choices, default = promote(*values, fname="select")
    out = default
    for c, v in reversed(list(zip(conds, choices, strict=True))):
        out = uf.where(c, v, out)
    return as_result(broadcast_arrays(out, *conds, *choices, fname="select")[0])


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Evaluate each function on all of x and keep its result where its condition holds
    (later conditions win, as NumPy's in-place order); one extra function is the
    `otherwise` case.

    NumPy rule: result has x's dtype; a non-callable entry is a constant. Functions are
    applied to the whole array, so they must be element-wise (as under JAX).

    piecewise(x, [x < 0, x >= 0], [-1, lambda v: v * 2])
    """
    xv = _operand(x, "piecewise")
    # NumPy's rule for a single condition passed bare (not in a list).
    single = np.ndim(condlist) == 0 if not isinstance(condlist, (list, tuple)) else False
    if single or (not isinstance(condlist[0], (list, np.ndarray, Tracer)) and np.ndim(xv)):
        condlist = [condlist]
    conds = [uf.not_equal(c, 0) if dtype_of(c).kind != "b" else c
             for c in (asarray_like(c, "piecewise") for c in condlist)]
    if len(funclist) == len(conds) + 1:
        none = uf.logical_not(_any_of(conds, xv))
        conds = conds + [none]
    elif len(funclist) != len(conds):
        raise error(TracerValueError, "piecewise", f"with {len(conds)} condition(s), either "
                    f"{len(conds)} or {len(conds) + 1} functions are expected")
    out = constant(0, np.shape(xv), dtype_of(xv))
    for c, f in zip(conds, funclist, strict=True):
        value = f(xv, *args, **kw) if callable(f) else f
        value = cast(asarray_like(value, "piecewise"), dtype_of(xv), fname="piecewise")
        out = uf.where(c, value, out)
    return as_result(broadcast_to_shape(out, np.shape(xv), "piecewise"))


def _any_of(conds: list[Any], x: Any) -> Any:
    acc = constant(False, np.shape(x), dtypes.bool_)
    for c in conds:
        acc = uf.logical_or(acc, c)
    return acc


def choose(a: Any, choices: Sequence[Any], out: None = None, mode: str = "raise") -> Any:
    """out[i] = choices[a[i]][i]: pick among broadcast choices by an index array.

    NumPy rule: mode "raise" (static indices checked; traced ones clamp), "wrap" or
    "clip"; choices promote (NEP 50).

    choose([2, 0, 1], [[0, 1, 2], [10, 11, 12], [20, 21, 22]]) -> [20, 1, 12]
    """
    if out is not None:
        raise error(TracerTypeError, "choose", "out= is not supported; use the result")
    idx = _operand(a, "choose")
    n = len(choices)
    if mode == "wrap":
        idx = uf.remainder(idx, n)
    elif mode == "clip" or isinstance(idx, Tracer):
        if mode not in ("clip", "raise"):
            raise error(TracerValueError, "choose", f"clipmode must be one of 'clip', "
                        f"'raise', or 'wrap', got {mode!r}")
        idx = uf.clip(idx, 0, n - 1)
    elif np.any((idx < 0) | (idx >= n)):
        raise error(TracerValueError, "choose", "invalid entry in choice array")
    parts = broadcast_arrays(idx, *promote(*choices, fname="choose"), fname="choose")
    idx, opts = parts[0], parts[1:]
    out_v = opts[-1]
    for k in range(n - 2, -1, -1):
        out_v = uf.where(uf.equal(idx, k), opts[k], out_v)
    return as_result(out_v)


def compress(condition: Any, a: Any, axis: int | None = None, out: None = None) -> Any:
    """The slices of `a` along axis where the static `condition` is true.

    NumPy rule: condition is 1-D; a shorter condition counts as False past its end.

    compress([0, 1, 1], [[1, 2], [3, 4], [5, 6]], axis=0) -> [[3, 4], [5, 6]]
    """
    if out is not None:
        raise error(TracerTypeError, "compress", "out= is not supported; use the result")
    cond = _static(condition, "compress", "condition").astype(bool)
    if cond.ndim != 1:
        raise error(ShapeError, "compress", "condition must be a 1-d array")
    x, ax = _flat_axis(_operand(a, "compress"), axis, "compress")
    n = np.shape(x)[ax]
    if cond.size > n:
        raise error(TracerIndexError, "compress", f"index {n} is out of bounds for axis {ax} "
                    f"with size {n}")
    return as_result(take_static(x, np.nonzero(cond)[0].tolist(), ax))


def extract(condition: Any, arr: Any) -> Any:
    """The elements of the flattened `arr` where the static `condition` is true.

    extract([[True, False], [False, True]], [[1, 2], [3, 4]]) -> [1, 4]
    """
    cond = _static(condition, "extract", "condition")
    return compress(ravel(cond), ravel(_operand(arr, "extract")))


# ------------------------------------------------------------------ cross
def _components(v: Any, axis: int, fname: str) -> list[Any]:
    v = moveaxis(v, axis, -1)
    n = np.shape(v)[-1]
    if n not in (2, 3):
        raise error(TracerValueError, fname, f"incompatible dimensions for cross product "
                    f"(dimension must be 2 or 3), got {desc(v)}")
    return [getitem(v, (Ellipsis, i)) for i in range(n)]


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """Cross product of 2- or 3-vectors along the given axes (the others broadcast).

    NumPy rule: two 2-vectors give the scalar z component; a 2-vector counts as z = 0
    next to a 3-vector; NEP 50 promotion.

    cross([1, 0, 0], [0, 1, 0]) -> [0, 0, 1]
    """
    x, y = promote(a, b, fname="cross")
    x, y = (cast(t, dtype_of(t)) for t in (x, y))
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        raise error(TracerValueError, "cross", f"At least one array has zero dimension "
                    f"({desc(x)}, {desc(y)})")
    if axis is not None:
        axisa = axisb = axisc = axis
    ca = _components(x, normalize_axis(axisa, np.ndim(x), "cross", of=x), "cross")
    cb = _components(y, normalize_axis(axisb, np.ndim(y), "cross", of=y), "cross")
    mul, sub = uf.multiply, uf.subtract
    z = sub(mul(ca[0], cb[1]), mul(ca[1], cb[0]))
    if len(ca) == 2 and len(cb) == 2:
        return as_result(z)
    zero = lambda t: uf.multiply(t[0], 0)  # noqa: E731  (a zero z with t's dtype)
    a2 = ca[2] if len(ca) == 3 else zero(ca)
    b2 = cb[2] if len(cb) == 3 else zero(cb)
    cx = sub(mul(ca[1], b2), mul(a2, cb[1]))
    cy = sub(mul(a2, cb[0]), mul(ca[0], b2))
    parts = broadcast_arrays(cx, cy, z, fname="cross")
    out = stack(parts, axis=-1)
    return as_result(moveaxis(out, -1, normalize_axis(axisc, np.ndim(out), "cross")))


# ------------------------------------------------------------------ splitting, axes
def _split_along(fname: str, axis: int, min_ndim: int) -> Callable[..., list[Any]]:
    def splitter(ary: Any, indices_or_sections: Any) -> list[Any]:
        x = _operand(ary, fname)
        if np.ndim(x) < min_ndim:
            raise error(TracerValueError, fname, f"{fname} only works on arrays of "
                        f"{min_ndim} or more dimensions, got {desc(x)}")
        ax = 0 if fname == "hsplit" and np.ndim(x) == 1 else axis
        return split(x, indices_or_sections, axis=ax)
    splitter.__name__ = splitter.__qualname__ = fname
    splitter.__module__ = "tracer.numpy"
    return splitter


hsplit = _split_along("hsplit", 1, 1)
hsplit.__doc__ = """Split along the second axis (the first for 1-D arrays).

hsplit(arange(4), 2) -> [[0, 1], [2, 3]]
"""
vsplit = _split_along("vsplit", 0, 2)
vsplit.__doc__ = """Split along the first axis of an array of at least 2 dimensions.

vsplit(ones((4, 2)), 2)[0].shape -> (2, 2)
"""
dsplit = _split_along("dsplit", 2, 3)
dsplit.__doc__ = """Split along the third axis of an array of at least 3 dimensions.

dsplit(ones((1, 1, 4)), 2)[0].shape -> (1, 1, 2)
"""


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of x along axis, as a tuple (NumPy 2.1 / array API).

    unstack([[1, 2], [3, 4]]) -> ([1, 2], [3, 4])
    """
    v = _operand(x, "unstack")
    if np.ndim(v) == 0:
        raise error(TracerValueError, "unstack", "Input array must be at least 1-d.")
    ax = normalize_axis(axis, np.ndim(v), "unstack", of=v)
    parts = array_split(v, np.shape(v)[ax], axis=ax) if np.shape(v)[ax] else []
    return tuple(as_result(reshape(p, tuple(d for i, d in enumerate(np.shape(p)) if i != ax)))
                 for p in parts)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """Roll `axis` backwards until it lies before position `start` (use moveaxis).

    NumPy rule: start may equal ndim; start > axis counts before the removal.

    rollaxis(ones((3, 4, 5)), 2).shape -> (5, 3, 4)
    """
    x = _operand(a, "rollaxis")
    n = np.ndim(x)
    ax = normalize_axis(axis, n, "rollaxis", of=x)
    st = operator.index(start)
    if not -n <= st <= n:
        raise error(TracerIndexError, "rollaxis", f"'start' arg requires {-n} <= start < "
                    f"{n + 1}, got {st}")
    st = st + n if st < 0 else st
    if ax < st:
        st -= 1
    return moveaxis(x, ax, st) if ax != st else as_result(x)
