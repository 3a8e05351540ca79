"""Reductions as CUDA kernels: block-level tree reductions in shared memory.

A nest whose kept dims come first (rows) and reduced dims last (columns) is
reduced by blocks: threads fold their share of a row in registers, then a tree
over shared memory combines the partial results in thread order. Long rows of
few rows are cut into chunks reduced by separate blocks and combined by a
second kernel (`launch.splits`); there are no atomics, so results are
deterministic. A computation that is a commutative monoid (add, max, ...)
lets threads read interleaved (coalesced) elements; any other computation (an
argmax comparator, say) gets contiguous chunks, so the fold keeps the element
order. The init value is applied once, first, as in the reference's sequential
fold (a `have` flag marks accumulators that hold nothing yet). A nest whose
reduced dims are not last (column sums) gives each thread one output and
folds serially, in order.

A row group (a row softmax: max, then exp and its sum, then divide) is one
kernel with one block per row: each reduction's result is broadcast to the
block through shared memory and kept in registers by the nests after it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numba

from ...core import Eqn, Var
from ..numba.codegen import Ref, store_value
from ..numba.fusion import LoopNest, Plan, RowGroup, monoid
from ..numba.loops import Index
from .emitter import DeviceGraphEmitter, Kernel, array_type
from .lib.arrays import register_dtype
from .nests import (
    CudaLoopBody,
    advance_index,
    describe_nest,
    emit_scalar_graph,
    product,
    shape_atom,
    split_index,
    store,
    unflatten,
)

_T, _NT = "cuda.threadIdx.x", "cuda.blockDim.x"


@dataclass
class Accumulators:
    """The running values of one reduce in a kernel, the flag saying they hold a value,
    and (for block reductions) their shared-memory arrays."""

    eqn: Eqn
    names: list[str]
    have: str
    shared: list[str]
    shared_have: str


def _accumulators(k: Kernel, eqn: Eqn, block: bool = True) -> Accumulators:
    acc = Accumulators(eqn, [k.fresh("acc") for _ in eqn.outputs], k.fresh("have"),
                       [k.fresh("partial") for _ in eqn.outputs], k.fresh("partial_have"))
    if block:
        for name, v in zip(acc.shared, eqn.outputs, strict=True):
            reg = register_dtype(v.aval.dtype).name  # (array dtypes: NumPy's own types)
            k.w.line(f"{name} = cuda.shared.array(REDUCE_BLOCK, np.{reg})")
        k.w.line(f"{acc.shared_have} = cuda.shared.array(REDUCE_BLOCK, np.bool_)")
    return acc


def _start(k: Kernel, body: CudaLoopBody, acc: Accumulators, with_init: str) -> None:
    """Accumulators holding the init values where `with_init` holds, else nothing."""
    eqn = acc.eqn
    inits = [body.value(a, ()) for a in eqn.inputs[len(eqn.outputs):]]
    k.w.line(f"{', '.join(acc.names)} = {', '.join(inits)}")
    k.w.line(f"{acc.have} = {with_init}")


def _fold(k: Kernel, acc: Accumulators, xs: list[str], always: bool = False) -> None:
    """acc = f(acc, xs); or, unless `always` (a fold from init), acc = xs while the
    accumulators hold nothing yet."""
    graph = acc.eqn.params["to_apply"]
    if always:
        new = emit_scalar_graph(k, graph, acc.names + xs)
        k.w.line(f"{', '.join(acc.names)} = {', '.join(new)}")
        return
    with k.w.block(f"if {acc.have}"):
        new = emit_scalar_graph(k, graph, acc.names + xs)
        k.w.line(f"{', '.join(acc.names)} = {', '.join(new)}")
    with k.w.block("else"):
        k.w.line(f"{', '.join(acc.names)} = {', '.join(xs)}")
        k.w.line(f"{acc.have} = True")


def _tree(k: Kernel, accs: list[Accumulators]) -> None:
    """Combine the block's partial results; slot 0 ends with the total. Monoids pair
    thread t with t + stride for halving strides (no divergence within a warp); other
    computations pair neighbouring ranges for doubling strides, keeping thread order."""
    for acc in accs:
        for name, shared in zip(acc.names, acc.shared, strict=True):
            k.w.line(f"{shared}[{_T}] = {name}")
        k.w.line(f"{acc.shared_have}[{_T}] = {acc.have}")
    k.w.line("cuda.syncthreads()")
    s = k.fresh("stride")
    if all(monoid(a.eqn) for a in accs):
        k.w.line(f"{s} = {_NT} // 2")
        header, pair, step = f"while {s} > 0", f"{_T} < {s}", f"{s} //= 2"
    else:
        k.w.line(f"{s} = 1")
        header, pair, step = f"while {s} < {_NT}", f"{_T} % (2 * {s}) == 0", f"{s} *= 2"
    with k.w.block(header):
        for acc in accs:
            with k.w.block(f"if {pair} and {acc.shared_have}[{_T} + {s}]"):
                mine = [f"{sh}[{_T}]" for sh in acc.shared]
                theirs = [f"{sh}[{_T} + {s}]" for sh in acc.shared]
                with k.w.block(f"if {acc.shared_have}[{_T}]"):
                    new = emit_scalar_graph(k, acc.eqn.params["to_apply"], mine + theirs)
                    k.w.line(f"{', '.join(mine)} = {', '.join(new)}")
                with k.w.block("else"):
                    k.w.line(f"{', '.join(mine)} = {', '.join(theirs)}")
                    k.w.line(f"{acc.shared_have}[{_T}] = True")
        k.w.line("cuda.syncthreads()")
        k.w.line(step)


def _columns(k: Kernel, body: CudaLoopBody, nest: LoopNest, accs: list[Accumulators],
             outs: dict[int, Ref], bounds: tuple[str, str], depth: int) -> None:
    """This thread's share of the columns [lo, hi) of one row: interleaved (coalesced)
    for monoids, else a contiguous chunk (the fold keeps the element order). Over
    several dims the first column is split into its index once, and each step adds
    the step's digits with carries: no integer division per element."""
    atom = shape_atom(nest)
    rank = len(nest.shape)
    index = tuple(f"i{d}" for d in range(rank))
    sizes = [k.dim(atom, d) for d in range(depth, rank)]
    lo, hi = bounds
    col = k.fresh("col")
    if all(monoid(a.eqn) for a in accs):
        first, step = f"{lo} + {_T}", _NT
        header = f"for {col} in range({first}, {hi}, {_NT})"
    else:
        per = k.fresh("per_thread")
        k.w.line(f"{per} = ({hi} - {lo} + {_NT} - 1) // {_NT}")
        first, step = f"{lo} + {_T} * {per}", "1"
        header = f"for {col} in range({first}, min({hi}, {lo} + ({_T} + 1) * {per}))"
    if len(sizes) == 1:
        with k.w.block(header):
            k.w.line(f"{index[depth]} = {col}")
            _body(k, body, nest, accs, outs, index)
        return
    digits = index[depth:]
    steps = split_index(k, (first, hi, step), sizes, digits)
    with k.w.block(header):
        _body(k, body, nest, accs, outs, index)
        advance_index(k, digits, steps, sizes)


