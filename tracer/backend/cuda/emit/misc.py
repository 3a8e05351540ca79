"""cuda emitters of the identities, general reshapes (views), get_dimension_size and the
collectives when the compiled graph is one replica."""

from __future__ import annotations

from ....core import Eqn
from ...numba.codegen import Ref
from ...numba.collectives import collective_case
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
    """Across the processes of a job: on the host (MPI on host buffers); for one replica,
    `numba.collectives.collective_case`."""
    out, case = eqn.outputs[0], collective_case(eqn)
    if case == "processes":
        run_on_host(ge, eqn)
    elif case == "replica_id" or (case == "zeros" and not out.aval.ndim):
        ge.bind(out, Ref(literal(0, out.aval.dtype), out.aval))
    elif case == "zeros":
        ge.bind(out, ge.view(f"rt.zeros({ge.shape_tuple(out)}, np.{out.aval.dtype.name})",
                             out.aval, "zeros"))
    else:
        ge.bind(out, ge.ref(eqn.inputs[0]))


EMITTERS: dict[str, OpEmitter] = {
    "stop_gradient": _identity, "checkpoint_name": _identity, "optimization_barrier": _identity,
    "reshape": _reshape,
    "get_dimension_size": _get_dimension_size,
    **{name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                      "all_to_all", "collective_permute", "replica_id")},
}
