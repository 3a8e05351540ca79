"""The seeds' cross-replica operations across the processes of an MPI job.

Each runs as a host step: generated code calls the op's reference (object mode),
which lands here with NumPy arrays. Buffers travel as bytes (MPI.BYTE), so every
dtype (bfloat16 included) moves the same way.

All-reduce is bit-equal on every replica and reproducible: each element is folded
once, by one replica, in replica order `((x0 ∘ x1) ∘ x2) ∘ …`, then copied to all.
Small operands are all-gathered and folded by everyone; large ones are split in
blocks that an all-to-all brings to their owner, who folds them, and an all-gather
returns (the bandwidth of a ring all-reduce, with the order fixed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import Graph
from ..errors import TracerValueError
from ..interpret import run_graph
from .job import Job, as_bytes
from .signature import PAYLOAD_BYTES, check_signature, exchange

_SMALL_BYTES = 1 << 16  # below this (operand × replicas), all-gather and fold everywhere

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]
_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _monoid(to_apply: Graph) -> str | None:
    """The op name when the computation is one op applied to its two inputs."""
    if len(to_apply.eqns) != 1 or to_apply.outputs[0] is not to_apply.eqns[0].outputs[0]:
        return None
    eqn = to_apply.eqns[0]
    same = {id(a) for a in eqn.inputs} == {id(v) for v in to_apply.inputs}
    return eqn.op.name if same else None


def _combiner(to_apply: Graph, dtype: np.dtype) -> Combine:
    """The reduction computation on whole arrays: a NumPy ufunc for the plain monoids
    (same rounding as the op's reference), else the computation's reference graph."""
    name = _monoid(to_apply)
    if name in _UFUNCS and dtype.kind in ("fiuc" if name in ("add", "mul") else "fiu"):
        return lambda a, b: _UFUNCS[name](a, b, out=a)
    return lambda a, b: np.asarray(run_graph(to_apply, [a, b])[0], dtype)


def _fold(rows: np.ndarray, combine: Combine) -> np.ndarray:
    """rows[0] ∘ rows[1] ∘ … left to right (the fixed order), into rows[0]: `rows` is
    a receive buffer of ours."""
    acc = rows[0]
    for row in rows[1:]:
        acc = combine(acc, row)
    return acc


def _alltoall(job: Job, comm: Any, blocks: np.ndarray, op: str) -> np.ndarray:
    """blocks[j] goes to member j; result[k] is what member k sent here, in the job's
    scratch buffer (valid until the next collective: fresh pages cost page faults)."""
    out = job.scratch(blocks.nbytes).view(blocks.dtype).reshape(blocks.shape)
    job.wait([comm.Ialltoall(as_bytes(blocks), as_bytes(out))], op)
    return out


def all_reduce(job: Job, x: np.ndarray, *, to_apply: Graph, replica_groups: Any,
               **_: Any) -> np.ndarray:
    comm = job.group_comm(replica_groups)
    n, combine = comm.Get_size(), _combiner(to_apply, x.dtype)
    flat = np.ascontiguousarray(x).reshape(-1)
    if n == 1:
        return np.array(x)
    if flat.nbytes * n <= _SMALL_BYTES:
        return _fold(job.allgather(comm, flat, "all_reduce"), combine).reshape(x.shape)
    block = -(-flat.size // n)
    if block * n != flat.size:
        flat = np.concatenate([flat, np.zeros(block * n - flat.size, x.dtype)])
    mine = _fold(_alltoall(job, comm, flat.reshape(n, block), "all_reduce"), combine)
    return job.allgather(comm, mine, "all_reduce").reshape(-1)[:x.size].reshape(x.shape)


def all_gather(job: Job, x: np.ndarray, *, all_gather_dim: int, replica_groups: Any,
               **_: Any) -> np.ndarray:
    parts = job.allgather(job.group_comm(replica_groups), x, "all_gather")
    return np.concatenate(list(parts), axis=all_gather_dim)


def _blocks(x: np.ndarray, dim: int, n: int) -> np.ndarray:
    """(n, *block shape): x split in n equal blocks along `dim`."""
    return np.stack(np.split(x, n, axis=dim))


def reduce_scatter(job: Job, x: np.ndarray, *, to_apply: Graph, scatter_dimension: int,
                   replica_groups: Any, **_: Any) -> np.ndarray:
    comm = job.group_comm(replica_groups)
    received = _alltoall(job, comm, _blocks(x, scatter_dimension, comm.Get_size()),
                         "reduce_scatter")
    return np.array(_fold(received, _combiner(to_apply, x.dtype)))


def all_to_all(job: Job, x: np.ndarray, *, split_dimension: int, concat_dimension: int,
               replica_groups: Any, **_: Any) -> np.ndarray:
    comm = job.group_comm(replica_groups)
    received = _alltoall(job, comm, _blocks(x, split_dimension, comm.Get_size()), "all_to_all")
    return np.concatenate(list(received), axis=concat_dimension)


def collective_permute(job: Job, x: np.ndarray, *, source_target_pairs: Any,
                       **_: Any) -> np.ndarray:
    target = next((t for s, t in source_target_pairs if s == job.rank), None)
    source = next((s for s, t in source_target_pairs if t == job.rank), None)
    out = np.zeros(x.shape, x.dtype)  # C order: it is the receive buffer
    requests = []
    if source is not None:
        requests.append(job.data.Irecv(as_bytes(out), source=source, tag=1))
    if target is not None:
        requests.append(job.data.Isend(as_bytes(x), dest=target, tag=1))
    job.wait(requests, "collective_permute")
    return out


def send(job: Job, x: np.ndarray, *, channel_id: int, source_target_pairs: Any) -> None:
    """Start sending to this replica's target on the channel; the send completes while
    later MPI calls poll (a send never waits for its receiver: both replicas of a
    pair may send first, as the seeds' Recv is posted before the Send)."""
    target = next((t for s, t in source_target_pairs if s == job.rank), None)
    if target is not None:
        buffer = np.array(x)  # ours until the send completes
        job.start_send(job.p2p.Isend(as_bytes(buffer), dest=target, tag=channel_id), buffer)


def recv(job: Job, *, channel_id: int, source_target_pairs: Any, aval: Any) -> np.ndarray:
    """This replica's value on the channel from its source (zeros when none)."""
    source = next((s for s, t in source_target_pairs if t == job.rank), None)
    out = np.zeros(aval.shape, aval.dtype)
    if source is not None:
        status = job.MPI.Status()
        job.wait([job.p2p.Irecv(as_bytes(out), source=source, tag=channel_id)], "recv",
                 status)
        if status.Get_count(job.MPI.BYTE) != out.nbytes:
            raise TracerValueError(f"recv: channel {channel_id} expected {aval} "
                                   f"({out.nbytes} bytes) from rank {source}, which sent "
                                   f"{status.Get_count(job.MPI.BYTE)} bytes")
    return out


_OPS = {"all_reduce": all_reduce, "all_gather": all_gather, "reduce_scatter": reduce_scatter,
        "all_to_all": all_to_all, "collective_permute": collective_permute}


def run(job: Job, op: str, operands: tuple[np.ndarray, ...], params: dict[str, Any]) -> Any:
    """Op `op` of this replica with `operands`: its share of the job's result."""
    if op == "replica_id":
        return np.uint32(job.rank)
    if op == "recv":
        return recv(job, **params)
    if op == "send":
        return send(job, np.asarray(operands[0]), **params)
    x = np.asarray(operands[0])
    if op == "all_reduce" and params["replica_groups"] is None and x.nbytes <= PAYLOAD_BYTES:
        values = exchange(job, op, x, params, x)  # the check and the data, one round trip
        combine = _combiner(params["to_apply"], x.dtype)
        return _fold(np.ascontiguousarray(values).view(x.dtype), combine).reshape(x.shape)
    check_signature(job, op, x, params)
    return _OPS[op](job, x, **params)
