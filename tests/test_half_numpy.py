"""tracer.numpy with 16-bit floats.

float16 as a storage type: tracer.numpy computes in float32 and rounds on store, as
NumPy's half loops do, so compiled (cpu) and eager results equal NumPy's float16
results: ufuncs exactly, reductions within 1 float16 ulp. bfloat16 comes from
ml_dtypes; the functions that read `dtype.kind` (frexp, spacing, quantiles, norms, fft,
predicates...) treat it as a float computed in float32, rounded once (oracles: the
float32 computation, ml_dtypes' own bfloat16 ufuncs, JAX's result dtypes). Python
numbers convert straight to the requested float dtype.
"""

from __future__ import annotations

from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tests.half_support import BF16, F16, F32, jax_numpy, jit_run, same_bits
from tracer.errors import DTypeError

RNG = np.random.default_rng(7)
X = (RNG.normal(size=(37, 29)) * 8).astype(np.float16)
Y = (RNG.normal(size=(37, 29)) + 0.1).astype(np.float16)
POS = (np.abs(X) + 0.25).astype(np.float16)

UNARY = ["negative", "absolute", "sqrt", "exp", "log", "log1p", "expm1", "sin", "cos", "tanh",
         "arctan", "floor", "rint", "square", "reciprocal", "cbrt", "exp2", "log2", "sign",
         "deg2rad", "sinh", "arcsinh"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "arctan2",
          "hypot", "logaddexp", "copysign", "fmod", "floor_divide", "remainder", "nextafter"]


