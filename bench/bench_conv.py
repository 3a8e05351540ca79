"""Convolution on the numba `cpu` backend against JAX and PyTorch (eager and
torch.compile; each when installed) and NumPy im2col + BLAS. PyTensor has no
multi-channel image convolution, so it has no row here.

    python -m bench.bench_conv            # all workloads
    python -m bench.bench_conv resnet     # the workloads whose name contains "resnet"

Each workload checks that the implementations agree, then prints medians and ratios
(`bench.common.report`); the last line is the whole table as JSON. The headline is
a ResNet-style layer: 32x64x56x56 float32 input, 64x64x3x3 filters, stride 1, SAME.
`numpy_style_im2col` is that layer as users write it in NumPy (pad, nine slices,
stack, reshape, one broadcast matmul), the same code run by NumPy, tracer.numpy and
jax.numpy: what tracer makes of ordinary array code, not of `ops.conv`.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import numpy as np

import tracer as tr
import tracer.numpy as tnp
from bench.common import report, timed_rows, timeit, try_import_jax
from bench.machine import bound as machine_bound
from bench.peers import torch_grad_rows, torch_numpy, torch_rows, try_import_torch
from tracer import ops

RESULTS: dict[str, dict[str, float]] = {}
F32 = np.float32


def numpy_im2col(x: np.ndarray, w: np.ndarray, stride: int, pad: tuple[int, int]) -> np.ndarray:
    """NCHW / OIHW convolution as NumPy users write it: windows view, one matmul."""
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pad, pad))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]                    # (N, C, H', W', kh, kw)
    n, _, h, wd = windows.shape[:4]
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, -1)
    out = cols @ w.reshape(o, -1).T                                 # (N H' W', O)
    return np.ascontiguousarray(out.reshape(n, h, wd, o).transpose(0, 3, 1, 2))


def _run(title: str, rows: list[tuple[str, Callable[[], Any]]], baseline: str,
         rtol: float = 1e-4, bound: float | None = None) -> None:
    """Check every implementation against the first one, time them, report."""
    rows = timed_rows(rows)
    expected = np.asarray(rows[0][1]())
    atol = rtol * float(np.max(np.abs(expected), initial=1.0))  # sums of many products
    for name, fn in rows[1:]:
        np.testing.assert_allclose(np.asarray(fn()), expected, rtol=rtol, atol=atol,
                                   err_msg=f"{title}: {name}")
    times = [(name, timeit(fn, repeat=5)) for name, fn in rows]
    RESULTS[title] = dict(times)
    report(title, times, baseline, bound=bound)


def _jax_rows(fn: Callable[..., Any], *args: np.ndarray) -> list:
    jax = try_import_jax()
    if jax is None:
        return []
    jitted = jax.jit(fn)
    device_args = [jax.numpy.asarray(a) for a in args]
    return [("jax", lambda: jitted(*device_args).block_until_ready())]


def _torch_conv(stride: int, pad: tuple[int, int]) -> Callable[..., Any]:
    """NCHW / OIHW convolution as PyTorch users write it (F.pad first only when the
    padding is asymmetric, which conv2d's `padding` cannot say)."""
    import torch.nn.functional as F
    lo, hi = pad
    if lo == hi:
        return lambda x, w: F.conv2d(x, w, stride=stride, padding=lo)
    return lambda x, w: F.conv2d(F.pad(x, (lo, hi, lo, hi)), w, stride=stride)


def _conv_flops(x: np.ndarray, w: np.ndarray, stride: int) -> float:
    n, _, h, wd = x.shape
    o, c, kh, kw = w.shape
    return 2.0 * n * o * c * kh * kw * -(-h // stride) * -(-wd // stride)


def _layer(name: str, shape: tuple[int, ...], filters: tuple[int, ...], stride: int) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(shape).astype(F32), rng.standard_normal(filters).astype(F32)
    [pad] = ops.padtype_to_pads(shape[2:3], filters[2:3], (stride,), "SAME")
    fn = tr.jit(lambda x, w: ops.conv(x, w, (stride, stride), "SAME"))
    rows = [("tracer cpu", lambda: fn(x, w)), *_jax_rows(
        lambda x, w: _lax().conv_general_dilated(x, w, (stride, stride), "SAME"), x, w),
        ("numpy im2col + BLAS", lambda: numpy_im2col(x, w, stride, pad))]
    if try_import_torch() is not None:
        rows += torch_rows(_torch_conv(stride, pad), x, w)
    _run(name, rows, "tracer cpu", bound=machine_bound(flops=_conv_flops(x, w, stride)))


def _lax() -> Any:
    from jax import lax
    return lax


def resnet_3x3() -> None:
    _layer("conv resnet 3x3 32x64x56x56 -> 64, stride 1", (32, 64, 56, 56), (64, 64, 3, 3), 1)


def strided_3x3() -> None:
    _layer("conv 3x3 stride 2 32x64x56x56 -> 128", (32, 64, 56, 56), (128, 64, 3, 3), 2)


def pointwise_1x1() -> None:
    _layer("conv 1x1 32x256x28x28 -> 64", (32, 256, 28, 28), (64, 256, 1, 1), 1)


def im2col_conv(xp: Any, x: Any, w: Any) -> Any:
    """A 3x3 'same' convolution (NCHW / OIHW, stride 1) as users write im2col with the
    array namespace `xp`: pad, nine shifted slices, stack, reshape, one broadcast
    matmul of the (O, C*9) filters by the (N, C*9, H*W) columns."""
    n, c, h, wd = x.shape
    padded = xp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    taps = [padded[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)]
    cols = xp.stack(taps, axis=2).reshape(n, c * 9, h * wd)
    return (w.reshape(w.shape[0], c * 9) @ cols).reshape(n, w.shape[0], h, wd)


def numpy_style_im2col() -> None:
    """The im2col above written once, run by NumPy, by tracer.numpy under jit and by
    jax.numpy under jax.jit: (64, 576) @ (32, 576, 3136)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 64, 56, 56)).astype(F32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(F32)
    fn = tr.jit(lambda x, w: im2col_conv(tnp, x, w))
    rows = [("numpy", lambda: im2col_conv(np, x, w)), ("tracer cpu", lambda: fn(x, w))]
    jax = try_import_jax()
    if jax is not None:
        rows += _jax_rows(lambda x, w: im2col_conv(jax.numpy, x, w), x, w)
    torch = try_import_torch()
    if torch is not None:  # (the same NumPy-like code, on torch's namespace)
        rows += torch_rows(lambda x, w: im2col_conv(torch_numpy(torch), x, w), x, w)
    flops = 2 * 64 * 64 * 9 * 32 * 56 * 56
    _run("im2col in NumPy-like code 32x64x56x56, 64 3x3 filters", rows, "tracer cpu",
         bound=machine_bound(flops=flops))


def training_step() -> None:
    """Forward and both gradients of a 3x3 layer: the transposed convolutions."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 32, 32, 32)).astype(F32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(F32)

    def loss(x: Any, w: Any, conv: Callable[..., Any]) -> Any:
        y = conv(x, w, (1, 1), "SAME")
        return (y * y).sum()

    grad = tr.jit(tr.grad(lambda x, w: loss(x, w, ops.conv), argnums=(0, 1)))
    rows = [("tracer cpu", lambda: grad(x, w))]
    jax = try_import_jax()
    if jax is not None:
        jgrad = jax.jit(jax.grad(lambda x, w: loss(x, w, _lax().conv), argnums=(0, 1)))
        xs, ws = jax.numpy.asarray(x), jax.numpy.asarray(w)
        rows.append(("jax", lambda: jax.block_until_ready(jgrad(xs, ws))))
    if try_import_torch() is not None:
        rows += torch_grad_rows(lambda x, w: loss(x, w, _torch_lax_conv), (0, 1), x, w,
                                value=False)
    rows = timed_rows(rows)
    expected = [np.asarray(g) for g in rows[0][1]()]
    for name, fn in rows[1:]:
        for e, g in zip(expected, fn(), strict=True):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-3,
                                       atol=1e-3 * float(np.abs(e).max()), err_msg=name)
    times = [(name, timeit(fn, repeat=5)) for name, fn in rows]
    RESULTS["conv grad 16x32x32x32, 3x3"] = dict(times)
    report("conv grad (lhs and rhs) 16x32x32x32, 32 3x3 filters", times, "tracer cpu",
           bound=machine_bound(flops=3 * _conv_flops(x, w, 1)))  # forward + two transposes


def _torch_lax_conv(x: Any, w: Any, strides: tuple[int, int], padding: str) -> Any:
    """`lax.conv(x, w, strides, "SAME")` for odd filters, in torch."""
    return _torch_conv(strides[0], (w.shape[2] // 2, w.shape[2] // 2))(x, w)


WORKLOADS = {"resnet_3x3": resnet_3x3, "strided_3x3": strided_3x3,
             "pointwise_1x1": pointwise_1x1, "training_step": training_step,
             "numpy_style_im2col": numpy_style_im2col}


def main(selected: list[str]) -> None:
    for name, run in WORKLOADS.items():
        if not selected or any(s in name for s in selected):
            run()
    print(json.dumps(RESULTS))


if __name__ == "__main__":
    main(sys.argv[1:])
