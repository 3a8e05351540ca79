"""Indexing ops: DynamicSlice, DynamicUpdateSlice (seeds §2.B), Gather, Scatter (§2.F).

Start indices are runtime operands; everything else (sizes, dimension numbers) is a
static param. Dimension numbers are stored as separate params named as in XLA, so
the HLO printer shows `offset_dims={1}, collapsed_slice_dims={0}, ...`.
Out-of-range starts: DynamicSlice, DynamicUpdateSlice and Gather clamp them so the
slice is in bounds; Scatter skips (drops) every update window that does not fit.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, fields
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerIndexError, TracerTypeError
from ..interpret import run_graph
from ..tracing import Tracer, trace_flat
from . import elementwise as ew
from .reduce import check_avals, wrapper_error
from .registry import define_op, dtype_of, harmonize

__all__ = ["dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter_add",
           "scatter_mul", "scatter_min", "scatter_max", "GatherDimensionNumbers",
           "ScatterDimensionNumbers"]

_BIG = 2 ** 62  # start indices are saturated here so `start + size` never overflows int64


def _int_tuple(owner: str, name: str, value: Any) -> tuple[int, ...]:
    """`value` as a tuple of Python ints (a static param); ParamError otherwise."""
    try:
        items = tuple(value)
        if any(isinstance(v, (bool, np.bool_)) for v in items):
            raise TypeError
        return tuple(operator.index(v) for v in items)
    except TypeError:
        raise wrapper_error(ParamError, owner, f"{name} must be a sequence of ints, "
                            f"got {value!r}") from None


def _int_param(owner: str, name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise wrapper_error(ParamError, owner, f"{name} must be an int, got {value!r}")
    return int(value)


def _canonical_fields(obj: Any) -> None:
    owner = type(obj).__name__
    for f in fields(obj):
        value = getattr(obj, f.name)
        value = (_int_param(owner, f.name, value) if f.name == "index_vector_dim"
                 else _int_tuple(owner, f.name, value))
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
    return [int(np.clip(int(s), 0, d - z)) for s, d, z in zip(starts, shape, sizes, strict=True)]


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
    sizes = _int_tuple("dynamic_slice", "slice_sizes", slice_sizes)
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
    starts = np.clip(starts, 0, np.subtract(operand.shape, slice_sizes, dtype=np.int64))
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
    array([[4., 5.], [0., 1.]])
    """
    dn = _dimension_numbers("gather", GatherDimensionNumbers, dimension_numbers)
    sizes = _int_tuple("gather", "slice_sizes", slice_sizes)
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


# ---------------------------------------------------------------- Scatter

# Single-op update computations the reference runs as one unbuffered NumPy ufunc.at.
_UFUNCS: dict[str, np.ufunc] = {"add": np.add, "mul": np.multiply,
                                "min": np.minimum, "max": np.maximum}
# Families whose impls are element-wise NumPy code: a computation made only of them
# can combine many (current, update) pairs in one `run_graph` call.
_ELEMENTWISE = frozenset({"unary", "binary", "compare", "ternary"})


def _split_scatter(args: Sequence[Any]) -> tuple[list[Any], Any, list[Any]]:
    n = (len(args) - 1) // 2
    return list(args[:n]), args[n], list(args[n + 1:])


