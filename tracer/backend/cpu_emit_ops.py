"""Emitters for the ops that are not fused into loop nests.

`OP_EMITTERS[op_name](ge, eqn)` writes the op's code through the graph emitter
`ge` and binds its outputs. Control flow (`while`, `conditional`, `scan`,
`call`) lives in `cpu_emit_control`. `dot_general` calls BLAS through `np.dot` on
2-D views (batch dims looped around it); float16 / bfloat16 operands are widened
to float32 for it and the result is rounded once. Integer products run explicit
loops. Indexing ops live in `cpu_emit_index`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..core import Atom, Eqn
from ..errors import TracerValueError
from .cpu_codegen import GraphEmitter, Ref, copy_array, load, store_value
from . import (cpu_emit_control, cpu_emit_conv, cpu_emit_decomp, cpu_emit_misc,
               cpu_emit_numerics, cpu_emit_rng, cpu_emit_sort, cpu_emit_window)
from .cpu_emit_index import INDEX_EMITTERS
from .cpu_fallback import numba_type
from .cpu_lower import blas_dtype
from .cpu_scalar import HALVES, alias, cast, literal

OpEmitter = Callable[[GraphEmitter, Eqn], None]


def _refs(ge: GraphEmitter, eqn: Eqn) -> list[Ref]:
    return [ge.ref(a) for a in eqn.inputs]


def _names(refs: Sequence[Ref]) -> str:
    return ", ".join(r.name for r in refs)


def _bind_all(ge: GraphEmitter, eqn: Eqn, refs: Sequence[Ref]) -> None:
    for v, r in zip(eqn.outputs, refs, strict=True):
        ge.bind(v, r)


# ------------------------------------------------------------------ dot_general

_F32 = np.dtype(np.float32)


def _dot_general(ge: GraphEmitter, eqn: Eqn) -> None:
    lhs, rhs = eqn.inputs
    work = blas_dtype(lhs.aval.dtype, eqn.outputs[0].aval.dtype)
    if work is not None and lhs.aval.ndim > 0 and rhs.aval.ndim > 0:
        _dot_blas(ge, eqn, work)
    else:
        _dot_loops(ge, eqn)


def _product(ge: GraphEmitter, atom: Atom, dims: Sequence[int]) -> str:
    return " * ".join(ge.dim(atom, d) for d in dims) or "1"


def _dot_blas(ge: GraphEmitter, eqn: Eqn, work: np.dtype) -> None:
    """out[b] = lhs[b] @ rhs[b] on (batch, M, K) / (batch, K, N) views; a 16-bit float
    result is computed in a float32 array and rounded into its storage in one pass."""
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    dt = out.aval.dtype
    lb, lc, rb, rc = (p["lhs_batch_dims"], p["lhs_contracting_dims"], p["rhs_batch_dims"],
                      p["rhs_contracting_dims"])
    lf = [d for d in range(lhs.aval.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.aval.ndim) if d not in rb + rc]
    batch, m, k, n = (_product(ge, lhs, lb), _product(ge, lhs, lf), _product(ge, lhs, lc),
                      _product(ge, rhs, rf))
    a = _matrix(ge, eqn, 0, list(lb) + lf + list(lc), list(lb) + list(lc) + lf,
                (batch, m, k), work)
    b = _matrix(ge, eqn, 1, list(rb) + list(rc) + rf, list(rb) + rf + list(rc),
                (batch, k, n), work)
    o = ge.fresh("out3")
    direct = out.aval.ndim and work == dt  # np.dot writes the result's own array
    target = ge.alloc(out) if direct else ""
    ge.w.line(f"{o} = {target}.reshape(({batch}, {m}, {n}))" if direct else
              f"{o} = np.empty(({batch}, {m}, {n}), np.{work.name})")
    if not lb:
        ge.w.line(f"np.dot({a[0]}[0]{a[1]}, {b[0]}[0]{b[1]}, {o}[0])")
    else:
        i = ge.fresh("batch")
        with ge.w.block(f"for {i} in range({batch})"):
            ge.w.line(f"np.dot({a[0]}[{i}]{a[1]}, {b[0]}[{i}]{b[1]}, {o}[{i}])")
    _bind_product(ge, out, o, target)


def _bind_product(ge: GraphEmitter, out: Atom, o: str, target: str) -> None:
    """Bind `out` to the product np.dot wrote into `o` (or straight into `target`)."""
    dt = out.aval.dtype
    if not out.aval.ndim:
        value = f"{o}[0, 0, 0]"
        ge.bind(out, Ref(cast(ge.mod, value, dt) if dt in HALVES else value, out.aval))
        return
    if not target:
        target = ge.alloc(out)
        ge.w.line(f"{ge.mod.use(HALVES[dt].narrow)}({o}, {target})")
    ge.bind(out, Ref(target, out.aval))


def _matrix(ge: GraphEmitter, eqn: Eqn, k: int, plain: list[int], swapped: list[int],
            sizes: tuple[str, str, str], dtype: np.dtype) -> tuple[str, str]:
    """(3-D view name, ".T" or "") of operand k as (batch, rows, cols) for np.dot, in
    `dtype` (16-bit floats widened to float32 first, in one pass)."""
    atom = eqn.inputs[k]
    ref = ge.ref(atom)
    source, held = ref.name, atom.aval.dtype
    if held in HALVES:
        source, held = ge.fresh(f"{ref.name}_f32"), _F32
        ge.w.line(f"{source} = {ge.mod.use(HALVES[atom.aval.dtype].widen)}({ref.name})")
    if held != dtype:
        widened, source = source, ge.fresh(f"{ref.name}_as")
        ge.w.line(f"{source} = {widened}.astype(np.{dtype.name})")
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
        offsets = ["0"] * out.aval.ndim
        offsets[axis] = offset
        copy_array(ge, target, ge.ref(atom).name, out.aval.ndim, offsets=offsets)
        size = ge.dim(atom, axis)
        offset = size if offset == "0" else f"{offset} + {size}"
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
    **cpu_emit_control.EMITTERS,
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
