"""Building arrays from others or from static descriptions: meshgrid, indices, ix_, tri,
vander, logspace, geomspace, kron, block, diagflat, unravel_index, ravel_multi_index
and the static index helpers (tril_indices, triu_indices, diag_indices and their
`_from` forms).

Index helpers that depend only on static sizes return NumPy arrays (they are
constants, as in JAX); everything else works eagerly and under tracing.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import ShapeError, TracerTypeError, TracerValueError
from ..tracing import Tracer
from . import _ufuncs as uf
from ._accumulate import scan_axis
from ._creation import linspace
from ._indexing import as_index
from ._linalg import diag
from ._promotion import (as_result, asarray_like, cast, constant, desc, dtype_of, error,
                         promote, tracing)
from ._rearrange import concatenate
from ._shape import moveaxis, ravel, reshape, static_ints

__all__ = ["meshgrid", "indices", "ix_", "tri", "vander", "logspace", "geomspace", "kron",
           "block", "diagflat", "unravel_index", "ravel_multi_index", "tril_indices",
           "triu_indices", "tril_indices_from", "triu_indices_from", "diag_indices",
           "diag_indices_from"]

_INDEX = dtypes.int64


def _operand(x: Any, fname: str) -> Any:
    v = asarray_like(x, fname)
    return cast(v, dtype_of(v), fname=fname)


# ------------------------------------------------------------------ grids
def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> tuple[Any, ...]:
    """Coordinate arrays from 1-D coordinate vectors.

    NumPy rule: inputs are flattened; indexing "xy" (default) swaps the first two
    output axes, "ij" keeps them; sparse=True returns broadcastable shapes; each
    output keeps its input's dtype.

    meshgrid([1, 2, 3], [4, 5])[0] -> [[1, 2, 3], [1, 2, 3]]
    """
    if indexing not in ("xy", "ij"):
        raise error(TracerValueError, "meshgrid", "Valid values for `indexing` are 'xy' "
                    "and 'ij'.")
    vecs = [ravel(_operand(x, "meshgrid")) for x in xi]
    sizes = [np.shape(v)[0] for v in vecs]
    if indexing == "xy" and len(vecs) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vecs):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and len(vecs) > 1 else i
        if sparse:
            shape = tuple(np.shape(v)[0] if d == axis else 1 for d in range(len(vecs)))
            out.append(as_result(reshape(v, shape)))
        else:
            out.append(as_result(ops.broadcast_in_dim(v, tuple(sizes), (axis,))))
    return tuple(out)


def indices(dimensions: Sequence[int], dtype: Any = int, sparse: bool = False) -> Any:
    """The index grid of a shape: out[k][i0, i1, ...] = ik.

    NumPy rule: shape (len(dimensions), *dimensions), int64 by default; sparse=True
    gives a tuple of broadcastable arrays.

    indices((2, 3))[1] -> [[0, 1, 2], [0, 1, 2]]
    """
    dims = static_ints(dimensions, "indices", "dimensions")
    dt = dtypes.canonicalize(dtype)
    n = len(dims)
    if sparse:
        return tuple(as_result(ops.iota(dt, tuple(d if j == i else 1 for j, d in
                                                  enumerate(dims)), i)) for i in range(n))
    grids = [ops.reshape(ops.iota(dt, dims, i), (1,) + dims) for i in range(n)]
    if not grids:
        return as_result(constant(0, (0,), dt))
    return as_result(ops.concatenate(grids, 0) if n > 1 else grids[0])


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open mesh from 1-D sequences: the k-th output has shape (1, ..., n_k, ..., 1).

    NumPy rule: each argument is 1-D (a static bool mask becomes its nonzero indices);
    empty sequences are int64.

    ix_([0, 1], [2, 4])[1].shape -> (1, 2)
    """
    out = []
    for k, a in enumerate(args):
        v = asarray_like(a, "ix_")
        if isinstance(a, (list, tuple)) and not a:
            v = np.zeros(0, _INDEX)
        v = cast(v, dtype_of(v))
        if np.ndim(v) != 1:
            raise error(ShapeError, "ix_", f"Cross index must be 1 dimensional, got {desc(v)}")
        if dtype_of(v).kind == "b":
            if isinstance(v, Tracer):
                raise error(TracerTypeError, "ix_", "a traced boolean mask has a "
                            "value-dependent number of indices; pass integer indices")
            v = np.nonzero(v)[0]
        shape = (1,) * k + (np.shape(v)[0],) + (1,) * (len(args) - k - 1)
        out.append(as_result(reshape(v, shape)))
    return tuple(out)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = float, *,
        like: Any = None) -> Any:
    """Ones at and below diagonal k, zeros above.

    NumPy rule: shape (N, M) (M defaults to N); float64 by default.

    tri(2, 3, dtype=int) -> [[1, 0, 0], [1, 1, 0]]
    """
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    dt = dtypes.canonicalize(dtype)
    rows = ops.iota(_INDEX, (n, m), 0)
    cols = ops.iota(_INDEX, (n, m), 1)
    mask = ops.ge(ops.add(rows, np.asarray(operator.index(k), _INDEX)), cols)
    return as_result(ops.convert_element_type(mask, dt))


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """Vandermonde matrix: columns x**(N-1), ..., x**0 (reversed if increasing).

    NumPy rule: x is 1-D; dtype promote_types(x.dtype, int64) (float32 gives float64);
    powers by repeated multiplication, as NumPy.

    vander([1, 2, 3], 3) -> [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    v = _operand(x, "vander")
    if np.ndim(v) != 1:
        raise error(ShapeError, "vander", f"x must be a one-dimensional array or sequence, "
                    f"got {desc(v)}")
    n = np.shape(v)[0]
    cols = n if N is None else operator.index(N)
    dt = dtypes.result_type(dtype_of(v), dtypes.int64)[0]  # (bfloat16 stays, as in JAX)
    v = cast(v, dt)
    ones = constant(1, (n, min(cols, 1)), dt)
    if cols > 1:
        rep = ops.broadcast_in_dim(v, (n, cols - 1), (0,))
        powers = scan_axis(rep, 1, ops.mul)
        ones = ops.concatenate([ones, powers], 1)
    return as_result(ones if increasing else ops.rev(ones, (1,)))


# ------------------------------------------------------------------ log / geometric ranges
def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    """base ** linspace(start, stop, num): numbers spaced evenly on a log scale.

    NumPy rule: power(base, y) with base a float64 array unless given otherwise;
    dtype= casts the result.

    logspace(0, 2, 3) -> [1.0, 10.0, 100.0]
    """
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    b = _operand(base, "logspace")
    if np.ndim(b):
        b = reshape(b, tuple(np.shape(b)[:axis % (np.ndim(y))]) + (1,) +
                    tuple(np.shape(b)[axis % np.ndim(y):]))
    r = uf.power(b, y)
    return as_result(r if dtype is None else cast(r, dtypes.canonicalize(dtype)))


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    """Numbers spaced evenly on a log scale between start and stop (the end points
    exactly).

    NumPy rule: float64 (or complex) unless dtype=; negative and complex ends rotate
    to the positive real axis first; zero ends raise (when static).

    geomspace(1, 1000, 4) -> [1.0, 10.0, 100.0, 1000.0]
    """
    s, e = (uf.multiply(_operand(t, "geomspace"), 1.0) for t in (start, stop))
    for t in (s, e):
        if not isinstance(t, Tracer) and not tracing() and np.any(np.asarray(t) == 0):
            raise error(TracerValueError, "geomspace", "Geometric sequence cannot include "
                        "zero")
    dt = dtypes.result_type(dtype_of(s), dtype_of(e), float(num),
                            np.zeros((), dtypes.float64 if dtype is None else dtype))[0]
    s, e = cast(s, dt), cast(e, dt)
    sign = uf.sign(s)
    s, e = uf.divide(s, sign), uf.divide(e, sign)
    r = logspace(uf.log10(s), uf.log10(e), num=num, endpoint=endpoint, base=10.0, dtype=dt)
    r = _pin_ends(r, s, e, num, endpoint)
    r = uf.multiply(r, sign)
    if axis != 0:
        r = moveaxis(r, 0, axis)
    return as_result(cast(r, dt if dtype is None else dtypes.canonicalize(dtype)))


def _pin_ends(r: Any, s: Any, e: Any, num: int, endpoint: bool) -> Any:
    """NumPy sets result[0] = start and result[-1] = stop: exp(log(x)) may differ."""
    if num == 0:
        return r
    rest = tuple(np.shape(r)[1:])
    parts = [ops.broadcast_in_dim(cast(s, dtype_of(r)), (1,) + rest,
                                  tuple(range(1 + len(rest) - np.ndim(s), 1 + len(rest))))]
    last = num - 1 if (num > 1 and endpoint) else num
    if last > 1:
        parts.append(ops.slice(r, (1,) + (0,) * len(rest), (last,) + rest))
    if num > 1 and endpoint:
        parts.append(ops.broadcast_in_dim(cast(e, dtype_of(r)), (1,) + rest,
                                          tuple(range(1 + len(rest) - np.ndim(e),
                                                      1 + len(rest)))))
    elif num > 1:
        parts.append(ops.slice(r, (max(last, 1),) + (0,) * len(rest), (num,) + rest))
    return ops.concatenate(parts, 0) if len(parts) > 1 else parts[0]


# ------------------------------------------------------------------ kron, block, diagflat
def kron(a: Any, b: Any) -> Any:
    """Kronecker product: blocks a[i, j] * b.

    NumPy rule: the operands are padded with leading 1s to the same ndim; NEP 50
    promotion of multiply.

    kron([1, 10], [1, 2]) -> [1, 2, 10, 20]
    """
    x, y = (_operand(t, "kron") for t in (a, b))
    nd = max(np.ndim(x), np.ndim(y))
    x = reshape(x, (1,) * (nd - np.ndim(x)) + tuple(np.shape(x)))
    y = reshape(y, (1,) * (nd - np.ndim(y)) + tuple(np.shape(y)))
    xs = tuple(d for n in np.shape(x) for d in (n, 1))
    ys = tuple(d for n in np.shape(y) for d in (1, n))
    prod = uf.multiply(reshape(x, xs), reshape(y, ys))
    return as_result(reshape(prod, tuple(m * n for m, n in zip(np.shape(x), np.shape(y),
                                                                  strict=True))))


def _depth(arrays: Any, where: str) -> int:
    if isinstance(arrays, tuple):
        raise error(TracerTypeError, "block", f"{where} is a tuple. Only lists can be used to "
                    "arrange blocks, and np.block does not allow implicit conversion from "
                    "tuple to ndarray.")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise error(TracerValueError, "block", f"List at {where} cannot be empty")
    depths = {_depth(a, f"{where}[{i}]") for i, a in enumerate(arrays)}
    if len(depths) != 1:
        raise error(TracerValueError, "block", f"List depths are mismatched at {where}")
    return 1 + depths.pop()


def _leaves(arrays: Any) -> list[Any]:
    return [x for a in arrays for x in _leaves(a)] if isinstance(arrays, list) else [arrays]


def block(arrays: Any) -> Any:
    """Assemble an array from nested lists of blocks: the innermost lists join along the
    last axis, the next level along the second-to-last, and so on.

    NumPy rule: blocks get leading 1s up to max(nesting depth, largest ndim); NEP 50
    promotion; only lists nest (tuples raise).

    block([[eye(2), zeros((2, 1))]]).shape -> (2, 3)
    """
    depth = _depth(arrays, "arrays")
    leaves = promote(*_leaves(arrays), fname="block")
    nd = max([depth] + [np.ndim(x) for x in leaves])
    it = iter(leaves)

    def build(node: Any, level: int) -> Any:
        if level == depth:
            x = next(it)
            return reshape(x, (1,) * (nd - np.ndim(x)) + tuple(np.shape(x)))
        return concatenate([build(n, level + 1) for n in node], axis=level - depth)

    return as_result(build(arrays, 0))


def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened input on diagonal k.

    diagflat([[1, 2], [3, 4]]).shape -> (4, 4)
    """
    return as_result(diag(ravel(_operand(v, "diagflat")), k))