def _scatter_shape(*avals: ShapedArray, to_apply: Graph, indices_are_sorted: bool,
                   unique_indices: bool, **dn: Any) -> tuple[ShapedArray, ...]:
    d = ScatterDimensionNumbers(**dn)
    if len(avals) < 3 or len(avals) % 2 == 0:
        raise ParamError(f"needs N operands, the indices and N updates, got {len(avals)} arrays")
    operands, indices, updates = _split_scatter(avals)
    for what, group in (("operands", operands), ("updates", updates)):
        if any(a.shape != group[0].shape for a in group):
            raise ShapeError(f"all {what} must have the same shape, got "
                             f"{', '.join(map(str, group))}")
    if any(o.dtype != u.dtype for o, u in zip(operands, updates, strict=True)):
        raise DTypeError("updates must have the dtypes of their operands, got operands "
                         f"{', '.join(map(str, operands))} and updates "
                         f"{', '.join(map(str, updates))}")
    _int_indices(indices, "scatter indices")
    batch_shape, vector = _index_batch(indices, d.index_vector_dim)
    operand, update = operands[0], updates[0]
    _dims("update_window_dims", d.update_window_dims, update.ndim)
    _dims("inserted_window_dims", d.inserted_window_dims, operand.ndim)
    _check_batching(operand, indices, d.index_vector_dim, ("input_batching_dims",
                    "scatter_indices_batching_dims"), d.input_batching_dims,
                    d.scatter_indices_batching_dims)
    _disjoint("inserted_window_dims", d.inserted_window_dims, "input_batching_dims",
              d.input_batching_dims)
    _check_index_map("scatter_dims_to_operand_dims", d.scatter_dims_to_operand_dims,
                     operand.ndim, vector, d.input_batching_dims)
    _check_update_shape(operand, update, d.update_window_dims,
                        d.inserted_window_dims + d.input_batching_dims, batch_shape)
    scalars = [ShapedArray((), o.dtype) for o in operands]
    check_avals("update_computation parameters (currents, then updates)", scalars * 2,
                to_apply.in_avals)
    check_avals("update_computation results", scalars, to_apply.out_avals)
    return tuple(ShapedArray(o.shape, o.dtype) for o in operands)


def _check_update_shape(operand: ShapedArray, update: ShapedArray, window_dims: tuple[int, ...],
                        not_window: tuple[int, ...], batch_shape: tuple[int, ...]) -> None:
    if operand.ndim != len(window_dims) + len(not_window):
        raise ShapeError(f"operand rank {operand.ndim} must equal len(update_window_dims) + "
                         f"len(inserted_window_dims) + len(input_batching_dims)")
    if update.ndim != len(window_dims) + len(batch_shape):
        raise ShapeError(f"updates {update} must have rank len(update_window_dims) + "
                         f"scatter indices rank - 1 = {len(window_dims) + len(batch_shape)}")
    bounds = tuple(z for d, z in enumerate(operand.shape) if d not in not_window)
    window = tuple(update.shape[d] for d in window_dims)
    if any(w > b for w, b in zip(window, bounds, strict=True)):
        raise ShapeError(f"update window {window} of {update} exceeds the operand's window "
                         f"bounds {bounds}")
    scatter = tuple(z for d, z in enumerate(update.shape) if d not in window_dims)
    if scatter != batch_shape:
        raise ShapeError(f"update scatter dims {scatter} of {update} must equal the scatter "
                         f"indices' batch dims {batch_shape}")


def _scatter_impl(*args: np.ndarray, to_apply: Graph, indices_are_sorted: bool,
                  unique_indices: bool, **dn: Any) -> list[np.ndarray]:
    d = ScatterDimensionNumbers(**dn)
    operands, indices, updates = _split_scatter(args)
    outs = [np.array(o, order="C", copy=True) for o in operands]
    shape = outs[0].shape
    starts = _start_vectors(indices, d.index_vector_dim, d.scatter_dims_to_operand_dims,
                            d.input_batching_dims, d.scatter_indices_batching_dims, len(shape))
    targets, values = _scatter_targets(starts, [np.asarray(u) for u in updates], shape,
                                       d.update_window_dims,
                                       d.inserted_window_dims + d.input_batching_dims)
    with np.errstate(all="ignore"):
        _apply(to_apply, [o.reshape(-1) for o in outs], targets, values)
    return outs


