"""The seeds' cross-replica operations across the processes of an MPI job.

Each runs as a host step: generated code calls it from object mode with NumPy arrays
(and, for an array result, the kernel's buffer to write it into: `run`'s `out`).
Buffers travel as bytes (MPI.BYTE), so every dtype (bfloat16 included) moves the same
way. All-reduce and reduce-scatter fold in a fixed order (`reduce`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Graph
from ..errors import TracerValueError
from .job import Job, as_bytes
from .reduce import all_reduce_flat, combiner, fold, reduce_scatter_flat
from .signature import PAYLOAD_BYTES, check_signature, exchange


def all_reduce(job: Job, x: np.ndarray, *, to_apply: Graph, replica_groups: Any,
               out: np.ndarray | None = None, **_: Any) -> np.ndarray:
    out = np.empty(x.shape, x.dtype) if out is None else out
    all_reduce_flat(job, job.group_comm(replica_groups), np.ascontiguousarray(x).reshape(-1),
                    combiner(to_apply, x.dtype), out.reshape(-1), "all_reduce")
    return out


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
    front = np.ascontiguousarray(np.moveaxis(x, scatter_dimension, 0))  # blocks: contiguous
    out = np.empty((front.shape[0] // comm.Get_size(),) + front.shape[1:], x.dtype)
    reduce_scatter_flat(job, comm, front.reshape(-1), combiner(to_apply, x.dtype),
                        out.reshape(-1), "reduce_scatter")
    return np.ascontiguousarray(np.moveaxis(out, 0, scatter_dimension))


def all_to_all(job: Job, x: np.ndarray, *, split_dimension: int, concat_dimension: int,
               replica_groups: Any, **_: Any) -> np.ndarray:
    comm = job.group_comm(replica_groups)
    blocks = _blocks(x, split_dimension, comm.Get_size())
    received = job.scratch(blocks.nbytes).view(blocks.dtype).reshape(blocks.shape)
    job.wait([comm.Ialltoall(as_bytes(blocks), as_bytes(received))], "all_to_all")
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


def _tiny_all_reduce(job: Job, x: np.ndarray, params: dict[str, Any],
                     out: np.ndarray) -> np.ndarray:
    """The check and the data in one round trip (`signature.exchange`)."""
    values = exchange(job, "all_reduce", x, params, x)
    return fold(list(values), combiner(params["to_apply"], x.dtype), out.reshape(-1))


def run(job: Job, op: str, operands: tuple[np.ndarray, ...], params: dict[str, Any],
        out: np.ndarray | None = None) -> Any:
    """Op `op` of this replica with `operands`: its share of the job's result (written
    into `out`, C-contiguous, when given; only for ops with an array result)."""
    if op == "replica_id":
        return np.uint32(job.rank)
    if op == "recv":
        return recv(job, **params)
    if op == "send":
        return send(job, np.asarray(operands[0]), **params)
    x = np.asarray(operands[0])
    if op == "all_reduce":
        out = np.empty(x.shape, x.dtype) if out is None else out
        if params["replica_groups"] is None and x.nbytes <= PAYLOAD_BYTES:
            _tiny_all_reduce(job, x, params, out)
            return out
        check_signature(job, op, x, params)
        return all_reduce(job, x, out=out, **params)
    check_signature(job, op, x, params)
    result = _OPS[op](job, x, **params)
    if out is None:
        return result
    np.copyto(out, result)
    return out
