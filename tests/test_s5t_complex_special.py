"""tracer.numpy's complex functions against NumPy 2 on special values: every pair of
parts from {±0, ±1, 0.5, 1e-300, 1e300, ±inf, nan}, eager and under `tr.jit` (cpu
backend, one call over the whole grid per dtype), signed zeros and which part is
NaN compared exactly, finite non-zero parts to a few ulps; then random finite
values (hypothesis). NaN sign bits are not compared (NumPy's depend on the C
library's NaN propagation).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp

PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, np.inf, -np.inf, np.nan]
UNARY = ["sinh", "cosh", "exp2", "reciprocal", "arcsin", "arccos", "arctan", "arcsinh",
         "arccosh", "arctanh", "sin", "cos", "tanh", "exp", "log", "log2", "log1p", "sqrt",
         "square", "sign", "conjugate", "absolute", "angle", "isfinite", "isinf", "isnan"]
ORDER = ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax",
         "fmin", "equal", "not_equal"]
DTYPES = [np.complex64, np.complex128]


def grid(dt: Any) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 1e300 overflows complex64 to inf: wanted
        return np.array([complex(a, b) for a in PARTS for b in PARTS], dt)


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


def _all_unary(x: Any) -> dict[str, Any]:
    return {name: getattr(tnp, name)(x) for name in UNARY}


def _all_order(a: Any, b: Any) -> dict[str, Any]:
    return {name: getattr(tnp, name)(a, b) for name in ORDER}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_unary_special_values(dt: Any, mode: str) -> None:
    x = grid(dt)
    out = (tr.jit(_all_unary) if mode == "jit" else _all_unary)(x)
    for name in UNARY:
        assert_matches(out[name], numpy_value(name, x), f"{name} {mode}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_orderings_with_nan_parts(dt: Any, mode: str) -> None:
    x = grid(dt)
    a, b = np.repeat(x, x.size), np.tile(x, x.size)
    out = (tr.jit(_all_order) if mode == "jit" else _all_order)(a, b)
    for name in ORDER:
        assert_matches(out[name], numpy_value(name, a, b), f"{name} {mode}")


def test_reported_cases() -> None:
    """The values the fuzzer reported, spelled out."""
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


def _finite(width: int) -> st.SearchStrategy[float]:
    return st.floats(allow_nan=False, allow_infinity=False, width=width)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), double=st.booleans())
def test_random_finite_values(data: st.DataObject, double: bool) -> None:
    dt, width = (np.complex128, 64) if double else (np.complex64, 32)
    parts = data.draw(st.lists(st.tuples(_finite(width), _finite(width)), min_size=8,
                               max_size=8))
    x = np.array([complex(a, b) for a, b in parts], dt)
    out = tr.jit(_all_unary)(x)
    for name in UNARY[:10]:
        assert_matches(out[name], numpy_value(name, x), name, maxulp=8)


@pytest.mark.parametrize("name", ["sinh", "cosh"])
def test_real_gradients_still_work(name: str) -> None:
    x = np.array([-3.0, -0.2, 0.7, 20.0])
    want = np.cosh(x) if name == "sinh" else np.sinh(x)
    grad = tr.grad(lambda v: tnp.sum(getattr(tnp, name)(v)))
    np.testing.assert_allclose(grad(x), want, rtol=1e-14)
    np.testing.assert_allclose(tr.jit(grad)(x), want, rtol=1e-14)
    big = np.array([700.0, 710.0])  # e**710 / 2 is finite, e**710 is not
    np.testing.assert_allclose(np.asarray(getattr(tnp, name)(big)),
                               getattr(np, name)(big), rtol=4e-16)
