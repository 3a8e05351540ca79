"""All-reduce across the processes of an MPI job from compiled code: MPI's C API called
by symbol name, no trip through Python.

`tracer.distributed` loads the libmpi that mpi4py loaded (`llvmlite.binding.
load_library_permanently`) and publishes the job's state, an int64 array, under the
symbol `tracer_replica_state` (`llvmlite.binding.add_symbol`). Code here names both
by symbol only, so numba's disk cache stays valid across processes (a ctypes pointer
would be a constant address baked into the machine code). MPICH's handles are C ints,
its `MPI_IN_PLACE` is `(void *)-1` and `MPI_STATUS_IGNORE` `(MPI_Status *)1`; only a
job on MPICH's ABI takes this road (`tracer.distributed.native`).

The protocol is the host steps' (`tracer.distributed.signature` and `reduce`), byte
for byte: a fixed slot of signature (sequence number, digest) and tiny payload, every
element folded in replica order. Functions return a status code; the generated code
leaves for Python (object mode) only when it is not OK, to raise the error.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ..fallback import run as _run_runner

_jit = njit(cache=True, error_model="numpy")

# The state array's slots (`tracer.distributed.native` fills them).
DATA_COMM, CONTROL_COMM, BYTE, SIZE, RANK = 0, 1, 2, 3, 4
SEQUENCE, CHECKS, TIMEOUT_US, FAIL_TAG = 5, 6, 7, 8
SLOT_BYTES, SMALL_BYTES, SLOTS, SCRATCH, SCRATCH_BYTES, MPI_ERROR = 9, 10, 11, 12, 13, 14
STATE_SLOTS = 16
STATE_SYMBOL = "tracer_replica_state"

# Status codes.
OK, MISMATCH, FAILED, TIMED_OUT, NO_MEMORY, MPI_FAILED = 0, 1, 2, 3, 4, 5
# The reduction computations done here: `tracer.ops.replicas.monoid` names.
OPS = {"add": 0, "mul": 1, "max": 2, "min": 3}
_ADD, _MUL, _MAX = 0, 1, 2

_HEADER = 16  # bytes of a slot before its payload: sequence number, digest
_SPINS_PER_CHECK = 64  # as `tracer.distributed.job.Job.wait`
_SPIN_US = 50.0
_ANY_SOURCE, _STATUS_IGNORE, _IN_PLACE = -2, 1, -1  # MPICH's values

_i32, _ptr, _intp = types.int32, types.voidptr, types.intp
_Iallgather = types.ExternalFunction(
    "MPI_Iallgather", _i32(_ptr, _i32, _i32, _ptr, _i32, _i32, _i32, _ptr))
_Iallgatherv = types.ExternalFunction(
    "MPI_Iallgatherv", _i32(_ptr, _i32, _i32, _ptr, _ptr, _ptr, _i32, _i32, _ptr))
_Ialltoallv = types.ExternalFunction(
    "MPI_Ialltoallv", _i32(_ptr, _ptr, _ptr, _i32, _ptr, _ptr, _ptr, _i32, _i32, _ptr))
_Test = types.ExternalFunction("MPI_Test", _i32(_ptr, _ptr, _intp))
_Iprobe = types.ExternalFunction("MPI_Iprobe", _i32(_i32, _i32, _i32, _ptr, _intp))
_Wtime = types.ExternalFunction("MPI_Wtime", types.float64())
_sched_yield = types.ExternalFunction("sched_yield", types.int32())
_malloc = types.ExternalFunction("malloc", _intp(_intp))
_free = types.ExternalFunction("free", types.void(_intp))


@intrinsic
def _state_address(typingctx):  # numba intrinsic protocol
    """The address of the job's state array (an external symbol, resolved at load)."""
    def codegen(context, builder, signature, args):
        state = builder.module.globals.get(STATE_SYMBOL)
        if state is None:
            state = ir.GlobalVariable(builder.module, ir.IntType(64), STATE_SYMBOL)
            state.linkage = "external"
        return state
    return types.CPointer(types.int64)(), codegen


