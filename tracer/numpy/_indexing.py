"""NumPy indexing over `tracer.ops`: `getitem` (basic and advanced) and `index_update`,
the functional updates behind `x.at[idx]` (`take` / `take_along_axis`: `_take`).

An index is parsed once into entries, one per index position after `...` is
expanded: `_New` (None), `_Slice` (static start/step/length on one axis), `_Int`
(a static int when no array index is present) and `_Adv` (an integer index array,
concrete or traced, on one axis; static ints join them when arrays are present, as
in NumPy). Basic indexing lowers to slice/rev/reshape; advanced indexing to one
`gather` (reads) or `scatter` (updates) whose dimension numbers follow from the
entries.

Out-of-range *static* indices raise `TracerIndexError` like NumPy's IndexError.
Traced indices wrap once when negative (`i + n`), like NumPy; still out of range,
reads clamp (gather semantics, as in JAX) and updates are dropped (scatter skips).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import ParamError, ShapeError, TracerIndexError, TracerTypeError
from ..tracing import Tracer
from ._linalg import as_operand, broadcast_to, reshape
from ._promotion import asarray_like, cast, desc, error

__all__ = ["getitem", "index_update"]

_INDEX = np.dtype(np.int64)
_KINDS = ("only integers, slices (`:`), ellipsis (`...`), None (`newaxis`) and integer "
          "or boolean arrays are valid indices")


@dataclass(frozen=True)
class _New:
    pass


@dataclass(frozen=True)
class _Slice:
    axis: int
    start: int
    step: int
    length: int

    def is_full(self, size: int) -> bool:
        return self.start == 0 and self.step == 1 and self.length == size


@dataclass(frozen=True)
class _Int:
    axis: int
    index: int


@dataclass(frozen=True)
class _Adv:
    axis: int
    value: Any  # np.ndarray of non-negative int64, or an int64 Tracer (negatives wrapped)


@dataclass(frozen=True)
class _Plan:
    entries: tuple[Any, ...]
    bshape: tuple[int, ...]   # broadcast shape of the advanced indices
    front: bool               # advanced dims go first (they are not adjacent)

    @property
    def advanced(self) -> bool:
        return any(isinstance(e, _Adv) for e in self.entries)

    def arrange(self, with_new: bool = False) -> list[Any]:
        """Result dims in order: `_Slice`s, ints k standing for bshape[k], `_New`s."""
        dims: list[Any] = []
        at = None
        for e in self.entries:
            if isinstance(e, _Slice) or (with_new and isinstance(e, _New)):
                dims.append(e)
            elif isinstance(e, _Adv) and at is None:
                at = len(dims)
        if at is None:
            return dims
        at = 0 if self.front else at
        return dims[:at] + list(range(len(self.bshape))) + dims[at:]

    def result_shape(self) -> tuple[int, ...]:
        """NumPy's result shape, `_New` dims included."""
        return tuple(1 if isinstance(d, _New) else d.length if isinstance(d, _Slice)
                     else self.bshape[d] for d in self.arrange(with_new=True))


# ----------------------------------------------------------------------------- parsing


def _parse(x: Any, idx: Any, what: str, xd: str) -> _Plan:
    shape = tuple(x.shape)
    items = [_classify(it, what, xd) for it in (idx if isinstance(idx, tuple) else (idx,))]
    if sum(it is Ellipsis for it in items) > 1:
        raise error(
            TracerIndexError, what, "an index can only have a single ellipsis ('...'); array "
            f"{xd}")
    used = sum(_consumed(it) for it in items)
    if used > len(shape):
        raise error(
            TracerIndexError, what, "too many indices for array: array is "
            f"{len(shape)}-dimensional, but {used} were indexed; array {xd}")
    has_arrays = any(isinstance(it, (Tracer, np.ndarray)) for it in items)
    if not any(it is Ellipsis for it in items):
        items.append(Ellipsis)
    entries: list[Any] = []
    for it in items:
        axis = sum(not isinstance(e, _New) for e in entries)
        entries.extend(_entries(it, axis, x, len(shape) - used, has_arrays, what, xd))
    adv_pos = [i for i, it in enumerate(items) if isinstance(it, (Tracer, np.ndarray)) or
               (has_arrays and isinstance(it, int))]
    front = bool(adv_pos) and adv_pos != list(range(adv_pos[0], adv_pos[-1] + 1))
    bshape = _broadcast_indices([e.value for e in entries if isinstance(e, _Adv)], what, xd)
    return _Plan(tuple(entries), bshape, front)


