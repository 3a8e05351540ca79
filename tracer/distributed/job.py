"""The MPI job a process belongs to: communicators, waiting, and failing together.

A process started by `mpiexec` (MPICH's hydra sets `PMI_SIZE`, Open MPI
`OMPI_COMM_WORLD_SIZE`) joins the job on first use; any other process is one
replica and never imports mpi4py. Data moves on a duplicate of `COMM_WORLD`;
failure notices travel on a second duplicate, so they never match data.

Every wait polls (`wait`): the request, then the failure notices, then the clock.
A replica that raises an uncaught exception tells the others before it aborts
(`excepthook`), so they raise `ReplicaError` naming it instead of hanging; one that
is stuck past `config.distributed_timeout` makes the waiting ones raise; a process
that dies is reaped by `mpiexec`, which ends the job. `MPI_Abort` is the last resort.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback
from typing import Any

import numpy as np

from ..config import config
from ..errors import TracerError

_FAIL_TAG = 7001
_SPINS_PER_CHECK = 64  # polls of the request between looks at failures and the clock
_GRACE_S = 1.0  # how long a failing rank lets the others print before it aborts


def as_bytes(x: np.ndarray) -> list[Any]:
    """An MPI buffer of x's bytes: every dtype (bfloat16 included) moves the same way."""
    from mpi4py import MPI
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return [x.reshape(-1).view(np.uint8), MPI.BYTE]


class ReplicaError(TracerError, RuntimeError):
    """Another replica of the job failed, or did not reach a collective in time."""


def _launched() -> bool:
    return any(name in os.environ for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))


def launched_size() -> int:
    """The job size `mpiexec` announced in the environment (1 when not launched by it)."""
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    return 1


