"""The one op table that drives the generic op tests.

Each family contributes `CASES` from its own `tests/opdb_<family>.py`. A case
calls public `tracer.ops` functions on sample arrays; the generic tests trace it,
check every eqn's reference result against its shape rule, compare eager with
traced evaluation, and compare with `expected` when the case is a golden value
(the examples of XLA's operation semantics).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

FAMILIES = ("elementwise", "shape", "linalg", "reduce", "control", "indexing", "collectives",
            "ad", "conv", "window", "sort", "rng", "decomp", "numerics", "misc", "callbacks")


@dataclass
class OpCase:
    name: str                      # test id; by convention starts with the op name
    fn: Callable[..., Any]         # calls tracer.ops functions on the arrays in `args`
    args: tuple[Any, ...]          # NumPy arrays (or Python scalars)
    expected: Any = None           # golden output (pytree of arrays) or None
    ops: tuple[str, ...] = ()      # ops this case covers (default: the prefix of name)
    rtol: float = 1e-6
    atol: float = 0.0
    tags: frozenset[str] = field(default_factory=frozenset)

    def covered(self) -> tuple[str, ...]:
        return self.ops or (self.name.split(":")[0],)


def all_cases() -> list[OpCase]:
    cases: list[OpCase] = []
    for family in FAMILIES:
        try:
            module = importlib.import_module(f"tests.opdb_{family}")
        except ModuleNotFoundError:
            continue
        cases.extend(module.CASES)
    return cases
