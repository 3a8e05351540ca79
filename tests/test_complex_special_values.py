"""Complex special values follow NumPy: the element-wise ops on the cpu backend against
the interpreter (NumPy), and tracer.numpy's complex functions against NumPy itself.

Every element-wise op that takes complex operands runs once per dtype over a grid
whose parts are 0, -0, +-1, 0.5, 1e-300, 1e300, +-inf and NaN (binary ops: every
pair), compiled as one kernel, and must give the interpreter's (NumPy's) answer:
the same infinities, signed zeros and NaN placement; finite values within a few
ulps of |z| (glibc and the helpers round differently inside). Then random finite
values, and the `tracer.numpy` functions (eager and jitted, the same grid; orderings
with NaN parts; hypothesis) against NumPy itself.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops

PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, np.inf, -np.inf, np.nan]
UNARY = ["abs", "exp", "expm1", "log", "log1p", "logistic", "neg", "sign", "sin", "cos",
         "tan", "tanh", "sqrt", "rsqrt", "real", "imag"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
# NaN signs NumPy leaves to its loops' operation order, which these emitters do not copy.
NAN_SIGN_FREE = {"div", "expm1", "logistic"}
DTYPES = [np.complex64, np.complex128]


def _grid(dtype: type) -> np.ndarray:
    with np.errstate(over="ignore"):  # (1e300 is inf in complex64)
        return np.array([complex(a, b) for a in PARTS for b in PARTS], dtype)


def _operands(name: str, dtype: type) -> tuple[np.ndarray, ...]:
    x = _grid(dtype)
    return (np.repeat(x, x.size), np.tile(x, x.size)) if name in BINARY else (x,)


def _parts(z: np.ndarray) -> list[np.ndarray]:
    return [z.real, z.imag] if z.dtype.kind == "c" else [z]


def _mismatches(got: np.ndarray, want: np.ndarray, ulps: float, nan_sign: bool) -> np.ndarray:
    """Indices where `got` is not `want`: NaN placement (and sign, if `nan_sign`), signed
    zeros and infinities exactly; finite values within `ulps` of |want|."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = np.abs(want).astype(np.float64)
    eps = np.finfo(want.dtype).eps
    bad = np.zeros(want.shape, bool)
    for g, w in zip(_parts(got), _parts(want)):
        g, w = g.astype(np.float64), w.astype(np.float64)
        nan = np.isnan(g) & np.isnan(w)
        if nan_sign:
            bad |= nan & (np.signbit(g) != np.signbit(w))
        exact = ~np.isfinite(w) | ~np.isfinite(g) | ((g == 0) & (w == 0))
        with np.errstate(invalid="ignore"):
            close = np.abs(g - w) <= ulps * eps * np.where(np.isfinite(scale), scale, 0)
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        bad |= ~nan & np.where(exact, ~same, ~close)
    return np.flatnonzero(bad)


def _report(idx: np.ndarray, args: tuple, got: np.ndarray, want: np.ndarray) -> str:
    rows = [f"{tuple(a[k] for a in args)}: cpu {got[k]!r}, numpy {want[k]!r}" for k in idx[:8]]
    return f"{idx.size} mismatches:\n" + "\n".join(rows)


