"""The cpu emitter of an op with no emitter of its own: its NumPy reference, run in numba
object mode through `numba.fallback`."""

from __future__ import annotations

from ....core import Eqn
from ...numba.codegen import GraphEmitter, Ref
from ...numba.fallback import numba_type
from .common import bind_all, names


def emit_fallback(ge: GraphEmitter, eqn: Eqn) -> None:
    """Run the op's NumPy reference in numba object mode (see `numba.fallback`)."""
    table, index = ge.mod.fallback(eqn)
    outs = [Ref(ge.fresh(f"{eqn.op.name}_out"), v.aval) for v in eqn.outputs]
    types = ", ".join(f'{r.name}="{numba_type(r.aval)}"' for r in outs)
    args = "".join(f", {ge.ref(a).name}" for a in eqn.inputs)
    with ge.w.block(f"with numba.objmode({types})"):
        ge.w.line(f"{names(outs)}, = fallback.run({table}, {index}{args})")
    bind_all(ge, eqn, outs)