def _body(k: Kernel, body: CudaLoopBody, nest: LoopNest, accs: list[Accumulators],
          outs: dict[int, Ref], index: Index, always: bool = False) -> None:
    for v in nest.stores:
        if id(v) in outs:  # (else a row group recomputes it where it is read)
            store(k, body, v, outs[id(v)], index)
    for acc in accs:
        n = len(acc.eqn.outputs)
        _fold(k, acc, [body.value(a, index) for a in acc.eqn.inputs[:n]], always)


def _outputs(ge: DeviceGraphEmitter, nest: LoopNest) -> dict[int, Ref]:
    return {id(v): ge.new_ref(v) for v in [*nest.stores, *_reduced(nest)]}


def _reduced(nest: LoopNest) -> list[Var]:
    return [v for e in nest.reduces for v in e.outputs]


# ------------------------------------------------------------------ single nests

def emit_reduce_nest(ge: DeviceGraphEmitter, plan: Plan, nest: LoopNest) -> None:
    kept = [d for d in range(len(nest.shape)) if d not in nest.reduce_dims]
    rows = math.prod(nest.shape[d] for d in kept)
    cols = math.prod(nest.shape[d] for d in nest.reduce_dims)
    # (Reducing no dims, f(init, x) per element, is serial: a row has no columns to split.)
    if nest.reduce_dims and kept == list(range(len(kept))) and (cols >= 64 or cols >= rows):
        _row_reduce(ge, plan, nest, len(kept))
    else:
        _serial_reduce(ge, plan, nest, kept)


