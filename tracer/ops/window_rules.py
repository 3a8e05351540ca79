"""JVP / transpose / batching rules of reduce_window, select_and_scatter and map.

reduce_window is differentiated per output by what its computation does with
that output's own (accumulator, element) pair, as `reduce` is (reduce_rules):

- `add` is linear: the tangent is the same window sum of the tangents, and the
  transpose pads the cotangent (interior = stride - 1) and sums it over windows
  with stride = base dilation (JAX's `_reduce_window_sum_transpose_rule`).
- `max` / `min` pick an element: the tangent is the picked element's tangent, from
  a *chooser pair*, a 2-operand reduce_window over (x, t) whose computation keeps
  (acc_x, acc_t) while compare(acc_x, x) holds (GE for max, LE for min: ties keep
  the first), starting from a value that never wins (-inf / +inf). The pair's
  transpose is select_and_scatter with the same comparison and add, and
  select_and_scatter's transpose gathers with the pair again, as XLA / JAX do
  with select_and_gather_add / select_and_scatter_add: max-pool gradients (of any
  order) go through select_and_scatter. An init value that is not concretely the
  identity may win a window: those positions take the init's tangent.
- any other computation: its JVP (each op's own rule, on scalars) as one variadic
  reduce_window over (primals, tangents). Forward mode only: such a reduce_window
  is not linear, and transposing it raises an error naming its ops.

select_and_scatter with an `add` scatter is linear in (source, init_value) and
constant in the operand. map's JVP is sum_i coef_i * t_i, the coefficients being
one more `map` of the computation's scalar JVP (complex inputs get one for the
real and one for the imaginary direction), so it transposes like `mul`.
Batching makes the batch axis a window dimension of size 1; a batched init value
(a scalar per example) runs the op once per example.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..core import Graph, Literal, ShapedArray, Var
from ..errors import TracerTypeError
from ..interpret import literal_value
from ..tracing import Tracer, bind, trace_flat
from . import elementwise as ew
from .ad import UndefinedPrimal, Zero, add_tangents, aval_of_value, instantiate
from .shape import broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, slice_p
from .reduce_rules import kind_error
from .shape_rules import add_computation, at_front, batch_size, sum_dims
from .window import dilated, map_p, reduce_window_p, select_and_scatter_p

Geo = dict[str, Any]
_KEEPERS = {"GE": "max", "GT": "max", "LE": "min", "LT": "min"}


# --------------------------------------------------------------------------- helpers
def _inexact(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


def _zero_scalar(dtype: np.dtype) -> np.ndarray:
    return np.zeros((), dtype)


def _never_wins(direction: str, dtype: np.dtype) -> np.ndarray:
    """The start of a chooser pair: the value compare(start, x) never keeps over x."""
    big = np.inf if dtypes.is_float(dtype) else np.iinfo(dtype).max
    return np.asarray(-big if _KEEPERS[direction] == "max" else big, dtype)


def _is_concretely(value: Any, target: np.ndarray) -> bool:
    return not isinstance(value, Tracer) and bool(np.asarray(value) == target)


def _producers(graph: Graph) -> dict[int, Any]:
    return {id(v): e for e in graph.eqns for v in e.outputs}


def _monoid(graph: Graph, k: int) -> str | None:
    """"add" / "max" / "min" when output k is that op of exactly (acc_k, x_k)."""
    n = len(graph.outputs)
    eqn = _producers(graph).get(id(graph.outputs[k]))
    if eqn is None or eqn.op.name not in ("add", "max", "min"):
        return None
    pair = {id(graph.inputs[k]), id(graph.inputs[n + k])}
    wired = len(eqn.inputs) == 2 and len(pair) == 2 and {id(a) for a in eqn.inputs} == pair
    return eqn.op.name if wired and not eqn.params.get("broadcast_dimensions") else None


def _comparison(graph: Graph) -> str | None:
    """The direction when `graph` is compare(a, b) of its two inputs, in order."""
    eqn = _producers(graph).get(id(graph.outputs[0])) if len(graph.outputs) == 1 else None
    if eqn is None or eqn.op.name != "compare" or eqn.params.get("total_order"):
        return None
    wired = [id(a) for a in eqn.inputs] == [id(v) for v in graph.inputs]
    return eqn.params["direction"] if wired and eqn.params["direction"] in _KEEPERS else None


def _chooser_direction(graph: Graph) -> str | None:
    """The direction when `graph` is a chooser pair (see the module doc)."""
    if len(graph.inputs) != 4 or len(graph.outputs) != 2:
        return None
    ax, at, x, t = (id(v) for v in graph.inputs)
    made = _producers(graph)
    picks = [made.get(id(o)) for o in graph.outputs]
    if any(p is None or p.op.name != "select" for p in picks):
        return None
    pred = picks[0].inputs[0]
    if picks[1].inputs[0] is not pred or [id(a) for a in picks[0].inputs[1:]] != [ax, x] \
            or [id(a) for a in picks[1].inputs[1:]] != [at, t]:
        return None
    test = made.get(id(pred))
    if test is None or test.op.name != "compare" or test.params.get("total_order"):
        return None
    direction = test.params["direction"]
    return direction if [id(a) for a in test.inputs] == [ax, x] and direction in _KEEPERS \
        else None


@functools.lru_cache(maxsize=None)
def chooser(direction: str, dtype: np.dtype) -> Graph:
    """(acc_x, acc_t, x, t) -> compare(acc_x, x) ? (acc_x, acc_t) : (x, t)."""
    s = ShapedArray((), dtype)

    def choose(ax: Any, at: Any, x: Any, t: Any) -> list[Any]:
        keep = ew.compare_p.bind(ax, x, direction=direction, total_order=False)
        return [ew.select(keep, ax, x), ew.select(keep, at, t)]
    return trace_flat(choose, [s] * 4, name=f"choose_{_KEEPERS[direction]}")[0]


@functools.lru_cache(maxsize=None)
def comparison(direction: str, dtype: np.dtype) -> Graph:
    s = ShapedArray((), dtype)
    return trace_flat(lambda a, b: [ew.compare_p.bind(a, b, direction=direction,
                                                      total_order=False)],
                      [s, s], name=direction.lower())[0]


def jvp_scalar_graph(graph: Graph, primals: Sequence[Any], tangents: Sequence[Any]
                     ) -> tuple[list[Any], list[Any]]:
    """Evaluate `graph` with tangents through each op's own JVP rule (tracer.transforms
    is a later room): what `jvp_eval` does, for the scalar sub-computations here."""
    env = {id(v): x for v, x in zip(graph.inputs, primals, strict=True)}
    tenv = {id(v): t for v, t in zip(graph.inputs, tangents, strict=True)}
    read = lambda a: literal_value(a) if isinstance(a, Literal) else env[id(a)]  # noqa: E731
    tread = lambda a: tenv[id(a)] if isinstance(a, Var) else Zero(a.aval)  # noqa: E731
    for eqn in graph.eqns:
        ins, tins = [read(a) for a in eqn.inputs], [tread(a) for a in eqn.inputs]
        op = eqn.op
        if not op.differentiable or all(isinstance(t, Zero) for t in tins):
            outs, touts = bind(op, ins, eqn.params, eqn.source), None
        elif op.jvp is None:
            raise TracerTypeError(f"jvp: op {op.name} of a sub-computation has no "
                                  f"differentiation rule")
        else:
            outs, touts = op.jvp(ins, tins, **eqn.params)
        outs = list(outs) if op.multiple_results else [outs]
        touts = [None] * len(outs) if touts is None else \
            (list(touts) if op.multiple_results else [touts])
        for v, x, t in zip(eqn.outputs, outs, touts, strict=True):
            env[id(v)] = x
            tenv[id(v)] = t if t is not None and _inexact(v.aval) else Zero(v.aval)
    return [read(a) for a in graph.outputs], [tread(a) for a in graph.outputs]


def _per_example(op: Any, args: Sequence[Any], dims: Sequence[int | None],
                 params: dict[str, Any]) -> tuple[list[Any], list[int]]:
    """The op once per batch element (a batched init value cannot be one scalar),
    results stacked on a new axis 0."""
    size = batch_size(args, dims)
    if size == 0:  # no example to run: empty results of the right avals
        avals = op.abstract_eval(*[_unbatched(x, d) for x, d in zip(args, dims, strict=True)],
                                 **params)
        empty = [broadcast_in_dim_p.bind(_zero_scalar(a.dtype), shape=(0, *a.shape),
                                         broadcast_dimensions=()) for a in avals]
        return (empty, [0] * len(empty)) if op.multiple_results else (empty[0], 0)
    fronts = [None if d is None else at_front(x, d, size) for x, d in zip(args, dims,
                                                                       strict=True)]
    rows = []
    for b in range(size):
        example = [x if f is None else _row(f, b) for x, f in zip(args, fronts, strict=True)]
        outs = op.bind(*example, **params)
        rows.append(list(outs) if op.multiple_results else [outs])
    stacked = []
    for k in range(len(rows[0])):
        shape = aval_of_value(rows[0][k]).shape
        parts = [broadcast_in_dim_p.bind(r[k], shape=(1, *shape), broadcast_dimensions=tuple(
            range(1, len(shape) + 1))) for r in rows]
        stacked.append(concatenate_p.bind(*parts, dimension=0))
    return (stacked, [0] * len(stacked)) if op.multiple_results else (stacked[0], 0)


def _unbatched(x: Any, d: int | None) -> ShapedArray:
    aval = aval_of_value(x)
    return aval if d is None else ShapedArray(aval.shape[:d] + aval.shape[d + 1:], aval.dtype)


def _row(x: Any, b: int) -> Any:
    shape = aval_of_value(x).shape
    row = slice_p.bind(x, start_indices=(b,) + (0,) * (len(shape) - 1),
                       limit_indices=(b + 1, *shape[1:]), strides=(1,) * len(shape))
    return reshape_p.bind(row, new_sizes=shape[1:])


def _with_batch_window(geo: Geo) -> Geo:
    """The geometry with a leading window dimension of size 1 for the batch axis."""
    return {name: ((0, 0),) + value if name == "padding" else (1,) + value
            for name, value in geo.items()}


# --------------------------------------------------------------------------- reduce_window
def _reduce_window_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, to_apply: Graph,
                       **geo: Any) -> tuple[list[Any], list[Any]]:
    n = len(primals) // 2
    need = [k for k in range(n) if not (isinstance(tangents[k], Zero) and
                                        isinstance(tangents[n + k], Zero))]
    kinds = {k: _monoid(to_apply, k) for k in need}
    if any(kind is None for kind in kinds.values()):
        return _general_jvp(primals, tangents, to_apply, geo)
    outs = reduce_window_p.bind(*primals, to_apply=to_apply, **geo)
    touts: list[Any] = [Zero(aval_of_value(o)) for o in outs]
    for k in need:
        x, init, tx, ti = primals[k], primals[n + k], tangents[k], tangents[n + k]
        dtype = aval_of_value(x).dtype
        if kinds[k] == "add":
            t_init = _zero_scalar(dtype) if isinstance(ti, Zero) else ti
            touts[k] = reduce_window_p.bind(instantiate(tx), t_init,
                                            to_apply=add_computation(dtype), **geo)[0]
        else:
            touts[k] = _chooser_jvp(x, init, outs[k], tx, ti, kinds[k], geo)
    return outs, touts


def _chooser_jvp(x: Any, init: Any, out: Any, tx: Any, ti: Any, kind: str, geo: Geo) -> Any:
    """Tangent of a max / min window: the picked element's, or the init's where it wins."""
    dtype = aval_of_value(x).dtype
    direction = "GE" if kind == "max" else "LE"
    start = _never_wins(direction, dtype)
    t: Any = Zero(aval_of_value(out))
    if not isinstance(tx, Zero):
        t = reduce_window_p.bind(x, tx, start, _zero_scalar(dtype),
                                 to_apply=chooser(direction, dtype), **geo)[1]
    if _is_concretely(init, start):
        return t
    shape = aval_of_value(out).shape
    t_init = _zero_scalar(dtype) if isinstance(ti, Zero) else ti
    spread = broadcast_in_dim_p.bind(t_init, shape=shape, broadcast_dimensions=())
    return ew.select(ew.eq(out, init), spread, instantiate(t))


def _general_jvp(primals: Sequence[Any], tangents: Sequence[Any], graph: Graph, geo: Geo
                 ) -> tuple[list[Any], list[Any]]:
    """One reduce_window over (x..., t...) of the computation's JVP (forward mode)."""
    n = len(primals) // 2
    slots = tuple(k for k in range(n) if _inexact(aval_of_value(primals[k])))
    pair = _jvp_computation(graph, slots)
    dts = [aval_of_value(primals[k]).dtype for k in slots]
    t_xs = [instantiate(tangents[k]) for k in slots]
    t_inits = [_zero_scalar(d) if isinstance(tangents[n + k], Zero) else tangents[n + k]
               for k, d in zip(slots, dts, strict=True)]
    # The primal outputs come from the primal op alone: linearize must see that they do
    # not depend on tangents.
    outs = reduce_window_p.bind(*primals, to_apply=graph, **geo)
    res = reduce_window_p.bind(*primals[:n], *t_xs, *primals[n:], *t_inits, to_apply=pair,
                               **geo)
    touts: list[Any] = [Zero(aval_of_value(o)) for o in outs]
    for j, k in enumerate(slots):
        touts[k] = res[n + j]
    return outs, touts


