"""What op rules for the transformations share: symbolic zeros, undefined primals,
and helpers to define JVP / transpose / batching rules in a line.

Rule signatures (the contract between op records and `tracer.transforms`):

- `op.jvp(primals, tangents, **params) -> (primal_out, tangent_out)`
  `tangents[i]` is an array or `Zero(aval)`; the tangent output must be built
  from the tangents with linear ops only (coefficients may depend on primals),
  so the tangent computation can be transposed. For `multiple_results` ops both
  outputs are lists. A tangent output may be `Zero`.
- `op.transpose(ct, *args, **params) -> list`  (linear ops only)
  `args[i]` is a primal value or `UndefinedPrimal(aval)` for a linear input;
  `ct` is the output cotangent (a list for multiple results; never all Zero).
  Returns one cotangent per arg: an array, `Zero`, or None for defined args.
- `op.batch(args, dims, **params) -> (out, out_dim)`
  `dims[i]` is the batched axis of `args[i]` or `None` (at least one is not).
  For `multiple_results` ops `out` and `out_dim` are lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..core import ShapedArray
from ..tracing import Tracer
from .registry import Op


@dataclass(frozen=True)
class Zero:
    """A symbolic zero tangent or cotangent of the given abstract value."""

    aval: ShapedArray


@dataclass(frozen=True)
class UndefinedPrimal:
    """A linear input of a transpose rule: only its aval is known."""

    aval: ShapedArray


def aval_of_value(x: Any) -> ShapedArray:
    if isinstance(x, (Zero, UndefinedPrimal)):
        return x.aval
    if isinstance(x, Tracer):
        return x.aval
    arr = np.asarray(x)
    return ShapedArray(arr.shape, arr.dtype)


def zeros_like_aval(aval: ShapedArray) -> Any:
    """A concrete (or traced, inside a trace) array of zeros."""
    from .shape import broadcast_in_dim  # the shape family defines broadcast_in_dim
    return broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


def instantiate(t: Any) -> Any:
    return zeros_like_aval(t.aval) if isinstance(t, Zero) else t


def add_tangents(a: Any, b: Any) -> Any:
    from .elementwise import add
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    return add(a, b)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of floats/complex have the same aval; ints and bools have float0-like zeros."""
    return ShapedArray(aval.shape, aval.dtype)


def defjvp(op: Op, *rules: Callable[..., Any] | None) -> None:
    """JVP from one rule per argument: `rule(t, *primals, **params) -> contribution`.

    `None` marks an argument the output does not depend on differentiably.
    """
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
        out = op.bind(*primals, **params)
        total: Any = Zero(aval_of_value(out))
        for rule, t in zip(rules, tangents, strict=True):
            if rule is not None and not isinstance(t, Zero):
                total = add_tangents(total, rule(t, *primals, **params))
        return out, total

    op.jvp = jvp


def defjvp_zero(op: Op) -> None:
    """Outputs with zero derivative everywhere they have one (comparisons, floor, ...)."""
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
        out = op.bind(*primals, **params)
        if op.multiple_results:
            return out, [Zero(aval_of_value(o)) for o in out]
        return out, Zero(aval_of_value(out))

    op.jvp = jvp


def deflinear(op: Op, transpose: Callable[..., list[Any]]) -> None:
    """A op linear in all its array arguments jointly: jvp applies the op to the
    tangents (zeros instantiated); `transpose(ct, *args, **params)` is its transpose."""
    def jvp(primals: Sequence[Any], tangents: Sequence[Any], **params: Any) -> tuple[Any, Any]:
        out = op.bind(*primals, **params)
        if all(isinstance(t, Zero) for t in tangents):
            return out, Zero(aval_of_value(out))
        return out, op.bind(*map(instantiate, tangents), **params)

    op.jvp = jvp
    op.transpose = transpose
