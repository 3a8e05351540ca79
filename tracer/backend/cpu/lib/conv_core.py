"""The table of the convolution's C entry points, the GEMM under the cpu convolution
kernels (`cpu.lib.conv`), its BLAS threads, and the geometry helpers the plans share.

Each plan of `cpu.lib.conv` runs behind its own C entry point per dtype, in a table of
function pointers found by name (cache-safe): `call_plan` calls a plan's slot and
`resolve` fills an empty one (compiling the entry point, or loading it from numba's
cache), so that a program compiles only the plans it runs. Whole plans are never
linked into one another: numba optimizes a jit function's whole call tree again, and
generates its machine code again, at every level of calls.

`gemm` multiplies row-major blocks of flat arrays in place, with leading dimensions
and beta, through `cpu.lib.cblas` (MKL or NumPy's OpenBLAS) for floats and complex,
plain loops for integers (which wrap like XLA's).

The convolution plans cut their work into cache-sized tiles, hundreds of GEMM calls
per convolution. OpenBLAS splits every call between its threads and waits for the
slowest; on a machine whose cores are busy with other processes one of them is often
descheduled, and each call then waits a scheduler time slice: measured on 2 shared
cores, a 64x1024x64 tile took 0.2 ms on one thread and 0.7 to 1.5 ms on two, and a
ResNet layer 0.1 s against 1 to 2 s. So a convolution runs its GEMMs on
`cpu.lib.conv.BLAS_THREADS` threads (`cpu.lib.cblas.blas_threads` sets the calling
thread's count and gives back the previous one to restore); where the BLAS has no
such function the count is left as it is.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import ctypes
import os
import sys

import numpy as np
from llvmlite import binding, ir
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import intrinsic, overload

from . import cblas

_OPTIONS = dict(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (see cpu.lib.conv)
_jit = njit(error_model="numpy", nogil=True, **_OPTIONS)


# ------------------------------------------------------------------ the entry points

(EMPTY, AUTO, SHIFTED, IM2COL, WINDOW, WINOGRAD, WINOGRAD_T, WINOGRAD4, PHASED,
 WINOGRAD4_T) = range(10)
# the `cpu.lib.conv` function behind each plan's C entry point (AUTO: the one choosing)
ENTRY_POINTS = {AUTO: "entry", SHIFTED: "entry_shifted", IM2COL: "entry_im2col",
                WINDOW: "entry_window", WINOGRAD: "entry_winograd",
                WINOGRAD_T: "entry_winograd_t", WINOGRAD4: "entry_winograd4",
                PHASED: "entry_phased", WINOGRAD4_T: "entry_winograd4_t"}
DTYPES = (types.float32, types.float64, types.complex64, types.complex128, types.int8,
          types.int16, types.int32, types.int64, types.uint8, types.uint16, types.uint32,
          types.uint64)
_TABLE, _RESOLVER = "tracer_conv_entries", "tracer_conv_resolve"
_ENTRIES = (ctypes.c_void_p * (len(DTYPES) * (max(ENTRY_POINTS) + 1)))()  # slots: 0 until resolved
_COMPILED: dict[int, object] = {}  # the cfuncs, kept alive
_FUNCTIONS: dict[int, object] = {}  # plan -> its njit entry function, given by `conv`


# the plans for floats only, and what another dtype's entry point runs instead (a plan
# is only ever forced on those: `cpu.lib.conv._choose` never picks it)
FLOATS_ONLY = {WINOGRAD: SHIFTED, WINOGRAD_T: WINDOW, WINOGRAD4: SHIFTED, WINOGRAD4_T: WINDOW}


def slot(plan: int, dtype: types.Type) -> int:
    """The table slot of `plan`'s entry point (AUTO: the choosing one) for `dtype`."""
    return plan * len(DTYPES) + DTYPES.index(dtype)


def provide_entry_points(functions: dict[int, object]) -> None:
    """Called by `conv` (which builds on this module) with the function behind each plan."""
    _FUNCTIONS.update(functions)


