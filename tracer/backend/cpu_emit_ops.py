"""Emitters for the ops that are not fused into loop nests.

`OP_EMITTERS[op_name](ge, eqn)` writes the op's code through the graph emitter
`ge` and binds its outputs. Control flow (`while`, `conditional`, `scan`,
`call`) becomes native Python control flow in the compiled host function, with
the sub-graphs emitted inline. `dot_general` calls BLAS through `np.dot` on
2-D views (batch dims looped around it), and explicit loops for integer and
float16 operands (BLAS is float-only). Indexing ops live in `cpu_emit_index`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..core import Atom, Eqn, Graph, ShapedArray
from ..errors import TracerValueError
from .cpu_codegen import GraphEmitter, Ref, load, store_value
from . import (cpu_emit_conv, cpu_emit_decomp, cpu_emit_misc, cpu_emit_numerics, cpu_emit_rng,
               cpu_emit_sort, cpu_emit_window)
from .cpu_emit_index import INDEX_EMITTERS
from .cpu_fallback import numba_type
from .cpu_scalar import alias, cast, literal

OpEmitter = Callable[[GraphEmitter, Eqn], None]


def _refs(ge: GraphEmitter, eqn: Eqn) -> list[Ref]:
    return [ge.ref(a) for a in eqn.inputs]


def _carry(ge: GraphEmitter, eqn: Eqn, init: Sequence[Ref]) -> list[Ref]:
    """Fresh loop variables holding `init`, typed like the eqn's outputs."""
    refs = [Ref(ge.fresh("carry"), v.aval) for v in eqn.outputs[:len(init)]]
    if refs:
        ge.w.line(f"{_names(refs)} = {_names(init)}")
    return refs


def _names(refs: Sequence[Ref]) -> str:
    return ", ".join(r.name for r in refs)


def _bind_all(ge: GraphEmitter, eqn: Eqn, refs: Sequence[Ref]) -> None:
    for v, r in zip(eqn.outputs, refs, strict=True):
        ge.bind(v, r)


# ------------------------------------------------------------------ control flow

