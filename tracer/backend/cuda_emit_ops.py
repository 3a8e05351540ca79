"""Host-side emitters for the ops that are not fused into loop-nest kernels.

`DEVICE_EMITTERS[op_name](ge, eqn)` writes host code through the graph emitter
and binds the outputs. Control flow (`while`, `conditional`, `scan`, `call`
and friends) runs on the host with its sub-graphs emitted inline; a loop
predicate or branch index computed on the device is copied back (one small
synchronizing copy per test). Reshapes are views. `dot_general` is
`cuda_gemm`; gather, scatter, dynamic_update_slice, pad and concatenate are
`cuda_emit_index`; convolution `cuda_emit_conv`; the RNG ops `cuda_emit_rng`, the windowed ops
`cuda_emit_window`, batch norm `cuda_emit_batch_norm`, the bit-level ops
`cuda_emit_bits`. The ops in `HOST_OPS` (and the cases in `HOST_FALLBACKS`)
run through the CPU backend's compiled code for that one eqn, with their
operands copied to the host and their results copied back.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..core import Eqn, Graph, Literal, Var
from ..errors import TracerValueError, UnsupportedOpError
from .cpu_codegen import Ref
from .cpu_scalar import literal
from .cuda_codegen import CudaGraphEmitter, array_type
from . import cuda_emit_batch_norm, cuda_emit_bits, cuda_emit_rng, cuda_emit_window
from .cuda_emit_conv import emit_conv
from .cuda_emit_index import INDEX_EMITTERS
from .cuda_gemm import emit_dot_general

OpEmitter = Callable[[CudaGraphEmitter, Eqn], None]

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
}


def _refs(ge: CudaGraphEmitter, eqn: Eqn) -> list[Ref]:
    return [ge.ref(a) for a in eqn.inputs]


def _bind_all(ge: CudaGraphEmitter, eqn: Eqn, refs: Sequence[Ref]) -> None:
    for v, r in zip(eqn.outputs, refs, strict=True):
        ge.bind(v, r)


def _carry(ge: CudaGraphEmitter, refs: Sequence[Ref], hint: str) -> list[Ref]:
    """Host variables holding the device arrays of `refs` (loop carries, branch results)."""
    out = []
    for ref in refs:
        name = ge.fresh(hint)
        ge.mod.types[name] = array_type(ref.aval)
        out.append(Ref(f"{name}[0]" if ref.scalar else name, ref.aval))
    _assign(ge, out, refs)
    return out


def _assign(ge: CudaGraphEmitter, targets: Sequence[Ref], refs: Sequence[Ref]) -> None:
    if targets:
        names = [t.name.split("[")[0] for t in targets]
        ge.w.line(f"{', '.join(names)} = {', '.join(ge.array_of(r) for r in refs)}")


# ------------------------------------------------------------------ control flow

def _while(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = _refs(ge, eqn)
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts = refs[:nc], refs[nc:nc + nb]
    carry = _carry(ge, refs[nc + nb:], "carry")
    with ge.w.block("while True"):
        [pred] = ge.sub_emitter().emit_graph(p["condition"], cconsts + carry)
        with ge.w.block(f"if not {ge.on_host(pred)}"):  # the predicate, copied back
            ge.w.line("break")
        new = ge.sub_emitter().emit_graph(p["body"], bconsts + carry)
        _assign(ge, carry, new)
    _bind_all(ge, eqn, carry)


def _conditional(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    index, *operands = _refs(ge, eqn)
    branches = eqn.params["branch_computations"]
    results = [Ref(ge.fresh("result"), v.aval) for v in eqn.outputs]
    results = [Ref(f"{r.name}[0]" if r.scalar else r.name, r.aval) for r in results]
    for r in results:
        ge.mod.types[r.name.split("[")[0]] = array_type(r.aval)
    chosen = ge.fresh("branch")
    ge.w.line(f"{chosen} = {ge.on_host(index)}")
    for k, graph in enumerate(branches):
        if len(branches) == 1:
            _assign(ge, results, ge.sub_emitter().emit_graph(graph, operands))
            continue
        last = k == len(branches) - 1
        header = "else" if last else f"{'if' if k == 0 else 'elif'} {chosen} == {k}"
        with ge.w.block(header):  # seed rule: an index out of range runs the last branch
            _assign(ge, results, ge.sub_emitter().emit_graph(graph, operands))
    _bind_all(ge, eqn, results)


def _scan(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = _refs(ge, eqn)
    nconsts, ncarry = p["num_consts"], p["num_carry"]
    consts, xs = refs[:nconsts], refs[nconsts + ncarry:]
    carry = _carry(ge, refs[nconsts:nconsts + ncarry], "carry")
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
        _assign(ge, carry, outs[:ncarry])
    _bind_all(ge, eqn, carry + ys)


def _inline(param: str) -> OpEmitter:
    """An op that calls the graph in params[param] with its operands (call, checkpoint,
    composite, custom derivative calls: the derivative rules are not needed to run it)."""
    def emit(ge: CudaGraphEmitter, eqn: Eqn) -> None:
        _bind_all(ge, eqn, ge.sub_emitter().emit_graph(eqn.params[param], _refs(ge, eqn)))
    return emit


def _identity(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    _bind_all(ge, eqn, _refs(ge, eqn)[:len(eqn.outputs)])


# ------------------------------------------------------------------ shapes

def _reshape(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    """A general reshape of a C-contiguous array is a view (unit reshapes are fused)."""
    x, out = ge.ref(eqn.inputs[0]), eqn.outputs[0]
    ge.bind(out, ge.view(f"{ge.array_of(x)}.reshape({ge.shape_tuple(out)})", out.aval,
                         "reshape"))


def _get_dimension_size(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    size = ge.dim(eqn.inputs[0], eqn.params["dimension"])
    out = eqn.outputs[0]
    ge.bind(out, ge.host_scalar(size, out.aval.dtype, "size"))


# ------------------------------------------------------------------ collectives

def _collective(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    """A compiled graph runs one replica (as on the CPU backend): all_reduce, all_gather,
    reduce_scatter, all_to_all are the identity, replica_id is 0, collective_permute
    copies if (0, 0) is a pair and gives zeros otherwise."""
    p, out = eqn.params, eqn.outputs[0]
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


# ------------------------------------------------------------------ ops run on the host

def run_on_host(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    """Copy the operands to the host, run the CPU backend's code for this one eqn, copy
    the results back (`HOST_OPS`)."""
    from .base import get_backend  # (the cpu backend, imported when first needed)
    from .cuda_arrays import HostOp
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


DEVICE_EMITTERS: dict[str, OpEmitter] = {
    "while": _while, "conditional": _conditional, "scan": _scan, "call": _inline("to_apply"),
    "checkpoint": _inline("to_apply"), "composite": _inline("to_apply"),
    "custom_jvp_call": _inline("call"), "custom_vjp_call": _inline("call"),
    "stop_gradient": _identity, "optimization_barrier": _identity,
    "dot_general": emit_dot_general, "conv_general_dilated": emit_conv, "reshape": _reshape,
    "get_dimension_size": _get_dimension_size, **INDEX_EMITTERS, **cuda_emit_bits.EMITTERS,
    **cuda_emit_rng.EMITTERS, **cuda_emit_window.EMITTERS, **cuda_emit_batch_norm.EMITTERS,
    **{name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                      "all_to_all", "collective_permute", "replica_id")},
}


def emit_op(ge: CudaGraphEmitter, eqn: Eqn) -> None:
    emitter = DEVICE_EMITTERS.get(eqn.op.name)
    if emitter is not None:
        emitter(ge, eqn)
    elif eqn.op.name in HOST_OPS:
        run_on_host(ge, eqn)
    else:
        raise UnsupportedOpError(
            f"cuda backend: no kernel for op {eqn.op.name!r} (add a device emitter to "
            f"cuda_emit_ops.DEVICE_EMITTERS, or list it in HOST_OPS to run it on the host)")
