"""`dot_general` as a tiled shared-memory GEMM kernel (batched).

The operands are viewed as (batch, rows, depth) and (batch, depth, cols)
arrays: a view when their dims are already in that order or stored
transposed (the kernel then reads them transposed), else a copy by a
transpose kernel. Each block computes a TILE_M x TILE_N tile of C for one
batch element (grid z), stepping through the depth in TILE_K slices staged in
shared memory; each thread accumulates THREAD_M x THREAD_N values of C in
registers, spread over the tile (strided, so loads from shared memory and
stores to C are coalesced). Accumulation is in the result's register dtype
(float16 in float32, rounded once on store; integers wrap as in XLA), as in
the CPU backend's loops; float operands of another dtype are converted on load.
Every index the kernel computes is in range and non-negative, and is cast to
`u64`: numba wraps negative signed indices, and that per-access fix-up kept
each shared-memory address from folding into a constant offset (per step of
the depth: 162 PTX instructions for 64 multiply-adds signed, 101 unsigned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ....core import Atom, Eqn, ShapedArray
from ...numba.codegen import Ref, load, store_value
from ...numba.scalar import alias, cast
from ..emitter import DeviceGraphEmitter, Kernel, array_type
from ..lib.arrays import register_dtype
from ..nests import advance_index, product, split_index


@dataclass(frozen=True)
class Operand:
    """A GEMM operand in the kernel: a 3-D (batch, rows, cols) device array, whether it
    holds the matrices transposed, and its aval (whose dtype is converted on load)."""

    name: str
    transposed: bool
    aval: ShapedArray


@dataclass(frozen=True)
class GemmSizes:
    """The size symbols whose products are the batch, the rows of C, the depth and the
    columns of C."""

    batch: list[str]
    m: list[str]
    depth: list[str]
    n: list[str]


def emit_dot_general(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    lb, lc, rb, rc = (list(p["lhs_batch_dims"]), list(p["lhs_contracting_dims"]),
                      list(p["rhs_batch_dims"]), list(p["rhs_contracting_dims"]))
    lf = [d for d in range(lhs.aval.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.aval.ndim) if d not in rb + rc]
    sizes = GemmSizes(*([ge.dim(lhs, d) for d in dims] for dims in (lb, lf, lc)),
                      [ge.dim(rhs, d) for d in rf])
    batch, m, k, n = (product(s) for s in (sizes.batch, sizes.m, sizes.depth, sizes.n))
    a = _matrix(ge, lhs, lb + lf + lc, lb + lc + lf, (batch, m, k))
    b = _matrix(ge, rhs, rb + rc + rf, rb + rf + rc, (batch, k, n))
    result = ge.new_ref(out)
    c = ge.view(f"{ge.array_of(result)}.reshape(({batch}, {m}, {n}))", out.aval.update(
        shape=(1, 1, 1)), "c3").name
    emit_gemm(ge, out.aval.dtype, (a, b, c), sizes)


def emit_gemm(ge: DeviceGraphEmitter, dtype: np.dtype, operands: tuple[Operand, Operand, str],
              sizes: GemmSizes) -> None:
    """The GEMM kernel C[b] = A[b] @ B[b] into the 3-D device array C (`operands`: A, B,
    C's name), accumulating in `dtype`'s register dtype, and its launch."""
    a, b, c = operands
    kernel = Kernel(ge, "gemm")
    _gemm_body(kernel, dtype, a, b, c, sizes)
    batch, m, n = (product(s) for s in (sizes.batch, sizes.m, sizes.n))
    kernel.launch(f"launch.gemm_grid({m}, {n}, {batch})", "launch.gemm_block()",
                  f"C[b] = A[b] @ B[b]{' (A transposed)' if a.transposed else ''}"
                  f"{' (B transposed)' if b.transposed else ''}")


def _matrix(ge: DeviceGraphEmitter, atom: Atom, plain: list[int], swapped: list[int],
            sizes: tuple[str, str, str]) -> Operand:
    """An operand as a 3-D device array (a view, transposed or not, else a copy)."""
    ref = ge.ref(atom)
    batch, rows, cols = sizes
    identity = list(range(atom.aval.ndim))
    aval = atom.aval.update(shape=(1, 1, 1))
    if swapped == identity and plain != identity:
        return Operand(ge.view(f"{ge.array_of(ref)}.reshape(({batch}, {cols}, {rows}))", aval,
                               f"{ref.name.split('[')[0]}_3d").name, True, aval)
    source = ge.array_of(ref) if plain == identity else transposed(ge, atom, plain)
    return Operand(ge.view(f"{source}.reshape(({batch}, {rows}, {cols}))", aval,
                           f"{ref.name.split('[')[0]}_3d").name, False, aval)


def transposed(ge: DeviceGraphEmitter, atom: Atom, perm: list[int]) -> str:
    """A contiguous copy of `atom` with its dims in the order `perm`."""
    ref = ge.ref(atom)
    out_shape = tuple(atom.aval.shape[d] for d in perm)
    target = ge.fresh(f"{ref.name}_t")
    dims = ", ".join(ge.dim(atom, d) for d in perm)
    ge.w.line(f"{target} = rt.empty(({dims},), np.{atom.aval.dtype.name})")
    ge.mod.types[target] = array_type(atom.aval.update(shape=out_shape))
    k = Kernel(ge, "transpose")
    sizes = [k.dim(atom, d) for d in perm]
    index = [f"i{j}" for j in range(len(perm))]
    total, flat = k.fresh("total"), k.fresh("flat")
    k.w.line(f"{total} = {product(sizes)}")
    loop = ("cuda.grid(1)", total, "cuda.gridsize(1)")
    steps = split_index(k, loop, sizes, index)  # (an operand to transpose has 2+ dims)
    with k.w.block(f"for {flat} in range({', '.join(loop)})"):
        src = [""] * len(perm)
        for j, d in enumerate(perm):
            src[d] = index[j]
        k.outer(ref.name)
        k.outer(target)
        k.w.line(f"{target}[{', '.join(index)}] = {ref.at(src)}")
        advance_index(k, index, steps, sizes)
    k.launch(f"launch.grid({' * '.join(ge.dim(atom, d) for d in perm)})",
             "launch.CONFIG.block", "transpose an operand of dot_general into (batch, rows, depth)")
    return target


def _gemm_body(k: Kernel, dtype: np.dtype, a: Operand, b: Operand, c: str,
               sizes: GemmSizes) -> None:
    reg = alias(dtype)
    batch, m, depth, n = (product([k.outer(s) for s in part])
                          for part in (sizes.batch, sizes.m, sizes.depth, sizes.n))
    v = {key: k.fresh(key) for key in ("sa", "sb", "acc", "ra", "rb", "tx", "ty", "bb", "row0",
                                       "col0", "k0", "e", "q", "r", "i", "j")}
    for name in (a.name, b.name, c):
        k.outer(name)
    w = k.w
    dt = f"np.{register_dtype(dtype).name}"  # (array dtypes: NumPy's own types)
    w.line(f"{v['sa']} = cuda.shared.array((TILE_K, SHARED_M), {dt})")
    w.line(f"{v['sb']} = cuda.shared.array((TILE_K, SHARED_N), {dt})")
    w.line(f"{v['acc']} = cuda.local.array((THREAD_M, THREAD_N), {dt})")
    w.line(f"{v['ra']} = cuda.local.array(THREAD_M, {dt})")
    w.line(f"{v['rb']} = cuda.local.array(THREAD_N, {dt})")
    w.line(f"{v['tx']} = cuda.threadIdx.x % (TILE_N // THREAD_N)")
    w.line(f"{v['ty']} = cuda.threadIdx.x // (TILE_N // THREAD_N)")
    with w.block(f"for {v['bb']} in range(cuda.blockIdx.z, {batch}, cuda.gridDim.z)"):
        with w.block(f"for {v['row0']} in range(cuda.blockIdx.y * TILE_M, {m}, "
                     f"cuda.gridDim.y * TILE_M)"):
            with w.block(f"for {v['col0']} in range(cuda.blockIdx.x * TILE_N, {n}, "
                         f"cuda.gridDim.x * TILE_N)"):
                _tile(k, dtype, (a, b, c), v, (m, depth, n), reg)


def _tile(k: Kernel, dtype: np.dtype, operands: tuple[Operand, Operand, str],
          v: dict[str, str], sizes: tuple[str, str, str], reg: str) -> None:
    """One tile of C: zero, step through the depth, store."""
    w = k.w
    m, depth, n = sizes
    a, b, c = operands
    threads = "(TILE_M // THREAD_M) * (TILE_N // THREAD_N)"
    u = _unsigned(k)
    with w.block(f"for {v['i']} in range(THREAD_M)"):
        with w.block(f"for {v['j']} in range(THREAD_N)"):
            w.line(f"{v['acc']}[{v['i']}, {v['j']}] = {reg}(0)")
    with w.block(f"for {v['k0']} in range(0, {depth}, TILE_K)"):
        _stage(k, v, a, "sa", "TILE_M", (v["row0"], m), depth, threads, reg)
        _stage(k, v, b, "sb", "TILE_N", (v["col0"], n), depth, threads, reg)
        w.line("cuda.syncthreads()")
        with w.block(f"for {v['q']} in range(TILE_K)"):
            with w.block(f"for {v['i']} in range(THREAD_M)"):
                w.line(f"{v['ra']}[{v['i']}] = {v['sa']}[{u(v['q'])}, "
                       f"{u(v['ty'] + ' + ' + v['i'] + ' * (TILE_M // THREAD_M)')}]")
            with w.block(f"for {v['j']} in range(THREAD_N)"):
                w.line(f"{v['rb']}[{v['j']}] = {v['sb']}[{u(v['q'])}, "
                       f"{u(v['tx'] + ' + ' + v['j'] + ' * (TILE_N // THREAD_N)')}]")
            with w.block(f"for {v['i']} in range(THREAD_M)"):
                with w.block(f"for {v['j']} in range(THREAD_N)"):
                    acc = f"{v['acc']}[{v['i']}, {v['j']}]"
                    product_ = f"{v['ra']}[{v['i']}] * {v['rb']}[{v['j']}]"
                    if dtype.kind in "iub":  # wrap (or saturate to bool) every step
                        w.line(f"{acc} = {cast(k.mod, f'{acc} + {product_}', dtype)}")
                    else:
                        w.line(f"{acc} += {product_}")
        w.line("cuda.syncthreads()")
    row, col = k.fresh("row"), k.fresh("col")
    with w.block(f"for {v['i']} in range(THREAD_M)"):
        with w.block(f"for {v['j']} in range(THREAD_N)"):
            w.line(f"{row} = {v['row0']} + {v['ty']} + {v['i']} * (TILE_M // THREAD_M)")
            w.line(f"{col} = {v['col0']} + {v['tx']} + {v['j']} * (TILE_N // THREAD_N)")
            with w.block(f"if {row} < {m} and {col} < {n}"):
                value = store_value(f"{v['acc']}[{v['i']}, {v['j']}]", dtype, k.mod)
                w.line(f"{c}[{u(v['bb'])}, {u(row)}, {u(col)}] = {value}")


def _stage(k: Kernel, v: dict[str, str], operand: Operand, shared: str, width: str,
           origin: tuple[str, str], depth: str, threads: str, reg: str) -> None:
    """Copy the TILE_K x width slice of an operand at (k0, origin) into shared memory
    (zeros outside the matrix); consecutive threads read consecutive addresses."""
    name, transposed = operand.name, operand.transposed
    is_a = shared == "sa"
    start, limit = origin
    w = k.w
    e, q, r = v["e"], v["q"], v["r"]
    # A is (rows, depth) and B (depth, cols) in memory, unless transposed.
    depth_fastest = is_a != transposed
    with w.block(f"for {e} in range(cuda.threadIdx.x, TILE_K * {width}, {threads})"):
        if depth_fastest:
            w.line(f"{q} = {e} % TILE_K")
            w.line(f"{r} = {e} // TILE_K")
        else:
            w.line(f"{r} = {e} % {width}")
            w.line(f"{q} = {e} // {width}")
        gq, gr = f"{v['k0']} + {q}", f"{start} + {r}"
        u = _unsigned(k)
        index = [u(v["bb"]), u(gr), u(gq)] if is_a != transposed else [u(v["bb"]), u(gq), u(gr)]
        ref = Ref(name, operand.aval)
        value = load(ref, index, k.mod)
        w.line(f"{v[shared]}[{u(q)}, {u(r)}] = {reg}({value}) if {gr} < {limit} and "
               f"{gq} < {depth} else {reg}(0)")


def _unsigned(k: Kernel) -> Callable[[str], str]:
    """`u64(index)`, for an index known to be in range (see the module doc)."""
    u64 = k.mod.use("u64")
    return lambda index: f"{u64}({index})"
