"""The cpu backend's BLAS (`cpu.lib.cblas`): every provider computes what NumPy does,
the fastest present is bound, machine code cached under one provider runs under
another, and solves through it match `np.linalg.solve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracer as tr
import tracer.numpy as tnp
from tracer.ops.decomp_impl import triangular_solve_impl

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _mkl_installed() -> bool:
    from tracer.backend.cpu.lib import mkl
    return mkl.library_path() is not None


def _run(code: str, **env: str) -> str:
    """`code` in a fresh Python process (a binding is per process: code linked earlier
    keeps the library it was linked with); its stdout."""
    environment = dict(os.environ, PYTHONPATH=REPO, **env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# Every kernel under one provider, against NumPy: products of operands in every layout
# (C, Fortran, strided rows, transposed views; empty and single rows, columns and
# contractions; an output with strided rows), the in-place update c -= a @ b, and the
# triangular solves on each side, triangle, transpose and diagonal.
_PROVIDER_CHECK = """
    import itertools, sys
    import numpy as np
    from llvmlite import binding
    from numba import njit
    from tracer.backend.cpu.lib import cblas, gemm_update, mkl

    @njit
    def trsm(*args):  # (cblas.trsm is an overload: compiled callers only)
        cblas.trsm(*args)

    @njit
    def getrf(at, ipiv):
        return cblas.getrf(at, ipiv)

    name = sys.argv[1] if len(sys.argv) > 1 else "{name}"
    if name == "mkl":
        cblas.bind(cblas.mkl_provider(lambda f: binding.address_of_symbol(mkl.symbol(f))))
    elif name == "scipy-blas":
        cblas.bind(cblas._scipy_blas())
    else:
        cblas.bind(cblas._numpy_openblas())
    rng = np.random.default_rng(0)

    def draw(shape, dtype):
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)

    def layouts(x):  # (every layout in one dtype: numba compiles each combination)
        if x.dtype != np.float64:
            return (x,)
        wide = np.zeros((x.shape[0], x.shape[1] + 3), x.dtype)
        wide[:, :x.shape[1]] = x
        return (x, np.asfortranarray(x), wide[:, :x.shape[1]])

    for dtype in ({dtypes}):
        tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
        for m, n, k in ((5, 7, 3), (1, 6, 4), (6, 1, 4), (4, 6, 1), (0, 3, 2), (3, 2, 0),
                        (40, 33, 70)):
            a, b = draw((m, k), dtype), draw((k, n), dtype)
            for x, y in itertools.product(layouts(a), layouts(b)):
                out = np.full((m, n), np.nan, dtype)
                cblas.blas_matmul(x, y, out)
                np.testing.assert_allclose(out, a @ b, rtol=tol, atol=tol * (k + 1))
            if dtype == np.float64:
                strided = np.full((m, 2 * n), np.nan, dtype)
                cblas.blas_matmul(a, b, strided[:, ::2])
                np.testing.assert_allclose(strided[:, ::2], a @ b, rtol=tol,
                                           atol=tol * (k + 1))
            c = draw((m, n), dtype)
            want = c - a @ b
            gemm_update.subtract_product(c, a, b)
            np.testing.assert_allclose(c, want, rtol=tol, atol=tol * (k + 1))
        t = np.tril(draw((9, 9), dtype)) + 9 * np.eye(9, dtype=dtype)
        for left, lower, trans, unit in itertools.product(
                (True, False), (True, False), (cblas.NO_TRANS, cblas.TRANS, 113),
                (True, False)):
            tri = (np.tril(t) if lower else np.triu(t.T)).astype(dtype)
            full = tri - np.diag(np.diag(tri)) + np.eye(9) if unit else tri
            op = {{cblas.NO_TRANS: full, cblas.TRANS: full.T, 113: full.conj().T}}[trans]
            b = draw((9, 4) if left else (4, 9), dtype)
            x = b.copy()
            junk = 7 * (np.triu(np.ones((9, 9)), 1) if lower else np.tril(np.ones((9, 9)), -1))
            stored = (tri + junk).astype(dtype)  # (the other triangle: never read)
            trsm(left, lower, trans, unit, x.shape[0], x.shape[1], stored, 9, x, x.shape[1])
            want = np.linalg.solve(op, b) if left else np.linalg.solve(op.T, b.T).T
            np.testing.assert_allclose(x, want, rtol=tol * 10, atol=tol * 10)
        if name != "scipy-blas":  # (its getrf stands in: never called)
            # LAPACK's LU of a, stored as aᵀ: a[rows] = L U
            for m, n in ((9, 6), (6, 9), (7, 7)):
                a = draw((m, n), dtype)
                at = np.ascontiguousarray(a.T)
                ipiv = np.zeros(min(m, n), np.int64)
                assert getrf(at, ipiv) == 0
                lu = at.T
                rows = np.arange(m)
                for j, p in enumerate(ipiv - 1):
                    rows[[j, p]] = rows[[p, j]]
                lower = np.tril(lu, -1)[:, :min(m, n)] + np.eye(m, min(m, n))
                np.testing.assert_allclose(lower @ np.triu(lu)[:min(m, n)], a[rows],
                                           rtol=tol * 10, atol=tol * 10)
    print("ok", cblas.provider().name)
