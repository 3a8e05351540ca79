"""cpu emitters of the collectives: across the processes of a job, a host step; for one
replica, the seeds' identities."""

from __future__ import annotations

from ....core import Eqn
from ....errors import TracerValueError
from ...numba.codegen import GraphEmitter, Ref, store_value
from ...numba.scalar import literal
from .fallback import emit_fallback


def _collective(ge: GraphEmitter, eqn: Eqn) -> None:
    """Across the processes of a job: a host step (object mode) that calls MPI through
    the op's reference. One replica (inside vmap, collectives were batched away):
    all_reduce, all_gather, reduce_scatter, all_to_all are the identity, replica_id is
    0, collective_permute copies if (0, 0) is a pair and gives zeros otherwise."""
    p, out = eqn.params, eqn.outputs[0]
    if p.get("axis_size", 1) != 1 and p.get("axis_name") is None:
        emit_fallback(ge, eqn)
        return
    if p.get("axis_size", 1) != 1:
        raise TracerValueError(f"{eqn.op.name}: a collective over axis {p['axis_name']!r} of "
                               f"size {p['axis_size']} ran outside vmap(..., axis_name="
                               f"{p['axis_name']!r})")
    if eqn.op.name == "replica_id":
        ge.bind(out, Ref(literal(0, out.aval.dtype), out.aval))
    elif eqn.op.name == "collective_permute" and (0, 0) not in p["source_target_pairs"]:
        zero = literal(0, out.aval.dtype)
        if out.aval.ndim:
            target = ge.alloc(out)
            ge.w.line(f"{target}[...] = {store_value(zero, out.aval.dtype, ge.mod)}")
            ge.bind(out, Ref(target, out.aval))
        else:
            ge.bind(out, Ref(zero, out.aval))
    else:
        ge.bind(out, ge.ref(eqn.inputs[0]))


EMITTERS = {name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                           "all_to_all", "collective_permute", "replica_id")}
