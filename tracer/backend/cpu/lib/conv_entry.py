"""How generated code calls the convolution library without compiling it again.

numba links every njit function a module calls into that module's machine code, so
a generated module that called `cpu.lib.conv` directly spent seconds generating code
for the whole library (about 2.5 s of CPU per module). Here the library runs behind
C entry points (`cfunc`s, compiled once per dtype, cached on disk) that generated
code reaches through a table of function pointers (`cpu.lib.conv_core`): `convolution`
packs the sizes and the geometry into an int64 array and calls its dtype's choosing
entry point, `cpu.lib.conv.entry`, resolved (compiled or loaded from numba's cache)
when the module is compiled. That one picks the plan and calls the plan's own entry
point through the same table, resolved the first time a convolution takes that plan:
a program compiles only the plans it runs (each plan is seconds of code generation
per dtype). The table and the resolver are found by name (`llvmlite.binding.add_symbol`,
at import), so cached machine code stays valid in every process; generated modules
import `convolution` from here, which registers them. `run_plan` calls the choosing
entry point from Python with a plan forced (tests).

numba's disk cache of the entry points is stamped with the sources of `cpu/lib/conv.py`
and of every library it imports, the plan files included
(`backend/numba/library_sources.closure_digest`): editing a plan compiles them again.
"""
# numba kernels: their argument types come from the call, so no annotations
# ruff: noqa: ANN001, ANN201, ANN202

from __future__ import annotations

import ctypes
from typing import Sequence

import numpy as np
from numba import from_dtype, njit, types
from numba.extending import intrinsic

from . import conv  # noqa: F401 (importing it gives conv_core the plans' entry points)
from .conv_core import AUTO, HEADER, SWAPPED, call_slot_codegen, resolve, slot


@intrinsic
def _call_entry(typingctx, x, w, out, meta):
    """entries[the choosing one of x's dtype](x.data, w.data, out.data, meta.data)."""
    index = slot(AUTO, x.dtype)
    resolve(index)  # now, where an error can be raised: at compile time

    def codegen(context, builder, signature, args):
        return call_slot_codegen(context, builder, signature, args,
                                 context.get_constant(types.int64, index))
    return types.void(x, w, out, meta), codegen


@njit(cache=True, nogil=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)  # (compiled callers)
def convolution(x, w, out, in_sizes, window, out_sizes, strides, pad_low, lhs_dilation,
                rhs_dilation, feature_groups, batch_groups, x_swapped, w_swapped):
    """out (N', O, P) = the convolution of x (N, C, S) with w (O, C', T), all three
    C-contiguous in the canonical layout, except that x is (C, N, S) where `x_swapped`
    and w (C', O, T) where `w_swapped` (the transposed operands of a kernel gradient:
    the library copies them canonical for the plans that need it); the spatial
    geometry in the tuples (one entry per spatial dim)."""
    n, head = len(in_sizes), HEADER
    meta = np.empty(head + 7 * n, np.int64)
    for d in range(3):  # (not a slice assignment: its error path compiles slowly)
        meta[d], meta[3 + d], meta[6 + d] = x.shape[d], w.shape[d], out.shape[d]
    if x_swapped:
        meta[0], meta[1] = x.shape[1], x.shape[0]
    if w_swapped:
        meta[3], meta[4] = w.shape[1], w.shape[0]
    meta[9], meta[10], meta[11], meta[12] = n, feature_groups, batch_groups, AUTO
    meta[SWAPPED], meta[SWAPPED + 1] = x_swapped, w_swapped
    for row, values in enumerate((in_sizes, window, out_sizes, strides, pad_low,
                                  lhs_dilation, rhs_dilation)):
        for d in range(n):
            meta[head + row * n + d] = values[d]
    _call_entry(x, w, out, meta)


_ENTRY_POINTER = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)


def run_plan(mode: int, x: np.ndarray, w: np.ndarray, out: np.ndarray,
             geometry: Sequence[Sequence[int]], feature_groups: int,
             batch_groups: int, swapped: tuple[bool, bool] = (False, False)) -> None:
    """`convolution` from Python with the plan forced (`cpu.lib.conv.AUTO`: chosen; see
    `cpu.lib.conv._choose` for what a forced plan needs), by the same compiled entry
    point: for tests and benchmarks of the plans. x, w, out are C-contiguous canonical
    3-D arrays of one dtype, x and w with dims 0 and 1 exchanged where `swapped` says
    (as `convolution` takes them); `geometry` is the 7 spatial rows."""
    if any(not a.flags.c_contiguous or a.ndim != 3 or a.dtype != x.dtype for a in (w, out, x)):
        raise ValueError("run_plan: x, w and out must be C-contiguous 3-D arrays of one dtype")
    address = resolve(slot(AUTO, from_dtype(x.dtype)))
    shapes = [a.shape[1::-1] + a.shape[2:] if s else a.shape for a, s in zip((x, w), swapped)]
    meta = np.array([*shapes[0], *shapes[1], *out.shape, len(geometry[0]), feature_groups,
                     batch_groups, mode, *swapped, *(v for row in geometry for v in row)],
                    np.int64)
    _ENTRY_POINTER(address)(x.ctypes.data, w.ctypes.data, out.ctypes.data, meta.ctypes.data)
