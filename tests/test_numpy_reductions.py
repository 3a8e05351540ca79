"""tracer.numpy's reductions (sum, mean, var, argmax, cumsum, ...) vs NumPy 2.

Every comparison runs twice: eagerly (NumPy arrays in, ndarrays out) and traced
(`tests.numpy_compare`), and checks the result dtype as well as the values.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer.numpy as tnp
from tests.numpy_compare import ALL, SHAPES, arrays, compare, trace
from tracer.core import ShapedArray, count_eqns
from tracer.errors import ShapeError, TracerValueError


# ---------------------------------------------------------------- reductions
@st.composite
def reduction_case(draw, dtypes=ALL, tuple_axes=True, lo=-3, hi=3):
    dt = draw(st.sampled_from(dtypes))
    x = draw(arrays(dt, SHAPES, lo=lo, hi=hi, special=False))
    nd = x.ndim
    choices = [st.none()]
    if nd:
        choices.append(st.integers(-nd, nd - 1))
        if tuple_axes:
            choices.append(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(
                lambda axes: tuple(a - nd if i % 2 else a for i, a in enumerate(axes))))
    return x, draw(st.one_of(*choices)), draw(st.booleans())


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "max", "min", "amax",
                                  "amin", "all", "any", "ptp", "count_nonzero"])
@settings(max_examples=25)
@given(case=reduction_case())
def test_reductions_match_numpy(name, case):
    x, axis, keepdims = case
    compare(getattr(tnp, name), getattr(np, name), x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "complex64", "bool"])
def test_reduction_dtype_argument(name, dtype):
    x = np.arange(6, dtype=np.int16).reshape(2, 3) % 3
    compare(getattr(tnp, name), getattr(np, name), x, axis=0, dtype=dtype)


@pytest.mark.parametrize("name", ["mean", "var", "std"])
@pytest.mark.parametrize("axis", [None, 1])
def test_integer_dtype_moments_wrap_and_truncate_like_numpy(name, axis):
    # Found by a random run: with an integer dtype= NumPy sums in it (wrapping) and
    # truncates each quotient back (mean([127, 32, 63, 0], dtype=int8) = -8); var's mean
    # is truncated before the deviations; std raises for an array result.
    x = np.array([[127, 32, 63, 0], [1, 127, -1, 32], [0, 0, 0, 7]], np.int8)
    for dtype in ("int8", "int64"):
        compare(getattr(tnp, name), getattr(np, name), x, axis=axis, dtype=dtype)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@settings(max_examples=30)
@given(case=reduction_case(tuple_axes=False, lo=-2, hi=2))
def test_argmax_argmin_match_numpy(name, case):
    x, axis, keepdims = case
    compare(getattr(tnp, name), getattr(np, name), x, axis=axis, keepdims=keepdims)


def test_argmax_first_occurrence_and_first_nan():
    x = np.array([[1.0, 3.0, 3.0, math.nan, 2.0, math.nan], [0.0, -1.0, 0.0, -1.0, 5.0, 5.0]])
    for name in ("argmax", "argmin"):
        compare(getattr(tnp, name), getattr(np, name), x, axis=1)
        compare(getattr(tnp, name), getattr(np, name), x)
    compare(tnp.argmax, np.argmax, np.array([True, False, True]))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@settings(max_examples=30)
@given(case=reduction_case(tuple_axes=False, lo=-1, hi=1))
def test_cumulative_match_numpy(name, case):
    x, axis, _ = case
    compare(getattr(tnp, name), getattr(np, name), x, axis=axis)


def test_cumsum_is_one_sequential_scan():
    graph = trace(lambda a: tnp.cumsum(a, axis=1), [ShapedArray((2, 9), np.float32)])
    ops_used = count_eqns(graph).by_op
    assert ops_used["scan"] == 1 and ops_used["add"] == 1 and "pad" not in ops_used


def test_cumsum_adds_in_numpy_order():
    # A log-step scan rounds differently; NumPy adds left to right.
    x = np.random.default_rng(0).random(4097).astype(np.float32) * 1000
    compare(tnp.cumsum, np.cumsum, x, rtol=0)
    compare(tnp.cumsum, np.cumsum, x.astype(np.float16), rtol=0)


@pytest.mark.parametrize("name, kw", [("sum", {"initial": 5}), ("prod", {"initial": 2}),
                                      ("max", {"initial": 10}), ("min", {"initial": -10}),
                                      ("sum", {"where": np.array([True, False, True])}),
                                      ("max", {"initial": -50, "where": np.array([0, 1, 1])}),
                                      ("mean", {"where": np.array([True, False, True])}),
                                      ("var", {"where": np.array([True, True, False])}),
                                      ("all", {"where": np.array([True, False, True])}),
                                      ("var", {"ddof": 1}), ("std", {"correction": 1}),
                                      ("var", {"ddof": 5})])
def test_reduction_options(name, kw):
    x = np.array([[1.0, -2.0, 3.5], [4.0, 0.0, -6.0]])
    compare(getattr(tnp, name), getattr(np, name), x, axis=1, **kw)
    compare(getattr(tnp, name), getattr(np, name), x.astype(np.int32), axis=-1, **kw)


def test_empty_reductions():
    e = np.zeros((0, 3), np.float32)
    for name in ("sum", "prod", "any", "all", "count_nonzero"):
        compare(getattr(tnp, name), getattr(np, name), e, axis=0)
    with pytest.raises(TracerValueError, match=r"max: zero-size array"):
        tnp.max(e, axis=0)
    compare(tnp.max, np.max, e, axis=1)  # reduces nothing empty: shape (0,)
    compare(tnp.max, np.max, e, axis=0, initial=-1.0)
    with pytest.raises(TracerValueError, match="argmin: attempt to get argmin of an empty"):
        tnp.argmin(e)
    with pytest.raises(TracerValueError, match="initial"):
        tnp.max(np.ones(3), where=np.array([True, False, True]))


def test_reductions_build_single_op_computations():
    graph = trace(lambda a: tnp.sum(a, axis=(0, 2)), [ShapedArray((2, 3, 4), np.int8)])
    (reduce_eqn,) = [e for e in graph.eqns if e.op.name == "reduce"]
    assert reduce_eqn.params["dimensions"] == (0, 2)
    assert [e.op.name for e in reduce_eqn.params["to_apply"].eqns] == ["add"]
    assert graph.out_avals == (ShapedArray((3,), np.int64),)
    graph = trace(tnp.any, [ShapedArray((4,), np.float32)])
    (reduce_eqn,) = [e for e in graph.eqns if e.op.name == "reduce"]
    assert [e.op.name for e in reduce_eqn.params["to_apply"].eqns] == ["bitwise_or"]


def test_average_matches_numpy():
    x = np.arange(12.0).reshape(3, 4)
    w = np.array([1.0, 2.0, 0.5, 3.0])
    compare(tnp.average, np.average, x)
    compare(tnp.average, np.average, x, axis=1, weights=w)
    compare(tnp.average, np.average, x.astype(np.int8), axis=1, weights=w.astype(np.float32))
    compare(tnp.average, np.average, x, axis=0, weights=np.ones((3, 4)), returned=True)
    compare(tnp.average, np.average, x, axis=(0, 1), keepdims=True)
    with pytest.raises(ZeroDivisionError):
        tnp.average(x, axis=1, weights=np.array([1.0, -1.0, 0.0, 0.0]))
    with pytest.raises(TypeError, match="Axis must be specified"):
        tnp.average(x, weights=w)
    with pytest.raises(ShapeError, match="Length of weights"):
        tnp.average(x, axis=0, weights=w)
