"""Batch norm on numba's thread pool (`cpu.lib.batch_norm`'s `_parallel` kernels): the
same results as the serial kernels, bit for bit (each feature's sums are added in the
same order), and the kernels a large batch norm compiles to where threads may run."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tests.checks import threaded
from tracer import ops
from tracer.backend.cpu.lib import batch_norm as bn

SHAPES = [(3, 5, 7), (1, 1, 1), (4, 2, 33), (0, 3, 4)]


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    scale, offset = (rng.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
    return x, scale, offset


def _outputs(shape, n):
    return [np.empty(shape, np.float32)] + [np.empty(shape[1], np.float32) for _ in range(n)]


@pytest.mark.parametrize("shape", SHAPES)
def test_threaded_training_and_inference_are_the_serial_kernels_bit_for_bit(shape):
    x, scale, offset = _data(shape)
    serial, threads = _outputs(shape, 2), _outputs(shape, 2)
    bn.batch_norm_training(x, scale, offset, 1e-5, *serial)
    bn.batch_norm_training_parallel(x, scale, offset, 1e-5, *threads)
    for a, b in zip(serial, threads, strict=True):
        assert a.tobytes() == b.tobytes()
    mean, var = serial[1], np.abs(serial[2]) + 0.5
    y, y_threads = np.empty_like(x), np.empty_like(x)
    bn.batch_norm_inference(x, scale, offset, mean, var, 1e-3, y)
    bn.batch_norm_inference_parallel(x, scale, offset, mean, var, 1e-3, y_threads)
    assert y.tobytes() == y_threads.tobytes()


@pytest.mark.parametrize("shape", SHAPES)
def test_threaded_gradient_is_the_serial_kernel_bit_for_bit(shape):
    x, scale, offset = _data(shape)
    dy = _data(shape, seed=1)[0]
    mean, var = scale * 0.5, np.abs(offset) + 0.25  # (any statistics will do)
    serial, threads = _outputs(shape, 2), _outputs(shape, 2)
    bn.batch_norm_grad(x, scale, mean, var, dy, 1e-5, *serial)
    bn.batch_norm_grad_parallel(x, scale, mean, var, dy, 1e-5, *threads)
    for a, b in zip(serial, threads, strict=True):
        assert a.tobytes() == b.tobytes()


def test_a_large_batch_norm_runs_on_threads_where_it_may():
    x, scale, offset = _data((4, 6, 40, 41))
    dy = _data((4, 6, 40, 41), seed=1)[0]

    def norms(x, scale, offset, dy):
        y, mean, var = ops.batch_norm_training(x, scale, offset, 1e-5, 1)
        z = ops.batch_norm_inference(x, scale, offset, mean, var + 1.0, 1e-5, 1)
        return (y, mean, var, z, *ops.batch_norm_grad(x, scale, mean, var, dy, 1e-5, 1))
    f = tr.jit(norms)
    source = f.lower(x, scale, offset, dy).compile().source
    for kernel in ("training", "inference", "grad"):
        assert (f"batch_norm_{kernel}_parallel(" in source) == threaded()
    want = tr.jit(norms, backend="interpreter")(x, scale, offset, dy)
    for got, w in zip(f(x, scale, offset, dy), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=2e-5, atol=2e-5)
