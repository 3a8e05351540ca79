"""The BLAS libraries tracer's cpu backend can bind (`tracer/backend/cpu/lib/cblas.py`),
side by side on the bench's shapes, one thread, interleaved rounds (medians):
SciPy's OpenBLAS (what numba's `np.dot` calls), NumPy's bundled OpenBLAS, Intel MKL
(the `mkl` extra) and PyTorch (its own MKL), each called into preallocated outputs.

    python -m bench.bench_blas            # the libraries
    python -m bench.bench_blas --tracer   # tracer's jitted calls beside torch eager

`--tracer` pairs the BLAS-bound workloads of bench_cpu, bench_conv and bench_linalg
(tracer's jitted call and PyTorch's, interleaved rounds in one process): steadier
ratios on a shared machine than rows timed one after another.

Each library is called through ctypes (a few microseconds per call, the same for all);
the trsm rows copy the right-hand sides in first (0.1-0.2 ms). A library that is not
installed is left out.
"""

from __future__ import annotations

import ctypes
import glob
import os
import statistics
import sys
import time
from typing import Any, Callable

os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                  TRACER_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numpy as np  # noqa: E402 - after the thread limits

I32, I64, P = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p
ROW_MAJOR, NO_TRANS, LEFT, LOWER, NON_UNIT = 101, 111, 141, 122, 131


def _libraries() -> dict[str, tuple[Any, str, type]]:
    """name -> (library, symbol pattern with {} for the routine, integer type)."""
    import scipy.linalg.cython_blas  # noqa: F401 - loads SciPy's OpenBLAS
    site = os.path.join(os.path.dirname(np.__file__), os.pardir)
    found = {}
    for name, folder, pattern, suffix, integer in (
            ("scipy openblas", "scipy.libs", "libscipy_openblas-*.so", "", I32),
            ("numpy openblas", "numpy.libs", "libscipy_openblas64_*.so", "64_", I64)):
        paths = glob.glob(os.path.join(site, folder, pattern))
        if paths:
            found[name] = (ctypes.CDLL(paths[0]), "scipy_cblas_{}" + suffix, integer)
    from tracer.backend.cpu.lib import mkl
    if mkl.library_path() is not None:
        mkl.load()
        found["mkl"] = (ctypes.CDLL(mkl.library_path()), "cblas_{}_64", I64)
    return found


def _gemm(library: Any, pattern: str, integer: type, a: np.ndarray, b: np.ndarray,
          out: np.ndarray) -> Callable[[], None]:
    scalar = ctypes.c_float if a.dtype == np.float32 else ctypes.c_double
    fn = getattr(library, pattern.format("sgemm" if a.dtype == np.float32 else "dgemm"))
    (m, k), n = a.shape, b.shape[1]
    args = (I32(ROW_MAJOR), I32(NO_TRANS), I32(NO_TRANS), integer(m), integer(n), integer(k),
            scalar(1), P(a.ctypes.data), integer(k), P(b.ctypes.data), integer(n), scalar(0),
            P(out.ctypes.data), integer(n))
    return lambda: fn(*args)


def _trsm(library: Any, pattern: str, integer: type, t: np.ndarray,
          b: np.ndarray) -> Callable[[], None]:
    """x = t⁻¹ b in place of a copy of b (solving x again would shrink it to zeros)."""
    fn = getattr(library, pattern.format("dtrsm"))
    n, k = b.shape
    x = np.empty_like(b)
    args = (I32(ROW_MAJOR), I32(LEFT), I32(LOWER), I32(NO_TRANS), I32(NON_UNIT), integer(n),
            integer(k), ctypes.c_double(1), P(t.ctypes.data), integer(n), P(x.ctypes.data),
            integer(k))

    def solve() -> None:
        np.copyto(x, b)
        fn(*args)
    return solve


def _interleaved(rows: dict[str, Callable[[], None]], rounds: int = 7) -> dict[str, float]:
    """Seconds per call of each row: median over rounds that run every row in turn."""
    counts = {}
    for name, fn in rows.items():
        fn()
        start = time.perf_counter()
        fn()
        counts[name] = max(1, int(0.1 / max(time.perf_counter() - start, 1e-6)))
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(rounds):
        for name, fn in rows.items():
            start = time.perf_counter()
            for _ in range(counts[name]):
                fn()
            times[name].append((time.perf_counter() - start) / counts[name])
    return {name: statistics.median(t) for name, t in times.items()}


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def main() -> None:
    libraries, torch = _libraries(), _torch()
    rng = np.random.default_rng(0)
    cases = [("matmul float32 1024^3", np.float32, 1024, 1024, 1024, 1),
             ("matmul float64 1024^3", np.float64, 1024, 1024, 1024, 1),
             ("MLP layer float32 256x1024 @ 1024x1024", np.float32, 256, 1024, 1024, 1),
             ("conv 1x1 as 32 x (64x256 @ 256x784)", np.float32, 64, 784, 256, 32)]
    print(f"one thread, ms per call (x the fastest); {', '.join(libraries)}"
          f"{', torch' if torch else ''}")
    for title, dtype, m, n, k, batch in cases:
        a = rng.standard_normal((batch, m, k)).astype(dtype)
        b = rng.standard_normal((batch, k, n)).astype(dtype)
        out = np.empty((batch, m, n), dtype)
        rows = {}
        for name, (library, pattern, integer) in libraries.items():
            calls = [_gemm(library, pattern, integer, a[i], b[i], out[i]) for i in range(batch)]
            rows[name] = lambda calls=calls: [call() for call in calls]
        if torch is not None:
            ta, tb, tout = (torch.from_numpy(x) for x in (a, b, out))
            rows["torch"] = lambda ta=ta, tb=tb, tout=tout: torch.matmul(ta, tb, out=tout)
        _show(title, _interleaved(rows))
    t = np.tril(rng.standard_normal((512, 512))) + 512 * np.eye(512)
    b = rng.standard_normal((512, 512))
    rows = {name: _trsm(*found, t, b) for name, found in libraries.items()}
    if torch is not None:  # (a new result each call, where the others copy b)
        tt, tb = torch.from_numpy(t), torch.from_numpy(b)
        rows["torch"] = lambda: torch.linalg.solve_triangular(tt, tb, upper=False)
    _show("trsm float64 512x512, 512 right-hand sides", _interleaved(rows))


