"""JVP, partial-evaluation and transpose rules of `while`: reverse mode through
loops whose trip count depends on the data (JAX refuses these).

- JVP: tangents join the carry (with the same fixed point as scan). A `fori_loop`
  with static bounds (a counter from a constant, `counter < constant`, `+ 1` per
  step) becomes a `scan` of that length, so reverse mode stores residuals like
  any scan.
- Partial evaluation keeps the primal loop in the forward graph and puts the
  whole JVP loop in the linear graph, its primal inputs as residuals (the policy
  of `checkpoint`): nothing per iteration is stored in the forward pass.
- Transpose replays the primal loop once, counting the trip count `n` and storing
  the carry every `s` steps into a buffer of `K` slots (`s` starts at 1 and
  doubles, dropping every other checkpoint, whenever the buffer fills). The
  backward loop then runs k = n-1 ... 0: it restores the carry of step k from the
  nearest checkpoint (at most `s - 1` steps of recomputation), and applies the
  transposed step. Loops of up to `K` steps thus store every carry and recompute
  nothing; longer ones cost about `n * s / 2` extra steps with `s <= 2n/K`.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from .. import ops
from ..core import Eqn, Graph, Literal, ShapedArray, Var
from ..errors import TracerTypeError
from ..interpret import eval_graph
from ..ops.ad import UndefinedPrimal, add_tangents, aval_of_value, instantiate, zeros_like_aval
from ..ops.control import while_p
from ..tracing import Tracer
from .control_rules import carry_fixpoint, fill_tangents, nonzero_mask, regroup, scan_jvp
from .jvp import jvp_graph
from .partial_eval import PE_RULES, PartialEval, partial_eval_loop
from .transpose import backward_pass
from .util import (drop_inputs, new_eqn, pick, select_outputs, split, used_inputs,
                   without_host_effects)

MAX_CHECKPOINTS = 256          # slots of the backward pass's carry buffer (a power of 2)
CHECKPOINT_BYTES = 64 << 20    # ... and at most this many bytes of them
_I = np.int64


# ------------------------------------------------------------------------------ JVP
def while_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, condition: Graph,
              body: Graph, cond_nconsts: int, body_nconsts: int) -> tuple[list, list]:
    length = _static_trip_count(primals, condition, body, cond_nconsts, body_nconsts)
    if length is not None:  # fori_loop(lo, hi) with constant bounds: a scan
        return scan_jvp(primals, tangents, body=body, length=length, reverse=False,
                        num_consts=body_nconsts, num_carry=len(body.outputs))
    cc, bc, carry = split(primals, cond_nconsts, body_nconsts)
    bt, kt = split(tangents, cond_nconsts, body_nconsts)[1:]
    b_nz = nonzero_mask(bt)
    k_nz = carry_fixpoint(body, b_nz, nonzero_mask(kt), [])
    cond_j, body_j = _jvp_graphs(condition, body, tuple(b_nz), tuple(k_nz))
    kt = [instantiate(t) for t, nz in zip(kt, k_nz, strict=True) if nz]
    outs = while_p.bind(*cc, *bc, *pick(bt, b_nz), *carry, *kt, condition=cond_j, body=body_j,
                        cond_nconsts=cond_nconsts, body_nconsts=body_nconsts + sum(b_nz))
    n = len(carry)
    return outs[:n], fill_tangents(outs[n:], k_nz, body.out_avals)


@functools.lru_cache(maxsize=256)
def _jvp_graphs(condition: Graph, body: Graph, b_nz: tuple, k_nz: tuple) -> tuple[Graph, Graph]:
    nb, nk = len(b_nz), len(k_nz)
    jbody, _ = jvp_graph(body, b_nz + k_nz, instantiate=k_nz)
    ins = regroup(jbody.inputs, (nb, nk, sum(b_nz), sum(k_nz)), (0, 2, 1, 3))
    body_j = Graph(ins, jbody.eqns, jbody.outputs, jbody.name)
    extra = tuple(Var(v.aval) for v, nz in zip(body.inputs[nb:], k_nz, strict=True) if nz)
    cond_j = Graph(condition.inputs + extra, condition.eqns, condition.outputs, condition.name)
    return cond_j, body_j


def _static_trip_count(primals: Sequence[Any], condition: Graph, body: Graph,
                       cond_nconsts: int, body_nconsts: int) -> int | None:
    """`hi - lo` for fori_loop's pattern with a constant `lo` and `hi`, else None."""
    if cond_nconsts or not body.outputs:
        return None
    counter = primals[body_nconsts]
    if isinstance(counter, Tracer) \
            or np.ndim(counter) or len(condition.eqns) != 1:
        return None
    test = condition.eqns[0]
    if test.op.name != "compare" or test.params.get("direction") != "LT" \
            or test.inputs[0] is not condition.inputs[0] \
            or not isinstance(test.inputs[1], Literal) \
            or condition.outputs[0] is not test.outputs[0]:
        return None
    step = next((e for e in body.eqns if e.outputs[0] is body.outputs[0]), None)
    if step is None or step.op.name != "add" or step.inputs[0] is not body.inputs[body_nconsts] \
            or not isinstance(step.inputs[1], Literal) or step.inputs[1].value != 1:
        return None
    return max(0, int(test.inputs[1].value) - int(counter))


