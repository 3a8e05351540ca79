"""The sorting methods of traced arrays against NumPy's ndarray methods:
`x.argsort()`, `x.searchsorted(v)`, `x.nonzero()` (JAX's static `size=` under a
trace) and `x.sort()`, which NumPy runs in place and a traced array refuses."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy  # noqa: F401  (installs the methods)
from tracer.errors import ConcretizationError, TracerTypeError


def run(fn, *args):
    return tr.jit(fn, backend="interpreter")(*args)


def test_argsort_method_matches_numpy():
    x = np.array([[3.0, np.nan, 1.0, 1.0], [0.0, -0.0, 2.0, -1.0]])
    for kwargs in ({}, {"axis": 0}, {"axis": None}, {"kind": "stable"}):
        got = run(lambda a: a.argsort(**kwargs), x)
        np.testing.assert_array_equal(got, x.argsort(**kwargs, **(
            {} if "kind" in kwargs else {"kind": "stable"})))


def test_searchsorted_method_matches_numpy():
    a = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    v = np.array([[2.0, 0.5], [np.nan, 3.5]])
    for side in ("left", "right"):
        np.testing.assert_array_equal(run(lambda a, v: a.searchsorted(v, side=side), a, v),
                                      a.searchsorted(v, side=side))
    order = np.array([4, 2, 0, 1, 3])
    shuffled = a[np.argsort(order)]
    np.testing.assert_array_equal(
        run(lambda a, v, s: a.searchsorted(v, sorter=s), shuffled, v, np.argsort(shuffled)),
        shuffled.searchsorted(v, sorter=np.argsort(shuffled)))


def test_nonzero_method_needs_a_static_size_under_a_trace():
    x = np.array([[0, 3, 0], [4, 0, 5]])
    got = run(lambda a: a.nonzero(size=4, fill_value=-1), x)
    want = [np.r_[i, -1] for i in x.nonzero()]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ConcretizationError, match="size="):
        run(lambda a: a.nonzero(), x)


def test_sort_method_cannot_sort_a_traced_array_in_place():
    with pytest.raises(TracerTypeError, match=r"sort.*f64\[3\].*tnp\.sort"):
        run(lambda a: a.sort(), np.zeros(3))