def _serial_reduce(ge: DeviceGraphEmitter, plan: Plan, nest: LoopNest, kept: list[int]) -> None:
    """One thread per output, folding its elements in order from the init value."""
    outs = _outputs(ge, nest)
    k = Kernel(ge, "reduce")
    body = CudaLoopBody(k, plan, {id(v) for v in nest.stores})
    atom = shape_atom(nest)
    index = tuple(f"i{d}" for d in range(len(nest.shape)))
    total, flat = k.fresh("total"), k.fresh("flat")
    k.w.line(f"{total} = {product([k.dim(atom, d) for d in kept])}")
    with k.w.block(f"for {flat} in range(cuda.grid(1), {total}, cuda.gridsize(1))"):
        if kept:
            unflatten(k.w, flat, [k.dim(atom, d) for d in kept], [index[d] for d in kept],
                      k.fresh("rest"))
        accs = [_accumulators(k, e, block=False) for e in nest.reduces]
        for acc in accs:
            _start(k, body, acc, "True")
        _reduced_loops(k, body, nest, accs, outs, index, list(nest.reduce_dims))
        for acc in accs:
            for v, name in zip(acc.eqn.outputs, acc.names, strict=True):
                _write(k, outs[id(v)], [index[d] for d in kept], name, v)
    host_total = product([ge.dim(atom, d) for d in kept])
    k.launch(f"launch.grid({host_total})", "launch.CONFIG.block", describe_nest(nest))


def _reduced_loops(k: Kernel, body: CudaLoopBody, nest: LoopNest, accs: list[Accumulators],
                   outs: dict[int, Ref], index: Index, dims: list[int]) -> None:
    if not dims:
        _body(k, body, nest, accs, outs, index, always=True)
        return
    with k.w.block(f"for {index[dims[0]]} in range({k.dim(shape_atom(nest), dims[0])})"):
        _reduced_loops(k, body, nest, accs, outs, index, dims[1:])


def _write(k: Kernel, ref: Ref, index: list[str], value: str, v: Var) -> None:
    k.outer(ref.name)
    if ref.scalar:
        k.w.line(f"{ref.name} = {value}")
    else:
        k.w.line(f"{ref.at(index)} = {store_value(value, v.aval.dtype, k.mod)}")


def _row_reduce(ge: DeviceGraphEmitter, plan: Plan, nest: LoopNest, depth: int) -> None:
    """Blocks over rows (grid x) and chunks of a row (grid y), writing (rows, chunks)
    `targets`; a second kernel folds the chunks when there are several."""
    atom = shape_atom(nest)
    rank = len(nest.shape)
    outs = _outputs(ge, nest)
    rows = product([ge.dim(atom, d) for d in range(depth)])
    cols = product([ge.dim(atom, d) for d in range(depth, rank)])
    splits, chunk = ge.fresh("splits"), ge.fresh("chunk")
    ge.w.line(f"{splits}, {chunk} = launch.splits({rows}, {cols})")
    ge.mod.types[chunk] = numba.types.int64
    targets, always = _targets(ge, nest, outs, rows, splits)
    k = Kernel(ge, "reduce")
    body = CudaLoopBody(k, plan, {id(v) for v in nest.stores})
    accs = [_accumulators(k, e) for e in nest.reduces]
    index = tuple(f"i{d}" for d in range(rank))
    row, lo = k.fresh("row"), k.fresh("lo")
    outer = [k.dim(atom, d) for d in range(depth)]
    with k.w.block(f"for {row} in range(cuda.blockIdx.x, {product(outer)}, cuda.gridDim.x)"):
        if depth:
            unflatten(k.w, row, outer, index[:depth], k.fresh("rest"))
        k.w.line(f"{lo} = cuda.blockIdx.y * {k.outer(chunk)}")
        for acc in accs:
            _start(k, body, acc, f"cuda.blockIdx.y == 0 and {_T} == 0")
        width = product([k.dim(atom, d) for d in range(depth, rank)])
        _columns(k, body, nest, accs, outs, (lo, f"min({lo} + {chunk}, {width})"), depth)
        _tree(k, accs)
        with k.w.block(f"if {_T} == 0"):
            for acc in accs:
                for v, shared in zip(acc.eqn.outputs, acc.shared, strict=True):
                    k.w.line(f"{k.outer(targets[id(v)])}[{row}, cuda.blockIdx.y] = {shared}[0]")
        k.w.line("cuda.syncthreads()")  # (the shared arrays are reused by the next row)
    k.launch(f"(launch.grid({rows}, 1), {splits})", f"launch.row_block({cols})",
             describe_nest(nest))
    if always:
        _combine_chunks(ge, nest, outs, targets, rows, splits)
        return
    with ge.w.block(f"if {splits} > 1"):
        _combine_chunks(ge, nest, outs, targets, rows, splits)


