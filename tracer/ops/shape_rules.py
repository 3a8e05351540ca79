"""JVP, transpose and batching rules of the shape ops and `dot_general`, and the
helpers the other rule modules share (`sum_dims`, `at_front`, `batch_size`, ...).

The data-movement ops are linear: JVP = the op on the tangents; transpose = move
the cotangent back (sum over broadcast dims, inverse permutation, pad for slice,
...). Batching rules make the mapped axis one more dimension of the same op.
`reduce`'s rules are in `reduce_rules.py`.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from ..core import Graph, ShapedArray
from ..tracing import trace_flat
from . import elementwise as ew
from .ad import UndefinedPrimal, aval_of_value, defjvp, defjvp_zero, deflinear
from .linalg import dot_general_p
from .reduce import reduce_p
from .shape import (broadcast_in_dim_p, concatenate_p, get_dimension_size_p, iota_p, pad_p,
                    reshape_p, rev_p, slice_p, transpose_p)

Dims = tuple[int, ...]


# --------------------------------------------------------------------------- helpers
@functools.lru_cache(maxsize=None)
def add_computation(dtype: np.dtype) -> Graph:
    """The scalar `add(acc, x)` computation of a sum (cached: one Graph per dtype)."""
    scalar = ShapedArray((), dtype)
    graph, _ = trace_flat(lambda a, b: [ew.add(a, b)], [scalar, scalar], name="add")
    return graph


def sum_dims(x: Any, dims: Sequence[int]) -> Any:
    """`x` summed over `dims` (no op when there are none)."""
    if not dims:
        return x
    dtype = aval_of_value(x).dtype
    return reduce_p.bind(x, np.zeros((), dtype), dimensions=tuple(sorted(dims)),
                         to_apply=add_computation(dtype))[0]


def full_like(x: Any, value: Any, dtype: Any = None) -> Any:
    aval = aval_of_value(x)
    scalar = np.asarray(value, aval.dtype if dtype is None else dtype)
    return broadcast_in_dim_p.bind(scalar, shape=aval.shape, broadcast_dimensions=())


def move_axis(x: Any, src: int, dst: int) -> Any:
    if src == dst:
        return x
    perm = [d for d in range(aval_of_value(x).ndim) if d != src]
    perm.insert(dst, src)
    return transpose_p.bind(x, permutation=tuple(perm))


def at_front(x: Any, bdim: int | None, size: int) -> Any:
    """`x` with its batch axis first; an unbatched `x` gets one by broadcasting."""
    if bdim is not None:
        return move_axis(x, bdim, 0)
    aval = aval_of_value(x)
    return broadcast_in_dim_p.bind(x, shape=(size, *aval.shape),
                                   broadcast_dimensions=tuple(range(1, aval.ndim + 1)))


def batch_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    return next(aval_of_value(a).shape[d] for a, d in zip(args, dims, strict=True)
                if d is not None)


def shift(dims: Dims, bdim: int | None) -> Dims:
    """Operand dimension numbers once a batch axis is inserted at `bdim`."""
    return dims if bdim is None else tuple(d + (d >= bdim) for d in dims)


def _remaining(ndim: int, *taken: Dims) -> list[int]:
    used = {d for group in taken for d in group}
    return [d for d in range(ndim) if d not in used]


# --------------------------------------------------------------------------- broadcast_in_dim
def _broadcast_in_dim_t(ct: Any, x: Any, *, shape: Dims,
                        broadcast_dimensions: Dims) -> list[Any]:
    aval = x.aval
    expanded = [d for i, d in enumerate(broadcast_dimensions)
                if aval.shape[i] == 1 and shape[d] != 1]
    out = sum_dims(ct, _remaining(len(shape), broadcast_dimensions) + expanded)
    return [reshape_p.bind(out, new_sizes=aval.shape) if expanded else out]


def _broadcast_in_dim_b(args: Sequence[Any], dims: Sequence[int | None], *, shape: Dims,
                        broadcast_dimensions: Dims) -> tuple[Any, int]:
    # The batch axis goes right after the target of the operand dim before it, so
    # broadcast_dimensions stays increasing and no transpose is needed.
    (x,), (b,) = args, dims
    pos = broadcast_dimensions[b - 1] + 1 if b > 0 else 0
    bd = shift(broadcast_dimensions, pos)
    out = broadcast_in_dim_p.bind(x, shape=shape[:pos] + (aval_of_value(x).shape[b],)
                                  + shape[pos:], broadcast_dimensions=bd[:b] + (pos,) + bd[b:])
    return out, pos


deflinear(broadcast_in_dim_p, _broadcast_in_dim_t)
broadcast_in_dim_p.batch = _broadcast_in_dim_b


# ------------------------------------------------------------------------- reshape, transpose, rev
def _reshape_b(args: Sequence[Any], dims: Sequence[int | None], *,
               new_sizes: Dims) -> tuple[Any, int]:
    x = move_axis(args[0], dims[0], 0)
    return reshape_p.bind(x, new_sizes=(aval_of_value(x).shape[0], *new_sizes)), 0


deflinear(reshape_p, lambda ct, x, *, new_sizes: [reshape_p.bind(ct, new_sizes=x.aval.shape)])
reshape_p.batch = _reshape_b


def _transpose_t(ct: Any, x: Any, *, permutation: Dims) -> list[Any]:
    inverse = tuple(int(d) for d in np.argsort(permutation))
    return [transpose_p.bind(ct, permutation=inverse)]


def _transpose_b(args: Sequence[Any], dims: Sequence[int | None], *,
                 permutation: Dims) -> tuple[Any, int]:
    b = dims[0]
    others = _remaining(len(permutation) + 1, (b,))
    return transpose_p.bind(args[0], permutation=(b, *(others[p] for p in permutation))), 0


deflinear(transpose_p, _transpose_t)
transpose_p.batch = _transpose_b

deflinear(rev_p, lambda ct, x, *, dimensions: [rev_p.bind(ct, dimensions=dimensions)])
rev_p.batch = lambda args, dims, *, dimensions: (
    rev_p.bind(args[0], dimensions=shift(dimensions, dims[0])), dims[0])


# --------------------------------------------------------------------------- slice
def _slice_t(ct: Any, x: Any, *, start_indices: Dims, limit_indices: Dims,
             strides: Dims) -> list[Any]:
    config = []
    for lo, step, n, m in zip(start_indices, strides, x.aval.shape, aval_of_value(ct).shape,
                              strict=True):
        used = (m - 1) * step + 1 if m else 0  # the operand span the m picked elements cover
        config.append((lo, n - lo - used, step - 1))
    return [pad_p.bind(ct, np.zeros((), x.aval.dtype), padding_config=tuple(config))]


def _slice_b(args: Sequence[Any], dims: Sequence[int | None], *, start_indices: Dims,
             limit_indices: Dims, strides: Dims) -> tuple[Any, int]:
    (x,), (b,) = args, dims
    ins = lambda t, v: t[:b] + (v,) + t[b:]  # noqa: E731
    return slice_p.bind(x, start_indices=ins(start_indices, 0),
                        limit_indices=ins(limit_indices, aval_of_value(x).shape[b]),
                        strides=ins(strides, 1)), b


deflinear(slice_p, _slice_t)
slice_p.batch = _slice_b


# --------------------------------------------------------------------------- concatenate
def _concatenate_t(ct: Any, *xs: Any, dimension: int) -> list[Any]:
    shape, start, cts = aval_of_value(ct).shape, 0, []
    for x in xs:
        size = aval_of_value(x).shape[dimension]
        if isinstance(x, UndefinedPrimal):
            lo, hi = [0] * len(shape), list(shape)
            lo[dimension], hi[dimension] = start, start + size
            cts.append(slice_p.bind(ct, start_indices=tuple(lo), limit_indices=tuple(hi),
                                    strides=(1,) * len(shape)))
        else:
            cts.append(None)
        start += size
    return cts


def _concatenate_b(args: Sequence[Any], dims: Sequence[int | None], *,
                   dimension: int) -> tuple[Any, int]:
    size = batch_size(args, dims)
    xs = [at_front(x, d, size) for x, d in zip(args, dims, strict=True)]
    return concatenate_p.bind(*xs, dimension=dimension + 1), 0


deflinear(concatenate_p, _concatenate_t)
concatenate_p.batch = _concatenate_b


# --------------------------------------------------------------------------- pad
Config = tuple[tuple[int, int, int], ...]


def _unpad(ct: Any, padding_config: Config) -> Any:
    """The cotangent of pad's operand: undo the edge padding, then skip the interior."""
    dtype = aval_of_value(ct).dtype
    edges = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
    unpadded = pad_p.bind(ct, np.zeros((), dtype), padding_config=edges)
    shape = aval_of_value(unpadded).shape
    return slice_p.bind(unpadded, start_indices=(0,) * len(shape), limit_indices=shape,
                        strides=tuple(i + 1 for _, _, i in padding_config))