@intrinsic
def _address(typingctx, value):  # numba intrinsic protocol
    """An integer as a pointer (MPICH's MPI_IN_PLACE, MPI_STATUS_IGNORE, malloc's)."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.voidptr(types.intp), codegen


@_jit
def _state():
    return numba.carray(_state_address(), (STATE_SLOTS,))


@_jit
def _bytes(address, count):
    return numba.carray(_address(address), (count,), np.uint8)


@_jit
def _wait(s, request, flag):
    """Poll `request` (an int32 array, the handle first) until it completes; every
    `_SPINS_PER_CHECK` polls look for a failure notice and at the clock, and past
    `_SPIN_US` yield the core at each look. OK, FAILED, TIMED_OUT or MPI_FAILED."""
    spins, start = 0, _Wtime()
    while True:
        code = _Test(request.ctypes.data, flag.ctypes.data, _STATUS_IGNORE)
        if code != 0:
            s[MPI_ERROR] = code
            return MPI_FAILED
        if flag[0]:
            return OK
        spins += 1
        if spins % _SPINS_PER_CHECK:
            continue
        _Iprobe(_ANY_SOURCE, s[FAIL_TAG], s[CONTROL_COMM], flag.ctypes.data, _STATUS_IGNORE)
        if flag[0]:
            return FAILED
        waited = (_Wtime() - start) * 1e6
        if waited > s[TIMEOUT_US]:
            return TIMED_OUT
        if waited > _SPIN_US:
            _sched_yield()


@_jit
def _started(s, code, request, flag):
    """Wait for a request MPI just started (`code`: what starting it returned)."""
    if code != 0:
        s[MPI_ERROR] = code
        return MPI_FAILED
    return _wait(s, request, flag)


@_jit
def _exchange(s, digest, payload, request, flag):
    """All-gather this replica's slot (sequence number, digest, then `payload`'s bytes)
    into the job's slot table; MISMATCH when any replica's signature differs."""
    size, slot = s[SIZE], s[SLOT_BYTES]
    slots = _bytes(s[SLOTS], (size + 1) * slot)
    s[SEQUENCE] += 1
    head = slots[:_HEADER].view(np.int64)
    head[0], head[1] = s[SEQUENCE], digest
    slots[_HEADER:_HEADER + payload.size] = payload
    code = _Iallgather(slots.ctypes.data, slot, s[BYTE], slots[slot:].ctypes.data, slot,
                       s[BYTE], s[DATA_COMM], request.ctypes.data)
    status = _started(s, code, request, flag)
    if status != OK:
        return status
    for r in range(size):
        row = slots[(r + 1) * slot:(r + 1) * slot + _HEADER].view(np.int64)
        if row[0] != head[0] or row[1] != head[1]:
            return MISMATCH
    return OK


@_jit
def _combine(out, a, b, op):
    """out = a ∘ b element-wise, with NumPy's rounding and NaN rules (`maximum` and
    `minimum` return the first NaN). `out` may be `a`."""
    if op == _ADD:
        for i in range(out.size):
            out[i] = a[i] + b[i]
    elif op == _MUL:
        for i in range(out.size):
            out[i] = a[i] * b[i]
    elif op == _MAX:
        for i in range(out.size):
            x, y = a[i], b[i]
            out[i] = x if (x >= y or x != x) else y
    else:
        for i in range(out.size):
            x, y = a[i], b[i]
            out[i] = x if (x <= y or x != x) else y


@_jit
def _fold_rows(out, rows, own, rank, op):
    """out = row 0 ∘ row 1 ∘ … left to right (replica order): row r is `rows[r]`, except
    row `rank`, which is `own` (this replica's block, where it lies)."""
    size = rows.shape[0]
    first = own if rank == 0 else rows[0]
    if size == 1:
        out[:] = first
        return
    _combine(out, first, own if rank == 1 else rows[1], op)
    for r in range(2, size):
        _combine(out, out, own if r == rank else rows[r], op)


@_jit
def _scratch(s, nbytes):
    """The job's receive buffer, at least `nbytes` (kept for the process's life); 0 when
    memory runs out."""
    if s[SCRATCH_BYTES] < nbytes:
        _free(s[SCRATCH])
        s[SCRATCH], s[SCRATCH_BYTES] = _malloc(max(nbytes, 1)), 0
        if s[SCRATCH] != 0:
            s[SCRATCH_BYTES] = nbytes
    return s[SCRATCH]


@_jit
def _tiny(s, x, out, digest, op, request, flag):
    """Operands of at most a slot's payload ride in the signature exchange: one round
    trip, check included."""
    status = _exchange(s, digest, x.view(np.uint8), request, flag)
    if status != OK:
        return status
    item, size, slot = x.itemsize, s[SIZE], s[SLOT_BYTES]
    table = _bytes(s[SLOTS] + slot, size * slot).view(x.dtype).reshape(size, slot // item)
    rows = table[:, _HEADER // item:_HEADER // item + x.size]
    _fold_rows(out, rows, rows[s[RANK]], s[RANK], op)
    return OK


@_jit
def _gathered(s, x, out, op, request, flag):
    """Small operands: every replica's all-gathered, folded everywhere."""
    size, nbytes = s[SIZE], x.size * x.itemsize
    address = _scratch(s, size * nbytes)
    if address == 0:
        return NO_MEMORY
    rows = _bytes(address, size * nbytes).view(x.dtype).reshape(size, x.size)
    code = _Iallgather(x.ctypes.data, nbytes, s[BYTE], rows.ctypes.data, nbytes, s[BYTE],
                       s[DATA_COMM], request.ctypes.data)
    status = _started(s, code, request, flag)
    if status == OK:
        _fold_rows(out, rows, rows[s[RANK]], s[RANK], op)
    return status


@_jit
def _layout(count, item, size, rank):
    """Byte counts and displacements (int32 rows): the all-to-all's send and receive
    sides (block `rank` of every replica comes here, its own stays in place), then the
    all-gather of the blocks. As `tracer.distributed.reduce._layout`."""
    table = np.zeros((6, size), np.int32)
    starts = np.array([count * k // size for k in range(size + 1)])
    mine = (starts[rank + 1] - starts[rank]) * item
    for k in range(size):
        table[4, k] = (starts[k + 1] - starts[k]) * item
        table[5, k] = table[1, k] = starts[k] * item
        table[0, k] = table[4, k] if k != rank else 0
        table[2, k] = mine if k != rank else 0
        table[3, k] = k * mine
    return table


@_jit
def _blocks(s, x, out, op, request, flag):
    """Large operands: an all-to-all brings block `rank` of every replica here, it is
    folded into that block of `out`, an in-place all-gather fills in the others."""
    size, rank, item = s[SIZE], s[RANK], x.itemsize
    table = _layout(x.size, item, size, rank)
    start, mine = table[5, rank] // item, table[4, rank] // item
    address = _scratch(s, max(size * mine * item, 1))
    if address == 0:
        return NO_MEMORY
    rows = _bytes(address, size * mine * item).view(x.dtype).reshape(size, mine)
    code = _Ialltoallv(x.ctypes.data, table[0].ctypes.data, table[1].ctypes.data, s[BYTE],
                       rows.ctypes.data, table[2].ctypes.data, table[3].ctypes.data, s[BYTE],
                       s[DATA_COMM], request.ctypes.data)
    status = _started(s, code, request, flag)
    if status != OK:
        return status
    _fold_rows(out[start:start + mine], rows, x[start:start + mine], rank, op)
    code = _Iallgatherv(_address(_IN_PLACE), 0, s[BYTE], out.ctypes.data,
                        table[4].ctypes.data, table[5].ctypes.data, s[BYTE], s[DATA_COMM],
                        request.ctypes.data)
    return _started(s, code, request, flag)


@_jit
def mpi_all_reduce(x, out, digest, op):
    """out = the fold, in replica order, of every replica's `x` (C-contiguous, same shape
    and dtype as `out`) with reduction `op` (`OPS`), after the signature check (`digest`:
    of op, operand and params). A status code: OK, or what went wrong."""
    s = _state()
    flat, dest = x.reshape(x.size), out.reshape(out.size)
    request, flag = np.zeros(1, np.int32), np.zeros(1, np.int32)
    nbytes = flat.size * flat.itemsize
    if nbytes <= s[SLOT_BYTES] - _HEADER:
        return _tiny(s, flat, dest, digest, op, request, flag)
    if s[CHECKS]:
        status = _exchange(s, digest, flat.view(np.uint8)[:0], request, flag)
        if status != OK:
            return status
    else:
        s[SEQUENCE] += 1
    if nbytes * s[SIZE] <= s[SMALL_BYTES]:
        return _gathered(s, flat, dest, op, request, flag)
    return _blocks(s, flat, dest, op, request, flag)


@_jit
def mpi_failed(table, index, status):
    """Leave for Python (object mode) to raise the error of `status`: runner `index`
    of fallback table `table`. A function of its own: numba cannot lower an object-mode
    block inside a branch when another one follows it."""
    with numba.objmode():
        _run_runner(table, index, status)
