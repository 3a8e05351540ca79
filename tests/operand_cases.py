"""Op cases for operand positions no op-table case reaches —
operands the table passes as Python scalars or literals (start indices, init values,
sigma) and multi-operand forms of the call-like ops (custom_vjp_call, checkpoint, call,
while, scan, conditional with float consts, carries and xs). Shared by
tests/test_vmap_operands.py (loop-and-stack) and tests/test_ad_operands.py (finite
differences through tests/ad_table_support.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

import tracer.numpy as tnp
from tests.op_db import OpCase
from tracer import ops
from tracer.transforms import checkpoint, custom_vjp

X234 = np.random.default_rng(0).uniform(-1, 1, (2, 3, 4))
X3 = np.array([0.5, -1.25, 2.0])
Y3 = np.array([1.5, 0.75, -0.5])
I = np.int32

_sin_times = custom_vjp(lambda x, y: ops.mul(ops.sin(x), y))
_sin_times.defvjp(lambda x, y: (_sin_times(x, y), (x, y)),
                  lambda res, g: (ops.mul(ops.mul(g, ops.cos(res[0])), res[1]),
                                  ops.mul(g, ops.sin(res[0]))))


def _min_max(a: Any, b: Any, c: Any, d: Any) -> tuple[Any, Any]:
    return ops.min(a, c), ops.max(b, d)


def _sum_mul(a: Any, b: Any, c: Any, d: Any) -> tuple[Any, Any]:
    return ops.add(a, c), ops.mul(b, d)


def _scan(x: Any, y: Any, w: Any) -> Any:
    """Float const (w, closed over), two float carries plus an int one, two float xs."""
    def body(c: Any, xs: Any) -> Any:
        a, b, k = c
        xi, yi = xs
        return (a * tnp.cos(xi) + w * b, b + tnp.sin(a * yi), k + 1), a * b + xi * w
    (a, b, k), ys = ops.scan(body, (x[0], y[0], I(0)), (x, y))
    return a, b, k, ys


def _while(x: Any, y: Any, w: Any) -> Any:
    """A while_loop with a float const, two float carries and an int counter."""
    def body(s: Any) -> Any:
        k, a, b = s
        return k + 1, a * 0.5 + tnp.sin(b) * w, b * tnp.cos(a)
    return ops.while_loop(lambda s: s[0] < 3, body, (I(0), x, y))


def _cond(p: Any, x: Any, y: Any, w: Any) -> Any:
    return ops.cond(p > 0, lambda a, b: a * b + w, lambda a, b: tnp.sin(a) - b * w, x, y)


CASES: list[OpCase] = [
    OpCase("dynamic_slice:array_starts_3d",
           lambda x, i, j, k: ops.dynamic_slice(x, [i, j, k], [1, 2, 2]),
           (X234, I(1), I(0), I(2))),
    OpCase("dynamic_update_slice:array_starts_3d",
           lambda x, u, i, j, k: ops.dynamic_update_slice(x, u, [i, j, k]),
           (X234, X234[:1, 1:, :2] * 3, I(1), I(0), I(2))),
    OpCase("dynamic_update_slice:scalar", lambda x, u: ops.dynamic_update_slice(x, u, []),
           (np.float64(1.5), np.float64(-2.0))),
    OpCase("reduce_window:variadic_array_inits",
           lambda x, y, lo, hi: tuple(ops.reduce_window([x, y], [lo, hi], _min_max, [1, 2, 2],
                                                        [1, 1, 1])),
           (X234, X234[::-1] * 2, np.float64(np.inf), np.float64(-np.inf))),
    OpCase("reduce:variadic_array_inits",
           lambda x, y, z, o: tuple(ops.reduce([x, y], [z, o], _sum_mul, [1])),
           (X234, X234 + 2, np.float64(0.0), np.float64(1.0))),
    OpCase("rng_normal:array_sigma", lambda mu, s: ops.rng_normal(mu, s, (3,)),
           (np.float64(0.5), np.float64(0.0))),
    OpCase("custom_vjp_call:two_operands", lambda x, y: _sin_times(x, y), (X3, Y3)),
    OpCase("checkpoint:three_operands_and_closure",
           lambda x, y, w: checkpoint(lambda a, b: tnp.sin(a * b) * w + a)(x, y),
           (X3, Y3, X3[::-1])),
    OpCase("scan:consts_carries_xs", _scan, (X3, Y3, np.float64(0.7))),
    OpCase("while:consts_and_carries", _while, (X3, Y3, np.float64(0.7))),
    OpCase("conditional:three_operands", _cond, (np.float64(0.3), X3, Y3, np.float64(1.2))),
]
