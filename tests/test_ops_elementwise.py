"""Element-wise ops: integer and float edge semantics against independent Python
oracles, seed broadcasting, weak types, HLO names, and error messages."""

from __future__ import annotations

import decimal
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tracer import ops
from tracer.core import ShapedArray
from tracer.errors import DTypeError, ParamError, ShapeError, TracerIndexError, TracerValueError
from tracer.interpret import run_graph
from tracer.ops import OPS, elementwise
from tracer.tracing import trace_flat

INTS = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64]
SMALL_INTS = [np.int8, np.uint8, np.int32, np.uint64]


def _wrap(value: int, dtype: type) -> int:
    """Python int reduced to dtype's two's-complement range."""
    bits = 8 * np.dtype(dtype).itemsize
    value &= (1 << bits) - 1
    if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _c_div(a: int, b: int, dtype: type) -> int:
    if b == 0:
        return _wrap(-1, dtype)
    q = abs(a) // abs(b)
    return _wrap(q if (a < 0) == (b < 0) else -q, dtype)


def _c_rem(a: int, b: int, dtype: type) -> int:
    if b == 0:
        return a
    return _wrap(a - b * int(_c_div_exact(a, b)), dtype)


def _c_div_exact(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_pow(a: int, b: int, dtype: type) -> int:
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return _wrap(pow(a, b, 1 << 64), dtype)


def _shift(kind: str, a: int, b: int, dtype: type) -> int:
    bits = 8 * np.dtype(dtype).itemsize
    amount = b % (1 << bits)  # negative amounts read as unsigned are huge
    pattern = a % (1 << bits)
    signed = pattern - (1 << bits) if pattern >> (bits - 1) else pattern
    if kind == "left":
        return _wrap(pattern << amount if amount < bits else 0, dtype)
    if kind == "logical":
        return _wrap(pattern >> amount if amount < bits else 0, dtype)
    return _wrap(signed >> min(amount, bits), dtype)


INT_ORACLES = {
    "add": lambda a, b, t: _wrap(a + b, t),
    "sub": lambda a, b, t: _wrap(a - b, t),
    "mul": lambda a, b, t: _wrap(a * b, t),
    "div": _c_div,
    "rem": _c_rem,
    "max": lambda a, b, t: a if a > b else b,
    "min": lambda a, b, t: a if a < b else b,
    "pow": _int_pow,
    "bitwise_and": lambda a, b, t: a & b,
    "bitwise_or": lambda a, b, t: a | b,
    "bitwise_xor": lambda a, b, t: a ^ b,
    "shift_left": lambda a, b, t: _shift("left", a, b, t),
    "shift_right_logical": lambda a, b, t: _shift("logical", a, b, t),
    "shift_right_arithmetic": lambda a, b, t: _shift("arithmetic", a, b, t),
}


@st.composite
def int_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    dtype = draw(st.sampled_from(INTS))
    info = np.iinfo(dtype)
    # edge values are drawn often: 0, ±1, min, max, the bit width
    edges = st.sampled_from([0, 1, 2, 7, info.max, info.min, info.min + 1, info.max - 1,
                             8 * np.dtype(dtype).itemsize] + ([-1] if info.min else []))
    elements = st.one_of(edges, st.integers(int(info.min), int(info.max)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4))
    lhs = draw(hnp.arrays(dtype, shape, elements=elements))
    rhs = draw(hnp.arrays(dtype, shape, elements=elements))
    return lhs, rhs


@pytest.mark.parametrize("name", sorted(INT_ORACLES))
@settings(max_examples=30)
@given(pair=int_pairs())
def test_integer_binary_ops_match_python_oracle(name: str, pair: tuple) -> None:
    lhs, rhs = pair
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = getattr(ops, name)(lhs, rhs)
    oracle = INT_ORACLES[name]
    want = [oracle(int(a), int(b), lhs.dtype.type) for a, b in zip(lhs.flat, rhs.flat,
                                                                   strict=True)]
    assert out.dtype == lhs.dtype and out.shape == lhs.shape
    assert [int(v) for v in out.flat] == want


@settings(max_examples=40)
@given(x=hnp.arrays(hnp.integer_dtypes(endianness="=")
                    | hnp.unsigned_integer_dtypes(endianness="="),
                    hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)))
