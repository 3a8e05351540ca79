"""Graph → Graph lowering the cpu backend applies before planning loop nests.

- A `dot_general` reading a `transpose` reads the transpose's source instead, with
  the permutation folded into its dimension numbers, when that keeps the output's
  dim order and leaves an operand BLAS reads as it is stored (plain, or with its
  transpose flag): `a.T @ b` then copies nothing, and DCE drops the transpose.
- A `transpose` of a `dot_general` result that swaps the lhs and rhs free dims (what
  reverse mode makes of `x @ w`'s weight gradient) is the product with its operands
  swapped, which BLAS writes in the wanted order: no transposed copy.
- A `dot_general` operand BLAS cannot read as stored (a copy into (batch, rows,
  columns) order) that a loop nest computes, directly or through a reshape that only
  merges dims, is written in that order by the nest itself: the transpose joins the
  nest, in front of the reshape. im2col's stacked slices (images, C*9, H*W) are then
  written as (C*9, images, H*W), and the filters times them is one GEMM with threads
  (one thread synchronization, where 32 calls of one per image each wait for the
  slowest thread: on a loaded machine that cost 2x) and no copy of the columns.
- A float `dot_general` small in some dim (rows, columns or contraction below
  `BLAS_MIN_SIZE`) but with real work becomes mul + add-reduce over a product shape
  where a loop nest beats BLAS: a batched product (no `np.dot` call per batch
  element), a small result of a long contraction (a one-hot matrix times the points
  is never built), or a short contraction whose result only feeds reductions
  (k-means distances go straight into their argmin). Elsewhere BLAS's packed kernels
  win even when one dim is small (an MLP's 512x10 layer: 5-13x). float16 / bfloat16
  products multiply and add in float32 there and round once, as the reference and
  the BLAS path do.
- A `dot_general` with no free dimensions on either side is a batch of inner
  products (what `vmap` makes of a vector dot). Through BLAS it would be one tiny
  `np.dot` call per batch element; as transpose + mul + add-reduce it is a single
  fused loop nest.
- A key sort of NumPy-order float keys, `sort(select(x != x, nan, x))` (what
  `tnp.sort` writes: every NaN becomes +NaN), sorts `x` itself with the sort param
  `nan_keys=True`: the sort kernel gives NaNs that value (NumPy's SIMD sort already
  puts them last), so no pass over the data writes the keys first.
- An lu of a transposed matrix whose factor only triangular solves read factors the
  matrix where it lies (`lower_lu`: what `solve` makes).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ... import dtypes, ops
from ...core import Eqn, Graph, Literal, Var, readers
from ...interpret import eval_graph
from ...ops.sort import default_num_keys
from ...passes.dce import dce
from ...passes.rewrite import rewrite
from ...tracing import trace_flat
from .fusion import is_loop_op
from .lower_lu import transposed_lu_factors
from .scalar import HALVES

_BLAS_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                               np.complex128))
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_NAN_KEY_DTYPES = frozenset({_F32, np.dtype(np.float64)})


def blas_dtype(operand: np.dtype, out: np.dtype) -> np.dtype | None:
    """The dtype the cpu `dot_general` hands to BLAS (np.dot) for these operand and
    result dtypes, or None where it runs loops (which read any layout).

    16-bit floats have no BLAS: they are widened to float32 (exactly) and the result
    is rounded once, as the reference computes them (float32 accumulation, as XLA's
    CPU backend). A float16 result needs float16 operands (the reference rounds
    others to float16 before multiplying), a bfloat16 one float operands.
    """
    if out in HALVES:
        wide = operand == out or (out != _F16 and operand.kind == "f")
        return _F32 if wide else None
    return out if out in _BLAS_DTYPES and (operand in _BLAS_DTYPES or operand in HALVES) \
        else None


# BLAS pays off once rows, columns and contraction all reach this size; below it a
# product is a fused loop nest (no call per batch element, and its operands and result
# fuse with their neighbours: a one-hot matrix is never built, distances go straight
# into an argmin).
BLAS_MIN_SIZE = 32
# A result this small stays in cache while the contraction is the outer loop.
SMALL_RESULT = 4096
# Below this many multiply-adds a product keeps BLAS (and its order of summation, so
# small results stay close to NumPy's): the memory it could save is too little.
LOOP_MIN_WORK = 1 << 15


def lower(graph: Graph) -> Graph:
    """Every cpu lowering, in order."""
    graph = operands_in_blas_order(fold_transposes_into_dots(graph))
    graph = lower_small_dots(fold_transposes_of_dots(graph))
    return transposed_lu_factors(fold_nan_keys_into_sorts(lower_batched_inner_products(graph)))


def fold_nan_keys_into_sorts(graph: Graph) -> Graph:
    """`graph` (sub-graphs too) with each one-operand key sort of a NaN-canonicalizing
    select that nothing else reads sorting the select's source, `nan_keys=True`."""
    graph = rewrite(graph, lambda eqn, defs: None, fold_nan_keys_into_sorts)  # sub-graphs
    defs = {id(v): e for e in graph.eqns for v in e.outputs}
    reads = _read_counts(graph)
    eqns = tuple(_sort_of_nan_keys(e, defs, reads) for e in graph.eqns)
    if all(a is b for a, b in zip(eqns, graph.eqns, strict=True)):
        return graph
    return dce(Graph(graph.inputs, eqns, graph.outputs, graph.name))


