"""NumPy's sort called from compiled code (`cpu/lib/sort_numpy_abi.py`) and the threaded
sorts built on it (`sort_numpy`'s `_parallel` kernels, `sort_merge`): against `np.sort`
and the total order `ops.sort` defines (NaNs with the sign bit first, NaNs by bits,
-0.0 before +0.0), for 32- and 64-bit floats and ints, rank 1 and 2, sizes around the
merge's split points and the parallel threshold, on one thread and two; and a new
process running the kernels from the disk cache."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu.generate import generate
from tracer.backend.cpu.lib.sort_merge import sort_vector_parallel
from tracer.backend.cpu.lib.sort_numpy import (VECTOR_PARALLEL_MIN_BYTES,
                                               numpy_sort_rows_parallel,
                                               numpy_sort_vector_parallel)
from tracer.backend.cpu.lib.sort_numpy_abi import simd_sort
from tracer.backend.numba.lower import lower
from tracer.ops.sort import total_order_key

REPO = str(pathlib.Path(__file__).resolve().parents[3])
DTYPES = ["float32", "float64", "int32", "int64"]
THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})


def _parallel_min(dtype: str) -> int:
    """The shortest row numpy_sort_vector_parallel sorts in parts."""
    return -(-VECTOR_PARALLEL_MIN_BYTES // np.dtype(dtype).itemsize)


def _values(rng, dtype: str, n: int, kind: str) -> np.ndarray:
    """n values: few distinct ones with zeros of both signs and NaNs of both signs and
    several payloads (floats), all equal, all NaN, or spread over the dtype's range."""
    if kind == "equal":
        return np.full(n, 3, dtype)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    width, mant = 8 * bits.itemsize, np.finfo(dtype).nmant
    exponent, sign = (1 << (width - 1)) - (1 << mant), 1 << (width - 1)
    nans = np.array([exponent | 1 << (mant - 1), exponent | 7, sign | exponent | 1 << (mant - 1),
                     sign | exponent | 5], bits).view(dtype)
    if kind == "nan":
        return rng.choice(nans, n)
    x = rng.integers(-4, 5, n) if kind == "few" else rng.standard_normal(n)
    x = x.astype(dtype)
    special = rng.random(n) < 0.1
    x[special] = rng.choice(np.concatenate([nans, np.array([0.0, -0.0, np.inf, -np.inf], dtype)]),
                            int(special.sum()))
    return x


def _total_order(x: np.ndarray, axis: int) -> np.ndarray:
    order = np.argsort(total_order_key(x), axis=axis, kind="stable")
    return np.take_along_axis(x, order, axis)


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    bits = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(bits),
                                  np.ascontiguousarray(want).view(bits))


@njit
def _simd_sorted(x):
    out = x.copy()
    simd_sort(out)
    return out


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint16"])
def test_simd_sort_is_numpys_sort(dtype):
    """The function read from NumPy's C-API table sorts as `np.sort` does (NaNs last)."""
    x = np.random.default_rng(1).standard_normal(5000).astype(np.float64) * 1000
    x = x.astype(dtype)
    if dtype == "float32":
        x[::7] = np.nan
    np.testing.assert_array_equal(_simd_sorted(x), np.sort(x))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from([0, 1, 2, 3, 5, 8, 63, 64, 101, 1000]),
       st.integers(1, 5), st.sampled_from(["few", "spread", "equal", "nan"]),
       st.integers(0, 2 ** 32 - 1))
def test_parts_sorted_and_merged_match_numpy(dtype, n, parts, kind, seed):
    """sort_vector_parallel in 1-5 parts (odd sizes, empty and one-value parts, runs
    without a partner): np.sort's values, and whether a zero or a NaN was met."""
    x = _values(np.random.default_rng(seed), dtype, n, kind)
    out = np.empty_like(x)
    special = sort_vector_parallel(x, out, parts)
    np.testing.assert_array_equal(out, np.sort(x))
    assert special == bool((~(np.abs(x) > 0)).any())


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from([-1, 0, 1, 4097]), st.sampled_from(THREADS),
       st.sampled_from(["few", "spread", "equal", "nan"]), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_long_row_is_the_total_order_on_each_thread_count(dtype, extra, threads, kind, nan_keys,
                                                         seed):
    """numpy_sort_vector_parallel around its threshold, on 1 and 2 threads: bit
    for bit the total order (with nan_keys, of x with every NaN made +NaN)."""
    x = _values(np.random.default_rng(seed), dtype, _parallel_min(dtype) + extra, kind)
    out = np.empty_like(x)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        numpy_sort_vector_parallel(x.reshape(1, -1, 1), out.reshape(1, -1, 1), nan_keys)
    finally:
        numba.set_num_threads(before)
    if nan_keys and x.dtype.kind == "f":  # (every NaN counts, and is written, as +NaN)
        x = np.where(np.isnan(x), np.array(np.nan, dtype), x)
    _same_bits(out, _total_order(x, 0))


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["float32", "int32"]),
       st.sampled_from([(5, 130, 1), (1, 150, 70), (3, 129, 9)]), st.sampled_from(THREADS),
       st.sampled_from(["few", "spread", "nan"]), st.integers(0, 2 ** 32 - 1))