@functools.lru_cache(maxsize=256)
def _jvp_computation(graph: Graph, slots: tuple[int, ...]) -> Graph:
    """(acc..., acc_t..., x..., t...) -> (out..., out_t...) for the operands in `slots`."""
    n, m = len(graph.outputs), len(slots)
    avals = list(graph.in_avals[:n])
    t_avals = [avals[k] for k in slots]

    def fun(*args: Any) -> list[Any]:
        acc, acc_t, x, t = args[:n], args[n:n + m], args[n + m:2 * n + m], args[2 * n + m:]
        tangents = [Zero(a) for a in avals] * 2
        for j, k in enumerate(slots):
            tangents[k], tangents[n + k] = acc_t[j], t[j]
        outs, touts = jvp_scalar_graph(graph, [*acc, *x], tangents)
        return outs + [_zero_scalar(avals[k].dtype) if isinstance(touts[k], Zero)
                       else touts[k] for k in slots]
    return trace_flat(fun, avals + t_avals + avals + t_avals, name=f"jvp_{graph.name}")[0]


def _reduce_window_t(cts: Sequence[Any], *args: Any, to_apply: Graph, **geo: Any
                     ) -> list[Any]:
    n = len(args) // 2
    res: list[Any] = [None] * len(args)
    direction = _chooser_direction(to_apply)
    if direction is not None and not any(isinstance(args[i], UndefinedPrimal) for i in (0, 2)):
        if isinstance(args[3], UndefinedPrimal):
            raise TracerTypeError("reduce_window: cannot transpose a chooser pair with "
                                  "respect to the init value of its tangent")
        res[1] = _chooser_transpose(cts[1], args[0], args[1].aval, direction, geo)
        return res
    for k in range(n):
        undefined = [i for i in (k, n + k) if isinstance(args[i], UndefinedPrimal)]
        if undefined and isinstance(cts[k], Zero):
            for i in undefined:
                res[i] = Zero(args[i].aval)
        elif undefined:
            if _monoid(to_apply, k) != "add":
                raise kind_error("reduce_window: cannot transpose a window reduction",
                                 to_apply, "sums (add) and max/min gradients are linear")
            res[k], res[n + k] = _sum_transpose(cts[k], args[k], args[n + k], geo)
    return res


