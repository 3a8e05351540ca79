"""Loop nests as CUDA kernels: one `@cuda.jit` kernel per step of the fusion plan.

An element-wise nest (element-wise chains, broadcasts, converts, selects,
slices, iota, dynamic slices: everything `numba.fusion` fuses) is a grid-stride
loop over its elements: a 1-D grid over a vector; else a 2-D grid, x along the
last dim and y along the rows (the other dims, split into their indices once
per row), so no element pays for an integer division. The body is the CPU
backend's (`numba.loops.LoopBody`: values computed on demand at mapped indices)
with CUDA scalar code (`cuda.scalar`). A rank-0 nest is one thread. Nests
that reduce, and row groups, are in `cuda.reductions`.

`emit_scalar_graph` writes a scalar computation (a reduction's or a scatter's
combiner) inline into a kernel body.
"""

from __future__ import annotations

from typing import Sequence

from ...core import Atom, Graph, Literal, Var
from ...errors import UnsupportedOpError
from ..numba.codegen import Ref, store_value
from ..numba.fusion import LoopNest, Plan, is_loop_op
from ..numba.index_maps import ELEMENTWISE_FAMILIES
from ..numba.loops import Index, LoopBody
from ..numba.scalar import literal
from ..numba.source import SourceWriter
from .emitter import DeviceGraphEmitter, Kernel
from .scalar import CUDA_SCALAR_EMITTERS


class CudaLoopBody(LoopBody):
    """`numba.loops.LoopBody` writing CUDA scalar code into a kernel body."""

    def __init__(self, kernel: Kernel, plan: Plan, own: set[int], w: SourceWriter | None = None):
        super().__init__(kernel.ge, plan, kernel.w if w is None else w, own, kernel.free,
                         kernel.local)

    SCALARS = CUDA_SCALAR_EMITTERS

    def unsigned(self, index: Index) -> Index:
        """Indices as computed: the unsigned casts only help LLVM vectorize cpu loops."""
        return index


def unflatten(w: SourceWriter, flat: str, sizes: Sequence[str], names: Sequence[str],
              scratch: str) -> None:
    """names[d] = the index along dim d of flat index `flat` over `sizes` (row-major)."""
    if len(sizes) == 1:
        w.line(f"{names[0]} = {flat}")
        return
    w.line(f"{scratch} = {flat}")
    for d in range(len(sizes) - 1, 0, -1):
        w.line(f"{names[d]} = {scratch} % {sizes[d]}")
        w.line(f"{scratch} = {scratch} // {sizes[d]}")
    w.line(f"{names[0]} = {scratch}")


def split_index(k: Kernel, loop: tuple[str, str, str], sizes: Sequence[str],
                digits: Sequence[str]) -> list[str]:
    """Before a loop `for flat in range(first, end, step)` over row-major positions in
    `sizes` (several dims): `digits` = the index of `first`, and the step's digits (the
    names returned; "0"/"1" for a step of 1), for `advance_index` to step the index
    without an integer division per element. Split only when the loop runs (a size may
    be 0); the names are 0 otherwise."""
    first, end, step = loop
    steps = ["0"] * (len(sizes) - 1) + ["1"] if step == "1" else \
        [k.fresh("step") for _ in sizes]
    names = list(digits) + [s for s in steps if s not in ("0", "1")]
    k.w.line(f"{', '.join(names)} = {', '.join('0' for _ in names)}")
    with k.w.block(f"if {first} < {end}"):
        unflatten(k.w, first, sizes, digits, k.fresh("rest"))
        if step != "1":
            unflatten(k.w, step, sizes, steps, k.fresh("rest"))
    return steps


def advance_index(k: Kernel, digits: Sequence[str], steps: Sequence[str],
                  sizes: Sequence[str]) -> None:
    """digits += steps in the mixed radix `sizes` (the last statement of the loop body):
    each digit and step is below its size, so one carry per digit; the first digit is
    not bounded (the loop ends first)."""
    for d in range(len(digits) - 1, 0, -1):
        if steps[d] != "0":
            k.w.line(f"{digits[d]} += {steps[d]}")
        with k.w.block(f"if {digits[d]} >= {sizes[d]}"):
            k.w.line(f"{digits[d]} -= {sizes[d]}")
            k.w.line(f"{digits[d - 1]} += 1")
    if steps[0] != "0":
        k.w.line(f"{digits[0]} += {steps[0]}")


def product(sizes: Sequence[str]) -> str:
    return " * ".join(sizes) or "1"


def shape_atom(nest: LoopNest) -> Atom:
    return nest.stores[0] if nest.stores else nest.reduces[0].inputs[0]


def store(kernel: Kernel, body: LoopBody, v: Var, ref: Ref, index: Index) -> None:
    """ref[index] = value of v (rank 0: element 0, in its register dtype)."""
    kernel.outer(ref.name)
    value = body.value(v, index)
    if ref.scalar:
        kernel.w.line(f"{ref.name} = {value}")
    else:
        kernel.w.line(f"{ref.at(index)} = {store_value(value, v.aval.dtype, kernel.mod)}")


