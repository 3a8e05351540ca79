"""Column reductions on threads (cpu/nests.py: a nest reducing its outer dim with
monoids): each chunk of rows folds into its own partial result, the partials
combine in chunk order. Checked against the interpreter on shapes large enough for
the threaded path, with the path itself asserted from the generated source."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu import strided
from tests.checks import threaded

ROWS = max(8 * numba.config.NUMBA_NUM_THREADS, 5000)  # (threads need 8 rows each; a
# one-hot product runs as loops from 4096 rows on)


def _both(fn, *args):
    got = tr.jit(fn)(*args)
    want = tr.jit(fn, backend="interpreter")(*args)
    return got, want, tr.jit(fn).lower(*args).compile().source


def _close(got, want, dtype):
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        if np.dtype(dtype).kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:  # the summation order differs: a few ulps of the column's magnitude
            tol = 1e-4 if np.dtype(dtype).itemsize <= 4 else 1e-10
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * ROWS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex128])
def test_sum_prod_and_max_over_the_outer_dim_on_threads(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((ROWS, 24)) * 3).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(a.shape)

    def f(a):
        x = tnp.sin(a) if a.dtype.kind in "fc" else a * a // 3
        y = tnp.cos(a / 100) if a.dtype.kind in "fc" else a % 3 - 1
        out = [tnp.sum(x, 0), tnp.prod(y, 0)]
        if a.dtype.kind != "c":
            out.append(ops.reduce(x, np.array(-np.inf if a.dtype.kind == "f" else
                                              np.iinfo(a.dtype).min, a.dtype), ops.max, (0,)))
        return out
    got, want, source = _both(f, a)
    _close(got, want, dtype)
    assert ("_parts" in source) == ("prange" in source) == threaded()


def test_the_init_value_counts_once_and_minus_zero_survives():
    a = np.random.default_rng(2).standard_normal((ROWS, 16))
    got, want, source = _both(lambda a: (ops.reduce(tnp.exp(a), np.float64(5.0), ops.add, (0,)),
                                         ops.reduce(tnp.exp(a), np.float64(9.0), ops.max, (0,))), a)
    assert ("_parts" in source) == threaded()
    _close(got, want, np.float64)
    z = -np.zeros((ROWS, 16))
    got, _, source = _both(lambda z: ops.reduce(tnp.sin(z), np.float64(-0.0), ops.add, (0,)), z)
    assert ("_parts" in source) == threaded() and np.all(np.signbit(got))


def test_a_one_hot_product_and_a_middle_dim_sum():
    rng = np.random.default_rng(3)
    x, labels = rng.standard_normal((ROWS, 16)), rng.integers(0, 32, ROWS)

    def sums(x, labels):
        onehot = (labels[:, None] == tnp.arange(32)[None, :]).astype(x.dtype)
        return onehot.T @ x, tnp.sum(onehot, axis=0)
    got, want, source = _both(sums, x, labels)
    _close(got, want, np.float64)
    np.testing.assert_array_equal(got[1], np.bincount(labels, minlength=32))
    assert ("_parts" in source) == threaded()
    b = rng.standard_normal((5, ROWS // 5, 9))
    got, want, source = _both(lambda b: tnp.sum(tnp.exp(b), (0, 2)), b)
    _close([got], [want], np.float64)


def test_few_rows_or_cheap_bodies_stay_serial():
    a = np.random.default_rng(4).standard_normal((3, 20000))
    got, want, source = _both(lambda a: tnp.sum(tnp.exp(a), 0), a)
    _close([got], [want], np.float64)
    assert "_parts" not in source
    b = np.random.default_rng(5).standard_normal((ROWS, 16))
    assert "_parts" not in _both(lambda b: tnp.sum(b, 0), b)[2]  # memory-bound: one thread


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_full_reductions_to_a_scalar_on_threads(dtype):
    """Every dim reduced: each chunk accumulates in scalars, the result is 0-d (this
    generated invalid source before: `out0[] = ...`)."""
    a = np.random.default_rng(6).standard_normal((ROWS, 64)).astype(dtype)

    def f(a):
        x = tnp.exp(a / 10) ** 2
        return tnp.sum(x), tnp.sum(x, axis=(0, 1), keepdims=True), tnp.sum(x + 1) * 2
    got, want, source = _both(f, a)
    _close(got, want, dtype)
    assert ("_parts" in source) == threaded() and got[0].shape == () and got[1].shape == (1, 1)


# ------------------------------------------------------------------ software prefetch
def _gelu(x, np_):
    return 0.5 * x * (1.0 + np_.tanh(np.float32(0.8) * (x + np.float32(0.044715) * x ** 3)))


def test_nests_streaming_from_memory_prefetch_and_still_match_numpy(monkeypatch):
    """Nests over more bytes than the caches (4 MiB and up) run their innermost loop in
    chunks that prefetch ahead: out of place, into a donated input, row reductions
    (logsumexp: rows on threads where there are cores) and a strided view read in place
    all match NumPy, across chunk ends (a row length that is not a multiple of the
    chunk)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    rows = rng.standard_normal((1000, 1100)).astype(np.float32)
    want = _gelu(x, np)
    with tr.config.override(num_threads=1):  # the serial loop (test_donation: threaded)
        fresh = tr.jit(lambda v: _gelu(v, tnp))
        assert "prefetch_ahead(arg0" in fresh.lower(x).compile().source
        np.testing.assert_allclose(fresh(x), want, rtol=2e-6, atol=1e-6)
        donated = tr.jit(lambda v: _gelu(v, tnp), donate_argnums=0)
        y = x.copy()
        out = donated(y)
        assert out is y
        np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-6)
        monkeypatch.setattr(strided, "IN_PLACE_MIN_BYTES", 0)  # the 'A' version at once
        view = np.repeat(x, 2)[::2]
        np.testing.assert_allclose(fresh(view), want, rtol=2e-6, atol=1e-6)
    entry, = fresh._cache.values()
    compiled = entry.compiled
    assert compiled.executable.strided.in_place == 1  # the view was read in place
    lse = tr.jit(lambda r: tnp.log(tnp.sum(tnp.exp(r - r.max(1, keepdims=True)), 1))
                 + r.max(1))
    assert "prefetch_ahead(arg0" in lse.lower(rows).compile().source
    m = rows.max(1, keepdims=True)
    np.testing.assert_allclose(lse(rows), np.log(np.exp(rows - m).sum(1)) + m[:, 0],
                               rtol=1e-5)


