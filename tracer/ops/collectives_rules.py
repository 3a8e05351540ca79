"""Batching, JVP and transpose rules of the collectives (`collectives.py`).

Over the axis that `vmap` maps (the frame's `axis_name`), the batch axis plays
the replicas: the value is moved (or broadcast) to axis 0, regrouped as
(groups, members, ...) in the seeds' group order, combined across the members
axis, and put back in replica order. Over any other axis a collective acts on
each batch element alone, so it is re-emitted with its dimensions shifted.

Derivatives (the collectives are linear, all_reduce and reduce_scatter when they
sum): all_reduce transposes to itself, all_gather and reduce_scatter to each other,
all_to_all to the one with split and concat swapped, collective_permute to the
reversed pairs. A max/min all_reduce shares the tangent among the replicas that
hold the extremum.
"""

from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph
from ..errors import TracerTypeError, TracerValueError
from ..interpret import eval_graph
from . import elementwise as ew
from .ad import Zero, aval_of_value, deflinear, instantiate, zeros_like_aval
from .collectives import Groups, all_gather_p, all_reduce_p, all_to_all_p, \
    collective_permute_p, current_frame, move_batch_dim, reduce_scatter_p, replica_id_p, \
    scalar_computation
from .reduce import reduce
from .registry import OPS
from .shape import broadcast_in_dim, concatenate, iota, reshape, slice as slice_op, transpose

Dims = Sequence[int | None]


def _matched(axis_name: Hashable) -> int | None:
    """The mapped axis' size if this collective is over it, else None."""
    frame = current_frame()
    if frame is None or axis_name is None or frame.name != axis_name:
        return None
    return frame.size


def _shifted(op: Any, x: Any, d: int | None, dim_params: Sequence[str],
             params: dict[str, Any]) -> tuple[Any, int]:
    """A collective over another axis, per batch element: batch axis at 0."""
    size = current_frame().size  # type: ignore[union-attr]  # only called while batching
    x = move_batch_dim(x, d, 0, size)
    new = {**params, **{k: params[k] + 1 for k in dim_params}}
    return op.bind(x, **new), 0


# ---------------------------------------------------------------- group reshaping
def _take0(x: Any, order: Sequence[int]) -> Any:
    """x[order] along axis 0 for a static `order`, as slices of consecutive runs."""
    if list(order) == list(range(len(order))):
        return x
    runs: list[list[int]] = []
    for i in order:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    shape = tuple(np.shape(x))
    pieces = [slice_op(x, (a,) + (0,) * (len(shape) - 1), (b,) + shape[1:]) for a, b in runs]
    return pieces[0] if len(pieces) == 1 else concatenate(pieces, 0)


def _grouped(x: Any, groups: Groups) -> Any:
    """(n, ...) in replica order -> (groups, members, ...) in the groups' order."""
    shape = tuple(np.shape(x))
    if groups is None:
        return reshape(x, (1,) + shape)
    x = _take0(x, [r for g in groups for r in g])
    return reshape(x, (len(groups), len(groups[0])) + shape[1:])


def _ungrouped(y: Any, groups: Groups) -> Any:
    """(groups, members, ...) -> (n, ...) in replica order."""
    shape = tuple(np.shape(y))
    y = reshape(y, (shape[0] * shape[1],) + shape[2:])
    if groups is None:
        return y
    order = [r for g in groups for r in g]
    return _take0(y, [order.index(r) for r in range(len(order))])


def _spread(r: Any, y_shape: tuple[int, ...]) -> Any:
    """(groups, ...) -> (groups, members, ...): every member gets its group's value."""
    rank = len(y_shape)
    return broadcast_in_dim(r, y_shape, (0,) + tuple(range(2, rank)))


# --------------------------------------------------------------------- reductions
_IDENTITY_OPS = ("add", "mul", "max", "min", "bitwise_or", "bitwise_and", "bitwise_xor")


def _monoid(comp: Graph) -> str | None:
    """The op name if `comp` is one known monoid op on its two inputs, else None."""
    if len(comp.eqns) != 1 or comp.eqns[0].op.name not in _IDENTITY_OPS:
        return None
    eqn = comp.eqns[0]
    if {id(a) for a in eqn.inputs} != {id(v) for v in comp.inputs} or \
            comp.outputs[0] is not eqn.outputs[0]:
        return None
    return eqn.op.name


def monoid_identity(comp: Graph, dtype: np.dtype) -> Any:
    """The identity of `comp` if it is a known monoid, else None."""
    name, kind = _monoid(comp), dtypes.kind(dtype)  # bfloat16 is a float
    if name is None or (kind == "c" and name in ("max", "min")):
        return None
    if name in ("add", "bitwise_or", "bitwise_xor"):
        value: Any = 0
    elif name == "mul":
        value = 1
    elif kind == "b":
        value = name != "max"  # max is "or", min and bitwise_and are "and"
    elif kind == "f":
        value = {"max": -np.inf, "min": np.inf}[name]
    else:
        info = np.iinfo(dtype)
        value = {"max": info.min, "min": info.max, "bitwise_and": -1 if kind == "i"
                 else info.max}[name]
    return np.asarray(value, dtype)


