"""JVP and batching rules of sort.

Sorting permutes: the output tangents are the input tangents moved by the same
permutation. As JAX's `_sort_jvp`, the JVP sorts an iota along with the operands
(the comparator extended to ignore it), then gathers each tangent at the sorted
iota (a take-along-axis gather, linear in the tangent, so it transposes to a
scatter-add). Sort itself is not linear. Batching moves every operand's batch
axis to the front and sorts along `dimension + 1`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import Graph
from .ad import Zero, aval_of_value
from .indexing import gather_p
from .shape import iota_p
from .shape_rules import at_front, batch_size
from .sort import extend_comparator, sort_p


def take_along(x: Any, order: Any, dimension: int) -> Any:
    """`x[..., order[..., j, ...], ...]` along `dimension` (same shapes): a gather with
    every other dim a batching dim and an implicit index vector of size 1."""
    ndim = aval_of_value(x).ndim
    others = tuple(d for d in range(ndim) if d != dimension)
    return gather_p.bind(x, order, offset_dims=(), collapsed_slice_dims=(dimension,),
                         start_index_map=(dimension,), index_vector_dim=ndim,
                         operand_batching_dims=others, start_indices_batching_dims=others,
                         slice_sizes=(1,) * ndim, indices_are_sorted=False)


def _sort_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, dimension: int,
              is_stable: bool, to_apply: Graph) -> tuple[list[Any], list[Any]]:
    shape = aval_of_value(primals[0]).shape
    if 0 in shape or all(isinstance(t, Zero) for t in tangents):
        # nothing to move (and on an empty array a gather of size-1 slices would not fit)
        outs = sort_p.bind(*primals, dimension=dimension, is_stable=is_stable,
                           to_apply=to_apply)
        return outs, [Zero(aval_of_value(o)) if isinstance(t, Zero) else t
                      for o, t in zip(outs, tangents, strict=True)]
    dtype = np.dtype(np.int32 if shape[dimension] < 2 ** 31 else np.int64)
    iota = iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)
    *outs, order = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                               to_apply=extend_comparator(to_apply, dtype))
    t_out = [t if isinstance(t, Zero) else take_along(t, order, dimension) for t in tangents]
    return outs, t_out


def _sort_batch(args: Sequence[Any], dims: Sequence[int | None], *, dimension: int,
                is_stable: bool, to_apply: Graph) -> tuple[list[Any], list[int]]:
    size = batch_size(args, dims)
    moved = [at_front(x, d, size) for x, d in zip(args, dims, strict=True)]
    outs = sort_p.bind(*moved, dimension=dimension + 1, is_stable=is_stable, to_apply=to_apply)
    return outs, [0] * len(outs)


sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch
