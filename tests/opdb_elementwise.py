"""Op table cases for the element-wise family (XLA's element-wise operations and broadcasting).

Golden cases carry the seed examples (and the values our documented choices give
for the seeds' implementation-defined cases); the others sample every op, dtype
class and edge case so the generic tests can compare traced, eager and shape rule.
"""

from __future__ import annotations

import numpy as np

from tests.op_db import OpCase
from tracer import ops

nan, inf = np.nan, np.inf
f32, f64, i8, i32, u8, u32 = np.float32, np.float64, np.int8, np.int32, np.uint8, np.uint32


def a(values, dtype=None) -> np.ndarray:  # test data helper
    return np.asarray(values, dtype)


M23 = a([[1, 2, 3], [4, 5, 6]], i32)
X = a([[-1.5, 0.25, 2.0], [3.5, -0.0, 7.0]], f32)
Y = a([[2.0, -4.0, 0.5], [1.5, 3.0, -2.0]], f32)
POS = a([[0.5, 1.0, 2.0], [3.0, 10.0, 0.125]], f32)
I8 = a([-128, -7, -1, 0, 1, 7, 127], i8)
D8 = a([-1, 2, 0, 3, -1, -2, 0], i8)
C64 = a([1 + 2j, -3 + 0.5j, 0j], np.complex64)

GOLDEN = [
    # Broadcasting (003[B], 003[P])
    OpCase("add:scalar", lambda x: ops.add(x, 7), (M23,),
           expected=a([[8, 9, 10], [11, 12, 13]], i32)),
    OpCase("add:bdims_matrix_vector", lambda x, y: ops.add(x, y, broadcast_dimensions=[1]),
           (M23, a([7, 8, 9], i32)), expected=a([[8, 10, 12], [11, 13, 15]], i32)),
    OpCase("add:bdims_vector_1x2", lambda x, y: ops.add(x, y, broadcast_dimensions=[0]),
           (a([1, 2, 3, 4], i32), a([[5, 6]], i32)),
           expected=a([[6, 7], [7, 8], [8, 9], [9, 10]], i32)),
    OpCase("add:bdims_rows", lambda x, y: ops.add(x, y, broadcast_dimensions=[0]),
           (a([[0] * 3] * 3, i32), a([7, 8, 9], i32)),
           expected=a([[7, 7, 7], [8, 8, 8], [9, 9, 9]], i32)),
    OpCase("add:bdims_1x2_on_4x3x1", lambda x, y: ops.add(x, y, broadcast_dimensions=[1, 2]),
           (a([[1, 2]], f32), np.zeros((4, 3, 1), f32)),
           expected=np.broadcast_to(a([1, 2], f32), (4, 3, 2))),
    OpCase("add:degenerate_outer", ops.add, (a([[1], [2]], i32), a([[10, 20, 30]], i32)),
           expected=a([[11, 21, 31], [12, 22, 32]], i32)),
    # Rem sign rule
    OpCase("rem:neg_dividend", ops.rem, (a(-7, i32), a(3, i32)), expected=a(-1, i32)),
    OpCase("rem:neg_divisor", ops.rem, (a(7, i32), a(-3, i32)), expected=a(1, i32)),
    OpCase("rem:float", ops.rem, (a(-7.5, f32), a(2.0, f32)), expected=a(-1.5, f32)),
    # Total order (001)
    OpCase("lt:total_order_zeros", lambda x, y: ops.lt(x, y, total_order=True),
           (a(-0.0, f32), a(0.0, f32)), expected=a(True)),
    OpCase("lt:ieee_zeros", ops.lt, (a(-0.0, f32), a(0.0, f32)), expected=a(False)),
    OpCase("eq:total_order_nan", lambda x, y: ops.eq(x, y, total_order=True),
           (a(nan, f64), a(nan, f64)), expected=a(True)),
    OpCase("eq:ieee_nan", ops.eq, (a(nan, f64), a(nan, f64)), expected=a(False)),
    OpCase("lt:total_order_inf_nan", lambda x, y: ops.lt(x, y, total_order=True),
           (a([inf, -nan], f32), a([nan, -inf], f32)), expected=a([True, True])),
    # Unary (001)
    OpCase("round:ties", ops.round, (a([0.5, 1.5, 2.5, -0.5, -2.5], f32),),
           expected=a([1.0, 2.0, 3.0, -1.0, -3.0], f32)),
    OpCase("round_nearest_even:ties", ops.round_nearest_even,
           (a([0.5, 1.5, 2.5, -0.5, -2.5], f32),), expected=a([0.0, 2.0, 2.0, -0.0, -2.0], f32)),
    OpCase("sign:float", ops.sign, (a([-3.0, -0.0, 0.0, 5.0, nan], f64),),
           expected=a([-1.0, -0.0, 0.0, 1.0, nan], f64)),
    OpCase("is_finite:specials", ops.is_finite, (a([1.0, inf, -inf, nan], f32),),
           expected=a([True, False, False, False])),
    OpCase("imag:float", ops.imag, (a([1.0, -2.0], f32),), expected=a([0.0, 0.0], f32)),
    OpCase("real:float", ops.real, (a([1.0, -2.0], f32),), expected=a([1.0, -2.0], f32)),
    # Clamp, Select, ConvertElementType
    OpCase("clamp:scalar_bounds", ops.clamp, (a(0, i32), a([-1, 5, 9], i32), a(6, i32)),
           expected=a([0, 5, 6], i32)),
    OpCase("select:array_pred", ops.select,
           (a([True, False, False, True]), a([1, 2, 3, 4], i32), a([100, 200, 300, 400], i32)),
           expected=a([1, 200, 300, 4], i32)),
    OpCase("select:scalar_pred", ops.select,
           (a(True), a([1, 2, 3, 4], i32), a([100, 200, 300, 400], i32)),
           expected=a([1, 2, 3, 4], i32)),
    OpCase("convert_element_type:s32_f32", lambda x: ops.convert_element_type(x, np.float32),
           (a([0, 1, 2], i32),), expected=a([0.0, 1.0, 2.0], f32)),
]

