"""The two passes that join a fusion plan's loop nests (`fusion.plan_graph` runs
them): a nest *merges* into an earlier one over the same shape that it reads only at
its own index, or that is an independent sibling; consecutive nests that read each
other only at the same outer indices form a *row group* sharing their outer loops.
`nest_reads` (the values a nest reads, with their index maps) is here too.
"""

from __future__ import annotations

from ...core import Atom, Eqn, Literal
from .fusion_steps import IndexMap, LoopNest, OpStep, Plan, RowGroup, Step
from .index_maps import index_map


# ------------------------------------------------------------------ merging


def _merge(plan: Plan) -> list[Step]:
    merged: list[Step] = []
    for step in plan.steps:
        target = _merge_target(plan, merged, step) if isinstance(step, LoopNest) else None
        if target is None:
            merged.append(step)
        else:
            target.stores += step.stores
            target.reduces += step.reduces
            target.reduce_dims = target.reduce_dims or step.reduce_dims
            target.eqns += [e for e in step.eqns if e not in target.eqns]
    return merged


def _drop_private_stores(plan: Plan) -> None:
    """A value stored because two nests read it, whose readers all joined its own nest
    (`d` of `sum(d * d), d * 3`), is computed in that nest's body and never stored."""
    nests = [s for s in plan.steps if isinstance(s, LoopNest)]
    homes: dict[int, int] = {}  # id(eqn) -> how many nests compute it
    for nest in nests:
        for e in nest.eqns:
            homes[id(e)] = homes.get(id(e), 0) + 1
    for nest in nests:
        own = {id(e) for e in nest.eqns}
        identity = tuple(range(len(nest.shape)))
        private = [v for v in nest.stores if v.aval.ndim and id(v) not in plan.outputs and
                   all(id(u) in own and homes[id(u)] == 1 for u in plan.users.get(id(v), []))]
        reads = nest_reads(plan, nest) if private else {}
        for v in private:
            if reads.get(id(v)) == {identity} and (len(nest.stores) > 1 or nest.reduces):
                nest.stores.remove(v)
                plan.materialized.discard(id(v))


def _merge_target(plan: Plan, merged: list[Step], nest: LoopNest) -> LoopNest | None:
    """The nest `nest` can join: one it reads at its own index (which also proves, by
    the shape rules, that the two iterate over the same shape), that nothing scheduled
    since then feeds `nest`."""
    reads = nest_reads(plan, nest)
    identity = tuple(range(len(nest.shape)))
    for earlier in reversed(merged):
        produced = _produced(earlier)
        if isinstance(earlier, LoopNest) and _compatible(earlier, nest):
            maps = [reads[v] for v in _store_ids(earlier) if v in reads]
            if maps and all(m == {identity} for m in maps) and \
                    not any(v in reads for v in _reduce_out_ids(earlier)):
                return earlier
            if not maps and _siblings(earlier, nest) and not produced & set(reads):
                return earlier
        if produced & set(reads):
            return None  # `nest` depends on this step: it cannot move above it
    return None


def _siblings(a: LoopNest, b: LoopNest) -> bool:
    """Independent nests that share one loop: over the same static shape, both reducing
    the same dims or neither (the three sums of a cosine similarity in one pass). Equal
    sizes make this plan, and so this source, which serves only traces with this plan."""
    return a.shape == b.shape and bool(a.reduces) == bool(b.reduces) and \
        a.reduce_dims == b.reduce_dims


def _compatible(a: LoopNest, b: LoopNest) -> bool:
    if a.shape != b.shape or not a.shape:
        return False
    return not (a.reduces and b.reduces and a.reduce_dims != b.reduce_dims)


def _store_ids(step: LoopNest) -> set[int]:
    return {id(v) for v in step.stores}


def _reduce_out_ids(step: LoopNest) -> set[int]:
    return {id(v) for e in step.reduces for v in e.outputs}


def _produced(step: Step) -> set[int]:
    if isinstance(step, OpStep):
        return {id(v) for v in step.eqn.outputs}
    if isinstance(step, RowGroup):
        return set().union(*(_produced(n) for n in step.nests))
    return _store_ids(step) | _reduce_out_ids(step)


