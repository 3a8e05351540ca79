"""Op-table cases for reduce_window, select_and_scatter and map
(XLA's operations)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

R = np.random.default_rng(11)
SEED_1D = np.float32([10000, 1000, 100, 10, 1])
F32_MAX = np.finfo(np.float32).max
X46 = R.standard_normal((4, 6)).astype(np.float32)           # the seeds' f32[4,6] operand
X4 = R.standard_normal((2, 3, 7, 6)).astype(np.float32)     # NCHW
X3 = R.standard_normal((3, 5, 4))
I32 = R.integers(-9, 9, (5, 6)).astype(np.int32)
B = R.random((4, 5)) < 0.5
TIES = np.float32([[1, 3, 3, 0], [3, 1, 0, 3], [2, 2, 2, 2]])


def _rw(init, comp, window, strides=None, padding="VALID", **kw):
    return lambda x: ops.reduce_window(x, init, comp, window, strides, padding, **kw)


def _argmax(m, am, v, i):
    """The seed's argmax computation: (value, index) if value >= max (ties: the last)."""
    take = ops.ge(v, m)
    return ops.select(take, v, m), ops.select(take, i, am)


def _argmax_pool(x):
    k = ops.iota(np.int32, x.shape, 1)
    return tuple(ops.reduce_window((x, k), (-np.inf, -1), _argmax, (1, 3), (1, 1)))


def _add_reshaped(acc, x):
    # reshape is not element-wise: forces the per-position fold of the reference
    return ops.reshape(ops.add(acc, x), ())


def _sas(select, window, strides, padding, scatter=ops.add, init=0.0, **kw):
    return lambda x, s: ops.select_and_scatter(x, select, window, strides, padding, s, init,
                                               scatter, **kw)


