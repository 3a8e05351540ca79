"""The cpu backend's large-shape paths against the interpreter: a threaded gather in a
loop body, window folds with empty output rows and their threading, and the buffers of
wrapped index arrays a gather reads. Each test asserts the path it needs from the
generated source."""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu.options import PARALLEL_MIN_ELEMENTS
from tests.checks import threaded


def _both(fn, *args):
    got = tr.jit(fn)(*args)
    want = tr.jit(fn, backend="interpreter")(*args)
    return got, want, tr.jit(fn).lower(*args).compile().source


def test_a_threaded_gather_in_a_loop_body_gets_its_output_buffer():
    """A gather inside a loop body writes a buffer the body allocates itself; its
    parallel kernel must take that buffer as an argument (it was a NameError)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    idx = rng.integers(0, 1000, PARALLEL_MIN_ELEMENTS + 5)

    def f(x, idx):
        def body(i, c):
            return c + x[(idx + i) % x.shape[0]] * 0.5
        return ops.fori_loop(0, 3, body, np.zeros(idx.shape, np.float32))

    got, want, source = _both(f, x, idx)
    assert ("parallel_gather" in source) == threaded()
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("shape, window, strides", [((2,), (3,), (3,)), ((5, 2), (1, 3), (1, 3)),
                                                     ((40000, 3), (1, 5), (1, 4))])
def test_a_window_fold_with_an_empty_output_row_allocates_no_negative_scratch(shape, window,
                                                                               strides):
    """The `runs` fold sized its scratch rows from (outputs - 1) * stride + 1, negative
    for an empty output row with a stride above 1 (numba's np.empty raised)."""
    x = np.ones(shape, np.float32)

    def f(x):
        return ops.reduce_window(x, np.float32(0), ops.add, window, strides, "VALID")

    got, want, _ = _both(f, x)
    assert got.shape == want.shape and got.shape[-1] == 0


def test_a_rank_1_window_fold_is_no_parallel_kernel_but_a_rank_2_one_is():
    """A rank-1 `runs` fold has no loop over rows to thread: a `parallel=True` kernel
    around it made numba warn (NumbaPerformanceWarning) on every compile."""
    rng = np.random.default_rng(1)

    def f(x):
        return ops.reduce_window(x, np.float32(-np.inf), ops.max, (3,) * x.ndim,
                                 (1,) * x.ndim, "SAME")

    for shape, rows in (((PARALLEL_MIN_ELEMENTS + 3,), False), ((64, 1025), True)):
        x = rng.standard_normal(shape).astype(np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("error", numba.NumbaPerformanceWarning)
            got, want, source = _both(f, x)
        assert ("parallel=True" in source) == (rows and threaded())
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", [
    lambda x, i, j: (x[i, j], x.at[i, j].add(1.0)),
    lambda x, i, j: tr.grad(lambda x: tnp.sum(x[i, j] ** 2))(x),
], ids=["gather_and_scatter", "grad_of_a_pair_gather"])
def test_index_arrays_a_gather_reads_through_its_own_loop_keep_their_buffers(fn):
    """Two wrapped index arrays (NumPy's negative indices) read by a gather and a
    scatter are stored, and the op computes their concatenation per element. The
    buffer pool saw no reader of the first (only of the concatenation) and wrote
    the second into the same buffer: every pair read the column index twice."""
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    i, j = np.array([-1, 2, 0]), np.array([3, -2, 1])
    got, want, _ = _both(fn, x, i, j)
    for g, w in zip(tr.tree_util.tree_leaves(got), tr.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_array_equal(g, w)