def test_integer_unary_ops_match_python_oracle(x: np.ndarray) -> None:
    bits = 8 * x.dtype.itemsize
    patterns = [int(v) % (1 << bits) for v in x.flat]
    assert [int(v) for v in ops.clz(x).flat] == [bits - p.bit_length() for p in patterns]
    assert [int(v) for v in ops.population_count(x).flat] == [p.bit_count() for p in patterns]
    t = x.dtype.type
    assert [int(v) for v in ops.neg(x).flat] == [_wrap(-int(v), t) for v in x.flat]
    assert [int(v) for v in ops.abs(x).flat] == [_wrap(abs(int(v)), t) for v in x.flat]
    assert [int(v) for v in ops.sign(x).flat] == [(v > 0) - (v < 0) for v in map(int, x.flat)]
    assert [int(v) for v in ops.bitwise_not(x).flat] == [_wrap(~int(v), t) for v in x.flat]


def _canonical_nans(x: np.ndarray) -> np.ndarray:
    # NaN payloads order differently under the total order; keep only ±NaN
    return np.where(np.isnan(x), np.copysign(np.nan, x), x).astype(x.dtype)


def _total_key(v: float) -> tuple:
    if math.isnan(v):
        return (-2 if math.copysign(1, v) < 0 else 2, 0.0, 0)
    return (0, v, -1 if math.copysign(1, v) < 0 else 1)


FLOAT_PAIRS = st.sampled_from([np.float16, np.float32, np.float64]).flatmap(
    lambda t: st.tuples(*[hnp.arrays(t, 5, elements=st.floats(width=8 * np.dtype(t).itemsize)
                                     | st.sampled_from([0.0, -0.0, math.inf, -math.inf,
                                                        math.nan, -math.nan]))] * 2))


@given(pair=FLOAT_PAIRS)
def test_total_order_matches_python_oracle(pair: tuple) -> None:
    lhs, rhs = map(_canonical_nans, pair)
    keys = [(_total_key(float(a)), _total_key(float(b))) for a, b in zip(lhs, rhs, strict=True)]
    want = {"eq": [a == b for a, b in keys], "ne": [a != b for a, b in keys],
            "lt": [a < b for a, b in keys], "le": [a <= b for a, b in keys],
            "gt": [a > b for a, b in keys], "ge": [a >= b for a, b in keys]}
    for name, expected in want.items():
        assert getattr(ops, name)(lhs, rhs, total_order=True).tolist() == expected, name
        ieee = getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                            "gt": "greater", "ge": "greater_equal"}[name])(lhs, rhs)
        assert getattr(ops, name)(lhs, rhs).tolist() == ieee.tolist(), name


EXACT = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP)  # holds any float64


@given(x=hnp.arrays(np.float64, 6, elements=st.floats(allow_nan=False)
                    | st.sampled_from([0.5, -0.5, 2.5, -2.5, 0.49999999999999994, -0.0])))
def test_round_half_away_matches_decimal(x: np.ndarray) -> None:
    out = ops.round(x)
    for v, r in zip(x, out, strict=True):
        if math.isinf(v):
            assert r == v
            continue
        want = float(decimal.Decimal(float(v)).quantize(decimal.Decimal(1), context=EXACT))
        assert r == want and math.copysign(1, r) == math.copysign(1, v)
    assert ops.round_nearest_even(x).tolist() == [float(round(v)) if math.isfinite(v) else v
                                                  for v in x.tolist()]


@given(x=hnp.arrays(np.float64, 6, elements=st.floats(width=64)),
       target=st.sampled_from(INTS))
