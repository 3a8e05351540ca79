"""Which outputs the cpu backend writes into donated inputs (`jit(donate_argnums=)`).

XLA's buffer assignment lets an output share a donated parameter's buffer when the
program no longer needs the parameter's value once the output is written. Here an
output qualifies when, in the fusion plan:

- a loop nest without reductions stores it, over the donated input's shape and
  dtype (rank >= 1, not a 16-bit float, whose kernels see uint16 views);
- that nest reads the input only at its own index (element-wise, no broadcast,
  slice, transpose or other index map of it), so each element is read before the
  same element is written (the nest's stores follow all of its loads, `nests`);
- no later step reads the input, and the input is not itself an output.

Each donated input takes at most one output. The module then writes that output
through the input's parameter, so read and write share one pointer and LLVM
vectorizes the loop (two parameters that may alias get a runtime overlap check that
falls back to scalar code when they do).
"""

from __future__ import annotations

from typing import Sequence

from ...core import Graph, Var
from ..numba.fusion import LoopNest, OpStep, Plan, RowGroup, nest_reads
from ..numba.scalar import HALVES
from .buffers import op_reads


def donated_outputs(graph: Graph, plan: Plan, donated: Sequence[int]) -> dict[int, int]:
    """id(output var) -> position of the donated input whose buffer holds it."""
    outputs = {id(a) for a in graph.outputs if isinstance(a, Var)}
    free = [k for k in sorted(set(donated)) if k < len(graph.inputs)
            and _donatable(graph.inputs[k]) and id(graph.inputs[k]) not in outputs]
    reads = [_step_reads(plan, step) for step in plan.steps]
    chosen: dict[int, int] = {}
    for pos, step in enumerate(plan.steps):
        if not isinstance(step, LoopNest) or step.reduces or not free:
            continue
        identity = tuple(range(len(step.shape)))
        nest_maps = nest_reads(plan, step)
        for store in step.stores:
            if id(store) not in outputs or id(store) in chosen:
                continue
            for k in free:
                v = graph.inputs[k]
                same = v.aval.shape == store.aval.shape == step.shape and \
                    v.aval.dtype == store.aval.dtype
                in_place = nest_maps.get(id(v), {identity}) == {identity}
                later = any(id(v) in r for r in reads[pos + 1:])
                if same and in_place and not later:
                    chosen[id(store)] = k
                    free.remove(k)
                    break
    return chosen


def _donatable(v: Var) -> bool:
    return v.aval.ndim > 0 and v.aval.dtype not in HALVES


def _step_reads(plan: Plan, step: LoopNest | OpStep | RowGroup) -> set[int]:
    """ids of the values a step reads from memory (an op: its operands and what it
    computes from them itself)."""
    if isinstance(step, OpStep):
        return op_reads(plan, step.eqn)
    nests = step.nests if isinstance(step, RowGroup) else [step]
    return {v for nest in nests for v in nest_reads(plan, nest)}
