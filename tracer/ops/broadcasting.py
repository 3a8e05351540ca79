"""Shape and dtype rules shared by the element-wise ops, and the family factories.

Broadcasting follows the seeds (XLA's operation semantics: element-wise binary ops and their
broadcasting rules), which are strict and
explicit: operands of a binary op have equal shapes, or one is a scalar, or equal
ranks broadcast degenerate (size-1) dimensions; different ranks need
`broadcast_dimensions`, which maps each dimension of the lower-rank operand onto a
dimension of the higher-rank one (strictly increasing; unmapped dimensions become
1, then degenerate broadcasting applies). NumPy-style rank promotion is left to
`tracer.numpy`.

`define_binary` / `define_unary` build an op record and its public wrapper from a
NumPy kernel, the dtype kinds the op accepts, and the seed doc.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes
from ..core import ShapedArray
from ..errors import DTypeError, ParamError, ShapeError, TracerError, TracerIndexError, \
    TracerValueError
from ..tracing import Tracer
from .common import wrapper_error
from .registry import Op, all_weak, define_op, dtype_of, harmonize, same_dtypes

Kernel = Callable[..., np.ndarray]
ResultDtype = Callable[[np.dtype], np.dtype]

# NumPy dtype kinds: b bool, i signed, u unsigned, f floating-point, c complex.
_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer",
               "f": "floating-point", "c": "complex"}
ANY = "biufc"
NUMBER = "iufc"
INTEGER = "iu"
INEXACT = "fc"


def check_kinds(dtype: np.dtype, kinds: str) -> None:
    """DTypeError unless `dtype`'s kind is one of `kinds` (e.g. "iu" for integers)."""
    if dtypes.kind(dtype) not in kinds:
        wanted = " or ".join(_KIND_NAMES[k] for k in kinds)
        raise DTypeError(f"expects {wanted} operands, got {dtypes.hlo_name(dtype)}")


def dims_param(name: str, dims: Sequence[int] | None) -> tuple[int, ...] | None:
    """Canonical `broadcast_dimensions`: None or a tuple of Python ints."""
    if dims is None:
        return None
    try:
        return tuple(operator.index(d) for d in dims)
    except TypeError:
        raise wrapper_error(ParamError, name, f"broadcast_dimensions must be a sequence of "
                            f"ints, got {dims!r}") from None


def broadcast_shape(lhs: tuple[int, ...], rhs: tuple[int, ...],
                    dims: tuple[int, ...] | None) -> tuple[int, ...]:
    """The result shape of a binary op under the seeds' broadcasting rules."""
    if len(lhs) != len(rhs):
        low, high = (lhs, rhs) if len(lhs) < len(rhs) else (rhs, lhs)
        if low and dims is None:
            raise ShapeError(f"operands of different ranks {_dims(lhs)} and {_dims(rhs)} "
                             f"need broadcast_dimensions (only a scalar broadcasts "
                             f"implicitly; tracer.numpy broadcasts NumPy-style)")
        expanded = _expanded_shape(low, high, dims or ())
        lhs, rhs = (expanded, high) if len(lhs) < len(rhs) else (high, expanded)
    elif dims not in (None, (), tuple(range(len(lhs)))):
        raise ParamError(f"broadcast_dimensions {dims} must be empty or the identity for "
                         f"operands of equal rank")
    return _degenerate(lhs, rhs)


def _expanded_shape(low: tuple[int, ...], high: tuple[int, ...],
                    dims: tuple[int, ...]) -> tuple[int, ...]:
    """`low` with its dims placed at `dims` of a rank-len(high) shape, 1 elsewhere."""
    if len(dims) != len(low):
        raise ParamError(f"broadcast_dimensions {dims} must have one entry per dimension "
                         f"of the lower-rank operand {_dims(low)}")
    for d in dims:
        if not 0 <= d < len(high):
            raise TracerIndexError(f"broadcast_dimensions entry {d} is out of range for "
                                   f"the higher-rank operand {_dims(high)}")
    if any(a >= b for a, b in zip(dims, dims[1:])):
        raise ParamError(f"broadcast_dimensions {dims} must be strictly increasing")
    shape = [1] * len(high)
    for size, d in zip(low, dims, strict=True):
        if size not in (1, high[d]) and high[d] != 1:
            raise ShapeError(f"dimension {d} of size {high[d]} cannot match size {size} "
                             f"(broadcast_dimensions {dims})")
        shape[d] = size
    return tuple(shape)


