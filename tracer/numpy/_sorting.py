"""sort, argsort, searchsorted, partition, argpartition, lexsort, unique, nonzero,
argwhere, flatnonzero: NumPy 2 semantics on top of `ops.sort`.

Order: NumPy's. `ops.sort`'s default comparator uses the float total order, which
already puts +NaN last; the values are first given NumPy-order keys: every NaN
becomes +NaN (NumPy sorts NaNs of either sign last) and, where only the order
matters (argsort, lexsort, searchsorted, unique), -0.0 becomes +0.0 (NumPy: equal).
Complex values order by real part, then imaginary part. Every sort here is stable,
so `kind` is accepted and checked but changes nothing; `sort` returns a NaN as +NaN.

`partition` / `argpartition` return a full sort: a valid partition for every kth.

Data-dependent sizes (`unique`, `nonzero`, `argwhere`, `flatnonzero`) need a static
`size=` under tracing, as in JAX: the first `size` results are kept, missing ones are
`fill_value` (nonzero: 0; unique: its smallest value). Outside a trace, on concrete
arrays, `size=None` gives NumPy's exact result. Positions are compacted with a stable
sort of the mask, and `searchsorted` is a branch-free binary search. Sizes (search
lengths, strides, fills) are computed from the shapes, never literals, so one
compiled module serves every size.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import (ConcretizationError, ParamError, ShapeError, TracerTypeError,
                      TracerValueError)
from ..tracing import Tracer
from ._indexing import _dim_size
from ._promotion import as_result, asarray_like, desc, error, normalize_axis, promote

__all__ = ["sort", "argsort", "searchsorted", "partition", "argpartition", "lexsort", "unique",
           "nonzero", "argwhere", "flatnonzero"]

_INDEX = np.dtype(np.int64)
_KINDS = ("q", "h", "s", "m")  # NumPy reads a sort kind by its first letter


# ----------------------------------------------------------------------------- helpers

def _operand(a: Any, fname: str) -> Any:
    x = asarray_like(a, fname)
    return np.asarray(x) if dtypes.is_python_scalar(x) else x


def _full(value: Any, shape: Sequence[int], dtype: Any) -> Any:
    """`value` (a static scalar or a traced one of `dtype`) broadcast to `shape`."""
    scalar = value if isinstance(value, Tracer) else np.asarray(value, dtype)
    return ops.broadcast_in_dim(scalar, tuple(shape), ())


def _iota(shape: Sequence[int], axis: int = 0) -> Any:
    return ops.iota(_INDEX, tuple(shape), axis)


def _flat(x: Any) -> Any:
    return ops.reshape(x, (int(np.prod(np.shape(x), dtype=np.int64)),))


def _key(x: Any, merge_zeros: bool) -> Any:
    """`x` with NumPy's sort order under the total order: NaN -> +NaN (and -0 -> +0)."""
    dtype = np.dtype(x.dtype)
    if dtype.kind == "c":
        return ops.complex(_key(ops.real(x), merge_zeros), _key(ops.imag(x), merge_zeros))
    if not dtypes.is_float(dtype):
        return x
    shape = np.shape(x)
    x = ops.select(ops.ne(x, x), _full(np.nan, shape, dtype), x)
    return ops.select(ops.eq(x, 0), _full(0, shape, dtype), x) if merge_zeros else x


def _sort_keys(x: Any, merge_zeros: bool) -> tuple[Any, ...]:
    """The sort keys of `x`, most significant first. NumPy puts complex values with a
    NaN part after all others, as R+Rj < R+nanj < nan+Rj < nan+nanj: complex gets a
    leading NaN-class key (0 to 3) before its `_key`."""
    key = _key(x, merge_zeros)
    return (_nan_class(key), key) if np.dtype(x.dtype).kind == "c" else (key,)


def _nan_class(key: Any) -> Any:
    """2 * isnan(real) + isnan(imag) of a `_key`ed complex array, as int8."""
    re_nan, im_nan = (ops.convert_element_type(ops.ne(p, p), dtypes.int8)
                      for p in (ops.real(key), ops.imag(key)))
    return ops.add(ops.add(re_nan, re_nan), im_nan)


def _check_kind(kind: Any, stable: Any, order: Any, fname: str) -> None:
    if order is not None:
        raise error(ParamError, fname, "order= (structured arrays) is not supported")
    if kind is not None and (not isinstance(kind, str) or kind[:1].lower() not in _KINDS):
        raise error(TracerValueError, fname, f"sort kind must be one of 'quick', 'heap', or "
                    f"'stable' (got {kind!r})")
    if stable is not None and not isinstance(stable, (bool, np.bool_)):
        raise error(TracerTypeError, fname, f"stable must be a bool or None, got {stable!r}")


