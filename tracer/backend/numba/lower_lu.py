"""Graph → Graph lowering of the LU of a transposed matrix for the cpu backend.

`solve` factors aᵀ (`tracer.numpy.linalg_solve.lu_solve`): `lu(transpose(a))` whose
factor only triangular solves read. LAPACK's getrf factors a column-major matrix,
and a's row-major memory is the column-major aᵀ: so such an lu becomes
`lu(a, transposed=True)`, whose factor is the transpose of lu(aᵀ)'s (the kernel copies
a as it lies, factors it in place and keeps the column-major result: no transposed
copy either way; two 0.3 ms transposes of a 512x512 one before), and each triangular
solve reads that factor with `transpose_a` and `lower` flipped: op(fᵀ) under the
flipped flags is op(f) under the old ones, conjugation included.
"""

from __future__ import annotations

import dataclasses

from ...core import Eqn, Graph, Var, readers
from ...passes.dce import dce
from ...passes.rewrite import rewrite


def transposed_lu_factors(graph: Graph) -> Graph:
    """`graph` (sub-graphs too) with each lu of a transpose that swaps the minor dims,
    whose factor only triangular solves read (as their matrix), factoring the
    transpose's source (`transposed=True`), and those solves' flags flipped."""
    graph = rewrite(graph, lambda eqn, defs: None, transposed_lu_factors)  # sub-graphs
    defs = {id(v): e for e in graph.eqns for v in e.outputs}
    uses = readers(graph)
    outputs = {id(v) for v in graph.outputs if isinstance(v, Var)}
    swapped: dict[int, Var] = {}  # id(old factor) -> the transposed one
    eqns = []
    for eqn in graph.eqns:
        if eqn.op.name == "lu" and id(eqn.outputs[0]) not in outputs:
            eqn = _lu_of_source(eqn, defs, uses, swapped)
        elif eqn.op.name == "triangular_solve" and id(eqn.inputs[0]) in swapped:
            eqn = _flipped_solve(eqn, swapped[id(eqn.inputs[0])])
        eqns.append(eqn)
    if not swapped:
        return graph
    return dce(Graph(graph.inputs, tuple(eqns), graph.outputs, graph.name))


def _lu_of_source(eqn: Eqn, defs: dict[int, Eqn], uses: dict[int, list[Eqn]],
                  swapped: dict) -> Eqn:
    x = eqn.inputs[0]
    src = defs.get(id(x)) if isinstance(x, Var) else None
    if src is None or src.op.name != "transpose" or eqn.params["transposed"]:
        return eqn
    nd = x.aval.ndim
    if tuple(src.params["permutation"]) != (*range(nd - 2), nd - 1, nd - 2):
        return eqn
    factor = eqn.outputs[0]
    solves = uses.get(id(factor), [])
    if not solves or any(e.op.name != "triangular_solve" or
                         any(a is factor for a in e.inputs[1:]) for e in solves):
        return eqn
    a = src.inputs[0]
    kept = Var(dataclasses.replace(factor.aval, shape=a.aval.shape))
    swapped[id(factor)] = kept
    return Eqn(eqn.op, (a,), {**eqn.params, "transposed": True}, (kept, *eqn.outputs[1:]),
               eqn.source)


def _flipped_solve(eqn: Eqn, factor: Var) -> Eqn:
    params = {**eqn.params, "lower": not eqn.params["lower"],
              "transpose_a": not eqn.params["transpose_a"]}
    return Eqn(eqn.op, (factor, *eqn.inputs[1:]), params, eqn.outputs, eqn.source)
