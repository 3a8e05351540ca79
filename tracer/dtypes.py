"""Supported dtypes, their HLO spellings, and NumPy 2 (NEP 50) promotion.

`tracer.ops` never promotes: operands of one op share a dtype. `tracer.numpy`
promotes with `result_type`, which treats *weak* values (Python scalars and
traced values that came from Python scalars) the NEP 50 way: they take the
dtype of the strongly typed array they meet.

bfloat16 is `ml_dtypes.bfloat16` (NumPy kind 'V'): `kind` reports it as 'f', and
it promotes on JAX's lattice (it joins every integer as bfloat16, float16 as
float32, wider floats as themselves), since NumPy knows no promotion for most of
its pairs.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

HLO_NAMES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int8): "s8",
    np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
}

SUPPORTED: frozenset[np.dtype] = frozenset(HLO_NAMES)
_DTYPE_TYPES = frozenset(type(d) for d in SUPPORTED)

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# The dtype a weak Python scalar gets when nothing strong is around (NumPy's defaults).
_WEAK_DEFAULT = {bool: bool_, int: int64, float: float64, complex: complex128}
# A representative Python value per weak kind, for np.result_type (NEP 50 treats
# Python values, not types, as weak).
_WEAK_PROBE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def canonicalize(dtype: Any) -> np.dtype:
    """`np.dtype(dtype)`, checked against the supported set."""
    if type(dtype) in _DTYPE_TYPES and dtype in SUPPORTED:  # the hot path: already one
        return dtype
    from .errors import DTypeError

    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"{dtype!r} is not a dtype") from e
    if dt not in SUPPORTED:
        raise DTypeError(f"dtype {dt} is not supported by tracer; use one of "
                         f"{sorted(str(d) for d in SUPPORTED)}")
    return dt


def hlo_name(dtype: np.dtype) -> str:
    return HLO_NAMES[np.dtype(dtype)]


def weak_dtype(value: bool | int | float | complex) -> np.dtype:
    """The dtype of a Python scalar when it meets no array (bool, int64, float64, complex128)."""
    return _WEAK_DEFAULT[type(value) if type(value) in _WEAK_DEFAULT else _kind_type(value)]


def _kind_type(value: Any) -> type:
    for t in (bool, int, float, complex):
        if isinstance(value, t):
            return t
    raise TypeError(f"{value!r} is not a Python scalar")


def is_python_scalar(x: Any) -> bool:
    return type(x) in _WEAK_DEFAULT or (
        isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic))


def result_type(*items: Any) -> tuple[np.dtype, bool]:
    """NEP 50 promotion of `items` → (dtype, weak).

    Each item is a Python scalar (weak), a NumPy array/scalar/dtype (strong), or
    anything with `.dtype` and `.weak_type` (an abstract value or a tracer). The
    result is weak only when every input is weak.
    """
    weak, strong = [], []
    for item in items:
        if is_python_scalar(item):
            weak.append(item)
        elif getattr(item, "weak_type", False):
            weak.append(_WEAK_PROBE[kind(item.dtype)])
        else:
            strong.append(np.dtype(item.dtype) if hasattr(item, "dtype") else np.dtype(item))
    if not strong:
        # Only Python kinds meet: NumPy's defaults decide (int + float -> float64).
        return canonicalize(np.result_type(*[weak_dtype(p) for p in weak])), True
    if bfloat16 not in strong:
        return canonicalize(np.result_type(*strong, *weak)), False
    return canonicalize(_promote_bfloat16(strong, weak)), False


def _promote_bfloat16(strong: list[np.dtype], weak: list[Any]) -> np.dtype:
    """JAX's lattice around bfloat16: the other strong dtypes promote NumPy's way
    first, then join bfloat16 (ints -> bf16, f16 -> f32, wider stays); a weak
    Python value then takes bf16, a weak complex makes complex64."""
    others = [d for d in strong if d != bfloat16]
    joined = np.result_type(*others) if others else bfloat16
    if joined.kind in "biu" or joined == bfloat16:
        joined = bfloat16
    elif joined == float16:
        joined = float32
    if joined != bfloat16:
        return np.result_type(joined, *weak)
    return complex64 if any(isinstance(w, complex) for w in weak) else bfloat16


def kind(dtype: Any) -> str:
    """NumPy's dtype kind ('b', 'i', 'u', 'f', 'c'), with bfloat16 (kind 'V') as 'f'."""
    dt = np.dtype(dtype)
    return "f" if dt == bfloat16 else dt.kind


def finfo(dtype: Any) -> Any:
    """Machine limits of a float dtype (`ml_dtypes.finfo`: NumPy's, plus bfloat16)."""
    return ml_dtypes.finfo(np.dtype(dtype))


def is_float(dtype: np.dtype) -> bool:
    return kind(dtype) == "f"


def is_complex(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def is_inexact(dtype: np.dtype) -> bool:
    return kind(dtype) in "fc"


def is_integer(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def is_signed(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind == "i"


def is_bool(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind == "b"


def real_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128, the dtype itself otherwise."""
    dt = np.dtype(dtype)
    return np.dtype(dt.char.lower()) if dt.kind == "c" else dt


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """complex64 for float32/float16/bfloat16, complex128 for float64."""
    return complex128 if np.dtype(dtype) == float64 else complex64


def default_float() -> np.dtype:
    return float64


def default_int() -> np.dtype:
    return int64
