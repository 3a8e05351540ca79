"""cuda emitters for host callbacks and the token / host-communication ops: they run
on the host between kernels. The operands are copied to the host, the op's reference
runs (the callback is called directly, as the interpreter does), the results are
copied back to the device. Tokens stay device-side empty arrays: an output token is
the input token, or a fresh one.

The generated host code reads:

    # calls "log_step"
    host_ops[2](loss)
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from ....core import Eqn, Graph, TokenAval, Var
from ....interpret import run_graph
from ....ops.feeds import on_device
from ....ops.tokens import after_all_p
from ...numba.codegen import Ref
from ..emitter import DeviceGraphEmitter, array_type
from ..lib.arrays import HostOp


def _is_token(aval: Any) -> bool:
    return isinstance(aval, TokenAval)


def _reference(eqn: Eqn, inputs: Sequence[Var], outputs: Sequence[Var]) -> Graph:
    """A graph of the one eqn with its tokens made inside (created by after_all), so
    only values cross between device and host."""
    eqns, operands, it = [], [], iter(inputs)
    for a in eqn.inputs:
        if _is_token(a.aval):
            token = Var(a.aval)
            eqns.append(Eqn(after_all_p, (), {}, (token,), eqn.source))
            operands.append(token)
        else:
            operands.append(a if not isinstance(a, Var) else next(it))
    all_outs = tuple(Var(v.aval) for v in eqn.outputs)
    eqns.append(Eqn(eqn.op, tuple(operands), eqn.params, all_outs, eqn.source))
    kept = tuple(o for o, v in zip(all_outs, eqn.outputs, strict=True) if v in outputs)
    return Graph(tuple(inputs), tuple(eqns), kept, f"host_{eqn.op.name}")


def emit_on_host(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    values_in = [a for a in eqn.inputs if isinstance(a, Var) and not _is_token(a.aval)]
    fresh = [Var(a.aval) for a in values_in]
    values_out = [v for v in eqn.outputs if not _is_token(v.aval)]
    graph = _reference(eqn, fresh, values_out)
    runner = HostOp(lambda: functools.partial(_run_on_cuda, graph),
                    [v.aval for v in fresh], [v.aval for v in values_out])
    ge.mod.host_ops.append(runner)
    what = eqn.params.get("callback") or eqn.params.get("printer")
    if what is not None:
        ge.w.comment(f"calls {what}")
    call = (f"host_ops[{len(ge.mod.host_ops) - 1}]"
            f"({', '.join(ge.array_of(ge.ref(a)) for a in values_in)})")
    results = [ge.fresh(f"{eqn.op.name}_out") for _ in values_out]
    ge.w.line(f"{', '.join(results)}, = {call}" if results else call)
    by_var = {}
    for v, name in zip(values_out, results, strict=True):
        ge.mod.types[name] = array_type(v.aval)
        by_var[id(v)] = Ref(f"{name}[0]" if not v.aval.ndim else name, v.aval)
    tokens = [a for a in eqn.inputs if _is_token(a.aval)]
    for v in eqn.outputs:
        ge.bind(v, by_var.get(id(v)) or _token_ref(ge, v, tokens))


def _run_on_cuda(graph: Graph, *arrays: Any) -> list[Any]:
    with on_device("cuda"):  # (infeed / outfeed use the cuda device's queues)
        return run_graph(graph, list(arrays))


def _token_ref(ge: DeviceGraphEmitter, out: Var, tokens: Sequence[Any]) -> Ref:
    return ge.ref(tokens[0]) if tokens else Ref(ge.alloc(out, "token"), out.aval)


def _after_all(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    ge.bind(eqn.outputs[0], _token_ref(ge, eqn.outputs[0], eqn.inputs))


EMITTERS: dict[str, Any] = {
    "after_all": _after_all,
    **{name: emit_on_host for name in ("pure_callback", "io_callback", "debug_callback",
                                       "debug_print", "infeed", "outfeed", "send", "recv")},
}
