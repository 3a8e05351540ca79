"""The cpu backend's LU and triangular solves on threads: LAPACK's getrf for large
matrices (`cpu.lib.lu.LAPACK_MIN`), batches split across numba's pool (the
`_parallel` kernels), and the BLAS threads a solver graph's host gets, all against the
NumPy references."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from tests.checks import random_array
import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tracer.backend.cpu import backend, blas
from tracer.backend.cpu.generate import generate
from tracer.backend.cpu.lib import lu, triangular
from tracer.backend.numba.lower import lower
from tracer.ops.decomp_impl import lu_impl

THREADS = min(2, numba.config.NUMBA_NUM_THREADS)  # (tracer's count is at most numba's)
TOL = {np.float32: 2e-3, np.float64: 1e-9, np.complex64: 2e-3, np.complex128: 1e-9}




def _lu(kernel, a: np.ndarray,  # noqa: ANN001
        transposed: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m, n = a.shape[1:]
    factor = np.full_like(a, np.nan)
    piv = np.full((a.shape[0], min(m, n)), -1, np.int32)
    perm = np.full((a.shape[0], n if transposed else m), -1, np.int32)
    kernel(a, factor, piv, perm, transposed)
    return factor, piv, perm


def _same_lu(got: tuple, a: np.ndarray, tol: float, transposed: bool = False) -> None:
    want = lu_impl(a, transposed)
    np.testing.assert_array_equal(got[1], want[1])  # LAPACK's pivots, the reference's
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_allclose(got[0], want[0], rtol=tol, atol=tol)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype, shape", [
    (np.float64, (2, 200, 200)), (np.float64, (1, 230, 196)), (np.float64, (1, 196, 230)),
    (np.complex64, (1, 200, 200)), (np.float64, (3, 30, 20))])
def test_lu_is_the_reference_lu(dtype, shape, transposed):
    """From `LAPACK_MIN` on the bound library's getrf factors (MKL's; the blocked LU
    elsewhere and below it): the same pivots and factors as the reference, square or
    not; `transposed`, the LU of aᵀ with its factor transposed (getrf on a as it lies)."""
    blas.bind_fastest()
    a = random_array(np.random.default_rng(sum(shape)), shape, dtype)
    _same_lu(_lu(lu.lu_batch, a, transposed), a, TOL[dtype] * 10, transposed)


@pytest.mark.parametrize("transposed", [False, True])
def test_non_finite_input_keeps_the_reference_pivots(transposed):
    """LAPACK's pivot search need not skip NaNs as the reference does: a matrix with an
    inf or NaN takes the blocked LU, whose pivots are the reference's."""
    blas.bind_fastest()
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, lu.LAPACK_MIN, lu.LAPACK_MIN))
    a[0, 7, 3], a[2, 0, 0] = np.nan, np.inf
    got = _lu(lu.lu_batch, a, transposed)
    want = lu_impl(a, transposed)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_allclose(got[0][1], want[0][1], rtol=1e-9, atol=1e-9)  # (finite one)


@pytest.mark.parametrize("batch", [1, 2, 7])
def test_batches_split_across_threads_match_the_serial_kernels(batch):
    """Runs of the batch per thread, tails of uneven size included, give what the
    serial kernels give (and a batch smaller than the pool)."""
    blas.bind_fastest()
    rng = np.random.default_rng(batch)
    a = rng.standard_normal((batch, 40, 40))
    for transposed in (False, True):
        _same_lu(_lu(lu.lu_batch_parallel, a, transposed), a, 1e-9, transposed)
    b = rng.standard_normal((batch, 40, 3))
    for flags in ((True, True, False, False, True), (False, False, True, False, False)):
        rhs = b if flags[0] else np.ascontiguousarray(b.transpose(0, 2, 1))
        got, want = np.full_like(rhs, np.nan), np.full_like(rhs, np.nan)
        triangular.triangular_solve_batch_parallel(a, rhs, got, *flags)
        triangular.triangular_solve_batch(a, rhs, want, *flags)
        np.testing.assert_array_equal(got, want)


def test_batched_solves_match_numpy_and_singular_ones_give_inf_or_nan():
    """`solve` of a batch (its module calls the `_parallel` kernels where it may use
    threads): NumPy's answer for the regular matrices; a singular one in the batch
    gives inf / NaN in its own solution only, as the interpreter does (a compiled
    function cannot raise)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 24, 24)) + 4 * np.eye(24)
    b = rng.standard_normal((64, 24, 2))
    a[5, :, 3] = 0.0
    graph = lower(tr.jit(tnp.linalg.solve).lower(a, b).graph)
    source = generate(graph, parallel_ok=True).source
    assert "lu_batch_parallel(" in source and "triangular_solve_batch_parallel(" in source
    assert "_parallel(" not in generate(graph, parallel_ok=False).source
    with tr.config.override(num_threads=THREADS):
        f = tr.jit(tnp.linalg.solve)
        f(a, b)
        f.wait_compiled()
        got = f(a, b)
    regular = np.arange(64) != 5
    np.testing.assert_allclose(got[regular], np.linalg.solve(a[regular], b[regular]),
                               rtol=1e-9, atol=1e-9)
    assert not np.isfinite(got[5]).all()
    want = tr.jit(tnp.linalg.solve, backend="interpreter")(a, b)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))


def _host_threads(fn, *args: np.ndarray) -> int:  # noqa: ANN001
    graph = tr.jit(fn).lower(*args).graph
    return backend._blas_threads(backend.NumbaCpuBackend().prepare(graph))


@pytest.mark.parametrize("threads", sorted({1, THREADS}))
def test_solver_hosts_get_blas_threads_by_their_flops_and_config(threads):
    """A graph's LU or triangular solve above SOLVER_PARALLEL_MIN_FLOPS gets tracer's
    thread count (config.num_threads), a smaller one a single BLAS thread, a graph
    without BLAS calls none set."""
    big, small = np.ones((1, 400, 400)), np.ones((8, 32, 32))
    tri = lambda a, b: ops.triangular_solve(a, b, left_side=True, lower=True)  # noqa: E731
    with tr.config.override(num_threads=threads):
        assert _host_threads(ops.lu, big) == threads
        assert _host_threads(ops.lu, small) == 1
        assert _host_threads(tri, big, np.ones((1, 400, 400))) == threads
        assert _host_threads(tri, big, np.ones((1, 400, 1))) == 1
        assert _host_threads(lambda x: x + 1.0, big) == 0


def test_solver_flops_count_one_matrix():
    """2/3 n^3 for a square LU (LAPACK's count for an m x n one), n^2 per right-hand
    side for a triangular solve: one matrix of the batch."""
    lu_flops = blas.solver_flops(tr.jit(ops.lu).lower(np.ones((5, 300, 200))).graph)
    assert lu_flops == pytest.approx(2 * (300 * 200 * 200 - 500 * 200 ** 2 / 2 + 200 ** 3 / 3))
    assert blas.solver_flops(tr.jit(ops.lu).lower(np.ones((90, 90))).graph) == \
        pytest.approx(2 * 90 ** 3 / 3)
    graph = tr.jit(lambda a, b: ops.triangular_solve(a, b, left_side=False)).lower(
        np.ones((3, 50, 50)), np.ones((3, 7, 50))).graph
    assert blas.solver_flops(graph) == 50 * 50 * 7
