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
from numba.core import cgutils
from numba.extending import intrinsic

from ..fallback import run as _run_runner
from .symbols import published_array

_jit = njit(cache=True, error_model="numpy")

# The state array's slots (`tracer.distributed.native` fills them).
DATA_COMM, CONTROL_COMM, BYTE, SIZE, RANK = 0, 1, 2, 3, 4
SEQUENCE, CHECKS, TIMEOUT_US, FAIL_TAG = 5, 6, 7, 8
SLOT_BYTES, SMALL_BYTES, SLOTS, SCRATCH, SCRATCH_BYTES, MPI_ERROR = 9, 10, 11, 12, 13, 14
REQUEST = 15  # two int32s: the request being waited for, and MPI's completion flag
ROWS, FIRST, STRIDE, OWN, START, LENGTH = 16, 17, 18, 19, 20, 21  # where `_plan` put rows
STATE_SLOTS = 24
STATE_SYMBOL = "tracer_replica_state"

# Status codes.
OK, MISMATCH, FAILED, TIMED_OUT, NO_MEMORY, MPI_FAILED = 0, 1, 2, 3, 4, 5
# The reduction computations done here: `tracer.ops.replicas.monoid` names.
OPS = {"add": 0, "mul": 1, "max": 2, "min": 3}
_ADD, _MUL, _MAX = 0, 1, 2

_HEADER = 16  # bytes of a slot before its payload: sequence number, digest
_SPINS_PER_CHECK = 64  # as `tracer.distributed.job.Job.wait`
# Polls before the wait yields the core at each: none. A replica that spins keeps the
# core from the one it waits for whenever ranks outnumber free cores (4 ranks on 2 cores:
# one float took 62 us spinning 50 us first, 11 us yielding at once, MPICH's blocking
# MPI_Allreduce 11-16 us); with a core each, a yield returns at once.
_SPINS_BEFORE_YIELD = 0
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
_memcpy = types.ExternalFunction("memcpy", _ptr(_ptr, _ptr, _intp))


_state_address = published_array(STATE_SYMBOL)  # the job's state array


@intrinsic
def _address(typingctx, value):  # numba intrinsic protocol
    """An integer (or a pointer) as a pointer: MPICH's MPI_IN_PLACE, malloc's, an
    entry point's arguments."""
    def codegen(context, builder, signature, args):
        if isinstance(signature.args[0], types.RawPointer):
            return args[0]
        return builder.inttoptr(args[0], ir.IntType(8).as_pointer())
    return types.voidptr(value), codegen


@intrinsic
def _integer(typingctx, pointer):  # numba intrinsic protocol
    """A pointer as an integer (an address to compute with)."""
    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], ir.IntType(64))
    return types.int64(pointer), codegen


@_jit
def _state():
    return numba.carray(_state_address(), (STATE_SLOTS,))


@_jit
def _elements(address, count, dtype):
    """`count` elements of `dtype` at `address` (a 1-d array; no copy)."""
    return numba.carray(_address(address), (count,), dtype)


@_jit
def _wait(s, request, flag):
    """Poll `request` (an int32 array, the handle first) until it completes, yielding
    the core after each poll that finds it pending, and every `_SPINS_PER_CHECK` polls
    look for a failure notice and at the clock. OK, FAILED, TIMED_OUT or MPI_FAILED."""
    spins, start = 0, _Wtime()
    while True:
        code = _Test(request.ctypes.data, flag.ctypes.data, _STATUS_IGNORE)
        if code != 0:
            s[MPI_ERROR] = code
            return MPI_FAILED
        if flag[0]:
            return OK
        spins += 1
        if spins > _SPINS_BEFORE_YIELD:
            _sched_yield()
        if spins % _SPINS_PER_CHECK:
            continue
        _Iprobe(_ANY_SOURCE, s[FAIL_TAG], s[CONTROL_COMM], flag.ctypes.data, _STATUS_IGNORE)
        if flag[0]:
            return FAILED
        if (_Wtime() - start) * 1e6 > s[TIMEOUT_US]:
            return TIMED_OUT


@_jit
def _started(s, code, request, flag):
    """Wait for a request MPI just started (`code`: what starting it returned)."""
    if code != 0:
        s[MPI_ERROR] = code
        return MPI_FAILED
    return _wait(s, request, flag)