def test_float_to_int_truncates_and_saturates(x: np.ndarray, target: type) -> None:
    info = np.iinfo(target)
    want = [0 if math.isnan(v) else int(info.max) if v >= info.max else
            int(info.min) if v <= info.min else int(v) for v in x.tolist()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ops.convert_element_type(x, target)
    assert out.dtype == target and [int(v) for v in out] == want


UNARY_ORACLES = {
    "exp": math.exp, "expm1": math.expm1, "log": math.log, "log1p": math.log1p,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "tanh": math.tanh,
    "sqrt": math.sqrt, "rsqrt": lambda v: 1 / math.sqrt(v), "erf": math.erf,
    "cbrt": lambda v: math.copysign(abs(v) ** (1 / 3), v), "ceil": math.ceil,
    "floor": math.floor, "logistic": lambda v: 1 / (1 + math.exp(-v)) if v > -700 else 0.0,
    "atan2_1": lambda v: math.atan2(v, 1.0),
}


@pytest.mark.parametrize("name", sorted(UNARY_ORACLES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_unary_ops_match_math(name: str, dtype: type) -> None:
    x = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0], dtype)
    x = x if name in ("log", "sqrt", "rsqrt", "log1p") else np.concatenate([x, -x])
    fn = (lambda v: ops.atan2(v, dtype(1.0))) if name == "atan2_1" else getattr(ops, name)
    out = fn(x)
    assert out.dtype == dtype and out.shape == x.shape
    want = [UNARY_ORACLES[name](float(v)) for v in x]
    np.testing.assert_allclose(out, want, rtol=2e-6 if dtype == np.float32 else 1e-13)


def test_special_values_never_warn() -> None:
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e30], np.float32)
    ints = np.array([0, -1, 1, -128, 127], np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, op in OPS.items():
            if op.family == "unary" and name != "convert_element_type":
                for x in (specials, ints, specials.astype(np.complex64)):
                    try:
                        op.bind(x)
                    except DTypeError:
                        pass
            elif op.family == "binary":
                for x in (specials, ints):
                    try:
                        op.bind(x, x[::-1].copy())
                    except DTypeError:
                        pass
        for target in (np.int8, np.uint64, np.float16, np.bool_):
            ops.convert_element_type(np.append(specials, [1e300, -1e300, 5e9]), target)


# ---- broadcasting ----

@st.composite
def bdims_case(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    high = tuple(draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=3)))
    dims = tuple(sorted(draw(st.sets(st.integers(0, len(high) - 1), min_size=1))))
    low = tuple(draw(st.sampled_from([high[d], 1])) for d in dims)
    high = tuple(draw(st.sampled_from([s, 1])) if d in dims and low[dims.index(d)] != 1
                 else s for d, s in enumerate(high))
    return low, high, dims


@given(case=bdims_case(), low_first=st.booleans())
def test_broadcast_dimensions_match_index_oracle(case: tuple, low_first: bool) -> None:
    low_shape, high_shape, dims = case
    low = np.arange(math.prod(low_shape), dtype=np.int32).reshape(low_shape) * 100
    high = np.arange(math.prod(high_shape), dtype=np.int32).reshape(high_shape)
    args = (low, high) if low_first else (high, low)
    out = ops.sub(*args, broadcast_dimensions=dims)
    shape = tuple(max(high_shape[d], low_shape[dims.index(d)]) if d in dims else high_shape[d]
                  for d in range(len(high_shape)))
    assert out.shape == shape
    for idx in itertools.product(*map(range, shape)):
        h = high[tuple(0 if s == 1 else i for i, s in zip(idx, high_shape, strict=True))]
        lo = low[tuple(0 if s == 1 else idx[d] for s, d in zip(low_shape, dims, strict=True))]
        assert out[idx] == (lo - h if low_first else h - lo)


def test_scalar_broadcasts_without_dims_and_with_empty_dims() -> None:
    x = np.ones((2, 3), np.float32)
    assert ops.mul(np.float32(2), x).shape == (2, 3)
    assert ops.mul(x, np.float32(2), broadcast_dimensions=()).shape == (2, 3)
    assert ops.add(x, x, broadcast_dimensions=(0, 1)).shape == (2, 3)


def _trace(fn, *avals: ShapedArray):  # test helper
    graph, _ = trace_flat(lambda *xs: [fn(*xs)], avals)
    return graph