def resolve(index: int) -> int:
    """Fill table slot `index` (compiling its entry point, or loading it from numba's
    cache, the first time) and give its address. Under numba's own compiler lock: a
    thread compiling a module that calls `convolution` holds it while it resolves."""
    with global_compiler_lock:
        if not _ENTRIES[index]:
            plan, dtype = divmod(index, len(DTYPES))
            if plan in FLOATS_ONLY and DTYPES[dtype] not in (types.float32, types.float64):
                plan = FLOATS_ONLY[plan]
            pointer = types.CPointer(DTYPES[dtype])
            signature = types.void(pointer, pointer, pointer, types.CPointer(types.int64))
            compiled = cfunc(signature, cache=True, error_model="numpy")(
                _FUNCTIONS[plan])
            _COMPILED[index] = compiled
            _ENTRIES[index] = compiled.address
        return _ENTRIES[index]


def _resolve_from_c(index: int) -> None:
    """`resolve` for compiled code (a ctypes callback: an error cannot propagate through
    C, and the caller would then jump to an empty slot, so it is reported and the
    process stops). A plan's entry point is compiled the first time a convolution
    takes that plan, so that a program compiles only the plans it runs."""
    try:
        resolve(index)
    except BaseException as error:  # nothing can propagate through C
        print(f"tracer: the convolution kernel failed to load: {error!r}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(70)


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64)(_resolve_from_c)
binding.add_symbol(_TABLE, ctypes.addressof(_ENTRIES))
binding.add_symbol(_RESOLVER, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)


def call_slot_codegen(context, builder, signature, args, index):
    """LLVM code of entries[index](x.data, w.data, out.data, meta.data) for the arrays
    args[-4:], resolving the slot first if it is empty (`index`: an i64 value)."""
    i8p, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
    data = [builder.bitcast(cgutils.create_struct_proxy(t)(context, builder, value=v).data, i8p)
            for t, v in zip(signature.args[-4:], args[-4:], strict=True)]
    module = builder.module
    table = module.globals.get(_TABLE)
    if table is None:  # declared here, defined by the process (add_symbol)
        table = ir.GlobalVariable(module, ir.ArrayType(i64, len(_ENTRIES)), _TABLE)
    at = builder.gep(table, [ir.Constant(ir.IntType(32), 0), index])
    with builder.if_then(builder.icmp_unsigned("==", builder.load(at), i64(0)), likely=False):
        resolver = cgutils.get_or_insert_function(
            module, ir.FunctionType(ir.VoidType(), [i64]), _RESOLVER)
        builder.call(resolver, [index])
    kernel = builder.inttoptr(builder.load(at),
                              ir.FunctionType(ir.VoidType(), [i8p] * 4).as_pointer())
    builder.call(kernel, data)
    return context.get_dummy_value()


@intrinsic
def call_plan(typingctx, plan, x, w, out, meta):
    """The entry point of `plan` (a run-time int) for x's dtype on x, w, out and the
    int64 metadata array meta (`cpu.lib.conv.entry`'s layout), compiled on first use."""
    first = slot(0, x.dtype)

    def codegen(context, builder, signature, args):
        plan_index = context.cast(builder, args[0], signature.args[0], types.int64)
        index = builder.add(builder.mul(plan_index,
                                        ir.Constant(ir.IntType(64), len(DTYPES))),
                            ir.Constant(ir.IntType(64), first))
        return call_slot_codegen(context, builder, signature, args, index)
    return types.void(plan, x, w, out, meta), codegen


# ------------------------------------------------------------------ GEMM