def _pool_grad(x):
    """Max-pool gradient as XLA writes it: ones scattered to each window's max."""
    out = ops.reduce_window(x, -np.inf, ops.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME")
    ones = ops.broadcast_in_dim(np.float32(1), out.shape, ())
    return ops.select_and_scatter(x, ops.ge, (1, 1, 3, 3), (1, 1, 2, 2), "SAME", ones, 0.0,
                                  ops.add)


def _ge_reshaped(a, b):
    return ops.reshape(ops.ge(a, b), ())


def _fma(a, b, c):
    return ops.add(ops.mul(a, b), c)


CASES: list[OpCase] = [
    # Golden: the seeds' ReduceWindow examples.
    OpCase("reduce_window:seed_min_valid", _rw(F32_MAX, ops.min, [3], [2]), (SEED_1D,),
           expected=np.float32([100, 1])),
    OpCase("reduce_window:seed_min_same", _rw(F32_MAX, ops.min, [3], [2], "SAME"), (SEED_1D,),
           expected=np.float32([1000, 10, 1])),
    OpCase("reduce_window:seed_2d_max", _rw(-np.inf, ops.max, [2, 3], [2, 3]), (X46,),
           expected=X46.reshape(2, 2, 2, 3).max(axis=(1, 3))),
    # Golden (ours): windows that overlap, base dilation holes and window dilation.
    OpCase("reduce_window:sum_overlapping", _rw(0.0, ops.add, [2], [1]),
           (np.float32([1, 2, 3, 4]),), expected=np.float32([3, 5, 7])),
    OpCase("reduce_window:base_dilation_holes_are_init",
           _rw(0.0, ops.add, [2], [1], base_dilation=[2]), (np.float32([1, 2, 3]),),
           expected=np.float32([1, 2, 2, 3])),
    OpCase("reduce_window:window_dilation", _rw(0.0, ops.add, [2], [1], window_dilation=[2]),
           (np.float32([1, 2, 3, 4]),), expected=np.float32([4, 6])),
    OpCase("reduce_window:padding_is_init", _rw(1.0, ops.add, [2], [2], [(1, 1)]),
           (np.float32([5, 6, 7]),), expected=np.float32([7, 14])),
    OpCase("reduce_window:seed_argmax_variadic", _argmax_pool, (TIES,),
           expected=(np.float32([[3, 3], [3, 3], [2, 2]]), np.int32([[2, 2], [0, 3], [2, 3]])),
           ops=("reduce_window", "iota", "compare", "select")),
    # Non-golden samples.
    OpCase("reduce_window:maxpool_nchw_same",
           _rw(-np.inf, ops.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME"), (X4,)),
    OpCase("reduce_window:avgpool_explicit_padding",
           _rw(0.0, ops.add, (1, 1, 2, 3), (1, 1, 2, 1), [(0, 0), (0, 0), (1, 0), (2, 1)]),
           (X4,), rtol=1e-5),
    OpCase("reduce_window:dilations_and_negative_padding",
           _rw(0.0, ops.add, (2, 2, 1), (1, 2, 1), [(1, 2), (-1, 1), (0, 0)],
               base_dilation=(2, 1, 1), window_dilation=(1, 2, 1)), (X3,), rtol=1e-12),
    OpCase("reduce_window:min_int32_same", _rw(np.int32(2**31 - 1), ops.min, (2, 3), (2, 2),
                                               "SAME"), (I32,)),
    OpCase("reduce_window:or_bool", _rw(False, ops.bitwise_or, (2, 2), (1, 2)), (B,),
           ops=("reduce_window", "bitwise_or")),
    OpCase("reduce_window:non_elementwise_computation",
           _rw(0.0, _add_reshaped, (2, 2), (1, 1), "SAME"), (I32.astype(np.float64),)),
    OpCase("reduce_window:max_float16_padded", _rw(-np.inf, ops.max, (2, 3), (2, 1), "SAME"),
           (X46.astype(np.float16),)),
    OpCase("reduce_window:sum_complex", _rw(0.0, ops.add, (2, 2), (1, 1), [(1, 0), (0, 1)]),
           (X46 + 1j * X46[::-1],), rtol=1e-6),
    OpCase("reduce_window:window_larger_than_operand", _rw(0.0, ops.add, (3, 2), (1, 1)),
           (np.ones((2, 5), np.float32),)),
    OpCase("reduce_window:empty_operand", _rw(0.0, ops.add, (1, 2), (1, 1), "SAME"),
           (np.zeros((0, 3), np.float32),)),
    OpCase("reduce_window:scalar", _rw(0.5, ops.add, (), ()), (np.float32(2.0),),
           expected=np.float32(2.5)),
    OpCase("reduce_window:traced_init",
           lambda x, i: ops.reduce_window(x, i, ops.max, (2, 2), (1, 2), "SAME"),
           (X46, np.float32(0.25))),
    # Golden: the seeds' SelectAndScatter examples.
    OpCase("select_and_scatter:seed", _sas(ops.ge, [2], [2], "VALID"),
           (np.float32([1, 9, 3, 9]), np.float32([2, 6])), expected=np.float32([0, 2, 0, 6])),
    OpCase("select_and_scatter:seed_overlapping", _sas(ops.ge, [2], [1], "VALID"),
           (np.float32([1, 9, 3]), np.float32([2, 6])), expected=np.float32([0, 8, 0])),
    # Golden (ours): ties go to the lexicographically first index with ge, last with gt.
    OpCase("select_and_scatter:ties_first_with_ge", _sas(ops.ge, [2, 2], [2, 2], "VALID"),
           (np.float32([[3, 3, 1, 1], [3, 3, 1, 1]]), np.float32([[1, 2]])),
           expected=np.float32([[1, 0, 2, 0], [0, 0, 0, 0]])),
    OpCase("select_and_scatter:ties_last_with_gt", _sas(ops.gt, [2, 2], [2, 2], "VALID"),
           (np.float32([[3, 3, 1, 1], [3, 3, 1, 1]]), np.float32([[1, 2]])),
           expected=np.float32([[0, 0, 0, 0], [0, 1, 0, 2]])),
    OpCase("select_and_scatter:padding_never_picked",
           _sas(ops.le, [3], [2], [(2, 1)], init=10.0),
           (np.float32([4, -1, 7]), np.float32([1, 2])), expected=np.float32([11, 12, 10])),
    # Non-golden samples.
    OpCase("select_and_scatter:maxpool_gradient", _pool_grad, (X4,),
           ops=("select_and_scatter", "reduce_window", "broadcast_in_dim")),
    OpCase("select_and_scatter:mul_scatter_int", _sas(ops.le, (2, 3), (1, 2), "SAME",
                                                      scatter=ops.mul, init=1),
           (I32, R.integers(1, 4, (5, 3)).astype(np.int32))),
    OpCase("select_and_scatter:non_elementwise_select",
           _sas(_ge_reshaped, (2, 2), (2, 1), [(1, 0), (0, 1)]),
           (X3[0], R.standard_normal((3, 4)))),
    OpCase("select_and_scatter:dilations",
           _sas(ops.ge, (2, 2), (1, 2), [(1, 1), (0, 1)], base_dilation=(2, 1),
                window_dilation=(1, 2)), (X46, R.standard_normal((8, 3)).astype(np.float32))),
    OpCase("select_and_scatter:float16", _sas(ops.ge, (2, 2), (1, 1), "SAME"),
           (X46.astype(np.float16), R.standard_normal((4, 6)).astype(np.float16)), rtol=1e-3),
    OpCase("select_and_scatter:traced_init",
           lambda x, s, i: ops.select_and_scatter(x, ops.ge, (2,), (1,), "SAME", s, i, ops.add),
           (X46[0], R.standard_normal(6).astype(np.float32), np.float32(0.5))),
    OpCase("select_and_scatter:scalar", _sas(ops.ge, (), (), "VALID"),
           (np.float32(3.0), np.float32(2.0)), expected=np.float32(2.0)),
    # Golden: the seeds' Map example shape, out = computation(op1, op2, op3) per element.
    OpCase("map:seed_three_operands", lambda a, b, c: ops.map(_fma, [a, b, c]),
           (np.float32([1, 2, 3]), np.float32([4, 5, 6]), np.float32([1, 1, 1])),
           expected=np.float32([5, 11, 19])),
    # Non-golden samples.
    OpCase("map:unary_2d", lambda x: ops.map(lambda a: ops.mul(a, ops.sin(a)), x), (X3,)),
    OpCase("map:new_element_type", lambda x, y: ops.map(ops.ge, [x, y]), (X3, X3.T.T * 0.5)),
    OpCase("map:two_results_mixed_dtypes",
           lambda x, k: ops.map(lambda a, i: (ops.mul(a, 2.0), ops.add(i, 1)), [x, k]),
           (X46, I32[:4])),
    OpCase("map:non_elementwise_computation",
           lambda x: ops.map(lambda a: ops.reshape(ops.exp(a), ()), [x]), (X46,)),
    OpCase("map:constant_computation", lambda x: ops.map(lambda a: 7.0, [x]), (X46,),
           expected=np.full((4, 6), 7, np.float32)),
    OpCase("map:float16", lambda x: ops.map(lambda a: ops.mul(a, ops.exp(a)), [x]),
           (X46.astype(np.float16),), rtol=1e-3),
    OpCase("map:scalar", lambda x: ops.map(lambda a: ops.neg(a), [x]), (np.float64(2.0),),
           expected=np.float64(-2.0)),
]