@functools.cache
def _jitted(name: str, backend: str | None = None):
    fn = getattr(ops, name)
    return tr.jit(lambda *a: fn(*a), backend=backend)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_special_values_match_the_interpreter(name: str, dtype: type) -> None:
    args = _operands(name, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(_jitted(name, "interpreter")(*args))
    got = np.asarray(_jitted(name)(*args))
    idx = _mismatches(got, want, 4, nan_sign=name not in NAN_SIGN_FREE)
    assert idx.size == 0, _report(idx, args, got, want)


def test_pow_of_zero_follows_numpy() -> None:
    """0 ** w: 1 for w == 0, 0 for Re w > 0 (any Im w), NaN otherwise (npy_cpow)."""
    w = np.array([0, 2, 1 + 1j, 0.5 - 3j, -1, -1 + 1j, 1j], np.complex128)
    got = _jitted("pow")(np.zeros_like(w), w)
    np.testing.assert_array_equal(got, [1, 0, 0, 0, np.nan, np.nan, np.nan])


def _finite(limit: float) -> st.SearchStrategy:
    return st.floats(-limit, limit, allow_nan=False, allow_infinity=False)


# (op, |part| bound of the operands, ulps of |result|): pow's general path is glibc's
# exp(w log z), whose error grows with |w log z|.
RANDOM = [("sin", 20, 8), ("cos", 20, 8), ("tan", 20, 8), ("tanh", 20, 8), ("exp", 50, 8),
          ("mul", 1e6, 4), ("sign", 1e6, 4), ("pow", 4, 64)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,limit,ulps", RANDOM, ids=[r[0] for r in RANDOM])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_finite_values_are_close(name: str, limit: float, ulps: float, dtype: type,
                                        data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 16))
    arity = 2 if name in BINARY else 1
    parts = data.draw(st.lists(_finite(limit), min_size=2 * n * arity, max_size=2 * n * arity))
    z = (np.array(parts[0::2]) + 1j * np.array(parts[1::2])).astype(dtype)
    args = tuple(np.split(z, arity))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(_jitted(name, "interpreter")(*args))
    got = np.asarray(_jitted(name)(*args))
    if name == "pow":  # z**w = exp(w log z): an error of one ulp in w log z (computed in
        z, w = (a.astype(np.complex128) for a in args)  # complex64 by NumPy) is |w log z| ulps
        with np.errstate(divide="ignore", invalid="ignore"):
            cond = 1 + np.abs(w) * (np.abs(np.log(np.abs(z))) + np.pi)
        ulps = ulps * np.where(np.isfinite(cond), cond, 1)  # (0 ** w: exact cases)
    idx = _mismatches(got, want, ulps, nan_sign=True)
    assert idx.size == 0, _report(idx, args, got, want)


NUMPY_FUNCTIONS = ["sin", "tan", "power", "multiply", "sign", "maximum"]


@pytest.mark.parametrize("name", NUMPY_FUNCTIONS)
def test_tracer_numpy_matches_numpy(name: str) -> None:
    args = _operands("add" if name in ("power", "multiply", "maximum") else "neg",
                     np.complex128)
    got = np.asarray(tr.jit(lambda *a: getattr(tnp, name)(*a))(*args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(*args)
    idx = _mismatches(got, want, 4, nan_sign=True)
    assert idx.size == 0, _report(idx, args, got, want)


# tracer.numpy's complex functions against NumPy itself, eagerly and under `tr.jit` (one
# call over the whole grid per dtype); NaN sign bits are not compared here (NumPy's depend
# on the C library's NaN propagation), finite non-zero parts to a few ulps.
NUMPY_UNARY = ["sinh", "cosh", "exp2", "reciprocal", "arcsin", "arccos", "arctan", "arcsinh",
               "arccosh", "arctanh", "sin", "cos", "tanh", "exp", "log", "log2", "log1p", "sqrt",
               "square", "sign", "conjugate", "absolute", "angle", "isfinite", "isinf", "isnan"]
NUMPY_ORDER = ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax",
               "fmin", "equal", "not_equal"]


def numpy_value(name: str, *args: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return getattr(np, name)(*args)


def assert_matches(got: Any, want: np.ndarray, name: str, maxulp: int = 4) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if want.dtype.kind == "b":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    pairs = [(got.real, want.real), (got.imag, want.imag)] if want.dtype.kind == "c" \
        else [(got, want)]
    for g, w in pairs:
        inexact = np.isfinite(w) & (w != 0) & np.isfinite(g) & (g != 0)
        exact = ~inexact
        np.testing.assert_array_equal(g[exact], w[exact], err_msg=name)  # NaN == NaN
        real = exact & ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[real]), np.signbit(w[real]),
                                      err_msg=f"{name}: signed zero / infinity")
        np.testing.assert_array_max_ulp(g[inexact], w[inexact], maxulp=maxulp)


