"""JVP, transpose and batching rules of dynamic_slice, dynamic_update_slice, gather
and scatter.

Start indices and scatter indices are integers: they never carry tangents. The
slicing ops are linear in their array operands: dynamic_slice transposes to a
dynamic_update_slice into zeros, gather to a scatter-add into zeros (its indices
clamped first, as gather clamps where scatter drops), and a scatter's update
cotangent is the inverse gather of the output cotangent, zeroed for the windows
scatter dropped. Batched start indices turn the dynamic slices into
gather / scatter with batching dims, as in JAX.

Scatter is differentiated by its combiner: add (linear), replace (unique indices:
a replace of the tangents; otherwise JAX's id trick: scatter update ids, gather
them back, and scatter-add the tangents of the updates that won), mul (the
product rule, exact with zeros also for repeated indices, where JAX refuses) and
max / min / select (the mean tangent of the candidates equal to the result).
"""

from __future__ import annotations

import functools
from dataclasses import fields, replace
from typing import Any, Sequence

import numpy as np

from ..core import Graph, ShapedArray
from ..tracing import trace_flat
from . import elementwise as ew
from .ad import UndefinedPrimal, Zero, aval_of_value, instantiate, zeros_like_aval
from .indexing import (GatherDimensionNumbers, ScatterDimensionNumbers, dynamic_slice_p,
                       dynamic_update_slice_p, gather_p)
from .reduce import reduce_p
from .scatter import scatter_p
from .shape import broadcast_in_dim_p, concatenate_p, iota_p, reshape_p
from .reduce_rules import kind_error, output_kinds
from .shape_rules import add_computation, at_front, batch_size, full_like, move_axis

Dims = tuple[int, ...]


# --------------------------------------------------------------------------- helpers
_BODIES = {"replace": lambda a, b: [b], "mul": lambda a, b: [ew.mul(a, b)],
           "and": lambda a, b: [ew.bitwise_and(a, b)]}


@functools.lru_cache(maxsize=None)
def _computation(kind: str, dtype: np.dtype) -> Graph:
    """Cached scalar computations: "replace" (returns the update), "mul" and "and"."""
    scalar = ShapedArray((), dtype)
    return trace_flat(_BODIES[kind], [scalar, scalar], name=kind)[0]


def _dn_params(dn: Any) -> dict[str, Any]:
    return {f.name: getattr(dn, f.name) for f in fields(dn)}


def _gather(x: Any, idx: Any, dn: GatherDimensionNumbers, slice_sizes: Dims) -> Any:
    return gather_p.bind(x, idx, **_dn_params(dn), slice_sizes=tuple(slice_sizes),
                         indices_are_sorted=False)


def _scatter(x: Any, idx: Any, u: Any, dn: ScatterDimensionNumbers, kind: str,
             unique: bool = False) -> Any:
    """A one-operand scatter with an "add", "mul" or "replace" combiner."""
    dtype = aval_of_value(x).dtype
    graph = add_computation(dtype) if kind == "add" else _computation(kind, dtype)
    return scatter_p.bind(x, idx, u, **_dn_params(dn), to_apply=graph,
                          indices_are_sorted=False, unique_indices=unique)[0]


def _upper(shape: Sequence[int], sizes: Sequence[int], index_map: Dims, dtype: np.dtype) -> list:
    """Per index component, the largest start that keeps its window in bounds."""
    top = int(np.iinfo(dtype).max)
    return [min(shape[d] - sizes[d], top) for d in index_map]


def _clamp_indices(idx: Any, ivd: int, index_map: Dims, shape: Sequence[int],
                   sizes: Sequence[int]) -> Any:
    """Indices clamped like gather clamps them, so a scatter then drops nothing."""
    aval = aval_of_value(idx)
    hi = np.asarray(_upper(shape, sizes, index_map, aval.dtype), aval.dtype)
    bound = (hi.reshape(()) if ivd == aval.ndim else
             broadcast_in_dim_p.bind(hi, shape=aval.shape, broadcast_dimensions=(ivd,)))
    return ew.clamp(np.zeros((), aval.dtype), idx, bound)


def _stack_starts(starts: Sequence[Any], dims: Sequence[int | None], size: int) -> Any:
    """Scalar start indices (some batched) as one (size, len(starts)) index array."""
    cols = [reshape_p.bind(at_front(s, d, size), new_sizes=(size, 1))
            for s, d in zip(starts, dims, strict=True)]
    return concatenate_p.bind(*cols, dimension=1)


