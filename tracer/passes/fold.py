"""Constant folding: run eqns whose inputs are all Literals at compile time.

The op's reference implementation computes the value, which becomes a Literal with
exactly the eqn's output aval (weak_type kept). Only small results are folded
(`MAX_FOLD_ELEMENTS`), so a graph never grows a large constant; eqns with
sub-graphs, effectful ops and ops without operands (whose value may depend on
where they run, e.g. a replica id) are left alone, and so are broadcasts of constants
inside sub-graphs (`_fold_body`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..core import Atom, Eqn, Graph, Literal, subgraphs
from .rewrite import rewrite

MAX_FOLD_ELEMENTS = 1024


def fold_constants(graph: Graph) -> Graph:
    """`graph` with every small all-constant computation replaced by its value."""
    return rewrite(graph, _fold, _fold_body)


def _fold_body(graph: Graph) -> Graph:
    """A sub-graph (a loop body, a branch) folded likewise, except that a broadcast of a
    constant stays one: folded, it would be an array its function takes as a parameter
    (vmap spreads every scalar constant of a batched loop body so: random.gamma's had
    126), where a broadcast scalar is a literal in the code."""
    return rewrite(graph, _fold_in_body, _fold_body)


def _fold_in_body(eqn: Eqn, defs: Mapping[int, Eqn]) -> Sequence[Atom] | None:
    return None if eqn.op.name == "broadcast_in_dim" else _fold(eqn, defs)


def _fold(eqn: Eqn, defs: Mapping[int, Eqn]) -> Sequence[Atom] | None:
    if not _foldable(eqn):
        return None
    args = [a.value for a in eqn.inputs]  # type: ignore[union-attr]  # all Literals
    try:
        with np.errstate(all="ignore"):
            outs = eqn.op.impl(*args, **eqn.params)  # type: ignore[attr-defined]
    except Exception:  # # a failing op must fail when run, not when compiled
        return None
    outs = outs if eqn.op.multiple_results else (outs,)  # type: ignore[attr-defined]
    literals = []
    for v, out in zip(eqn.outputs, outs, strict=True):
        arr = np.asarray(out)
        if arr.shape != v.aval.shape or arr.dtype != v.aval.dtype:
            return None  # an impl that disagrees with its shape rule: leave it to run time
        literals.append(Literal(arr, v.aval))
    return literals


def _foldable(eqn: Eqn) -> bool:
    return (bool(eqn.inputs)
            and all(isinstance(a, Literal) for a in eqn.inputs)
            and not getattr(eqn.op, "effectful", False)
            and not any(True for _ in subgraphs(eqn.params))
            and sum(v.aval.size for v in eqn.outputs) <= MAX_FOLD_ELEMENTS)
