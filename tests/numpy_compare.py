"""Checks of tracer.numpy against NumPy 2 that the test_numpy_* files share: run a
function eagerly and traced (`trace_flat` + `run_graph(check=True)`, so every eqn's
reference result must match its shape rule), compare values and dtypes, and the
hypothesis strategies of arrays of every dtype.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tracer.core import aval_of, typecheck
from tracer.errors import TracerError
from tracer.interpret import run_graph
from tracer.tracing import trace_flat

REAL = ["bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64"]
ALL = REAL + ["complex64", "complex128"]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
RTOL = {"e": 4e-3, "f": 2e-5, "d": 1e-11, "F": 2e-5, "D": 1e-11}



def trace(fn, avals):
    def flat(*xs):
        out = fn(*xs)
        return list(out) if isinstance(out, (tuple, list)) else [out]
    graph, captured = trace_flat(flat, avals)
    assert not captured
    return typecheck(graph)


def run_both(fn, *args):
    """(eager, traced) results of fn: NumPy array arguments are traced, everything else
    (Python scalars, shapes, None) is passed to fn as a static value."""
    eager = fn(*args)
    dynamic = [i for i, a in enumerate(args) if isinstance(a, (np.ndarray, np.generic))]

    def on_tracers(*ts):
        full = list(args)
        for i, t in zip(dynamic, ts, strict=True):
            full[i] = t
        return fn(*full)
    graph = trace(on_tracers, [aval_of(args[i]) for i in dynamic])
    out = run_graph(graph, [np.asarray(args[i]) for i in dynamic], check=True)
    return eager, (tuple(out) if isinstance(eager, (tuple, list)) else out[0])


def numpy_result(fn, *args, **kw):
    """NumPy's result, or the exception class it raises."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kw)
        except (TypeError, ValueError, OverflowError, IndexError) as e:
            return next(c for c in (OverflowError, TypeError, IndexError, ValueError)
                        if isinstance(e, c))


def assert_same(got, want, rtol=None):
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        tol = RTOL[want.dtype.char] if rtol is None else rtol
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def compare(tfn, nfn, *args, rtol=None, **kw):
    """tfn(*args, **kw) matches nfn(*args, **kw) eagerly and traced (or both raise)."""
    want = numpy_result(nfn, *args, **kw)
    if isinstance(want, type):
        with pytest.raises(want) as info:
            tfn(*args, **kw)
        assert isinstance(info.value, TracerError)
        return
    for got in run_both(lambda *xs: tfn(*xs, **kw), *args):
        if isinstance(want, (tuple, list)):
            for g, w in zip(got, want, strict=True):
                assert_same(g, w, rtol)
        else:
            assert_same(got, want, rtol)


def elements(dtype, lo=-20, hi=20, special=True):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return st.integers(max(lo, info.min), min(hi, info.max))
    if dt.kind == "f":
        finite = st.floats(lo, hi, width=8 * dt.itemsize)
        extra = [0.0, -0.0, math.inf, -math.inf, math.nan] if special else [0.0, -0.0]
        return st.one_of(finite, st.sampled_from(extra))
    # No subnormal parts: NumPy's complex reciprocal and division differ there.
    part = st.floats(lo, hi, width=4 * dt.itemsize, allow_subnormal=False)
    return st.builds(complex, part, part)


def arrays(dtype, shape, **kw):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **kw))


@st.composite
def array_and_dtype(draw, dtypes=ALL, shapes=SHAPES, **kw):
    dtype = draw(st.sampled_from(dtypes))
    return draw(arrays(dtype, draw(shapes), **kw))


# arrays of rank >= 1 with an axis, for the functions that take one
NUMERIC = ["int8", "int32", "int64", "uint8", "float16", "float32", "float64"]
SHAPES_1D_UP = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)


@st.composite
def array_axis(draw, dtypes=NUMERIC, shapes=SHAPES_1D_UP, nan=False, lo=-9, hi=9):
    dt = draw(st.sampled_from(dtypes))
    x = draw(arrays(dt, shapes, lo=lo, hi=hi, special=False))
    if nan and x.dtype.kind == "f" and x.size:
        mask = draw(hnp.arrays(np.bool_, x.shape))
        x = np.where(mask, np.nan, x).astype(x.dtype)
    return x, draw(st.integers(-x.ndim, x.ndim - 1))