"""


@pytest.mark.parametrize("name", ["numpy-openblas", "scipy-blas", "mkl"])
def test_every_provider_computes_what_numpy_does(name):
    if name == "mkl" and not _mkl_installed():
        pytest.skip("MKL is not installed (the mkl extra)")
    dtypes = ", ".join(f"np.{np.dtype(d).name}" for d in DTYPES)
    out = _run(_PROVIDER_CHECK.format(name=name, dtypes=dtypes))
    assert out.split() == ["ok", name]


def test_the_fastest_blas_present_is_bound():
    from tracer.backend.cpu import blas
    try:
        with tr.config.override(use_mkl=False):
            assert blas.bind_fastest() == "numpy-openblas"
        assert blas.bind_fastest() == ("mkl" if _mkl_installed() else "numpy-openblas")
    finally:
        blas.bind_fastest()


def test_machine_code_cached_under_one_blas_runs_under_another(tmp_path):
    """Compiled code names tracer's symbols only: a module compiled where MKL is bound
    loads from the disk cache where NumPy's OpenBLAS is."""
    if not _mkl_installed():
        pytest.skip("MKL is not installed (the mkl extra): one provider only")
    code = """
        import numpy as np, tracer as tr
        from tracer.backend.cpu.backend import compile_count
        from tracer.backend.cpu.lib import cblas
        a = np.arange(12.0).reshape(3, 4); b = np.arange(20.0).reshape(4, 5)
        f = tr.jit(lambda a, b: a @ b + 1.0)
        np.testing.assert_array_equal(f(a, b), a @ b + 1.0)
        print(cblas.provider().name, compile_count())
    """
    cache = dict(TRACER_CACHE_DIR=str(tmp_path))
    compiled = _run(code, TRACER_USE_MKL="1", **cache).split()
    loaded = _run(code, TRACER_USE_MKL="0", **cache).split()
    assert [compiled[0], loaded[0]] == ["mkl", "numpy-openblas"]
    assert compiled[1] == "1" and loaded[1] == "0"  # (the second from disk)


_RESTORED = """
    import json, threading
    from numba import njit
    from tracer.backend.cpu import blas
    from tracer.backend.cpu.lib import cblas, fft_mkl
    import numpy as np
    assert blas.bind_fastest() == "mkl"
    _, get_threads = cblas.thread_functions()

    @njit
    def one_then_back():
        had = cblas.blas_threads(1)
        cblas.blas_threads(had)
        return had

    x = np.ones((4, 256), np.complex128)
    counts = []

    def run():  # (a new thread: no count of its own yet)
        counts.append(get_threads())
        counts.append(one_then_back())  # the count it had and got back: none (0)
        counts.append(get_threads())
        cblas.blas_threads(1)
        fft_mkl.fft_forward(x, np.empty_like(x), 1, 2)  # its plan's 2 threads, then back
        counts.append(get_threads())
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    print(json.dumps(counts))
"""


def test_blas_threads_put_back_the_count_a_thread_had_and_fft_keeps_the_callers():
    """A thread with no count of its own gets none back after `blas_threads(1)` (its
    BLAS uses the global 2 again, not 1 for the rest of its life), and an MKL FFT on a
    thread held at 1 leaves it at 1."""
    if not _mkl_installed():
        pytest.skip("MKL is not installed (the mkl extra)")
    assert json.loads(_run(_RESTORED, MKL_NUM_THREADS="2")) == [2, 0, 2, 1]


