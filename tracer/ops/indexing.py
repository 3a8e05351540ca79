"""Indexing ops: DynamicSlice, DynamicUpdateSlice and Gather, Scatter (XLA's operations).

Start indices are runtime operands; everything else (sizes, dimension numbers) is a
static param. Dimension numbers are stored as separate params named as in XLA, so
the HLO printer shows `offset_dims={1}, collapsed_slice_dims={0}, ...`.
Out-of-range starts: DynamicSlice, DynamicUpdateSlice and Gather clamp them so the
slice is in bounds; Scatter skips (drops) every update window that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerIndexError
from ..tracing import Tracer
from . import elementwise as ew
from .common import static_int, static_ints, wrapper_error
from .registry import define_op, dtype_of, harmonize

__all__ = ["dynamic_slice", "dynamic_update_slice", "gather", "GatherDimensionNumbers",
           "ScatterDimensionNumbers"]

_BIG = 2 ** 62  # start indices are saturated here so `start + size` never overflows int64





def _canonical_fields(obj: Any) -> None:
    owner = type(obj).__name__
    for f in fields(obj):
        value = getattr(obj, f.name)
        value = (static_int(owner, f.name, value) if f.name == "index_vector_dim"
                 else static_ints(owner, f.name, value))
        object.__setattr__(obj, f.name, value)


@dataclass(frozen=True)
class GatherDimensionNumbers:
    """Gather's dimension numbers (hashable; list fields are stored as tuples)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _canonical_fields(self)


