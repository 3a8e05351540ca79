"""The machinery behind `tracer.numpy`'s ufuncs: dtype rules, argument checks,
and the factories that turn an ops-level implementation into a NumPy function.

A ufunc promotes its inputs (NEP 50), picks the dtype NumPy computes in
(`float_of`: `sin` of int8 is float16; `divide` of ints is float64; `power` of
bools is int8), checks the dtype kinds NumPy accepts, broadcasts NumPy-style and
calls its implementation, which only ever sees operands of one dtype.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, TracerTypeError
from ._promotion import (as_result, asarray_like, broadcast_arrays, cast, check_out, constant,
                         desc, dtype_of, error, float_of, is_weak, promote,
                         result_dtype)

# Dtype kinds a ufunc accepts (NumPy kinds: b bool, i/u integers, f float, c complex).
ALL, NUM, REAL, INT = "biufc", "iufc", "biuf", "biu"

DtypeRule = Callable[[np.dtype], np.dtype]


class _NoValue:
    """Marks an argument that was not passed (NumPy's `np._NoValue`)."""

    def __repr__(self) -> str:
        return "<no value>"


NOVALUE: Any = _NoValue()


def same(dt: np.dtype) -> np.dtype:
    return dt


def bool_to_int8(dt: np.dtype) -> np.dtype:
    return dtypes.int8 if dt.kind == "b" else dt


def true_div(dt: np.dtype) -> np.dtype:
    return dt if dtypes.is_inexact(dt) else dtypes.float64


def check_call(name: str, out: Any, where: Any) -> None:
    check_out(out, name)
    if where is not True:
        raise error(TracerTypeError, name, "where= is not supported on ufuncs; use "
                    "tracer.numpy.where(mask, f(x), x)")


def check_kind(name: str, dt: np.dtype, kinds: str, *xs: Any) -> None:
    if dtypes.kind(dt) not in kinds:
        raise error(DTypeError, name, f"ufunc '{name}' not supported for the input types "
                    f"{', '.join(map(desc, xs))}")


def publish(fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "tracer.numpy"
    fn.__doc__ = doc
    return fn


def _widen(dt: np.dtype) -> np.dtype:
    """NumPy (and ml_dtypes for bfloat16) computes 16-bit float loops in float32 and
    rounds the result: so do we."""
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _narrow(result: Any, dt: np.dtype) -> Any:
    if dt in (dtypes.float16, dtypes.bfloat16) and dtype_of(result) == dtypes.float32:
        return cast(result, dt)
    return result


def float_loop(x1: Any, x2: Any, common: np.dtype) -> np.dtype:
    """The float loop NumPy picks for a float-only binary ufunc: the smallest float
    both inputs cast to safely (int8 with uint8 is float16, though int8 + uint8 is
    int16); a weak operand counts as the common dtype."""
    own = [common if is_weak(v) else dtype_of(v) for v in (x1, x2)]
    return np.dtype(np.promote_types(float_of(own[0]), float_of(own[1])))


def unary(name: str, impl: Callable[[Any], Any], kinds: str, compute: DtypeRule,
          doc: str) -> Callable[..., Any]:
    """A NumPy unary ufunc: `impl` gets `x` already in the compute dtype."""
    def ufunc(x: Any, /, out: None = None, *, where: bool = True, dtype: Any = None) -> Any:
        check_call(name, out, where)
        x = asarray_like(x, name)
        if dtype is not None:
            x = cast(x, dtypes.canonicalize(dtype), fname=name)
        dt = dtype_of(x)
        check_kind(name, dt, kinds, x)
        work = compute(dt)
        x = cast(x, _widen(work), weak=is_weak(x), fname=name)
        return as_result(_narrow(impl(x), work))
    return publish(ufunc, name, doc)


def binary(name: str, impl: Callable[[Any, Any], Any], kinds: str, compute: DtypeRule,
           doc: str, full: bool = True) -> Callable[..., Any]:
    """A NumPy binary ufunc: promote, pick the compute dtype, broadcast, `impl`.

    `full=False` leaves 0-d operands unbroadcast (for impls that are one op,
    which broadcasts scalars itself); composite impls get equal shapes.
    """
    def ufunc(x1: Any, x2: Any, /, out: None = None, *, where: bool = True,
              dtype: Any = None) -> Any:
        check_call(name, out, where)
        a, b = promote(x1, x2, fname=name, dtype=dtype) if dtype is not None else \
            (asarray_like(x1, name), asarray_like(x2, name))
        dt, weak = result_dtype(a, b, fname=name)
        check_kind(name, dt, kinds, a, b)
        # Float-only loops take each input as it is (a Python int meets the float loop
        # directly, so uint8 with -1 is fine); the others compute in the promoted dtype.
        work = float_loop(a, b, dt) if compute is float_of else compute(dt)
        if work != _widen(work):  # float16: round the inputs to it before widening
            a, b = (cast(v, work, weak=weak, fname=name) for v in (a, b))
        a, b = (cast(v, _widen(work), weak=weak, fname=name) for v in (a, b))
        a, b = broadcast_arrays(a, b, fname=name, keep_scalars=not full)
        return as_result(_narrow(impl(a, b), work))
    return publish(ufunc, name, doc)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """ops.select with NumPy broadcasting; Python scalars take the arrays' dtype."""
    on_true, on_false = promote(on_true, on_false, fname="where")
    return ops.select(*broadcast_arrays(pred, on_true, on_false, fname="where"))


def truth(x: Any) -> Any:
    """`x != 0` as bool (the argument of the logical functions)."""
    if dtypes.is_python_scalar(x):
        return bool(x)
    return x if dtype_of(x).kind == "b" else ops.ne(x, 0)


def false_like(x: Any) -> Any:
    return constant(False, np.shape(x), dtypes.bool_)


def true_like(x: Any) -> Any:
    return constant(True, np.shape(x), dtypes.bool_)


def is_complex(x: Any) -> bool:
    return dtype_of(x).kind == "c"


def signbit_of(x: Any) -> Any:
    """True where the sign bit is set: negative numbers, -0.0, -inf and -NaN."""
    kind = dtypes.kind(dtype_of(x))
    if kind == "f":
        # The float total order puts exactly the sign-bit values below +0.0.
        return ops.lt(x, 0.0, total_order=True)
    if kind == "i":
        return ops.lt(x, 0)
    return false_like(x)
