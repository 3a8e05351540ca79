"""cpu emitter of `dot_general`: BLAS gemm (`cpu.lib.cblas.blas_matmul`: MKL where
installed, else NumPy's OpenBLAS) on 2-D views, batch dims looped around it; float16 /
bfloat16 operands are widened to float32 for it and the result is rounded once. Integer
products run explicit loops.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ....core import Atom, Eqn
from ...numba.codegen import GraphEmitter, Ref, load, store_value
from ...numba.lower import blas_dtype
from ...numba.scalar import HALVES, alias, cast
from .common import for_each

_F32 = np.dtype(np.float32)
MATMUL = "blas_matmul"  # out = a @ b of 2-D arrays, the name generated code calls


def emit_dot_general(ge: GraphEmitter, eqn: Eqn) -> None:
    lhs, rhs = eqn.inputs
    work = blas_dtype(lhs.aval.dtype, eqn.outputs[0].aval.dtype)
    if work is not None and lhs.aval.ndim > 0 and rhs.aval.ndim > 0:
        _dot_blas(ge, eqn, work)
    else:
        _dot_loops(ge, eqn)


def _product(ge: GraphEmitter, atom: Atom, dims: Sequence[int]) -> str:
    return " * ".join(ge.dim(atom, d) for d in dims) or "1"


def _dot_blas(ge: GraphEmitter, eqn: Eqn, work: np.dtype) -> None:
    """out[b] = lhs[b] @ rhs[b] on (batch, M, K) / (batch, K, N) views, or on the 2-D
    operands themselves without batch dims (a reshape and a view cost numba ~30 ms of
    compile each, the direct call a seventh of the three-view form, for the same BLAS
    call); a 16-bit float result is computed in a float32 array and rounded into its
    storage in one pass."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    dt = out.aval.dtype
    lb, lc, rb, rc = (p["lhs_batch_dims"], p["lhs_contracting_dims"], p["rhs_batch_dims"],
                      p["rhs_contracting_dims"])
    lf = [d for d in range(lhs.aval.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.aval.ndim) if d not in rb + rc]
    batch = (_product(ge, lhs, lb),) if lb else ()
    m, k, n = _product(ge, lhs, lf), _product(ge, lhs, lc), _product(ge, rhs, rf)
    a = _matrix(ge, eqn, 0, list(lb) + lf + list(lc), list(lb) + list(lc) + lf,
                (*batch, m, k), work, len(lf) == len(lc) == 1)
    b = _matrix(ge, eqn, 1, list(rb) + list(rc) + rf, list(rb) + rf + list(rc),
                (*batch, k, n), work, len(rc) == len(rf) == 1)
    direct = out.aval.ndim and work == dt  # BLAS writes the result's own array
    target = ge.alloc(out) if direct else ""
    shape = ", ".join((*batch, m, n))
    if direct and not batch and len(lf) == len(rf) == 1:  # the result is the (m, n) matrix
        o = target
    else:
        o = ge.fresh("product_3d" if batch else "product_2d")
        ge.w.line(f"{o} = {target}.reshape(({shape}))" if direct else
                  f"{o} = np.empty(({shape}), np.{work.name})")
    matmul = ge.mod.use(MATMUL, "cpu.lib.cblas")
    if not lb:
        ge.w.line(f"{matmul}({a}, {b}, {o})")
    else:
        i = ge.fresh("batch")
        with ge.w.block(f"for {i} in range({batch[0]})"):
            ge.w.line(f"{matmul}({a.format(i)}, {b.format(i)}, {o}[{i}])")
    _bind_product(ge, out, o, target, bool(batch))


def _bind_product(ge: GraphEmitter, out: Atom, o: str, target: str, batched: bool) -> None:
    """Bind `out` to the product BLAS wrote into `o` (or straight into `target`)."""
    dt = out.aval.dtype
    if not out.aval.ndim:
        value = f"{o}[0, 0, 0]" if batched else f"{o}[0, 0]"
        ge.bind(out, Ref(cast(ge.mod, value, dt) if dt in HALVES else value, out.aval))
        return
    if not target:
        target = ge.alloc(out)
        ge.w.line(f"{ge.mod.use(HALVES[dt].narrow)}({o}, {target})")
    ge.bind(out, Ref(target, out.aval))