# ------------------------------------------------------------------ flat / multi indices
def _strides(dims: tuple[int, ...], order: str, fname: str) -> list[int]:
    if order not in ("C", "F"):
        raise error(TracerValueError, fname, f"only 'C' or 'F' order is permitted, got "
                    f"{order!r}")
    seq = dims if order == "C" else dims[::-1]
    strides, acc = [], 1
    for d in reversed(seq):
        strides.append(acc)
        acc *= d
    strides = strides[::-1]
    return strides if order == "C" else strides[::-1]


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[Any, ...]:
    """Flat indices into a `shape` as a tuple of coordinate arrays.

    NumPy rule: int64 results; out-of-range static indices raise ValueError (traced
    ones clamp into range first, as in JAX).

    unravel_index([22, 41], (7, 6)) -> ([3, 6], [4, 5])
    """
    dims = static_ints(shape, "unravel_index", "shape")
    idx = _operand(indices, "unravel_index")
    if dtype_of(idx).kind not in "iu":
        raise error(TracerTypeError, "unravel_index", f"only int indices permitted, got "
                    f"{desc(idx)}")
    size = int(np.prod(dims, dtype=np.int64))
    if not isinstance(idx, Tracer) and np.any((np.asarray(idx) < 0) |
                                              (np.asarray(idx) >= size)):
        raise error(TracerValueError, "unravel_index", f"index out of bounds for array "
                    f"with size {size}")
    idx = _clamp_flat(idx, size) if isinstance(idx, Tracer) else cast(idx, _INDEX)
    out = []
    for d, stride in zip(dims, _strides(dims, order, "unravel_index"), strict=True):
        out.append(as_result(uf.remainder(uf.floor_divide(idx, stride), d)))
    return tuple(out)


