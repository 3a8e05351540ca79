"""How generated code calls the convolution library without compiling it again.

numba links every njit function a module calls into that module's machine code, so
a generated module that called `cpu_lib_conv` directly spent seconds generating code
for the whole library (about 2.5 s of CPU per module). Here the library runs behind
one C entry point per dtype, `cpu_lib_conv.entry` as a `cfunc` (compiled once per
dtype, cached on disk), that generated code reaches through a table of function
pointers: `convolution` packs the sizes and the geometry into an int64 array and
calls its dtype's slot, filling it first if it is empty (the resolver compiles the
entry point or loads it from numba's cache). The table and the resolver are found by
name (`llvmlite.binding.add_symbol`, at import), so cached machine code stays valid in
every process; generated modules import `convolution` from here, which registers them.
`run_plan` calls the same entry point from Python with a plan forced (tests).

numba keys the disk cache of the entry point by the stamp of `cpu_lib_conv.py` alone
(the file that defines it): after editing another `cpu_lib_conv_*` file in place,
touch `cpu_lib_conv.py` too (an install writes every file, so releases are safe).
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import ctypes
import os
import sys
from typing import Sequence

import numpy as np
from llvmlite import binding, ir
from numba import cfunc, from_dtype, njit, types
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import intrinsic

from . import cpu_lib_conv

DTYPES = (types.float32, types.float64, types.complex64, types.complex128, types.int8,
          types.int16, types.int32, types.int64, types.uint8, types.uint16, types.uint32,
          types.uint64)
_TABLE, _RESOLVER = "tracer_conv_entries", "tracer_conv_resolve"
_ENTRIES = (ctypes.c_void_p * len(DTYPES))()  # a slot per dtype: 0 until resolved
_COMPILED: dict[int, object] = {}  # the cfuncs, kept alive


def resolve(index: int) -> None:
    """Fill the slot of DTYPES[index] (compiling its entry point, or loading it from
    numba's cache, the first time). Under numba's own compiler lock: a thread compiling
    a module that calls `convolution` holds it while it resolves here."""
    with global_compiler_lock:
        if _ENTRIES[index]:
            return
        pointer = types.CPointer(DTYPES[index])
        signature = types.void(pointer, pointer, pointer, types.CPointer(types.int64))
        compiled = cfunc(signature, cache=True, error_model="numpy")(cpu_lib_conv.entry)
        _COMPILED[index] = compiled
        _ENTRIES[index] = compiled.address


def _resolve_from_c(index: int) -> None:
    """`resolve` for generated code (a ctypes callback: an error cannot propagate through
    C, and the caller would then jump to an empty slot, so it is reported and the
    process stops). Compiled modules resolved their dtype's slot when they were
    compiled; only loading a cached module into a new process gets here."""
    try:
        resolve(index)
    except BaseException as error:  # noqa: BLE001 - nothing can propagate through C
        print(f"tracer: the convolution kernel failed to load: {error!r}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(70)


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64)(_resolve_from_c)
binding.add_symbol(_TABLE, ctypes.addressof(_ENTRIES))
binding.add_symbol(_RESOLVER, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)


@intrinsic
def _call_entry(typingctx, x, w, out, meta):
    """entries[dtype](x.data, w.data, out.data, meta.data), resolving the slot if empty."""
    index = DTYPES.index(x.dtype)
    resolve(index)  # now, where an error can be raised: at compile time

    def codegen(context, builder, signature, args):
        i8p, i64 = ir.IntType(8).as_pointer(), ir.IntType(64)
        data = [builder.bitcast(cgutils.create_struct_proxy(t)(context, builder, value=v).data,
                                i8p) for t, v in zip(signature.args, args, strict=True)]
        module = builder.module
        table = module.globals.get(_TABLE)
        if table is None:  # declared here, defined by the process (add_symbol)
            table = ir.GlobalVariable(module, ir.ArrayType(i64, len(DTYPES)), _TABLE)
        slot = builder.gep(table, [ir.Constant(ir.IntType(32), 0),
                                   ir.Constant(ir.IntType(32), index)])
        with builder.if_then(builder.icmp_unsigned("==", builder.load(slot), i64(0)),
                             likely=False):
            resolver = cgutils.get_or_insert_function(
                module, ir.FunctionType(ir.VoidType(), [i64]), _RESOLVER)
            builder.call(resolver, [i64(index)])
        kernel = builder.inttoptr(builder.load(slot),
                                  ir.FunctionType(ir.VoidType(), [i8p] * 4).as_pointer())
        builder.call(kernel, data)
        return context.get_dummy_value()
    return types.void(x, w, out, meta), codegen


@njit(cache=True, nogil=True)
def convolution(x, w, out, in_sizes, window, out_sizes, strides, pad_low, lhs_dilation,
                rhs_dilation, feature_groups, batch_groups):
    """out (N', O, P) = the convolution of x (N, C, S) with w (O, C', T), all three
    C-contiguous in the canonical layout, the spatial geometry in the tuples (one entry
    per spatial dim)."""
    n, head = len(in_sizes), cpu_lib_conv.HEADER
    meta = np.empty(head + 7 * n, np.int64)
    meta[0:3], meta[3:6], meta[6:9] = x.shape, w.shape, out.shape
    meta[9], meta[10], meta[11], meta[12] = n, feature_groups, batch_groups, cpu_lib_conv.AUTO
    for row, values in enumerate((in_sizes, window, out_sizes, strides, pad_low,
                                  lhs_dilation, rhs_dilation)):
        for d in range(n):
            meta[head + row * n + d] = values[d]
    _call_entry(x, w, out, meta)


_ENTRY_POINTER = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)


def run_plan(mode: int, x: np.ndarray, w: np.ndarray, out: np.ndarray,
             geometry: Sequence[Sequence[int]], feature_groups: int,
             batch_groups: int) -> None:
    """`convolution` from Python with the plan forced (`cpu_lib_conv.AUTO`: chosen; see
    `cpu_lib_conv._choose` for what a forced plan needs), by the same compiled entry
    point: for tests and benchmarks of the plans. x, w, out are C-contiguous canonical
    3-D arrays of one dtype; `geometry` is the 7 spatial rows."""
    if any(not a.flags.c_contiguous or a.ndim != 3 or a.dtype != x.dtype for a in (w, out, x)):
        raise ValueError("run_plan: x, w and out must be C-contiguous 3-D arrays of one dtype")
    index = DTYPES.index(from_dtype(x.dtype))
    resolve(index)
    meta = np.array([*x.shape, *w.shape, *out.shape, len(geometry[0]), feature_groups,
                     batch_groups, mode, *(v for row in geometry for v in row)], np.int64)
    _ENTRY_POINTER(_ENTRIES[index])(x.ctypes.data, w.ctypes.data, out.ctypes.data,
                                    meta.ctypes.data)
