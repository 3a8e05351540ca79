"""Op-table cases for the indexing ops (XLA's DynamicSlice /
DynamicUpdateSlice, Gather / Scatter)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

GDN = ops.GatherDimensionNumbers
SDN = ops.ScatterDimensionNumbers

A = np.array([0.0, 1.0, 2.0, 3.0, 4.0], np.float32)
B = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]], np.float32)
U2 = np.array([[12.0, 13.0], [14.0, 15.0], [16.0, 17.0]], np.float32)
R = np.random.default_rng(7)
OP = R.standard_normal((16, 11)).astype(np.float32)      # the seeds' [16,11] operand
IDX52 = np.stack([R.integers(0, 9, 5), R.integers(0, 6, 5)], axis=1)         # S64[5,2]
IDX452 = np.stack([R.integers(0, 9, (4, 5)), R.integers(0, 6, (4, 5))], axis=-1)
IDX451 = R.integers(0, 16, (4, 5, 1))
X3 = R.standard_normal((3, 4, 5)).astype(np.float32)
I32 = R.integers(-20, 20, (6, 4)).astype(np.int32)

# Seeds' scatter test vectors: operand [0]*5, indices [[1],[3],[1]], updates [10,20,5].
Z5 = np.zeros(5, np.int32)
SIDX = np.array([[1], [3], [1]])
SUPD = np.array([10, 20, 5], np.int32)
POINT = SDN(update_window_dims=(), inserted_window_dims=(0,),
            scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
ROWS = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
           scatter_dims_to_operand_dims=(0,), index_vector_dim=1)


def _windows(operand, idx, sizes):
    """Informal-model oracle: out[G..., O0, O1] = operand[X + O0, Y + O1]."""
    out = np.empty(idx.shape[:-1] + tuple(sizes), operand.dtype)
    for g in np.ndindex(*idx.shape[:-1]):
        x, y = idx[g]
        out[g] = operand[x:x + sizes[0], y:y + sizes[1]]
    return out


def _ds(starts, sizes):
    return lambda x: ops.dynamic_slice(x, starts, sizes)


def _dus(starts):
    return lambda x, u: ops.dynamic_update_slice(x, u, starts)


def _gather(dn, sizes):
    return lambda x, i: ops.gather(x, i, dn, sizes)


def _scatter(comp, dn):
    return lambda x, i, u: ops.scatter(x, i, u, comp, dn)


def _twice_minus(cur, upd):
    """Non-commutative: the seeds' current-first, update-second argument order matters."""
    return ops.sub(ops.mul(cur, 2), upd)


def _via_dynamic_slice(cur, upd):
    # dynamic_slice is not element-wise: forces the reference's one-by-one path
    return ops.add(cur, ops.dynamic_slice(upd, [], []))


def _variadic(x, y, i, u, v):
    def comp(c0, c1, u0, u1):
        return ops.add(c0, u0), ops.max(c1, u1)
    return ops.scatter((x, y), i, (u, v), comp, POINT)


