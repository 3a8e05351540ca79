"""Graph → Graph lowering the cpu backend applies before planning loop nests.

A `dot_general` with no free dimensions on either side is a batch of inner
products (what `vmap` makes of a vector dot). Through BLAS it would be one tiny
`np.dot` call per batch element; as transpose + mul + add-reduce it is a single
fused loop nest.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import ops
from ..core import Eqn, Graph
from ..interpret import eval_graph
from ..tracing import trace_flat


def _free_dims(rank: int, contracting: Sequence[int], batch: Sequence[int]) -> list[int]:
    return [d for d in range(rank) if d not in contracting and d not in batch]


def _is_batched_inner_product(eqn: Eqn) -> bool:
    if eqn.op.name != "dot_general":
        return False
    p = eqn.params
    lhs, rhs = (a.aval for a in eqn.inputs)
    return (bool(p["lhs_batch_dims"])
            and not _free_dims(lhs.ndim, p["lhs_contracting_dims"], p["lhs_batch_dims"])
            and not _free_dims(rhs.ndim, p["rhs_contracting_dims"], p["rhs_batch_dims"]))


def _as(x: Any, dtype: Any, out_dtype: Any) -> Any:
    """preferred_element_type: accumulate in the output dtype."""
    return x if dtype == out_dtype else ops.convert_element_type(x, out_dtype)


def _inner_product(eqn: Eqn, lhs: Any, rhs: Any) -> list[Any]:
    p = eqn.params
    out_dtype = eqn.outputs[0].aval.dtype
    lhs = ops.transpose(_as(lhs, eqn.inputs[0].aval.dtype, out_dtype),
                        (*p["lhs_batch_dims"], *p["lhs_contracting_dims"]))
    rhs = ops.transpose(_as(rhs, eqn.inputs[1].aval.dtype, out_dtype),
                        (*p["rhs_batch_dims"], *p["rhs_contracting_dims"]))
    nbatch = len(p["lhs_batch_dims"])
    summed = tuple(range(nbatch, nbatch + len(p["lhs_contracting_dims"])))
    zero = np.zeros((), out_dtype)
    return [ops.reduce(ops.mul(lhs, rhs), zero, ops.add, summed)]


def lower_batched_inner_products(graph: Graph) -> Graph:
    """`graph` with batched inner-product dot_generals as mul + add-reduce (top level)."""
    if not any(map(_is_batched_inner_product, graph.eqns)):
        return graph

    def rewrite(eqn: Eqn, args: list[Any]) -> list[Any] | None:
        return _inner_product(eqn, *args) if _is_batched_inner_product(eqn) else None

    new, _ = trace_flat(lambda *xs: eval_graph(graph, xs, rewrite), graph.in_avals, graph.name)
    return new
