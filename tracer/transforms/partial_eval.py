"""Partial evaluation: split a graph into what known inputs determine and the rest.

`partial_eval_graph(g, unknowns)` sorts `g`'s eqns: an eqn whose inputs are all
known goes to the *known* graph, any other to the *unknown* graph. Known values the
unknown graph reads are *residuals*: the known graph returns them after its own
outputs and the unknown graph takes them before its unknown inputs:

    known:   (known inputs...)             -> (known outputs..., residuals...)
    unknown: (residuals..., unknown inputs...) -> (unknown outputs...)

Applied to a JVP graph with the tangents unknown, this is autodidax's `linearize`:
the known graph is the primal computation and the unknown graph the linear map of
the tangents. Ops holding sub-graphs (loops, branches, calls) register a rule in
`PE_RULES` that splits them too, so their primal part stays known.

The two graphs share the residual `Var`s (defined in one, inputs of the other);
each stays closed and SSA on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..core import Eqn, Graph, Literal, Var
from .util import live_eqns, prune

# rule(eqn, in_unknowns) -> (known eqns, unknown eqns, out_unknowns): the known eqns
# define the eqn's known output Vars, the unknown eqns its unknown ones.
PERule = Callable[[Eqn, list[bool]], tuple[list[Eqn], list[Eqn], list[bool]]]
PE_RULES: dict[Any, PERule] = {}


@dataclass(frozen=True)
class PartialEval:
    known: Graph
    unknown: Graph
    out_unknowns: list[bool]
    num_res: int


def partial_eval_graph(graph: Graph, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False) -> PartialEval:
    """Split `graph` by which inputs are unknown.

    `instantiate` (one flag or one per output) makes an output unknown even when known
    values determine it: the unknown graph then returns the residual as is.
    """
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(graph.outputs)
    unknown_ids = {id(v) for v, u in zip(graph.inputs, unknowns, strict=True) if u}
    known_eqns, unknown_eqns = _sort_eqns(graph.eqns, unknown_ids)
    is_unknown = lambda a: isinstance(a, Var) and id(a) in unknown_ids  # noqa: E731
    out_unknowns = [is_unknown(a) or bool(inst)
                    for a, inst in zip(graph.outputs, instantiate, strict=True)]
    unknown_outs = tuple(a for a, u in zip(graph.outputs, out_unknowns, strict=True) if u)
    unknown_eqns = live_eqns(unknown_eqns, unknown_outs)
    residuals = _residuals(unknown_eqns, unknown_outs, unknown_ids)
    known_outs = tuple(a for a, u in zip(graph.outputs, out_unknowns, strict=True) if not u)
    known_ins = tuple(v for v, u in zip(graph.inputs, unknowns, strict=True) if not u)
    unknown_ins = tuple(v for v, u in zip(graph.inputs, unknowns, strict=True) if u)
    known = prune(Graph(known_ins, tuple(known_eqns), known_outs + tuple(residuals),
                      graph.name + "_known"))
    unknown = Graph(tuple(residuals) + unknown_ins, tuple(unknown_eqns), unknown_outs,
                    graph.name + "_unknown")
    return PartialEval(known, unknown, out_unknowns, len(residuals))


def _sort_eqns(eqns: Sequence[Eqn], unknown_ids: set[int]) -> tuple[list[Eqn], list[Eqn]]:
    """Known and unknown eqns; adds the unknown outputs' ids to `unknown_ids`."""
    known: list[Eqn] = []
    unknown: list[Eqn] = []
    for eqn in eqns:
        in_unk = [isinstance(a, Var) and id(a) in unknown_ids for a in eqn.inputs]
        if not any(in_unk):
            known.append(eqn)
            continue
        rule = PE_RULES.get(eqn.op)
        if rule is None:
            k_eqns, u_eqns, out_unk = [], [eqn], [True] * len(eqn.outputs)
        else:
            k_eqns, u_eqns, out_unk = rule(eqn, in_unk)
        known.extend(k_eqns)
        unknown.extend(u_eqns)
        unknown_ids.update(id(v) for v, u in zip(eqn.outputs, out_unk, strict=True) if u)
    return known, unknown


def _residuals(eqns: list[Eqn], outputs: Sequence[Any], unknown_ids: set[int]) -> list[Var]:
    """Known Vars the unknown eqns (or outputs) read, in first-use order."""
    defined = {id(v) for e in eqns for v in e.outputs}
    seen: dict[int, Var] = {}
    atoms = [a for e in eqns for a in e.inputs] + list(outputs)
    for a in atoms:
        if isinstance(a, Literal) or id(a) in unknown_ids or id(a) in defined:
            continue
        seen.setdefault(id(a), a)
    return list(seen.values())


def partial_eval_loop(body: Graph, const_unknowns: Sequence[bool],
                      carry_unknowns: Sequence[bool], x_unknowns: Sequence[bool] = ()
                      ) -> tuple[PartialEval, list[bool]]:
    """Partial evaluation of a loop body `(consts..., carry..., xs...) -> (carry...,
    ys...)`: a carry is unknown when its initial value or its new value is, so
    iterate to the fixed point. Returns the split and the carries' flags."""
    carry = list(carry_unknowns)
    n_ys = len(body.outputs) - len(carry)
    while True:
        pe = partial_eval_graph(body, list(const_unknowns) + carry + list(x_unknowns),
                                instantiate=carry + [False] * n_ys)
        new = [a or b for a, b in zip(carry, pe.out_unknowns[:len(carry)], strict=True)]
        if new == carry:
            return pe, carry
        carry = new