def _clamp_flat(idx: Any, size: int) -> Any:
    """Traced flat indices clamped into [-size, size) and negatives wrapped, as JAX does
    (NumPy raises for them; without the clamp the coordinates would silently wrap)."""
    idx = as_index(idx)
    idx = uf.clip(idx, -size, max(size - 1, 0))
    return uf.where(uf.less(idx, 0), uf.add(idx, size), idx)


def _clip_mode(i: Any, d: int, mode: str, k: int) -> Any:
    if mode == "wrap":
        return uf.remainder(i, d)
    if mode == "clip":
        return uf.clip(i, 0, d - 1)
    if mode != "raise":
        raise error(TracerValueError, "ravel_multi_index", f"clipmode must be one of "
                    f"'clip', 'raise', or 'wrap', got {mode!r}")
    if isinstance(i, Tracer):  # traced coordinates clamp, as traced indices do everywhere
        return uf.clip(i, 0, d - 1)
    if np.any((np.asarray(i) < 0) | (np.asarray(i) >= d)):
        raise error(TracerValueError, "ravel_multi_index", f"invalid entry in coordinates "
                    f"array {k}")
    return i


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise",
                      order: str = "C") -> Any:
    """Coordinate arrays into flat indices of an array of shape `dims`.

    NumPy rule: int64; mode "raise" (static coordinates are checked, traced ones clamp
    as traced indices do), "wrap" or "clip", one mode or one per dimension.

    ravel_multi_index(([3, 6], [4, 5]), (7, 6)) -> [22, 41]
    """
    shape = static_ints(dims, "ravel_multi_index", "dims")
    coords = [_operand(c, "ravel_multi_index") for c in multi_index]
    if len(coords) != len(shape):
        raise error(TracerValueError, "ravel_multi_index", f"parameter multi_index must be "
                    f"a sequence of length {len(shape)}")
    modes = (mode,) * len(shape) if isinstance(mode, str) else tuple(mode)
    total = None
    for k, (c, d, stride, m) in enumerate(zip(coords, shape, _strides(
            shape, order, "ravel_multi_index"), modes, strict=True)):
        if dtype_of(c).kind not in "iu":
            raise error(TracerTypeError, "ravel_multi_index", f"only int indices permitted, "
                        f"got {desc(c)}")
        # (uint64 coordinates past int64's range are taken modulo / clipped before the cast)
        c = c if dtype_of(c) == np.uint64 else cast(c, _INDEX)
        term = uf.multiply(cast(_clip_mode(c, d, m, k), _INDEX), stride)
        total = term if total is None else uf.add(total, term)
    return as_result(total)