def test_weak_types() -> None:
    weak, strong = ShapedArray((3,), np.float64, weak_type=True), ShapedArray((3,), np.float64)
    assert _trace(ops.add, weak, weak).out_avals[0].weak_type
    assert not _trace(ops.add, weak, strong).out_avals[0].weak_type
    assert _trace(ops.sin, weak).out_avals[0].weak_type
    for fn in (ops.lt, lambda x, y: ops.convert_element_type(x, np.float64),
               lambda x, y: ops.is_finite(x)):
        out = _trace(fn, weak, weak).out_avals[0]
        assert not out.weak_type
    graph = _trace(lambda x: ops.mul(x, 2), ShapedArray((3,), np.float32))
    assert graph.out_avals[0] == ShapedArray((3,), np.float32)
    assert [e.op.name for e in graph.eqns] == ["mul"]


def test_python_scalars_take_the_array_dtype() -> None:
    x = np.array([250, 3], np.uint8)
    assert ops.add(x, 10).tolist() == [4, 13] and ops.add(x, 10).dtype == np.uint8
    assert ops.clamp(0, x, 100).tolist() == [100, 3]
    assert ops.select(True, 1.5, np.float32(2)).dtype == np.float32
    out = ops.add(1, 2)
    assert isinstance(out, np.ndarray) and out.shape == () and out == 3


def test_hlo_names_and_text() -> None:
    names = {"sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
             "max": "maximum", "min": "minimum", "pow": "power", "bitwise_and": "and",
             "bitwise_or": "or", "bitwise_xor": "xor", "round": "round-nearest-afz",
             "exp": "exponential", "expm1": "exponential-minus-one", "log1p": "log-plus-one",
             "neg": "negate", "bitwise_not": "not", "sin": "sine", "cos": "cosine",
             "is_finite": "is-finite", "clz": "count-leading-zeros", "population_count":
             "popcnt", "convert_element_type": "convert", "compare": "compare",
             "shift_right_logical": "shift-right-logical"}
    for name, hlo in names.items():
        assert OPS[name].hlo_name == hlo
    f32 = ShapedArray((2,), np.float32)
    text = str(_trace(lambda x, y: ops.lt(x, y, total_order=True), f32, f32))
    assert "pred[2] compare(" in text and "direction=LT" in text


def test_docs_and_public_names() -> None:
    assert set(elementwise.__all__) <= set(ops.__all__)
    for name in elementwise.__all__:
        fn = getattr(ops, name)
        assert fn.__name__ == name and "->" in (fn.__doc__ or "")
    assert "Seed rule" in OPS["div"].doc


# ---- errors: class, op name, offending avals ----

