"""The array API standard namespace (revision 2024.12) that traced arrays return from
`x.__array_namespace__()`, so code written against the standard
(`xp = x.__array_namespace__(); xp.sum(xp.exp(x), axis=0)`) runs under `jit`,
`grad` and `vmap`.

Almost everything is the `tracer.numpy` function of the same name (NumPy 2 follows
the standard); the wrappers here cover the standard's own signatures: keyword-only
`axis` defaults (`take_along_axis`, `expand_dims`), `copy=` / `device=` arguments,
`sort` / `argsort` with `descending` / `stable`, `diff` with `prepend=None`, and
the `unique_*` / `nonzero` / `searchsorted` functions (tracer.numpy's sorting
functions, static `size=` rules included).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .. import dtypes as _dtypes
from ..errors import TracerTypeError as _TracerTypeError
from . import (abs, acos, acosh, add, all, any, arange, argmax, argmin, asarray, asin,
               asinh, astype, atan, atan2, atanh, bitwise_and, bitwise_invert,
               bitwise_left_shift, bitwise_or, bitwise_right_shift, bitwise_xor,
               broadcast_arrays, broadcast_to, can_cast, ceil, clip, concat, conj, copysign,
               cos, cosh, count_nonzero, cumulative_prod, cumulative_sum, divide, e, empty,
               empty_like, equal, exp, expm1, eye, finfo, flip, floor, floor_divide, full,
               full_like, greater, greater_equal, hypot, iinfo, imag, inf, isdtype, isfinite,
               isinf, isnan, less, less_equal, linspace, log, log1p, log2, log10, logaddexp,
               logical_and, logical_not, logical_or, logical_xor, matmul, matrix_transpose,
               max, maximum, mean, meshgrid, min, minimum, moveaxis, multiply, nan, negative,
               newaxis, nextafter, not_equal, ones, ones_like, permute_dims, pi, positive, pow,
               prod, real, reciprocal, remainder, repeat, result_type, roll, round, sign,
               signbit, sin, sinh, sqrt, square, stack, std, subtract, sum, take, tan, tanh,
               tensordot, tile, tril, triu, trunc, unstack, var, vecdot, where, zeros,
               zeros_like)
from . import _shape as _shp
from . import fft, linalg  # the optional extensions
from ._accumulate import diff as _diff
from ._ufunc_core import NOVALUE as _NOVALUE

__all__ = ["abs", "acos", "acosh", "add", "all", "any", "arange", "argmax", "argmin",
           "argsort", "asarray", "asin", "asinh", "astype", "atan", "atan2", "atanh",
           "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or",
           "bitwise_right_shift", "bitwise_xor", "bool", "broadcast_arrays", "broadcast_to",
           "can_cast", "ceil", "clip", "complex128", "complex64", "concat", "conj", "copysign",
           "cos", "cosh", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff",
           "divide", "e", "empty", "empty_like", "equal", "exp", "expand_dims", "expm1", "eye",
           "fft", "finfo", "flip", "float32", "float64", "floor", "floor_divide",
           "from_dlpack", "full", "full_like", "greater", "greater_equal", "hypot", "iinfo",
           "imag", "inf", "int16", "int32", "int64", "int8", "isdtype", "isfinite", "isinf",
           "isnan", "less", "less_equal", "linalg", "linspace", "log", "log10", "log1p",
           "log2", "logaddexp", "logical_and", "logical_not", "logical_or", "logical_xor",
           "matmul", "matrix_transpose", "max", "maximum", "mean", "meshgrid", "min",
           "minimum", "moveaxis", "multiply", "nan", "negative", "newaxis", "nextafter",
           "nonzero", "not_equal", "ones", "ones_like", "permute_dims", "pi", "positive",
           "pow", "prod", "real", "reciprocal", "remainder", "repeat", "reshape",
           "result_type", "roll", "round", "searchsorted", "sign", "signbit", "sin", "sinh",
           "sort", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "take",
           "take_along_axis", "tan", "tanh", "tensordot", "tile", "tril", "triu", "trunc",
           "uint16", "uint32", "uint64", "uint8", "unique_all", "unique_counts",
           "unique_inverse", "unique_values", "unstack", "var", "vecdot", "where", "zeros",
           "zeros_like", "__array_namespace_info__"]

__array_api_version__ = "2024.12"
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64, complex64, complex128 = np.float32, np.float64, np.complex64, np.complex128


def _tnp(name: str) -> Any:
    """A tracer.numpy function another engineer's module provides (sorting, sets)."""
    import tracer.numpy as tnp

    fn = getattr(tnp, name, None)
    if fn is None:
        raise _TracerTypeError(f"array API {name}: tracer.numpy has no {name} yet")
    return fn