# ---------------------------------------------------------------- partial evaluation
def while_partial_eval(eqn: Eqn, in_unk: list[bool]) -> tuple[list[Eqn], list[Eqn], list[bool]]:
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    cu, bu, ku = split(in_unk, ncc, nbc)
    pe, ku = partial_eval_loop(p["body"], bu, ku)
    if any(cu) or _cond_reads(p["condition"], ncc, ku):
        return [], [eqn], [True] * len(eqn.outputs)  # the trip count itself is unknown
    cc, bc, carry = split(eqn.inputs, ncc, nbc)
    n_known = ku.count(False)
    known = new_eqn(while_p, cc + pick(bc, bu, False) + pick(carry, ku, False),
                    {"condition": drop_inputs(p["condition"], [True] * ncc + [not u for u in ku]),
                     "body": _primal_step(pe, n_known), "cond_nconsts": ncc,
                     "body_nconsts": bu.count(False)},
                    pick(eqn.outputs, ku, False), eqn.source)
    outs = tuple(v if u else Var(v.aval) for v, u in zip(eqn.outputs, ku, strict=True))
    unknown = Eqn(eqn.op, eqn.inputs, eqn.params, outs, eqn.source)
    return [known], [unknown], ku


def _cond_reads(condition: Graph, ncc: int, unknown: Sequence[bool]) -> bool:
    return any(r and u for r, u in zip(used_inputs(condition)[ncc:], unknown, strict=True))


def _primal_step(pe: PartialEval, n_known: int) -> Graph:
    return select_outputs(pe.known, [True] * n_known + [False] * pe.num_res)


# -------------------------------------------------------------------------- transpose
def while_transpose(cts: list[Any], *args: Any, condition: Graph, body: Graph,
                    cond_nconsts: int, body_nconsts: int) -> list[Any]:
    cc, bc, carry = split(args, cond_nconsts, body_nconsts)
    b_lin = [isinstance(a, UndefinedPrimal) for a in bc]
    pe, k_lin = partial_eval_loop(body, b_lin, [isinstance(a, UndefinedPrimal) for a in carry])
    if any(isinstance(a, UndefinedPrimal) for a in cc) or _cond_reads(condition,
                                                                      cond_nconsts, k_lin):
        raise TracerTypeError("while_loop: the loop condition depends on a value being "
                              "differentiated, so the loop is not linear in it")
    loop = _Loop(cc, pick(bc, b_lin, False), pe, k_lin,
                 drop_inputs(condition, [True] * cond_nconsts + [not u for u in k_lin]))
    n, s, bufs = loop.checkpoints(pick(carry, k_lin, False))
    ct_k = [instantiate(c) for c, lin in zip(cts, k_lin, strict=True) if lin]
    acc = [zeros_like_aval(a.aval) for a in pick(bc, b_lin)]
    _, ct_k, acc = ops.while_loop(lambda st: ops.ge(st[0], _I(0)),
                                  lambda st: loop.backward_step(st, s, bufs),
                                  (ops.sub(n, _I(1)), ct_k, acc))
    ct_bc = iter(acc)
    ct_init = iter(ct_k)
    linear_carry = [next(ct_init) if lin else None for lin in k_lin]
    return ([None] * cond_nconsts + [next(ct_bc) if lin else None for lin in b_lin]
            + [c if isinstance(a, UndefinedPrimal) else None
               for a, c in zip(carry, linear_carry, strict=True)])


