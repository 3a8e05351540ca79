"""Convolutions in parts on numba's pool (`cpu/lib/conv_threads.py`): on two threads
the generated code calls `convolution_parallel` for large convolutions (a layer's
forward pass by the Winograd plan, a strided one by the phased plan, feature groups,
and both gradients: the input gradient split by images, the kernel gradient by its
contracted images with the partial outputs added), and every result is the NumPy
reference interpreter's, for batches that two threads split unevenly; small
convolutions, batch groups and code on one thread keep the serial call. The parts
themselves (`in_parts`, which `convolution_parallel` runs where the pool has two threads
or more) are checked directly too: 2, 3 and 5 parts of 5 images, by images
and by the contracted images of a kernel gradient."""

from __future__ import annotations

from typing import Any, Callable

import numba
import numpy as np
import pytest
from numba import njit

import tracer as tr
from tracer import ops
from tracer.backend.cpu.generate import generate
from tracer.backend.cpu.lib.conv_threads import (FEATURES, IMAGES, PARALLEL_MIN_PRODUCTS,
                                                 in_parts)
from tracer.backend.numba.lower import lower

TWO_THREADS = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="numba's pool runs one thread")
PARALLEL = "convolution_parallel("


def _operands(lhs: tuple[int, ...], rhs: tuple[int, ...], seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(lhs), rng.standard_normal(rhs)


def _forward(strides: int = 1, feature_groups: int = 1, batch_groups: int = 1) -> Callable:
    return lambda x, w: ops.conv_general_dilated(
        x, w, (strides, strides), "SAME", feature_group_count=feature_groups,
        batch_group_count=batch_groups)


def _both_gradients(x: Any, w: Any) -> Any:
    """The input and kernel gradients of a 3x3 layer (a swapped kernel; a kernel
    gradient reading x and the output gradient with their first dims exchanged)."""
    return tr.grad(lambda x, w: (ops.conv(x, w, (1, 1), "SAME") ** 2).sum(),
                   argnums=(0, 1))(x, w)


def _source(fn: Callable, *args: np.ndarray, parallel_ok: bool = True) -> str:
    """The generated source of fn (no numba compile)."""
    return generate(lower(tr.jit(fn).lower(*args).graph), parallel_ok=parallel_ok).source


def _layers(x: Any, w: Any, x2: Any, w2: Any, x3: Any, w3: Any) -> Any:
    """A Winograd layer's input and kernel gradients (with its forward pass), a strided
    layer, and a layer of 2 feature groups: one program, compiled once."""
    return (*_both_gradients(x, w), _forward(strides=2)(x2, w2),
            _forward(feature_groups=2)(x3, w3))


# the operands of `_layers`: each convolution at least PARALLEL_MIN_PRODUCTS
# multiply-adds of the direct sum, an odd batch (two threads take 2 and 3 images)
SHAPES = [(5, 16, 26, 26), (24, 16, 3, 3), (5, 32, 30, 30), (32, 32, 3, 3),
          (5, 32, 26, 26), (48, 16, 3, 3)]


def test_the_layers_are_large_enough():
    for lhs, rhs in zip(SHAPES[::2], SHAPES[1::2], strict=True):
        assert lhs[0] * rhs[0] * np.prod(lhs[2:]) * np.prod(rhs[1:]) >= PARALLEL_MIN_PRODUCTS


@TWO_THREADS
def test_large_convolutions_on_two_threads_give_the_reference_result():
    """Four convolutions in parts (forward, input and kernel gradients, strided, feature
    groups), compiled and run on two threads, against the reference interpreter."""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape) for shape in SHAPES]
    with tr.config.override(num_threads=2):
        assert _source(_layers, *args).count(PARALLEL) == 5
        got = tr.jit(_layers)(*args)
    want = tr.jit(_layers, backend="interpreter")(*args)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9 * float(np.abs(e).max()))


def test_serial_calls_where_threads_do_not_pay_or_cannot_split():
    """Code on one thread, a single image, a small convolution and batch groups call
    `convolution`."""
    zeros = [np.zeros(shape) for shape in SHAPES]
    assert PARALLEL not in _source(_layers, *zeros, parallel_ok=False)
    one_image = np.zeros((1, *SHAPES[0][1:]))
    small = np.zeros((5, 4, 8, 8)), np.zeros((4, 4, 3, 3))
    groups = np.zeros((6, 16, 26, 26)), np.zeros((24, 16, 3, 3))
    for fn, args in [(_forward(), (one_image, zeros[1])), (_forward(), small),
                     (_forward(batch_groups=2), groups)]:
        source = _source(fn, *args)
        assert PARALLEL not in source and "convolution(" in source


@njit
def _in_parts(x, w, out, axis, parts, geometry, feature_groups, w_swapped):  # noqa: ANN001, ANN202
    in_parts(x, w, out, axis, parts, *geometry, feature_groups, w_swapped)


def _canonical_conv(x: np.ndarray, w: np.ndarray, padding: tuple, groups: int = 1) -> Any:
    """The reference interpreter's convolution of NCHW x and OIHW w."""
    return tr.jit(lambda x, w: ops.conv_general_dilated(
        x, w, (1, 1), padding, feature_group_count=groups), backend="interpreter")(x, w)


@pytest.mark.parametrize("parts", [2, 3, 5])
def test_parts_by_images_give_the_reference_result(parts):
    """Images [p n / parts, (p + 1) n / parts) per part, 5 images: uneven parts; feature
    groups; a kernel held swapped ((C', O, T) in memory, as an input gradient's)."""
    x, w = _operands((5, 6, 9, 11), (4, 3, 3, 3), seed=parts)
    swapped = np.ascontiguousarray(w.transpose(1, 0, 2, 3))
    out = np.full((5, 4, 9 * 11), np.nan)
    geometry = ((9, 11), (3, 3), (9, 11), (1, 1), (1, 1), (1, 1), (1, 1))
    _in_parts(x.reshape(5, 6, -1), swapped.reshape(3, 4, 9), out, IMAGES, parts, geometry,
              2, True)
    want = _canonical_conv(x, w, ((1, 1), (1, 1)), groups=2)
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("parts", [2, 3, 5])
def test_parts_by_contracted_images_add_up_to_the_kernel_gradient(parts):
    """A kernel gradient: x (N, C, S) and the output gradient (N, O, S) as they are in
    memory, read as (C, N, S) and (O, N, S); each part sums its images, the parts'
    outputs are added."""
    x, dy = _operands((5, 4, 10, 10), (5, 6, 10, 10), seed=10 + parts)
    out = np.full((4, 6, 9), np.nan)
    geometry = ((10, 10), (10, 10), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))
    _in_parts(x.reshape(5, 4, -1), dy.reshape(5, 6, -1), out, FEATURES, parts, geometry,
              1, True)
    want = _canonical_conv(x.transpose(1, 0, 2, 3), dy.transpose(1, 0, 2, 3),
                           ((1, 1), (1, 1)))
    np.testing.assert_allclose(out.reshape(want.shape), want, rtol=1e-12, atol=1e-12)
