"""tracer.numpy sorting and searching vs NumPy itself: random arrays eagerly, and a
fixed sample of every dtype under jit (cpu; one compile per structure):
sort, argsort, searchsorted, partition, argpartition, lexsort, unique, nonzero,
argwhere, flatnonzero (values and dtypes; NaNs of both signs, -0.0, duplicates)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.checks import like_numpy, matches
from tracer import errors

EXAMPLES = settings(max_examples=25, deadline=None)
DTYPES = ["float64", "float32", "float16", "int32", "int8", "uint8", "bool", "complex64"]


def sample(rng, shape, dtype):
    """Small values with duplicates; floats also get NaNs of both signs and signed zeros."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    x = rng.integers(0 if dtype.kind == "u" else -3, 4, shape).astype(dtype)
    if dtype.kind == "c":
        x = np.asarray(x + 1j * rng.integers(-1, 2, shape).astype(dtype))
    if dtype.kind in "fc":
        pick = rng.random(shape)
        x[pick < 0.15] = np.nan
        x[(pick >= 0.15) & (pick < 0.25)] = -np.nan
        x[(pick >= 0.25) & (pick < 0.35)] = -0.0
    return x


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_array_equal(got, want)


@st.composite
def arrays(draw, min_rank=1):
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=min_rank, max_size=3)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return sample(rng, shape, dtype)


def axes(x):
    return st.sampled_from([None] + list(range(-x.ndim, x.ndim)))


# ----------------------------------------------------------------------------- sort