def _chooser_transpose(ct: Any, x: Any, t_aval: ShapedArray, direction: str, geo: Geo) -> Any:
    if isinstance(ct, Zero):
        return Zero(t_aval)
    dtype = t_aval.dtype
    return select_and_scatter_p.bind(x, ct, _zero_scalar(dtype),
                                     select=comparison(direction, dtype),
                                     scatter=add_computation(dtype), **geo)


def _sum_transpose(ct: Any, x: Any, init: Any, geo: Geo) -> tuple[Any, Any]:
    """Cotangents of a window sum's operand and init (the init is counted once per
    window plus once per padding or hole element in it)."""
    x_aval = aval_of_value(x)
    ct_x = _sum_transpose_operand(ct, x_aval, geo) if isinstance(x, UndefinedPrimal) else None
    ct_init = None
    if isinstance(init, UndefinedPrimal):
        dtype = x_aval.dtype
        ones = broadcast_in_dim_p.bind(np.ones((), dtype), shape=x_aval.shape,
                                       broadcast_dimensions=())
        real = reduce_window_p.bind(ones, _zero_scalar(dtype),
                                    to_apply=add_computation(dtype), **geo)[0]
        uses = ew.sub(np.asarray(1 + math.prod(geo["window_dimensions"]), dtype), real)
        ct_init = sum_dims(ew.mul(ct, uses), range(x_aval.ndim))
    return ct_x, ct_init


