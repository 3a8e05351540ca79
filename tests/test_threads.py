"""Threads only where they pay: per nest by work size, within the cores the process
may use (`os.sched_getaffinity`) and `config.num_threads` / TRACER_NUM_THREADS.

Checked on the generated source (no numba compile): a parallel nest is a
`parallel=True` kernel with a `prange`; at one thread there is none.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tracer as tr
import tracer.numpy as tnp
from tracer.backend import get_backend
from tracer.backend.cpu.options import thread_count

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _source(fn, *args):
    graph = tr.jit(fn).lower(*args).optimize()
    return get_backend("cpu").prepare(graph).module.source


def _softplus(x):
    return tnp.log1p(tnp.exp(x)) * 2.0


@pytest.mark.skipif(thread_count() < 2, reason="this process may use one core")
def test_a_large_costly_nest_runs_on_threads_and_a_small_one_does_not():
    assert "prange" in _source(_softplus, np.ones((512, 512), np.float32))
    assert "prange" not in _source(_softplus, np.ones((16, 16), np.float32))


def test_one_thread_means_no_parallel_code():
    with tr.config.override(num_threads=1):
        assert thread_count() == 1
        assert "parallel" not in _source(_softplus, np.ones((512, 512), np.float32))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_a_process_bound_to_one_core_uses_one_thread():
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "from tracer.backend.cpu.options import thread_count; print(thread_count())")
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("TRACER_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split() == ["1"]


def test_num_threads_reads_its_environment_variable():
    env = dict(os.environ, PYTHONPATH=REPO, TRACER_NUM_THREADS="1")
    code = "import tracer as tr; print(tr.config.num_threads)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split() == ["1"]


def _products_blas_threads():
    """(set_threads_local, get_threads) of the BLAS the cpu backend binds, skipping where
    it runs one thread."""
    from tracer.backend.cpu import blas as cpu_blas
    from tracer.backend.cpu.lib import cblas
    cpu_blas.bind_fastest()
    found = cblas.thread_functions()
    if found is None or found[1]() < 2:
        pytest.skip("the products' BLAS has no thread functions here or runs one thread")
    return found


def test_small_products_run_blas_on_one_thread_and_restore_it():
    from tracer.backend.cpu import blas as cpu_blas
    getter = _products_blas_threads()[1]
    default = getter()
    seen = []
    cpu_blas.single_threaded(lambda: seen.append(getter()))()
    assert seen == [1] and getter() == default


def test_the_interpreter_runs_small_products_on_one_numpy_blas_thread():
    """The interpreter tier's np.matmul uses NumPy's OpenBLAS: one thread during a
    small model's call (a callback inside the graph reads it), the process's after."""
    from tracer.backend.blas_threads import openblas_functions
    found = openblas_functions("numpy.libs")
    if found is None or found[1]() < 2:
        pytest.skip("NumPy's OpenBLAS is not found here or runs one thread")
    getter = found[1]
    default = getter()
    seen = []

    def f(a, b):
        y = a @ b
        return tr.pure_callback(lambda v: seen.append(getter()) or v, y, y)

    a, b = np.ones((4, 6), np.float32), np.ones((6, 3), np.float32)
    out = tr.jit(f, backend="interpreter")(a, b)
    np.testing.assert_array_equal(out, a @ b)
    assert seen == [1] and getter() == default


@pytest.mark.parametrize("load, want_one", [(9.0, True), (0.5, False)])
def test_large_products_run_blas_on_one_thread_only_while_the_machine_is_busy(
        monkeypatch, load, want_one):
    from tracer.backend.cpu import blas as cpu_blas
    getter = _products_blas_threads()[1]
    default = getter()
    monkeypatch.setattr(cpu_blas.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(cpu_blas, "_busy_reading", [0.0, False])  # (read afresh)
    seen = []
    cpu_blas.threads_while_idle(lambda: seen.append(getter()), cores=2)()
    assert seen == [1 if want_one else default] and getter() == default


def test_the_largest_product_is_counted_inside_control_flow():
    from tracer.backend.blas_threads import largest_product_flops

    def f(a, b):
        return tr.ops.fori_loop(0, 3, lambda i, x: x @ b, a)

    graph = tr.jit(f).lower(np.ones((4, 6)), np.ones((6, 6))).optimize()
    assert largest_product_flops(graph) == 2 * 4 * 6 * 6
