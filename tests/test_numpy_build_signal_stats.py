"""tracer.numpy's grids, constructions and edits, signals and calculus (convolve,
interp, gradient, polynomials), statistics (histogram, bincount, cov), einsum and
vectorize vs NumPy 2 itself (values and result dtypes), eagerly and traced
(`run_both`: trace + `run_graph(check=True)`); hypothesis draws shapes, axes and dtypes.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracer as tr
import tracer.numpy as tnp
from tests.numpy_compare import NUMERIC, array_axis, arrays, assert_same, compare, run_both
from tracer.core import ShapedArray
from tracer.errors import TracerError, TracerTypeError

# ---------------------------------------------------------------- construction
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_grids_match_numpy(data):
    vecs = [data.draw(arrays(data.draw(st.sampled_from(NUMERIC)), st.integers(1, 4).map(
        lambda n: (n,)))) for _ in range(data.draw(st.integers(1, 3)))]
    indexing, sparse = data.draw(st.sampled_from(["xy", "ij"])), data.draw(st.booleans())
    compare(tnp.meshgrid, np.meshgrid, *vecs, indexing=indexing, sparse=sparse)
    dims = tuple(len(v) for v in vecs)
    compare(lambda: tnp.indices(dims), lambda: np.indices(dims))
    compare(lambda: tnp.indices(dims, sparse=True), lambda: np.indices(dims, sparse=True))
    compare(tnp.vander, np.vander, vecs[0], N=data.draw(st.integers(0, 4)),
            increasing=data.draw(st.booleans()))
    compare(tnp.kron, np.kron, vecs[0], vecs[-1])


@pytest.mark.parametrize("fn, args, kw", [
    ("tri", (3, 4), {"k": 1}), ("tri", (3,), {"dtype": int, "k": -1}),
    ("logspace", (0, 2, 5), {}), ("logspace", (1.5, 3, 4), {"base": 2.0, "endpoint": False}),
    ("logspace", ([0.0, 1.0], [2.0, 3.0], 3), {"axis": 1}),
    ("geomspace", (1, 1000, 4), {}), ("geomspace", (-1, -1000, 5), {"endpoint": False}),
    ("geomspace", (1j, 1000j, 4), {}), ("geomspace", (2.0, 5.0, 3), {"dtype": np.float32}),
    ("unravel_index", ([22, 41, 37], (7, 6)), {}), ("unravel_index", (17, (4, 5)), {"order": "F"}),
    ("ravel_multi_index", (([3, 6, 6], [4, 5, 1]), (7, 6)), {}),
    ("ravel_multi_index", (([3, 9, -6], [4, 5, -1]), (7, 6)), {"mode": ("clip", "wrap")}),
    ("ix_", ([0, 1], [2, 4]), {}), ("diagflat", ([[1, 2], [3, 4]],), {"k": -1}),
    ("block", ([[np.eye(2), np.zeros((2, 1))], [np.ones((1, 2)), np.full((1, 1), 7.0)]],), {}),
    ("block", ([np.arange(2, dtype=np.int8), 3.5],), {}),
])
def test_static_constructions_match_numpy(fn, args, kw):
    compare(getattr(tnp, fn), getattr(np, fn), *args, **kw)


@settings(max_examples=20, deadline=None)
@given(case=array_axis(shapes=hnp.array_shapes(min_dims=1, max_dims=2, min_side=1,
                                               max_side=5)), data=st.data())
def test_edits_match_numpy(case, data):
    x, axis = case
    n = x.shape[axis]
    idx = data.draw(st.lists(st.integers(-n, n - 1), max_size=3))
    compare(tnp.delete, np.delete, x, idx, axis=axis)
    compare(tnp.delete, np.delete, x, slice(0, None, 2))
    pos = data.draw(st.integers(-n, n))
    compare(tnp.insert, np.insert, x, pos, 7, axis=axis)
    compare(tnp.insert, np.insert, x, idx, 3)
    compare(tnp.append, np.append, x, x, axis=axis)
    compare(tnp.resize, np.resize, x, data.draw(st.tuples(st.integers(0, 4), st.integers(1, 4))))


def _numpy_inplace(fn, *args, **kw):
    """NumPy's in-place put / put_along_axis / fill_diagonal as a function."""
    def run(a, *rest):
        a = np.array(a, copy=True)
        fn(a, *rest, **kw)
        return a
    return run


