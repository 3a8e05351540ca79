"""`tracer.numpy`: NumPy 2 semantics (NEP 50 promotion, broadcasting, NumPy's
dtypes and results) on top of the strict `tracer.ops`.

    import tracer.numpy as tnp
    tnp.sum(tnp.sin(x) * 2.0, axis=-1)

Every function works eagerly (NumPy arrays in, `numpy.ndarray` out, 0-d for
scalars) and under tracing (traced arrays in and out), because it only ever
calls `tracer.ops`. Importing this package also gives traced arrays their
ndarray operators and methods (`x + 1`, `x.sum(0)`, `x[1:]`, `x.at[i].set(v)`),
NumPy's override protocols (`np.sin(x)`, `np.sum(x, axis=0)` on a traced array run
the function of the same name here; see `_protocols`) and the array API namespace
(`x.__array_namespace__()`, see `_array_api`).
"""

from __future__ import annotations

import functools as _functools
import importlib as _importlib
import math
import types as _types
from typing import Any

import numpy as np

from .. import dtypes as _dtypes
from ..errors import TracerTypeError
from ..tracing import Tracer as _Tracer
from . import _accumulate, _creation, _indexing, _linalg, _methods, _rearrange, _reductions
from . import _eager, _shape, _sorting, _take, _ufuncs
from ._accumulate import *  # noqa: F401,F403
from ._creation import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._take import *  # noqa: F401,F403
from ._linalg import *  # noqa: F401,F403
from ._promotion import PromotionOverflowError, error
from ._rearrange import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._shape import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._ufuncs import *  # noqa: F401,F403

# Modules imported on first use of one of their names (`tnp.quantile`, `tnp.linalg`): a
# traced model seldom needs them, so `import tracer` does not compile them
# (tests/test_import.py, which also checks these lists against each module's `__all__`).
_LAZY_NAMES: dict[str, tuple[str, ...]] = {
    "_build": ("meshgrid", "indices", "ix_", "tri", "vander", "logspace", "geomspace", "kron",
               "block", "diagflat", "unravel_index", "ravel_multi_index", "tril_indices",
               "triu_indices", "tril_indices_from", "triu_indices_from", "diag_indices",
               "diag_indices_from"),
    "_calculus": ("convolve", "correlate", "interp", "trapezoid", "gradient", "unwrap",
                  "polyval", "polyadd", "polysub", "polymul", "polyder", "polyint"),
    "_edit": ("append", "insert", "delete", "resize", "put", "put_along_axis", "fill_diagonal",
              "select", "piecewise", "choose", "compress", "extract", "cross", "hsplit",
              "vsplit", "dsplit", "unstack", "rollaxis"),
    "_einsum": ("einsum", "einsum_path"),
    "_floats": ("frexp", "ldexp", "modf", "nextafter", "spacing", "gcd", "lcm", "bitwise_count",
                "i0", "nan_to_num", "bartlett", "blackman", "hamming", "hanning", "kaiser"),
    "_nan": ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
             "nanargmax", "nanargmin", "nancumsum", "nancumprod"),
    "_pad": ("pad",),
    "_predicates": ("isclose", "allclose", "array_equal", "array_equiv", "isin", "iscomplex",
                    "isreal", "iscomplexobj", "isrealobj", "isscalar", "real_if_close", "copy",
                    "astype", "can_cast", "isdtype", "asanyarray", "ascontiguousarray",
                    "asfortranarray", "fromfunction", "vecdot", "matvec", "vecmat",
                    "matrix_transpose"),
    "_quantile": ("median", "quantile", "percentile", "nanmedian", "nanquantile",
                  "nanpercentile"),
    "_stats": ("bincount", "digitize", "histogram", "histogram_bin_edges", "average", "cov",
               "corrcoef", "WeightsSumToZeroError"),
    "_vectorize": ("vectorize", "apply_along_axis", "apply_over_axes"),
}
_LAZY_MODULE_OF = {name: module for module, names in _LAZY_NAMES.items() for name in names}
_LAZY_NAMESPACES = ("fft", "linalg")

# dtypes: NumPy's scalar types, usable wherever a dtype is expected (`dtype=tnp.int8`,
# `x.dtype == tnp.float32`).
bool_ = bool = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
int_, intp, uint, half, single, double = np.int_, np.intp, np.uint, np.half, np.single, np.double
csingle, cdouble = np.csingle, np.cdouble
generic, number, integer, signedinteger, unsignedinteger = (
    np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger)