def reshape(x: Any, /, shape: Any, *, copy: bool | None = None) -> Any:
    """x with a new shape (copy= is accepted: traced arrays are immutable)."""
    return _shp.reshape(x, shape)


def expand_dims(x: Any, /, *, axis: int = 0) -> Any:
    """x with a new size-1 axis at `axis`."""
    return _shp.expand_dims(x, axis)


def squeeze(x: Any, /, axis: Any) -> Any:
    """x without the size-1 axes `axis` (required by the standard)."""
    return _shp.squeeze(x, axis)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    """Elements of x picked along axis by indices (the standard's default axis is -1)."""
    return _tnp("take_along_axis")(x, indices, axis)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None,
         append: Any = None) -> Any:
    """n-th differences along axis; prepend / append None mean none."""
    return _diff(x, n, axis, _NOVALUE if prepend is None else prepend,
                 _NOVALUE if append is None else append)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> np.ndarray:
    """A NumPy array from a DLPack producer (concrete data only)."""
    return np.from_dlpack(x)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """x sorted along axis (descending keeps equal elements in order when stable)."""
    if not descending:
        return _tnp("sort")(x, axis=axis, stable=stable)
    return flip(_tnp("sort")(flip(x, axis=axis), axis=axis, stable=stable), axis=axis)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> Any:
    """Indices that sort x along axis; descending and stable as the standard says."""
    if not descending:
        return _tnp("argsort")(x, axis=axis, stable=stable)
    n = np.shape(x)[axis]
    # Sort the reversed array ascending, reverse back: equal keys keep their order.
    idx = flip(_tnp("argsort")(flip(x, axis=axis), axis=axis, stable=stable), axis=axis)
    return subtract(n - 1, idx)


def nonzero(x: Any, /) -> tuple[Any, ...]:
    """Indices of the nonzero elements (tracer.numpy's static-size rules apply)."""
    return _tnp("nonzero")(x)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    """Insertion points of x2 in the sorted 1-D x1."""
    return _tnp("searchsorted")(x1, x2, side=side, sorter=sorter)


class _UniqueAll(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class _UniqueCounts(NamedTuple):
    values: Any
    counts: Any


class _UniqueInverse(NamedTuple):
    values: Any
    inverse_indices: Any


def unique_all(x: Any, /) -> _UniqueAll:
    """Unique values with first indices, inverse indices (x's shape) and counts."""
    values, idx, inv, counts = _tnp("unique")(x, return_index=True, return_inverse=True,
                                              return_counts=True, equal_nan=False)
    return _UniqueAll(values, idx, reshape(inv, np.shape(x)), counts)


def unique_counts(x: Any, /) -> _UniqueCounts:
    """Unique values and how often each occurs."""
    return _UniqueCounts(*_tnp("unique")(x, return_counts=True, equal_nan=False))


def unique_inverse(x: Any, /) -> _UniqueInverse:
    """Unique values and the inverse indices (x's shape)."""
    values, inv = _tnp("unique")(x, return_inverse=True, equal_nan=False)
    return _UniqueInverse(values, reshape(inv, np.shape(x)))


def unique_values(x: Any, /) -> Any:
    """The unique values of x, sorted."""
    return _tnp("unique")(x, equal_nan=False)


class _Info:
    """`__array_namespace_info__()`: what this namespace supports."""

    def capabilities(self) -> dict[str, Any]:
        # Boolean indexing and nonzero have value-dependent shapes under tracing.
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": None}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list[str]:
        return ["cpu"]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        return {"real floating": np.dtype(np.float64), "complex floating":
                np.dtype(np.complex128), "integral": np.dtype(np.int64),
                "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128"]
        table = {n: np.dtype(n) for n in names if np.dtype(n) in _dtypes.SUPPORTED}
        if kind is None:
            return table
        return {n: d for n, d in table.items() if np.isdtype(d, kind)}


def __array_namespace_info__() -> _Info:
    """The standard's inspection object (devices, default dtypes, capabilities)."""
    return _Info()
