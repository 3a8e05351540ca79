"""The records of a fusion plan (`fusion.py` makes it, `fusion_join.py` joins its
nests): `LoopNest`, `OpStep`, `RowGroup`, the `Plan` that lists them in execution
order, and `IndexMap`, how a nest reads a value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ...core import Eqn, Var

@dataclass(eq=False)
class LoopNest:
    shape: tuple[int, ...]
    stores: list[Var] = field(default_factory=list)
    reduces: list[Eqn] = field(default_factory=list)
    reduce_dims: tuple[int, ...] = ()
    eqns: list[Eqn] = field(default_factory=list)  # every eqn computed in the body


@dataclass(eq=False)
class OpStep:
    eqn: Eqn


Step = Union[LoopNest, OpStep, "RowGroup"]


@dataclass
class Plan:
    steps: list[Step]
    materialized: set[int]            # ids of vars held in memory / scalar variables
    producers: dict[int, Eqn]         # id(var) -> the eqn that defines it
    users: dict[int, list[Eqn]] = field(default_factory=dict)  # id(var) -> its consumers
    outputs: set[int] = field(default_factory=set)             # ids of the graph outputs


@dataclass(eq=False)
class RowGroup:
    """Consecutive nests sharing their outer `depth` loops: each nest only reads what the
    earlier ones produced at the same outer indices (a row softmax: max, then sum of exp,
    then divide, all for one row while it is in cache)."""

    depth: int
    nests: list[LoopNest]
    # Values only this group reads, one row at a time: held per outer iteration (a
    # scalar, or a row buffer of the trailing dims) instead of in a full array.
    scratch: set[int] = field(default_factory=set)


# How a nest reads a value: for each dim of the value, the nest dim whose loop index
# it is read at, or None (a constant, or index arithmetic).
IndexMap = tuple[Union[int, None], ...]