# The seeds' implementation-defined cases, with the values XLA (and we) give.
EDGES = [
    OpCase("div:int_edges", ops.div, (I8, D8), expected=a([-128, -3, -1, 0, -1, -3, -1], i8)),
    OpCase("rem:int_edges", ops.rem, (I8, D8), expected=a([0, -1, -1, 0, 0, 1, 127], i8)),
    OpCase("div:unsigned_by_zero", ops.div, (a([7, 0], u8), a([0, 0], u8)),
           expected=a([255, 255], u8)),
    OpCase("div:float_specials", ops.div, (a([1.0, -1.0, 0.0], f32), a([0.0, 0.0, 0.0], f32)),
           expected=a([inf, -inf, nan], f32)),
    OpCase("pow:int_negative_exponent", ops.pow,
           (a([2, 1, -1, -1, 0, 3], i32), a([-1, -5, -3, -4, 0, 4], i32)),
           expected=a([0, 1, -1, 1, 1, 81], i32)),
    OpCase("pow:int8_wraps", ops.pow, (a([2, 3, -2], i8), a([7, 5, 7], i8)),
           expected=a([-128, -13, -128], i8)),
    OpCase("shift_left:out_of_range", ops.shift_left,
           (a([1, 1, 1, -1], i8), a([3, 8, -1, 7], i8)), expected=a([8, 0, 0, -128], i8)),
    OpCase("shift_right_arithmetic:out_of_range", ops.shift_right_arithmetic,
           (a([-16, -16, 16, 16], i8), a([2, 9, -1, 1], i8)), expected=a([-4, -1, 0, 8], i8)),
    OpCase("shift_right_logical:signed", ops.shift_right_logical,
           (a([-16, -16, 16], i8), a([2, 8, -3], i8)), expected=a([60, 0, 0], i8)),
    OpCase("shift_right_arithmetic:unsigned_top_bit", ops.shift_right_arithmetic,
           (a([0xF0, 0x70], u8), a([2, 2], u8)), expected=a([0xFC, 0x1C], u8)),
    OpCase("max:nan", ops.max, (a([nan, 1.0], f32), a([1.0, nan], f32)),
           expected=a([nan, nan], f32)),
    OpCase("min:nan", ops.min, (a([nan, 1.0], f32), a([1.0, nan], f32)),
           expected=a([nan, nan], f32)),
    OpCase("round:near_half", ops.round, (a([0.49999999999999994, -0.3, 2.5e15 + 0.5, inf], f64),),
           expected=a([0.0, -0.0, 2.5e15 + 1, inf], f64)),
    OpCase("convert_element_type:float_to_int", lambda x: ops.convert_element_type(x, np.int8),
           (a([nan, 300.0, -300.0, -3.7, 3.7, -0.5], f32),),
           expected=a([0, 127, -128, -3, 3, 0], i8)),
    OpCase("convert_element_type:float_to_u64", lambda x: ops.convert_element_type(x, np.uint64),
           (a([1e30, -5.0, 2.0**63], f64),), expected=a([2**64 - 1, 0, 2**63], np.uint64)),
    OpCase("convert_element_type:to_bool", lambda x: ops.convert_element_type(x, np.bool_),
           (a([0.0, -0.0, 2.0, nan], f32),), expected=a([False, False, True, True])),
    OpCase("convert_element_type:complex_to_real",
           lambda x: ops.convert_element_type(x, np.float32), (C64,), expected=a([1, -3, 0], f32)),
    OpCase("clz:widths", ops.clz, (a([0, 1, -1, 255], i32),), expected=a([32, 31, 0, 24], i32)),
    OpCase("population_count:signed", ops.population_count, (a([-1, 3, -128], i8),),
           expected=a([8, 2, 1], i8)),
    OpCase("logistic:large", ops.logistic, (a([0.0, -1000.0, 1000.0], f32),),
           expected=a([0.5, 0.0, 1.0], f32)),
    OpCase("complex:inf_imag", ops.complex, (a([1.0], f32), a([inf], f32)),
           expected=a([complex(1, inf)], np.complex64)),
    OpCase("gt:total_order_ints", lambda x, y: ops.gt(x, y, total_order=True),
           (a([1, -2], i32), a([0, 3], i32)), expected=a([True, False])),
]


