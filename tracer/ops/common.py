"""Helpers shared by the op families' public wrappers: static-param parsing,
aval comparison for sub-computations, and errors raised before `bind`."""

from __future__ import annotations

import inspect
import operator
from typing import Any, Callable, Sequence

import numpy as np

from ..core import Graph, ShapedArray, aval_of, user_source
from ..errors import (ConcretizationError, DTypeError, ParamError, ShapeError, TracerError,
                      TracerTypeError)
from ..tracing import Tracer, is_value, trace_flat


def wrapper_error(cls: type[TracerError], op: str, msg: str) -> TracerError:
    """An error raised by a public wrapper before `bind`: op name, message, user line."""
    src = user_source()
    err = cls(f"{op}: {msg}" + (f"\n  at {src}" if src else ""))
    err._tracer_context = True  # type: ignore[attr-defined]  # bind must not re-wrap it
    return err


def check_arity(op: str, what: str, fun: Any, n: int) -> None:
    """TracerTypeError naming `op` unless `fun` is callable with `n` positional arguments
    (checked before tracing, so a TypeError raised inside `fun` is not mistaken for it)."""
    if not callable(fun):
        raise wrapper_error(TracerTypeError, op, f"{what} must be a function, got "
                            f"{type(fun).__name__} {fun!r:.40}")
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    try:
        sig.bind(*range(n))
    except TypeError as e:
        name = getattr(fun, "__name__", type(fun).__name__)
        raise wrapper_error(TracerTypeError, op, f"{what} is called with {n} positional "
                            f"argument(s), but {name}{sig} does not accept that: {e}") from None


def check_results(op: str, what: str, leaves: Sequence[Any]) -> None:
    """TracerTypeError naming `op` unless every leaf a user function returned is an
    array, a scalar or a traced value (not a string, None or another object)."""
    for i, x in enumerate(leaves):
        if not is_value(x):
            raise wrapper_error(TracerTypeError, op, f"{what} returned a {type(x).__name__} "
                                f"({x!r:.40}) as result leaf {i}; return arrays or scalars")


def operand_aval(x: Any) -> ShapedArray:
    """The abstract value of a wrapper's operand (tracer, array or Python scalar)."""
    return x.aval if isinstance(x, Tracer) else aval_of(x)


def static_ints(op: str, name: str, value: Any) -> tuple[int, ...]:
    """A static sequence param as a tuple of Python ints; ParamError otherwise."""
    try:
        items = tuple(value)
        if any(isinstance(v, (bool, np.bool_)) for v in items):
            raise TypeError
        return tuple(operator.index(v) for v in items)
    except ConcretizationError:
        raise  # a traced value used as a static param: its own message says what to do
    except TypeError:
        raise wrapper_error(ParamError, op, f"{name} must be a sequence of static ints, "
                            f"got {value!r}") from None


def static_int(op: str, name: str, value: Any) -> int:
    """A static int param; ParamError for anything else (bools included)."""
    if isinstance(value, (bool, np.bool_)):
        raise wrapper_error(ParamError, op, f"{name} must be a static int, got {value!r}")
    try:
        return operator.index(value)
    except ConcretizationError:
        raise
    except TypeError:
        raise wrapper_error(ParamError, op, f"{name} must be a static int, "
                            f"got {value!r}") from None


def _same(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def check_avals(what: str, expected: Sequence[ShapedArray], got: Sequence[ShapedArray]) -> None:
    """ShapeError / DTypeError unless `got` matches `expected` (weak types ignored)."""
    err = aval_mismatch(what, expected, got)
    if err is not None:
        raise err


def aval_mismatch(what: str, expected: Sequence[ShapedArray],
                  got: Sequence[ShapedArray]) -> TracerError | None:
    """The error `check_avals` would raise (ShapeError if any shape differs), or None."""
    if len(expected) == len(got) and all(map(_same, expected, got)):
        return None
    fmt = lambda avals: "(" + ", ".join(map(str, avals)) + ")"  # noqa: E731
    msg = f"{what}: expected {fmt(expected)} but got {fmt(got)}"
    if len(expected) != len(got) or any(a.shape != b.shape for a, b in
                                        zip(expected, got, strict=True)):
        return ShapeError(msg)
    return DTypeError(msg)


def trace_scalar_computation(op: str, fun: Callable[..., Any], scalars: list[ShapedArray],
                             what: str = "the computation") -> Graph:
    """Trace a scalar computation of 2N scalars (N accumulators/currents, then N
    inputs/updates) returning N values, as reduce and scatter take them. It must be
    closed: traced values of an enclosing function cannot reach an XLA computation."""
    n = len(scalars)
    check_arity(op, what, fun, 2 * n)

    def flat(*args: Any) -> list[Any]:
        out = fun(*args)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != n:
            raise wrapper_error(TracerTypeError, op, f"{what} must return {n} value(s) "
                                f"(one per operand), got {len(outs)}")
        return outs

    graph, captured = trace_flat(flat, scalars * 2, name=f"{op}_computation")
    if captured:
        raise wrapper_error(
            TracerTypeError, op, f"{what} must be closed: it uses traced values of an "
            f"enclosing function ({', '.join(str(t.aval) for t in captured)}); pass them "
            f"as operands instead")
    return graph
