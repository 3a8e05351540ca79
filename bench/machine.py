"""What this machine can do at best, measured once per process: the bound of a row.

A workload that streams `bytes_moved` bytes and does `flops` floating-point operations
cannot take less than max(bytes / bandwidth, flops / peak). Both rates are measured
here, not taken from a data sheet: the bandwidth is NumPy copying a 256 MiB array
(read + write, one thread), the peak is NumPy's BLAS multiplying 1024x1024 matrices
of the dtype (with the threads BLAS is given; best of 10: a loaded machine has quiet
moments). So the bound is what this machine's own best code attains;
threaded streaming code can beat a one-thread copy a little (a ratio below 1). Set
`TRACER_BENCH_CPU_BANDWIDTH` (bytes/s) or `TRACER_BENCH_CPU_FLOPS` (flop/s, float32)
to use known figures instead.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

MEASURED: dict[str, float] = {}  # the rates measured so far (for the JSON file)


def _best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bandwidth() -> float:
    """Bytes per second of a large copy (each byte read once and written once)."""
    if "bandwidth_bytes_per_s" not in MEASURED:
        MEASURED["bandwidth_bytes_per_s"] = _measure_bandwidth()
    return MEASURED["bandwidth_bytes_per_s"]


def peak_flops(dtype: str = "float32") -> float:
    """Floating-point operations per second of NumPy's BLAS GEMM in `dtype`."""
    key = f"peak_flops_{dtype}"
    if key not in MEASURED:
        MEASURED[key] = _measure_flops(dtype)
    return MEASURED[key]


def _measure_bandwidth() -> float:
    if "TRACER_BENCH_CPU_BANDWIDTH" in os.environ:
        return float(os.environ["TRACER_BENCH_CPU_BANDWIDTH"])
    src = np.ones(1 << 25, np.float64)  # 256 MiB: far past every cache
    dst = np.ones_like(src)             # touched: no first-touch page faults timed
    seconds = _best_of(lambda: np.copyto(dst, src), 5)
    return 2 * src.nbytes / seconds


def _measure_flops(dtype: str) -> float:
    if dtype == "float32" and "TRACER_BENCH_CPU_FLOPS" in os.environ:
        return float(os.environ["TRACER_BENCH_CPU_FLOPS"])
    n = 1024
    a = np.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    out = np.empty_like(a)
    seconds = _best_of(lambda: np.matmul(a, a, out=out), 10)
    return 2 * n**3 / seconds


def bound(bytes_moved: float = 0.0, flops: float = 0.0, dtype: str = "float32") -> float:
    """Seconds a workload needs at least: its bytes at `bandwidth()`, its flops at
    `peak_flops(dtype)`, whichever takes longer."""
    memory = bytes_moved / bandwidth() if bytes_moved else 0.0
    compute = flops / peak_flops(dtype) if flops else 0.0
    return max(memory, compute)


def describe() -> dict[str, float]:
    """The CPU count and the rates measured so far (for the JSON file)."""
    return {"cpu_count": float(os.cpu_count() or 0), **MEASURED}
