"""bfloat16 (ml_dtypes.bfloat16) as a storage type, end to end.

The rule, as XLA's CPU backend: every op computes in float32 and rounds to bfloat16
once, on store; sums, products and dot products accumulate in float32. Conversions
to bfloat16 go through float32 (so float64 and int64 values round twice), as
ml_dtypes and XLA convert. Promotion follows JAX's lattice (bf16 with any integer is
bf16, with float16 float32). Each case runs on the interpreter and the cpu backend and
is checked against the float32 computation rounded to bfloat16: bit for bit for
element-wise ops (1 bfloat16 ulp for the cpu backend's own transcendental functions),
within the final rounding for reductions and matmul. Also: reduce_precision to
bfloat16 (against ml_dtypes), tracer.random with dtype=bfloat16 (JAX's numbers bit for
bit, skipped without JAX), and the all_reduce max / min identities.
"""

from __future__ import annotations

from typing import Any, Callable

import ml_dtypes
import numba
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracer as tr
import tracer.numpy as tnp
import tracer.random as trr
from tests.half_support import BACKENDS, BF16, F32, jit_run, same_bits, ulps
from tracer import dtypes, ops
from tracer.backend.numba.lib.scalar_math import bf16_bits, bf16_to_f32
from tracer.ops import collectives as coll
from tracer.transforms.api_vmap import vmap

# bfloat16 values as their bits: any pattern (NaN, inf, subnormals) or a moderate value.
_ANY = st.integers(0, 0xFFFF)
_MODERATE = st.floats(-64, 64, width=32).map(
    lambda v: int(np.asarray(v, F32).astype(BF16).view(np.uint16)))


def bf16_arrays(shape: tuple[int, ...], moderate: bool = False) -> st.SearchStrategy:
    size = int(np.prod(shape))
    bits = _MODERATE if moderate else st.one_of(_ANY, _MODERATE)
    return st.lists(bits, min_size=size, max_size=size).map(
        lambda b: np.array(b, np.uint16).view(BF16).reshape(shape))


def run(fn: Callable[..., Any], backend: str, *args: Any) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [np.asarray(o) for o in tr.jit(fn, backend=backend)(*args)]


def in_float32(fn: Callable[..., Any], *args: np.ndarray) -> list[np.ndarray]:
    """The same ops on the float32 values (interpreter), rounded to bfloat16."""
    wide = [a.astype(F32) if a.dtype == BF16 else a for a in args]
    outs = run(fn, "interpreter", *wide)
    return [o.astype(BF16) if o.dtype == F32 else o for o in outs]


def _nans(x: np.ndarray) -> np.ndarray:
    if x.dtype == BF16:
        return np.isnan(x.astype(F32))
    return np.isnan(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Equal bits, except that a NaN only has to meet a NaN (payloads and signs vary)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    nan = _nans(want)
    assert np.array_equal(_nans(got), nan), what
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8), what)


def ulp_distance(got: np.ndarray, want: np.ndarray) -> int:
    """Largest distance in bfloat16 steps (NaN must meet NaN, inf must match)."""
    def ordered(x: np.ndarray) -> np.ndarray:
        b = x.view(np.int16).astype(np.int64)
        return np.where(b < 0, -(b & 0x7FFF), b)
    g, w = got.astype(F32), want.astype(F32)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    keep = ~np.isnan(w)
    return int(np.max(np.abs(ordered(got[keep]) - ordered(want[keep])), initial=0))


# ------------------------------------------------------------------ the dtype itself