def _sum_transpose_operand(ct: Any, x_aval: ShapedArray, geo: Geo) -> Any:
    dtype, shape = x_aval.dtype, x_aval.shape
    out_shape = aval_of_value(ct).shape
    if 0 in shape or 0 in out_shape:
        return broadcast_in_dim_p.bind(_zero_scalar(dtype), shape=shape, broadcast_dimensions=())
    config = []
    for d, n in enumerate(shape):
        span = dilated(geo["window_dimensions"][d], geo["window_dilation"][d])
        before = span - 1 - geo["padding"][d][0]
        after = (dilated(n, geo["base_dilation"][d]) + span - 1 - before
                 - dilated(out_shape[d], geo["window_strides"][d]))
        config.append((before, after, geo["window_strides"][d] - 1))
    padded = pad_p.bind(ct, _zero_scalar(dtype), padding_config=tuple(config))
    ones = (1,) * len(shape)
    return reduce_window_p.bind(
        padded, _zero_scalar(dtype), to_apply=add_computation(dtype),
        window_dimensions=geo["window_dimensions"], window_strides=geo["base_dilation"],
        padding=((0, 0),) * len(shape), base_dilation=ones,
        window_dilation=geo["window_dilation"])[0]


def _reduce_window_b(args: Sequence[Any], dims: Sequence[int | None], *, to_apply: Graph,
                     **geo: Any) -> tuple[list[Any], list[int]]:
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        return _per_example(reduce_window_p, args, dims, {"to_apply": to_apply, **geo})
    size = batch_size(args, dims)
    xs = [at_front(x, d, size) for x, d in zip(args[:n], dims[:n], strict=True)]
    outs = reduce_window_p.bind(*xs, *args[n:], to_apply=to_apply, **_with_batch_window(geo))
    return outs, [0] * n


