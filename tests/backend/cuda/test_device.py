"""The cuda backend keeps data on the device: device arrays in give device arrays out
with no host transfer, and the ops that used to bounce through the host (RNG,
pooling and its gradient, batch norm, convolution, bit-level ops on scalars)
have kernels that match the interpreter (bit for bit where the op is exact). Runs
on numba's CUDA simulator (conftest.py); shapes stay tiny.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

pytest.importorskip("tracer.backend.cuda.backend", reason="numba-cuda is not installed",
                    exc_type=ImportError)

import tracer as tr  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer import ops  # noqa: E402
from tracer.backend.cuda.lib import arrays as cuda_arrays  # noqa: E402
from tracer.backend.cuda.emit.host import HOST_FALLBACKS  # noqa: E402
from tracer.backend.cuda.emit.table import DEVICE_EMITTERS  # noqa: E402
from tracer.backend.cuda.backend import NumbaCudaBackend, is_device_array  # noqa: E402
from tracer.core import aval_of  # noqa: E402
from tracer.interpret import run_graph  # noqa: E402
from tracer.tracing import trace_flat  # noqa: E402
from tracer.tree_util import tree_flatten  # noqa: E402

try:
    CUDA = NumbaCudaBackend()
except tr.TracerError as e:
    pytest.skip(str(e), allow_module_level=True)

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("simulator_threads")]
RNG = np.random.default_rng(7)


def _trace(fn, args):
    return trace_flat(lambda *xs: tree_flatten(fn(*xs))[0], [aval_of(a) for a in args],
                      "main")[0]


def _compare(fn, args, rtol=2e-5, exact=False):
    """Run `fn` on the cuda backend and the interpreter; returns the executable."""
    graph = _trace(fn, args)
    with np.errstate(all="ignore"):
        want = run_graph(graph, [np.asarray(a) for a in args])
    exe = CUDA.compile(graph)
    for got, w in zip(exe(*args), want, strict=True):
        assert got.dtype == w.dtype and got.shape == w.shape, (got.dtype, w.dtype, got.shape)
        if exact or w.dtype.kind in "biu":
            np.testing.assert_array_equal(got, w)
        else:
            np.testing.assert_allclose(got, w, rtol=rtol, atol=1e-6)
    return exe


def _on_host(exe) -> bool:
    return "host_ops[" in exe.source


# ------------------------------------------------------------------ no host round trips

@contextmanager
def _transfers() -> Iterator[dict[str, int]]:
    """Count copies between host and device: device -> host (`copy_to_host`), host ->
    device (`cuda.to_device`, `copy_to_device` of a host array)."""
    from numba import cuda
    counts = {"to_host": 0, "to_device": 0}
    kind = type(cuda.device_array(1))
    to_host, to_device, copy_in = kind.copy_to_host, cuda.to_device, kind.copy_to_device

    def counted_to_host(self, *a, **k):
        counts["to_host"] += 1
        return to_host(self, *a, **k)

    def counted_to_device(*a, **k):
        counts["to_device"] += 1
        return to_device(*a, **k)

    def counted_copy_in(self, ary, *a, **k):
        counts["to_device"] += not is_device_array(ary)
        return copy_in(self, ary, *a, **k)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kind, "copy_to_host", counted_to_host)
        mp.setattr(kind, "copy_to_device", counted_copy_in)
        mp.setattr(cuda, "to_device", counted_to_device)
        yield counts


def _pipeline(x, w, s16, xs16, state):
    """Kernels of every kind, a float16 scalar in and out, a literal result, a scan over a
    float16 vector: nothing in it needs the host."""
    h = ops.conv(x, w, (1, 1), "SAME")
    y, _, _ = ops.batch_norm_training(h, np.ones(2, np.float32), np.zeros(2, np.float32),
                                      1e-5, 1)
    pooled = ops.reduce_window(tnp.maximum(y, 0.0), -np.inf, ops.max, (1, 1, 2, 2),
                               (1, 1, 2, 2), "VALID")
    back = ops.select_and_scatter(y, ops.ge, (1, 1, 2, 2), (1, 1, 2, 2), "VALID", pooled,
                                  np.float32(0), ops.add)
    new_state, bits = ops.rng_bit_generator(state, (3, 4), np.uint32, "philox")
    rounded = ops.reduce_precision(s16 * 3, 5, 4)
    bits16 = ops.bitcast_convert_type(rounded, np.uint16)
    carry, ys = ops.scan(lambda c, v: (c + v, c * v), s16, xs16)
    return (tnp.sum(pooled, axis=(2, 3)) @ np.ones((2, 3), np.float32), back, new_state,
            bits, rounded, bits16, carry, ys, np.float32(1.5))


def _pipeline_args():
    return [RNG.standard_normal((2, 1, 4, 4)).astype(np.float32),
            RNG.standard_normal((2, 1, 3, 3)).astype(np.float32), np.float16(0.7),
            np.array([1.5, -2.0, 0.25], np.float16), np.array([5, 9, 1], np.uint64)]


def test_device_arrays_in_device_arrays_out_with_no_host_transfer():
    """Through `jit` and through the AOT `Compiled`: after the first call (which uploads
    the executable's sizes and constants), a call on device arrays copies nothing."""
    args = _pipeline_args()
    f = tr.jit(_pipeline, backend="cuda")
    compiled = f.lower(*args).compile()
    assert "host_ops[" not in compiled.source
    want = tr.jit(_pipeline, backend="interpreter")(*args)
    device_args = [cuda_arrays.device_put(a) for a in args]
    for run in (f, compiled):
        run(*device_args)
        with _transfers() as counts:
            outs = run(*device_args)
        assert counts == {"to_host": 0, "to_device": 0}
        for got, w in zip(outs, want, strict=True):
            assert is_device_array(got) and got.shape == np.shape(w) and got.dtype == w.dtype
            np.testing.assert_allclose(got.copy_to_host(), w, rtol=2e-5, atol=1e-6)
    assert all(type(o) is np.ndarray for o in compiled(*args))  # NumPy in: NumPy out


def test_strided_and_float16_scalar_device_arguments_are_converted_on_the_device():
    f = tr.jit(lambda a, s: (a * s, s + s), backend="cuda")
    base = cuda_arrays.device_put(np.arange(12, dtype=np.float32).reshape(3, 4))
    strided, s = base[:, ::2], cuda_arrays.device_put(np.float16(1.5))
    f(strided, s)
    with _transfers() as counts:
        out, twice = f(strided, s)
    assert counts["to_host"] == 0
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(12).reshape(3, 4)[:, ::2] * 1.5)
    assert twice.dtype == np.float16 and twice.shape == () and float(twice.copy_to_host()) == 3.0