def test_bfloat16_is_a_float_dtype():
    assert dtypes.bfloat16 == BF16 and dtypes.hlo_name(BF16) == "bf16"
    assert dtypes.canonicalize(tnp.bfloat16) == BF16 and dtypes.canonicalize("bfloat16") == BF16
    assert dtypes.kind(BF16) == "f" and dtypes.is_float(BF16) and dtypes.is_inexact(BF16)
    assert not dtypes.is_integer(BF16) and dtypes.complex_dtype(BF16) == np.complex64
    assert tnp.bfloat16 is ml_dtypes.bfloat16
    assert float(tnp.finfo(tnp.bfloat16).eps) == 2.0 ** -7
    assert float(dtypes.finfo(BF16).max) == float(ml_dtypes.finfo(BF16).max)
    assert "bf16[2,3]" in tr.make_hlo(lambda x: x * 2)(np.ones((2, 3), BF16)).as_text()


# JAX's lattice (jnp.promote_types with x64) for bfloat16 and each other dtype.
LATTICE = {
    "bool": "bfloat16", "int8": "bfloat16", "int16": "bfloat16", "int32": "bfloat16",
    "int64": "bfloat16", "uint8": "bfloat16", "uint16": "bfloat16", "uint32": "bfloat16",
    "uint64": "bfloat16", "float16": "float32", "bfloat16": "bfloat16", "float32": "float32",
    "float64": "float64", "complex64": "complex64", "complex128": "complex128",
}


@pytest.mark.parametrize("other", sorted(LATTICE))
def test_promotion_follows_the_jax_lattice(other):
    want = np.dtype(LATTICE[other]) if other != "bfloat16" else BF16
    other_dt = BF16 if other == "bfloat16" else np.dtype(other)
    assert dtypes.result_type(BF16, other_dt) == (want, False)
    assert dtypes.result_type(other_dt, BF16) == (want, False)
    assert tnp.result_type(BF16, other_dt) == want
    x, y = np.ones(3, BF16), np.ones(3, other_dt)
    assert tnp.add(x, y).dtype == want
    assert tr.jit(lambda a, b: a * b, backend="interpreter")(x, y).dtype == want


def test_python_scalars_take_bfloat16():
    x = np.array([1.5, 2.0], BF16)
    assert [dtypes.result_type(BF16, v)[0] for v in (True, 3, 2.5, 1j)] == \
        [BF16, BF16, BF16, np.complex64]
    assert tnp.add(x, 1).dtype == tnp.multiply(x, 2.5).dtype == BF16
    assert tnp.add(x, 1j).dtype == np.complex64
    out = tr.jit(lambda a: a * 3 + 0.5)(x)
    assert out.dtype == BF16 and out.tolist() == [5.0, 6.5]


# ------------------------------------------------------------------ element-wise ops

EXACT_UNARY = [ops.neg, ops.abs, ops.sqrt, ops.floor, ops.ceil, ops.round,
               ops.round_nearest_even, ops.sign, ops.is_finite]
EXACT_BINARY = [ops.add, ops.sub, ops.mul, ops.div, ops.max, ops.min, ops.rem, ops.lt,
                ops.eq]
MATH_UNARY = [ops.exp, ops.expm1, ops.log, ops.log1p, ops.sin, ops.cos, ops.tan, ops.tanh,
              ops.logistic, ops.rsqrt, ops.cbrt, ops.erf]
MATH_BINARY = [ops.pow, ops.atan2]


def _exact(x, y):
    return [f(x) for f in EXACT_UNARY] + [f(x, y) for f in EXACT_BINARY] + \
        [ops.select(ops.lt(x, y), x, y), ops.clamp(ops.min(x, y), x, ops.max(x, y)),
         ops.add(x, 1.25)]


def _math(x, y):
    return [f(x) for f in MATH_UNARY] + [f(x, y) for f in MATH_BINARY]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25)
