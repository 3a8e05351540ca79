"""Dead-code elimination: drop eqns none of whose outputs reach the graph outputs,
inside sub-graphs too. Sub-graph *inputs* are kept (their arity is the op's
contract); only their dead eqns go."""

from __future__ import annotations

from ..core import Eqn, Graph, Var, is_effectful
from .rewrite import rewrite


def dce(graph: Graph) -> Graph:
    graph = rewrite(graph, lambda eqn, defs: None, dce)  # recurse into sub-graphs
    live: set[int] = {id(a) for a in graph.outputs if isinstance(a, Var)}
    kept: list[Eqn] = []
    for eqn in reversed(graph.eqns):
        if any(id(v) in live for v in eqn.outputs) or is_effectful(eqn):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    if len(kept) == len(graph.eqns):
        return graph
    return Graph(graph.inputs, tuple(reversed(kept)), graph.outputs, graph.name)