@dataclass(frozen=True)
class ScatterDimensionNumbers:
    """Scatter's dimension numbers (hashable; list fields are stored as tuples)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _canonical_fields(self)


# ---------------------------------------------------------------- shape-rule helpers

def _dims(name: str, dims: tuple[int, ...], bound: int, ordered: bool = True) -> None:
    """Distinct (and, if `ordered`, ascending) dimension numbers in [0, bound)."""
    if len(set(dims)) != len(dims) or (ordered and list(dims) != sorted(dims)):
        raise ParamError(f"{name} {dims} must be {'ascending and ' * ordered}without repeats")
    if any(not 0 <= d < bound for d in dims):
        raise TracerIndexError(f"{name} {dims} out of range [0, {bound})")


def _int_indices(indices: ShapedArray, what: str = "start indices") -> None:
    if not dtypes.is_integer(indices.dtype):
        raise DTypeError(f"{what} must have an integer dtype, got {indices}")


def _index_batch(indices: ShapedArray, ivd: int) -> tuple[tuple[int, ...], int]:
    """(batch shape, index-vector size) of `indices`; ivd == rank means a trailing 1."""
    if not 0 <= ivd <= indices.ndim:
        raise TracerIndexError(f"index_vector_dim {ivd} out of range [0, {indices.ndim}] "
                               f"for indices {indices}")
    shape = indices.shape + (1,) if ivd == indices.ndim else indices.shape
    return shape[:ivd] + shape[ivd + 1:], shape[ivd]


def _check_batching(operand: ShapedArray, indices: ShapedArray, ivd: int,
                    names: tuple[str, str], op_dims: tuple[int, ...],
                    idx_dims: tuple[int, ...]) -> None:
    _dims(names[0], op_dims, operand.ndim)
    _dims(names[1], idx_dims, indices.ndim, ordered=False)
    if ivd in idx_dims:
        raise ParamError(f"{names[1]} {idx_dims} must not contain index_vector_dim {ivd}")
    if len(op_dims) != len(idx_dims):
        raise ParamError(f"{names[0]} {op_dims} and {names[1]} {idx_dims} differ in length")
    if any(operand.shape[a] != indices.shape[b] for a, b in zip(op_dims, idx_dims, strict=True)):
        raise ShapeError(f"batching dims {names[0]}={op_dims} of {operand} and "
                         f"{names[1]}={idx_dims} of {indices} differ in size")


def _check_index_map(name: str, index_map: tuple[int, ...], rank: int, vector: int,
                     batching: tuple[int, ...]) -> None:
    _dims(name, index_map, rank, ordered=False)
    if len(index_map) != vector:
        raise ShapeError(f"{name} {index_map} has {len(index_map)} entries but the index "
                         f"vectors have {vector}")
    if set(index_map) & set(batching):
        raise ParamError(f"{name} {index_map} must not contain batching dims {batching}")


def _disjoint(a_name: str, a: tuple[int, ...], b_name: str, b: tuple[int, ...]) -> None:
    if set(a) & set(b):
        raise ParamError(f"{a_name} {a} and {b_name} {b} overlap")


def _interleave(size: int, chosen: tuple[int, ...], picked: Sequence[int],
                rest: Sequence[int]) -> tuple[int, ...]:
    """A shape of `size` dims: `picked` at positions `chosen`, `rest` elsewhere, in order."""
    p, r = iter(picked), iter(rest)
    return tuple(next(p) if i in chosen else next(r) for i in range(size))


# ---------------------------------------------------------------- impl helpers

def _as_int64(v: np.ndarray) -> np.ndarray:
    """Indices of any integer dtype as int64, saturated at ±2**62 (no wraparound)."""
    if v.dtype == np.uint64:
        v = np.minimum(v, np.uint64(_BIG))
    return np.clip(v.astype(np.int64), -_BIG, _BIG)


def _start_vectors(indices: np.ndarray, ivd: int, index_map: tuple[int, ...],
                   op_batch: tuple[int, ...], idx_batch: tuple[int, ...],
                   rank: int) -> np.ndarray:
    """Full operand start vectors, unclamped: int64 of shape batch_shape + (rank,)."""
    idx = np.asarray(indices)
    idx = np.moveaxis(idx[..., None] if ivd == idx.ndim else idx, ivd, -1)
    batch_shape = idx.shape[:-1]
    starts = np.zeros(batch_shape + (rank,), np.int64)
    for k, d in enumerate(index_map):
        starts[..., d] = _as_int64(idx[..., k])
    for od, sd in zip(op_batch, idx_batch, strict=True):
        axis = sd if sd < ivd else sd - 1  # its position once index_vector_dim is gone
        shape = [1] * len(batch_shape)
        shape[axis] = batch_shape[axis]
        starts[..., od] = np.arange(batch_shape[axis]).reshape(shape)
    return starts


def _window_grids(starts: np.ndarray, sizes: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Per operand dim, `start + arange(size)` broadcast to batch_shape + sizes."""
    nb, rank = starts.ndim - 1, len(sizes)
    grids = []
    for d, size in enumerate(sizes):
        offsets = np.arange(size).reshape((1,) * nb + tuple(size if e == d else 1
                                                             for e in range(rank)))
        grids.append(starts[..., d].reshape(starts.shape[:-1] + (1,) * rank) + offsets)
    return tuple(grids)


def _scalar_starts(starts: Sequence[np.ndarray], shape: Sequence[int],
                   sizes: Sequence[int]) -> list[int]:
    """The seeds' new DynamicSlice rule: start[i] = clamp(start[i], 0, dim[i] - size[i])."""
    return [min(max(int(s), 0), d - z) for s, d, z in zip(starts, shape, sizes, strict=True)]


def _check_starts(operand: ShapedArray, starts: Sequence[ShapedArray]) -> None:
    if len(starts) != operand.ndim:
        raise ShapeError(f"needs one start index per dimension of {operand}, got {len(starts)}")
    if any(s.ndim != 0 for s in starts):
        raise ShapeError(f"start indices must be scalars, got {', '.join(map(str, starts))}")
    if any(not dtypes.is_integer(s.dtype) for s in starts) or \
            len({s.dtype for s in starts}) > 1:
        raise DTypeError(f"start indices must be integers of one dtype, got "
                         f"{', '.join(map(str, starts))}")


