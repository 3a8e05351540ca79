"""Loop nests: the loops around the `numba.loops` bodies, for each `LoopNest` (or
`RowGroup` of nests sharing their outer loops) of the fusion plan.

Reductions: when the reduced dims come after every kept dim, kept dims loop
outside and reduced dims inside, with scalar accumulators. A float add/mul/max/
min reduction updates its accumulator through a helper compiled with just enough
fast-math (reassociation; no-NaN for the compare, with NaNs tracked separately)
for LLVM to vectorize the loop; everything else keeps strict IEEE semantics.
Otherwise the loop keeps the array's own order and accumulates in the output;
such a nest reducing its outer dim (column sums, a one-hot product) runs on
threads when its computation is a monoid: each chunk of rows folds into its own
partial result (the init value in the first, the monoid's identity in the
others), then the partials combine in chunk order.

The outermost loop becomes a `numba.prange`, in a separate `parallel=True`
kernel, when the nest is large, computes something costly per element, and the
graph calls no BLAS or BLAS runs on numba's own pool (`backend._threads_ok`).
Where a top-level array a nest writes lives: `buffers`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...core import Atom, Eqn, Var
from ...ops.collectives_rules import monoid_identity
from ..numba.codegen import GraphEmitter, Ref, load, store_value
from ..numba.fusion import (
    CHEAP_OPS,
    LoopNest,
    Plan,
    RowGroup,
    is_reduce,
    monoid,
    nest_reads,
)
from ..numba.loops import Index, LoopBody, RowsAhead, inner_loop
from ..numba.scalar import alias, literal, storage_dtype
from ..numba.source import SourceWriter
from .buffers import Outs, allocate_outputs, nest_buffer, rows_in_buffers, writes_in_place
from .lib.prefetch import CHUNK as PREFETCH_CHUNK
from .options import NJIT_OPTIONS, PARALLEL_MIN_ELEMENTS, thread_count

PREFETCH_MIN_BYTES = 4 << 20  # twice a core's L2: such a nest streams from memory
ROWS_PREFETCH_MIN_BYTES = 2 << 20  # a core's L2

_VECTOR_MONOIDS = {"add": "add_reassoc", "mul": "mul_reassoc", "max": "max_nonan",
                   "min": "min_nonan"}
_VECTOR_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


@dataclass
class Accumulator:
    """The running value(s) of one reduce inside a nest."""

    eqn: Eqn
    names: list[str]
    helper: str | None = None  # vectorizable update for a float add/mul/max/min
    nan: str | None = None     # "a NaN was seen" flag of a vectorized max/min


def emit_loops(ge: GraphEmitter, plan: Plan, step: LoopNest | RowGroup) -> None:
    group = step if isinstance(step, RowGroup) else RowGroup(0, [step])
    if not group.nests[0].shape:  # scalar code: each statement has its own source comment
        _emit_scalars(ge, plan, group.nests[0])
        return
    for nest in group.nests:
        names = ", ".join(dict.fromkeys(e.op.hlo_name for e in nest.eqns))
        ge.w.comment(f"loop nest over {_shape_text(nest)}: {names}")
    if _column_parallel(ge, plan, group):
        _emit_column_reduce(ge, plan, group.nests[0])
        return
    parallel = _parallel(ge, plan, group)
    w = SourceWriter() if parallel else ge.w
    free: dict[str, None] = {}
    local: set[str] = set()
    bodies = [LoopBody(ge, plan, w, {id(v) for v in n.stores}, free, local)
              for n in group.nests]
    # Row buffers in a parallel loop: one per chunk of rows, as many chunks as threads.
    chunked = ge.mod.size(("threads",), thread_count(), "threads") \
        if parallel and _row_buffers(group) else None
    made: Outs = {}
    aliases = rows_in_buffers(plan, group)
    outs = [allocate_outputs(b, n, group, chunked, step, made, aliases)
            for b, n in zip(bodies, group.nests, strict=True)]
    if chunked:  # (the chunks' loop reads it even where every row lives in a result)
        bodies[0].outer(chunked)
    if group.depth:
        def each() -> None:
            streamed: set[str] = set()
            for body, nest, out in zip(bodies, group.nests, outs, strict=True):
                if streamed:
                    body.rows_ahead = RowsAhead("prefetch_chunk", "cpu.lib.prefetch",
                                                group.depth, frozenset(streamed))
                _nest(body, nest, out, group.depth, False)
                streamed |= body.streamed
        _loops(bodies[0], _shape_atom(group.nests[0]), list(range(group.depth)), parallel, each,
               chunked)
    else:
        _nest(bodies[0], group.nests[0], outs[0], 0, parallel)
    if parallel:
        _as_kernel(ge, free, w)


def _row_buffers(group: RowGroup) -> bool:
    """Whether some value of the group needs a row buffer (more dims than the rows)."""
    values = [v for n in group.nests for v in n.stores] + \
        [v for n in group.nests for e in n.reduces for v in e.outputs]
    return any(id(v) in group.scratch and v.aval.ndim > group.depth for v in values)


def _shape_text(nest: LoopNest) -> str:
    reduced = f", reducing dims {list(nest.reduce_dims)}" if nest.reduces else ""
    return f"[{','.join('?' * len(nest.shape))}]{reduced}"


def _shape_atom(nest: LoopNest) -> Atom:
    return nest.stores[0] if nest.stores else nest.reduces[0].inputs[0]


def _emit_scalars(ge: GraphEmitter, plan: Plan, nest: LoopNest) -> None:
    body = LoopBody(ge, plan, ge.w, {id(v) for v in nest.stores}, {}, set())
    for store in nest.stores:
        ge.bind(store, Ref(_named(body, store, ()), store.aval))
    for eqn in nest.reduces:  # reducing no dims of a scalar: one application
        n = len(eqn.outputs)
        inits = [ge.ref(a) for a in eqn.inputs[n:]]
        xs = [Ref(body.value(a, ()), eqn.outputs[j].aval) for j, a in enumerate(eqn.inputs[:n])]
        for v, r in zip(eqn.outputs, ge.sub_emitter().emit_graph(eqn.params["to_apply"],
                                                                 inits + xs), strict=True):
            ge.bind(v, r)


def _named(body: LoopBody, atom: Atom, index: Index) -> str:
    """The value as a variable (not a literal expression), so it can be bound."""
    value = body.value(atom, index)
    if value.isidentifier():
        return value
    name = body.ge.fresh("value")
    body.w.line(f"{name} = {value}")
    return name


def _parallel(ge: GraphEmitter, plan: Plan, group: RowGroup) -> bool:
    """Threads pay off for a large nest bound by computing, not by memory (which a
    second thread does not widen): one that computes something costly per element
    (exp, division, ...), or loops many times over each element it reads (distances
    of every point to every center)."""
    return 0 not in group.nests[0].reduce_dims and _worth_threads(ge, plan, group)


def _worth_threads(ge: GraphEmitter, plan: Plan, group: RowGroup) -> bool:
    nest = group.nests[0]
    if not ge.mod.parallel_ok or math.prod(nest.shape) < PARALLEL_MIN_ELEMENTS:
        return False
    costly = any(e.op.name not in CHEAP_OPS and not is_reduce(e)
                 for n in group.nests for e in n.eqns)
    own = {id(v) for n in group.nests for v in [*n.stores, *(o for e in n.reduces
                                                            for o in e.outputs)]}
    read = {v for n in group.nests for v in nest_reads(plan, n)} - own
    loaded = sum(next(a.aval.size for a in plan.users[v][0].inputs if id(a) == v)
                 for v in read)
    return costly or sum(math.prod(n.shape) for n in group.nests) >= 8 * loaded


def _column_parallel(ge: GraphEmitter, plan: Plan, group: RowGroup) -> bool:
    """A lone nest that reduces its outer dim with monoids (one result each, not a
    half-precision one), over enough rows to give every thread many, worth threads."""
    nest = group.nests[0]
    if len(group.nests) > 1 or 0 not in nest.reduce_dims:
        return False
    rows = math.prod(nest.shape[d] for d in nest.reduce_dims)
    for eqn in nest.reduces:
        dtype = eqn.outputs[0].aval.dtype
        if len(eqn.outputs) > 1 or storage_dtype(dtype) != dtype or monoid(eqn) is None or \
                monoid_identity(eqn.params["to_apply"], dtype) is None:
            return False
    return rows >= 8 * thread_count() and _worth_threads(ge, plan, group)


def _emit_column_reduce(ge: GraphEmitter, plan: Plan, nest: LoopNest) -> None:
    """Chunks of the outer dim fold into partial results on threads; then the partials
    combine, in chunk order, into the outputs (a `parallel=True` kernel)."""
    w, free = SourceWriter(), {}
    body = LoopBody(ge, plan, w, {id(v) for v in nest.stores}, free, set())
    threads = body.outer(ge.mod.size(("threads",), thread_count(), "threads"))
    rank, atom = len(nest.shape), _shape_atom(nest)
    kept = [d for d in range(rank) if d not in nest.reduce_dims]
    index = tuple(f"i{d}" for d in range(rank))
    kept_index = body.unsigned(tuple(index[d] for d in kept))
    parts: Outs = {}
    for v in nest.stores:  # (each chunk writes its own rows)
        parts[id(v)] = Ref(body.outer(nest_buffer(ge, plan, nest, v)), v.aval)
        ge.bind(v, parts[id(v)])
    for v in (eqn.outputs[0] for eqn in nest.reduces):
        name = body.define(ge.fresh(f"{ge.hint(v)}_parts"))
        sizes = ", ".join(body.dim(v, d) for d in range(v.aval.ndim))
        w.line(f"{name} = np.empty(({threads}, {sizes}), np.{v.aval.dtype.name})")
        parts[id(v)] = Ref(name, v.aval, ("chunk",))
    rows = body.dim(atom, 0)
    with w.block(f"for chunk in numba.prange({threads})"):
        accs = _chunk_accumulators(body, nest) if not kept else None
        _loops(body, atom, kept, False, lambda: _start_parts(body, nest, parts, kept_index))
        with w.block(f"for i0 in range(chunk * {rows} // {threads}, "
                     f"(chunk + 1) * {rows} // {threads})"):
            _loops(body, atom, list(range(1, rank)), False,
                   lambda: _emit_body(body, nest, parts, index, kept, accs), innermost=True)
        if accs is not None:
            _finish_accumulators(body, nest, parts, (), accs)
    _loops(body, atom, kept, False,
           lambda: _combine_parts(body, plan, nest, parts, kept_index, threads))
    _as_kernel(ge, free, w)
    for v in (eqn.outputs[0] for eqn in nest.reduces if not kept):  # full reductions
        value = ge.fresh("value")
        ge.w.line(f"{value} = {ge.ref(v).name}[()]")
        ge.bind(v, Ref(value, v.aval))


def _start_parts(body: LoopBody, nest: LoopNest, parts: Outs, kept_index: Index) -> None:
    """A chunk's partial results (in memory) start at the init value (first chunk) or
    the monoid's identity."""
    if not kept_index:  # full reductions: the chunk's accumulators are scalars
        return
    for eqn in nest.reduces:
        init = body.value(eqn.inputs[1], ())
        body.w.line(f"{parts[id(eqn.outputs[0])].at(kept_index)} = {init} if chunk == 0 else "
                    f"{_chunk_identity(eqn)}")


