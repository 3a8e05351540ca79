"""JVP, transpose and batching rules of the shape ops, `dot_general` and `reduce`.

The data-movement ops are linear: JVP = the op on the tangents; transpose = move
the cotangent back (sum over broadcast dims, inverse permutation, pad for slice,
...). Batching rules make the mapped axis one more dimension of the same op.

`reduce` is differentiated per output by what its computation does with that
output's (accumulator, element) pair: `add` (linear, transposed by a broadcast),
`mul` (a product tree carrying product-rule tangents: exact with zeros), and
`max` / `min` / `select` (argmax-style): the mean tangent of the candidates equal
to the result (ties split evenly, as JAX; a selection is assumed to pick by
value). Any other computation is a `TracerTypeError` naming its ops.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Eqn, Graph, ShapedArray
from ..errors import TracerTypeError
from ..tracing import trace_flat
from . import elementwise as ew
from .ad import (UndefinedPrimal, Zero, add_tangents, aval_of_value, defjvp, defjvp_zero,
                 deflinear, instantiate)
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