@_jit
def _exchange(s, digest, payload, nbytes, request, flag):
    """All-gather this replica's slot (sequence number, digest, then `nbytes` bytes from
    address `payload`) into the job's slot table; MISMATCH when any replica's signature
    differs."""
    size, slot = s[SIZE], s[SLOT_BYTES]
    words = _elements(s[SLOTS], (size + 1) * slot // 8, np.int64)
    s[SEQUENCE] += 1
    words[0] = s[SEQUENCE]
    words[1] = digest
    _memcpy(_address(s[SLOTS] + _HEADER), _address(payload), nbytes)
    code = _Iallgather(_address(s[SLOTS]), slot, s[BYTE], _address(s[SLOTS] + slot), slot,
                       s[BYTE], s[DATA_COMM], request.ctypes.data)
    status = _started(s, code, request, flag)
    if status != OK:
        return status
    for r in range(1, size + 1):
        if words[r * slot // 8] != words[0] or words[r * slot // 8 + 1] != words[1]:
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
def _fold_rows(out, rows, first, stride, own, rank, size, op):
    """out = row 0 ∘ row 1 ∘ … left to right (replica order): row r is `out.size`
    elements of `rows` (1-d) from `first + r * stride`, except row `rank`, which is
    `own` (this replica's block, where it lies)."""
    count = out.size
    acc = own if rank == 0 else rows[first:first + count]
    if size == 1:
        for i in range(count):
            out[i] = acc[i]
    for r in range(1, size):
        at = first + r * stride
        _combine(out, acc, own if r == rank else rows[at:at + count], op)
        acc = out


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
def _plan(s, rows, first, stride, own, start, length):
    """Where the fold finds its rows (byte addresses and offsets; `_all_reduce`)."""
    s[ROWS], s[FIRST], s[STRIDE], s[OWN] = rows, first, stride, own
    s[START], s[LENGTH] = start, length
    return OK


@_jit
def _tiny(s, x, nbytes, digest, request, flag):
    """Operands of at most a slot's payload ride in the signature exchange: one round
    trip, check included."""
    status = _exchange(s, digest, x, nbytes, request, flag)
    table, slot = s[SLOTS] + s[SLOT_BYTES], s[SLOT_BYTES]
    own = table + s[RANK] * slot + _HEADER
    return status if status != OK else _plan(s, table, _HEADER, slot, own, 0, nbytes)


@_jit
def _gathered(s, x, nbytes, request, flag):
    """Small operands: every replica's all-gathered, folded everywhere."""
    rows = _scratch(s, s[SIZE] * nbytes)
    if rows == 0:
        return NO_MEMORY
    code = _Iallgather(_address(x), nbytes, s[BYTE], _address(rows), nbytes, s[BYTE],
                       s[DATA_COMM], request.ctypes.data)
    status = _started(s, code, request, flag)
    own = rows + s[RANK] * nbytes
    return status if status != OK else _plan(s, rows, 0, nbytes, own, 0, nbytes)


@_jit
def _layout(nbytes, item, size, rank):
    """Byte counts and displacements (int32 rows): the all-to-all's send and receive
    sides (block `rank` of every replica comes here, its own stays in place), then the
    all-gather of the blocks. As `tracer.distributed.reduce._layout`."""
    table = np.zeros((6, size), np.int32)
    count = nbytes // item
    mine = (count * (rank + 1) // size - count * rank // size) * item
    for k in range(size):
        start, end = count * k // size, count * (k + 1) // size
        table[4, k] = (end - start) * item
        table[5, k] = table[1, k] = start * item
        table[0, k] = table[4, k] if k != rank else 0
        table[2, k] = mine if k != rank else 0
        table[3, k] = k * mine
    return table


@_jit
def _blocks(s, x, nbytes, item, request, flag):
    """Large operands: an all-to-all brings block `rank` of every replica here (its own
    stays in place), to be folded into that block of the result (`_fill_in` then
    all-gathers the blocks)."""
    size, rank = s[SIZE], s[RANK]
    table = _layout(nbytes, item, size, rank)
    start, mine = table[5, rank], table[4, rank]
    rows = _scratch(s, max(size * mine, 1))
    if rows == 0:
        return NO_MEMORY
    code = _Ialltoallv(_address(x), table[0].ctypes.data, table[1].ctypes.data, s[BYTE],
                       _address(rows), table[2].ctypes.data, table[3].ctypes.data, s[BYTE],
                       s[DATA_COMM], request.ctypes.data)
    status = _started(s, code, request, flag)
    return status if status != OK else _plan(s, rows, 0, mine, x + start, start, mine)


@_jit
def _fill_in(s, out, nbytes, item, request, flag):
    """The in-place all-gather of every replica's folded block of `out`."""
    table = _layout(nbytes, item, s[SIZE], s[RANK])
    code = _Iallgatherv(_address(_IN_PLACE), 0, s[BYTE], _address(out),
                        table[4].ctypes.data, table[5].ctypes.data, s[BYTE], s[DATA_COMM],
                        request.ctypes.data)
    return _started(s, code, request, flag)


@_jit
def _bring_rows(s, x, nbytes, item, digest, request, flag):
    """The byte-moving half, the same for every dtype (compiled once): check the
    signature and bring every replica's operand (or block) here; where they lie is left
    in the state (`_plan`). A status code."""
    if nbytes <= s[SLOT_BYTES] - _HEADER:
        return _tiny(s, x, nbytes, digest, request, flag)
    if s[CHECKS]:
        status = _exchange(s, digest, 0, 0, request, flag)
        if status != OK:
            return status
    else:
        s[SEQUENCE] += 1
    if nbytes * s[SIZE] <= s[SMALL_BYTES]:
        return _gathered(s, x, nbytes, request, flag)
    return _blocks(s, x, nbytes, item, request, flag)


@_jit
def _all_reduce(x, out, count, dtype, digest, op):
    """Write at address `out` the fold, in replica order, of every replica's `count`
    elements of `dtype` at address `x` (C order), with reduction `op` (`OPS`), after the
    signature check (`digest`: of op, operand and params). A status code: OK, or what
    went wrong."""
    s = _state()
    words = _elements(s.ctypes.data + REQUEST * 8, 2, np.int32)
    request, flag = words[:1], words[1:]
    item = _elements(x, count, dtype).itemsize
    x, out = _integer(x), _integer(out)
    status = _bring_rows(s, x, count * item, item, digest, request, flag)
    if status != OK:
        return status
    size, length = s[SIZE], s[LENGTH] // item
    rows = _elements(s[ROWS], (s[FIRST] + (size - 1) * s[STRIDE]) // item + length, dtype)
    _fold_rows(_elements(out + s[START], length, dtype), rows, s[FIRST] // item,
               s[STRIDE] // item, _elements(s[OWN], length, dtype), s[RANK], size, op)
    if count * item * size <= s[SMALL_BYTES] or count * item <= s[SLOT_BYTES] - _HEADER:
        return OK
    return _fill_in(s, out, count * item, item, request, flag)


# One C entry point per dtype, compiled once per process (or loaded from the disk
# cache) when code that calls it is generated (`publish`), and called by symbol name
# (`mpi_all_reduce`): generated modules then link none of this file's code, which numba
# would otherwise optimize again inside every module.
def _entry_float32(x, out, count, digest, op):
    return _all_reduce(x, out, count, np.float32, digest, op)


def _entry_float64(x, out, count, digest, op):
    return _all_reduce(x, out, count, np.float64, digest, op)


def _entry_int32(x, out, count, digest, op):
    return _all_reduce(x, out, count, np.int32, digest, op)


def _entry_int64(x, out, count, digest, op):
    return _all_reduce(x, out, count, np.int64, digest, op)


_ENTRIES = {np.dtype(f.__name__[len("_entry_"):]): f
            for f in (_entry_float32, _entry_float64, _entry_int32, _entry_int64)}
DTYPES = tuple(_ENTRIES)  # what compiled code all-reduces (others: a host step)
_published: dict[np.dtype, object] = {}


def _entry_symbol(dtype: np.dtype) -> str:
    return f"tracer_mpi_all_reduce_{np.dtype(dtype).name}"


def publish(dtype: np.dtype) -> None:
    """Compile (or load) the C entry point of `dtype` and name it in LLVM's symbol table,
    before any code that calls it is linked. Only inside a job whose MPI compiled code
    can call (`tracer.distributed.native`)."""
    import llvmlite.binding as llvm
    dtype = np.dtype(dtype)
    if dtype not in _published:
        entry = numba.cfunc(types.int64(_ptr, _ptr, types.int64, types.int64, types.int64),
                            cache=True, error_model="numpy")(_ENTRIES[dtype])
        llvm.add_symbol(_entry_symbol(dtype), entry.address)
        _published[dtype] = entry


@intrinsic
def mpi_all_reduce(typingctx, x, out, digest, op):  # numba intrinsic protocol
    """out = the fold, in replica order, of every replica's `x` (C-contiguous, the shape
    and dtype of `out`) with reduction `op` (`OPS`) after the signature check: a call of
    the dtype's C entry point (`publish`). A status code: OK, or what went wrong."""
    name = _entry_symbol(np.dtype(str(x.dtype)))

    def codegen(context, builder, signature, args):
        i64, p = ir.IntType(64), ir.IntType(8).as_pointer()
        kind = ir.FunctionType(i64, [p, p, i64, i64, i64])
        fn = cgutils.get_or_insert_function(builder.module, kind, name)
        xs = context.make_array(signature.args[0])(context, builder, args[0])
        ys = context.make_array(signature.args[1])(context, builder, args[1])
        return builder.call(fn, [builder.bitcast(xs.data, p), builder.bitcast(ys.data, p),
                                 xs.nitems, args[2], args[3]])
    return types.int64(x, out, types.int64, types.int64), codegen


@_jit
def mpi_failed(table, index, status):
    """Leave for Python (object mode) to raise the error of `status`: runner `index`
    of fallback table `table`. A function of its own: numba cannot lower an object-mode
    block inside a branch when another one follows it."""
    with numba.objmode():
        _run_runner(table, index, status)