def _scatter_targets(starts: np.ndarray, updates: list[np.ndarray], shape: tuple[int, ...],
                     window_dims: tuple[int, ...], not_window: tuple[int, ...]
                     ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Flat operand positions and values, in update order, of the windows that fit.

    A window that does not fit entirely in the operand is dropped as a whole (XLA).
    """
    rank, n_windows = len(shape), math.prod(starts.shape[:-1])
    starts = starts.reshape(n_windows, rank)
    scatter_axes = [d for d in range(updates[0].ndim) if d not in window_dims]
    bounds = tuple(updates[0].shape[d] for d in window_dims)
    sizes = [1] * rank  # window extent per operand dim: 1 at inserted/batching dims
    for d, b in zip([d for d in range(rank) if d not in not_window], bounds, strict=True):
        sizes[d] = b
    fits = np.all((starts >= 0) & (starts + sizes <= np.array(shape, np.int64)), axis=1)
    flat = np.zeros((int(fits.sum()),) + (1,) * rank, np.int64)
    for d, grid in enumerate(_window_grids(starts[fits], sizes)):
        flat = flat * shape[d] + grid
    targets = np.broadcast_to(flat, (flat.shape[0], *sizes)).reshape(-1)
    values = [np.transpose(u, scatter_axes + list(window_dims))
              .reshape((n_windows,) + bounds)[fits].reshape(-1) for u in updates]
    return targets, values


def _apply(graph: Graph, outs: list[np.ndarray], targets: np.ndarray,
           values: list[np.ndarray]) -> None:
    """outs[t] = graph(outs[t]..., v...) for each (t, v) in order, in place."""
    kind = _combiner(graph, len(outs), outs[0].dtype)
    if kind == "replace":
        last = _last_writes(targets)
        for o, v in zip(outs, values, strict=True):
            o[targets[last]] = v[last]
    elif isinstance(kind, np.ufunc):
        kind.at(outs[0], targets, values[0])
    elif all(getattr(e.op, "family", "") in _ELEMENTWISE for e in graph.eqns):
        for sel in _rounds(targets):  # each round writes distinct targets: one vector step
            _combine(graph, outs, targets[sel], [v[sel] for v in values])
    else:
        for j in range(len(targets)):
            _combine(graph, outs, targets[j], [np.asarray(v[j]) for v in values])


def _combine(graph: Graph, outs: list[np.ndarray], where: Any, values: list[np.ndarray]) -> None:
    current = [np.asarray(o[where]) for o in outs]
    for o, r in zip(outs, run_graph(graph, current + values), strict=True):
        o[where] = np.asarray(r, dtype=o.dtype)


def _combiner(graph: Graph, n: int, dtype: np.dtype) -> str | np.ufunc | None:
    """"replace" for (cur..., upd...) -> upd..., a ufunc for one add/mul/min/max, or None."""
    if not graph.eqns and [id(a) for a in graph.outputs] == [id(v) for v in graph.inputs[n:]]:
        return "replace"
    if n != 1 or len(graph.eqns) != 1 or dtype.kind == "b":
        return None  # NumPy would promote bool add/mul; the general path keeps XLA's meaning
    eqn = graph.eqns[0]
    wired = {id(a) for a in eqn.inputs} == {id(v) for v in graph.inputs}
    plain = all(v is None or v is False or v == () for v in eqn.params.values())
    returns = len(graph.outputs) == 1 and graph.outputs[0] is eqn.outputs[0]
    return _UFUNCS.get(eqn.op.name) if wired and plain and returns else None


def _last_writes(targets: np.ndarray) -> np.ndarray:
    """Positions of the last write to each distinct target (so the last update wins)."""
    _, first_from_end = np.unique(targets[::-1], return_index=True)
    return len(targets) - 1 - first_from_end


def _rounds(targets: np.ndarray) -> list[np.ndarray]:
    """Masks picking the 1st, 2nd, ... write to each target, in update order."""
    order = np.argsort(targets, kind="stable")
    ordered, count = targets[order], len(targets)
    first = np.ones(count, bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(count), 0))
    occurrence = np.empty(count, np.int64)
    occurrence[order] = np.arange(count) - group_start
    return [occurrence == r for r in range(int(occurrence.max(initial=-1)) + 1)]


scatter_p = define_op(
    "scatter", shape=_scatter_shape, impl=_scatter_impl, hlo_name="scatter",
    family="indexing", multiple_results=True,
    doc="Scatter(operands..., scatter_indices, updates..., update_computation, "
        "update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, "
        "index_vector_dim, input_batching_dims, scatter_indices_batching_dims): the "
        "operands with (out[O]...) = update_computation(out[O]..., updates[U]...) for every "
        "updates index U, O = Sin + Win (the inverse index mapping of Gather). The "
        "computation gets the current values first, then the updates. Updates with no "
        "valid target are skipped: a window that does not fit entirely is dropped (XLA), "
        "never clamped. Order with duplicate targets is non-deterministic in XLA; here "
        "updates apply in row-major order of the updates' scatter dims, then window "
        "elements (replace: the last wins). Example: operand [0,0,0,0,0], indices "
        "[[1],[3],[1]], updates [10,20,5], add, inserted_window_dims [0] -> [0,15,0,20,0].")


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            update_computation: Callable[..., Any] | Graph | None,
            dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Any:
    """Combine `updates` into `operand` at the windows named by `scatter_indices`.

    Seed rule: out[O] = update_computation(out[O], updates[U]) with O = Sin + Win for
    every updates index U; out-of-bounds windows are skipped; None means replace.
    `operand`/`updates` may be sequences (variadic scatter, returns a tuple).

    >>> dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                              scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
    >>> scatter(np.zeros(5), np.array([[1], [3], [1]]), np.array([10., 20., 5.]), add, dn)
    array([ 0., 15.,  0., 20.,  0.])
    """
    single = not isinstance(operand, (tuple, list))
    operands = [operand] if single else list(operand)
    upds = [updates] if single else updates
    if not isinstance(upds, (tuple, list)) or len(upds) != len(operands) or not operands:
        raise wrapper_error(ParamError, "scatter", f"needs N >= 1 operands and as many "
                            f"updates, got {len(operands)} operand(s) and updates {updates!r:.80}")
    pairs = [harmonize(o, u) for o, u in zip(operands, upds, strict=True)]
    operands, upds = [p[0] for p in pairs], [p[1] for p in pairs]
    graph = _update_graph(update_computation, [_scalar_aval(o) for o in operands])
    dn = _dimension_numbers("scatter", ScatterDimensionNumbers, dimension_numbers)
    params = {f.name: getattr(dn, f.name) for f in fields(dn)}
    outs = scatter_p.bind(*operands, scatter_indices, *upds, **params, to_apply=graph,
                          indices_are_sorted=bool(indices_are_sorted),
                          unique_indices=bool(unique_indices))
    return outs[0] if single else tuple(outs)


def _scalar_aval(x: Any) -> ShapedArray:
    return ShapedArray((), x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)


def _update_graph(fun: Callable[..., Any] | Graph | None, scalars: list[ShapedArray]) -> Graph:
    """The update computation traced on 0-d avals (N currents, then N updates)."""
    n = len(scalars)
    if isinstance(fun, Graph):
        return fun
    if fun is not None and not callable(fun):
        raise wrapper_error(ParamError, "scatter", f"update_computation must be None, a "
                            f"function or a Graph, got {fun!r}")

    def flat(*args: Any) -> list[Any]:
        out = args[n:] if fun is None else fun(*args)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != n:
            raise wrapper_error(TracerTypeError, "scatter", f"update_computation must "
                                f"return {n} value(s) (one per operand), got {len(outs)}")
        return outs

    graph, captured = trace_flat(flat, scalars * 2, name="scatter_computation")
    if captured:
        raise wrapper_error(TracerTypeError, "scatter", "update_computation must be closed: "
                            f"it uses traced values of an enclosing function "
                            f"({', '.join(str(t.aval) for t in captured)})")
    return graph


def _scatter_with(name: str, combine: Callable[..., Any], rule: str) -> Callable[..., Any]:
    def wrapper(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool = False,
                unique_indices: bool = False) -> Any:
        return scatter(operand, scatter_indices, updates, combine, dimension_numbers,
                       indices_are_sorted, unique_indices)
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = (f"`scatter` with update_computation = {rule} (as jax.lax.{name}).\n\n"
                       f"Seed rule: out[O] = {rule}(out[O], updates[U]); out-of-bounds "
                       f"windows are skipped.\n\n>>> {name}(np.zeros(3), np.array([[1], "
                       f"[1]]), np.ones(2), dn)  # dn as in scatter's example")
    return wrapper


scatter_add = _scatter_with("scatter_add", ew.add, "add")
scatter_mul = _scatter_with("scatter_mul", ew.mul, "mul")
scatter_min = _scatter_with("scatter_min", ew.min, "min")
scatter_max = _scatter_with("scatter_max", ew.max, "max")
