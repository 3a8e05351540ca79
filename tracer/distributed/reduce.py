"""All-reduce and reduce-scatter across the job in a fixed order, bit-equal on every replica.

Each element is folded once, by one replica, in replica order `((x0 ∘ x1) ∘ x2) ∘ …`,
and copied to the others: the result is NumPy's left-to-right fold of the replicas'
values whatever the operand size, the path taken or the job's size (replicas that hold
the identity change nothing, so `-n 4` with two zero replicas equals `-n 2`).
MPI's own `MPI_Allreduce` is free to reassociate (and does, by message size and process
count), which is why tracer moves the bytes and folds them itself:

- tiny operands ride in the signature slot (one round trip, `signature.exchange`);
- small ones are all-gathered and folded by everyone (one round trip);
- large ones: an all-to-all brings block k of every replica to replica k (its own block
  stays in place), k folds it straight into its block of the destination, and an
  in-place all-gather fills in the others' blocks. That moves the bytes of MPI's
  reduce-scatter + all-gather (Rabenseifner's algorithm) with no extra copy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Graph
from ..interpret import run_graph
from ..ops.replicas import monoid
from .job import Job, as_bytes

SMALL_BYTES = 1 << 16  # up to this (operand × replicas): all-gather and fold everywhere

Combine = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]  # (a, b, out): out = a ∘ b
_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


_combiners: dict[tuple[int, np.dtype], tuple[Graph, Combine]] = {}  # per eqn, not per call


def combiner(to_apply: Graph, dtype: np.dtype) -> Combine:
    """The reduction computation on whole arrays: a NumPy ufunc for the plain monoids
    (same rounding as the op's reference), else the computation's reference graph."""
    hit = _combiners.get((id(to_apply), dtype))
    if hit is not None and hit[0] is to_apply:
        return hit[1]
    if len(_combiners) > 1024:
        _combiners.clear()
    entry = _combiners[id(to_apply), dtype] = to_apply, _make_combiner(to_apply, dtype)
    return entry[1]


def _make_combiner(to_apply: Graph, dtype: np.dtype) -> Combine:
    name = monoid(to_apply)
    if name in _UFUNCS and dtype.kind in ("fiuc" if name in ("add", "mul") else "fiu"):
        ufunc = _UFUNCS[name]
        return lambda a, b, out: ufunc(a, b, out=out)
    return lambda a, b, out: np.copyto(out, np.asarray(run_graph(to_apply, [a, b])[0], dtype))


def fold(rows: list[np.ndarray], combine: Combine, out: np.ndarray) -> np.ndarray:
    """rows[0] ∘ rows[1] ∘ … left to right (the fixed order), into `out`."""
    if len(rows) == 1:
        np.copyto(out, rows[0])
        return out
    combine(rows[0], rows[1], out)
    for row in rows[2:]:
        combine(out, row, out)
    return out


def _bounds(size: int, n: int) -> list[int]:
    """Where block k of n nearly equal blocks starts (and, at k + 1, ends)."""
    return [size * k // n for k in range(n + 1)]


@functools.lru_cache(maxsize=256)
def _layout(size: int, n: int, rank: int, item: int) -> tuple[tuple[list[int], list[int]], ...]:
    """Byte (counts, displacements) of the all-to-all that brings block `rank` of every
    member here (own block: 0 bytes), its receive side, and the all-gather of the blocks."""
    starts = _bounds(size, n)
    counts = [(starts[k + 1] - starts[k]) * item for k in range(n)]
    displs = [s * item for s in starts[:n]]
    mine = counts[rank]
    send = [c if k != rank else 0 for k, c in enumerate(counts)]
    recv = [mine if k != rank else 0 for k in range(n)]
    return (send, displs), (recv, [k * mine for k in range(n)]), (counts, displs)


def _gathered(job: Job, comm: Any, flat: np.ndarray, op: str) -> list[np.ndarray]:
    """Every member's `flat`, in member order, in the job's scratch buffer."""
    n = comm.Get_size()
    table = job.scratch(flat.nbytes * n).view(flat.dtype).reshape(n, flat.size)
    job.wait([comm.Iallgather(as_bytes(flat), as_bytes(table))], op)
    return list(table)


def _block_rows(job: Job, comm: Any, flat: np.ndarray, op: str) -> list[np.ndarray]:
    """Block `rank` of every member's `flat`, in member order: ours in place, the others'
    received by an all-to-all into the job's scratch buffer."""
    n, rank, item = comm.Get_size(), comm.Get_rank(), flat.itemsize
    send, recv, (counts, displs) = _layout(flat.size, n, rank, item)
    mine = counts[rank] // item
    rows = job.scratch(n * counts[rank]).view(flat.dtype).reshape(n, mine)
    byte = job.MPI.BYTE
    job.wait([comm.Ialltoallv([flat.view(np.uint8), send, byte],
                              [rows.view(np.uint8), recv, byte])], op)
    start = displs[rank] // item
    return [flat[start:start + mine] if k == rank else rows[k] for k in range(n)]


def reduce_scatter_flat(job: Job, comm: Any, flat: np.ndarray, combine: Combine,
                        out: np.ndarray, op: str) -> np.ndarray:
    """Fold block `rank` of every member's `flat` into `out` (that block's size)."""
    return fold(_block_rows(job, comm, flat, op), combine, out)


def all_reduce_flat(job: Job, comm: Any, flat: np.ndarray, combine: Combine,
                    out: np.ndarray, op: str) -> np.ndarray:
    """The fold of every member's `flat` (C-contiguous, 1-d) into `out` (same shape)."""
    n = comm.Get_size()
    if n == 1:
        np.copyto(out, flat)
    elif flat.nbytes * n <= SMALL_BYTES:
        fold(_gathered(job, comm, flat, op), combine, out)
    else:
        rank, item = comm.Get_rank(), flat.itemsize
        counts, displs = _layout(flat.size, n, rank, item)[2]
        start = displs[rank] // item
        reduce_scatter_flat(job, comm, flat, combine,
                            out[start:start + counts[rank] // item], op)
        job.wait([comm.Iallgatherv(job.MPI.IN_PLACE, [out.view(np.uint8), (counts, displs),
                                                      job.MPI.BYTE])], op)
    return out