def _degenerate(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for a, b in zip(lhs, rhs, strict=True):
        if a != b and 1 not in (a, b):
            raise ShapeError(f"shapes {_dims(lhs)} and {_dims(rhs)} are not compatible "
                             f"(each dimension must be equal or 1)")
        out.append(b if a == 1 else a)
    return tuple(out)


def _dims(shape: tuple[int, ...]) -> str:
    return f"[{','.join(map(str, shape))}]"


def expand_operands(x: np.ndarray, y: np.ndarray,
                    dims: tuple[int, ...] | None) -> tuple[np.ndarray, np.ndarray]:
    """Reshape the lower-rank operand so NumPy broadcasting does the rest."""
    if x.ndim == y.ndim:
        return x, y
    if x.ndim < y.ndim:
        return _expand(x, y.ndim, dims or ()), y
    return x, _expand(y, x.ndim, dims or ())


def _expand(low: np.ndarray, rank: int, dims: tuple[int, ...]) -> np.ndarray:
    shape = [1] * rank
    for size, d in zip(low.shape, dims, strict=True):
        shape[d] = size
    return low.reshape(shape)


def harmonize_for(name: str, *args: Any) -> list[Any]:
    """`registry.harmonize`, keeping all-weak operands of one dtype weak, and naming
    the op when a Python scalar cannot take the other operand's dtype."""
    weak = [_weak_dtype(a) for a in args]
    if all(w is not None for w in weak) and len(set(weak)) == 1:
        return list(args)
    try:
        return harmonize(*args)
    except OverflowError as e:
        raise TracerValueError(f"{name}: {e}") from None
    except TracerError as e:
        raise type(e)(f"{name}: {e}") from None


def _weak_dtype(x: Any) -> np.dtype | None:
    if dtype_of(x) is not None:
        return None
    return x.dtype if isinstance(x, Tracer) else dtypes.weak_dtype(x)


def quiet(kernel: Kernel) -> Kernel:
    """Run a kernel with NumPy floating-point warnings off (inf/NaN are results here)."""
    def impl(*args: np.ndarray, **params: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(kernel(*args, **params))
    impl.__name__ = impl.__qualname__ = getattr(kernel, "__name__", "impl")
    return impl


def in_float32(kernel: Kernel) -> Kernel:
    """The kernel with bfloat16 operands computed in float32 and the result rounded to
    bfloat16 once, as XLA does (ml_dtypes' loops would round inside multi-step kernels)."""
    def impl(*args: np.ndarray, **params: Any) -> np.ndarray:
        if not any(getattr(a, "dtype", None) == dtypes.bfloat16 for a in args):
            return kernel(*args, **params)
        wide = [a.astype(np.float32) if a.dtype == dtypes.bfloat16 else a for a in args]
        out = np.asarray(kernel(*wide, **params))
        return out.astype(dtypes.bfloat16) if out.dtype == np.float32 else out
    impl.__name__ = impl.__qualname__ = getattr(kernel, "__name__", "impl")
    return impl


def _publish(fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = "tracer.ops"
    return fn


def binary_rule(kinds: str, result: ResultDtype | None = None) -> Callable[..., ShapedArray]:
    """Shape rule: shared dtype of an allowed kind, seed broadcasting, weak iff both weak."""
    def rule(lhs: ShapedArray, rhs: ShapedArray, *,
             broadcast_dimensions: tuple[int, ...] | None = None) -> ShapedArray:
        dtype = same_dtypes(lhs, rhs)
        check_kinds(dtype, kinds)
        shape = broadcast_shape(lhs.shape, rhs.shape, broadcast_dimensions)
        return ShapedArray(shape, result(dtype) if result else dtype,
                           weak_type=all_weak(lhs, rhs))
    return rule


def define_binary(name: str, hlo_name: str, kernel: Kernel, kinds: str, doc: str,
                  result: ResultDtype | None = None,
                  **fields: Any) -> tuple[Op, Callable[..., Any]]:
    """An element-wise binary op record and its public `(lhs, rhs, broadcast_dimensions)`."""
    def impl(x: np.ndarray, y: np.ndarray, *,
             broadcast_dimensions: tuple[int, ...] | None = None) -> np.ndarray:
        return kernel(*expand_operands(x, y, broadcast_dimensions))

    op = define_op(name, shape=binary_rule(kinds, result), impl=quiet(in_float32(impl)),
                   doc=doc, hlo_name=hlo_name, family="binary", **fields)

    def wrapper(lhs: Any, rhs: Any, broadcast_dimensions: Sequence[int] | None = None) -> Any:
        lhs, rhs = harmonize_for(name, lhs, rhs)
        return op.bind(lhs, rhs, broadcast_dimensions=dims_param(name, broadcast_dimensions))
    return op, _publish(wrapper, name, doc)


def unary_rule(kinds: str, result: ResultDtype | None = None,
               weak: bool = True) -> Callable[..., ShapedArray]:
    """Shape rule: same shape, an allowed dtype kind, weak iff the operand is weak."""
    def rule(x: ShapedArray) -> ShapedArray:
        check_kinds(x.dtype, kinds)
        return ShapedArray(x.shape, result(x.dtype) if result else x.dtype,
                           weak_type=weak and x.weak_type)
    return rule


def define_unary(name: str, hlo_name: str, kernel: Kernel, kinds: str, doc: str,
                 result: ResultDtype | None = None, weak: bool = True,
                 **fields: Any) -> tuple[Op, Callable[..., Any]]:
    """An element-wise unary op record and its public `(operand)` wrapper."""
    op = define_op(name, shape=unary_rule(kinds, result, weak),
                   impl=quiet(in_float32(kernel)), doc=doc, hlo_name=hlo_name, family="unary",
                   **fields)

    def wrapper(operand: Any) -> Any:
        return op.bind(operand)
    return op, _publish(wrapper, name, doc)
