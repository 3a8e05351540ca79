"""An element-wise loop nest computed inside the op whose result it reads (an epilogue).

An average pool is a reduce_window of an add and then a divide by the window's size:
the fusion plan makes the divide a loop nest of its own, which reads the pooled sums
back from memory and writes them again (on a 32x64x56x56 batch, a third of the pool's
time). When the nest right after an op's step is the only reader of the op's result,
reads it only at its own index and reduces nothing, the op's emitter computes the
nest's values where it would store its result, from the value in a register, and the
result is never written (`GraphEmitter.absorbed` skips the nest's step).

Not when a store of the nest goes into a donated input: the op still reads its
operands while the nest's values are stored.
"""

from __future__ import annotations

from typing import Sequence

from ....core import Eqn, Var
from ...numba.codegen import GraphEmitter, Ref, store_value
from ...numba.fusion import LoopNest, OpStep, nest_reads
from ...numba.loops import LoopBody
from ...numba.source import SourceWriter
from ..buffers import nest_buffer


def epilogue_nest(ge: GraphEmitter, eqn: Eqn) -> LoopNest | None:
    """The loop nest right after `eqn`'s step that can be its epilogue (module doc)."""
    plan, out = ge.plan, eqn.outputs[0]
    if plan is None or len(eqn.outputs) != 1 or id(out) in plan.outputs:
        return None
    at = next((k for k, s in enumerate(plan.steps) if isinstance(s, OpStep) and s.eqn is eqn),
              None)
    nest = plan.steps[at + 1] if at is not None and at + 1 < len(plan.steps) else None
    if not isinstance(nest, LoopNest) or nest.reduces or nest.shape != out.aval.shape:
        return None
    inside = {id(e) for e in nest.eqns}
    donors = getattr(ge, "donors", {})
    if any(id(user) not in inside for user in plan.users.get(id(out), [])) or \
            any(id(v) in donors for v in nest.stores):
        return None
    identity = tuple(range(out.aval.ndim))
    return nest if nest_reads(plan, nest).get(id(out)) == {identity} else None


class Epilogue:
    """The stores of an epilogue nest (`epilogue_nest`) at one index of the op's result,
    from that element's value. Its arrays are allocated (and bound) when it is made, so
    make it before the op's loops; `free` gathers the outer names its code reads (the
    parameters of a parallel kernel)."""

    def __init__(self, ge: GraphEmitter, nest: LoopNest, value: Var):
        self.ge, self.nest, self.value = ge, nest, value
        self.free: dict[str, None] = {}
        self.targets = []
        for v in nest.stores:
            ref = Ref(nest_buffer(ge, ge.plan, nest, v), v.aval)
            ge.bind(v, ref)
            self.targets.append(ref)
        ge.absorbed.add(id(nest))
        names = ", ".join(dict.fromkeys(e.op.hlo_name for e in nest.eqns))
        ge.w.comment(f"(the loop nest after it, {names}, is computed at its stores)")

    def store(self, w: SourceWriter, index: Sequence[str], expr: str) -> None:
        """The nest's values at `index`, where the op's result there is `expr`; every value
        is computed before any is stored (a store may go over an array the nest reads)."""
        body = LoopBody(self.ge, self.ge.plan, w, {id(v) for v in self.nest.stores},
                        self.free, set())
        body.remember(self.value, tuple(index), expr)
        values = [body.value(v, tuple(index)) for v in self.nest.stores]
        for ref, value in zip(self.targets, values, strict=True):
            body.outer(ref.name)
            w.line(f"{ref.at(body.unsigned(tuple(index)))} = "
                   f"{store_value(value, ref.aval.dtype, self.ge.mod)}")
