"""tracer.numpy's unary and binary ufuncs, clip and where vs NumPy 2.

Every comparison runs twice: eagerly (NumPy arrays in, ndarrays out) and traced
(`tests.numpy_compare`), and checks the result dtype as well as the values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracer.numpy as tnp
from tests.numpy_compare import (ALL, REAL, array_and_dtype, arrays, assert_same, compare,
                                 numpy_result, run_both, trace)
from tracer.core import ShapedArray
from tracer.errors import TracerTypeError, TracerValueError
from tracer.interpret import run_graph


# ---------------------------------------------------------------- unary ufuncs
UNARY = ["negative", "positive", "absolute", "fabs", "sign", "floor", "ceil", "trunc", "fix",
         "rint", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt",
         "square", "reciprocal", "sin", "cos", "tan", "arctan", "sinh", "cosh", "tanh",
         "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "isnan",
         "isinf", "isfinite", "isposinf", "isneginf", "signbit", "conjugate", "invert",
         "logical_not", "real", "imag", "angle", "sinc", "round"]
# Complex inverse functions are checked off their branch cuts below.
REAL_ONLY = {"arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"}


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_matches_numpy(name, data):
    dtypes = REAL if name in REAL_ONLY else ALL
    x = data.draw(array_and_dtype(dtypes))
    if name == "reciprocal" and x.dtype.kind in "iu":
        x = np.where(x == 0, 1, x).astype(x.dtype)  # NumPy's integer 1/0 is garbage
    compare(getattr(tnp, name), getattr(np, name), x)


@pytest.mark.parametrize("name", ["sin", "exp", "log", "sqrt", "arctan", "sinh", "arcsinh",
                                  "tanh", "exp2", "log10"])
def test_unary_on_python_scalars_gives_numpy_dtype(name):
    for value in (True, 3, 0.5, -2.5):
        want = numpy_result(getattr(np, name), value)
        got = getattr(tnp, name)(value)
        assert isinstance(got, np.ndarray) and got.shape == ()
        assert_same(got, np.asarray(want))


@pytest.mark.parametrize("name", sorted(REAL_ONLY))
def test_complex_inverse_functions_off_branch_cuts(name):
    z = np.array([0.3 + 0.4j, -0.7 + 1.2j, 2.0 - 0.5j, -1.5 - 2.5j, 0.1j], np.complex128)
    compare(getattr(tnp, name), getattr(np, name), z)
    compare(getattr(tnp, name), getattr(np, name), z.astype(np.complex64))


def test_real_special_values():
    x = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, 709.0, 710.0, -710.0, math.inf,
                  -math.inf, math.nan])
    for name in ["sinh", "cosh", "arcsinh", "arctanh", "arcsin", "arccos", "arctan", "expm1",
                 "log1p", "sign", "signbit", "isposinf", "sinc", "exp2", "log2"]:
        compare(getattr(tnp, name), getattr(np, name), x, rtol=1e-12)
    compare(tnp.arccosh, np.arccosh, np.abs(x) + 1, rtol=1e-12)


def test_sign_of_zero_and_float16_sinc_round_like_numpy():
    # Found by a random run: sign(-0.0) is +0.0 in NumPy; float16 sinc rounds pi * x and
    # sin(pi x) to float16 (sinc(-7.25) = -0.03072, 1% off the exact value; pi * 65504
    # overflows to NaN).
    for dt in ("float16", "float32", "float64"):
        got = run_both(tnp.sign, np.array([-0.0, 0.0], dt))
        assert not np.signbit(got[0]).any() and not np.signbit(got[1]).any()
    x = np.array([-7.25, 0.0, 1e-3, 65504.0, 3.3, -12.1], np.float16)
    compare(tnp.sinc, np.sinc, x, rtol=0)


@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 3])
@settings(max_examples=15)
@given(x=array_and_dtype(["bool", "int8", "int64", "uint8", "float32", "float64",
                          "complex128"], lo=-300, hi=300))
def test_round_matches_numpy(decimals, x):
    compare(tnp.round, np.round, x, decimals=decimals)
    compare(tnp.around, np.around, x, decimals=decimals)


def test_round_is_half_to_even():
    compare(tnp.round, np.round, np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5]))
    compare(tnp.round, np.round, np.array([15, 25, -15, -25, 35], np.int32), decimals=-1)
    compare(tnp.round, np.round, np.array([0.125, 0.375, 2.675]), decimals=2)


# ---------------------------------------------------------------- binary ufuncs
BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
          "mod", "fmod", "power", "float_power", "arctan2", "hypot", "maximum", "minimum",
          "fmax", "fmin", "copysign", "heaviside", "logaddexp", "logaddexp2", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "equal", "not_equal",
          "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
          "logical_xor"]
PYTHON_SCALARS = st.one_of(st.booleans(), st.integers(-5, 5), st.floats(-5, 5),
                           st.builds(complex, st.floats(-3, 3), st.floats(-3, 3)))


@pytest.mark.parametrize("name", BINARY)
@settings(max_examples=15)
@given(data=st.data())
def test_binary_matches_numpy(name, data):
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                         max_side=3)).input_shapes
    d1, d2 = data.draw(st.sampled_from(ALL)), data.draw(st.sampled_from(ALL))
    x = data.draw(arrays(d1, s1))
    y = data.draw(st.one_of(arrays(d2, s2), PYTHON_SCALARS))
    if name in ("power",) and np.result_type(x, y).kind in "iub":
        y = abs(y) if isinstance(y, (int, bool)) else np.abs(y)  # ints**negative raise
    compare(getattr(tnp, name), getattr(np, name), x, y)


def test_integer_division_by_zero_is_zero_like_numpy():
    x = np.array([7, -7, 0, 5, -128], np.int8)
    y = np.array([0, 2, 0, -3, -1], np.int8)
    for name in ("floor_divide", "remainder", "fmod"):
        compare(getattr(tnp, name), getattr(np, name), x, y)
    compare(tnp.divmod, np.divmod, x, y)


def test_float_floor_division_follows_numpy_divmod():
    x = np.array([7.5, -7.5, 1.0, -1.0, 0.0, -0.0, math.inf, 5.0, 5.0, math.nan])
    y = np.array([2.0, 2.0, math.inf, math.inf, -3.0, 3.0, 2.0, 0.0, -0.0, 1.0])
    for name in ("floor_divide", "remainder", "fmod"):
        compare(getattr(tnp, name), getattr(np, name), x, y, rtol=0)
        got = getattr(tnp, name)(x, y)
        want = numpy_result(getattr(np, name), x, y)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_fmax_fmin_ignore_nan_maximum_propagates():
    x = np.array([math.nan, 1.0, math.nan, 2.0])
    y = np.array([3.0, math.nan, math.nan, 1.0])
    for name in ("fmax", "fmin", "maximum", "minimum"):
        compare(getattr(tnp, name), getattr(np, name), x, y)


def test_power_with_negative_integer_exponent():
    with pytest.raises(TracerValueError, match="negative integer powers"):
        tnp.power(np.array([2, 3]), np.array([1, -1]))
    graph = trace(tnp.power, [ShapedArray((3,), np.int32), ShapedArray((3,), np.int32)])
    out = run_graph(graph, [np.array([2, 1, -1], np.int32), np.array([-1, -2, -3], np.int32)])
    np.testing.assert_array_equal(out[0], [0, 1, -1])  # traced: JAX's convention


def test_complex_comparisons_are_lexicographic():
    x = np.array([1 + 2j, 1 + 1j, 2 + 0j, 1 + 1j])
    y = np.array([1 + 1j, 1 + 1j, 1 + 5j, 3 + 0j])
    for name in ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum"):
        compare(getattr(tnp, name), getattr(np, name), x, y)


# ---------------------------------------------------------------- clip and where
@settings(max_examples=30)
@given(data=st.data())
def test_clip_matches_numpy(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    dt = data.draw(st.sampled_from(["int8", "int64", "uint8", "float32", "float64"]))
    x = data.draw(arrays(dt, shapes.input_shapes[0]))
    lo = data.draw(st.one_of(st.none(), arrays(dt, shapes.input_shapes[1]), st.integers(-5, 5)))
    hi = data.draw(st.one_of(st.none(), arrays(dt, shapes.input_shapes[2]), st.floats(-5, 5)))
    if np.dtype(dt).kind == "u" and isinstance(lo, int):
        lo = abs(lo)
    compare(tnp.clip, np.clip, x, lo, hi)
    if lo is not None:
        compare(lambda a: tnp.clip(a, min=lo), lambda a: np.clip(a, min=lo), x)


@settings(max_examples=30)
@given(data=st.data())
def test_where_matches_numpy(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    cond = data.draw(array_and_dtype(["bool", "int8", "float32"],
                                     shapes=st.just(shapes.input_shapes[0])))
    x = data.draw(array_and_dtype(REAL, shapes=st.just(shapes.input_shapes[1])))
    y = data.draw(st.one_of(array_and_dtype(REAL, shapes=st.just(shapes.input_shapes[2])),
                            PYTHON_SCALARS))
    compare(tnp.where, np.where, cond, x, y)


def test_where_one_argument():
    got = tnp.where(np.array([[0, 1], [2, 0]]))
    for g, w in zip(got, np.nonzero(np.array([[0, 1], [2, 0]])), strict=True):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(TracerTypeError, match="where"):
        trace(tnp.where, [ShapedArray((3,), np.bool_)])
    with pytest.raises(TracerValueError, match="both or neither"):
        tnp.where(np.array([True]), 1)
