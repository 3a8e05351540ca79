"""Ops without a device kernel run on the host: their operands are copied to the host,
the cpu backend's compiled code for that one eqn runs, the results are copied back.
"""

from __future__ import annotations

from ....core import Eqn, Graph, Literal, Var
from ...base import get_backend
from ...numba.codegen import Ref
from ..emitter import DeviceGraphEmitter, array_type
from ..lib.arrays import HostOp

# Ops without a device kernel: run by the CPU backend on copies of their operands.
HOST_OPS = frozenset({
    "sort", "fft", "cholesky", "triangular_solve", "lu", "qr", "eigh",
    "svd", "custom_call", "custom_lin",
})

# Ops with a device kernel that hand one kind of eqn to the host all the same: their
# scalar computation is not element-wise code a kernel can inline (it holds a loop, a
# reduction, ...). Each reason names the case.
HOST_FALLBACKS = {
    "map": "a computation that is not element-wise scalar code",
    "reduce_window": "a computation that is not element-wise scalar code",
    "select_and_scatter": "a select or scatter computation that is not element-wise",
    **{name: "across the processes of an MPI job (host buffers)" for name in (
        "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
        "replica_id")},
}


def run_on_host(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    """Copy the operands to the host, run the CPU backend's code for this one eqn, copy
    the results back (`HOST_OPS`)."""
    inputs = [Var(a.aval) for a in eqn.inputs if isinstance(a, Var)]
    fresh = iter(inputs)
    operands = tuple(a if isinstance(a, Literal) else next(fresh) for a in eqn.inputs)
    outputs = tuple(Var(v.aval) for v in eqn.outputs)
    graph = Graph(tuple(inputs), (Eqn(eqn.op, operands, eqn.params, outputs, eqn.source),),
                  outputs, f"host_{eqn.op.name}")
    runner = HostOp(lambda: get_backend("cpu").compile(graph), [v.aval for v in inputs],
                    [v.aval for v in outputs])
    ge.mod.host_ops.append(runner)
    args = ", ".join(ge.array_of(ge.ref(a)) for a in eqn.inputs if isinstance(a, Var))
    results = [ge.fresh(f"{eqn.op.name}_out") for _ in eqn.outputs]
    ge.w.line(f"{', '.join(results)}, = host_ops[{len(ge.mod.host_ops) - 1}]({args})")
    for v, name in zip(eqn.outputs, results, strict=True):
        ge.mod.types[name] = array_type(v.aval)
        ge.bind(v, Ref(f"{name}[0]" if not v.aval.ndim else name, v.aval))