def _start_dtype(starts: Sequence[Any]) -> np.dtype:
    return aval_of_value(starts[0]).dtype if starts else np.dtype(np.int32)


def _linear_in_operand(op: Any) -> Any:
    """JVP of an op linear in its first argument (the rest are integer indices)."""
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
        out = op.bind(*primals, **params)
        if isinstance(tangents[0], Zero):
            return out, Zero(aval_of_value(out))
        return out, op.bind(tangents[0], *primals[1:], **params)
    return jvp


# --------------------------------------------------------------------------- dynamic_slice
def _dynamic_slice_t(ct: Any, x: Any, *starts: Any, slice_sizes: Dims) -> list[Any]:
    zeros = zeros_like_aval(x.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *starts), *([None] * len(starts))]


def _dynamic_slice_b(args: Sequence[Any], dims: Sequence[int | None], *,
                     slice_sizes: Dims) -> tuple[Any, int]:
    (x, *starts), (xd, *start_dims) = args, dims
    size, n = batch_size(args, dims), len(starts)
    if all(d is None for d in start_dims):  # slice the whole batch axis too
        zero = np.zeros((), _start_dtype(starts))
        return dynamic_slice_p.bind(x, *starts[:xd], zero, *starts[xd:], slice_sizes=(
            *slice_sizes[:xd], size, *slice_sizes[xd:])), xd
    idx = _stack_starts(starts, start_dims, size)
    offsets = tuple(range(1, n + 1))
    if xd is None:
        dn = GatherDimensionNumbers(offsets, (), tuple(range(n)), 1)
        return _gather(x, idx, dn, slice_sizes), 0
    dn = GatherDimensionNumbers(offsets, (), offsets, 1, (0,), (0,))
    return _gather(move_axis(x, xd, 0), idx, dn, (1, *slice_sizes)), 0


dynamic_slice_p.jvp = _linear_in_operand(dynamic_slice_p)
dynamic_slice_p.transpose = _dynamic_slice_t
dynamic_slice_p.batch = _dynamic_slice_b


# --------------------------------------------------------------------------- dynamic_update_slice
def _dynamic_update_slice_jvp(primals: Sequence[Any],
                              tangents: Sequence[Any]) -> tuple[Any, Any]:
    out = dynamic_update_slice_p.bind(*primals)
    tx, tu = tangents[:2]
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return out, Zero(aval_of_value(out))
    return out, dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *primals[2:])


def _dynamic_update_slice_t(ct: Any, x: Any, u: Any, *starts: Any) -> list[Any]:
    u_aval = aval_of_value(u)
    ct_x = ct_u = None
    if isinstance(x, UndefinedPrimal):  # the window was overwritten: no cotangent there
        ct_x = dynamic_update_slice_p.bind(ct, zeros_like_aval(u_aval), *starts)
    if isinstance(u, UndefinedPrimal):
        ct_u = dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape)
    return [ct_x, ct_u, *([None] * len(starts))]


def _dynamic_update_slice_b(args: Sequence[Any],
                            dims: Sequence[int | None]) -> tuple[Any, int]:
    (x, u, *starts), (xd, ud, *start_dims) = args, dims
    size, n = batch_size(args, dims), len(starts)
    x_shape, u_shape = aval_of_value(x).shape, aval_of_value(u).shape
    x_shape = x_shape if xd is None else x_shape[:xd] + x_shape[xd + 1:]
    u_shape = u_shape if ud is None else u_shape[:ud] + u_shape[ud + 1:]
    x, u = at_front(x, xd, size), at_front(u, ud, size)
    if all(d is None for d in start_dims):
        return dynamic_update_slice_p.bind(x, u, np.zeros((), _start_dtype(starts)),
                                           *starts), 0
    # A scatter drops windows that do not fit where this op clamps: clamp first.
    dtype = _start_dtype(starts)
    hi = _upper(x_shape, u_shape, tuple(range(n)), dtype)
    clamped = [ew.clamp(np.zeros((), dtype), s, np.asarray(h, dtype))
               for s, h in zip(starts, hi, strict=True)]
    window = tuple(range(1, n + 1))
    dn = ScatterDimensionNumbers(window, (), window, 1, (0,), (0,))
    return _scatter(x, _stack_starts(clamped, start_dims, size), u, dn, "replace", True), 0


dynamic_update_slice_p.jvp = _dynamic_update_slice_jvp
dynamic_update_slice_p.transpose = _dynamic_update_slice_t
dynamic_update_slice_p.batch = _dynamic_update_slice_b