class Job:
    """This process's view of the MPI job: rank, size, communicators."""

    def __init__(self) -> None:
        from mpi4py import MPI  # the mpi extra; imported only inside a job
        self.MPI = MPI
        world = MPI.COMM_WORLD
        self.rank: int = world.Get_rank()
        self.size: int = world.Get_size()
        self.data = world.Dup()
        self.control = world.Dup()
        self.p2p = world.Dup()  # send/recv: tags are channel ids
        self.sends: list[tuple[Any, np.ndarray]] = []  # (request, buffer) still in flight
        self.group_comms: dict[tuple[tuple[int, ...], ...], Any] = {}
        self.native = _native_state(self)
        self.failed = False
        self._scratch = np.empty(0, np.uint8)
        self._slots = (np.empty(0, np.uint8), np.empty((self.size, 0), np.uint8))
        self._install_excepthook()
        atexit.register(self._finish_sends)  # (runs before mpi4py's MPI_Finalize)

    @property
    def sequence(self) -> int:
        """Collectives entered so far (the signature check compares it), counted where
        compiled code counts them too."""
        return self.native.sequence

    @sequence.setter
    def sequence(self, value: int) -> None:
        self.native.sequence = value

    # ----------------------------------------------------------------- groups
    def group_comm(self, groups: tuple[tuple[int, ...], ...] | None) -> Any:
        """The communicator of this rank's group, ranked in group order; made once per
        `groups` (a collective call on every rank, which all reach together)."""
        if groups is None:
            return self.data
        comm = self.group_comms.get(groups)
        if comm is None:
            color, key = next((i, g.index(self.rank)) for i, g in enumerate(groups)
                              if self.rank in g)
            comm = self.group_comms[groups] = self.data.Split(color, key)
        return comm

    def scratch(self, nbytes: int) -> np.ndarray:
        """A reused receive buffer of at least `nbytes` (uint8)."""
        if self._scratch.nbytes < nbytes:
            self._scratch = np.empty(nbytes, np.uint8)
        return self._scratch[:nbytes]

    def slot_buffers(self, nbytes: int) -> tuple[np.ndarray, np.ndarray]:
        """A reused slot of `nbytes` (uint8) and a (size, nbytes) table to gather slots in."""
        if self._slots[0].nbytes != nbytes:
            self._slots = (np.zeros(nbytes, np.uint8), np.empty((self.size, nbytes), np.uint8))
        return self._slots

    def allgather(self, comm: Any, x: np.ndarray, op: str) -> np.ndarray:
        """(group size, *x.shape): every member's x in group order."""
        out = np.empty((comm.Get_size(),) + x.shape, x.dtype)
        self.wait([comm.Iallgather(as_bytes(x), as_bytes(out))], op)
        return out

    # ----------------------------------------------------------------- waiting
    def start_send(self, request: Any, buffer: np.ndarray) -> None:
        self._progress_sends()
        self.sends.append((request, buffer))

    def _finish_sends(self) -> None:
        """At exit: sends still in flight complete before MPI is finalized."""
        if self.sends and not self.failed:
            self.wait([r for r, _ in self.sends], "send")
            self.sends = []

    def _progress_sends(self) -> None:
        """Drop the sends that completed (polling them is what moves their data)."""
        self.sends = [(r, b) for r, b in self.sends if not r.Test()]

    def wait(self, requests: list[Any], op: str, status: Any = None) -> None:
        """Complete `requests`, raising if another replica failed or time runs out.

        Polls: MPI moves a non-blocking collective's data only while it is polled.
        Each poll that finds it pending yields the core, so a replica that lost its
        core (a busy host, more ranks than cores) gets it back at once (spinning first
        made one float's exchange on 4 ranks and 2 cores ~6x slower); with a core
        each, a yield returns at once."""
        MPI, spins = self.MPI, 0
        start = time.monotonic()
        while not (MPI.Request.Testall(requests) if status is None
                   else requests[0].Test(status)):
            spins += 1
            os.sched_yield()
            if spins % _SPINS_PER_CHECK:
                continue
            self._progress_sends()
            self.check_failures(op)
            waited = time.monotonic() - start
            if waited > float(config.distributed_timeout):
                # (collective requests cannot be cancelled: the abort ends them)
                raise self.timeout_error(op)

    def timeout_error(self, op: str) -> ReplicaError:
        return ReplicaError(f"{op}: rank {self.rank} waited {config.distributed_timeout:g} s "
                            f"for the other replicas (a replica is stuck or took another "
                            f"path); aborting the job")

    def check_failures(self, op: str) -> None:
        MPI = self.MPI
        status = MPI.Status()
        if self.control.Iprobe(source=MPI.ANY_SOURCE, tag=_FAIL_TAG, status=status):
            message = self.control.recv(source=status.Get_source(), tag=_FAIL_TAG)
            self.failed = True  # it already told everyone: no notices back
            raise ReplicaError(f"{op}: rank {status.Get_source()} failed: {message}")

    # ----------------------------------------------------------------- failing
    def notify_failure(self, message: str) -> None:
        """Tell every other replica that this one failed (non-blocking, small)."""
        if self.failed:
            return
        self.failed = True
        requests = [self.control.isend(message, dest=r, tag=_FAIL_TAG)
                    for r in range(self.size) if r != self.rank]
        deadline = time.monotonic() + _GRACE_S
        while not self.MPI.Request.Testall(requests) and time.monotonic() < deadline:
            time.sleep(1e-3)

    def abort(self, code: int = 1) -> None:
        self.MPI.COMM_WORLD.Abort(code)

    def _install_excepthook(self) -> None:
        previous = sys.excepthook

        def hook(kind: type, value: BaseException, tb: Any) -> None:
            previous(kind, value, tb)
            sys.stderr.flush()
            if self.size > 1:
                line = "".join(traceback.format_exception_only(kind, value)).strip()
                self.notify_failure(line)
                time.sleep(_GRACE_S)  # let the others report before the job ends
                self.abort(1)
        sys.excepthook = hook


def _native_state(job: Job) -> Any:
    """The state compiled code shares with the host steps (`native`)."""
    from .native import NativeState
    from .reduce import SMALL_BYTES
    from .signature import SLOT_BYTES
    return NativeState(job.MPI, job.data, job.control, job.rank, job.size, SLOT_BYTES,
                       SMALL_BYTES, _FAIL_TAG)


_job: Job | None = None
_tried = False  # (without mpi4py: warn once, then stay one replica)
_lock = threading.Lock()


def current_job(start: bool = False) -> Job | None:
    """The job (made on first use when `mpiexec` launched this process with several
    ranks, or on `start` under any `mpiexec`); None for a lone process or without mpi4py."""
    global _job, _tried
    if _job is None and not _tried and (launched_size() > 1 or (start and _launched())):
        with _lock:
            if not _tried:
                _job, _tried = _start(), True
    return _job


def _start() -> Job | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        if launched_size() > 1:
            print("tracer: mpiexec started this process but mpi4py is not installed "
                  "(pip install 'tracer-dsl[mpi]'); running as one replica", file=sys.stderr)
        return None
    return Job()