def test_rows_and_strided_tiles_are_the_total_order(dtype, shape, threads, kind, seed):
    """numpy_sort_rows_parallel on contiguous rows and on strided ones (tiles of 64
    positions, a partial last one), on 1 and 2 threads. (One float and one int
    dtype: each compiles its own parallel kernel; the rank-1 tests take all four.)"""
    x = _values(np.random.default_rng(seed), dtype, int(np.prod(shape)), kind).reshape(shape)
    out = np.empty_like(x)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        numpy_sort_rows_parallel(x, out, False)
    finally:
        numba.set_num_threads(before)
    _same_bits(out, _total_order(x, 1))


def test_a_long_vector_takes_the_merging_kernel_where_threads_are_allowed():
    """One row of VECTOR_PARALLEL_MIN_BYTES or more: the parts-and-merge kernel in code
    that may use threads (not one value shorter); serial NumPy sort in code that may
    not."""
    n = _parallel_min("float32")
    assert "numpy_sort_vector_parallel(" not in \
        generate(lower(tr.jit(ops.sort).lower(np.zeros(n - 1, np.float32)).graph), True).source
    lowered = tr.jit(ops.sort).lower(np.zeros(n, np.float32))
    graph = lower(lowered.graph)
    assert "numpy_sort_vector_parallel(" in generate(graph, parallel_ok=True).source
    assert "numpy_sort_rows(" in generate(graph, parallel_ok=False).source
    x = _values(np.random.default_rng(2), "float32", n + 1, "few")
    _same_bits(tr.jit(lambda v: ops.sort(v, dimension=0))(x), _total_order(x, 0))
    np.testing.assert_array_equal(tr.jit(tnp.sort)(x), np.sort(x))


_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {repo!r})
    from tracer.backend.cpu.lib.sort_merge import sort_vector_parallel
    from tracer.backend.cpu.lib.sort_numpy import numpy_sort_vector_parallel as kernel

    step, x = sys.argv[1], np.load(sys.argv[2])
    out = np.empty_like(x)
    if step == "merge":
        sort_vector_parallel(x, out, 2)
    else:
        kernel(x.reshape(1, -1, 1), out.reshape(1, -1, 1), False)
    print(json.dumps(dict(misses=sum(kernel.stats.cache_misses.values()),
                          bits=out.view(np.uint32).tolist())))
""")


def test_a_new_process_runs_the_kernels_from_the_disk_cache(tmp_path):
    """NumPy's sort and numba's thread count are symbols registered at import, so
    machine code calling them loads from the disk cache in a fresh process and sorts
    correctly, even the long-row kernel compiled in a process that loaded its merge
    kernel from the cache (numba then records no need to start its threads when it
    loads the kernel: that crashed)."""
    x = _values(np.random.default_rng(4), "int32", _parallel_min("int32") + 9, "spread")
    np.save(tmp_path / "x.npy", x)
    script = tmp_path / "sort_script.py"
    script.write_text(_SCRIPT.format(repo=REPO))
    env = dict(os.environ, TRACER_CACHE_DIR=str(tmp_path / "cache"))
    results = []
    for step in ("merge", "compile", "load"):
        proc = subprocess.run([sys.executable, str(script), step, str(tmp_path / "x.npy")],
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    _, compiled, loaded = results
    assert compiled["misses"] == 1 and loaded["misses"] == 0
    assert loaded["bits"] == compiled["bits"] == _total_order(x, 0).view(np.uint32).tolist()