reduce_window_p.jvp = _reduce_window_jvp
reduce_window_p.transpose = _reduce_window_t
reduce_window_p.batch = _reduce_window_b


# --------------------------------------------------------------------------- select_and_scatter
def _select_and_scatter_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, select: Graph,
                            scatter: Graph, **geo: Any) -> tuple[Any, Any]:
    operand, source, init = primals
    out = select_and_scatter_p.bind(operand, source, init, select=select, scatter=scatter,
                                    **geo)
    _, t_source, t_init = tangents
    if isinstance(t_source, Zero) and isinstance(t_init, Zero):
        return out, Zero(aval_of_value(out))  # the selection is piecewise constant
    if _monoid(scatter, 0) != "add":
        raise kind_error("select_and_scatter: cannot differentiate with respect to source "
                         "or init_value a scatter", scatter, "add scatters")
    dtype = aval_of_value(out).dtype
    t_init = _zero_scalar(dtype) if isinstance(t_init, Zero) else t_init
    return out, select_and_scatter_p.bind(operand, instantiate(t_source), t_init,
                                          select=select, scatter=scatter, **geo)


def _select_and_scatter_t(ct: Any, operand: Any, source: Any, init: Any, *, select: Graph,
                          scatter: Graph, **geo: Any) -> list[Any]:
    """source: gather ct at each window's pick (a chooser pair); init: sum of ct."""
    if isinstance(operand, UndefinedPrimal) or _monoid(scatter, 0) != "add":
        raise kind_error("select_and_scatter: cannot transpose (the operand must be known) "
                         "a scatter", scatter, "add scatters")
    ct_source = ct_init = None
    if isinstance(source, UndefinedPrimal):
        direction = _comparison(select)
        if direction is None:
            raise kind_error("select_and_scatter: cannot transpose a selection", select,
                             "single comparisons (ge, gt, le, lt) of (current, candidate)")
        dtype = source.aval.dtype
        ct_source = reduce_window_p.bind(operand, ct, _never_wins(direction, dtype),
                                         _zero_scalar(dtype),
                                         to_apply=chooser(direction, dtype), **geo)[1]
    if isinstance(init, UndefinedPrimal):
        ct_init = sum_dims(ct, range(aval_of_value(ct).ndim))
    return [None, ct_source, ct_init]