class _Loop:
    """The primal loop of a JVP'd while, split from its linear part."""

    def __init__(self, cc: list[Any], bc: list[Any], pe: PartialEval, k_lin: list[bool],
                 condition: Graph):
        self.cc, self.bc, self.pe, self.condition = cc, bc, pe, condition
        n_prim = k_lin.count(False)
        # (the replays run again what the forward loop ran: not its host effects)
        self.step_graph = without_host_effects(_primal_step(pe, n_prim), "while_loop")
        self.res_graph = without_host_effects(
            select_outputs(pe.known, [False] * n_prim + [True] * pe.num_res), "while_loop")
        self.n_lin_bc = len(pe.unknown.inputs) - pe.num_res - k_lin.count(True)

    def pred(self, carry: list[Any]) -> Any:
        return eval_graph(self.condition, self.cc + list(carry))[0]

    def step(self, carry: list[Any]) -> list[Any]:
        return eval_graph(self.step_graph, self.bc + list(carry))

    def checkpoints(self, init: list[Any]) -> tuple[Any, Any, list[Any]]:
        """Run the primal loop; return the trip count, the checkpoint stride and buffer."""
        avals = [aval_of_value(x) for x in init]
        k = _slots(avals)
        bufs = [zeros_like_aval(ShapedArray((k,) + a.shape, a.dtype)) for a in avals]

        def body(st: tuple) -> tuple:
            i, s, slot, carry, bufs = st
            s, slot, bufs = ops.cond(ops.eq(ops.rem(i, s), _I(0)),
                                     lambda s, sl, b: _store(s, sl, b, carry, k),
                                     lambda s, sl, b: (s, sl, b), s, slot, bufs)
            return ops.add(i, _I(1)), s, slot, self.step(carry), bufs

        i, s, _, _, bufs = ops.while_loop(lambda st: self.pred(st[3]), body,
                                          (_I(0), _I(1), _I(0), list(init), bufs))
        return i, s, bufs

    def backward_step(self, st: tuple, s: Any, bufs: list[Any]) -> tuple:
        """Restore the carry of step k, transpose the step, move to k - 1."""
        k, ct, acc = st
        j = ops.div(k, s)
        carry = [ops.reshape(ops.dynamic_slice(b, [j] + [_I(0)] * (b.ndim - 1),
                                               (1,) + b.shape[1:]), b.shape[1:]) for b in bufs]
        _, carry = ops.while_loop(lambda c: ops.lt(c[0], k),
                                  lambda c: (ops.add(c[0], _I(1)), self.step(c[1])),
                                  (ops.mul(j, s), carry))
        res = eval_graph(self.res_graph, self.bc + carry)
        lin = [UndefinedPrimal(v.aval) for v in self.pe.unknown.inputs[self.pe.num_res:]]
        cts = backward_pass(self.pe.unknown, list(res) + lin, ct)[self.pe.num_res:]
        ct_b, ct_k = cts[:self.n_lin_bc], cts[self.n_lin_bc:]
        acc = [instantiate(add_tangents(a, c)) for a, c in zip(acc, ct_b, strict=True)]
        return ops.sub(k, _I(1)), [instantiate(c) for c in ct_k], acc


def _slots(avals: Sequence[ShapedArray]) -> int:
    """The buffer's slot count: a power of 2 within MAX_CHECKPOINTS and the byte budget."""
    per_step = max(1, sum(a.size * a.dtype.itemsize for a in avals))
    k = 2
    while k * 2 <= MAX_CHECKPOINTS and k * 2 * per_step <= CHECKPOINT_BYTES:
        k *= 2
    return k


def _store(s: Any, slot: Any, bufs: list[Any], carry: list[Any], k: int) -> tuple:
    """Write `carry` into the next slot, first thinning a full buffer."""
    s, slot, bufs = ops.cond(ops.eq(slot, _I(k)), lambda s, sl, b: _thin(s, b, k),
                             lambda s, sl, b: (s, sl, b), s, slot, bufs)
    bufs = [ops.dynamic_update_slice(b, ops.reshape(x, (1,) + b.shape[1:]),
                                     [slot] + [_I(0)] * (b.ndim - 1))
            for b, x in zip(bufs, carry, strict=True)]
    return s, ops.add(slot, _I(1)), bufs


def _thin(s: Any, bufs: list[Any], k: int) -> tuple:
    """Keep every other checkpoint (steps 0, 2s, 4s, ...) in the first half."""
    half = []
    for b in bufs:
        kept = ops.slice(b, (0,) * b.ndim, b.shape, (2,) + (1,) * (b.ndim - 1))
        empty = zeros_like_aval(ShapedArray((k // 2,) + b.shape[1:], b.dtype))
        half.append(ops.concatenate([kept, empty], 0))
    return ops.mul(s, _I(2)), _I(k // 2), half


while_p.jvp, while_p.transpose = while_jvp, while_transpose
PE_RULES[while_p] = while_partial_eval
