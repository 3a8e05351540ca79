"""The cpu backend's gather of single elements by vector gathers (`cpu/lib/gather.py`):
XLA's clamping of every start into bounds (ops.gather) and NumPy's indexing
(tracer.numpy), for each dtype it loads, lengths that leave partial vectors and
blocks, strided operands and two-dimensional index vectors; operands past
`SCALAR_MIN_BYTES`, read by plain loads, too."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
from tracer import ops
from tracer.backend.cpu.lib.gather import BLOCK, LANES, SCALAR_MIN_BYTES

DTYPES = ["float32", "float64", "int32", "uint64"]  # (each compiles its own module)
_LENGTHS = st.sampled_from([0, 1, LANES - 1, LANES + 3, BLOCK, BLOCK + LANES + 1, 700])
_ELEMENT = dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,),
                index_vector_dim=1)


def _operand(rng, dtype: str, shape) -> np.ndarray:
    return (rng.standard_normal(shape) * 1000).astype(dtype)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(DTYPES), _LENGTHS, st.integers(1, 50), st.sampled_from(["int64", "uint32"]),
       st.integers(0, 2 ** 32 - 1))
def test_element_gather_clamps_as_xla(dtype, n, size, index_dtype, seed):
    """ops.gather of single elements: each start clamped into [0, size - 1]."""
    rng = np.random.default_rng(seed)
    x = _operand(rng, dtype, size)
    low = 0 if index_dtype[0] == "u" else -3 * size
    idx = rng.integers(low, 3 * size, (n, 1)).astype(index_dtype)
    dn = ops.GatherDimensionNumbers(**_ELEMENT)
    fn = tr.jit(lambda x, i: ops.gather(x, i, dn, (1,)))
    _same_bits(fn(x, idx), x[np.clip(idx[:, 0].astype(np.int64), 0, size - 1)])
    if n:
        assert "gather_offsets(" in fn.lower(x, idx).compile().source


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(DTYPES), _LENGTHS, st.integers(1, 40), st.integers(0, 2 ** 32 - 1))
def test_numpy_indexing_with_negative_indices_and_strided_operands(dtype, n, size, seed):
    """x[idx] with NumPy's negative indices, on a contiguous and on a strided operand."""
    rng = np.random.default_rng(seed)
    base = _operand(rng, dtype, 2 * size)
    idx = rng.integers(-size, size, n)
    fn = tr.jit(lambda x, i: x[i])
    for x in (base[:size], base[::2]):
        _same_bits(fn(x, idx), x[idx])


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(DTYPES), _LENGTHS, st.integers(0, 2 ** 32 - 1))
def test_two_index_vector_gathers_elements_of_a_matrix(dtype, n, seed):
    """x[rows, columns]: two clamped starts per element, offsets through both strides."""
    rng = np.random.default_rng(seed)
    x = _operand(rng, dtype, (7, 13))
    rows, columns = rng.integers(-7, 7, n), rng.integers(-13, 13, n)
    _same_bits(tr.jit(lambda x, r, c: x[r, c])(x, rows, columns), x[rows, columns])


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(DTYPES), _LENGTHS, st.integers(0, 2 ** 32 - 1))
def test_operands_past_the_l2_size_gather_by_plain_loads(dtype, n, seed):
    """x[idx] from an operand of SCALAR_MIN_BYTES and more (plain loads): NumPy's
    negative indices, contiguous and strided, and XLA's clamping by ops.gather."""
    rng = np.random.default_rng(seed)
    size = SCALAR_MIN_BYTES // np.dtype(dtype).itemsize + 5
    base = _operand(rng, dtype, 2 * size)
    idx = rng.integers(-size, size, n)
    fn = tr.jit(lambda x, i: x[i])
    for x in (base[:size], base[::2]):
        _same_bits(fn(x, idx), x[idx])
    wide = rng.integers(-3 * size, 3 * size, (n, 1))
    dn = ops.GatherDimensionNumbers(**_ELEMENT)
    clamped = tr.jit(lambda x, i: ops.gather(x, i, dn, (1,)))(base[:size], wide)
    _same_bits(clamped, base[:size][np.clip(wide[:, 0], 0, size - 1)])
