"""Batched Cholesky and linear solves: tracer cpu against NumPy, SciPy, JAX, PyTorch
(eager and torch.compile) and PyTensor's numba backend (each when installed).

    python -m bench.bench_linalg              # every workload
    python -m bench.bench_linalg cholesky     # the workloads whose name contains "cholesky"
    OPENBLAS_NUM_THREADS=1 python -m bench.bench_linalg   # on a shared, busy machine

tracer's kernels (tracer/backend/cpu_lib_linalg.py) are hand-written numba loops for
small matrices and blocked loops around BLAS (np.dot in numba, SciPy's OpenBLAS) for
large ones; cholesky of larger matrices calls LAPACK potrf. Each workload checks
that the implementations agree, prints medians and ratios, and the last line is the
whole table as JSON. Multi-threaded BLAS on a loaded machine is erratic: compare
ratios within one run, and prefer one BLAS thread there.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import numpy as np
import scipy.linalg

import tracer as tr
import tracer.numpy as tnp
from bench.common import jax_x64, report, timed_rows, timeit, try_import_jax
from bench.peers import pytensor_rows, torch_rows, try_import_torch
from tracer import ops

RESULTS: dict[str, dict[str, float]] = {}


def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], rtol: float = 1e-8) -> None:
    rows = timed_rows(rows)
    expected = np.asarray(rows[0][1]())
    for name, fn in rows[1:]:
        np.testing.assert_allclose(np.asarray(fn()), expected, rtol=rtol, atol=rtol,
                                   err_msg=f"{title}: {name}")
    times = [(name, timeit(fn, repeat=5)) for name, fn in rows]
    RESULTS[title] = dict(times)
    report(title, times, "tracer cpu")


def _jax(jax: Any, fn: Callable[..., Any], *args: np.ndarray) -> list:
    if jax is None:
        return []
    return [("jax", jax_x64(jax, fn, *args))]  # these workloads are float64


def _peers(torch_fn: Callable[..., Any], pytensor_graph: Callable[..., Any] | None,
           *args: np.ndarray) -> list:
    """torch (eager, torch.compile) rows of `torch_fn(torch, *tensors)` and a PyTensor
    row of `pytensor_graph(pt, *inputs)` (its `pt.linalg`, batched by Blockwise)."""
    torch = try_import_torch()
    rows = torch_rows(lambda *a: torch_fn(torch, *a), *args) if torch is not None else []
    return rows + (pytensor_rows(pytensor_graph, *args) if pytensor_graph else [])


def _spd(batch: int, n: int) -> np.ndarray:
    x = np.random.default_rng(0).standard_normal((batch, n, n))
    return x @ x.transpose(0, 2, 1) + n * np.eye(n)


def _loop(fn: Callable[[np.ndarray], np.ndarray], a: np.ndarray) -> Callable[[], Any]:
    return lambda: np.stack([fn(m) for m in a])


def cholesky(batch: int, n: int) -> None:
    a = _spd(batch, n)
    f = tr.jit(ops.cholesky)
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(a)), ("numpy", lambda: np.linalg.cholesky(a)),
            ("scipy (loop)", _loop(lambda m: scipy.linalg.cholesky(m, lower=True,
                                                                  check_finite=False), a))]
    rows += _jax(jax, lambda x: jax.numpy.linalg.cholesky(x) if jax else None, a)
    rows += _peers(lambda torch, x: torch.linalg.cholesky(x),
                   lambda pt, x: pt.linalg.cholesky(x, lower=True), a)
    _run(f"cholesky, float64[{batch},{n},{n}]", rows)


def solve(batch: int, n: int, k: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((batch, n, n)) + n * np.eye(n)
    b = rng.standard_normal((batch, n, k))
    f = tr.jit(tnp.linalg.solve)
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(a, b)), ("numpy", lambda: np.linalg.solve(a, b)),
            ("scipy (loop)", lambda: np.stack([scipy.linalg.solve(x, y, check_finite=False)
                                               for x, y in zip(a, b)]))]
    rows += _jax(jax, lambda x, y: jax.numpy.linalg.solve(x, y) if jax else None, a, b)
    rows += _peers(lambda torch, x, y: torch.linalg.solve(x, y),
                   lambda pt, x, y: pt.linalg.solve(x, y), a, b)
    _run(f"solve, float64[{batch},{n},{n}] @ x = [{batch},{n},{k}]", rows, rtol=1e-7)


def triangular_solve(batch: int, n: int, k: int) -> None:
    rng = np.random.default_rng(2)
    a = np.tril(rng.standard_normal((batch, n, n))) / np.sqrt(n) + 2 * np.eye(n)
    b = rng.standard_normal((batch, n, k))
    f = tr.jit(lambda a, b: ops.triangular_solve(a, b, left_side=True, lower=True))
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(a, b)),
            ("scipy (loop)", lambda: np.stack([scipy.linalg.solve_triangular(
                x, y, lower=True, check_finite=False) for x, y in zip(a, b)]))]
    if jax is not None:
        tri = jax.scipy.linalg.solve_triangular
        rows += _jax(jax, lambda x, y: tri(x, y, lower=True), a, b)
    rows += _peers(lambda torch, x, y: torch.linalg.solve_triangular(x, y, upper=False),
                   lambda pt, x, y: pt.linalg.solve_triangular(x, y, lower=True), a, b)
    _run(f"triangular_solve, float64[{batch},{n},{n}] [{batch},{n},{k}]", rows)


WORKLOADS: dict[str, Callable[[], None]] = {
    "cholesky 1000x32": lambda: cholesky(1000, 32),
    "cholesky 1x512": lambda: cholesky(1, 512),
    "cholesky 10000x4": lambda: cholesky(10000, 4),
    "solve 1000x32": lambda: solve(1000, 32, 1),
    "solve 1x512": lambda: solve(1, 512, 1),
    "solve 1x512 k=512": lambda: solve(1, 512, 512),
    "triangular_solve 1000x32": lambda: triangular_solve(1000, 32, 32),
    "triangular_solve 1x512": lambda: triangular_solve(1, 512, 512),
}


def main(selected: list[str]) -> None:
    for name, run in WORKLOADS.items():
        if not selected or any(s in name for s in selected):
            run()
    print(json.dumps(RESULTS))


if __name__ == "__main__":
    main(sys.argv[1:])