F23, F3, S23 = np.ones((2, 3), np.float32), np.ones(3, np.float32), np.ones((2, 3), np.int32)
C2 = np.ones(2, np.complex64)
ERRORS = [
    (lambda: ops.add(F23, F3), ShapeError, "add", ["f32[2,3]", "f32[3]"]),
    (lambda: ops.add(np.ones((7, 2, 5)), np.ones((7, 2, 6))), ShapeError, "add",
     ["f64[7,2,5]", "f64[7,2,6]"]),
    (lambda: ops.add(F23, S23), DTypeError, "add", ["f32[2,3]", "s32[2,3]"]),
    (lambda: ops.add(F23, F3, broadcast_dimensions=(0,)), ShapeError, "add", ["f32[3]"]),
    (lambda: ops.add(np.ones((3, 3, 3)), np.ones((3, 3)), broadcast_dimensions=(2, 1)),
     ParamError, "add", ["strictly increasing"]),
    (lambda: ops.add(F23, F3, broadcast_dimensions=(2,)), TracerIndexError, "add", ["f32[3]"]),
    (lambda: ops.add(F23, F3, broadcast_dimensions=(0, 1)), ParamError, "add", ["f32[2,3]"]),
    (lambda: ops.add(F23, F23, broadcast_dimensions=(1, 0)), ParamError, "add", ["identity"]),
    (lambda: ops.add(F23, F3, broadcast_dimensions=(1.5,)), ParamError, "add", ["ints"]),
    (lambda: ops.add(np.array([True]), np.array([True])), DTypeError, "add", ["pred[1]"]),
    (lambda: ops.bitwise_and(F3, F3), DTypeError, "bitwise_and", ["f32[3]"]),
    (lambda: ops.shift_left(np.array([True]), np.array([True])), DTypeError, "shift_left",
     ["pred[1]"]),
    (lambda: ops.atan2(np.ones(2, np.int32), np.ones(2, np.int32)), DTypeError, "atan2",
     ["s32[2]"]),
    (lambda: ops.rem(C2, C2), DTypeError, "rem", ["c64[2]"]),
    (lambda: ops.complex(np.ones(2, np.float16), np.ones(2, np.float16)), DTypeError, "complex",
     ["f16[2]"]),
    (lambda: ops.lt(C2, C2), DTypeError, "compare", ["c64[2]"]),
    (lambda: ops.exp(np.ones(2, np.int32)), DTypeError, "exp", ["s32[2]"]),
    (lambda: ops.round(np.ones(2, np.int32)), DTypeError, "round", ["s32[2]"]),
    (lambda: ops.clz(F3), DTypeError, "clz", ["f32[3]"]),
    (lambda: ops.is_finite(C2), DTypeError, "is_finite", ["c64[2]"]),
    (lambda: ops.cbrt(C2), DTypeError, "cbrt", ["c64[2]"]),
    (lambda: ops.neg(np.array([True])), DTypeError, "neg", ["pred[1]"]),
    (lambda: ops.select(F3, F3, F3), DTypeError, "select", ["f32[3]"]),
    (lambda: ops.select(np.array([True, False]), F3, F3), ShapeError, "select", ["pred[2]"]),
    (lambda: ops.select(True, F3, F23), ShapeError, "select", ["f32[2,3]"]),
    (lambda: ops.select(True, F3, np.ones(3, np.int32)), DTypeError, "select", ["s32[3]"]),
    (lambda: ops.clamp(F3, F23, np.float32(1)), ShapeError, "clamp", ["f32[3]", "f32[2,3]"]),
    (lambda: ops.clamp(C2, C2, C2), DTypeError, "clamp", ["c64[2]"]),
    (lambda: ops.clamp(np.float64(0), F3, np.float32(1)), DTypeError, "clamp", ["f64[]"]),
    (lambda: ops.convert_element_type(F3, "no such dtype"), DTypeError,
     "convert_element_type", ["no such dtype"]),
    (lambda: ops.convert_element_type(F3, np.str_), DTypeError, "convert_element_type",
     ["f32[3]"]),
    (lambda: OPS["compare"].bind(F3, F3, direction="XX"), ParamError, "compare", ["XX"]),
    (lambda: ops.add(np.ones(2, np.uint8), -1), TracerValueError, "add", ["uint8"]),
    (lambda: ops.add(F3, 1j), DTypeError, "add", ["1j"]),
]


@pytest.mark.parametrize("call,error,op_name,fragments", ERRORS)
def test_errors_name_op_and_avals(call, error, op_name, fragments) -> None:
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{op_name}:"), message
    for fragment in fragments:
        assert fragment in message, message


def test_traced_error_names_user_line() -> None:
    f23, f3 = ShapedArray((2, 3), np.float32), ShapedArray((3,), np.float32)
    with pytest.raises(ShapeError, match=r"(?s)add:.*f32\[2,3\], f32\[3\].*test_ops_elementwise"):
        _trace(ops.add, f23, f3)


def test_reference_impls_agree_with_shape_rules_on_mixed_ranks() -> None:
    avals = (ShapedArray((4,), np.int16), ShapedArray((1, 2), np.int16))
    graph = _trace(lambda x, y: ops.pow(x, y, broadcast_dimensions=(0,)), *avals)
    out, = run_graph(graph, [np.arange(4, dtype=np.int16), np.array([[2, 3]], np.int16)],
                     check=True)
    assert out.tolist() == [[0, 0], [1, 1], [4, 8], [9, 27]]