def _binary_samples() -> list[OpCase]:
    cases = [OpCase(f"{name}:f32", getattr(ops, name), (X, Y), rtol=1e-6)
             for name in ("add", "sub", "mul", "div", "rem", "max", "min", "atan2")]
    cases += [OpCase(f"{name}:s8", getattr(ops, name), (I8, D8))
              for name in ("add", "sub", "mul", "max", "min", "pow")]
    cases += [OpCase(f"{name}:u32", getattr(ops, name), (a([5, 9, 200], u32), a([2, 0, 3], u32)))
              for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
                           "shift_right_logical", "shift_right_arithmetic", "div", "rem", "pow")]
    cases += [OpCase(f"{name}:bool", getattr(ops, name),
                     (a([True, True, False, False]), a([True, False, True, False])))
              for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "max", "min")]
    cases += [
        OpCase("pow:f32", ops.pow, (POS, Y)),
        OpCase("pow:c64", ops.pow, (C64, C64)),
        OpCase("mul:c64", ops.mul, (C64, C64)),
        OpCase("div:c64", ops.div, (C64, a([1j, 2, 1 + 1j], np.complex64))),
        OpCase("max:c64", ops.max, (C64, C64[::-1].copy())),
        OpCase("complex:f64", ops.complex, (a([1.0, 2.0]), a([3.0, -4.0]))),
        OpCase("add:weak_scalar", lambda x: ops.add(2.5, x), (X,)),
        OpCase("sub:scalar_lhs", lambda x: ops.sub(1.0, x), (X,)),
        OpCase("mul:degenerate", ops.mul, (a([[1.0], [2.0]], f32), a([[3.0, 4.0]], f32))),
        OpCase("add:empty", ops.add, (np.zeros((0, 3), f32), np.ones((1, 3), f32))),
    ]
    return cases


def _compare_samples() -> list[OpCase]:
    lhs, rhs = a([nan, -0.0, 1.0, -inf, 2.0], f32), a([nan, 0.0, 1.0, 3.0, -nan], f32)
    cases = []
    for name in ("eq", "ne", "ge", "gt", "le", "lt"):
        fn = getattr(ops, name)
        cases.append(OpCase(f"{name}:f32", fn, (lhs, rhs)))
        cases.append(OpCase(f"{name}:total_order",
                            lambda x, y, fn=fn: fn(x, y, total_order=True), (lhs, rhs)))
        cases.append(OpCase(f"{name}:s8_bdims",
                            lambda x, y, fn=fn: fn(x, y, broadcast_dimensions=(1,)),
                            (np.stack([I8, D8]), D8)))
    cases.append(OpCase("eq:c64_total_order", lambda x, y: ops.eq(x, y, total_order=True),
                        (a([complex(nan, 0), -0.0], np.complex64),
                         a([complex(nan, 0), 0.0], np.complex64)), expected=a([True, False])))
    cases.append(OpCase("ne:bool", ops.ne, (a([True, False]), a(True))))
    return cases