def _classify(item: Any, what: str, xd: str) -> Any:
    """None, Ellipsis, slice, int, an int/bool np.ndarray, or an int Tracer."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, Tracer):
        return _check_traced(item, what, xd)
    if isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and
                                              item.ndim == 0 and item.dtype == np.bool_):
        raise error(
            TracerIndexError, what, "boolean scalar indices are not supported (use None to add "
            f"an axis); array {xd}")
    if isinstance(item, (int, np.integer)):
        return int(item)
    if isinstance(item, (list, tuple)) and any(isinstance(v, Tracer) for v in item):
        return _check_traced(asarray_like(item, what), what, xd)
    try:
        arr = np.asarray(item)
    except ValueError:
        raise error(
            TracerIndexError, what, f"index {item!r:.60} is not a valid array; {_KINDS}") from None
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(_INDEX)  # `x[[]]`: NumPy reads an empty list as an int index
    if arr.dtype.kind not in "biu":
        raise error(
            TracerIndexError, what, f"invalid index {item!r:.60} of dtype {arr.dtype}; {_KINDS}; "
            f"array {xd}")
    return int(arr) if arr.ndim == 0 and arr.dtype.kind != "b" else arr


def _check_traced(t: Tracer, what: str, xd: str) -> Tracer:
    if dtypes.is_bool(t.dtype):
        raise error(
            TracerIndexError, what, f"a traced boolean mask {t.aval} cannot index: the result "
            "shape would depend on its values. Use tnp.where(mask, x, fill) instead, or "
            f"indices from nonzero(mask, size=...) with a static size; array {xd}")
    if not dtypes.is_integer(t.dtype):
        raise error(TracerIndexError, what, f"invalid traced index {t.aval}; {_KINDS}; array {xd}")
    return t


def _consumed(item: Any) -> int:
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, np.ndarray) and item.dtype.kind == "b":
        return item.ndim
    return 1


def _entries(item: Any, axis: int, x: Any, n_ellipsis: int, has_arrays: bool, what: str,
             xd: str) -> list[Any]:
    shape = tuple(x.shape)
    if item is None:
        return [_New()]
    if item is Ellipsis:
        return [_Slice(a, 0, 1, shape[a]) for a in range(axis, axis + n_ellipsis)]
    if isinstance(item, slice):
        return [_static_slice(item, axis, shape[axis], what, xd)]
    if isinstance(item, int):
        i = _check_array(np.asarray(item), axis, shape[axis], what, xd)
        return [_Adv(axis, i) if has_arrays else _Int(axis, int(i))]
    if isinstance(item, Tracer):
        i = as_index(item)
        return [_Adv(axis, _wrap(i, x, axis) if dtypes.is_signed(item.dtype) else i)]
    if item.dtype.kind == "b":
        return _mask_entries(item, axis, shape, what, xd)
    return [_Adv(axis, _check_array(item, axis, shape[axis], what, xd))]


def _static_slice(s: slice, axis: int, size: int, what: str, xd: str) -> _Slice:
    parts = []
    for name in ("start", "stop", "step"):
        v = getattr(s, name)
        if isinstance(v, Tracer):
            raise error(
                TracerTypeError, what, f"slice {name} must be static, got traced {v.aval}; use "
                f"ops.dynamic_slice / ops.dynamic_update_slice for traced offsets; array {xd}")
        try:
            parts.append(None if v is None else operator.index(v))
        except TypeError:
            raise error(TracerIndexError, what,
                        f"slice {name} {v!r} is not an integer; array {xd}") from None
    if parts[2] == 0:
        raise error(ParamError, what, f"slice step cannot be zero; array {xd}")
    start, stop, step = slice(*parts).indices(size)
    length = len(range(start, stop, step))
    return _Slice(axis, start if length else 0, step, length)


def _check_array(arr: np.ndarray, axis: int, size: int, what: str, xd: str) -> np.ndarray:
    bad = (arr < -size) | (arr >= size)
    if bad.any():
        raise error(
            TracerIndexError, what, f"index {arr[bad].flat[0]} is out of bounds for axis {axis} "
            f"with size {size}; array {xd}")
    arr = arr.astype(_INDEX)
    return np.where(arr < 0, arr + size, arr)


def _mask_entries(mask: np.ndarray, axis: int, shape: tuple[int, ...], what: str,
                  xd: str) -> list[Any]:
    for k, n in enumerate(mask.shape):
        if n != shape[axis + k]:
            raise error(
                TracerIndexError, what, "boolean index did not match indexed array along axis "
                f"{axis + k}; size of axis is {shape[axis + k]} but size of corresponding boolean "
                f"axis is {n}; array {xd}")
    return [_Adv(axis + k, nz.astype(_INDEX)) for k, nz in enumerate(np.nonzero(mask))]


def _broadcast_indices(values: list[Any], what: str, xd: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*(v.shape for v in values)))
    except ValueError:
        shapes = " ".join(str(tuple(v.shape)) for v in values)
        raise error(
            TracerIndexError, what, "shape mismatch: indexing arrays could not be broadcast "
            f"together with shapes {shapes}; array {xd}") from None


def as_index(x: Any) -> Any:
    """Integer indices as int64. uint64 values past int64's range saturate at its
    maximum (out of bounds either way: a gather clamps them, a scatter drops them)
    instead of wrapping to negative numbers that would then count from the end."""
    if x.dtype == _INDEX:
        return x
    if x.dtype == np.uint64:
        x = ops.min(x, _UINT64_INDEX_MAX)
    return ops.convert_element_type(x, _INDEX)


_UINT64_INDEX_MAX = np.asarray(np.iinfo(np.int64).max, np.uint64)


def _dim_size(x: Any, axis: int) -> Any:
    """x.shape[axis] as an int64 scalar computed from `x`: generated code reads it from
    the shapes instead of holding a literal, so one compile serves every size (sizes
    past get_dimension_size's int32 stay literals)."""
    if x.shape[axis] >= 2 ** 31:
        return np.asarray(x.shape[axis], _INDEX)
    return ops.convert_element_type(ops.get_dimension_size(x, axis), _INDEX)


def _wrap(i: Any, x: Any, axis: int) -> Any:
    """NumPy's one wrap of negative indices into axis `axis` of x, for traced int64
    indices (one fused element-wise pass; the gather or scatter then clamps or skips)."""
    zero = np.zeros((), _INDEX)
    return ops.select(ops.lt(i, zero), ops.add(i, _dim_size(x, axis)), i)


# ----------------------------------------------------------------------------- reads


def getitem(x: Any, idx: Any) -> Any:
    """`x[idx]` with NumPy semantics: ints, slices (any step), None, `...`, integer
    arrays (concrete or traced) and concrete boolean masks.

    Advanced indices broadcast together; their dims replace the indexed axes when
    adjacent and go first otherwise. Example: `x[1:, None, [0, 2]]`.
    """
    x = as_operand(x, "getitem")
    plan = _parse(x, idx, "getitem", desc(x))
    y, plan = _apply_slices(x, plan)
    if not plan.advanced:
        return reshape(y, plan.result_shape())
    if any(y.shape[e.axis] == 0 for e in plan.entries if isinstance(e, _Adv)):
        return _read_empty_axis(y, plan)
    if not plan.bshape:  # only scalar indices: one dynamic_slice, no index array
        return reshape(_dynamic_slice(y, plan), plan.result_shape())
    return reshape(_gather(y, plan), plan.result_shape())


def _read_empty_axis(y: Any, plan: _Plan) -> Any:
    """Integer indices into an axis of size 0: NumPy's result is empty (a gather needs
    one element per index); a non-empty result (traced indices) has nothing to clamp to."""
    shape = plan.result_shape()
    if int(np.prod(shape, dtype=np.int64)):
        raise error(TracerIndexError, "getitem", f"index out of bounds: an axis of size 0 "
                    f"of {desc(y)} cannot give a result of shape {shape}")
    return ops.broadcast_in_dim(np.zeros((), y.dtype), shape, ())


def _apply_slices(x: Any, plan: _Plan) -> tuple[Any, _Plan]:
    """Static slices and ints as one slice (+ rev); sliced axes become full slices."""
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    rev, entries = [], []
    for e in plan.entries:
        if isinstance(e, _Int):
            starts[e.axis], limits[e.axis] = e.index, e.index + 1
        elif isinstance(e, _Slice):
            low, n = _lowest_index(e), e.length
            starts[e.axis], limits[e.axis] = low, low + (n - 1) * abs(e.step) + 1 if n else low
            strides[e.axis] = abs(e.step) if n > 1 else 1
            rev += [e.axis] if e.step < 0 and n > 1 else []
            entries.append(_Slice(e.axis, 0, 1, e.length))
        else:
            entries.append(e)
    y = x
    if (starts, limits, strides) != ([0] * x.ndim, list(x.shape), [1] * x.ndim):
        y = ops.slice(x, tuple(starts), tuple(limits), tuple(strides))
    if rev:
        y = ops.rev(y, tuple(rev))
    return y, _Plan(tuple(entries), plan.bshape, plan.front)


def _lowest_index(e: _Slice) -> int:
    """The smallest index a slice touches (0 when it is empty)."""
    return e.start + (e.length - 1) * e.step if e.step < 0 and e.length else e.start


def _dynamic_slice(y: Any, plan: _Plan) -> Any:
    starts: list[Any] = [np.zeros((), _INDEX)] * y.ndim
    sizes = list(y.shape)
    for e in plan.entries:
        if isinstance(e, _Adv):
            starts[e.axis], sizes[e.axis] = e.value, 1
    return ops.dynamic_slice(y, tuple(starts), tuple(sizes))


def _gather(y: Any, plan: _Plan) -> Any:
    lay = plan.arrange()
    adv = [e for e in plan.entries if isinstance(e, _Adv)]
    nb = len(plan.bshape)
    comps = [(e.value, tuple(range(nb - e.value.ndim, nb))) for e in adv]
    dnums = ops.GatherDimensionNumbers(
        offset_dims=tuple(i for i, d in enumerate(lay) if isinstance(d, _Slice)),
        collapsed_slice_dims=tuple(sorted(e.axis for e in adv)),
        start_index_map=tuple(e.axis for e in adv),
        index_vector_dim=nb)
    adv_axes = {e.axis for e in adv}
    sizes = tuple(1 if a in adv_axes else n for a, n in enumerate(y.shape))
    return ops.gather(y, _index_array(comps, plan.bshape), dnums, sizes)


def _index_array(comps: list[tuple[Any, tuple[int, ...]]], space: tuple[int, ...]) -> Any:
    """Stack index components into `space + (k,)`; component j's axes go to its dims.
    One component spanning `space` is returned as it is: the index vector dim is then
    implicit (index_vector_dim == rank), and no copy of the indices is made."""
    if len(comps) == 1 and comps[0][1] == tuple(range(len(space))):
        return comps[0][0]
    full = tuple(space) + (1,)
    if all(isinstance(v, np.ndarray) for v, _ in comps):
        parts = []
        for v, dims in comps:
            shape = [1] * len(full)
            for d, n in zip(dims, v.shape, strict=True):
                shape[d] = n
            parts.append(np.broadcast_to(v.reshape(shape), full))
        return np.concatenate(parts, axis=-1)
    parts = [ops.broadcast_in_dim(v, full, dims) for v, dims in comps]
    return parts[0] if len(parts) == 1 else ops.concatenate(parts, len(space))


# ----------------------------------------------------------------------------- updates

# (combine, its bool version): NumPy's bool add is `or` and multiply is `and`.
_COMBINE: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (ops.add, ops.bitwise_or),
    "multiply": (ops.mul, ops.bitwise_and),
    "min": (ops.min, ops.bitwise_and),
    "max": (ops.max, ops.bitwise_or),
}


