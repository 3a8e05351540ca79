"""Compile seconds against program size, with the host function split into parts
(`tracer/backend/cpu/split.py`) and as one function: fresh processes, empty caches,
synchronous compiles.

    python -m bench.bench_compile_scaling            # 10 .. 5000 instructions
    python -m bench.bench_compile_scaling 10 100 500

The program is a chain of layers `x = tanh(x @ w + b) * s` with a reduction every few
layers (several ops per layer, one loop nest and one BLAS call each), the shape of a
model's forward pass.
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


def child(layers: int, split: bool) -> dict:
    import numpy as np

    import tracer as tr
    from tracer.backend.cpu import split as cpu_split
    if not split:
        cpu_split.SPLIT_LINES = 1 << 30
    f = tr.jit(program(layers))
    args = [np.ones((8, 16), np.float32), np.ones((16, 16), np.float32) / 16,
            np.zeros(16, np.float32)]
    lowered = f.lower(*args)
    instructions = len(lowered.optimize().eqns)
    t0 = time.perf_counter()
    lowered.compile()
    return {"instructions": instructions, "seconds": time.perf_counter() - t0}


def main(argv: list[str]) -> None:
    targets = [int(a) for a in argv] or [10, 100, 500, 1000, 2000, 5000]
    print("\ncompile seconds against instructions (optimized HLO), split vs one function")
    print(f"  {'instructions':>12} {'split':>10} {'one function':>14}")
    for target in targets:
        layers = max(1, target // 6)
        row = {}
        for split in (True, False):
            env = dict(os.environ, TRACER_CACHE_DIR=tempfile.mkdtemp(prefix="tracer-scaling-"),
                       TRACER_COMPILE_MODE="sync", TRACER_PROGRESS="0")
            cmd = [sys.executable, "-m", "bench.bench_compile_scaling", "--child", str(layers),
                   str(int(split))]
            try:
                done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                      timeout=1200, check=True)
                row[split] = json.loads(done.stdout.strip().splitlines()[-1])
            except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
                row[split] = {"instructions": None, "seconds": float("nan")}
        n = row[True]["instructions"] or row[False]["instructions"]
        print(f"  {n!s:>12} {row[True]['seconds']:>9.2f}s {row[False]['seconds']:>13.2f}s",
              flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(int(sys.argv[2]), sys.argv[3] == "1")))
    else:
        main(sys.argv[1:])
