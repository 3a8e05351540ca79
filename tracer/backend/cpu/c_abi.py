"""The binary layouts a C guard (`c_guard`) reads, checked against live objects.

A C guard reads NumPy arrays, tuples and `__slots__` members at fixed byte offsets
and calls NumPy's C API through its function table. The offsets below are those of
NumPy 2's `numpy/_core/include/numpy/ndarraytypes.h` (`PyArrayObject_fields`: after
`PyObject_HEAD`, `char *data; int nd; npy_intp *dimensions; npy_intp *strides;
PyObject *base; PyArray_Descr *descr; int flags;`) and CPython's `PyTupleObject` on a
64-bit build; `PyArray_NewFromDescr` is entry 94 of `_ARRAY_API`
(`__multiarray_api.h`). `LAYOUT` is None unless every offset reads the right value
from a live array, tuple and slot here, so another ABI (a debug CPython, a NumPy
whose layout moved) turns C guards off instead of crashing.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

# PyObject_HEAD: ob_refcnt, ob_type
OB_TYPE = 8
# PyTupleObject: PyObject_VAR_HEAD (ob_refcnt, ob_type, ob_size), then ob_item[]
TUPLE_SIZE, TUPLE_ITEMS = 16, 24
# PyArrayObject_fields (ndarraytypes.h)
ARRAY_DATA, ARRAY_ND, ARRAY_DIMS, ARRAY_STRIDES, ARRAY_DESCR, ARRAY_FLAGS = 16, 24, 32, 40, 56, 64
# NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED: what the compiled code assumes of an input
C_ALIGNED = 0x0001 | 0x0100
# the index of PyArray_NewFromDescr in NumPy's C API table (__multiarray_api.h)
NEW_FROM_DESCR_INDEX = 94
# PyMemberDescrObject: PyDescr_COMMON (PyObject_HEAD, d_type, d_name, d_qualname), then
# PyMemberDef *d_member; PyMemberDef: name, type (int, padded), offset
MEMBER_DEF, MEMBER_OFFSET = 40, 16

_NEW_FROM_DESCR = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


@dataclass(frozen=True)
class Layout:
    """Addresses a C guard calls: NumPy's `PyArray_NewFromDescr`."""

    new_from_descr: int


def _word(address: int, offset: int) -> int:
    return ctypes.c_int64.from_address(address + offset).value


def _int(address: int, offset: int) -> int:
    return ctypes.c_int32.from_address(address + offset).value


def slot_offset(member: Any) -> int | None:
    """The byte offset of a `__slots__` member (its member descriptor), or None when
    the descriptor is not one."""
    if type(member).__name__ != "member_descriptor":
        return None
    return _word(_word(id(member), MEMBER_DEF), MEMBER_OFFSET)


def check_slot(owner: Any, member: Any) -> int | None:
    """`slot_offset(member)` when it reads back what `owner` holds there (checked with
    the value the slot holds now); else None."""
    offset = slot_offset(member)
    if offset is None or _word(id(owner), offset) != id(member.__get__(owner)):
        return None
    return offset


def _array_api() -> int:
    from numpy._core import _multiarray_umath

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    table = get(_multiarray_umath._ARRAY_API, None)
    return ctypes.c_void_p.from_address(table + 8 * NEW_FROM_DESCR_INDEX).value


def _array_matches(a: np.ndarray) -> bool:
    """Whether every offset reads what NumPy says of `a`."""
    p = id(a)
    dims, strides = _word(p, ARRAY_DIMS), _word(p, ARRAY_STRIDES)
    return (_word(p, ARRAY_DATA) == a.ctypes.data and _int(p, ARRAY_ND) == a.ndim
            and [_word(dims, 8 * i) for i in range(a.ndim)] == list(a.shape)
            and [_word(strides, 8 * i) for i in range(a.ndim)] == list(a.strides)
            and _word(p, ARRAY_DESCR) == id(a.dtype) and _word(p, OB_TYPE) == id(type(a))
            and bool(_int(p, ARRAY_FLAGS) & 1) == a.flags.c_contiguous
            and bool(_int(p, ARRAY_FLAGS) & 0x100) == a.flags.aligned)


def _new_from_descr_works(address: int) -> bool:
    """Whether the table entry makes a float32[2, 3] as `PyArray_NewFromDescr` would."""
    descr = np.dtype(np.float32)
    shape = (ctypes.c_int64 * 2)(2, 3)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(descr))  # (the call steals it)
    a = _NEW_FROM_DESCR(address)(id(np.ndarray), id(descr), 2, ctypes.addressof(shape),
                                 None, None, 0, None)
    return type(a) is np.ndarray and a.shape == (2, 3) and a.dtype == descr


def _tuple_matches() -> bool:
    t = (object(), object())
    return (_word(id(t), TUPLE_SIZE) == 2
            and [_word(id(t), TUPLE_ITEMS + 8 * i) for i in range(2)] == list(map(id, t)))


def _layout() -> Layout | None:
    if sys.maxsize != 2**63 - 1 or hasattr(sys, "gettotalrefcount"):  # 64-bit, release
        return None
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    if not all(map(_array_matches, (base, base[:, ::2], base.T, np.array(1, np.float32)))):
        return None
    if not _tuple_matches():
        return None
    address = _array_api()
    return Layout(address) if address and _new_from_descr_works(address) else None


LAYOUT: Layout | None = _layout()
