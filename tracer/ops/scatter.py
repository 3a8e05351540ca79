"""Scatter (seed `Scatter`): combine update windows into copies of the operands.

Split from `indexing.py` (gather and the dynamic slices), whose index helpers it shares.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Graph, ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from ..interpret import run_graph
from . import elementwise as ew
from .common import check_avals, trace_scalar_computation, wrapper_error
from .indexing import (ScatterDimensionNumbers, _check_batching, _check_index_map, _dims,
                       _dimension_numbers, _disjoint, _index_batch, _int_indices,
                       _start_vectors, _window_grids)
from .registry import define_op, harmonize

__all__ = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]

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
    # -> [0., 15., 0., 20., 0.]
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

    replace = lambda *args: args[n:]  # noqa: E731  (None: the update replaces)
    return trace_scalar_computation("scatter", replace if fun is None else fun, scalars,
                                    "update_computation")


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