inexact, floating, complexfloating = np.inexact, np.floating, np.complexfloating

dtype = np.dtype
issubdtype = np.issubdtype
promote_types = np.promote_types
ndarray = np.ndarray
newaxis = None
pi, e, inf, nan, euler_gamma = math.pi, math.e, math.inf, math.nan, float(np.euler_gamma)


def _dtype_item(x: Any) -> Any:
    """An argument of result_type as `tracer.dtypes.result_type` wants it."""
    if isinstance(x, _Tracer) or _dtypes.is_python_scalar(x):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, (list, tuple)):
        return np.asarray(x).dtype
    return np.dtype(x)


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype NumPy 2 promotion gives the arguments (arrays, traced arrays, dtypes,
    Python scalars).

    NumPy rule: NEP 50: Python scalars are weak and take the other operands' dtype;
    traced values from Python scalars are weak too.

    result_type(np.int8, 1) -> int8; result_type(np.int64, np.float32) -> float64
    """
    if not arrays_and_dtypes:
        raise error(TracerTypeError, "result_type", "at least one array or dtype is required")
    return _dtypes.result_type(*(_dtype_item(x) for x in arrays_and_dtypes))[0]


def _dtype_of(x: Any) -> Any:
    return x.dtype if isinstance(x, (_Tracer, np.ndarray, np.generic)) else x


def finfo(x: Any) -> np.finfo:
    """Machine limits of a float dtype (of an array's or traced array's dtype; bfloat16
    through ml_dtypes.finfo)."""
    return _dtypes.finfo(_dtype_of(x))


def iinfo(x: Any) -> np.iinfo:
    """Machine limits of an integer dtype (of an array's or traced array's dtype)."""
    return np.iinfo(_dtype_of(x))


def __getattr__(name: str) -> Any:
    """Names of the modules in `_LAZY_NAMES` and the `fft`/`linalg` namespaces, imported on
    first use; `tnp.bfloat16`: ml_dtypes' bfloat16 scalar type (tracer works without
    ml_dtypes; only this name needs it)."""
    if name in _LAZY_MODULE_OF:
        return _load_lazy(_LAZY_MODULE_OF[name])[name]
    if name in _LAZY_NAMESPACES:
        return _importlib.import_module(f".{name}", __name__)
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise AttributeError("tracer.numpy.bfloat16 needs the ml_dtypes package "
                                 "(pip install ml_dtypes)") from None
        return ml_dtypes.bfloat16
    raise AttributeError(f"module 'tracer.numpy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_MODULE_OF, *_LAZY_NAMESPACES})


_methods.install()

__all__ = [
    *_creation.__all__, *_ufuncs.__all__, *_reductions.__all__, *_shape.__all__,
    *_rearrange.__all__, *_linalg.__all__, *_indexing.__all__, *_take.__all__,
    *_accumulate.__all__, *_sorting.__all__, *_LAZY_MODULE_OF, "PromotionOverflowError",
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "int_", "intp", "uint",
    "half", "single", "double", "csingle", "cdouble", "generic", "number", "integer",
    "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating",
    "dtype", "issubdtype", "promote_types", "ndarray", "newaxis", "pi", "e", "inf", "nan",
    "euler_gamma", "result_type", "finfo", "iinfo",
]


def _with_eager_results(fn: Any) -> Any:
    """`fn` whose NumPy-array results (outside a trace) come back as `EagerArray`s."""
    @_functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if type(out) is np.ndarray:
            return _eager.eager(out)
        if type(out) in (tuple, list):  # (this module's `any` is tnp.any: no builtins here)
            return type(out)(_eager.eager(o) if type(o) is np.ndarray else o for o in out)
        return out
    return call


def _export(names: Any, namespace: dict[str, Any]) -> dict[str, Any]:
    """Put `names` of `namespace` into this module, functions wrapped by `_with_eager_results`
    (asarray keeps NumPy's identity, `asarray(x) is x` for an ndarray x: not wrapped)."""
    for name in names:
        fn = namespace[name]
        if isinstance(fn, _types.FunctionType) and name not in ("asarray", "asanyarray"):
            fn = _with_eager_results(fn)
        globals()[name] = fn
    return globals()


def _load_lazy(module: str) -> dict[str, Any]:
    """Import one of `_LAZY_NAMES`' modules and export its names here."""
    return _export(_LAZY_NAMES[module], vars(_importlib.import_module(f".{module}", __name__)))


_export([n for n in __all__ if n not in _LAZY_MODULE_OF], globals())
