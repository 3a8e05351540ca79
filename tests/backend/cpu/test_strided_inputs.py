"""Non-contiguous inputs on the cpu backend: read in place where the kernel only
indexes them (no copy: checked by the memory a call allocates), copied where a
library kernel needs contiguous memory or a float sum folds them; results equal
NumPy's for every kind of view; the strided version costs one extra compile per module
at most, and read-only inputs none."""

from __future__ import annotations

import tracemalloc

import numba
import numba.core.event as ev
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tests.backend.cpu import test_backend as table
from tracer.backend.cpu import strided


@pytest.fixture
def in_place_at_once(monkeypatch):
    """The strided version compiled for the first strided call (not after 64 MiB of
    copies), so small views take the in-place path."""
    monkeypatch.setattr(strided, "IN_PLACE_MIN_BYTES", 0)


def _executable(jitted, *args):
    """The executable the jitted function runs for these arguments (its cache entry)."""
    jitted(*args)
    entry, = jitted._cache.values()
    compiled = entry.compiled
    return compiled.executable


def _peak_bytes(fn, *args) -> int:
    """The most memory allocated at once (NumPy buffers included) while fn(*args) runs."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("view", [lambda x: x[::2], lambda x: x[::-3],
                                  lambda x: np.broadcast_to(x[:1], (1 << 21,))])
def test_an_element_wise_read_of_a_strided_view_allocates_no_copy(in_place_at_once, view):
    """An 8 MiB strided, reversed or broadcast view through a max: the call allocates
    far less than the view (the launcher used to copy it first)."""
    x = view(np.arange(1 << 22, dtype=np.float32) % 1000 - 500)
    f = tr.jit(lambda x: tnp.max(tnp.abs(x) * 2))
    f(x)  # compiles
    assert _peak_bytes(f, x) < x.nbytes // 8
    assert f(x) == np.max(np.abs(x) * 2)


def test_inputs_the_kernel_hands_to_blas_are_copied_transposed_ones_read_in_place(
        in_place_at_once):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((12, 8))[::2]
    x = rng.standard_normal((5, 6))
    exe = _executable(tr.jit(lambda w, x: x @ w), w, x)
    assert (exe.strided.copies, exe.strided.in_place) == (1, 0)  # BLAS reads w
    np.testing.assert_allclose(exe(w, x)[0], x @ w)
    y = rng.standard_normal((64, 32))
    exe = _executable(tr.jit(lambda y: y * 3), y.T)
    assert (exe.strided.copies, exe.strided.in_place) == (0, 1)  # a transpose: in place
    np.testing.assert_array_equal(exe(y.T[::-1])[0], y.T[::-1] * 3)
    rows = rng.standard_normal((64, 128))[::-2, ::2]  # (the executable's shape, 32x64)
    np.testing.assert_array_equal(exe(rows)[0], rows * 3)
    assert (exe.strided.copies, exe.strided.in_place) == (0, 3)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba runs one thread")
def test_a_parallel_nest_reads_its_strided_input_in_place(in_place_at_once):
    x = np.random.default_rng(2).standard_normal((600, 800)).astype(np.float32)[::-2]
    with tr.config.override(num_threads=2):
        f = tr.jit(lambda x: tnp.sin(x) * 2)
        exe = _executable(f, x)
        assert "numba.prange" in exe.source
        assert (exe.strided.copies, exe.strided.in_place) == (0, 1)
        np.testing.assert_allclose(f(x), np.sin(x) * 2, rtol=1e-6)


def test_unaligned_inputs_are_copied(in_place_at_once):
    raw = np.zeros(8 * 60 + 1, np.uint8)
    x = np.frombuffer(raw.data, np.float64, count=60, offset=1).reshape(6, 10)
    x[...] = np.arange(60.0).reshape(6, 10) if x.flags.writeable else 0
    exe = _executable(tr.jit(lambda x: x * 2), x[::-2])
    assert (exe.strided.copies, exe.strided.in_place) == (1, 0)
    np.testing.assert_array_equal(exe(x[::-2])[0], x[::-2] * 2)


def test_small_views_are_copied_until_the_copies_pay_for_the_strided_compile(monkeypatch):
    x = np.arange(4000, dtype=np.float64)[::2]
    monkeypatch.setattr(strided, "IN_PLACE_MIN_BYTES", 3 * x.nbytes)
    exe = _executable(tr.jit(lambda x: x - 1), x)
    exe(x)
    assert (exe.strided.copies, exe.strided.in_place) == (2, 0)
    exe(x)  # the third copy would reach the threshold: compiled and read in place
    exe(x[::-1])
    assert (exe.strided.copies, exe.strided.in_place) == (2, 2)
    np.testing.assert_array_equal(exe(x[::-1])[0], x[::-1] - 1)


def test_async_mode_compiles_the_strided_version_in_the_background(monkeypatch):
    """Calls go on copying while it compiles; a view as large as the threshold by itself
    waits for it (its copy may not fit in memory)."""
    x = np.arange(3000, dtype=np.int64)[::3]
    monkeypatch.setattr(strided, "IN_PLACE_MIN_BYTES", 2 * x.nbytes)
    exe = _executable(tr.jit(lambda x: x * 5), x.copy())  # (compiled in sync mode)
    row = np.broadcast_to(np.arange(5.0)[::2], (1000, 3))
    large = _executable(tr.jit(lambda x: x - 5), row.copy())
    with tr.config.override(compile_mode="async"):
        exe(x)
        exe(x)  # the copies reach the threshold: the compile starts (copied, unless done)
        copies = exe.strided.copies
        assert copies >= 1 and copies + exe.strided.in_place == 2
        exe.strided._thread.join()
        np.testing.assert_array_equal(exe(x[::-1])[0], x[::-1] * 5)
        assert exe.strided.copies == copies and exe.strided.in_place == 3 - copies
        np.testing.assert_array_equal(large(row)[0], row - 5)
        assert (large.strided.copies, large.strided.in_place) == (0, 1)


def _numba_compiles(fn) -> int:
    with ev.install_recorder("numba:compile") as rec:
        fn()
    return sum(e.is_start for _, e in rec.buffer)


def test_the_strided_version_costs_one_compile_and_read_only_inputs_none(in_place_at_once,
                                                                       tmp_path):
    rng = np.random.default_rng(1)
    f = tr.jit(lambda x, y: tnp.sin(x) * y + 1)
    x, y = rng.standard_normal((7, 9)), rng.standard_normal((7, 9))
    with tr.config.override(cache_dir=str(tmp_path)):  # (nothing on disk yet)
        _check_compile_counts(f, x, y, rng)


def _check_compile_counts(f, x, y, rng):
    assert _numba_compiles(lambda: f(x, y)) == 1
    frozen = x.copy()
    frozen.flags.writeable = False
    assert _numba_compiles(lambda: f(frozen, y)) == 0  # (numba's dispatcher compiled again)
    assert _numba_compiles(lambda: f(x[:, ::-1], y)) == 1
    big = rng.standard_normal((30, 40))
    assert _numba_compiles(lambda: (f(big[::3, ::2], big[:10, :20]), f(x, y[::-1]),
                                    f(np.broadcast_to(x[:1], (7, 9)), frozen))) == 0
    np.testing.assert_allclose(f(x, y[::-1]), np.sin(x) * y[::-1] + 1)


def _add_and_sum(x):
    return x + x, tnp.sum(x, axis=-1)


DTYPES = [np.float16, np.float32, np.float64, np.int32, np.bool_, np.complex64]


@st.composite
def views(draw):
    """An array of one of DTYPES and a view of it: steps (negative too), a transpose,
    a broadcast axis, zero-size axes."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))
    base = (np.arange(np.prod(shape)) % 7 - 3).reshape(shape).astype(dtype)
    index = tuple(slice(draw(st.sampled_from([None, 0, 1])), None,
                        draw(st.sampled_from([1, 2, 3, -1, -2]))) for _ in shape)
    view = base[index]
    if draw(st.booleans()):
        view = view.T
    if view.shape[-1] and draw(st.booleans()):
        view = np.broadcast_to(view[..., :1], (*view.shape[:-1], draw(st.integers(0, 4))))
    return view


