"""JVP, transpose and batching rules of `reduce` (`reduce.py`); the shape ops' and
dot_general's are in `shape_rules.py`, whose helpers these build on.

`reduce` is differentiated per output by what its computation does with that
output's (accumulator, element) pair: `add` (linear, transposed by a broadcast),
`mul` (a product tree carrying product-rule tangents: exact with zeros), and
`max` / `min` / `select` (argmax-style): the mean tangent of the candidates equal
to the result (ties split evenly, as JAX; a selection is assumed to pick by
value). Any other computation is a `TracerTypeError` naming its ops
(`output_kinds`, `kind_error`: reduce_window's and scatter's rules use them too).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core import Eqn, Graph
from ..errors import TracerTypeError
from . import elementwise as ew
from .ad import UndefinedPrimal, Zero, add_tangents, aval_of_value, instantiate
from .reduce import reduce_p
from .shape import broadcast_in_dim_p, concatenate_p, pad_p, reshape_p, slice_p, transpose_p
from .shape_rules import Dims, add_computation, at_front, batch_size, sum_dims


# --------------------------------------------------------------------------- reduce: kinds
_KINDS = {"add": "add", "mul": "mul", "max": "select", "min": "select"}


def output_kinds(graph: Graph) -> list[str | None]:
    """Per output k: "add" / "mul" / "select" when it is that function of exactly its
    own (accumulator k, element k) pair, else None."""
    n = len(graph.outputs)
    made_by = {id(v): e for e in graph.eqns for v in e.outputs}
    kinds: list[str | None] = []
    for k, out in enumerate(graph.outputs):
        eqn = made_by.get(id(out))
        pair = {id(graph.inputs[k]), id(graph.inputs[n + k])}
        kinds.append(None if eqn is None else _kind(eqn, pair))
    return kinds


def _kind(eqn: Eqn, pair: set[int]) -> str | None:
    ins = [id(a) for a in eqn.inputs]
    if eqn.op.name == "select":
        return "select" if set(ins[1:]) == pair and len(pair) == 2 else None
    plain = eqn.params.get("broadcast_dimensions") is None
    return _KINDS.get(eqn.op.name) if set(ins) == pair and len(ins) == 2 and plain else None


def kind_error(what: str, graph: Graph, supported: str) -> TracerTypeError:
    ops = sorted({e.op.name for e in graph.eqns}) or ["(returns an argument)"]
    return TracerTypeError(f"{what} of a computation made of [{', '.join(ops)}]: only "
                           f"{supported} are supported")


# --------------------------------------------------------------------------- reduce: jvp
def _kept(shape: Sequence[int], dims: Dims) -> Dims:
    return tuple(d for d in range(len(shape)) if d not in dims)


def _sum_jvp(x: Any, init: Any, out: Any, tx: Any, ti: Any, dims: Dims) -> Any:
    dtype = aval_of_value(out).dtype
    t_init = np.zeros((), dtype) if isinstance(ti, Zero) else ti
    return reduce_p.bind(instantiate(tx), t_init, dimensions=dims,
                         to_apply=add_computation(dtype))[0]


def _reduced_first(x: Any, dims: Dims) -> Any:
    """`x` with its reduced dims moved to the front and flattened into one."""
    shape = aval_of_value(x).shape
    kept = _kept(shape, dims)
    x = transpose_p.bind(x, permutation=dims + kept)
    size = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    return reshape_p.bind(x, new_sizes=(size, *(shape[d] for d in kept)))


def _halves(x: Any, fill: Any) -> tuple[Any, Any]:
    shape = aval_of_value(x).shape
    half, rest = (shape[0] + 1) // 2, (0,) * (len(shape) - 1)
    first = slice_p.bind(x, start_indices=(0, *rest), limit_indices=(half, *shape[1:]),
                         strides=(1,) * len(shape))
    second = slice_p.bind(x, start_indices=(half, *rest), limit_indices=shape,
                          strides=(1,) * len(shape))
    if shape[0] % 2:  # odd: pad the second half with the product's identity
        config = ((0, 1, 0),) + ((0, 0, 0),) * (len(shape) - 1)
        second = pad_p.bind(second, np.asarray(fill, aval_of_value(x).dtype),
                            padding_config=config)
    return first, second


def _product_tree(p: Any, t: Any | None) -> tuple[Any, Any | None]:
    """Product over axis 0 and the product-rule tangent of `t`, by halving (exact
    with zeros, unlike dividing the product by each element)."""
    while aval_of_value(p).shape[0] > 1:
        p1, p2 = _halves(p, 1)
        if t is not None:
            t1, t2 = _halves(t, 0)
            t = ew.add(ew.mul(t1, p2), ew.mul(p1, t2))
        p = ew.mul(p1, p2)
    rest = aval_of_value(p).shape[1:]
    return (reshape_p.bind(p, new_sizes=rest),
            None if t is None else reshape_p.bind(t, new_sizes=rest))


def _prod_jvp(x: Any, init: Any, out: Any, tx: Any, ti: Any, dims: Dims) -> Any:
    total: Any = Zero(aval_of_value(out))
    if aval_of_value(x).size == 0:  # the product is just init
        return total if isinstance(ti, Zero) else broadcast_in_dim_p.bind(
            ti, shape=total.aval.shape, broadcast_dimensions=())
    prod, t_prod = _product_tree(_reduced_first(x, dims), None if isinstance(tx, Zero)
                                 else _reduced_first(tx, dims))
    if t_prod is not None:
        total = ew.mul(t_prod, init)
    if not isinstance(ti, Zero):
        total = add_tangents(total, ew.mul(ti, prod))
    return total


def _select_jvp(x: Any, init: Any, out: Any, tx: Any, ti: Any, dims: Dims) -> Any:
    """Tangent of the chosen value: the mean tangent of the candidates equal to it."""
    aval = aval_of_value(x)
    spread = broadcast_in_dim_p.bind(out, shape=aval.shape, broadcast_dimensions=_kept(
        aval.shape, dims))
    hit = ew.convert_element_type(ew.eq(x, spread), aval.dtype)
    init_hit = ew.convert_element_type(ew.eq(init, out), aval.dtype)
    scale = ew.div(1, ew.max(ew.add(sum_dims(hit, dims), init_hit), 1))
    total: Any = Zero(aval_of_value(out))
    if not isinstance(tx, Zero):
        weights = ew.mul(hit, broadcast_in_dim_p.bind(
            scale, shape=aval.shape, broadcast_dimensions=_kept(aval.shape, dims)))
        total = sum_dims(ew.mul(tx, weights), dims)
    if not isinstance(ti, Zero):
        total = add_tangents(total, ew.mul(ti, ew.mul(init_hit, scale)))
    return total


_REDUCE_JVPS: dict[str | None, Callable[..., Any]] = {
    "add": _sum_jvp, "mul": _prod_jvp, "select": _select_jvp}


def _reduce_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, dimensions: Dims,
                to_apply: Graph) -> tuple[list[Any], list[Any]]:
    outs = reduce_p.bind(*primals, dimensions=dimensions, to_apply=to_apply)
    n, kinds = len(outs), output_kinds(to_apply)
    t_outs: list[Any] = []
    for k, out in enumerate(outs):
        tx, ti = tangents[k], tangents[n + k]
        if isinstance(tx, Zero) and isinstance(ti, Zero):
            t_outs.append(Zero(aval_of_value(out)))
            continue
        rule = _REDUCE_JVPS.get(kinds[k])
        if rule is None:
            raise kind_error(f"reduce: cannot differentiate output {k} "
                             f"({aval_of_value(out)}) of a reduction", to_apply,
                             "add, mul, max, min or select of (accumulator, element)")
        t_outs.append(rule(primals[k], primals[n + k], out, tx, ti, dimensions))
    return outs, t_outs


# ------------------------------------------------------------------------ reduce: transpose, batch
def _reduce_t(cts: Sequence[Any], *args: Any, dimensions: Dims,
              to_apply: Graph) -> list[Any]:
    """Transpose of the sums (the linear reductions the JVP emits): broadcast ct back."""
    n, kinds = len(args) // 2, output_kinds(to_apply)
    res: list[Any] = [None] * len(args)
    for k, ct in enumerate(cts):
        x, init = args[k], args[n + k]
        undefined = [i for i in (k, n + k) if isinstance(args[i], UndefinedPrimal)]
        if not undefined:
            continue
        if isinstance(ct, Zero):
            for i in undefined:
                res[i] = Zero(args[i].aval)
            continue
        if kinds[k] != "add":
            raise kind_error("reduce: cannot transpose a reduction", to_apply,
                             "sums (add) are linear")
        shape = aval_of_value(x).shape
        if isinstance(x, UndefinedPrimal):
            res[k] = broadcast_in_dim_p.bind(ct, shape=shape,
                                             broadcast_dimensions=_kept(shape, dimensions))
        if isinstance(init, UndefinedPrimal):
            res[n + k] = sum_dims(ct, range(aval_of_value(ct).ndim))
    return res


def _reduce_b(args: Sequence[Any], dims: Sequence[int | None], *, dimensions: Dims,
              to_apply: Graph) -> tuple[list[Any], list[int]]:
    n, size = len(args) // 2, batch_size(args, dims)
    xs = [at_front(x, d, size) for x, d in zip(args[:n], dims[:n], strict=True)]
    inits, init_dims = args[n:], dims[n:]
    moved = tuple(d + 1 for d in dimensions)
    if all(d is None for d in init_dims):
        return reduce_p.bind(*xs, *inits, dimensions=moved, to_apply=to_apply), [0] * n
    # Per-example init values: fold each in as one more element of a flattened
    # reduced axis, starting from example 0's init (init values are identities).
    joined, seeds = [], []
    for x, init, d in zip(xs, inits, init_dims, strict=True):
        flat = _reduced_first(x, moved)  # (reduced, batch, kept...)
        init = at_front(init, d, size)
        head = broadcast_in_dim_p.bind(init, shape=(1, *aval_of_value(flat).shape[1:]),
                                       broadcast_dimensions=(1,))
        joined.append(concatenate_p.bind(head, flat, dimension=0))
        seeds.append(_first(init))
    return reduce_p.bind(*joined, *seeds, dimensions=(0,), to_apply=to_apply), [0] * n


def _first(v: Any) -> Any:
    """Element 0 of a vector as a scalar (any scalar when the vector is empty)."""
    aval = aval_of_value(v)
    if aval.shape[0] == 0:
        return np.zeros((), aval.dtype)
    return reshape_p.bind(slice_p.bind(v, start_indices=(0,), limit_indices=(1,),
                                       strides=(1,)), new_sizes=())


reduce_p.jvp = _reduce_jvp
reduce_p.transpose = _reduce_t
reduce_p.batch = _reduce_b