def _while(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = _refs(ge, eqn)
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts = refs[:nc], refs[nc:nc + nb]
    carry = _carry(ge, eqn, refs[nc + nb:])
    with ge.w.block("while True"):
        [pred] = ge.sub_emitter().emit_graph(p["condition"], cconsts + carry)
        with ge.w.block(f"if not {pred.name}"):
            ge.w.line("break")
        new = ge.sub_emitter().emit_graph(p["body"], bconsts + carry)
        if carry:
            ge.w.line(f"{_names(carry)} = {_names(new)}")
    _bind_all(ge, eqn, carry)


def _conditional(ge: GraphEmitter, eqn: Eqn) -> None:
    index, *operands = _refs(ge, eqn)
    branches = eqn.params["branch_computations"]
    results = [Ref(ge.fresh("result"), v.aval) for v in eqn.outputs]
    for k, graph in enumerate(branches):
        last = k == len(branches) - 1
        header = "else" if last else f"{'if' if k == 0 else 'elif'} {index.name} == {k}"
        if len(branches) == 1:
            _branch(ge, graph, operands, results)
            continue
        with ge.w.block(header):  # seed rule: an index out of range runs the last branch
            _branch(ge, graph, operands, results)
    _bind_all(ge, eqn, results)


def _branch(ge: GraphEmitter, graph: Graph, operands: list[Ref], results: list[Ref]) -> None:
    outs = ge.sub_emitter().emit_graph(graph, operands)
    if results:
        ge.w.line(f"{_names(results)} = {_names(outs)}")


def _scan(ge: GraphEmitter, eqn: Eqn) -> None:
    p = eqn.params
    refs = _refs(ge, eqn)
    nconsts, ncarry = p["num_consts"], p["num_carry"]
    consts, xs = refs[:nconsts], refs[nconsts + ncarry:]
    carry = _carry(ge, eqn, refs[nconsts:nconsts + ncarry])
    ys = [Ref(ge.alloc(v, "ys"), v.aval) for v in eqn.outputs[ncarry:]]
    length = ge.mod.size(("param", id(eqn), "length"), p["length"], "length")
    step, i = ge.fresh("step"), ge.fresh("i")
    with ge.w.block(f"for {step} in range({length})"):
        ge.w.line(f"{i} = {length} - 1 - {step}" if p["reverse"] else f"{i} = {step}")
        slices = [_slice_of(ge, x, i, eqn.params["body"].in_avals[nconsts + ncarry + k])
                  for k, x in enumerate(xs)]
        outs = ge.sub_emitter().emit_graph(p["body"], consts + carry + slices)
        for y, out in zip(ys, outs[ncarry:], strict=True):  # before the carry moves on
            value = store_value(out.name, y.aval.dtype, ge.mod) if out.scalar else out.name
            ge.w.line(f"{y.name}[{i}] = {value}")
        if carry:
            ge.w.line(f"{_names(carry)} = {_names(outs[:ncarry])}")
    _bind_all(ge, eqn, carry + ys)


def _slice_of(ge: GraphEmitter, x: Ref, i: str, aval: ShapedArray) -> Ref:
    """Slice i of a scanned array: a scalar for a vector, else a view of its row."""
    name = ge.fresh(f"{x.name}_row")
    ge.w.line(f"{name} = {load(x, [i], ge.mod)}" if x.aval.ndim == 1 else f"{name} = {x.name}[{i}]")
    return Ref(name, aval)


def _call(ge: GraphEmitter, eqn: Eqn) -> None:
    _bind_all(ge, eqn, ge.sub_emitter().emit_graph(eqn.params["to_apply"], _refs(ge, eqn)))


# ------------------------------------------------------------------ dot_general

_BLAS = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _dot_general(ge: GraphEmitter, eqn: Eqn) -> None:
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    blas = (lhs.aval.dtype in _BLAS and out.aval.dtype in _BLAS and lhs.aval.ndim > 0
            and rhs.aval.ndim > 0)
    (_dot_blas if blas else _dot_loops)(ge, eqn)


def _product(ge: GraphEmitter, atom: Atom, dims: Sequence[int]) -> str:
    return " * ".join(ge.dim(atom, d) for d in dims) or "1"


def _dot_blas(ge: GraphEmitter, eqn: Eqn) -> None:
    """out[b] = lhs[b] @ rhs[b] on (batch, M, K) / (batch, K, N) views."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    lb, lc, rb, rc = (p["lhs_batch_dims"], p["lhs_contracting_dims"], p["rhs_batch_dims"],
                      p["rhs_contracting_dims"])
    lf = [d for d in range(lhs.aval.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.aval.ndim) if d not in rb + rc]
    batch, m, k, n = (_product(ge, lhs, lb), _product(ge, lhs, lf), _product(ge, lhs, lc),
                      _product(ge, rhs, rf))
    a = _matrix(ge, eqn, 0, list(lb) + lf + list(lc), list(lb) + list(lc) + lf,
                (batch, m, k), out.aval.dtype)
    b = _matrix(ge, eqn, 1, list(rb) + list(rc) + rf, list(rb) + rf + list(rc),
                (batch, k, n), out.aval.dtype)
    if out.aval.ndim:
        target = ge.alloc(out)
        ge.bind(out, Ref(target, out.aval))
    else:
        target = ge.fresh("dot")
        ge.w.line(f"{target} = np.empty((1, 1), np.{out.aval.dtype.name})")
    o = ge.fresh("out3")
    ge.w.line(f"{o} = {target}.reshape(({batch}, {m}, {n}))")
    if not lb:
        ge.w.line(f"np.dot({a[0]}[0]{a[1]}, {b[0]}[0]{b[1]}, {o}[0])")
    else:
        i = ge.fresh("batch")
        with ge.w.block(f"for {i} in range({batch})"):
            ge.w.line(f"np.dot({a[0]}[{i}]{a[1]}, {b[0]}[{i}]{b[1]}, {o}[{i}])")
    if not out.aval.ndim:
        ge.bind(out, Ref(f"{target}[0, 0]", out.aval))


def _matrix(ge: GraphEmitter, eqn: Eqn, k: int, plain: list[int], swapped: list[int],
            sizes: tuple[str, str, str], dtype: np.dtype) -> tuple[str, str]:
    """(3-D view name, ".T" or "") of operand k as (batch, rows, cols) for np.dot."""
    atom = eqn.inputs[k]
    ref = ge.ref(atom)
    source = ref.name
    if atom.aval.dtype != dtype:
        source = ge.fresh(f"{ref.name}_as")
        ge.w.line(f"{source} = {ref.name}.astype(np.{dtype.name})")
    batch, rows, cols = sizes
    identity = list(range(atom.aval.ndim))
    name = ge.fresh(f"{ref.name}3")
    if plain == identity:
        ge.w.line(f"{name} = {source}.reshape(({batch}, {rows}, {cols}))")
        return name, ""
    if swapped == identity:  # stored transposed: let BLAS read it with a transpose flag
        ge.w.line(f"{name} = {source}.reshape(({batch}, {cols}, {rows}))")
        return name, ".T"
    ge.w.line(f"{name} = np.ascontiguousarray({source}.transpose({tuple(plain)}))"
              f".reshape(({batch}, {rows}, {cols}))")
    return name, ""


def _dot_loops(ge: GraphEmitter, eqn: Eqn) -> None:
    """Explicit loops, accumulating in the result dtype (integers wrap like XLA's)."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    dt = out.aval.dtype
    lb, lc, rb, rc = (p["lhs_batch_dims"], p["lhs_contracting_dims"], p["rhs_batch_dims"],
                      p["rhs_contracting_dims"])
    lf = [d for d in range(lhs.aval.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.aval.ndim) if d not in rb + rc]
    o_idx = [f"i{j}" for j in range(out.aval.ndim)]
    c_idx = [f"k{j}" for j in range(len(lc))]
    l_idx, r_idx = [""] * lhs.aval.ndim, [""] * rhs.aval.ndim
    for j, (a, b) in enumerate(zip(lb, rb, strict=True)):
        l_idx[a] = r_idx[b] = o_idx[j]
    for j, d in enumerate(lf):
        l_idx[d] = o_idx[len(lb) + j]
    for j, d in enumerate(rf):
        r_idx[d] = o_idx[len(lb) + len(lf) + j]
    for j, (a, b) in enumerate(zip(lc, rc, strict=True)):
        l_idx[a] = r_idx[b] = c_idx[j]
    target = ge.alloc(out) if out.aval.ndim else None
    loops = [(o_idx[j], ge.dim(out, j)) for j in range(out.aval.ndim)]
    inner = [(c_idx[j], ge.dim(lhs, d)) for j, d in enumerate(lc)]
    acc = ge.fresh("acc")
    reg = alias(dt)  # float16 accumulates in float32 and rounds once, on store

    def body() -> None:
        ge.w.line(f"{acc} = {reg}(0)")
        x, y = ge.fresh("x"), ge.fresh("y")

        def step() -> None:
            ge.w.line(f"{x} = {reg}({load(ge.ref(lhs), l_idx, ge.mod)})")
            ge.w.line(f"{y} = {reg}({load(ge.ref(rhs), r_idx, ge.mod)})")
            ge.w.line(f"{acc} = {reg}({acc} + {reg}({x} * {y}))")
        _for_each(ge, inner, step)
        if target is not None:
            ge.w.line(f"{target}[{', '.join(o_idx)}] = {store_value(acc, dt, ge.mod)}")
    _for_each(ge, loops, body)
    ge.bind(out, Ref(target, out.aval) if target else Ref(cast(ge.mod, acc, dt), out.aval))


def _for_each(ge: GraphEmitter, loops: list[tuple[str, str]], inside: Callable[[], None]) -> None:
    if not loops:
        inside()
        return
    var, bound = loops[0]
    with ge.w.block(f"for {var} in range({bound})"):
        _for_each(ge, loops[1:], inside)


# ------------------------------------------------------------------ shapes

def _reshape(ge: GraphEmitter, eqn: Eqn) -> None:
    """A general reshape of a C-contiguous array is a view (unit reshapes are fused)."""
    x, out = ge.ref(eqn.inputs[0]), eqn.outputs[0]
    name = ge.fresh("reshape")
    ge.w.line(f"{name} = {x.name}.reshape({ge.shape_tuple(out)})")
    ge.bind(out, Ref(name, out.aval))


def _get_dimension_size(ge: GraphEmitter, eqn: Eqn) -> None:
    size = ge.dim(eqn.inputs[0], eqn.params["dimension"])
    ge.bind(eqn.outputs[0], Ref(f"i32({size})", eqn.outputs[0].aval))


def _concatenate(ge: GraphEmitter, eqn: Eqn) -> None:
    out = eqn.outputs[0]
    target = ge.alloc(out)
    axis = eqn.params["dimension"]
    offset = "0"
    for atom in eqn.inputs:
        size = ge.dim(atom, axis)
        end = size if offset == "0" else f"{offset} + {size}"
        index = [":"] * out.aval.ndim
        index[axis] = f"{'' if offset == '0' else offset}:{end}"
        ge.w.line(f"{target}[{', '.join(index)}] = {ge.ref(atom).name}")
        offset = end
    ge.bind(out, Ref(target, out.aval))


def _pad(ge: GraphEmitter, eqn: Eqn) -> None:
    """Fill with the padding value, then place operand element j at lo + j * (interior + 1)
    wherever that lands inside the result (negative edge padding drops elements)."""
    x, value = eqn.inputs
    out = eqn.outputs[0]
    if not out.aval.ndim:
        ge.bind(out, ge.ref(x))
        return
    target = ge.alloc(out)
    ge.w.line(f"{target}[...] = {store_value(ge.ref(value).name, out.aval.dtype, ge.mod)}")
    config = eqn.params["padding_config"]
    src = [f"j{d}" for d in range(x.aval.ndim)]
    dst = [ge.fresh(f"p{d}") for d in range(x.aval.ndim)]

    def place() -> None:
        inside = []
        for d, (j, p) in enumerate(zip(src, dst, strict=True)):
            lo = ge.mod.size(("param", id(eqn), "low", d), config[d][0], "low")
            step = ge.mod.size(("param", id(eqn), "step", d), config[d][2] + 1, "step")
            ge.w.line(f"{p} = {lo} + {j} * {step}")
            inside.append(f"0 <= {p} < {ge.dim(out, d)}")
        with ge.w.block(f"if {' and '.join(inside)}"):
            ge.w.line(f"{target}[{', '.join(dst)}] = {ge.ref(x).name}[{', '.join(src)}]")
    _for_each(ge, [(j, ge.dim(x, d)) for d, j in enumerate(src)], place)
    ge.bind(out, Ref(target, out.aval))


# ------------------------------------------------------------------ calls, identities

def _inline(param: str) -> OpEmitter:
    """An op that calls the graph in params[param] with its operands (checkpoint, custom
    derivative calls): the derivative rules are not needed to run it."""
    def emit(ge: GraphEmitter, eqn: Eqn) -> None:
        _bind_all(ge, eqn, ge.sub_emitter().emit_graph(eqn.params[param], _refs(ge, eqn)))
    return emit


def _identity(ge: GraphEmitter, eqn: Eqn) -> None:
    ge.bind(eqn.outputs[0], ge.ref(eqn.inputs[0]))


def emit_fallback(ge: GraphEmitter, eqn: Eqn) -> None:
    """Run the op's NumPy reference in numba object mode (see `cpu_fallback`)."""
    table, index = ge.mod.fallback(eqn)
    outs = [Ref(ge.fresh(f"{eqn.op.name}_out"), v.aval) for v in eqn.outputs]
    types = ", ".join(f'{r.name}="{numba_type(r.aval)}"' for r in outs)
    args = "".join(f", {ge.ref(a).name}" for a in eqn.inputs)
    with ge.w.block(f"with numba.objmode({types})"):
        ge.w.line(f"{_names(outs)}, = fallback.run({table}, {index}{args})")
    _bind_all(ge, eqn, outs)


# ------------------------------------------------------------------ collectives

def _collective(ge: GraphEmitter, eqn: Eqn) -> None:
    """A compiled graph runs one replica (inside vmap, collectives were batched away):
    all_reduce, all_gather, reduce_scatter, all_to_all are the identity, replica_id is
    0, collective_permute copies if (0, 0) is a pair and gives zeros otherwise."""
    p, out = eqn.params, eqn.outputs[0]
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


OP_EMITTERS: dict[str, OpEmitter] = {
    "while": _while, "conditional": _conditional, "scan": _scan, "call": _call,
    "dot_general": _dot_general, "reshape": _reshape,
    "get_dimension_size": _get_dimension_size, "concatenate": _concatenate, "pad": _pad,
    **INDEX_EMITTERS, **cpu_emit_conv.EMITTERS, **cpu_emit_window.EMITTERS,
    **cpu_emit_sort.EMITTERS, **cpu_emit_rng.EMITTERS, **cpu_emit_decomp.EMITTERS,
    **cpu_emit_numerics.EMITTERS, **cpu_emit_misc.EMITTERS,
    "checkpoint": _inline("to_apply"), "custom_jvp_call": _inline("call"),
    "custom_vjp_call": _inline("call"), "stop_gradient": _identity,
    **{name: _collective for name in ("all_reduce", "all_gather", "reduce_scatter",
                                      "all_to_all", "collective_permute", "replica_id")},
}