# ------------------------------------------------------------------ RNG

@pytest.mark.parametrize("algorithm", ["three_fry", "philox"])
def test_rng_bit_generator_is_the_references_bits(algorithm):
    """Every layout: 64-bit and narrower dtypes (signed: a view), odd and even split dims,
    rank 0, an empty shape, u64[2] and u64[3] philox states with a counter carry."""
    shapes = [((), np.uint32), ((5,), np.uint8), ((3, 5), np.int16), ((3, 1, 4), np.uint32),
              ((7,), np.int64), ((2, 3), np.uint64), ((0, 3), np.uint32)]
    states = [np.array([42, 2 ** 64 - 3], np.uint64)]
    if algorithm == "philox":
        states.append(np.array([7, 2 ** 64 - 2, 11], np.uint64))

    def draw(state):
        return [ops.rng_bit_generator(state, shape, dtype, algorithm)
                for shape, dtype in shapes]
    for state in states:
        assert not _on_host(_compare(draw, [state], exact=True))


def test_threefry_random_bits_match_the_reference():
    key = np.array([0x13198A2E, 0x03707344], np.uint32)
    _compare(lambda k: [ops.threefry_random_bits(k, w, (2, 3)) for w in (8, 16, 32, 64)],
             [key], exact=True)


def test_rng_uniform_and_normal_draw_fresh_numbers_on_the_device():
    def draw(a, b, lo, hi, mu, sigma, h):
        return (ops.rng_uniform(a, b, (1000,)), ops.rng_uniform(lo, hi, (1000,)),
                ops.rng_normal(mu, sigma, (1000,)), ops.rng_uniform(h, h + 1, (50,)),
                ops.rng_uniform(b, a, (3,)))
    args = [np.float32(-1), np.float32(3), np.int8(-100), np.int8(100), np.float64(2.0),
            np.float64(0.5), np.float16(4)]
    exe = CUDA.compile(_trace(draw, args))
    assert not _on_host(exe)
    uniform, ints, normal, halves, empty_interval = exe(*args)
    # (the draws are not reproducible: bounds at 6+ standard errors of 1000 samples)
    assert uniform.min() >= -1 and uniform.max() < 3 and abs(uniform.mean() - 1) < 0.25
    assert ints.dtype == np.int8 and ints.min() >= -100 and ints.max() < 100
    assert len(np.unique(ints)) > 180 and abs(ints.astype(float).mean() + 0.5) < 12
    assert abs(normal.mean() - 2) < 0.1 and abs(normal.std() - 0.5) < 0.07
    assert halves.dtype == np.float16 and halves.min() >= 4 and halves.max() < 5
    np.testing.assert_array_equal(empty_interval, np.float32(3))  # b <= a gives a
    again = exe(*args)[0]
    assert not np.array_equal(uniform, again)  # a new draw per execution


# ------------------------------------------------------------------ windows, batch norm, conv