@given(data=st.data())
def test_exact_elementwise_ops_round_the_float32_result_once(backend, data):
    n = data.draw(st.integers(1, 12))
    x, y = data.draw(bf16_arrays((n,))), data.draw(bf16_arrays((n,)))
    got, want = run(_exact, backend, x, y), in_float32(_exact, x, y)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same_bits(g, w, f"op {k}")


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25)
@given(data=st.data())
def test_math_functions_round_the_float32_result_once(backend, data):
    n = data.draw(st.integers(1, 12))
    x, y = data.draw(bf16_arrays((n,))), data.draw(bf16_arrays((n,)))
    got, want = run(_math, backend, x, y), in_float32(_math, x, y)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if backend == "interpreter":  # the same float32 kernels, rounded once
            assert_same_bits(g, w, f"op {k}")
        else:  # the cpu backend's own float32 functions: within one bfloat16 step
            assert g.dtype == BF16 and ulp_distance(g, w) <= 1, f"op {k}"


def test_multi_step_references_round_once():
    """logistic is several NumPy steps: ml_dtypes would round after each one."""
    x = np.array([0.3, -1.7, 2.9, 0.01], BF16)
    want = (1 / (1 + np.exp(-x.astype(F32)))).astype(BF16)
    assert_same_bits(np.asarray(ops.logistic(x)), want)
    assert_same_bits(np.asarray(ops.rsqrt(x[:1])), (1 / np.sqrt(x[:1].astype(F32))).astype(BF16))


# ------------------------------------------------------------------ conversions

OTHERS = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]


def _casts(x, *others):
    return [ops.convert_element_type(x, dt) for dt in OTHERS] + \
        [ops.convert_element_type(o, BF16) for o in others]


def _sources(values: np.ndarray) -> list[np.ndarray]:
    """`values` (float64) as each dtype of OTHERS (ints wrap, as astype does)."""
    with np.errstate(all="ignore"):
        finite = np.nan_to_num(values, posinf=7e18, neginf=-7e18)
        return [(values if np.dtype(dt).kind in "fc" else finite).astype(dt)
                + (1j * values[::-1] if np.dtype(dt).kind == "c" else 0) for dt in OTHERS]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20)
@given(data=st.data())
def test_conversions_to_and_from_every_dtype(backend, data):
    n = data.draw(st.integers(1, 10))
    x = data.draw(bf16_arrays((n,)))
    wide = data.draw(st.lists(st.one_of(st.floats(width=64), st.integers(-2**62, 2**62).map(
        float)), min_size=n, max_size=n))
    others = [o.astype(dt) for o, dt in zip(_sources(np.array(wide)), OTHERS, strict=True)]
    got = run(_casts, backend, x, *others)
    want_from = in_float32(lambda v: [ops.convert_element_type(v, dt) for dt in OTHERS], x)
    with np.errstate(all="ignore"):  # through float32, as ml_dtypes and XLA convert
        want_to = [(o.real if o.dtype.kind == "c" else o).astype(F32).astype(BF16)
                   for o in others]
    for k, (g, w) in enumerate(zip(got, want_from + want_to, strict=True)):
        assert_same_bits(g, w.astype(g.dtype) if k < len(OTHERS) else w, f"cast {k}")
    for o, w in zip(others, want_to, strict=True):  # ml_dtypes agrees on the double rounding
        if o.dtype.kind != "c":
            with np.errstate(all="ignore"):
                assert_same_bits(o.astype(BF16), w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bitcasts_to_and_from_16_bit_integers(backend):
    x = np.array([1.0, -2.5, np.inf, -0.0, 3.0e38, 1e-40], BF16)

    def fn(v):
        u = ops.bitcast_convert_type(v, np.uint16)
        return [u, ops.bitcast_convert_type(v, np.int16), ops.bitcast_convert_type(u, BF16),
                ops.bitcast_convert_type(ops.bitcast_convert_type(v[1], np.int16), BF16)]
    got = run(fn, backend, x)
    for g, w in zip(got, [x.view(np.uint16), x.view(np.int16), x, x[1]], strict=True):
        assert_same_bits(g, np.asarray(w))


@numba.njit
def _widen_all(bits: np.ndarray) -> np.ndarray:  # (in numba: Python floats would quiet NaNs)
    out = np.empty(bits.size, np.float32)
    for k in range(bits.size):
        out[k] = bf16_to_f32(bits[k])
    return out


def test_loads_match_ml_dtypes_on_every_pattern():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    want = every.view(BF16).astype(F32)
    np.testing.assert_array_equal(_widen_all(every).view(np.uint32), want.view(np.uint32))


@settings(max_examples=200)
@given(bits=st.integers(0, 2**32 - 1))
def test_rounding_to_bfloat16_matches_ml_dtypes(bits):
    x = np.array([bits], np.uint32).view(F32)
    with np.errstate(all="ignore"):
        want = int(x.astype(BF16).view(np.uint16)[0])
    assert int(bf16_bits(x[0])) == want  # nearest even; NaN -> the quiet NaN of its sign


# ------------------------------------------------------------------ reductions, matmul

def _sum(v, axes):
    return ops.reduce(v, np.zeros((), BF16), ops.add, axes)


def _reductions(x):
    lo, hi = np.array(-np.inf, BF16), np.array(np.inf, BF16)
    return [_sum(x, (0,)), _sum(x, (1,)), _sum(x, (0, 1)),
            ops.reduce(x, np.ones((), BF16), ops.mul, (1,)),
            ops.reduce(x, lo, ops.max, (0,)), ops.reduce(x, hi, ops.min, (1,))]


def assert_rounded_close(got: np.ndarray, exact: np.ndarray, scale: np.ndarray) -> None:
    """Within the final bfloat16 rounding of the exact value (plus float32 noise)."""
    assert got.dtype == BF16
    err = np.abs(got.astype(np.float64) - exact)
    np.testing.assert_array_less(err, 2.0 ** -8 * np.abs(exact) + 2.0 ** -20 * scale + 1e-30)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=15)
