"""The BLAS libraries tracer's cpu backend can bind (`tracer/backend/cpu/lib/cblas.py`),
side by side on the bench's shapes, one thread, interleaved rounds (medians):
SciPy's OpenBLAS (what numba's `np.dot` calls), NumPy's bundled OpenBLAS, Intel MKL
(the `mkl` extra) and PyTorch (its own MKL), each called into preallocated outputs.

    python -m bench.bench_blas

Each library is called through ctypes (a few microseconds per call, the same for all);
the trsm rows copy the right-hand sides in first (0.1-0.2 ms). A library that is not
installed is left out.
"""

from __future__ import annotations

import ctypes
import glob
import os
import statistics
import time
from typing import Any, Callable

os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
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


def _show(title: str, times: dict[str, float]) -> None:
    best = min(times.values())
    cells = "  ".join(f"{name} {s * 1e3:.2f} (x{s / best:.2f})" for name, s in times.items())
    print(f"{title}\n    {cells}", flush=True)


if __name__ == "__main__":
    main()
