"""median / quantile / percentile and their NaN-ignoring forms vs NumPy 2 (values and
dtypes), eagerly and traced, for every interpolation method."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracer as tr
import tracer.numpy as tnp
from tests.checks import like_numpy
from tests.numpy_compare import arrays, assert_same, compare

METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest"]
RTOL = {"float16": 4e-3, "float32": 1e-5}


@st.composite
def data_axis(draw, nan=False):
    dt = draw(st.sampled_from(["int8", "int64", "float16", "float32", "float64"]))
    x = draw(arrays(dt, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
                    lo=-20, hi=20, special=False))
    if nan and x.dtype.kind == "f":
        x = np.where(draw(hnp.arrays(np.bool_, x.shape)), np.nan, x).astype(x.dtype)
    nd = x.ndim
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                          st.lists(st.integers(0, nd - 1), min_size=1, unique=True).map(tuple)))
    return x, axis


QS = st.one_of(st.floats(0, 1), st.lists(st.floats(0, 1), min_size=1, max_size=3).map(np.array))


def traceable_q(nfn, x, q, method):
    """q as compare() should pass it: traced (an array) unless NumPy's result is an
    integer array, where a traced q is refused (no NaN can mark a q out of range)."""
    integer_result = np.asarray(nfn(np.zeros(1, x.dtype), q, method=method)).dtype.kind in "iu"
    return q.tolist() if integer_result and isinstance(q, np.ndarray) else q


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=12, deadline=None)
@given(case=data_axis(), q=QS, keepdims=st.booleans())
def test_quantile_matches_numpy(method, case, q, keepdims):
    x, axis = case
    rtol = RTOL.get(str(x.dtype))
    compare(tnp.quantile, np.quantile, x, traceable_q(np.quantile, x, q, method), axis=axis,
            method=method, keepdims=keepdims, rtol=rtol)


@pytest.mark.parametrize("name", ["nanquantile", "nanpercentile", "percentile"])
@settings(max_examples=15, deadline=None)
@given(case=data_axis(nan=True), q=QS, method=st.sampled_from(METHODS))
def test_percentile_and_nan_forms_match_numpy(name, case, q, method):
    x, axis = case
    q = traceable_q(getattr(np, name), x, q * 100 if "percentile" in name else q, method)
    compare(getattr(tnp, name), static_dtype(getattr(np, name)), x, q, axis=axis,
            method=method, rtol=RTOL.get(str(x.dtype)))


def static_dtype(nfn):
    """nfn with the result dtype NumPy gives for NaN-free data of the same dtypes.

    NumPy's nan-forms answer an all-NaN slice with `np.full(q.shape, nan, x.dtype)`, and
    `apply_along_axis` lets the first slice pick the dtype of all of them: float16 data
    with a float64 q array gives float64, or float16 if the first slice is all NaN (found
    by the random run: nanpercentile(float16 [nan], q=[0.])). A traced function cannot
    have a value-dependent dtype, so the oracle's dtype is the NaN-free rule; the values
    are still compared."""
    def oracle(x, q, **kw):
        rule = np.asarray(nfn(np.ones_like(x), q, **kw)).dtype
        return np.asarray(nfn(x, q, **kw), dtype=rule)
    return oracle


def test_all_nan_slice_dtype_is_static():
    x = np.array([[np.nan, np.nan], [1, 2]], np.float16)
    for rows in (x, x[::-1]):
        compare(tnp.nanpercentile, static_dtype(np.nanpercentile), rows, np.array([0.0, 30]),
                axis=1, rtol=RTOL["float16"])


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@settings(max_examples=25, deadline=None)
@given(case=data_axis(nan=True), keepdims=st.booleans())
def test_median_matches_numpy(name, case, keepdims):
    x, axis = case
    compare(getattr(tnp, name), getattr(np, name), x, axis=axis, keepdims=keepdims,
            rtol=RTOL.get(str(x.dtype)))


@pytest.mark.parametrize("method", METHODS)
def test_weak_q_indexes_in_float64(method):
    # Found by a random run: NumPy 2.4 indexes with a Python float q in float64 (float16
    # quantile([0, 1], 0.9999999999999999, method="lower") is 0, not 1) and rounds only
    # the weight to the data's dtype; an integer q still interpolates (float64 result)
    # for every method but "linear".
    x = np.array([0.0, 1.0, 5.0], np.float16)
    for q in (0.9999999999999999, 1 / 3, 0.7):
        compare(tnp.quantile, np.quantile, x, q, method=method, rtol=RTOL["float16"])
        compare(tnp.percentile, np.percentile, x, 100 * q, method=method,
                rtol=RTOL["float16"])
    data = np.array([13, -11, 3], np.int8)
    for q in (0, 1, np.array([0, 1])):
        compare(tnp.quantile, np.quantile, data, traceable_q(np.quantile, data, q, method),
                method=method)


def test_quantile_edge_rules():
    compare(tnp.quantile, np.quantile, np.arange(5), [0, 1])  # integer indices (int result)
    compare(tnp.quantile, np.quantile, np.array([1.0, np.inf]), 1.0)   # NumPy's lerp: NaN
    with pytest.raises(ValueError, match="range"):
        tnp.quantile(np.arange(3.0), 1.5)
    with pytest.raises(ValueError, match="method"):
        tnp.quantile(np.arange(3.0), 0.5, method="cubic")


def test_compiled_order_statistics():
    x = np.random.default_rng(4).normal(size=(50, 7))
    x[3, 2] = np.nan
    f = tr.jit(lambda v: (tnp.median(v, axis=0), tnp.nanmedian(v, axis=0),
                          tnp.percentile(v, [5, 50, 95], axis=1),
                          tnp.nanquantile(v, 0.3, axis=0, method="hazen")))
    want = (np.median(x, axis=0), np.nanmedian(x, axis=0), np.percentile(x, [5, 50, 95], axis=1),
            np.nanquantile(x, 0.3, axis=0, method="hazen"))
    for got, w in zip(f(x), want, strict=True):
        assert_same(got, w)


@pytest.mark.parametrize("name", ["quantile", "percentile", "nanquantile", "nanpercentile"])
def test_traced_q_outside_its_range_gives_nan(name):
    # Eagerly NumPy raises; a traced q cannot, and used to give the maximum (or minimum).
    scale = 100 if "percentile" in name else 1
    x = np.array([[3.0, 1.0, 4.0, 1.5], [9.0, 2.0, 6.0, 5.0]])
    q = np.array([-0.5, 0.0, 0.5, 1.0, 1.5, np.nan]) * scale
    fn = getattr(tnp, name)
    got = tr.jit(lambda v, p: fn(v, p, axis=1))(x, q)
    inside = np.array([False, True, True, True, False, False])
    want = getattr(np, name)(x, q[inside], axis=1)
    assert np.isnan(got[~inside]).all()
    np.testing.assert_allclose(got[inside], want)
    with pytest.raises(ValueError, match="range"):
        fn(x, q)


def test_traced_q_with_an_integer_result_is_refused():
    # "lower" of integer data is an integer array: no NaN can mark a bad q.
    f = tr.jit(lambda v, p: tnp.quantile(v, p, method="lower"))
    with pytest.raises(tr.TracerError, match="q is traced") as info:
        f(np.arange(5), 1.5)
    assert isinstance(info.value, TypeError)
    assert tr.jit(lambda v: tnp.quantile(v, 0.5, method="lower"))(np.arange(5)) == 2


@pytest.mark.parametrize("name,shape,axis", [
    ("median", (4, 0, 0), 2), ("median", (1, 0, 0), (-3,)), ("median", (0, 3, 4), 1),
    ("nanmedian", (0,), (0,)), ("nanmedian", (0, 3, 4), 0), ("nanmedian", (0, 3, 4), ()),
])
def test_median_of_empty_slices(name, shape, axis):
    x = np.zeros(shape)
    like_numpy(lambda a: getattr(tnp, name)(a, axis=axis, keepdims=True),
               lambda a: getattr(np, name)(a, axis=axis, keepdims=True), x)


def test_nanquantile_of_empty_slices_is_nan():
    x = np.zeros((2, 0, 4))
    like_numpy(lambda a: tnp.nanquantile(a, 0.5, axis=(1, 2)),
               lambda a: np.nanquantile(a, 0.5, axis=(1, 2)), x)
