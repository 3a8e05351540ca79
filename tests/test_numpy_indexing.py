"""tracer.numpy indexing (`x[idx]`, take, take_along_axis, `x.at[idx]`) vs NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.checks import like_numpy
from tests.test_numpy_linalg import check, sample
from tracer.core import ShapedArray, aval_of, typecheck
from tracer.errors import ShapeError, TracerIndexError, TracerTypeError
from tracer.interpret import run_graph
from tracer.numpy._indexing import getitem
from tracer.numpy._methods import _IndexUpdateHelper
from tracer.tracing import trace_flat

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


def check_index(x, idx):
    """`x[idx]` eagerly, traced on a traced x, and with traced index arrays."""
    want = x[idx]
    check(lambda a: a[idx] if not isinstance(a, np.ndarray) else getitem(a, idx), x, want=want)
    items = idx if isinstance(idx, tuple) else (idx,)
    arrays = [i for i, it in enumerate(items) if isinstance(it, np.ndarray) and it.dtype != bool]
    if arrays:
        def fn(a, *ts):
            rebuilt = list(items)
            for i, t in zip(arrays, ts, strict=True):
                rebuilt[i] = t
            return a[tuple(rebuilt)]
        graph, _ = trace_flat(lambda *xs: [fn(*xs)],
                              [aval_of(x)] + [aval_of(items[i]) for i in arrays])
        got = run_graph(typecheck(graph), [x] + [items[i] for i in arrays], check=True)[0]
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


BASIC = [
    0, -1, (1, 2), (slice(None), 1), slice(1, None), slice(None, None, -1),
    (Ellipsis, 1), (None, 0, Ellipsis, None), (slice(3, 0, -2), slice(None, None, 3)),
    (1, -1, slice(4, 1, -1), None), (), Ellipsis, (slice(5, 9),), (slice(0, 0, -1), 1),
    (slice(None, None, -2), slice(-2, None)), (0, 0, 0, 0),
]
ADVANCED = [
    np.array([1, 0, 1]), ([1, 0],), (slice(None), [2, 0, 1]), (slice(None), [2, 0], [1, 3]),
    ([0, 1], slice(None), [2, 0]), (0, slice(None), [0, 1]), (slice(None), 0, [0, 1]),
    ([[0], [1]], None, [0, 1, 2]), (slice(None), [[0], [1]], Ellipsis, [0, 1, 2]),
    (np.array([True, False]),), (slice(None), np.array([True, False, True])),
    (np.ones((2, 3), bool), [1]), (Ellipsis, [-1, -5]), ([], slice(None)),
    (slice(None, None, -1), [2, 0], slice(1, 4, 2)), (np.array([-1, 1]), None, 1, [0, 3]),
    np.zeros((2, 0), np.int64),
]


@pytest.mark.parametrize("idx", BASIC + ADVANCED, ids=repr)
def test_getitem_cases(idx):
    check_index(X, idx)


@st.composite
def _index_item(draw, n):
    kind = draw(st.sampled_from(["int", "slice", "slice", "array", "array"]))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "slice":
        bound = st.none() | st.integers(-n - 2, n + 2)
        step = st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])
        return slice(draw(bound), draw(bound), draw(step))
    ishape = draw(st.sampled_from([(2,), (1,), (2, 1), (3,), ()]))
    size = int(np.prod(ishape))
    values = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
    return np.array(values, dtype=np.int64).reshape(ishape)


@st.composite
def _index_problem(draw):
    """A shape and an index of ints, slices, None, at most one `...` and int arrays."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    items, axis, after_ellipsis = [], 0, False
    while axis < len(shape) and (after_ellipsis or draw(st.integers(0, 4)) > 0):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            items.append(None)
        elif choice == 1 and not after_ellipsis:
            after_ellipsis = True
            items.append(Ellipsis)
            axis = draw(st.integers(axis, len(shape)))  # axes the `...` covers
        else:
            items.append(draw(_index_item(shape[axis])))
            axis += 1
    return shape, tuple(items)


@settings(max_examples=50)
@given(_index_problem())
def test_getitem_hypothesis(problem):
    shape, idx = problem
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    try:
        x[idx]
    except IndexError:
        with pytest.raises(TracerIndexError):
            getitem(x, idx)
        return
    check_index(x, idx)


def test_traced_scalar_indices_wrap_then_clamp():
    x = np.arange(12.0).reshape(3, 4)
    fn = lambda a, i: a[i, 1:]  # noqa: E731
    for i, row in [(1, 1), (-1, 2), (-3, 0), (7, 2), (-9, 0)]:
        graph, _ = trace_flat(lambda a, j: [fn(a, j)], [aval_of(x), ShapedArray((), np.int32)])
        got = run_graph(typecheck(graph), [x, np.int32(i)], check=True)[0]
        np.testing.assert_array_equal(got, x[row, 1:])
    graph, _ = trace_flat(lambda a, j: [a[:, j]], [aval_of(x), ShapedArray((3,), np.int64)])
    got = run_graph(graph, [x, np.array([-1, 9, 2])], check=True)[0]
    np.testing.assert_array_equal(got, x[:, [3, 3, 2]])


