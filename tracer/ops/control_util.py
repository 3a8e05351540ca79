"""Helpers of the control-flow ops (`control.py`): tracing a user function into a
sub-graph with its captured consts, weak-typed carries promoted to the dtype the body
returns, pytree-structure checks, and splitting a flat operand list into its groups.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..core import Graph, ShapedArray, aval_of
from ..errors import ParamError, TracerTypeError
from ..tracing import Tracer, trace_flat
from ..tree_util import tree_flatten
from .common import check_results, wrapper_error
from .registry import OPS


def _aval(x: Any) -> ShapedArray:
    return x.aval if isinstance(x, Tracer) else aval_of(x)


def _fmt(avals: Iterable[ShapedArray]) -> str:
    return "(" + ", ".join(map(str, avals)) + ")"


def _trace(fun: Callable[..., Any], avals: Sequence[ShapedArray], name: str,
           op: str, what: str) -> tuple[Graph, list[Tracer], Any]:
    """Trace `fun(*leaves) -> pytree`: (graph, captured tracers, output treedef)."""
    trees: list[Any] = []

    def flat(*args: Any) -> list[Any]:
        leaves, tree = tree_flatten(fun(*args))
        check_results(op, what, leaves)
        trees.append(tree)
        return leaves

    graph, captured = trace_flat(flat, avals, name)
    return graph, captured, trees[0]


def _consts_first(graph: Graph, nconsts: int) -> Graph:
    """Move the trailing `nconsts` captured inputs of `graph` to the front."""
    k = len(graph.inputs) - nconsts
    return Graph(graph.inputs[k:] + graph.inputs[:k], graph.eqns, graph.outputs, graph.name)


def _join_weak(carry: Sequence[ShapedArray], outs: Sequence[ShapedArray]) -> tuple:
    """Loop results are weak only if both the initial value and the body result are."""
    return tuple(c.update(weak_type=c.weak_type and o.weak_type)
                 for c, o in zip(carry, outs, strict=True))


def _promote_weak(leaves: list[Any], avals: Sequence[ShapedArray],
                  outs: Sequence[ShapedArray]) -> tuple[list[Any], bool]:
    """Convert weak (Python scalar) initial carries to the dtype the body returns.

    `while_loop(c, b, (0, x))` whose body turns the 0 into a float retraces once with
    the carry already of that dtype, as JAX does.
    """
    changed = False
    new = list(leaves)
    for i, (a, o) in enumerate(zip(avals, outs, strict=True)):
        if a.weak_type and a.shape == o.shape and a.dtype != o.dtype:
            new[i] = _convert(leaves[i], o.dtype)
            changed = True
    return new, changed


def _convert(x: Any, dtype: np.dtype) -> Any:
    if isinstance(x, Tracer):
        return OPS["convert_element_type"].bind(x, new_dtype=np.dtype(dtype), weak_type=False)
    return np.asarray(x, dtype=dtype)


def _check_tree(op: str, what: str, expected: Any, got: Any,
                want: Sequence[ShapedArray], have: Sequence[ShapedArray]) -> None:
    if expected != got:
        raise wrapper_error(TracerTypeError, op, f"{what} must have the same structure: "
                            f"expected {expected} {_fmt(want)} but got {got} {_fmt(have)}")


def _cast(outs: Sequence[Any], like: Sequence[Any]) -> list[np.ndarray]:
    """`outs` as arrays with the dtypes of `like` (avals or arrays)."""
    return [np.asarray(o, dtype=a.dtype) for o, a in zip(outs, like, strict=True)]


def _split(avals: Sequence[Any], *sizes: int) -> list[list[Any]]:
    if sum(sizes) > len(avals):
        raise ParamError(f"{len(avals)} operands cannot hold {' + '.join(map(str, sizes))} "
                         f"consts/carries")
    parts, start = [], 0
    for n in sizes:
        parts.append(list(avals[start:start + n]))
        start += n
    return parts + [list(avals[start:])]
