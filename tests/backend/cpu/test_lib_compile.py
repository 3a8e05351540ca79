"""What keeps the cold compile of the cpu backend's numba libraries short.

- A convolution compiles only the plans it runs: the choosing entry point calls
  each plan's own C entry point through the table of `cpu/lib/conv_core.py`, resolved
  the first time a convolution takes the plan.
- solve's kernels compile one triangular solve for both of its flag sets, and no
  array assignment (whose shape-mismatch error path formats strings: 2.7 s cold).
- Generated code passes static flags as run-time bools (a literal `True` is a compile
  of the kernel of its own): one compile of a decomposition or convolution kernel
  serves every flag set.
- Sort and the threefry kernels compile a `parallel=True` loop (seconds of numba's
  parfor lowering) only for arrays large enough to run it, in graphs that may use
  threads; the two forms give the same bits, also loaded from the disk cache.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer import ops
from tests.checks import threaded
from tracer.backend.cpu import threads
from tracer.backend.cpu.lib import mkl

REPO = str(pathlib.Path(__file__).resolve().parents[3])  # the repository root
LARGE = 1 << 15  # cpu/lib/sort.py and numba/lib/rng.py: PARALLEL_MIN_ELEMENTS


def _run_child(script: str, tmp_path, **env: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO,
                          env=dict(os.environ, TRACER_CACHE_DIR=str(tmp_path), **env),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_CONV_CHILD = """
    import json
    import numpy as np
    import tracer as tr
    from tracer import ops
    from tracer.backend.cpu.lib import conv as lib
    from tracer.backend.cpu.lib import conv_core as core
    from numba import types
    r = np.random.default_rng(0)
    x, w = r.standard_normal((2, 3, 8, 8)), r.standard_normal((4, 3, 3, 3))
    got = tr.jit(lambda x, w: ops.conv(x, w, (1, 1), "SAME"))(x, w)
    ok = bool(np.allclose(got, ops.conv(x, w, (1, 1), "SAME"), rtol=1e-12, atol=1e-12))
    plans = {name: bool(core._ENTRIES[core.slot(getattr(lib, name), types.float64)])
             for name in ("AUTO", "SHIFTED", "IM2COL", "WINDOW", "WINOGRAD", "WINOGRAD_T",
                          "WINOGRAD4_T")}
    print(json.dumps(dict(ok=ok, plans=plans)))
"""


def test_a_convolution_compiles_only_the_plan_it_runs(tmp_path):
    """A small 3x3 SAME convolution takes the shifted plan: its entry point and the
    choosing one are resolved, no other plan's (each is seconds of code generation)."""
    got = _run_child(_CONV_CHILD, tmp_path)
    assert got["ok"]
    assert got["plans"] == dict(AUTO=True, SHIFTED=True, IM2COL=False, WINDOW=False,
                                WINOGRAD=False, WINOGRAD_T=False, WINOGRAD4_T=False)


def _literal_signatures(kernel) -> list:  # noqa: ANN001
    return [s for s in kernel.signatures if "Literal" in str(s)]


def test_every_flag_set_of_a_solve_runs_one_compiled_kernel():
    from tracer.backend.cpu.lib.triangular import triangular_solve_batch
    a, b = np.eye(5) + np.tril(np.ones((5, 5))), np.ones((5, 2))
    for lower in (True, False):
        for unit in (True, False):
            got = tr.jit(lambda a, b: ops.triangular_solve(
                a, b, left_side=True, lower=lower, unit_diagonal=unit))(a, b)
            ref = np.tril(a) if lower else np.triu(a)
            if unit:
                ref = ref - np.diag(np.diag(ref)) + np.eye(5)
            np.testing.assert_allclose(ref @ got, b, atol=1e-12)
    assert triangular_solve_batch.signatures and not _literal_signatures(triangular_solve_batch)