def _compare_op(case: OpCase) -> OpCase:
    # eq/ne/ge/gt/le/lt all bind the one `compare` op record
    case.ops = ("compare",)
    return case


_UNARY_INEXACT = ("exp", "expm1", "log", "log1p", "logistic", "sin", "cos", "tan", "tanh",
                  "sqrt", "rsqrt")


def _unary_samples() -> list[OpCase]:
    cases = [OpCase(f"{name}:f32", getattr(ops, name), (X,))
             for name in _UNARY_INEXACT + ("abs", "ceil", "floor", "round", "round_nearest_even",
                                           "neg", "sign", "cbrt", "erf", "is_finite", "real",
                                           "imag")]
    cases += [OpCase(f"{name}:c64", getattr(ops, name), (C64,))
              for name in _UNARY_INEXACT + ("abs", "neg", "sign", "real", "imag")]
    cases += [OpCase(f"{name}:s8", getattr(ops, name), (I8,))
              for name in ("abs", "neg", "sign", "bitwise_not", "clz", "population_count")]
    cases += [OpCase(f"{name}:u8", getattr(ops, name), (a([0, 1, 128, 255], u8),))
              for name in ("abs", "neg", "sign", "bitwise_not", "clz", "population_count")]
    cases += [
        OpCase("bitwise_not:bool", ops.bitwise_not, (a([True, False]),),
               expected=a([False, True])),
        OpCase("exp:f64_scalar", ops.exp, (a(1.0),)),
        OpCase("erf:f16", ops.erf, (a([0.5, -1.0], np.float16),)),
        OpCase("sqrt:f16", ops.sqrt, (a([4.0, 2.0], np.float16),)),
        OpCase("abs:c128", ops.abs, (a([3 + 4j]),), expected=a([5.0])),
        OpCase("clz:u64", ops.clz, (a([0, 1, 2**63], np.uint64),),
               expected=a([64, 63, 0], np.uint64)),
    ]
    return cases


def _other_samples() -> list[OpCase]:
    return [
        OpCase("select:f32", lambda p, x, y: ops.select(p, x, y), (X > Y, X, Y)),
        OpCase("select:weak_branch", lambda p, x: ops.select(p, x, 0.0), (a(False), a(1.5, f32)),
               expected=a(0.0, f32)),
        OpCase("clamp:arrays", ops.clamp, (Y, X, Y + 1)),
        OpCase("clamp:python_bounds", lambda x: ops.clamp(-1.0, x, 1.0), (X,)),
        OpCase("clamp:nan", ops.clamp, (a(0.0, f32), a([nan, 2.0], f32), a(1.0, f32))),
        OpCase("convert_element_type:i8_to_u8",
               lambda x: ops.convert_element_type(x, np.uint8), (I8,)),
        OpCase("convert_element_type:f64_to_f16",
               lambda x: ops.convert_element_type(x, np.float16), (a([1e10, 0.1, -70000.0]),)),
        OpCase("convert_element_type:f32_to_c64",
               lambda x: ops.convert_element_type(x, np.complex64), (X,)),
        OpCase("convert_element_type:bool_to_f32",
               lambda x: ops.convert_element_type(x, np.float32), (a([True, False]),),
               expected=a([1.0, 0.0], f32)),
        OpCase("convert_element_type:i64_to_f32_rne",
               lambda x: ops.convert_element_type(x, np.float32),
               (a([2**24 + 1, 2**24 + 3], np.int64),), expected=a([2**24, 2**24 + 4], f32)),
    ]


CASES: list[OpCase] = [
    _compare_op(c) if c.name.split(":")[0] in ("eq", "ne", "ge", "gt", "le", "lt") else c
    for c in GOLDEN + EDGES + _binary_samples() + _compare_samples() + _unary_samples()
    + _other_samples()]
