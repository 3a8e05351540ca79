"""uint64 indices and coordinates past int64's range: traced ones follow the same
rules as any out-of-bounds index (gathers clamp, scatters drop, take's modes wrap or
clip in unsigned arithmetic), never wrap to negative values that count from the end;
jit and eager agree wherever NumPy gives an answer."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp

BIG = np.array([2**63 + 5, 3, 2**64 - 1], np.uint64)  # two past int64, one in bounds
X = np.arange(10.0)


def reads(x, i):
    return (x[i], x[i[0]], tnp.take(x, i, mode="wrap"), tnp.take(x, i, mode="clip"),
            tnp.take_along_axis(x, i, 0), x.at[i].set(-1.0), x.at[i[0]].add(100.0))


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
def test_traced_uint64_indices_clamp_wrap_and_drop(backend):
    got = tr.jit(reads, backend=backend)(X, BIG)
    clamped = X[np.minimum(BIG, 9).astype(np.int64)]
    want = (clamped, X[9], X[(BIG % 10).astype(np.int64)], clamped, clamped,
            np.where(np.arange(10) == 3, -1.0, X), X)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_eager_take_modes_match_numpy_for_uint64():
    # (NumPy's own take(mode="wrap") loops once per multiple of n: the oracle is np.mod)
    np.testing.assert_array_equal(tnp.take(X, BIG, mode="wrap"), X[BIG % 10])
    np.testing.assert_array_equal(tnp.take(X, BIG, mode="clip"), X[np.minimum(BIG, 9)])
    with pytest.raises(IndexError):
        tnp.take_along_axis(X, BIG, 0)


def test_traced_flat_index_conversions_clamp():
    f = tr.jit(lambda i, j, k: (tnp.unravel_index(i, (4, 5)),
                                tnp.ravel_multi_index((j, j), (4, 5), mode="wrap"),
                                tnp.ravel_multi_index((j, j), (4, 5), mode="clip"),
                                tnp.ravel_multi_index((k, k), (4, 5))),
               backend="interpreter")
    (rows, cols), wrap, clip, clamp = f(np.array([100, -1, -30, 7]), BIG, np.array([7, 1]))
    # JAX's rule for traced flat indices: clamp into [-size, size), wrap negatives
    np.testing.assert_array_equal(rows, [3, 3, 0, 1])
    np.testing.assert_array_equal(cols, [4, 4, 0, 2])
    np.testing.assert_array_equal(wrap, np.ravel_multi_index((BIG % 4, BIG % 5), (4, 5)))
    np.testing.assert_array_equal(clip, [19, 18, 19])
    np.testing.assert_array_equal(clamp, [3 * 5 + 4, 1 * 5 + 1])  # mode="raise": clamped