def _chunk_accumulators(body: LoopBody, nest: LoopNest) -> list[Accumulator]:
    """Scalar accumulators of a chunk of a full reduction: init value or identity."""
    accs = _init_accumulators(body, nest)
    for acc in accs:
        name = acc.names[0]
        body.w.line(f"{name} = {name} if chunk == 0 else {_chunk_identity(acc.eqn)}")
    return accs


def _chunk_identity(eqn: Eqn) -> str:
    """The monoid's identity as a literal (-0.0 for a float sum: the init value is
    added once, by the first chunk, and -0.0 + x is x)."""
    dtype = eqn.outputs[0].aval.dtype
    ident = monoid_identity(eqn.params["to_apply"], dtype)
    if monoid(eqn) == "add" and dtype.kind in "fc":
        ident = -ident
    return literal(ident.item(), dtype)


def _combine_parts(body: LoopBody, plan: Plan, nest: LoopNest, parts: Outs,
                   kept_index: Index, threads: str) -> None:
    ge = body.ge
    for eqn in nest.reduces:
        v = eqn.outputs[0]
        out = Ref(body.outer(nest_buffer(ge, plan, nest, v)), v.aval)
        ge.bind(v, out)
        scalar = v.aval.update(shape=())
        acc, part = ge.fresh("acc"), parts[id(v)].name
        body.w.line(f"{acc} = {part}[{', '.join(('0', *kept_index))}]")
        with body.w.block(f"for chunk in range(1, {threads})"):
            [new] = ge.sub_emitter(body.w).emit_graph(eqn.params["to_apply"], [
                Ref(acc, scalar), Ref(f"{part}[{', '.join(('chunk', *kept_index))}]", scalar)])
            body.w.line(f"{acc} = {new.name}")
        body.w.line(f"{out.at(kept_index)} = {acc}")


