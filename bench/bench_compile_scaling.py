"""Compile seconds against program size, the host function cut into separately compiled
parts (`tracer/backend/cpu/split.py`) and as one function: fresh processes, empty
caches, synchronous compiles.

    python -m bench.bench_compile_scaling                 # 10 .. 5000 instructions
    python -m bench.bench_compile_scaling --one-max 300 10 100 500
    python -m bench.bench_compile_scaling --steady 96     # run time, parts vs one function

The program is a chain of layers `x = tanh(x @ w + b) * 0.5` with a row mean every four
layers (about five instructions per layer, one loop nest and one BLAS call each), the
shape of a model's forward pass. Each row gives this process's CPU seconds (what a
loaded machine does not inflate) and wall seconds, the generated lines and parts, the
seconds inside LLVM (numba's `numba:llvm_lock` events) and numba's type inference and
lowering passes over the host and its parts (wall clock, so they overlap and inflate
with the load); the one function's seconds up to `--one-max` instructions; then the
fitted exponent k of `cpu seconds ~ instructions^k`.

Measured (docs/performance.md has the table, load 5-9): 106, 526, 1,051, 2,101, 5,251
instructions in 2.44, 9.41, 20.6, 48.7, 160 CPU s, k = 1.07 (1.27 from 1,051 up: the
host's one parameter per buffer); the one function before this (main at 6f2ca06) took
2.20 / 6.79 / 17.1 / 54.8 CPU s at 43 / 169 / 337 / 673 instructions (k = 1.51 over
169-673), the parts x0.77 / x0.55 / x0.38 / x0.20 of that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time


def program(layers: int):
    import tracer.numpy as tnp

    def chain(x, w, b):
        for i in range(layers):
            x = tnp.tanh(x @ w + b) * 0.5
            if i % 4 == 3:
                x = x - tnp.mean(x, axis=1, keepdims=True)
        return x
    return chain


def _args():
    import numpy as np
    r = np.random.default_rng(0)
    return [r.random((8, 16)).astype(np.float32), r.random((16, 16)).astype(np.float32) / 16,
            r.random(16).astype(np.float32)]


def _one_function(split: bool) -> None:
    from tracer.backend.cpu import split as cpu_split
    if not split:
        cpu_split.SPLIT_MIN_LINES = 1 << 30


def child(layers: int, split: bool) -> dict:
    import tracer as tr
    _one_function(split)
    lowered = tr.jit(program(layers)).lower(*_args())
    instructions = len(lowered.optimize().eqns)
    from numba.core import event
    llvm = event.RecordingListener()
    event.register("numba:llvm_lock", llvm)
    t0, c0 = time.perf_counter(), time.process_time()
    compiled = lowered.compile()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    source = compiled.executable.source
    return {"instructions": instructions, "seconds": seconds, "cpu": cpu,
            "lines": source.count("\n"), "parts": source.count("@separately_compiled"),
            "llvm": _outer_seconds(llvm),
            **_pass_seconds(compiled.executable)}


def _outer_seconds(listener) -> float:
    """Seconds inside the outermost events a numba event listener recorded."""
    total, depth, start = 0.0, 0, 0.0
    for ts, ev in listener.buffer:
        if ev.is_start:
            start = ts if depth == 0 else start
            depth += 1
        else:
            depth -= 1
            total += ts - start if depth == 0 else 0.0
    return total


def _pass_seconds(executable) -> dict:
    """numba's type inference and lowering seconds, over the host and its parts."""
    from tracer.backend.cpu import cache
    entry = cache._MODULES[cache.module_key(executable.source)]
    found = {"typing": 0.0, "lowering": 0.0}
    for value in vars(entry.module).values():
        dispatcher = getattr(value, "dispatcher", value)
        for compiled in getattr(dispatcher, "overloads", {}).values():
            for name, t in compiled.metadata["pipeline_times"]["nopython"].items():
                key = "typing" if name.endswith("type_inference") else \
                    "lowering" if name.endswith("native_lowering") else None
                if key:
                    found[key] += t.run
    return found


