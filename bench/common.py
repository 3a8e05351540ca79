"""Timing helpers shared by the benchmarks: best-of-N medians, ratio tables.

Every `report` also appends a record to `RECORDS` (the times, the baseline, the
first-call seconds of the rows wrapped by `first_call_timed`, the bound), which
`bench.summary` turns into the at-a-glance table and the JSON file of `bench.run`.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

RECORDS: list[dict[str, Any]] = []
_FIRST_CALLS: dict[str, float] = {}  # row name -> seconds of its first call, since the last report


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


def first_call_timed(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn`, recording how long its first call took (trace + compile + one run for a
    jitted row: what a user waits for) under `name` for the next `report`."""
    called = False

    def call() -> Any:
        nonlocal called
        if called:
            return fn()
        t0 = time.perf_counter()
        out = fn()
        # setdefault: a row wrapped twice keeps its innermost (earliest) first call
        _FIRST_CALLS.setdefault(name, time.perf_counter() - t0)
        called = True
        return out
    return call


def timed_rows(rows: list[tuple[str, Callable[[], Any]]]) -> list[tuple[str, Callable[[], Any]]]:
    """Every row wrapped by `first_call_timed`."""
    return [(name, first_call_timed(name, fn)) for name, fn in rows]


def try_import_jax() -> Any:
    try:
        import jax
        jax.config.update("jax_platform_name", "cpu")
        return jax
    except Exception:  # JAX is optional; any import failure means "absent"
        return None


def jax_x64(jax: Any, fn: Callable[..., Any], *args: Any, on: bool = True) -> Callable[[], Any]:
    """A run of `jax.jit(fn)` on `args` with JAX's 64-bit types `on` for this row only (by
    default JAX narrows float64/int64 arrays to 32 bits). The setting is global: turned
    on for good by one suite, it changed the JAX rows of the suites run after it."""
    with jax.enable_x64(on):
        jitted = jax.jit(fn)
        device_args = [jax.numpy.asarray(a) for a in args]

    def run() -> Any:
        with jax.enable_x64(on):
            return jax.block_until_ready(jitted(*device_args))
    return run


def report(title: str, rows: list[tuple[str, float]], baseline: str,
           bound: float | None = None) -> None:
    """Print times and ratios to `baseline` (ratios from one run are what to compare),
    and record them. `bound`: the seconds the workload needs at the machine's measured
    memory bandwidth or FLOP rate (`bench.machine.bound`), where it has one."""
    base = dict(rows)[baseline]
    print(f"\n{title}")
    for name, seconds in rows:
        print(f"  {name:<28} {_fmt(seconds):>12}   x{seconds / base:6.2f} vs {baseline}")
    if bound is not None:
        print(f"  {'(bound)':<28} {_fmt(bound):>12}   x{bound / base:6.2f} vs {baseline}")
    first = {name: _FIRST_CALLS[name] for name, _ in rows if name in _FIRST_CALLS}
    _FIRST_CALLS.clear()
    RECORDS.append({"title": title, "module": sys._getframe(1).f_globals.get("__name__", ""),
                    "baseline": baseline, "times": dict(rows), "first_call": first,
                    "bound": bound})


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
