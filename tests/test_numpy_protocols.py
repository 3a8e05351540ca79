"""NumPy's own functions on traced arrays (`__array_ufunc__`, `__array_function__`,
`__array__`) and the array API namespace (`__array_namespace__`), inside jit and
under grad / vmap; plain ndarrays stay NumPy's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracer as tr
import tracer.numpy as tnp
from tests.numpy_compare import assert_same
from tracer.errors import ConcretizationError, TracerTypeError
from tracer.tracing import Tracer

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(3, 4))


def interp(fn):
    return tr.jit(fn, backend="interpreter")


# ---------------------------------------------------------------- __array_ufunc__
UFUNCS = ["sin", "exp", "log1p", "sqrt", "absolute", "negative", "floor", "isnan", "sign",
          "add", "subtract", "multiply", "divide", "power", "maximum", "fmin", "arctan2",
          "hypot", "logaddexp", "equal", "less", "logical_and", "copysign", "remainder",
          "heaviside", "nextafter", "ldexp", "frexp", "modf", "divmod", "matmul", "vecdot"]


@pytest.mark.parametrize("name", UFUNCS)
def test_numpy_ufuncs_on_traced_arrays(name):
    ufunc = getattr(np, name)
    x, y = np.abs(X) + 0.5, Y
    args = (x,) if ufunc.nin == 1 else (x, np.arange(4, dtype=np.int32)) \
        if name == "ldexp" else (x, y.T) if name == "matmul" else (x, y)
    want = ufunc(*args)
    got = interp(lambda *a: ufunc(*a))(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        assert_same(np.asarray(g), np.asarray(w))


def test_ndarray_operands_and_methods_route_to_tracer():
    @interp
    def f(x, y):
        assert isinstance(x, Tracer)
        return (np.ones(4) + x, x * np.float32(2), np.multiply.outer(x[0], y[:, 0]),
                np.add.reduce(x, axis=None), np.maximum.accumulate(y, axis=1),
                np.logical_or.reduce(x > 0, axis=0), np.bitwise_xor.reduce(np.abs(x * 3)
                                                                          .astype(np.int32)))
    want = (np.ones(4) + X, X * np.float32(2), np.multiply.outer(X[0], Y[:, 0]),
            np.add.reduce(X, axis=None), np.maximum.accumulate(Y, axis=1),
            np.logical_or.reduce(X > 0, axis=0),
            np.bitwise_xor.reduce(np.abs(X * 3).astype(np.int32)))
    for g, w in zip(f(X, Y), want, strict=True):
        assert_same(np.asarray(g), np.asarray(w))


def test_ufunc_keywords():
    f = interp(lambda x: np.add(x, 1, dtype=np.float32, casting="same_kind"))
    assert f(X).dtype == np.float32
    with pytest.raises(TypeError, match="out="):
        interp(lambda x: np.add(x, 1, out=x))(X)
    with pytest.raises(TypeError, match="casting"):
        interp(lambda x: np.add(x, 1, casting="unsafe"))(X)
    with pytest.raises(TypeError, match=r"x = x\.at\[idx\]\.add"):
        interp(lambda x: np.add.at(x, [0], 1.0))(X)
    with pytest.raises(TypeError, match="reduceat"):
        interp(lambda x: np.add.reduceat(x, [0, 2]))(X)


# ---------------------------------------------------------------- __array_function__
FUNCTIONS = [
    ("sum", lambda np_, x: np_.sum(x, axis=0)), ("mean", lambda np_, x: np_.mean(x, (0, 1))),
    ("concatenate", lambda np_, x: np_.concatenate([x, x * 2], axis=1)),
    ("where", lambda np_, x: np_.where(x > 0, x, -1.0)),
    ("stack", lambda np_, x: np_.stack([x, x])), ("reshape", lambda np_, x: np_.reshape(x, -1)),
    ("transpose", lambda np_, x: np_.transpose(x)), ("cumsum", lambda np_, x: np_.cumsum(x, 1)),
    ("einsum", lambda np_, x: np_.einsum("ij,kj->ik", x, x)),
    ("clip", lambda np_, x: np_.clip(x, -0.5, 0.5)), ("round", lambda np_, x: np_.round(x, 2)),
    ("argmax", lambda np_, x: np_.argmax(x, axis=1)), ("diff", lambda np_, x: np_.diff(x)),
    ("nanmean", lambda np_, x: np_.nanmean(x, axis=0)), ("pad", lambda np_, x: np_.pad(x, 1)),
    ("roll", lambda np_, x: np_.roll(x, 1, axis=1)), ("shape", lambda np_, x: np_.shape(x)),
    ("ndim", lambda np_, x: np_.ndim(x)), ("zeros_like", lambda np_, x: np_.zeros_like(x)),
    ("isclose", lambda np_, x: np_.isclose(x, x + 1e-9)), ("kron", lambda np_, x: np_.kron(x, x)),
    ("split", lambda np_, x: tuple(np_.split(x, 2, axis=1))),
    ("result_type", lambda np_, x: np_.result_type(x, np_.float32)),
]


@pytest.mark.parametrize("name, fn", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_numpy_functions_on_traced_arrays(name, fn):
    want = fn(np, X)
    if not isinstance(want, (np.ndarray, np.generic, tuple)):  # static answers
        got = []
        interp(lambda x: got.append(fn(np, x)) or x)(X)
        assert got[0] == want
        return
    got = interp(lambda x: fn(np, x))(X)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        assert_same(np.asarray(g), np.asarray(w))


def test_unknown_numpy_function_raises_type_error_naming_it():
    with pytest.raises(TracerTypeError, match=r"numpy\.busday_count .*tracer\.numpy has no"):
        interp(lambda x: np.busday_count(x, x))(X)
    with pytest.raises(TypeError, match="inplace=False"):
        interp(lambda x: np.put(x, [0], 1.0))(X)


def test_asarray_of_traced_array_raises_concretization_error():
    with pytest.raises(ConcretizationError, match=r"tnp\.asarray\(x\)"):
        interp(lambda x: np.asarray(x) + 1)(X)
    with pytest.raises(ConcretizationError, match="np.asarray"):
        interp(lambda x: np.array([x, x]))(X)


def test_plain_ndarrays_stay_numpy():
    assert type(np.sum(X)) is np.float64
    assert type(np.sin(X)) is np.ndarray
    assert np.shares_memory(np.reshape(X, -1), X)  # NumPy's view, not a tracer copy


# ---------------------------------------------------------------- grad, vmap, compiled
def model(x, w):
    h = np.tanh(x @ w)
    return np.sum(np.exp(h) * np.where(h > 0, h, 0.1 * h)) + np.mean(np.concatenate([h, w[:3]]))


def test_numpy_source_under_grad_vmap_and_jit():
    w = RNG.normal(size=(4, 2))
    eps = 1e-6
    g = tr.grad(model, argnums=1)(X, w)
    fd = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        dw = np.zeros_like(w)
        dw[idx] = eps
        fd[idx] = (model(X, w + dw) - model(X, w - dw)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)
    batched = tr.vmap(lambda xi: np.sum(np.sin(xi) * np.arange(4)))(X)
    np.testing.assert_allclose(batched, np.sum(np.sin(X) * np.arange(4), axis=1))
    np.testing.assert_allclose(tr.jit(model)(X, w), model(X, w), rtol=1e-12)
    np.testing.assert_allclose(tr.jit(tr.grad(model))(X, w), tr.grad(model)(X, w), rtol=1e-10)


@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                    elements=st.floats(-5, 5)), name=st.sampled_from(["sum", "max", "prod",
                                                                      "mean", "cumsum"]))
def test_reductions_through_protocols_match_numpy(x, name):
    axis = x.ndim - 1
    got = interp(lambda v: getattr(np, name)(v, axis=axis))(x)
    assert_same(got, getattr(np, name)(x, axis=axis))


# ---------------------------------------------------------------- array API namespace
def _standardize(x):
    xp = x.__array_namespace__()
    m = xp.mean(x, axis=0, keepdims=True)
    s = xp.std(x, axis=0, correction=1, keepdims=True)
    z = xp.astype((x - m) / s, xp.float32)
    e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
    soft = e / xp.sum(e, axis=-1, keepdims=True)
    return (xp.concat([soft, xp.matrix_transpose(xp.permute_dims(z, (1, 0)))], axis=0),
            xp.cumulative_sum(xp.reshape(z, (-1,)), include_initial=True),
            xp.vecdot(z, z), xp.clip(xp.take(z, xp.asarray([2, 0]), axis=1), min=-1.0),
            xp.where(xp.isdtype(z.dtype, "real floating"), xp.hypot(z, 1.0), z),
            xp.expand_dims(xp.squeeze(xp.expand_dims(z, axis=0), axis=0), axis=2))


def test_array_api_code_runs_under_jit():
    got = tr.jit(_standardize)(X)
    z = ((X - X.mean(0)) / X.std(0, ddof=1)).astype(np.float32)
    e = np.exp(z - z.max(-1, keepdims=True))
    want = (np.concatenate([e / e.sum(-1, keepdims=True), z]),
            np.concatenate([[0], np.cumsum(z.ravel())]).astype(np.float32),
            np.sum(z * z, axis=-1), np.clip(z[:, [2, 0]], -1.0, None), np.hypot(z, 1.0),
            z[:, :, None])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_array_namespace_contents():
    seen = []
    interp(lambda x: seen.append(x.__array_namespace__()) or x)(X)
    xp = seen[0]
    assert xp.__array_api_version__ == "2024.12"
    names = ["astype", "concat", "permute_dims", "matrix_transpose", "vecdot", "isdtype",
             "bitwise_left_shift", "bitwise_invert", "take", "take_along_axis",
             "cumulative_sum", "cumulative_prod", "clip", "hypot", "copysign", "maximum",
             "minimum", "nextafter", "unstack", "diff", "unique_values", "sort", "argsort",
             "searchsorted", "nonzero", "from_dlpack", "__array_namespace_info__", "linalg",
             "fft", "e", "inf", "nan", "pi", "newaxis", "bool", "complex128"]
    assert [n for n in names if not hasattr(xp, n)] == []
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == np.float64
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8",
                                                 "uint16", "uint32", "uint64"}
    with pytest.raises(TypeError, match="api_version"):
        interp(lambda x: x.__array_namespace__(api_version="1999.01"))(X)


def test_array_api_device_attributes():
    out = interp(lambda x: x.to_device(x.device) * 2)(X)
    np.testing.assert_allclose(out, 2 * X)


def test_tnp_results_are_ndarrays_eagerly():
    # NumPy arrays (a subclass with JAX's result methods: .at, .block_until_ready)
    out = tnp.nansum(X)
    assert isinstance(out, np.ndarray) and type(np.asarray(out)) is np.ndarray
    # (tnp.asarray keeps NumPy's identity, asarray(x) is x: tnp.array's result has .at)
    np.testing.assert_array_equal(tnp.array(X).at[0, 1].set(5.0)[0, 1], 5.0)
    assert_same(tnp.diff(X), np.diff(X))