def test_functional_updates_match_numpy():
    x = np.arange(12.0).reshape(3, 4)
    compare(lambda a, i, v: tnp.put(a, i, v, inplace=False), _numpy_inplace(np.put),
            x, [0, -1, 5], [7, 9])
    compare(lambda a, i, v: tnp.put(a, i, v, mode="clip", inplace=False),
            _numpy_inplace(np.put, mode="clip"), x, [1, 40], 5)
    idx = np.array([[2, 0, 1, 1]])
    compare(lambda a, i, v: tnp.put_along_axis(a, i, v, 0, inplace=False),
            _numpy_inplace(np.put_along_axis, axis=0), x, idx, -1.0)
    compare(lambda a, v: tnp.fill_diagonal(a, v, inplace=False),
            _numpy_inplace(np.fill_diagonal), x, [5, 6])
    compare(lambda a, v: tnp.fill_diagonal(a, v, wrap=True, inplace=False),
            _numpy_inplace(np.fill_diagonal, wrap=True), np.zeros((7, 3)), 4)
    with pytest.raises(TypeError, match="inplace=False"):
        tnp.put(x, [0], 1)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_selection_functions_match_numpy(data):
    x = data.draw(arrays(data.draw(st.sampled_from(NUMERIC)), (6,), lo=-5, hi=5))
    conds = [(x < 0).tolist(), (x > 2).tolist()]  # static masks (lists are not traced)
    compare(lambda a: tnp.select([a < 0, a > 2], [a * 2, a - 1], default=-7),
            lambda a: np.select([a < 0, a > 2], [a * 2, a - 1], default=-7), x)
    compare(lambda a: tnp.piecewise(a, [a < 0, a > 2], [lambda v: v * 3, 9, 1]),
            lambda a: np.piecewise(a, [a < 0, a > 2], [lambda v: v * 3, 9, 1]), x)
    idx = data.draw(hnp.arrays(np.int64, 6, elements=st.integers(0, 2)))
    compare(tnp.choose, np.choose, idx, [x, x * 2, -x])
    compare(tnp.compress, np.compress, conds[0], x)
    compare(tnp.extract, np.extract, conds[1], x)


# ---------------------------------------------------------------- signals, calculus
@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_convolve_correlate_match_numpy(name, mode, data):
    dt = data.draw(st.sampled_from(["int8", "int64", "float32", "float64", "complex128",
                                    "bool"]))
    a = data.draw(arrays(dt, st.integers(1, 7).map(lambda n: (n,)), lo=-4, hi=4,
                         special=False))
    v = data.draw(arrays(dt, st.integers(1, 7).map(lambda n: (n,)), lo=-4, hi=4,
                         special=False))
    compare(getattr(tnp, name), getattr(np, name), a, v, mode=mode)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_interp_matches_numpy(data):
    xp = np.sort(data.draw(hnp.arrays(np.float64, st.integers(1, 6), unique=True,
                                      elements=st.floats(-10, 10))))
    fp = data.draw(arrays(data.draw(st.sampled_from(["float32", "float64", "complex128",
                                                     "int8"])), xp.shape, special=False))
    x = data.draw(arrays("float64", st.integers(0, 8).map(lambda n: (n,)), lo=-12, hi=12))
    compare(tnp.interp, np.interp, x, xp, fp)
    if fp.dtype.kind != "c":
        compare(tnp.interp, np.interp, x, xp, fp, left=-1.0, right=2.5)
    compare(lambda v, f: tnp.interp(v, xp, f, period=7.5),
            lambda v, f: np.interp(v, xp, f, period=7.5), x, fp)  # static xp: sorted now


@settings(max_examples=20, deadline=None)
@given(case=array_axis(dtypes=["int8", "int64", "float16", "float32", "float64"],
                       shapes=hnp.array_shapes(min_dims=1, max_dims=3, min_side=3,
                                               max_side=5)), edge=st.sampled_from([1, 2]))
def test_calculus_matches_numpy(case, edge):
    y, axis = case
    rtol = 2e-2 if y.dtype == np.float16 else None
    compare(tnp.trapezoid, np.trapezoid, y, axis=axis, rtol=rtol)
    coords = np.cumsum(np.arange(1, y.shape[axis] + 1) * 0.5)
    compare(lambda a: tnp.trapezoid(a, x=coords, axis=axis),
            lambda a: np.trapezoid(a, x=coords, axis=axis), y, rtol=rtol)
    compare(lambda a: tnp.gradient(a, axis=axis, edge_order=edge),
            lambda a: np.gradient(a, axis=axis, edge_order=edge), y, rtol=rtol)
    compare(lambda a: tnp.gradient(a, coords, axis=axis, edge_order=edge),
            lambda a: np.gradient(a, coords, axis=axis, edge_order=edge), y, rtol=rtol)
    compare(lambda a: tnp.gradient(a, 2.0), lambda a: np.gradient(a, 2.0), y, rtol=rtol)
    compare(tnp.unwrap, np.unwrap, y, axis=axis, rtol=rtol)