def _sort_of_nan_keys(eqn: Eqn, defs: dict[int, Eqn], reads: dict[int, int]) -> Eqn:
    if eqn.op.name != "sort" or len(eqn.inputs) != 1 or eqn.params.get("nan_keys") or \
            reads.get(id(eqn.inputs[0])) != 1 or default_num_keys(eqn.params["to_apply"]) != 1:
        return eqn
    source = _nan_key_source(defs.get(id(eqn.inputs[0])), defs)
    if source is None:
        return eqn
    return Eqn(eqn.op, (source,), {**eqn.params, "nan_keys": True}, eqn.outputs, eqn.source)


def _nan_key_source(select: Eqn | None, defs: dict[int, Eqn]) -> Any:
    """x when `select` is select(ne(x, x), +NaN, x) of a float32/64 x, the +NaN a
    broadcast literal or a folded constant (the kernels' NaN is its value), else None."""
    if select is None or select.op.name != "select" or \
            not all(isinstance(a, Var) for a in (select.inputs[0], select.inputs[2])):
        return None
    pred, nans, x = defs.get(id(select.inputs[0])), select.inputs[1], select.inputs[2]
    if pred is None or x.aval.dtype not in _NAN_KEY_DTYPES:
        return None
    compares_x = pred.op.name == "compare" and pred.params["direction"] == "NE" and \
        not pred.params["total_order"] and all(a is x for a in pred.inputs)
    fill = defs.get(id(nans)) if isinstance(nans, Var) else None
    if fill is not None and fill.op.name == "broadcast_in_dim":
        nans = fill.inputs[0]
    canonical = isinstance(nans, Literal) and nans.aval.dtype == x.aval.dtype and \
        np.array_equal(np.asarray(nans.value).view(f"u{x.aval.dtype.itemsize}"),
                       np.full(nans.aval.shape, np.nan, x.aval.dtype).view(
                           f"u{x.aval.dtype.itemsize}"))
    return x if compares_x and canonical else None


def _free_dims(rank: int, contracting: Sequence[int], batch: Sequence[int]) -> list[int]:
    return [d for d in range(rank) if d not in contracting and d not in batch]


def fold_transposes_into_dots(graph: Graph) -> Graph:
    """`graph` (sub-graphs too) with dot_generals reading their operands' sources
    through transposes; transposes nothing else reads are dropped."""
    graph = rewrite(graph, lambda eqn, defs: None, fold_transposes_into_dots)  # sub-graphs
    defs = {id(v): e for e in graph.eqns for v in e.outputs}
    eqns = tuple(_fold_transposes(e, defs) if e.op.name == "dot_general" else e
                 for e in graph.eqns)
    if all(a is b for a, b in zip(eqns, graph.eqns, strict=True)):
        return graph
    return dce(Graph(graph.inputs, eqns, graph.outputs, graph.name))


