"""Control flow on the host: `while`, `conditional`, `scan` and the calls of a sub-graph
(call, checkpoint, composite, custom derivative calls), their sub-graphs emitted inline.
A loop predicate or branch index computed on the device is copied back (one small
synchronizing copy per test).
"""

from __future__ import annotations

from ....core import Eqn
from ...numba.codegen import Ref
from ..emitter import DeviceGraphEmitter, array_type
from .common import OpEmitter, assign, bind_all, carry_copy, operand_refs


def _while(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = operand_refs(ge, eqn)
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts = refs[:nc], refs[nc:nc + nb]
    carry = carry_copy(ge, refs[nc + nb:], "carry")
    with ge.w.block("while True"):
        [pred] = ge.sub_emitter().emit_graph(p["condition"], cconsts + carry)
        with ge.w.block(f"if not {ge.on_host(pred)}"):  # the predicate, copied back
            ge.w.line("break")
        new = ge.sub_emitter().emit_graph(p["body"], bconsts + carry)
        assign(ge, carry, new)
    bind_all(ge, eqn, carry)


def _conditional(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    index, *operands = operand_refs(ge, eqn)
    branches = eqn.params["branch_computations"]
    results = [Ref(ge.fresh("result"), v.aval) for v in eqn.outputs]
    results = [Ref(f"{r.name}[0]" if r.scalar else r.name, r.aval) for r in results]
    for r in results:
        ge.mod.types[r.name.split("[")[0]] = array_type(r.aval)
    chosen = ge.fresh("branch")
    ge.w.line(f"{chosen} = {ge.on_host(index)}")
    for k, graph in enumerate(branches):
        if len(branches) == 1:
            assign(ge, results, ge.sub_emitter().emit_graph(graph, operands))
            continue
        last = k == len(branches) - 1
        header = "else" if last else f"{'if' if k == 0 else 'elif'} {chosen} == {k}"
        with ge.w.block(header):  # seed rule: an index out of range runs the last branch
            assign(ge, results, ge.sub_emitter().emit_graph(graph, operands))
    bind_all(ge, eqn, results)


def _scan(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = operand_refs(ge, eqn)
    nconsts, ncarry = p["num_consts"], p["num_carry"]
    consts, xs = refs[:nconsts], refs[nconsts + ncarry:]
    carry = carry_copy(ge, refs[nconsts:nconsts + ncarry], "carry")
    ys = [ge.new_ref(v, "ys") for v in eqn.outputs[ncarry:]]
    length = ge.mod.size(("param", id(eqn), "length"), p["length"], "length")
    step, i = ge.fresh("step"), ge.fresh("i")
    body_avals = p["body"].in_avals[nconsts + ncarry:]
    with ge.w.block(f"for {step} in range({length})"):
        ge.w.line(f"{i} = {length} - 1 - {step}" if p["reverse"] else f"{i} = {step}")
        slices = [ge.view(f"rt.row({ge.array_of(x)}, {i})", aval, f"{x.name.split('[')[0]}_row")
                  for x, aval in zip(xs, body_avals, strict=True)]
        outs = ge.sub_emitter().emit_graph(p["body"], consts + carry + slices)
        for y, out in zip(ys, outs[ncarry:], strict=True):  # before the carry moves on
            ge.w.line(f"rt.put_row({y.name}, {i}, {ge.array_of(out)})")
        assign(ge, carry, outs[:ncarry])
    bind_all(ge, eqn, carry + ys)


def _inline(param: str) -> OpEmitter:
    """An op that calls the graph in params[param] with its operands (call, checkpoint,
    composite, custom derivative calls: the derivative rules are not needed to run it)."""
    def emit(ge: DeviceGraphEmitter, eqn: Eqn) -> None:
        bind_all(ge, eqn, ge.sub_emitter().emit_graph(eqn.params[param], operand_refs(ge, eqn)))
    return emit


EMITTERS: dict[str, OpEmitter] = {
    "while": _while, "conditional": _conditional, "scan": _scan, "call": _inline("to_apply"),
    "checkpoint": _inline("to_apply"), "composite": _inline("to_apply"),
    "custom_jvp_call": _inline("call"), "custom_vjp_call": _inline("call"),
}
