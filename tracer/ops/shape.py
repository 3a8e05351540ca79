"""Shape manipulation (XLA's BroadcastInDim, Reshape, Transpose, Rev, Slice,
Concatenate, Pad, Iota): broadcast, reshape, transpose, rev,
slice, concatenate, pad, iota and get_dimension_size.

Every dimension parameter is a static tuple of Python ints in `0..rank-1`;
negative indices are rejected (the seeds never use them; `tracer.numpy` wraps
them first). Pure data-movement ops keep a weak operand weak, so a Python scalar
broadcast by `tracer.numpy` still promotes the NEP 50 way.
"""

from __future__ import annotations

import builtins
import inspect
import math
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerError, TracerIndexError
from ..tracing import Tracer
from .common import operand_aval, static_int, static_ints, wrapper_error
from .registry import all_weak, define_op, harmonize, same_dtypes

__all__ = ["broadcast", "broadcast_in_dim", "reshape", "collapse", "transpose", "rev",
           "slice", "concatenate", "pad", "iota", "get_dimension_size"]


# --------------------------------------------------------------------------- helpers
def check_dims(name: str, dims: tuple[int, ...], rank: int, unique: bool = True) -> None:
    """TracerIndexError for dims outside 0..rank-1, ParamError for duplicates."""
    if any(not 0 <= d < rank for d in dims):
        raise TracerIndexError(f"{name} {list(dims)} out of range for rank {rank} (valid: "
                               f"0..{rank - 1}; negative indices are not accepted)")
    if unique and len(set(dims)) != len(dims):
        raise ParamError(f"{name} {list(dims)} lists a dimension twice")


def _check_sizes(name: str, sizes: tuple[int, ...]) -> None:
    if any(s < 0 for s in sizes):
        raise ParamError(f"{name} {list(sizes)} must be non-negative")


def _check_permutation(name: str, perm: tuple[int, ...], rank: int) -> None:
    if len(perm) != rank:
        raise ParamError(f"{name} {list(perm)} must be a permutation of the {rank} "
                         f"operand dimensions")
    check_dims(name, perm, rank)


def _fmt_shape(dtype: np.dtype, shape: Sequence[int]) -> str:
    return f"{dtypes.hlo_name(dtype)}[{','.join(map(str, shape))}]"


# --------------------------------------------------------------------------- broadcast
def _broadcast_in_dim_shape(x: ShapedArray, *, shape: tuple[int, ...],
                            broadcast_dimensions: tuple[int, ...]) -> ShapedArray:
    dims = broadcast_dimensions
    _check_sizes("shape", shape)
    if len(dims) != x.ndim:
        raise ParamError(f"broadcast_dimensions {list(dims)} must have one entry per "
                         f"operand dimension ({x.ndim})")
    check_dims("broadcast_dimensions", dims, len(shape))
    if any(a >= b for a, b in zip(dims, dims[1:])):
        raise ParamError(f"broadcast_dimensions {list(dims)} must be strictly increasing")
    for i, d in enumerate(dims):
        if x.shape[i] not in (1, shape[d]):
            raise ShapeError(f"operand dimension {i} (size {x.shape[i]}) must be 1 or match "
                             f"dimension {d} of the target {_fmt_shape(x.dtype, shape)}")
    return ShapedArray(shape, x.dtype, weak_type=x.weak_type)


def _broadcast_in_dim_impl(x: np.ndarray, *, shape: tuple[int, ...],
                           broadcast_dimensions: tuple[int, ...]) -> np.ndarray:
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.array(np.broadcast_to(np.reshape(x, expanded), shape))


def broadcast_in_dim(operand: Any, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int]) -> Any:
    """Broadcast `operand` into `shape`, operand dim i going to broadcast_dimensions[i].

    Seed rule: broadcast_dimensions is strictly increasing, one entry per operand
    dimension; each operand dimension has size 1 or the size of its target
    dimension; unmapped target dimensions are added, size-1 ones are expanded.

    broadcast_in_dim(np.array([1., 2.]), (3, 2), (1,)) -> [[1., 2.]] * 3
    """
    return broadcast_in_dim_p.bind(
        operand, shape=static_ints("broadcast_in_dim", "shape", shape),
        broadcast_dimensions=static_ints("broadcast_in_dim", "broadcast_dimensions",
                                         broadcast_dimensions))


