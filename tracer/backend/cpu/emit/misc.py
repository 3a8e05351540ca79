"""cpu emitters for composite (its decomposition, inlined), the calls of a sub-graph
(checkpoint, custom derivative calls: inlined), the identities (optimization_barrier:
generated code runs in order, so inputs are computed first; stop_gradient) and
custom_call (a call of the registered target, compiled by numba, from the kernel; a
target numba cannot compile is called from object mode, as a host callback).
"""

from __future__ import annotations

from typing import Any

from ....core import Eqn
from ....errors import TracerTypeError, UnsupportedOpError
from ....ops.misc import custom_call_target
from ...numba.codegen import GraphEmitter, Ref
from ...numba.scalar import HALVES
from ..lib.custom_calls import code_digest, publish
from .callbacks import emit_host_call
from .common import OpEmitter, bind_all, operand_refs


def _composite(ge: GraphEmitter, eqn: Eqn) -> None:
    refs = [ge.ref(a) for a in eqn.inputs]
    for v, r in zip(eqn.outputs, ge.sub_emitter().emit_graph(eqn.params["to_apply"], refs),
                    strict=True):
        ge.bind(v, r)


def _barrier(ge: GraphEmitter, eqn: Eqn) -> None:
    for v, a in zip(eqn.outputs, eqn.inputs, strict=True):
        ge.bind(v, ge.ref(a))


def _as_array(ge: GraphEmitter, ref: Ref) -> str:
    """An array argument for a value (a 0-d array for a scalar)."""
    if not ref.scalar:
        return ref.name
    name = ge.fresh("operand")
    ge.w.line(f"{name} = np.full(1, {ref.name}, np.{ref.aval.dtype.name}).reshape(())")
    return name


def _custom_call(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    fn = custom_call_target(p["target"], p["revision"])
    avals = [v.aval for v in eqn.outputs] + [a.aval for a in eqn.inputs]
    if any(a.dtype in HALVES for a in avals):
        raise UnsupportedOpError(f"custom_call {p['target']!r}: float16 / bfloat16 buffers "
                                 f"cannot be passed to numba code; convert to float32 around "
                                 f"the call")
    try:
        target = ge.mod.use(publish(p["target"], p["revision"], fn, avals),
                            "cpu.lib.custom_calls")
    except TracerTypeError:  # not numba-compilable: called as a host callback instead
        emit_host_call(ge, eqn)
        return
    ge.w.comment(f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}, "
                 f"code digest {code_digest(fn)}")
    outs = []
    for v in eqn.outputs:
        if v.aval.ndim:
            buf = ge.alloc(v)
            ge.w.line(f"{buf}[...] = 0")
        else:
            buf = ge.fresh("result")
            ge.w.line(f"{buf} = np.zeros(1, np.{v.aval.dtype.name}).reshape(())")
        outs.append(buf)
    ins = [_as_array(ge, ge.ref(a)) for a in eqn.inputs]
    ge.w.line(f"{target}({', '.join(outs + ins)})")
    for v, buf in zip(eqn.outputs, outs, strict=True):
        if v.aval.ndim:
            ge.bind(v, Ref(buf, v.aval))
        else:
            value = ge.fresh("value")
            ge.w.line(f"{value} = {buf}[()]")
            ge.bind(v, Ref(value, v.aval))


def _inline(param: str) -> OpEmitter:
    """An op that calls the graph in params[param] with its operands (checkpoint, custom
    derivative calls): the derivative rules are not needed to run it."""
    def emit(ge: GraphEmitter, eqn: Eqn) -> None:
        bind_all(ge, eqn, ge.sub_emitter().emit_graph(eqn.params[param], operand_refs(ge, eqn)))
    return emit


def _identity(ge: GraphEmitter, eqn: Eqn) -> None:
    ge.bind(eqn.outputs[0], ge.ref(eqn.inputs[0]))


EMITTERS: dict[str, Any] = {"composite": _composite, "optimization_barrier": _barrier,
                            "custom_call": _custom_call, "checkpoint": _inline("to_apply"),
                            "custom_jvp_call": _inline("call"),
                            "custom_vjp_call": _inline("call"), "stop_gradient": _identity,
                            "checkpoint_name": _identity}