def _matrix(ge: GraphEmitter, eqn: Eqn, k: int, plain: list[int], swapped: list[int],
            sizes: tuple[str, ...], dtype: np.dtype, one_each: bool) -> str:
    """Operand k as BLAS reads it: the (rows, cols) matrix itself (no batch, and
    `one_each`: one dim of rows, one of cols), or a view with `{}` where the batch index
    goes for (batch, rows, cols) `sizes`; in `dtype` (16-bit floats widened to float32
    first, in one pass)."""
    atom = eqn.inputs[k]
    ref = ge.ref(atom)
    source, held = ref.name, atom.aval.dtype
    if held in HALVES:
        source, held = ge.fresh(f"{ref.name}_f32"), _F32
        ge.w.line(f"{source} = {ge.mod.use(HALVES[atom.aval.dtype].widen)}({ref.name})")
    if held != dtype:
        widened, source = source, ge.fresh(f"{ref.name}_as")
        ge.w.line(f"{source} = {widened}.astype(np.{dtype.name})")
    *batch, rows, cols = sizes
    at = "[{}]" if batch else ""
    identity = list(range(atom.aval.ndim))
    if plain == identity or swapped == identity:
        transposed = plain != identity  # stored transposed: BLAS reads it with a flag
        if one_each and not batch:
            return f"{source}.T" if transposed else source
        name = ge.fresh(f"{ref.name}_3d" if batch else f"{ref.name}_2d")
        shape = (*batch, cols, rows) if transposed else (*batch, rows, cols)
        ge.w.line(f"{name} = {source}.reshape(({', '.join(shape)}))")
        return f"{name}{at}.T" if transposed else f"{name}{at}"
    name = ge.fresh(f"{ref.name}_3d" if batch else f"{ref.name}_2d")
    ge.w.line(f"{name} = np.ascontiguousarray({source}.transpose({tuple(plain)}))"
              f".reshape(({', '.join(sizes)}))")
    return f"{name}{at}"


def _dot_loops(ge: GraphEmitter, eqn: Eqn) -> None:
    """Explicit loops, accumulating in the result dtype (integers wrap like XLA's)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    dt = out.aval.dtype
    lb, lc, rb, rc = (p["lhs_batch_dims"], p["lhs_contracting_dims"], p["rhs_batch_dims"],
                      p["rhs_contracting_dims"])
    lf = [d for d in range(lhs.aval.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.aval.ndim) if d not in rb + rc]
    o_idx = [f"i{j}" for j in range(out.aval.ndim)]
    c_idx = [f"k{j}" for j in range(len(lc))]
    l_idx, r_idx = [""] * lhs.aval.ndim, [""] * rhs.aval.ndim
    for j, (a, b) in enumerate(zip(lb, rb, strict=True)):
        l_idx[a] = r_idx[b] = o_idx[j]
    for j, d in enumerate(lf):
        l_idx[d] = o_idx[len(lb) + j]
    for j, d in enumerate(rf):
        r_idx[d] = o_idx[len(lb) + len(lf) + j]
    for j, (a, b) in enumerate(zip(lc, rc, strict=True)):
        l_idx[a] = r_idx[b] = c_idx[j]
    target = ge.alloc(out) if out.aval.ndim else None
    loops = [(o_idx[j], ge.dim(out, j)) for j in range(out.aval.ndim)]
    inner = [(c_idx[j], ge.dim(lhs, d)) for j, d in enumerate(lc)]
    acc = ge.fresh("acc")
    reg = alias(dt)  # float16 accumulates in float32 and rounds once, on store

    def body() -> None:
        ge.w.line(f"{acc} = {reg}(0)")
        x, y = ge.fresh("x"), ge.fresh("y")

        def step() -> None:
            ge.w.line(f"{x} = {reg}({load(ge.ref(lhs), l_idx, ge.mod)})")
            ge.w.line(f"{y} = {reg}({load(ge.ref(rhs), r_idx, ge.mod)})")
            ge.w.line(f"{acc} = {reg}({acc} + {reg}({x} * {y}))")
        for_each(ge, inner, step)
        if target is not None:
            ge.w.line(f"{target}[{', '.join(o_idx)}] = {store_value(acc, dt, ge.mod)}")
    for_each(ge, loops, body)
    ge.bind(out, Ref(target, out.aval) if target else Ref(cast(ge.mod, acc, dt), out.aval))


EMITTERS = {"dot_general": emit_dot_general}