def test_gradient_of_booleans_raises_as_numpy():
    flags = np.array([True, False, True])
    with pytest.raises(TypeError):
        np.gradient(flags)
    with pytest.raises(TypeError, match="gradient.*boolean"):
        tnp.gradient(flags)
    with pytest.raises(TypeError, match="gradient.*boolean"):
        tr.jit(tnp.gradient)(flags)


@settings(max_examples=15, deadline=None)
@given(p=arrays("float64", st.integers(1, 5).map(lambda n: (n,)), lo=-3, hi=3, special=False),
       q=arrays("int32", st.integers(1, 4).map(lambda n: (n,)), lo=-3, hi=3),
       m=st.integers(0, 3))
def test_polynomials_match_numpy(p, q, m):
    x = np.linspace(-2, 2, 7)
    compare(tnp.polyval, np.polyval, p, x)
    compare(tnp.polyval, np.polyval, q, x.astype(np.float32))
    for name in ("polyadd", "polysub"):
        compare(getattr(tnp, name), getattr(np, name), p, q)
    # polymul drops leading zeros like poly1d: possible for static coefficients only.
    compare(lambda: tnp.polymul(p, q), lambda: np.polymul(p, q))
    compare(tnp.polyder, np.polyder, q, m=m)
    compare(tnp.polyint, np.polyint, p, m=m)


# ---------------------------------------------------------------- statistics
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_histogram_family_matches_numpy(data):
    a = data.draw(arrays(data.draw(st.sampled_from(["int8", "float32", "float64"])),
                         st.integers(1, 30).map(lambda n: (n,)), lo=-5, hi=5, special=False))
    bins = data.draw(st.integers(1, 6))
    density = data.draw(st.booleans())
    compare(tnp.histogram, np.histogram, a, bins=bins, density=density)
    compare(tnp.histogram, np.histogram, a, bins=bins, range=(-2.0, 3.0))
    edges = np.sort(data.draw(hnp.arrays(np.float64, st.integers(2, 6), unique=True,
                                         elements=st.floats(-6, 6))))
    w = np.linspace(0.5, 2, a.size).astype(np.float32)
    # NumPy sums float32 weights as differences of a float32 cumsum: 1-ulp (f32) noise
    compare(tnp.histogram, np.histogram, a, bins=edges, weights=w, density=density, rtol=1e-5)
    compare(tnp.histogram_bin_edges, np.histogram_bin_edges, a, bins=bins)
    compare(tnp.digitize, np.digitize, a, edges, right=data.draw(st.booleans()))
    compare(tnp.digitize, np.digitize, a, edges[::-1], right=data.draw(st.booleans()))


@settings(max_examples=20, deadline=None)
@given(x=arrays("int64", st.integers(0, 20).map(lambda n: (n,)), lo=0, hi=9),
       minlength=st.integers(0, 12))
def test_bincount_matches_numpy(x, minlength):
    w = np.linspace(-1, 1, x.size)
    # Eagerly the length comes from the data; traced it must be given (length=).
    assert_same(tnp.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))
    assert_same(tnp.bincount(x, w, minlength), np.bincount(x, w, minlength))
    length = max(minlength, 10)
    compare(lambda v: tnp.bincount(v, length=length), lambda v: np.bincount(v, None, length), x)
    compare(lambda v, u: tnp.bincount(v, u, length=length),
            lambda v, u: np.bincount(v, u, length), x, w)
    short = run_both(lambda v: tnp.bincount(v, length=3), x)  # values >= 3 are dropped
    for got in short:
        assert_same(got, np.bincount(x[x < 3], minlength=3))


def test_bincount_under_trace_needs_length():
    with pytest.raises(TracerTypeError, match="length="):
        tr.jit(tnp.bincount)(np.array([1, 2]))


@settings(max_examples=20, deadline=None)
@given(data=st.data(), rowvar=st.booleans(), ddof=st.sampled_from([None, 0, 2]))
def test_cov_corrcoef_match_numpy(data, rowvar, ddof):
    dt = data.draw(st.sampled_from(["int8", "float32", "float64", "complex128"]))
    m = data.draw(arrays(dt, st.tuples(st.integers(1, 3), st.integers(3, 6)), lo=-4, hi=4,
                         special=False))
    compare(tnp.cov, np.cov, m, rowvar=rowvar, ddof=ddof)
    compare(tnp.cov, np.cov, m, m[::-1], rowvar=rowvar)
    fw = np.arange(1, m.shape[1 if rowvar else 0] + 1)
    compare(tnp.cov, np.cov, m, rowvar=rowvar, fweights=fw, aweights=fw[::-1] * 0.5)
    with np.errstate(all="ignore"):
        compare(tnp.corrcoef, np.corrcoef, m, rowvar=rowvar)