def _reduce_axis(x: Any, comp: Graph, axis: int) -> Any:
    """Combine `x` along `axis` with the scalar computation `comp`."""
    dtype = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
    ident = monoid_identity(comp, dtype)
    if ident is not None:
        return reduce(x, ident, comp, (axis,))
    shape = tuple(np.shape(x))
    if shape[axis] == 0:
        raise TracerValueError(f"all_reduce: a custom computation over an empty mapped axis "
                               f"has no identity ({dtypes.hlo_name(dtype)}"
                               f"[{','.join(map(str, shape))}])")
    acc = None
    for i in range(shape[axis]):  # fold in group order, elementwise over the rest
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = i, i + 1
        part = reshape(slice_op(x, start, limit), shape[:axis] + shape[axis + 1:])
        acc = part if acc is None else eval_graph(comp, [acc, part])[0]
    return acc


# -------------------------------------------------------------------------- rules
def batch_all_reduce(args: Sequence[Any], dims: Dims, **params: Any) -> tuple[Any, int | None]:
    (x,), (d,) = args, dims
    size = _matched(params["axis_name"])
    if size is None:
        return all_reduce_p.bind(x, **params), d
    x = move_batch_dim(x, d, 0, size)
    comp, groups = params["to_apply"], params["replica_groups"]
    if groups is None:
        return _reduce_axis(x, comp, 0), None
    y = _grouped(x, groups)
    return _ungrouped(_spread(_reduce_axis(y, comp, 1), tuple(np.shape(y))), groups), 0


def batch_all_gather(args: Sequence[Any], dims: Dims, **params: Any) -> tuple[Any, int | None]:
    (x,), (d,) = args, dims
    size = _matched(params["axis_name"])
    if size is None:
        return _shifted(all_gather_p, x, d, ("all_gather_dim",), params)
    dim, groups = params["all_gather_dim"], params["replica_groups"]
    y = _grouped(move_batch_dim(x, d, 0, size), groups)
    shape = tuple(np.shape(y))
    n_groups, members, rest = shape[0], shape[1], shape[2:]
    # members next to the gathered dim, then merged into it (concatenation in order)
    y = transpose(y, (0, *range(2, 2 + dim), 1, *range(2 + dim, len(shape))))
    out = rest[:dim] + (members * rest[dim],) + rest[dim + 1:]
    y = reshape(y, (n_groups,) + out)
    if groups is None:
        return reshape(y, out), None
    return _ungrouped(_spread(y, (n_groups, members) + out), groups), 0


