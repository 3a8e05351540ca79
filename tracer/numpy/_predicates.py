"""Comparisons of whole arrays, type predicates, conversions and the matrix-vector
ufuncs: isclose, allclose, array_equal, array_equiv, isin, iscomplex, isreal,
iscomplexobj, isrealobj, isscalar, real_if_close, copy, astype, can_cast, isdtype,
asanyarray, ascontiguousarray, asfortranarray, fromfunction, vecdot, matvec, vecmat,
matrix_transpose.

allclose / array_equal / array_equiv return a 0-d bool array (a traced one under
tracing, as JAX), where NumPy returns a Python bool; it works in `if` outside a
trace.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import ShapeError, TracerTypeError
from ..tracing import Tracer
from . import _reductions as red
from . import _ufuncs as uf
from ._build import indices
from ._creation import asarray
from ._linalg import matmul
from ._promotion import (as_result, asarray_like, broadcast_shapes, cast, desc, dtype_of,
                         error, normalize_axis)
from ._shape import atleast_1d, moveaxis, reshape, swapaxes

__all__ = ["isclose", "allclose", "array_equal", "array_equiv", "isin", "iscomplex", "isreal",
           "iscomplexobj", "isrealobj", "isscalar", "real_if_close", "copy", "astype",
           "can_cast", "isdtype", "asanyarray", "ascontiguousarray", "asfortranarray",
           "fromfunction", "vecdot", "matvec", "vecmat", "matrix_transpose"]


def _operand(x: Any, fname: str) -> Any:
    v = asarray_like(x, fname)
    return cast(v, dtype_of(v), fname=fname)


# ------------------------------------------------------------------ closeness, equality
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Any:
    """Element-wise |a - b| <= atol + rtol * |b| (and a == b, so equal infinities count).

    NumPy rule: b is made inexact first (result_type(b, 1.0)); NaNs are equal only with
    equal_nan=True; not symmetric in a and b.

    isclose([1e10, 1e-8], [1.00001e10, 1e-9]) -> [True, True]
    """
    x = asarray_like(a, "isclose")
    y = asarray_like(b, "isclose")
    if not dtypes.is_python_scalar(y):
        y = cast(y, np.dtype(np.result_type(dtype_of(y), 1.0)), fname="isclose")
    elif isinstance(y, int):
        y = float(y)
    close = uf.less_equal(uf.absolute(uf.subtract(x, y)),
                          uf.add(atol, uf.multiply(rtol, uf.absolute(y))))
    result = uf.logical_or(uf.logical_and(close, uf.isfinite(y)), uf.equal(x, y))
    if equal_nan:
        result = uf.logical_or(result, uf.logical_and(uf.isnan(x), uf.isnan(y)))
    return as_result(result)


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: bool = False) -> Any:
    """True if every element of isclose(a, b, ...) is.

    NumPy rule: as isclose, reduced with all (a 0-d bool array here).

    allclose([1.0, 2.0], [1.0, 2.0 + 1e-9]) -> True
    """
    return red.all(isclose(a, b, rtol, atol, equal_nan))


def _false() -> np.ndarray:
    return np.asarray(False)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """True if the arrays have the same shape and elements.

    NumPy rule: different shapes give False; equal_nan=True counts NaNs as equal.

    array_equal([1, 2], [1, 2]) -> True; array_equal([1, 2], [[1, 2]]) -> False
    """
    x, y = _operand(a1, "array_equal"), _operand(a2, "array_equal")
    if np.shape(x) != np.shape(y):
        return _false()
    same = uf.equal(x, y)
    if equal_nan and (dtypes.is_inexact(dtype_of(x)) or dtypes.is_inexact(dtype_of(y))):
        same = uf.logical_or(same, uf.logical_and(uf.isnan(x), uf.isnan(y)))
    return red.all(same)


def array_equiv(a1: Any, a2: Any) -> Any:
    """True if the arrays broadcast to one shape and are equal there.

    array_equiv([1, 2], [[1, 2], [1, 2]]) -> True
    """
    x, y = _operand(a1, "array_equiv"), _operand(a2, "array_equiv")
    try:
        broadcast_shapes(np.shape(x), np.shape(y), fname="array_equiv")
    except ShapeError:
        return _false()
    return red.all(uf.equal(x, y))


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, kind: Any = None) -> Any:
    """Element-wise: is the element among test_elements (flattened)?

    NumPy rule: bool result of element's shape; invert=True negates. Computed as one
    broadcast comparison against every test element (NumPy's "table" / "sort" kinds
    give the same answer).

    isin([1, 2, 3], [2, 5]) -> [False, True, False]
    """
    x = _operand(element, "isin")
    t = reshape(_operand(test_elements, "isin"), (-1,))
    hits = red.any(uf.equal(reshape(x, tuple(np.shape(x)) + (1,)), t), axis=-1)
    return uf.logical_not(hits) if invert else hits


# ------------------------------------------------------------------ type predicates
def iscomplex(x: Any) -> Any:
    """Element-wise: the imaginary part is nonzero (False for real dtypes).

    iscomplex([1 + 1j, 1 + 0j, 4.5]) -> [True, False, False]
    """
    return uf.not_equal(uf.imag(_operand(x, "iscomplex")), 0)


def isreal(x: Any) -> Any:
    """Element-wise: the imaginary part is zero (True for real dtypes).

    isreal([1 + 1j, 1 + 0j, 4.5]) -> [False, True, True]
    """
    return uf.equal(uf.imag(_operand(x, "isreal")), 0)


def iscomplexobj(x: Any) -> bool:
    """Whether x has a complex dtype (static: a Python bool).

    iscomplexobj([1 + 0j]) -> True
    """
    dt = getattr(x, "dtype", None)
    return np.dtype(dt if dt is not None else np.asarray(x).dtype).kind == "c"


def isrealobj(x: Any) -> bool:
    """Whether x has a non-complex dtype (static: a Python bool).

    isrealobj([1.0]) -> True
    """
    return not iscomplexobj(x)


def isscalar(element: Any) -> bool:
    """NumPy's isscalar: Python / NumPy scalars are, arrays (traced or 0-d) are not.

    isscalar(3.1) -> True; isscalar(array(3.1)) -> False
    """
    return False if isinstance(element, Tracer) else bool(np.isscalar(element))


def real_if_close(a: Any, tol: float = 100) -> Any:
    """The real part if every imaginary part is within tol machine epsilons of zero.

    NumPy rule: the result dtype depends on the values, so a traced complex input
    raises (decide outside the trace, or take `real` explicitly).

    real_if_close([2.1 + 4e-14j]) -> [2.1]
    """
    v = _operand(a, "real_if_close")
    if dtype_of(v).kind != "c":
        return as_result(v)
    if isinstance(v, Tracer):
        raise error(TracerTypeError, "real_if_close", f"the result dtype of traced {desc(v)} "
                    "depends on its values; use tracer.numpy.real explicitly")
    return as_result(np.real_if_close(v, tol))


# ------------------------------------------------------------------ conversions
def copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    """A copy of a (traced arrays are immutable: the array itself).

    copy([1, 2]) -> [1, 2]
    """
    v = _operand(a, "copy")
    return v if isinstance(v, Tracer) else np.array(v, copy=True)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """x converted to dtype (NumPy 2 / array API function form of x.astype).

    astype(array([1.7, -1.2]), int32) -> [1, -1]
    """
    v = _operand(x, "astype")
    return as_result(cast(v, dtypes.canonicalize(dtype), fname="astype"))


def _dtype_arg(x: Any) -> Any:
    if isinstance(x, (Tracer, np.ndarray, np.generic)):
        return x.dtype
    if dtypes.is_python_scalar(x):
        raise error(TracerTypeError, "can_cast", "can_cast() does not support Python ints, "
                    "floats, and complex because the result used to depend on the value.")
    return x


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """Whether from_ (a dtype or an array, traced or not) casts to `to` under `casting`.

    can_cast(int8, float16) -> True; can_cast(int64, float32) -> False
    """
    return bool(np.can_cast(_dtype_arg(from_), _dtype_arg(to), casting=casting))


def isdtype(dtype: Any, kind: Any) -> bool:
    """The array API's dtype-kind test ("bool", "signed integer", "integral",
    "real floating", "complex floating", "numeric", or dtypes).

    isdtype(float32, "real floating") -> True
    """
    return bool(np.isdtype(np.dtype(dtype), kind))


def asanyarray(a: Any, dtype: Any = None, order: Any = None, *, like: Any = None) -> Any:
    """asarray (there are no array subclasses under tracing).

    asanyarray([1, 2]) -> [1, 2]
    """
    return asarray(a, dtype)


def _contiguous(fname: str) -> Callable[..., Any]:
    def convert(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
        return atleast_1d(asarray(a, dtype))
    convert.__name__ = convert.__qualname__ = fname
    convert.__module__ = "tracer.numpy"
    convert.__doc__ = (f"asarray with at least one dimension (NumPy's {fname}; layout is "
                       f"the backend's business).\n\n{fname}(3) -> [3]")
    return convert


ascontiguousarray = _contiguous("ascontiguousarray")
asfortranarray = _contiguous("asfortranarray")


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                 like: Any = None, **kwargs: Any) -> Any:
    """function(*indices(shape, dtype), **kwargs): build an array from its coordinates.

    fromfunction(lambda i, j: i + j, (2, 2), dtype=int) -> [[0, 1], [1, 2]]
    """
    return function(*indices(shape, dtype=dtype), **kwargs)


# ------------------------------------------------------------------ matrix-vector ufuncs
def _conj(x: Any) -> Any:
    return uf.conjugate(x) if dtype_of(x).kind == "c" else x


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Vector dot product along axis: sum(conj(x1) * x2), other dims broadcast.

    NumPy rule: a gufunc (n),(n)->(): the dtype is the promoted one (no widening of
    small ints, unlike sum).

    vecdot([[1, 2], [3, 4]], [1, 1]) -> [3, 7]
    """
    a, b = _operand(x1, "vecdot"), _operand(x2, "vecdot")
    a = moveaxis(a, normalize_axis(axis, np.ndim(a), "vecdot", of=a), -1)
    b = moveaxis(b, normalize_axis(axis, np.ndim(b), "vecdot", of=b), -1)
    out = matmul(ops.reshape(_conj(a), np.shape(a)[:-1] + (1, np.shape(a)[-1])),
                 ops.reshape(b, np.shape(b) + (1,)))
    return as_result(ops.reshape(out, np.shape(out)[:-2]))


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector product over the last axes: (m, n), (n) -> (m), the rest broadcast.

    matvec([[1, 2], [3, 4]], [1, 1]) -> [3, 7]
    """
    a, b = _operand(x1, "matvec"), _operand(x2, "matvec")
    out = matmul(a, ops.reshape(b, np.shape(b) + (1,)))
    return as_result(ops.reshape(out, np.shape(out)[:-1]))


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix product: conj(x1) (n) times x2 (n, m) -> (m), the rest broadcast.

    vecmat([1, 1], [[1, 2], [3, 4]]) -> [4, 6]
    """
    a, b = _operand(x1, "vecmat"), _operand(x2, "vecmat")
    out = matmul(ops.reshape(_conj(a), np.shape(a)[:-1] + (1, np.shape(a)[-1])), b)
    return as_result(ops.reshape(out, np.shape(out)[:-2] + np.shape(out)[-1:]))


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (array API / NumPy 2).

    matrix_transpose(ones((2, 3, 4))).shape -> (2, 4, 3)
    """
    v = _operand(x, "matrix_transpose")
    if np.ndim(v) < 2:
        raise error(ShapeError, "matrix_transpose", f"input array must be at least "
                    f"2-dimensional, got {desc(v)}")
    return swapaxes(v, -1, -2)
