"""FFT kernels of the generated CPU code on Intel MKL's DFTI (`cpu/lib/mkl.py` loads it),
called by symbol from compiled code; the same four kernels as `cpu.lib.fft` (DUCC0),
plus the threads a transform may use.

The transformed axes are the `k` innermost ones, the rest a batch: one descriptor per
(kind, precision, lengths, batch, threads) does the whole call, out of place, straight
into the output buffer (C-contiguous), with the inverse's 1 / prod(lengths) as its
backward scale (NumPy's and `tracer.ops.fft`'s convention). Real transforms store the
n // 2 + 1 bins of the innermost axis as complex numbers (CCE), strides set for both
layouts; DFTI leaves the input of an out-of-place transform as it was. An IRFFT over
2-3 axes reads a copy whose bins that must be Hermitian are made so, as NumPy reads
them (`_hermitian_planes`).

Committing a descriptor costs far more than a small transform, so committed ones are
kept for the process in a table that compiled code reaches by the symbol
`tracer_mkl_fft_plans` (an int64 array this module publishes: no address in the
machine code). A pthread mutex at its head guards it: hosts run without the GIL. Past
`PLANS` shapes a new shape's descriptor is committed, used and freed in its call.
"""

from __future__ import annotations

import os

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...numba.lib.symbols import published_array
from . import mkl

_jit = njit(cache=True, error_model="numpy", nogil=True)
# small helpers inlined into their callers: a numba compile each cost a third of a second
_inline = njit(inline="always", error_model="numpy", nogil=True)

FFT, IFFT, RFFT, IRFFT = 0, 1, 2, 3
PLANS = 64
# The table: a pthread mutex (40 bytes on glibc; zero bytes are an unlocked one), the
# thread cap (1 in a child forked after MKL's threads ran: libgomp cannot restart them),
# whether a transform ran threaded, how many plans are stored, then the plans.
_MUTEX, _THREAD_CAP, _THREADED, _COUNT, _HEADER = 0, 8, 9, 10, 16
_FIELDS = 9  # kind, single, rank, n0, n1, n2, batch, threads, then the handle
TABLE_SYMBOL = "tracer_mkl_fft_plans"
_TABLE = np.zeros(_HEADER + PLANS * _FIELDS, np.int64)
_TABLE[_THREAD_CAP] = 1 << 30
llvm.add_symbol(TABLE_SYMBOL, _TABLE.ctypes.data)

# mkl_dfti.h's values
_COMPLEX, _REAL, _SINGLE, _DOUBLE = 32, 33, 35, 36
_BACKWARD_SCALE, _NUMBER_OF_TRANSFORMS, _CONJUGATE_EVEN_STORAGE, _PLACEMENT = 5, 7, 10, 11
_INPUT_STRIDES, _OUTPUT_STRIDES, _INPUT_DISTANCE, _OUTPUT_DISTANCE = 12, 13, 14, 15
_THREAD_LIMIT, _COMPLEX_COMPLEX, _NOT_INPLACE, _MEMORY_ERROR = 27, 39, 44, 1

_long, _intp = types.int64, types.intp  # (MKL_LONG is a C long; addresses as integers)
_commit_descriptor = types.ExternalFunction(mkl.symbol("DftiCommitDescriptor"),
                                            _long(_intp))
_free_descriptor = types.ExternalFunction(mkl.symbol("DftiFreeDescriptor"), _long(_intp))
_error_class = types.ExternalFunction(mkl.symbol("DftiErrorClass"), _long(_long, _long))
_mutex_lock = types.ExternalFunction("pthread_mutex_lock", types.int32(_intp))
_mutex_unlock = types.ExternalFunction("pthread_mutex_unlock", types.int32(_intp))
_CREATE, _SET = mkl.symbol("DftiCreateDescriptor"), mkl.symbol("DftiSetValue")
_FORWARD, _BACKWARD = mkl.symbol("DftiComputeForward"), mkl.symbol("DftiComputeBackward")
_set_threads_local = types.ExternalFunction(mkl.symbol("MKL_Set_Num_Threads_Local"),
                                            types.intc(types.intc))


# ------------------------------------------------------------------ DFTI's variadic calls

_C_TYPES = {"p": ir.IntType(8).as_pointer(), "i": ir.IntType(32), "l": ir.IntType(64),
            "d": ir.DoubleType()}