def test_list_of_traced_scalars():
    x = np.arange(5.0)
    graph, _ = trace_flat(lambda a, i, j: [a[[i, j, 0]]],
                          [aval_of(x), ShapedArray((), np.int64), ShapedArray((), np.int32)])
    got = run_graph(typecheck(graph), [x, np.int64(3), np.int32(-1)], check=True)[0]
    np.testing.assert_array_equal(got, [3.0, 4.0, 0.0])


def test_getitem_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TracerIndexError, match=r"index 5 is out of bounds for axis 0 with "
                                               r"size 2.*f32\[2,3\]"):
        getitem(x, 5)
    with pytest.raises(TracerIndexError, match=r"index -4 is out of bounds for axis 1"):
        getitem(x, (slice(None), [0, -4]))
    with pytest.raises(TracerIndexError, match=r"too many indices.*2-dimensional, but 3"):
        getitem(x, (0, 0, 0))
    with pytest.raises(TracerIndexError, match=r"single ellipsis"):
        getitem(x, (Ellipsis, Ellipsis))
    with pytest.raises(TracerIndexError, match=r"could not be broadcast.*\(2,\) \(3,\)"):
        getitem(x, ([0, 1], [0, 1, 2]))
    with pytest.raises(TracerIndexError, match=r"boolean index did not match.*axis 1"):
        getitem(x, (slice(None), np.array([True, False])))
    with pytest.raises(TracerIndexError, match="valid indices"):
        getitem(x, 1.5)
    with pytest.raises(IndexError):  # TracerIndexError is an IndexError, like NumPy's
        getitem(x, (0, 3))
    mask_aval = ShapedArray((2, 3), np.bool_)
    with pytest.raises(TracerIndexError, match=r"traced boolean mask pred\[2,3\].*nonzero"):
        trace_flat(lambda a, m: [a[m]], [aval_of(x), mask_aval])
    with pytest.raises(TracerTypeError, match=r"slice start must be static.*dynamic_slice"):
        trace_flat(lambda a, i: [a[i:]], [aval_of(x), ShapedArray((), np.int32)])


# ----------------------------------------------------------------------------- take


@pytest.mark.parametrize("mode", [None, "clip", "wrap"])
def test_take(mode):
    a = sample((3, 4))
    idx = np.array([[0, 2], [-1, 1]]) if mode is None else np.array([[0, 7], [-5, 1]])
    for axis in (None, 0, 1, -1):
        check(lambda x: tnp.take(x, idx, axis=axis, mode=mode), a,
              want=np.take(a, idx, axis=axis, mode=mode or "raise"))
    # traced indices
    t_idx = np.array([5, -1, 2]) if mode else np.array([2, -1, 0])
    graph, _ = trace_flat(lambda x, i: [tnp.take(x, i, axis=1, mode=mode)],
                          [aval_of(a), aval_of(t_idx)])
    got = run_graph(typecheck(graph), [a, t_idx], check=True)[0]
    np.testing.assert_array_equal(got, np.take(a, t_idx, axis=1, mode=mode or "raise"))


def test_take_along_axis():
    a = sample((3, 4))
    idx = np.argsort(a, axis=1)
    for axis in (0, 1, -1):
        i = np.argsort(a, axis=axis)
        check(lambda x: tnp.take_along_axis(x, i, axis), a,
              want=np.take_along_axis(a, i, axis))
    check(lambda x: tnp.take_along_axis(x, idx[:, :1], 1), a,
          want=np.take_along_axis(a, idx[:, :1], 1))
    flat = np.array([3, 0, 11])
    check(lambda x: tnp.take_along_axis(x, flat, None), a,
          want=np.take_along_axis(a, flat, None))
    with pytest.raises(ShapeError, match=r"take_along_axis.*s64\[3\].*f64\[3,4\]"):
        tnp.take_along_axis(a, flat, 0)


# ----------------------------------------------------------------------------- .at


def _np_update(x, idx, v, method):
    y = x.copy()
    if method == "set":
        y[idx] = v
        return y
    ufunc = {"add": np.add, "multiply": np.multiply, "min": np.minimum,
             "max": np.maximum}[method]
    items = idx if isinstance(idx, tuple) else (idx,)  # ufunc.at takes no bool masks
    ufunc.at(y, tuple(np.nonzero(i)[0] if isinstance(i, np.ndarray) and i.dtype == bool
                      else i for i in items), v)
    return y


def check_at(x, idx, v, method):
    want = _np_update(x, idx, v, method)
    eager = getattr(_IndexUpdateHelper(x)[idx], method)(v)
    v = np.asarray(v)
    graph, _ = trace_flat(lambda a, b: [getattr(a.at[idx], method)(b)], [aval_of(x), aval_of(v)])
    traced = run_graph(typecheck(graph), [x, v], check=True)[0]
    results = [eager, traced]
    items = idx if isinstance(idx, tuple) else (idx,)
    arrays = [i for i, it in enumerate(items) if isinstance(it, np.ndarray) and it.dtype != bool]
    if arrays:  # the same update with traced index arrays (scatter with runtime indices)
        def fn(a, b, *ts):
            rebuilt = list(items)
            for i, t in zip(arrays, ts, strict=True):
                rebuilt[i] = t
            return [getattr(a.at[tuple(rebuilt)], method)(b)]
        ins = [x, v] + [items[i] for i in arrays]
        graph, _ = trace_flat(fn, [aval_of(a) for a in ins])
        results.append(run_graph(typecheck(graph), ins, check=True)[0])
    for got in results:
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


