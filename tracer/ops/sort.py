"""Sort (XLA's Sort): N same-shaped arrays sorted together along one dimension.

The comparator is a scalar computation of 2·N parameters (lhs_0, rhs_0, lhs_1,
rhs_1, ...) returning a bool "lhs < rhs", traced once into a `Graph` and stored as
`to_apply` (the HLO spelling: `sort(...), dimension=0, is_stable=false,
to_apply=%region`). Without a comparator, `sort` builds the default one: ascending
by the first `num_keys` operands, lexicographically, under the float total order
(-NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN), as `jax.lax.sort` does. Backends
recognise that default comparator by its structure (`default_num_keys`) and run a
key sort instead of calling the comparator.

The reference is always stable (a stable order is a valid unstable one): the
default comparator sorts total-order integer keys with `np.lexsort` / a stable
argsort; any other comparator runs a bottom-up merge sort (`merge_sort_order`)
that calls it through `run_graph`, the same algorithm the cpu backend emits, so
the two agree even for comparators that are not strict weak orders.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Graph, Literal, ShapedArray
from ..dtypes import is_float
from ..errors import DTypeError, ParamError, ShapeError, TracerIndexError, TracerTypeError
from ..interpret import eval_graph, run_graph
from ..tracing import Tracer, trace_flat
from . import elementwise as ew
from .common import check_arity, check_avals, operand_aval, static_int, wrapper_error
from .registry import define_op

__all__ = ["sort"]

# Op families whose impls are element-wise NumPy code: a comparator built only from
# them can compare whole rows of element pairs in one `run_graph` call.
_ELEMENTWISE_FAMILIES = frozenset({"unary", "binary", "compare", "ternary"})


# ---------------------------------------------------------------- comparators

def comparator_avals(dtypes: Sequence[np.dtype]) -> list[ShapedArray]:
    """The comparator's parameters: (lhs_k, rhs_k) scalars per operand k, interleaved."""
    return [ShapedArray((), d) for d in dtypes for _ in range(2)]


def _key_less(a: Any, b: Any) -> Any:
    """a < b under the total order; complex: by real part, then imaginary part."""
    if np.dtype(a.dtype).kind == "c":
        re_a, re_b = ew.real(a), ew.real(b)
        return ew.bitwise_or(_key_less(re_a, re_b), ew.bitwise_and(
            _key_equal(re_a, re_b), _key_less(ew.imag(a), ew.imag(b))))
    return ew.lt(a, b, total_order=True)


def _key_equal(a: Any, b: Any) -> Any:
    return ew.eq(a, b, total_order=True)  # complex: both parts, under the total order


@functools.lru_cache(maxsize=None)
def default_comparator(dtypes: tuple[np.dtype, ...], num_keys: int) -> Graph:
    """Ascending, lexicographic on the first `num_keys` operands, total order."""
    def less(*params: Any) -> list[Any]:
        lhs, rhs = params[2 * num_keys - 2], params[2 * num_keys - 1]
        result = _key_less(lhs, rhs)
        for k in reversed(range(num_keys - 1)):
            lhs, rhs = params[2 * k], params[2 * k + 1]
            result = ew.bitwise_or(_key_less(lhs, rhs),
                                   ew.bitwise_and(_key_equal(lhs, rhs), result))
        return [result]
    return trace_flat(less, comparator_avals(dtypes), name="sort_lt_total_order")[0]


def _structure(graph: Graph) -> tuple:
    """A hashable picture of `graph`: ops, params and wiring (vars by position)."""
    where: dict[int, tuple] = {id(v): ("in", k) for k, v in enumerate(graph.inputs)}

    def atom(a: Any) -> tuple:
        if isinstance(a, Literal):
            return ("literal", str(a.aval), a.value.tobytes())
        return where.get(id(a), ("unknown", id(a)))
    rows = []
    for j, eqn in enumerate(graph.eqns):
        params = tuple(sorted((k, id(v) if isinstance(v, Graph) else v)
                              for k, v in eqn.params.items()))
        rows.append((eqn.op.name, tuple(map(atom, eqn.inputs)), params))
        where.update({id(v): ("eqn", j, m) for m, v in enumerate(eqn.outputs)})
    return tuple(graph.in_avals), tuple(rows), tuple(map(atom, graph.outputs))


@functools.lru_cache(maxsize=None)
def _default_structure(dtypes: tuple[np.dtype, ...], num_keys: int) -> tuple:
    return _structure(default_comparator(dtypes, num_keys))