def _variadic(symbol: str, kinds: str, fixed: int):
    """Codegen of `long symbol(<fixed params>, ...)` (DFTI declares its functions with C's
    `...`: a call must say so, or a double argument is lost) on int64 / float64 values;
    `kinds` spells each argument's C type: p an address, i an int (an enum), l a long,
    d a double."""
    def codegen(context, builder, signature, args):
        values = []
        for kind, value in zip(kinds, args, strict=True):
            if kind == "p":
                value = builder.inttoptr(value, _C_TYPES["p"])
            elif kind == "i":
                value = builder.trunc(value, _C_TYPES["i"])
            values.append(value)
        fnty = ir.FunctionType(_C_TYPES["l"], [_C_TYPES[k] for k in kinds[:fixed]],
                               var_arg=True)
        return builder.call(cgutils.get_or_insert_function(builder.module, fnty, symbol),
                            values)
    return codegen


@intrinsic
def _create_1d(typingctx, handle_at, precision, domain, length):
    """DftiCreateDescriptor(&handle, precision, domain, 1, length)."""
    def codegen(context, builder, signature, args):
        one = ir.Constant(ir.IntType(64), 1)
        return _variadic(_CREATE, "piill", 4)(context, builder, signature,
                                              [*args[:3], one, args[3]])
    return _long(_intp, _long, _long, _long), codegen


@intrinsic
def _create_md(typingctx, handle_at, precision, domain, rank, lengths_at):
    """DftiCreateDescriptor(&handle, precision, domain, rank, lengths)."""
    return _long(_intp, _long, _long, _long, _intp), _variadic(_CREATE, "piilp", 4)


@intrinsic
def _set_long(typingctx, handle, param, value):
    """DftiSetValue with an integer (or enum) value."""
    return _long(_intp, _long, _long), _variadic(_SET, "pil", 2)


@intrinsic
def _set_array(typingctx, handle, param, array):
    """DftiSetValue with an array (strides). The array itself is the argument, so that
    it lives through the call (numba frees a local right after its last use: its
    address alone would not keep it)."""
    def codegen(context, builder, signature, args):
        data = cgutils.create_struct_proxy(signature.args[2])(context, builder,
                                                              value=args[2]).data
        address = builder.ptrtoint(data, ir.IntType(64))
        return _variadic(_SET, "pip", 2)(context, builder, signature,
                                         [args[0], args[1], address])
    return _long(_intp, _long, array), codegen


@intrinsic
def _set_double(typingctx, handle, param, value):
    """DftiSetValue with a floating-point value (a scale)."""
    return _long(_intp, _long, types.float64), _variadic(_SET, "pid", 2)


@intrinsic
def _compute_forward(typingctx, handle, source, target):
    return _long(_intp, _intp, _intp), _variadic(_FORWARD, "ppp", 2)


@intrinsic
def _compute_backward(typingctx, handle, source, target):
    return _long(_intp, _intp, _intp), _variadic(_BACKWARD, "ppp", 2)


_table_address = published_array(TABLE_SYMBOL)  # the plan table


@_inline
def _table():
    return numba.carray(_table_address(), (_HEADER + PLANS * _FIELDS,))


# ------------------------------------------------------------------ descriptors

@_inline
def _strides(n, rank, last):
    """DFTI strides (a leading offset, then one per axis) of a tight row-major array
    of lengths n[:rank - 1] + (last,)."""
    strides = np.zeros(rank + 1, np.int64)
    step = 1
    for d in range(rank - 1, -1, -1):
        strides[d + 1] = step
        step *= last if d == rank - 1 else n[d]
    return strides


@_inline
def _configure(h, kind, n, rank, batch, threads):
    """Set a created descriptor up for `kind` on `batch` tight arrays; DFTI's status."""
    full, half = 1, 1  # elements of one transform's real side and of its complex bins
    for d in range(rank):
        full *= n[d]
        half *= n[d] // 2 + 1 if d == rank - 1 else n[d]
    complex_side = half if kind == RFFT or kind == IRFFT else full
    source, target = (full, complex_side) if kind == RFFT else (complex_side, full)
    status = _set_long(h, _PLACEMENT, _NOT_INPLACE)
    if status == 0:
        status = _set_long(h, _NUMBER_OF_TRANSFORMS, batch)
    if status == 0:
        status = _set_long(h, _INPUT_DISTANCE, source)
    if status == 0:
        status = _set_long(h, _OUTPUT_DISTANCE, target)
    if status == 0 and (kind == RFFT or kind == IRFFT):
        status = _set_real_layout(h, kind, n, rank)
    if status == 0 and (kind == IFFT or kind == IRFFT):
        status = _set_double(h, _BACKWARD_SCALE, 1.0 / full)
    if status == 0:
        status = _set_long(h, _THREAD_LIMIT, threads)
    return status