def _pad_t(ct: Any, x: Any, value: Any, *, padding_config: Config) -> list[Any]:
    ct_x = _unpad(ct, padding_config)
    ct_value = None
    if isinstance(value, UndefinedPrimal):  # every output element that is padding
        every = range(aval_of_value(ct).ndim)
        ct_value = ew.sub(sum_dims(ct, every), sum_dims(ct_x, every))
    return [ct_x if isinstance(x, UndefinedPrimal) else None, ct_value]


def _pad_b(args: Sequence[Any], dims: Sequence[int | None], *,
           padding_config: Config) -> tuple[Any, int]:
    (x, value), (xd, vd) = args, dims
    config = ((0, 0, 0), *padding_config)
    x = at_front(x, xd, batch_size(args, dims))
    if vd is None:
        return pad_p.bind(x, value, padding_config=config), 0
    # One padding value per batch element: pad with zeros, then select it in.
    padded = pad_p.bind(x, np.zeros((), aval_of_value(x).dtype), padding_config=config)
    inside = pad_p.bind(full_like(x, True, np.bool_), np.asarray(False), padding_config=config)
    values = broadcast_in_dim_p.bind(value, shape=aval_of_value(padded).shape,
                                     broadcast_dimensions=(0,))
    return ew.select(inside, padded, values), 0


