"""Where the replicas of a collective outside `vmap` live: the processes of a job.

A collective whose `axis_name` is None acts across the job's replicas. `tracer.ops`
sits below `tracer.distributed` (which talks to MPI), so the job plugs its
transport in here with `set_transport`; without one there is one replica, and every
collective is the seeds' identity for a replica count of 1.

`tr.pmap(fun, axis_name=n)` maps the name `n` onto those replicas while it traces
(`process_axis`): a collective over `n` is then recorded with `axis_name=None`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np

from ..errors import TracerValueError


class Transport(Protocol):
    """The job's replicas, as `tracer.distributed` provides them."""

    def replica_count(self) -> int: ...

    def run(self, op: str, operands: tuple[np.ndarray, ...], params: dict[str, Any],
            out: np.ndarray | None = None) -> np.ndarray: ...

    def signature(self, op: str, aval: Any, params: dict[str, Any]) -> int | None: ...

    def fail(self, op: str, status: int, aval: Any, params: dict[str, Any]) -> None: ...


_transport: Transport | None = None
_process_axes: ContextVar[tuple[Hashable, ...]] = ContextVar("tracer_process_axes", default=())


def set_transport(transport: Transport | None) -> None:
    """Install the job's transport (None: one replica)."""
    global _transport
    _transport = transport


def replica_transport() -> Transport:
    """The job's transport (only called when `replica_count() > 1`)."""
    assert _transport is not None, "several replicas imply a transport"
    return _transport


def replica_count() -> int:
    """How many replicas a collective outside `vmap` acts across (1 without a job)."""
    return 1 if _transport is None else _transport.replica_count()


@contextmanager
def process_axis(name: Hashable) -> Iterator[None]:
    """While tracing `pmap`'s function: collectives over `name` act across the job."""
    token = _process_axes.set(_process_axes.get() + (name,))
    try:
        yield
    finally:
        _process_axes.reset(token)


def is_process_axis(name: Hashable) -> bool:
    return name is not None and name in _process_axes.get()


def run_across_processes(op: str, operands: tuple[Any, ...], params: dict[str, Any],
                         out: np.ndarray | None = None) -> Any:
    """Collective `op` across the job's replicas (traced for `params["axis_size"]` of
    them); an array result is written into `out` when given (a kernel's buffer)."""
    if replica_count() != params["axis_size"]:
        raise TracerValueError(f"{op}: traced for {params['axis_size']} replicas but the job "
                               f"has {replica_count()}")
    return replica_transport().run(op, operands, params, out)


def compiled_signature(op: str, aval: Any, params: dict[str, Any]) -> int | None:
    """The digest of collective `op` on an operand of `aval` that the replicas compare
    before it, when compiled code can call MPI itself (`numba.lib.mpi`); None when the
    collective must run as a host step."""
    return replica_transport().signature(op, aval, params)


def compiled_failure(op: str, status: int, aval: Any, params: dict[str, Any]) -> None:
    """Raise the error that compiled code's MPI status `status` stands for."""
    replica_transport().fail(op, status, aval, params)


def monoid(to_apply: Any) -> str | None:
    """The op name when a reduction computation is one op applied to its two inputs in
    order (`add`, `max`, ...), else None."""
    if len(to_apply.eqns) != 1 or to_apply.outputs[0] is not to_apply.eqns[0].outputs[0]:
        return None
    eqn = to_apply.eqns[0]
    same = [id(a) for a in eqn.inputs] == [id(v) for v in to_apply.inputs]
    return eqn.op.name if same else None


def replica_impl(op: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a collective's one-replica reference: across processes when the eqn was
    traced with several job replicas, an error for a named axis (only vmap has those)."""
    def wrap(single: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(single)
        def impl(*operands: Any, **params: Any) -> Any:
            name, size = params["axis_name"], params["axis_size"]
            if name is None and size > 1:
                return run_across_processes(op, operands, params)
            if size != 1:
                raise TracerValueError(f"{op}: a collective over axis {name!r} of size "
                                       f"{size} ran outside vmap(..., axis_name={name!r})")
            return single(*operands, **params)
        return impl
    return wrap
