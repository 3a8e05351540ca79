"""Sorting, gather and scatter on the numba `cpu` backend against NumPy, JAX, PyTorch and
PyTensor (each when installed), on 10^6 elements: the workloads of issue #4's speed
requirement.

    python -m bench.bench_indexing             # all workloads
    python -m bench.bench_indexing sort        # the workloads whose name contains "sort"

Each workload checks that the implementations agree, then prints medians and ratios
(`bench.common.report`); the last line is the whole table as JSON. The machine may be
shared: the rows of one table are timed in alternating rounds so that load hits them
alike, and each row reports its fastest round's median. "tracer cpu, 1 thread" runs the
function compiled with `num_threads=1` (no parallel code): the like-for-like comparison with
NumPy, and the one to trust when other processes keep the cores busy (a parallel region
then waits for its slowest, descheduled thread).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import jax_x64, report, timed_rows, timeit, try_import_jax
from bench.peers import pytensor_rows, torch_rows, try_import_torch

RESULTS: dict[str, dict[str, float]] = {}
N = 1_000_000
ROUNDS = 3


def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], baseline: str) -> None:
    """Check every implementation against the first one, time them, report."""
    rows = timed_rows(rows)
    expected = np.asarray(rows[0][1]())
    for name, fn in rows[1:]:
        np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{title}: {name}")
    best = {name: float("inf") for name, _ in rows}
    for _ in range(ROUNDS):
        for name, fn in rows:
            best[name] = min(best[name], timeit(fn, repeat=5))
    RESULTS[title] = best
    report(title, list(best.items()), baseline)


def _tracer_rows(f: Any, *args: np.ndarray) -> list[tuple[str, Callable[[], Any]]]:
    """`f(*args)` (a jitted function), and the same function compiled for one thread
    (the thread count is read when code is generated)."""
    with tr.config.override(num_threads=1):
        one = tr.jit(f.fun)
        one(*args)
        one.wait_compiled()
    return [("tracer cpu", lambda: f(*args)), ("tracer cpu, 1 thread", lambda: one(*args))]


def _jax_rows(fn: Callable[..., Any], *args: np.ndarray) -> list:
    """A JAX row on the arrays every other row reads: with 64-bit types on (by default
    JAX narrows float64 and int64 arrays to 32 bits, half the bytes to move)."""
    jax = try_import_jax()
    if jax is None:
        return []
    return [("jax", jax_x64(jax, lambda *xs: fn(jax.numpy, *xs), *args))]


def _peers(torch_fn: Callable[..., Any], pytensor_graph: Callable[..., Any] | None,
           *args: np.ndarray) -> list:
    """torch (eager, torch.compile) rows of `torch_fn(torch, *tensors)` and a PyTensor
    row of `pytensor_graph(pt, *inputs)`."""
    torch = try_import_torch()
    rows = torch_rows(lambda *a: torch_fn(torch, *a), *args) if torch is not None else []
    return rows + (pytensor_rows(pytensor_graph, *args) if pytensor_graph else [])


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    return x, rng.integers(0, N, N), rng.standard_normal(N).astype(np.float32)


# ------------------------------------------------------------------ sorting

def sort_1d() -> None:
    x = _data()[0]
    f = tr.jit(tnp.sort)
    rows = _tracer_rows(f, x) + [("numpy", lambda: np.sort(x))]
    rows += _peers(lambda torch, x: torch.sort(x).values, lambda pt, x: pt.sort(x), x)
    _run(f"np.sort, float32[{N}]", rows + _jax_rows(lambda np_, x: np_.sort(x), x), "numpy")


def sort_rows() -> None:
    x = _data()[0].reshape(1000, N // 1000)
    f = tr.jit(tnp.sort)
    rows = _tracer_rows(f, x) + [("numpy", lambda: np.sort(x))]
    rows += _peers(lambda torch, x: torch.sort(x).values, lambda pt, x: pt.sort(x), x)
    _run(f"np.sort rows, float32[1000,{N // 1000}]",
         rows + _jax_rows(lambda np_, x: np_.sort(x), x), "numpy")


def sort_columns() -> None:
    x = _data()[0].reshape(1000, N // 1000)
    f = tr.jit(lambda x: tnp.sort(x, axis=0))
    rows = _tracer_rows(f, x) + [("numpy", lambda: np.sort(x, axis=0))]
    rows += _peers(lambda torch, x: torch.sort(x, dim=0).values,
                   lambda pt, x: pt.sort(x, axis=0), x)
    _run(f"np.sort axis=0, float32[1000,{N // 1000}]", rows, "numpy")


def sort_labels() -> None:
    """Integer keys from a small set (labels, bins, small counts): 10^6 int64 values in
    [0, 1000), the case `cpu.lib.sort_counting` counts instead of calling NumPy."""
    x = _data()[1] % 1000
    f = tr.jit(tnp.sort)
    rows = _tracer_rows(f, x) + [("numpy", lambda: np.sort(x))]
    rows += _peers(lambda torch, x: torch.sort(x).values, lambda pt, x: pt.sort(x), x)
    _run(f"np.sort, int64[{N}] of 1000 values",
         rows + _jax_rows(lambda np_, x: np_.sort(x), x), "numpy")


def argsort_1d() -> None:
    x = _data()[0]
    f = tr.jit(lambda x: tnp.argsort(x, kind="stable"))
    rows = _tracer_rows(f, x) + [("numpy", lambda: np.argsort(x, kind="stable"))]
    rows += _peers(lambda torch, x: torch.sort(x, stable=True).indices, None, x)
    _run(f"np.argsort(kind='stable'), float32[{N}]", rows, "numpy")


# ------------------------------------------------------------------ gather / scatter

def gather() -> None:
    x, idx, _ = _data()
    f = tr.jit(lambda x, i: x[i])
    rows = _tracer_rows(f, x, idx) + [("numpy", lambda: x[idx])]
    rows += _peers(lambda torch, x, i: x[i], lambda pt, x, i: x[i], x, idx)
    _run(f"x[idx] (gather), float32[{N}], int64[{N}]",
         rows + _jax_rows(lambda np_, x, i: x[i], x, idx), "numpy")


def _add_at(x: np.ndarray, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = x.copy()  # a fresh result, as the functional update returns
    np.add.at(out, idx, v)
    return out


def scatter_add() -> None:
    x, idx, v = _data()
    f = tr.jit(lambda x, i, v: x.at[i].add(v))
    rows = _tracer_rows(f, x, idx, v) + [("numpy", lambda: _add_at(x, idx, v))]
    rows += _peers(lambda torch, x, i, v: x.index_add(0, i, v),
                   lambda pt, x, i, v: pt.inc_subtensor(x[i], v), x, idx, v)
    _run(f"np.add.at (scatter-add), float32[{N}]",
         rows + _jax_rows(lambda np_, x, i, v: x.at[i].add(v), x, idx, v), "numpy")


def gather_rows() -> None:
    """`b[..., perm, :]`: whole rows (the row permutation of a linear solve)."""
    rng = np.random.default_rng(1)
    b, perm = rng.standard_normal((512, 512)), rng.permutation(512)
    f = tr.jit(lambda b, p: b[..., p, :])
    rows = _tracer_rows(f, b, perm) + [("numpy", lambda: b[..., perm, :])]
    rows += _peers(lambda torch, b, p: b[..., p, :], lambda pt, b, p: b[p], b, perm)
    _run("b[..., perm, :] (gather rows), float64[512,512]",
         rows + _jax_rows(lambda np_, b, p: b[..., p, :], b, perm), "numpy")


def take_along_rows() -> None:
    x = _data()[0].reshape(1000, N // 1000)
    order = np.argsort(x, axis=-1)
    f = tr.jit(lambda x, i: tnp.take_along_axis(x, i, -1))
    rows = _tracer_rows(f, x, order) + [
        ("numpy", lambda: np.take_along_axis(x, order, -1))]
    rows += _peers(lambda torch, x, i: torch.take_along_dim(x, i, dim=-1), None, x, order)
    _run(f"np.take_along_axis rows, float32[1000,{N // 1000}]", rows, "numpy")


WORKLOADS: dict[str, Callable[[], None]] = {
    "sort_1d": sort_1d, "sort_rows": sort_rows, "sort_columns": sort_columns,
    "sort_labels": sort_labels, "argsort_1d": argsort_1d, "gather": gather,
    "gather_rows": gather_rows, "take_along_rows": take_along_rows, "scatter_add": scatter_add,
}


def main(selected: list[str]) -> None:
    for name, run in WORKLOADS.items():
        if not selected or any(s in name for s in selected):
            run()
    print(json.dumps(RESULTS))


if __name__ == "__main__":
    main(sys.argv[1:])
