"""Which dims of a graph's values are the same dimension by construction.

Generated code reads every size from `dims`; two dims that the graph's structure makes
equal (an element-wise op's operand and result, a transpose's permuted dims, a dot's
batch and contracting dims, ...) share one size symbol, so a row width is `n1`
everywhere instead of `n1`, `n3` and `n6`. Only structure decides: dims that merely
happen to have equal sizes in this trace stay apart, so the source (and its cache key)
still serves every shape of the structure.
"""

from __future__ import annotations

from typing import Callable, Iterator

from ...core import Atom, Eqn, Graph, Var, subgraphs
from .index_maps import ELEMENTWISE_FAMILIES

Dim = tuple[int, int]  # (id of the atom, axis)
Pairs = Iterator[tuple[Atom, int, Atom, int]]


def _operand_follows(eqn: Eqn, k: int) -> tuple[int, ...] | None:
    """Result dim each dim of an element-wise operand follows (its broadcasting)."""
    ndim, rank = eqn.inputs[k].aval.ndim, eqn.outputs[0].aval.ndim
    if ndim == rank:
        return tuple(range(ndim))
    return tuple(eqn.params.get("broadcast_dimensions") or ()) or None


def _elementwise(eqn: Eqn) -> Pairs:
    out = eqn.outputs[0]
    for k, a in enumerate(eqn.inputs):
        for j, d in enumerate(_operand_follows(eqn, k) or ()):
            yield a, j, out, d


def _broadcast_in_dim(eqn: Eqn) -> Pairs:
    for j, d in enumerate(eqn.params["broadcast_dimensions"]):
        yield eqn.inputs[0], j, eqn.outputs[0], d


def _transpose(eqn: Eqn) -> Pairs:
    for d, p in enumerate(eqn.params["permutation"]):
        yield eqn.inputs[0], p, eqn.outputs[0], d


def _same_shape(eqn: Eqn) -> Pairs:
    """rev: every dim; concatenate: every dim but the axis, for every operand."""
    skip = eqn.params.get("dimension")
    for a in eqn.inputs:
        for d in range(a.aval.ndim):
            if d != skip:
                yield a, d, eqn.outputs[0], d


def _unit_reshape(eqn: Eqn) -> Pairs:
    src, dst = eqn.inputs[0].aval.shape, eqn.outputs[0].aval.shape
    if [n for n in src if n != 1] != [n for n in dst if n != 1]:
        return
    kept = iter(d for d, n in enumerate(dst) if n != 1)
    for j, n in enumerate(src):
        if n != 1:
            yield eqn.inputs[0], j, eqn.outputs[0], next(kept)


def _reduce(eqn: Eqn) -> Pairs:
    n = len(eqn.outputs)
    reduced = set(eqn.params["dimensions"])
    for a, out in zip(eqn.inputs[:n], eqn.outputs, strict=True):
        kept = [d for d in range(a.aval.ndim) if d not in reduced]
        for o, d in enumerate(kept):
            yield a, d, out, o


def _dot_general(eqn: Eqn) -> Pairs:
    lhs, rhs = eqn.inputs
    out, p = eqn.outputs[0], eqn.params
    lb, rb = p["lhs_batch_dims"], p["rhs_batch_dims"]
    lc, rc = p["lhs_contracting_dims"], p["rhs_contracting_dims"]
    for o, (i, j) in enumerate(zip(lb, rb, strict=True)):
        yield lhs, i, rhs, j
        yield lhs, i, out, o
    for i, j in zip(lc, rc, strict=True):
        yield lhs, i, rhs, j
    lfree = [d for d in range(lhs.aval.ndim) if d not in (*lb, *lc)]
    rfree = [d for d in range(rhs.aval.ndim) if d not in (*rb, *rc)]
    for o, d in enumerate(lfree, start=len(lb)):
        yield lhs, d, out, o
    for o, d in enumerate(rfree, start=len(lb) + len(lfree)):
        yield rhs, d, out, o


RULES: dict[str, Callable[[Eqn], Pairs]] = {
    "broadcast_in_dim": _broadcast_in_dim, "transpose": _transpose, "rev": _same_shape,
    "concatenate": _same_shape, "reshape": _unit_reshape, "reduce": _reduce,
    "dot_general": _dot_general,
}


class DimensionClasses:
    """Union-find over (atom, axis): `key(atom, axis)` is the same for dims equal by
    construction."""

    def __init__(self, graph: Graph | None) -> None:
        self._parent: dict[Dim, Dim] = {}
        if graph is not None:
            self._walk(graph)

    def key(self, atom: Atom, axis: int) -> Dim:
        return self._find((id(atom), axis))

    def _walk(self, graph: Graph) -> None:
        for eqn in graph.eqns:
            rule = _elementwise if eqn.op.family in ELEMENTWISE_FAMILIES else \
                RULES.get(eqn.op.name)
            for a, i, b, j in rule(eqn) if rule is not None else ():
                # (a size-1 dim broadcast against n: equal only where the sizes are)
                if isinstance(a, Var) and isinstance(b, Var) and \
                        a.aval.shape[i] == b.aval.shape[j]:
                    self._union((id(a), i), (id(b), j))
            for sub in subgraphs(eqn.params):
                self._walk(sub)

    def _find(self, dim: Dim) -> Dim:
        root = dim
        while self._parent.get(root, root) != root:
            root = self._parent[root]
        while dim != root:
            dim, self._parent[dim] = self._parent.get(dim, dim), root
        return root

    def _union(self, a: Dim, b: Dim) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[rb] = ra
