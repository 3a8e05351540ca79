"""`tracer.random`: equality with `jax.random` (skipped without JAX), the same numbers
eagerly, under jit (interpreter and cpu) and vmap, gradients through the parameters,
the distributions' properties, and errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
import tracer.random as trr
from tracer.errors import (DTypeError, ShapeError, TracerIndexError, TracerTypeError,
                           TracerValueError)
from tracer.random import _math

LOGITS = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32))
P = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
X = np.arange(12, dtype=np.float32).reshape(3, 4)


def _jax():
    jax = pytest.importorskip("jax")
    if not jax.config.jax_threefry_partitionable:
        pytest.skip("these are JAX's numbers with jax_threefry_partitionable=True")
    return jax


# name -> (tracer sampler, jax sampler); called with a key. Exact: bit for bit.
EXACT = {
    "split": (lambda r, k: r.split(k), None),
    "split_shape": (lambda r, k: r.split(k, (2, 3)), None),
    "fold_in": (lambda r, k: r.fold_in(k, 7), None),
    "bits": (lambda r, k: r.bits(k, (3, 4)), None),
    "bits_u8": (lambda r, k: r.bits(k, (5,), np.uint8), None),
    "bits_u16": (lambda r, k: r.bits(k, (2, 2), np.uint16), None),
    "uniform": (lambda r, k: r.uniform(k, (7,)), None),
    "uniform_scalar": (lambda r, k: r.uniform(k), None),
    "uniform_bounds": (lambda r, k: r.uniform(k, (3, 5), np.float32, -2.0, 3.0), None),
    "uniform_f16": (lambda r, k: r.uniform(k, (6,), np.float16, -1.0, 4.0), None),
    "uniform_array_bounds": (lambda r, k: r.uniform(k, (2, 3), minval=np.float32([[0], [5]]),
                                                    maxval=np.float32(9)), None),
    "randint": (lambda r, k: r.randint(k, (9,), -5, 17), None),
    "randint_u8_full": (lambda r, k: r.randint(k, (2, 4), 0, 256, np.uint8), None),
    "randint_i16": (lambda r, k: r.randint(k, (5,), -300, 300, np.int16), None),
    "randint_empty_span": (lambda r, k: r.randint(k, (3,), 4, 4), None),
    "bernoulli": (lambda r, k: r.bernoulli(k, 0.3, (10,)), None),
    "bernoulli_array_p": (lambda r, k: r.bernoulli(k, np.float32([0.1, 0.9])), None),
    "normal_small": (lambda r, k: r.normal(k, (4,), np.float32), None),
    "permutation": (lambda r, k: r.permutation(k, 10), None),
    "permutation_axis": (lambda r, k: r.permutation(k, X, axis=1), None),
    "permutation_independent": (lambda r, k: r.permutation(k, X, 1, True), None),
    "choice": (lambda r, k: r.choice(k, 5, (3,)), None),
    "choice_axis": (lambda r, k: r.choice(k, X, (2,), axis=1), None),
    "choice_no_replace": (lambda r, k: r.choice(k, 5, (3,), replace=False), None),
    "choice_p": (lambda r, k: r.choice(k, 4, (6,), p=P), None),
    "choice_p_no_replace": (lambda r, k: r.choice(k, 4, (3,), replace=False, p=P), None),
    "categorical": (lambda r, k: r.categorical(k, LOGITS), None),
    "categorical_axis0": (lambda r, k: r.categorical(k, LOGITS, axis=0), None),
    "categorical_shape": (lambda r, k: r.categorical(k, LOGITS, shape=(4, 2)), None),
}
# Transcendental samplers: tracer's log1p / log are not XLA's, so a few ulp apart
# (float32 here; the float64 defaults are checked to a relative 1e-13 below).
CLOSE = {
    "normal": lambda r, k: r.normal(k, (1000,), np.float32),
    "normal_f16": lambda r, k: r.normal(k, (50,), np.float16),
    "normal_complex": lambda r, k: r.normal(k, (5,), np.complex64),
    "truncated_normal": lambda r, k: r.truncated_normal(k, -1.0, 2.0, (200,), np.float32),
    "exponential": lambda r, k: r.exponential(k, (100,), np.float32),
    "gumbel": lambda r, k: r.gumbel(k, (100,), np.float32),
    "gamma": lambda r, k: r.gamma(k, np.float32([0.3, 1.0, 2.5, 7.0])),
    "beta": lambda r, k: r.beta(k, 2.0, 0.5, (4,)),
}


def _as_jax(jax, x):
    return jax.numpy.asarray(x) if isinstance(x, np.ndarray) else x


@pytest.mark.parametrize("seed", [0, 42, 2 ** 32 - 1])
def test_keys_equal_jax(seed):
    jax = _jax()
    np.testing.assert_array_equal(trr.key(seed), np.asarray(jax.random.PRNGKey(seed)))
    np.testing.assert_array_equal(trr.PRNGKey(seed), trr.key(np.uint32(seed)))


@pytest.mark.parametrize("name", sorted(EXACT))
def test_equal_to_jax_bit_for_bit(name):
    jax = _jax()
    fn = EXACT[name][0]
    for seed in (0, 7):
        got = np.asarray(fn(trr, trr.key(seed)))
        with jax.enable_x64(True):  # tracer's defaults are float64 / int64: JAX's x64 mode
            want = np.asarray(fn(jax.random, jax.random.PRNGKey(seed)))
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("name", sorted(CLOSE))
def test_transcendental_samplers_are_within_a_few_ulp_of_jax(name):
    jax = _jax()
    got = np.asarray(CLOSE[name](trr, trr.key(1)))
    with jax.enable_x64(True):
        want = np.asarray(CLOSE[name](jax.random, jax.random.PRNGKey(1)))
    assert got.dtype == want.dtype and got.shape == want.shape
    parts = [got.real, got.imag] if got.dtype.kind == "c" else [got]
    wants = [want.real, want.imag] if want.dtype.kind == "c" else [want]
    for g, w in zip(parts, wants):
        ulp = np.abs(g.astype(np.float64) - w) / np.spacing(np.abs(w).astype(g.dtype) + 1e-30)
        assert ulp.max() <= 16, (name, ulp.max())


@pytest.mark.parametrize("name", ["normal", "truncated_normal", "exponential", "gumbel"])
def test_float64_default_samplers_are_jaxs_x64_numbers(name):
    jax = _jax()
    fn = {"normal": lambda r, k: r.normal(k, (300,)),
          "truncated_normal": lambda r, k: r.truncated_normal(k, -1.0, 2.0, (300,)),
          "exponential": lambda r, k: r.exponential(k, (300,)),
          "gumbel": lambda r, k: r.gumbel(k, (300,))}[name]
    got = np.asarray(fn(trr, trr.key(1)))
    with jax.enable_x64(True):
        want = np.asarray(fn(jax.random, jax.random.PRNGKey(1)))
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)


def test_64_bit_types_equal_jax_in_its_64_bit_mode():
    jax = _jax()
    if not callable(getattr(jax, "enable_x64", None)):
        pytest.skip("this JAX has no enable_x64 context")
    with jax.enable_x64(True):
        seed = 2 ** 32 + 5
        np.testing.assert_array_equal(trr.key(seed), np.asarray(jax.random.PRNGKey(seed)))
        k, jk = trr.key(seed), jax.random.PRNGKey(seed)
        pairs = [(trr.bits(k, (5,), np.uint64), jax.random.bits(jk, (5,), np.uint64)),
                 (trr.uniform(k, (5,), np.float64), jax.random.uniform(jk, (5,), np.float64)),
                 (trr.randint(k, (5,), -2 ** 40, 2 ** 40, np.int64),
                  jax.random.randint(jk, (5,), -2 ** 40, 2 ** 40, np.int64))]
        for got, want in pairs:
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(trr.normal(k, (100,), np.float64),
                                   jax.random.normal(jk, (100,), np.float64), rtol=1e-14)
        np.testing.assert_allclose(trr.uniform(k, (9,), np.float64, -3.0, 4.0),
                                   jax.random.uniform(jk, (9,), np.float64, -3.0, 4.0),
                                   rtol=4e-16)


def test_normal_is_mostly_bit_identical_to_jax():
    jax = _jax()
    got = np.asarray(trr.normal(trr.key(3), (20_000,), np.float32))
    with jax.enable_x64(True):
        want = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (20_000,), np.float32))
    assert (got == want).mean() > 0.97


# ------------------------------------------------------------------ same numbers everywhere
def _integer_based(k):
    keys = trr.split(k, 4)
    return [trr.uniform(keys[0], (5,), minval=-1.0, maxval=2.0), trr.randint(keys[1], (5,), 0, 10),
            trr.bernoulli(keys[2], 0.4, (5,)), trr.uniform(keys[3], (3,), np.float16),
            trr.permutation(k, 7), trr.choice(k, 4, (5,), p=P), trr.fold_in(k, 3)]


def _normals(k):
    return [trr.normal(k, (5,)), trr.normal(k, (3,), np.float64),
            trr.normal(k, (3,), np.float16)]


def _transcendental(k):
    keys = trr.split(k, 4)
    return [trr.truncated_normal(keys[0], 0.0, 1.0, (5,)), trr.exponential(keys[1], (5,)),
            trr.gumbel(keys[2], (5,)), trr.categorical(keys[3], LOGITS)]


SAMPLER_GROUPS = [_integer_based, _normals, _transcendental]


def _samplers(k):
    return [x for group in SAMPLER_GROUPS for x in group(k)]


def _assert_same(got, want):
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("group", SAMPLER_GROUPS, ids=lambda g: g.__name__)
def test_same_numbers_eagerly_under_jit_and_on_every_backend(backend, group):
    k = trr.key(11)
    _assert_same(tr.jit(group, backend=backend)(k), group(k))


def test_gamma_and_beta_are_the_same_on_every_backend():
    # (beta's two gamma samplers share one compiled rejection loop: ~15 s to compile)
    f = lambda k: (trr.gamma(k, np.float32([0.2, 1.0, 4.0])),  # noqa: E731
                   trr.beta(k, np.float32([0.3, 2.0]), np.float32([0.5, 5.0])))
    k = trr.key(5)
    _assert_same(tr.jit(f)(k), f(k))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_elementary_functions_are_the_same_on_every_backend(dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, info.smallest_subnormal, info.tiny, 0.3, 1.0, 2.5, 9.0, info.max / 2,
                  np.inf, -1.0, np.nan], dtype)
    def f(x):
        return (_math.log(x), _math.log1p(x), _math.exp(x), _math.exp(-x),
                _math.pow(x, np.asarray(0.7, dtype)))
    with np.errstate(all="ignore"):
        _assert_same(tr.jit(f)(x), f(x))


def test_vmap_over_keys_is_the_loop_over_keys():
    keys = trr.split(trr.key(2), 3)
    batched = tr.vmap(_samplers)(keys)
    for i, k in enumerate(keys):
        _assert_same([b[i] for b in batched], _samplers(k))


def test_vmap_over_seeds_and_data():
    seeds = np.arange(4)
    np.testing.assert_array_equal(tr.vmap(trr.key)(seeds), np.stack([trr.key(s) for s in seeds]))
    k = trr.key(0)
    np.testing.assert_array_equal(tr.vmap(lambda d: trr.fold_in(k, d))(np.arange(3)),
                                  np.stack([trr.fold_in(k, d) for d in range(3)]))
    got = tr.jit(tr.vmap(lambda s: trr.uniform(trr.key(s), (2,))))(seeds)
    np.testing.assert_array_equal(got, np.stack([trr.uniform(trr.key(s), (2,)) for s in seeds]))


def test_64_bit_seeds_use_the_high_word():
    np.testing.assert_array_equal(trr.key(2 ** 32 + 5), np.array([1, 5], np.uint32))
    np.testing.assert_array_equal(trr.key(-1), np.array([2 ** 32 - 1] * 2, np.uint32))
    np.testing.assert_array_equal(tr.jit(trr.key)(np.int64(2 ** 32 + 5)), trr.key(2 ** 32 + 5))


# ------------------------------------------------------------------ gradients
def test_grad_through_the_parameters_with_a_fixed_key():
    k = trr.key(1)
    f = lambda m: tnp.sum(trr.uniform(k, (5,), minval=m, maxval=m + 2.0))  # noqa: E731
    assert tr.grad(f)(np.float32(1.0)) == 5.0
    assert tr.jit(tr.grad(f))(np.float32(1.0)) == 5.0
    g = lambda mu, s: tnp.sum(mu + s * trr.normal(k, (5,)))  # noqa: E731
    dmu, ds = tr.grad(g, argnums=(0, 1))(np.float32(0.0), np.float32(2.0))
    assert dmu == 5.0
    np.testing.assert_allclose(ds, np.sum(trr.normal(k, (5,))), rtol=1e-6)
    span = lambda b: tnp.sum(trr.uniform(k, (4,), maxval=b))  # noqa: E731
    np.testing.assert_allclose(tr.grad(span)(np.float32(3.0)),
                               np.sum(trr.uniform(k, (4,))), rtol=1e-6)


# ------------------------------------------------------------------ distributions
N = 40_000


def _moments(x):
    x = np.asarray(x, np.float64)
    return x.mean(), x.var()


def test_uniform_and_normal_moments():
    k1, k2 = trr.split(trr.key(0))
    u = trr.uniform(k1, (N,), minval=2.0, maxval=6.0)
    assert u.min() >= 2.0 and u.max() < 6.0
    np.testing.assert_allclose(_moments(u), (4.0, 16 / 12), rtol=0.02)
    z = np.asarray(trr.normal(k2, (N,)), np.float64)
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.03
    assert abs((z ** 3).mean()) < 0.06 and abs((z ** 4).mean() - 3) < 0.15


def test_split_keys_are_independent():
    keys = trr.split(trr.key(9), 4)
    draws = np.stack([trr.uniform(k, (N,)) for k in keys])
    corr = np.corrcoef(draws)
    assert np.abs(corr[np.triu_indices(4, 1)]).max() < 0.03
    folded = np.stack([trr.uniform(trr.fold_in(keys[0], i), (N,)) for i in range(3)])
    assert np.abs(np.corrcoef(folded)[np.triu_indices(3, 1)]).max() < 0.03


def test_discrete_samplers_frequencies():
    k = trr.key(4)
    b = np.asarray(trr.bernoulli(k, 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.01
    r = np.asarray(trr.randint(k, (N,), 3, 8))
    assert r.dtype == np.int64 and set(np.unique(r)) == set(range(3, 8))
    assert np.abs(np.bincount(r - 3) / N - 0.2).max() < 0.01
    c = np.asarray(trr.categorical(k, np.log(P), shape=(N,)))
    np.testing.assert_allclose(np.bincount(c, minlength=4) / N, P, atol=0.01)
    w = np.asarray(trr.choice(k, 4, (N,), p=P))
    np.testing.assert_allclose(np.bincount(w, minlength=4) / N, P, atol=0.01)


def test_continuous_samplers_moments():
    k = trr.key(6)
    np.testing.assert_allclose(_moments(trr.exponential(k, (N,))), (1.0, 1.0), rtol=0.05)
    np.testing.assert_allclose(_moments(trr.gumbel(k, (N,))), (np.euler_gamma, np.pi ** 2 / 6),
                               rtol=0.05)
    t = np.asarray(trr.truncated_normal(k, -1.0, 0.5, (N,)))
    assert t.min() > -1.0 and t.max() < 0.5
    g = np.asarray(trr.gamma(k, 3.0, (4000,)))
    np.testing.assert_allclose(_moments(g), (3.0, 3.0), rtol=0.1)
    small = np.asarray(trr.gamma(k, 0.25, (4000,)))
    assert small.min() >= 0 and abs(small.mean() - 0.25) < 0.03
    beta = np.asarray(trr.beta(k, 2.0, 5.0, (4000,)))
    assert 0 <= beta.min() and beta.max() <= 1 and abs(beta.mean() - 2 / 7) < 0.02


@settings(max_examples=15)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 40))
def test_permutations_are_permutations(seed, n):
    k = trr.key(seed)
    np.testing.assert_array_equal(np.sort(trr.permutation(k, n)), np.arange(n))
    rows = np.asarray(trr.permutation(k, X, axis=0))
    assert sorted(map(tuple, rows)) == sorted(map(tuple, X))
    picked = np.asarray(trr.choice(k, n, (min(n, 5),), replace=False))
    assert len(set(picked.tolist())) == len(picked)


def test_truncated_normal_handles_infinite_bounds():
    t = np.asarray(trr.truncated_normal(trr.key(0), -np.inf, np.inf, (N,)))
    assert np.isfinite(t).all() and abs(t.mean()) < 0.03


def test_same_key_same_numbers_different_keys_different_numbers():
    a, b = trr.uniform(trr.key(1), (8,)), trr.uniform(trr.key(1), (8,))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, trr.uniform(trr.key(2), (8,)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_elementary_functions_are_accurate(dtype):
    rng = np.random.default_rng(0)
    info = np.finfo(dtype)
    logs = rng.uniform(np.log(info.smallest_subnormal), np.log(info.max), 5000)
    x = np.concatenate([rng.random(5000) * 10, np.exp(logs), [info.tiny, 1.0]]).astype(dtype)
    x = x[x > 0]
    for fn, ref, arg in [(_math.log, np.log, x), (_math.log1p, np.log1p, x - dtype(0.5)),
                         (_math.exp, np.exp, np.clip(x, -20, 11).astype(dtype) - dtype(5))]:
        want = ref(arg.astype(np.float64)).astype(dtype)
        got = np.asarray(fn(arg))
        ulp = np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want))
        assert ulp.max() <= 3, (fn.__name__, dtype, ulp.max())
    special = np.array([0.0, -1.0, np.inf, np.nan], dtype)
    np.testing.assert_array_equal(_math.log(special), np.array([-np.inf, np.nan, np.inf, np.nan],
                                                               dtype))
    np.testing.assert_array_equal(_math.exp(np.array([-np.inf, np.inf, np.nan], dtype)),
                                  np.array([0.0, np.inf, np.nan], dtype))


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call, error, words", [
    (lambda: trr.uniform(np.zeros(3, np.uint32)), TracerTypeError, "uint32[2]"),
    (lambda: trr.uniform(trr.split(trr.key(0), 2)), TracerTypeError, "vmap"),
    (lambda: trr.uniform(trr.key(0), (2,), np.int32), DTypeError, "float"),
    (lambda: trr.bits(trr.key(0), (2,), np.int32), DTypeError, "unsigned"),
    (lambda: trr.uniform(trr.key(0), (2,), minval=np.zeros(3, np.float32)), ShapeError,
     "does not broadcast"),
    (lambda: trr.randint(trr.key(0), (2,), 0, 10, np.float32), DTypeError, "integer"),
    (lambda: trr.key(1.5), TracerTypeError, "integer"),
    (lambda: trr.key(2 ** 70), DTypeError, "64 bits"),
    (lambda: trr.fold_in(trr.key(0), np.arange(2)), TracerTypeError, "scalar"),
    (lambda: trr.choice(trr.key(0), 3, (4,), replace=False), TracerValueError, "larger"),
    (lambda: trr.choice(trr.key(0), 3, p=np.ones(4, np.float32)), TracerValueError, "size"),
    (lambda: trr.permutation(trr.key(0), 2.5), TracerTypeError, "integer"),
    (lambda: trr.split(trr.key(0), (-1,)), ShapeError, "negative"),
    (lambda: trr.categorical(trr.key(0), LOGITS, axis=2), TracerIndexError, "axis"),
])
def test_errors(call, error, words):
    with pytest.raises(error, match=re.escape(words)):
        call()


def test_a_traced_size_is_a_concretization_error():
    with pytest.raises(TracerTypeError, match="static"):
        tr.jit(lambda n: trr.permutation(trr.key(0), n))(np.int32(3))
    assert math.prod(trr.split(trr.key(0), (2, 3)).shape) == 12