def _tracer_workloads(torch: Any) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """(title, tracer's jitted call, torch's eager call) of the BLAS-bound bench rows."""
    import torch.nn.functional as functional

    import tracer as tr
    import tracer.numpy as tnp
    from bench.bench_cpu import _gelu, _softmax
    from bench.peers import torch_numpy
    from tracer import ops
    rng, tn = np.random.default_rng(0), torch_numpy(torch)
    rows = []
    for dtype in (np.float32, np.float64):
        a, b = (rng.standard_normal((1024, 1024)).astype(dtype) for _ in range(2))
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        rows.append((f"matmul {np.dtype(dtype).name}[1024,1024]",
                     lambda f=tr.jit(lambda a, b: a @ b), a=a, b=b: f(a, b),
                     lambda ta=ta, tb=tb: ta @ tb))
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    w1, w2 = (rng.standard_normal((1024, 1024)).astype(np.float32) / 32 for _ in range(2))
    b1 = rng.standard_normal(1024).astype(np.float32)
    mlp = lambda x, w1, b1, w2, np_: _softmax(_gelu(x @ w1 + b1, np_) @ w2, np_)  # noqa: E731
    f, targs = tr.jit(lambda *a: mlp(*a, tnp)), [torch.from_numpy(v) for v in (x, w1, b1, w2)]
    rows.append(("MLP forward, batch 256, width 1024", lambda: f(x, w1, b1, w2),
                 lambda: mlp(*targs, tn)))
    xc = rng.standard_normal((32, 256, 28, 28)).astype(np.float32)
    wc = rng.standard_normal((64, 256, 1, 1)).astype(np.float32)
    conv, txc, twc = tr.jit(lambda x, w: ops.conv(x, w, (1, 1), "SAME")), *map(
        torch.from_numpy, (xc, wc))
    rows.append(("conv 1x1 32x256x28x28 -> 64", lambda: conv(xc, wc),
                 lambda: functional.conv2d(txc, twc)))
    a, b = rng.standard_normal((1, 512, 512)), rng.standard_normal((1, 512, 512))
    solve, ta, tb = tr.jit(tnp.linalg.solve), torch.from_numpy(a), torch.from_numpy(b)
    rows.append(("solve float64[1,512,512], 512 right-hand sides", lambda: solve(a, b),
                 lambda: torch.linalg.solve(ta, tb)))
    t = np.tril(a) + 512 * np.eye(512)
    tri = tr.jit(lambda a, b: ops.triangular_solve(a, b, left_side=True, lower=True))
    tt = torch.from_numpy(t)
    rows.append(("triangular_solve float64[1,512,512] [1,512,512]", lambda: tri(t, b),
                 lambda: torch.linalg.solve_triangular(tt, tb, upper=False)))
    return rows


def tracer_beside_torch() -> None:
    torch = _torch()
    if torch is None:
        print("PyTorch is not installed (the bench extra)")
        return
    print("one thread, ms per call; tracer / torch eager")
    for title, ours, theirs in _tracer_workloads(torch):
        np.testing.assert_allclose(np.asarray(ours()), theirs().numpy(), rtol=2e-3,
                                   atol=2e-3, err_msg=title)
        times = _interleaved({"tracer": ours, "torch": theirs}, rounds=9)
        print(f"{title:50s} tracer {times['tracer'] * 1e3:7.2f}  torch "
              f"{times['torch'] * 1e3:7.2f}  x{times['tracer'] / times['torch']:.2f}",
              flush=True)


def _show(title: str, times: dict[str, float]) -> None:
    best = min(times.values())
    cells = "  ".join(f"{name} {s * 1e3:.2f} (x{s / best:.2f})" for name, s in times.items())
    print(f"{title}\n    {cells}", flush=True)


if __name__ == "__main__":
    tracer_beside_torch() if "--tracer" in sys.argv[1:] else main()
