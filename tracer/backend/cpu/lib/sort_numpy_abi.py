"""NumPy's own SIMD sort of one contiguous run of numbers, called from compiled code
with no Python and no GIL (`simd_sort`), by symbol name so that the code calling it
stays in numba's disk cache (an address baked into machine code would be wrong in the next
process).

NumPy 2's C-API table (the `_ARRAY_API` capsule of `numpy._core._multiarray_umath`)
holds `_PyDataType_GetArrFuncs` at slot 365 (`numpy/__multiarray_api.h`; slots are
fixed by NumPy 2's ABI). It gives a dtype's `PyArray_ArrFuncs`, whose
`sort[NPY_QUICKSORT]` member, `int (*)(void *start, npy_intp num, void *arr)`, is
what `ndarray.sort` calls on each contiguous row for the default kind. For the
numeric dtypes it is `quicksort_<type>` (numpy/_core/src/npysort/quicksort.cpp):
it ignores `arr` (NULL here), always returns 0, and dispatches to x86-simd-sort or
Highway's vqsort where the CPU has them, exactly as `ndarray.sort` does (same
speed measured on 10^6 keys of each width). At import each dtype's function is
registered with LLVM under `tracer_numpy_quicksort_<dtype>`
(`llvmlite.binding.add_symbol`), before any cached kernel that calls it is loaded.
Under a NumPy whose C ABI is not NumPy 2's the slots may mean something else: then
nothing is registered, `DTYPES` is empty and the emitter keeps `cpu.lib.sort`.
"""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numpy._core import _multiarray_umath

ABI_VERSION = 0x02000000  # NumPy 2's C ABI, whose slots these are (NPY_ABI_VERSION)
GET_ARR_FUNCS_SLOT = 365  # _PyDataType_GetArrFuncs in NumPy 2's PyArray_API table
# PyArray_ArrFuncs: cast[NPY_NTYPES_ABI_COMPATIBLE = 21], then 12 function pointers
# (getitem .. fillwithscalar), then sort[NPY_NSORTS]: sort[NPY_QUICKSORT] is pointer 33
QUICKSORT_SLOT = 21 + 12
SORTED_DTYPES = ("int16", "uint16", "int32", "uint32", "int64", "uint64", "float32",
                 "float64")


def symbol(dtype: str) -> str:
    """The LLVM symbol of NumPy's quicksort of `dtype`."""
    return f"tracer_numpy_quicksort_{dtype}"


def _api_table() -> ctypes.Array:
    """NumPy's PyArray_API function table (what `import_array` reads in C)."""
    capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    api = capsule_pointer(_multiarray_umath._ARRAY_API, None)
    return (ctypes.c_void_p * (GET_ARR_FUNCS_SLOT + 1)).from_address(api)


def _quicksort_addresses() -> dict[str, int]:
    """{dtype: address of NumPy's sort[NPY_QUICKSORT] for it}, or {} under a NumPy
    whose C ABI is not NumPy 2's (slot 0, PyArray_GetNDArrayCVersion, says which)."""
    table = _api_table()
    if ctypes.CFUNCTYPE(ctypes.c_uint)(table[0])() != ABI_VERSION:
        return {}
    arr_funcs = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(table[GET_ARR_FUNCS_SLOT])
    addresses = {}
    for dtype in SORTED_DTYPES:
        funcs = (ctypes.c_void_p * (QUICKSORT_SLOT + 1)).from_address(arr_funcs(np.dtype(dtype)))
        addresses[dtype] = funcs[QUICKSORT_SLOT]
    return addresses


_ADDRESSES = _quicksort_addresses()
DTYPES = tuple(_ADDRESSES)  # the dtypes `simd_sort` sorts: none under another ABI
for _dtype, _address in _ADDRESSES.items():
    llvm.add_symbol(symbol(_dtype), _address)


@intrinsic
def simd_sort(typingctx, row):
    """Sorts the 1-D array `row` in place, ascending, NaNs last (NumPy's order), by
    NumPy's quicksort of its dtype; `row` must be contiguous (any layout type: a
    slice `out[o, :, 0]` of a C array with inner 1 is)."""
    if not isinstance(row, types.Array) or row.ndim != 1 or str(row.dtype) not in DTYPES:
        return None

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        void_p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [void_p, cgutils.intp_t, void_p])
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol(str(row.dtype)))
        count = cgutils.unpack_tuple(builder, array.shape, 1)[0]
        # (the result is always 0 for numbers: the quicksorts allocate nothing)
        builder.call(fn, [builder.bitcast(array.data, void_p), count, void_p(None)])
        return context.get_dummy_value()
    return types.void(row), codegen