add_and_sum = tr.jit(_add_and_sum)


@settings(max_examples=60)
@given(views())
def test_results_equal_numpy_for_any_view(view):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(strided, "IN_PLACE_MIN_BYTES", 0)
        doubled, summed = add_and_sum(view)
    np.testing.assert_array_equal(doubled, view + view)
    rtol = 1e-2 if view.dtype == np.float16 else 1e-6  # (NumPy sums float16 in float16)
    np.testing.assert_allclose(summed, np.sum(view, axis=-1), rtol=rtol)
    assert doubled.dtype == (view + view).dtype
    for got, want in zip((doubled, summed), add_and_sum(np.ascontiguousarray(view)),
                         strict=True):  # the same bits as for a contiguous copy
        assert got.tobytes() == want.tobytes()


def test_a_float_sum_reads_a_copy_so_its_rounding_does_not_depend_on_the_layout(
        in_place_at_once):
    """A float sum vectorizes (partial sums) only over contiguous reads; a strided fold
    is sequential and rounds differently, so its input is copied; an integer sum, exact
    in any order, reads in place."""
    x = (np.arange(1 << 22, dtype=np.float32) % 100)[::2]
    f = tr.jit(lambda x: tnp.sum(x * 2))
    exe = _executable(f, x)
    assert (exe.strided.copies, exe.strided.in_place) == (1, 0)
    assert f(x) == f(x.copy())
    exe = _executable(tr.jit(lambda x: tnp.sum(x * 2)), x.astype(np.int32)[::-1])
    assert (exe.strided.copies, exe.strided.in_place) == (0, 1)