CASES: list[OpCase] = [
    # Golden: DynamicSlice seed examples and the clamping vectors.
    OpCase("dynamic_slice:seed_1d", _ds([2], [2]), (A,), expected=np.float32([2, 3])),
    OpCase("dynamic_slice:seed_2d", _ds([2, 1], [2, 2]), (B,),
           expected=np.float32([[7, 8], [10, 11]])),
    OpCase("dynamic_slice:clamp_high", _ds([4], [2]), (A,), expected=np.float32([3, 4])),
    OpCase("dynamic_slice:clamp_low", _ds([-3], [2]), (A,), expected=np.float32([0, 1])),
    # Golden: DynamicUpdateSlice seed examples and the clamping vector.
    OpCase("dynamic_update_slice:seed_1d", _dus([2]), (A, np.float32([5, 6])),
           expected=np.float32([0, 1, 5, 6, 4])),
    OpCase("dynamic_update_slice:seed_2d", _dus([1, 1]), (B, U2),
           expected=np.float32([[0, 1, 2], [3, 12, 13], [6, 14, 15], [9, 16, 17]])),
    OpCase("dynamic_update_slice:clamp", _dus([4]), (A, np.float32([5, 6])),
           expected=np.float32([0, 1, 2, 5, 6])),
    # Golden: the Gather informal examples (shapes from the seed, values from its rule).
    OpCase("gather:seed_batch_dynamic_slice",
           _gather(GDN((1, 2), (), (0, 1), 1), (8, 6)), (OP, IDX52),
           expected=_windows(OP, IDX52, (8, 6))),
    OpCase("gather:seed_two_batch_dims",
           _gather(GDN((2, 3), (), (0, 1), 2), (8, 6)), (OP, IDX452),
           expected=_windows(OP, IDX452, (8, 6))),
    OpCase("gather:seed_gather_nd_rows",
           _gather(GDN((2,), (0,), (0,), 2), (1, 11)), (OP, IDX451),
           expected=OP[IDX451[..., 0]]),
    # Golden: the Scatter test vectors (add; an out-of-bounds index leaves the operand).
    OpCase("scatter:seed_add", _scatter(ops.add, POINT), (Z5, SIDX, SUPD),
           expected=np.int32([0, 15, 0, 20, 0])),
    OpCase("scatter:seed_out_of_bounds", _scatter(ops.add, POINT),
           (Z5, np.array([[7]]), np.int32([1])), expected=Z5),
    # Ours: replace applies in update order, so the last duplicate wins (seed: either).
    OpCase("scatter:replace_last_wins", _scatter(None, POINT), (Z5, SIDX, SUPD),
           expected=np.int32([0, 5, 0, 20, 0])),
    OpCase("scatter:non_commutative_order", _scatter(_twice_minus, POINT), (Z5, SIDX, SUPD),
           expected=np.int32([0, -25, 0, -20, 0])),

    # Non-golden samples.
    OpCase("dynamic_slice:traced_starts",
           lambda x, i, j: ops.dynamic_slice(x, [i, j, 1], (2, 3, 2)),
           (X3, np.int32(2), np.int32(-1))),
    OpCase("dynamic_slice:mixed_start_kinds",
           lambda x, i: ops.dynamic_slice(x, [i, 3], (2, 2)), (I32, np.int8(5))),
    OpCase("dynamic_slice:zero_size", _ds([1, 9], [0, 4]), (I32,)),
    OpCase("dynamic_slice:uint64_huge_start", _ds([np.uint64(2 ** 64 - 1)], [2]), (A,)),
    OpCase("dynamic_slice:scalar", _ds([], []), (np.float64(3.5),)),
    OpCase("dynamic_update_slice:traced_start",
           lambda x, u, i: ops.dynamic_update_slice(x, u, [i, 0]),
           (I32, np.ones((2, 4), np.int32), np.int64(9))),
    OpCase("dynamic_update_slice:python_scalar_update",
           lambda x: ops.dynamic_update_slice(x, 7.0, []), (np.float32(1),)),
    OpCase("gather:take_axis1", _gather(GDN((0, 2), (1,), (1,), 1), (3, 1, 5)),
           (X3, np.array([3, 0, 9, -4]))),
    OpCase("gather:pointwise_2d", _gather(GDN((), (0, 1), (0, 1), 1), (1, 1)),
           (I32, np.array([[0, 1], [5, 3], [2, 2]], np.int8))),
    OpCase("gather:index_vector_dim_first", _gather(GDN((1, 2), (0,), (0, 1), 0), (1, 2, 5)),
           (X3, np.array([[0, 2, 1], [3, 0, 2]]))),
    OpCase("gather:batching_dims",
           _gather(GDN((2,), (1,), (1,), 2, operand_batching_dims=(0,),
                       start_indices_batching_dims=(0,)), (1, 1, 5)),
           (X3, np.array([[[0], [3]], [[1], [1]], [[2], [0]]]))),
    OpCase("gather:empty_batch", _gather(GDN((1,), (0,), (0,), 1), (1, 4)),
           (I32, np.zeros((0, 1), np.int32))),
    OpCase("gather:uint64_indices", _gather(GDN((), (0,), (0,), 1), (1,)),
           (A, np.array([[2 ** 64 - 1], [1]], np.uint64))),
    OpCase("gather:scalar_operand", _gather(GDN((), (), (), 1), ()),
           (np.float32(3), np.zeros((4, 0), np.int32))),
    OpCase("scatter:scalar_operand", _scatter(_twice_minus, SDN((), (), (), 1)),
           (np.int32(3), np.zeros((3, 0), np.int32), np.int32([1, 2, 3]))),
    OpCase("scatter:add_rows_window", _scatter(ops.add, ROWS),
           (I32, np.array([[0], [5], [0], [6]]), np.ones((4, 4), np.int32))),
    OpCase("scatter:partial_window_skipped",
           _scatter(ops.add, SDN((1,), (0,), (0, 1), 1)),
           (I32, np.array([[0, 1], [4, 2], [2, 3]]), np.ones((3, 2), np.int32))),
    OpCase("scatter:mul", _scatter(ops.mul, POINT), (A, SIDX, np.float32([2, 3, 4]))),
    OpCase("scatter:min", _scatter(ops.min, POINT), (A, SIDX, np.float32([2, 3, -4]))),
    OpCase("scatter:max", _scatter(ops.max, POINT), (A, SIDX, np.float32([2, 3, -4]))),
    OpCase("scatter:bool_or", _scatter(ops.bitwise_or, POINT),
           (np.zeros(5, bool), SIDX, np.array([True, False, False])),
           ops=("scatter", "bitwise_or")),
    OpCase("scatter:one_by_one", _scatter(_via_dynamic_slice, POINT), (A, SIDX, A[:3]),
           ops=("scatter", "add", "dynamic_slice")),
    OpCase("scatter:variadic", _variadic, (A, I32[:5, 0].copy(), SIDX, A[:3],
                                            np.int32([3, -1, 9]))),
    OpCase("scatter:batching_dims",
           _scatter(ops.add, SDN((), (1,), (1,), 2, input_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))),
           (I32[:3], np.array([[[0], [3]], [[1], [1]], [[2], [7]]]),
            np.arange(6, dtype=np.int32).reshape(3, 2))),
    OpCase("scatter_add:rows", lambda x, i, u: ops.scatter_add(x, i, u, ROWS),
           (I32, np.array([[1], [1]]), np.ones((2, 4), np.int32)), ops=("scatter", "add")),
    OpCase("scatter_mul:points", lambda x, i, u: ops.scatter_mul(x, i, u, POINT),
           (A, SIDX, np.float32([2, 3, 4])), ops=("scatter", "mul")),
    OpCase("scatter_min:points", lambda x, i, u: ops.scatter_min(x, i, u, POINT),
           (A, SIDX, np.float32([2, 3, -4])), ops=("scatter", "min")),
    OpCase("scatter_max:points", lambda x, i, u: ops.scatter_max(x, i, u, POINT),
           (A, SIDX, np.float32([2, 3, -4])), ops=("scatter", "max")),
]