def _select_and_scatter_b(args: Sequence[Any], dims: Sequence[int | None], *, select: Graph,
                          scatter: Graph, **geo: Any) -> tuple[Any, int]:
    params = {"select": select, "scatter": scatter}
    if dims[2] is not None:
        return _per_example(select_and_scatter_p, args, dims, {**params, **geo})
    size = batch_size(args, dims)
    operand, source = (at_front(x, d, size) for x, d in zip(args[:2], dims[:2], strict=True))
    return select_and_scatter_p.bind(operand, source, args[2], **params,
                                     **_with_batch_window(geo)), 0


select_and_scatter_p.jvp = _select_and_scatter_jvp
select_and_scatter_p.transpose = _select_and_scatter_t
select_and_scatter_p.batch = _select_and_scatter_b


# --------------------------------------------------------------------------- map
Term = tuple[int, str]  # (operand, "re" | "im"): a direction of the tangent of an operand


def _map_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, to_apply: Graph,
             dimensions: tuple[int, ...]) -> tuple[list[Any], list[Any]]:
    outs = map_p.bind(*primals, to_apply=to_apply, dimensions=dimensions)
    touts: list[Any] = [Zero(aval_of_value(o)) for o in outs]
    diff = tuple(o for o, a in enumerate(to_apply.out_avals) if _inexact(a))
    terms = tuple((i, part) for i, t in enumerate(tangents) if not isinstance(t, Zero)
                  for part in (("re", "im") if to_apply.in_avals[i].dtype.kind == "c"
                               else ("re",)))
    if not terms or not diff:
        return outs, touts
    coefs = map_p.bind(*primals, to_apply=_coefficients(to_apply, terms, diff),
                       dimensions=dimensions)
    for j, (i, part) in enumerate(terms):
        t = tangents[i]
        if to_apply.in_avals[i].dtype.kind == "c":
            t = ew.real(t) if part == "re" else ew.imag(t)
        for m, o in enumerate(diff):
            coef = coefs[j * len(diff) + m]
            dtype = aval_of_value(coef).dtype
            part_t = t if aval_of_value(t).dtype == dtype else ew.convert_element_type(t, dtype)
            touts[o] = add_tangents(touts[o], ew.mul(coef, part_t))
    return outs, touts


@functools.lru_cache(maxsize=256)
def _coefficients(graph: Graph, terms: tuple[Term, ...], diff: tuple[int, ...]) -> Graph:
    """Scalars -> d out_o / d (direction of operand i), for each term, each output o."""
    avals = list(graph.in_avals)

    def fun(*xs: Any) -> list[Any]:
        coefs = []
        for i, part in terms:
            tangents: list[Any] = [Zero(a) for a in avals]
            tangents[i] = np.asarray(1 if part == "re" else 1j, avals[i].dtype)
            _, touts = jvp_scalar_graph(graph, xs, tangents)
            coefs += [_zero_scalar(graph.out_avals[o].dtype) if isinstance(touts[o], Zero)
                      else touts[o] for o in diff]
        return coefs
    return trace_flat(fun, avals, name=f"d_{graph.name}")[0]


def _map_b(args: Sequence[Any], dims: Sequence[int | None], *, to_apply: Graph,
           dimensions: tuple[int, ...]) -> tuple[list[Any], list[int]]:
    size = batch_size(args, dims)
    xs = [at_front(x, d, size) for x, d in zip(args, dims, strict=True)]
    outs = map_p.bind(*xs, to_apply=to_apply, dimensions=tuple(range(len(dimensions) + 1)))
    return outs, [0] * len(outs)


map_p.jvp = _map_jvp
map_p.batch = _map_b
