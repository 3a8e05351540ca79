"""The RNG ops: block known answers, the NumPy reference against the numba kernels bit
for bit, XLA's RngBitGenerator layouts (against JAX when it imports), errors, the
stateful ops' distributions and effects, and batching."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import ops
from tracer.backend.numba.lib import rng as lib
from tracer.errors import DTypeError, ParamError, ShapeError
from tracer.ops import rng_bits

U32, U64 = np.uint32, np.uint64
PHILOX_KATS = [  # Random123 kat_vectors: (counter, key) -> output
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
THREEFRY_KATS = [  # (key, counter) -> output
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]
BIT_DTYPES = [np.uint8, np.int16, np.uint32, np.int32, np.uint64, np.int64]
SHAPES = st.lists(st.integers(0, 5), max_size=3).map(tuple)


def _jax():
    return pytest.importorskip("jax")


# ------------------------------------------------------------------ the blocks
@pytest.mark.parametrize("key, counter, want", THREEFRY_KATS)
def test_threefry_known_answers(key, counter, want):
    assert tuple(int(v) for v in rng_bits.threefry2x32(*key, *counter)) == want
    assert tuple(int(v) for v in lib.threefry_block(*map(U32, key), *map(U32, counter))) == want
    assert tuple(int(v) for v in ops.threefry2x32(*map(U32, key), *map(U32, counter))) == want


@pytest.mark.parametrize("counter, key, want", PHILOX_KATS)
def test_philox_known_answers(counter, key, want):
    assert tuple(int(v) for v in rng_bits.philox4x32(counter, key)) == want
    assert tuple(int(v) for v in lib.philox_block(*map(U32, counter), *map(U32, key))) == want


def test_threefry_agrees_with_jax():
    jax = _jax()
    from jax.extend.random import threefry_2x32
    key = np.array([0x13198A2E, 0x03707344], U32)
    count = np.arange(10, dtype=U32)
    want = np.asarray(threefry_2x32(jax.numpy.asarray(key), jax.numpy.asarray(count)))
    y0, y1 = ops.threefry2x32(key[0], key[1], count[:5], count[5:])
    np.testing.assert_array_equal(np.concatenate([y0, y1]), want)


@settings(max_examples=15)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1), st.integers(0, 10 ** 6))
def test_block_kernels_match_the_reference(k0, k1, seed):
    rng = np.random.default_rng(seed)
    x0, x1 = (rng.integers(0, 2 ** 32, 64, dtype=U32) for _ in range(2))
    y0, y1 = np.empty(64, U32), np.empty(64, U32)
    lib.threefry2x32_fill(U32(k0), U32(k1), x0, x1, y0, y1)
    want = rng_bits.threefry2x32(k0, k1, x0, x1)
    np.testing.assert_array_equal(y0, want[0])
    np.testing.assert_array_equal(y1, want[1])
    words = rng.integers(0, 2 ** 32, 4, dtype=U32)
    got = lib.philox_block(*words, U32(k0), U32(k1))
    assert [int(v) for v in got] == [int(v) for v in rng_bits.philox4x32(words, (k0, k1))]


def test_parallel_threefry_kernels_match_the_serial_ones():
    n = 1 << 16
    x = np.arange(n, dtype=U32)
    outs = [(np.empty(n, U32), np.empty(n, U32)) for _ in range(2)]
    for (y0, y1), fill in zip(outs, (lib.threefry2x32_fill, lib.threefry2x32_fill_parallel)):
        fill(U32(1), U32(2), U32(3), x, y0, y1)
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    bits = [np.empty(n, U64) for _ in range(2)]
    for b, fill in zip(bits, (lib.threefry_random_bits_fill,
                              lib.threefry_random_bits_fill_parallel)):
        fill(np.array([1, 2], U32), b, 64)
    np.testing.assert_array_equal(bits[0], bits[1])


# ------------------------------------------------------------------ rng_bit_generator
def _kernel_bits(algorithm, state, shape, dtype):
    new_state = np.empty_like(state)
    bits = np.empty(shape or (1,), dtype)
    if algorithm == "philox":
        lib.philox_generate(state, new_state, bits)
    else:
        lib.threefry_generate(state, new_state, bits, shape or (1,))
    return new_state, bits.reshape(shape)


@settings(max_examples=25)
@given(SHAPES, st.sampled_from(BIT_DTYPES), st.sampled_from(["three_fry", "philox"]),
       st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1), st.booleans())
def test_bit_generator_kernels_match_the_reference(shape, dtype, algorithm, key, counter, long):
    state = np.array([key, counter] + ([counter // 3] if long and algorithm == "philox"
                                       else []), U64)
    want_state, want_bits = rng_bits.GENERATORS[algorithm](state, shape, np.dtype(dtype))
    got_state, got_bits = _kernel_bits(algorithm, state, shape, dtype)
    np.testing.assert_array_equal(got_state, want_state)
    np.testing.assert_array_equal(got_bits, want_bits)
    assert want_bits.dtype == np.dtype(dtype) and want_bits.shape == shape


@pytest.mark.parametrize("shape", [(), (5,), (3, 5), (4, 3), (7, 9), (2, 3, 5), (1, 1, 3)])
@pytest.mark.parametrize("dtype", ["uint32", "uint8", "uint64"])
@pytest.mark.parametrize("algorithm", ["three_fry", "philox"])
def test_bit_generator_matches_xla(shape, dtype, algorithm):
    jax = _jax()
    if dtype == "uint64" and not callable(getattr(jax, "enable_x64", None)):
        pytest.skip("64-bit outputs need JAX's enable_x64 context")
    key = np.array([0x12345678, 0x9ABCDEF0, 0xFFFFFFF0, 7], U32)
    alg = getattr(jax.lax.RandomAlgorithm, f"RNG_{algorithm.upper()}")
    with jax.enable_x64(dtype == "uint64"):
        new_key, bits = jax.lax.rng_bit_generator(jax.numpy.asarray(key), shape, dtype, alg)
    state, got = ops.rng_bit_generator(key.view(U64), shape, dtype, algorithm)
    np.testing.assert_array_equal(got, np.asarray(bits))
    np.testing.assert_array_equal(state, np.asarray(new_key).view(U64))


def test_philox_counter_carries_into_the_high_word():
    state = np.array([9, 2 ** 64 - 2, 5], U64)
    new_state, bits = ops.rng_bit_generator(state, (16,), algorithm="philox")
    np.testing.assert_array_equal(new_state, np.array([9, 2, 6], U64))
    # block 2 runs at counter (0, 6): the same words a fresh state there gives
    _, again = ops.rng_bit_generator(np.array([9, 0, 6], U64), (4,), algorithm="philox")
    np.testing.assert_array_equal(bits[8:12], again)


def test_threefry_state_advances_and_streams_do_not_repeat():
    state = np.array([1, 0], U64)
    state, a = ops.rng_bit_generator(state, (4,))
    state, b = ops.rng_bit_generator(state, (4,))
    np.testing.assert_array_equal(state, np.array([1, 4], U64))
    assert not np.intersect1d(a, b).size
    both = ops.rng_bit_generator(np.array([1, 0], U64), (8,))[1]
    assert sorted(both) == sorted(np.concatenate([a, b]))  # the same blocks, laid out by dim


def test_bit_generator_is_pure_under_jit_and_identical_on_both_backends():
    def f(s):
        s1, a = ops.rng_bit_generator(s, (3, 4), np.uint32, "default")
        s2, b = ops.rng_bit_generator(s, (3, 4), np.uint32, "default")  # CSE may merge these
        return s1, a, b, ops.rng_bit_generator(s2, (5,), np.int64, "philox")[1][:0]
    state = np.array([3, 4], U64)
    eager = f(state)
    for backend in ("interpreter", "cpu"):
        for got, want in zip(tr.jit(f, backend=backend)(state), eager):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(eager[1], eager[2])


def test_bit_generator_vmaps_over_states_on_any_axis():
    states = np.array([[1, 2, 3], [4, 5, 6]], U64)  # states along axis 1
    new, bits = tr.vmap(lambda s: ops.rng_bit_generator(s, (2, 3)), in_axes=1)(states)
    for i in range(3):
        want_state, want_bits = ops.rng_bit_generator(states[:, i], (2, 3))
        np.testing.assert_array_equal(new[i], want_state)
        np.testing.assert_array_equal(bits[i], want_bits)


def test_bit_generator_in_hlo_text():
    text = tr.make_hlo(lambda s: ops.rng_bit_generator(s, (4,)))(np.zeros(2, U64)).as_text()
    assert "rng-bit-generator(" in text and "algorithm=three_fry" in text


@pytest.mark.parametrize("call, error, words", [
    (lambda: ops.rng_bit_generator(np.zeros(2, U32), (3,)), DTypeError, "u64[2]"),
    (lambda: ops.rng_bit_generator(np.zeros(3, U64), (3,)), DTypeError, "three_fry state"),
    (lambda: ops.rng_bit_generator(np.zeros(4, U64), (3,), algorithm="philox"), DTypeError,
     "u64[2] or u64[3]"),
    (lambda: ops.rng_bit_generator(np.zeros(2, U64), (3,), np.float32), DTypeError, "integer"),
    (lambda: ops.rng_bit_generator(np.zeros(2, U64), (3,), algorithm="mt"), ParamError, "mt"),
    (lambda: ops.rng_bit_generator(np.zeros(2, U64), (-1,)), ShapeError, "negative"),
    (lambda: ops.threefry2x32(U32(0), U32(0), np.zeros(2, U32), np.zeros(3, U32)), ShapeError,
     "share one shape"),
    (lambda: ops.threefry2x32(U32(0), U32(0), U32(0), np.int32(0)), DTypeError, "u32"),
    (lambda: ops.threefry_random_bits(np.zeros(2, U32), 12, (2,)), ParamError, "bit_width"),
    (lambda: ops.threefry_random_bits(np.zeros(3, U32), 32, (2,)), DTypeError, "u32[2]"),
    (lambda: ops.rng_uniform(np.zeros(2, np.float32), 1.0, (2,)), ShapeError, "scalars"),
    (lambda: ops.rng_uniform(np.float32(0), np.float64(1), (2,)), DTypeError, "share"),
    (lambda: ops.rng_uniform(True, True, (2,)), DTypeError, "integer or floating"),
    (lambda: ops.rng_normal(np.int32(0), np.int32(1), (2,)), DTypeError, "floating"),
])
def test_errors_name_the_problem(call, error, words):
    with pytest.raises(error, match=re.escape(words)):
        call()


# ------------------------------------------------------------------ rng_uniform / rng_normal
N = 20_000


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_uniform_floats_cover_the_half_open_interval(backend, dtype):
    a, b = dtype(-1.5), dtype(2.5)
    x = tr.jit(lambda a, b: ops.rng_uniform(a, b, (N,)), backend=backend)(a, b)
    assert x.dtype == dtype and x.shape == (N,)
    assert x.min() >= a and x.max() < b
    assert abs(float(x.mean()) - 0.5) < 0.05 and abs(float(x.var()) - 16 / 12) < 0.1


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("dtype, a, b", [(np.int8, -100, 100), (np.uint16, 3, 9),
                                         (np.int64, -2 ** 62, 2 ** 62), (np.uint64, 5, 6)])
def test_uniform_integers_hit_every_value_of_the_range(backend, dtype, a, b):
    x = tr.jit(lambda a, b: ops.rng_uniform(a, b, (N,)), backend=backend)(dtype(a), dtype(b))
    assert x.dtype == dtype and x.min() >= a and x.max() < b
    if b - a <= 200:
        counts = np.bincount((x.astype(np.int64) - a), minlength=b - a)
        expected = N / (b - a)  # each count is binomial: 6 standard deviations, so a
        # fair generator fails about once in 10^7 runs (the draws are fresh each run)
        assert np.abs(counts - expected).max() < 6 * np.sqrt(expected)
    else:
        assert abs(float(x.mean())) < 0.05 * 2 ** 62


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_normal_moments(backend):
    x = tr.jit(lambda m, s: ops.rng_normal(m, s, (N,)), backend=backend)(np.float32(3),
                                                                         np.float32(2))
    z = (x.astype(np.float64) - 3) / 2
    assert abs(z.mean()) < 0.05 and abs(z.var() - 1) < 0.05 and abs((z ** 3).mean()) < 0.1


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_stateful_ops_draw_anew_every_call_and_are_never_merged(backend):
    f = tr.jit(lambda a: (ops.rng_uniform(a, np.float32(1), (8,)),
                          ops.rng_uniform(a, np.float32(1), (8,)),
                          ops.rng_normal(a, np.float32(1), (8,))), backend=backend)
    x, y, z = f(np.float32(0))
    x2 = f(np.float32(0))[0]
    assert not np.array_equal(x, y) and not np.array_equal(x, x2)
    assert len(set(np.concatenate([x, y, x2]).tolist())) == 24


def test_stateful_ops_are_kept_when_unused_and_not_folded():
    def f(a):
        ops.rng_uniform(np.float32(0), np.float32(1), (3,))  # result unused: still drawn
        return ops.rng_uniform(np.float32(0), np.float32(1), (3,))
    lowered = tr.jit(f).lower(np.float32(0))
    assert lowered.as_text().count(" rng-uniform(") == 2
    assert lowered.compile().source.count("stream_uniform_float(") == 2


def test_empty_interval_gives_a_and_zero_sigma_gives_mu():
    np.testing.assert_array_equal(ops.rng_uniform(np.float32(2), np.float32(-1), (3,)),
                                  np.full(3, 2, np.float32))
    np.testing.assert_array_equal(ops.rng_uniform(np.uint8(250), np.uint8(4), (2,)),
                                  np.full(2, 250, np.uint8))
    np.testing.assert_array_equal(ops.rng_normal(1.5, 0.0, (2,)), np.full(2, 1.5))


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_vmap_of_stateful_ops_uses_each_rows_parameters(backend):
    lows = np.array([0, 10, 100], np.int32)
    ints = tr.jit(tr.vmap(lambda a: ops.rng_uniform(a, a + 5, (500,))), backend=backend)(lows)
    for row, low in zip(ints, lows):
        assert set(row.tolist()) == set(range(low, low + 5))
    scale = np.array([0.0, 1.0, 100.0], np.float32)
    floats = tr.jit(tr.vmap(lambda s: ops.rng_normal(np.float32(1), s, (500,))),
                    backend=backend)(scale)
    np.testing.assert_array_equal(floats[0], np.ones(500, np.float32))
    assert 0.5 < floats[1].std() < 1.5 and 50 < floats[2].std() < 150
    spans = tr.vmap(lambda b: ops.rng_uniform(np.float32(0), b, (500,)))(scale)
    assert (spans[0] == 0).all() and spans[2].max() > 50 and (spans[2] < 100).all()


def test_stateful_ops_have_no_gradient():
    grad = tr.grad(lambda m: ops.rng_normal(m, np.float32(1), ()).sum())(np.float32(0.5))
    assert grad == 0
