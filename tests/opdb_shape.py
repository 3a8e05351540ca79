"""Op-table cases for the shape ops (XLA's shape operations)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

F32 = np.float32
R = np.random.default_rng(7)
X234 = R.standard_normal((2, 3, 4)).astype(F32)
I35 = R.integers(-9, 9, (3, 5)).astype(np.int32)

# The seeds' Collapse / Reshape operand.
V = np.array([[[10, 11, 12], [15, 16, 17]],
              [[20, 21, 22], [25, 26, 27]],
              [[30, 31, 32], [35, 36, 37]],
              [[40, 41, 42], [45, 46, 47]]], F32)
V_FLAT = np.array([10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27,
                   30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47], F32)
V120_FLAT = np.array([10, 20, 30, 40, 11, 21, 31, 41, 12, 22, 32, 42,
                      15, 25, 35, 45, 16, 26, 36, 46, 17, 27, 37, 47], F32)
SEED_A = np.array([0.0, 1.0, 2.0, 3.0, 4.0], F32)
SEED_B = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]], F32)
SEED_M = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0xa, 0xb]], np.int32)
I123 = np.array([1, 2, 3], np.int32)

BC = ("broadcast_in_dim",)
RS = ("reshape",)
TR_RS = ("transpose", "reshape")

GOLDEN: list[OpCase] = [
    OpCase("broadcast:seed_scalar", lambda x: ops.broadcast(x, [2, 3]), (F32(2.0),),
           expected=np.full((2, 3), 2.0, F32), ops=BC),
    OpCase("collapse:seed_012", lambda v: ops.collapse(v, [0, 1, 2]), (V,),
           expected=V_FLAT, ops=RS),
    # ERRATUM: the seeds print the [0,1] / [1,2] results swapped; the rule wins.
    OpCase("collapse:seed_01", lambda v: ops.collapse(v, [0, 1]), (V,),
           expected=V_FLAT.reshape(8, 3), ops=RS),
    OpCase("collapse:seed_12", lambda v: ops.collapse(v, [1, 2]), (V,),
           expected=V_FLAT.reshape(4, 6), ops=RS),
    OpCase("reshape:seed_012_24", lambda v: ops.reshape(v, [24], [0, 1, 2]), (V,),
           expected=V_FLAT),
    OpCase("reshape:seed_012_83", lambda v: ops.reshape(v, [8, 3], [0, 1, 2]), (V,),
           expected=V_FLAT.reshape(8, 3)),
    OpCase("reshape:seed_120_24", lambda v: ops.reshape(v, [24], [1, 2, 0]), (V,),
           expected=V120_FLAT, ops=TR_RS),
    OpCase("reshape:seed_120_83", lambda v: ops.reshape(v, [8, 3], [1, 2, 0]), (V,),
           expected=V120_FLAT.reshape(8, 3), ops=TR_RS),
    OpCase("reshape:seed_120_262", lambda v: ops.reshape(v, [2, 6, 2], [1, 2, 0]), (V,),
           expected=V120_FLAT.reshape(2, 6, 2), ops=TR_RS),
    OpCase("reshape:seed_to_scalar", lambda x: ops.reshape(x, [], [0, 1]),
           (np.array([[5]], F32),), expected=np.array(5, F32)),
    OpCase("reshape:seed_from_scalar", lambda x: ops.reshape(x, [1, 1], []),
           (np.array(5, F32),), expected=np.array([[5]], F32)),
    OpCase("concatenate:seed_1d", lambda a, b, c: ops.concatenate([a, b, c], 0),
           (np.array([2, 3], F32), np.array([4, 5], F32), np.array([6, 7], F32)),
           expected=np.array([2, 3, 4, 5, 6, 7], F32)),
    OpCase("concatenate:seed_2d", lambda a, b: ops.concatenate([a, b], 0),
           (np.array([[1, 2], [3, 4], [5, 6]], F32), np.array([[7, 8]], F32)),
           expected=np.array([[1, 2], [3, 4], [5, 6], [7, 8]], F32)),
    OpCase("pad:seed_interior", lambda x: ops.pad(x, 0, [(1, 2, 1)]), (I123,),
           expected=np.array([0, 1, 0, 2, 0, 3, 0, 0], np.int32)),
    OpCase("pad:seed_negative_low", lambda x: ops.pad(x, 0, [(-1, 0, 1)]), (I123,),
           expected=np.array([0, 2, 0, 3], np.int32)),
    OpCase("slice:seed_1d", lambda a: ops.slice(a, [2], [4]), (SEED_A,),
           expected=np.array([2.0, 3.0], F32)),
    OpCase("slice:seed_2d", lambda b: ops.slice(b, [2, 1], [4, 3]), (SEED_B,),
           expected=np.array([[7.0, 8.0], [10.0, 11.0]], F32)),
    OpCase("slice:seed_cpp_comment", lambda m: ops.slice(m, [1, 1], [2, 3]), (SEED_M,),
           expected=np.array([[5, 6]], np.int32)),
    OpCase("iota:seed_dim0", lambda: ops.iota(np.int32, (4, 8), 0), (),
           expected=np.repeat(np.arange(4, dtype=np.int32)[:, None], 8, axis=1)),
    OpCase("iota:seed_dim1", lambda: ops.iota(np.int32, (4, 8), 1), (),
           expected=np.tile(np.arange(8, dtype=np.int32), (4, 1))),
]


SAMPLES: list[OpCase] = [
    OpCase("broadcast_in_dim:middle", lambda x: ops.broadcast_in_dim(x, (3, 2, 5), (0, 2)),
           (R.standard_normal((3, 5)).astype(F32),)),
    OpCase("broadcast_in_dim:expand_ones", lambda x: ops.broadcast_in_dim(x, (4, 3), (0, 1)),
           (np.array([[1, 2, 3]], np.int32),),
           expected=np.array([[1, 2, 3]] * 4, np.int32)),
    OpCase("broadcast_in_dim:bool_to_empty", lambda x: ops.broadcast_in_dim(x, (0, 2), (1,)),
           (np.array([True, False]),)),
    OpCase("broadcast:python_scalar", lambda: ops.broadcast(1.5, [2]), (),
           ops=BC),
    OpCase("reshape:int_and_empty", lambda x: ops.reshape(ops.reshape(x, (0, 4)), (2, 0, 2)),
           (np.zeros((0, 4), np.int64),)),
    OpCase("collapse:empty_dims_is_noop", lambda x: ops.collapse(x, []), (X234,),
           expected=X234, ops=RS),
    OpCase("transpose:3d", lambda x: ops.transpose(x, (2, 0, 1)), (X234,),
           expected=np.transpose(X234, (2, 0, 1))),
    OpCase("transpose:scalar", lambda x: ops.transpose(x, ()), (np.array(3.0, F32),)),
    OpCase("rev:two_dims", lambda x: ops.rev(x, [0, 2]), (X234,),
           expected=X234[::-1, :, ::-1]),
    OpCase("rev:no_dims_c64", lambda x: ops.rev(x, []),
           (np.array([1 + 2j, 3j], np.complex64),)),
    OpCase("slice:strided", lambda x: ops.slice(x, [0, 1], [3, 5], [2, 3]), (I35,),
           expected=I35[0:3:2, 1:5:3]),
    OpCase("slice:empty", lambda x: ops.slice(x, [1, 2], [1, 5]), (I35,),
           expected=np.zeros((0, 3), np.int32)),
    OpCase("concatenate:dim1_u8", lambda a, b: ops.concatenate((a, b), 1),
           (np.ones((2, 1), np.uint8), np.zeros((2, 3), np.uint8)),
           expected=np.array([[1, 0, 0, 0]] * 2, np.uint8)),
    OpCase("concatenate:single", lambda a: ops.concatenate([a], 0), (SEED_A,),
           expected=SEED_A),
    OpCase("pad:2d_mixed", lambda x: ops.pad(x, -1, [(2, -1, 0), (-3, 1, 2)]), (I35,)),
    OpCase("pad:f32_scalar_value",
           lambda x, v: ops.pad(x, v, [(0, 0, 0), (1, 1, 1), (0, 2, 3)]), (X234, F32(9.0))),
    OpCase("pad:remove_everything", lambda x: ops.pad(x, 0, [(-3, 0, 0)]), (I123,),
           expected=np.zeros((0,), np.int32)),
    OpCase("pad:empty_operand", lambda x: ops.pad(x, 7.0, [(1, 1, 2)]),
           (np.zeros((0,), F32),), expected=np.array([7, 7], F32)),
    OpCase("pad:scalar_operand", lambda x: ops.pad(x, 0.0, []), (np.array(2.5),)),
    OpCase("iota:f32", lambda: ops.iota(np.float32, (3,), 0), (),
           expected=np.array([0, 1, 2], F32)),
    OpCase("iota:u8_wraps", lambda: ops.iota(np.uint8, (2, 300), 1), ()),
    OpCase("get_dimension_size:dim1", lambda x: ops.get_dimension_size(x, 1), (X234,),
           expected=np.array(3, np.int32)),
]


CASES: list[OpCase] = GOLDEN + SAMPLES
