"""Reduce: fold chosen dimensions of N arrays with a user computation (XLA's Reduce).

The computation is traced once into a `Graph` of 2N scalars (the N running
accumulators first, then the N input elements) returning N scalars, and stored
in the eqn as `to_apply` (the HLO spelling: `reduce(...), dimensions={0},
to_apply=%region_0.3`). The op always has multiple results (one per operand);
the public `reduce` unpacks the single-operand case.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, ShapedArray
from ..errors import ParamError, ShapeError, TracerIndexError
from ..interpret import run_graph
from ..tracing import Tracer
from .common import check_avals, trace_scalar_computation, wrapper_error
from .registry import OPS, define_op, harmonize

__all__ = ["reduce"]

# Single-op computations the reference runs as one NumPy ufunc reduction.
_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
}

# Op families whose impls are element-wise NumPy code, so a computation built only
# from them can run on whole arrays of accumulators at once.
_ELEMENTWISE_FAMILIES = frozenset({"unary", "binary", "compare", "elementwise", "select",
                                   "convert", "clamp", "ternary"})


def _reduce_shape(*avals: ShapedArray, dimensions: tuple[int, ...],
                  to_apply: Graph) -> tuple[ShapedArray, ...]:
    if len(avals) % 2 or not avals:
        raise ParamError(f"needs N operands and N init values, got {len(avals)} arrays")
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if any(a.shape != operands[0].shape for a in operands):
        raise ShapeError("all operands must have the same shape, got "
                         + ", ".join(map(str, operands)))
    scalars = [ShapedArray((), a.dtype) for a in operands]
    check_avals("init values must be scalars of the operands' dtypes", scalars, inits)
    ndim = operands[0].ndim
    if len(set(dimensions)) != len(dimensions):
        raise ParamError(f"dimensions {dimensions} has duplicates")
    if any(not 0 <= d < ndim for d in dimensions):
        raise TracerIndexError(f"dimensions {dimensions} out of range for rank {ndim}")
    check_avals("computation parameters (accumulators, then elements)",
                scalars * 2, to_apply.in_avals)
    check_avals("computation results", scalars, to_apply.out_avals)
    shape = tuple(s for i, s in enumerate(operands[0].shape) if i not in dimensions)
    return tuple(ShapedArray(shape, a.dtype) for a in operands)


def _single_ufunc(graph: Graph) -> np.ufunc | None:
    """The NumPy ufunc when `graph` is just `op(acc, x)` (either order) of a known op."""
    if len(graph.eqns) != 1 or len(graph.inputs) != 2:
        return None
    eqn = graph.eqns[0]
    ufunc = _UFUNCS.get(eqn.op.name)
    if ufunc is None:
        return None
    ins = [id(a) for a in eqn.inputs]
    wired = sorted(ins) == sorted(map(id, graph.inputs)) and ins[0] != ins[1]
    plain = all(v is None or v is False or v == () for v in eqn.params.values())
    returns = len(graph.outputs) == 1 and graph.outputs[0] is eqn.outputs[0]
    return ufunc if wired and plain and returns else None


def _is_elementwise(graph: Graph) -> bool:
    return all(getattr(e.op, "family", "") in _ELEMENTWISE_FAMILIES for e in graph.eqns)


def _reduce_impl(*args: np.ndarray, dimensions: tuple[int, ...],
                 to_apply: Graph) -> list[np.ndarray]:
    n = len(args) // 2
    operands, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    if n == 1:
        ufunc = _single_ufunc(to_apply)
        if ufunc is not None:
            x = operands[0]
            with np.errstate(all="ignore"):
                out = ufunc.reduce(x, axis=dimensions, dtype=x.dtype, initial=inits[0][()])
            return [np.asarray(out, dtype=x.dtype)]
    return _fold(operands, inits, dimensions, to_apply)


def _fold(operands: list[np.ndarray], inits: list[np.ndarray], dimensions: tuple[int, ...],
          graph: Graph) -> list[np.ndarray]:
    """Sequential left fold over the reduced elements (the seeds' variadic order).

    The reduced dims are moved last and flattened to one axis of length K; then
    `acc = f(acc, x[..., k])` for k = 0..K-1. When the computation is made only of
    element-wise ops, one `run_graph` call updates every output position at once
    (a scalar program applied to arrays is the same program per element);
    otherwise each output position is folded on its own.
    """
    kept = [d for d in range(operands[0].ndim) if d not in dimensions]
    out_shape = tuple(operands[0].shape[d] for d in kept)
    k = int(np.prod([operands[0].shape[d] for d in dimensions], dtype=np.int64))
    flat = [np.transpose(x, kept + list(dimensions)).reshape(out_shape + (k,)) for x in operands]
    dts = [x.dtype for x in operands]
    if _is_elementwise(graph):
        acc = [np.broadcast_to(i, out_shape).astype(d) for i, d in zip(inits, dts, strict=True)]
        return _fold_positions(graph, acc, flat, dts)
    outs = [np.empty(out_shape, d) for d in dts]
    for pos in np.ndindex(*out_shape):
        acc = [i.astype(d) for i, d in zip(inits, dts, strict=True)]
        res = _fold_positions(graph, acc, [x[pos] for x in flat], dts)
        for o, r in zip(outs, res, strict=True):
            o[pos] = r
    return outs


def _fold_positions(graph: Graph, acc: list[np.ndarray], flat: list[np.ndarray],
                    dts: list[np.dtype]) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        for j in range(flat[0].shape[-1]):
            outs = run_graph(graph, acc + [x[..., j] for x in flat])
            acc = [np.asarray(o, dtype=d) for o, d in zip(outs, dts, strict=True)]
    return acc


reduce_p = define_op(
    "reduce", shape=_reduce_shape, impl=_reduce_impl, hlo_name="reduce", family="reduction",
    multiple_results=True,
    doc="Reduce(operands..., init_values..., computation, dimensions): removes `dimensions` "
        "(distinct, in range, stored sorted) from N same-shaped arrays by folding their "
        "elements with computation(acc_0..acc_{N-1}, x_0..x_{N-1}) -> (acc'_0..acc'_{N-1}), "
        "starting from the scalar init values (which should be identities). Evaluation "
        "order is unspecified; the reference folds left. Example: A = [[1,2,3],[4,5,6]] "
        "repeated 4x (f32[4,2,3]); Reduce(A, 0, add, [0]) -> [[4,8,12],[16,20,24]].")


def reduce(operands: Any, init_values: Any, computation: Callable[..., Any] | Graph,
           dimensions: Sequence[int]) -> Any:
    """Reduce `dimensions` of one or N same-shaped arrays with a scalar computation.

    Seed rule: the computation takes the N running accumulators first, then the N
    elements, and returns the N new accumulators (one value when N = 1). The init
    values must be identities of the computation; evaluation order is arbitrary.
    A single array with a single init gives a single result, else a list.

    >>> reduce(np.ones((4, 2, 3), np.float32), 0.0, add, [0, 1])  # -> [8., 8., 8.]
    """
    single = not isinstance(operands, (tuple, list))
    ops_list = [operands] if single else list(operands)
    inits = [init_values] if not isinstance(init_values, (tuple, list)) else list(init_values)
    if len(ops_list) != len(inits) or not ops_list:
        raise wrapper_error(ParamError, "reduce", f"got {len(ops_list)} operands but "
                            f"{len(inits)} init values")
    pairs = [harmonize(x, i) for x, i in zip(ops_list, inits, strict=True)]
    ops_list, inits = [p[0] for p in pairs], [p[1] for p in pairs]
    graph = computation if isinstance(computation, Graph) else \
        _trace_computation(computation, [_scalar_aval(x) for x in ops_list])
    dims = tuple(sorted(_as_int(d) for d in _as_seq(dimensions)))
    if _bfloat16_sum(graph):
        outs = [_sum_in_float32(ops_list[0], inits[0], graph, dims)]
    else:
        outs = reduce_p.bind(*ops_list, *inits, dimensions=dims, to_apply=graph)
    return outs[0] if single and len(inits) == 1 else list(outs)


def _bfloat16_sum(graph: Graph) -> bool:
    """A bfloat16 add or mul reduction (which accumulates in float32)."""
    return graph.in_avals[0].dtype == dtypes.bfloat16 and \
        _single_ufunc(graph) in (np.add, np.multiply)


def _sum_in_float32(x: Any, init: Any, graph: Graph, dims: tuple[int, ...]) -> Any:
    """bfloat16 sums and products accumulate in float32 and round once, as XLA's CPU
    backend normalizes them (and as the cpu backend's float32 registers would not
    across a reduction kept in memory)."""
    eqn = graph.eqns[0]
    wide = _trace_computation(lambda a, b: eqn.op.bind(a, b, **eqn.params),
                              [ShapedArray((), dtypes.float32)])
    convert = OPS["convert_element_type"].bind
    (out,) = reduce_p.bind(convert(x, new_dtype=dtypes.float32, weak_type=False),
                           convert(init, new_dtype=dtypes.float32, weak_type=False),
                           dimensions=dims, to_apply=wide)
    return convert(out, new_dtype=dtypes.bfloat16, weak_type=False)


def _trace_computation(fun: Callable[..., Any], scalars: list[ShapedArray]) -> Graph:
    return trace_scalar_computation("reduce", fun, scalars)


def _scalar_aval(x: Any) -> ShapedArray:
    dtype = x.dtype if isinstance(x, Tracer) or hasattr(x, "dtype") else np.asarray(x).dtype
    return ShapedArray((), dtype)


def _as_seq(dimensions: Any) -> Sequence[Any]:
    if isinstance(dimensions, (int, np.integer)):
        return (dimensions,)
    try:
        return tuple(dimensions)
    except TypeError:
        raise wrapper_error(ParamError, "reduce", f"dimensions must be a sequence of "
                            f"ints, got {dimensions!r}") from None


def _as_int(d: Any) -> int:
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise wrapper_error(ParamError, "reduce", f"dimensions must be ints, got {d!r}")
    return int(d)
