"""Replicas as the processes of an MPI job (mpi4py), as in `mpiexec -n 4 python run.py`.

`initialize()` joins the job (implicit on first use); `process_count()` and
`process_index()` say how many replicas there are and which one this is. Outside
`vmap(axis_name=)` the collectives of `tracer.ops` act across these replicas, in
`jit`, `grad` and control flow; `pmap` splits an axis over them. A process not
started by `mpiexec` (or without mpi4py) is one replica.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import replicas
from .job import Job, ReplicaError, current_job
from .pmap import pmap

__all__ = ["ReplicaError", "initialize", "pmap", "process_count", "process_index"]


class _MpiTransport:
    """What `tracer.ops` calls for a collective across processes."""

    def replica_count(self) -> int:
        job = current_job()
        return 1 if job is None else job.size

    def run(self, op: str, operands: tuple[np.ndarray, ...], params: dict[str, Any],
            out: np.ndarray | None = None) -> Any:
        # (imported here: a lone process, the usual case, never needs the MPI host steps)
        from . import host_ops

        job = current_job()
        assert job is not None, "replica_count() > 1 only inside a job"
        return host_ops.run(job, op, operands, params, out)

    def signature(self, op: str, aval: Any, params: dict[str, Any]) -> int | None:
        job = current_job()
        if job is None or not job.native.enabled:
            return None
        from .signature import digest  # (hashlib: only inside a job)

        return digest(op, aval.shape, np.dtype(aval.dtype), params)

    def fail(self, op: str, status: int, aval: Any, params: dict[str, Any]) -> None:
        job = current_job()
        assert job is not None, "compiled code calls MPI only inside a job"
        from .native import raise_status  # (imports numba: only inside a job)
        raise_status(job, op, status, aval.shape, np.dtype(aval.dtype), params)


def initialize() -> None:
    """Join the MPI job this process was started in (a no-op for a lone process without
    mpi4py). Optional: the first collective or `process_count()` joins it too."""
    current_job(start=True)


def _job() -> Job | None:
    return current_job()


def process_count() -> int:
    """The number of replicas (processes) of the job; 1 outside `mpiexec`."""
    job = _job()
    return 1 if job is None else job.size


def process_index() -> int:
    """This process's replica id in [0, process_count())."""
    job = _job()
    return 0 if job is None else job.rank


replicas.set_transport(_MpiTransport())