# ---------------------------------------------------------------- einsum
@st.composite
def einsum_case(draw):
    letters = "abcde"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    terms = [draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3))
             for _ in range(draw(st.integers(1, 4)))]
    used = sorted({c for t in terms for c in t})
    explicit = draw(st.booleans())
    out = draw(st.permutations(used).map(lambda p: p[:draw(st.integers(0, len(p)))])) \
        if explicit else None
    spec = ",".join("".join(t) for t in terms) + ("" if out is None else "->" + "".join(out))
    dt = draw(st.sampled_from(["int32", "float32", "float64", "complex128", "bool"]))
    ops_ = [draw(arrays(dt, tuple(sizes[c] for c in t), lo=-3, hi=3, special=False))
            for t in terms]
    return spec, ops_


@settings(max_examples=40, deadline=None)
@given(case=einsum_case(), optimize=st.sampled_from([False, True, "greedy", "optimal"]))
def test_einsum_matches_numpy(case, optimize):
    spec, operands = case
    compare(lambda *xs: tnp.einsum(spec, *xs, optimize=optimize),
            lambda *xs: np.einsum(spec, *xs, optimize=optimize), *operands)


def test_einsum_ellipsis_interleaved_and_path():
    a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(20.0).reshape(4, 5)
    compare(lambda x, y: tnp.einsum("...ij,jk->...ik", x, y),
            lambda x, y: np.einsum("...ij,jk->...ik", x, y), a, b)
    compare(lambda x: tnp.einsum("i...i", x), lambda x: np.einsum("i...i", x),
            np.arange(27.0).reshape(3, 3, 3))
    compare(lambda x, y: tnp.einsum(x, [0, 1, 2], y, [2, 3], [0, 3]),
            lambda x, y: np.einsum(x, [0, 1, 2], y, [2, 3], [0, 3]), a, b)
    path = tnp.einsum_path("ij,jk,kl->il", b.T, b, b.T)[0]
    assert path == np.einsum_path("ij,jk,kl->il", b.T, b, b.T)[0]
    compare(lambda x: tnp.einsum("ij,jk,kl->il", x.T, x, x.T, optimize=path),
            lambda x: np.einsum("ij,jk,kl->il", x.T, x, x.T, optimize=path), b)


# ---------------------------------------------------------------- vectorize & friends
def test_vectorize_and_apply_along_axis():
    x = np.arange(12.0).reshape(3, 4) - 5
    vf = tnp.vectorize(lambda a, b: tnp.where(a > b, a - b, a + b))
    compare(vf, np.vectorize(lambda a, b: a - b if a > b else a + b), x, 0.5)
    mv = tnp.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)")
    a, v = np.arange(24.0).reshape(2, 3, 4), np.arange(4.0)
    compare(mv, np.vectorize(lambda m, v: m @ v, signature="(m,n),(n)->(m)"), a, v)
    ex = tnp.vectorize(lambda a, k: a * k[0], excluded={1})
    compare(lambda t: ex(t, [3]), lambda t: t * 3, x)
    two = tnp.vectorize(lambda a: (a, a * 2), otypes=["f", "d"])
    compare(two, np.vectorize(lambda a: (a, a * 2), otypes=["f", "d"]), x)
    compare(lambda t: tnp.apply_along_axis(lambda r: r[:2] * r.sum(), 1, t),
            lambda t: np.apply_along_axis(lambda r: r[:2] * r.sum(), 1, t), x)
    compare(lambda t: tnp.apply_along_axis(lambda r: tnp.outer(r, r), 0, t),
            lambda t: np.apply_along_axis(lambda r: np.outer(r, r), 0, t), x)
    compare(lambda t: tnp.apply_over_axes(tnp.sum, t, [0, 1]),
            lambda t: np.apply_over_axes(np.sum, t, [0, 1]), x)
    with pytest.raises(TracerError):
        tnp.vectorize(lambda a: a, signature="(n->m")


def test_shape_only_helpers():
    x = ShapedArray((3, 3), np.float32)
    for fn in (tnp.tril_indices_from, tnp.triu_indices_from, tnp.diag_indices_from):
        out = run_both(lambda a, f=fn: tuple(tnp.asarray(i) for i in f(a)), np.ones(x.shape))
        for got, want in zip(out[1], getattr(np, fn.__name__)(np.ones(x.shape)), strict=True):
            np.testing.assert_array_equal(got, want)
    assert tnp.iscomplexobj(np.ones(2, np.complex64)) and tnp.isrealobj([1.0])
    assert not tnp.isscalar(np.ones(())) and tnp.isscalar(2.5)
