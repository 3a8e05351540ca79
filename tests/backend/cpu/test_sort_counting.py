"""The cpu backend's counting sort of integer rows spanning few values
(`cpu/lib/sort_counting.py`) against `np.sort`: spans at both ends of `countable`'s
bounds, values at both ends of their dtype (where max - min + 1 wraps), rows of one
chunk counted and of another sorted by NumPy, and which rows the kernel counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu.lib.sort_counting import SPAN_DIVISOR, SPAN_MIN, copy_and_count

DTYPES = ["int64", "uint32"]  # (each dtype compiles its own kernels; sort_numpy's tests' too)


@njit
def _copy_and_count(x, out):
    return copy_and_count(x, out, 0, x.shape[0])


def _rows(rng, dtype: str, shape: tuple[int, int], span: int, at: str) -> np.ndarray:
    """Rows of values in a span of `span` values (both ends present) starting at the
    dtype's min, ending at its max, or around 0."""
    info = np.iinfo(dtype)
    low = {"min": info.min, "max": info.max - span + 1, "zero": -(span // 2) if info.min else 0}[at]
    offsets = rng.integers(0, span, shape, dtype=np.uint64)
    offsets[:, 0], offsets[:, -1] = 0, span - 1
    return (np.array(low, dtype).astype(np.uint64) + offsets).astype(dtype)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from([512, 600, 1000]), st.integers(1, 3),
       st.sampled_from(["min", "max", "zero"]), st.data())
def test_counted_rows_match_numpy(dtype, n, rows, at, data):
    """tnp.sort and ops.sort of rows whose spans sit just inside and outside the
    counting bounds, at the ends of the dtype, equal np.sort."""
    spans = [SPAN_MIN - 1, SPAN_MIN, n // SPAN_DIVISOR, n // SPAN_DIVISOR + 1, 2]
    span = data.draw(st.sampled_from(spans))
    x = _rows(np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1))), dtype,
              (rows, n), span, at)
    want = np.sort(x)
    for fn in (tnp.sort, lambda v: ops.sort(v, dimension=1)):
        got = tr.jit(fn)(x)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)
    out = np.empty_like(x)
    counted = _copy_and_count(x.reshape(rows, n, 1), out.reshape(rows, n, 1))
    assert counted == (SPAN_MIN <= span <= n // SPAN_DIVISOR)
    np.testing.assert_array_equal(out, np.sort(x) if counted else x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_of_the_whole_dtype_are_not_counted(dtype):
    """A row holding both ends of its dtype spans 2^32 or 2^64 values (the latter
    wraps to 0 in uint64): NumPy sorts it."""
    info = np.iinfo(dtype)
    x = np.resize(np.array([info.max, 7, info.min, 0], dtype), (2, 1000))
    out = np.empty_like(x)
    assert not _copy_and_count(x.reshape(2, 1000, 1), out.reshape(2, 1000, 1))
    np.testing.assert_array_equal(tr.jit(tnp.sort)(x), np.sort(x))


def test_chunks_are_counted_or_sorted_by_numpy_on_their_own():
    """Rows go in blocks (the parallel kernel's, at this size) of L2-sized chunks; a
    chunk with one wide row goes to NumPy, the others are counted: a wide row in the
    middle of 300 rows, along rows and (strided, NumPy's path) columns, and 1-D."""
    rng = np.random.default_rng(4)
    x = rng.integers(-40, 40, (300, 700))
    x[150, 3] = 2 ** 40
    np.testing.assert_array_equal(tr.jit(tnp.sort)(x), np.sort(x))
    np.testing.assert_array_equal(tr.jit(lambda v: tnp.sort(v, axis=0))(x), np.sort(x, axis=0))
    flat = x.reshape(-1)[:100_000].copy()
    flat[flat == 2 ** 40] = 0
    np.testing.assert_array_equal(tr.jit(tnp.sort)(flat), np.sort(flat))
