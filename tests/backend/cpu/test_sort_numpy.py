"""The cpu backend's key sorts by NumPy's sort (`cpu/lib/sort_numpy.py`) against the
total order bit for bit: NaNs of both signs and any payload, signed zeros, infinities
and duplicates, in contiguous and strided rows from MIN_LENGTH on, and the parallel
kernel's blocks of rows; `tracer.numpy.sort` against `np.sort`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu.generate import generate
from tracer.backend.cpu.lib.sort_numpy import MIN_LENGTH, numpy_sort_rows_parallel
from tracer.backend.numba.lower import lower
from tracer.ops.sort import total_order_key

FLOATS = ["float32", "float64"]
DTYPES = FLOATS + ["int64", "uint32"]  # (each dtype compiles its own kernels)


def _special_values(dtype: str) -> np.ndarray:
    """NaNs with both signs and two payloads, signed zeros, infinities (as bits)."""
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    width = 8 * bits.itemsize
    exponent = (1 << (width - 1)) - (1 << (np.finfo(dtype).nmant))  # all exponent bits
    sign, quiet = 1 << (width - 1), 1 << (np.finfo(dtype).nmant - 1)
    nans = [exponent | quiet, exponent | quiet | 5, sign | exponent | quiet,
            sign | exponent | 3]
    return np.concatenate([np.array(nans, bits).view(dtype),
                           np.array([0.0, -0.0, np.inf, -np.inf], dtype)])


def _sample(data, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = rng.integers(-4, 5, shape).astype(dtype)  # duplicates, zeros of one sign
    special = rng.random(shape) < data.draw(st.sampled_from([0.0, 0.05, 0.5]))
    x[special] = rng.choice(_special_values(dtype), int(special.sum()))
    return x


def _total_order_sorted(x: np.ndarray, axis: int) -> np.ndarray:
    order = np.argsort(total_order_key(x), axis=axis, kind="stable")
    return np.take_along_axis(x, order, axis)


def _same_bits(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(f"u{got.dtype.itemsize}"),
                                  want.view(f"u{want.dtype.itemsize}"))


_LENGTHS = st.sampled_from([MIN_LENGTH, MIN_LENGTH + 1, 300])


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(DTYPES), _LENGTHS, st.integers(1, 5), st.booleans(), st.data())
def test_key_sort_is_the_total_order_bit_for_bit(dtype, n, rows, along_columns, data):
    """ops.sort of one operand (rows, or strided columns) equals a stable sort of the
    total-order keys: -NaNs first, NaNs by payload, -0.0 before +0.0. (Rows shorter
    than MIN_LENGTH take the radix kernels: tests/test_ops_sort.py.)"""
    axis = 0 if along_columns else 1
    shape = (n, rows) if along_columns else (rows, n)
    x = _sample(data, dtype, shape)
    _same_bits(tr.jit(lambda x: ops.sort(x, dimension=axis))(x), _total_order_sorted(x, axis))


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(MIN_LENGTH, 400), st.data())
def test_numpy_sort_matches_numpy(dtype, n, data):
    """tracer.numpy.sort: NumPy's values and NaN placement (NaNs last, as +NaN)."""
    x = _sample(data, dtype, (3, n))
    got, want = tr.jit(tnp.sort)(x), np.sort(x)
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[np.isnan(got)]).any()


@pytest.mark.parametrize("shape", [(6, 200, 1), (1, 200, 7), (3, 150, 4)])
def test_parallel_kernel_sorts_every_block(shape):
    """numpy_sort_rows_parallel, called directly: blocks of outer positions (or of
    inner ones when outer is 1) on numba's threads."""
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 5, shape).astype(np.float32)
    x[..., ::3] = -0.0
    x[:, ::11] = _special_values("float32")[3]
    out = np.empty_like(x)
    numpy_sort_rows_parallel(x, out, False)
    _same_bits(out, _total_order_sorted(x, 1))


def test_c_library_code_keeps_the_radix_sort():
    """Code for a C library (`tracer.aot`) has no Python to call: its sorts stay on the
    radix kernels, where the cpu backend's call NumPy."""
    lowered = tr.jit(ops.sort).lower(np.zeros(1000, np.float32))
    assert "numpy_sort_rows(" in lowered.compile().source
    c_source = generate(lower(lowered.graph), parallel_ok=False, objmode_ok=False).source
    assert "numpy_sort" not in c_source and "sort_vector(" in c_source