def _fold_transposes(eqn: Eqn, defs: dict[int, Eqn]) -> Eqn:
    inputs, params = list(eqn.inputs), dict(eqn.params)
    for k, side in enumerate(("lhs", "rhs")):
        src = defs.get(id(inputs[k])) if isinstance(inputs[k], Var) else None
        if src is None or src.op.name != "transpose":
            continue
        perm = src.params["permutation"]
        contracting, batch = params[f"{side}_contracting_dims"], params[f"{side}_batch_dims"]
        free = [perm[d] for d in _free_dims(len(perm), contracting, batch)]
        contracting, batch = tuple(perm[d] for d in contracting), tuple(perm[d] for d in batch)
        if free == sorted(free) and (_blas_of(eqn) is None or
                                     _blas_reads(len(perm), batch, contracting, k == 0)):
            inputs[k] = src.inputs[0]
            params[f"{side}_contracting_dims"], params[f"{side}_batch_dims"] = contracting, batch
    if all(a is b for a, b in zip(inputs, eqn.inputs, strict=True)):
        return eqn
    return Eqn(eqn.op, tuple(inputs), params, eqn.outputs, eqn.source)


def operands_in_blas_order(graph: Graph) -> Graph:
    """`graph` (top level) with each dot_general operand that BLAS cannot read as
    stored, and that is a loop-nest value (or a reshape of one) only it reads, computed
    in the order BLAS reads (batch, rows, columns): the transpose joins the producer's
    loop nest (in front of the reshape), and the product is one BLAS call per batch
    element (none: one call) instead of a transposing copy. (im2col's stack of shifted
    slices, reshaped to (images, C*9, H*W), is written as (C*9, images, H*W): the
    filters times it is one GEMM.)"""
    defs = {id(v): e for e in graph.eqns for v in e.outputs}
    reads = _read_counts(graph)
    eqns: list[Eqn] = []
    for e in graph.eqns:
        eqns.extend(_dot_reading_blas_order(e, defs, reads) if e.op.name == "dot_general"
                    else [e])
    if len(eqns) == len(graph.eqns):
        return graph
    return dce(Graph(graph.inputs, tuple(eqns), graph.outputs, graph.name))


def _read_counts(graph: Graph) -> dict[int, int]:
    uses, outputs = readers(graph), {id(v) for v in graph.outputs}
    return {k: len(eqns) + (k in outputs) for k, eqns in uses.items()}


def _dot_reading_blas_order(dot: Eqn, defs: dict[int, Eqn], reads: dict[int, int]) -> list[Eqn]:
    """[transpose, reshape, ..., dot] for `dot` with its operands made readable by BLAS
    where their producers can write them so; [dot] where none can."""
    made: list[Eqn] = []
    inputs, params = list(dot.inputs), dict(dot.params)
    for k, side in enumerate(("lhs", "rhs")):
        batch, contracting = params[f"{side}_batch_dims"], params[f"{side}_contracting_dims"]
        x = inputs[k]
        free = _free_dims(x.aval.ndim, contracting, batch)
        order = [*batch, *free, *contracting] if k == 0 else [*batch, *contracting, *free]
        src = defs.get(id(x)) if isinstance(x, Var) else None
        if _blas_of(dot) is None or _blas_reads(x.aval.ndim, batch, contracting, k == 0) or \
                src is None or reads.get(id(x)) != 1:
            continue
        eqns = _reshape_in_order(src, order, defs, reads) if src.op.name == "reshape" else \
            _transposed(x, tuple(order), src.source) if is_loop_op(src) else []
        if eqns:
            made += eqns
            inputs[k] = eqns[-1].outputs[0]
            at = {d: j for j, d in enumerate(order)}
            params[f"{side}_batch_dims"] = tuple(at[d] for d in batch)
            params[f"{side}_contracting_dims"] = tuple(at[d] for d in contracting)
    if not made:
        return [dot]
    return [*made, Eqn(dot.op, tuple(inputs), params, dot.outputs, dot.source)]