def default_num_keys(graph: Graph) -> int:
    """k when `graph` is the default comparator on its operands' first k, else 0."""
    dtypes = tuple(a.dtype for a in graph.in_avals[::2])
    if len(graph.inputs) != 2 * len(dtypes):
        return 0
    picture = _structure(graph)
    return next((k for k in range(1, len(dtypes) + 1)
                 if _default_structure(dtypes, k) == picture), 0)


def extend_comparator(graph: Graph, dtype: np.dtype) -> Graph:
    """`graph` with one more operand (of `dtype`) that it ignores (a permutation rider)."""
    dtypes = tuple(a.dtype for a in graph.in_avals[::2])
    keys = default_num_keys(graph)
    if keys:
        return default_comparator(dtypes + (np.dtype(dtype),), keys)
    return trace_flat(lambda *params: eval_graph(graph, params[:-2]),
                      comparator_avals(dtypes + (np.dtype(dtype),)), name=graph.name)[0]


# ---------------------------------------------------------------- shape rule and reference

def _sort_shape(*operands: ShapedArray, dimension: int, is_stable: bool,
                to_apply: Graph) -> tuple[ShapedArray, ...]:
    if not operands:
        raise ParamError("needs at least one operand")
    if any(a.shape != operands[0].shape for a in operands):
        raise ShapeError("all operands must have the same shape (dtypes may differ), got "
                         + ", ".join(map(str, operands)))
    if not 0 <= dimension < operands[0].ndim:
        raise TracerIndexError(f"dimension {dimension} out of range for rank "
                               f"{operands[0].ndim} (sort needs rank >= 1)")
    check_avals("comparator parameters (lhs_0, rhs_0, lhs_1, rhs_1, ...)",
                comparator_avals([a.dtype for a in operands]), to_apply.in_avals)
    outs = to_apply.out_avals
    if len(outs) != 1 or outs[0].shape != () or outs[0].dtype != np.bool_:
        raise DTypeError(f"the comparator must return one pred[] scalar, got "
                         f"({', '.join(map(str, outs))})")
    return tuple(ShapedArray(a.shape, a.dtype) for a in operands)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered as the float total order orders `x` (ints and bools: `x`)."""
    if not is_float(x.dtype):
        return x
    bits = np.ascontiguousarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _key_columns(x: np.ndarray) -> list[np.ndarray]:
    if x.dtype.kind == "c":
        return [total_order_key(x.real), total_order_key(x.imag)]
    return [total_order_key(x)]


def _default_order(keys: Sequence[np.ndarray], axis: int) -> np.ndarray:
    columns = [c for x in keys for c in _key_columns(x)]
    if len(columns) == 1:
        return np.argsort(columns[0], axis=axis, kind="stable")
    return np.lexsort(columns[::-1], axis=axis)  # lexsort: the last key is the primary one


def _sort_impl(*operands: np.ndarray, dimension: int, is_stable: bool,
               to_apply: Graph) -> list[np.ndarray]:
    keys = default_num_keys(to_apply)
    if keys:
        order = _default_order(operands[:keys], dimension)
    else:
        rows = [np.moveaxis(x, dimension, -1) for x in operands]
        flat = [r.reshape(-1, r.shape[-1]) for r in rows]
        order = np.moveaxis(merge_sort_order(flat, to_apply).reshape(rows[0].shape), -1,
                            dimension)
    return [np.take_along_axis(x, order, axis=dimension) for x in operands]


def merge_sort_order(rows: Sequence[np.ndarray], comparator: Graph) -> np.ndarray:
    """The order of a stable bottom-up merge sort of each row of the (count, n) arrays
    `rows` (the spec of a sort with a general comparator): runs of width 1, 2, 4, ...
    are merged left to right, and the right run's head is taken only when
    comparator(right, left) is true. Rows advance in lockstep, one merge step for all."""
    count, n = rows[0].shape
    order = np.tile(np.arange(n, dtype=np.int64), (count, 1))
    less = _row_comparator(rows, comparator)
    width = 1
    while width < n:
        merged = np.empty_like(order)
        for lo in range(0, n, 2 * width):
            _merge(order, merged, (lo, min(lo + width, n), min(lo + 2 * width, n)), less)
        order, width = merged, 2 * width
    return order


def _merge(order: np.ndarray, merged: np.ndarray, bounds: tuple[int, int, int],
           less: Callable[..., np.ndarray]) -> None:
    lo, mid, hi = bounds
    rows = np.arange(order.shape[0])
    i, j = np.full(rows.shape, lo), np.full(rows.shape, mid)
    for k in range(lo, hi):
        left, right = order[rows, np.minimum(i, mid - 1)], order[rows, np.minimum(j, hi - 1)]
        both = (i < mid) & (j < hi)
        take = (i >= mid) | (both & less(right, left, both))
        merged[:, k] = np.where(take, right, left)
        j, i = j + take, i + ~take


def _row_comparator(rows: Sequence[np.ndarray], graph: Graph) -> Callable[..., np.ndarray]:
    """less(lhs, rhs, active) -> bool per row: comparator(row[lhs], row[rhs]) where active."""
    index = np.arange(rows[0].shape[0])
    vectorized = all(e.op.family in _ELEMENTWISE_FAMILIES for e in graph.eqns)

    def less(lhs: np.ndarray, rhs: np.ndarray, active: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            if vectorized:  # a scalar program on arrays is the same program per element
                params = [x[index, p] for x in rows for p in (lhs, rhs)]
                return np.broadcast_to(np.asarray(run_graph(graph, params)[0], bool), index.shape)
            return np.array([bool(active[q]) and bool(run_graph(
                graph, [np.asarray(x[q, p[q]]) for x in rows for p in (lhs, rhs)])[0])
                for q in index], bool)
    return less


sort_p = define_op(
    "sort", shape=_sort_shape, impl=_sort_impl, hlo_name="sort", family="sort",
    multiple_results=True,
    doc="Sort(operands..., comparator, dimension, is_stable): N same-shaped arrays (dtypes "
        "may differ) sorted together along `dimension`, every other position independently. "
        "comparator(lhs_0, rhs_0, lhs_1, rhs_1, ...) -> pred is 'lhs < rhs'; after sorting, "
        "for i < j either comparator(v[i], v[j]) or neither order holds. is_stable keeps "
        "equal elements in their order (the reference is always stable). Example: "
        "Sort([[3, 1], [42, 50], [-3.0, 1.1]], lt on operand 0) -> ([1, 3], [50, 42], "
        "[1.1, -3.0]).")


def sort(operands: Any, comparator: Callable[..., Any] | Graph | None = None,
         dimension: int = -1, is_stable: bool = False, num_keys: int = 1) -> Any:
    """Sort one array, or several same-shaped arrays together, along `dimension`.

    Seed rule: `comparator(lhs_0, rhs_0, lhs_1, rhs_1, ...)` of 2·N scalars returns
    whether lhs sorts before rhs; the default is ascending by the first `num_keys`
    operands (lexicographically) under the float total order, NaNs last. One array
    gives one array, a sequence a tuple.

    >>> sort([np.array([3, 1]), np.array([42, 50])])  # -> ([1, 3], [50, 42])
    """
    single = not isinstance(operands, (tuple, list))
    arrays = [operands] if single else list(operands)
    if not arrays:
        raise wrapper_error(ParamError, "sort", "needs at least one operand")
    arrays = [x if isinstance(x, Tracer) else np.asarray(x) for x in arrays]
    avals = [operand_aval(x) for x in arrays]
    dim = static_int("sort", "dimension", dimension)
    dim = dim + avals[0].ndim if dim < 0 else dim
    graph = _comparator(comparator, tuple(a.dtype for a in avals),
                        static_int("sort", "num_keys", num_keys))
    outs = sort_p.bind(*arrays, dimension=dim, is_stable=bool(is_stable), to_apply=graph)
    return outs[0] if single else tuple(outs)


def _comparator(comparator: Callable[..., Any] | Graph | None, dtypes: tuple[np.dtype, ...],
                num_keys: int) -> Graph:
    if comparator is None:
        if not 1 <= num_keys <= len(dtypes):
            raise wrapper_error(ParamError, "sort", f"num_keys must be in [1, {len(dtypes)}] "
                                f"(the number of operands), got {num_keys}")
        return default_comparator(dtypes, num_keys)
    if num_keys != 1:
        raise wrapper_error(ParamError, "sort", "num_keys applies to the default comparator "
                            "only; a comparator decides the order by itself")
    if isinstance(comparator, Graph):
        return comparator
    return _trace_comparator(comparator, dtypes)


def _trace_comparator(fun: Callable[..., Any], dtypes: tuple[np.dtype, ...]) -> Graph:
    check_arity("sort", "the comparator", fun, 2 * len(dtypes))
    def flat(*params: Any) -> list[Any]:
        out = fun(*params)
        if isinstance(out, (tuple, list)):
            if len(out) != 1:
                raise wrapper_error(TracerTypeError, "sort", f"the comparator must return "
                                    f"one bool scalar, got {len(out)} values")
            out = out[0]
        return [out]

    graph, captured = trace_flat(flat, comparator_avals(dtypes), name="sort_comparator")
    if captured:
        raise wrapper_error(
            TracerTypeError, "sort", f"the comparator must be closed: it uses traced values "
            f"of an enclosing function ({', '.join(str(t.aval) for t in captured)})")
    return graph