@given(data=st.data())
def test_reductions_accumulate_in_float32(backend, data):
    shape = (data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9)))
    x = data.draw(bf16_arrays(shape, moderate=True))
    got = run(_reductions, backend, x)
    x64 = x.astype(np.float64)
    for axes, g in zip([0, 1, None], got[:3], strict=True):
        assert_rounded_close(g, x64.sum(axes), np.abs(x64).sum(axes))
    assert_rounded_close(got[3], x64.prod(1), np.abs(x64).prod(1))
    assert_same_bits(got[4], x.max(0))
    assert_same_bits(got[5], x.min(1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_long_sums_do_not_stall_at_bfloat16_spacing(backend):
    """Rounding after every step would stop a sum of ones at 256."""
    ones = np.ones((300, 3), BF16)
    got = run(lambda v: [_sum(v, (0,)), _sum(v.T, (1,)), tnp.sum(v), tnp.mean(v, axis=0)],
              backend, ones)
    assert [g.dtype for g in got] == [BF16] * 4
    assert got[0].tolist() == got[1].tolist() == [300.0] * 3
    assert float(got[2]) == 900.0 and got[3].tolist() == [1.0] * 3


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=15)
@given(data=st.data())
def test_matmul_accumulates_in_float32(backend, data):
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    a, b = data.draw(bf16_arrays((m, k), True)), data.draw(bf16_arrays((k, n), True))
    got = run(lambda u, v: [u @ v, ops.dot_general(u, v, (((1,), (0,)), ((), ())),
                                                   preferred_element_type=np.float32)],
              backend, a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_rounded_close(got[0], a64 @ b64, np.abs(a64) @ np.abs(b64))
    assert got[1].dtype == F32
    np.testing.assert_allclose(got[1], a64 @ b64, rtol=1e-6, atol=1e-6 * (np.abs(a64) @
                                                                          np.abs(b64)).max())


# ------------------------------------------------------------------ tracer.numpy, grad

def test_tracer_numpy_arrays_of_bfloat16():
    x = tnp.asarray(np.array([1.0, 2.5, -3.0], BF16))
    assert x.dtype == BF16
    assert tnp.asarray([1.0, 2.7], dtype=tnp.bfloat16).tolist() == [1.0, 2.703125]
    assert tnp.asarray(np.float32([1.1])).astype(tnp.bfloat16).dtype == BF16
    assert tnp.zeros(2, tnp.bfloat16).dtype == tnp.arange(3, dtype=tnp.bfloat16).dtype == BF16

    def f(v):
        return [v.astype(tnp.float32), tnp.exp(v) * 2, tnp.floor(v), tnp.isnan(v),
                tnp.argmax(v), tnp.sort(v), tnp.where(v > 0, v, 0.0)]
    for backend in BACKENDS:
        got = run(f, backend, x)
        assert [g.dtype for g in got] == [F32, BF16, BF16, np.bool_, np.int64, BF16, BF16]
        assert got[1].tolist() == (np.exp(x.astype(F32)).astype(BF16) * 2).tolist()
        assert got[4] == 1 and got[5].tolist() == [-3.0, 1.0, 2.5]


def test_float_only_paths_treat_bfloat16_as_a_float():
    v = np.array([1.5, np.nan, -np.inf, -2.0], BF16)
    big = float(ml_dtypes.finfo(BF16).max)
    assert tnp.nan_to_num(v).tolist() == [1.5, 0.0, -big, -2.0]
    assert float(tnp.nanmax(v)) == 1.5 and int(tnp.nanargmin(v)) == 2
    assert tnp.sort(v).tolist()[:3] == [-np.inf, -2.0, 1.5]  # NaN last
    def pool(a):
        return tnp.sum(ops.reduce_window(a, -np.inf, ops.max, (2,), (2,), "VALID"))
    assert tr.grad(pool)(np.array([1.0, 3.0, 2.0, -1.0], BF16)).tolist() == [0, 1, 1, 0]


@pytest.mark.parametrize("mode", ["eager", "interpreter", "cpu"])
def test_grad_of_a_bfloat16_function(mode):
    def f(w, x):
        return tnp.sum(tnp.tanh(x @ w) ** 2) + tnp.sum(tnp.sin(w) * w)
    w = (np.arange(6).reshape(3, 2) / 7).astype(BF16)
    x = (np.arange(12).reshape(4, 3) / 11 - 0.5).astype(BF16)
    g = tr.grad(f)
    got = g(w, x) if mode == "eager" else tr.jit(g, backend=mode)(w, x)
    want = tr.grad(f)(w.astype(F32), x.astype(F32))
    assert got.dtype == BF16 and got.shape == w.shape
    np.testing.assert_allclose(got.astype(F32), want, rtol=2 ** -5, atol=2 ** -6)


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
    got = np.asarray(jit_run(lambda v: ops.reduce_precision(v, 8, 7), backend, x))
    golden = np.array([w for _, w in _GOLDEN], F32)
    np.testing.assert_array_equal(got[:len(_GOLDEN)], golden)
    same_bits(got, x.astype(BF16).astype(F32))
    assert np.isnan(got[-4]) and np.isnan(got[-3]) and np.signbit(got[-1])


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20, deadline=None)
@given(bits=st.lists(st.integers(0, 2 ** 32 - 1), min_size=1, max_size=40))
def test_reduce_precision_8_7_matches_ml_dtypes_on_any_bits(backend, bits):
    x = np.array(bits, np.uint32).view(F32)
    got = np.asarray(jit_run(lambda v: ops.reduce_precision(v, 8, 7), backend, x))
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
    got = jit_run(f, backend, x)
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
        same_bits(jit_run(lambda k: fn(trr, k), backend, trr.key(3)), want)


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
    u, z, s, batched = jit_run(lambda a, b: (
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
    got = f(x) if backend == "eager" else jit_run(f, backend, x)
    want = np.broadcast_to(np_op(x.astype(F32), axis=0), x.shape).astype(BF16)
    same_bits(got, want)
