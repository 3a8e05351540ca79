"""Export and ahead-of-time compilation: the C library's NAME_run against `tr.jit`, and
the time to load an exported program in a new process.

    python -m bench.bench_export

The C side is timed by the generated NAME_benchmark program (mean over calls, no Python
in that process); `tr.jit` by `bench.common.timeit` in this process. Both are measured
in this one run, alternating, several rounds; the ratios are what to compare. Load
times are whole fresh processes (`python -c ...`), median of several.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import report, timeit
from tracer import aot, export
from tracer.aot.c_library import build_program
from tracer.aot.c_sources import fill_value

ROUNDS = 3


def mlp(w1, b1, w2, b2, x):
    h = tnp.tanh(x @ w1 + b1)
    return h @ w2 + b2


def gelu(x):
    return 0.5 * x * (1 + tnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


WORKLOADS = {
    "mlp forward 256x784 -> 512 -> 10": (mlp, [(784, 512), (512,), (512, 10), (10,), (256, 784)]),
    "gelu of 2^20 floats": (gelu, [(1 << 20,)]),
}


def _c_seconds(exe: str, calls: int) -> float:
    out = subprocess.run([exe, str(calls)], capture_output=True, text=True, check=True).stdout
    return float(out.split("mean ")[1].split(" us")[0]) * 1e-6


def run_vs_jit(tmp: str) -> None:
    for title, (fn, shapes) in WORKLOADS.items():
        avals = [tr.ShapedArray(s, np.float32) for s in shapes]
        name = fn.__name__
        out_dir = os.path.join(tmp, name)
        aot.compile(fn, *avals, name=name, out_dir=out_dir)
        exe = build_program(name, f"{name}_benchmark", out_dir)
        args = [fill_value(k, np.arange(a.size), a.dtype).reshape(a.shape)
                for k, a in enumerate(avals)]
        jitted = tr.jit(fn)
        c_times, jit_times = [], []
        for _ in range(ROUNDS):  # alternate, so both see the same machine load
            c_times.append(_c_seconds(exe, 200))
            jit_times.append(timeit(lambda f=jitted, a=args: f(*a), repeat=3))
        report(title, [("tr.jit (cpu)", min(jit_times)), (f"C {name}_run", min(c_times))],
               "tr.jit (cpu)")


_LOAD = ("import numpy as np, time; t0 = time.perf_counter(); {setup}; "
         "x = np.ones({shape}, np.float32); {call}; print(time.perf_counter() - t0)")


def _fresh_process(code: str, cwd: str, env: dict) -> float:
    """Wall seconds of a new interpreter running `code`, start to exit."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


def load_times(tmp: str) -> None:
    shape = (1 << 20,)
    data = export.export(gelu)(tr.ShapedArray(shape, np.float32)).serialize()
    path = os.path.join(tmp, "gelu.tracer")
    with open(path, "wb") as f:
        f.write(data)
    aot.compile(gelu, tr.ShapedArray(shape, np.float32), name="gelu_py",
                out_dir=tmp, c_library=False)
    env = dict(os.environ)
    codes = {
        "trace + jit in a new process": "import tracer as tr; from bench.bench_export import "
        f"gelu; tr.jit(gelu)(np.ones({shape}, np.float32))",
        "export.deserialize + call": f"from tracer import export; e = export.deserialize("
        f"open({path!r}, 'rb').read()); e.call(np.ones({shape}, np.float32))",
        "import NAME.py + run": f"import gelu_py; gelu_py.run(np.ones({shape}, np.float32))",
    }
    for code in codes.values():  # warm the disk caches first
        _fresh_process(code, tmp, {**env, "PYTHONPATH": os.pathsep.join([tmp, os.getcwd(),
                                                                         env.get("PYTHONPATH", "")])})
    rows = []
    for label, code in codes.items():
        runs = [_fresh_process(code, tmp, {**env, "PYTHONPATH": os.pathsep.join(
            [tmp, os.getcwd(), env.get("PYTHONPATH", "")])}) for _ in range(ROUNDS)]
        rows.append((label, statistics.median(runs)))
    report("load and first call in a new process (gelu, warm disk caches)", rows,
           "trace + jit in a new process")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        run_vs_jit(tmp)
        load_times(tmp)


if __name__ == "__main__":
    main()