def _nest(body: LoopBody, nest: LoopNest, outs: Outs, start: int,
          parallel: bool) -> None:
    """The loops of one nest below its first `start` dims (opened by a row group)."""
    rank = len(nest.shape)
    atom = _shape_atom(nest)
    index = tuple(f"i{d}" for d in range(rank))
    kept = [d for d in range(rank) if d not in nest.reduce_dims]
    if not nest.reduces:
        _loops(body, atom, list(range(start, rank)), parallel,
               lambda: _emit_body(body, nest, outs, index, kept, None), innermost=True)
    elif all(k < r for k in kept for r in nest.reduce_dims):
        def per_output() -> None:  # scalar accumulators around the reduced loops
            accs = _init_accumulators(body, nest)
            _loops(body, atom, list(nest.reduce_dims), False,
                   lambda: _emit_body(body, nest, outs, index, kept, accs), innermost=True)
            _finish_accumulators(body, nest, outs, tuple(index[d] for d in kept), accs)
        _loops(body, atom, [d for d in kept if d >= start], parallel, per_output)
    else:  # reduced dims before kept ones: keep memory order, accumulate in the outputs
        _init_in_memory(body, nest, outs, kept, atom, parallel)
        _loops(body, atom, list(range(rank)), parallel,
               lambda: _emit_body(body, nest, outs, index, kept, None), innermost=True)


