"""`pmap`: one replica of a function per process, the mapped axis split over the job.

As JAX's `pmap`: `pmap(f, axis_name="i")(x)` with `x.shape[0]` equal to the number
of replicas runs `f(x[r])` on replica `r` and stacks the results, and collectives
over `"i"` inside `f` act across the replicas. Each process computes its own row
(compiled with `jit`) and the stacked result is all-gathered, so every process
returns the whole result, equal to `vmap(f, axis_name="i")(x)`. A lone process
holds every replica and runs exactly that `vmap`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from .. import numpy as tnp
from ..api import jit
from ..errors import TracerValueError
from ..ops import all_gather, replicas
from ..transforms import vmap
from ..tree_util import tree_flatten, tree_unflatten
from .job import current_job


def _per_arg(axes: Any, count: int, what: str) -> list[int | None]:
    if isinstance(axes, (tuple, list)):
        if len(axes) != count:
            raise TracerValueError(f"pmap: {what} has {len(axes)} entries for {count} "
                                   f"arguments")
        return list(axes)
    return [axes] * count


def _local_rows(args: tuple, in_axes: list[int | None], size: int, rank: int,
                name: str) -> list[Any]:
    """Each argument's row for this replica (unmapped arguments whole)."""
    rows = []
    for i, (arg, axis) in enumerate(zip(args, in_axes, strict=True)):
        leaves, tree = tree_flatten(arg)
        if axis is not None:
            for leaf in leaves:
                if tnp.shape(leaf)[axis] != size:
                    raise TracerValueError(
                        f"pmap({name}): argument {i} has size {tnp.shape(leaf)[axis]} on "
                        f"its mapped axis {axis}, but the job has {size} replicas "
                        f"(one row per replica)")
            leaves = [tnp.take(leaf, rank, axis=axis) for leaf in leaves]
        rows.append(tree_unflatten(tree, leaves))
    return rows


def pmap(fun: Callable[..., Any], axis_name: Hashable = None, in_axes: Any = 0,
         out_axes: int = 0) -> Callable[..., Any]:
    """Map `fun` over axis `in_axes` of its arguments, one replica per process.

    >>> pmap(lambda v: tr.ops.all_reduce(v, axis_name="i"), axis_name="i")(x)
    """
    name = getattr(fun, "__name__", "fun")

    def replica(*rows: Any) -> Any:
        with replicas.process_axis(axis_name):
            out = fun(*rows)
        leaves, tree = tree_flatten(out)
        stacked = [all_gather(tnp.expand_dims(v, out_axes), out_axes) for v in leaves]
        return tree_unflatten(tree, stacked)

    compiled = jit(replica)

    @functools.wraps(fun)
    def mapped(*args: Any) -> Any:
        job = current_job()
        if job is None or job.size == 1:
            return vmap(fun, in_axes, out_axes, axis_name=axis_name)(*args)
        axes = _per_arg(in_axes, len(args), "in_axes")
        return compiled(*_local_rows(args, axes, job.size, job.rank, name))
    return mapped