def _along(a: Any, axis: Any, fname: str) -> tuple[Any, int]:
    """The operand and the sort axis (axis=None: the flattened array, axis 0)."""
    x = _operand(a, fname)
    if axis is None:
        return _flat(x), 0
    return x, normalize_axis(axis, np.ndim(x), fname, of=x)


# ----------------------------------------------------------------------------- sorting

def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
         stable: Any = None) -> Any:
    """A sorted copy of `a` along `axis` (the flattened array if None).

    NumPy rule: NaNs sort last; the result has `a`'s dtype; complex by real part,
    then imaginary part. Stable whatever `kind` says.

    sort([3, nan, 1]) -> [1, 3, nan]
    """
    _check_kind(kind, stable, order, "sort")
    x, ax = _along(a, axis, "sort")
    if np.dtype(x.dtype).kind == "c":
        # -0.0 and 0.0 real parts are equal (the imaginary parts decide), yet the values
        # keep their signs: sort the merged keys, carrying x along.
        keys = _sort_keys(x, merge_zeros=True)
        return as_result(ops.sort((*keys, x), dimension=ax, num_keys=len(keys))[-1])
    return as_result(ops.sort(_key(x, merge_zeros=False), dimension=ax))


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
            stable: Any = None) -> Any:
    """Indices (int64) that sort `a` along `axis` (the flattened array if None).

    NumPy rule: NaNs last, -0.0 equals 0.0, ties in their original order (a stable
    sort is what NumPy gives for kind="stable"; for other kinds any order of ties is
    valid). A 0-d array counts as one element.

    argsort([3, 1, 2]) -> [1, 2, 0]
    """
    _check_kind(kind, stable, order, "argsort")
    x = _operand(a, "argsort")
    if np.ndim(x) == 0:  # NumPy ravels it: axis 0 and -1 are valid, 1 is not
        x = ops.reshape(x, (1,))
    x, ax = _along(x, axis, "argsort")
    return as_result(_argsort(x, ax))


def _argsort(x: Any, axis: int) -> Any:
    keys = _sort_keys(x, merge_zeros=True)
    return ops.sort((*keys, _iota(np.shape(x), axis)), dimension=axis, is_stable=True,
                    num_keys=len(keys))[-1]


def _kth(kth: Any, n: int, fname: str) -> None:
    try:
        values = [operator.index(k) for k in np.atleast_1d(np.asarray(kth)).ravel()]
    except TypeError:
        raise error(TracerTypeError, fname, f"kth must be static integers, got {kth!r}") from None
    for k in values:
        if not -n <= k < n:
            raise error(TracerValueError, fname, f"kth(={k}) out of bounds ({n})")


def partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
              order: Any = None) -> Any:
    """`a` rearranged so the kth element is where a sort would put it, smaller ones
    before it and larger ones after: here a full (stable) sort, valid for every kth.

    partition([3, 1, 2, 5], 2) -> [1, 2, 3, 5]
    """
    x, ax = _along(a, axis, "partition")
    _kth(kth, np.shape(x)[ax], "partition")
    return sort(x, ax, order=order)


def argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
                 order: Any = None) -> Any:
    """Indices that partition `a` around kth (see `partition`): here the stable argsort.

    argpartition([3, 1, 2, 5], 2) -> [1, 2, 0, 3]
    """
    x, ax = _along(a, axis, "argpartition")
    _kth(kth, np.shape(x)[ax], "argpartition")
    return argsort(x, ax, order=order)


def lexsort(keys: Any, axis: int = -1) -> Any:
    """Indices (int64) that sort by several keys: the LAST key is the primary one.

    NumPy rule: keys are a sequence of same-shaped arrays (or the rows of a 2-D
    array); ties in every key keep their original order.

    lexsort([[1, 2, 1], [3, 3, 1]]) -> [2, 0, 1]
    """
    items = [_operand(k, "lexsort") for k in (keys if isinstance(keys, (list, tuple))
                                             else list(_operand(keys, "lexsort")))]
    if not items:
        raise error(TracerTypeError, "lexsort", "need sequence of keys with len > 0 in lexsort")
    shape = np.shape(items[0])
    if any(np.shape(k) != shape for k in items):
        raise error(ShapeError, "lexsort", f"all keys need to be the same shape, got "
                    f"{', '.join(map(desc, items))}")
    if not shape:
        return as_result(np.zeros((), _INDEX))
    ax = normalize_axis(axis, len(shape), "lexsort")
    columns = [c for k in reversed(items) for c in _sort_keys(k, merge_zeros=True)]
    return as_result(ops.sort((*columns, _iota(shape, ax)), dimension=ax,
                              num_keys=len(columns), is_stable=True)[-1])


# ----------------------------------------------------------------------------- searching

def _less(x: Any, y: Any) -> Any:
    """x < y in NumPy's order, on `_key`ed values (complex: NaN class, real part, then
    imaginary part)."""
    if np.dtype(x.dtype).kind == "c":
        less = ops.lt(ops.imag(x), ops.imag(y), total_order=True)
        for part in (ops.real, _nan_class):
            px, py = part(x), part(y)
            less = ops.bitwise_or(ops.lt(px, py, total_order=True),
                                  ops.bitwise_and(ops.eq(px, py, total_order=True), less))
        return less
    return ops.lt(x, y, total_order=True)


def _take1d(a: Any, idx: Any) -> Any:
    """a[idx] for a 1-D `a` and an index array of any shape (indices in range)."""
    dn = ops.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,), index_vector_dim=np.ndim(idx))
    return ops.gather(a, idx, dn, (1,))


def _bisect(a: Any, v: Any, right: bool) -> Any:
    """For each v, the first position of the sorted 1-D `a` where v can go (left:
    before equal elements, right: after them). A branch-free binary search: `base`
    moves by `half` wherever a[base + half] goes before v, while the remaining length
    (the same for every v, so a scalar) halves; the loop runs ceil(log2(n)) times,
    its count computed from a's size like every size in it."""
    shape = np.shape(v)
    if not np.shape(a)[0]:
        return _full(0, shape, _INDEX)

    def before(probe: Any) -> Any:  # probe goes before v
        return ops.bitwise_not(_less(v, probe)) if right else _less(probe, v)

    def step(carry: tuple[Any, Any]) -> tuple[Any, Any]:
        length, base = carry
        half = ops.div(length, np.int64(2))
        moved = ops.add(base, half)
        return ops.sub(length, half), ops.select(before(_take1d(a, moved)), moved, base)
    _, base = ops.while_loop(lambda c: ops.gt(c[0], np.int64(1)), step,
                             (_dim_size(a, 0), _full(0, shape, _INDEX)))
    return ops.add(base, ops.convert_element_type(before(_take1d(a, base)), _INDEX))


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """Indices (int64) where the values `v` would be inserted into the sorted 1-D
    `a` to keep it sorted (`a[sorter]` is the sorted array when `sorter` is given).

    NumPy rule: side="left" finds the first suitable index, "right" the last; a and v
    compare in their promoted dtype, a Python scalar v counting as its own array
    (int64 / float64), so searchsorted(uint8 a, 300) is len(a); NaNs sort last.

    searchsorted([1, 2, 2, 3], [2, 2.5], side="right") -> [3, 3]
    """
    if side not in ("left", "right"):
        raise error(TracerValueError, "searchsorted", f"side must be 'left' or 'right', "
                    f"got {side!r}")
    if dtypes.is_python_scalar(v):  # NumPy converts v on its own first (300 vs uint8: int64)
        v = np.asarray(v)
    a, v = (_operand(x, "searchsorted") for x in promote(a, v, fname="searchsorted"))
    if np.ndim(a) != 1:
        raise error(ShapeError, "searchsorted", f"a must be 1-D, got {desc(a)}")
    if sorter is not None:
        sorter = _operand(sorter, "searchsorted")
        if np.shape(sorter) != np.shape(a) or not dtypes.is_integer(sorter.dtype):
            raise error(ShapeError, "searchsorted", f"sorter {desc(sorter)} must be integer "
                        f"indices of the shape of a {desc(a)}")
        a = _take1d(a, sorter) if np.shape(a)[0] else a
    keyed = [_key(x, merge_zeros=True) for x in (a, v)]
    return as_result(_bisect(*keyed, right=side == "right"))


# ----------------------------------------------------------------------------- static sizes

def _static_size(size: Any, concrete_count: Any, fname: str) -> int:
    """`size`, or the count when it is known (outside a trace); else the JAX error."""
    if size is not None:
        try:
            size = operator.index(size)
        except TypeError:
            raise error(TracerTypeError, fname, f"size must be a static int, got "
                        f"{size!r}") from None
        if size < 0:
            raise error(TracerValueError, fname, f"size must be >= 0, got {size}")
        return size
    if isinstance(concrete_count, Tracer):
        raise error(ConcretizationError, fname, f"the result's shape depends on the values; "
                    f"under jit pass a static size= (and fill_value=), e.g. {fname}(x, "
                    f"size=10): the first size results are kept, missing ones filled")
    return int(concrete_count)


