"""Op-table cases for tuples, composite, custom_call and optimization_barrier
(XLA's Tuple / GetTupleElement / CompositeCall / CustomCall /
OptimizationBarrier)."""

from __future__ import annotations

import numpy as np

import tracer as tr
from tests.op_db import OpCase
from tracer import ops

V = np.arange(10, dtype=np.float32)
S = np.int32(5)
X = np.array([1.0, 2.0], np.float32)
Y = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]], np.float32)
R = np.random.default_rng(3).standard_normal((3, 4))


def seed_myfunc(z, x, y):
    """The seeds' CustomCall example: z[0][0] = x[1] + y[1][0]."""
    z[0, 0] = x[1] + y[1, 0]


def row_sums_and_max(sums, peak, x):
    """Two results: per-row sums and the overall maximum."""
    peak[()] = x[0, 0]
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            sums[i] += x[i, j]
            peak[()] = max(peak[()], x[i, j])


tr.register_custom_call("seed_myfunc", seed_myfunc)
tr.register_custom_call("row_sums_and_max", row_sums_and_max)
SEED_OUT = np.zeros((3, 3), np.float32)
SEED_OUT[0, 0] = 42.0


def _tuple_example(v, s):
    t = ops.tuple(v, s)
    return [ops.get_tuple_element(t, 1), ops.get_tuple_element(t, 0)]


CASES = [
    OpCase("tuple:seed", _tuple_example, (V, S), expected=[S, V], ops=()),
    OpCase("composite:square", lambda x: ops.composite("my.square", lambda a: a * a, x,
                                                       attributes={"n": 1}, version=1),
           (R,), expected=R * R),
    OpCase("composite:two_outputs", lambda x, y: list(ops.composite(
        "my.pair", lambda a, b: (ops.add(a, b), ops.mul(a, b)), x, y)), (R, 2 * R),
        expected=[3 * R, 2 * R * R]),
    OpCase("custom_call:seed", lambda x, y: ops.custom_call(
        "seed_myfunc", [x, y], tr.ShapedArray((3, 3), np.float32)), (X, Y), expected=SEED_OUT),
    OpCase("custom_call:two_results", lambda x: list(ops.custom_call(
        "row_sums_and_max", [x], [tr.ShapedArray((3,), np.float64),
                                  tr.ShapedArray((), np.float64)])),
           (R,), expected=[R.sum(1), R.max()]),
    OpCase("optimization_barrier:pair", lambda x, y: list(ops.optimization_barrier(
        (ops.mul(x, x), ops.add(y, y)))), (R, R), expected=[R * R, 2 * R]),
]