deflinear(pad_p, _pad_t)
pad_p.batch = _pad_b


# ------------------------------------------------------------------------ iota, get_dimension_size
defjvp_zero(iota_p)
# iota has no operands, so vmap never calls this; it is here so every op has a rule.
iota_p.batch = lambda args, dims, **params: (iota_p.bind(**params), None)
defjvp_zero(get_dimension_size_p)
get_dimension_size_p.batch = lambda args, dims, *, dimension: (
    get_dimension_size_p.bind(args[0], dimension=dimension + (dimension >= dims[0])), None)


# --------------------------------------------------------------------------- dot_general
DotDims = tuple[Dims, Dims, Dims, Dims]  # lhs/rhs contracting, lhs/rhs batch


def _transpose_side(ct: Any, x_aval: ShapedArray, y: Any, dn: DotDims, precision: Any,
                    swapped: bool) -> Any:
    """JAX's `_dot_general_transpose_lhs`: contract ct with y, then permute to x's layout."""
    xc, yc, xb, yb = dn
    x_kept = _remaining(x_aval.ndim, xc, xb)
    y_kept = _remaining(aval_of_value(y).ndim, yc, yb)
    nb = len(xb)
    first_y = nb if swapped else nb + len(x_kept)  # where y's free dims sit in ct
    ct_dtype = aval_of_value(ct).dtype
    if aval_of_value(y).dtype != ct_dtype:  # preferred_element_type widened the result
        y = ew.convert_element_type(y, ct_dtype)
    out = dot_general_p.bind(
        ct, y, lhs_contracting_dims=tuple(range(first_y, first_y + len(y_kept))),
        rhs_contracting_dims=tuple(y_kept), lhs_batch_dims=tuple(range(nb)), rhs_batch_dims=yb,
        precision=precision, preferred_element_type=None)
    by_y = [c for _, c in sorted(zip(yc, xc, strict=True))]
    perm = tuple(int(d) for d in np.argsort(list(xb) + x_kept + by_y))
    if perm != tuple(range(len(perm))):
        out = transpose_p.bind(out, permutation=perm)
    return out if ct_dtype == x_aval.dtype else ew.convert_element_type(out, x_aval.dtype)


def _dot_general_t(ct: Any, lhs: Any, rhs: Any, *, lhs_contracting_dims: Dims,
                   rhs_contracting_dims: Dims, lhs_batch_dims: Dims, rhs_batch_dims: Dims,
                   precision: Any, preferred_element_type: Any) -> list[Any]:
    lc, rc, lb, rb = lhs_contracting_dims, rhs_contracting_dims, lhs_batch_dims, rhs_batch_dims
    if isinstance(lhs, UndefinedPrimal):
        return [_transpose_side(ct, lhs.aval, rhs, (lc, rc, lb, rb), precision, False), None]
    return [None, _transpose_side(ct, rhs.aval, lhs, (rc, lc, rb, lb), precision, True)]


def _dot_general_b(args: Sequence[Any], dims: Sequence[int | None], *,
                   lhs_contracting_dims: Dims, rhs_contracting_dims: Dims,
                   lhs_batch_dims: Dims, rhs_batch_dims: Dims, **rest: Any) -> tuple[Any, int]:
    (lhs, rhs), (ld, rd) = args, dims
    lc, lb = shift(lhs_contracting_dims, ld), shift(lhs_batch_dims, ld)
    rc, rb = shift(rhs_contracting_dims, rd), shift(rhs_batch_dims, rd)
    lhs_free = _remaining(aval_of_value(lhs).ndim, lc, lb)
    if ld is not None and rd is not None:  # a new batch dimension, first in the output
        lb, rb, out_dim = (ld, *lb), (rd, *rb), 0
    elif ld is not None:  # a free lhs dimension
        out_dim = len(lb) + lhs_free.index(ld)
    else:  # a free rhs dimension
        rhs_free = _remaining(aval_of_value(rhs).ndim, rc, rb)
        out_dim = len(lb) + len(lhs_free) + rhs_free.index(rd)
    out = dot_general_p.bind(lhs, rhs, lhs_contracting_dims=lc, rhs_contracting_dims=rc,
                             lhs_batch_dims=lb, rhs_batch_dims=rb, **rest)
    return out, out_dim


defjvp(dot_general_p, lambda t, lhs, rhs, **params: dot_general_p.bind(t, rhs, **params),
       lambda t, lhs, rhs, **params: dot_general_p.bind(lhs, t, **params))
dot_general_p.transpose = _dot_general_t
dot_general_p.batch = _dot_general_b
