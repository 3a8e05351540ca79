"""What a compiled collective does, the same on both numba backends."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core import Eqn
from ...errors import TracerValueError
from ...ops.replicas import compiled_failure, compiled_signature, monoid, run_across_processes
from .fallback import Runner, from_kernel
from .lib.mpi import DTYPES, OPS, publish
from .scalar import HALVES


def collective_case(eqn: Eqn) -> str:
    """'processes': across the processes of an MPI job (a host step that calls MPI through
    the op's reference). Else one replica (inside vmap, collectives were batched away):
    'replica_id' is 0, 'zeros' for a collective_permute whose pairs do not include
    (0, 0), 'identity' for all_reduce, all_gather, reduce_scatter, all_to_all and the
    other permutes."""
    p = eqn.params
    if p.get("axis_size", 1) != 1 and p.get("axis_name") is None:
        return "processes"
    if p.get("axis_size", 1) != 1:
        raise TracerValueError(f"{eqn.op.name}: a collective over axis {p['axis_name']!r} of "
                               f"size {p['axis_size']} ran outside vmap(..., axis_name="
                               f"{p['axis_name']!r})")
    if eqn.op.name == "replica_id":
        return "replica_id"
    if eqn.op.name == "collective_permute" and (0, 0) not in p["source_target_pairs"]:
        return "zeros"
    return "identity"


def into_runner(eqn: Eqn) -> Runner:
    """The host step of a collective across processes with an array result: called as
    `run(table, index, out, *operands)` from object mode, it writes the result straight
    into the kernel's buffer `out` (for an all-reduce, MPI's last receive lands there),
    so no copy follows. It passes the eqn's own params, whose signature digest is
    cached."""
    name, params = eqn.op.name, eqn.params
    in_avals, aval = [a.aval for a in eqn.inputs], eqn.outputs[0].aval

    def call(out: np.ndarray, *operands: Any) -> tuple[()]:
        args = tuple(from_kernel(x, a) for x, a in zip(operands, in_avals, strict=True))
        with np.errstate(all="ignore"):
            run_across_processes(name, args, params, out.view(aval.dtype)
                                 if aval.dtype in HALVES else out)
        return ()
    return call


def compiled_all_reduce(eqn: Eqn) -> tuple[int, int] | None:
    """(reduction code, signature digest) when compiled code can run this all-reduce
    across processes itself (`lib.mpi.mpi_all_reduce`): over the whole job, a plain
    monoid (add, mul, max, min) of float32/64 or int32/64, MPI reachable from compiled
    code; None for a host step."""
    if eqn.op.name != "all_reduce" or eqn.params["replica_groups"] is not None:
        return None
    p, aval = eqn.params, eqn.inputs[0].aval
    name = monoid(p["to_apply"])
    if name not in OPS or aval.dtype not in DTYPES:
        return None
    if aval.dtype.itemsize * aval.size >= 1 << 31:  # (MPI's int byte counts)
        return None
    signature = compiled_signature("all_reduce", aval, p)
    if signature is None:
        return None
    publish(aval.dtype)  # (before the generated code is linked)
    return OPS[name], signature


def failure_runner(eqn: Eqn) -> Runner:
    """What compiled code calls (object mode) when its MPI status is not OK: raises
    that status's error, as the host step would have."""
    name, params, aval = eqn.op.name, eqn.params, eqn.inputs[0].aval

    def call(status: Any) -> tuple[()]:
        compiled_failure(name, int(status), aval, params)
        return ()
    return call