def _count(mask: Any) -> Any:
    return ops.reduce(ops.convert_element_type(mask, _INDEX), np.int64(0), ops.add, [0])


def _compact(mask: Any, size: int, fill: Any) -> tuple[Any, Any]:
    """(positions, valid): the positions (int64) of the true entries of the 1-D `mask`
    in order, the first `size` of them, then `fill` where `valid` is false (a stable
    sort of the mask puts the true entries first)."""
    n = np.shape(mask)[0]
    order = ops.sort((ops.bitwise_not(mask), _iota((n,))), is_stable=True)[1] if n else \
        _full(0, (0,), _INDEX)
    order = ops.slice(order, (0,), (min(size, n),))
    if size > n:
        order = ops.concatenate([order, _full(0, (size - n,), _INDEX)], 0)
    valid = ops.lt(_iota((size,)), _count(mask))
    return ops.select(valid, order, _full(fill, (size,), _INDEX)), valid


def _unravel(flat: Any, x: Any) -> list[Any]:
    """Per-dimension indices of C-order flat indices into x's shape (sizes computed
    from x, not literals)."""
    out, shape = [], np.shape(x)
    for k, n in enumerate(shape):
        if n <= 1 or 0 in shape:  # one choice (or no element at all): index 0
            out.append(_full(0, np.shape(flat), _INDEX))
            continue
        index = flat
        for d in range(k + 1, len(shape)):
            index = ops.div(index, _dim_size(x, d)) if shape[d] > 1 else index
        out.append(ops.rem(index, _dim_size(x, k)))
    return out


def _fills(fill_value: Any, ndim: int, fname: str) -> list[Any]:
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * ndim
    if len(fills) != ndim:
        raise error(ParamError, fname, f"fill_value must be a scalar or {ndim} scalars "
                    f"(one per dimension), got {fill_value!r}")
    return [0 if f is None else f for f in fills]


def _nonzero_flat(a: Any, size: Any, fname: str) -> tuple[Any, int, Any]:
    """(flat positions of the nonzero elements, the static size, valid mask)."""
    x = _operand(a, fname)
    flat = _flat(x)
    mask = flat if np.dtype(flat.dtype).kind == "b" else ops.ne(flat, np.zeros((), flat.dtype))
    known = _count(mask) if isinstance(x, Tracer) else np.count_nonzero(x)
    size = _static_size(size, known, fname)
    positions, valid = _compact(mask, size, 0)
    return positions, size, valid


def nonzero(a: Any, *, size: Any = None, fill_value: Any = None) -> tuple[Any, ...]:
    """Indices (int64) of the nonzero elements, one array per dimension.

    NumPy rule, with JAX's static size: under jit pass `size=`; the first `size`
    indices are kept and missing entries are `fill_value` (default 0; a scalar or one
    per dimension). A 0-d array is an error (NumPy 2).

    nonzero([[1, 0], [0, 2]]) -> ([0, 1], [0, 1])
    """
    x = _operand(a, "nonzero")
    if np.ndim(x) == 0:
        raise error(TracerValueError, "nonzero", "Calling nonzero on 0d arrays is not "
                    "allowed. Use atleast_1d(scalar).nonzero() instead.")
    fills = _fills(fill_value, np.ndim(x), "nonzero")
    positions, _, valid = _nonzero_flat(x, size, "nonzero")
    return tuple(as_result(ops.select(valid, i, _full(f, np.shape(i), _INDEX)))
                 for i, f in zip(_unravel(positions, x), fills, strict=True))


def flatnonzero(a: Any, *, size: Any = None, fill_value: Any = None) -> Any:
    """Indices (int64) of the nonzero elements of the flattened array (static size
    and fill_value as in `nonzero`).

    flatnonzero([0, 3, 0, 4]) -> [1, 3]
    """
    positions, size, valid = _nonzero_flat(a, size, "flatnonzero")
    fill = _fills(fill_value, 1, "flatnonzero")[0]
    return as_result(ops.select(valid, positions, _full(fill, (size,), _INDEX)))