_FORKED = """
    import json, os, time
    import numpy as np
    from tracer.backend.cpu import blas
    from tracer.backend.cpu.lib import cblas
    assert blas.bind_fastest() == "mkl"
    a = np.random.default_rng(0).standard_normal((600, 600))
    out = np.empty_like(a)
    cblas.blas_matmul(a, a, out)  # on MKL's threads (its OpenMP pool now runs)
    pid = os.fork()
    if pid == 0:
        cblas.blas_matmul(a, a, out)
        os._exit(0 if np.allclose(out, a @ a) else 1)
    for _ in range(600):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        status = "hung"
    print(json.dumps(status))
"""


def test_a_child_forked_after_threaded_products_computes_them():
    """libgomp's pool (MKL's threads) does not survive a fork: the child runs one thread
    (without that it waits for the lost pool forever)."""
    if not _mkl_installed():
        pytest.skip("MKL is not installed (the mkl extra)")
    assert _run(_FORKED, MKL_NUM_THREADS="2").split() == ["0"]


def _products(a, b):
    product = tnp.swapaxes(a, -1, -2) @ b
    return product, product @ tnp.swapaxes(b, -1, -2)


_batched_products = tr.jit(_products)


@settings(max_examples=15)
@given(batch=st.integers(1, 3), m=st.integers(0, 40), n=st.integers(0, 40),
       k=st.integers(0, 40))
def test_batched_and_transposed_products_match_numpy(batch, m, n, k):
    """Transposed operands read in place by BLAS, per batch element, empty and single
    rows, columns and contractions included (one compile: sizes are run-time values)."""
    rng = np.random.default_rng(batch * 10**6 + m * 10**4 + n * 100 + k)
    a = rng.standard_normal((batch, k, m)).astype(np.float32)
    b = rng.standard_normal((batch, k, n)).astype(np.float32)
    want = a.transpose(0, 2, 1) @ b
    got, again = _batched_products(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * (k + 1))
    np.testing.assert_allclose(again, want @ b.transpose(0, 2, 1), rtol=1e-4,
                               atol=1e-4 * (k + 1) * (n + 1))


_solve = tr.jit(tnp.linalg.solve)


@settings(max_examples=10)
@given(n=st.integers(1, 130), k=st.integers(1, 80))
def test_solves_match_numpy(n, k):
    """Both sides of the blocked LU's panel width and of the triangular solves'
    `BLAS_MIN` (one compile: sizes are run-time values)."""
    rng = np.random.default_rng(n * 1000 + k)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, k))
    np.testing.assert_allclose(_solve(a, b), np.linalg.solve(a, b), rtol=1e-9, atol=1e-10)


def test_triangular_solves_of_every_kind_match_the_reference():
    """Orders past `BLAS_MIN` (the BLAS's trsm where it pays) on every side, triangle,
    transpose, conjugate and diagonal, against `triangular_solve`'s NumPy reference
    (complex: the conjugate flags count; real products and solves are checked above)."""
    dtype = np.complex128
    from tracer.backend.cpu import blas
    from tracer.backend.cpu.lib import triangular
    blas.bind_fastest()
    rng = np.random.default_rng(1)
    n = triangular.BLAS_MIN + 6
    a = rng.standard_normal((2, n, n)) + 2 * n * np.eye(n)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal((2, n, n))
    for left in (True, False):
        b = rng.standard_normal((2, n, 5) if left else (2, 5, n)).astype(dtype)
        for lower, transpose, conjugate, unit in np.ndindex(2, 2, 2, 2):
            flags = dict(left_side=left, lower=bool(lower), transpose_a=bool(transpose),
                         conjugate_a=bool(conjugate), unit_diagonal=bool(unit))
            out = np.empty_like(b)
            triangular.triangular_solve_batch(a, b, out, *flags.values())
            np.testing.assert_allclose(out, triangular_solve_impl(a, b, **flags),
                                       rtol=1e-10, atol=1e-12, err_msg=str(flags))
