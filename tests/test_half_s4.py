"""16-bit floats, part 4: float16 / bfloat16 dot_general through BLAS on the cpu
backend, and the bfloat16 leftovers (tracer.numpy functions that read `dtype.kind`,
reduce_precision to bfloat16, tracer.random with dtype=bfloat16, all_reduce max/min
identities, Python numbers converted straight to a float dtype).

Oracles: the float32 computation rounded once (what XLA's CPU backend does for
16-bit floats), ml_dtypes' own bfloat16 ufuncs, and JAX's result dtypes and random
numbers (skipped without JAX).
"""

from __future__ import annotations

from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracer as tr
import tracer.numpy as tnp
import tracer.random as trr
from tracer import ops
from tracer.errors import DTypeError
from tracer.ops import collectives as coll
from tracer.transforms.api_vmap import vmap

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
HALVES = [F16, BF16]
BACKENDS = ["interpreter", "cpu"]


def run(fn: Callable[..., Any], backend: str, *args: Any) -> Any:
    with np.errstate(all="ignore"):
        return tr.jit(fn, backend=backend)(*args)


def ulps(got: np.ndarray, want: np.ndarray) -> int:
    """Largest distance in steps of the (16-bit) dtype; NaN must meet NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    g, w = got.astype(F32), want.astype(F32)
    assert np.array_equal(np.isnan(g), np.isnan(w))

    def ordered(x: np.ndarray) -> np.ndarray:
        b = x.view(np.int16).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFF), b)
    keep = ~np.isnan(w)
    return int(np.max(np.abs(ordered(got[keep]) - ordered(want[keep])), initial=0))


def same_bits(got: Any, want: Any) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    nan = np.isnan(want.astype(np.complex128 if want.dtype.kind == "c" else np.float64))
    assert np.array_equal(np.isnan(got.astype(np.complex128 if got.dtype.kind == "c"
                                              else np.float64)), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))


def _jnp() -> Any:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_platform_name", "cpu")
    return jax.numpy


# ------------------------------------------------------------------ dot_general via BLAS

def _operands(data: Any, shapes: list[tuple[int, ...]], dtype: np.dtype,
              integral: bool) -> list[np.ndarray]:
    """Small integers (every sum exact in float32, whatever the order) or floats."""
    elems = st.integers(-8, 8) if integral else st.floats(-4, 4, width=32)
    return [np.array(data.draw(st.lists(elems, min_size=int(np.prod(s)),
                                        max_size=int(np.prod(s)))), F32)
            .reshape(s).astype(dtype) for s in shapes]


# (lhs shape, rhs shape, dimension numbers): plain, lhs stored transposed, batched,
# batch dims not leading, contraction over two dims.
_LAYOUTS = [((4, 5), (5, 3), (((1,), (0,)), ((), ()))),
            ((5, 4), (5, 3), (((0,), (0,)), ((), ()))),
            ((2, 4, 5), (2, 5, 3), (((2,), (1,)), ((0,), (0,)))),
            ((4, 2, 5), (5, 3, 2), (((2,), (0,)), ((1,), (2,)))),
            ((3, 2, 5), (5, 3, 4), (((0, 2), (1, 0)), ((), ())))]


def _scaled(shape: tuple[int, ...], m: int) -> tuple[int, ...]:
    return tuple(d * m for d in shape)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("layout", range(len(_LAYOUTS)))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_half_dot_general_is_float32_rounded_once(dtype, layout, data):
    ls, rs, dims = _LAYOUTS[layout]
    scale = data.draw(st.integers(1, 3))  # sizes come from `dims`: one compile per layout
    ls, rs = _scaled(ls, scale), _scaled(rs, scale)
    integral = data.draw(st.booleans())
    a, b = _operands(data, [ls, rs], dtype, integral)

    def f(x, y):
        return ops.dot_general(x, y, dims)
    got = np.asarray(run(f, "cpu", a, b))
    ref = np.asarray(run(f, "interpreter", a, b))
    want = np.asarray(f(a.astype(F32), b.astype(F32))).astype(dtype)
    if integral:  # every order of summation gives the exact sum: one rounding, bit for bit
        same_bits(got, want)
        same_bits(ref, want)
    else:  # the summation order may move a result across a rounding boundary
        assert ulps(got, want) <= 1 and ulps(ref, want) <= 1


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_half_matmul_calls_blas_on_widened_operands(dtype):
    a = np.ones((64, 48), dtype)
    source = tr.jit(lambda x, y: ops.dot_general(x, y, (((1,), (0,)), ((), ())))) \
        .lower(a, a.T.copy()).compile().source
    widen = "widen_bf16" if dtype == BF16 else "widen_f16"
    assert "np.dot(" in source and widen in source and "narrow_" in source
    assert "acc" not in source  # no scalar accumulation loop


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_small_and_batched_inner_product_dots_accumulate_in_float32(dtype):
    rng = np.random.default_rng(0)
    tall = rng.integers(-8, 9, (600, 8)).astype(dtype)
    wide = rng.integers(-8, 9, (8, 70)).astype(dtype)
    f = tr.jit(lambda x, y: tnp.max(x @ y, axis=1))  # products only reduced: fused
    assert "np.dot(" not in f.lower(tall, wide).compile().source  # the fused loop nest
    same_bits(f(tall, wide), (tall.astype(F32) @ wide.astype(F32)).astype(dtype).max(1))
    # 256 products of 256 each: exact in float32, not in 16-bit steps.
    u = np.full((6, 256), 3.0, dtype)
    v = rng.integers(1, 64, (6, 256)).astype(dtype)
    dot = vmap(lambda p, q: ops.dot_general(p, q, (((0,), (0,)), ((), ()))))
    want = np.einsum("ij,ij->i", u.astype(F32), v.astype(F32)).astype(dtype)
    for backend in BACKENDS:
        same_bits(run(dot, backend, u, v), want)
        same_bits(run(lambda p, q: tnp.dot(p[0], q[0]), backend, u, v), want[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_half_dot_general_with_preferred_element_type(backend):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(F32) for s in ((40, 33), (33, 35)))
    cases = [(a.astype(BF16), b.astype(BF16), F32), (a.astype(F16), b.astype(F16), F32),
             (a, b, BF16), (a.astype(F16), b.astype(F16), BF16)]
    for x, y, out in cases:
        got = np.asarray(run(lambda p, q: ops.dot_general(
            p, q, (((1,), (0,)), ((), ())), preferred_element_type=out), backend, x, y))
        exact = x.astype(np.float64) @ y.astype(np.float64)
        assert got.dtype == out
        if out == F32:
            np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)
        else:
            assert ulps(got, exact.astype(F32).astype(out)) <= 1


# ------------------------------------------------------------------ the `.kind` audit

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
    got = fns(_X) if backend == "eager" else run(fns, backend, _X)
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
    got = fns(_X, toward) if backend == "eager" else run(fns, backend, _X, toward)
    with np.errstate(invalid="ignore"):
        want = np.spacing(_X)  # ml_dtypes' own bfloat16 loops
    tiny = np.asarray(ml_dtypes.finfo(BF16).smallest_subnormal, BF16)
    want[3] = tiny  # spacing(-0.0): NumPy's float loops (and tracer's) give +tiny
    same_bits(got[0], want)
    same_bits(got[1], np.nextafter(_X, toward))


def test_bfloat16_results_have_jax_dtypes():
    jnp = _jnp()
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
    got = fns(_FINITE) if backend == "eager" else run(fns, backend, _FINITE)
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
    got = fns(x) if backend == "eager" else run(fns, backend, x)
    wide = x.astype(F32)  # (on the same backend: their FFT kernels differ in the last bit)
    for g, w in zip(got, fns(wide) if backend == "eager" else run(fns, backend, wide),
                    strict=True):
        same_bits(g, w)


def test_more_float_functions_of_bfloat16_compute_in_float32():
    x = _FINITE
    # (not sinc: pi * x and sin(pi * x) round to the dtype as NumPy's array steps do,
    # which for bfloat16 gives JAX's bits; see test_numpy_core's float16 sinc test)
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
    got = fns(x, y) if backend == "eager" else run(fns, backend, x, y)
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


# ------------------------------------------------------------------ reduce_precision

# (x, x rounded to bfloat16): ties go to the even mantissa (1 + 3 * 2**-8 is halfway
# between 1 + 2**-7, odd, and 1 + 2**-6, even), overflow to inf, subnormals kept.
_GOLDEN = [(1 + 2 ** -8, 1.0), (1 + 3 * 2 ** -8, 1 + 2 ** -6), (1 + 2 ** -8 + 2 ** -20,
                                                               1 + 2 ** -7),
           (-(1 + 2 ** -8), -1.0), (3.4e38, np.inf), (-3.4e38, -np.inf),
           (3.3961e38, 3.3895313892515355e38), (1e-40, 2.0 ** -133), (np.inf, np.inf)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_precision_8_7_is_rounding_to_bfloat16(backend):
    x = np.array([v for v, _ in _GOLDEN] + [np.nan, -np.nan, 0.0, -0.0], F32)
    got = np.asarray(run(lambda v: ops.reduce_precision(v, 8, 7), backend, x))
    golden = np.array([w for _, w in _GOLDEN], F32)
    np.testing.assert_array_equal(got[:len(_GOLDEN)], golden)
    same_bits(got, x.astype(BF16).astype(F32))
    assert np.isnan(got[-4]) and np.isnan(got[-3]) and np.signbit(got[-1])


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20, deadline=None)
@given(bits=st.lists(st.integers(0, 2 ** 32 - 1), min_size=1, max_size=40))
def test_reduce_precision_8_7_matches_ml_dtypes_on_any_bits(backend, bits):
    x = np.array(bits, np.uint32).view(F32)
    got = np.asarray(run(lambda v: ops.reduce_precision(v, 8, 7), backend, x))
    same_bits(got, x.astype(BF16).astype(F32))


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=15, deadline=None)
@given(bits=st.lists(st.integers(0, 2 ** 16 - 1), min_size=1, max_size=30),
       exponent_bits=st.integers(1, 9), mantissa_bits=st.integers(0, 8))
def test_reduce_precision_of_bfloat16_operands(backend, bits, exponent_bits, mantissa_bits):
    x = np.array(bits, np.uint16).view(BF16)

    def f(v):
        return [ops.reduce_precision(v, exponent_bits, mantissa_bits),
                ops.reduce_precision(v[0], exponent_bits, mantissa_bits)]
    got = run(f, backend, x)
    want = np.asarray(ops.reduce_precision(x.astype(F32), exponent_bits, mantissa_bits))
    same_bits(got[0], want.astype(BF16))  # exact: the result fits bfloat16
    same_bits(got[1], want[0].astype(BF16))


# ------------------------------------------------------------------ tracer.random

_SAMPLERS = {
    "uniform": lambda r, k: r.uniform(k, (300,), BF16),
    "uniform_bounds": lambda r, k: r.uniform(k, (300,), BF16, -3.3, 7.1),
    "uniform_array_bounds": lambda r, k: r.uniform(k, (2, 3), BF16,
                                                   np.array([[0], [5]], BF16), 9.0),
    "normal": lambda r, k: r.normal(k, (300,), BF16),
    "exponential": lambda r, k: r.exponential(k, (300,), BF16),
    "gumbel": lambda r, k: r.gumbel(k, (300,), BF16),
    "truncated_normal": lambda r, k: r.truncated_normal(k, -1.0, 2.0, (300,), BF16),
    "bernoulli": lambda r, k: r.bernoulli(k, np.full((40,), 0.3, BF16)),
    "categorical": lambda r, k: r.categorical(k, np.array([[0.1, 2.0, -1.0]] * 20, BF16)),
    "beta": lambda r, k: r.beta(k, 2.0, 0.5, (20,), BF16),
}


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_bfloat16_samplers_equal_jax_bit_for_bit(name):
    jax = pytest.importorskip("jax")
    if not jax.config.jax_threefry_partitionable:
        pytest.skip("these are JAX's numbers with jax_threefry_partitionable=True")
    for seed in (0, 7):
        got = _SAMPLERS[name](trr, trr.key(seed))
        with jax.enable_x64(True):  # tracer.random's int64 / float64 defaults: JAX's x64 mode
            want = _SAMPLERS[name](jax.random, jax.random.PRNGKey(seed))
        same_bits(got, np.asarray(want))


def test_bfloat16_gamma_is_within_a_few_ulp_of_jax():
    jax = pytest.importorskip("jax")
    alpha = np.array([0.3, 1.0, 2.5, 7.0], BF16)
    got = np.asarray(trr.gamma(trr.key(1), alpha, dtype=BF16))
    want = np.asarray(jax.random.gamma(jax.random.PRNGKey(1), alpha, dtype=BF16))
    assert ulps(got, want) <= 4


@pytest.mark.parametrize("name", ["uniform_bounds", "normal", "gumbel", "truncated_normal"])
def test_bfloat16_samplers_are_the_same_compiled(name):
    fn = _SAMPLERS[name]
    want = fn(trr, trr.key(3))
    for backend in BACKENDS:
        same_bits(run(lambda k: fn(trr, k), backend, trr.key(3)), want)


def test_bfloat16_uniform_takes_8_random_bits_as_jax():
    """JAX draws 8 bits for a 7-bit mantissa: the values are multiples of 2**-7."""
    u = np.asarray(trr.uniform(trr.key(0), (4096,), BF16)).astype(F32)
    assert np.all((u * 128) == np.round(u * 128)) and u.min() >= 0 and u.max() < 1
    assert len(np.unique(u)) == 128


@pytest.mark.parametrize("backend", BACKENDS)
def test_stream_rng_ops_of_bfloat16(backend):
    """ops.rng_uniform / rng_normal (the process-stream ops) on bfloat16 parameters:
    bfloat16 samples in [a, b), on the 2**-7 grid of the draw, and normal moments."""
    a, b = np.array(1, BF16), np.array(3, BF16)
    u, z, s, batched = run(lambda a, b: (
        ops.rng_uniform(a, b, (4000,)), ops.rng_normal(a, b, (4000,)),
        ops.rng_uniform(a, b, ()), vmap(lambda lo: ops.rng_uniform(lo, b, (5,)))(
            ops.broadcast_in_dim(a, (2,), ()))), backend, a, b)
    assert {u.dtype, z.dtype, s.dtype, batched.dtype} == {BF16} and batched.shape == (2, 5)
    u32 = u.astype(F32)
    assert u32.min() >= 1 and u32.max() < 3 and 1 <= float(s) < 3
    assert len(np.unique(u32)) > 64 and abs(u32.mean() - 2) < 0.1
    z32 = z.astype(F32)
    assert abs(z32.mean() - 1) < 0.2 and abs(z32.std() - 3) < 0.3


# ------------------------------------------------------------------ all_reduce identities

@pytest.mark.parametrize("comp, np_op", [(ops.max, np.max), (ops.min, np.min)])
@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_all_reduce_max_min_of_bfloat16(comp, np_op, backend):
    sign = -1.0 if np_op is np.max else 1.0  # values all on the side where 0 would win
    x = (sign * np.array([[3.0, 0.5, np.inf], [7.0, 2.25, 1.0], [1.5, 9.0, 4.0]])).astype(BF16)

    def f(v):
        return vmap(lambda r: coll.all_reduce(r, comp, axis_name="i"), axis_name="i")(v)
    got = f(x) if backend == "eager" else run(f, backend, x)
    want = np.broadcast_to(np_op(x.astype(F32), axis=0), x.shape).astype(BF16)
    same_bits(got, want)


# ------------------------------------------------------------------ Python numbers

@pytest.mark.parametrize("backend", ["eager", "cpu"])
def test_python_numbers_convert_straight_to_the_dtype(backend):
    def make():
        return [tnp.asarray(10 ** 30, dtype=np.float16), tnp.asarray(10 ** 30, dtype=F32),
                tnp.asarray(10 ** 30, dtype=BF16), tnp.array([10 ** 30, -2], dtype=F32),
                tnp.asarray(-(10 ** 40), dtype=np.float64), tnp.asarray(2.5, dtype=np.int32)]
    with np.errstate(over="ignore"):  # (float16: NumPy warns about the overflow too)
        got = make() if backend == "eager" else run(make, backend)
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
