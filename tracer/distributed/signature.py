"""The check before each collective: do all replicas enter the same one?

Every replica all-gathers two int64s: how many collectives it entered before this
one, and a hash of (op, shape, dtype, params). All get the same table, so when it
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
from .job import Job

_described: dict[int, tuple[Any, str]] = {}  # id(params) -> (params, text): params are
# the eqn's own dict when compiled code calls, so the text is made once per eqn


def _params_text(params: dict[str, Any]) -> str:
    hit = _described.get(id(params))
    if hit is not None and hit[0] is params:
        return hit[1]
    parts = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, Graph):
            value = " ".join(f"{e.op.name}" for e in value.eqns)
        parts.append(f"{key}={value}")
    text = ", ".join(parts)
    if len(_described) > 4096:
        _described.clear()
    _described[id(params)] = (params, text)
    return text


def describe(op: str, x: np.ndarray, params: dict[str, Any]) -> str:
    return f"{op}({x.dtype}{list(x.shape)}; {_params_text(params)})"


def check_signature(job: Job, op: str, x: np.ndarray, params: dict[str, Any]) -> None:
    """Raise on every replica when the replicas are not entering the same collective."""
    job.sequence += 1
    if not config.distributed_checks:
        return
    text = describe(op, x, params)
    digest = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little",
                            signed=True)
    mine = np.array([job.sequence, digest], np.int64)
    table = np.empty((job.size, 2), np.int64)
    job.wait([job.data.Iallgather(mine, table)], op)
    if (table == mine).all():
        return
    texts = job.data.allgather(f"#{job.sequence} {text}")
    by_text: dict[str, list[int]] = {}
    for rank, t in enumerate(texts):
        by_text.setdefault(t, []).append(rank)
    detail = "; ".join(f"ranks {ranks}: {t}" for t, ranks in by_text.items())
    raise TracerValueError(f"{op}: the replicas entered different collectives "
                           f"(collective #n, op, operand, params): {detail}")