def nest_reads(plan: Plan, nest: LoopNest) -> dict[int, set[IndexMap]]:
    """The materialized values a nest's body reads, with the index maps it reads them at."""
    reads: dict[int, set[IndexMap]] = {}
    identity = tuple(range(len(nest.shape)))
    stack: list[tuple[Atom, IndexMap]] = []
    for store in nest.stores:
        stack += _operand_maps(plan.producers[id(store)], identity)
    for eqn in nest.reduces:
        n = len(eqn.outputs)
        stack += [(a, identity) for a in eqn.inputs[:n]] + [(a, ()) for a in eqn.inputs[n:]]
    seen: set[tuple[int, IndexMap]] = set()
    while stack:
        atom, index = stack.pop()
        if isinstance(atom, Literal) or (id(atom), index) in seen:
            continue
        seen.add((id(atom), index))
        if id(atom) in plan.materialized:
            reads.setdefault(id(atom), set()).add(index)
        else:
            stack += _operand_maps(plan.producers[id(atom)], index)
    return reads


def _operand_maps(eqn: Eqn, out: IndexMap) -> list[tuple[Atom, IndexMap]]:
    """Each operand of a fused eqn with the index map it is read at."""
    reads = index_map(eqn).reads
    return [(a, reads(eqn, k, out)) for k, a in enumerate(eqn.inputs)]


# ------------------------------------------------------------------ row groups

def _leading_kept(nest: LoopNest) -> int:
    """How many outer dims a nest can share: leading dims it does not reduce, when its
    reduced dims come last (accumulation in registers)."""
    if not nest.shape:
        return 0
    kept = [d for d in range(len(nest.shape)) if d not in nest.reduce_dims]
    if nest.reduces and not all(k < r for k in kept for r in nest.reduce_dims):
        return 0
    return next((d for d in range(len(nest.shape)) if d in nest.reduce_dims), len(nest.shape))


def _group_rows(plan: Plan) -> list[Step]:
    steps: list[Step] = []
    for step in plan.steps:
        if isinstance(step, LoopNest) and steps and _join(plan, steps, step):
            continue
        if isinstance(step, LoopNest) and steps and \
                isinstance(steps[-1], (LoopNest, RowGroup)) and \
                not _produced(steps[-1]) & set(nest_reads(plan, step)):
            # Independent of the last group: it runs first, and what comes next may
            # still join that group (distances, then their argmin, with the squared
            # norms of the centers computed in between).
            last = steps.pop()
            if not (steps and _join(plan, steps, step)):
                steps.append(step)
            steps.append(last)
            continue
        steps.append(step)
    for group in steps:
        if isinstance(group, RowGroup):
            group.scratch = _scratch(plan, group, steps)
    return steps


def _join(plan: Plan, steps: list[Step], nest: LoopNest) -> bool:
    """Add `nest` to the last step's row group, if it can share its rows."""
    last = steps[-1]
    if not isinstance(last, (LoopNest, RowGroup)):
        return False
    group = last if isinstance(last, RowGroup) else RowGroup(_leading_kept(last), [last])
    depth = _row_depth(plan, group, nest)
    if depth:
        group.depth = depth
        group.nests.append(nest)
        steps[-1] = group
    return bool(depth)


def _scratch(plan: Plan, group: RowGroup, steps: list[Step]) -> set[int]:
    """Values stored by the group that nothing outside it reads. An index map is
    recomputed in every nest that reads it, so an eqn of the group can also be in a
    later nest: each user must be computed by no step outside the group."""
    inside = {id(e) for n in group.nests for e in n.eqns}
    outside = {id(e) for s in steps if s is not group for e in _step_eqns(s)}
    stored = [v for n in group.nests for v in n.stores] + \
        [v for n in group.nests for e in n.reduces for v in e.outputs]
    return {id(v) for v in stored if id(v) not in plan.outputs and
            all(id(u) in inside and id(u) not in outside for u in plan.users.get(id(v), []))}


def _step_eqns(step: Step) -> list[Eqn]:
    if isinstance(step, OpStep):
        return [step.eqn]
    nests = step.nests if isinstance(step, RowGroup) else [step]
    return [e for n in nests for e in n.eqns]


def _row_depth(plan: Plan, group: RowGroup, nest: LoopNest) -> int:
    """The outer depth `nest` can share with `group` (0: it cannot join)."""
    depth = min(group.depth, _leading_kept(nest))
    reads = nest_reads(plan, nest)
    linked = False
    for produced in group.nests:
        for v in _produced(produced):
            for index in reads.get(v, ()):
                if tuple(index[:depth]) != tuple(range(depth)):
                    depth = min(depth, _prefix(index))
                linked = True
    if linked:
        return depth
    # An independent nest over the same outer rows joins too (the three sums of a
    # cosine similarity): equal static sizes make this plan, and so this source, which
    # only serves traces with the same plan.
    outer = group.nests[0].shape[:depth]
    return depth if depth and nest.shape[:depth] == outer else 0


def _prefix(index: IndexMap) -> int:
    """How many leading dims `index` reads at the loop's own indices."""
    return next((k for k, d in enumerate(index) if d != k), len(index))