def _targets(ge: DeviceGraphEmitter, nest: LoopNest, outs: dict[int, Ref], rows: str,
             splits: str) -> tuple[dict[int, str], bool]:
    """Per reduce output, the (rows, chunks) array the first kernel writes in the register
    dtype: the output itself when a row is one chunk, else partial results. float16
    outputs always get partials (and the second kernel, which rounds them)."""
    targets, always = {}, False
    for v in _reduced(nest):
        name = ge.fresh("target")
        reg = register_dtype(v.aval.dtype)
        partials = f"rt.empty(({rows}, {splits}), np.{reg.name})"
        if v.aval.ndim and reg != v.aval.dtype:
            always = True
            ge.w.line(f"{name} = {partials}")
        else:
            array = ge.array_of(outs[id(v)])
            ge.w.line(f"{name} = {array}.reshape(({rows}, 1)) if {splits} == 1 else {partials}")
        ge.mod.types[name] = array_type(v.aval.update(shape=(1, 1), dtype=reg))
        targets[id(v)] = name
    return targets, always


def _combine_chunks(ge: DeviceGraphEmitter, nest: LoopNest, outs: dict[int, Ref],
                    targets: dict[int, str], rows: str, splits: str) -> None:
    """The second pass: one block per row folds that row's chunk results. Each thread
    folds a contiguous run of chunks in order, then the block's tree combines the runs
    (keeping thread order where the computation needs it). A row has up to a thousand
    chunks on a large GPU: one thread reading them one after another waited out a
    memory latency each (0.4 ms of a 0.43 ms sum of 2^26 floats on an H200)."""
    flat = {id(v): ge.view(f"{ge.array_of(outs[id(v)])}.reshape(({rows},))",
                           v.aval.update(shape=(1,)), "flat_out").name for v in _reduced(nest)}
    ge.mod.types[splits] = numba.types.int64
    k = Kernel(ge, "combine")
    accs = [_accumulators(k, e) for e in nest.reduces]
    row, s, lo, hi = (k.fresh(name) for name in ("row", "chunk", "lo", "hi"))
    atom = shape_atom(nest)
    depth = len(nest.shape) - len(nest.reduce_dims)
    total = product([k.dim(atom, d) for d in range(depth)])
    n = k.outer(splits)
    with k.w.block(f"for {row} in range(cuda.blockIdx.x, {total}, cuda.gridDim.x)"):
        k.w.line(f"{lo} = {_T} * (({n} + {_NT} - 1) // {_NT})")
        k.w.line(f"{hi} = min({lo} + ({n} + {_NT} - 1) // {_NT}, {n})")
        for acc in accs:
            names = [k.outer(targets[id(v)]) for v in acc.eqn.outputs]
            k.w.line(f"{', '.join(acc.names)} = "
                     f"{', '.join(f'{t}[{row}, min({lo}, {n} - 1)]' for t in names)}")
            k.w.line(f"{acc.have} = {lo} < {hi}")
            with k.w.block(f"for {s} in range({lo} + 1, {hi})"):
                _fold(k, acc, [f"{t}[{row}, {s}]" for t in names], always=True)
        _tree(k, accs)
        with k.w.block(f"if {_T} == 0"):
            for acc in accs:
                for v, shared in zip(acc.eqn.outputs, acc.shared, strict=True):
                    value = store_value(f"{shared}[0]", v.aval.dtype, k.mod)
                    k.w.line(f"{k.outer(flat[id(v)])}[{row}] = {value}")
        k.w.line("cuda.syncthreads()")  # (the shared arrays are reused by the next row)
    k.launch(f"launch.grid({rows}, 1)", f"launch.row_block({splits})",
             "fold the chunks of each row")