def _loops(body: LoopBody, shape_atom: Atom, dims: list[int], parallel: bool,
           inside: Callable[[], None], chunks: str | None = None,
           innermost: bool = False) -> None:
    """`for i<d> in range(n)` for each of `dims`, outermost first, around `inside()`;
    with `chunks`, the first loop runs as that many parallel chunks (`chunk` names one).
    `innermost`: `inside()` writes no loop, so the last loop may be split (`inner_loop`)."""
    if not dims:
        inside()
        return
    size = body.dim(shape_atom, dims[0])
    prefetch = _prefetch(body, shape_atom, dims[0]) if innermost and len(dims) == 1 else None
    if innermost and len(dims) == 1 and not chunks and (prefetch or not parallel):
        inner_loop(body, f"i{dims[0]}", size, inside, prefetch, parallel)
        return
    if chunks:
        w = body.w
        with w.block(f"for chunk in numba.prange({chunks})"):
            with w.block(f"for i{dims[0]} in range(chunk * {size} // {chunks}, "
                         f"(chunk + 1) * {size} // {chunks})"):
                _loops(body, shape_atom, dims[1:], False, inside, innermost=innermost)
        return
    loop = "numba.prange" if parallel else "range"
    with body.w.block(f"for i{dims[0]} in {loop}({size})"):
        _loops(body, shape_atom, dims[1:], False, inside, innermost=innermost)