WINDOWS = [  # (window, strides, padding, base dilation, window dilation)
    ((2, 2), (2, 2), "VALID", None, None),
    ((3, 3), (1, 1), "SAME", None, None),
    ((2, 3), (2, 1), ((1, 0), (2, 1)), (2, 1), (1, 2)),
    ((1, 2), (1, 3), ((0, 0), (-1, 2)), None, (1, 2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_pooling_and_its_gradient_match_the_interpreter(dtype):
    x = (RNG.standard_normal((5, 7)) * 8).astype(dtype)

    def pools(x):
        outs = []
        for window, strides, padding, base, dil in WINDOWS:
            geo = (window, strides, padding, base, dil)
            low = np.array(-np.inf if dtype != np.int32 else -2 ** 31, dtype)
            top = ops.reduce_window(x, low, ops.max, *geo)
            total = ops.reduce_window(x, np.array(0, dtype), ops.add, *geo)
            pairs = ops.reduce_window((x, ops.iota(np.int32, x.shape, 1)), (low, np.int32(0)),
                                      _max_with_index, *geo)
            picked = ops.select_and_scatter(x, ops.ge, window, strides, padding, total,
                                            np.array(1, dtype), ops.add, base, dil)
            outs += [top, total, *pairs, picked]
        return outs
    assert not _on_host(_compare(pools, [x], rtol=2e-3))


def _max_with_index(m, i, v, j):
    take = ops.gt(v, m)
    return ops.select(take, v, m), ops.select(take, j, i)


def test_max_pool_gradient_under_grad_stays_on_the_device():
    def loss(x):
        pooled = ops.reduce_window(x, -np.inf, ops.max, (1, 3, 3), (1, 2, 2), "SAME")
        return tnp.sum(pooled * pooled)
    x = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    assert not _on_host(_compare(tr.grad(loss), [x]))


def test_a_computation_that_is_not_element_wise_runs_on_the_host():
    def summed(a, b):  # a reduction inside the computation
        return ops.reduce(ops.broadcast_in_dim(a + b, (2,), ()), np.float32(0), ops.add, (0,))
    x = np.arange(6, dtype=np.float32)
    exe = _compare(lambda x: ops.reduce_window(x, np.float32(0), summed, (2,), (1,)), [x])
    assert _on_host(exe)
    assert set(HOST_FALLBACKS) <= set(DEVICE_EMITTERS)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_batch_norm_matches_the_interpreter(dtype):
    x = (RNG.standard_normal((3, 4, 5)) * 2 + 1).astype(dtype)
    g = RNG.standard_normal(x.shape).astype(dtype)

    def norms(x, g):  # (every feature position once; the other dtypes: one)
        outs = []
        for fi in (0, 1, 2) if dtype == np.float32 else (1,):
            n = x.shape[fi]
            scale, offset = np.linspace(0.5, 2, n).astype(dtype), np.full(n, 0.25, dtype)
            y, mean, var = ops.batch_norm_training(x, scale, offset, 1e-3, fi)
            outs += [y, mean, var, ops.batch_norm_inference(x, scale, offset, mean, var, 1e-3,
                                                            fi),
                     *ops.batch_norm_grad(x, scale, mean, var, g, 1e-3, fi)]
        return outs
    rtol = 2e-3 if dtype == np.float16 else 1e-5 if dtype == np.float32 else 1e-11
    assert not _on_host(_compare(norms, [x, g], rtol=rtol))


def test_batch_norm_of_an_empty_batch_gives_nan_statistics():
    x = np.zeros((0, 3), np.float32)
    _compare(lambda x: ops.batch_norm_training(x, np.ones(3, np.float32),
                                               np.zeros(3, np.float32), 0.0, 1), [x])


def test_a_convnet_with_pooling_and_batch_norm_trains_on_the_device():
    def loss(w, x):
        h = ops.conv_general_dilated(x, w, (1, 1), "SAME", None, (1, 2), ("NHWC", "HWIO",
                                                                          "NHWC"))
        h, _, _ = ops.batch_norm_training(h, np.ones(4), np.zeros(4), 1e-5, 3)
        h = ops.reduce_window(tnp.maximum(h, 0.0), -np.inf, ops.max, (1, 2, 2, 1),
                              (1, 2, 2, 1), "VALID")
        return tnp.sum(h * tnp.arange(h.size).reshape(h.shape))
    w, x = RNG.standard_normal((3, 3, 2, 4)), RNG.standard_normal((2, 6, 6, 2))
    exe = _compare(tr.value_and_grad(loss), [w, x], rtol=1e-9)
    assert not _on_host(exe)


# ------------------------------------------------------------------ bit-level ops on scalars

def test_reduce_precision_and_bitcast_of_scalars_run_on_the_device():
    def f(h, s):
        return (ops.reduce_precision(h, 5, 3), ops.reduce_precision(h * h, 5, 10),
                ops.bitcast_convert_type(h, np.int16), ops.bitcast_convert_type(s, np.uint32),
                ops.bitcast_convert_type(ops.bitcast_convert_type(s, np.uint8), np.float32),
                ops.bitcast_convert_type(np.int16(15360) + ops.convert_element_type(
                    s > 0, np.int16), np.float16))
    args = [np.float16(6.1e-5), np.float32(-2.75)]  # (a float16 subnormal's neighbour)
    exe = _compare(f, args, exact=True)
    assert not _on_host(exe)

