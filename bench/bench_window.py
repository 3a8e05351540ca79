"""Pooling on the numba `cpu` backend against NumPy, JAX's `lax.reduce_window` and
PyTorch's `max_pool2d`/`avg_pool2d` (eager and torch.compile), each when installed.

    python -m bench.bench_window            # all workloads
    python -m bench.bench_window grad       # the workloads whose name contains "grad"

Max-pool and average-pool, window 3x3, stride 2, VALID, on a float32 NCHW batch
(32x64x56x56, a ResNet stem's size), and the max-pool gradient (select_and_scatter).
NumPy pools a `sliding_window_view`. Each workload checks that the implementations
agree, then prints medians and ratios; the last line is the table as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import numpy as np

import tracer as tr
from bench.common import report, timed_rows, timeit, try_import_jax
from bench.machine import bound as machine_bound
from bench.peers import torch_grad_rows, torch_rows, try_import_torch
from tracer import ops

RESULTS: dict[str, dict[str, float]] = {}
SHAPE = (32, 64, 56, 56)
WINDOW, STRIDES = (1, 1, 3, 3), (1, 1, 2, 2)


def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], baseline: str,
         bound: float | None = None) -> None:
    rows = timed_rows(rows)
    expected = np.asarray(rows[0][1]())
    for name, fn in rows[1:]:
        np.testing.assert_allclose(np.asarray(fn()), expected, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{title}: {name}")
    times = [(name, timeit(fn, repeat=5)) for name, fn in rows]
    RESULTS[title] = dict(times)
    report(title, times, baseline, bound=bound)


def _torch_pool(kind: str) -> Callable[..., Any]:
    import torch.nn.functional as F
    pool = F.max_pool2d if kind == "max" else F.avg_pool2d
    return lambda x: pool(x, WINDOW[2:], STRIDES[2:])


def _pool_bytes(x: np.ndarray) -> int:
    """Read x once, write the pooled result (a quarter of it, about)."""
    n, c, h, w = x.shape
    return x.nbytes + n * c * ((h - 3) // 2 + 1) * ((w - 3) // 2 + 1) * x.itemsize


def _windows(x: np.ndarray) -> np.ndarray:
    view = np.lib.stride_tricks.sliding_window_view(x, WINDOW[2:], axis=(2, 3))
    return view[:, :, ::STRIDES[2], ::STRIDES[3]]


def _pool(lib: Any, x: Any, kind: str) -> Any:
    if kind == "max":
        return lib.reduce_window(x, -np.inf, lib.max, WINDOW, STRIDES, "VALID")
    return lib.reduce_window(x, 0.0, lib.add, WINDOW, STRIDES, "VALID") / np.float32(9)


def _jax_rows(jax: Any, fn: Callable[..., Any], *args: np.ndarray) -> list:
    if jax is None:
        return []
    jitted = jax.jit(fn)
    device_args = [jax.numpy.asarray(a) for a in args]
    return [("jax", lambda: jitted(*device_args).block_until_ready())]


def _input() -> np.ndarray:
    return np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)


def pool(kind: str) -> None:
    x = _input()
    f = tr.jit(lambda x: _pool(ops, x, kind))
    reduce = {"max": lambda w: w.max(axis=(-2, -1)), "avg": lambda w: w.mean(axis=(-2, -1))}
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(x)), ("numpy (sliding windows)",
                                           lambda: reduce[kind](_windows(x)))]
    rows += _jax_rows(jax, lambda x: _pool(jax.lax, x, kind), x)
    if try_import_torch() is not None:
        rows += torch_rows(_torch_pool(kind), x)
    _run(f"{kind}-pool 3x3/2 VALID, float32{list(SHAPE)}", rows, "tracer cpu",
         bound=machine_bound(_pool_bytes(x)))


def maxpool_grad() -> None:
    """d/dx sum(maxpool(x) * w): select_and_scatter of w onto each window's max."""
    x = _input()
    w = np.random.default_rng(1).standard_normal((32, 64, 27, 27)).astype(np.float32)
    loss = lambda lib, x, w: (_pool(lib, x, "max") * w).sum()  # noqa: E731
    f = tr.jit(tr.grad(lambda x, w: loss(ops, x, w)))
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(x, w))]
    if jax is not None:
        rows += _jax_rows(jax, jax.grad(lambda x, w: loss(jax.lax, x, w)), x, w)
    if try_import_torch() is not None:
        torch_loss = lambda x, w: (_torch_pool("max")(x) * w).sum()  # noqa: E731
        rows += [(name, lambda fn=fn: fn()[0])  # the gradient w.r.t. x alone
                 for name, fn in torch_grad_rows(torch_loss, (0,), x, w, value=False)]
    _run(f"max-pool gradient 3x3/2, float32{list(SHAPE)}", rows, "tracer cpu",
         bound=machine_bound(2 * x.nbytes + w.nbytes))  # read x and w, write dx


WORKLOADS: dict[str, Callable[[], None]] = {
    "maxpool": lambda: pool("max"), "avgpool": lambda: pool("avg"),
    "maxpool_grad": maxpool_grad,
}


def main(selected: list[str]) -> None:
    for name, run in WORKLOADS.items():
        if not selected or any(s in name for s in selected):
            run()
    print(json.dumps(RESULTS))


if __name__ == "__main__":
    main(sys.argv[1:])
