"""tracer.numpy promotion (NEP 50) and broadcasting vs NumPy 2, eagerly and traced."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tests.checks import like_numpy, matches
from tracer.core import ShapedArray, aval_of, typecheck
from tracer.errors import DTypeError, ShapeError, TracerError
from tracer.interpret import run_graph
from tracer.numpy import _promotion
from tracer.tracing import trace_flat

DTYPES = [np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64",
                                "complex64", "complex128")]


def trace(fn, avals):
    graph, captured = trace_flat(lambda *xs: [fn(*xs)], avals)
    assert not captured
    return typecheck(graph)


def run_both(fn, *args):
    """(eager result, traced result); Python scalar args are traced as weak values."""
    eager = fn(*args)
    avals = [aval_of(a) for a in args]
    graph = trace(fn, avals)
    traced = run_graph(graph, [np.asarray(a, av.dtype) for a, av in zip(args, avals)],
                       check=True)[0]
    return eager, traced


def ones(dtype, shape=(2,)):
    return np.ones(shape, dtype)


# ---------------------------------------------------------------- the brief's table
@pytest.mark.parametrize("fn, args, want", [
    (tnp.add, (ones(np.int8), 1), np.int8),
    (tnp.multiply, (ones(np.float32), 2.0), np.float32),
    (tnp.add, (ones(np.int64), ones(np.float32)), np.float64),
    (tnp.add, (ones(np.bool_), ones(np.bool_)), np.bool_),
    (tnp.add, (ones(np.int8), 1.5), np.float64),
    (tnp.add, (ones(np.float16), 1), np.float16),
    (tnp.add, (ones(np.int32), True), np.int32),
    (tnp.add, (ones(np.bool_), 1), np.int64),
    (tnp.add, (ones(np.uint8), ones(np.int8)), np.int16),
    (tnp.add, (ones(np.uint64), ones(np.int64)), np.float64),
    (tnp.multiply, (ones(np.float32), 1j), np.complex64),
    (tnp.add, (ones(np.complex64), ones(np.float64)), np.complex128),
    (tnp.divide, (ones(np.int8), 2), np.float64),
    (tnp.add, (1, 2.5), np.float64),
])
def test_promotion_table(fn, args, want):
    for got in run_both(fn, *args):
        assert isinstance(got, np.ndarray)
        assert got.dtype == want
    assert np.result_type(*args) == want or fn is tnp.divide


def test_python_int_out_of_range_is_overflow_error():
    for fn in (tnp.add, tnp.multiply, tnp.maximum):
        with pytest.raises(OverflowError) as info:
            fn(ones(np.uint8), -1)
        assert isinstance(info.value, TracerError) and isinstance(info.value, ValueError)
        assert fn.__name__ in str(info.value) and "uint8" in str(info.value)
    with pytest.raises(_promotion.PromotionOverflowError, match="300"):
        tnp.add(ones(np.int8), 300)
    with pytest.raises(OverflowError):  # traced too: the Python int is static
        trace(lambda x: tnp.subtract(x, 256), [ShapedArray((2,), np.uint8)])
    with pytest.raises(OverflowError):
        np.add(ones(np.uint8), -1)  # the NumPy 2 behaviour we follow


def test_comparisons_with_out_of_range_python_ints_are_exact():
    x = np.array([0, 7, 255], np.uint8)
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        for value in (-1, 300):
            for got in run_both(lambda a, n=name, v=value: getattr(tnp, n)(a, v), x):
                np.testing.assert_array_equal(got, getattr(np, name)(x, value))
            got = getattr(tnp, name)(value, x)
            np.testing.assert_array_equal(got, getattr(np, name)(value, x))


def test_clip_ignores_useless_out_of_range_bounds_like_numpy():
    x = np.array([-100, 5, 120], np.int8)
    for got in run_both(lambda a: tnp.clip(a, -1000, 300), x):
        np.testing.assert_array_equal(got, np.clip(x, -1000, 300))
        assert got.dtype == np.int8
    with pytest.raises(OverflowError):
        tnp.clip(x, 200, 300)


# ---------------------------------------------------------------- every dtype pair
@pytest.mark.parametrize("a", DTYPES, ids=str)
def test_all_dtype_pairs_match_numpy(a):
    for b in DTYPES:
        want = np.add(ones(a), ones(b)).dtype
        avals = [ShapedArray((2,), a), ShapedArray((2,), b)]
        assert trace(tnp.add, avals).out_avals[0].dtype == want
        assert tnp.add(ones(a), ones(b)).dtype == want
        assert tnp.result_type(a, b) == np.result_type(a, b)


@pytest.mark.parametrize("scalar", [True, 3, 2.5, 1j], ids=repr)
def test_weak_python_scalars_take_the_array_dtype(scalar):
    for dt in DTYPES:
        x = ones(dt)
        try:
            want = np.multiply(x, scalar).dtype
        except TypeError:
            continue
        for got in run_both(lambda a: tnp.multiply(a, scalar), x):
            assert got.dtype == want, (dt, scalar)
        assert tnp.result_type(x, scalar) == np.result_type(x, scalar)


def test_weak_traced_values_follow_nep50():
    weak_int = ShapedArray((), np.int64, weak_type=True)
    weak_float = ShapedArray((), np.float64, weak_type=True)
    g = trace(tnp.add, [ShapedArray((3,), np.int8), weak_int])
    assert g.out_avals == (ShapedArray((3,), np.int8),)
    g = trace(tnp.multiply, [ShapedArray((3,), np.float32), weak_float])
    assert g.out_avals == (ShapedArray((3,), np.float32),)
    g = trace(tnp.add, [weak_int, weak_int])  # weak + weak stays weak
    assert g.out_avals == (weak_int,)
    g = trace(lambda a: tnp.add(a, 1), [weak_int])
    assert g.out_avals == (weak_int,)
    g = trace(tnp.add, [weak_int, weak_float])  # kinds differ: NumPy's default float64
    assert g.out_avals[0].dtype == np.float64
    g = trace(lambda a: tnp.add(a, np.float32(1)), [weak_float])  # NumPy scalars are strong
    assert g.out_avals == (ShapedArray((), np.float32),)


def test_result_type_accepts_everything_numpy_does():
    assert tnp.result_type(np.int8, 1) == np.int8
    assert tnp.result_type(np.int64, np.float32) == np.float64
    assert tnp.result_type("float32", 2.0) == np.float32
    assert tnp.result_type(ones(np.int16), [1, 2]) == np.int64
    assert tnp.result_type(1, 2.0) == np.float64
    assert tnp.result_type(True) == np.bool_
    assert tnp.result_type(int, np.int8) == np.int64
    seen = []  # traced values: weak ones count as Python scalars
    trace(lambda a, b: seen.append(tnp.result_type(a, b)) or a,
          [ShapedArray((2,), np.int8), ShapedArray((), np.int64, weak_type=True)])
    assert seen == [np.int8]


def test_promote_helper_converts_operands():
    a, b = _promotion.promote(ones(np.int8), 1)
    assert a.dtype == np.int8 and np.asarray(b).dtype == np.int8
    a, b = _promotion.promote(1, 2)  # all weak: Python scalars stay weak
    assert (a, b) == (1, 2) and type(a) is int
    a, b = _promotion.promote(1, 2.5)
    assert type(a) is float
    with pytest.raises(DTypeError):
        _promotion.promote(np.array(["a"]), 1)


def test_unsupported_dtypes_are_rejected_by_name():
    with pytest.raises(DTypeError, match="add"):
        tnp.add(np.array([1], np.longdouble) if np.dtype(np.longdouble) != np.float64
                else np.array(["x"]), 1)


# ---------------------------------------------------------------- broadcasting
@pytest.mark.parametrize("sa, sb", [((3, 1), (4,)), ((2, 1, 3), (5, 1)), ((), (2, 3)),
                                    ((0, 3), (1, 3)), ((1,), (0,)), ((4, 1), (1, 4))])
def test_broadcasting_matches_numpy(sa, sb):
    x, y = np.arange(np.prod(sa)).reshape(sa), np.arange(np.prod(sb)).reshape(sb) * 10
    for got in run_both(tnp.add, x, y):
        np.testing.assert_array_equal(got, x + y)
    ex, ey = _promotion.broadcast_arrays(x, y)
    assert ex.shape == ey.shape == np.broadcast_shapes(sa, sb)
    assert tnp.broadcast_shapes(sa, sb) == np.broadcast_shapes(sa, sb)


def test_broadcast_error_names_function_and_shapes():
    with pytest.raises(ShapeError) as info:
        tnp.add(np.ones((2, 3)), np.ones((4,)))
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert "add" in msg and "(2,3)" in msg and "(4,)" in msg
    assert "f64[2,3]" in msg and "f64[4]" in msg
    with pytest.raises(ShapeError, match=r"broadcast_to.*f32\[3\]"):
        tnp.broadcast_to(np.ones(3, np.float32), (4,))
    with pytest.raises(ShapeError, match="broadcast_shapes"):
        tnp.broadcast_shapes((2,), (3,))


def test_scalar_operands_are_not_broadcast_in_the_graph():
    g = trace(lambda a: tnp.add(a, 1.0), [ShapedArray((2, 3), np.float32)])
    assert [e.op.name for e in g.eqns] == ["add"]
    g = trace(tnp.add, [ShapedArray((3, 1), np.float32), ShapedArray((4,), np.float32)])
    names = [e.op.name for e in g.eqns]
    assert names.count("broadcast_in_dim") == 2 and names[-1] == "add"
    g = trace(tnp.add, [ShapedArray((2,), np.int8), ShapedArray((2,), np.int16)])
    assert [e.op.name for e in g.eqns] == ["convert_element_type", "add"]


def test_lists_and_numpy_scalars_are_strong():
    x = ones(np.int8)
    assert tnp.add(x, [1, 2]).dtype == np.int64  # a list is an int64 array
    assert tnp.add(x, np.int16(1)).dtype == np.int16
    assert tnp.add(x, np.array(1)).dtype == np.int64


def test_nested_lists_of_traced_values_are_stacked():
    def f(a, b):
        return tnp.array([[a, b], [b, a]])
    g = trace(f, [ShapedArray((), np.float32), ShapedArray((), np.int8)])
    assert g.out_avals == (ShapedArray((2, 2), np.float32),)
    for got in run_both(f, np.float32(1.5), np.int8(2)):
        np.testing.assert_array_equal(got, [[1.5, 2], [2, 1.5]])


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "less", "equal",
                                  "bitwise_and", "logical_or", "arctan2", "fmod"])
def test_binary_dtypes_for_pairs_match_numpy(name):
    for a, b in itertools.product(DTYPES, repeat=2):
        x, y = ones(a), ones(b)
        try:
            want = getattr(np, name)(x, y).dtype
        except TypeError:
            with pytest.raises(TypeError):
                getattr(tnp, name)(x, y)
            continue
        assert getattr(tnp, name)(x, y).dtype == want, (name, a, b)


@pytest.mark.parametrize("scalar", [300, -129, 2.5])
def test_nextafter_python_int_meets_the_float_loop(scalar):
    # NumPy: the Python int goes to the float16 loop directly, no int8 overflow
    i8 = np.array([1, 2], np.int8)
    like_numpy(lambda a: tnp.nextafter(a, scalar), lambda a: np.nextafter(a, scalar), i8)
    like_numpy(lambda a: tnp.nextafter(scalar, a), lambda a: np.nextafter(scalar, a), i8)


def test_ldexp_of_a_python_int_is_float16_with_an_array_exponent():
    like_numpy(lambda n: tnp.ldexp(3, n), lambda n: np.ldexp(3, n), np.array([1, 2], np.int8))
    matches(tnp.ldexp(3, 2), np.ldexp(3, 2))  # both Python: float64


@pytest.mark.parametrize("call", [
    lambda m: m.full((2,), 300, dtype=np.uint8), lambda m: m.full((2,), -1, dtype=np.uint8),
    lambda m: m.full_like(np.zeros(2, np.int8), -129),
])
def test_full_refuses_an_out_of_range_python_int(call):
    with pytest.raises(OverflowError):
        call(np)
    with pytest.raises(tr.TracerError):
        call(tnp)


def test_full_still_casts_other_fill_values_unsafely():
    matches(tnp.full((2,), 300.0, dtype=np.int32), np.full((2,), 300.0, dtype=np.int32))
    big = np.int64(300)  # a NumPy integer is cast unsafely (wraps), not checked
    matches(tnp.full((2,), big, dtype=np.uint8), np.full((2,), big, dtype=np.uint8))


@pytest.mark.parametrize("name", ["negative", "absolute", "square", "isnan", "add"])
def test_python_ints_beyond_int64_raise_a_tracer_error(name):
    fn = getattr(tnp, name)
    args = (2**64, 1) if name == "add" else (2**64,)
    with pytest.raises(tr.TracerError) as err:
        fn(*args)
    assert isinstance(err.value, OverflowError)
