"""Compiled code's view of the job: MPI's C API by symbol name, and the job's state.

On MPICH's ABI (C int handles, as the `mpich` wheel's), the libmpi that mpi4py loaded
is loaded into LLVM's symbol table (`load_library_permanently`) and the job's state,
an int64 array (`numba.lib.mpi`'s slots: communicators, rank, size, the collective
count, the settings, the slot table), is published under `tracer_replica_state`.
Compiled all-reduces (`numba.lib.mpi.mpi_all_reduce`) then call MPI without leaving
numba, and their machine code, which names both by symbol only, stays in numba's
disk cache. The host steps count collectives in the same state, so both kinds check
one sequence. A failure status from compiled code is raised here, in Python.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..backend.numba.lib import mpi as lib
from ..config import config
from ..errors import TracerMemoryError

_LIBMPI = re.compile(r"/libmpi\.so[.\d]*$")


def _handle(MPI: Any, obj: Any) -> int:
    """An MPICH handle as the C int compiled code passes (mpi4py gives it unsigned)."""
    value = MPI._handleof(obj) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _load_libmpi(MPI: Any) -> bool:
    """Load mpi4py's libmpi into LLVM's symbol table; False when the ABI is not
    MPICH's (handles that are not C ints) or the library is not found."""
    import llvmlite.binding as llvm
    if MPI._sizeof(MPI.Comm) != 4 or "MPICH" not in MPI.Get_library_version():
        return False
    with open("/proc/self/maps") as maps:
        paths = [line.split()[-1] for line in maps if _LIBMPI.search(line.strip())]
    if not paths:
        return False
    llvm.load_library_permanently(paths[0])
    return llvm.address_of_symbol("MPI_Iallgather") is not None


class NativeState:
    """The state array compiled code reads (and the host steps share), published when
    compiled code can call this job's MPI (`enabled`)."""

    def __init__(self, MPI: Any, data: Any, control: Any, rank: int, size: int,
                 slot_bytes: int, small_bytes: int, fail_tag: int) -> None:
        self.state = np.zeros(lib.STATE_SLOTS, np.int64)
        self.slots = np.zeros((size + 1) * slot_bytes, np.uint8)  # own slot, then the table
        s = self.state
        s[lib.DATA_COMM], s[lib.CONTROL_COMM] = _handle(MPI, data), _handle(MPI, control)
        s[lib.BYTE] = _handle(MPI, MPI.BYTE)
        s[lib.SIZE], s[lib.RANK], s[lib.FAIL_TAG] = size, rank, fail_tag
        s[lib.SLOT_BYTES], s[lib.SMALL_BYTES] = slot_bytes, small_bytes
        s[lib.SLOTS] = self.slots.ctypes.data
        config.watch("distributed_checks", self._set_checks)
        config.watch("distributed_timeout", self._set_timeout)
        self.enabled = _load_libmpi(MPI)
        if self.enabled:
            import llvmlite.binding as llvm
            llvm.add_symbol(lib.STATE_SYMBOL, s.ctypes.data)  # (kept alive by the job)

    def _set_checks(self, value: bool) -> None:
        self.state[lib.CHECKS] = int(bool(value))

    def _set_timeout(self, seconds: float) -> None:
        self.state[lib.TIMEOUT_US] = int(float(seconds) * 1e6)

    @property
    def sequence(self) -> int:
        return int(self.state[lib.SEQUENCE])

    @sequence.setter
    def sequence(self, value: int) -> None:
        self.state[lib.SEQUENCE] = value


def raise_status(job: Any, op: str, status: int, shape: tuple[int, ...], dtype: np.dtype,
                 params: dict[str, Any]) -> None:
    """Raise what compiled code's status `status` (not OK) means, as the host steps
    would have: the same errors, on every replica that saw it."""
    from .job import ReplicaError
    from .signature import raise_mismatch
    if status == lib.MISMATCH:
        raise_mismatch(job, op, shape, dtype, params)
    if status == lib.FAILED:
        job.check_failures(op)
    if status == lib.TIMED_OUT:
        raise job.timeout_error(op)
    if status == lib.NO_MEMORY:
        raise TracerMemoryError(f"{op}: rank {job.rank} could not allocate the receive "
                                f"buffer of a {dtype}{list(shape)} all-reduce")
    code = int(job.native.state[lib.MPI_ERROR])
    raise ReplicaError(f"{op}: MPI failed on rank {job.rank} (status {status}): "
                       f"{job.MPI.Get_error_string(code) if code else 'unknown'}")
