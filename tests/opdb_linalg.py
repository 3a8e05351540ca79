"""Op-table cases for dot / dot_general (XLA's Dot, DotGeneral)."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

F32 = np.float32
R = np.random.default_rng(11)
NO_BATCH = ((), ())
DG = ("dot_general",)


def _dg(lc, rc, lb=(), rb=(), **kw):
    return lambda x, y: ops.dot_general(x, y, ((lc, rc), (lb, rb)), **kw)


def _golden() -> list[OpCase]:
    lhs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], F32)
    rhs = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], F32)
    blhs = np.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], F32)
    eyes = np.array([np.eye(2), np.eye(2)], F32)
    m = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    return [
        OpCase("dot_general:seed_contract_1_1", _dg((1,), (1,)), (lhs, rhs),
               expected=np.array([[6.0, 12.0], [15.0, 30.0]], F32)),
        OpCase("dot_general:seed_batch_identity", _dg((2,), (1,), (0,), (0,)), (blhs, eyes),
               expected=blhs),
        OpCase("dot:vector_vector", ops.dot, (np.array([1, 2, 3], F32), np.array([4, 5, 6], F32)),
               expected=np.array(32.0, F32), ops=DG),
        OpCase("dot:matrix_vector", ops.dot, (m, np.array([1.0, 1.0], F32)),
               expected=np.array([3.0, 7.0], F32), ops=DG),
        OpCase("dot:matrix_matrix", ops.dot, (m, m),
               expected=np.array([[7.0, 10.0], [15.0, 22.0]], F32), ops=DG),
    ]


def _samples() -> list[OpCase]:
    a = R.standard_normal((3, 4, 5))
    b = R.standard_normal((5, 3, 2))
    i8 = R.integers(-128, 128, (4, 64)).astype(np.int8)
    big = np.full((2, 3), 2**30, np.int32)
    c64 = (R.standard_normal((2, 3)) + 1j * R.standard_normal((2, 3))).astype(np.complex64)
    return [
        OpCase("dot_general:batch_not_leading", _dg((2,), (0,), (0,), (1,)), (a, b),
               rtol=1e-12),
        OpCase("dot_general:outer_product", _dg((), ()),
               (np.array([1, 2], np.int64), np.array([3, 4, 5], np.int64)),
               expected=np.outer([1, 2], [3, 4, 5])),
        OpCase("dot_general:int8_preferred_int32",
               _dg((1,), (1,), preferred_element_type=np.int32), (i8, i8)),
        OpCase("dot_general:int32_wraps", _dg((1,), (0,)), (big, np.ones((3, 1), np.int32)),
               expected=np.full((2, 1), np.int32(-1073741824))),
        OpCase("dot_general:f16_preferred_f32",
               _dg((0,), (0,), preferred_element_type=np.float32),
               (np.ones((8, 2), np.float16), np.ones((8, 3), np.float16)),
               expected=np.full((2, 3), 8.0, F32)),
        OpCase("dot_general:complex64", _dg((1,), (0,)), (c64, c64.T.copy()), rtol=1e-5),
        OpCase("dot_general:zero_size_contraction", _dg((1,), (0,)),
               (np.zeros((2, 0), F32), np.zeros((0, 3), F32)), expected=np.zeros((2, 3), F32)),
        OpCase("dot_general:scalars", _dg((), ()), (np.array(3.0), np.array(4.0)),
               expected=np.array(12.0)),
        OpCase("dot:vector_matrix_u32", ops.dot,
               (np.array([1, 2], np.uint32), np.array([[1, 2], [3, 4]], np.uint32)),
               expected=np.array([7, 10], np.uint32), ops=DG),
        OpCase("dot:precision_highest", lambda x: ops.dot(x, x, precision="highest"),
               (np.array([1.5, 2.0]),), expected=np.array(6.25), ops=DG),
    ]


CASES: list[OpCase] = _golden() + _samples()