def _reshape_in_order(reshape: Eqn, order: list[int], defs: dict[int, Eqn],
                      reads: dict[int, int]) -> list[Eqn]:
    """[transpose, reshape] computing transpose(reshape(x), order) as the reshape of a
    transpose of x, when x is a loop-nest value only the reshape reads (its nest then
    writes the transpose) and each result dim is a run of x's dims; else []."""
    x = reshape.inputs[0]
    src = defs.get(id(x)) if isinstance(x, Var) else None
    if src is None or reads.get(id(x)) != 1 or not is_loop_op(src):
        return []
    groups = _dim_runs(x.aval.shape, reshape.outputs[0].aval.shape)
    if groups is None:
        return []
    [transpose] = _transposed(x, tuple(d for j in order for d in groups[j]), reshape.source)
    out = reshape.outputs[0].aval
    result = Var(out.update(shape=tuple(out.shape[j] for j in order)))
    return [transpose, Eqn(reshape.op, transpose.outputs, {"new_sizes": result.aval.shape},
                           (result,), reshape.source)]


def _transposed(x: Var, perm: tuple[int, ...], source: Any) -> list[Eqn]:
    moved = Var(x.aval.update(shape=tuple(x.aval.shape[d] for d in perm)))
    return [Eqn(ops.shape.transpose_p, (x,), {"permutation": perm}, (moved,), source)]


def _dim_runs(shape: Sequence[int], new: Sequence[int]) -> list[list[int]] | None:
    """For each dim of `new`, the run of `shape`'s dims it merges (None unless the
    reshape only merges runs of dims, all of size > 1)."""
    if 0 in shape or 1 in shape or 1 in new:
        return None
    runs, i = [], 0
    for size in new:
        run, have = [], 1
        while have < size and i < len(shape):
            have *= shape[i]
            run.append(i)
            i += 1
        if have != size:
            return None
        runs.append(run)
    return runs


def fold_transposes_of_dots(graph: Graph) -> Graph:
    """`graph` (sub-graphs too) with each transpose that swaps the free dims of a
    dot_general only it reads replaced by the swapped product."""
    graph = rewrite(graph, lambda eqn, defs: None, fold_transposes_of_dots)  # sub-graphs
    defs = {id(v): e for e in graph.eqns for v in e.outputs}
    reads = _read_counts(graph)
    eqns = tuple(_swapped_dot(e, defs, reads) or e for e in graph.eqns)
    if all(a is b for a, b in zip(eqns, graph.eqns, strict=True)):
        return graph
    return dce(Graph(graph.inputs, eqns, graph.outputs, graph.name))


def _swapped_dot(eqn: Eqn, defs: dict[int, Eqn], reads: dict[int, int]) -> Eqn | None:
    if eqn.op.name != "transpose" or not isinstance(eqn.inputs[0], Var):
        return None
    dot = defs.get(id(eqn.inputs[0]))
    if dot is None or dot.op.name != "dot_general" or reads[id(eqn.inputs[0])] != 1:
        return None
    p = dot.params
    lhs, rhs = (a.aval.ndim for a in dot.inputs)
    nb = len(p["lhs_batch_dims"])
    nm = lhs - nb - len(p["lhs_contracting_dims"])
    nn = rhs - nb - len(p["rhs_contracting_dims"])
    swap = (*range(nb), *range(nb + nm, nb + nm + nn), *range(nb, nb + nm))
    if tuple(eqn.params["permutation"]) != swap:
        return None
    params = {**p, "lhs_contracting_dims": p["rhs_contracting_dims"],
              "rhs_contracting_dims": p["lhs_contracting_dims"],
              "lhs_batch_dims": p["rhs_batch_dims"], "rhs_batch_dims": p["lhs_batch_dims"],
              "precision": p["precision"] and p["precision"][::-1]}
    return Eqn(dot.op, dot.inputs[::-1], params, eqn.outputs, dot.source)


def _blas_reads(rank: int, batch: tuple[int, ...], contracting: tuple[int, ...],
                lhs: bool) -> bool:
    """Whether an operand with these dims is a stack of matrices as stored (batch dims
    first, then rows and columns in either order), so np.dot needs no copy of it."""
    free = _free_dims(rank, contracting, batch)
    rows_cols = [free, list(contracting)] if lhs else [list(contracting), free]
    identity = list(range(rank))
    return identity in ([*batch, *rows_cols[0], *rows_cols[1]],
                        [*batch, *rows_cols[1], *rows_cols[0]])


