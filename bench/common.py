"""Timing helpers shared by the benchmarks: best-of-N medians, ratio tables."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def timeit(fn: Callable[[], Any], repeat: int = 7, min_time: float = 0.05) -> float:
    """Seconds per call: the median over `repeat` rounds of a calibrated loop."""
    fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time / 5 or number >= 1 << 20:
            break
        number *= 4
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - t0) / number)
    return statistics.median(rounds)


def try_import_jax() -> Any:
    try:
        import jax
        jax.config.update("jax_platform_name", "cpu")
        return jax
    except Exception:  # JAX is optional; any import failure means "absent"
        return None


def report(title: str, rows: list[tuple[str, float]], baseline: str) -> None:
    """Print times and ratios to `baseline` (ratios from one run are what to compare)."""
    base = dict(rows)[baseline]
    print(f"\n{title}")
    for name, seconds in rows:
        print(f"  {name:<28} {_fmt(seconds):>12}   x{seconds / base:6.2f} vs {baseline}")


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
