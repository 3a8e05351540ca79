"""JVP, partial-evaluation and transpose rules of `scan`, `conditional` and `call`
(JAX's: their sub-graphs are transformed with the same machinery as whole graphs).

- JVP: the sub-graphs are JVP'd with the union of the nonzero tangents; a loop's
  carries get tangents until a fixed point (a carry whose new value has a tangent
  needs one from the start). Tangents become extra operands and results.
- Partial evaluation (reverse mode): the sub-graphs are split too, so the primal
  part stays in the forward graph. A scan's residuals are stacked by the forward
  scan as extra `ys` (or, when a residual is a const or an `xs` slice, passed as
  that operand directly); a conditional returns every branch's residuals (zeros
  in the branches that did not run).
- Transpose: a linear scan runs backwards over the stacked residuals, accumulating
  the cotangents of its linear consts in the carry; a linear conditional runs the
  transpose of the branch the (residual) index picks; a call calls its transpose.

The rules live in `tracer.transforms` (not `tracer.ops`) because they use the
graph transformations, and ops may not import transforms (tests/test_layout.py).
`while` has its own module, `while_rules`.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from ..core import Eqn, Graph, Var
from ..interpret import eval_graph
from ..ops.ad import UndefinedPrimal, Zero, add_tangents, instantiate, zeros_like_aval
from ..ops.control import call_p, conditional_p, scan_p
from ..ops.misc import composite_p
from .jvp import jvp_graph
from .partial_eval import PE_RULES, partial_eval_graph, partial_eval_loop
from .transpose import backward_pass, transpose_graph
from .util import merge, new_eqn, pick, split, tangent_aval, trace_closed


def regroup(items: Sequence[Any], sizes: Sequence[int], order: Sequence[int]) -> tuple:
    """Cut `items` into groups of `sizes` and concatenate them in `order`."""
    groups = split(items, *sizes)[:-1]
    return tuple(x for i in order for x in groups[i])


def nonzero_mask(tangents: Sequence[Any]) -> list[bool]:
    return [not isinstance(t, Zero) for t in tangents]


def fill_tangents(values: Sequence[Any], nonzero: Sequence[bool],
                  avals: Sequence[Any]) -> list[Any]:
    """Tangent outputs: the next value where nonzero, else a symbolic Zero."""
    it = iter(values)
    return [next(it) if nz else Zero(tangent_aval(a))
            for nz, a in zip(nonzero, avals, strict=True)]


# ----------------------------------------------------------------------------- scan
def carry_fixpoint(body: Graph, const_nz: list[bool], carry_nz: list[bool],
                   x_nz: list[bool]) -> list[bool]:
    """Carries that need tangents: those with one initially or from the body."""
    while True:
        _, out_nz = jvp_graph(body, const_nz + carry_nz + x_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz[:len(carry_nz)], strict=True)]
        if new == carry_nz:
            return carry_nz
        carry_nz = new


@functools.lru_cache(maxsize=256)
def _scan_jvp_body(body: Graph, c_nz: tuple, k_nz: tuple, x_nz: tuple) -> tuple[Graph, tuple]:
    nc, nk, nx = len(c_nz), len(k_nz), len(x_nz)
    n_ys = len(body.outputs) - nk
    jbody, out_nz = jvp_graph(body, c_nz + k_nz + x_nz, instantiate=k_nz + (False,) * n_ys)
    y_nz = tuple(out_nz[nk:])
    ins = regroup(jbody.inputs, (nc, nk, nx, sum(c_nz), sum(k_nz), sum(x_nz)), (0, 3, 1, 4, 2, 5))
    outs = regroup(jbody.outputs, (nk, n_ys, sum(k_nz), sum(y_nz)), (0, 2, 1, 3))
    return Graph(ins, jbody.eqns, outs, jbody.name), y_nz


def scan_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, body: Graph, length: int,
             reverse: bool, num_consts: int, num_carry: int) -> tuple[list, list]:
    consts, carry, xs = split(primals, num_consts, num_carry)
    ct, kt, xt = split(tangents, num_consts, num_carry)
    c_nz, x_nz = nonzero_mask(ct), nonzero_mask(xt)
    k_nz = carry_fixpoint(body, c_nz, nonzero_mask(kt), x_nz)
    jbody, y_nz = _scan_jvp_body(body, tuple(c_nz), tuple(k_nz), tuple(x_nz))
    kt = [instantiate(t) for t, nz in zip(kt, k_nz, strict=True) if nz]
    outs = scan_p.bind(*consts, *pick(ct, c_nz), *carry, *kt, *xs, *pick(xt, x_nz),
                       body=jbody, length=length, reverse=reverse,
                       num_consts=num_consts + sum(c_nz), num_carry=num_carry + len(kt))
    carry_out, kt_out, ys, yt = split(outs, num_carry, len(kt), len(y_nz))[:4]
    avals = body.out_avals
    return carry_out + ys, (fill_tangents(kt_out, k_nz, avals[:num_carry])
                            + fill_tangents(yt, y_nz, avals[num_carry:]))


def scan_partial_eval(eqn: Eqn, in_unk: list[bool]) -> tuple[list[Eqn], list[Eqn], list[bool]]:
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    body: Graph = p["body"]
    consts, carry, xs = split(eqn.inputs, nc, nk)
    cu, ku, xu = split(in_unk, nc, nk)
    pe, ku = partial_eval_loop(body, cu, ku, xu)
    yu = pe.out_unknowns[nk:]
    n_known_out = len(pe.known.outputs) - pe.num_res
    residuals = pe.known.outputs[n_known_out:]
    where = {id(v): ("c", consts[i]) for i, v in enumerate(body.inputs[:nc]) if not cu[i]}
    where.update({id(v): ("x", xs[i]) for i, v in enumerate(body.inputs[nc + nk:]) if not xu[i]})
    kind = [where.get(id(r), ("s", None))[0] for r in residuals]
    known_body = Graph(pe.known.inputs, pe.known.eqns, pe.known.outputs[:n_known_out] + tuple(
        r for r, k in zip(residuals, kind, strict=True) if k == "s"), pe.known.name)
    known_outs = [v for v, u in zip(eqn.outputs, ku + yu, strict=True) if not u]
    n_stacked = kind.count("s")
    known = new_eqn(scan_p, pick(consts, cu, False) + pick(carry, ku, False) + pick(xs, xu, False),
                    {**p, "body": known_body, "num_consts": cu.count(False),
                     "num_carry": ku.count(False)}, known_outs + [None] * n_stacked, eqn.source)
    stacked = list(known.outputs[len(known_outs):])
    res_in = pe.unknown.inputs[:pe.num_res]
    sel = lambda k: [v for v, kk in zip(res_in, kind, strict=True) if kk == k]  # noqa: E731
    outer = lambda k: [where[id(r)][1] for r, kk in zip(residuals, kind, strict=True)  # noqa: E731
                       if kk == k]
    n_uc, n_uk = cu.count(True), ku.count(True)
    u_ins = pe.unknown.inputs[pe.num_res:]
    unknown_body = Graph(tuple(sel("c")) + u_ins[:n_uc + n_uk] + tuple(sel("s") + sel("x"))
                         + u_ins[n_uc + n_uk:], pe.unknown.eqns, pe.unknown.outputs,
                         pe.unknown.name)
    unknown = new_eqn(scan_p, outer("c") + pick(consts, cu) + pick(carry, ku) + stacked
                      + outer("x") + pick(xs, xu),
                      {**p, "body": unknown_body, "num_consts": len(sel("c")) + n_uc,
                       "num_carry": n_uk},
                      [v for v, u in zip(eqn.outputs, ku + yu, strict=True) if u], eqn.source)
    return [known], [unknown], ku + yu


@functools.lru_cache(maxsize=256)
def _scan_transpose_body(body: Graph, c_lin: tuple, num_carry: int, x_lin: tuple) -> Graph:
    nc, nk = len(c_lin), num_carry
    c_in, k_in, x_in = split(body.inputs, nc, nk)
    res_c, lin_c = pick(c_in, c_lin, False), pick(c_in, c_lin)
    res_x = pick(x_in, x_lin, False)
    n_rc, n_lc, n_rx = len(res_c), len(lin_c), len(res_x)

    def fun(*args: Any) -> list[Any]:
        rc, acc, ct_k, rx, ct_y = split(args, n_rc, n_lc, nk, n_rx)
        ins = (merge(c_lin, [UndefinedPrimal(v.aval) for v in lin_c], rc)
               + [UndefinedPrimal(v.aval) for v in k_in]
               + merge(x_lin, [UndefinedPrimal(v.aval) for v in pick(x_in, x_lin)], rx))
        cts = backward_pass(body, ins, ct_k + ct_y)
        ct_c, ct_kin, ct_x = split(cts, nc, nk)
        acc = [instantiate(add_tangents(a, c)) for a, c in zip(acc, pick(ct_c, c_lin),
                                                                 strict=True)]
        return acc + [instantiate(c) for c in ct_kin] + [instantiate(c)
                                                        for c in pick(ct_x, x_lin)]

    avals = ([v.aval for v in res_c] + [tangent_aval(v.aval) for v in lin_c]
             + [tangent_aval(v.aval) for v in k_in] + [v.aval for v in res_x]
             + [tangent_aval(a) for a in body.out_avals[nk:]])
    return trace_closed(fun, avals, f"transpose_{body.name}")


def scan_transpose(cts: list[Any], *args: Any, body: Graph, length: int, reverse: bool,
                   num_consts: int, num_carry: int) -> list[Any]:
    consts, carry, xs = split(args, num_consts, num_carry)
    c_lin = tuple(isinstance(a, UndefinedPrimal) for a in consts)
    x_lin = tuple(isinstance(a, UndefinedPrimal) for a in xs)
    body_t = _scan_transpose_body(body, c_lin, num_carry, x_lin)
    acc = [zeros_like_aval(tangent_aval(a.aval)) for a in pick(consts, c_lin)]
    ct_k = [instantiate(c) for c in cts[:num_carry]]
    ct_y = [instantiate(c) for c in cts[num_carry:]]
    outs = scan_p.bind(*pick(consts, c_lin, False), *acc, *ct_k, *pick(xs, x_lin, False), *ct_y,
                       body=body_t, length=length, reverse=not reverse,
                       num_consts=c_lin.count(False), num_carry=len(acc) + num_carry)
    ct_c, ct_init, ct_x = split(outs, len(acc), num_carry)
    return (merge(c_lin, ct_c, [None] * c_lin.count(False))
            + [c if isinstance(a, UndefinedPrimal) else None
               for a, c in zip(carry, ct_init, strict=True)]
            + merge(x_lin, ct_x, [None] * x_lin.count(False)))


# ---------------------------------------------------------------------- conditional
@functools.lru_cache(maxsize=256)
def _cond_jvp_branches(branches: tuple[Graph, ...], nz: tuple) -> tuple[tuple, tuple]:
    out_nz = [False] * len(branches[0].outputs)
    for g in branches:
        out_nz = [a or b for a, b in zip(out_nz, jvp_graph(g, nz)[1], strict=True)]
    return tuple(jvp_graph(g, nz, instantiate=out_nz)[0] for g in branches), tuple(out_nz)


def cond_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
             branch_computations: tuple[Graph, ...]) -> tuple[list, list]:
    index, args = primals[0], primals[1:]
    nz = nonzero_mask(tangents[1:])
    branches, out_nz = _cond_jvp_branches(branch_computations, tuple(nz))
    outs = conditional_p.bind(index, *args, *pick(tangents[1:], nz),
                              branch_computations=branches)
    n = len(out_nz)
    return outs[:n], fill_tangents(outs[n:], out_nz, branch_computations[0].out_avals)


def cond_partial_eval(eqn: Eqn, in_unk: list[bool]) -> tuple[list[Eqn], list[Eqn], list[bool]]:
    if in_unk[0]:  # an unknown index: nothing can run before it is known
        return [], [eqn], [True] * len(eqn.outputs)
    branches: tuple[Graph, ...] = eqn.params["branch_computations"]
    au = in_unk[1:]
    out_unk = [False] * len(eqn.outputs)
    for g in branches:
        out_unk = [a or b for a, b in zip(out_unk, partial_eval_graph(g, au).out_unknowns,
                                          strict=True)]
    pes = [partial_eval_graph(g, au, instantiate=out_unk) for g in branches]
    res_avals = [[v.aval for v in pe.unknown.inputs[:pe.num_res]] for pe in pes]
    known_branches = tuple(_known_branch(pe, i, res_avals) for i, pe in enumerate(pes))
    index, args = eqn.inputs[0], eqn.inputs[1:]
    known_outs = [v for v, u in zip(eqn.outputs, out_unk, strict=True) if not u]
    n_res = sum(map(len, res_avals))
    known = new_eqn(conditional_p, [index] + pick(args, au, False),
                    {"branch_computations": known_branches}, known_outs + [None] * n_res,
                    eqn.source)
    res_vars = list(known.outputs[len(known_outs):])
    unknown_branches = []
    for i, pe in enumerate(pes):
        before = sum(map(len, res_avals[:i]))
        slots = [Var(v.aval) for v in res_vars]
        slots[before:before + pe.num_res] = pe.unknown.inputs[:pe.num_res]
        unknown_branches.append(Graph(tuple(slots) + pe.unknown.inputs[pe.num_res:],
                                      pe.unknown.eqns, pe.unknown.outputs, pe.unknown.name))
    unknown = new_eqn(conditional_p, [index] + res_vars + pick(args, au),
                      {"branch_computations": tuple(unknown_branches)},
                      [v for v, u in zip(eqn.outputs, out_unk, strict=True) if u], eqn.source)
    return [known], [unknown], out_unk


def _known_branch(pe: Any, i: int, res_avals: list[list[Any]]) -> Graph:
    """Branch i's known part, returning every branch's residual slots (zeros but its own)."""
    n_out = len(pe.known.outputs) - pe.num_res

    def fun(*args: Any) -> list[Any]:
        outs = eval_graph(pe.known, args)
        slots = [[zeros_like_aval(tangent_aval(a)) for a in avals] for avals in res_avals]
        slots[i] = outs[n_out:]
        return outs[:n_out] + [x for s in slots for x in s]

    return trace_closed(fun, pe.known.in_avals, pe.known.name)


def cond_transpose(cts: list[Any], index: Any, *args: Any,
                   branch_computations: tuple[Graph, ...]) -> list[Any]:
    lin = tuple(isinstance(a, UndefinedPrimal) for a in args)
    branches = tuple(transpose_graph(g, lin) for g in branch_computations)
    outs = conditional_p.bind(index, *pick(args, lin, False), *map(instantiate, cts),
                              branch_computations=branches)
    return [None] + merge(lin, outs, [None] * lin.count(False))


# ----------------------------------------------------------------------------- call
def call_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
             to_apply: Graph) -> tuple[list, list]:
    nz = nonzero_mask(tangents)
    graph, out_nz = jvp_graph(to_apply, nz)
    outs = call_p.bind(*primals, *pick(tangents, nz), to_apply=graph)
    n = len(to_apply.outputs)
    return outs[:n], fill_tangents(outs[n:], out_nz, to_apply.out_avals)


def call_partial_eval(eqn: Eqn, in_unk: list[bool]) -> tuple[list[Eqn], list[Eqn], list[bool]]:
    pe = partial_eval_graph(eqn.params["to_apply"], in_unk)
    known_outs = [v for v, u in zip(eqn.outputs, pe.out_unknowns, strict=True) if not u]
    known = new_eqn(call_p, pick(eqn.inputs, in_unk, False), {"to_apply": pe.known},
                    known_outs + [None] * pe.num_res, eqn.source)
    unknown = new_eqn(call_p, list(known.outputs[len(known_outs):]) + pick(eqn.inputs, in_unk),
                      {"to_apply": pe.unknown},
                      [v for v, u in zip(eqn.outputs, pe.out_unknowns, strict=True) if u],
                      eqn.source)
    return [known], [unknown], pe.out_unknowns


def call_transpose(cts: list[Any], *args: Any, to_apply: Graph) -> list[Any]:
    lin = tuple(isinstance(a, UndefinedPrimal) for a in args)
    outs = call_p.bind(*pick(args, lin, False), *map(instantiate, cts),
                       to_apply=transpose_graph(to_apply, lin))
    return merge(lin, outs, [None] * lin.count(False))


scan_p.jvp, scan_p.transpose = scan_jvp, scan_transpose
conditional_p.jvp, conditional_p.transpose = cond_jvp, cond_transpose
call_p.jvp, call_p.transpose = call_jvp, call_transpose


# A composite means its decomposition: differentiated, it becomes a call of the result.
def composite_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, to_apply: Graph,
                  **composite: Any) -> tuple[list, list]:
    return call_jvp(primals, tangents, to_apply=to_apply)


def composite_transpose(cts: list[Any], *args: Any, to_apply: Graph, **composite: Any
                        ) -> list[Any]:
    return call_transpose(cts, *args, to_apply=to_apply)


composite_p.jvp, composite_p.transpose = composite_jvp, composite_transpose
PE_RULES[scan_p] = scan_partial_eval
PE_RULES[conditional_p] = cond_partial_eval
PE_RULES[call_p] = call_partial_eval
