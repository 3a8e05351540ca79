"""The cpu backend's key sorts by NumPy's sort (`cpu/lib/sort_numpy.py`) against the
total order bit for bit: NaNs of both signs and any payload, signed zeros, infinities
and duplicates, in contiguous and strided rows from MIN_LENGTH on, and the parallel
kernel's blocks of rows; `tracer.numpy.sort` against `np.sort` and the interpreter
(its NaN keys folded into the sort: `numba.lower.fold_nan_keys_into_sorts`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu.generate import generate
from tracer.backend.cpu.lib.sort_numpy import ITEMSIZES, MIN_LENGTH, numpy_sort_rows_parallel
from tracer.backend.numba.lower import fold_nan_keys_into_sorts, lower
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


_NAN = {d: np.array(np.nan, d).view(f"u{np.dtype(d).itemsize}") for d in FLOATS}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(FLOATS), st.sampled_from([1, 5, 40, MIN_LENGTH - 1, MIN_LENGTH, 300]),
       st.integers(1, 4), st.sampled_from([-1, 0, None]), st.booleans(), st.data())
def test_numpy_sort_of_special_values_matches_numpy_on_every_kernel(dtype, n, rows, axis,
                                                                    one_d, data):
    """tracer.numpy.sort on the network, radix and NumPy kernels, 1-D and 2-D, along
    rows, strided columns or flattened: NumPy's values with NaNs last (-0.0 equals 0.0,
    as np.sort compares them), every NaN the default +NaN, and bit for bit the
    interpreter's result (the reference: -0.0 before +0.0, the seeds' total order)."""
    x = _sample(data, dtype, (n,) if one_d else (rows, n))
    if one_d and axis == 0:
        axis = -1
    got = tr.jit(lambda v: tnp.sort(v, axis=axis))(x)
    np.testing.assert_array_equal(got, np.sort(x, axis=axis))
    nans = np.ascontiguousarray(got)[np.isnan(got)].view(_NAN[dtype].dtype)
    assert (nans == _NAN[dtype]).all()
    _same_bits(got, tr.jit(lambda v: tnp.sort(v, axis=axis), backend="interpreter")(x))


@pytest.mark.parametrize("sort", ["tnp", "ops"])
def test_sorts_of_many_rows_repair_the_rows_of_every_chunk(sort):
    """Contiguous float rows go through NumPy's sort in L2-sized chunks, only the rows
    with a zero or a NaN repaired: special values in the first, a middle and the last
    row of a 5 MB array match the interpreter bit for bit."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((10_000, 130)).astype(np.float32)
    special = _special_values("float32")
    for row in (0, 4_321, 9_999):
        x[row, rng.integers(0, 130, 12)] = rng.choice(special, 12)
    fn = {"tnp": tnp.sort, "ops": lambda v: ops.sort(v, dimension=1)}[sort]
    _same_bits(tr.jit(fn)(x), tr.jit(fn, backend="interpreter")(x))


def test_only_a_nan_key_select_that_nothing_else_reads_folds_into_its_sort():
    """tnp.sort's NaN-to-+NaN select joins the sort (no loop nest writes the keys, on
    NumPy's kernel and on the radix one of C libraries); a select also returned, or
    filling another NaN, stays and is sorted by the total order."""
    x = np.zeros((4, 300), np.float32)
    sort_source = tr.jit(tnp.sort).lower(x).compile().source
    assert "numpy_sort_rows(operand3_1, sorted3_1, bool(True))" in sort_source
    assert "!=" not in sort_source
    c_source = generate(lower(tr.jit(tnp.sort).lower(x).optimize()), parallel_ok=False,
                        objmode_ok=False).source
    assert "canonical_nans(" in c_source and "!=" not in c_source

    def keys(v, fill=np.float32(np.nan)):
        k = ops.select(ops.ne(v, v), ops.broadcast_in_dim(fill, v.shape, ()), v)
        return ops.sort(k, dimension=1), k
    negative_nan = np.array(0xFFC00000, np.uint32).view(np.float32)
    for fn in (keys, lambda v: keys(v, negative_nan)[0]):
        graph = tr.jit(fn).lower(x).optimize()
        assert fold_nan_keys_into_sorts(graph) is graph
    y = _special_values("float32")[np.arange(600) % 8].reshape(2, 300)
    for fn in (keys, lambda v: keys(v, negative_nan)[0]):
        for got, want in zip(tr.jit(fn)(y), tr.jit(fn, backend="interpreter")(y), strict=True):
            _same_bits(got, want)


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


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
def test_16_bit_keys_take_numpys_sort_where_it_is_simd(dtype):
    """16-bit integer rows from MIN_LENGTH on go to NumPy's sort where it runs
    x86-simd-sort's 16-bit kernels (`ITEMSIZES`), else to the radix kernels: either way
    np.sort's values, along rows, strided columns, and rows of few values (counted)."""
    rng = np.random.default_rng(6)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (40, 300), dtype=dtype, endpoint=True)
    source = tr.jit(tnp.sort).lower(x).compile().source
    assert ("numpy_sort_rows(" in source) == (2 in ITEMSIZES)
    for axis in (1, 0):
        np.testing.assert_array_equal(tr.jit(lambda v: tnp.sort(v, axis=axis))(x),
                                      np.sort(x, axis=axis))
    few = (x % 50).astype(dtype)
    np.testing.assert_array_equal(tr.jit(tnp.sort)(few), np.sort(few))