def _prefetch(body: LoopBody, shape_atom: Atom, dim: int) -> tuple[str, int] | None:
    """Software prefetch (`lib/prefetch.py`) for the innermost loop of a nest over
    more bytes than the caches keep: in chunks of rows at least a chunk long; of rows
    ahead for shorter rows (chunk 0), from more bytes than one core's L2 keeps (each
    core's share of a threaded reduction over rows, such as a vmap'd dot product,
    comes from L3 then)."""
    aval = shape_atom.aval
    size = aval.size * aval.dtype.itemsize
    if aval.shape[dim] >= PREFETCH_CHUNK and size >= PREFETCH_MIN_BYTES:
        return body.use("prefetch_ahead", "cpu.lib.prefetch"), PREFETCH_CHUNK
    if aval.shape[dim] < PREFETCH_CHUNK and size >= ROWS_PREFETCH_MIN_BYTES and dim and \
            dim == aval.ndim - 1:
        return body.use("prefetch_rows_ahead", "cpu.lib.prefetch"), 0
    return None


def _emit_body(body: LoopBody, nest: LoopNest, outs: Outs, index: Index,
               kept: list[int], accs: list[Accumulator] | None) -> None:
    if writes_in_place(body.ge, nest):
        # A store over a value the nest reads at this index: every value first, then
        # the stores, so no read sees a store.
        values = [(v, _named(body, v, index)) for v in nest.stores]
        for v, name in values:
            value = store_value(name, v.aval.dtype, body.ge.mod)
            body.w.line(f"{outs[id(v)].at(body.unsigned(index))} = {value}")
        return
    reduces = iter(range(len(nest.reduces)))
    for root in _ordered_roots(nest):
        if isinstance(root, Var):
            _store(body, root, outs[id(root)], index)
        elif accs is not None:
            _update(body, accs[next(reduces)], index)
        else:
            _update_in_memory(body, root, outs, index, tuple(index[d] for d in kept))


def _store(body: LoopBody, v: Var, ref: Ref | None, index: Index) -> None:
    if ref is None:  # a row group's scalar: the variable is the value
        body.ge.bind(v, Ref(body.define(_named(body, v, index)), v.aval.update(shape=())))
        return
    value = store_value(body.value(v, index), v.aval.dtype, body.ge.mod)
    body.w.line(f"{ref.at(body.unsigned(index))} = {value}")


def _scalars(eqn: Eqn) -> list:
    return [v.aval.update(shape=()) for v in eqn.outputs]


def _update(body: LoopBody, acc: Accumulator, index: Index) -> None:
    eqn = acc.eqn
    n = len(eqn.outputs)
    if acc.helper is not None and monoid(eqn) == "add":
        factors = body.product(eqn.inputs[0], index)
        if factors is not None:  # a dot product: one rounding per step, and FMA's speed
            fma = body.ge.mod.use("fma_reassoc")
            dtype = eqn.outputs[0].aval.dtype
            body.w.line(f"{acc.names[0]} = {alias(dtype)}({fma}({acc.names[0]}, "
                        f"{', '.join(factors)}))")
            return
    xs = [body.value(a, index) for a in eqn.inputs[:n]]
    if acc.helper is not None:
        dtype = eqn.outputs[0].aval.dtype
        body.w.line(f"{acc.names[0]} = {alias(dtype)}({acc.helper}({acc.names[0]}, {xs[0]}))")
        if acc.nan is not None:
            body.w.line(f"{acc.nan} = {acc.nan} | ({xs[0]} != {xs[0]})")
        return
    scalars = _scalars(eqn)
    current = [Ref(a, s) for a, s in zip(acc.names, scalars, strict=True)]
    new = body.ge.sub_emitter(body.w).emit_graph(
        eqn.params["to_apply"], current + [Ref(x, s) for x, s in zip(xs, scalars, strict=True)])
    body.w.line(f"{', '.join(acc.names)} = {', '.join(r.name for r in new)}")