# ------------------------------------------------------------------ dispatch

def describe_nest(nest: LoopNest) -> str:
    names = ", ".join(dict.fromkeys(e.op.hlo_name for e in nest.eqns))
    reduced = f", reducing dims {list(nest.reduce_dims)}" if nest.reduces else ""
    return f"[{','.join('?' * len(nest.shape))}]{reduced}: {names}"


def elementwise_nest(ge: DeviceGraphEmitter, plan: Plan, nest: LoopNest) -> None:
    """Grid-stride loops over the nest's elements storing each of its stored values: over
    the flat index for one dim; else over rows (grid y) and the last dim (grid x), so
    an element costs no integer division."""
    k = Kernel(ge, "fused")
    body = CudaLoopBody(k, plan, {id(v) for v in nest.stores})
    outs = [ge.new_ref(v) for v in nest.stores]
    atom = shape_atom(nest)
    rank = len(nest.shape)
    sizes = [k.dim(atom, d) for d in range(rank)]
    index = tuple(f"i{d}" for d in range(rank))
    host = [ge.dim(atom, d) for d in range(rank)]
    if rank == 1:
        with k.w.block(f"for {index[0]} in range(cuda.grid(1), {sizes[0]}, cuda.gridsize(1))"):
            for v, ref in zip(nest.stores, outs, strict=True):
                store(k, body, v, ref, index)
        k.launch(f"launch.grid({host[0]})", "launch.CONFIG.block", describe_nest(nest))
        return
    row = k.fresh("row")
    with k.w.block(f"for {row} in range(cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y, "
                   f"{product(sizes[:-1])}, cuda.gridDim.y * cuda.blockDim.y)"):
        unflatten(k.w, row, sizes[:-1], index[:-1], k.fresh("rest"))
        with k.w.block(f"for {index[-1]} in range(cuda.blockIdx.x * cuda.blockDim.x + "
                       f"cuda.threadIdx.x, {sizes[-1]}, cuda.gridDim.x * cuda.blockDim.x)"):
            for v, ref in zip(nest.stores, outs, strict=True):
                store(k, body, v, ref, index)
    grid, block = ge.fresh("grid"), ge.fresh("block")
    ge.w.line(f"{grid}, {block} = launch.tiles({product(host[:-1])}, {host[-1]})")
    k.launch(grid, block, describe_nest(nest))


def scalar_nest(ge: DeviceGraphEmitter, plan: Plan, nest: LoopNest) -> None:
    """Rank-0 values (and reductions of rank-0 operands): one thread."""
    k = Kernel(ge, "scalar")
    body = CudaLoopBody(k, plan, {id(v) for v in nest.stores})
    outs = [ge.new_ref(v) for v in nest.stores]
    reduced = [(v, ge.new_ref(v)) for e in nest.reduces for v in e.outputs]
    with k.w.block("if cuda.grid(1) == 0"):
        for v, ref in zip(nest.stores, outs, strict=True):
            store(k, body, v, ref, ())
        results = iter(reduced)
        for eqn in nest.reduces:  # reducing no dims of a scalar: one application
            n = len(eqn.outputs)
            args = [body.value(a, ()) for a in eqn.inputs[n:]] + \
                [body.value(a, ()) for a in eqn.inputs[:n]]
            for value in emit_scalar_graph(k, eqn.params["to_apply"], args):
                _, ref = next(results)
                k.outer(ref.name)
                k.w.line(f"{ref.name} = {value}")
    k.launch("1", "1", describe_nest(nest))


# ------------------------------------------------------------------ scalar computations

def emit_scalar_graph(k: Kernel, graph: Graph, args: Sequence[str],
                      w: SourceWriter | None = None) -> list[str]:
    """Inline scalar code of `graph` (rank-0 element-wise ops) applied to the expressions
    `args`; returns an expression per output."""
    w = k.w if w is None else w
    env: dict[int, str] = {id(v): a for v, a in zip(graph.inputs, args, strict=True)}

    def value(atom: Atom) -> str:
        if isinstance(atom, Literal):
            return literal(atom.value, atom.aval.dtype)
        return env[id(atom)]

    for eqn in graph.eqns:
        if not is_loop_op(eqn) or eqn.outputs[0].aval.ndim:
            raise UnsupportedOpError(f"cuda backend: {eqn.op.name} inside a scalar computation "
                                     f"(a reduction or scatter combiner) has no kernel code")
        ins = [value(a) for a in eqn.inputs]
        if eqn.op.family not in ELEMENTWISE_FAMILIES:  # rank-0 broadcast/reshape: identity
            env[id(eqn.outputs[0])] = ins[0]
            continue
        name = k.fresh(eqn.op.hlo_name)
        w.line(f"{name} = {CUDA_SCALAR_EMITTERS[eqn.op.name](k.mod, eqn, ins)}")
        env[id(eqn.outputs[0])] = name
    return [value(a) for a in graph.outputs]
