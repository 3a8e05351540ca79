"""Op-table cases for sort (XLA's Sort): the seed's three-operand
example, the default total-order comparator (NaNs, signed zeros, infinities),
several keys, every dimension, and comparators the backends cannot recognise."""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

R = np.random.default_rng(11)
NAN = np.nan
SPECIAL = np.float32([NAN, 1.0, -0.0, -np.inf, 0.0, -NAN, np.inf, -2.5, 1.0, 0.0])
X3 = R.standard_normal((3, 4, 5)).astype(np.float32)
DUPS = R.integers(-3, 4, (4, 6)).astype(np.int32)
F64 = R.standard_normal((2, 7))
C64 = (R.integers(-2, 3, 9) + 1j * R.integers(-2, 3, 9)).astype(np.complex64)


def _sort(**kw):
    return lambda *xs: ops.sort(xs[0] if len(xs) == 1 else xs, **kw)


def _first_only(a, b, *_):
    """The seed's comparator: less-than on operand 0, the other operands ride along."""
    return ops.lt(a, b)


def _descending_abs(a, b):
    return ops.gt(ops.abs(a), ops.abs(b))


def _by_second_then_first(a0, b0, a1, b1):
    """Two keys in the non-default order: operand 1 first, ties broken by operand 0."""
    return ops.bitwise_or(ops.lt(a1, b1), ops.bitwise_and(ops.eq(a1, b1), ops.lt(a0, b0)))


def _via_dynamic_slice(a, b):
    # dynamic_slice is not element-wise: forces the reference's one-by-one comparisons
    return ops.lt(ops.dynamic_slice(a, [], []), b)


CASES: list[OpCase] = [
    # Golden: the seed's example (comparator on operand 0 only).
    OpCase("sort:seed_three_operands", _sort(comparator=_first_only),
           (np.int32([3, 1]), np.int32([42, 50]), np.float32([-3.0, 1.1])),
           expected=(np.int32([1, 3]), np.int32([50, 42]), np.float32([1.1, -3.0]))),
    # Golden (inferred from the total order): -NaN < -Inf < ... < -0 < +0 < ... < +NaN.
    OpCase("sort:total_order", _sort(), (SPECIAL,),
           expected=np.float32([-NAN, -np.inf, -2.5, -0.0, 0.0, 0.0, 1.0, 1.0, np.inf, NAN])),
    # Golden: with the plain (IEEE) lt a stable sort of [2, 1, 1] carries the rider.
    OpCase("sort:stable_rider", _sort(comparator=_first_only, is_stable=True),
           (np.int32([2, 1, 1, 0]), np.int32([0, 1, 2, 3])),
           expected=(np.int32([0, 1, 1, 2]), np.int32([3, 1, 2, 0]))),

    # Non-golden samples.
    OpCase("sort:last_dim_3d", _sort(), (X3,)),
    OpCase("sort:dim0", _sort(dimension=0), (X3,)),
    OpCase("sort:dim1_negative", _sort(dimension=-2), (X3,)),
    OpCase("sort:int_duplicates_with_rider", _sort(is_stable=True),
           (DUPS, np.arange(24, dtype=np.int64).reshape(4, 6))),
    OpCase("sort:two_keys", _sort(num_keys=2, dimension=0),
           (DUPS, DUPS[::-1].astype(np.float64).copy(), DUPS.astype(np.uint8))),
    OpCase("sort:float64_rows", _sort(), (F64,)),
    OpCase("sort:float16", _sort(), (SPECIAL.astype(np.float16),)),
    OpCase("sort:bool_and_uint", _sort(num_keys=2),
           (np.array([True, False, True, False, False]), np.uint16([5, 9, 1, 9, 0]))),
    OpCase("sort:complex", _sort(), (C64,)),
    OpCase("sort:custom_descending_abs", _sort(comparator=_descending_abs), (F64,),
           ops=("sort", "abs", "compare")),
    OpCase("sort:custom_two_keys", _sort(comparator=_by_second_then_first, dimension=0),
           (DUPS, DUPS[:, ::-1].copy()),
           ops=("sort", "compare", "bitwise_and", "bitwise_or")),
    OpCase("sort:one_by_one", _sort(comparator=_via_dynamic_slice), (DUPS[:2],),
           ops=("sort", "dynamic_slice", "compare")),
    OpCase("sort:empty_rows", _sort(), (np.zeros((3, 0), np.float32),)),
    OpCase("sort:length_one", _sort(dimension=0), (np.float64([[4.0, -1.0]]),)),
]
