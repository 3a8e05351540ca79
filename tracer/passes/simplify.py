"""Algebraic simplification that is exact in IEEE and integer arithmetic.

Each rule replaces an eqn by an atom it already has, bit for bit on every input
(NaN, inf and signed zeros included):

- `x * 1`, `1 * x`, `x / 1` -> x (not complex: `(a+bi)(1+0i)` turns `inf` into NaN);
- `x + 0`, `0 + x`, `x - 0` -> x for integers; for floats only `x + -0.0` and
  `x - +0.0` (`-0.0 + +0.0` is `+0.0`, so `x + 0.0` is *not* x); in these the
  constant may be a literal or a broadcast_in_dim of one (a gradient's seed of ones);
- `neg(neg(x))` -> x; `select(p, x, x)` -> x; `select` of a constant predicate ->
  that branch;
- shape no-ops: convert_element_type to the same dtype, transpose by the identity,
  reshape / broadcast_in_dim to the same shape in order, a slice taking
  everything, an all-zero pad, a one-operand concatenate, rev of size-1 dims.

The rewrite walk (`rewrite.py`) refuses any replacement whose aval (weak_type
included) differs from the eqn's output, so each rule only checks values.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..core import Atom, Eqn, Graph, Literal, Var
from .rewrite import rewrite

Simplifier = Callable[[Eqn, Mapping[int, Eqn]], "Atom | None"]


def simplify(graph: Graph) -> Graph:
    """`graph` with exact algebraic identities applied; sub-graphs too."""
    return rewrite(graph, _simplify_eqn, simplify)


def _simplify_eqn(eqn: Eqn, defs: Mapping[int, Eqn]) -> Sequence[Atom] | None:
    rule = _RULES.get(eqn.op.name)
    atom = rule(eqn, defs) if rule is not None else None
    return None if atom is None else (atom,)


# ----------------------------------------------------------------- constant tests
def _const(atom: Atom) -> np.ndarray | None:
    return atom.value if isinstance(atom, Literal) else None


def _is_one(atom: Atom) -> bool:
    c = _const(atom)
    return c is not None and c.dtype.kind in "iuf" and bool(np.all(c == 1))


def _is_zero(atom: Atom, negative: bool) -> bool:
    """All zeros; for floats (and both parts of complex) all with the given sign."""
    c = _const(atom)
    if c is None or c.dtype.kind not in "iufc":
        return False
    if c.dtype.kind in "iu":
        return bool(np.all(c == 0))
    parts = (c.real, c.imag) if c.dtype.kind == "c" else (c,)
    return all(bool(np.all((p == 0) & (np.signbit(p) == negative))) for p in parts)


def _spread(atom: Atom, defs: Mapping[int, Eqn]) -> Atom:
    """The constant a broadcast_in_dim spreads over `atom` (each of its elements is that
    constant's), or `atom` itself."""
    inner = defs.get(id(atom)) if isinstance(atom, Var) else None
    if inner is not None and inner.op.name == "broadcast_in_dim" and \
            isinstance(inner.inputs[0], Literal):
        return inner.inputs[0]
    return atom


def _other_if(eqn: Eqn, defs: Mapping[int, Eqn], test: Callable[[Atom], bool],
              commutes: bool) -> Atom | None:
    """The operand beside a constant (or a broadcast constant) passing `test` (rhs only
    unless `commutes`)."""
    lhs, rhs = eqn.inputs
    if test(_spread(rhs, defs)):
        return lhs
    return rhs if commutes and test(_spread(lhs, defs)) else None


# -------------------------------------------------------------------- arithmetic
def _is_additive_zero(atom: Atom) -> bool:
    c = _const(atom)
    return c is not None and _is_zero(atom, negative=c.dtype.kind in "fc")


def _add(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    return _other_if(eqn, defs, _is_additive_zero, commutes=True)


def _sub(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    return _other_if(eqn, defs, lambda a: _is_zero(a, negative=False), commutes=False)


def _mul(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    return _other_if(eqn, defs, _is_one, commutes=True)


def _div(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    return _other_if(eqn, defs, _is_one, commutes=False)


def _neg(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    (x,) = eqn.inputs
    inner = defs.get(id(x)) if isinstance(x, Var) else None
    return inner.inputs[0] if inner is not None and inner.op.name == "neg" else None


def _select(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    pred, on_true, on_false = eqn.inputs
    if on_true is on_false:
        return on_true
    p = _const(pred)
    if p is None:
        return None
    if bool(np.all(p)):
        return on_true
    return on_false if not bool(np.any(p)) else None


# -------------------------------------------------------------------- shape no-ops
def _identity_dims(dims: Any, rank: int) -> bool:
    return dims is not None and tuple(dims) == tuple(range(rank))


def _operand(eqn: Eqn) -> Atom:
    return eqn.inputs[0]


def _same_dtype(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    return _operand(eqn)  # the walk keeps it only when the avals agree


def _transpose(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    x = _operand(eqn)
    return x if _identity_dims(eqn.params.get("permutation"), x.aval.ndim) else None


def _reshape(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    x, dims = _operand(eqn), eqn.params.get("dimensions")
    return x if dims is None or _identity_dims(dims, x.aval.ndim) else None


def _broadcast_in_dim(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    x = _operand(eqn)
    dims = eqn.params.get("broadcast_dimensions")
    return x if _identity_dims(dims, x.aval.ndim) else None


def _slice(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    # Starting at 0 with the operand's shape means every stride is 1 (or the
    # dimension has at most one element): the slice takes everything.
    starts = eqn.params.get("start_indices")
    return _operand(eqn) if starts is not None and not any(starts) else None


def _pad(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    config = eqn.params.get("padding_config")
    flat = [v for dim in config for v in dim] if config is not None else [1]
    return _operand(eqn) if not any(flat) else None


def _concatenate(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    return eqn.inputs[0] if len(eqn.inputs) == 1 else None


def _rev(eqn: Eqn, defs: Mapping[int, Eqn]) -> Atom | None:
    x, dims = _operand(eqn), eqn.params.get("dimensions")
    return x if dims is not None and all(x.aval.shape[d] <= 1 for d in dims) else None


_RULES: dict[str, Simplifier] = {
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "neg": _neg, "select": _select,
    "convert_element_type": _same_dtype, "transpose": _transpose, "reshape": _reshape,
    "broadcast_in_dim": _broadcast_in_dim, "slice": _slice,
    "pad": _pad, "concatenate": _concatenate, "rev": _rev,
}
