"""Dot products (XLA's Dot, DotGeneral).

`dot_general` is the one op; its params are XLA's DotDimensionNumbers fields, so
the HLO printer writes `dot(...), lhs_contracting_dims={1}, rhs_contracting_dims={0}`.
`dot` is a wrapper with the seed's rank rules. The reference computes in the
result dtype (integer products wrap, as XLA's do; `preferred_element_type`
widens the accumulator).
"""

from __future__ import annotations

import enum
import inspect
import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError
from .common import operand_aval, static_ints, wrapper_error
from .registry import define_op, harmonize, same_dtypes
from .shape import check_dims

__all__ = ["dot_general", "dot", "Precision"]

Dims = tuple[int, ...]
_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")


class Precision(enum.Enum):
    """`jax.lax.Precision`: what `precision=` accepts besides the names. Every level
    computes at the operands' full precision on every backend (no bf16/TF32 passes)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


def _check_pairs(kind: str, lhs_dims: Dims, rhs_dims: Dims, lhs: ShapedArray,
                 rhs: ShapedArray) -> None:
    """Paired dims: same count, in range, and of equal sizes."""
    if len(lhs_dims) != len(rhs_dims):
        raise ParamError(f"lhs_{kind}_dims {list(lhs_dims)} and rhs_{kind}_dims "
                         f"{list(rhs_dims)} must have the same length")
    check_dims(f"lhs_{kind}_dims", lhs_dims, lhs.ndim)
    check_dims(f"rhs_{kind}_dims", rhs_dims, rhs.ndim)
    for a, b in zip(lhs_dims, rhs_dims, strict=True):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"{kind} dimension sizes differ: lhs dimension {a} has size "
                             f"{lhs.shape[a]}, rhs dimension {b} has size {rhs.shape[b]} "
                             f"({lhs} and {rhs})")


def _result_dtype(dtype: np.dtype, preferred: np.dtype | None) -> np.dtype:
    if dtype.kind == "b":
        raise DTypeError("dot products need numeric operands, got pred")
    if preferred is None:
        return dtype
    if preferred.kind == "b" or (dtypes.is_inexact(dtype) and preferred.kind in "iu") or \
            (dtype.kind == "c" and preferred.kind != "c"):
        raise DTypeError(f"preferred_element_type {dtypes.hlo_name(preferred)} cannot "
                         f"hold products of {dtypes.hlo_name(dtype)} operands")
    return preferred


def _dot_general_shape(lhs: ShapedArray, rhs: ShapedArray, *, lhs_contracting_dims: Dims,
                       rhs_contracting_dims: Dims, lhs_batch_dims: Dims, rhs_batch_dims: Dims,
                       precision: tuple[str, str] | None,
                       preferred_element_type: np.dtype | None) -> ShapedArray:
    dtype = _result_dtype(same_dtypes(lhs, rhs), preferred_element_type)
    _check_pairs("contracting", lhs_contracting_dims, rhs_contracting_dims, lhs, rhs)
    _check_pairs("batch", lhs_batch_dims, rhs_batch_dims, lhs, rhs)
    for side, contracting, batch in (("lhs", lhs_contracting_dims, lhs_batch_dims),
                                     ("rhs", rhs_contracting_dims, rhs_batch_dims)):
        if set(contracting) & set(batch):
            raise ParamError(f"{side} dimensions {sorted(set(contracting) & set(batch))} "
                             f"are both contracting and batch dimensions")
    shape = (tuple(lhs.shape[d] for d in lhs_batch_dims)
             + _free(lhs.shape, lhs_contracting_dims, lhs_batch_dims)
             + _free(rhs.shape, rhs_contracting_dims, rhs_batch_dims))
    return ShapedArray(shape, dtype)


def _free(shape: tuple[int, ...], contracting: Dims, batch: Dims) -> tuple[int, ...]:
    return tuple(n for d, n in enumerate(shape) if d not in contracting and d not in batch)


def _dot_general_impl(x: np.ndarray, y: np.ndarray, *, lhs_contracting_dims: Dims,
                      rhs_contracting_dims: Dims, lhs_batch_dims: Dims, rhs_batch_dims: Dims,
                      precision: tuple[str, str] | None,
                      preferred_element_type: np.dtype | None) -> np.ndarray:
    out_dtype = _result_dtype(x.dtype, preferred_element_type)
    # 16-bit float products accumulate in float32 and round once, as XLA's CPU backend
    # (and the cpu backend: widened operands through BLAS, the same summation order).
    work = dtypes.float32 if out_dtype in (dtypes.bfloat16, dtypes.float16) else out_dtype
    x, y = x.astype(work, copy=False), y.astype(work, copy=False)
    # As (batch, free, contracting) @ (batch, contracting, free): one np.matmul.
    lhs_free = [d for d in range(x.ndim) if d not in lhs_contracting_dims + lhs_batch_dims]
    rhs_free = [d for d in range(y.ndim) if d not in rhs_contracting_dims + rhs_batch_dims]
    batch = [x.shape[d] for d in lhs_batch_dims]
    m, n = [x.shape[d] for d in lhs_free], [y.shape[d] for d in rhs_free]
    k = math.prod(x.shape[d] for d in lhs_contracting_dims)
    lhs = x.transpose(*lhs_batch_dims, *lhs_free, *lhs_contracting_dims)
    rhs = y.transpose(*rhs_batch_dims, *rhs_contracting_dims, *rhs_free)
    lhs = lhs.reshape(math.prod(batch), math.prod(m), k)
    rhs = rhs.reshape(math.prod(batch), k, math.prod(n))
    with np.errstate(all="ignore"):
        out = np.matmul(lhs, rhs).reshape(tuple(batch + m + n))
    return np.asarray(out, dtype=out_dtype)


def _dimension_numbers(value: Any) -> tuple[Dims, Dims, Dims, Dims]:
    try:
        (lc, rc), (lb, rb) = value
    except (TypeError, ValueError):
        raise wrapper_error(ParamError, "dot_general", f"dimension_numbers must be "
                            f"((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)), "
                            f"got {value!r}") from None
    names = ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
             "rhs_batch_dims")
    lc, rc, lb, rb = (static_ints("dot_general", n, v)
                      for n, v in zip(names, (lc, rc, lb, rb), strict=True))
    return lc, rc, lb, rb


def _precision(op: str, value: Any) -> tuple[str, str] | None:
    """None, or an (lhs, rhs) pair of "DEFAULT" / "HIGH" / "HIGHEST"."""
    if value is None:
        return None
    pair = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    names = tuple(str(getattr(p, "name", p) if p is not None else "DEFAULT").upper()
                  for p in pair)
    if len(names) != 2 or any(n not in _PRECISIONS for n in names):
        raise wrapper_error(ParamError, op, f"precision must be None, one of {_PRECISIONS} "
                            f"or a pair of them, got {value!r}")
    return names  # type: ignore[return-value]


def _preferred(op: str, value: Any) -> np.dtype | None:
    if value is None:
        return None
    try:
        return dtypes.canonicalize(value)
    except DTypeError as e:
        raise wrapper_error(DTypeError, op, f"preferred_element_type: {e}") from None


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None) -> Any:
    """Sum of products over contracting dims, element-wise over batch dims.

    Seed rule: dimension_numbers = ((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch)); paired dims have equal sizes; the output is the
    batch dims, then lhs free dims, then rhs free dims, each in original order.
    preferred_element_type (e.g. int32 for int8 operands) is the result dtype.

    dot_general(a23, b23, (((1,), (1,)), ((), ()))) -> a @ b.T  ([2,3]·[2,3] -> [2,2])
    """
    lc, rc, lb, rb = _dimension_numbers(dimension_numbers)
    lhs, rhs = harmonize(lhs, rhs)
    return dot_general_p.bind(
        lhs, rhs, lhs_contracting_dims=lc, rhs_contracting_dims=rc, lhs_batch_dims=lb,
        rhs_batch_dims=rb, precision=_precision("dot_general", precision),
        preferred_element_type=_preferred("dot_general", preferred_element_type))


dot_general_p = define_op("dot_general", shape=_dot_general_shape, impl=_dot_general_impl,
                          hlo_name="dot", family="linalg", linear=True,
                          doc=inspect.cleandoc(dot_general.__doc__ or ""))


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector/matrix product: vector·vector -> scalar, matrix·vector, matrix·matrix.

    Seed rule: contracts the second dimension of lhs (the first if lhs has rank
    1) with the first dimension of rhs; operands have rank 1 or 2.

    dot(np.array([[1., 2.], [3., 4.]]), np.array([1., 1.])) -> [3., 7.]
    """
    lhs, rhs = harmonize(lhs, rhs)
    a, b = operand_aval(lhs), operand_aval(rhs)
    if a.ndim not in (1, 2) or b.ndim not in (1, 2):
        raise wrapper_error(ShapeError, "dot", f"operands must be vectors or matrices "
                            f"(rank 1 or 2), got {a} and {b}; use dot_general for "
                            f"other ranks")
    dims: Sequence[Any] = (((a.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dims, precision=precision,
                       preferred_element_type=preferred_element_type)