# ------------------------------------------------------------------ static index helpers
def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[np.ndarray, ...]:
    """Indices of the lower triangle of an (n, m) array (static: NumPy arrays).

    tril_indices(2) -> ([0, 1, 1], [0, 0, 1])
    """
    return np.tril_indices(operator.index(n), operator.index(k), m)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[np.ndarray, ...]:
    """Indices of the upper triangle of an (n, m) array (static: NumPy arrays).

    triu_indices(2) -> ([0, 0, 1], [0, 1, 1])
    """
    return np.triu_indices(operator.index(n), operator.index(k), m)


def _square_shape(arr: Any, fname: str) -> tuple[int, ...]:
    shape = tuple(np.shape(asarray_like(arr, fname)))
    if len(shape) != 2:
        raise error(ShapeError, fname, f"input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[np.ndarray, ...]:
    """tril_indices for the shape of a 2-D array (traced arrays too: shapes are static).

    tril_indices_from(ones((2, 2))) -> ([0, 1, 1], [0, 0, 1])
    """
    n, m = _square_shape(arr, "tril_indices_from")
    return np.tril_indices(n, operator.index(k), m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[np.ndarray, ...]:
    """triu_indices for the shape of a 2-D array.

    triu_indices_from(ones((2, 2))) -> ([0, 0, 1], [0, 1, 1])
    """
    n, m = _square_shape(arr, "triu_indices_from")
    return np.triu_indices(n, operator.index(k), m)


def diag_indices(n: int, ndim: int = 2) -> tuple[np.ndarray, ...]:
    """Indices of the main diagonal of an n x ... x n array (static: NumPy arrays).

    diag_indices(3) -> ([0, 1, 2], [0, 1, 2])
    """
    return np.diag_indices(operator.index(n), operator.index(ndim))


def diag_indices_from(arr: Any) -> tuple[np.ndarray, ...]:
    """diag_indices for an array whose dimensions are all equal.

    diag_indices_from(ones((2, 2))) -> ([0, 1], [0, 1])
    """
    shape = tuple(np.shape(asarray_like(arr, "diag_indices_from")))
    if len(shape) < 2 or len(set(shape)) != 1:
        raise error(ShapeError, "diag_indices_from", f"All dimensions of input must be of "
                    f"equal length and at least 2, got shape {shape}")
    return np.diag_indices(shape[0], len(shape))