def ulps(got: np.ndarray, want: np.ndarray) -> float:
    """The largest difference in float16 ulps of `want` (inf / NaN must match exactly)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    finite = np.isfinite(want) & np.isfinite(got) & ~same
    if np.any(~same & ~finite):
        return float("inf")
    spacing = np.spacing(np.abs(want[finite])).astype(np.float64)
    diff = np.abs(got[finite].astype(np.float64) - want[finite].astype(np.float64))
    return float(np.max(diff / spacing, initial=0.0))


def _unary_all(x):
    return tuple(getattr(tnp, name)(x) for name in UNARY)


def _binary_all(x, y):
    return tuple(getattr(tnp, name)(x, y) for name in BINARY)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_half_ufuncs_equal_numpy(mode):
    with np.errstate(all="ignore"):
        want_u = [getattr(np, name)(POS) for name in UNARY]
        want_b = [getattr(np, name)(X, Y) for name in BINARY]
        run_u = _unary_all if mode == "eager" else tr.jit(_unary_all)
        run_b = _binary_all if mode == "eager" else tr.jit(_binary_all)
        got_u, got_b = run_u(POS), run_b(X, Y)
    for name, g, w in zip(UNARY + BINARY, [*got_u, *got_b], [*want_u, *want_b], strict=True):
        assert ulps(g, w) <= 1, name
        assert np.mean((g != w) & ~(np.isnan(g) & np.isnan(w))) < 0.01, name


# Every finite float16: NumPy rounds a float32 libm result; tracer's formulas and libm
# calls agree with it exactly on all but a handful of values, and within 1 ulp on those.
ALL_HALF = np.arange(65536, dtype=np.uint16).view(np.float16)
ALL_HALF = ALL_HALF[np.isfinite(ALL_HALF)]


@pytest.mark.parametrize("name", UNARY + ["arcsin", "arccos", "arccosh", "arctanh", "cosh"])
def test_half_unary_on_every_float16(name):
    with np.errstate(all="ignore"):
        want, got = getattr(np, name)(ALL_HALF), getattr(tnp, name)(ALL_HALF)
    assert ulps(got, want) <= 1, name
    assert np.sum((got != want) & ~(np.isnan(got) & np.isnan(want))) <= 16, name


REDUCTIONS = {
    "sum_last": lambda m, x: m.sum(x, axis=-1), "sum_first": lambda m, x: m.sum(x, axis=0),
    "sum_all": lambda m, x: m.sum(x), "prod": lambda m, x: m.prod(x[:, :6] / 4, axis=1),
    "mean": lambda m, x: m.mean(x, axis=0), "mean_all": lambda m, x: m.mean(x),
    "var": lambda m, x: m.var(x, axis=1), "std": lambda m, x: m.std(x, axis=0),
    "max": lambda m, x: m.max(x, axis=1), "cumsum": lambda m, x: m.cumsum(x, axis=1),
    "nansum": lambda m, x: m.nansum(x, axis=-1), "nanmean": lambda m, x: m.nanmean(x, axis=0),
    "dot": lambda m, x: m.dot(x, x.T), "einsum": lambda m, x: m.einsum("ij,ij->i", x, x),
    "matmul": lambda m, x: m.matmul(x.T, x), "average": lambda m, x: m.average(x, axis=1),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_half_reductions_within_one_ulp(name):
    fn = REDUCTIONS[name]
    with np.errstate(all="ignore"):
        want = fn(np, X)
        eager = fn(tnp, X)
        compiled = tr.jit(lambda x: fn(tnp, x))(X)
    assert ulps(eager, want) <= 1, name
    assert ulps(compiled, want) <= 1, name


def test_numpy_source_in_half_under_jit():
    def model(x, y):
        return np.tanh(x * y + 1) / np.sum(np.abs(x), axis=0)
    with np.errstate(all="ignore"):
        assert ulps(tr.jit(model)(X, Y), model(X, Y)) <= 1


def test_bfloat16_comes_from_ml_dtypes():
    assert tnp.bfloat16 is ml_dtypes.bfloat16
    assert np.dtype(tnp.bfloat16).itemsize == 2


# ------------------------------------------------------------------ bfloat16 and `dtype.kind`

_X = np.array([1.5, -2.0, 0.0, -0.0, 3.0, 1e-39, 0.3, 70.0, np.inf, -np.inf, np.nan],
              BF16)


_FINITE = np.array([1.5, -2.0, 0.25, 3.0, 1e-39, 0.3, 70.0, -5.5], BF16)


def _in_f32(fn: Callable[..., Any], *xs: np.ndarray) -> Any:
    """fn on the float32 values, float results rounded once to bfloat16."""
    out = fn(*(x.astype(F32) for x in xs))
    outs = out if isinstance(out, tuple) else (out,)
    res = tuple(np.asarray(o).astype(BF16) if np.asarray(o).dtype == F32 else np.asarray(o)
                for o in outs)
    return res if isinstance(out, tuple) else res[0]


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_frexp_ldexp_modf_accept_bfloat16(backend):
    def fns(x):
        return [*tnp.frexp(x), tnp.ldexp(x, 3), *tnp.modf(x)]
    got = fns(_X) if backend == "eager" else jit_run(fns, backend, _X)
    want = [*_in_f32(tnp.frexp, _X), _in_f32(lambda v: tnp.ldexp(v, 3), _X),
            *_in_f32(tnp.modf, _X)]
    for g, w in zip(got, want, strict=True):
        same_bits(g, w)
    assert [np.asarray(g).dtype for g in got] == [BF16, np.int32, BF16, BF16, BF16]


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_spacing_and_nextafter_of_bfloat16_steps_in_bfloat16(backend):
    toward = np.array([5.0, -5.0, 1.0, -1.0, 3.0, 0.0, 0.3, np.inf, 0.0, 0.0, 1.0], BF16)

    def fns(x, y):
        return [tnp.spacing(x), tnp.nextafter(x, y)]
    got = fns(_X, toward) if backend == "eager" else jit_run(fns, backend, _X, toward)
    with np.errstate(invalid="ignore"):
        want = np.spacing(_X)  # ml_dtypes' own bfloat16 loops
    tiny = np.asarray(ml_dtypes.finfo(BF16).smallest_subnormal, BF16)
    want[3] = tiny  # spacing(-0.0): NumPy's float loops (and tracer's) give +tiny
    same_bits(got[0], want)
    same_bits(got[1], np.nextafter(_X, toward))


def test_bfloat16_results_have_jax_dtypes():
    jnp = jax_numpy()
    x = _FINITE
    m = np.array([[2.0, 1.0], [1.0, 3.0]], BF16)
    pairs = {
        "frexp": (lambda n, v: n.frexp(v)), "spacing": (lambda n, v: n.spacing(v)),
        "nextafter": (lambda n, v: n.nextafter(v, v[::-1])),
        "ldexp": (lambda n, v: n.ldexp(v, 2)), "modf": (lambda n, v: n.modf(v)),
        "percentile": (lambda n, v: n.percentile(v, 30.0)),
        "quantile": (lambda n, v: n.quantile(v, 0.3)),
        "nanquantile": (lambda n, v: n.nanquantile(v, 0.7)),
        "norm": (lambda n, v: n.linalg.norm(v)), "norm1": (lambda n, v: n.linalg.norm(v, 1)),
        "fft": (lambda n, v: n.fft.fft(v)), "ifft": (lambda n, v: n.fft.ifft(v)),
        "irfft": (lambda n, v: n.fft.irfft(v)), "i0": (lambda n, v: n.i0(v)),
        "sinc": (lambda n, v: n.sinc(v)), "gradient": (lambda n, v: n.gradient(v)),
        "linspace": (lambda n, v: n.linspace(v[0], v[3], 5)),
        "unwrap": (lambda n, v: n.unwrap(v)), "vander": (lambda n, v: n.vander(v[:3])),
        "arcsinh": (lambda n, v: n.arcsinh(v)),
        "fmax": (lambda n, v: n.fmax(v, v[::-1])),
    }
    for name, fn in pairs.items():
        got, want = fn(tnp, x), fn(jnp, jnp.asarray(x))
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        assert [np.asarray(g).dtype for g in got] == [np.asarray(w).dtype for w in want], name
    assert tnp.linalg.norm(m).dtype == jnp.linalg.norm(jnp.asarray(m)).dtype == BF16
    assert tnp.fft.fft2(m).dtype == np.complex64


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_bfloat16_order_statistics_and_norms_compute_in_float32(backend):
    def fns(v):
        return [tnp.percentile(v, 30), tnp.quantile(v, [0.1, 0.5, 0.95]),
                tnp.nanpercentile(v, 75.0), tnp.quantile(v, 0.4, method="midpoint"),
                tnp.linalg.norm(v), tnp.linalg.norm(v, 3), tnp.linalg.norm(v, -np.inf),
                tnp.linalg.norm(tnp.reshape(v, (2, 4)), "fro"),
                tnp.linalg.norm(tnp.reshape(v, (2, 4)), 1),
                tnp.linalg.norm(tnp.reshape(v, (2, 4)), axis=1)]
    got = fns(_FINITE) if backend == "eager" else jit_run(fns, backend, _FINITE)
    want = fns(_FINITE.astype(F32))
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        w = np.asarray(w)
        w = w.astype(BF16) if w.dtype == F32 else w
        if k == 1:  # a list of q is float64 (NumPy's promotion), computed from float32 values
            assert np.asarray(g).dtype == np.float64
        same_bits(g, w)
    # percentile 30 of [-2, 0, x, ...] sits on a tie in bfloat16: float32 keeps it exact
    tie = np.array([0.0, 1e-39, 5.0, 6.0], BF16)
    same_bits(tnp.quantile(tie, 1 / 6), _in_f32(lambda v: tnp.quantile(v, 1 / 6), tie))


@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_bfloat16_fft_is_the_float32_transform(backend):
    x = _FINITE

    def fns(v):
        return [tnp.fft.fft(v), tnp.fft.rfft(v), tnp.fft.irfft(v), tnp.fft.fft2(
            tnp.reshape(v, (2, 4)))]
    got = fns(x) if backend == "eager" else jit_run(fns, backend, x)
    wide = x.astype(F32)  # (on the same backend: their FFT kernels differ in the last bit)
    for g, w in zip(got, fns(wide) if backend == "eager" else jit_run(fns, backend, wide),
                    strict=True):
        same_bits(g, w)


def test_more_float_functions_of_bfloat16_compute_in_float32():
    x = _FINITE
    # (not sinc: pi * x and sin(pi * x) round to the dtype as NumPy's array steps do,
    # which for bfloat16 gives JAX's bits; see test_numpy_ufuncs' float16 sinc test)
    for fn in (tnp.i0, tnp.gradient, tnp.arcsinh, tnp.unwrap,
               lambda v: tnp.linspace(v[0], v[3], 7), lambda v: tnp.linspace(v[1], v[6], 9)):
        same_bits(fn(x), _in_f32(fn, x))
    # an integer dtype floors the bfloat16 samples (NumPy: computed in the float dtype)
    floored = tnp.linspace(x[0], x[6], 9, dtype=np.int32)
    assert np.asarray(floored).tolist() == np.floor(
        np.asarray(tnp.linspace(x[0], x[6], 9)).astype(F32)).astype(np.int32).tolist()
    big = np.abs(x) + 1
    same_bits(tnp.vander(x[:3]), tnp.vander(x[:3].astype(F32)).astype(BF16))
    assert tnp.geomspace(big[0], big[6], 4).dtype == np.float64  # as float16 (NumPy's rule)


@pytest.mark.parametrize("backend", ["eager", "interpreter", "cpu"])
def test_bfloat16_predicates_and_nan_aware_functions(backend):
    x = _X
    y = np.array([np.nan, 1.0, -0.0, 0.0, np.nan, 2.0, -1.0, np.inf, 1.0, 3.0, 4.0], BF16)

    def fns(a, b):
        return [tnp.isnan(a), tnp.isinf(a), tnp.isfinite(a), tnp.isposinf(a),
                tnp.isneginf(a), tnp.signbit(a), tnp.copysign(b, a), tnp.fmax(a, b),
                tnp.fmin(a, b), tnp.nanargmax(b), tnp.argmax(b), tnp.sort(b),
                tnp.array_equal(a, a, equal_nan=True), tnp.floor(a), tnp.trunc(a)]
    got = fns(x, y) if backend == "eager" else jit_run(fns, backend, x, y)
    want = fns(x.astype(F32), y.astype(F32))
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        same_bits(g, w.astype(BF16) if w.dtype == F32 else w)
    assert np.asarray(tnp.copysign(np.ones(2, BF16), np.array([-0.0, np.nan], BF16))
                      ).tolist()[0] == -1.0


def test_bfloat16_monoid_reduce_starts_from_nan():
    x = np.array([-4.0, -1.0, np.nan, -3.0], BF16)
    assert float(np.fmax.reduce(tnp.asarray(x))) == -1.0
    assert float(np.fmin.reduce(tnp.asarray(x))) == -4.0


def test_bfloat16_arange_and_linalg_follow_float16():
    jitted = tr.jit(lambda: tnp.arange(0, 300, 1.5, dtype=BF16))()
    same_bits(jitted, np.arange(0, 300, 1.5, dtype=BF16))
    m = np.array([[2.0, 1.0], [1.0, 3.0]], BF16)
    for fn in (tnp.linalg.solve, tnp.linalg.inv, tnp.linalg.det, tnp.linalg.svd):
        with pytest.raises(DTypeError, match="bfloat16 is unsupported"):
            fn(m) if fn is not tnp.linalg.solve else fn(m, m)


# ------------------------------------------------------------------ Python numbers

@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_python_numbers_convert_straight_to_the_dtype(backend):
    def make():
        return [tnp.asarray(10 ** 30, dtype=np.float16), tnp.asarray(10 ** 30, dtype=F32),
                tnp.asarray(10 ** 30, dtype=BF16), tnp.array([10 ** 30, -2], dtype=F32),
                tnp.asarray(-(10 ** 40), dtype=np.float64), tnp.asarray(2.5, dtype=np.int32)]
    with np.errstate(over="ignore"):  # (float16: NumPy warns about the overflow too)
        got = make() if backend == "eager" else jit_run(make, backend)
    assert np.isposinf(got[0]) and got[0].dtype == F16
    assert float(got[1]) == float(np.float32(1e30)) and got[1].dtype == F32
    same_bits(got[2], np.asarray(np.float32(1e30)).astype(BF16))
    assert np.asarray(got[3]).tolist() == [float(np.float32(1e30)), -2.0]
    assert float(got[4]) == -1e40 and int(got[5]) == 2


def test_python_numbers_that_do_not_fit_an_integer_dtype_raise():
    with pytest.raises(OverflowError, match="int32"):
        tnp.asarray(10 ** 30, dtype=np.int32)
    with pytest.raises(OverflowError, match="int64"):
        tnp.asarray(10 ** 30)