@_inline
def _set_real_layout(h, kind, n, rank):
    """CCE storage: the complex bins as complex numbers, both layouts' strides."""
    real = _strides(n, rank, n[rank - 1])
    bins = _strides(n, rank, n[rank - 1] // 2 + 1)
    source, target = (real, bins) if kind == RFFT else (bins, real)
    status = _set_long(h, _CONJUGATE_EVEN_STORAGE, _COMPLEX_COMPLEX)
    if status == 0:
        status = _set_array(h, _INPUT_STRIDES, source)
    if status == 0:
        status = _set_array(h, _OUTPUT_STRIDES, target)
    return status


@_inline
def _commit(key, slot):
    """Create, configure and commit the descriptor of `key` into slot[0] (an int64 view);
    DFTI's status (on failure the slot is 0 again)."""
    kind, single, rank, batch, threads = key[0], key[1], key[2], key[6], key[7]
    n = np.array([key[3], key[4], key[5]], np.int64)
    precision = _SINGLE if single else _DOUBLE
    domain = _REAL if kind == RFFT or kind == IRFFT else _COMPLEX
    if rank == 1:
        status = _create_1d(slot.ctypes.data, precision, domain, n[0])
    else:
        status = _create_md(slot.ctypes.data, precision, domain, rank, n.ctypes.data)
    if status == 0:
        status = _configure(slot[0], kind, n, rank, batch, threads)
    if status == 0:
        status = _commit_descriptor(slot[0])
    if status != 0 and slot[0] != 0:
        _release(slot)
    return status


@_inline
def _release(slot):
    """Free the descriptor in slot[0] (DFTI sets the handle to 0)."""
    _free_descriptor(slot.ctypes.data)
    slot[0] = 0  # (a use after the call: numba keeps `slot` alive through it)


@_inline
def _stored(t, key):
    """The row of `key` in the table, -1 if it is not there."""
    for i in range(t[_COUNT]):
        row = _HEADER + i * _FIELDS
        same = True
        for j in range(_FIELDS - 1):
            same = same and t[row + j] == key[j]
        if same:
            return row
    return -1


@_inline
def _plan(key, scratch):
    """(handle, status): the committed descriptor of `key`, from the table or committed
    now and stored there; with the table full, committed into scratch[0] (outside the
    lock; the caller frees it)."""
    t = _table()
    _mutex_lock(t.ctypes.data)
    row = _stored(t, key)
    if row >= 0:
        _mutex_unlock(t.ctypes.data)
        return t[row + _FIELDS - 1], 0
    count = t[_COUNT]
    full = count == PLANS
    row = _HEADER + count * _FIELDS
    slot = scratch if full else t[row + _FIELDS - 1:row + _FIELDS]
    if full:
        _mutex_unlock(t.ctypes.data)
    status = _commit(key, slot)
    if not full:
        if status == 0:
            for j in range(_FIELDS - 1):
                t[row + j] = key[j]
            t[_COUNT] = count + 1
        _mutex_unlock(t.ctypes.data)
    return slot[0], status


# ------------------------------------------------------------------ kernels

@_inline
def _key(kind, shape, k, single, threads):
    """The plan key of a transform over the k innermost axes of `shape` (its real side's
    for the real transforms)."""
    n = np.zeros(3, np.int64)
    for i in range(k):
        n[i] = shape[len(shape) - k + i]
    batch = 1
    for d in range(len(shape) - k):
        batch *= shape[d]
    t = _table()
    used = max(1, min(threads, t[_THREAD_CAP]))
    if used > 1:
        t[_THREADED] = 1
    return (np.int64(kind), np.int64(single), np.int64(k), n[0], n[1], n[2],
            np.int64(batch), np.int64(used))


@_inline
def _bytes(a):
    """A C-contiguous array as a view of its bytes: one type for every dtype and rank (so
    `_transform` compiles once), and a reference that keeps `a` alive through the call
    (numba frees a variable right after its last use: an address alone would not)."""
    return a.reshape(a.size).view(np.uint8)


@_jit
def _transform(key, source, target, forward):
    """The transform of `key` from the bytes of `source` into those of `target`."""
    scratch = np.zeros(1, np.int64)
    h, status = _plan(key, scratch)
    # DFTI's thread limit only caps MKL's count for the calling thread, which a caller
    # may have set lower (a convolution's BLAS calls run on one): the plan's count
    # applies for this call, and the caller's comes back after it.
    previous = _set_threads_local(key[_FIELDS - 2])
    if status == 0 and forward:
        status = _compute_forward(h, source.ctypes.data, target.ctypes.data)
    elif status == 0:
        status = _compute_backward(h, source.ctypes.data, target.ctypes.data)
    _set_threads_local(previous)
    if scratch[0] != 0:
        _release(scratch)
    if status != 0 and _error_class(status, _MEMORY_ERROR):
        raise MemoryError("MKL's DFTI ran out of memory")
    if status != 0:
        raise RuntimeError("MKL's DFTI refused a transform")


@_jit
def fft_forward(x, out, k, threads):
    """FFT: complex -> complex over the k innermost axes, on up to `threads` threads."""
    if out.size:
        key = _key(FFT, out.shape, k, out.itemsize == 8, threads)
        source = np.ascontiguousarray(x)
        _transform(key, _bytes(source), _bytes(out), True)


@_jit
def fft_inverse(x, out, k, threads):
    """IFFT: complex -> complex, scaled by 1 / prod(lengths)."""
    if out.size:
        key = _key(IFFT, out.shape, k, out.itemsize == 8, threads)
        source = np.ascontiguousarray(x)
        _transform(key, _bytes(source), _bytes(out), False)


@_jit
def fft_real_forward(x, out, k, threads):
    """RFFT: real -> the n // 2 + 1 complex bins of the innermost axis."""
    if out.size:
        key = _key(RFFT, x.shape, k, x.itemsize == 4, threads)
        source = np.ascontiguousarray(x)
        _transform(key, _bytes(source), _bytes(out), True)


@_jit
def fft_real_inverse(x, out, k, threads):
    """IRFFT: n // 2 + 1 bins -> real of length n (the output's innermost size)."""
    if out.size:
        key = _key(IRFFT, out.shape, k, out.itemsize == 4, threads)
        source = np.ascontiguousarray(x)
        if k > 1:
            source = _hermitian_planes(source, key)
        _transform(key, _bytes(source), _bytes(out), False)


@_jit
def _hermitian_planes(x, key):
    """A copy of x whose planes that must be Hermitian over the other transformed axes
    (innermost bin 0 and, for an even length, the last bin) hold their Hermitian part
    (P + conj(P mirrored)) / 2. NumPy's irfftn keeps only that part of them (the real
    part of the inverse over the other axes); DFTI reads half of each such plane and
    mirrors it, which gives the same for a Hermitian plane and not otherwise."""
    rank = key[2]
    second = key[4] if rank == 3 else 1  # the middle transformed axis, if any
    last = key[2 + rank]
    rows, bins = key[3] * second, last // 2 + 1
    y = x.copy()
    planes, fixed = x.reshape((x.size // (rows * bins), rows, bins)), y.reshape((-1, rows, bins))
    for b in range(planes.shape[0]):
        for c in range(2 if last % 2 == 0 else 1):
            col = c * (last // 2)
            for r in range(rows):
                i0, i1 = divmod(r, second)
                mirror = (-i0) % key[3] * second + (-i1) % second
                fixed[b, r, col] = (planes[b, r, col] + np.conj(planes[b, mirror, col])) / 2
    return y


def cached_plans() -> int:
    """How many committed descriptors the table holds."""
    return int(_TABLE[_COUNT])


def _after_fork_in_child() -> None:
    """A fork copies the mutex as it was (perhaps held by a thread the child lacks) and
    none of MKL's OpenMP threads: an unlocked mutex, and one thread a transform if they
    had run."""
    _TABLE[_MUTEX:_THREAD_CAP] = 0
    if _TABLE[_THREADED]:
        _TABLE[_THREAD_CAP] = 1


os.register_at_fork(after_in_child=_after_fork_in_child)
