"""ReduceWindow, SelectAndScatter and Map (XLA's ReduceWindow, SelectAndScatter, Map).

Window geometry (shared by both windowed ops, params stored per dimension):
the operand is first *base-dilated* (`base_dilation - 1` holes between
elements), then padded by `padding` (low, high) pairs; a window of
`window_dimensions` taps, `window_dilation` apart, slides over that with
`window_strides`. Padding and holes take the init value in ReduceWindow (the
seeds: "padding elements are the init value") and are never selected by
SelectAndScatter. Output size per dimension: `(padded - span) // stride + 1`
with `span = (w - 1) * window_dilation + 1` (0 when the window does not fit).

Sub-computations are `Graph`s in params, as HLO spells them: `to_apply` for
reduce_window and map, `select` / `scatter` for select_and_scatter.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import Graph, ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerTypeError
from ..interpret import run_graph
from ..tracing import trace_flat
from .common import (check_arity, check_avals, operand_aval, static_ints, trace_scalar_computation,
                     wrapper_error)
from .reduce import _is_elementwise, _single_ufunc
from .registry import define_op, harmonize
from .scatter import _apply as _scatter_apply

__all__ = ["reduce_window", "select_and_scatter", "map"]

Dims = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]
_GEOMETRY = ("window_dimensions", "window_strides", "padding", "base_dilation",
             "window_dilation")


def _fmt(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(str(a) for a in avals)  # (no `map`: this module defines ops.map)


# ------------------------------------------------------------------ window geometry
def dilated(n: int, d: int) -> int:
    """Size of a dimension of n elements with d - 1 holes between neighbours."""
    return 0 if n == 0 else (n - 1) * d + 1


def window_shape(shape: Dims, window_dimensions: Dims, window_strides: Dims, padding: Pads,
                 base_dilation: Dims, window_dilation: Dims) -> Dims:
    """The output shape of a window over `shape`; ShapeError / ParamError when invalid."""
    rank = len(shape)
    for name, value in zip(_GEOMETRY, (window_dimensions, window_strides, padding,
                                       base_dilation, window_dilation), strict=True):
        if len(value) != rank:
            raise ShapeError(f"{name} {value} must have one entry per operand dimension "
                             f"(rank {rank})")
    for name, value in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
        if any(v < 1 for v in value):
            raise ParamError(f"{name} {value} must be positive")
    out = []
    for d in range(rank):
        padded = dilated(shape[d], base_dilation[d]) + padding[d][0] + padding[d][1]
        span = dilated(window_dimensions[d], window_dilation[d])
        if padded < 0:
            raise ShapeError(f"padding {padding[d]} removes more than the {shape[d]} "
                             f"element(s) of dimension {d}")
        out.append((padded - span) // window_strides[d] + 1 if padded >= span else 0)
    return tuple(out)


def resolve_padding(op: str, padding: Any, shape: Dims, window_dimensions: Dims,
                    window_strides: Dims, base_dilation: Dims, window_dilation: Dims) -> Pads:
    """"VALID" / "SAME" (seed rule: output = ceil(n / stride), total padding split low =
    floor(total / 2)) on the dilated sizes, or explicit (low, high) pairs."""
    if isinstance(padding, str):
        kind = padding.upper()
        if kind == "VALID":
            return ((0, 0),) * len(shape)
        if kind != "SAME":
            raise wrapper_error(ParamError, op, f"padding must be 'SAME', 'VALID' or "
                                f"(low, high) pairs, got {padding!r}")
        pads = []
        for n, w, s, b, r in zip(shape, window_dimensions, window_strides, base_dilation,
                                 window_dilation, strict=True):
            size = dilated(n, b)
            total = max((-(-size // s) - 1) * s + dilated(w, r) - size, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    try:
        pairs = tuple(static_ints(op, "padding", p) for p in padding)
    except TypeError:
        pairs = ((),)
    if any(len(p) != 2 for p in pairs):
        raise wrapper_error(ParamError, op, f"padding must be 'SAME', 'VALID' or (low, high) "
                            f"pairs, got {padding!r}")
    return tuple((p[0], p[1]) for p in pairs)


def _geometry(op: str, shape: Dims, window_dimensions: Any, window_strides: Any, padding: Any,
              base_dilation: Any, window_dilation: Any) -> dict[str, Any]:
    """The geometry params of a public call (defaults: unit strides and dilations)."""
    ones = (1,) * len(shape)
    window = static_ints(op, "window_dimensions", window_dimensions)
    if len(window) != len(shape):
        raise wrapper_error(ShapeError, op, f"window_dimensions {window} must have one entry "
                            f"per operand dimension (operand rank {len(shape)})")
    geo = {"window_dimensions": window}
    for name, value in (("window_strides", window_strides), ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
        geo[name] = ones if value is None else static_ints(op, name, value)
    geo["padding"] = resolve_padding(op, padding, shape, window, geo["window_strides"],
                                     geo["base_dilation"], geo["window_dilation"])
    return geo


def padded_array(x: np.ndarray, fill: Any, padding: Pads, base_dilation: Dims) -> np.ndarray:
    """`x` base-dilated and padded (holes and padding = `fill`; negative padding crops)."""
    sizes = [dilated(n, b) for n, b in zip(x.shape, base_dilation, strict=True)]
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    big = np.full([s + lo + hi for s, (lo, hi) in zip(sizes, grow, strict=True)], fill, x.dtype)
    big[tuple(slice(lo, lo + s, b) for s, (lo, _), b in
              zip(sizes, grow, base_dilation, strict=True))] = x
    return big[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in
                     zip(big.shape, padding, strict=True))]


def window_taps(padded: np.ndarray, out_shape: Dims, window_dimensions: Dims,
                window_strides: Dims, window_dilation: Dims) -> Any:
    """For each window position k (row-major), the out-shaped view of tap k."""
    for k in np.ndindex(*window_dimensions):
        yield tuple(slice(0, 0) if m == 0 else slice(j * r, j * r + (m - 1) * s + 1, s)
                    for j, m, s, r in zip(k, out_shape, window_strides, window_dilation,
                                          strict=True))


# ------------------------------------------------------------------ reduce_window
def _reduce_window_shape(*avals: ShapedArray, to_apply: Graph, **geo: Any
                         ) -> tuple[ShapedArray, ...]:
    if len(avals) % 2 or not avals:
        raise ParamError(f"needs N operands and N init values, got {len(avals)} arrays")
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if any(a.shape != operands[0].shape for a in operands):
        raise ShapeError("all operands must have the same shape, got "
                         + _fmt(operands))
    scalars = [ShapedArray((), a.dtype) for a in operands]
    check_avals("init values must be scalars of the operands' dtypes", scalars, inits)
    check_avals("computation parameters (accumulators, then elements)", scalars * 2,
                to_apply.in_avals)
    check_avals("computation results", scalars, to_apply.out_avals)
    shape = window_shape(operands[0].shape, **geo)
    return tuple(ShapedArray(shape, a.dtype) for a in operands)


def _reduce_window_impl(*args: np.ndarray, to_apply: Graph, **geo: Any) -> list[np.ndarray]:
    """Left fold over the window taps in row-major order, from the init values."""
    n = len(args) // 2
    inits = [np.asarray(i) for i in args[n:]]
    padded = [padded_array(np.asarray(x), i[()], geo["padding"], geo["base_dilation"])
              for x, i in zip(args[:n], inits, strict=True)]
    out_shape = window_shape(np.shape(args[0]), **geo)
    taps = list(window_taps(padded[0], out_shape, geo["window_dimensions"],
                            geo["window_strides"], geo["window_dilation"]))
    dts = [p.dtype for p in padded]
    ufunc = _single_ufunc(to_apply) if n == 1 and dts[0].kind != "b" else None
    with np.errstate(all="ignore"):
        if ufunc is not None or _is_elementwise(to_apply):
            acc = [np.full(out_shape, i, d) for i, d in zip(inits, dts, strict=True)]
            for tap in taps:
                xs = [p[tap] for p in padded]
                acc = ([ufunc(acc[0], xs[0])] if ufunc is not None else
                       run_graph(to_apply, acc + xs))
                acc = [np.broadcast_to(a, out_shape).astype(d) for a, d in
                       zip(acc, dts, strict=True)]
            return acc
        return _fold_each(to_apply, padded, inits, taps, out_shape)


def _fold_each(graph: Graph, padded: list[np.ndarray], inits: list[np.ndarray],
               taps: list[Any], out_shape: Dims) -> list[np.ndarray]:
    """The fold one output position at a time (computations with non-element-wise ops)."""
    outs = [np.empty(out_shape, p.dtype) for p in padded]
    views = [[p[tap] for tap in taps] for p in padded]
    for pos in np.ndindex(*out_shape):
        acc = [i.astype(p.dtype) for i, p in zip(inits, padded, strict=True)]
        for k in range(len(taps)):
            acc = [np.asarray(a, p.dtype) for a, p in zip(
                run_graph(graph, acc + [v[k][pos] for v in views]), padded, strict=True)]
        for o, a in zip(outs, acc, strict=True):
            o[pos] = a
    return outs


reduce_window_p = define_op(
    "reduce_window", shape=_reduce_window_shape, impl=_reduce_window_impl,
    hlo_name="reduce-window", family="window", multiple_results=True,
    doc="ReduceWindow(operands..., init_values..., computation, window_dimensions, "
        "window_strides, base_dilations, window_dilations, padding): one output element per "
        "valid window position, the reduction of the window's elements with "
        "computation(accs..., elements...) from the init values. Padding (SAME: output = "
        "ceil(n / stride)) and base-dilation holes are init values. Example: x = [10000, "
        "1000, 100, 10, 1], init MAX, min, window [3], stride [2]: VALID -> [100, 1], "
        "SAME -> [1000, 10, 1].")


def reduce_window(operands: Any, init_values: Any, computation: Callable[..., Any] | Graph,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: Any = "VALID", base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduce every window of one or N same-shaped arrays with a scalar computation.

    Seed rule: each output element is the fold of its window's elements with
    computation(accumulators..., elements...) starting from the init values (which
    should be identities); `padding` is "VALID", "SAME" or (low, high) pairs, and
    padded positions and base-dilation holes hold the init value. A single array
    with a single init gives a single result, else a list.

    >>> reduce_window(np.float32([10000, 1000, 100, 10, 1]), np.inf, min, [3], [2], "SAME")
    # -> [1000., 10., 1.]
    """
    single = not isinstance(operands, (tuple, list))
    xs = [operands] if single else list(operands)
    inits = list(init_values) if isinstance(init_values, (tuple, list)) else [init_values]
    if len(xs) != len(inits) or not xs:
        raise wrapper_error(ParamError, "reduce_window", f"got {len(xs)} operands but "
                            f"{len(inits)} init values")
    pairs = [harmonize(x, i) for x, i in zip(xs, inits, strict=True)]
    xs, inits = [p[0] for p in pairs], [p[1] for p in pairs]
    avals = [operand_aval(x) for x in xs]
    geo = _geometry("reduce_window", avals[0].shape, window_dimensions, window_strides, padding,
                    base_dilation, window_dilation)
    graph = computation if isinstance(computation, Graph) else trace_scalar_computation(
        "reduce_window", computation, [ShapedArray((), a.dtype) for a in avals])
    outs = reduce_window_p.bind(*xs, *inits, to_apply=graph, **geo)
    return outs[0] if single and len(inits) == 1 else list(outs)


