"""Compile seconds against program size, with the host function split into parts
(`tracer/backend/cpu/split.py`) and as one function: fresh processes, empty caches,
synchronous compiles.

    python -m bench.bench_compile_scaling            # 10 .. 5000 instructions
    python -m bench.bench_compile_scaling 10 100 500

The program is a chain of layers `x = tanh(x @ w + b) * s` with a reduction every few
layers (several ops per layer, one loop nest and one BLAS call each), the shape of a
model's forward pass. Each row also says where the split run's seconds went: inside
LLVM (numba's `numba:llvm_lock` events: IR parsing, optimization, machine code) and
numba's type inference, and numba's lowering pass (its Python lowering to LLVM IR
plus the per-function LLVM optimization it runs, so it overlaps the LLVM column).

Measured on the shared 2-core machine under a load of 10-14 (one process per size, the
seconds several times a quiet machine's): 43, 85, 169, 337 instructions compiled in
8.4, 18.4, 48.2, 120.1 s, each doubling costing x2.2, x2.6, x2.5 (about n^1.3); LLVM
was 50-57% of it and grew x2.1, x2.9, x2.6. Under cProfile the fastest-growing piece
was numba's per-function LLVM optimization of the one host function
(`CodeLibrary._optimize_functions`: x2.8 then x4.3 per doubling), then numba's Python
lowering (x2.2, x2.8) and its quadratic analyses (`def_reach`,
`fixup_var_define_in_scope`, `InlineClosureLikeCalls`: x3.5 to x5 per doubling, small
below a few hundred instructions). Not linear: what is left is numba working on one
function per program. This script's own rows in that run (each child a new process
with an empty cache, so the helper libraries' compile, ~4-5 s of typing, is in every
row): 5, 43, 85, 173, 345 instructions: 4.6, 21.9, 23.5, 30.7, 68.7 s (LLVM 1.4, 7.9,
6.1, 12.3, 40.9 s); at about 1,000 instructions a child passed its 1,200 s limit.
Splitting the host into 250-line parts (linked: LLVM still optimizes the whole) made a
1,072-line chain 0.70x as long to compile in two paired runs, but the 1,332-line
transformer step of `bench_latency` 1.05x: SPLIT_LINES stays where it is.
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
    from numba.core import event
    llvm = event.RecordingListener()
    event.register("numba:llvm_lock", llvm)
    t0 = time.perf_counter()
    compiled = lowered.compile()
    seconds = time.perf_counter() - t0
    return {"instructions": instructions, "seconds": seconds, "llvm": _outer_seconds(llvm),
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
    """numba's type inference and lowering seconds for the host function."""
    from tracer.backend.cpu import cache
    entry = cache._MODULES[cache.module_key(executable.source)]
    name = executable.source.split("\ndef ")[-1].split("(")[0]  # the host: the last def
    dispatcher = getattr(entry.module, name)
    times = dispatcher.overloads[dispatcher.signatures[0]].metadata["pipeline_times"]["nopython"]
    found = {"typing": 0.0, "lowering": 0.0}
    for name, t in times.items():
        key = "typing" if name.endswith("type_inference") else \
            "lowering" if name.endswith("native_lowering") else None
        if key:
            found[key] += t.run
    return found


def main(argv: list[str]) -> None:
    targets = [int(a) for a in argv] or [10, 100, 500, 1000, 2000, 5000]
    print("\ncompile seconds against instructions (optimized HLO), split vs one function")
    print(f"  {'instructions':>12} {'split':>10} {'one function':>14} {'llvm':>10} "
          f"{'typing':>10} {'lowering':>10}   (the last three: the split run's)")
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
        phases = "".join(f" {row[True].get(k, float('nan')):>9.2f}s"
                         for k in ("llvm", "typing", "lowering"))
        print(f"  {n!s:>12} {row[True]['seconds']:>9.2f}s {row[False]['seconds']:>13.2f}s"
              f"{phases}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(int(sys.argv[2]), sys.argv[3] == "1")))
    else:
        main(sys.argv[1:])
