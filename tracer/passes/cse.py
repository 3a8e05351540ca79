"""Common-subexpression elimination: merge eqns that compute the same thing.

Two eqns match when they have the same op, the same inputs (the same Var objects,
or Literals of equal aval and bit-identical value: `x + 0.0` and `x + -0.0`
differ) and equal params (sub-graphs by identity, floats by bit pattern, every
value by type too, so `1` and `True` never match). Effectful ops never merge.
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping, Sequence

from ..core import Atom, Eqn, Graph, Literal, is_effectful
from .rewrite import rewrite


def cse(graph: Graph) -> Graph:
    """`graph` with each repeated computation done once; sub-graphs too."""
    seen: dict[Hashable, Eqn] = {}

    def rule(eqn: Eqn, defs: Mapping[int, Eqn]) -> Sequence[Atom] | None:
        if is_effectful(eqn):
            return None
        key = _eqn_key(eqn)
        if key is None:
            return None
        first = seen.setdefault(key, eqn)
        return None if first is eqn else first.outputs

    return rewrite(graph, rule, cse)


def _eqn_key(eqn: Eqn) -> Hashable | None:
    """A hashable identity of what `eqn` computes, or None when a param is unhashable."""
    try:
        params = tuple(sorted((k, _value_key(v)) for k, v in eqn.params.items()))
        key = (id(eqn.op), tuple(map(_atom_key, eqn.inputs)), params)
        hash(key)
    except TypeError:  # a list or array param: such eqns are simply never merged
        return None
    return key


def _atom_key(atom: Atom) -> Hashable:
    if isinstance(atom, Literal):
        return ("literal", atom.aval, atom.value.tobytes())
    return ("var", id(atom))


def _value_key(value: Any) -> Hashable:
    if isinstance(value, Graph):
        return ("graph", id(value))
    if isinstance(value, float):
        return ("float", value.hex())  # -0.0 != 0.0, and NaN matches itself
    if isinstance(value, tuple):
        return ("tuple", tuple(map(_value_key, value)))
    return (type(value), value)
