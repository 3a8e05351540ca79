"""FFT and batch norm on the numba `cpu` backend against NumPy, JAX, PyTorch (eager and
torch.compile) and, for batch norm, PyTensor's numba backend (each when installed).

    python -m bench.bench_fft            # all workloads
    python -m bench.bench_fft 2d         # the workloads whose name contains "2d"

Each workload checks that the implementations agree, then prints medians and
ratios to tracer (`bench.common.report`). tracer's FFT is Intel MKL's DFTI where the
`mkl` wheel is installed (the `mkl` and `bench` extras), else DUCC0 through rocket-fft,
writing into the output buffer; with MKL, a second tracer row ("tracer cpu, DUCC0",
compiled with `config.use_mkl` off, not a peer) times the DUCC0 path in the same run.
NumPy's is pocketfft (C++); JAX's is XLA's CPU FFT (DUCC0 too); PyTorch's is MKL's DFTI
(its own copy, linked into libtorch).
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import report, timed_rows, timeit, try_import_jax
from bench.machine import bound
from bench.peers import pytensor_rows, torch_rows, try_import_torch
from tracer import ops


def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], rtol: float = 1e-4,
         bytes_moved: int = 0) -> None:
    """Check, time, report; `bytes_moved`: what the workload must read and write."""
    rows = timed_rows(rows)
    expected = np.asarray(rows[0][1]())
    atol = rtol * float(np.max(np.abs(expected), initial=1.0))
    for name, fn in rows[1:]:
        np.testing.assert_allclose(np.asarray(fn()), expected, rtol=rtol, atol=atol,
                                   err_msg=f"{title}: {name}")
    report(title, [(name, timeit(fn)) for name, fn in rows], "tracer cpu",
           bound=bound(bytes_moved) if bytes_moved else None)


def _tracer_rows(fn: Callable[..., Any], *args: np.ndarray) -> list:
    """tracer's row and, where MKL serves it, the same function compiled on DUCC0."""
    from tracer.backend.cpu.lib import mkl
    f = tr.jit(fn)
    rows = [("tracer cpu", lambda: f(*args))]
    if mkl.available():
        with tr.config.override(use_mkl=False):
            ducc0 = tr.jit(fn).lower(*args).compile()
        rows.append(("tracer cpu, DUCC0", lambda: ducc0(*args)))
    return rows


def _torch_fft(name: str, *args: np.ndarray) -> list:
    torch = try_import_torch()
    return torch_rows(getattr(torch.fft, name), *args) if torch is not None else []


def _jax_row(jax: Any, fn: Callable[..., Any], *args: np.ndarray) -> list:
    if jax is None:
        return []
    jitted = jax.jit(fn)
    device_args = [jax.numpy.asarray(a) for a in args]
    return [("jax", lambda: jitted(*device_args).block_until_ready())]


def _complex(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def fft_1d(n: int = 1 << 20) -> None:
    x = _complex((n,))
    jax = try_import_jax()
    rows = _tracer_rows(tnp.fft.fft, x) + [("numpy", lambda: np.fft.fft(x))]
    rows += _jax_row(jax, jax.numpy.fft.fft if jax else None, x) + _torch_fft("fft", x)
    _run(f"fft, complex64[{n}]", rows, bytes_moved=2 * x.nbytes)


def fft_2d_batch(batch: int = 64, n: int = 256) -> None:
    x = _complex((batch, n, n))
    jax = try_import_jax()
    rows = _tracer_rows(tnp.fft.fft2, x) + [("numpy", lambda: np.fft.fft2(x))]
    rows += _jax_row(jax, jax.numpy.fft.fft2 if jax else None, x) + _torch_fft("fft2", x)
    _run(f"fft2, complex64[{batch},{n},{n}]", rows, bytes_moved=2 * x.nbytes)


def rfft_2d_batch(batch: int = 64, n: int = 256) -> None:
    x = np.random.default_rng(1).standard_normal((batch, n, n)).astype(np.float32)
    jax = try_import_jax()
    rows = _tracer_rows(tnp.fft.rfft2, x) + [("numpy", lambda: np.fft.rfft2(x))]
    rows += _jax_row(jax, jax.numpy.fft.rfft2 if jax else None, x) + _torch_fft("rfft2", x)
    _run(f"rfft2, float32[{batch},{n},{n}]", rows, bytes_moved=2 * x.nbytes)


def _bn(np_: Any, x: Any, scale: Any, offset: Any) -> Any:
    """Batch norm over NCHW written with NumPy-like functions (NumPy or jax.numpy)."""
    mean = x.mean((0, 2, 3), keepdims=True)
    var = x.var((0, 2, 3), keepdims=True)
    return (x - mean) / np_.sqrt(var + 1e-5) * scale[:, None, None] + offset[:, None, None]


def batch_norm_training(shape: tuple[int, ...] = (32, 64, 56, 56)) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    scale, offset = (rng.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
    f = tr.jit(lambda x, s, o: ops.batch_norm_training(x, s, o, 1e-5, 1)[0])
    jax = try_import_jax()
    rows = [("tracer cpu", lambda: f(x, scale, offset)),
            ("numpy", lambda: _bn(np, x, scale, offset))]
    if jax is not None:
        rows += _jax_row(jax, lambda x, s, o: _bn(jax.numpy, x, s, o), x, scale, offset)
    torch = try_import_torch()
    if torch is not None:
        rows += torch_rows(_torch_bn, x, scale, offset)
    rows += pytensor_rows(_bn, x, scale, offset)
    _run(f"batch_norm_training, float32{list(shape)} NCHW", rows, bytes_moved=2 * x.nbytes)


def _torch_bn(x: Any, scale: Any, offset: Any) -> Any:
    """`_bn` in torch (whose `var` divides by n - 1 unless told otherwise)."""
    import torch
    mean = x.mean((0, 2, 3), keepdim=True)
    var = x.var((0, 2, 3), correction=0, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * scale[:, None, None] + offset[:, None, None]


WORKLOADS = {"fft_1d": fft_1d, "fft_2d_batch": fft_2d_batch, "rfft_2d_batch": rfft_2d_batch,
             "batch_norm_training": batch_norm_training}


def main(argv: list[str]) -> None:
    for name, workload in WORKLOADS.items():
        if not argv or any(a in name for a in argv):
            workload()


if __name__ == "__main__":
    main(sys.argv[1:])
