"""The check before each collective: do all replicas enter the same one?

Every replica all-gathers a 256-byte slot that starts with two int64s: how many
collectives it entered before this one, and a hash of (op, shape, dtype, params).
An all-reduce of at most 240 bytes rides in the rest of the slot, so it costs one
round trip, check included. All get the same table, so when it
disagrees every replica knows at once; they then all-gather readable descriptions
and raise the same `TracerValueError` naming the op and the ranks. Without this a
mismatch deadlocks or moves wrong bytes. `config.distributed_checks` turns it off.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..config import config
from ..core import Graph
from ..errors import TracerValueError
from .job import Job, as_bytes

SLOT_BYTES = 256
PAYLOAD_BYTES = SLOT_BYTES - 16
_digests: dict[tuple, tuple[Any, int]] = {}  # (op, id(params), shape, dtype) -> (params,
# digest): compiled code passes the eqn's own params dict, so each eqn hashes once


def describe(op: str, shape: tuple[int, ...], dtype: np.dtype, params: dict[str, Any]) -> str:
    parts = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, Graph):
            value = " ".join(f"{e.op.name}" for e in value.eqns)
        parts.append(f"{key}={value}")
    return f"{op}({dtype}{list(shape)}; {', '.join(parts)})"


def digest(op: str, shape: tuple[int, ...], dtype: np.dtype, params: dict[str, Any]) -> int:
    """The signature's hash of (op, operand shape and dtype, params), as an int64."""
    key = (op, id(params), shape, dtype)
    hit = _digests.get(key)
    if hit is not None and hit[0] is params:
        return hit[1]
    text = describe(op, shape, dtype, params)
    raw = hashlib.blake2b(text.encode(), digest_size=8).digest()
    value = int.from_bytes(raw, "little", signed=True)
    if len(_digests) > 4096:
        _digests.clear()
    _digests[key] = (params, value)
    return value


def raise_mismatch(job: Job, op: str, shape: tuple[int, ...], dtype: np.dtype,
                   params: dict[str, Any]) -> None:
    """Every replica saw the mismatch in the same table: they all-gather what they
    entered and raise the same error."""
    texts = job.data.allgather(f"#{job.sequence} {describe(op, shape, dtype, params)}")
    by_text: dict[str, list[int]] = {}
    for rank, t in enumerate(texts):
        by_text.setdefault(t, []).append(rank)
    detail = "; ".join(f"ranks {ranks}: {t}" for t, ranks in by_text.items())
    raise TracerValueError(f"{op}: the replicas entered different collectives "
                           f"(collective #n, op, operand, params): {detail}")


def exchange(job: Job, op: str, x: np.ndarray, params: dict[str, Any],
             payload: np.ndarray | None = None) -> np.ndarray:
    """All-gather every replica's signature in a fixed slot of SLOT_BYTES, with up to
    PAYLOAD_BYTES of `payload` riding along; raise on every replica on a mismatch.
    The (replicas, payload elements) table of payloads, a view of the job's slot table
    (valid until the next exchange). Slots never change size, so even replicas that
    disagree complete this exchange."""
    slot, table = job.slot_buffers(SLOT_BYTES)
    job.sequence += 1  # (the signature counts the collective)
    head = slot[:16].view(np.int64)
    head[0], head[1] = job.sequence, digest(op, x.shape, x.dtype, params)
    count = 0 if payload is None else payload.size
    if count:
        slot[16:16 + payload.nbytes] = np.ascontiguousarray(payload).reshape(-1).view(np.uint8)
    job.wait([job.data.Iallgather(as_bytes(slot), as_bytes(table))], op)
    if table[:, :16].tobytes() != slot[:16].tobytes() * job.size:
        raise_mismatch(job, op, x.shape, x.dtype, params)
    if payload is None:
        return table[:, 16:16]
    skip = 16 // payload.itemsize  # (every itemsize divides 16 and SLOT_BYTES)
    return table.view(payload.dtype)[:, skip:skip + count]


def check_signature(job: Job, op: str, x: np.ndarray, params: dict[str, Any]) -> None:
    """Raise on every replica when the replicas are not entering the same collective
    (`config.distributed_checks`)."""
    if config.distributed_checks:
        exchange(job, op, x, params)
    else:
        job.sequence += 1