def _all_numpy_unary(x: Any) -> dict[str, Any]:
    return {name: getattr(tnp, name)(x) for name in NUMPY_UNARY}


def _all_numpy_orderings(a: Any, b: Any) -> dict[str, Any]:
    return {name: getattr(tnp, name)(a, b) for name in NUMPY_ORDER}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_tracer_numpy_unary_special_values(dt: Any, mode: str) -> None:
    x = _grid(dt)
    out = (tr.jit(_all_numpy_unary) if mode == "jit" else _all_numpy_unary)(x)
    for name in NUMPY_UNARY:
        assert_matches(out[name], numpy_value(name, x), f"{name} {mode}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_tracer_numpy_orderings_with_nan_parts(dt: Any, mode: str) -> None:
    x = _grid(dt)
    a, b = np.repeat(x, x.size), np.tile(x, x.size)
    out = (tr.jit(_all_numpy_orderings) if mode == "jit" else _all_numpy_orderings)(a, b)
    for name in NUMPY_ORDER:
        assert_matches(out[name], numpy_value(name, a, b), f"{name} {mode}")


def test_tracer_numpy_single_values_spelled_out() -> None:
    """Single values whose signed zeros, infinities and NaN parts NumPy fixes."""
    def parts(z: Any) -> tuple[float, float]:
        z = complex(np.asarray(z))
        return z.real, z.imag
    assert str(parts(tnp.sinh(np.complex128(complex(-0.0, 0.0))))) == "(-0.0, 0.0)"
    assert np.isnan(parts(tnp.sinh(np.complex128(complex(0, np.inf))))[1])
    assert parts(tnp.sinh(np.complex128(complex(0, np.inf))))[0] == 0
    assert np.signbit(parts(tnp.cosh(np.complex128(complex(0.0, -1.0))))[1])
    assert np.signbit(parts(tnp.exp2(np.complex128(complex(1, -0.0))))[1])
    assert np.isnan(parts(tnp.reciprocal(np.complex128(0j)))).all()
    assert str(parts(tnp.reciprocal(np.complex128(complex(0.0, -1.0))))) == "(0.0, 1.0)"
    assert parts(tnp.arcsin(np.complex128(complex(0, np.inf)))) == (0.0, np.inf)
    assert not bool(tnp.less(np.complex128(0j), np.complex128(complex(1, np.nan))))


def _finite_of_width(width: int) -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False, width=width)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), double=st.booleans())
def test_tracer_numpy_random_finite_values(data: st.DataObject, double: bool) -> None:
    dt, width = (np.complex128, 64) if double else (np.complex64, 32)
    part = _finite_of_width(width)
    parts = data.draw(st.lists(st.tuples(part, part), min_size=8, max_size=8))
    x = np.array([complex(a, b) for a, b in parts], dt)
    out = tr.jit(_all_numpy_unary)(x)
    for name in NUMPY_UNARY[:10]:
        assert_matches(out[name], numpy_value(name, x), name, maxulp=8)


@pytest.mark.parametrize("name", ["sinh", "cosh"])
def test_real_gradients_of_sinh_and_cosh(name: str) -> None:
    x = np.array([-3.0, -0.2, 0.7, 20.0])
    want = np.cosh(x) if name == "sinh" else np.sinh(x)
    grad = tr.grad(lambda v: tnp.sum(getattr(tnp, name)(v)))
    np.testing.assert_allclose(grad(x), want, rtol=1e-14)
    np.testing.assert_allclose(tr.jit(grad)(x), want, rtol=1e-14)
    big = np.array([700.0, 710.0])  # e**710 / 2 is finite, e**710 is not
    np.testing.assert_allclose(np.asarray(getattr(tnp, name)(big)),
                               getattr(np, name)(big), rtol=4e-16)
