"""cuda emitters of the identities, general reshapes (views), get_dimension_size and the
collectives when the compiled graph is one replica."""

from __future__ import annotations

from ....core import Eqn
from ....errors import TracerValueError
from ...numba.codegen import Ref
from ...numba.scalar import literal
from ..emitter import DeviceGraphEmitter
from .common import OpEmitter, bind_all, operand_refs
from .host import run_on_host


def _identity(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    bind_all(ge, eqn, operand_refs(ge, eqn)[:len(eqn.outputs)])


def _reshape(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """A general reshape of a C-contiguous array is a view (unit reshapes are fused)."""
    x, out = ge.ref(eqn.inputs[0]), eqn.outputs[0]
    ge.bind(out, ge.view(f"{ge.array_of(x)}.reshape({ge.shape_tuple(out)})", out.aval,
                         "reshape"))


def _get_dimension_size(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    size = ge.dim(eqn.inputs[0], eqn.params["dimension"])
    out = eqn.outputs[0]
    ge.bind(out, ge.host_scalar(size, out.aval.dtype, "size"))


def _collective(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """Across the processes of a job: on the host (MPI on host buffers). One replica (as
    on the CPU backend): all_reduce, all_gather, reduce_scatter, all_to_all are the
    identity, replica_id is 0, collective_permute copies if (0, 0) is a pair and gives
    zeros otherwise."""
    p, out = eqn.params, eqn.outputs[0]
    if p.get("axis_size", 1) != 1 and p.get("axis_name") is None:
        run_on_host(ge, eqn)
        return
    if p.get("axis_size", 1) != 1:
        raise TracerValueError(f"{eqn.op.name}: a collective over axis {p['axis_name']!r} of "
                               f"size {p['axis_size']} ran outside vmap(..., axis_name="
                               f"{p['axis_name']!r})")
    if eqn.op.name == "replica_id":
        ge.bind(out, Ref(literal(0, out.aval.dtype), out.aval))
    elif eqn.op.name == "collective_permute" and (0, 0) not in p["source_target_pairs"]:
        if out.aval.ndim:
            ge.bind(out, ge.view(f"rt.zeros({ge.shape_tuple(out)}, np.{out.aval.dtype.name})",
                                 out.aval, "zeros"))
        else:
            ge.bind(out, Ref(literal(0, out.aval.dtype), out.aval))
    else:
        ge.bind(out, ge.ref(eqn.inputs[0]))


EMITTERS: dict[str, OpEmitter] = {
    "stop_gradient": _identity, "optimization_barrier": _identity, "reshape": _reshape,
    "get_dimension_size": _get_dimension_size,
    **{name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                      "all_to_all", "collective_permute", "replica_id")},
}
