"""Where the top-level arrays loop nests write live: a buffer whose value no later
step reads, of the same shape and dtype, is reused (a chain of stencil steps then needs
two buffers, not one per step: each fresh buffer costs page faults on every call), and
an element-wise nest may write over a value it reads last and only at its own index
(a product's result, then its activation in place). Such a nest computes all of its
values before it stores any (`writes_in_place`, read by `nests`)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Union

from ...core import Eqn, Var
from ..numba.codegen import GraphEmitter, Ref
from ..numba.loops import LoopBody
from ..numba.scalar import storage_dtype
from ..numba.fusion import LoopNest, OpStep, Plan, RowGroup, nest_reads


@dataclass
class _Pool:
    """The top-level buffers nests write, for reuse once no later step reads their
    value (a chain of stencil steps then needs two buffers, not one per step: each
    fresh buffer costs page faults on every call). Only values that nothing but loop
    nests read qualify: an op's emitter may keep a view of its operand. A nest whose
    last reader reads it only at its own index (element-wise) may write in place."""

    last_read: dict[int, int]  # id(value) -> position of its last reader
    held: list[tuple[str, Var, int]] = field(default_factory=list)  # (name, value, written at)
    in_place: set[int] = field(default_factory=set)  # values stored over what they read


_POOLS: "weakref.WeakKeyDictionary[GraphEmitter, _Pool]" = weakref.WeakKeyDictionary()


def nest_buffer(ge: GraphEmitter, plan: Plan, step: LoopNest | RowGroup, v: Var) -> str:
    """A buffer for `v`, written by `step`: the loop's own buffer if `v` is a carry a
    loop body returns (`emit.control`), else a free one of its shape and dtype, if any."""
    carried = getattr(ge, "carry_buffers", {}).get(id(v))
    if carried is not None:
        return carried
    if not ge.top or id(v) in plan.outputs:
        return ge.alloc(v)
    pool = _POOLS.get(ge)
    if pool is None:
        pool = _POOLS[ge] = _Pool(_last_reads(plan))
    here = next(k for k, s in enumerate(plan.steps) if s is step)
    own_index = _read_at_own_index(plan, step)
    for k, (name, w, written) in enumerate(pool.held):
        last = pool.last_read.get(id(w), here + 1)
        if w.aval.shape == v.aval.shape and w.aval.dtype == v.aval.dtype and written < here \
                and (last < here or (last == here and id(w) in own_index)):
            pool.held[k] = (name, v, here)
            if last == here:
                pool.in_place.add(id(v))
            return name
    name = _operand_buffer(ge, plan, pool, here, own_index, v) or ge.alloc(v)
    pool.held.append((name, v, here))
    return name


def _operand_buffer(ge: GraphEmitter, plan: Plan, pool: _Pool, here: int,
                    own_index: list[int], v: Var) -> str | None:
    """The buffer of a value this nest reads last, only at its own index, that an op
    wrote (a product's result, then its element-wise activation written over it), or
    None. Only a top-level buffer parameter qualifies, never a view an op made."""
    buffers = {p.name for p in ge.mod.params if p.kind == "buffer"} - \
        set(ge.out_params.values())
    for w in (o for i in own_index if i in plan.producers for o in plan.producers[i].outputs):
        ref = ge.env.get(id(w))
        if id(w) in own_index and pool.last_read.get(id(w)) == here and ref is not None \
                and ref.name in buffers and not ref.lead and w.aval == v.aval \
                and all(name != ref.name for name, _, _ in pool.held):
            pool.in_place.add(id(v))
            return ref.name
    return None


def _read_at_own_index(plan: Plan, step: LoopNest | RowGroup) -> list[int]:
    """ids of the values a nest without reductions reads only at its own index (each
    element read before the same element is stored; `_buffer` checks the shape)."""
    if not isinstance(step, LoopNest) or step.reduces:
        return []
    identity = tuple(range(len(step.shape)))  # (in the nest's order: the same code each run)
    return [v for v, maps in nest_reads(plan, step).items() if maps == {identity}]


def writes_in_place(ge: GraphEmitter, nest: LoopNest) -> bool:
    """Whether a store of `nest` overwrites a value the nest reads (a donated input, a
    pool buffer, or a row group's row kept in this value's buffer: `rows_in_buffers`):
    then the nest computes every value before it stores any."""
    pool = _POOLS.get(ge)
    in_place = pool.in_place if pool is not None else set()
    donors = getattr(ge, "donors", {})
    rows = _ROWS_IN_PLACE.get(ge, set())
    return any(id(v) in donors or id(v) in in_place or id(v) in rows for v in nest.stores)


_ROWS_IN_PLACE: "weakref.WeakKeyDictionary[GraphEmitter, set[int]]" = \
    weakref.WeakKeyDictionary()


def rows_in_buffers(plan: Plan, group: RowGroup) -> dict[int, Var]:
    """id(row value) -> the value whose buffer holds its rows, for a row group's values
    held per row (more dims than the rows, read by no step outside the group) whose one
    later reader in the group is an element-wise nest reading them only at its own
    index and storing a value of the same type: that nest's buffer row holds the row
    until the nest writes its own value over it (a row softmax: the exponentials in the
    result's row, then divided in place), so no row buffer, and the row's lines are in
    cache when the result is written."""
    found: dict[int, Var] = {}
    for k, nest in enumerate(group.nests):
        for v in nest.stores:
            if id(v) not in group.scratch or v.aval.ndim <= group.depth:
                continue
            readers = [n for n in group.nests[k + 1:] if id(v) in nest_reads(plan, n)]
            if len(readers) != 1 or id(v) not in _read_at_own_index(plan, readers[0]):
                continue
            taken = {id(w) for w in found.values()}
            target = next((w for w in readers[0].stores if id(w) not in group.scratch
                           and w.aval == v.aval and id(w) not in taken), None)
            if target is not None:
                found[id(v)] = target
    return found


def mark_rows_in_place(ge: GraphEmitter, v: Var) -> None:
    """`v`'s nest stores over a row value it reads (`rows_in_buffers`)."""
    _ROWS_IN_PLACE.setdefault(ge, set()).add(id(v))


def _last_reads(plan: Plan) -> dict[int, int]:
    """id(value) -> position of the last step reading it (-1: none), for the values
    that only loop nests read."""
    last: dict[int, int] = {}
    opaque: set[int] = set()
    for k, step in enumerate(plan.steps):
        if isinstance(step, OpStep):
            opaque |= op_reads(plan, step.eqn)
            continue
        for nest in step.nests if isinstance(step, RowGroup) else [step]:
            last.update((v, k) for v in nest_reads(plan, nest))
            last.update((id(v), last.get(id(v), -1)) for v in nest.stores)
    return {v: k for v, k in last.items() if v not in opaque}


def op_reads(plan: Plan, eqn: Eqn) -> set[int]:
    """ids of the values an op's emitter reads: its inputs, and what it reads through
    the producers the plan leaves to it (a gather computes its index array's wrap of
    negative indices per element: the wrapped rows and columns are read then)."""
    found: set[int] = set()
    stack = [a for a in eqn.inputs if isinstance(a, Var)]
    while stack:
        v = stack.pop()
        if id(v) in found:
            continue
        found.add(id(v))
        if id(v) not in plan.materialized and id(v) in plan.producers:
            stack += [a for a in plan.producers[id(v)].inputs if isinstance(a, Var)]
    return found


# ------------------------------------------------------------------ a nest's outputs

Outs = dict[int, Union[Ref, None]]  # id(var) -> where the nest writes it (None: a scalar)


def allocate_outputs(body: LoopBody, nest: LoopNest, group: RowGroup, threads: str | None,
              step: LoopNest | RowGroup, made: Outs, aliases: dict[int, Var]) -> Outs:
    """Where the nest's stored values and non-scalar reduce results go: arrays from
    the graph emitter (or a buffer no later step reads), or (for a row group's own
    values) a scalar per outer iteration, the rows of a later value's buffer
    (`rows_in_buffers`) or a row buffer per chunk of rows, allocated in front of the
    loops. `made`: the buffers allocated so far for the group's values."""
    ge, outs = body.ge, {}
    for v in nest.stores + [v for e in nest.reduces for v in e.outputs if v.aval.ndim]:
        if id(v) in made:
            outs[id(v)] = made[id(v)]
        elif id(v) not in group.scratch:
            outs[id(v)] = made[id(v)] = _bound_buffer(body, step, v)
        elif id(v) in aliases and _rows_in(body, step, made, aliases[id(v)]):
            outs[id(v)] = Ref(made[id(aliases[id(v)])].name, v.aval)
            ge.bind(v, outs[id(v)])
        elif v.aval.ndim == group.depth:
            outs[id(v)] = None
        else:
            name = body.define(ge.fresh(f"{ge.hint(v)}_rows"))
            sizes = [body.dim(v, d) for d in range(group.depth, v.aval.ndim)]
            body.w.line(f"{name} = np.empty(({body.outer(threads) if threads else 1}, "
                        f"{', '.join(sizes)}), np.{storage_dtype(v.aval.dtype).name})")
            outs[id(v)] = Ref(name, v.aval, ("chunk" if threads else "0",), group.depth)
            ge.bind(v, outs[id(v)])
    return outs


def _rows_in(body: LoopBody, step: LoopNest | RowGroup, made: Outs, w: Var) -> bool:
    """Allocate `w`'s buffer now; whether it may hold a row value until `w` is stored
    (not when it holds a value the group reads: a donated input, a buffer in place)."""
    made[id(w)] = made.get(id(w)) or _bound_buffer(body, step, w)
    if writes_in_place(body.ge, LoopNest((), [w])):
        return False
    mark_rows_in_place(body.ge, w)
    return True


def _bound_buffer(body: LoopBody, step: LoopNest | RowGroup, v: Var) -> Ref:
    """`v`'s array from the graph emitter (`nest_buffer`), bound."""
    ref = Ref(body.outer(nest_buffer(body.ge, body.plan, step, v)), v.aval)
    body.ge.bind(v, ref)
    return ref