def _sizes(eqn: Eqn) -> tuple[int, int, int]:
    """(rows, columns, contraction) of a dot_general: products of lhs free, rhs free and
    contracting dim sizes."""
    p = eqn.params
    lhs, rhs = (a.aval.shape for a in eqn.inputs)
    free = (_free_dims(len(lhs), p["lhs_contracting_dims"], p["lhs_batch_dims"]),
            _free_dims(len(rhs), p["rhs_contracting_dims"], p["rhs_batch_dims"]))
    return (math.prod(lhs[d] for d in free[0]), math.prod(rhs[d] for d in free[1]),
            math.prod(lhs[d] for d in p["lhs_contracting_dims"]))


def _blas_of(eqn: Eqn) -> np.dtype | None:
    return blas_dtype(eqn.inputs[0].aval.dtype, eqn.outputs[0].aval.dtype)


def _is_small_dot(eqn: Eqn) -> bool:
    """A BLAS-run product (operands of the result's dtype) small in some dim."""
    if eqn.op.name != "dot_general":
        return False
    held = {a.aval.dtype for a in (*eqn.inputs, *eqn.outputs)}
    sizes = _sizes(eqn)
    work = sizes[2] * eqn.outputs[0].aval.size
    return len(held) == 1 and _blas_of(eqn) is not None and \
        min(sizes) < BLAS_MIN_SIZE and work >= LOOP_MIN_WORK


def _loop_dots(graph: Graph) -> set[int]:
    """ids of the small products of `graph` that run faster as loop nests than BLAS."""
    uses, outputs = readers(graph), {id(v) for v in graph.outputs}
    found = set()
    for eqn in filter(_is_small_dot, graph.eqns):
        k = _sizes(eqn)[2]
        if eqn.params["lhs_batch_dims"] or \
                (eqn.outputs[0].aval.size <= SMALL_RESULT and k > SMALL_RESULT) or \
                (k < BLAS_MIN_SIZE and _only_reduced(eqn.outputs[0], uses, outputs)):
            found.add(id(eqn))
    return found


_ELEMENTWISE = frozenset({"unary", "binary", "compare", "ternary"})


def _only_reduced(v: Var, uses: dict[int, list[Eqn]], outputs: set[int]) -> bool:
    """Whether every use of `v` (through element-wise ops) is a reduction: the value
    then never needs to be stored, which is what a fused loop nest saves."""
    if id(v) in outputs or id(v) not in uses:
        return False
    for e in uses[id(v)]:
        if e.op.family in _ELEMENTWISE:
            if not all(_only_reduced(out, uses, outputs) for out in e.outputs):
                return False
        elif e.op.name != "reduce":
            return False
    return True


def _dot_loops(eqn: Eqn, lhs: Any, rhs: Any) -> list[Any]:
    """mul + add-reduce over a product shape: (batch, rows, columns, contraction), the
    contraction innermost with register accumulators, or first when the result is
    small and the contraction long (accumulating in the result, the rows of both
    operands streamed once)."""
    p = eqn.params
    out = eqn.outputs[0].aval
    groups = {"lhs": (p["lhs_batch_dims"], _free_dims(lhs.ndim, p["lhs_contracting_dims"],
                                                       p["lhs_batch_dims"]),
                      p["lhs_contracting_dims"]),
              "rhs": (p["rhs_batch_dims"], _free_dims(rhs.ndim, p["rhs_contracting_dims"],
                                                       p["rhs_batch_dims"]),
                      p["rhs_contracting_dims"])}
    nb, nm, nn = len(p["lhs_batch_dims"]), len(groups["lhs"][1]), len(groups["rhs"][1])
    nk = len(p["lhs_contracting_dims"])
    k_first = out.size <= SMALL_RESULT and _sizes(eqn)[2] > SMALL_RESULT
    k_at = list(range(nk)) if k_first else list(range(nb + nm + nn, nb + nm + nn + nk))
    kept = [d for d in range(nb + nm + nn + nk) if d not in k_at]
    shape = [0] * (nb + nm + nn + nk)
    placed = []
    for x, (batch, free, contracting), free_at in ((lhs, groups["lhs"], kept[nb:nb + nm]),
                                                   (rhs, groups["rhs"], kept[nb + nm:])):
        at = {**dict(zip(batch, kept[:nb])), **dict(zip(free, free_at)),
              **dict(zip(contracting, k_at))}
        order = sorted(at, key=at.get)  # operand dims in the order of their product dims
        for d in order:
            shape[at[d]] = x.shape[d]
        x = _as_reference_reads(x, x.dtype, out.dtype)
        placed.append((ops.transpose(x, tuple(order)), tuple(sorted(at.values()))))
    a, b = (ops.broadcast_in_dim(x, tuple(shape), dims) for x, dims in placed)
    total = ops.reduce(ops.mul(a, b), np.zeros((), a.dtype), ops.add, tuple(k_at))
    return [_as(total, total.dtype, out.dtype)]