def _run_child(layers: int, split: bool, timeout: float) -> dict:
    env = dict(os.environ, TRACER_CACHE_DIR=tempfile.mkdtemp(prefix="tracer-scaling-"),
               TRACER_COMPILE_MODE="sync", TRACER_PROGRESS="0")
    cmd = [sys.executable, "-m", "bench.bench_compile_scaling", "--child", str(layers),
           str(int(split))]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=timeout, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return {}


def exponent(rows: list[tuple[int, float]]) -> float:
    """The least-squares slope of log(seconds) against log(instructions)."""
    import numpy as np
    x, y = np.log([n for n, _ in rows]), np.log([t for _, t in rows])
    return float(np.polyfit(x, y, 1)[0])


def main(argv: list[str]) -> None:
    one_max = 700  # instructions: one function beyond this takes too long to wait for
    if argv[:1] == ["--one-max"]:
        one_max, argv = int(argv[1]), argv[2:]
    targets = [int(a) for a in argv] or [10, 100, 500, 1000, 2000, 5000]
    print(f"\ncompile seconds against instructions (optimized HLO), split into parts vs one "
          f"function (one function up to {one_max} instructions); cpu: this process's CPU "
          f"seconds (what the load does not inflate), wall: elapsed")
    print(f"  {'instructions':>12} {'lines':>6} {'parts':>5} {'cpu':>8} {'wall':>8} "
          f"{'one fn cpu':>10} {'one fn wall':>11} {'llvm':>7} {'typing':>7} {'lowering':>8}")
    fits: dict[bool, list] = {True: [], False: []}
    for target in targets:
        layers = max(1, target // 5)
        row = {True: _run_child(layers, True, 3600)}
        row[False] = _run_child(layers, False, 1800) if target <= one_max else {}
        for split, found in row.items():
            if found and found["instructions"] >= 50:
                fits[split].append((found["instructions"], found["cpu"]))
        r, o = row[True], row[False]
        nan = float("nan")
        print(f"  {r.get('instructions', '?')!s:>12} {r.get('lines', '?')!s:>6} "
              f"{r.get('parts', '?')!s:>5} {r.get('cpu', nan):>7.2f}s "
              f"{r.get('seconds', nan):>7.2f}s "
              f"{o.get('cpu', nan):>9.2f}s {o.get('seconds', nan):>10.2f}s "
              f"{r.get('llvm', nan):>6.2f}s {r.get('typing', nan):>6.2f}s "
              f"{r.get('lowering', nan):>7.2f}s", flush=True)
    for split, rows in fits.items():
        if len(rows) >= 2:
            print(f"  fitted exponent ({'parts' if split else 'one function'}, cpu seconds "
                  f"~ instructions^k, from 50 instructions up): k = {exponent(rows):.2f}")


def steady(layers: int, rounds: int = 5) -> None:
    """Run time of the program split into parts against one function, in this process,
    interleaved: the median over `rounds` of each one's calibrated per-call time."""
    import statistics

    import numpy as np

    import tracer as tr
    from bench.common import timeit
    from tracer.backend.cpu import split as cpu_split
    args = _args()
    fns = {}
    for name, min_lines in (("parts", cpu_split.SPLIT_MIN_LINES), ("one function", 1 << 30)):
        cpu_split.SPLIT_MIN_LINES = min_lines
        compiled = tr.jit(program(layers)).lower(*args).compile()
        fns[name] = (lambda c=compiled: c(*args))
    differ = np.max(np.abs(np.asarray(fns["parts"]()) - np.asarray(fns["one function"]())))
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(timeit(fn, repeat=3))
    t = {name: statistics.median(v) for name, v in times.items()}
    print(f"steady state, {layers} layers: parts {t['parts'] * 1e6:.1f} us, one function "
          f"{t['one function'] * 1e6:.1f} us, ratio {t['parts'] / t['one function']:.3f} "
          f"(results differ by at most {differ:.1e})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(int(sys.argv[2]), sys.argv[3] == "1")))
    elif sys.argv[1:2] == ["--steady"]:
        steady(int(sys.argv[2]))
    else:
        main(sys.argv[1:])
