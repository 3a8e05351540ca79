"""cpu emitters of the collectives: across the processes of a job, a host step; for one
replica, the seeds' identities."""

from __future__ import annotations

from ....core import Eqn
from ...numba.codegen import GraphEmitter, Ref, store_value
from ...numba.collectives import collective_case, into_runner
from ...numba.scalar import literal
from .fallback import emit_fallback


def _collective(ge: GraphEmitter, eqn: Eqn) -> None:
    """Across the processes of a job: a host step (object mode) that calls MPI through
    the op's reference; for one replica, `numba.collectives.collective_case`."""
    out, case = eqn.outputs[0], collective_case(eqn)
    if case == "processes" and out.aval.ndim:
        _host_step_into(ge, eqn)
    elif case == "processes":
        emit_fallback(ge, eqn)
    elif case == "replica_id" or (case == "zeros" and not out.aval.ndim):
        ge.bind(out, Ref(literal(0, out.aval.dtype), out.aval))
    elif case == "zeros":
        target = ge.alloc(out)
        zero = literal(0, out.aval.dtype)
        ge.w.line(f"{target}[...] = {store_value(zero, out.aval.dtype, ge.mod)}")
        ge.bind(out, Ref(target, out.aval))
    else:
        ge.bind(out, ge.ref(eqn.inputs[0]))


def _host_step_into(ge: GraphEmitter, eqn: Eqn) -> None:
    """Object mode that writes the collective's result into its buffer (`into_runner`)."""
    table, index = ge.mod.fallback(eqn, run=into_runner(eqn))
    out = eqn.outputs[0]
    target = ge.alloc(out)
    args = "".join(f", {ge.ref(a).name}" for a in eqn.inputs)
    with ge.w.block("with numba.objmode()"):
        ge.w.line(f"fallback.run({table}, {index}, {target}{args})")
    ge.bind(out, Ref(target, out.aval))


EMITTERS = {name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                           "all_to_all", "collective_permute", "replica_id")}