# --------------------------------------------------------------------------- gather
def _gather_t(ct: Any, x: Any, idx: Any, *, slice_sizes: Dims, indices_are_sorted: bool,
              **dn: Any) -> list[Any]:
    g = GatherDimensionNumbers(**dn)
    sdn = ScatterDimensionNumbers(g.offset_dims, g.collapsed_slice_dims, g.start_index_map,
                                  g.index_vector_dim, g.operand_batching_dims,
                                  g.start_indices_batching_dims)
    clamped = _clamp_indices(idx, g.index_vector_dim, g.start_index_map, x.aval.shape,
                             slice_sizes)
    return [_scatter(zeros_like_aval(x.aval), clamped, ct, sdn, "add"), None]


def _up(dims: Dims) -> Dims:
    return tuple(d + 1 for d in dims)


def _gather_b(args: Sequence[Any], dims: Sequence[int | None], *, slice_sizes: Dims,
              indices_are_sorted: bool, **dn: Any) -> tuple[Any, int]:
    g = GatherDimensionNumbers(**dn)
    (x, idx), (xd, id_) = args, dims
    moved = dict(collapsed_slice_dims=_up(g.collapsed_slice_dims),
                 start_index_map=_up(g.start_index_map))
    if id_ is None:  # the batch axis is one more offset (window) dim of every slice
        x = move_axis(x, xd, 0)
        g = replace(g, offset_dims=(0, *_up(g.offset_dims)), **moved,
                    operand_batching_dims=_up(g.operand_batching_dims))
        return _gather(x, idx, g, (aval_of_value(x).shape[0], *slice_sizes)), 0
    idx = move_axis(idx, id_, 0)
    if xd is None:  # one more batch dim of the indices
        g = replace(g, offset_dims=_up(g.offset_dims), index_vector_dim=g.index_vector_dim + 1,
                    start_indices_batching_dims=_up(g.start_indices_batching_dims))
        return _gather(x, idx, g, slice_sizes), 0
    g = replace(g, offset_dims=_up(g.offset_dims), **moved,
                index_vector_dim=g.index_vector_dim + 1,
                operand_batching_dims=(0, *_up(g.operand_batching_dims)),
                start_indices_batching_dims=(0, *_up(g.start_indices_batching_dims)))
    return _gather(move_axis(x, xd, 0), idx, g, (1, *slice_sizes)), 0


gather_p.jvp = _linear_in_operand(gather_p)
gather_p.transpose = _gather_t
gather_p.batch = _gather_b


# --------------------------------------------------------------------------- scatter: helpers
class _Windows:
    """How a scatter's update windows meet its operand, for the inverse gather."""

    def __init__(self, x_shape: Sequence[int], idx: Any, u_shape: Sequence[int],
                 dn: ScatterDimensionNumbers):
        self.x_shape, self.idx, self.u_shape, self.dn = tuple(x_shape), idx, tuple(u_shape), dn
        window = iter(u_shape[d] for d in dn.update_window_dims)
        skipped = set(dn.inserted_window_dims) | set(dn.input_batching_dims)
        self.sizes = tuple(1 if d in skipped else next(window) for d in range(len(x_shape)))

    def gather_back(self, a: Any) -> Any:
        """`a` (operand-shaped) read at every update's target: updates-shaped."""
        d = self.dn
        dn = GatherDimensionNumbers(d.update_window_dims, d.inserted_window_dims,
                                    d.scatter_dims_to_operand_dims, d.index_vector_dim,
                                    d.input_batching_dims, d.scatter_indices_batching_dims)
        return _gather(a, self.idx, dn, self.sizes)

    def fits(self) -> Any:
        """Bool, updates-shaped: the update's window lies in bounds (scatter keeps it)."""
        aval, ivd = aval_of_value(self.idx), self.dn.index_vector_dim
        hi = _upper(self.x_shape, self.sizes, self.dn.scatter_dims_to_operand_dims, aval.dtype)
        bound = np.asarray(hi, aval.dtype).reshape(() if ivd == aval.ndim else (len(hi),))
        if ivd < aval.ndim:
            bound = broadcast_in_dim_p.bind(bound, shape=aval.shape, broadcast_dimensions=(ivd,))
        ok = ew.bitwise_and(ew.ge(self.idx, 0), ew.le(self.idx, bound))
        if ivd < aval.ndim:
            ok = reduce_p.bind(ok, np.asarray(True), dimensions=(ivd,),
                               to_apply=_computation("and", np.dtype(bool)))[0]
        scatter_dims = tuple(d for d in range(len(self.u_shape))
                             if d not in self.dn.update_window_dims)
        return broadcast_in_dim_p.bind(ok, shape=self.u_shape, broadcast_dimensions=scatter_dims)

    def scatter_add(self, x: Any, u: Any) -> Any:
        return _scatter(x, self.idx, u, self.dn, "add")

    def winners(self) -> tuple[Any, Any]:
        """(operand positions some update wrote, updates whose write was the last): JAX's
        id trick, with one id per update element."""
        size = int(np.prod(self.u_shape, dtype=np.int64))
        dtype = np.dtype(np.int32 if size < 2 ** 31 - 1 else np.int64)
        ids = ew.add(reshape_p.bind(iota_p.bind(dtype=dtype, shape=(size,), dimension=0),
                                    new_sizes=self.u_shape), np.ones((), dtype))
        written = _scatter(zeros_like_aval(ShapedArray(self.x_shape, dtype)), self.idx, ids,
                           self.dn, "replace")
        return ew.ne(written, 0), ew.eq(self.gather_back(written), ids)