def _start_operands(owner: str, start_indices: Any) -> list[Any]:
    """Each start index as a 0-d operand of the strong ones' promoted integer dtype.

    Non-integer or unpromotable (u64 with signed) starts are passed on unchanged, so
    the shape rule rejects them naming every aval.
    """
    try:
        items = list(start_indices)
    except TypeError:
        raise wrapper_error(ParamError, owner, f"start_indices must be a sequence of "
                            f"scalars, got {start_indices!r}") from None
    strong = [d for d in map(dtype_of, items) if d is not None]
    dtype = np.result_type(*strong) if strong else dtypes.default_int()
    if not dtypes.is_integer(dtype):
        return items
    return [_as_index(owner, x, dtype) for x in items]


def _as_index(owner: str, x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, Tracer):
        keep = (x.dtype == dtype and not x.weak_type) or not dtypes.is_integer(x.dtype)
        return x if keep else ew.convert_element_type(x, dtype)
    if dtype_of(x) is not None:
        arr = np.asarray(x)
        return arr.astype(dtype) if dtypes.is_integer(arr.dtype) else arr
    if not isinstance(x, int):
        return x
    if not np.iinfo(dtype).min <= x <= np.iinfo(dtype).max:
        raise wrapper_error(ParamError, owner, f"start index {x} does not fit the start "
                            f"indices' dtype {dtypes.hlo_name(dtype)}")
    return np.asarray(x, dtype=dtype)


# ---------------------------------------------------------------- DynamicSlice

def _dynamic_slice_shape(operand: ShapedArray, *starts: ShapedArray,
                         slice_sizes: tuple[int, ...]) -> ShapedArray:
    _check_starts(operand, starts)
    if len(slice_sizes) != operand.ndim:
        raise ParamError(f"slice_sizes {slice_sizes} needs one size per dimension of {operand}")
    if any(not 0 <= z <= d for z, d in zip(slice_sizes, operand.shape, strict=True)):
        raise ParamError(f"slice_sizes {slice_sizes} must satisfy 0 <= size <= dim for {operand}")
    return ShapedArray(slice_sizes, operand.dtype)


def _dynamic_slice_impl(operand: np.ndarray, *starts: np.ndarray,
                        slice_sizes: tuple[int, ...]) -> np.ndarray:
    begin = _scalar_starts(starts, operand.shape, slice_sizes)
    return np.array(operand[tuple(slice(b, b + z) for b, z in
                                  zip(begin, slice_sizes, strict=True))])


dynamic_slice_p = define_op(
    "dynamic_slice", shape=_dynamic_slice_shape, impl=_dynamic_slice_impl,
    hlo_name="dynamic-slice", family="indexing", linear=True,
    doc="DynamicSlice(operand, start_indices, slice_sizes): the [start, start + size) "
        "block of operand; start_indices are N runtime integer scalars, slice_sizes N "
        "static sizes (0 <= size <= dim). Seed rule (new): each start is first clamped to "
        "[0, dim - size], so the slice is always in bounds. Example: a = [0,1,2,3,4]; "
        "DynamicSlice(a, [2], [2]) -> [2,3]; DynamicSlice(a, [4], [2]) -> [3,4].")


def dynamic_slice(operand: Any, start_indices: Sequence[Any],
                  slice_sizes: Sequence[int]) -> Any:
    """Extract a `slice_sizes` block of `operand` at runtime start indices.

    Seed rule: one integer scalar start per dimension, clamped to
    [0, dim - size] so the slice stays in bounds; the result shape is `slice_sizes`.

    >>> dynamic_slice(np.arange(5.0), [4], [2])  # start clamped to 3 -> [3., 4.]
    """
    starts = _start_operands("dynamic_slice", start_indices)
    sizes = static_ints("dynamic_slice", "slice_sizes", slice_sizes)
    return dynamic_slice_p.bind(operand, *starts, slice_sizes=sizes)


# ---------------------------------------------------------------- DynamicUpdateSlice

