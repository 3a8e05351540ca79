"""The fusion plan: which values live in memory, and which loop nest computes what.

A graph becomes a list of steps in execution order:

- `LoopNest`: one explicit loop nest over an iteration shape. Its *stores* are
  values written at the nest's own index; its *reduces* fold values of that
  shape over `reduce_dims`. Everything else it needs is computed on demand
  inside the loop body from element-wise and index-mapping producers that have
  no other consumer ("inlined" values), or read from memory.
- `OpStep`: an op with its own emitter (dot_general, control flow, gather, ...).

A value is *materialized* (held in an array, or a scalar variable at rank 0)
when it is a graph output, feeds an op that is not fused, is consumed by
several loop nests (unless it is a cheap expansion of smaller arrays, such as a
one-hot matrix), is read by one nest through several index paths (the shifted
slices of a stencil, which would otherwise recompute it per path, step after
step), or is an expensive value that a broadcast would recompute for every
element. Index maps (broadcast_in_dim, transpose, slice, ... and pad and
concatenate, which pick by the index the operand to read) are never
materialized for their consumers' sake: each consumer nest recomputes them,
which is just different index arithmetic (a pad read through several paths is
the exception: it is stored, so that its test runs once per element).

Then two passes join nests. A nest *merges* into an earlier one over the same
shape when it reads that nest's stores, and only at its own index (the shape
rules then guarantee the two shapes are equal for every size, which keeps the
generated code shape-generic), or when the two are independent siblings over the
same static shape and reduced dims. Consecutive nests form a *row group* when each
reads what the earlier ones produced only at the same outer indices (or reads none
of it and has the same outer sizes); a nest that reads nothing of the open group
and cannot join it runs before it, so that later nests still can. Nests of a
row group share their outer loops, so a row is computed, reduced and normalized
while it is in cache, and values only the group reads need a row (or a scalar),
not a whole array. A row softmax is three nests (max; exp and its sum; divide) in
one row group. The plan knows nothing about numba, so the CUDA backend reuses it.

This module assigns eqns to nests and schedules them (`plan_graph`); the plan's
records are in `fusion_steps.py`, the merging and row-group passes in `fusion_join.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...core import Eqn, Graph, Var, readers
from .fusion_join import _drop_private_stores, _group_rows, _merge, nest_reads
from .fusion_steps import IndexMap, LoopNest, OpStep, Plan, RowGroup, Step
from .index_maps import ELEMENTWISE_FAMILIES, INDEX_OPS, index_map

# the plan's records and nest_reads, importable from here as before the split
__all__ = ["CHEAP_OPS", "INDEX_OPS", "MONOIDS", "IndexMap", "LoopNest", "OpStep", "Plan",
           "RowGroup", "Step", "index_operand", "is_loop_op", "is_reduce", "is_unit_reshape",
           "monoid", "nest_reads", "plan_graph"]

# Cheap enough to recompute per element when a broadcast repeats them.
CHEAP_OPS = frozenset({"add", "sub", "mul", "neg", "abs", "max", "min", "select", "clamp",
                       "compare", "convert_element_type", "bitwise_and", "bitwise_or",
                       "bitwise_xor", "bitwise_not", "real", "imag", "sign", "floor",
                       "ceil"}) | INDEX_OPS


def is_unit_reshape(eqn: Eqn) -> bool:
    """A reshape that only adds or drops size-1 dims (an index map without division)."""
    src, dst = eqn.inputs[0].aval.shape, eqn.outputs[0].aval.shape
    return [d for d in src if d != 1] == [d for d in dst if d != 1]


def is_loop_op(eqn: Eqn) -> bool:
    """Computed per element inside a loop nest (single result, element-wise or index map)."""
    if eqn.op.multiple_results:
        return False
    if eqn.op.name == "reshape":
        return is_unit_reshape(eqn)
    return index_map(eqn) is not None


def is_reduce(eqn: Eqn) -> bool:
    return eqn.op.name == "reduce"


MONOIDS = frozenset({"add", "mul", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor"})


def monoid(eqn: Eqn) -> str | None:
    """The op of a reduce whose computation is just `op(acc, x)` (either order), if any."""
    graph = eqn.params["to_apply"]
    if len(graph.eqns) != 1 or len(graph.inputs) != 2 or len(graph.outputs) != 1:
        return None
    inner = graph.eqns[0]
    wired = sorted(map(id, inner.inputs)) == sorted(map(id, graph.inputs)) and \
        inner.inputs[0] is not inner.inputs[1]
    plain = not any(v for v in inner.params.values())
    if inner.op.name in MONOIDS and wired and plain and graph.outputs[0] is inner.outputs[0]:
        return inner.op.name
    return None



def index_operand(eqn: Eqn) -> int | None:
    """The position of the index array of a gather or scatter (None for other ops)."""
    if eqn.op.name == "gather":
        return 1
    return len(eqn.outputs) if eqn.op.name == "scatter" else None


def plan_graph(graph: Graph, fuse: bool = True, inline_indices: bool = False) -> Plan:
    """The steps for `graph`; `fuse=False` gives one step per op (for testing fusion).
    `inline_indices`: cheap element-wise producers of a gather's / scatter's index
    array (NumPy's wrap of negative indices) join an unscheduled nest of that array's
    shape: the op's emitter computes them per element, in its own loop."""
    producers = {id(v): e for e in graph.eqns for v in e.outputs}
    users = readers(graph)
    outputs = {id(a) for a in graph.outputs if isinstance(a, Var)}
    ctx = _Assignment(users, producers, outputs if fuse else set(producers), {}, {}, {},
                      {id(v) for v in graph.inputs})
    if fuse and inline_indices:
        for eqn in graph.eqns:
            k = index_operand(eqn)
            if k is not None and isinstance(eqn.inputs[k], Var):
                nest = LoopNest(eqn.inputs[k].aval.shape)
                ctx.nests[id(nest)] = nest
                ctx.index_nests[id(eqn)] = id(nest)
    for eqn in reversed(graph.eqns):
        _assign(eqn, ctx)
    nest_of, nests, materialized = ctx.nest_of, ctx.nests, ctx.materialized
    steps = _schedule(graph, nest_of, nests)
    plan = Plan(steps, materialized, producers, users, outputs)
    if fuse:
        plan.steps = _merge(plan)
        _drop_private_stores(plan)
        plan.steps = _group_rows(plan)
    return plan


# A read path: the index-mapping eqns (with operand slots) a nest reads a value through.
Path = tuple[tuple[int, int], ...]


@dataclass
class _Assignment:
    """What `_assign` has decided so far (it walks the graph backwards)."""

    users: dict[int, list[Eqn]]
    producers: dict[int, Eqn]
    outputs: set[int]                  # ids of values that must be stored
    nest_of: dict[int, set[int]]       # id(eqn) -> ids of the nests computing it
    nests: dict[int, LoopNest]
    paths: dict[int, set[Path]]        # id(var) -> the index paths nests read it through
    materialized: set[int]
    index_nests: dict[int, int] = field(default_factory=dict)  # id(gather/scatter) -> nest


def _assign(eqn: Eqn, ctx: _Assignment) -> None:
    """Decide (in reverse order) whether `eqn` is inlined into its consumers' nest."""
    if is_reduce(eqn):
        dims = tuple(eqn.params["dimensions"])
        _new_nest(eqn, LoopNest(eqn.inputs[0].aval.shape, reduces=[eqn], reduce_dims=dims), ctx)
        return
    if not is_loop_op(eqn):
        ctx.materialized.update(id(v) for v in eqn.outputs)
        return
    out = eqn.outputs[0]
    targets, opaque = _consumer_nests(out, ctx)
    paths = _read_paths(out, ctx)
    stored = id(out) in ctx.outputs or opaque or out.aval.ndim == 0
    if not stored and _recomputed(eqn, ctx, targets, paths):
        ctx.nest_of[id(eqn)] = targets  # computed inside every nest that reads it
        ctx.paths[id(out)] = paths
        return
    _new_nest(eqn, LoopNest(out.aval.shape, stores=[out]), ctx)


def _recomputed(eqn: Eqn, ctx: _Assignment, targets: set[int], paths: set[Path]) -> bool:
    """Whether the nests reading `eqn`'s value compute it themselves.

    Index maps are just index arithmetic, except that a pad read through several
    paths is stored (its test then runs once per element). A value a nest reads
    through several index paths (the shifted slices of a stencil) is computed once
    per path, and a chain of such steps would multiply: it is stored unless cheap
    and read at most twice. A value several nests read is stored, unless it is a
    cheap expansion of smaller arrays (a one-hot matrix from labels), cheaper to
    recompute than to write and read back."""
    if eqn.op.name in INDEX_OPS:
        return eqn.op.name != "pad" or len(paths) < 2
    cheap = eqn.op.name in CHEAP_OPS
    if len(paths) > (2 if cheap else 1):
        return False
    if len(targets) == 1:
        return cheap or eqn.outputs[0].aval.size >= math.prod(ctx.nests[next(iter(targets))].shape)
    return len(targets) > 1 and cheap and _expands(eqn, ctx.producers, 4)


def _expands(eqn: Eqn, producers: dict[int, Eqn], depth: int) -> bool:
    """Whether a cheap element-wise value is made of much smaller arrays through
    broadcasts (a one-hot matrix from labels)."""
    if eqn.op.family not in ELEMENTWISE_FAMILIES:
        return False
    size = eqn.outputs[0].aval.size
    for a in eqn.inputs:
        src = producers.get(id(a)) if isinstance(a, Var) else None
        if a.aval.size * 8 <= size or (src is not None and src.op.name == "broadcast_in_dim"
                                       and src.inputs[0].aval.size * 8 <= size):
            continue
        if src is None or depth == 0 or src.op.name not in CHEAP_OPS or \
                not _expands(src, producers, depth - 1):
            return False
    return True


def _read_paths(out: Var, ctx: _Assignment) -> set[Path]:
    """The index paths through which loop nests read `out` (() for a nest's own index)."""
    paths: set[Path] = set()
    for user in ctx.users.get(id(out), []):
        if id(user) not in ctx.nest_of:
            continue  # a non-fused op reads it from memory
        via = ctx.paths.get(id(user.outputs[0]), {()}) if not is_reduce(user) else {()}
        if user.op.name in INDEX_OPS:
            slots = [k for k, a in enumerate(user.inputs) if a is out]
            paths |= {p + ((id(user), k),) for p in via for k in slots}
        else:
            paths |= via
    return paths


def _new_nest(eqn: Eqn, nest: LoopNest, ctx: _Assignment) -> None:
    ctx.nests[id(nest)] = nest
    ctx.nest_of[id(eqn)] = {id(nest)}
    ctx.materialized.update(id(v) for v in eqn.outputs)
    ctx.paths.update((id(v), {()}) for v in eqn.outputs)


def _consumer_nests(value: Var, ctx: _Assignment) -> tuple[set[int], bool]:
    """The nests that read a value, and whether some non-fused op reads it (a gather
    or scatter reading it only as its index array: that op's index nest)."""
    targets: set[int] = set()
    opaque = False
    for user in ctx.users.get(id(value), []):
        if id(user) in ctx.nest_of:
            targets |= ctx.nest_of[id(user)]
        elif id(user) in ctx.index_nests and all(
                (a is value) == (k == index_operand(user)) for k, a in enumerate(user.inputs)):
            targets.add(ctx.index_nests[id(user)])
        else:
            opaque = True
    return targets, opaque


def _schedule(graph: Graph, nest_of: dict[int, set[int]],
              nests: dict[int, LoopNest]) -> list[Step]:
    """Steps in graph order; a nest runs where its root (last) eqn was."""
    steps: list[Step] = []
    for eqn in graph.eqns:
        ids = nest_of.get(id(eqn))
        if ids is None:
            steps.append(OpStep(eqn))
            continue
        for nid in ids:
            nests[nid].eqns.append(eqn)
        nest = nests[next(iter(ids))] if len(ids) == 1 else None
        if nest is not None and (eqn in nest.reduces or _stores_of(eqn, nest)):
            steps.append(nest)
    return steps


def _stores_of(eqn: Eqn, nest: LoopNest) -> bool:
    return any(v is s for v in eqn.outputs for s in nest.stores)
