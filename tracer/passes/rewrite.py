"""The walk every local pass shares: substitute, recurse into sub-graphs, rewrite.

A pass supplies a `Rule`: given an eqn (its inputs already substituted, its
sub-graphs already rewritten by the same pass) and the kept eqns that define each
Var so far, it returns atoms to stand for the eqn's outputs, or None to keep the
eqn. The walk never mutates its input, keeps every eqn's `source`, and refuses a
replacement whose aval differs from the output it replaces (weak_type included),
so no rule can change a graph's types by accident.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..core import Atom, Eqn, Graph, Var

Rule = Callable[[Eqn, Mapping[int, Eqn]], "Sequence[Atom] | None"]
Pass = Callable[[Graph], Graph]


def rewrite(graph: Graph, rule: Rule, recurse: Pass) -> Graph:
    """Apply `rule` to every eqn of `graph` in order; `recurse` rewrites sub-graphs."""
    env: dict[int, Atom] = {}       # id(replaced Var) -> the atom standing for it
    defs: dict[int, Eqn] = {}       # id(Var) -> the kept eqn that defines it
    memo: dict[int, Graph] = {}     # id(sub-graph) -> rewritten, so shared ones stay shared
    eqns: list[Eqn] = []
    changed = False
    for old in graph.eqns:
        eqn = _substituted(old, env, recurse, memo)
        changed |= eqn is not old
        outs = rule(eqn, defs)
        if outs is not None and _same_avals(eqn.outputs, outs):
            env.update((id(v), a) for v, a in zip(eqn.outputs, outs, strict=True))
            changed = True
            continue
        eqns.append(eqn)
        defs.update((id(v), eqn) for v in eqn.outputs)
    outputs = tuple(_read(env, a) for a in graph.outputs)
    if not changed:
        return graph
    return Graph(graph.inputs, tuple(eqns), outputs, graph.name)


def _read(env: Mapping[int, Atom], atom: Atom) -> Atom:
    return env.get(id(atom), atom) if isinstance(atom, Var) else atom


def _same_avals(outputs: Sequence[Var], atoms: Sequence[Atom]) -> bool:
    return len(outputs) == len(atoms) and all(
        v.aval == a.aval for v, a in zip(outputs, atoms, strict=True))


def _substituted(eqn: Eqn, env: Mapping[int, Atom], recurse: Pass,
                 memo: dict[int, Graph]) -> Eqn:
    """`eqn` with replaced inputs and rewritten sub-graphs (itself if nothing changed)."""
    inputs = tuple(_read(env, a) for a in eqn.inputs)
    params = {k: _sub_param(v, recurse, memo) for k, v in eqn.params.items()}
    same_inputs = all(a is b for a, b in zip(inputs, eqn.inputs, strict=True))
    same_params = all(params[k] is v for k, v in eqn.params.items())
    if same_inputs and same_params:
        return eqn
    return Eqn(eqn.op, inputs, params if not same_params else eqn.params, eqn.outputs,
               eqn.source)


def _sub_param(value: Any, recurse: Pass, memo: dict[int, Graph]) -> Any:
    if isinstance(value, Graph):
        if id(value) not in memo:
            memo[id(value)] = recurse(value)
        return memo[id(value)]
    if isinstance(value, tuple) and any(isinstance(v, Graph) for v in value):
        new = tuple(_sub_param(v, recurse, memo) for v in value)
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    return value