def _keep(mask: Any, t: Any) -> Any:
    return ew.select(mask, t, full_like(t, 0))


def _drop(mask: Any, t: Any) -> Any:
    return ew.select(mask, full_like(t, 0), t)


def _scatter_kind(graph: Graph) -> str | None:
    n = len(graph.outputs)
    if not graph.eqns and [id(a) for a in graph.outputs] == [id(v) for v in graph.inputs[n:]]:
        return "replace"
    return output_kinds(graph)[0] if n == 1 else None


# --------------------------------------------------------------------------- scatter: jvp
def _mul_jvp(w: _Windows, x: Any, u: Any, out: Any, tx: Any, tu: Any, unique: bool) -> Any:
    """out[o] = x[o] * prod of the updates u landing at o."""
    total: Any = Zero(aval_of_value(out))
    if not isinstance(tx, Zero):
        total = ew.mul(tx, _scatter(full_like(x, 1), w.idx, u, w.dn, "mul", unique))
    if not isinstance(tu, Zero):
        tu = tu if unique else ew.mul(tu, _others_product(w, x, u))
        part = ew.mul(x, w.scatter_add(full_like(x, 0), tu))
        total = part if isinstance(total, Zero) else ew.add(total, part)
    return total


def _others_product(w: _Windows, x: Any, u: Any) -> Any:
    """Per update, the product of the other updates at its target, exact with zeros:
    from the target's count of zero updates and product of the nonzero ones."""
    zero = ew.eq(u, full_like(u, 0))
    count = w.gather_back(w.scatter_add(full_like(x, 0), ew.convert_element_type(
        zero, aval_of_value(u).dtype)))
    nonzero = ew.select(zero, full_like(u, 1), u)
    prod = w.gather_back(_scatter(full_like(x, 1), w.idx, nonzero, w.dn, "mul"))
    none_zero = ew.eq(count, full_like(count, 0))
    one_zero = ew.eq(count, full_like(count, 1))
    return ew.select(zero, _keep(one_zero, prod), _keep(none_zero, ew.div(prod, nonzero)))


def _select_jvp(w: _Windows, x: Any, u: Any, out: Any, tx: Any, tu: Any, unique: bool) -> Any:
    """The mean tangent of the candidates (operand value, updates) equal to the result."""
    dtype = aval_of_value(x).dtype
    retained = ew.convert_element_type(ew.eq(x, out), dtype)
    won = ew.convert_element_type(ew.bitwise_and(ew.eq(u, w.gather_back(out)), w.fits()), dtype)
    count = ew.add(retained, w.scatter_add(full_like(x, 0), won))
    scale = ew.div(full_like(count, 1), ew.max(count, full_like(count, 1)))
    t = full_like(x, 0) if isinstance(tx, Zero) else ew.mul(tx, retained)
    if not isinstance(tu, Zero):
        t = w.scatter_add(t, ew.mul(tu, won))
    return ew.mul(t, scale)


