"""cpu emitters of the collectives: across the processes of a job, a host step; for one
replica, the seeds' identities."""

from __future__ import annotations

from ....core import Eqn
from ...numba.codegen import GraphEmitter, Ref, store_value
from ...numba.collectives import (collective_case, compiled_all_reduce, failure_runner,
                                  into_runner)
from ...numba.scalar import literal, storage_dtype
from .fallback import emit_fallback


def _collective(ge: GraphEmitter, eqn: Eqn) -> None:
    """Across the processes of a job: a host step (object mode) that calls MPI through
    the op's reference; for one replica, `numba.collectives.collective_case`."""
    out, case = eqn.outputs[0], collective_case(eqn)
    compiled = compiled_all_reduce(eqn) if case == "processes" else None
    if compiled is not None:
        _compiled_all_reduce(ge, eqn, *compiled)
    elif case == "processes" and out.aval.ndim:
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


def _compiled_all_reduce(ge: GraphEmitter, eqn: Eqn, code: int, signature: int) -> None:
    """MPI called from compiled code (`numba.lib.mpi.mpi_all_reduce`); a status other than
    OK leaves for Python (`mpi_failed`, object mode) only to raise its error. The signature's digest
    is read from `dims`, so the source stays the same for every operand shape."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    run = ge.mod.use("mpi_all_reduce", "numba.lib.mpi")
    failed = ge.mod.use("mpi_failed", "numba.lib.mpi")
    digest = ge.mod.size(("replica signature", signature), signature, "signature")
    dtype = f"np.{storage_dtype(out.aval.dtype).name}"
    if out.aval.ndim:
        operand, target = ge.ref(x).name, ge.alloc(out)
    else:  # (a scalar travels in a one-element array)
        operand, target = ge.fresh("operand"), ge.fresh("total")
        ge.w.line(f"{operand} = np.full(1, {ge.ref(x).name}, {dtype})")
        ge.w.line(f"{target} = np.empty(1, {dtype})")
    status = ge.fresh("status")
    ge.w.line(f"{status} = {run}({operand}, {target}, {digest}, {code})")
    table, index = ge.mod.fallback(eqn, run=failure_runner(eqn))
    with ge.w.block(f"if {status} != 0"):
        ge.w.line(f"{failed}({table}, {index}, {status})")
    if out.aval.ndim:
        ge.bind(out, Ref(target, out.aval))
    else:
        total = ge.fresh("total")
        ge.w.line(f"{total} = {target}[0]")
        ge.bind(out, Ref(total, out.aval))


EMITTERS = {name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                           "all_to_all", "collective_permute", "replica_id")}