def index_update(x: Any, idx: Any, values: Any, method: str) -> Any:
    """A copy of `x` with `x[idx]` combined with `values` (what `x.at[idx].<method>` does).

    `method`: "set" (duplicates: the last wins), "add" (duplicates accumulate, like
    `np.add.at`), "multiply", "min", "max". Values broadcast to `x[idx].shape` and
    take x's dtype. Example: `index_update(np.zeros(3), [0, 0], 1.0, "add")` → `[2, 0, 0]`.
    """
    what = f"at[...].{method}"
    if method != "set" and method not in _COMBINE:
        raise error(ParamError, "index_update", f"unknown method {method!r}; use 'set', "
                    f"{', '.join(map(repr, _COMBINE))}")
    x = as_operand(x, what)
    plan = _parse(x, idx, what, desc(x))
    vals = _prepare_values(values, x.dtype, plan.result_shape(), what, desc(x))
    combine = None if method == "set" else _COMBINE[method][dtypes.is_bool(x.dtype)]
    contiguous = all(abs(e.step) == 1 or e.length <= 1
                     for e in plan.entries if isinstance(e, _Slice))
    if not plan.advanced and contiguous:
        return _update_block(x, plan, vals, combine)
    return _scatter(x, plan, vals, combine)


def _prepare_values(values: Any, dtype: np.dtype, shape: tuple[int, ...], what: str,
                    xdesc: str) -> Any:
    """Cast to the array's dtype (float into int truncates) and broadcast to `shape`."""
    v = cast(asarray_like(values, what), dtype, False, what)  # out-of-range ints raise
    vshape = tuple(v.shape)
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape = vshape[1:]  # NumPy drops leading 1s of the values
    try:
        fits = np.broadcast_shapes(vshape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise error(
            ShapeError, what, f"could not broadcast values {desc(v)} into the indexed shape "
            f"{shape}; array {xdesc}")
    return broadcast_to(reshape(v, vshape), shape)


def _update_block(x: Any, plan: _Plan, vals: Any, combine: Callable[..., Any] | None) -> Any:
    """Pure basic index with unit steps: one (reversed) block and dynamic_update_slice."""
    starts, block, rev = [0] * x.ndim, list(x.shape), []
    for e in plan.entries:
        if isinstance(e, _Int):
            starts[e.axis], block[e.axis] = e.index, 1
        elif isinstance(e, _Slice):
            starts[e.axis] = _lowest_index(e)
            block[e.axis] = e.length
            rev += [e.axis] if e.step < 0 and e.length > 1 else []
    vals = reshape(vals, block)
    if rev:
        vals = ops.rev(vals, tuple(rev))
    if combine is not None:
        limits = tuple(s + n for s, n in zip(starts, block, strict=True))
        vals = combine(ops.slice(x, tuple(starts), limits), vals)
    return ops.dynamic_update_slice(x, vals, tuple(np.asarray(s, _INDEX) for s in starts))


def _scatter(x: Any, plan: _Plan, vals: Any, combine: Callable[..., Any] | None) -> Any:
    """General update: full slices are window dims, everything else an index component."""
    lay = plan.arrange()
    sizes = [d.length if isinstance(d, _Slice) else plan.bshape[d] for d in lay]
    vals = reshape(vals, sizes)
    window = [i for i, d in enumerate(lay)
              if isinstance(d, _Slice) and d.is_full(x.shape[d.axis])]
    space = [i for i in range(len(lay)) if i not in window]
    b_dims = [space.index(i) for i, d in enumerate(lay) if isinstance(d, int)]
    comps, axes = [], []
    for e in plan.entries:
        if isinstance(e, _Adv):
            comps.append((e.value, tuple(b_dims[len(b_dims) - e.value.ndim:])))
        elif isinstance(e, _Int):
            comps.append((np.asarray(e.index, _INDEX), ()))
        elif isinstance(e, _Slice) and not e.is_full(x.shape[e.axis]):
            pos = space.index(lay.index(e))
            comps.append((e.start + e.step * np.arange(e.length, dtype=_INDEX), (pos,)))
        else:
            continue
        axes.append(e.axis)
    dnums = ops.ScatterDimensionNumbers(
        update_window_dims=tuple(window), inserted_window_dims=tuple(sorted(axes)),
        scatter_dims_to_operand_dims=tuple(axes), index_vector_dim=len(space))
    indices = _index_array(comps, tuple(sizes[i] for i in space))
    return ops.scatter(x, indices, vals, combine, dnums)