broadcast_in_dim_p = define_op(
    "broadcast_in_dim", shape=_broadcast_in_dim_shape, impl=_broadcast_in_dim_impl,
    hlo_name="broadcast", family="shape", linear=True,
    doc=inspect.cleandoc(broadcast_in_dim.__doc__ or ""))


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """Add new major (leftmost) dimensions of the given sizes.

    Seed rule: operand dims {b0..bM}, sizes {a0..aN} -> output dims
    {a0..aN, b0..bM}; output[i0..iN, j0..jM] = operand[j0..jM].

    broadcast(np.float32(2.0), [2, 3]) -> [[2., 2., 2.], [2., 2., 2.]]
    """
    sizes_t = static_ints("broadcast", "sizes", sizes)
    aval = operand_aval(operand)
    if any(s < 0 for s in sizes_t):
        raise wrapper_error(ParamError, "broadcast", f"sizes {list(sizes_t)} must be "
                            f"non-negative (operand {aval})")
    n = len(sizes_t)
    return broadcast_in_dim_p.bind(operand, shape=sizes_t + aval.shape,
                                   broadcast_dimensions=tuple(range(n, n + aval.ndim)))


# --------------------------------------------------------------------------- reshape
def _reshape_shape(x: ShapedArray, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    _check_sizes("new_sizes", new_sizes)
    if math.prod(new_sizes) != x.size:
        raise ShapeError(f"cannot reshape {x} ({x.size} elements) into "
                         f"{_fmt_shape(x.dtype, new_sizes)} ({math.prod(new_sizes)} elements)")
    return ShapedArray(new_sizes, x.dtype, weak_type=x.weak_type)


def _reshape_impl(x: np.ndarray, *, new_sizes: tuple[int, ...]) -> np.ndarray:
    return np.reshape(x, new_sizes).copy()


def reshape(operand: Any, new_sizes: Sequence[int],
            dimensions: Sequence[int] | None = None) -> Any:
    """Row-major refill of `operand`'s elements, read in `dimensions` order, into new_sizes.

    Seed rule: flatten iterating dimensions in the order given (first = most
    major), then refill new_sizes row-major; the element counts must match.
    Reshape(x, dims, new) == reshape(transpose(x, dims), new).

    reshape(np.arange(6.0).reshape(2, 3), (3, 2), dimensions=(1, 0)) -> [[0,3],[1,4],[2,5]]
    """
    sizes = static_ints("reshape", "new_sizes", new_sizes)
    if dimensions is not None:
        perm = static_ints("reshape", "dimensions", dimensions)
        aval = operand_aval(operand)
        try:
            _check_permutation("dimensions", perm, aval.ndim)
        except TracerError as e:
            raise wrapper_error(type(e), "reshape", f"{e} (operand {aval})") from None
        if perm != tuple(range(len(perm))):
            operand = transpose_p.bind(operand, permutation=perm)
    return reshape_p.bind(operand, new_sizes=sizes)


reshape_p = define_op("reshape", shape=_reshape_shape, impl=_reshape_impl, family="shape",
                      linear=True, doc=inspect.cleandoc(reshape.__doc__ or ""))


def collapse(operand: Any, dimensions: Sequence[int]) -> Any:
    """Replace an in-order run of consecutive dimensions by one of their product's size.

    Seed rule: dimensions is an in-order, consecutive subset ({0,1} or {1,2}, not
    {1,0} or {0,2}); the lowest is the most major in the row-major flattening.

    collapse(np.zeros((4, 2, 3)), [0, 1]).shape -> (8, 3)
    """
    dims = static_ints("collapse", "dimensions", dimensions)
    aval = operand_aval(operand)
    try:
        check_dims("dimensions", dims, aval.ndim)
    except TracerError as e:
        raise wrapper_error(type(e), "collapse", f"{e} (operand {aval})") from None
    if not dims:  # collapsing nothing leaves the shape as it is
        return reshape_p.bind(operand, new_sizes=aval.shape)
    lo, hi = dims[0], dims[0] + len(dims)
    if dims != tuple(range(lo, hi)):
        raise wrapper_error(ParamError, "collapse", f"dimensions {list(dims)} must be "
                            f"in order and consecutive, e.g. [0,1] or [1,2] (operand {aval}); "
                            f"use reshape with dimensions= for other orders")
    new = aval.shape[:lo] + (math.prod(aval.shape[lo:hi]),) + aval.shape[hi:]
    return reshape_p.bind(operand, new_sizes=new)


# --------------------------------------------------------------------------- transpose, rev
def _transpose_shape(x: ShapedArray, *, permutation: tuple[int, ...]) -> ShapedArray:
    _check_permutation("permutation", permutation, x.ndim)
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, weak_type=x.weak_type)