def argwhere(a: Any, *, size: Any = None, fill_value: Any = None) -> Any:
    """Indices (int64) of the nonzero elements as rows: shape (N, a.ndim) (static
    size and fill_value as in `nonzero`; a 0-d array gives shape (N, 0)).

    argwhere([[1, 0], [0, 2]]) -> [[0, 0], [1, 1]]
    """
    x = _operand(a, "argwhere")
    if np.ndim(x) == 0:
        size = _nonzero_flat(x, size, "argwhere")[1]
        return as_result(_full(0, (size, 0), _INDEX))
    columns = nonzero(x, size=size, fill_value=fill_value)
    n = np.shape(columns[0])[0]
    return as_result(ops.concatenate([ops.reshape(c, (n, 1)) for c in columns], 1))


# ----------------------------------------------------------------------------- unique

def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True,
           sorted: bool = True, size: Any = None, fill_value: Any = None) -> Any:
    """The sorted unique elements of the flattened `ar`; optionally the index of each
    one's first occurrence, the inverse (indices into the result rebuilding `ar`, in
    `ar`'s shape) and the counts (all int64).

    NumPy rule, with JAX's static size: under jit pass `size=`: the first `size` unique
    values are kept, missing ones are `fill_value` (default: the smallest), their
    index is that of the smallest and their count 0. equal_nan merges every NaN into
    one. Only axis=None; the result is sorted whatever `sorted` says (NumPy allows it).

    unique([3, 1, 3, nan, nan]) -> [1, 3, nan]
    """
    if axis is not None:
        raise error(ParamError, "unique", "only axis=None (the flattened array) is supported")
    x = _operand(ar, "unique")
    flat = _flat(x)
    keys = _sort_keys(flat, merge_zeros=True)
    key, values, perm = ops.sort((*keys, flat, _iota(np.shape(flat))), is_stable=True,
                                 num_keys=len(keys))[-3:] if np.shape(flat)[0] else \
        (flat, flat, _full(0, (0,), _INDEX))
    mask = _first_of_runs(key, equal_nan)
    known = _count(mask) if isinstance(x, Tracer) else np.unique(x, equal_nan=equal_nan).size
    size = _static_size(size, known, "unique")
    if np.shape(flat)[0] == 0 and size and fill_value is None:
        raise error(TracerValueError, "unique", "for an empty input with size > 0, "
                    "fill_value must be given")
    first, valid = _compact(mask, size, 0)
    result = _fill(_take1d(values, first) if np.shape(flat)[0] else
                   _full(0, (size,), values.dtype), valid, fill_value)
    extra = []
    if return_index:
        extra.append(_take1d(perm, first) if np.shape(flat)[0] else _full(0, (size,), _INDEX))
    if return_inverse:
        extra.append(ops.reshape(_inverse(mask, perm, first), np.shape(x)))
    if return_counts:
        extra.append(_counts(mask, size))
    return as_result(result) if not extra else tuple(map(as_result, (result, *extra)))


def _first_of_runs(key: Any, equal_nan: bool) -> Any:
    """Where a run of equal sorted keys starts (NaNs equal only with equal_nan)."""
    n = np.shape(key)[0]
    if n == 0:
        return _full(False, (0,), np.bool_)
    head, tail = ops.slice(key, (1,), (n,)), ops.slice(key, (0,), (n - 1,))
    differs = ops.ne(head, tail, total_order=equal_nan)
    if equal_nan and np.dtype(key.dtype).kind == "c":  # a NaN in either part: all equal
        both = ops.bitwise_and(*(ops.ne(_nan_class(k), np.int8(0)) for k in (head, tail)))
        differs = ops.bitwise_and(differs, ops.bitwise_not(both))
    return ops.concatenate([_full(True, (1,), np.bool_), differs], 0)


def _fill(result: Any, valid: Any, fill_value: Any) -> Any:
    if fill_value is None:
        return result
    fill = np.asarray(fill_value).astype(result.dtype)
    return ops.select(valid, result, _full(fill, np.shape(result), result.dtype))


def _inverse(mask: Any, perm: Any, first: Any) -> Any:
    """inverse[perm[i]] = the unique index of sorted element i: the number of runs
    starting at or before i, minus one (a search among the runs' first positions)."""
    n = np.shape(mask)[0]
    starts = _compact(mask, n, _dim_size(mask, 0))[0]
    rank = ops.sub(_bisect(starts, _iota((n,)), right=True), np.int64(1))
    dn = ops.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    return ops.scatter(_full(0, (n,), _INDEX), ops.reshape(perm, (n, 1)), rank, None, dn,
                       unique_indices=True)


def _counts(mask: Any, size: int) -> Any:
    """Run lengths: the next run's start (or n) minus this run's start; 0 when missing."""
    starts = _compact(mask, size + 1, _dim_size(mask, 0))[0]
    return ops.sub(ops.slice(starts, (1,), (size + 1,)), ops.slice(starts, (0,), (size,)))