def _softmax(x, np_):
    e = np_.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("shape", [(1000, 1100), (4, 250, 1100)])
def test_later_passes_of_a_row_group_prefetch_the_next_row(shape):
    """A row group's later passes read a row the first pass brought into cache, so they
    prefetch the same columns of the next row (of every row dim, the innermost one):
    softmax and logsumexp still match NumPy, with NaN, inf and -inf rows, the last row
    (its prefetch points past the array: never a fault) and a row length that is not a
    multiple of the chunk."""
    rows = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    flat = rows.reshape(-1, shape[-1])
    flat[3, 7], flat[5, :] = np.nan, -np.inf
    flat[8, 11], flat[-1, 2] = np.inf, np.inf
    outer = ", ".join(f"i{d}" for d in range(len(shape) - 2))
    ahead = f"prefetch_chunk(arg0, ({outer + ', ' if outer else ''}i{len(shape) - 2} + 1, "
    lse = lambda r, np_: np_.log(np_.exp(r - r.max(-1, keepdims=True)).sum(-1)) \
        + r.max(-1)  # noqa: E731
    with np.errstate(invalid="ignore"), tr.config.override(num_threads=1):
        for program in (_softmax, lse):
            f = tr.jit(lambda r, program=program: program(r, tnp))
            assert ahead in f.lower(rows).compile().source
            np.testing.assert_allclose(f(rows), program(rows.astype(np.float64), np),
                                       rtol=1e-5, atol=1e-7)


def test_small_nests_keep_one_plain_loop():
    """Under 4 MiB (the caches hold it), or short rows under 2 MiB: no prefetch."""
    small = tr.jit(lambda v: _gelu(v, tnp)).lower(np.ones(1 << 16, np.float32)).compile()
    short = tr.jit(lambda v: tnp.exp(v).sum(1)).lower(np.ones((1 << 12, 64), np.float32))
    assert "prefetch" not in small.source and "prefetch" not in short.compile().source


@pytest.mark.parametrize("shape, dtype", [((10_000, 64), np.float32), ((3, 4000, 33), np.float64),
                                          ((1 << 15, 17), np.float32)])
def test_reductions_over_short_rows_prefetch_rows_ahead_and_match_numpy(shape, dtype):
    """Rows shorter than a chunk, from 2 MiB of operand on: each row's loop first asks
    for the lines of a row some rows on (past the last row near the end: never a
    fault); a vmap'd cosine and a sum of squares still match NumPy, threaded or not."""
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    cos = tr.jit(lambda u, v: (u * v).sum(-1) / tnp.sqrt((u * u).sum(-1) * (v * v).sum(-1)))
    source = cos.lower(a, b).compile().source
    outer = ", ".join(f"i{d}" for d in range(len(shape) - 1))
    assert f"prefetch_rows_ahead(arg0, ({outer}, 0), n" in source
    assert f"prefetch_rows_ahead(arg1, ({outer}, 0), n" in source
    want = (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(cos(a, b), want, rtol=tol, atol=tol)
    with tr.config.override(num_threads=1):
        np.testing.assert_allclose(cos(a, b), want, rtol=tol, atol=tol)


def test_a_strided_view_of_short_rows_is_read_in_place_with_its_row_prefetch(monkeypatch):
    """The row prefetch follows the view's strides, so a view still goes to the
    module's strided version (read in place, not copied) and matches NumPy."""
    monkeypatch.setattr(strided, "IN_PLACE_MIN_BYTES", 0)
    wide = np.random.default_rng(8).standard_normal((10_000, 128)).astype(np.float32)
    view = wide[:, ::2]  # rows of 64, every other element
    f = tr.jit(lambda u: tnp.exp(u) * 2)  # (a reduction would be copied: see strided)
    assert "prefetch_rows_ahead(arg0, (i0, 0), n1)" in f.lower(wide[:, :64]).compile().source
    f(np.ascontiguousarray(view))
    np.testing.assert_allclose(f(view), np.exp(view) * 2, rtol=2e-6)
    entry, = f._cache.values()
    assert entry.compiled.executable.strided.in_place == 1