# ------------------------------------------------------------------ row groups

def emit_row_group(ge: DeviceGraphEmitter, plan: Plan, group: RowGroup) -> None:
    """One block per row runs every nest of the group for that row (when every reduction
    of the group reduces exactly the dims after the shared ones; else nest by nest)."""
    depth = group.depth
    if not all(sorted(n.reduce_dims) == list(range(depth, len(n.shape)))
               for n in group.nests if n.reduces):
        for nest in group.nests:
            ge.emit_nest(plan, nest)
        return
    # Values only the group reads: a row's scalars stay in registers, and element values
    # are recomputed where they are read (no round trip through memory).
    recompute = {id(v) for n in group.nests for v in n.stores
                 if id(v) in group.scratch and v.aval.ndim > depth}
    plan = dataclasses.replace(plan, materialized=plan.materialized - recompute)
    outs = {id(v): ge.new_ref(v) for n in group.nests for v in [*n.stores, *_reduced(n)]
            if id(v) not in group.scratch}
    k = Kernel(ge, "rows")
    accs = [[_accumulators(k, e) for e in n.reduces] for n in group.nests]
    first = shape_atom(group.nests[0])
    outer = [k.dim(first, d) for d in range(depth)]
    index = tuple(f"i{d}" for d in range(max(len(n.shape) for n in group.nests)))
    row = k.fresh("row")
    with k.w.block(f"for {row} in range(cuda.blockIdx.x, {product(outer)}, cuda.gridDim.x)"):
        unflatten(k.w, row, outer, index[:depth], k.fresh("rest"))
        for nest, nest_accs in zip(group.nests, accs, strict=True):
            _group_nest(k, plan, nest, nest_accs, outs, depth)
    for v_id, ref in outs.items():  # later steps read the arrays, not this kernel's registers
        ge.env[v_id] = ref
    widths = [product([ge.dim(shape_atom(n), d) for d in range(depth, len(n.shape))])
              for n in group.nests]
    rows = product([ge.dim(first, d) for d in range(depth)])
    k.launch(f"launch.grid({rows}, 1)", f"launch.row_block(max({', '.join(widths)}, 1))",
             "; ".join(describe_nest(n) for n in group.nests))


def _group_nest(k: Kernel, plan: Plan, nest: LoopNest, accs: list[Accumulators],
                outs: dict[int, Ref], depth: int) -> None:
    """One nest of a row group, for the block's row."""
    body = CudaLoopBody(k, plan, {id(v) for v in nest.stores})
    index = tuple(f"i{d}" for d in range(len(nest.shape)))
    if len(nest.shape) == depth and not nest.reduces:  # per-row values: every thread
        for v in nest.stores:
            _row_value(k, v, body.value(v, index), outs, index)
        return
    if not nest.reduces and not any(id(v) in outs for v in nest.stores):
        return  # (its values are recomputed by the nests that read them)
    if not nest.reduces:
        width = product([k.dim(shape_atom(nest), d) for d in range(depth, len(nest.shape))])
        _columns(k, body, nest, [], outs, ("0", width), depth)
        k.w.line("cuda.syncthreads()")  # (later nests of the block read these stores)
        return
    for acc in accs:
        _start(k, body, acc, f"{_T} == 0")
    width = product([k.dim(shape_atom(nest), d) for d in range(depth, len(nest.shape))])
    _columns(k, body, nest, accs, outs, ("0", width), depth)
    _tree(k, accs)
    for acc in accs:
        for v, shared in zip(acc.eqn.outputs, acc.shared, strict=True):
            _row_value(k, v, f"{shared}[0]", outs, index)
    k.w.line("cuda.syncthreads()")  # (before the shared arrays are written again)


def _row_value(k: Kernel, v: Var, value: str, outs: dict[int, Ref], index: Index) -> None:
    """A value of the row (rank = depth): a register for the nests after it, and written
    out by thread 0 when something outside the group reads it."""
    name = k.fresh("row_value")
    k.w.line(f"{name} = {value}")
    if id(v) in outs:
        with k.w.block(f"if {_T} == 0"):
            _write(k, outs[id(v)], list(index[:v.aval.ndim]), name, v)
    k.ge.bind(v, Ref(name, v.aval.update(shape=())))
