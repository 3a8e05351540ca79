"""NumPy's logical functions and comparisons on `tracer.ops`.

Comparisons promote NEP 50-style and broadcast; complex values order
lexicographically (real part, then imaginary part, as NumPy's CLT / CLE do), and a
Python int outside an integer array's range compares exactly, the same answer for
every element, as NumPy 2 does (never wrapped into the array's dtype).
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ._promotion import (as_result, asarray_like, broadcast_arrays, constant, dtype_of, is_weak,
                         promote)
from ._ufunc_core import check_call, is_complex, publish, truth

__all__ = ["logical_and", "logical_or", "logical_xor", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal"]


def _logical(name: str, op: Callable[[Any, Any], Any], doc: str) -> Callable[..., Any]:
    def ufunc(x1: Any, x2: Any, /, out: None = None, *, where: bool = True) -> Any:
        check_call(name, out, where)
        a, b = (truth(asarray_like(v, name)) for v in (x1, x2))
        return as_result(op(*broadcast_arrays(a, b, fname=name, keep_scalars=True)))
    return publish(ufunc, name, doc)


logical_and = _logical("logical_and", ops.bitwise_and,
                       "x1 and x2 as bool.\n\nNumPy rule: nonzero is true; broadcasting.\n\n"
                       "logical_and([1, 0], 2.0) -> [True, False]")
logical_or = _logical("logical_or", ops.bitwise_or,
                      "x1 or x2 as bool.\n\nNumPy rule: nonzero is true; broadcasting.\n\n"
                      "logical_or([1, 0], 0) -> [True, False]")
logical_xor = _logical("logical_xor", ops.bitwise_xor,
                       "x1 xor x2 as bool.\n\nNumPy rule: nonzero is true; broadcasting.\n\n"
                       "logical_xor([1, 0], 1) -> [False, True]")

_PY_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
               "gt": operator.gt, "ge": operator.ge}


def _beyond_range(a: Any, b: Any, direction: str) -> Any:
    """NumPy 2 compares a Python int outside an integer array's range exactly: the
    answer is the same for every element. None when that case does not apply."""
    for arr, value, flipped in ((a, b, False), (b, a, True)):
        if (type(value) is int and not is_weak(arr) and dtype_of(arr).kind in "iu"):
            info = np.iinfo(dtype_of(arr))
            if not info.min <= value <= info.max:
                side = 1 if value > info.max else -1  # the array elements sit at 0
                lhs, rhs = (side, 0) if flipped else (0, side)
                return constant(_PY_COMPARE[direction](lhs, rhs), np.shape(arr), dtypes.bool_)
    return None


def lexicographic(direction: str, a: Any, b: Any) -> Any:
    """Complex ordering: by real part, then by imaginary part (NumPy's CLT / CLE /
    CGT / CGE: the real parts decide only when neither imaginary part is NaN)."""
    op = getattr(ops, direction)
    strict = ops.lt if direction in ("lt", "le") else ops.gt
    ar, br, ai, bi = ops.real(a), ops.real(b), ops.imag(a), ops.imag(b)
    no_nan = ops.bitwise_and(ops.eq(ai, ai), ops.eq(bi, bi))
    by_real = ops.bitwise_and(strict(ar, br), no_nan)
    return ops.bitwise_or(by_real, ops.bitwise_and(ops.eq(ar, br), op(ai, bi)))


def _comparison(name: str, direction: str, doc: str) -> Callable[..., Any]:
    op = getattr(ops, direction)

    def ufunc(x1: Any, x2: Any, /, out: None = None, *, where: bool = True,
              dtype: Any = None) -> Any:
        check_call(name, out, where)
        a, b = asarray_like(x1, name), asarray_like(x2, name)
        fixed = _beyond_range(a, b, direction)
        if fixed is not None:
            return as_result(fixed)
        a, b = broadcast_arrays(*promote(a, b, fname=name, dtype=dtype), fname=name,
                                keep_scalars=True)
        if is_complex(a) and direction not in ("eq", "ne"):
            return as_result(lexicographic(direction, a, b))
        return as_result(op(a, b))
    return publish(ufunc, name, doc)


_CMP = "NumPy rule: NEP 50 promotion, broadcasting, bool result; complex orders lexicographically"
equal = _comparison("equal", "eq", f"x1 == x2.\n\n{_CMP}.\n\nequal([1, 2], 2) -> [False, True]")
not_equal = _comparison("not_equal", "ne",
                        f"x1 != x2.\n\n{_CMP}.\n\nnot_equal([1, 2], 2) -> [True, False]")
less = _comparison("less", "lt", f"x1 < x2.\n\n{_CMP}.\n\nless([1, 2], 2) -> [True, False]")
less_equal = _comparison("less_equal", "le",
                         f"x1 <= x2.\n\n{_CMP}.\n\nless_equal([1, 3], 2) -> [True, False]")
greater = _comparison("greater", "gt",
                      f"x1 > x2.\n\n{_CMP}.\n\ngreater([1, 3], 2) -> [False, True]")
greater_equal = _comparison("greater_equal", "ge",
                            f"x1 >= x2.\n\n{_CMP}.\n\ngreater_equal([1, 2], 2) -> [False, True]")
