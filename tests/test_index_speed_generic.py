"""Indexing and searching code that serves every size: tracer.numpy derives the
sizes it needs (NumPy's wrap of negative indices, take's clip/wrap bounds,
searchsorted's step count, nonzero's strides, unique's fills) from the shapes at
run time, so a second size of the same structure reuses the compiled module.
Also take_along_axis with traced indices on the cpu backend against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer.backend.cpu.backend import compile_count
from tracer.errors import ShapeError, TracerIndexError


def _indexing(x, i, v, m, j):
    return (x[i], x.at[i].add(v), x.at[i].set(v), tnp.take(x, i, mode="clip"),
            tnp.take(x, i, mode="wrap"), tnp.take_along_axis(m, j, 1))


def _searching(a, v, m, u):
    return (tnp.searchsorted(a, v), tnp.searchsorted(a, v, side="right"),
            tnp.nonzero(m, size=3), tnp.argsort(u, kind="stable"),
            tnp.unique(u, size=4, return_inverse=True, return_counts=True))


def _indexing_args(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    i = rng.integers(-2 * n, 2 * n, n + 3)
    m = rng.standard_normal((3, n)).astype(np.float32)
    return x, i, rng.standard_normal(n + 3).astype(np.float32), m, rng.integers(-n, n, (3, 2))


def _searching_args(rng, n):
    a = np.sort(rng.integers(0, 9, n)).astype(np.float64)
    m = rng.integers(0, 2, (2, n)) * rng.integers(1, 5, (2, n))
    return a, rng.integers(-1, 10, n + 1).astype(np.float64), m, rng.integers(0, 4, n)


def _numpy_indexing(x, i, v, m, j):
    n = x.shape[0]
    wrapped = np.where(i < 0, i + n, i)
    inside = (wrapped >= 0) & (wrapped < n)
    added, put = x.copy(), x.copy()
    np.add.at(added, wrapped[inside], v[inside])
    put[wrapped[inside]] = v[inside]  # (no duplicates among these draws: checked below)
    return (x[np.clip(wrapped, 0, n - 1)], added, put, np.take(x, i, mode="clip"),
            np.take(x, i, mode="wrap"), np.take_along_axis(m, j, 1))


def _numpy_searching(a, v, m, u):
    uniq, inverse, counts = np.unique(u, return_inverse=True, return_counts=True)
    pad = 4 - uniq.size
    first = tuple(np.pad(c[:3], (0, max(0, 3 - c.size))) for c in np.nonzero(m))
    return (np.searchsorted(a, v), np.searchsorted(a, v, side="right"), first,
            np.argsort(u, kind="stable"),
            (np.pad(uniq, (0, pad), constant_values=uniq.min()), inverse,
             np.pad(counts, (0, pad))))


def _assert_tree_equal(got, want):
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_tree_equal(g, w)
        return
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


@pytest.mark.parametrize("fn,args,oracle", [
    (_indexing, _indexing_args, _numpy_indexing),
    (_searching, _searching_args, _numpy_searching),
], ids=["indexing", "searching"])
def test_a_second_size_reuses_the_compiled_code(fn, args, oracle):
    rng = np.random.default_rng(3)
    f = tr.jit(fn)
    for k, n in enumerate((7, 12)):
        values = args(rng, n)
        if fn is _indexing:  # distinct targets (some negative, 3 out of range): one answer
            targets = rng.permutation(n) - n * (np.arange(n) % 2)
            values[1][:] = rng.permutation(np.r_[targets, [2 * n, -2 * n - 1, n]])
        before = compile_count()
        _assert_tree_equal(f(*values), oracle(*values))
        if k:
            assert compile_count() == before, "a new size compiled a new module"


# ------------------------------------------------------------------ take_along_axis

@pytest.mark.parametrize("shape,ishape,axis", [
    ((4, 5), (4, 3), 1), ((4, 5), (2, 5), 0), ((1, 5), (3, 2), 1), ((4, 1, 6), (1, 3, 2), 2),
])
def test_take_along_axis_with_traced_indices_on_cpu(shape, ishape, axis):
    """Negative indices wrap; the other dims broadcast both ways, as in NumPy."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape)
    n = shape[axis]
    idx = rng.integers(-n, n, ishape)
    got = tr.jit(lambda a, i: tnp.take_along_axis(a, i, axis))(a, idx)
    np.testing.assert_array_equal(got, np.take_along_axis(a, idx, axis))


def test_take_along_axis_empty_cases():
    a = np.zeros((2, 0))
    f = tr.jit(lambda a, i: tnp.take_along_axis(a, i, 1))
    for ishape in [(2, 0), (0, 3)]:
        arr = np.zeros((2, 0) if ishape[0] else (0, 4))
        i = np.zeros(ishape, np.int64)
        assert f(arr, i).shape == np.take_along_axis(arr, i, 1).shape
    with pytest.raises(TracerIndexError, match="empty axis"):
        f(a, np.zeros((2, 1), np.int64))
    with pytest.raises(TracerIndexError, match="out of bounds"):
        tnp.take_along_axis(a, np.zeros((2, 1), np.int64), 1)
    with pytest.raises(ShapeError, match="cannot broadcast"):
        tnp.take_along_axis(np.zeros((2, 3)), np.zeros((3, 1), np.int64), 1)


def test_the_wrap_of_negative_indices_runs_inside_the_gather_and_scatter_loops():
    """No pass and no buffer of its own for NumPy's wrap: the host function gets the
    inputs and outputs only, and the values still follow NumPy (then clamp / skip)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(9).astype(np.float32)
    i = np.array([-1, 3, -9, 20, -30, 0])
    v = np.ones(6, np.float32)
    for fn, want in [(lambda x, i, v: x[i], x[np.clip(np.where(i < 0, i + 9, i), 0, 8)]),
                     (lambda x, i, v: x.at[i].add(v), x + np.bincount(
                         np.array([8, 3, 0, 0]), minlength=9).astype(np.float32))]:
        f = tr.jit(fn)
        np.testing.assert_array_equal(f(x, i, v), want)
        assert "buf" not in f.lower(x, i, v).compile().source