def _dynamic_update_slice_shape(operand: ShapedArray, update: ShapedArray,
                                *starts: ShapedArray) -> ShapedArray:
    if update.dtype != operand.dtype:
        raise DTypeError(f"update {update} must have the dtype of operand {operand}")
    if update.ndim != operand.ndim or any(
            u > d for u, d in zip(update.shape, operand.shape, strict=True)):
        raise ShapeError(f"update {update} must have the rank of operand {operand} and "
                         f"no larger dims")
    _check_starts(operand, starts)
    return ShapedArray(operand.shape, operand.dtype)


def _dynamic_update_slice_impl(operand: np.ndarray, update: np.ndarray,
                               *starts: np.ndarray) -> np.ndarray:
    begin = _scalar_starts(starts, operand.shape, update.shape)
    out = np.array(operand)
    out[tuple(slice(b, b + z) for b, z in zip(begin, update.shape, strict=True))] = update
    return out


dynamic_update_slice_p = define_op(
    "dynamic_update_slice", shape=_dynamic_update_slice_shape,
    impl=_dynamic_update_slice_impl, hlo_name="dynamic-update-slice", family="indexing",
    linear=True,
    doc="DynamicUpdateSlice(operand, update, start_indices): operand with the block at "
        "start_indices overwritten by update (same dtype and rank, each dim <= operand's). "
        "Seed rule (new): each start is clamped to [0, operand.dim - update.dim]. Example: "
        "DynamicUpdateSlice([0,1,2,3,4], [5,6], [2]) -> [0,1,5,6,4]; with start [4] "
        "-> [0,1,2,5,6].")


def dynamic_update_slice(operand: Any, update: Any, start_indices: Sequence[Any]) -> Any:
    """Overwrite the block of `operand` at runtime start indices with `update`.

    Seed rule: `update` has operand's dtype and rank and no larger dims; each start
    is clamped to [0, operand.dim - update.dim]; the result has operand's shape.

    >>> dynamic_update_slice(np.zeros(5), np.ones(2), [4])  # -> [0., 0., 0., 1., 1.]
    """
    operand, update = harmonize(operand, update)
    starts = _start_operands("dynamic_update_slice", start_indices)
    return dynamic_update_slice_p.bind(operand, update, *starts)


# ---------------------------------------------------------------- Gather

def _gather_shape(operand: ShapedArray, indices: ShapedArray, *, slice_sizes: tuple[int, ...],
                  indices_are_sorted: bool, **dn: Any) -> ShapedArray:
    g = GatherDimensionNumbers(**dn)
    _int_indices(indices)
    batch_shape, vector = _index_batch(indices, g.index_vector_dim)
    rank, out_rank = operand.ndim, len(batch_shape) + len(g.offset_dims)
    _dims("offset_dims", g.offset_dims, out_rank)
    _dims("collapsed_slice_dims", g.collapsed_slice_dims, rank)
    _check_batching(operand, indices, g.index_vector_dim, ("operand_batching_dims",
                    "start_indices_batching_dims"), g.operand_batching_dims,
                    g.start_indices_batching_dims)
    _disjoint("collapsed_slice_dims", g.collapsed_slice_dims, "operand_batching_dims",
              g.operand_batching_dims)
    _check_index_map("start_index_map", g.start_index_map, rank, vector,
                     g.operand_batching_dims)
    dropped = g.collapsed_slice_dims + g.operand_batching_dims
    if rank != len(g.offset_dims) + len(dropped):
        raise ShapeError(f"operand rank {rank} must equal len(offset_dims) + "
                         f"len(collapsed_slice_dims) + len(operand_batching_dims)")
    if len(slice_sizes) != rank or any(not 0 <= z <= d for z, d in
                                       zip(slice_sizes, operand.shape, strict=True)):
        raise ParamError(f"slice_sizes {slice_sizes} needs one size per operand dim with "
                         f"0 <= size <= dim")
    if any(slice_sizes[d] != 1 for d in dropped):
        raise ParamError(f"slice_sizes {slice_sizes} must be 1 at collapsed and batching "
                         f"dims {tuple(sorted(dropped))}")
    offsets = [z for d, z in enumerate(slice_sizes) if d not in dropped]
    return ShapedArray(_interleave(out_rank, g.offset_dims, offsets, batch_shape), operand.dtype)


