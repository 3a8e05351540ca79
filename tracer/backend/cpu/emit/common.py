"""What the cpu emitters share: operand refs, binding results, loops around a statement."""

from __future__ import annotations

from typing import Callable, Sequence

from ....core import Eqn
from ...numba.codegen import GraphEmitter, Ref

OpEmitter = Callable[[GraphEmitter, Eqn], None]


def operand_refs(ge: GraphEmitter, eqn: Eqn) -> list[Ref]:
    return [ge.ref(a) for a in eqn.inputs]


def names(refs: Sequence[Ref]) -> str:
    return ", ".join(r.name for r in refs)


def bind_all(ge: GraphEmitter, eqn: Eqn, refs: Sequence[Ref]) -> None:
    for v, r in zip(eqn.outputs, refs, strict=True):
        ge.bind(v, r)


def for_each(ge: GraphEmitter, loops: list[tuple[str, str]], inside: Callable[[], None]) -> None:
    if not loops:
        inside()
        return
    var, bound = loops[0]
    with ge.w.block(f"for {var} in range({bound})"):
        for_each(ge, loops[1:], inside)