def test_elementwise_inputs_are_found_from_the_source():
    source = (
        "def host(a, b, c, d, e, f, g, out, dims):\n"
        "    x = a[i, j + 1]\n"           # element reads: in place
        "    y = b[i]\n"                  # a row of a rank-2 input: a view, copied
        "    z = np.dot(c, c)\n"          # a library call: copied
        "    w = d[0:2, 1]\n"             # a slice: copied
        "    out[i, j] = e[i, j] + e[j, i]\n"
        "    for k in range(n):\n"        # a float sum's fold: copied
        "        f_v = f[i, k]\n"
        "        acc = add_reassoc(acc, f_v)\n"
        "        for m in range(n):\n"    # a loop inside the fold's: in place
        "            out[k, m] = g[k, m]\n")
    found = strided.elementwise_inputs(source, "host", tuple((c, 2) for c in "abcdefg"))
    assert found == {"a", "e", "g"}
    kernels = (
        "def nest(out, n, x, y):\n"
        "    for i in numba.prange(n):\n"
        "        out[i, 0] = x[i, 0] + y[i]\n"
        "def host(a, b, out, dims):\n"
        "    nest(out, dims[0], a, b)\n"
        "    nest(out, dims[0], b, a)\n")
    assert strided.elementwise_inputs(kernels, "host", (("a", 2), ("b", 2))) == set()
    assert strided.elementwise_inputs(kernels, "nest", (("x", 2), ("y", 2))) == {"x"}
    assert strided.elementwise_inputs(kernels.replace("nest(out, dims[0], b, a)", ""),
                                      "host", (("a", 2), ("b", 2))) == {"a"}


def _strided_copy(a: np.ndarray) -> np.ndarray:
    """`a`'s values in a view with stride -2 along its last axis."""
    if a.ndim == 0 or a.size == 0:
        return a
    view = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)[..., ::-2]
    view[...] = a
    return view


# Two op-table batches (element-wise ops; indexing and scatter, whose operands are copied
# and whose indices are read in place); `python -m bench.strided_op_table` runs all.
@pytest.mark.parametrize("batch", [0, 12])
def test_op_table_cases_give_the_same_bits_for_strided_inputs(in_place_at_once, batch):
    fn, args = table._batched(table.BATCHES[batch])
    exe = table.CPU.compile(table._trace(fn, args))
    inputs = table._inputs(args)
    with np.errstate(all="ignore"):
        want, got = exe(*inputs), exe(*map(_strided_copy, inputs))
    assert exe.strided.in_place > 0
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