def _scatter_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, to_apply: Graph,
                 indices_are_sorted: bool, unique_indices: bool,
                 **dn: Any) -> tuple[list[Any], list[Any]]:
    outs = scatter_p.bind(*primals, to_apply=to_apply, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, **dn)
    n, d = len(outs), ScatterDimensionNumbers(**dn)
    xs, idx, us = primals[:n], primals[n], primals[n + 1:]
    pairs = list(zip(tangents[:n], tangents[n + 1:], strict=True))
    live = [k for k, (tx, tu) in enumerate(pairs) if not (isinstance(tx, Zero)
                                                          and isinstance(tu, Zero))]
    t_outs: list[Any] = [Zero(aval_of_value(o)) for o in outs]
    if not live:
        return outs, t_outs
    kind = _scatter_kind(to_apply)
    w = _Windows(aval_of_value(xs[0]).shape, idx, aval_of_value(us[0]).shape, d)
    written, winner = w.winners() if kind == "replace" and not unique_indices else (None, None)
    for k in live:
        tx, tu = pairs[k]
        if kind == "add":
            t_outs[k] = w.scatter_add(instantiate(tx), instantiate(tu))
        elif kind == "replace" and unique_indices:
            t_outs[k] = _scatter(instantiate(tx), idx, instantiate(tu), d, "replace", True)
        elif kind == "replace":
            t_outs[k] = w.scatter_add(_drop(written, instantiate(tx)),
                                      _keep(winner, instantiate(tu)))
        elif kind in ("mul", "select"):
            rule = _mul_jvp if kind == "mul" else _select_jvp
            t_outs[k] = rule(w, xs[k], us[k], outs[k], tx, tu, unique_indices)
        else:
            raise kind_error("scatter: cannot differentiate a scatter", to_apply,
                             "add, mul, max, min, select and replace (None) combiners")
    return outs, t_outs


# ----------------------------------------------------------------------- scatter: transpose, batch
def _scatter_t(cts: Sequence[Any], *args: Any, to_apply: Graph, indices_are_sorted: bool,
               unique_indices: bool, **dn: Any) -> list[Any]:
    n = (len(args) - 1) // 2
    kind = _scatter_kind(to_apply)
    if kind not in ("add", "replace"):
        raise kind_error("scatter: cannot transpose a scatter", to_apply,
                         "add and replace (None) combiners are linear")
    idx, res = args[n], [None] * len(args)
    w = _Windows(aval_of_value(args[0]).shape, idx, aval_of_value(args[n + 1]).shape,
                 ScatterDimensionNumbers(**dn))
    written, kept = w.winners() if kind == "replace" else (None, w.fits())
    for k, ct in enumerate(cts):
        for i in (k, n + 1 + k):
            if not isinstance(args[i], UndefinedPrimal):
                continue
            if isinstance(ct, Zero):
                res[i] = Zero(args[i].aval)
            elif i == k:  # operand: what the scatter did not overwrite
                res[i] = ct if written is None else _drop(written, ct)
            else:
                res[i] = _keep(kept, w.gather_back(ct))
    return res


def _scatter_b(args: Sequence[Any], dims: Sequence[int | None], *, to_apply: Graph,
               indices_are_sorted: bool, unique_indices: bool,
               **dn: Any) -> tuple[list[Any], list[int]]:
    d, n, size = ScatterDimensionNumbers(**dn), (len(args) - 1) // 2, batch_size(args, dims)
    xs = [at_front(x, b, size) for x, b in zip(args[:n], dims[:n], strict=True)]
    us = [at_front(u, b, size) for u, b in zip(args[n + 1:], dims[n + 1:], strict=True)]
    idx, id_ = args[n], dims[n]
    moved = dict(inserted_window_dims=_up(d.inserted_window_dims),
                 scatter_dims_to_operand_dims=_up(d.scatter_dims_to_operand_dims))
    if id_ is None:  # the batch axis is one more window dim of every update
        d = replace(d, update_window_dims=(0, *_up(d.update_window_dims)), **moved,
                    input_batching_dims=_up(d.input_batching_dims))
    else:
        idx = move_axis(idx, id_, 0)
        d = replace(d, update_window_dims=_up(d.update_window_dims), **moved,
                    index_vector_dim=d.index_vector_dim + 1,
                    input_batching_dims=(0, *_up(d.input_batching_dims)),
                    scatter_indices_batching_dims=(0, *_up(d.scatter_indices_batching_dims)))
    outs = scatter_p.bind(*xs, idx, *us, **_dn_params(d), to_apply=to_apply,
                          indices_are_sorted=indices_are_sorted and id_ is None,
                          unique_indices=unique_indices)
    return outs, [0] * n


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_t
scatter_p.batch = _scatter_b