@EXAMPLES
@given(arrays(), st.data())
def test_sort_and_argsort_match_numpy(x, data):
    axis = data.draw(axes(x))
    same(tnp.sort(x, axis=axis), np.sort(x, axis=axis))
    same(tnp.argsort(x, axis=axis, kind="stable"), np.argsort(x, axis=axis, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_under_jit(dtype):
    x = sample(np.random.default_rng(4), (6, 5), dtype)
    fn = tr.jit(lambda x: (tnp.sort(x, axis=0), tnp.argsort(x, axis=None, kind="stable"),
                           tnp.argsort(x)))
    got = fn(x)
    same(got[0], np.sort(x, axis=0))
    same(got[1], np.argsort(x, axis=None, kind="stable"))
    same(got[2], np.argsort(x, kind="stable"))


def test_default_kind_argsort_sorts():
    x = np.float32([2, np.nan, -0.0, 0.0, -np.nan, 1, 1])
    idx = tnp.argsort(x)
    same(x[idx], np.sort(x))
    same(tnp.argsort(np.array(5.0)), np.argsort(np.array(5.0)))


def test_sort_accepts_numpy_kinds_and_rejects_others():
    x = np.array([3, 1, 2])
    for kind in ("quicksort", "mergesort", "heapsort", "stable", None):
        same(tnp.sort(x, kind=kind), np.sort(x))
    same(tnp.argsort(x, stable=True), np.argsort(x, stable=True))
    with pytest.raises(ValueError, match="sort kind"):
        tnp.sort(x, kind="bogus")
    with pytest.raises(errors.ParamError, match="order"):
        tnp.sort(x, order="f0")
    with pytest.raises(IndexError, match="axis"):
        tnp.sort(np.array(3.0))


@EXAMPLES
@given(arrays(), st.data())
def test_partition_is_a_valid_partition(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    if n == 0:
        return
    kth = data.draw(st.integers(-n, n - 1))
    want = np.sort(x, axis=axis)
    got = tnp.partition(x, kth, axis=axis)
    same(np.take(got, kth, axis), np.take(want, kth, axis))
    idx = tnp.argpartition(x, kth, axis=axis)
    same(np.take(np.take_along_axis(x, idx, axis), kth, axis), np.take(want, kth, axis))
    with pytest.raises(ValueError, match="out of bounds"):
        tnp.partition(x, n, axis=axis)


@EXAMPLES
@given(st.lists(st.sampled_from(DTYPES[:-1]), min_size=1, max_size=3),
       st.lists(st.integers(1, 4), min_size=1, max_size=2), st.data())
def test_lexsort_matches_numpy(dtypes, shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    keys = [sample(rng, shape, d) for d in dtypes]
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    same(tnp.lexsort(keys, axis=axis), np.lexsort(keys, axis=axis))


def test_lexsort_and_partition_under_jit():
    rng = np.random.default_rng(6)
    keys = [sample(rng, (4, 7), d) for d in ("float32", "int8", "bool")]
    same(tr.jit(lambda *ks: tnp.lexsort(ks))(*keys), np.lexsort(keys))
    got = tr.jit(lambda x: tnp.partition(x, 3, axis=0))(keys[0])
    same(got[3], np.sort(keys[0], axis=0)[3])


def test_lexsort_forms_and_errors():
    same(tnp.lexsort(np.array([[1, 2, 1], [3, 3, 1]])), np.int64([2, 0, 1]))
    same(tnp.lexsort([np.array(1), np.array(2)]), np.lexsort([np.array(1), np.array(2)]))
    with pytest.raises(ValueError, match="same shape"):
        tnp.lexsort([[1, 2], [3]])
    with pytest.raises(TypeError, match="len > 0"):
        tnp.lexsort([])


# ----------------------------------------------------------------------------- searchsorted

@EXAMPLES
@given(st.sampled_from(DTYPES), st.integers(0, 9), st.sampled_from(["left", "right"]),
       st.booleans(), st.data())
def test_searchsorted_matches_numpy(dtype, n, side, use_sorter, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    a, v = sample(rng, (n,), dtype), sample(rng, (3, 2), dtype)
    sorter = np.argsort(a, kind="stable") if use_sorter else None
    a = a if use_sorter else np.sort(a)
    same(tnp.searchsorted(a, v, side=side, sorter=sorter),
         np.searchsorted(a, v, side=side, sorter=sorter))


@pytest.mark.parametrize("dtype", ["float64", "int8", "complex64"])
def test_searchsorted_under_jit(dtype):
    rng = np.random.default_rng(7)
    a, v = sample(rng, (9,), dtype), sample(rng, (3, 4), dtype)
    order = np.argsort(a, kind="stable")
    fn = tr.jit(lambda a, v, s: (tnp.searchsorted(a, v), tnp.searchsorted(a, v, "right", s)))
    got = fn(np.sort(a), v, order)
    same(got[0], np.searchsorted(np.sort(a), v))
    same(got[1], np.searchsorted(np.sort(a), v, "right", order))


def test_searchsorted_promotes_and_takes_scalars():
    a = np.array([1, 2, 2, 3])
    same(tnp.searchsorted(a, 2.5), np.searchsorted(a, 2.5))
    same(tr.jit(lambda a: tnp.searchsorted(a, 2, side="right"))(a), np.int64(3))
    same(tnp.searchsorted(np.float32([]), [1.0, 2.0]), np.int64([0, 0]))
    with pytest.raises(ValueError, match="side"):
        tnp.searchsorted(a, 1, side="middle")
    with pytest.raises(ValueError, match="1-D"):
        tnp.searchsorted(a.reshape(2, 2), 1)


# ----------------------------------------------------------------------------- unique

@EXAMPLES
@given(arrays(min_rank=0), st.booleans())
def test_unique_matches_numpy_eagerly(x, equal_nan):
    flags = dict(return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(x, equal_nan=equal_nan, **flags)
    got = tnp.unique(x, equal_nan=equal_nan, **flags)
    for g, w in zip(got, want, strict=True):
        same(g, w)
    same(tnp.unique(x, equal_nan=equal_nan), np.unique(x, equal_nan=equal_nan))


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool"])
def test_unique_with_a_static_size_under_jit(dtype):
    x = sample(np.random.default_rng(8), (5, 4), dtype)
    flags = dict(return_index=True, return_inverse=True, return_counts=True)
    values, index, inverse, counts = np.unique(x, **flags)
    sizes = [max(len(values) + extra, 0) for extra in (-1, 0, 2)]
    results = tr.jit(lambda x: [tnp.unique(x, size=s, **flags) for s in sizes])(x)
    for size, got in zip(sizes, results, strict=True):
        keep = min(size, len(values))
        pad = size - keep
        same(got[0], np.concatenate([values[:keep], np.repeat(values[:1], pad)]))
        same(got[1], np.concatenate([index[:keep], np.repeat(index[:1], pad)]))
        same(got[2], inverse)
        same(got[3], np.concatenate([counts[:keep], np.zeros(pad, np.int64)]))


def test_unique_fill_value_and_errors():
    x = np.array([3, 1, 3])
    same(tr.jit(lambda x: tnp.unique(x, size=4, fill_value=-7))(x), np.array([1, 3, -7, -7]))
    same(tnp.unique(np.zeros(0), size=2, fill_value=5.0), np.float64([5, 5]))
    with pytest.raises(ValueError, match="fill_value"):
        tnp.unique(np.zeros(0), size=2)
    with pytest.raises(tr.ConcretizationError, match="size="):
        tr.jit(tnp.unique)(x)
    with pytest.raises(errors.ParamError, match="axis"):
        tnp.unique(x, axis=0)


# ----------------------------------------------------------------------------- nonzero

@EXAMPLES
@given(arrays())
def test_nonzero_argwhere_flatnonzero_match_numpy(x):
    for got, want in zip(tnp.nonzero(x), np.nonzero(x), strict=True):
        same(got, want)
    same(tnp.argwhere(x), np.argwhere(x))
    same(tnp.flatnonzero(x), np.flatnonzero(x))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_nonzero_with_a_static_size_under_jit(dtype):
    x = sample(np.random.default_rng(9), (3, 4, 2), dtype)
    count = np.count_nonzero(x)
    sizes = [max(count + extra, 0) for extra in (-2, 0, 3)]
    results = tr.jit(lambda x: [(tnp.nonzero(x, size=s, fill_value=-1), tnp.argwhere(x, size=s),
                                 tnp.flatnonzero(x, size=s, fill_value=9)) for s in sizes])(x)
    for size, (nz, aw, flat) in zip(sizes, results, strict=True):
        keep, pad = min(size, count), max(size - count, 0)
        for got, want in zip(nz, np.nonzero(x), strict=True):
            same(got, np.concatenate([want[:keep], np.full(pad, -1)]))
        same(aw, np.concatenate([np.argwhere(x)[:keep], np.zeros((pad, x.ndim), np.int64)]))
        same(flat, np.concatenate([np.flatnonzero(x)[:keep], np.full(pad, 9)]))


def test_nonzero_rules():
    with pytest.raises(ValueError, match="0d"):
        tnp.nonzero(np.array(1))
    same(tnp.argwhere(np.array(5)), np.argwhere(np.array(5)))
    same(tnp.argwhere(np.array(0)), np.argwhere(np.array(0)))
    with pytest.raises(tr.ConcretizationError, match="size="):
        tr.jit(tnp.flatnonzero)(np.arange(3))
    got = tr.jit(lambda x: tnp.nonzero(x, size=3, fill_value=(7, 8)))(np.eye(2))
    same(got[0], np.int64([0, 1, 7]))
    same(got[1], np.int64([0, 1, 8]))


@pytest.mark.parametrize("v", [300, -1, 2.5])
def test_searchsorted_python_scalar_outside_the_array_dtype(v):
    a = np.array([0, 2, 3, 200], np.uint8)
    like_numpy(lambda x: tnp.searchsorted(x, v), lambda x: np.searchsorted(x, v), a)


def test_sort_of_complex_treats_signed_zero_real_parts_as_equal():
    x = np.array([np.inf - 2.25j, -0.0 + 1e-3j, -2.25 - np.inf * 1j, 1e-3 + 0.5j,
                  complex(0.5, np.inf), complex(0, -np.inf), 3 + 7j])
    like_numpy(tnp.sort, np.sort, x)
    got = tnp.sort(x)
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(np.sort(x).real))


_NAN_COMPLEX = np.array([complex(-0.0, 1), complex(0.0, -1), complex(np.nan, 0), complex(0, np.nan),
                         1 + 1j, complex(-0.0, -0.0), complex(np.nan, -3), complex(2, np.nan),
                         complex(np.nan, np.nan), complex(-np.inf, 2)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_complex_nan_order_of_sort_argsort_searchsorted(seed):
    # NumPy: R+Rj < R+nanj < nan+Rj < nan+nanj, each class in its own order
    z = np.random.default_rng(seed).permutation(_NAN_COMPLEX)
    like_numpy(tnp.sort, np.sort, z)
    like_numpy(lambda a: tnp.argsort(a, stable=True), lambda a: np.argsort(a, stable=True), z)
    like_numpy(lambda a, v: tnp.searchsorted(a, v, side="right"),
               lambda a, v: np.searchsorted(a, v, side="right"), np.sort(z), z)
    matches(tnp.lexsort((z, z.real)), np.lexsort((z, z.real)))


@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_merges_every_complex_with_a_nan_part(equal_nan):
    z = np.random.default_rng(3).permutation(_NAN_COMPLEX)
    kw = dict(return_index=True, return_inverse=True, return_counts=True, equal_nan=equal_nan)
    for got, want in zip(tnp.unique(z, **kw), np.unique(z, **kw), strict=True):
        matches(got, want)
