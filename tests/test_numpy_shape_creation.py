"""tracer.numpy's shape functions and array creation vs NumPy 2, and the errors
tracer.numpy raises (naming the function, the shapes and the user's line).

Every comparison runs twice: eagerly (NumPy arrays in, ndarrays out) and traced
(`tests.numpy_compare`), and checks the result dtype as well as the values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracer as tr
import tracer.numpy as tnp
from tests.checks import like_numpy, matches, raises_like_numpy
from tests.numpy_compare import assert_same, compare, trace
from tracer.core import ShapedArray, count_eqns
from tracer.errors import (DTypeError, ShapeError, TracerError, TracerIndexError,
                           TracerTypeError, TracerValueError)
from tracer.interpret import run_graph


# ---------------------------------------------------------------- shape functions
@st.composite
def array_strategy(draw, min_dims=0, max_dims=4):
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=4))
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 3


@settings(max_examples=40)
@given(x=array_strategy(), data=st.data())
def test_reshape_transpose_moveaxis_swapaxes(x, data):
    nd = x.ndim
    perm = data.draw(st.permutations(range(nd)))
    compare(tnp.reshape, np.reshape, x, tuple(x.shape[p] for p in perm))
    if x.size and nd:
        shape = [x.shape[p] for p in perm]
        shape[data.draw(st.integers(0, nd - 1))] = -1
        compare(tnp.reshape, np.reshape, x, tuple(shape))
    compare(tnp.ravel, np.ravel, x)
    compare(tnp.transpose, np.transpose, x)
    compare(tnp.transpose, np.transpose, x, [p - nd if p % 2 else p for p in perm])
    if nd:
        k = data.draw(st.integers(1, nd))
        src = data.draw(st.permutations(range(nd)))[:k]
        dst = data.draw(st.permutations(range(-nd, 0)))[:k]
        compare(tnp.moveaxis, np.moveaxis, x, src, dst)
        compare(tnp.swapaxes, np.swapaxes, x, src[0], dst[0])


@settings(max_examples=40)
@given(x=array_strategy(max_dims=3), data=st.data())
def test_expand_squeeze_flip_roll(x, data):
    nd = x.ndim
    new = data.draw(st.lists(st.integers(-(nd + 2), nd + 1), unique=True, max_size=2))
    new = [a for a in new if -(nd + len(new)) <= a < nd + len(new)]
    assume(len({a % (nd + len(new)) for a in new}) == len(new))
    compare(tnp.expand_dims, np.expand_dims, x, tuple(new))
    ones = np.expand_dims(x, tuple(range(0, 2 * nd + 1, 2))[:2]) if nd else x[None]
    compare(tnp.squeeze, np.squeeze, ones)
    compare(tnp.squeeze, np.squeeze, ones, 0)
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(-nd, nd - 1), unique=True,
                                                   max_size=nd).map(tuple))) if nd else None
    compare(tnp.flip, np.flip, x, axes)
    shift = data.draw(st.integers(-7, 7))
    compare(tnp.roll, np.roll, x, shift)
    if nd:
        compare(tnp.roll, np.roll, x, (shift, 1), (0, -1))


@settings(max_examples=40)
@given(x=array_strategy(max_dims=3), data=st.data())
def test_tile_repeat_rot90_tri(x, data):
    reps = data.draw(st.lists(st.integers(0, 3), max_size=4).map(tuple))
    compare(tnp.tile, np.tile, x, reps)
    compare(tnp.repeat, np.repeat, x, data.draw(st.integers(0, 3)))
    if x.ndim:
        axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
        counts = data.draw(st.lists(st.integers(0, 3), min_size=x.shape[axis],
                                    max_size=x.shape[axis]))
        compare(tnp.repeat, np.repeat, x, counts, axis=axis)
        k = data.draw(st.integers(-3, 3))
        compare(tnp.tril, np.tril, x, k)
        compare(tnp.triu, np.triu, x, k)
    if x.ndim >= 2:
        compare(tnp.rot90, np.rot90, x, data.draw(st.integers(-5, 5)),
                data.draw(st.sampled_from([(0, 1), (1, 0), (-1, 0), (0, -1)])))
        compare(tnp.fliplr, np.fliplr, x)
    if x.ndim >= 1:
        compare(tnp.flipud, np.flipud, x)


@settings(max_examples=40)
@given(x=array_strategy(min_dims=1, max_dims=3), data=st.data())
def test_join_and_split(x, data):
    nd = x.ndim
    axis = data.draw(st.integers(-nd, nd - 1))
    y = (x * 2).astype(data.draw(st.sampled_from(["int8", "float64", "float32"])))
    compare(lambda a, b: tnp.concatenate([a, b, a], axis=axis),
            lambda a, b: np.concatenate([a, b, a], axis=axis), x, y)
    compare(lambda a, b: tnp.concatenate((a, b), axis=None),
            lambda a, b: np.concatenate((a, b), axis=None), x, y)
    new_axis = data.draw(st.integers(-nd - 1, nd))
    compare(lambda a, b: tnp.stack([a, b], new_axis), lambda a, b: np.stack([a, b], new_axis),
            x, y)
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        if name != "column_stack" or nd <= 2:
            compare(lambda a, b, n=name: getattr(tnp, n)([a, b]),
                    lambda a, b, n=name: getattr(np, n)([a, b]), x, x)
    sections = data.draw(st.integers(1, 5))
    compare(tnp.array_split, np.array_split, x, sections, axis=axis)
    cuts = sorted(data.draw(st.lists(st.integers(-6, 6), max_size=3)))
    compare(tnp.array_split, np.array_split, x, cuts, axis=axis)
    compare(tnp.split, np.split, x, cuts, axis=axis)
    if x.shape[axis] % sections == 0:
        compare(tnp.split, np.split, x, sections, axis=axis)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
@settings(max_examples=25)
@given(x=array_strategy(max_dims=3), data=st.data())
def test_pad_matches_numpy(mode, x, data):
    widths = data.draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)),
                                min_size=x.ndim, max_size=x.ndim).map(tuple))
    if mode != "constant":
        assume(all(x.shape[i] or (b == a == 0) for i, (b, a) in enumerate(widths)))
    compare(tnp.pad, np.pad, x, widths, mode)
    if x.ndim:
        compare(tnp.pad, np.pad, x, data.draw(st.integers(0, 4)), mode)
    if mode == "constant":
        compare(tnp.pad, np.pad, x, widths, constant_values=((1.5, -2),) * x.ndim)
        compare(tnp.pad, np.pad, x.astype(np.int32), (1, 2), constant_values=7)


def test_broadcast_to_and_atleast():
    x = np.arange(3.0)
    compare(tnp.broadcast_to, np.broadcast_to, x, (2, 3))
    compare(tnp.broadcast_to, np.broadcast_to, np.float32(2), (2, 0))
    got = tnp.broadcast_arrays(np.ones((3, 1)), np.arange(4))
    assert isinstance(got, tuple) and [g.shape for g in got] == [(3, 4), (3, 4)]
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for value in (np.float32(1), x, np.ones((2, 3))):
            compare(getattr(tnp, name), getattr(np, name), value)
        both = getattr(tnp, name)(1.0, x)
        assert isinstance(both, tuple) and len(both) == 2
    assert tnp.shape([[1, 2, 3]]) == (1, 3) and tnp.ndim(5) == 0
    assert tnp.size(np.ones((2, 3)), -1) == 3 and tnp.size(np.ones((2, 3))) == 6


# ---------------------------------------------------------------- creation
@pytest.mark.parametrize("args, kw", [((5,), {}), ((2, 9), {}), ((1, 2, 0.25), {}),
                                      ((10, 0, -3), {}), ((0,), {}), ((3,), {"dtype": "float32"}),
                                      ((10, 0, -3), {"dtype": "uint8"}), ((0.5, 4),
                                                                          {"dtype": "int32"}),
                                      ((-1.0, 1.0, 0.1), {}), ((5, 1), {})])
def test_arange_matches_numpy(args, kw):
    compare(lambda a: tnp.arange(*args, **kw) + a, lambda a: np.arange(*args, **kw) + a,
            np.zeros((), np.int8) if np.arange(*args, **kw).dtype.kind in "iu" else
            np.zeros((), np.float16))
    assert_same(tnp.arange(*args, **kw), np.arange(*args, **kw))


@pytest.mark.parametrize("start, stop, kw", [
    (0, 1, {}), (2.0, 3.0, {"num": 5}), (0, 10, {"num": 7, "endpoint": False}),
    (1, 1, {"num": 4}), (0, 1, {"num": 1}), (0, 1, {"num": 0}), (0, 10, {"dtype": int}),
    (-5, 5, {"num": 4, "dtype": np.int8}), (0, 1, {"num": 4, "retstep": True}),
    (np.array([0.0, 1.0]), np.array([[2.0], [3.0]]), {"num": 3}),
    (np.array([0.0, 1.0], np.float32), 2, {"num": 3, "axis": -1}),
    (0, 1, {"num": 1, "retstep": True}), (1 + 1j, 3 - 1j, {"num": 3})])
def test_linspace_matches_numpy(start, stop, kw):
    compare(tnp.linspace, np.linspace, start, stop, rtol=1e-15, **kw)


@pytest.mark.parametrize("args, kw", [((3,), {}), ((2, 4, 1), {}), ((4, 3, -2), {}),
                                      ((3,), {"dtype": np.int8}), ((0,), {}),
                                      ((2,), {"dtype": bool})])
def test_eye_identity(args, kw):
    assert_same(tnp.eye(*args, **kw), np.eye(*args, **kw))
    graph = trace(lambda: tnp.eye(*args, **kw), [])
    assert_same(run_graph(graph, [], check=True)[0], np.eye(*args, **kw))
    assert_same(tnp.identity(args[0]), np.identity(args[0]))


def test_filled_constructors():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    assert_same(tnp.zeros((2, 3)), np.zeros((2, 3)))
    assert_same(tnp.empty((2, 3), np.int8), np.zeros((2, 3), np.int8))
    assert_same(tnp.ones(4, np.int32), np.ones(4, np.int32))
    for name in ("zeros_like", "ones_like"):
        compare(getattr(tnp, name), getattr(np, name), x)
        compare(getattr(tnp, name), getattr(np, name), x, dtype=np.float32, shape=(4,))
    assert tnp.empty_like(x).shape == (2, 3) and tnp.empty_like(x).dtype == np.int8
    compare(tnp.full, np.full, (2, 2), 7)
    compare(tnp.full, np.full, (2, 3), np.array([1.5, 2.0, 3.0], np.float32))
    compare(tnp.full_like, np.full_like, x, 2.7)
    compare(lambda a: tnp.full((2, 2), a), lambda a: np.full((2, 2), a), np.float32(3.5))
    z = tnp.zeros(3)
    z[0] = 1.0  # eager constants are fresh, writeable arrays
    graph = trace(lambda: tnp.zeros((100, 100)), [])
    assert count_eqns(graph).eqns == 1  # one broadcast of a scalar, not a 10^4 literal


def test_array_and_asarray():
    compare(tnp.array, np.array, [[1, 2], [3, 4]])
    compare(tnp.array, np.array, [1.5, 2], dtype=np.float32)
    compare(tnp.array, np.array, 3, ndmin=2)
    compare(tnp.asarray, np.asarray, (1, 2.5))
    compare(tnp.asarray, np.asarray, np.arange(3, dtype=np.int16), dtype=np.float64)
    weak = ShapedArray((), np.float64, weak_type=True)
    assert trace(tnp.array, [weak]).out_avals == (ShapedArray((), np.float64),)
    x = np.arange(3)
    assert tnp.array(x) is not x and tnp.asarray(x) is x


# ---------------------------------------------------------------- errors
ERRORS = [
    (lambda: tnp.add(np.ones((2, 3)), np.ones((4,))), ShapeError, ValueError,
     ["add", "f64[2,3]", "f64[4]"]),
    (lambda: tnp.reshape(np.ones((2, 3), np.float32), (4,)), ShapeError, ValueError,
     ["reshape", "f32[2,3]", "(4,)"]),
    (lambda: tnp.reshape(np.ones(6), (-1, -1)), TracerValueError, ValueError, ["reshape"]),
    (lambda: tnp.sum(np.ones((2, 3), np.float32), axis=2), TracerIndexError, IndexError,
     ["sum", "axis 2", "f32[2,3]"]),
    (lambda: tnp.sum(np.ones(3), axis=(0, 0)), TracerValueError, ValueError, ["sum"]),
    (lambda: tnp.concatenate([np.ones((2, 3)), np.ones((2, 2))]), ShapeError, ValueError,
     ["concatenate", "f64[2,3]", "f64[2,2]"]),
    (lambda: tnp.concatenate([1.0, 2.0]), ShapeError, ValueError, ["zero-dimensional"]),
    (lambda: tnp.stack([np.ones(2), np.ones(3)]), ShapeError, ValueError,
     ["stack", "f64[2]", "f64[3]"]),
    (lambda: tnp.negative(np.array([True])), DTypeError, TypeError, ["negative", "pred[1]"]),
    (lambda: tnp.subtract(np.array([True]), True), DTypeError, TypeError, ["subtract"]),
    (lambda: tnp.bitwise_and(np.ones(2), 1), DTypeError, TypeError, ["bitwise_and", "f64[2]"]),
    (lambda: tnp.floor_divide(np.ones(2, np.complex64), 1), DTypeError, TypeError,
     ["floor_divide", "c64[2]"]),
    (lambda: tnp.isposinf(np.ones(2, np.complex64)), DTypeError, TypeError, ["isposinf"]),
    (lambda: tnp.sum(np.ones(2), out=np.ones(2)), TracerTypeError, TypeError, ["sum", "out="]),
    (lambda: tnp.sin(np.ones(2), where=False), TracerTypeError, TypeError, ["sin", "where="]),
    (lambda: tnp.squeeze(np.ones((2, 1)), 0), ShapeError, ValueError, ["squeeze", "f64[2,1]"]),
    (lambda: tnp.split(np.ones((5, 2)), 2), ShapeError, ValueError,
     ["split", "equal division", "f64[5,2]"]),
    (lambda: tnp.transpose(np.ones((2, 3)), (0, 0)), TracerValueError, ValueError,
     ["transpose", "f64[2,3]"]),
    (lambda: tnp.moveaxis(np.ones((2, 3)), (0, 1), 0), TracerValueError, ValueError,
     ["moveaxis"]),
    (lambda: tnp.swapaxes(np.ones((2, 3)), 0, 3), TracerIndexError, IndexError,
     ["swapaxes", "f64[2,3]"]),
    (lambda: tnp.clip(np.ones(2), 0, 1, min=0), TracerValueError, ValueError, ["clip"]),
    (lambda: tnp.pad(np.ones(2), 1, mode="median"), TracerValueError, ValueError,
     ["pad", "median"]),
    (lambda: tnp.pad(np.ones(2), -1), TracerValueError, ValueError, ["pad", "negative"]),
    (lambda: tnp.pad(np.ones(0), 1, mode="edge"), TracerValueError, ValueError,
     ["pad", "empty axis", "f64[0]"]),
    (lambda: tnp.repeat(np.ones(3), [1, 2]), ShapeError, ValueError, ["repeat", "f64[3]"]),
    (lambda: tnp.repeat(np.ones(3), -1), TracerValueError, ValueError, ["repeat"]),
    (lambda: tnp.tril(np.float32(1)), ShapeError, ValueError, ["tril", "f32[]"]),
    (lambda: tnp.broadcast_to(np.ones(3), (2, 4)), ShapeError, ValueError,
     ["broadcast_to", "f64[3]"]),
    (lambda: tnp.arange(1, 5, 0), TracerValueError, ValueError, ["arange"]),
    (lambda: tnp.linspace(0, 1, -1), TracerValueError, ValueError, ["linspace"]),
    (lambda: tnp.zeros((2, -1)), TracerValueError, ValueError, ["zeros", "negative"]),
    (lambda: tnp.var(np.ones(3), ddof=1, correction=1), TracerValueError, ValueError, ["var"]),
    (lambda: tnp.rot90(np.ones((2, 2)), axes=(1, 1)), TracerValueError, ValueError, ["rot90"]),
    (lambda: tnp.round(np.ones(2), 1.5), TracerTypeError, TypeError, ["round", "decimals"]),
]


@pytest.mark.parametrize("fn, cls, builtin, words", ERRORS)
def test_errors_name_function_and_shapes(fn, cls, builtin, words):
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, TracerError) and isinstance(info.value, builtin)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    assert "test_numpy_shape_creation.py" in str(info.value)  # the user's line


def test_traced_static_arguments_are_rejected_clearly():
    f32 = ShapedArray((), np.float32)
    for fn in (lambda t: tnp.arange(t), lambda t: tnp.zeros((t, 2)),
               lambda t: tnp.sum(np.ones((2, 2)), axis=t),
               lambda t: tnp.reshape(np.ones(4), (t, 2)), lambda t: tnp.roll(np.ones(3), t)):
        with pytest.raises(TracerTypeError):
            trace(fn, [f32])


def test_eager_results_are_ndarrays():
    for value in (tnp.sum(np.ones(3)), tnp.add(1, 2), tnp.positive(3.0), tnp.real(2),
                  tnp.max(np.arange(3)), tnp.transpose(np.float32(1)), tnp.imag(1.0),
                  tnp.clip(5, 0, 3), tnp.where(True, 1, 2), tnp.reshape(7, ())):
        assert isinstance(value, np.ndarray) and value.shape == ()


def test_roll_with_a_tuple_shift_and_no_axis_adds_the_shifts():
    x = np.arange(6).reshape(2, 3)
    like_numpy(lambda a: tnp.roll(a, (1, 2)), lambda a: np.roll(a, (1, 2)), x)
    like_numpy(lambda a: tnp.roll(a, (1, -5), axis=None),
               lambda a: np.roll(a, (1, -5), axis=None), x)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("name", ["concatenate", "stack", "vstack", "hstack"])
@pytest.mark.parametrize("dtype,casting", [(np.float32, "same_kind"), (np.int8, "same_kind"),
                                           (np.int8, "unsafe"), (None, "no"), (None, "safe"),
                                           (np.complex64, "safe")])
def test_joins_check_casting(name, dtype, casting):
    arrays = (np.array([3, 200, 1], np.uint64), np.array([1 + 2j, 3, 4], np.complex64),
              np.array([1, 2, 3], np.uint8))
    for items in (arrays, arrays[::2], (arrays[2], np.array([1.5, 2, 3]))):
        np_fn = lambda *a: getattr(np, name)(a, dtype=dtype, casting=casting)  # noqa: E731
        fn = lambda *a: getattr(tnp, name)(a, dtype=dtype, casting=casting)  # noqa: E731
        try:
            want = np_fn(*items)
        except TypeError:
            raises_like_numpy(fn, np_fn, *items)
            continue
        matches(fn(*items), want)


def test_clip_follows_numpy_with_nan_and_inverted_bounds():
    x = np.array([-1.0, 5.0, 9.0, np.nan])
    np.testing.assert_array_equal(tnp.clip(x, 0, 6), np.clip(x, 0, 6))
    np.testing.assert_array_equal(tnp.clip(x, 6, 2), np.clip(x, 6, 2))  # a_min > a_max
    np.testing.assert_array_equal(tr.jit(lambda x: tnp.clip(x, 0, 6))(x), np.clip(x, 0, 6))
    ints = np.array([-3, 2, 7])
    assert tnp.clip(ints, 0, 5).dtype == np.clip(ints, 0, 5).dtype