def _gather_impl(operand: np.ndarray, indices: np.ndarray, *, slice_sizes: tuple[int, ...],
                 indices_are_sorted: bool, **dn: Any) -> np.ndarray:
    g = GatherDimensionNumbers(**dn)
    starts = _start_vectors(indices, g.index_vector_dim, g.start_index_map,
                            g.operand_batching_dims, g.start_indices_batching_dims, operand.ndim)
    starts = np.clip(starts, 0, np.array(operand.shape, np.int64) - np.array(slice_sizes, np.int64))
    batch_shape, nb = starts.shape[:-1], starts.ndim - 1
    window = (operand[_window_grids(starts, slice_sizes)] if operand.ndim
              else np.broadcast_to(operand, batch_shape))
    dropped = set(g.collapsed_slice_dims) | set(g.operand_batching_dims)
    offsets = tuple(z for d, z in enumerate(slice_sizes) if d not in dropped)
    window = window.reshape(batch_shape + offsets)
    perm = _interleave(nb + len(offsets), g.offset_dims, range(nb, nb + len(offsets)), range(nb))
    return np.array(np.transpose(window, perm))


gather_p = define_op(
    "gather", shape=_gather_shape, impl=_gather_impl, hlo_name="gather", family="indexing",
    linear=True,
    doc="Gather(operand, start_indices, offset_dims, collapsed_slice_dims, start_index_map, "
        "index_vector_dim, slice_sizes, operand_batching_dims, start_indices_batching_dims): "
        "a batch of dynamic slices. Each index vector of start_indices (along "
        "index_vector_dim; == rank means an implicit trailing 1) is scattered into a full "
        "start through start_index_map; batching dims take their start from the batch "
        "position. A slice_sizes slice is cut there, collapsed/batching dims (size 1) are "
        "dropped and the rest become offset_dims of the output; the other output dims are "
        "the batch dims, in order. Out-of-range starts: the seeds do not say; like XLA "
        "(and DynamicSlice) each start is clamped to [0, dim - slice_size]. Example: "
        "operand f32[16,11], start_indices s64[5,2], slice_sizes [8,6], offset_dims [1,2] "
        "-> f32[5,8,6] with out[G,O0,O1] = operand[X+O0, Y+O1], (X,Y) = start_indices[G].")


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], indices_are_sorted: bool = False) -> Any:
    """Stitch together slices of `operand` at the index vectors of `start_indices`.

    Seed rule: out[Out] = operand[Sin + Oin], where Sin is the index vector picked by
    Out's batch dims (expanded by start_index_map) and Oin are Out's offset dims
    (expanded around collapsed_slice_dims); starts are clamped into bounds.

    >>> dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
    ...                             start_index_map=(0,), index_vector_dim=1)
    >>> gather(np.arange(6.0).reshape(3, 2), np.array([[2], [0]]), dn, (1, 2))
    # -> [[4., 5.], [0., 1.]]
    """
    dn = _dimension_numbers("gather", GatherDimensionNumbers, dimension_numbers)
    sizes = static_ints("gather", "slice_sizes", slice_sizes)
    params = {f.name: getattr(dn, f.name) for f in fields(dn)}
    return gather_p.bind(operand, start_indices, **params, slice_sizes=sizes,
                         indices_are_sorted=bool(indices_are_sorted))


def _dimension_numbers(owner: str, cls: type, dn: Any) -> Any:
    if isinstance(dn, cls):
        return dn
    try:
        if isinstance(dn, dict):
            return cls(**dn)
        if isinstance(dn, (tuple, list)):
            return cls(*dn)
    except TypeError as e:
        raise wrapper_error(ParamError, owner, f"bad dimension_numbers {dn!r}: {e}") from None
    raise wrapper_error(ParamError, owner, f"dimension_numbers must be a {cls.__name__}, "
                        f"got {dn!r}")
