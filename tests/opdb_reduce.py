"""Op-table cases for `reduce` (XLA's Reduce)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

# The seeds' 3-D operand: dims [4,2,3], values 1..6 replicated along dim 0.
A = np.array([[[1, 2, 3], [4, 5, 6]]] * 4, np.float32)
R = np.random.default_rng(4)
X = R.standard_normal((3, 4, 5)).astype(np.float32)
I32 = R.integers(-50, 50, (4, 6)).astype(np.int32)
B = R.random((3, 5)) < 0.6


def _sum(dims, init=0.0):
    return lambda x: ops.reduce(x, init, ops.add, dims)


def _argmax(m, am, v, i):
    """The seed's f(max, argmax, value, index): (value, index) if value >= max."""
    take = ops.ge(v, m)
    return ops.select(take, v, m), ops.select(take, i, am)


def _argmax_case(v):
    k = ops.iota(np.int32, v.shape, 0)
    return tuple(ops.reduce((v, k), (-np.inf, 0), _argmax, [0]))


def _min_max(lo, hi, x, y):
    """A 2-operand reduction that is not one ufunc: running (min of x, max of y)."""
    return ops.min(lo, x), ops.max(hi, y)


def _sum_of_squares(acc, x):
    return ops.add(acc, ops.mul(x, x))


def _add_reshaped(acc, x):
    # reshape is not element-wise: forces the per-position fold of the reference
    return ops.reshape(ops.add(acc, x), ())


CASES: list[OpCase] = [
    # Golden: the seeds' Reduce examples (add, init 0).
    OpCase("reduce:seed_dim0", _sum([0]), (A,),
           expected=np.array([[4, 8, 12], [16, 20, 24]], np.float32)),
    OpCase("reduce:seed_dim2", _sum([2]), (A,),
           expected=np.array([[6, 15]] * 4, np.float32)),
    OpCase("reduce:seed_dims01", _sum([0, 1]), (A,), expected=np.array([20, 28, 36], np.float32)),
    OpCase("reduce:seed_dims012", _sum([0, 1, 2]), (A,), expected=np.float32(84)),
    # Golden: variadic argmax, sequential fold with >= (ties -> last index).
    OpCase("reduce:seed_argmax", _argmax_case, (np.array([3., 7., 7., 1.], np.float32),),
           expected=(np.float32(7), np.int32(2)), ops=("reduce", "iota", "compare", "select")),
    # Non-golden samples.
    OpCase("reduce:sum_unsorted_dims", _sum([2, 0]), (X,), rtol=1e-5),
    OpCase("reduce:sum_no_dims", _sum([]), (X,)),
    OpCase("reduce:sum_empty_axis", _sum([0], 1.5), (np.zeros((0, 3), np.float32),),
           expected=np.full(3, 1.5, np.float32)),
    OpCase("reduce:max_nan_propagates", lambda x: ops.reduce(x, -np.inf, ops.max, [1]),
           (np.array([[1., np.nan, 3.], [4., 5., 6.]]),), expected=np.array([np.nan, 6.])),
    OpCase("reduce:min_int32", lambda x: ops.reduce(x, np.int32(2**31 - 1), ops.min, [0]),
           (I32,), expected=I32.min(0)),
    OpCase("reduce:mul_int32_wraps", lambda x: ops.reduce(x, 1, ops.mul, [0, 1]),
           (np.full((4, 8), 7, np.int32),),
           expected=np.multiply.reduce(np.full(32, 7, np.int32), dtype=np.int32)),
    OpCase("reduce:and_bool", lambda x: ops.reduce(x, True, ops.bitwise_and, [1]), (B,),
           expected=B.all(1), ops=("reduce", "bitwise_and")),
    OpCase("reduce:or_bool", lambda x: ops.reduce(x, False, ops.bitwise_or, [0]), (B,),
           expected=B.any(0), ops=("reduce", "bitwise_or")),
    OpCase("reduce:or_int", lambda x: ops.reduce(x, 0, ops.bitwise_or, [1]),
           (np.array([[1, 2, 4], [8, 8, 1]], np.uint8),), expected=np.array([7, 9], np.uint8)),
    OpCase("reduce:xor_bool", lambda x: ops.reduce(x, False, ops.bitwise_xor, [1]), (B,),
           expected=B.sum(1) % 2 == 1, ops=("reduce", "bitwise_xor")),
    OpCase("reduce:ne_bool_fold", lambda x: ops.reduce(x, False, ops.ne, [0]), (B,),
           expected=B.sum(0) % 2 == 1, ops=("reduce", "compare")),
    OpCase("reduce:add_complex", _sum([1]),
           ((X[0] + 1j * X[1]).astype(np.complex64),), rtol=1e-5),
    OpCase("reduce:sum_of_squares_fold", lambda x: ops.reduce(x, 0.0, _sum_of_squares, [0, 2]),
           (X.astype(np.float64),), expected=(X.astype(np.float64) ** 2).sum((0, 2)),
           rtol=1e-12),
    OpCase("reduce:per_position_fold", lambda x: ops.reduce(x, 0, _add_reshaped, [1]),
           (I32,), expected=I32.sum(1), ops=("reduce", "reshape")),
    OpCase("reduce:variadic_min_max",
           lambda x, y: tuple(ops.reduce([x, y], [np.inf, -np.inf], _min_max, [0])),
           (X[0], X[1]), expected=(X[0].min(0), X[1].max(0))),
]