def gemm(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
    """c[i, j] (+)= sum_l a[i, l] * b[l, j] on row-major blocks of flat arrays:
    a[a0 + i*lda + l], b[b0 + l*ldb + j] (b[b0 + j*ldb + l] when `trans_b`),
    c[c0 + i*ldc + j]; i < m, j < n, l < k."""


def _gemm_loops(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
    step_l, step_j = (1, ldb) if trans_b else (ldb, 1)
    for i in range(m):
        row = c0 + i * ldc
        if not accumulate:
            c[row:row + n] = 0
        for kk in range(k):
            coef = a[a0 + i * lda + kk]
            src = b0 + kk * step_l
            for j in range(n):
                c[row + j] += coef * b[src + j * step_j]


@overload(gemm, jit_options=_OPTIONS)
def _gemm_overload(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
    if str(a.dtype) not in cblas.TYPES:
        return _gemm_loops  # integers: plain loops (BLAS is float-only), wrapping

    def blas(m, n, k, a, a0, lda, b, b0, ldb, trans_b, c, c0, ldc, accumulate):
        if m == 0 or n == 0:
            return
        if k == 0:
            if not accumulate:
                for i in range(m):
                    c[c0 + i * ldc:c0 + i * ldc + n] = 0
            return
        one = c.dtype.type(1)
        cblas.gemm(cblas.NO_TRANS, cblas.TRANS if trans_b else cblas.NO_TRANS, m, n, k, one,
                   a[a0:], lda, b[b0:], ldb, one if accumulate else c.dtype.type(0), c[c0:],
                   ldc)
    return blas


# ------------------------------------------------------------------ geometry

@_jit
def pitches(sizes):
    """Row-major element strides of an array of `sizes`."""
    out = np.ones(len(sizes), np.int64)
    for d in range(len(sizes) - 2, -1, -1):
        out[d] = out[d + 1] * sizes[d + 1]
    return out


@_jit
def unravel(flat, sizes, into):
    for d in range(len(sizes) - 1, -1, -1):
        into[d] = flat % sizes[d]
        flat //= sizes[d]


@_jit
def plane_of(out_sp, win, rd):
    """out_sp + (win - 1) * rd: the padded grid every tap's window fits on (a loop:
    numba compiles each array expression as a kernel of its own, slowly)."""
    out = np.empty(len(out_sp), np.int64)
    for d in range(len(out_sp)):
        out[d] = out_sp[d] + (win[d] - 1) * rd[d]
    return out


@_jit
def all_equal(values, value):
    """Whether every entry of `values` is `value`."""
    for v in values:
        if v != value:
            return False
    return True


@_jit
def same(a, b):
    """Whether the int arrays a and b (of one length) are equal."""
    for d in range(len(a)):
        if a[d] != b[d]:
            return False
    return True


@_jit
def image_of(b, g, nb, cg, fgc, bgc):
    """(lhs batch index, first lhs channel) of output batch b in group g."""
    if bgc > 1:
        return g * nb + b, 0
    return b, (g * cg if fgc > 1 else 0)


@_jit
def fill_grid(x, image, c0, cg, buf, at, row, plane_sizes, in_sp, lo, ld):
    """Write channels [c0, c0 + cg) of x[image] at their dilated, padded grid spots,
    channel c at buf[at + c * row + spot] (spots off the grid are cropped: negative
    padding; the other grid spots are left as they are: zero)."""
    n = len(in_sp)
    pitch = pitches(plane_sizes)
    last, step, low = in_sp[n - 1], ld[n - 1], lo[n - 1]
    rows = x.shape[2] // last if last else 0
    idx = np.zeros(n, np.int64)
    # the span of the last dim's source indices that land on the grid
    first = max(0, (-low + step - 1) // step)
    stop = min(last, (plane_sizes[n - 1] - low + step - 1) // step)
    for r in range(rows):
        unravel(r * last, in_sp, idx)
        base = at
        for d in range(n - 1):
            spot = idx[d] * ld[d] + lo[d]
            if spot < 0 or spot >= plane_sizes[d]:
                base = -1
                break
            base += spot * pitch[d]
        if base < 0:
            continue
        for c in range(cg):
            src = x[image, c0 + c, r * last:(r + 1) * last]
            spot = c * row + base + low  # + i * step >= at for i >= first
            for i in range(first, stop):
                buf[np.uint64(spot + i * step)] = src[i]  # (unsigned: no wraparound)


@_jit
def unswapped(a, swapped):
    """`a` (d0, d1, S) itself, or where its memory holds dims 0 and 1 exchanged (`swapped`:
    a (d1, d0, S) array, as the transposed operands of a kernel gradient are), a
    canonical copy of it."""
    if not swapped:
        return a
    d0, d1, size = a.shape
    src, out = a.reshape(a.size), np.empty_like(a)
    for i in range(d0):
        for j in range(d1):
            at = (j * d0 + i) * size
            row = out[i, j]
            for k in range(size):
                row[k] = src[at + k]
    return out


@_jit
def span(start, step, ld, size, count):
    """[j0, j1): the j < count whose index start + j * step lands inside a source of
    `size` without holes (ld == 1); for ld > 1 every j is checked one by one."""
    if ld != 1:
        return 0, 0
    j0 = min(count, max(0, (-start + step - 1) // step))
    return j0, max(j0, min(count, (size - start + step - 1) // step))


@_jit
def put_run(col, at, src, s0, base, start, step, ld, size, span, count):
    """col[at + j] = the dilated source row src[s0 + base:][:size] at start + j * step
    (zero on holes, padding and past the end); j < count."""
    if base < 0:
        for j in range(count):
            col[at + j] = 0
        return
    j0, j1 = span
    if ld == 1:
        for j in range(j0):
            col[at + j] = 0
        first = s0 + base + start
        for j in range(j0, j1):  # (unsigned: no negative-index wraparound to compute)
            col[np.uint64(at + j)] = src[np.uint64(first + j * step)]
        for j in range(j1, count):
            col[at + j] = 0
        return
    for j in range(count):
        i = start + j * step
        col[at + j] = src[s0 + base + i // ld] if 0 <= i < size * ld and i % ld == 0 else 0


# ------------------------------------------------------------------ the metadata

HEADER = 15  # int64s before the geometry in `cpu.lib.conv.entry`'s metadata
SWAPPED = 13  # its entries saying whether x's and w's memory has dims 0 and 1 exchanged


@_jit
def pack(x, w, out, geo, feature_groups, batch_groups):
    """The metadata of a convolution (`cpu.lib.conv.entry`'s layout), its plan AUTO."""
    n = len(geo[0])
    meta = np.empty(HEADER + 7 * n, np.int64)
    for d in range(3):
        meta[d], meta[3 + d], meta[6 + d] = x.shape[d], w.shape[d], out.shape[d]
    meta[9], meta[10], meta[11], meta[12] = n, feature_groups, batch_groups, AUTO
    meta[SWAPPED], meta[SWAPPED + 1] = 0, 0
    for row in range(7):
        for d in range(n):
            meta[HEADER + row * n + d] = geo[row][d]
    return meta


@_jit
def unpack(x, w, out, meta):
    """The operands, geometry, group counts and plan of an entry point's arguments:
    x, w, out point at the canonical operands, meta at their 3 sizes each, the number
    of spatial dims n, the feature and batch group counts, the plan (AUTO: the best),
    whether x's and w's memory holds their dims 0 and 1 exchanged (SWAPPED: only the
    transposed Winograd plans read such operands, `cpu.lib.conv.entry` copies them
    canonical for the others; the arrays here have the canonical shapes either way),
    then the 7 geometry rows of n entries each."""
    head = carray(meta, (HEADER,))
    n = head[9]
    table = carray(meta, (HEADER + 7 * n,))
    geo = (table[HEADER:HEADER + n], table[HEADER + n:HEADER + 2 * n],
           table[HEADER + 2 * n:HEADER + 3 * n], table[HEADER + 3 * n:HEADER + 4 * n],
           table[HEADER + 4 * n:HEADER + 5 * n], table[HEADER + 5 * n:HEADER + 6 * n],
           table[HEADER + 6 * n:HEADER + 7 * n])
    return (carray(x, (head[0], head[1], head[2])), carray(w, (head[3], head[4], head[5])),
            carray(out, (head[6], head[7], head[8])), geo, head[10], head[11], head[12], table)
