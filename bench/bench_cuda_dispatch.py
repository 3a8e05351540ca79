"""The fixed cost of one call on the GPU: GELU on 1,024 float32 device elements, where the
kernel takes microseconds and the rest is dispatch, against the same call through
numba.cuda by hand (one kernel, a preallocated output), CuPy, PyTorch and JAX.

    python -m bench.bench_cuda_dispatch            # the table
    python -m bench.bench_cuda_dispatch --profile  # and where tracer's call spends it

Every timing includes a device synchronize, as bench_cuda's do.
"""

from __future__ import annotations

import cProfile
import io
import math
import pstats
import sys
from typing import Any

import numpy as np
from numba import cuda

from bench.bench_cuda import C, _cupy, _gelu, _gpu, _jax, _synced, _torch
from bench.common import report, timeit

N = 1024


def _by_hand() -> Any:
    """GELU as one numba.cuda kernel, launched directly into a preallocated output."""
    @cuda.jit
    def gelu(x, out):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            out[i] = 0.5 * v * (1.0 + math.tanh(C * (v + 0.044715 * v * v * v)))
    return gelu


def main(argv: list[str]) -> None:
    import tracer as tr
    import tracer.numpy as tnp
    if _gpu() is None:
        print("bench_cuda_dispatch: no GPU; nothing measured")
        return
    x = np.random.default_rng(0).normal(size=N).astype(np.float32)
    d = tr.device_put(x, "cuda")
    f = tr.jit(lambda x: _gelu(tnp, x), backend="cuda")
    out = cuda.device_array_like(d)
    kernel = _by_hand()
    rows = [("tracer cuda", lambda: f(d)),
            ("numba.cuda by hand", lambda: kernel[4, 256](d, out)),
            ("numba.cuda empty sync", lambda: None)]
    cupy, torch, jax = _cupy(), _torch(), _jax()
    if cupy is not None:
        c = cupy.asarray(x)
        rows.append(("cupy", lambda: _gelu(cupy, c)))
    if torch is not None:
        t = torch.from_numpy(x).cuda()
        rows.append(("pytorch", lambda: _gelu(torch, t)))
    if jax is not None:
        g = jax.jit(lambda x: _gelu(jax.numpy, x))
        j = jax.device_put(x, jax.devices("gpu")[0])
        rows.append(("jax gpu", lambda: g(j).block_until_ready()))
    times = [(name, timeit(_synced(fn, cuda), repeat=7, min_time=0.1)) for name, fn in rows]
    report(f"one call: GELU of float32[{N}] on the device", times, "tracer cuda")
    if "--profile" in argv:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(2000):
            f(d)
        cuda.synchronize()
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
        print(text.getvalue())


if __name__ == "__main__":
    main(sys.argv[1:])
