"""Export and ahead-of-time compilation: the C library's NAME_run against `tr.jit`, and
the time to load an exported program in a new process.

    python -m bench.bench_export

Both sides are timed in this process, alternating, several rounds, as medians of single
calls (the machine is shared: only paired ratios of medians mean anything): `tr.jit` as
users call it, the C library through one
ctypes call of NAME_run (about a microsecond of the milliseconds measured). The
generated NAME_benchmark program's own figure (no Python in its process) is printed too. Load
times are whole fresh processes (`python -c ...`), median of several.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import report
from tracer import aot, export
from tracer.aot.c_library import build_program
from tracer.aot.c_sources import fill_value

ROUNDS = 3


def mlp(w1, b1, w2, b2, x):
    h = tnp.tanh(x @ w1 + b1)
    return h @ w2 + b2


def gelu(x):
    return 0.5 * x * (1 + tnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def mlp_numpy(w1, b1, w2, b2, x):
    return np.tanh(x @ w1 + b1) @ w2 + b2


def gelu_numpy(x):
    c, k = np.float32(0.7978845608), np.float32(0.044715)
    return 0.5 * x * (1 + np.tanh(c * (x + k * x * x * x)))


# NumPy runs beside them: its `@` calls the same OpenBLAS as the C library (NumPy's wheel's),
# while tr.jit's np.dot goes through numba to SciPy's OpenBLAS build.
WORKLOADS = {
    "mlp forward 256x784 -> 512 -> 10": (mlp, mlp_numpy,
                                         [(784, 512), (512,), (512, 10), (10,), (256, 784)]),
    "gelu of 2^20 floats": (gelu, gelu_numpy, [(1 << 20,)]),
}


def _c_library(out_dir: str, name: str, avals: list) -> tuple[Any, Any]:
    """libNAME.so loaded with ctypes: a `run()` that calls NAME_run (one foreign call, about
    a microsecond, so the timing is the C code's), after filling the arguments."""
    lib = ctypes.CDLL(os.path.join(out_dir, f"lib{name}.so"))
    getattr(lib, f"{name}_new").restype = ctypes.c_void_p
    getattr(lib, f"{name}_run").argtypes = [ctypes.c_void_p]
    handle = getattr(lib, f"{name}_new")()
    for k, a in enumerate(avals):
        data = getattr(lib, f"{name}_arg{k}_data")
        data.restype, data.argtypes = ctypes.POINTER(ctypes.c_float), [ctypes.c_void_p]
        view = np.ctypeslib.as_array(data(handle), a.shape)
        view[...] = fill_value(k, np.arange(a.size), a.dtype).reshape(a.shape)
    run = getattr(lib, f"{name}_run")
    return (lambda: run(handle)), lib


def _median_call(fn: Callable[[], Any], calls: int = 60) -> float:
    """The median seconds of single calls: on a shared machine a call that was descheduled
    takes a whole time slice longer, which spoils means but not medians."""
    fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_vs_jit(tmp: str) -> None:
    for title, (fn, reference, shapes) in WORKLOADS.items():
        avals = [tr.ShapedArray(s, np.float32) for s in shapes]
        name = fn.__name__
        out_dir = os.path.join(tmp, name)
        aot.compile(fn, *avals, name=name, out_dir=out_dir)
        exe = build_program(name, f"{name}_benchmark", out_dir)
        c_run, _lib = _c_library(out_dir, name, avals)
        args = [fill_value(k, np.arange(a.size), a.dtype).reshape(a.shape)
                for k, a in enumerate(avals)]
        jitted = tr.jit(fn)
        c_times, jit_times, np_times = [], [], []
        for _ in range(ROUNDS):  # alternate, so all see the same machine load
            c_times.append(_median_call(c_run))
            jit_times.append(_median_call(lambda f=jitted, a=args: f(*a)))
            np_times.append(_median_call(lambda f=reference, a=args: f(*a)))
        report(title, [("tr.jit (cpu)", min(jit_times)), (f"C {name}_run", min(c_times)),
                       ("NumPy", min(np_times))], "tr.jit (cpu)")
        print("  " + subprocess.run([exe, "100"], capture_output=True, text=True,
                                    check=True).stdout.strip() + "  (NAME_benchmark, alone)")


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
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [tmp, os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    x = f"np.ones({shape}, np.float32)"
    codes = {
        "trace + jit in a new process": "import numpy as np, tracer as tr; from "
        f"bench.bench_export import gelu; tr.jit(gelu)({x})",
        "export.deserialize + call": "import numpy as np; from tracer import export; "
        f"export.deserialize(open({path!r}, 'rb').read()).call({x})",
        "import NAME.py + run": f"import numpy as np, gelu_py; gelu_py.run({x})",
    }
    for code in codes.values():  # warm the disk caches first
        _fresh_process(code, tmp, env)
    rows = [(label, statistics.median(_fresh_process(code, tmp, env) for _ in range(ROUNDS)))
            for label, code in codes.items()]
    report("load and first call in a new process (gelu, warm disk caches)", rows,
           "trace + jit in a new process")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        run_vs_jit(tmp)
        load_times(tmp)


if __name__ == "__main__":
    main()
