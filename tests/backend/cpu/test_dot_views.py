"""`dot_general` on the cpu backend: BLAS on the operands themselves where they are
the (rows, cols) matrices BLAS reads, on 2-D or 3-D views where not; every grouping of
free, contracting and batch dims gives NumPy's `einsum` result and the interpreter's."""

from __future__ import annotations

import numpy as np
import pytest

import tracer as tr
from tracer import ops

# (lhs shape, rhs shape, ((lhs contracting, rhs contracting), (lhs batch, rhs batch)))
CASES = {
    "matrix product": ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    "lhs stored transposed": ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),
    "rhs stored transposed": ((3, 4), (5, 4), (((1,), (1,)), ((), ()))),
    "two free rhs dims": ((2, 3), (2, 3, 4, 5), (((0, 1), (0, 1)), ((), ()))),
    "two free lhs dims": ((4, 5, 2, 3), (2, 3), (((2, 3), (0, 1)), ((), ()))),
    "two contracting dims to a scalar": ((2, 3), (2, 3), (((0, 1), (0, 1)), ((), ()))),
    "matrix times vector": ((3, 4), (4,), (((1,), (0,)), ((), ()))),
    "vector times matrix": ((4,), (4, 5), (((0,), (0,)), ((), ()))),
    "outer product": ((3,), (5,), (((), ()), ((), ()))),
    "batched": ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    "batched, rhs transposed": ((2, 3, 4), (2, 5, 4), (((2,), (2,)), ((0,), (0,)))),
}


def _einsum(lhs, rhs, dims):
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijkl")
    ls = [next(letters) for _ in lhs.shape]
    rs = [next(letters) for _ in rhs.shape]
    for a, b in (*zip(lc, rc), *zip(lb, rb)):
        rs[b] = ls[a]
    free_l = [ls[d] for d in range(lhs.ndim) if d not in lc + lb]
    free_r = [rs[d] for d in range(rhs.ndim) if d not in rc + rb]
    out = [ls[d] for d in lb] + free_l + free_r
    return np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", lhs, rhs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_dot_general_views_match_einsum_and_the_interpreter(case, dtype):
    lhs_shape, rhs_shape, dims = CASES[case]
    r = np.random.default_rng(0)
    lhs, rhs = r.random(lhs_shape).astype(dtype), r.random(rhs_shape).astype(dtype)
    fn = lambda a, b: ops.dot_general(a, b, dims)  # noqa: E731
    got = np.asarray(tr.jit(fn)(lhs, rhs))
    want = np.asarray(tr.jit(fn, backend="interpreter")(lhs, rhs))
    assert got.shape == want.shape and got.dtype == want.dtype == dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, _einsum(lhs, rhs, dims), rtol=rtol)
    np.testing.assert_allclose(got, want, rtol=rtol)