AT_CASES = [
    (1, ()), ((slice(None), 1), (3,)), ((slice(1, 3), slice(None, None, -1)), (2, 4)),
    ((slice(None, None, 2), 0), (2,)), ([0, 2, 0], ()), ([0, 2, 0], (3, 1)),
    ((slice(None), [3, 1, 3]), (3,)), (([0, 1], None, [1, 1]), (1,)),
    ((Ellipsis, -1), (3,)), (np.array([True, False, True]), (4,)),
    ((slice(4, 0, -2), [[0], [1]]), (2, 1)), ((), ()), ((slice(5, 2),), ()),
]


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("idx,vshape", AT_CASES, ids=repr)
def test_at(idx, vshape, method):
    x = sample((3, 4), np.int32)
    v = sample(vshape, np.int32)
    check_at(x, idx, v, method)


def test_at_casts_values_and_does_not_mutate():
    x = np.zeros((2, 3), np.int32)
    got = _IndexUpdateHelper(x)[0].set(np.array([1.7, -2.9, 3.2]))
    np.testing.assert_array_equal(got, [[1, -2, 3], [0, 0, 0]])
    assert got.dtype == np.int32 and not x.any()
    b = np.zeros(3, bool)
    check_at(b, [0, 0, 2], np.array([True, False, True]), "add")
    check_at(b, [0, 1], np.array([True, True]), "max")
    f = sample((4,), np.float32)
    check_at(f, [1, 1, 3], np.array([1.5, 2.5, -1.0], np.float32), "add")
    at = _IndexUpdateHelper  # works on ndarrays (eager) and tracers alike
    check(lambda a: at(a)[1:].set(7), f, want=np.array([f[0], 7, 7, 7], np.float32))
    check(lambda a: at(a)[0].get(), f, want=f[0])


def test_at_traced_indices_drop_out_of_bounds():
    x = np.zeros(4)
    graph, _ = trace_flat(lambda a, i: [a.at[i].add(1.0)],
                          [aval_of(x), ShapedArray((4,), np.int64)])
    got = run_graph(typecheck(graph), [x, np.array([1, -1, 9, -9])], check=True)[0]
    np.testing.assert_array_equal(got, [0, 1, 0, 1])
    graph, _ = trace_flat(lambda a, i: [a.at[i].set(5.0)], [aval_of(x), ShapedArray((), np.int32)])
    np.testing.assert_array_equal(run_graph(graph, [x, np.int32(-2)], check=True)[0],
                                  [0, 0, 5, 0])
    np.testing.assert_array_equal(run_graph(graph, [x, np.int32(4)], check=True)[0], x)


def test_at_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ShapeError, match=r"at\[...\].set: could not broadcast values "
                                         r"f32\[4\] into the indexed shape \(3,\).*f32\[2,3\]"):
        _IndexUpdateHelper(x)[0].set(np.ones(4, np.float32))
    with pytest.raises(TracerIndexError, match=r"at\[...\].add: index 2 is out of bounds"):
        _IndexUpdateHelper(x)[2].add(1.0)
    with pytest.raises(OverflowError, match=r"at\[...\].set.*300.*int8"):  # like NumPy
        _IndexUpdateHelper(np.zeros(2, np.int8))[0].set(300)


@settings(max_examples=40)
@given(_index_problem(), st.sampled_from(["set", "add", "min"]))
def test_at_hypothesis(problem, method):
    shape, idx = problem
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    try:
        rshape = x[idx].shape
    except IndexError:
        return
    v = sample(rshape, np.int64)
    check_at(x, idx, v, method)  # duplicate targets under set: both let the last win


@pytest.mark.parametrize("shape,idx", [
    ((2, 0, 4), (-1, None, np.array([], bool))), ((0, 0), (Ellipsis, np.array([], bool))),
    ((4, 0), (np.array([], int), None, np.array([], int))), ((0, 3), (np.array([], int), 1)),
])
def test_integer_index_arrays_into_an_empty_axis(shape, idx):
    x = np.zeros(shape, np.float32)
    like_numpy(lambda a: tnp.getitem(a, idx), lambda a: a[idx], x)


def test_traced_indices_into_an_empty_axis_give_an_empty_result_or_raise():
    f = tr.jit(lambda x, i: x[i])
    assert f(np.zeros((0, 3)), np.zeros(0, np.int64)).shape == (0, 3)
    with pytest.raises(tr.TracerError) as err:
        f(np.zeros((0, 3)), np.array([0]))
    assert isinstance(err.value, IndexError)