def lower_small_dots(graph: Graph) -> Graph:
    """`graph` with dot_generals too small in some dim for BLAS as loop nests (top level)."""
    loops = _loop_dots(graph)
    if not loops:
        return graph

    def rewrite(eqn: Eqn, args: list[Any]) -> list[Any] | None:
        return _dot_loops(eqn, *args) if id(eqn) in loops else None

    new, _ = trace_flat(lambda *xs: eval_graph(graph, xs, rewrite), graph.in_avals, graph.name)
    return new


def _is_batched_inner_product(eqn: Eqn) -> bool:
    if eqn.op.name != "dot_general":
        return False
    p = eqn.params
    lhs, rhs = (a.aval for a in eqn.inputs)
    return (bool(p["lhs_batch_dims"])
            and not _free_dims(lhs.ndim, p["lhs_contracting_dims"], p["lhs_batch_dims"])
            and not _free_dims(rhs.ndim, p["rhs_contracting_dims"], p["rhs_batch_dims"]))


def _as(x: Any, dtype: Any, out_dtype: Any) -> Any:
    return x if dtype == out_dtype else ops.convert_element_type(x, out_dtype)


def _as_reference_reads(x: Any, dtype: np.dtype, out_dtype: np.dtype) -> Any:
    """An operand in the dtype products accumulate in, read as the reference does:
    converted to the result dtype (preferred_element_type), bfloat16 results computed
    in float32; 16-bit floats then multiply and add in float32 (rounded once, after)."""
    x = _as(x, dtype, _F32 if out_dtype == dtypes.bfloat16 else out_dtype)
    return _as(x, _F16, _F32) if out_dtype == _F16 else x


def _inner_product(eqn: Eqn, lhs: Any, rhs: Any) -> list[Any]:
    p = eqn.params
    out_dtype = eqn.outputs[0].aval.dtype
    lhs = ops.transpose(_as_reference_reads(lhs, eqn.inputs[0].aval.dtype, out_dtype),
                        (*p["lhs_batch_dims"], *p["lhs_contracting_dims"]))
    rhs = ops.transpose(_as_reference_reads(rhs, eqn.inputs[1].aval.dtype, out_dtype),
                        (*p["rhs_batch_dims"], *p["rhs_contracting_dims"]))
    nbatch = len(p["lhs_batch_dims"])
    summed = tuple(range(nbatch, nbatch + len(p["lhs_contracting_dims"])))
    total = ops.reduce(ops.mul(lhs, rhs), np.zeros((), lhs.dtype), ops.add, summed)
    return [_as(total, total.dtype, out_dtype)]


def lower_batched_inner_products(graph: Graph) -> Graph:
    """`graph` with batched inner-product dot_generals as mul + add-reduce (top level)."""
    if not any(map(_is_batched_inner_product, graph.eqns)):
        return graph

    def rewrite(eqn: Eqn, args: list[Any]) -> list[Any] | None:
        return _inner_product(eqn, *args) if _is_batched_inner_product(eqn) else None

    new, _ = trace_flat(lambda *xs: eval_graph(graph, xs, rewrite), graph.in_avals, graph.name)
    return new