def _transpose_impl(x: np.ndarray, *, permutation: tuple[int, ...]) -> np.ndarray:
    return np.transpose(x, permutation).copy()


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """Permute dimensions: output dimension i is operand dimension permutation[i].

    Seed rule: input_dimensions[permutation[i]] = output_dimensions[i]; the same
    as Reshape(operand, permutation, permuted dims), so data moves.

    transpose(np.zeros((2, 3, 4)), (2, 0, 1)).shape -> (4, 2, 3)
    """
    return transpose_p.bind(operand,
                            permutation=static_ints("transpose", "permutation", permutation))


transpose_p = define_op("transpose", shape=_transpose_shape, impl=_transpose_impl,
                        family="shape", linear=True,
                        doc=inspect.cleandoc(transpose.__doc__ or ""))


def _rev_shape(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    check_dims("dimensions", dimensions, x.ndim)
    return x


def _rev_impl(x: np.ndarray, *, dimensions: tuple[int, ...]) -> np.ndarray:
    return np.flip(x, dimensions).copy()


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverse the order of elements along the listed dimensions.

    Seed rule: same shape; along each listed dimension of size N, index i maps
    to N - 1 - i; other indices are unchanged.

    rev(np.array([[1, 2], [3, 4]]), [1]) -> [[2, 1], [4, 3]]
    """
    return rev_p.bind(operand, dimensions=static_ints("rev", "dimensions", dimensions))


rev_p = define_op("rev", shape=_rev_shape, impl=_rev_impl, hlo_name="reverse",
                  family="shape", linear=True, doc=inspect.cleandoc(rev.__doc__ or ""))


# --------------------------------------------------------------------------- slice
def _slice_shape(x: ShapedArray, *, start_indices: tuple[int, ...],
                 limit_indices: tuple[int, ...], strides: tuple[int, ...]) -> ShapedArray:
    for name, v in (("start_indices", start_indices), ("limit_indices", limit_indices),
                    ("strides", strides)):
        if len(v) != x.ndim:
            raise ParamError(f"{name} {list(v)} must have one entry per dimension ({x.ndim})")
    if any(s < 1 for s in strides):
        raise ParamError(f"strides {list(strides)} must be >= 1")
    for d, (lo, hi, n) in enumerate(zip(start_indices, limit_indices, x.shape, strict=True)):
        if lo < 0 or hi > n:
            raise TracerIndexError(f"dimension {d}: slice [{lo}, {hi}) is out of bounds "
                                   f"for size {n}")
        if lo > hi:
            raise ParamError(f"dimension {d}: start index {lo} is greater than limit {hi}")
    shape = tuple(-(-(hi - lo) // s) for lo, hi, s in
                  zip(start_indices, limit_indices, strides, strict=True))
    return ShapedArray(shape, x.dtype, weak_type=x.weak_type)


def _slice_impl(x: np.ndarray, *, start_indices: tuple[int, ...],
                limit_indices: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    index = tuple(builtins.slice(lo, hi, s) for lo, hi, s in
                  zip(start_indices, limit_indices, strides, strict=True))
    return x[index].copy()


def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    """Static sub-array [start, limit) with an optional stride per dimension.

    Seed rule: 0 <= start <= limit <= dim (empty slices allowed), strides >= 1;
    output size per dimension ceil((limit - start) / stride).

    slice(np.array([0., 1., 2., 3., 4.]), [2], [4]) -> [2., 3.]
    """
    start = static_ints("slice", "start_indices", start_indices)
    limit = static_ints("slice", "limit_indices", limit_indices)
    step = (1,) * len(start) if strides is None else static_ints("slice", "strides", strides)
    return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=step)


slice_p = define_op("slice", shape=_slice_shape, impl=_slice_impl, family="shape",
                    linear=True, doc=inspect.cleandoc(slice.__doc__ or ""))


# --------------------------------------------------------------------------- concatenate
def _concatenate_shape(*avals: ShapedArray, dimension: int) -> ShapedArray:
    if not avals:
        raise ParamError("needs at least one operand")
    dtype = same_dtypes(*avals)
    listed = ", ".join(map(str, avals))
    rank = avals[0].ndim
    if any(a.ndim != rank for a in avals):
        raise ShapeError(f"operands must have the same rank, got {listed}")
    if rank == 0:
        raise ShapeError(f"rank-0 values cannot be concatenated, got {listed}")
    check_dims("dimension", (dimension,), rank)
    others = {a.shape[:dimension] + a.shape[dimension + 1:] for a in avals}
    if len(others) > 1:
        raise ShapeError(f"operands must have equal sizes in every dimension but "
                         f"{dimension}, got {listed}")
    shape = list(avals[0].shape)
    shape[dimension] = sum(a.shape[dimension] for a in avals)
    return ShapedArray(shape, dtype, weak_type=all_weak(*avals))


def _concatenate_impl(*xs: np.ndarray, dimension: int) -> np.ndarray:
    return np.concatenate(xs, axis=dimension)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Join N >= 1 arrays along `dimension`, in argument order.

    Seed rule: same rank (not 0) and dtype; every other dimension equal; the
    output size along `dimension` is the sum of the operands' sizes.

    concatenate([np.array([[1, 2]]), np.array([[3, 4]])], 0) -> [[1, 2], [3, 4]]
    """
    if isinstance(operands, (np.ndarray, Tracer)) or not isinstance(operands, Sequence):
        raise wrapper_error(ParamError, "concatenate", f"operands must be a list or tuple "
                            f"of arrays, got {type(operands).__name__}")
    arrays = harmonize(*operands) if operands else []
    return concatenate_p.bind(*arrays,
                              dimension=static_int("concatenate", "dimension", dimension))


concatenate_p = define_op("concatenate", shape=_concatenate_shape, impl=_concatenate_impl,
                          family="shape", linear=True,
                          doc=inspect.cleandoc(concatenate.__doc__ or ""))


# --------------------------------------------------------------------------- pad
Config = tuple[tuple[int, int, int], ...]


def _padded_sizes(shape: tuple[int, ...], padding_config: Config) -> list[int]:
    if len(padding_config) != len(shape):
        raise ParamError(f"padding_config has {len(padding_config)} entries, needs one "
                         f"(low, high, interior) per dimension ({len(shape)})")
    sizes = []
    for d, ((lo, hi, interior), n) in enumerate(zip(padding_config, shape, strict=True)):
        if interior < 0:
            raise ParamError(f"dimension {d}: interior padding {interior} must be >= 0")
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise ShapeError(f"dimension {d}: padding (low={lo}, high={hi}, "
                             f"interior={interior}) of size {n} gives size {size} < 0")
        sizes.append(size)
    return sizes


def _pad_shape(x: ShapedArray, value: ShapedArray, *, padding_config: Config) -> ShapedArray:
    if value.ndim != 0:
        raise ShapeError(f"padding_value must be a scalar, got {value}")
    dtype = same_dtypes(x, value)
    return ShapedArray(_padded_sizes(x.shape, padding_config), dtype,
                       weak_type=all_weak(x, value))


def _pad_impl(x: np.ndarray, value: np.ndarray, *, padding_config: Config) -> np.ndarray:
    sizes = _padded_sizes(x.shape, padding_config)
    out = np.full(sizes, value, dtype=x.dtype)
    # Element i of a dimension lands at low + i * (interior + 1); negative edge
    # padding just moves some of those positions outside the result.
    dst, src = [], []
    for (lo, _, interior), n, size in zip(padding_config, x.shape, sizes, strict=True):
        pos = lo + np.arange(n) * (interior + 1)
        keep = (pos >= 0) & (pos < size)
        dst.append(pos[keep])
        src.append(np.arange(n)[keep])
    out[np.ix_(*dst)] = x[np.ix_(*src)]
    return out


def _padding_config(config: Any) -> Config:
    try:
        triples = tuple(tuple(operator.index(v) for v in entry) for entry in config)
    except TypeError:
        triples = None
    if triples is None or any(len(t) != 3 for t in triples):
        raise wrapper_error(ParamError, "pad", f"padding_config must be a sequence of "
                            f"(low, high, interior) int triples, got {config!r}")
    return triples  # type: ignore[return-value]


def pad(operand: Any, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Any:
    """Pad each dimension with (low, high, interior) copies of a scalar padding_value.

    Seed rule: interior padding (>= 0) goes between adjacent elements first; then
    low/high edge padding, where a negative amount removes that many elements.
    Size per dimension: low + high + n + max(n - 1, 0) * interior.

    pad(np.array([1, 2, 3]), 0, [(1, 2, 1)]) -> [0, 1, 0, 2, 0, 3, 0, 0]
    """
    operand, padding_value = harmonize(operand, padding_value)
    return pad_p.bind(operand, padding_value, padding_config=_padding_config(padding_config))


pad_p = define_op("pad", shape=_pad_shape, impl=_pad_impl, family="shape", linear=True,
                  doc=inspect.cleandoc(pad.__doc__ or ""))


# --------------------------------------------------------------------------- iota, sizes
def _iota_shape(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> ShapedArray:
    _check_sizes("shape", shape)
    if dtype.kind == "b":
        raise DTypeError("iota needs a numeric dtype, got pred")
    check_dims("dimension", (dimension,), len(shape))
    return ShapedArray(shape, dtype)


def _iota_impl(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> np.ndarray:
    # Seed: a float iota is the conversion of an integral one (ints wrap like convert).
    values = np.arange(shape[dimension], dtype=np.int64).astype(dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.array(np.broadcast_to(values.reshape(expanded), shape))


def iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """Array of `shape` counting 0, 1, 2, ... along `dimension`, constant elsewhere.

    Seed rule: Iota(shape, iota_dimension); float values are the integral iota
    converted to the float type.

    iota(np.int32, (2, 3), 1) -> [[0, 1, 2], [0, 1, 2]]
    """
    try:
        dt = dtypes.canonicalize(dtype)
    except DTypeError as e:
        raise wrapper_error(DTypeError, "iota", str(e)) from None
    return iota_p.bind(dtype=dt, shape=static_ints("iota", "shape", shape),
                       dimension=static_int("iota", "dimension", dimension))


iota_p = define_op("iota", shape=_iota_shape, impl=_iota_impl, family="shape",
                   differentiable=False, doc=inspect.cleandoc(iota.__doc__ or ""))


def _get_dimension_size_shape(x: ShapedArray, *, dimension: int) -> ShapedArray:
    check_dims("dimension", (dimension,), x.ndim)
    return ShapedArray((), np.int32)


def _get_dimension_size_impl(x: np.ndarray, *, dimension: int) -> np.ndarray:
    return np.asarray(x.shape[dimension], dtype=np.int32)


def get_dimension_size(operand: Any, dimension: int) -> Any:
    """The (static) size of one dimension of `operand`, as an int32 scalar.

    Seed rule: GetDimensionSize(operand, dimension) with dimension in [0, rank).

    get_dimension_size(np.zeros((4, 7)), 1) -> 7
    """
    return get_dimension_size_p.bind(
        operand, dimension=static_int("get_dimension_size", "dimension", dimension))


get_dimension_size_p = define_op(
    "get_dimension_size", shape=_get_dimension_size_shape, impl=_get_dimension_size_impl,
    family="shape", differentiable=False,
    doc=inspect.cleandoc(get_dimension_size.__doc__ or ""))