def batch_reduce_scatter(args: Sequence[Any], dims: Dims,
                         **params: Any) -> tuple[Any, int | None]:
    (x,), (d,) = args, dims
    size = _matched(params["axis_name"])
    if size is None:
        return _shifted(reduce_scatter_p, x, d, ("scatter_dimension",), params)
    dim, groups = params["scatter_dimension"], params["replica_groups"]
    y = _grouped(move_batch_dim(x, d, 0, size), groups)
    shape = tuple(np.shape(y))
    n_groups, members, rest = shape[0], shape[1], shape[2:]
    r = _reduce_axis(y, params["to_apply"], 1)
    r = reshape(r, (n_groups,) + rest[:dim] + (members, rest[dim] // members) + rest[dim + 1:])
    r = move_batch_dim(r, 1 + dim, 1, members)  # member j keeps block j
    return _ungrouped(r, groups), 0


def batch_all_to_all(args: Sequence[Any], dims: Dims, **params: Any) -> tuple[Any, int | None]:
    (x,), (d,) = args, dims
    size = _matched(params["axis_name"])
    if size is None:
        return _shifted(all_to_all_p, x, d, ("split_dimension", "concat_dimension"), params)
    s, c, groups = params["split_dimension"], params["concat_dimension"], params["replica_groups"]
    y = _grouped(move_batch_dim(x, d, 0, size), groups)
    shape = tuple(np.shape(y))
    n_groups, g, rest = shape[0], shape[1], shape[2:]
    # (G, i, ..., j, block, ...): member i's block j goes to member j at position i
    y = reshape(y, (n_groups, g) + rest[:s] + (g, rest[s] // g) + rest[s + 1:])
    pos = [2 + k if k < s else 3 + k for k in range(len(rest))]
    y = transpose(y, (0, 2 + s, *pos[:c], 1, *pos[c:]))
    block = rest[:s] + (rest[s] // g,) + rest[s + 1:]
    out = block[:c] + (g * block[c],) + block[c + 1:]
    return _ungrouped(reshape(y, (n_groups, g) + out), groups), 0


def batch_collective_permute(args: Sequence[Any], dims: Dims,
                             **params: Any) -> tuple[Any, int | None]:
    (x,), (d,) = args, dims
    size = _matched(params["axis_name"])
    if size is None:
        return collective_permute_p.bind(x, **params), d
    x = move_batch_dim(x, d, 0, size)
    source = {t: s for s, t in params["source_target_pairs"]}
    shape = tuple(np.shape(x))
    dtype = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
    pieces, t = [], 0
    while t < size:
        run = 1  # consecutive targets fed by consecutive sources (or all untargeted)
        while t + run < size and source.get(t + run) == (
                None if source.get(t) is None else source[t] + run):
            run += 1
        piece_shape = (run,) + shape[1:]
        if source.get(t) is None:
            pieces.append(broadcast_in_dim(np.zeros((), dtype), piece_shape, ()))
        else:
            s = source[t]
            pieces.append(slice_op(x, (s,) + (0,) * (len(shape) - 1), (s + run,) + shape[1:]))
        t += run
    if not pieces:
        return x, 0
    return (pieces[0] if len(pieces) == 1 else concatenate(pieces, 0)), 0


def batch_replica_id(args: Sequence[Any], dims: Dims, **params: Any) -> tuple[Any, int | None]:
    size = _matched(params["axis_name"])
    if size is None:
        return replica_id_p.bind(**params), None
    return iota(np.uint32, (size,), 0), 0


# ----------------------------------------------------------------------- AD rules
def _summing(params: dict[str, Any], dtype: np.dtype) -> dict[str, Any]:
    return {**params, "to_apply": scalar_computation("all_reduce", ew.add, dtype)}


def _all_reduce_jvp(primals: Sequence[Any], tangents: Sequence[Any],
                    **params: Any) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = all_reduce_p.bind(x, **params)
    kind = _monoid(params["to_apply"])
    if isinstance(t, Zero):
        return out, Zero(aval_of_value(out))
    if kind == "add":
        return out, all_reduce_p.bind(t, **params)
    if kind not in ("max", "min"):
        raise TracerTypeError("all_reduce: derivatives need computation add, max or min")
    # the replicas holding the extremum share its tangent equally
    dtype = aval_of_value(x).dtype
    hit = ew.eq(x, out)
    picked = ew.select(hit, t, zeros_like_aval(aval_of_value(t)))
    count = all_reduce_p.bind(ew.convert_element_type(hit, dtype), **_summing(params, dtype))
    return out, ew.div(all_reduce_p.bind(picked, **_summing(params, dtype)), count)


def _linear_in_add(op: str, params: dict[str, Any]) -> None:
    if _monoid(params["to_apply"]) != "add":
        raise TracerTypeError(f"{op}: derivatives need computation add")


def _reduce_scatter_jvp(primals: Sequence[Any], tangents: Sequence[Any],
                        **params: Any) -> tuple[Any, Any]:
    (x,), (t,) = primals, tangents
    out = reduce_scatter_p.bind(x, **params)
    if isinstance(t, Zero):
        return out, Zero(aval_of_value(out))
    _linear_in_add("reduce_scatter", params)
    return out, reduce_scatter_p.bind(t, **params)


def _all_reduce_transpose(ct: Any, x: Any, **params: Any) -> list[Any]:
    _linear_in_add("all_reduce", params)  # the sum over replicas is symmetric
    return [all_reduce_p.bind(instantiate(ct), **params)]


def _reduce_scatter_transpose(ct: Any, x: Any, *, to_apply: Graph, scatter_dimension: int,
                              **params: Any) -> list[Any]:
    _linear_in_add("reduce_scatter", {"to_apply": to_apply})
    return [all_gather_p.bind(instantiate(ct), all_gather_dim=scatter_dimension, **params)]


def _all_gather_transpose(ct: Any, x: Any, *, all_gather_dim: int, **params: Any) -> list[Any]:
    ct = instantiate(ct)
    return [reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dim,
                                  **_summing(params, aval_of_value(ct).dtype))]


def _all_to_all_transpose(ct: Any, x: Any, *, split_dimension: int, concat_dimension: int,
                          **params: Any) -> list[Any]:
    return [all_to_all_p.bind(instantiate(ct), split_dimension=concat_dimension,
                              concat_dimension=split_dimension, **params)]


def _collective_permute_transpose(ct: Any, x: Any, *, source_target_pairs: tuple,
                                  **params: Any) -> list[Any]:
    back = tuple((t, s) for s, t in source_target_pairs)
    return [collective_permute_p.bind(instantiate(ct), source_target_pairs=back, **params)]


def _register() -> None:
    all_reduce_p.jvp, all_reduce_p.transpose = _all_reduce_jvp, _all_reduce_transpose
    reduce_scatter_p.jvp = _reduce_scatter_jvp
    reduce_scatter_p.transpose = _reduce_scatter_transpose
    deflinear(all_gather_p, _all_gather_transpose)
    deflinear(all_to_all_p, _all_to_all_transpose)
    deflinear(collective_permute_p, _collective_permute_transpose)
    OPS["all_reduce"].batch = batch_all_reduce
    OPS["all_gather"].batch = batch_all_gather
    OPS["reduce_scatter"].batch = batch_reduce_scatter
    OPS["all_to_all"].batch = batch_all_to_all
    OPS["collective_permute"].batch = batch_collective_permute
    OPS["replica_id"].batch = batch_replica_id


_register()
