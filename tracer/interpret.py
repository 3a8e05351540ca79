"""Two ways to evaluate a Graph.

`eval_graph` re-emits every eqn through `op.bind`: outside a trace that runs the
reference implementations, inside one it inlines the graph into the current
trace. This is what lets transformed graphs compose (`jit(vmap(grad(f)))`).

`run_graph` calls `op.impl` directly with no checks: the interpreter backend's
fast path and how control-flow impls run their sub-graphs.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .core import Eqn, Graph, Literal, ShapedArray
from .tracing import bind


def eval_graph(graph: Graph, args: Sequence[Any],
               rewrite: Callable[[Eqn, list[Any]], list[Any] | None] | None = None) -> list[Any]:
    """Re-emit `graph` on `args`; `rewrite(eqn, inputs)` may return an eqn's outputs
    computed another way (None: bind the eqn's op as recorded)."""
    env: dict[int, Any] = {id(v): x for v, x in zip(graph.inputs, args, strict=True)}
    read = lambda a: literal_value(a) if isinstance(a, Literal) else env[id(a)]  # noqa: E731
    for eqn in graph.eqns:
        ins = [read(a) for a in eqn.inputs]
        outs = rewrite(eqn, ins) if rewrite is not None else None
        if outs is None:
            outs = bind(eqn.op, ins, eqn.params, eqn.source)
            outs = outs if eqn.op.multiple_results else (outs,)
        for v, x in zip(eqn.outputs, outs, strict=True):
            env[id(v)] = x
    return [read(a) for a in graph.outputs]


def literal_value(lit: Literal) -> Any:
    """A literal's value for re-binding: a weak 0-d literal goes back to a Python
    scalar so it stays weak in the trace it is inlined into."""
    return lit.value.item() if lit.aval.weak_type and lit.aval.shape == () else lit.value


def run_graph(graph: Graph, args: Sequence[Any], check: bool = False) -> list[Any]:
    """Run `graph` on NumPy values with the ops' reference implementations.

    With `check`, every result is compared with the eqn's abstract value, so a
    reference implementation that disagrees with its shape rule fails loudly.
    """
    env: dict[int, Any] = {id(v): x for v, x in zip(graph.inputs, args, strict=True)}
    for eqn in graph.eqns:
        ins = [a.value if isinstance(a, Literal) else env[id(a)] for a in eqn.inputs]
        outs = eqn.op.impl(*ins, **eqn.params)
        if not eqn.op.multiple_results:
            outs = (outs,)
        for v, x in zip(eqn.outputs, outs, strict=True):
            if check:
                _check_result(eqn, v.aval, x)
            env[id(v)] = x
    return [a.value if isinstance(a, Literal) else env[id(a)] for a in graph.outputs]


class ImplMismatchError(AssertionError):
    """A reference implementation returned a value its shape rule did not predict."""


def _check_result(eqn: Any, aval: ShapedArray, x: Any) -> None:
    arr = np.asarray(x)
    if arr.shape != aval.shape or arr.dtype != aval.dtype:
        raise ImplMismatchError(f"{eqn.op.name}: impl returned {arr.dtype}{list(arr.shape)} "
                                f"but the shape rule says {aval} (at {eqn.source})")