# ------------------------------------------------------------------ select_and_scatter
def _select_and_scatter_shape(operand: ShapedArray, source: ShapedArray, init: ShapedArray, *,
                              select: Graph, scatter: Graph, **geo: Any) -> ShapedArray:
    scalar = ShapedArray((), operand.dtype)
    if source.dtype != operand.dtype:
        raise DTypeError(f"source {source} must have the operand's dtype ({operand})")
    check_avals("init_value must be a scalar of the operand's dtype", [scalar], [init])
    check_avals("select parameters", [scalar, scalar], select.in_avals)
    check_avals("select result", [ShapedArray((), np.dtype(bool))], select.out_avals)
    check_avals("scatter parameters (current, source value)", [scalar, scalar],
                scatter.in_avals)
    check_avals("scatter result", [scalar], scatter.out_avals)
    windows = window_shape(operand.shape, **geo)
    if source.shape != windows:
        raise ShapeError(f"source {source} must have one element per window position, "
                         f"shape {list(windows)}")
    return ShapedArray(operand.shape, operand.dtype)


def _apply_select(graph: Graph, current: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    if _is_elementwise(graph):
        return np.broadcast_to(run_graph(graph, [current, candidate])[0], current.shape)
    keep = np.empty(current.shape, bool)
    for pos in np.ndindex(*current.shape):
        keep[pos] = run_graph(graph, [current[pos], candidate[pos]])[0]
    return keep


def _select_and_scatter_impl(operand: np.ndarray, source: np.ndarray, init: np.ndarray, *,
                             select: Graph, scatter: Graph, **geo: Any) -> np.ndarray:
    """Per window: scan its real (not padding, not hole) elements in row-major order,
    keeping the current one while select(current, candidate) holds; then scatter every
    source value onto its window's pick, in row-major order of the windows."""
    operand, source = np.asarray(operand), np.asarray(source)
    pad = lambda x, fill: padded_array(x, fill, geo["padding"], geo["base_dilation"])  # noqa
    values = pad(operand, 0)
    flat_index = pad(np.arange(operand.size, dtype=np.int64).reshape(operand.shape), -1)
    have = np.zeros(source.shape, bool)
    best = np.zeros(source.shape, operand.dtype)
    best_index = np.full(source.shape, -1, np.int64)
    with np.errstate(all="ignore"):
        for tap in window_taps(values, source.shape, geo["window_dimensions"],
                               geo["window_strides"], geo["window_dilation"]):
            index, candidate = flat_index[tap], values[tap]
            keep = _apply_select(select, best, candidate)
            take = (index >= 0) & (~have | ~keep)
            best = np.where(take, candidate, best)
            best_index = np.where(take, index, best_index)
            have |= index >= 0
        out = np.full(operand.size, np.asarray(init)[()], operand.dtype)
        _scatter_apply(scatter, [out], best_index[have], [source[have]])
    return out.reshape(operand.shape)


select_and_scatter_p = define_op(
    "select_and_scatter", shape=_select_and_scatter_shape, impl=_select_and_scatter_impl,
    hlo_name="select-and-scatter", family="window",
    doc="SelectAndScatter(operand, select, window_dimensions, window_strides, padding, "
        "source, init_value, scatter): per window, select(current, candidate) (current has "
        "the lexicographically smaller index; true keeps it) picks one element; each source "
        "value (one per window) is combined into the output (init_value everywhere) at its "
        "window's pick with scatter(current output, source value); padding is never picked. "
        "Example: operand [1, 9, 3], window [2], stride [1], ge, add, source [2, 6] -> "
        "[0, 8, 0].")


def select_and_scatter(operand: Any, select: Callable[..., Any] | Graph,
                       window_dimensions: Sequence[int], window_strides: Sequence[int],
                       padding: Any, source: Any, init_value: Any,
                       scatter: Callable[..., Any] | Graph,
                       base_dilation: Sequence[int] | None = None,
                       window_dilation: Sequence[int] | None = None) -> Any:
    """Scatter `source` (one value per window) onto the element each window selects.

    Seed rule: `select(a, b)` is called with `a` at the lexicographically smaller
    index and returns true to keep `a`; the output starts as `init_value` and each
    source value is combined in with `scatter(current, value)`; overlapping windows
    combine. The dilations (an extension, as in ReduceWindow) make this the exact
    transpose of a dilated max-pool's gradient.

    >>> select_and_scatter(np.float32([1, 9, 3, 9]), ge, [2], [2], "VALID",
    ...                    np.float32([2, 6]), 0.0, add)  # -> [0., 2., 0., 6.]
    """
    operand, source, init_value = harmonize(operand, source, init_value)
    aval = operand_aval(operand)
    geo = _geometry("select_and_scatter", aval.shape, window_dimensions, window_strides,
                    padding, base_dilation, window_dilation)
    scalar = [ShapedArray((), aval.dtype)]
    graphs = {name: fun if isinstance(fun, Graph) else
              trace_scalar_computation("select_and_scatter", fun, scalar, name)
              for name, fun in (("select", select), ("scatter", scatter))}
    return select_and_scatter_p.bind(operand, source, init_value, **graphs, **geo)


# ------------------------------------------------------------------ map
def _map_shape(*avals: ShapedArray, to_apply: Graph, dimensions: Dims
               ) -> tuple[ShapedArray, ...]:
    if not avals:
        raise ParamError("map needs at least one operand")
    if any(a.shape != avals[0].shape for a in avals):
        raise ShapeError("all operands must have the same shape, got "
                         + _fmt(avals))
    if dimensions != tuple(range(avals[0].ndim)):
        raise ParamError(f"dimensions {dimensions} must list every operand dimension in "
                         f"order, {tuple(range(avals[0].ndim))}")
    check_avals("computation parameters (one scalar per operand)",
                [ShapedArray((), a.dtype) for a in avals], to_apply.in_avals)
    if any(a.shape != () for a in to_apply.out_avals):
        raise ShapeError(f"the computation must return scalars, got "
                         f"{_fmt(to_apply.out_avals)}")
    return tuple(ShapedArray(avals[0].shape, a.dtype) for a in to_apply.out_avals)


def _map_impl(*args: np.ndarray, to_apply: Graph, dimensions: Dims) -> list[np.ndarray]:
    xs = [np.asarray(a) for a in args]
    shape, dts = xs[0].shape, [a.dtype for a in to_apply.out_avals]
    with np.errstate(all="ignore"):
        if _is_elementwise(to_apply):  # the scalar program on whole arrays
            return [np.broadcast_to(np.asarray(o), shape).astype(d) for o, d in
                    zip(run_graph(to_apply, xs), dts, strict=True)]
        outs = [np.empty(shape, d) for d in dts]
        for pos in np.ndindex(*shape):
            for o, r in zip(outs, run_graph(to_apply, [x[pos] for x in xs]), strict=True):
                o[pos] = r
    return outs


map_p = define_op(
    "map", shape=_map_shape, impl=_map_impl, hlo_name="map", family="map",
    multiple_results=True,
    doc="Map(operands..., computation, dimensions): applies a scalar computation "
        "T_0..T_{N-1} -> S element-wise over N same-shaped arrays (dimensions: every "
        "dimension, in order); the output has the operands' shape and element type S. "
        "Example: map(lambda a, b: a * b + 1, [1, 2], [3, 4]) -> [4, 9].")


def map(computation: Callable[..., Any] | Graph, operands: Any,
        dimensions: Sequence[int] | None = None) -> Any:
    """Apply a scalar `computation` of N scalars element-wise over N same-shaped arrays.

    Seed rule: out[i] = computation(op_0[i], ..., op_{N-1}[i]) at every index; the
    computation may return several scalars (then a list of arrays). `dimensions`
    must be every dimension in order (the default).

    >>> map(lambda a, b: a * b + 1, [np.float32([1, 2]), np.float32([3, 4])])  # [4., 9.]
    """
    xs = list(operands) if isinstance(operands, (tuple, list)) else [operands]
    if not xs:
        raise wrapper_error(ParamError, "map", "needs at least one operand")
    xs = harmonize(*xs)
    avals = [operand_aval(x) for x in xs]
    dims = tuple(range(avals[0].ndim)) if dimensions is None else \
        static_ints("map", "dimensions", dimensions)
    graph = computation if isinstance(computation, Graph) else \
        _trace_map(computation, [ShapedArray((), a.dtype) for a in avals])
    outs = map_p.bind(*xs, to_apply=graph, dimensions=dims)
    return outs[0] if len(outs) == 1 else list(outs)


def _trace_map(fun: Callable[..., Any], scalars: list[ShapedArray]) -> Graph:
    if not callable(fun):
        raise wrapper_error(ParamError, "map", f"computation must be a function or a Graph, "
                            f"got {fun!r}")
    check_arity("map", "the computation", fun, len(scalars))

    def flat(*args: Any) -> list[Any]:
        out = fun(*args)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    graph, captured = trace_flat(flat, scalars, name="map_computation")
    if captured:
        raise wrapper_error(TracerTypeError, "map", "the computation must be closed: it uses "
                            "traced values of an enclosing function; pass them as operands")
    return graph

# (last: the rules module imports this one) The op records arrive with their JVP /
# transpose / batching rules, however this module was first imported.
from . import window_rules  # noqa: E402,F401