def _update_in_memory(body: LoopBody, eqn: Eqn, outs: Outs, index: Index,
                      kept_index: Index) -> None:
    n = len(eqn.outputs)
    scalars = _scalars(eqn)
    xs = [Ref(body.value(a, index), s) for a, s in zip(eqn.inputs[:n], scalars, strict=True)]
    current = []
    for v, s in zip(eqn.outputs, scalars, strict=True):
        name = body.ge.fresh("acc")
        body.w.line(f"{name} = {load(outs[id(v)], body.unsigned(kept_index), body.ge.mod)}")
        current.append(Ref(name, s))
    new = body.ge.sub_emitter(body.w).emit_graph(eqn.params["to_apply"], current + xs)
    for v, r in zip(eqn.outputs, new, strict=True):
        body.w.line(f"{outs[id(v)].at(body.unsigned(kept_index))} = "
                    f"{store_value(r.name, v.aval.dtype, body.ge.mod)}")


def _ordered_roots(nest: LoopNest) -> list[Var | Eqn]:
    position = {id(e): i for i, e in enumerate(nest.eqns)}
    roots: list[tuple[int, Var | Eqn]] = []
    for v in nest.stores:
        producer = next(e for e in nest.eqns if any(o is v for o in e.outputs))
        roots.append((position[id(producer)], v))
    roots += [(position[id(e)], e) for e in nest.reduces]
    return [r for _, r in sorted(roots, key=lambda p: p[0])]


def _init_accumulators(body: LoopBody, nest: LoopNest) -> list[Accumulator]:
    accs = []
    for eqn in nest.reduces:
        n = len(eqn.outputs)
        acc = Accumulator(eqn, [body.ge.fresh("acc") for _ in range(n)])
        for name, init in zip(acc.names, eqn.inputs[n:], strict=True):
            body.w.line(f"{name} = {body.value(init, ())}")
        op = monoid(eqn)
        if op in _VECTOR_MONOIDS and eqn.outputs[0].aval.dtype in _VECTOR_DTYPES:
            acc.helper = body.ge.mod.use(_VECTOR_MONOIDS[op])
            if op in ("max", "min"):
                acc.nan = body.ge.fresh("nan_seen")
                body.w.line(f"{acc.nan} = False")
        accs.append(acc)
    return accs


def _finish_accumulators(body: LoopBody, nest: LoopNest, outs: Outs,
                         kept_index: Index, accs: list[Accumulator]) -> None:
    for acc in accs:
        if acc.nan is not None:
            nan = literal(np.nan, acc.eqn.outputs[0].aval.dtype)
            body.w.line(f"{acc.names[0]} = {nan} if {acc.nan} else {acc.names[0]}")
        for v, name in zip(acc.eqn.outputs, acc.names, strict=True):
            ref = outs.get(id(v))
            if ref is None:  # a scalar result, or a row group's scalar
                body.ge.bind(v, Ref(body.define(name), v.aval.update(shape=())))
            else:
                body.w.line(f"{ref.at(body.unsigned(kept_index))} = "
                            f"{store_value(name, v.aval.dtype, body.ge.mod)}")


def _init_in_memory(body: LoopBody, nest: LoopNest, outs: Outs, kept: list[int],
                    shape_atom: Atom, parallel: bool) -> None:
    """Fill the reduce outputs with their init values (accumulation happens in memory)."""
    index = tuple(f"i{d}" for d in kept)

    def fill() -> None:
        for eqn in nest.reduces:
            n = len(eqn.outputs)
            for v, init in zip(eqn.outputs, eqn.inputs[n:], strict=True):
                value = store_value(body.value(init, ()), v.aval.dtype, body.ge.mod)
                body.w.line(f"{outs[id(v)].at(body.unsigned(index))} = {value}")
    _loops(body, shape_atom, kept, parallel, fill)


def _as_kernel(ge: GraphEmitter, free: dict[str, None], w: SourceWriter) -> None:
    """Move a parallel loop nest into its own `parallel=True` function and call it."""
    name = ge.mod.kernel("parallel_nest", f"@numba.njit({NJIT_OPTIONS}, parallel=True)",
                         list(free), w)
    ge.w.line(f"{name}({', '.join(free)})")