def test_a_convolution_and_its_kernel_gradient_run_one_compiled_entry():
    """The kernel gradient passes its operands with dims 0 and 1 exchanged (flags
    True), the forward pass as they are (False): one compile of the entry for both."""
    from tracer.backend.cpu.lib.conv_entry import convolution
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))

    def loss(w, x):  # noqa: ANN001, ANN202
        return (ops.conv_general_dilated(x, w, (1, 1), "SAME") ** 2).sum()
    got = tr.jit(tr.grad(loss))(w, x)
    np.testing.assert_allclose(got, tr.jit(tr.grad(loss), backend="interpreter")(w, x),
                               rtol=1e-9, atol=1e-9)
    assert convolution.signatures and not _literal_signatures(convolution)


@pytest.mark.parametrize("shape, kernel", [((LARGE + 3,), "sort_vector"),
                                           ((8, 50), "sort_rows"),
                                           ((LARGE // 16, 17), "sort_rows_parallel")])
def test_sort_compiles_the_kernel_its_shape_needs(shape, kernel):
    """A rank-1 operand is one row (`sort_vector`: no network, no strided tiles); the
    parallel kernel only for large arrays. Results bit for bit NumPy's stable sort."""
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    x.reshape(-1)[::7] = -0.0
    fn = tr.jit(lambda v: (tnp.sort(v), tnp.argsort(v)))
    source = fn.lower(x).compile().source
    if not threaded():  # one thread: the serial kernel of the same shape
        kernel = kernel.removesuffix("_parallel")
    assert f"{kernel}(" in source
    assert "_parallel(" not in source or kernel.endswith("_parallel")
    values, order = fn(x)
    want = np.sort(x, kind="stable")
    assert values.tobytes() == want.tobytes()  # bit for bit: -0.0 before +0.0
    np.testing.assert_array_equal(order, np.argsort(x, kind="stable"))


@pytest.mark.parametrize("use_mkl", [False, True])
def test_a_graph_with_blas_threads_its_loops_only_where_blas_runs_on_their_pool(use_mkl):
    """NumPy's OpenBLAS has threads of its own, which would fight numba's pool for the
    cores: a graph with a product then sorts serially. MKL on GNU OpenMP beside numba's
    `omp` layer is one pool, so there the sort runs on threads."""
    x = np.random.default_rng(0).standard_normal((LARGE // 8, 8))
    w = np.eye(8)
    with tr.config.override(use_mkl=use_mkl):
        fn = tr.jit(lambda x, w: tnp.sort(x @ w, axis=0))
        source = fn.lower(x, w).compile().source
        one_pool = threaded() and mkl.on_gnu_openmp() and threads.layer() == "omp"
        assert ("_parallel(" in source) == one_pool
        np.testing.assert_array_equal(fn(x, w), np.sort(x, axis=0))


_PARALLEL_SORT_CHILD = """
    import json
    import numpy as np
    import tracer as tr
    import tracer.numpy as tnp
    from tracer.backend.cpu.cache import STATS
    x = np.random.default_rng(1).standard_normal((1 << 12, 16)).astype(np.float32)
    fn = tr.jit(lambda x: tnp.sort(x, axis=-1))
    got = fn(x)
    ok = bool(np.array_equal(got, np.sort(x)))
    ok = ok and "sort_rows_parallel(" in fn.lower(x).compile().source
    print(json.dumps(dict(compiles=STATS.compiles, disk_hits=STATS.disk_hits, ok=ok)))
"""


def test_cached_code_calling_the_parallel_sort_kernel_loads_in_a_new_process(tmp_path):
    """(numba #8578: a cached host function calling a parallel library kernel used to
    run before numba's thread pool started, and crash.)"""
    threads = dict(NUMBA_NUM_THREADS="2", TRACER_NUM_THREADS="2")  # (even on one core)
    first = _run_child(_PARALLEL_SORT_CHILD, tmp_path, **threads)
    second = _run_child(_PARALLEL_SORT_CHILD, tmp_path, **threads)
    assert first["ok"] and first["compiles"] == 1
    assert second["ok"] and second["disk_hits"] == 1 and second["compiles"] == 0


_SOLVE_CHILD = """
    import json
    import numpy as np
    import tracer as tr
    import tracer.numpy as tnp
    from tracer.backend.cpu.cache import STATS
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 70, 70)) + 70 * np.eye(70)
    b = rng.standard_normal((2, 70, 40))
    got = tr.jit(tnp.linalg.solve)(a, b)
    ok = bool(np.allclose(got, np.linalg.solve(a, b), rtol=1e-10, atol=1e-10))
    print(json.dumps(dict(compiles=STATS.compiles, disk_hits=STATS.disk_hits, ok=ok)))
"""


def test_cached_code_calling_the_blocked_solve_kernels_loads_in_a_new_process(tmp_path):
    """solve's LU and both triangular solves, blocked (through BLAS gemm), compiled in
    one process and loaded from the disk cache in the next (a recursive njit kernel
    compiled fine and then aborted the process that loaded it: LLVM's "Symbol not
    found")."""
    first = _run_child(_SOLVE_CHILD, tmp_path, TRACER_COMPILE_MODE="sync")
    second = _run_child(_SOLVE_CHILD, tmp_path, TRACER_COMPILE_MODE="sync")
    assert first["ok"] and first["compiles"] == 1
    assert second["ok"] and second["disk_hits"] == 1 and second["compiles"] == 0


_COLD_SOLVE_CHILD = """
    import json
    import numpy as np
    import tracer as tr
    import tracer.numpy as tnp
    from numba.core import registry
    from numba.np import arrayobj
    from tracer.backend.cpu.lib import triangular
    a = np.random.default_rng(2).standard_normal((3, 3)) + 3 * np.eye(3)
    ok = bool(np.allclose(tr.jit(tnp.linalg.solve)(a, a), np.eye(3)))
    typing = registry.cpu_target.typing_context
    raising = typing.resolve_value_type(arrayobj.raise_with_shape_context)
    print(json.dumps(dict(ok=ok, solves=len(triangular._solve_range.signatures),
                          shape_errors=sum(len(t._impl_cache) for t in raising.templates))))
"""


def test_a_cold_solve_compiles_one_triangular_solve_and_no_array_assignment(tmp_path):
    """With numba's cache empty too: the lower-unit and the upper triangular solve share
    one compile of the kernel, and nothing compiles numba's shape-mismatch message."""
    got = _run_child(_COLD_SOLVE_CHILD, tmp_path, TRACER_COMPILE_MODE="sync",
                     NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    assert got == dict(ok=True, solves=1, shape_errors=0)


@pytest.mark.parametrize("shape", [(4, 5), (LARGE // 4, 5)])
def test_random_bits_pick_the_kernel_by_size_and_agree(shape):
    key = tr.random.key(3)
    fn = tr.jit(lambda k: tr.random.bits(k, shape))
    source = fn.lower(key).compile().source
    assert ("_parallel(" in source) == (np.prod(shape) >= LARGE and threaded())
    np.testing.assert_array_equal(fn(key), tr.jit(lambda k: tr.random.bits(k, shape),
                                                  backend="interpreter")(key))


def test_threefry2x32_picks_the_kernel_by_size_and_agrees():
    n = LARGE + 1
    x = np.arange(n, dtype=np.uint32)
    fn = tr.jit(lambda x: ops.threefry2x32(np.uint32(5), np.uint32(7), x, x ^ np.uint32(9)))
    assert ("threefry2x32_fill_parallel(" in fn.lower(x).compile().source) == threaded()
    want = tr.jit(lambda x: ops.threefry2x32(np.uint32(5), np.uint32(7), x,
                                             x ^ np.uint32(9)), backend="interpreter")(x)
    for got, expected in zip(fn(x), want, strict=True):
        np.testing.assert_array_equal(got, expected)
